/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One-time keys, NAME=ephemeral[:ALG]: made in memory at start with a
 * self-signed certificate (certgen.h), gone at exit.  Nothing to check
 * before they are made (--check-config makes none).
 */
#include <errno.h>
#include <openssl/opensslv.h>
#include <string.h>

#include "key-backend.h"
#include "mldsa.h"
#include "util.h"

static bool ephemeral_claims(const char *src)
{
	return strcmp(src, "ephemeral") == 0 || strncmp(src, "ephemeral:", 10) == 0;
}

static int ephemeral_open(struct key *k, const char *src, struct keystore *ks _unused_,
			  const struct certgen_params *gen, const char **ret_err)
{
	const char *alg = src[9] ? src + 10 : "rsa4096";
	int r;

	r = certgen_key(alg, &k->pkey);
	if (r < 0)
		return (*ret_err = r == -EINVAL	    ? "unknown key algorithm" :
				   r == -EOPNOTSUPP ? MLDSA_NEEDS " (" OPENSSL_VERSION_TEXT ")" :
						      "key generation failed"),
		       r;
	r = certgen_cert(k->pkey, gen, &k->cert, ret_err);
	if (r < 0)
		EVP_PKEY_free(TAKE_PTR(k->pkey));
	return r;
}

const struct key_backend key_backend_ephemeral = {
	.name = "ephemeral",
	.claims = ephemeral_claims,
	.open = ephemeral_open,
	.sign = key_sign_soft,
	.sign_mu = key_sign_soft_mu,
};
