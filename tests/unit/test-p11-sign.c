/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * pkcs11-module/p11-sign.c: the DigestInfo the module accepts for
 * CKM_RSA_PKCS (exactly, an allowed hash), the hash of a raw ECDSA
 * digest, and the raw signature out of a PKCS#7 the daemon's code makes
 * (pkcs7_sign_digest()), checked with EVP_PKEY_verify against the key.
 */
#include <errno.h>
#include <openssl/ecdsa.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "macro.h"
#include "p11-sign.h"
#include "pkcs7.h"
#include "unit-cert.h"
#include "unit.h"

static const uint8_t sha256_prefix[19] = { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60,
					   0x86, 0x48, 0x01, 0x65, 0x03, 0x04, 0x02,
					   0x01, 0x05, 0x00, 0x04, 0x20 };

UNIT_TEST(digestinfo)
{
	uint8_t di[sizeof(sha256_prefix) + 33];
	const struct digest *md = NULL;
	const uint8_t *d = NULL;
	size_t dl = 0;

	memcpy(di, sha256_prefix, sizeof(sha256_prefix));
	memset(di + sizeof(sha256_prefix), 0xab, 33);
	CHECK("a SHA-256 DigestInfo is taken",
	      p11_digestinfo_parse(di, sizeof(sha256_prefix) + 32, &md, &d, &dl) == 0 &&
		      strcmp(digest_name(md), "sha256") == 0 && dl == 32 &&
		      d == di + sizeof(sha256_prefix));
	CHECK("twin: a byte more is refused",
	      p11_digestinfo_parse(di, sizeof(di), &md, &d, &dl) == -EBADMSG);
	CHECK("twin: a byte less is refused",
	      p11_digestinfo_parse(di, sizeof(sha256_prefix) + 31, &md, &d, &dl) == -EBADMSG);
	di[14] = 0x1a; /* another OID's last byte */
	CHECK("twin: another hash's OID is refused",
	      p11_digestinfo_parse(di, sizeof(sha256_prefix) + 32, &md, &d, &dl) == -EBADMSG);
	CHECK("twin: nothing is refused", p11_digestinfo_parse(di, 0, &md, &d, &dl) == -EBADMSG);
}

UNIT_TEST(digest_by_len)
{
	const struct digest *md = NULL;

	CHECK("48 bytes: sha384", p11_digest_by_len(48, &md) == 0 &&
					  strcmp(digest_name(md), "sha384") == 0);
	CHECK("twin: 20 bytes (SHA-1) refused", p11_digest_by_len(20, &md) == -EBADMSG);
}

UNIT_TEST(mechanisms)
{
	CHECK("CKM_ECDSA_SHA384 hashes with sha384",
	      p11_mech_find(CKM_ECDSA_SHA384) && p11_mech_find(CKM_ECDSA_SHA384)->key_type == CKK_EC &&
		      strcmp(p11_mech_find(CKM_ECDSA_SHA384)->hash, "sha384") == 0);
	CHECK("CKM_RSA_PKCS is handed a digest", p11_mech_find(CKM_RSA_PKCS) &&
							 !p11_mech_find(CKM_RSA_PKCS)->hash);
	CHECK("twin: CKM_RSA_PKCS_PSS is not one", !p11_mech_find(CKM_RSA_PKCS_PSS));
}

/* Does @sig verify as @key's raw signature (PKCS#1 over a SHA-256
 * DigestInfo, or DER ECDSA) of @dg. */
static bool raw_verifies(EVP_PKEY *key, const uint8_t *sig, size_t len, const uint8_t *dg)
{
	EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new(key, NULL);
	bool ok = ctx && EVP_PKEY_verify_init(ctx) > 0 &&
		  EVP_PKEY_CTX_set_signature_md(ctx, EVP_sha256()) > 0 &&
		  EVP_PKEY_verify(ctx, sig, len, dg, 32) == 1;

	EVP_PKEY_CTX_free(ctx);
	return ok;
}

/* r||s back to DER, for EVP_PKEY_verify. */
static int rs_to_der(const uint8_t *rs, size_t len, uint8_t **der)
{
	ECDSA_SIG *s = ECDSA_SIG_new();
	int n;

	if (!s || !ECDSA_SIG_set0(s, BN_bin2bn(rs, (int)len / 2, NULL),
				  BN_bin2bn(rs + len / 2, (int)len / 2, NULL)))
		return -1;
	*der = NULL;
	n = i2d_ECDSA_SIG(s, der);
	ECDSA_SIG_free(s);
	return n;
}

static void sig_case(const char *alg, CK_KEY_TYPE type, size_t half)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *key = type == CKK_RSA ?
		EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048) :
		EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	_cleanup_(X509_freep) X509 *cert = key ? unit_cert(key, key) : NULL;
	const struct digest *md = digest_lookup("sha256");
	uint8_t dg[32], *p7 = NULL, *raw = NULL, *der = NULL;
	size_t p7_len = 0, raw_len = 0;
	int der_len;
	char name[64];

	memset(dg, 0x5a, sizeof(dg));
	snprintf(name, sizeof(name), "%s: signature out of the PKCS#7", alg);
	CHECK(name, cert && pkcs7_sign_digest(cert, key, md, dg, 32, false, &p7, &p7_len) == 0 &&
			    p11_sig_from_pkcs7(p7, p7_len, type, half, &raw, &raw_len) == 0);
	if (type == CKK_EC) {
		snprintf(name, sizeof(name), "%s: r||s of 2 x %zu bytes verifies", alg, half);
		der_len = raw_len == 2 * half ? rs_to_der(raw, raw_len, &der) : -1;
		CHECK(name, der_len > 0 && raw_verifies(key, der, (size_t)der_len, dg));
	} else {
		snprintf(name, sizeof(name), "%s: PKCS#1 signature verifies", alg);
		CHECK(name, raw && raw_verifies(key, raw, raw_len, dg));
	}
	dg[0] ^= 1;
	snprintf(name, sizeof(name), "%s: twin: not over another digest", alg);
	CHECK(name, raw && !raw_verifies(key, type == CKK_EC ? der : raw,
					 type == CKK_EC ? (size_t)der_len : raw_len, dg));
	snprintf(name, sizeof(name), "%s: twin: a PKCS#7 cut short is refused", alg);
	CHECK(name, p11_sig_from_pkcs7(p7, p7_len / 2, type, half, &raw, &raw_len) == -EBADMSG);
	OPENSSL_free(der);
	OPENSSL_free(p7);
	free(raw);
}

UNIT_TEST(rsa_signature)
{
	sig_case("rsa2048", CKK_RSA, 0);
}

UNIT_TEST(ecdsa_signature)
{
	sig_case("ecdsa-p256", CKK_EC, 32);
}

UNIT_MAIN();
