/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "digest.h"
#include "macro.h"
#include "util.h"

static const struct {
	const char *name;
	const EVP_MD *(*md)(void);
} digests[] = {
	{ "sha256", EVP_sha256 },
	{ "sha384", EVP_sha384 },
	{ "sha512", EVP_sha512 },
};

const EVP_MD *digest_lookup(const char *name)
{
	for (size_t i = 0; name && i < ELEMENTSOF(digests); i++)
		if (strcmp(name, digests[i].name) == 0)
			return digests[i].md();
	return NULL;
}

const char *digest_name(const EVP_MD *md)
{
	for (size_t i = 0; md && i < ELEMENTSOF(digests); i++)
		if (EVP_MD_get_type(md) == EVP_MD_get_type(digests[i].md()))
			return digests[i].name;
	return NULL;
}

int digest_buf(const void *buf, size_t len, const EVP_MD *md, uint8_t *out,
	       size_t *ret_len)
{
	unsigned int n = 0;

	if (!EVP_Digest(buf, len, out, &n, md, NULL))
		return -EIO;
	*ret_len = n;
	return 0;
}

/* Read in large chunks rather than mmap: a module rewritten under us must
 * not turn into SIGBUS. */
int digest_fd(int fd, size_t len, const EVP_MD *md, uint8_t *out,
	      size_t *ret_len)
{
	enum { CHUNK = 256 * 1024 };
	_cleanup_(freep) uint8_t *buf = NULL;
	EVP_MD_CTX *ctx;
	unsigned int n = 0;
	size_t done = 0;
	int r = 0;

	buf = malloc(CHUNK);
	ctx = EVP_MD_CTX_new();
	if (!buf || !ctx) {
		EVP_MD_CTX_free(ctx);
		return -ENOMEM;
	}
	if (!EVP_DigestInit_ex(ctx, md, NULL)) {
		r = -EIO;
		goto out;
	}
	while (done < len) {
		size_t want = len - done < CHUNK ? len - done : CHUNK;
		ssize_t got = pread(fd, buf, want, (off_t)done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			r = -errno;
			goto out;
		}
		if (got == 0) { /* file shrank under us */
			r = -ESTALE;
			goto out;
		}
		if (!EVP_DigestUpdate(ctx, buf, (size_t)got)) {
			r = -EIO;
			goto out;
		}
		done += (size_t)got;
	}
	if (!EVP_DigestFinal_ex(ctx, out, &n))
		r = -EIO;
	*ret_len = n;
out:
	EVP_MD_CTX_free(ctx);
	return r;
}
