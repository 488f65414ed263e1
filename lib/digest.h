/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_DIGEST_H
#define MODSIGN_DIGEST_H

#include <openssl/evp.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The hash algorithms modsign signs with.  The kernel also accepts sha1 and
 * sha224, but sha1 is broken for signatures and neither is offered by
 * CONFIG_MODULE_SIG_SHA*; md5 was never accepted.
 */
#define DIGEST_MAX_LEN EVP_MAX_MD_SIZE
#define DIGEST_DEFAULT "sha256"

/* The EVP_MD for an allowed name, or NULL (unknown or refused). */
const EVP_MD *digest_lookup(const char *name);

/* The canonical name ("sha256") of an allowed EVP_MD, or NULL. */
const char *digest_name(const EVP_MD *md);

/* Hash the first @len bytes of @fd (from offset 0).  Returns 0 or -errno. */
int digest_fd(int fd, size_t len, const EVP_MD *md, uint8_t *out,
	      size_t *ret_len);

/* Hash a buffer. */
int digest_buf(const void *buf, size_t len, const EVP_MD *md, uint8_t *out,
	       size_t *ret_len);

#endif
