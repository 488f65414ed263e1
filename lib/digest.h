/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_DIGEST_H
#define MODSIGN_DIGEST_H

#include <stddef.h>
#include <stdint.h>

/*
 * The hash algorithms modsign signs with: those CONFIG_MODULE_SIG_SHA*
 * offers.  SHA-2 for every kernel; SHA-3 (CONFIG_MODULE_SIG_SHA3_*) for
 * 6.7 and later, whose PKCS#7 parser knows the SHA-3 digest and
 * ecdsa-with-SHA3 OIDs and whose pkcs1pad knows SHA-3's DigestInfo; an
 * older kernel refuses such a module at load.  The kernel also accepts
 * sha1 and sha224, but sha1 is broken for signatures and neither is
 * offered by CONFIG_MODULE_SIG_SHA*; md5 was never accepted.
 *
 * The hashing is OpenSSL's EVP, through its providers (digest.c).
 */
#define DIGEST_MAX_LEN 64 /* SHA-512, SHA3-512 */
#define DIGEST_DEFAULT "sha256"
/* Every allowed name, for messages: the rows of digest.c's table. */
#define DIGEST_NAMES "sha256, sha384, sha512, sha3-256, sha3-384, sha3-512"

struct digest; /* one of the allowed algorithms; never freed */

/* The algorithm of an allowed name, or NULL (unknown or refused). */
const struct digest *digest_lookup(const char *name);

/* Its canonical name ("sha256") and output length in bytes. */
const char *digest_name(const struct digest *d);
size_t digest_size(const struct digest *d);

/* Hash the first @len bytes of @fd (from offset 0).  Returns 0 or -errno;
 * -ESTALE if the file is shorter than @len. */
int digest_fd(int fd, size_t len, const struct digest *d, uint8_t *out,
	      size_t *ret_len);

/* Feed the first @len bytes of @fd (from offset 0) to @ctx, a digest
 * begun by the caller (an XOF too: ML-DSA's mu, lib/mldsa.c).  Returns 0
 * or -errno; -ESTALE if the file is shorter than @len. */
struct evp_md_ctx_st;
int digest_update_fd(struct evp_md_ctx_st *ctx, int fd, size_t len);

/* Hash a buffer. */
int digest_buf(const void *buf, size_t len, const struct digest *d,
	       uint8_t *out, size_t *ret_len);

/* OpenSSL's EVP_MD of @d, for signing and verifying; NULL for NULL. */
struct evp_md_st;
const struct evp_md_st *digest_evp(const struct digest *d);

#endif
