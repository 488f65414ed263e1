/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/cms.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/rsa.h>
#include <string.h>

#include "cert.h"
#include "digest.h"
#include "macro.h"
#include "mldsa.h"
#include "pkcs7.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(CMS_ContentInfo *, CMS_ContentInfo_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY_CTX *, EVP_PKEY_CTX_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free)

/* What each way of signing asks of EVP_PKEY_sign(): an RSA padding, or
 * none (0: the key's default). */
static const struct {
	int rsa_padding;
} sig_params[] = {
	[PKCS7_SIG_DEFAULT] = { 0 },
	[PKCS7_SIG_RSA_PKCS1] = { RSA_PKCS1_PADDING },
	[PKCS7_SIG_ECDSA] = { 0 },
	[PKCS7_SIG_MLDSA] = { 0 },
};

/* The raw signature over a digest: PKCS#1 v1.5 (DigestInfo) for RSA, as
 * OpenSSL's CMS code makes it; DER ECDSA-Sig-Value for EC. */
static int sign_raw(EVP_PKEY *key, enum pkcs7_sig sig_alg, const EVP_MD *md,
		    const uint8_t *digest, size_t digest_len, uint8_t **ret, size_t *ret_len)
{
	_cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *ctx = NULL;
	_cleanup_(freep) uint8_t *sig = NULL;
	size_t len = 0;

	ctx = EVP_PKEY_CTX_new(key, NULL);
	if (!ctx)
		return -ENOMEM;
	if (EVP_PKEY_sign_init(ctx) <= 0 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, md) <= 0)
		return -EIO;
	if (sig_params[sig_alg].rsa_padding &&
	    EVP_PKEY_CTX_set_rsa_padding(ctx, sig_params[sig_alg].rsa_padding) <= 0)
		return -EIO;
	if (EVP_PKEY_sign(ctx, NULL, &len, digest, digest_len) <= 0)
		return -EIO;
	sig = malloc(len);
	if (!sig)
		return -ENOMEM;
	if (EVP_PKEY_sign(ctx, sig, &len, digest, digest_len) <= 0)
		return -EIO;
	*ret = TAKE_PTR(sig);
	*ret_len = len;
	return 0;
}

/*
 * OpenSSL 3.0 (Debian 12) knows the id-ecdsa-with-sha3-* OIDs but not
 * which hash and key type they pair, so CMS_add1_signer() refuses an EC
 * key with SHA-3 ("unsupported signature algorithm"), and so does
 * sign-file built against it.  Tell it, once per process, where it does
 * not know already (later OpenSSL does); OBJ_add_sigid() takes OpenSSL's
 * own lock.  A failure shows as that refusal, -EINVAL, on SHA-3 only.
 */
static const struct {
	int sig, md;
} ecdsa_sha3[] = {
	{ NID_ecdsa_with_SHA3_256, NID_sha3_256 },
	{ NID_ecdsa_with_SHA3_384, NID_sha3_384 },
	{ NID_ecdsa_with_SHA3_512, NID_sha3_512 },
};

static void add_ecdsa_sha3(void)
{
	for (size_t i = 0; i < ELEMENTSOF(ecdsa_sha3); i++)
		if (!OBJ_find_sigid_by_algs(NULL, ecdsa_sha3[i].md, NID_X9_62_id_ecPublicKey))
			OBJ_add_sigid(ecdsa_sha3[i].sig, ecdsa_sha3[i].md,
				      NID_X9_62_id_ecPublicKey);
	ERR_clear_error();
}

/*
 * ML-DSA with signed attributes, as scripts/sign-file makes it with
 * OpenSSL 3.5 (which cannot sign ML-DSA without them): contentType data
 * and messageDigest @digest (sha512: the only hash the kernel's
 * public_key.c takes with ML-DSA besides "none"), signed by OpenSSL's
 * CMS code, pure ML-DSA over the DER of the attributes.  OpenSSL adds a
 * signingTime, which the kernel parses and ignores.
 */
