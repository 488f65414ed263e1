/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
/* modsignd/translog.c: what translog_read() serves while a commit is in
 * flight (docs/SECURITY.md, row 49).  Between translog_commit_begin() and
 * translog_commit_end() the commit's tiles are on disk, but no published
 * checkpoint covers them and a failed sync cuts them back: the "log"
 * request must not serve them yet.  Each tile refused in flight has a
 * twin: the same tile served once the commit is published, and the
 * tiles of the published checkpoint served throughout. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "translog.h"
#include "unit.h"

#define ORIGIN "example.org/test-translog"

static struct translog *log_open(const char *dir)
{
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	struct translog *t = NULL;
	char why[256];

	if (!key || translog_open(dir, key, true, ORIGIN, &t, why, sizeof(why)) < 0) {
		printf("# cannot open the log in %s: %s\n", dir, why);
		return NULL;
	}
	return t;
}

/* Append @n entries (not committed). */
static int append(struct translog *t, unsigned n)
{
	static const uint8_t digest[32], sig[16];
	struct tlog_entry e = {
		.time = 1700000000, .key = "default", .key_id = "00", .cert_sha256 = "00",
		.hash = "sha256", .digest = digest, .digest_len = sizeof(digest),
		.module = "test.ko", .client = "uid=0", .sig = sig, .sig_len = sizeof(sig),
	};
	uint64_t index;

	for (unsigned i = 0; i < n; i++) {
		int r = translog_append(t, &e, &index);
		if (r < 0)
			return r;
	}
	return 0;
}

/* translog_read() of @path: 0 and its size in *@ret_size, or -errno. */
static int rd(struct translog *t, const char *path, uint64_t *ret_size)
{
	static uint8_t buf[64 * 1024];
	uint64_t size = 0;
	size_t len;
	int r = translog_read(t, path, 0, buf, sizeof(buf), &len, &size);

	if (ret_size)
		*ret_size = size;
	return r;
}

/* The published checkpoint's size line. */
static unsigned long checkpoint_size(struct translog *t)
{
	const char *nl = strchr(translog_checkpoint(t), '\n');

	return nl ? strtoul(nl + 1, NULL, 10) : 0;
}

/* 3 leaves published, 2 more in flight: the partial tiles of 5 are on
 * disk and refused until the commit ends; those of 3 stay served. */
static void test_partial_in_flight(struct translog *t)
{
	struct translog_commit *c = NULL;
	uint64_t size;

	CHECK("translog 3 leaves committed", append(t, 3) == 0 && translog_commit(t) == 0);
	CHECK_EQ("translog partial of the checkpoint served", rd(t, "tile/0/000.p/3", &size), 0);
	CHECK_EQ("translog partial of the checkpoint: 3 hashes", size, 3 * 32);
	CHECK_EQ("translog bundle of the checkpoint served", rd(t, "tile/entries/000.p/3", NULL), 0);

	CHECK_EQ("translog commit of 2 more begun", append(t, 2) == 0 ? translog_commit_begin(t, &c) : -1, 1);
	CHECK_EQ("translog in flight: partial 5 refused", rd(t, "tile/0/000.p/5", NULL), -ENOENT);
	CHECK_EQ("translog in flight: bundle 5 refused", rd(t, "tile/entries/000.p/5", NULL), -ENOENT);
	CHECK_EQ("translog in flight: partial 3 still served", rd(t, "tile/0/000.p/3", NULL), 0);
	CHECK_EQ("translog in flight: checkpoint still 3", checkpoint_size(t), 3);
	CHECK_EQ("translog checkpoint is not a tile path", rd(t, "checkpoint", NULL), -EINVAL);

	CHECK_EQ("translog commit of 5 published",
		 c ? translog_commit_end(t, c, translog_commit_sync(c)) : -1, 0);
	CHECK_EQ("translog published: partial 5 served", rd(t, "tile/0/000.p/5", &size), 0);
	CHECK_EQ("translog published: partial 5 is 5 hashes", size, 5 * 32);
	CHECK_EQ("translog published: bundle 5 served", rd(t, "tile/entries/000.p/5", NULL), 0);
}

/* Past a full tile in flight (5 -> 260): tile 0 full, its bundle and
 * level 1's first hash are refused until the commit ends. */
static void test_full_in_flight(struct translog *t)
{
	struct translog_commit *c = NULL;

	CHECK_EQ("translog commit to 260 begun", append(t, 255) == 0 ? translog_commit_begin(t, &c) : -1, 1);
	CHECK_EQ("translog in flight: full tile 0 refused", rd(t, "tile/0/000", NULL), -ENOENT);
	CHECK_EQ("translog in flight: full bundle 0 refused", rd(t, "tile/entries/000", NULL), -ENOENT);
	CHECK_EQ("translog in flight: partial 1/0 refused", rd(t, "tile/1/000.p/1", NULL), -ENOENT);
	CHECK_EQ("translog in flight: partial 0/1 of 4 refused", rd(t, "tile/0/001.p/4", NULL), -ENOENT);
	CHECK_EQ("translog in flight: partial 5 still served", rd(t, "tile/0/000.p/5", NULL), 0);

	CHECK_EQ("translog commit of 260 published",
		 c ? translog_commit_end(t, c, translog_commit_sync(c)) : -1, 0);
	CHECK_EQ("translog published: full tile 0 served", rd(t, "tile/0/000", NULL), 0);
	CHECK_EQ("translog published: full bundle 0 served", rd(t, "tile/entries/000", NULL), 0);
	CHECK_EQ("translog published: partial 1/0 served", rd(t, "tile/1/000.p/1", NULL), 0);
	CHECK_EQ("translog published: partial 0/1 of 4 served", rd(t, "tile/0/001.p/4", NULL), 0);
	CHECK_EQ("translog published: partial 0/1 of 5 never written", rd(t, "tile/0/001.p/5", NULL), -ENOENT);
}

/* A commit whose sync fails: its tiles are cut, and were never served. */
static void test_failed_in_flight(struct translog *t)
{
	struct translog_commit *c = NULL;

	CHECK_EQ("translog commit to 262 begun", append(t, 2) == 0 ? translog_commit_begin(t, &c) : -1, 1);
	CHECK_EQ("translog in flight: partial 0/1 of 6 refused", rd(t, "tile/0/001.p/6", NULL), -ENOENT);
	CHECK_EQ("translog failed sync undone", c ? translog_commit_end(t, c, -EIO) : 0, -EIO);
	CHECK_EQ("translog failed: checkpoint still 260", checkpoint_size(t), 260);
	CHECK_EQ("translog failed: partial 0/1 of 6 cut", rd(t, "tile/0/001.p/6", NULL), -ENOENT);
	CHECK_EQ("translog failed: partial 0/1 of 4 served", rd(t, "tile/0/001.p/4", NULL), 0);
}

int main(void)
{
	char dir[] = "/tmp/test-translog.XXXXXX", cmd[64];
	struct translog *t;
	int rc;

	if (!mkdtemp(dir))
		return printf("FAIL test-translog: mkdtemp\n"), 1;
	t = log_open(dir);
	if (CHECK("translog opened", t)) {
		test_partial_in_flight(t);
		test_full_in_flight(t);
		test_failed_in_flight(t);
	}
	translog_free(t);
	rc = unit_summary("translog");
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		printf("# cannot remove %s\n", dir);
	return rc;
}
