/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pkcs7_sign_digest() against the kernel's scripts/sign-file, byte for
 * byte, and pkcs7_verify_module() against every way a signature can be
 * wrong.  Keys and certificates are made here, so the test needs no files.
 */
#include <errno.h>
#include <openssl/cms.h>
#include <openssl/err.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cert.h"
#include "digest.h"
#include "modsig.h"
#include "pkcs7.h"
#include "unit.h"
#include "util.h"

#define DATA_LEN 5000u

DEFINE_TRIVIAL_CLEANUP_FUNC(CMS_ContentInfo *, CMS_ContentInfo_free)

struct ident {
	EVP_PKEY *key;
	X509 *cert;
};

/* Options of the sign-file recipe, to make the variants the kernel refuses. */
enum {
	SF_KEYID = 1 << 0,    /* CMS_USE_KEYID, as sign-file -k */
	SF_ATTRS = 1 << 1,    /* drop CMS_NOATTR: signed attributes */
	SF_ATTACHED = 1 << 2, /* drop CMS_DETACHED: content inside */
	SF_CERTS = 1 << 3,    /* drop CMS_NOCERTS: the signer's certificate inside */
};

static struct ident rsa, rsa2, ec, other, clash;
static uint8_t data[DATA_LEN], bad_data[DATA_LEN];
static int data_fd = -1, bad_fd = -1;

static void ident_done(struct ident *id)
{
	X509_free(id->cert);
	EVP_PKEY_free(id->key);
	*id = (struct ident){ 0 };
}

/* A self-signed v3 certificate with a subjectKeyIdentifier. */
static X509 *make_cert(EVP_PKEY *key, const char *cn, long serial)
{
	_cleanup_(X509_freep) X509 *x = X509_new();
	X509_EXTENSION *ext = NULL;
	X509_NAME *name;
	X509V3_CTX ctx;
	int ok;

	if (!x)
		return NULL;
	name = X509_get_subject_name(x);
	ok = X509_set_version(x, X509_VERSION_3) &&
	     ASN1_INTEGER_set(X509_get_serialNumber(x), serial) &&
	     X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)cn, -1, -1, 0) &&
	     X509_set_issuer_name(x, name) &&
	     X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
	     X509_gmtime_adj(X509_getm_notAfter(x), 3600) &&
	     X509_set_pubkey(x, key);
	if (!ok)
		return NULL;
	X509V3_set_ctx(&ctx, x, x, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, NID_subject_key_identifier, "hash");
	ok = ext && X509_add_ext(x, ext, -1) && X509_sign(x, key, EVP_sha256()) > 0;
	X509_EXTENSION_free(ext);
	return ok ? TAKE_PTR(x) : NULL;
}

static bool ident_make(struct ident *id, EVP_PKEY *key, const char *cn,
		       long serial)
{
	id->key = key;
	id->cert = key ? make_cert(key, cn, serial) : NULL;
	return id->key && id->cert;
}

/* An unlinked temporary file holding @len bytes of @buf. */
static int temp_file(const uint8_t *buf, size_t len)
{
	char path[] = "/tmp/modsign-test-pkcs7-XXXXXX";
	int fd = mkstemp(path);

	if (fd < 0)
		return -1;
	unlink(path);
	if (write_full(fd, buf, len) < 0) {
		close(fd);
		return -1;
	}
	return fd;
}

/*
 * What linux/scripts/sign-file.c does (the OpenSSL >= 1.0 CMS branch),
 * with @opts to break it on purpose and an optional second signer.
 */
static int signfile(const struct ident *id, const EVP_MD *md,
		    const uint8_t *buf, size_t len, unsigned opts,
		    const struct ident *second, uint8_t **ret, size_t *ret_len)
{
	unsigned nocerts = opts & SF_CERTS ? 0 : CMS_NOCERTS;
	unsigned sign_flags = nocerts | CMS_PARTIAL | CMS_BINARY | CMS_STREAM;
	unsigned add_flags = nocerts | CMS_BINARY | CMS_NOSMIMECAP;
	CMS_ContentInfo *cms = NULL;
	BIO *in = NULL, *out = NULL;
	char *p;
	long n;
	int r = -EIO;

	if (!(opts & SF_ATTACHED))
		sign_flags |= CMS_DETACHED;
	if (!(opts & SF_ATTRS))
		add_flags |= CMS_NOATTR;
	if (opts & SF_KEYID)
		add_flags |= CMS_USE_KEYID;

	in = BIO_new_mem_buf(buf, (int)len);
	out = BIO_new(BIO_s_mem());
	cms = CMS_sign(NULL, NULL, NULL, NULL, sign_flags);
	if (!in || !out || !cms)
		goto out;
	if (!CMS_add1_signer(cms, id->cert, id->key, md, add_flags))
		goto out;
	if (second && !CMS_add1_signer(cms, second->cert, second->key, md, add_flags))
		goto out;
	if (CMS_final(cms, in, NULL, nocerts | CMS_BINARY) != 1)
		goto out;
	if (i2d_CMS_bio_stream(out, cms, NULL, 0) != 1)
		goto out;
	n = BIO_get_mem_data(out, &p);
	if (n <= 0 || !(*ret = malloc((size_t)n)))
		goto out;
	memcpy(*ret, p, (size_t)n);
	*ret_len = (size_t)n;
	r = 0;
out:
	if (r < 0)
		ERR_print_errors_fp(stdout);
	CMS_ContentInfo_free(cms);
	BIO_free(in);
	BIO_free(out);
	return r;
}

