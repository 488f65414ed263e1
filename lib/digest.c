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

/* Read through one small buffer rather than mmap: a module rewritten under
 * us must not turn into SIGBUS.  The buffer is small on purpose: a client
 * started once per module pays a page fault for every page of buffer it
 * touches (about 13 us each on the build farm's VMs, against 1 us for a
 * read), so a file-sized buffer cost more than hashing the module did.  16
 * KiB keeps the reads few and the hashing in L1. */
int digest_fd(int fd, size_t len, const struct digest *d, uint8_t *out,
	      size_t *ret_len)
{
	enum { CHUNK = 16 * 1024 };
	uint8_t buf[CHUNK];
	struct digest_state *s;
	size_t done = 0;
	int r;

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
