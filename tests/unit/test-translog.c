/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
/* modsignd/translog.c: what translog_read() serves while a commit is in
 * flight (docs/SECURITY.md, row 49).  Between translog_commit_begin() and
 * translog_commit_end() the commit's tiles are on disk, but no published
 * checkpoint covers them and a failed sync cuts them back: the "log"
 * request must not serve them yet.  Each tile refused in flight has a
 * twin: the same tile served once the commit is published, and the
 * tiles of the published checkpoint served throughout.
 *
 * And what it loads from a directory someone else wrote (rows 51-54,
 * issue 27): entries past TLOG_MAX_ENTRY or out of place, a history a
 * one-time key did not sign, a directory that is not the daemon's own,
 * an older checkpoint put back while it runs, FIFOs at its files; each
 * with a legitimate twin that still opens, appends and commits. */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "note.h"
#include "tlog.h"
#include "translog.h"
#include "unit.h"
#include "util.h"

#define ORIGIN "example.org/test-translog"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct translog *, translog_free);

/* The fixture: a scratch directory (each case works in its own
 * subdirectory of it) and a log key, made once. */
static char scratch[] = "/tmp/test-translog.XXXXXX";
static EVP_PKEY *log_key;

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

static const char *sub(const char *base, const char *name);

/* A log of its own in @name, @n leaves committed: where the in-flight
 * case starts (what the cases before it left, were they one). */
static struct translog *log_at(const char *name, unsigned n)
{
	struct translog *t = log_open(sub(scratch, name));

	if (!CHECK("translog opened", t))
		return NULL;
	if (n > 0 && (append(t, n) < 0 || translog_commit(t) < 0)) {
		printf("# cannot commit %u leaves in %s\n", n, name);
		translog_free(t);
		return NULL;
	}
	return t;
}

/* 3 leaves published, 2 more in flight: the partial tiles of 5 are on
 * disk and refused until the commit ends; those of 3 stay served. */