/* An independent verifier: OpenSSL's CMS_verify() on the detached data. */
static bool openssl_verifies(const uint8_t *der, size_t len, X509 *cert,
			     const uint8_t *buf, size_t buf_len)
{
	const unsigned char *p = der;
	CMS_ContentInfo *cms = d2i_CMS_ContentInfo(NULL, &p, (long)len);
	STACK_OF(X509) *certs = sk_X509_new_null();
	BIO *in = BIO_new_mem_buf(buf, (int)buf_len);
	bool ok = false;

	if (cms && certs && in && sk_X509_push(certs, cert))
		ok = CMS_verify(cms, certs, NULL, in, NULL,
				CMS_BINARY | CMS_NO_SIGNER_CERT_VERIFY) == 1;
	ERR_clear_error();
	BIO_free(in);
	sk_X509_free(certs);
	CMS_ContentInfo_free(cms);
	return ok;
}

/* pkcs7_sign_digest() over the hash of @buf. */
static int sign_buf(const struct ident *id, const struct digest *md,
		    const uint8_t *buf, size_t len, bool keyid, uint8_t **ret,
		    size_t *ret_len)
{
	uint8_t dg[DIGEST_MAX_LEN];
	size_t dg_len;
	int r;

	r = digest_buf(buf, len, md, dg, &dg_len);
	if (r < 0)
		return r;
	return pkcs7_sign_digest(id->cert, id->key, md, dg, dg_len, keyid, ret,
				 ret_len);
}

static const char *const mds[] = { "sha256",   "sha384",   "sha512",
				   "sha3-256", "sha3-384", "sha3-512" };

UNIT_TEST(identity_rsa)
{
	char name[128];

	for (size_t i = 0; i < ELEMENTSOF(mds); i++)
		for (int keyid = 0; keyid <= 1; keyid++) {
			const struct digest *md = digest_lookup(mds[i]);
			const char *tag = keyid ? "keyid" : "issuer+serial";
			uint8_t *ours = NULL, *ref = NULL, *twin = NULL;
			size_t ours_len = 0, ref_len = 0, twin_len = 0;
			const char *hash = NULL;
			int r;

			r = sign_buf(&rsa, md, data, DATA_LEN, keyid, &ours, &ours_len);
			snprintf(name, sizeof(name), "pkcs7 rsa %s %s sign returns 0", mds[i], tag);
			CHECK_EQ(name, r, 0);
			r = signfile(&rsa, digest_evp(md), data, DATA_LEN, keyid ? SF_KEYID : 0,
				     NULL, &ref, &ref_len);
			snprintf(name, sizeof(name), "pkcs7 rsa %s %s byte-identical to sign-file",
				 mds[i], tag);
			if (!CHECK(name, ours && r == 0 && ours_len == ref_len &&
						 memcmp(ours, ref, ref_len) == 0))
				printf("#   ours %zu bytes, sign-file %zu bytes\n", ours_len, ref_len);

			snprintf(name, sizeof(name), "pkcs7 rsa %s %s verifies", mds[i], tag);
			CHECK(name, ours &&
					    pkcs7_verify_module(ours, ours_len, rsa.cert, data_fd,
								DATA_LEN, &hash) == 0 &&
					    hash && strcmp(hash, mds[i]) == 0);
			snprintf(name, sizeof(name), "pkcs7 rsa %s %s OpenSSL CMS_verify",
				 mds[i], tag);
			CHECK(name, ours && openssl_verifies(ours, ours_len, rsa.cert, data,
							     DATA_LEN));

			/* Twin: other data, other bytes; and it does not verify. */
			r = sign_buf(&rsa, md, bad_data, DATA_LEN, keyid, &twin, &twin_len);
			snprintf(name, sizeof(name),
				 "pkcs7 rsa %s %s other data differs from sign-file", mds[i], tag);
			CHECK(name, r == 0 && ref && !(twin_len == ref_len &&
						       memcmp(twin, ref, ref_len) == 0));
			snprintf(name, sizeof(name), "pkcs7 rsa %s %s flipped data -> EKEYREJECTED",
				 mds[i], tag);
			CHECK_EQ(name,
				 pkcs7_verify_module(ours, ours_len, rsa.cert, bad_fd, DATA_LEN, NULL),
				 -EKEYREJECTED);
			OPENSSL_free(ours);
			OPENSSL_free(twin);
			free(ref);
		}
}

