/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SHA-2 through OpenSSL's low-level functions.  They are deprecated in
 * OpenSSL 3 in favour of EVP, but EVP_MD_fetch() initialises the provider
 * machinery, about a third of what a `modsign-client sign` costs per
 * module under kbuild; the low-level functions run the same assembly
 * (SHA-NI, AVX2) and link statically without it.
 */
#define OPENSSL_SUPPRESS_DEPRECATED 1

#include <errno.h>
#include <openssl/sha.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "macro.h"
#include "util.h"

union digest_ctx {
	SHA256_CTX c256;
	SHA512_CTX c512; /* also SHA-384 */
};

struct digest {
	const char *name;
	size_t size;
	int (*init)(union digest_ctx *c);
	int (*update)(union digest_ctx *c, const void *p, size_t n);
	int (*final)(uint8_t *out, union digest_ctx *c);
};

static int sha256_init(union digest_ctx *c) { return SHA256_Init(&c->c256); }
static int sha256_update(union digest_ctx *c, const void *p, size_t n) { return SHA256_Update(&c->c256, p, n); }
static int sha256_final(uint8_t *out, union digest_ctx *c) { return SHA256_Final(out, &c->c256); }
static int sha384_init(union digest_ctx *c) { return SHA384_Init(&c->c512); }
static int sha384_update(union digest_ctx *c, const void *p, size_t n) { return SHA384_Update(&c->c512, p, n); }
static int sha384_final(uint8_t *out, union digest_ctx *c) { return SHA384_Final(out, &c->c512); }
static int sha512_init(union digest_ctx *c) { return SHA512_Init(&c->c512); }
static int sha512_update(union digest_ctx *c, const void *p, size_t n) { return SHA512_Update(&c->c512, p, n); }
static int sha512_final(uint8_t *out, union digest_ctx *c) { return SHA512_Final(out, &c->c512); }

static const struct digest digests[] = {
	{ "sha256", 32, sha256_init, sha256_update, sha256_final },
	{ "sha384", 48, sha384_init, sha384_update, sha384_final },
	{ "sha512", 64, sha512_init, sha512_update, sha512_final },
};

const struct digest *digest_lookup(const char *name)
{
	for (size_t i = 0; name && i < ELEMENTSOF(digests); i++)
		if (strcmp(name, digests[i].name) == 0)
			return &digests[i];
	return NULL;
}

const char *digest_name(const struct digest *d)
{
	return d ? d->name : NULL;
}

size_t digest_size(const struct digest *d)
{
	return d->size;
}

int digest_buf(const void *buf, size_t len, const struct digest *d,
	       uint8_t *out, size_t *ret_len)
{
	union digest_ctx c;

	if (!d->init(&c) || !d->update(&c, buf, len) || !d->final(out, &c))
		return -EIO;
	*ret_len = d->size;
	return 0;
}

/* Read in large chunks rather than mmap: a module rewritten under us must
 * not turn into SIGBUS. */
int digest_fd(int fd, size_t len, const struct digest *d, uint8_t *out,
	      size_t *ret_len)
{
	enum { CHUNK = 256 * 1024 };
	/* No bigger than the file: most modules are far smaller than a chunk,
	 * and a buffer that malloc() must mmap costs more than hashing them. */
	_cleanup_(freep) uint8_t *buf = malloc(len < CHUNK ? len + !len : CHUNK);
	union digest_ctx c;
	size_t done = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	if (!d->init(&c))
		return -EIO;
	while (done < len) {
		size_t want = len - done < CHUNK ? len - done : CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			break;
		}
		if (got == 0) { /* file shrank under us */
			r = -ESTALE;
			break;
		}
		if (!d->update(&c, buf, (size_t)got)) {
			r = -EIO;
			break;
		}
		done += (size_t)got;
	}
	if (r == 0 && !d->final(out, &c))
		r = -EIO;
	if (r == 0)
		*ret_len = d->size;
	return r;
}