UNIT_TEST(partial_in_flight)
{
	_cleanup_(translog_freep) struct translog *t = log_at("inflight-0", 0);
	struct translog_commit *c = NULL;
	uint64_t size;

	if (!t)
		return;
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
UNIT_TEST(full_in_flight)
{
	_cleanup_(translog_freep) struct translog *t = log_at("inflight-5", 5);
	struct translog_commit *c = NULL;

	if (!t)
		return;
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
UNIT_TEST(failed_in_flight)
{
	_cleanup_(translog_freep) struct translog *t = log_at("inflight-260", 260);
	struct translog_commit *c = NULL;

	if (!t)
		return;
	CHECK_EQ("translog commit to 262 begun", append(t, 2) == 0 ? translog_commit_begin(t, &c) : -1, 1);
	CHECK_EQ("translog in flight: partial 0/1 of 6 refused", rd(t, "tile/0/001.p/6", NULL), -ENOENT);
	CHECK_EQ("translog failed sync undone", c ? translog_commit_end(t, c, -EIO) : 0, -EIO);
	CHECK_EQ("translog failed: checkpoint still 260", checkpoint_size(t), 260);
	CHECK_EQ("translog failed: partial 0/1 of 6 cut", rd(t, "tile/0/001.p/6", NULL), -ENOENT);
	CHECK_EQ("translog failed: partial 0/1 of 4 served", rd(t, "tile/0/001.p/4", NULL), 0);
}

/* ---- what the log loads from a directory (issue 27) ------------------- */

enum kind { VALID, OVERSIZED, JUST_OVER, WRONG_INDEX, NOT_AN_ENTRY };

static int write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[512];
	int fd, r;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	r = write_full(fd, data, len);
	close(fd);
	return r;
}

/* Entry @i of a planted log of @kind, in *@ret (a new buffer). */
static int planted_entry(enum kind kind, unsigned i, uint8_t **ret, size_t *ret_len)
{
	static const uint8_t digest[32], sig[16];
	struct tlog_entry e = {
		.index = i, .time = 1700000000, .key = "default", .key_id = "00",
		.cert_sha256 = "00", .hash = "sha256", .digest = digest,
		.digest_len = sizeof(digest), .module = "test.ko", .client = "uid=0",
		.sig = sig, .sig_len = sizeof(sig),
	};
	size_t pad = kind == OVERSIZED ? 65535 : kind == JUST_OVER && i == 1 ? TLOG_MAX_ENTRY + 1 : 0;
	char *s = NULL;
	size_t len;

	if (kind == WRONG_INDEX && i == 1)
		e.index = 2;
	if (kind == NOT_AN_ENTRY && i == 1)
		return (*ret = (uint8_t *)strdup("not an entry")) ? *ret_len = 12, 0 : -ENOMEM;
	if (tlog_entry_format(&e, &s, &len) < 0)
		return -EINVAL;
	/* Padded with spaces after the object: the prefix says the size. */
	*ret = realloc(s, len > pad ? len : pad);
	if (!*ret)
		return free(s), -ENOMEM;
	if (pad > len)
		memset(*ret + len, ' ', pad - len);
	*ret_len = len > pad ? len : pad;
	return 0;
}

/* Plant in @dir (made here) a log of @n entries (at most 255) of @kind,
 * its tiles and a checkpoint signed by @key (NULL: a signature line
 * nobody made, as a one-time key's of an earlier run looks). */
static int plant(const char *dir, unsigned n, enum kind kind, EVP_PKEY *key)
{
	static uint8_t hashes[255][TLOG_HASH_LEN];
	_cleanup_(freep) uint8_t *bundle = malloc((size_t)n * (2 + 65535) + 1);
	_cleanup_(freep) char *body = NULL, *note = NULL;
	uint8_t root[TLOG_HASH_LEN];
	char cmd[512], name[64];
	size_t blen = 0;

	snprintf(cmd, sizeof(cmd), "mkdir -p '%s/tile/0/000.p' '%s/tile/entries/000.p'", dir, dir);
	if (!bundle || system(cmd) != 0)
		return -EIO;
	for (unsigned i = 0; i < n; i++) {
		_cleanup_(freep) uint8_t *e = NULL;
		size_t len;

		if (planted_entry(kind, i, &e, &len) < 0)
			return -EIO;
		tlog_leaf_hash(e, len, hashes[i]);
		bundle[blen++] = len >> 8;
		bundle[blen++] = len & 0xff;
		memcpy(bundle + blen, e, len);
		blen += len;
	}
	tlog_mth(&hashes[0][0], n, root);
	if (tlog_checkpoint_format(ORIGIN, n, root, &body) < 0)
		return -EIO;
	if (key ? note_sign(body, ORIGIN, key, &note) < 0 :
		  asprintf(&note, "%s\n\xe2\x80\x94 %s AAAAAA==\n", body, ORIGIN) < 0)
		return -EIO;
	snprintf(name, sizeof(name), "tile/0/000.p/%u", n);
	if (n && write_file(dir, name, hashes, n * TLOG_HASH_LEN) < 0)
		return -EIO;
	snprintf(name, sizeof(name), "tile/entries/000.p/%u", n);
	if (n && write_file(dir, name, bundle, blen) < 0)
		return -EIO;
	return write_file(dir, "checkpoint", note, strlen(note));
}

/* translog_open() of @dir with @key (a reference taken here), its reason
 * in @why; the log in *@ret if it opened (else NULL). */
static int open_with(const char *dir, EVP_PKEY *key, bool ephemeral, struct translog **ret,
		     char *why, size_t why_size)
{
	struct translog *t = NULL;
	int r;

	why[0] = '\0';
	EVP_PKEY_up_ref(key);
	r = translog_open(dir, key, ephemeral, ORIGIN, &t, why, why_size);
	if (r < 0)
		printf("#   %s: %s\n", dir, why);
	*ret = t;
	return r;
}

/* Open, append @n and commit: the legitimate log goes on. */
static int open_append_commit(const char *dir, EVP_PKEY *key, bool ephemeral, unsigned n,
			      uint64_t *ret_size)
{
	struct translog *t = NULL;
	char why[512];
	int r = open_with(dir, key, ephemeral, &t, why, sizeof(why));

	if (r >= 0)
		r = append(t, n);
	if (r >= 0)
		r = translog_commit(t);
	*ret_size = t ? translog_size(t) : 0;
	translog_free(t);
	return r;
}

/* A path under the test's directory (one of 4 buffers in turn: copy it
 * to keep it). */
static const char *sub(const char *base, const char *name)
{
	static char buf[4][512];
	static unsigned k;

	k = (k + 1) % 4;
	if (snprintf(buf[k], sizeof(buf[k]), "%s/%s", base, name) >= (int)sizeof(buf[k]))
		buf[k][0] = '\0'; /* never with the fixture's names */
	return buf[k];
}

/* Row 51: a bundle's entries are bounded and parsed, each in its place. */
static void test_planted_entries(const char *base, EVP_PKEY *key)
{
	struct translog *t = NULL;
	uint64_t size = 0;
	char why[512];

	CHECK("translog planted: 64 entries of 65535 bytes", plant(sub(base, "big"), 64, OVERSIZED, key) == 0);
	CHECK_EQ("translog refuses entries of 65535 bytes (signed checkpoint)",
		 open_with(sub(base, "big"), key, false, &t, why, sizeof(why)), -EBADMSG);
	translog_free(t); /* never appended to: the old code wrote past its bundle */
	CHECK("translog planted: an entry of TLOG_MAX_ENTRY + 1 bytes", plant(sub(base, "over"), 2, JUST_OVER, key) == 0);
	CHECK_EQ("translog refuses an entry of TLOG_MAX_ENTRY + 1 bytes",
		 open_with(sub(base, "over"), key, false, &t, why, sizeof(why)), -EBADMSG);
	CHECK("translog refusal names the bound", strstr(why, "16384 bytes") != NULL);
	translog_free(t);
	CHECK("translog planted: entry 1 says index 2", plant(sub(base, "index"), 3, WRONG_INDEX, key) == 0);
	CHECK_EQ("translog refuses an entry out of its place",
		 open_with(sub(base, "index"), key, false, &t, why, sizeof(why)), -EBADMSG);
	CHECK("translog refusal names the index", strstr(why, "says index 2, not 1") != NULL);
	translog_free(t);
	CHECK("translog planted: entry 1 not an entry", plant(sub(base, "junk"), 3, NOT_AN_ENTRY, key) == 0);
	CHECK_EQ("translog refuses a bundle entry that is not an entry",
		 open_with(sub(base, "junk"), key, false, &t, why, sizeof(why)), -EBADMSG);
	translog_free(t);
	/* Twin: 64 well-formed entries, each in its place, go on. */
	CHECK("translog planted: 64 valid entries", plant(sub(base, "valid"), 64, VALID, key) == 0);
	CHECK_EQ("translog twin: 64 valid entries opened, 4 appended and committed",
		 open_append_commit(sub(base, "valid"), key, false, 4, &size), 0);
	CHECK_EQ("translog twin: 68 entries", size, 68);
}

UNIT_TEST(planted_entries)
{
	test_planted_entries(scratch, log_key);
}

/* Row 52: a one-time key never continues a history it did not sign. */
static void test_ephemeral(const char *base, EVP_PKEY *key)
{
	EVP_PKEY *once = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	struct translog *t = NULL;
	uint64_t size = 0;
	char why[512];

	CHECK("translog planted: unsigned, 64 entries of 65535 bytes", plant(sub(base, "eph-big"), 64, OVERSIZED, NULL) == 0);
	CHECK_EQ("translog ephemeral refuses an unsigned log of 64 entries",
		 open_with(sub(base, "eph-big"), once, true, &t, why, sizeof(why)), -EKEYREJECTED);
	translog_free(t);
	CHECK("translog planted: unsigned, 3 valid entries", plant(sub(base, "eph-valid"), 3, VALID, NULL) == 0);
	CHECK_EQ("translog ephemeral refuses even a well-formed unsigned log",
		 open_with(sub(base, "eph-valid"), once, true, &t, why, sizeof(why)), -EKEYREJECTED);
	CHECK("translog ephemeral refusal says why", strstr(why, "one-time log key") != NULL);
	translog_free(t);
	CHECK("translog planted: 3 entries signed by the file key", plant(sub(base, "eph-signed"), 3, VALID, key) == 0);
	CHECK_EQ("translog ephemeral refuses another key's log",
		 open_with(sub(base, "eph-signed"), once, true, &t, why, sizeof(why)), -EKEYREJECTED);
	translog_free(t);
	/* Twins: the empty tree's checkpoint of an earlier run, and the log
	 * key that signed the refused one, go on. */
	CHECK("translog planted: unsigned, empty", plant(sub(base, "eph-empty"), 0, VALID, NULL) == 0);
	CHECK_EQ("translog twin: ephemeral takes over an empty log and commits",
		 open_append_commit(sub(base, "eph-empty"), once, true, 2, &size), 0);
	CHECK_EQ("translog twin: ephemeral log of 2", size, 2);
	CHECK_EQ("translog twin: the signing key continues its log",
		 open_append_commit(sub(base, "eph-signed"), key, false, 1, &size), 0);
	CHECK_EQ("translog twin: 4 entries", size, 4);
	EVP_PKEY_free(once);
}

UNIT_TEST(ephemeral)
{
	test_ephemeral(scratch, log_key);
}

/* Row 53: the directory is the daemon's own, and only it may write it. */
static void test_private_dir(const char *base, EVP_PKEY *key)
{
	struct translog *t = NULL;
	char d[512], why[512];
	uint64_t size = 0;

	snprintf(d, sizeof(d), "%s", sub(base, "priv"));
	CHECK("translog private dir made", mkdir(d, 0755) == 0);
	CHECK("translog dir mode 0775", chmod(d, 0775) == 0);
	CHECK_EQ("translog refuses a group-writable directory", open_with(d, key, false, &t, why, sizeof(why)), -EPERM);
	CHECK("translog refusal: group or others may write it", strstr(why, "group or others may write it") != NULL);
	translog_free(t);
	CHECK("translog dir mode 0757", chmod(d, 0757) == 0);
	CHECK_EQ("translog refuses an other-writable directory", open_with(d, key, false, &t, why, sizeof(why)), -EPERM);
	translog_free(t);
	CHECK("translog dir mode 0755, owned by nobody", chmod(d, 0755) == 0 && chown(d, 65534, 65534) == 0);
	CHECK_EQ("translog refuses a directory of another user", open_with(d, key, false, &t, why, sizeof(why)), -EPERM);
	CHECK("translog refusal: not owned by the daemon's user", strstr(why, "not owned") != NULL);
	translog_free(t);
	CHECK("translog dir back to its owner", chown(d, geteuid(), getegid()) == 0);
	CHECK("translog link to the directory", symlink(d, sub(base, "priv-link")) == 0);
	CHECK_EQ("translog refuses a symbolic link", open_with(sub(base, "priv-link"), key, false, &t, why, sizeof(why)), -ENOTDIR);
	translog_free(t);
	CHECK_EQ("translog twin: its own 0755 directory opens", open_append_commit(d, key, false, 1, &size), 0);
}

UNIT_TEST(private_dir)
{
	test_private_dir(scratch, log_key);
}

/* The file's bytes: a checkpoint saved and put back. */
static char *slurp(const char *path)
{
	char *s = NULL;
	size_t len;

	return read_file(path, NOTE_MAX, 0, &s, &len) == 0 ? s : NULL;
}

static int put_back(const char *path, const char *s)
{
	char dir[512];

	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(path, '/') - path), path);
	return s ? write_file(dir, strrchr(path, '/') + 1, s, strlen(s)) : -EINVAL;
}