static int sign_attrs(X509 *cert, EVP_PKEY *key, const struct digest *d,
		      const uint8_t *digest, size_t digest_len, bool use_keyid,
		      uint8_t **ret_der, size_t *ret_len)
{
	const unsigned flags = CMS_NOCERTS | CMS_BINARY | CMS_DETACHED;
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	CMS_SignerInfo *si;
	unsigned char *der = NULL;
	int n;

	if (d != digest_lookup(PKCS7_MLDSA_ATTRS_DIGEST))
		return -EINVAL;
	cms = CMS_sign(NULL, NULL, NULL, NULL, flags | CMS_PARTIAL);
	if (!cms)
		return -ENOMEM;
	si = CMS_add1_signer(cms, cert, key, digest_evp(d),
			     flags | CMS_PARTIAL | CMS_NOSMIMECAP | (use_keyid ? CMS_USE_KEYID : 0));
	if (!si || !CMS_signed_add1_attr_by_NID(si, NID_pkcs9_contentType, V_ASN1_OBJECT,
						 OBJ_nid2obj(NID_pkcs7_data), -1) ||
	    !CMS_signed_add1_attr_by_NID(si, NID_pkcs9_messageDigest, V_ASN1_OCTET_STRING, digest,
					 (int)digest_len)) {
		ERR_clear_error();
		return -EINVAL;
	}
	if (CMS_SignerInfo_sign(si) != 1) {
		ERR_clear_error();
		return -EIO;
	}
	n = i2d_CMS_ContentInfo(cms, &der);
	if (n <= 0)
		return -ENOMEM;
	*ret_der = der;
	*ret_len = (size_t)n;
	return 0;
}

int pkcs7_sign_digest_as(X509 *cert, EVP_PKEY *key, enum pkcs7_sig sig_alg,
			 const struct digest *d, const uint8_t *digest, size_t digest_len,
			 bool use_keyid, uint8_t **ret_der, size_t *ret_len)
{
	const unsigned flags = CMS_NOCERTS | CMS_BINARY | CMS_DETACHED;
	static CRYPTO_ONCE once = CRYPTO_ONCE_STATIC_INIT;
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	_cleanup_(freep) uint8_t *sig = NULL;
	const EVP_MD *md = digest_evp(d);
	CMS_SignerInfo *si;
	unsigned char *der = NULL;
	size_t sig_len;
	int n, r;

	if (!md || digest_size(d) != digest_len || (size_t)sig_alg >= ELEMENTSOF(sig_params))
		return -EINVAL;
	if (sig_alg == PKCS7_SIG_MLDSA)
		return sign_attrs(cert, key, d, digest, digest_len, use_keyid, ret_der, ret_len);
	CRYPTO_THREAD_run_once(&once, add_ecdsa_sha3);

	/*
	 * Let OpenSSL lay out the SignedData exactly as sign-file's
	 * CMS_sign(CMS_PARTIAL)/CMS_add1_signer() does: version, digest
	 * algorithm identifiers, signer identifier and signature algorithm.
	 * Only the final step differs: CMS_final() would hash the content;
	 * we sign the digest we were given and put it in place ourselves.
	 */
	cms = CMS_sign(NULL, NULL, NULL, NULL, flags | CMS_PARTIAL);
	if (!cms)
		return -ENOMEM;
	si = CMS_add1_signer(cms, cert, key, md,
			     flags | CMS_NOSMIMECAP | CMS_NOATTR |
				     (use_keyid ? CMS_USE_KEYID : 0));
	if (!si) {
		ERR_clear_error();
		return -EINVAL;
	}
	r = sign_raw(key, sig_alg, md, digest, digest_len, &sig, &sig_len);
	if (r < 0) {
		ERR_clear_error();
		return r;
	}
	ASN1_STRING_set0(CMS_SignerInfo_get0_signature(si), TAKE_PTR(sig),
			 (int)sig_len);

	n = i2d_CMS_ContentInfo(cms, &der);
	if (n <= 0)
		return -ENOMEM;
	*ret_der = der;
	*ret_len = (size_t)n;
	return 0;
}

int pkcs7_sign_digest(X509 *cert, EVP_PKEY *key, const struct digest *md,
		      const uint8_t *digest, size_t digest_len, bool use_keyid,
		      uint8_t **ret_der, size_t *ret_len)
{
	struct pkcs7_key_alg alg;

	cert_key_alg(key, &alg);
	return pkcs7_sign_digest_as(cert, key, alg.sig, md, digest, digest_len, use_keyid,
				    ret_der, ret_len);
}