UNIT_TEST(ecdsa)
{
	char name[128];

	for (size_t i = 0; i < ELEMENTSOF(mds); i++)
		for (int keyid = 0; keyid <= 1; keyid++) {
			const struct digest *md = digest_lookup(mds[i]);
			const char *tag = keyid ? "keyid" : "issuer+serial";
			uint8_t *ours = NULL, *ref = NULL;
			size_t ours_len = 0, ref_len = 0;
			int r;

			r = sign_buf(&ec, md, data, DATA_LEN, keyid, &ours, &ours_len);
			snprintf(name, sizeof(name), "pkcs7 ecdsa %s %s sign returns 0",
				 mds[i], tag);
			CHECK_EQ(name, r, 0);
			snprintf(name, sizeof(name), "pkcs7 ecdsa %s %s verifies", mds[i], tag);
			CHECK_EQ(name,
				 ours ? pkcs7_verify_module(ours, ours_len, ec.cert, data_fd,
							    DATA_LEN, NULL)
				      : -ENOMEM,
				 0);
			snprintf(name, sizeof(name), "pkcs7 ecdsa %s %s OpenSSL CMS_verify",
				 mds[i], tag);
			CHECK(name, ours && openssl_verifies(ours, ours_len, ec.cert, data,
							     DATA_LEN));
			snprintf(name, sizeof(name), "pkcs7 ecdsa %s %s flipped data -> EKEYREJECTED",
				 mds[i], tag);
			CHECK_EQ(name,
				 pkcs7_verify_module(ours, ours_len, ec.cert, bad_fd, DATA_LEN, NULL),
				 -EKEYREJECTED);
			snprintf(name, sizeof(name),
				 "pkcs7 ecdsa %s %s flipped data fails CMS_verify", mds[i], tag);
			CHECK(name, !openssl_verifies(ours, ours_len, ec.cert, bad_data, DATA_LEN));

			/* sign-file's own ECDSA signature verifies with ours too. */
			r = signfile(&ec, digest_evp(md), data, DATA_LEN, keyid ? SF_KEYID : 0, NULL,
				     &ref, &ref_len);
			snprintf(name, sizeof(name), "pkcs7 ecdsa %s %s sign-file output verifies",
				 mds[i], tag);
			CHECK(name, r == 0 && pkcs7_verify_module(ref, ref_len, ec.cert, data_fd,
								  DATA_LEN, NULL) == 0);
			OPENSSL_free(ours);
			free(ref);
		}
}

/*
 * The algorithm identifiers the kernel's PKCS#7 parser matches
 * (include/linux/oid_registry.h of 6.12): the digest algorithm by its
 * OID, sha3-256 2.16.840.1.101.3.4.2.8 ...; the signature algorithm
 * rsaEncryption for RSA whatever the hash, id-ecdsa-with-sha3-256
 * 2.16.840.1.101.3.4.3.10 ... for ECDSA.  Compared as dotted text, not
 * OpenSSL NIDs, so an OpenSSL that named them differently would show.
 */
static bool signer_oids_are(const uint8_t *der, size_t len, const char *want_dig,
			    const char *want_sig)
{
	const unsigned char *p = der;
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms =
		d2i_CMS_ContentInfo(NULL, &p, (long)len);
	X509_ALGOR *dig = NULL, *sig = NULL;
	char d[64] = "", g[64] = "";

	if (!cms || sk_CMS_SignerInfo_num(CMS_get0_SignerInfos(cms)) != 1)
		return false;
	CMS_SignerInfo_get0_algs(sk_CMS_SignerInfo_value(CMS_get0_SignerInfos(cms), 0), NULL,
				 NULL, &dig, &sig);
	OBJ_obj2txt(d, sizeof(d), dig->algorithm, 1);
	OBJ_obj2txt(g, sizeof(g), sig->algorithm, 1);
	if (strcmp(d, want_dig) != 0 || strcmp(g, want_sig) != 0)
		printf("#   digest %s, signature %s\n", d, g);
	return strcmp(d, want_dig) == 0 && strcmp(g, want_sig) == 0;
}

