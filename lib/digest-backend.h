/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_DIGEST_BACKEND_H
#define MODSIGN_DIGEST_BACKEND_H

/*
 * What digest.c needs from a hashing implementation.  libmodsign's is
 * OpenSSL's EVP (digest-evp.c): it goes through the providers, so a FIPS
 * configuration applies.  A program may link another ahead of the
 * library (a lean client once linked OpenSSL's low-level SHA-2 here:
 * docs/PERFORMANCE.md, "One client or two"); exactly one is linked.
 */

#include <stddef.h>
#include <stdint.h>

#include "digest.h"

enum digest_id { DIGEST_SHA256, DIGEST_SHA384, DIGEST_SHA512 };

struct digest {
	const char *name;
	size_t size;
	enum digest_id id;
};

struct digest_state;

/* Start hashing with @d: 0, -ENOMEM or -EIO. */
int digest_begin(const struct digest *d, struct digest_state **ret);
/* Add @n bytes: 0 or -EIO. */
int digest_add(struct digest_state *s, const void *p, size_t n);
/* Write the digest (digest_size() bytes) and free @s; 0 or -EIO.
 * With @out NULL, only free. */
int digest_end(struct digest_state *s, uint8_t *out);

#endif