/* One commit of @n that fails in its sync (after the rename if @renamed). */
static int failed_commit(struct translog *t, unsigned n, bool renamed)
{
	struct translog_commit *c = NULL;
	int r = append(t, n);

	if (r >= 0)
		r = translog_commit_begin(t, &c);
	if (r <= 0)
		return r < 0 ? r : -EINVAL;
	if (renamed)
		translog_commit_sync(c);
	return translog_commit_end(t, c, -EIO);
}

/* Row 54: no rollback without a restart.  An older checkpoint (its
 * tiles are still there) put back, then a commit that fails: the reload
 * must not continue from it. */
static void test_rollback(const char *base, EVP_PKEY *key)
{
	_cleanup_(freep) char *old = NULL, *published = NULL;
	struct translog *t = NULL;
	char d[512], cp[540], why[512];

	snprintf(d, sizeof(d), "%s", sub(base, "roll"));
	snprintf(cp, sizeof(cp), "%s/checkpoint", d);
	CHECK("translog rollback: log opened", open_with(d, key, false, &t, why, sizeof(why)) == 0);
	if (!t)
		return;
	CHECK("translog rollback: 3 committed", append(t, 3) == 0 && translog_commit(t) == 0);
	old = slurp(cp);
	CHECK("translog rollback: 5 committed", append(t, 2) == 0 && translog_commit(t) == 0);
	published = slurp(cp);
	CHECK("translog rollback: checkpoint of 3 put back", put_back(cp, old) == 0);
	CHECK("translog rollback: a commit fails", failed_commit(t, 1, false) < 0);
	CHECK_EQ("translog rollback refused: still 5", translog_size(t), 5);
	CHECK_EQ("translog rollback refused: published checkpoint still 5", checkpoint_size(t), 5);
	CHECK("translog rollback refused: broken, says why",
	      translog_broken(t) && strstr(translog_broken(t), "not the one this daemon published"));
	if (translog_broken(t))
		printf("#   %s\n", translog_broken(t));
	CHECK("translog rollback refused: appends fail", append(t, 1) < 0);
	CHECK("translog rollback refused: commits fail", translog_commit(t) < 0);
	/* Twin: the published checkpoint back, the log goes on from it. */
	CHECK("translog rollback: published checkpoint back", put_back(cp, published) == 0);
	/* Read back before the next group, as the daemon does. */
	CHECK_EQ("translog rollback: read back once it is back", translog_abort(t), 0);
	CHECK_EQ("translog twin: commit after the checkpoint is back",
		 append(t, 1) == 0 ? translog_commit(t) : -1, 0);
	CHECK_EQ("translog twin: 6 entries", translog_size(t), 6);
	CHECK("translog twin: not broken", translog_broken(t) == NULL);
	/* Twin: a commit whose checkpoint reached the disk before its sync
	 * failed: a descendant the daemon grew itself, taken. */
	CHECK_EQ("translog twin: failed after its rename", failed_commit(t, 2, true), -EIO);
	CHECK_EQ("translog twin: continues from that checkpoint, 8", translog_size(t), 8);
	CHECK("translog twin: not broken after it", translog_broken(t) == NULL);
	/* A commit whose checkpoint reached the disk, and whose read-back
	 * failed at first (here a tile directory made group-writable): the
	 * checkpoint it signed is still taken once the directory reads back,
	 * never "changed under it" for good (until a restart). */
	{
		struct translog_commit *c = NULL;

		CHECK("translog candidate: 2 appended, commit begun",
		      append(t, 2) == 0 && translog_commit_begin(t, &c) == 1);
		if (c) {
			translog_commit_sync(c);
			CHECK("translog candidate: tile/0 mode 0775", chmod(sub(d, "tile/0"), 0775) == 0);
			CHECK_EQ("translog candidate: the commit fails", translog_commit_end(t, c, -EIO), -EPERM);
			CHECK("translog candidate: broken while tile/0 is 0775", translog_broken(t) != NULL);
			CHECK("translog candidate: tile/0 back to 0755", chmod(sub(d, "tile/0"), 0755) == 0);
			CHECK_EQ("translog candidate: read back once tile/0 is back", translog_abort(t), 0);
			CHECK_EQ("translog candidate: continues from the checkpoint it signed, 10",
				 translog_size(t), 10);
			CHECK("translog candidate: not broken", translog_broken(t) == NULL);
		}
	}
	translog_free(t);
}