UNIT_TEST(sha3_oids)
{
	static const struct {
		const char *hash, *digest_oid, *ecdsa_oid;
	} rows[] = {
		{ "sha3-256", "2.16.840.1.101.3.4.2.8", "2.16.840.1.101.3.4.3.10" },
		{ "sha3-384", "2.16.840.1.101.3.4.2.9", "2.16.840.1.101.3.4.3.11" },
		{ "sha3-512", "2.16.840.1.101.3.4.2.10", "2.16.840.1.101.3.4.3.12" },
	};
	char name[128];

	for (size_t i = 0; i < ELEMENTSOF(rows); i++) {
		const struct digest *md = digest_lookup(rows[i].hash);
		uint8_t *der = NULL;
		size_t len = 0;

		snprintf(name, sizeof(name), "pkcs7 rsa %s oids: %s, rsaEncryption", rows[i].hash,
			 rows[i].digest_oid);
		CHECK(name, sign_buf(&rsa, md, data, DATA_LEN, false, &der, &len) == 0 &&
				    signer_oids_are(der, len, rows[i].digest_oid,
						    "1.2.840.113549.1.1.1"));
		OPENSSL_free(der);
		der = NULL;
		snprintf(name, sizeof(name), "pkcs7 ecdsa %s oids: %s, %s", rows[i].hash,
			 rows[i].digest_oid, rows[i].ecdsa_oid);
		CHECK(name, sign_buf(&ec, md, data, DATA_LEN, false, &der, &len) == 0 &&
				    signer_oids_are(der, len, rows[i].digest_oid,
						    rows[i].ecdsa_oid));
		OPENSSL_free(der);
	}
}

/*
 * A signature that names SHA-3 over a SHA-2 digest of the same length
 * (what a confused or lying server could return): the module's SHA3-256
 * is not what was signed, so it must not verify, for either key type; nor
 * may a SHA3-256 reply pass as the SHA-256 the client asked for.
 */
UNIT_TEST(sha3_claimed_over_sha2)
{
	const struct ident *ids[] = { &rsa, &ec };
	const char *tags[] = { "rsa", "ecdsa" };
	char name[128];

	for (size_t i = 0; i < ELEMENTSOF(ids); i++) {
		const struct digest *sha3 = digest_lookup("sha3-256");
		const struct digest *sha2 = digest_lookup("sha256");
		uint8_t dg[DIGEST_MAX_LEN], *der = NULL;
		size_t dg_len = 0, len = 0;
		const char *hash = NULL;

		if (digest_buf(data, DATA_LEN, sha2, dg, &dg_len) < 0 ||
		    pkcs7_sign_digest(ids[i]->cert, ids[i]->key, sha3, dg, dg_len, false, &der,
				      &len) < 0) {
			CHECK(tags[i], false);
			continue;
		}
		snprintf(name, sizeof(name), "pkcs7 %s sha3-256 over a sha256 digest -> EKEYREJECTED",
			 tags[i]);
		CHECK(name, pkcs7_verify_module(der, len, ids[i]->cert, data_fd, DATA_LEN, &hash) ==
					    -EKEYREJECTED &&
				    hash && strcmp(hash, "sha3-256") == 0);
		snprintf(name, sizeof(name), "pkcs7 %s sha3-256 reply to a sha256 request -> ENOPKG",
			 tags[i]);
		CHECK_EQ(name,
			 pkcs7_verify_digest(der, len, ids[i]->cert, sha2, dg, dg_len, false),
			 -ENOPKG);
		OPENSSL_free(der);
	}
}

