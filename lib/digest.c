/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "digest-backend.h"
#include "macro.h"
#include "util.h"

static const struct digest digests[] = {
	{ "sha256", 32, DIGEST_SHA256 },
	{ "sha384", 48, DIGEST_SHA384 },
	{ "sha512", 64, DIGEST_SHA512 },
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

/* End @s: with the digest in @out if all went well (@r is 0), else
 * dropped and @r returned. */
static int finish(struct digest_state *s, int r, const struct digest *d,
		  uint8_t *out, size_t *ret_len)
{
	if (r < 0) {
		digest_end(s, NULL);
		return r;
	}
	r = digest_end(s, out);
	if (r == 0)
		*ret_len = d->size;
	return r;
}

int digest_buf(const void *buf, size_t len, const struct digest *d,
	       uint8_t *out, size_t *ret_len)
{
	struct digest_state *s;
	int r = digest_begin(d, &s);

	if (r < 0)
		return r;
	return finish(s, digest_add(s, buf, len), d, out, ret_len);
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
	struct digest_state *s;
	size_t done = 0;
	int r;

	if (!buf)
		return -ENOMEM;
	r = digest_begin(d, &s);
	if (r < 0)
		return r;
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
			r = digest_add(s, buf, (size_t)got);
			done += (size_t)got;
		}
	}
	return finish(s, r, d, out, ret_len);
}
