/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_P11_SIGN_H
#define MODSIGN_P11_SIGN_H

/*
 * What the PKCS#11 module's C_Sign* does with a mechanism, as a table
 * (p11-sign.c): which key type it takes, whether the module hashes the
 * data itself (the hash-and-sign mechanisms) or is handed a digest (RSA
 * over a DigestInfo, ECDSA over a raw digest), and how the daemon's
 * answer, a PKCS#7 SignedData (docs/PROTOCOL.md "sign"), becomes the raw
 * signature PKCS#11 returns.  Only digests leave the module.  Never logs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <p11-kit/pkcs11.h>

#include "digest.h"

struct p11_mech {
	CK_MECHANISM_TYPE type;
	CK_KEY_TYPE key_type;  /* CKK_RSA or CKK_EC */
	const char *hash;      /* the module hashes with it; NULL: handed a digest */
};

/* The row of @type, or NULL (CKR_MECHANISM_INVALID). */
const struct p11_mech *p11_mech_find(CK_MECHANISM_TYPE type);

/* Every row, for C_GetMechanismList: *@ret_n of them. */
const struct p11_mech *p11_mech_all(size_t *ret_n);

/* Largest input CKM_RSA_PKCS or CKM_ECDSA takes: a DigestInfo of the
 * longest hash.  Larger is CKR_DATA_LEN_RANGE, before any request. */
#define P11_MAX_PREHASHED 128u

/*
 * The hash and digest that CKM_RSA_PKCS's input names: a DER DigestInfo
 * of one of the hashes modsign signs with, exactly (no other encoding, no
 * trailing bytes: -EBADMSG).  *@ret_digest points into @data.
 */
int p11_digestinfo_parse(const uint8_t *data, size_t len, const struct digest **ret_md,
			 const uint8_t **ret_digest, size_t *ret_digest_len);

/* The hash of a raw digest handed to CKM_ECDSA, by its length: -EBADMSG
 * if no allowed SHA-2 has it. */
int p11_digest_by_len(size_t len, const struct digest **ret_md);

/*
 * The raw signature inside the daemon's PKCS#7 @der: for RSA the
 * PKCS#1 v1.5 signature as it is, for ECDSA r||s, each of @ec_half
 * bytes (the curve's order size), as PKCS#11 returns ECDSA signatures.
 * *@ret new (free()).  -EBADMSG: not one signer's SignedData, or an ECDSA
 * value that does not fit.
 */
int p11_sig_from_pkcs7(const uint8_t *der, size_t der_len, CK_KEY_TYPE key_type,
		       size_t ec_half, uint8_t **ret, size_t *ret_len);

#endif