/* OpenSSL 3.5's ML-DSA "mu" parameter (OSSL_SIGNATURE_PARAM_MU, spelt
 * out: 3.0's headers have no such name) on a one-shot sign or verify
 * context with no digest, as openssl pkeyutl -rawin -pkeyopt mu:1 makes
 * it: the message given is mu itself, not the message mu is made from. */
static int mu_ctx(EVP_PKEY *key, bool sign, EVP_MD_CTX **ret)
{
	int one = 1;
	OSSL_PARAM params[] = { OSSL_PARAM_construct_int("mu", &one), OSSL_PARAM_construct_end() };
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		return -ENOMEM;
	if ((sign ? EVP_DigestSignInit_ex(ctx, NULL, NULL, NULL, NULL, key, params) :
		    EVP_DigestVerifyInit_ex(ctx, NULL, NULL, NULL, NULL, key, params)) <= 0) {
		EVP_MD_CTX_free(ctx);
		ERR_clear_error();
		return -EOPNOTSUPP;
	}
	*ret = ctx;
	return 0;
}

static int sign_raw_mu(EVP_PKEY *key, const uint8_t *mu, size_t mu_len, uint8_t **ret,
		       size_t *ret_len)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = NULL;
	_cleanup_(freep) uint8_t *sig = NULL;
	size_t len = 0;
	int r = mu_ctx(key, true, &ctx);

	if (r < 0)
		return r;
	if (EVP_DigestSign(ctx, NULL, &len, mu, mu_len) <= 0)
		return -EIO;
	sig = malloc(len);
	if (!sig)
		return -ENOMEM;
	if (EVP_DigestSign(ctx, sig, &len, mu, mu_len) <= 0)
		return -EIO;
	*ret = TAKE_PTR(sig);
	*ret_len = len;
	return 0;
}

int pkcs7_sign_mu(X509 *cert, EVP_PKEY *key, const uint8_t *mu, size_t mu_len,
		  bool use_keyid, uint8_t **ret_der, size_t *ret_len)
{
	const unsigned flags = CMS_NOCERTS | CMS_BINARY | CMS_DETACHED;
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	_cleanup_(freep) uint8_t *sig = NULL;
	const EVP_MD *md = digest_evp(digest_lookup(PKCS7_MLDSA_DIGEST));
	CMS_SignerInfo *si;
	unsigned char *der = NULL;
	size_t sig_len;
	int n, r;

	if (!md || mu_len != MLDSA_MU_LEN || !mldsa_of_cert(cert))
		return -EINVAL;
	/* As pkcs7_sign_digest_as(): OpenSSL lays the SignerInfo out (for
	 * an ML-DSA key, signature algorithm id-ml-dsa-*, no parameters),
	 * the signature is put in place by hand. */
	cms = CMS_sign(NULL, NULL, NULL, NULL, flags | CMS_PARTIAL);
	if (!cms)
		return -ENOMEM;
	si = CMS_add1_signer(cms, cert, key, md,
			     flags | CMS_NOSMIMECAP | CMS_NOATTR |
				     (use_keyid ? CMS_USE_KEYID : 0));
	if (!si) {
		ERR_clear_error();
		return -EINVAL;
	}
	r = sign_raw_mu(key, mu, mu_len, &sig, &sig_len);
	if (r < 0) {
		ERR_clear_error();
		return r;
	}
	ASN1_STRING_set0(CMS_SignerInfo_get0_signature(si), TAKE_PTR(sig), (int)sig_len);
	n = i2d_CMS_ContentInfo(cms, &der);
	if (n <= 0)
		return -ENOMEM;
	*ret_der = der;
	*ret_len = (size_t)n;
	return 0;
}

/* The single SignerInfo of a detached SignedData of type data. */
static int parse_signed_data(CMS_ContentInfo *cms, CMS_SignerInfo **ret)
{
	STACK_OF(CMS_SignerInfo) *sis;
	ASN1_OCTET_STRING **content;

	if (OBJ_obj2nid(CMS_get0_type(cms)) != NID_pkcs7_signed)
		return -EBADMSG;
	if (OBJ_obj2nid(CMS_get0_eContentType(cms)) != NID_pkcs7_data)
		return -EBADMSG;
	content = CMS_get0_content(cms);
	if (content && *content)
		return -EBADMSG; /* not detached */
	sis = CMS_get0_SignerInfos(cms);
	if (!sis || sk_CMS_SignerInfo_num(sis) != 1)
		return -EBADMSG;
	*ret = sk_CMS_SignerInfo_value(sis, 0);
	return 0;
}

