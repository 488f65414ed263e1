/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A PEM file holding the private key and its certificate, NAME=PATH,
 * read as every key file is (lib/keyfile.h).  The catch-all: any SOURCE
 * no other backend claims is a path, so this row is the last.
 */
#include <stdio.h>

#include "cert.h"
#include "key-backend.h"
#include "keyfile.h"
#include "macro.h"
#include "mldsa.h"

static bool file_claims(const char *src _unused_)
{
	return true;
}

/* An ML-DSA key where OpenSSL has none (3.0 cannot decode it, and says
 * only "no private key"): name what is missing, in one line.  The
 * certificate in the same file tells the key's type. */
static int why_unreadable(const char *src, int r, char *why, size_t why_size)
{
	_cleanup_(X509_freep) X509 *cert = NULL;
	const struct mldsa_variant *v;

	if (r == -EBADMSG && cert_load_file(src, &cert) == 0 && (v = mldsa_of_cert(cert)) &&
	    !mldsa_available(v)) {
		snprintf(why, why_size, "%s: %s key: " MLDSA_NEEDS, src, v->name);
		return -EOPNOTSUPP;
	}
	return r;
}

/* --check-config: read the file as open would, and forget it. */
static int file_check(const char *src, char *why, size_t why_size)
{
	EVP_PKEY *pkey = NULL;
	X509 *cert = NULL;
	int r = keyfile_read(src, &pkey, &cert, why, why_size);

	EVP_PKEY_free(pkey);
	X509_free(cert);
	return r < 0 ? why_unreadable(src, r, why, why_size) : r;
}

static int file_open(struct key *k, const char *src, struct keystore *ks,
		     const struct certgen_params *gen _unused_, const char **ret_err)
{
	int r;

	r = keyfile_read(src, &k->pkey, &k->cert, ks->why, sizeof(ks->why));
	if (r < 0) {
		r = why_unreadable(src, r, ks->why, sizeof(ks->why));
		*ret_err = ks->why;
	}
	return r;
}

const struct key_backend key_backend_file = {
	.name = "file",
	.claims = file_claims,
	.check = file_check,
	.open = file_open,
	.sign = key_sign_soft,
	.sign_mu = key_sign_soft_mu,
};
