/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One-time keys, NAME=ephemeral[:ALG]: made in memory at start with a
 * self-signed certificate (certgen.h), gone at exit.  --check-config
 * makes none: it checks that the algorithm is one this OpenSSL can make.
 */
#include <errno.h>
#include <openssl/opensslv.h>
#include <stdio.h>
#include <string.h>

#include "key-backend.h"
#include "mldsa.h"
#include "util.h"

static bool ephemeral_claims(const char *src)
{
	return strcmp(src, "ephemeral") == 0 || strncmp(src, "ephemeral:", 10) == 0;
}

static const char *ephemeral_alg(const char *src)
{
	return src[9] ? src + 10 : "rsa4096";
}

/* Why certgen refused with @r. */
static const char *alg_error(int r)
{
	return r == -EINVAL	 ? "unknown key algorithm" :
	       r == -EOPNOTSUPP ? MLDSA_NEEDS " (" OPENSSL_VERSION_TEXT ")" :
				  "key generation failed";
}

static int ephemeral_check(const char *src, char *why, size_t why_size)
{
	int r = certgen_check(ephemeral_alg(src));

	if (r < 0)
		snprintf(why, why_size, "%s", alg_error(r));
	return r;
}

static int ephemeral_open(struct key *k, const char *src, struct keystore *ks _unused_,
			  const struct certgen_params *gen, const char **ret_err)
{
	int r;

	r = certgen_key(ephemeral_alg(src), &k->pkey);
	if (r < 0)
		return (*ret_err = alg_error(r)), r;
	r = certgen_cert(k->pkey, gen, &k->cert, ret_err);
	if (r < 0)
		EVP_PKEY_free(TAKE_PTR(k->pkey));
	return r;
}

const struct key_backend key_backend_ephemeral = {
	.name = "ephemeral",
	.claims = ephemeral_claims,
	.check = ephemeral_check,
	.open = ephemeral_open,
	.sign = key_sign_soft,
	.sign_mu = key_sign_soft_mu,
};