/* An ML-DSA signature over the message whose mu is @mu; -ENOSYS where
 * this OpenSSL has no ML-DSA (3.0 cannot even decode the key). */
static int verify_mu(X509 *cert, const uint8_t *mu, CMS_SignerInfo *si)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = NULL;
	ASN1_OCTET_STRING *sig = CMS_SignerInfo_get0_signature(si);
	const struct mldsa_variant *v = mldsa_of_cert(cert);
	EVP_PKEY *pub;

	if (!v || !mldsa_available(v))
		return -ENOSYS;
	pub = X509_get0_pubkey(cert);
	if (!pub || mu_ctx(pub, false, &ctx) < 0)
		return -EBADMSG;
	if (EVP_DigestVerify(ctx, ASN1_STRING_get0_data(sig), (size_t)ASN1_STRING_length(sig), mu,
			     MLDSA_MU_LEN) != 1)
		return -EKEYREJECTED;
	return 0;
}

static int verify_raw(X509 *cert, const EVP_MD *md, const uint8_t *digest,
		      size_t digest_len, CMS_SignerInfo *si)
{
	_cleanup_(EVP_PKEY_CTX_freep) EVP_PKEY_CTX *ctx = NULL;
	ASN1_OCTET_STRING *sig = CMS_SignerInfo_get0_signature(si);
	EVP_PKEY *pub = X509_get0_pubkey(cert);

	if (!pub)
		return -EBADMSG;
	ctx = EVP_PKEY_CTX_new(pub, NULL);
	if (!ctx)
		return -ENOMEM;
	if (EVP_PKEY_verify_init(ctx) <= 0 ||
	    EVP_PKEY_CTX_set_signature_md(ctx, md) <= 0)
		return -EKEYREJECTED;
	if (EVP_PKEY_is_a(pub, "RSA") &&
	    EVP_PKEY_CTX_set_rsa_padding(ctx, RSA_PKCS1_PADDING) <= 0)
		return -EKEYREJECTED;
	if (EVP_PKEY_verify(ctx, ASN1_STRING_get0_data(sig),
			    (size_t)ASN1_STRING_length(sig), digest,
			    digest_len) != 1)
		return -EKEYREJECTED;
	return 0;
}

/*
 * The signature algorithms the kernel's pkcs7_sig_note_pkey_algo() takes,
 * per key type: rsaEncryption for RSA (not sha256WithRSAEncryption or
 * RSA-SHA3-256, which OpenSSL verifies and the kernel refuses,
 * "Unsupported pkey algo"), ecdsa-with-SHA* and, from 6.7 on,
 * id-ecdsa-with-sha3-* (2.16.840.1.101.3.4.3.10-12, oid_registry.h's
 * OID_id_ecdsa_with_sha3_*) for EC.  Which hash the signature was made
 * with is the digest algorithm's business, checked apart.
 */
static const struct {
	const char *key_type;
	int nid;
} kernel_sig_algs[] = {
	{ "RSA", NID_rsaEncryption },
	{ "EC", NID_ecdsa_with_SHA1 },
	{ "EC", NID_ecdsa_with_SHA224 },
	{ "EC", NID_ecdsa_with_SHA256 },
	{ "EC", NID_ecdsa_with_SHA384 },
	{ "EC", NID_ecdsa_with_SHA512 },
	{ "EC", NID_ecdsa_with_SHA3_256 },
	{ "EC", NID_ecdsa_with_SHA3_384 },
	{ "EC", NID_ecdsa_with_SHA3_512 },
};

/* Whether the kernel takes @alg as the signature algorithm of @cert's key. */
static bool kernel_sig_alg(const X509_ALGOR *alg, X509 *cert)
{
	const struct mldsa_variant *v = mldsa_of_cert(cert);
	EVP_PKEY *pub = v ? NULL : X509_get0_pubkey(cert);
	int nid = OBJ_obj2nid(alg->algorithm);
	char oid[64];

	/* ML-DSA by its OID, which OpenSSL 3.0 has no NID for: the one of
	 * the certificate's key (id-ml-dsa-65 for an ML-DSA-65 key), no
	 * parameters (RFC 9882). */
	if (v)
		return OBJ_obj2txt(oid, sizeof(oid), alg->algorithm, 1) > 0 &&
		       strcmp(oid, v->oid) == 0 && alg->parameter == NULL;
	for (size_t i = 0; pub && i < ELEMENTSOF(kernel_sig_algs); i++)
		if (nid == kernel_sig_algs[i].nid &&
		    EVP_PKEY_is_a(pub, kernel_sig_algs[i].key_type))
			return true;
	return false;
}