/* Tampered signatures and the wrong certificate, for one key. */
static void test_tamper(const char *alg, const struct ident *id)
{
	char name[128];

	for (int keyid = 0; keyid <= 1; keyid++) {
		const char *tag = keyid ? "keyid" : "issuer+serial";
		uint8_t *der = NULL;
		size_t len = 0;
		int r;

		if (sign_buf(id, digest_lookup("sha256"), data, DATA_LEN, keyid, &der, &len) < 0) {
			CHECK("pkcs7 tamper setup", false);
			continue;
		}
		/* The signature value is the last field of the DER. */
		der[len - 1] ^= 0x01;
		r = pkcs7_verify_module(der, len, id->cert, data_fd, DATA_LEN, NULL);
		snprintf(name, sizeof(name),
			 "pkcs7 %s %s flipped signature byte -> EKEYREJECTED/EBADMSG", alg, tag);
		if (!CHECK(name, r == -EKEYREJECTED || r == -EBADMSG))
			printf("#   got %d\n", r);
		der[len - 1] ^= 0x01;
		r = pkcs7_verify_module(der, len, id->cert, data_fd, DATA_LEN, NULL);
		snprintf(name, sizeof(name), "pkcs7 %s %s unflipped verifies again", alg, tag);
		CHECK_EQ(name, r, 0);

		snprintf(name, sizeof(name), "pkcs7 %s %s another key's certificate -> ENOKEY",
			 alg, tag);
		CHECK_EQ(name, pkcs7_verify_module(der, len, other.cert, data_fd, DATA_LEN, NULL),
			 -ENOKEY);

		/* Same issuer and serial as the RSA cert, another key. */
		if (id == &rsa) {
			r = pkcs7_verify_module(der, len, clash.cert, data_fd, DATA_LEN, NULL);
			snprintf(name, sizeof(name),
				 "pkcs7 %s %s cert with same name+serial, other key refused",
				 alg, tag);
			if (!CHECK(name, r == -ENOKEY || r == -EKEYREJECTED))
				printf("#   got %d\n", r);
		}

		/* The right signature over a longer or shorter prefix. */
		snprintf(name, sizeof(name), "pkcs7 %s %s body_len - 1 -> EKEYREJECTED", alg, tag);
		CHECK_EQ(name, pkcs7_verify_module(der, len, id->cert, data_fd, DATA_LEN - 1, NULL),
			 -EKEYREJECTED);
		r = pkcs7_verify_module(der, len, id->cert, data_fd, DATA_LEN + 1, NULL);
		snprintf(name, sizeof(name), "pkcs7 %s %s body_len past EOF fails", alg, tag);
		if (!CHECK(name, r < 0))
			printf("#   got %d\n", r);
		OPENSSL_free(der);
	}
}

UNIT_TEST(tamper_rsa)
{
	test_tamper("rsa", &rsa);
}

UNIT_TEST(tamper_ecdsa)
{
	test_tamper("ecdsa", &ec);
}

static void expect_verify(const char *name, const uint8_t *der, size_t len,
			  X509 *cert, int want)
{
	int r = der ? pkcs7_verify_module(der, len, cert, data_fd, DATA_LEN, NULL)
		    : -ENOMEM;

	CHECK_EQ(name, r, want);
}

UNIT_TEST(refused_forms)
{
	uint8_t *der = NULL, *copy = NULL;
	size_t len = 0;
	const char *hash = "unset";

	/* Signed attributes: a valid CMS the kernel still refuses. */
	CHECK_EQ("pkcs7 sign-file with attributes builds",
		 signfile(&rsa, EVP_sha256(), data, DATA_LEN, SF_ATTRS, NULL, &der, &len), 0);
	CHECK("pkcs7 with attributes is valid to OpenSSL",
	      der && openssl_verifies(der, len, rsa.cert, data, DATA_LEN));
	expect_verify("pkcs7 signed attributes -> EPROTO", der, len, rsa.cert, -EPROTO);
	free(TAKE_PTR(der));

	CHECK_EQ("pkcs7 sign-file with attributes builds (ecdsa)",
		 signfile(&ec, EVP_sha384(), data, DATA_LEN, SF_ATTRS | SF_KEYID, NULL,
			  &der, &len), 0);
	expect_verify("pkcs7 signed attributes ecdsa keyid -> EPROTO", der, len, ec.cert,
		      -EPROTO);
	free(TAKE_PTR(der));

	/* SHA-1: the recipe works, modsign refuses the hash. */
	CHECK_EQ("pkcs7 sign-file sha1 builds",
		 signfile(&rsa, EVP_sha1(), data, DATA_LEN, 0, NULL, &der, &len), 0);
	CHECK("pkcs7 sha1 -> ENOPKG, hash NULL",
	      der && pkcs7_verify_module(der, len, rsa.cert, data_fd, DATA_LEN, &hash) ==
				 -ENOPKG && hash == NULL);
	free(TAKE_PTR(der));

	CHECK_EQ("pkcs7 sign-file sha224 builds",
		 signfile(&rsa, EVP_sha224(), data, DATA_LEN, 0, NULL, &der, &len), 0);
	expect_verify("pkcs7 sha224 -> ENOPKG", der, len, rsa.cert, -ENOPKG);
	free(TAKE_PTR(der));

	/* Content inside, and two signers: not what the kernel takes. */
	CHECK_EQ("pkcs7 sign-file attached builds",
		 signfile(&rsa, EVP_sha256(), data, DATA_LEN, SF_ATTACHED, NULL, &der, &len), 0);
	expect_verify("pkcs7 attached content -> EBADMSG", der, len, rsa.cert, -EBADMSG);
	free(TAKE_PTR(der));

	CHECK_EQ("pkcs7 sign-file two signers builds",
		 signfile(&rsa, EVP_sha256(), data, DATA_LEN, 0, &ec, &der, &len), 0);
	expect_verify("pkcs7 two signers -> EBADMSG", der, len, rsa.cert, -EBADMSG);
	free(TAKE_PTR(der));

	/* Broken DER. */
	if (sign_buf(&rsa, digest_lookup("sha256"), data, DATA_LEN, false, &der, &len) < 0)
		return (void)CHECK("pkcs7 DER setup", false);
	copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, der, len);
		copy[len] = 0;
		expect_verify("pkcs7 DER as signed verifies", copy, len, rsa.cert, 0);
		expect_verify("pkcs7 truncated DER (-1) -> EBADMSG", copy, len - 1, rsa.cert,
			      -EBADMSG);
		expect_verify("pkcs7 truncated DER (half) -> EBADMSG", copy, len / 2, rsa.cert,
			      -EBADMSG);
		expect_verify("pkcs7 empty DER -> EBADMSG", copy, 0, rsa.cert, -EBADMSG);
		expect_verify("pkcs7 trailing byte after DER -> EBADMSG", copy, len + 1,
			      rsa.cert, -EBADMSG);
		copy[0] = 0x31; /* SET instead of SEQUENCE */
		expect_verify("pkcs7 wrong outer tag -> EBADMSG", copy, len, rsa.cert, -EBADMSG);
		free(copy);
	}
	OPENSSL_free(der);
}

