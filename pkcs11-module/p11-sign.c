/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/objects.h>
#include <openssl/pkcs7.h>

#include "macro.h"
#include "p11-sign.h"

static const struct p11_mech mechs[] = {
	{ CKM_RSA_PKCS, CKK_RSA, NULL },
	{ CKM_SHA256_RSA_PKCS, CKK_RSA, "sha256" },
	{ CKM_SHA384_RSA_PKCS, CKK_RSA, "sha384" },
	{ CKM_SHA512_RSA_PKCS, CKK_RSA, "sha512" },
	{ CKM_ECDSA, CKK_EC, NULL },
	{ CKM_ECDSA_SHA256, CKK_EC, "sha256" },
	{ CKM_ECDSA_SHA384, CKK_EC, "sha384" },
	{ CKM_ECDSA_SHA512, CKK_EC, "sha512" },
};

const struct p11_mech *p11_mech_find(CK_MECHANISM_TYPE type)
{
	for (size_t i = 0; i < ELEMENTSOF(mechs); i++)
		if (mechs[i].type == type)
			return &mechs[i];
	return NULL;
}

const struct p11_mech *p11_mech_all(size_t *ret_n)
{
	*ret_n = ELEMENTSOF(mechs);
	return mechs;
}

/* The DER DigestInfo up to the digest itself (RFC 8017 9.2, note 1),
 * with the NULL parameters OpenSSL and the kernel write. */
static const struct {
	const char *hash;
	uint8_t prefix[19];
} digestinfos[] = {
	{ "sha256", { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
		      0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20 } },
	{ "sha384", { 0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
		      0x04, 0x02, 0x02, 0x05, 0x00, 0x04, 0x30 } },
	{ "sha512", { 0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
		      0x04, 0x02, 0x03, 0x05, 0x00, 0x04, 0x40 } },
	{ "sha3-256", { 0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
			0x04, 0x02, 0x08, 0x05, 0x00, 0x04, 0x20 } },
	{ "sha3-384", { 0x30, 0x41, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
			0x04, 0x02, 0x09, 0x05, 0x00, 0x04, 0x30 } },
	{ "sha3-512", { 0x30, 0x51, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01, 0x65, 0x03,
			0x04, 0x02, 0x0a, 0x05, 0x00, 0x04, 0x40 } },
};

int p11_digestinfo_parse(const uint8_t *data, size_t len, const struct digest **ret_md,
			 const uint8_t **ret_digest, size_t *ret_digest_len)
{
	for (size_t i = 0; i < ELEMENTSOF(digestinfos); i++) {
		const struct digest *md = digest_lookup(digestinfos[i].hash);
		size_t plen = sizeof(digestinfos[i].prefix);

		if (!md || len != plen + digest_size(md) ||
		    memcmp(data, digestinfos[i].prefix, plen) != 0)
			continue;
		*ret_md = md;
		*ret_digest = data + plen;
		*ret_digest_len = digest_size(md);
		return 0;
	}
	return -EBADMSG;
}

int p11_digest_by_len(size_t len, const struct digest **ret_md)
{
	static const char *const sha2[] = { "sha256", "sha384", "sha512" };

	for (size_t i = 0; i < ELEMENTSOF(sha2); i++) {
		const struct digest *md = digest_lookup(sha2[i]);

		if (md && digest_size(md) == len) {
			*ret_md = md;
			return 0;
		}
	}
	return -EBADMSG;
}

/* DER ECDSA-Sig-Value to r||s, each left-padded to @half bytes. */
static int ecdsa_raw(const uint8_t *der, size_t len, size_t half, uint8_t **ret,
		     size_t *ret_len)
{
	const unsigned char *p = der;
	ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &p, (long)len);
	const BIGNUM *r, *s;
	uint8_t *out;
	int ok;

	if (!sig || p != der + len) {
		ECDSA_SIG_free(sig);
		return -EBADMSG;
	}
	ECDSA_SIG_get0(sig, &r, &s);
	out = malloc(2 * half);
	ok = out && BN_bn2binpad(r, out, (int)half) == (int)half &&
	     BN_bn2binpad(s, out + half, (int)half) == (int)half;
	ECDSA_SIG_free(sig);
	if (!ok) {
		free(out);
		return out ? -EBADMSG : -ENOMEM;
	}
	*ret = out;
	*ret_len = 2 * half;
	return 0;
}

int p11_sig_from_pkcs7(const uint8_t *der, size_t der_len, CK_KEY_TYPE key_type,
		       size_t ec_half, uint8_t **ret, size_t *ret_len)
{
	const unsigned char *p = der;
	PKCS7 *p7 = d2i_PKCS7(NULL, &p, (long)der_len);
	STACK_OF(PKCS7_SIGNER_INFO) *sis = p7 && PKCS7_type_is_signed(p7) ?
						   PKCS7_get_signer_info(p7) : NULL;
	PKCS7_SIGNER_INFO *si = sis && sk_PKCS7_SIGNER_INFO_num(sis) == 1 ?
					sk_PKCS7_SIGNER_INFO_value(sis, 0) : NULL;
	const ASN1_OCTET_STRING *sig = si ? si->enc_digest : NULL;
	int r = -EBADMSG;

	if (sig && sig->length > 0 && key_type == CKK_EC) {
		r = ecdsa_raw(sig->data, (size_t)sig->length, ec_half, ret, ret_len);
	} else if (sig && sig->length > 0) {
		*ret = malloc((size_t)sig->length);
		r = *ret ? 0 : -ENOMEM;
		if (*ret) {
			memcpy(*ret, sig->data, (size_t)sig->length);
			*ret_len = (size_t)sig->length;
		}
	}
	PKCS7_free(p7);
	return r;
}