UNIT_TEST(rollback)
{
	test_rollback(scratch, log_key);
}

/* What a child ran within 5 s: its negative errno, or -ETIME if it hung
 * (killed by the alarm) in an open(2) of a FIFO. */
static int within_5s(int (*fn)(void *), void *arg)
{
	pid_t pid;
	int st;

	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		int r;

		alarm(5);
		r = fn(arg);
		_exit(r < 0 ? (-r & 0xff) : 0);
	}
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		return -ECHILD;
	if (!WIFEXITED(st))
		return -ETIME;
	return -WEXITSTATUS(st);
}

struct fifo_case {
	const char *dir;
	EVP_PKEY *key;
	struct translog *t;
	const char *tile;
};

static int open_in_child(void *arg)
{
	struct fifo_case *f = arg;
	struct translog *t = NULL;
	char why[512];
	int r = open_with(f->dir, f->key, false, &t, why, sizeof(why));

	translog_free(t);
	return r;
}

static int read_in_child(void *arg)
{
	struct fifo_case *f = arg;

	return rd(f->t, f->tile, NULL);
}

static int commit_in_child(void *arg)
{
	struct fifo_case *f = arg;
	uint64_t size;

	return open_append_commit(f->dir, f->key, false, 1, &size);
}

/* Row 55 (issue 27, point 5 for the log's own files): a FIFO at a file
 * the log reads is refused at once, one at a temporary replaced. */