/* @der with its signer's signatureAlgorithm set to @nid, re-encoded. */
static int with_sig_alg(const uint8_t *der, size_t len, int nid, uint8_t **ret, size_t *ret_len)
{
	const unsigned char *p = der;
	CMS_ContentInfo *cms = d2i_CMS_ContentInfo(NULL, &p, (long)len);
	X509_ALGOR *alg = NULL;
	unsigned char *out = NULL;
	int n = -1;

	if (cms) {
		CMS_SignerInfo_get0_algs(sk_CMS_SignerInfo_value(CMS_get0_SignerInfos(cms), 0),
					 NULL, NULL, NULL, &alg);
		if (alg && X509_ALGOR_set0(alg, OBJ_nid2obj(nid), V_ASN1_NULL, NULL))
			n = i2d_CMS_ContentInfo(cms, &out);
	}
	CMS_ContentInfo_free(cms);
	if (n <= 0)
		return -ENOMEM;
	*ret = out;
	*ret_len = (size_t)n;
	return 0;
}

/* What a server of the pool may return for a digest (review of dd63b44):
 * a valid signature by the right key, over the right digest, in a form
 * the kernel refuses or sign-file never makes, was written. */
UNIT_TEST(reply_forms)
{
	const struct digest *md = digest_lookup("sha256");
	uint8_t dg[DIGEST_MAX_LEN], *der = NULL, *alt = NULL;
	size_t dg_len = 0, len = 0, alt_len = 0;

	if (digest_buf(data, DATA_LEN, md, dg, &dg_len) < 0 ||
	    sign_buf(&rsa, md, data, DATA_LEN, false, &der, &len) < 0)
		return (void)CHECK("pkcs7 reply setup", false);
	CHECK_EQ("pkcs7 reply as the daemon makes it verifies over the digest",
		 pkcs7_verify_digest(der, len, rsa.cert, md, dg, dg_len, false), 0);

	/* sha256WithRSAEncryption as the signature algorithm: OpenSSL
	 * verifies it, the kernel's pkcs7_sig_note_pkey_algo() takes
	 * rsaEncryption only ("Unsupported pkey algo", ENOPKG at load). */
	CHECK_EQ("pkcs7 reply sha256WithRSAEncryption builds",
		 with_sig_alg(der, len, NID_sha256WithRSAEncryption, &alt, &alt_len), 0);
	CHECK("pkcs7 reply sha256WithRSAEncryption valid to OpenSSL",
	      alt && openssl_verifies(alt, alt_len, rsa.cert, data, DATA_LEN));
	CHECK_EQ("pkcs7 reply sha256WithRSAEncryption -> EBADMSG",
		 alt ? pkcs7_verify_digest(alt, alt_len, rsa.cert, md, dg, dg_len, false) : -ENOMEM,
		 -EBADMSG);
	expect_verify("pkcs7 module sha256WithRSAEncryption -> EBADMSG", alt, alt_len, rsa.cert,
		      -EBADMSG);
	OPENSSL_free(TAKE_PTR(alt));
	CHECK_EQ("pkcs7 reply rsaEncryption re-encoded builds",
		 with_sig_alg(der, len, NID_rsaEncryption, &alt, &alt_len), 0);
	CHECK_EQ("pkcs7 reply rsaEncryption re-encoded verifies",
		 alt ? pkcs7_verify_digest(alt, alt_len, rsa.cert, md, dg, dg_len, false) : -ENOMEM, 0);
	OPENSSL_free(TAKE_PTR(alt));
	CHECK_EQ("pkcs7 reply by issuer+serial when the keyid was asked -> EBADMSG",
		 pkcs7_verify_digest(der, len, rsa.cert, md, dg, dg_len, true), -EBADMSG);
	OPENSSL_free(TAKE_PTR(der));
	if (sign_buf(&rsa, md, data, DATA_LEN, true, &der, &len) < 0)
		return (void)CHECK("pkcs7 reply keyid setup", false);
	CHECK_EQ("pkcs7 reply by keyid as asked verifies",
		 pkcs7_verify_digest(der, len, rsa.cert, md, dg, dg_len, true), 0);
	CHECK_EQ("pkcs7 reply by keyid when issuer+serial was asked -> EBADMSG",
		 pkcs7_verify_digest(der, len, rsa.cert, md, dg, dg_len, false), -EBADMSG);
	OPENSSL_free(TAKE_PTR(der));

	/* The certificate inside: not the form the daemon sends (PROTOCOL.md,
	 * sign-file's CMS_NOCERTS); a certificate the kernel cannot parse
	 * there fails the module at load. */
	CHECK_EQ("pkcs7 reply with the certificate inside builds",
		 signfile(&rsa, EVP_sha256(), data, DATA_LEN, SF_CERTS, NULL, &der, &len), 0);
	CHECK("pkcs7 reply with the certificate inside valid to OpenSSL",
	      der && openssl_verifies(der, len, rsa.cert, data, DATA_LEN));
	CHECK_EQ("pkcs7 reply with the certificate inside -> EBADMSG",
		 der ? pkcs7_verify_digest(der, len, rsa.cert, md, dg, dg_len, false) : -ENOMEM,
		 -EBADMSG);
	free(TAKE_PTR(der));
	CHECK_EQ("pkcs7 reply sign-file's own form verifies over the digest",
		 signfile(&rsa, EVP_sha256(), data, DATA_LEN, 0, NULL, &der, &len) == 0 && der
			 ? pkcs7_verify_digest(der, len, rsa.cert, md, dg, dg_len, false)
			 : -ENOMEM,
		 0);
	free(TAKE_PTR(der));

	/* ECDSA: ecdsa-with-SHA* is what the kernel takes. */
	if (digest_buf(data, DATA_LEN, digest_lookup("sha384"), dg, &dg_len) < 0 ||
	    sign_buf(&ec, digest_lookup("sha384"), data, DATA_LEN, true, &der, &len) < 0)
		return (void)CHECK("pkcs7 reply ecdsa setup", false);
	CHECK_EQ("pkcs7 reply ecdsa verifies over the digest",
		 pkcs7_verify_digest(der, len, ec.cert, digest_lookup("sha384"), dg, dg_len, true), 0);
	CHECK_EQ("pkcs7 reply ecdsa id-ecPublicKey as the algorithm builds",
		 with_sig_alg(der, len, NID_X9_62_id_ecPublicKey, &alt, &alt_len), 0);
	CHECK_EQ("pkcs7 reply ecdsa id-ecPublicKey -> EBADMSG",
		 alt ? pkcs7_verify_digest(alt, alt_len, ec.cert, digest_lookup("sha384"), dg,
					   dg_len, true)
		     : -ENOMEM,
		 -EBADMSG);
	OPENSSL_free(alt);
	OPENSSL_free(der);
}

