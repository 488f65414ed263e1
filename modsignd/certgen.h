/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_CERTGEN_H
#define MODSIGND_CERTGEN_H

/*
 * One-time keys and their self-signed certificates, made in memory from
 * keygen/x509.genkey.in (compiled in, or --genkey-template).
 */

#include <openssl/evp.h>
#include <openssl/x509.h>

struct certgen_params {
	const char *template_path; /* NULL: the built-in template */
	const char *organization;  /* "" leaves the field out */
	const char *common_name;
	const char *email;
	unsigned days;
};

/* The compiled-in copy of keygen/x509.genkey.in (generated at build time). */
extern const char certgen_builtin_template[];

/*
 * Generate a key of @alg (rsa2048, rsa3072, rsa4096, ecdsa-p256,
 * ecdsa-p384, the multi-prime RSA keys rsa3072-3p and rsa4096-4p, or
 * mldsa44, mldsa65, mldsa87).  Returns -EINVAL for an unknown algorithm,
 * -EOPNOTSUPP for ML-DSA where OpenSSL has none (before 3.5), -EIO if
 * OpenSSL refused (a multi-prime key under a FIPS provider).
 */
int certgen_key(const char *alg, EVP_PKEY **ret);

/* What certgen_key(@alg) would return before generating: 0, -EINVAL or
 * -EOPNOTSUPP (for --check-config, which makes no key). */
int certgen_check(const char *alg);

/*
 * Make the self-signed certificate of @key from the template.  Returns 0,
 * or -EINVAL when the template is unusable (*@ret_err then names why).
 */
int certgen_cert(EVP_PKEY *key, const struct certgen_params *p, X509 **ret,
		 const char **ret_err);

#endif
