/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest.h"
#include "macro.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free);

/* One row per algorithm, in the order of DIGEST_NAMES (test-digest checks
 * they agree).  The hashing is OpenSSL's EVP: it goes through the
 * providers, so a FIPS configuration applies.  The names are OpenSSL's
 * long names, which are also the kernel's crypto API names: pkcs7.c looks
 * a signature's digest OID up by them. */
struct digest {
	const char *name;
	size_t size;
	const EVP_MD *(*evp)(void);
};

static const struct digest digests[] = {
	{ "sha256", 32, EVP_sha256 },
	{ "sha384", 48, EVP_sha384 },
	{ "sha512", 64, EVP_sha512 },
	{ "sha3-256", 32, EVP_sha3_256 },
	{ "sha3-384", 48, EVP_sha3_384 },
	{ "sha3-512", 64, EVP_sha3_512 },
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

const EVP_MD *digest_evp(const struct digest *d)
{
	return d ? d->evp() : NULL;
}

/* Start hashing with @d: 0, -ENOMEM or -EIO. */
static int begin(const struct digest *d, EVP_MD_CTX **ret)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		return -ENOMEM;
	if (!EVP_DigestInit_ex(ctx, digest_evp(d), NULL))
		return -EIO;
	*ret = TAKE_PTR(ctx);
	return 0;
}

/* Add @n bytes: 0 or -EIO. */
static int add(EVP_MD_CTX *ctx, const void *p, size_t n)
{
	return EVP_DigestUpdate(ctx, p, n) ? 0 : -EIO;
}

/* End and free @ctx: with the digest in @out if all went well (@r is 0),
 * else dropped and @r returned. */
static int finish(EVP_MD_CTX *ctx, int r, const struct digest *d,
		  uint8_t *out, size_t *ret_len)
{
	if (r == 0 && !EVP_DigestFinal_ex(ctx, out, NULL))
		r = -EIO;
	EVP_MD_CTX_free(ctx);
	if (r == 0)
		*ret_len = d->size;
	return r;
}

int digest_buf(const void *buf, size_t len, const struct digest *d,
	       uint8_t *out, size_t *ret_len)
{
	EVP_MD_CTX *ctx;
	int r = begin(d, &ctx);

	if (r < 0)
		return r;
	return finish(ctx, add(ctx, buf, len), d, out, ret_len);
}

/* Read through one small buffer rather than mmap: a module rewritten under
 * us must not turn into SIGBUS.  The buffer is small on purpose: a client
 * started once per module pays a page fault for every page of buffer it
 * touches (about 13 us each on the build farm's VMs, against 1 us for a
 * read), so a file-sized buffer cost more than hashing the module did.  16
 * KiB keeps the reads few and the hashing in L1. */
int digest_update_fd(EVP_MD_CTX *ctx, int fd, size_t len)
{
	enum { CHUNK = 16 * 1024 };
	uint8_t buf[CHUNK];
	size_t done = 0;
	int r = 0;

	while (r == 0 && done < len) {
		size_t want = len - done < CHUNK ? len - done : CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			r = -errno;
		else if (got == 0) /* file shrank under us */
			r = -ESTALE;
		else {
			r = add(ctx, buf, (size_t)got);
			done += (size_t)got;
		}
	}
	return r;
}

int digest_fd(int fd, size_t len, const struct digest *d, uint8_t *out,
	      size_t *ret_len)
{
	EVP_MD_CTX *ctx;
	int r;

	r = begin(d, &ctx);
	if (r < 0)
		return r;
	return finish(ctx, digest_update_fd(ctx, fd, len), d, out, ret_len);
}