UNIT_TEST(not_pkcs7)
{
	_cleanup_(freep) uint8_t *der = NULL;
	size_t len = 0;

	if (cert_to_der(rsa.cert, &der, &len) < 0)
		return (void)CHECK("pkcs7 cert_to_der", false);
	expect_verify("pkcs7 a certificate's DER -> EBADMSG", der, len, rsa.cert, -EBADMSG);
}

UNIT_TEST(sign_errors)
{
	uint8_t dg[DIGEST_MAX_LEN];
	uint8_t *der = NULL;
	size_t len = 0, dg_len = 0;

	if (digest_buf(data, DATA_LEN, digest_lookup("sha384"), dg, &dg_len) < 0)
		return (void)CHECK("pkcs7 digest setup", false);
	CHECK_EQ("pkcs7 sha256 with a 48-byte digest -> EINVAL",
		 pkcs7_sign_digest(rsa.cert, rsa.key, digest_lookup("sha256"), dg, dg_len, false, &der,
				   &len), -EINVAL);
	CHECK_EQ("pkcs7 sha384 with a 32-byte digest -> EINVAL",
		 pkcs7_sign_digest(rsa.cert, rsa.key, digest_lookup("sha384"), dg, 32, false, &der, &len),
		 -EINVAL);
	CHECK_EQ("pkcs7 sha384 with 48-byte digest ok",
		 pkcs7_sign_digest(rsa.cert, rsa.key, digest_lookup("sha384"), dg, dg_len, false, &der,
				   &len), 0);
	OPENSSL_free(TAKE_PTR(der));

	CHECK_EQ("pkcs7 RSA key not matching RSA cert -> EINVAL",
		 pkcs7_sign_digest(rsa.cert, rsa2.key, digest_lookup("sha384"), dg, dg_len, false, &der,
				   &len), -EINVAL);
	CHECK_EQ("pkcs7 EC key with RSA cert -> EINVAL",
		 pkcs7_sign_digest(rsa.cert, ec.key, digest_lookup("sha384"), dg, dg_len, true, &der,
				   &len), -EINVAL);
	CHECK_EQ("pkcs7 RSA key with EC cert -> EINVAL",
		 pkcs7_sign_digest(ec.cert, rsa.key, digest_lookup("sha384"), dg, dg_len, false, &der,
				   &len), -EINVAL);
	CHECK("pkcs7 failed sign leaves ret_der NULL", der == NULL);
	CHECK("pkcs7 no OpenSSL error left behind", ERR_peek_error() == 0);
	ERR_clear_error();
}

