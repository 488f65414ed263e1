/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The lean client's hashing (see lib/digest-backend.h): OpenSSL's
 * low-level SHA-2 functions.  They are deprecated in OpenSSL 3 in favour of
 * EVP, and they bypass the providers, FIPS included (sites that need FIPS
 * sign with modsign-client-full, which hashes through EVP).  But
 * EVP_MD_fetch() initialises the provider machinery, a third of what a
 * per-module signing command costs, and EVP cannot be linked statically
 * without all of it; these run the same assembly (SHA-NI, AVX2).
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <errno.h>
#include <openssl/sha.h>
#include <stdlib.h>

#include "digest-backend.h"

struct digest_state {
	enum digest_id id;
	union {
		SHA256_CTX c256;
		SHA512_CTX c512; /* also SHA-384 */
	};
};

int digest_begin(const struct digest *d, struct digest_state **ret)
{
	struct digest_state *s = malloc(sizeof(*s));
	int ok;

	if (!s)
		return -ENOMEM;
	s->id = d->id;
	switch (d->id) {
	case DIGEST_SHA256:
		ok = SHA256_Init(&s->c256);
		break;
	case DIGEST_SHA384:
		ok = SHA384_Init(&s->c512);
		break;
	default:
		ok = SHA512_Init(&s->c512);
		break;
	}
	if (!ok) {
		free(s);
		return -EIO;
	}
	*ret = s;
	return 0;
}

int digest_add(struct digest_state *s, const void *p, size_t n)
{
	switch (s->id) {
	case DIGEST_SHA256:
		return SHA256_Update(&s->c256, p, n) ? 0 : -EIO;
	case DIGEST_SHA384:
		return SHA384_Update(&s->c512, p, n) ? 0 : -EIO;
	default:
		return SHA512_Update(&s->c512, p, n) ? 0 : -EIO;
	}
}

int digest_end(struct digest_state *s, uint8_t *out)
{
	int ok = 1;

	if (out) {
		switch (s->id) {
		case DIGEST_SHA256:
			ok = SHA256_Final(out, &s->c256);
			break;
		case DIGEST_SHA384:
			ok = SHA384_Final(out, &s->c512);
			break;
		default:
			ok = SHA512_Final(out, &s->c512);
			break;
		}
	}
	free(s);
	return ok ? 0 : -EIO;
}