static void test_fifos(const char *base, EVP_PKEY *key)
{
	char d1[512], d2[512], d3[512], why[512];
	struct fifo_case f = { .dir = d1, .key = key };
	uint64_t size = 0;

	snprintf(d1, sizeof(d1), "%s", sub(base, "fifo"));
	snprintf(d2, sizeof(d2), "%s", sub(base, "fifo2"));
	snprintf(d3, sizeof(d3), "%s", sub(base, "fifo3"));
	CHECK_EQ("translog fifo: log of 3", open_append_commit(f.dir, key, false, 3, &size), 0);
	CHECK("translog fifo: FIFO at tile/0/000.p/3", unlink(sub(f.dir, "tile/0/000.p/3")) == 0 &&
						     mkfifo(sub(f.dir, "tile/0/000.p/3"), 0644) == 0);
	CHECK_EQ("translog FIFO at a partial tile: open refused at once", within_5s(open_in_child, &f), -EBADMSG);
	CHECK_EQ("translog fifo: a fresh log of 3", open_append_commit(d2, key, false, 3, &size), 0);
	f.dir = d2;
	CHECK("translog fifo: log opened", open_with(f.dir, key, false, &f.t, why, sizeof(why)) == 0);
	f.tile = "tile/entries/000.p/3";
	CHECK_EQ("translog twin: the bundle is served", within_5s(read_in_child, &f), 0);
	CHECK("translog fifo: FIFO at tile/entries/000.p/3", unlink(sub(f.dir, f.tile)) == 0 &&
							    mkfifo(sub(f.dir, f.tile), 0644) == 0);
	CHECK_EQ("translog FIFO at a tile: log request refused at once", within_5s(read_in_child, &f), -ENOENT);
	translog_free(f.t);
	CHECK_EQ("translog FIFO at the bundle: open refused at once", within_5s(open_in_child, &f), -EBADMSG);
	CHECK("translog fifo: FIFO at checkpoint", rename(sub(f.dir, "checkpoint"), sub(f.dir, "cp")) == 0 &&
						  mkfifo(sub(f.dir, "checkpoint"), 0644) == 0);
	CHECK_EQ("translog FIFO at the checkpoint: open refused at once", within_5s(open_in_child, &f), -EBADMSG);
	/* Temporaries: a FIFO or a link at their names is replaced. */
	f.dir = d3;
	CHECK_EQ("translog fifo: a third log of 3", open_append_commit(f.dir, key, false, 3, &size), 0);
	CHECK("translog fifo: FIFO at checkpoint.tmp", mkfifo(sub(f.dir, "checkpoint.tmp"), 0644) == 0);
	CHECK("translog fifo: FIFO at tile/0/000.p/4.tmp", mkfifo(sub(f.dir, "tile/0/000.p/4.tmp"), 0644) == 0);
	CHECK("translog fifo: link at tile/entries/000.p/4.tmp", symlink("/etc/passwd", sub(f.dir, "tile/entries/000.p/4.tmp")) == 0);
	CHECK_EQ("translog FIFOs at the temporaries: the commit goes on", within_5s(commit_in_child, &f), 0);
	CHECK_EQ("translog twin: 4 entries after it", open_append_commit(f.dir, key, false, 0, &size), 0);
	CHECK_EQ("translog twin: 4", size, 4);
}

