/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/core_names.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "mldsa.h"

#include "cert.h"
#include "digest.h"
#include "pkcs7.h"
#include "util.h"

int cert_from_der(const uint8_t *der, size_t len, X509 **ret)
{
	const unsigned char *p = der;
	X509 *x;

	x = d2i_X509(NULL, &p, (long)len);
	if (!x || p != der + len) {
		X509_free(x);
		return -EBADMSG;
	}
	*ret = x;
	return 0;
}

int cert_load_file(const char *path, X509 **ret)
{
	_cleanup_(freep) char *buf = NULL;
	const uint8_t *p;
	size_t n;
	BIO *b;
	X509 *x;
	int r;

	r = read_file(path, CERT_MAX_FILE, 0, &buf, &n);
	if (r < 0)
		return r;
	p = (const uint8_t *)buf;
	/* sign-file's rule: 0x30 0x81..0x84 starts a DER certificate. */
	if (n >= 2 && p[0] == 0x30 && p[1] >= 0x81 && p[1] <= 0x84)
		return cert_from_der(p, n, ret);
	b = BIO_new_mem_buf(buf, (int)n);
	if (!b)
		return -ENOMEM;
	x = PEM_read_bio_X509(b, NULL, NULL, NULL);
	BIO_free(b);
	if (!x)
		return -EBADMSG;
	*ret = x;
	return 0;
}

int cert_to_der(X509 *cert, uint8_t **ret, size_t *ret_len)
{
	unsigned char *der = NULL;
	int n;

	n = i2d_X509(cert, &der);
	if (n <= 0)
		return -EIO;
	*ret = der; /* OPENSSL_malloc'd; OPENSSL_free == free here */
	*ret_len = (size_t)n;
	return 0;
}

int cert_key_id(X509 *cert, char **ret)
{
	const ASN1_OCTET_STRING *skid = X509_get0_subject_key_id(cert);

	if (!skid)
		return -ENOENT;
	return hex_encode(ASN1_STRING_get0_data(skid),
			  (size_t)ASN1_STRING_length(skid), ret);
}

int cert_serial(X509 *cert, char **ret)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(cert), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;
	int r = -ENOMEM;

	if (hex) {
		*ret = strdup(hex);
		r = *ret ? 0 : -ENOMEM;
	}
	OPENSSL_free(hex);
	BN_free(bn);
	return r;
}

int cert_subject(X509 *cert, char **ret)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *s;
	long n;

	if (!b)
		return -ENOMEM;
	X509_NAME_print_ex(b, X509_get_subject_name(cert), 0,
			   XN_FLAG_RFC2253 & ~ASN1_STRFLGS_ESC_MSB);
	n = BIO_get_mem_data(b, &data);
	s = strndup(data, (size_t)n);
	BIO_free(b);
	if (!s)
		return -ENOMEM;
	*ret = s;
	return 0;
}

/*
 * The number of primes of an RSA private key: 2, or more for a multi-prime
 * key.  Asks for the extra factors' sizes only (no buffer), so no copy of a
 * secret is made; a key whose factors are elsewhere (a token) counts as 2.
 */
static int rsa_primes(EVP_PKEY *pkey)
{
	static const char *const extra[] = {
		OSSL_PKEY_PARAM_RSA_FACTOR3, OSSL_PKEY_PARAM_RSA_FACTOR4,
		OSSL_PKEY_PARAM_RSA_FACTOR5, OSSL_PKEY_PARAM_RSA_FACTOR6,
		OSSL_PKEY_PARAM_RSA_FACTOR7, OSSL_PKEY_PARAM_RSA_FACTOR8,
		OSSL_PKEY_PARAM_RSA_FACTOR9, OSSL_PKEY_PARAM_RSA_FACTOR10,
	};
	int n = 2;

	ERR_set_mark();
	for (size_t i = 0; i < ELEMENTSOF(extra); i++, n++) {
		OSSL_PARAM q[] = { OSSL_PARAM_BN(extra[i], NULL, 0), OSSL_PARAM_END };

		if (!EVP_PKEY_get_params(pkey, q) || !OSSL_PARAM_modified(q))
			break;
	}
	ERR_pop_to_mark();
	return n;
}

/* The name, into @buf: a key's name may be cut short, never overflow. */
static int key_alg_name(EVP_PKEY *pkey, const char *group, char *buf, size_t size)
{
	if (EVP_PKEY_is_a(pkey, "RSA")) {
		int primes = rsa_primes(pkey);

		if (primes > 2)
			return snprintf(buf, size, "rsa%d-%dp", EVP_PKEY_get_bits(pkey), primes);
		return snprintf(buf, size, "rsa%d", EVP_PKEY_get_bits(pkey));
	}
	if (group && strcmp(group, "prime256v1") == 0)
		return snprintf(buf, size, "ecdsa-p256");
	if (group && strcmp(group, "secp384r1") == 0)
		return snprintf(buf, size, "ecdsa-p384");
	if (group)
		return snprintf(buf, size, "ecdsa-%s", group);
	if (mldsa_by_name(EVP_PKEY_get0_type_name(pkey)))
		return snprintf(buf, size, "%s", mldsa_by_name(EVP_PKEY_get0_type_name(pkey))->name);
	return snprintf(buf, size, "%s", EVP_PKEY_get0_type_name(pkey) ?: "unknown");
}

int cert_key_alg(EVP_PKEY *pkey, struct pkcs7_key_alg *ret)
{
	char group[64];
	bool ec = EVP_PKEY_is_a(pkey, "EC") &&
		  EVP_PKEY_get_utf8_string_param(pkey, OSSL_PKEY_PARAM_GROUP_NAME, group,
						 sizeof(group), NULL);

	ret->sig = EVP_PKEY_is_a(pkey, "RSA")			    ? PKCS7_SIG_RSA_PKCS1 :
		   ec						    ? PKCS7_SIG_ECDSA :
		   mldsa_by_name(EVP_PKEY_get0_type_name(pkey)) ? PKCS7_SIG_MLDSA :
								    PKCS7_SIG_DEFAULT;
	/* snprintf() fails only on an encoding error: there is none here. */
	return key_alg_name(pkey, ec ? group : NULL, ret->name, sizeof(ret->name)) < 0 ? -EIO : 0;
}