/* A whole signed module: body | PKCS#7 | trailer, found by modsig_parse. */
UNIT_TEST(module_file)
{
	_cleanup_(closep) int fd = -1;
	_cleanup_(freep) uint8_t *file = NULL;
	uint8_t *der = NULL;
	size_t len = 0, file_len;
	struct modsig_info mi;
	int r;

	if (sign_buf(&rsa, digest_lookup("sha512"), data, DATA_LEN, true, &der, &len) < 0)
		return (void)CHECK("pkcs7 module setup", false);
	file_len = DATA_LEN + len + MODSIG_TRAILER_LEN;
	file = malloc(file_len);
	if (file && modsig_trailer(len, file + DATA_LEN + len) == 0) {
		memcpy(file, data, DATA_LEN);
		memcpy(file + DATA_LEN, der, len);
		fd = temp_file(file, file_len);
	}
	OPENSSL_free(der);
	if (!CHECK("pkcs7 signed module written", fd >= 0))
		return;

	r = modsig_parse(file + file_len - MODSIG_TRAILER_LEN, MODSIG_TRAILER_LEN,
			 file_len, &mi);
	CHECK("pkcs7 signed module trailer parses",
	      r == 1 && mi.body_len == DATA_LEN && mi.sig_len == len);
	CHECK_EQ("pkcs7 signed module verifies over body_len",
		 pkcs7_verify_module(file + mi.sig_off, mi.sig_len, rsa.cert, fd,
				     mi.body_len, NULL), 0);
	CHECK_EQ("pkcs7 signed module over body + 1 byte -> EKEYREJECTED",
		 pkcs7_verify_module(file + mi.sig_off, mi.sig_len, rsa.cert, fd,
				     mi.body_len + 1, NULL), -EKEYREJECTED);
	CHECK_EQ("pkcs7 signed module over whole file -> EKEYREJECTED",
		 pkcs7_verify_module(file + mi.sig_off, mi.sig_len, rsa.cert, fd, file_len,
				     NULL), -EKEYREJECTED);
}

/* The fixture, made once for every case: four keys and their
 * certificates, a clashing one, and the data they sign in files. */
static bool make_fixture(void)
{
	bool ok;

	ok = RAND_bytes(data, DATA_LEN) == 1;
	memcpy(bad_data, data, DATA_LEN);
	bad_data[DATA_LEN / 2] ^= 0x80;
	ok = ok && ident_make(&rsa, EVP_RSA_gen(2048), "modsign test RSA", 1) &&
	     ident_make(&rsa2, EVP_RSA_gen(2048), "modsign test RSA 2", 2) &&
	     ident_make(&ec, EVP_EC_gen("P-384"), "modsign test EC", 3) &&
	     ident_make(&other, EVP_RSA_gen(2048), "modsign other", 4);
	/* Same issuer and serial as rsa, another key (and so another SKID). */
	clash.cert = rsa2.key ? make_cert(rsa2.key, "modsign test RSA", 1) : NULL;
	ok = ok && clash.cert;
	data_fd = temp_file(data, DATA_LEN);
	bad_fd = temp_file(bad_data, DATA_LEN);
	return ok && data_fd >= 0 && bad_fd >= 0;
}

static void teardown(void)
{
	ident_done(&rsa);
	ident_done(&rsa2);
	ident_done(&ec);
	ident_done(&other);
	X509_free(clash.cert);
	closep(&data_fd);
	closep(&bad_fd);
}

static bool fixture(void)
{
	if (CHECK("pkcs7 setup: keys, certificates, data", make_fixture()))
		return true;
	ERR_print_errors_fp(stdout);
	return false;
}

UNIT_MAIN(.setup = fixture, .teardown = teardown)