/* Parse @der and check everything but the signature value: one signer,
 * @cert's, no signed attributes, a hash we accept (*@ret_md), a signature
 * algorithm the kernel takes. */
static int open_signer(const uint8_t *der, size_t der_len, X509 *cert,
		       CMS_ContentInfo **ret_cms, CMS_SignerInfo **ret_si,
		       const struct digest **ret_md, const char **ret_hash)
{
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	const unsigned char *p = der;
	X509_ALGOR *digalg = NULL, *sigalg = NULL;
	CMS_SignerInfo *si;
	const struct digest *md;
	int r;

	cms = d2i_CMS_ContentInfo(NULL, &p, (long)der_len);
	if (!cms || p != der + der_len) {
		ERR_clear_error();
		return -EBADMSG;
	}
	r = parse_signed_data(cms, &si);
	if (r < 0)
		return r;
	CMS_SignerInfo_get0_algs(si, NULL, NULL, &digalg, &sigalg);
	/* OpenSSL's long names are the lower-case "sha256" we use. */
	md = digest_lookup(OBJ_nid2ln(OBJ_obj2nid(digalg->algorithm)));
	if (ret_hash)
		*ret_hash = md ? digest_name(md) : NULL;
	if (!md)
		return -ENOPKG;
	if (CMS_signed_get_attr_count(si) >= 0 && !mldsa_of_cert(cert))
		return -EPROTO;
	if (CMS_SignerInfo_cert_cmp(si, cert) != 0)
		return -ENOKEY;
	if (!sigalg || !kernel_sig_alg(sigalg, cert))
		return -EBADMSG;
	*ret_si = si;
	*ret_md = md;
	*ret_cms = TAKE_PTR(cms);
	return 0;
}

/* No certificates, CRLs or unsigned attributes. */
static bool form_is_bare(CMS_ContentInfo *cms, CMS_SignerInfo *si)
{
	STACK_OF(X509) *certs = CMS_get1_certs(cms);
	STACK_OF(X509_CRL) *crls = CMS_get1_crls(cms);
	bool bare = sk_X509_num(certs) <= 0 && sk_X509_CRL_num(crls) <= 0 &&
		    CMS_unsigned_get_attr_count(si) < 0;

	sk_X509_pop_free(certs, X509_free);
	sk_X509_CRL_pop_free(crls, X509_CRL_free);
	return bare;
}

/* The signer named as asked: by subjectKeyIdentifier (sign-file -k), or
 * by issuer and serial number. */
static bool signer_id_is(CMS_SignerInfo *si, bool use_keyid)
{
	ASN1_OCTET_STRING *keyid = NULL;
	X509_NAME *issuer = NULL;
	ASN1_INTEGER *sno = NULL;

	if (CMS_SignerInfo_get0_signer_id(si, &keyid, &issuer, &sno) != 1)
		return false;
	return use_keyid ? keyid != NULL : issuer != NULL && sno != NULL;
}

static bool has_signed_attrs(CMS_SignerInfo *si)
{
	return CMS_signed_get_attr_count(si) >= 0;
}

/*
 * The signed-attributes ML-DSA form, as the kernel with
 * CONFIG_PKCS7_WAIVE_AUTHATTRS_REJECTION_FOR_MLDSA checks it: sha512, a
 * contentType of data and a messageDigest of @digest among the signed
 * attributes, and the signature (pure ML-DSA) over their DER.  -ENOSYS
 * where this OpenSSL has no ML-DSA.
 */