UNIT_TEST(fifos)
{
	test_fifos(scratch, log_key);
}

/* Row 70: the subdirectories too.  A tile directory that group or others
 * may write, or another user's, lets them swap the tiles the daemon loads
 * and serves; private_dir_open() looked at the top one only. */
static void test_private_subdirs(const char *base, EVP_PKEY *key)
{
	struct translog *t = NULL;
	char d[512], why[512];
	uint64_t size = 0;

	snprintf(d, sizeof(d), "%s", sub(base, "privsub"));
	CHECK_EQ("translog subdirs: log of 3", open_append_commit(d, key, false, 3, &size), 0);
	CHECK("translog subdirs: tile/0 mode 0775", chmod(sub(d, "tile/0"), 0775) == 0);
	CHECK_EQ("translog refuses a group-writable tile/0", open_with(d, key, false, &t, why, sizeof(why)), -EPERM);
	CHECK("translog refusal names tile/0", strstr(why, "tile/0") != NULL);
	printf("#   %s\n", why);
	translog_free(t);
	t = NULL;
	CHECK("translog subdirs: tile/0 back to 0755, tile/ nobody's",
	      chmod(sub(d, "tile/0"), 0755) == 0 && chown(sub(d, "tile"), 65534, 65534) == 0);
	CHECK_EQ("translog refuses tile/ of another user", open_with(d, key, false, &t, why, sizeof(why)), -EPERM);
	translog_free(t);
	t = NULL;
	CHECK("translog subdirs: tile/ back to its owner", chown(sub(d, "tile"), geteuid(), getegid()) == 0);
	CHECK_EQ("translog twin: its own 0755 subdirectories open", open_with(d, key, false, &t, why, sizeof(why)), 0);
	if (!t)
		return;
	/* While it runs: a commit into tile/entries made other-writable fails,
	 * the log is broken and says why, until the mode is back. */
	CHECK("translog subdirs: tile/entries mode 0757", chmod(sub(d, "tile/entries"), 0757) == 0);
	CHECK("translog refuses to commit into an other-writable tile/entries",
	      append(t, 1) == 0 && translog_commit(t) < 0);
	CHECK("translog subdirs: broken", translog_broken(t) != NULL);
	CHECK("translog subdirs: tile/entries back to 0755", chmod(sub(d, "tile/entries"), 0755) == 0);
	CHECK_EQ("translog twin: read back once the mode is back", translog_abort(t), 0);
	CHECK_EQ("translog twin: commits again", append(t, 1) == 0 ? translog_commit(t) : -1, 0);
	CHECK_EQ("translog twin: 4 entries", translog_size(t), 4);
	translog_free(t);
}

