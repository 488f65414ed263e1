/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_MLDSA_H
#define MODSIGN_MLDSA_H

/*
 * ML-DSA (FIPS 204) as modsign uses it: which variants there are, whether
 * this process's OpenSSL can make and use such keys (3.5 and later; 3.0
 * cannot, and is asked at run time so that one source builds on both),
 * and the "external mu" of pure ML-DSA with an empty context:
 *
 *   tr = SHAKE256(pk, 64)               pk: the encoded public key
 *   mu = SHAKE256(tr || 0x00 || 0x00 || M, 64)
 *
 * A signer given mu signs M exactly as if it had been given M (FIPS 204
 * Algorithm 7 computes mu first and uses M no further), so a client
 * computes mu from the certificate and the module and sends 64 bytes.
 * Only SHAKE256 is needed for that, which OpenSSL 3.0 has: a Debian 12
 * builder can ask a Debian 13 daemon for an ML-DSA signature.
 */

#include <openssl/x509.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MLDSA_TR_LEN 64
#define MLDSA_MU_LEN 64

struct mldsa_variant {
	const char *name;     /* modsign's: "mldsa44" */
	const char *ossl;     /* OpenSSL's key type: "ML-DSA-44" */
	const char *oid;      /* id-ml-dsa-44, the key's and the signature's */
	size_t pk_len;        /* bytes of the encoded public key */
};

/* The variant named @name ("mldsa65"), of OpenSSL key type @name
 * ("ML-DSA-65"), or NULL. */
const struct mldsa_variant *mldsa_by_name(const char *name);

/* The variant of @cert's public key, read from its algorithm OID (works
 * where OpenSSL knows no ML-DSA), or NULL when it is no ML-DSA key. */
const struct mldsa_variant *mldsa_of_cert(X509 *cert);

/* Whether this process's OpenSSL has @v's key management (3.5+). */
bool mldsa_available(const struct mldsa_variant *v);

/* What to tell a user whose OpenSSL has none, one line. */
#define MLDSA_NEEDS "ML-DSA keys need OpenSSL >= 3.5"

/* tr of @cert's ML-DSA public key.  Returns 0, -EINVAL (not ML-DSA, or a
 * public key of the wrong length) or -EIO. */
int mldsa_cert_tr(X509 *cert, uint8_t tr[MLDSA_TR_LEN]);

/* mu over the first @len bytes of @fd for the key whose tr is @tr.
 * Returns 0, -ESTALE (file shorter than @len) or -errno. */
int mldsa_mu_fd(const uint8_t tr[MLDSA_TR_LEN], int fd, size_t len,
		uint8_t mu[MLDSA_MU_LEN]);

/* The same over a buffer. */
int mldsa_mu_buf(const uint8_t tr[MLDSA_TR_LEN], const void *buf, size_t len,
		 uint8_t mu[MLDSA_MU_LEN]);

#endif
