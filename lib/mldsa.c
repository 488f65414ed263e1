/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/objects.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "digest.h"
#include "mldsa.h"

/* FIPS 204 Table 1/2, and NIST's OIDs (RFC 9881): one row per variant. */
static const struct mldsa_variant variants[] = {
	{ "mldsa44", "ML-DSA-44", "2.16.840.1.101.3.4.3.17", 1312 },
	{ "mldsa65", "ML-DSA-65", "2.16.840.1.101.3.4.3.18", 1952 },
	{ "mldsa87", "ML-DSA-87", "2.16.840.1.101.3.4.3.19", 2592 },
};

const struct mldsa_variant *mldsa_by_name(const char *name)
{
	for (size_t i = 0; name && i < ELEMENTSOF(variants); i++)
		if (strcmp(name, variants[i].name) == 0 || strcmp(name, variants[i].ossl) == 0)
			return &variants[i];
	return NULL;
}

/* The dotted OID of @cert's public key algorithm, and its encoded key. */
static int cert_pubkey(X509 *cert, char *oid, size_t oid_size, const uint8_t **ret_pk,
		       int *ret_len)
{
	X509_PUBKEY *xpk = X509_get_X509_PUBKEY(cert);
	ASN1_OBJECT *alg = NULL;

	if (!xpk || !X509_PUBKEY_get0_param(&alg, ret_pk, ret_len, NULL, xpk) ||
	    OBJ_obj2txt(oid, (int)oid_size, alg, 1) <= 0)
		return -EINVAL;
	return 0;
}

const struct mldsa_variant *mldsa_of_cert(X509 *cert)
{
	const uint8_t *pk;
	char oid[64];
	int len;

	if (cert_pubkey(cert, oid, sizeof(oid), &pk, &len) < 0)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(variants); i++)
		if (strcmp(oid, variants[i].oid) == 0)
			return &variants[i];
	return NULL;
}

bool mldsa_available(const struct mldsa_variant *v)
{
	EVP_KEYMGMT *km = EVP_KEYMGMT_fetch(NULL, v->ossl, NULL);

	ERR_clear_error();
	EVP_KEYMGMT_free(km);
	return km != NULL;
}

static int shake(const void *a, size_t alen, const void *b, size_t blen, EVP_MD_CTX **ret)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		return -ENOMEM;
	if (EVP_DigestInit_ex(ctx, EVP_shake256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, a, alen) != 1 || EVP_DigestUpdate(ctx, b, blen) != 1) {
		EVP_MD_CTX_free(ctx);
		return -EIO;
	}
	*ret = ctx;
	return 0;
}

static int shake_end(EVP_MD_CTX *ctx, int r, uint8_t out[64])
{
	if (r == 0 && EVP_DigestFinalXOF(ctx, out, 64) != 1)
		r = -EIO;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return r;
}

int mldsa_cert_tr(X509 *cert, uint8_t tr[MLDSA_TR_LEN])
{
	const struct mldsa_variant *v = mldsa_of_cert(cert);
	const uint8_t *pk;
	EVP_MD_CTX *ctx;
	char oid[64];
	int len, r;

	if (!v || cert_pubkey(cert, oid, sizeof(oid), &pk, &len) < 0 || (size_t)len != v->pk_len)
		return -EINVAL;
	r = shake(pk, (size_t)len, "", 0, &ctx);
	return r < 0 ? r : shake_end(ctx, 0, tr);
}

/* The prefix of M' for pure ML-DSA with an empty context: domain byte 0
 * (pure, not HashML-DSA), then the context's length, 0. */
static const uint8_t pure_empty_ctx[2] = { 0x00, 0x00 };

int mldsa_mu_fd(const uint8_t tr[MLDSA_TR_LEN], int fd, size_t len, uint8_t mu[MLDSA_MU_LEN])
{
	EVP_MD_CTX *ctx;
	int r = shake(tr, MLDSA_TR_LEN, pure_empty_ctx, sizeof(pure_empty_ctx), &ctx);

	if (r < 0)
		return r;
	return shake_end(ctx, digest_update_fd(ctx, fd, len), mu);
}

int mldsa_mu_buf(const uint8_t tr[MLDSA_TR_LEN], const void *buf, size_t len,
		 uint8_t mu[MLDSA_MU_LEN])
{
	EVP_MD_CTX *ctx;
	int r = shake(tr, MLDSA_TR_LEN, pure_empty_ctx, sizeof(pure_empty_ctx), &ctx);

	if (r < 0)
		return r;
	if (EVP_DigestUpdate(ctx, buf, len) != 1)
		r = -EIO;
	return shake_end(ctx, r, mu);
}