UNIT_TEST(private_subdirs)
{
	test_private_subdirs(scratch, log_key);
}

/* A log of 2^63 entries (one partial tile, at level 7), under a checkpoint
 * the log key signed: sizes and tile indices at their top, no overflow
 * (ASan, UBSan); 257 appended across a tile boundary, read back. */
static void test_huge_size(const char *base, EVP_PKEY *key)
{
	static struct tlog_tree tree;
	_cleanup_(freep) char *body = NULL, *note = NULL;
	uint8_t root[TLOG_HASH_LEN];
	struct translog *t = NULL;
	char d[512], why[512];
	uint64_t size = 0;

	snprintf(d, sizeof(d), "%s", sub(base, "huge"));
	memset(&tree, 0, sizeof(tree));
	tree.size = UINT64_C(1) << 63;
	memset(tree.partial[7], 0x5a, 128 * TLOG_HASH_LEN);
	tlog_tree_load(&tree);
	tlog_tree_root(&tree, root);
	CHECK("translog huge: planted", mkdir(d, 0755) == 0 && mkdir(sub(d, "tile"), 0755) == 0 &&
		mkdir(sub(d, "tile/7"), 0755) == 0 && mkdir(sub(d, "tile/7/000.p"), 0755) == 0 &&
		write_file(d, "tile/7/000.p/128", tree.partial[7], 128 * TLOG_HASH_LEN) == 0 &&
		tlog_checkpoint_format(ORIGIN, tree.size, root, &body) == 0 &&
		note_sign(body, ORIGIN, key, &note) == 0 &&
		write_file(d, "checkpoint", note, strlen(note)) == 0);
	CHECK_EQ("translog huge: a log of 2^63 opens", open_with(d, key, false, &t, why, sizeof(why)), 0);
	if (!t)
		return;
	CHECK_EQ("translog huge: 257 appended and committed", append(t, 257) == 0 ? translog_commit(t) : -1, 0);
	CHECK("translog huge: 2^63 + 257", translog_size(t) == (UINT64_C(1) << 63) + 257);
	translog_free(t);
	CHECK_EQ("translog huge: read back", open_append_commit(d, key, false, 1, &size), 0);
	CHECK("translog huge: 2^63 + 258", size == (UINT64_C(1) << 63) + 258);
}

UNIT_TEST(huge_size)
{
	test_huge_size(scratch, log_key);
}

static bool fixture(void)
{
	if (!unit_mkdtemp(scratch))
		return false;
	chmod(scratch, 0755);
	log_key = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	return CHECK("translog log key made", log_key);
}

static void fixture_free(void)
{
	EVP_PKEY_free(log_key);
	unit_rm_rf(scratch);
}

UNIT_MAIN(.setup = fixture, .teardown = fixture_free)