static int verify_attrs(X509 *cert, const struct digest *md, const uint8_t *digest,
			size_t digest_len, CMS_SignerInfo *si)
{
	const struct mldsa_variant *v = mldsa_of_cert(cert);
	ASN1_OCTET_STRING *mdattr;
	ASN1_OBJECT *ctype;
	int r;

	if (md != digest_lookup(PKCS7_MLDSA_ATTRS_DIGEST))
		return -ENOPKG;
	ctype = CMS_signed_get0_data_by_OBJ(si, OBJ_nid2obj(NID_pkcs9_contentType), -3,
					    V_ASN1_OBJECT);
	mdattr = CMS_signed_get0_data_by_OBJ(si, OBJ_nid2obj(NID_pkcs9_messageDigest), -3,
					     V_ASN1_OCTET_STRING);
	if (!ctype || OBJ_obj2nid(ctype) != NID_pkcs7_data || !mdattr)
		return -EBADMSG;
	if ((size_t)ASN1_STRING_length(mdattr) != digest_len ||
	    memcmp(ASN1_STRING_get0_data(mdattr), digest, digest_len) != 0)
		return -EKEYREJECTED;
	if (!v || !mldsa_available(v))
		return -ENOSYS;
	CMS_SignerInfo_set1_signer_cert(si, cert);
	r = CMS_SignerInfo_verify(si) == 1 ? 0 : -EKEYREJECTED;
	ERR_clear_error();
	return r;
}

int pkcs7_verify_module(const uint8_t *der, size_t der_len, X509 *cert,
			int fd, size_t body_len, const char **ret_hash)
{
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	uint8_t digest[DIGEST_MAX_LEN];
	CMS_SignerInfo *si;
	const struct digest *md;
	size_t digest_len;
	int r;

	r = open_signer(der, der_len, cert, &cms, &si, &md, ret_hash);
	if (r < 0)
		return r;
	if (mldsa_of_cert(cert) && has_signed_attrs(si)) {
		r = digest_fd(fd, body_len, md, digest, &digest_len);
		return r < 0 ? r : verify_attrs(cert, md, digest, digest_len, si);
	}
	if (mldsa_of_cert(cert)) {
		uint8_t tr[MLDSA_TR_LEN];

		r = mldsa_cert_tr(cert, tr);
		if (r == 0)
			r = mldsa_mu_fd(tr, fd, body_len, digest);
		if (r == 0)
			r = verify_mu(cert, digest, si);
		ERR_clear_error();
		return r;
	}
	r = digest_fd(fd, body_len, md, digest, &digest_len);
	if (r < 0)
		return r;
	r = verify_raw(cert, digest_evp(md), digest, digest_len, si);
	ERR_clear_error();
	return r;
}

int pkcs7_verify_digest(const uint8_t *der, size_t der_len, X509 *cert,
			const struct digest *md, const uint8_t *digest, size_t digest_len,
			bool use_keyid)
{
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	const struct digest *used;
	CMS_SignerInfo *si;
	int r;

	r = open_signer(der, der_len, cert, &cms, &si, &used, NULL);
	if (r < 0)
		return r;
	if (used != md)
		return -ENOPKG;
	/* A server's reply is what the daemon makes (sign-file's
	 * CMS_NOCERTS): no certificates or CRLs inside, no unsigned
	 * attributes, which the kernel would parse (one it cannot parse
	 * fails the module at load) and which would make the module differ
	 * from sign-file's byte for byte. */
	if (!form_is_bare(cms, si) || !signer_id_is(si, use_keyid))
		return -EBADMSG;
	if (mldsa_of_cert(cert))
		return has_signed_attrs(si) ? verify_attrs(cert, md, digest, digest_len, si) :
					      -EPROTO; /* the pure form is a mu request's */
	r = verify_raw(cert, digest_evp(md), digest, digest_len, si);
	ERR_clear_error();
	return r;
}

int pkcs7_verify_mu(const uint8_t *der, size_t der_len, X509 *cert, const uint8_t *mu,
		    size_t mu_len, bool use_keyid)
{
	_cleanup_(CMS_ContentInfo_freep) CMS_ContentInfo *cms = NULL;
	const struct digest *used;
	CMS_SignerInfo *si;
	int r;

	if (mu_len != MLDSA_MU_LEN || !mldsa_of_cert(cert))
		return -EINVAL;
	r = open_signer(der, der_len, cert, &cms, &si, &used, NULL);
	if (r < 0)
		return r;
	if (used != digest_lookup(PKCS7_MLDSA_DIGEST))
		return -ENOPKG;
	if (has_signed_attrs(si))
		return -EPROTO;
	if (!form_is_bare(cms, si) || !signer_id_is(si, use_keyid))
		return -EBADMSG;
	r = verify_mu(cert, mu, si);
	ERR_clear_error();
	return r;
}
