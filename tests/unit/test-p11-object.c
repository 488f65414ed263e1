/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pkcs11-module/p11-object.c: a key's objects from its certificate, at
 * the edge of what the token advertises.  C_GetMechanismInfo says RSA
 * keys up to P11_RSA_MAX_BITS; a key that large is listed with its whole
 * modulus, one a byte larger is not, and is said to be left out for its
 * size, not its type (p11_key_strerror()).  The certificates carry a made-up
 * public key (n = 2^(bits-1) + 1) signed by a small EC key: no RSA-16384
 * key is generated (minutes).
 */
#include <errno.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/x509.h>
#include <string.h>

#include "cert.h"
#include "macro.h"
#include "p11-object.h"
#include "unit-cert.h"
#include "unit.h"

/* An RSA public key of exactly @bits bits (not a real one: n is odd but
 * not a product of two primes; only its size matters here), its public
 * exponent 65537, or of @e_bits bits when not 0. */
static EVP_PKEY *rsa_public_e(int bits, int e_bits)
{
	BIGNUM *n = BN_new(), *e = BN_new();
	OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
	OSSL_PARAM *params = NULL;
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, "RSA", NULL);
	EVP_PKEY *pkey = NULL;

	if (n && e && bld && ctx && BN_set_bit(n, bits - 1) && BN_set_bit(n, 0) &&
	    (e_bits ? BN_set_bit(e, e_bits - 1) && BN_set_bit(e, 0) : BN_set_word(e, 65537)) && OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_N, n) &&
	    OSSL_PARAM_BLD_push_BN(bld, OSSL_PKEY_PARAM_RSA_E, e) &&
	    (params = OSSL_PARAM_BLD_to_param(bld)) && EVP_PKEY_fromdata_init(ctx) > 0)
		EVP_PKEY_fromdata(ctx, &pkey, EVP_PKEY_PUBLIC_KEY, params);
	OSSL_PARAM_free(params);
	OSSL_PARAM_BLD_free(bld);
	EVP_PKEY_CTX_free(ctx);
	BN_free(n);
	BN_free(e);
	return pkey;
}

static EVP_PKEY *rsa_public(int bits)
{
	return rsa_public_e(bits, 0);
}

/* The objects of an RSA key of @bits bits: p11_key_objects()'s result,
 * and in *@ret_len the length of the public key object's CKA_MODULUS. */
static int rsa_objects(int bits, CK_ULONG *ret_len)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *issuer = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pub = rsa_public(bits);
	_cleanup_(X509_freep) X509 *cert = issuer && pub ? unit_cert(pub, issuer) : NULL;
	struct p11_object objs[3];
	struct p11_key k;
	CK_ATTRIBUTE a = { CKA_MODULUS, NULL, 0 };
	size_t n = 0;
	int r;

	*ret_len = 0;
	if (!cert)
		return -ENOMEM;
	r = p11_key_objects("big", cert, 0, &k, objs, &n);
	if (r < 0)
		return r;
	if (p11_object_get(&objs[1], &a) == CKR_OK)
		*ret_len = a.ulValueLen;
	for (size_t i = 0; i < n; i++)
		p11_object_done(&objs[i]);
	p11_key_done(&k);
	return r;
}

UNIT_TEST(rsa_largest_advertised)
{
	CK_ULONG len;

	CHECK("an RSA key of P11_RSA_MAX_BITS is listed, its whole modulus",
	      rsa_objects(P11_RSA_MAX_BITS, &len) == 0 && len == P11_RSA_MAX_BITS / 8);
	CHECK("RSA-4096 is listed, its whole modulus", rsa_objects(4096, &len) == 0 && len == 512);
	CHECK("twin: a byte larger is not listed, for its size (-EFBIG)",
	      rsa_objects(P11_RSA_MAX_BITS + 8, &len) == -EFBIG);
}

/* What p11_key_objects() returns for @cert, and its reason in @buf. */
static int key_reason(X509 *cert, char *buf, size_t size)
{
	struct p11_object objs[3];
	struct p11_key k;
	size_t n = 0;
	int r = p11_key_objects("k", cert, 0, &k, objs, &n);

	buf[0] = '\0';
	if (r < 0) {
		p11_key_strerror(cert, r, buf, size);
		return r;
	}
	for (size_t i = 0; i < n; i++)
		p11_object_done(&objs[i]);
	p11_key_done(&k);
	return r;
}

UNIT_TEST(left_out_says_why)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *issuer = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *big = rsa_public(P11_RSA_MAX_BITS + 8);
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *big_e = rsa_public_e(2048, P11_RSA_MAX_BITS + 8);
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *ed = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	_cleanup_(X509_freep) X509 *big_cert = issuer && big ? unit_cert(big, issuer) : NULL;
	_cleanup_(X509_freep) X509 *big_e_cert = issuer && big_e ? unit_cert(big_e, issuer) : NULL;
	_cleanup_(X509_freep) X509 *ed_cert = issuer && ed ? unit_cert(ed, issuer) : NULL;
	_cleanup_(X509_freep) X509 *ec_cert = issuer ? unit_cert(issuer, issuer) : NULL;
	char why[128];

	CHECK("certificates made", big_cert && big_e_cert && ed_cert);
	CHECK("an RSA key too large: -EFBIG, said for its size",
	      key_reason(big_cert, why, sizeof(why)) == -EFBIG &&
		      strcmp(why, "RSA key of 16392 bits, over the 16384 the token lists") == 0);
	CHECK("an RSA-2048 key whose exponent is over the buffer: -EFBIG, said",
	      key_reason(big_e_cert, why, sizeof(why)) == -EFBIG &&
		      strcmp(why, "RSA public exponent of over 16384 bits") == 0);
	CHECK("twin: an Ed25519 key: -EOPNOTSUPP, neither RSA nor EC",
	      key_reason(ed_cert, why, sizeof(why)) == -EOPNOTSUPP &&
		      strcmp(why, "neither RSA nor EC") == 0);
	CHECK("twin: an EC key is listed, no reason",
	      ec_cert && key_reason(ec_cert, why, sizeof(why)) == 0 && !why[0]);
}

UNIT_MAIN();
