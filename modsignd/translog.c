/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The transparency log's directory.  Layout (C2SP tlog-tiles):
 *
 *   checkpoint              signed note: origin, size, root
 *   tile/L/N, tile/L/N.p/W  hashes at level L (W of 256 in a partial tile)
 *   tile/entries/N[.p/W]    the entries, each after a 2-byte length
 *
 * Every file is written to NAME.tmp and renamed, so that a web server
 * serving the directory never sends half a file.  A commit collects the
 * files it wrote and the directories whose entries it changed, and makes
 * them durable together (fdatasync, fsync) before the checkpoint that
 * covers them is renamed into place.  Not syncfs(): it would also wait
 * for every other writer's dirty data on the same filesystem.  Partial
 * tiles of a tile that is full are removed after the checkpoint that
 * covers the full one.
 *
 * The directory is the daemon's own (private_dir_open(), once, at open)
 * and everything in it is reached from its descriptor: a tile's directory
 * beneath it, one component at a time, never through a link (openat2
 * RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS), each the daemon's own as the top
 * is, and the file in it by regular_file_openat(),
 * which never waits on a FIFO planted there; temporaries are new files
 * (O_EXCL), never whatever lay at their name.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <unistd.h>

#include "note.h"
#include "tlog.h"
#include "translog.h"
#include "util.h"

#define SYNC_MAX 16 /* files and directories held for a commit's sync */

/* What a commit must make durable.  When it is full, what comes more is
 * synced at once (a batch that fills many tiles): earlier, never later. */
struct sync_set {
	int fds[SYNC_MAX];
	size_t n_fds;
	char dirs[SYNC_MAX][TLOG_MAX_PATH];
	size_t n_dirs;
	int r; /* the first failure of a sync done early */
};

struct translog {
	int dfd;
	char *origin, *vkey, *checkpoint;
	char *candidate;       /* the checkpoint a failed commit signed, kept
				* until a read-back succeeds (check_held()) */
	EVP_PKEY *key;
	bool ephemeral, broken;
	bool committing;       /* between translog_commit_begin() and _end() */
	struct tlog_tree tree; /* with the pending entries */
	uint64_t committed;    /* size of the published checkpoint */
	uint8_t *bundle;       /* the entries of level 0's partial tile */
	size_t bundle_len;
	char reason[512];      /* why it is broken, or why open failed */
	struct sync_set sync;
};

static int fail(struct translog *t, int r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct translog *t, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(t->reason, sizeof(t->reason), fmt, ap);
	va_end(ap);
	return r;
}

/* One component @name of a directory path, beneath @dfd, never through a
 * link or "..", and the daemon's own like the top (private_dir_open()):
 * a subdirectory that group or others may write, or another user's, lets
 * them swap the tiles in it (-EPERM). */
static int dir_step(int dfd, const char *name, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_DIRECTORY | O_CLOEXEC),
				.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS };
	_cleanup_(closep) int fd = (int)syscall(SYS_openat2, dfd, name, &how, sizeof(how));
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	return TAKE_FD(fd);
}

/* The directory @path beneath the log directory @dfd ("." for itself),
 * never through a symbolic link or "..", each directory on the way the
 * daemon's own (dir_step()): @flags O_PATH or O_RDONLY. */
static int dir_open_beneath(int dfd, const char *path, int flags)
{
	char buf[TLOG_MAX_PATH];
	char *name = buf, *slash;
	int fd = -1;

	if (strlen(path) >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, strlen(path) + 1);
	for (;;) {
		int next;

		slash = strchr(name, '/');
		if (slash)
			*slash = '\0';
		next = dir_step(fd >= 0 ? fd : dfd, name, slash ? O_PATH : flags);
		if (fd >= 0)
			close(fd);
		if (next < 0 || !slash)
			return next;
		fd = next;
		name = slash + 1;
	}
}

/* The directory that holds @path ("." for the top). */
static void dir_of(const char *path, char dir[TLOG_MAX_PATH])
{
	const char *slash = strrchr(path, '/');

	snprintf(dir, TLOG_MAX_PATH, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
}

/* The directory of @path, beneath @dfd, and its last component in
 * *@ret_name, for the *at() calls that reach the file itself. */
static int parent_open(int dfd, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	char dir[TLOG_MAX_PATH];

	dir_of(path, dir);
	*ret_name = slash ? slash + 1 : path;
	return dir_open_beneath(dfd, dir, O_PATH);
}

/* The file @path beneath @dfd, a regular file (regular_file_openat()):
 * -ENOENT, -ELOOP (a link), -EINVAL (not a regular file), -errno. */
static int file_open_beneath(int dfd, const char *path, int flags, mode_t mode)
{
	_cleanup_(closep) int pfd = -1;
	const char *name;

	pfd = parent_open(dfd, path, &name);
	if (pfd < 0)
		return pfd;
	return regular_file_openat(pfd, name, flags, mode);
}

/* unlinkat() of @path beneath @dfd: 0 or -errno. */
static int unlink_beneath(int dfd, const char *path, int flags)
{
	_cleanup_(closep) int pfd = -1;
	const char *name;

	pfd = parent_open(dfd, path, &name);
	if (pfd < 0)
		return pfd;
	return unlinkat(pfd, name, flags) < 0 ? -errno : 0;
}

/* A new temporary file @name in the directory @pfd.  Whatever lay at the
 * name (a crashed write's, or a FIFO or link someone planted) is removed
 * first, and the file made O_EXCL: the write lands in a new file and
 * never waits on, nor writes through, anything else. */
static int tmp_create(int pfd, const char *name)
{
	if (unlinkat(pfd, name, 0) < 0 && errno != ENOENT)
		return -errno;
	return regular_file_openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL, 0644);
}

static void sync_file(struct sync_set *ss, int fd)
{
	if (ss->n_fds < SYNC_MAX) {
		ss->fds[ss->n_fds++] = fd;
		return;
	}
	if (fdatasync(fd) < 0 && ss->r >= 0)
		ss->r = -errno;
	close(fd);
}

static int fsync_dir(int dfd, const char *path)
{
	_cleanup_(closep) int fd = dir_open_beneath(dfd, path, O_RDONLY);

	if (fd < 0)
		return fd;
	return fsync(fd) < 0 ? -errno : 0;
}

/* The directory that holds @path ("." for the top). */
static void sync_parent(struct sync_set *ss, int dfd, const char *path)
{
	char dir[TLOG_MAX_PATH];
	int r;

	dir_of(path, dir);
	for (size_t i = 0; i < ss->n_dirs; i++)
		if (strcmp(ss->dirs[i], dir) == 0)
			return;
	if (ss->n_dirs < SYNC_MAX) {
		memcpy(ss->dirs[ss->n_dirs++], dir, sizeof(dir));
		return;
	}
	r = fsync_dir(dfd, dir);
	if (r < 0 && ss->r >= 0)
		ss->r = r;
}

/* Make all of @ss durable, then forget it.  Returns the first failure.
 * Writeback of every file is started first: ext4 allocates a file's
 * blocks only when it is written back, so one fdatasync after another
 * each made their own journal commit; started together, the first
 * commit carries them all and the other fdatasyncs find little to do. */
static int sync_all(struct sync_set *ss, int dfd)
{
	int r = ss->r;

	for (size_t i = 0; i < ss->n_fds; i++)
		(void)sync_file_range(ss->fds[i], 0, 0, SYNC_FILE_RANGE_WRITE); /* a hint */
	for (size_t i = 0; i < ss->n_fds; i++) {
		if (fdatasync(ss->fds[i]) < 0 && r >= 0)
			r = -errno;
		close(ss->fds[i]);
	}
	for (size_t i = 0; i < ss->n_dirs; i++) {
		int r2 = fsync_dir(dfd, ss->dirs[i]);
		if (r2 < 0 && r >= 0)
			r = r2;
	}
	*ss = (struct sync_set){ 0 };
	return r;
}

static void sync_drop(struct sync_set *ss)
{
	for (size_t i = 0; i < ss->n_fds; i++)
		close(ss->fds[i]);
	*ss = (struct sync_set){ 0 };
}

/* mkdir -p of the directories of @path under @t->dfd, one component at a
 * time from the one above (dir_open_beneath()), never a path that a link
 * on the way could lead out of the log; the parent of each one made must
 * be synced too. */
static int make_parents(struct translog *t, const char *path)
{
	char buf[TLOG_MAX_PATH];
	_cleanup_(closep) int fd = -1;
	char *name = buf;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = strchr(buf, '/'); p; p = strchr(p + 1, '/')) {
		int next;

		*p = '\0';
		if (mkdirat(fd >= 0 ? fd : t->dfd, name, 0755) == 0)
			sync_parent(&t->sync, t->dfd, buf);
		else if (errno != EEXIST)
			return -errno;
		next = dir_open_beneath(fd >= 0 ? fd : t->dfd, name, O_PATH);
		if (next < 0)
			return next;
		if (fd >= 0)
			close(fd);
		fd = next;
		*p = '/';
		name = p + 1;
	}
	return 0;
}

/* Write @path whole (NAME.tmp, renamed), to be synced by the commit. */
static int write_at(struct translog *t, const char *path, const void *data, size_t len)
{
	_cleanup_(closep) int pfd = -1, fd = -1;
	char tmp[TLOG_MAX_PATH + 8];
	const char *name;
	int r;

	pfd = parent_open(t->dfd, path, &name);
	if (pfd == -ENOENT) {
		/* A new tile directory: a few per 256 leaves. */
		r = make_parents(t, path);
		if (r < 0)
			return r;
		pfd = parent_open(t->dfd, path, &name);
	}
	if (pfd < 0)
		return pfd;
	snprintf(tmp, sizeof(tmp), "%s.tmp", name);
	fd = tmp_create(pfd, tmp);
	if (fd < 0)
		return fd;
	r = write_full(fd, data, len);
	if (r < 0)
		return r;
	if (renameat(pfd, tmp, pfd, name) < 0)
		return -errno;
	sync_file(&t->sync, TAKE_FD(fd));
	sync_parent(&t->sync, t->dfd, path);
	return 0;
}

/* All of @path, exactly @len bytes, into @buf: -EBADMSG if it is of
 * another size, else file_open_beneath()'s errors. */
static int read_exact_at(int dfd, const char *path, void *buf, size_t len)
{
	_cleanup_(closep) int fd = file_open_beneath(dfd, path, O_RDONLY, 0);
	struct stat st;
	ssize_t n;

	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if ((size_t)st.st_size != len)
		return -EBADMSG;
	n = read_full(fd, buf, len);
	if (n < 0)
		return (int)n;
	return (size_t)n == len ? 0 : -EBADMSG;
}

static int tile_write(int level, uint64_t index, unsigned width, const void *data,
		      size_t len, struct translog *t)
{
	char path[TLOG_MAX_PATH];
	int r = tlog_tile_path(path, level, index, width);

	return r < 0 ? r : write_at(t, path, data, len);
}

/* A full tile, as the tree hands it over during an append. */
static int on_full(int level, uint64_t index, const uint8_t *hashes, void *userdata)
{
	struct translog *t = userdata;

	return tile_write(level, index, 0, hashes, TLOG_TILE_BYTES, t);
}

/* A file of the log that could not be read: -EBADMSG and why, if it is
 * missing or not a regular file (the directory disagrees with its
 * checkpoint), else the error. */
static int file_failed(struct translog *t, int r, const char *path, const char *missing)
{
	if (r == -ENOENT || r == -EBADMSG)
		return fail(t, -EBADMSG, "%s: %s", path, missing);
	if (r == -EINVAL || r == -ELOOP)
		return fail(t, -EBADMSG, "%s: not a regular file", path);
	if (r == -EPERM)
		return fail(t, r, "%s: a directory on its path is not the daemon's own or group or "
			    "others may write it (chown, chmod go-w)", path);
	return fail(t, r, "%s: %s", path, strerror(-r));
}

/* The partial tiles of a tree of @size leaves, into t->tree. */
static int load_tiles(struct translog *t, uint64_t size)
{
	char path[TLOG_MAX_PATH];
	int r;

	memset(&t->tree, 0, sizeof(t->tree));
	t->tree.size = size;
	for (unsigned level = 0; level < TLOG_LEVELS; level++) {
		unsigned w = tlog_tree_width(&t->tree, level);

		if (!w)
			continue;
		tlog_tile_path(path, (int)level, tlog_tree_tile_index(&t->tree, level), w);
		r = read_exact_at(t->dfd, path, t->tree.partial[level], w * TLOG_HASH_LEN);
		if (r < 0)
			return file_failed(t, r, path, "missing or of the wrong size");
	}
	tlog_tree_load(&t->tree);
	return 0;
}

/*
 * The @len bytes of the bundle in t->bundle, entry by entry: each within
 * TLOG_MAX_ENTRY (tlog_bundle_next()), hashing to its leaf in level 0's
 * partial tile, and an entry (tlog_entry_parse()) whose index is its
 * place, leaf @first + n.  The tiles' hashes alone would take any bytes
 * (issue 27: 64 entries of 65,535 bytes, which translog_append() then
 * wrote past).
 */
static int check_bundle(struct translog *t, const char *path, size_t len, uint64_t first,
			unsigned w)
{
	struct tlog_entry_view v;
	uint8_t h[TLOG_HASH_LEN];
	const uint8_t *e;
	size_t pos = 0, elen;
	unsigned n = 0;
	int r;

	while ((r = tlog_bundle_next(t->bundle, len, &pos, &e, &elen)) > 0) {
		if (n >= w)
			return fail(t, -EBADMSG, "%s: more than %u entries", path, w);
		tlog_leaf_hash(e, elen, h);
		if (memcmp(h, t->tree.partial[0] + n * TLOG_HASH_LEN, TLOG_HASH_LEN) != 0)
			return fail(t, -EBADMSG, "%s: entries disagree with the tiles", path);
		r = tlog_entry_parse(e, elen, &v);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			return fail(t, -EBADMSG, "%s: entry %u is not a log entry", path, n);
		if (v.index != first + n)
			return fail(t, -EBADMSG, "%s: entry %u says index %llu, not %llu", path, n,
				    (unsigned long long)v.index, (unsigned long long)(first + n));
		n++;
	}
	if (r < 0 || n != w)
		return fail(t, -EBADMSG, "%s: cut short, or an entry over %u bytes", path,
			    TLOG_MAX_ENTRY);
	return 0;
}

/* The entry bundle of level 0's partial tile, into t->bundle: no more
 * bytes than its W entries can take, so that the buffer keeps room for
 * the next 256 - W that translog_append() adds. */
static int load_bundle(struct translog *t)
{
	unsigned w = tlog_tree_width(&t->tree, 0);
	size_t cap = (size_t)w * (2 + TLOG_MAX_ENTRY);
	_cleanup_(closep) int fd = -1;
	char path[TLOG_MAX_PATH];
	uint64_t index = tlog_tree_tile_index(&t->tree, 0);
	ssize_t got;
	int r;

	t->bundle_len = 0;
	if (!w)
		return 0;
	tlog_tile_path(path, TLOG_LEVEL_ENTRIES, index, w);
	fd = file_open_beneath(t->dfd, path, O_RDONLY, 0);
	if (fd < 0)
		return file_failed(t, fd, path, "missing");
	got = read_full(fd, t->bundle, cap + 1);
	if (got < 0)
		return file_failed(t, (int)got, path, "missing");
	if ((size_t)got > cap)
		return fail(t, -EBADMSG, "%s: larger than %u entries can be", path, w);
	r = check_bundle(t, path, (size_t)got, index * TLOG_TILE_WIDTH, w);
	if (r < 0)
		return r;
	t->bundle_len = (size_t)got;
	return 0;
}

/* Unlink tile (@level, @index, @width) if it is there: 1 if it was. */
static int unlink_tile(int dfd, int level, uint64_t index, unsigned width)
{
	char path[TLOG_MAX_PATH];

	tlog_tile_path(path, level, index, width);
	return unlink_beneath(dfd, path, 0) == 0;
}

/* Remove the partial tiles of (@level, @index) wider than @keep (their
 * names are the widths: only those in the directory are looked at), and
 * the directory when none is kept: 1 if anything was there. */
static int remove_partials(int dfd, int level, uint64_t index, unsigned keep)
{
	char path[TLOG_MAX_PATH];
	struct dirent *de;
	DIR *d;
	int pfd, found = 0;

	tlog_tile_path(path, level, index, 1);
	path[strlen(path) - 2] = '\0'; /* "N.p" */
	pfd = dir_open_beneath(dfd, path, O_RDONLY);
	if (pfd < 0)
		return 0;
	d = fdopendir(pfd);
	if (!d) {
		close(pfd);
		return 0;
	}
	while ((de = readdir(d))) {
		unsigned long w;

		/* Widths, and the temporary files of an interrupted write. */
		if (de->d_name[0] == '.' ||
		    (parse_uint(de->d_name, TLOG_TILE_WIDTH - 1, &w) == 0 && w <= keep))
			continue;
		found |= unlinkat(pfd, de->d_name, 0) == 0;
	}
	closedir(d);
	if (!keep)
		found |= unlink_beneath(dfd, path, AT_REMOVEDIR) == 0;
	return found;
}

/* Whatever lies past the checkpoint: tiles written by a commit that never
 * published one.  They hold leaves whose signatures were not released;
 * they are removed, so that they are never served as part of the log. */
static void cut_tail(struct translog *t)
{
	for (int level = TLOG_LEVEL_ENTRIES; level < (int)TLOG_LEVELS; level++) {
		unsigned l = level < 0 ? 0 : (unsigned)level;
		uint64_t idx = tlog_tree_tile_index(&t->tree, l);
		unsigned w = tlog_tree_width(&t->tree, l);

		for (uint64_t i = idx;; i++) {
			int found = unlink_tile(t->dfd, level, i, 0);

			found |= remove_partials(t->dfd, level, i, i == idx ? w : 0);
			if (!found && i > idx)
				break;
		}
	}
}

/* "checkpoint" as it is on disk, in a new string; NULL if there is none. */
static int read_checkpoint(struct translog *t, char **ret)
{
	_cleanup_(closep) int fd = regular_file_openat(t->dfd, "checkpoint", O_RDONLY, 0);
	_cleanup_(freep) char *note = NULL;
	ssize_t n;

	*ret = NULL;
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return file_failed(t, fd, "checkpoint", "missing");
	note = calloc(1, NOTE_MAX + 1);
	if (!note)
		return -ENOMEM;
	n = read_full(fd, note, NOTE_MAX);
	if (n < 0)
		return file_failed(t, (int)n, "checkpoint", "missing");
	*ret = TAKE_PTR(note);
	return 0;
}

/*
 * Once a checkpoint is published, the directory must hold that one, or
 * @candidate, the one the commit that just failed signed, if its rename
 * got through: a tree this daemon grew from the published one itself.
 * Anything else is a history changed under the running daemon, even a
 * checkpoint the log key signed: an older checkpoint's files put back and
 * one commit made to fail rolled the log back (issue 27).  The log then
 * stays broken and signs nothing until the published checkpoint is back.
 */
static int check_held(struct translog *t, const char *note, const char *candidate)
{
	if (!t->checkpoint)
		return 0; /* at open: nothing published yet */
	if (note && (strcmp(note, t->checkpoint) == 0 || (candidate && strcmp(note, candidate) == 0)))
		return 0;
	return fail(t, -ESTALE,
		    "checkpoint: %s the one this daemon published (%llu entries): the log directory "
		    "was changed under it; not signing until that checkpoint is back",
		    note ? "not" : "missing, not", (unsigned long long)t->committed);
}

/*
 * The size and root of @note, which the log key signed.  A one-time key
 * (ephemeral) cannot have signed an earlier run's checkpoint: it takes an
 * unsigned one only for the empty tree.  It never continues a history it
 * did not sign: whoever can write the directory would choose that history
 * (issue 27: entries past TLOG_MAX_ENTRY, under a checkpoint nobody
 * signed); a restart with such a key needs an empty directory.
 */
static int checkpoint_open(struct translog *t, const char *note, uint64_t *ret_size,
			   uint8_t ret_root[TLOG_HASH_LEN])
{
	_cleanup_(freep) char *text = NULL, *origin = NULL;
	struct note_verifier v = { 0 };
	bool unsigned_ok = false;
	int r;

	r = note_verifier_parse(t->vkey, &v);
	if (r < 0)
		return r;
	r = note_open(note, &v, &text);
	note_verifier_done(&v);
	if (r < 0 && r != -ENOMEM && t->ephemeral && !t->checkpoint) {
		const char *end = strstr(note, "\n\n");

		text = end ? strndup(note, end - note + 1) : NULL;
		r = text ? 0 : -EBADMSG;
		unsigned_ok = true;
	}
	if (r < 0)
		return fail(t, r, "checkpoint: %s", r == -EKEYREJECTED || r == -ENOKEY ?
			    "not signed by this log key" : "malformed");
	r = tlog_checkpoint_parse(text, &origin, ret_size, ret_root);
	if (r < 0)
		return fail(t, r, "checkpoint: %s", "malformed");
	if (strcmp(origin, t->origin) != 0)
		return fail(t, -EXDEV, "checkpoint: the log of another origin, %s", origin);
	if (unsigned_ok && *ret_size > 0)
		return fail(t, -EKEYREJECTED,
			    "checkpoint: a log of %llu entries, which a one-time log key (--log-key "
			    "ephemeral) never continues: give the log key that signed it, or an "
			    "empty directory", (unsigned long long)*ret_size);
	return 0;
}

/*
 * Read the directory back: "checkpoint", the partial tiles it covers (they
 * must hash to its root) and the entry bundle.  The published state
 * (t->committed, t->checkpoint) changes only when all of it holds
 * together; t->tree and t->bundle are undefined otherwise.
 */
static int load(struct translog *t, const char *candidate)
{
	_cleanup_(freep) char *note = NULL;
	uint8_t root[TLOG_HASH_LEN], want[TLOG_HASH_LEN];
	uint64_t size = 0;
	int r;

	r = read_checkpoint(t, &note);
	if (r >= 0)
		r = check_held(t, note, candidate);
	if (r >= 0 && note)
		r = checkpoint_open(t, note, &size, want);
	if (r >= 0)
		r = load_tiles(t, size);
	if (r < 0)
		return r;
	tlog_tree_root(&t->tree, root);
	if (note && memcmp(root, want, TLOG_HASH_LEN) != 0)
		return fail(t, -EBADMSG, "%s", "the tiles do not hash to the checkpoint's root");
	r = load_bundle(t);
	if (r < 0)
		return r;
	t->committed = size;
	if (note) {
		free(t->checkpoint);
		t->checkpoint = TAKE_PTR(note);
	}
	return 0;
}

/* Back to the published checkpoint (or @candidate: check_held()): on open
 * and after a failure.  Until one succeeds the log is broken: appends and
 * commits fail, and t->reason says why. */
static int reload(struct translog *t, const char *candidate)
{
	int r;

	sync_drop(&t->sync);
	/* The failed commit's checkpoint stays acceptable until a read-back
	 * succeeds: one that fails for a moment (a tile directory's mode, an
	 * I/O error) must not leave the log broken for good once the disk
	 * holds the checkpoint this daemon itself signed. */
	if (candidate && candidate != t->candidate) {
		free(t->candidate);
		t->candidate = strdup(candidate);
		if (!t->candidate) {
			t->broken = true;
			return -ENOMEM;
		}
	}
	r = load(t, t->candidate);
	t->broken = r < 0;
	if (r < 0)
		return r;
	free(t->candidate);
	t->candidate = NULL;
	t->reason[0] = '\0';
	cut_tail(t);
	return 0;
}

/* The signed checkpoint of the tree as it is now, in "checkpoint.tmp":
 * made durable by the commit's sync with the tiles it covers. */
static int sign_checkpoint(struct translog *t, char **ret)
{
	_cleanup_(freep) char *body = NULL, *note = NULL;
	_cleanup_(closep) int fd = -1;
	uint8_t root[TLOG_HASH_LEN];
	int r;

	tlog_tree_root(&t->tree, root);
	r = tlog_checkpoint_format(t->origin, t->tree.size, root, &body);
	if (r < 0)
		return r;
	r = note_sign(body, t->origin, t->key, &note);
	if (r < 0)
		return r;
	fd = tmp_create(t->dfd, "checkpoint.tmp");
	if (fd < 0)
		return fd;
	r = write_full(fd, note, strlen(note));
	if (r < 0)
		return r;
	sync_file(&t->sync, TAKE_FD(fd)); /* its name needs no sync: renamed */
	*ret = TAKE_PTR(note);
	return 0;
}

/* What translog_commit_sync() makes durable: the files and directories
 * written since the last commit, the checkpoint that covers them. */
struct translog_commit {
	struct sync_set sync;
	int dfd;
	char *note;
	uint64_t old_size;
};

static void commit_free(struct translog_commit *c)
{
	if (!c)
		return;
	sync_drop(&c->sync);
	free(c->note);
	free(c);
}

/* Sign the checkpoint of the tree as it is now and take over what is to
 * be synced with it. */
static int stage(struct translog *t, struct translog_commit **ret)
{
	struct translog_commit *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = sign_checkpoint(t, &c->note);
	if (r < 0) {
		free(c);
		return r;
	}
	c->sync = t->sync;
	t->sync = (struct sync_set){ 0 };
	c->dfd = t->dfd;
	c->old_size = t->committed;
	*ret = c;
	return 0;
}

/* The tiles and the checkpoint that covers them made durable together;
 * then the rename that publishes it, and its directory synced.  Touches
 * nothing but @c: it runs on any thread. */
int translog_commit_sync(struct translog_commit *c)
{
	int r = sync_all(&c->sync, c->dfd);

	if (r >= 0 && (renameat(c->dfd, "checkpoint.tmp", c->dfd, "checkpoint") < 0 ||
		       fsync(c->dfd) < 0))
		r = -errno;
	return r;
}

/* Back to the last published checkpoint after a failed commit (or to
 * @candidate, the checkpoint it signed, if that reached the disk). */
static int undo(struct translog *t, int r, const char *candidate)
{
	int r2;

	sync_drop(&t->sync);
	r2 = reload(t, candidate);
	return r2 < 0 ? r2 : r;
}

/* Partial tiles of the tiles this commit filled: the full ones replace
 * them (C2SP tlog-tiles lets a log remove them). */
static void prune(struct translog *t, uint64_t old_size)
{
	for (int level = TLOG_LEVEL_ENTRIES; level < (int)TLOG_LEVELS; level++) {
		unsigned shift = TLOG_TILE_HEIGHT * ((level < 0 ? 0 : level) + 1);

		if (shift >= 64)
			break;
		for (uint64_t i = old_size >> shift; i < t->tree.size >> shift; i++)
			remove_partials(t->dfd, level, i, 0);
	}
}

int translog_commit_end(struct translog *t, struct translog_commit *c, int r)
{
	t->committing = false;
	if (r < 0) {
		r = undo(t, r, c->note);
		commit_free(c);
		return r;
	}
	free(t->checkpoint);
	t->checkpoint = TAKE_PTR(c->note);
	t->committed = t->tree.size;
	prune(t, c->old_size);
	commit_free(c);
	return 0;
}

/* Outside a commit (at start): sign, sync, publish. */
static int publish(struct translog *t)
{
	struct translog_commit *c = NULL;
	int r = stage(t, &c);

	if (r < 0) {
		sync_drop(&t->sync);
		return r;
	}
	return translog_commit_end(t, c, translog_commit_sync(c));
}

/* The partial tiles and bundle of the tree as it is now. */
static int write_partials(struct translog *t)
{
	int r;

	for (unsigned level = 0; level < TLOG_LEVELS; level++) {
		unsigned w = tlog_tree_width(&t->tree, level);

		if (!w || t->tree.size >> (TLOG_TILE_HEIGHT * level) == t->committed >> (TLOG_TILE_HEIGHT * level))
			continue;
		r = tile_write((int)level, tlog_tree_tile_index(&t->tree, level), w,
			       t->tree.partial[level], w * TLOG_HASH_LEN, t);
		if (r < 0)
			return r;
	}
	if (!tlog_tree_width(&t->tree, 0))
		return 0;
	return tile_write(TLOG_LEVEL_ENTRIES, tlog_tree_tile_index(&t->tree, 0),
			  tlog_tree_width(&t->tree, 0), t->bundle, t->bundle_len, t);
}

int translog_commit_begin(struct translog *t, struct translog_commit **ret)
{
	int r;

	*ret = NULL;
	if (t->committing)
		return -EBUSY;
	if (!translog_pending(t))
		return 0;
	r = t->broken ? -EIO : write_partials(t);
	if (r >= 0)
		r = stage(t, ret);
	if (r < 0)
		return undo(t, r, NULL);
	t->committing = true;
	return 1;
}

int translog_commit(struct translog *t)
{
	struct translog_commit *c;
	int r = translog_commit_begin(t, &c);

	if (r <= 0)
		return r;
	return translog_commit_end(t, c, translog_commit_sync(c));
}

int translog_abort(struct translog *t)
{
	if (t->committing)
		return -EBUSY;
	return translog_pending(t) ? reload(t, NULL) : 0;
}

bool translog_pending(const struct translog *t)
{
	return t->tree.size != t->committed || t->broken;
}

int translog_append(struct translog *t, struct tlog_entry *e, uint64_t *ret_index)
{
	_cleanup_(freep) char *entry = NULL;
	uint8_t leaf[TLOG_HASH_LEN];
	size_t len;
	int r;

	if (t->committing)
		return -EBUSY;
	if (t->broken)
		return -EIO;
	e->index = t->tree.size;
	r = tlog_entry_format(e, &entry, &len);
	if (r < 0)
		return r;
	/* The bound of the copy below, checked here whatever was loaded: the
	 * buffer holds 256 entries of TLOG_MAX_ENTRY, load_bundle() at most
	 * 255 of them. */
	if (len > TLOG_MAX_ENTRY || 2 + len > TLOG_BUNDLE_MAX - t->bundle_len) {
		t->broken = true;
		return fail(t, -EOVERFLOW, "tile/entries: the bundle is past its bound");
	}
	tlog_leaf_hash(entry, len, leaf);
	t->bundle[t->bundle_len] = len >> 8;
	t->bundle[t->bundle_len + 1] = len & 0xff;
	memcpy(t->bundle + t->bundle_len + 2, entry, len);
	t->bundle_len += 2 + len;
	r = tlog_tree_append(&t->tree, leaf, on_full, t);
	if (r >= 0 && tlog_tree_width(&t->tree, 0) == 0) {
		r = tile_write(TLOG_LEVEL_ENTRIES, tlog_tree_tile_index(&t->tree, 0) - 1, 0,
			       t->bundle, t->bundle_len, t);
		t->bundle_len = 0;
	}
	if (r < 0) {
		t->broken = true; /* the commit fails and reloads */
		return r;
	}
	*ret_index = e->index;
	return 0;
}

/* The log directory, made if missing, opened once: the daemon's own, and
 * neither group nor others may write it (they could plant or swap its
 * files: private_dir_open()), and locked. */
static int open_dir(struct translog *t, const char *dir)
{
	struct stat st = { 0 };
	int fd;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return fail(t, -errno, "%s", strerror(errno));
	fd = private_dir_open(dir, &st);
	if (fd < 0)
		return fail(t, fd, "%s", private_dir_refusal(fd, &st) ?: strerror(-fd));
	t->dfd = fd;
	/* One writer: a second daemon on the same directory would append
	 * its own leaves at the same indices, a fork of its own making. */
	if (flock(fd, LOCK_EX | LOCK_NB) < 0)
		return errno == EWOULDBLOCK ? fail(t, -EBUSY, "%s", "in use by another modsignd") :
					      fail(t, -errno, "%s", strerror(errno));
	return 0;
}

int translog_open(const char *dir, EVP_PKEY *key, bool ephemeral, const char *origin,
		  struct translog **ret, char *why, size_t why_size)
{
	struct translog *t = calloc(1, sizeof(*t));
	int r;

	if (!t) {
		EVP_PKEY_free(key);
		return -ENOMEM;
	}
	*t = (struct translog){ .dfd = -1, .key = key, .ephemeral = ephemeral };
	t->origin = strdup(origin);
	t->bundle = malloc(TLOG_BUNDLE_MAX);
	r = t->origin && t->bundle ? 0 : -ENOMEM;
	if (r >= 0)
		r = note_vkey(origin, key, &t->vkey);
	if (r >= 0)
		r = open_dir(t, dir);
	if (r >= 0)
		r = reload(t, NULL);
	/* The empty tree's, so that there always is one; with a one-time
	 * key, the empty tree's again (checkpoint_open()), signed by this
	 * run's key. */
	if (r >= 0 && (!t->checkpoint || ephemeral))
		r = publish(t);
	if (r < 0) {
		if (why_size)
			snprintf(why, why_size, "%s", t->reason[0] ? t->reason : strerror(-r));
		translog_free(t);
		return r;
	}
	*ret = t;
	return 0;
}

/*
 * Whether the tile (@level, @index, @width; 0 for a full one) holds only
 * leaves of the first @size: its last hash at level L (entries: level
 * 0's) is hash @index * 256 + W of the size >> 8L that a tree of @size
 * has there, i.e. N * 256^(L+1) + W * 256^L <= @size, without the
 * overflow of 256^8.  A partial tile of a smaller size than @size is
 * covered too: an older checkpoint published it.
 */
static bool tile_covered(int level, uint64_t index, unsigned width, uint64_t size)
{
	uint64_t hashes = size >> (TLOG_TILE_HEIGHT * (unsigned)(level < 0 ? 0 : level));
	uint64_t w = width ? width : TLOG_TILE_WIDTH;

	if (index > hashes / TLOG_TILE_WIDTH)
		return false;
	return hashes - index * TLOG_TILE_WIDTH >= w;
}

int translog_read(struct translog *t, const char *path, uint64_t offset, uint8_t *buf,
		  size_t max, size_t *ret_len, uint64_t *ret_size)
{
	_cleanup_(closep) int fd = -1;
	struct stat st;
	uint64_t index;
	unsigned width;
	ssize_t n;
	int level;

	if (tlog_tile_path_parse(path, &level, &index, &width) < 0)
		return -EINVAL;
	/* Past the published checkpoint: a commit in flight wrote it, and
	 * cuts it back if its sync fails; as if it were not there yet. */
	if (!tile_covered(level, index, width, t->committed))
		return -ENOENT;
	/* Never waits on a FIFO planted at a tile: the event loop reads. */
	fd = file_open_beneath(t->dfd, path, O_RDONLY, 0);
	if (fd == -EINVAL)
		return -ENOENT; /* not a regular file: no tile */
	if (fd < 0)
		return fd;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (offset >= (uint64_t)st.st_size) {
		*ret_len = 0;
	} else {
		n = pread(fd, buf, max, (off_t)offset);
		if (n < 0)
			return -errno;
		*ret_len = (size_t)n;
	}
	*ret_size = (uint64_t)st.st_size;
	return 0;
}

const char *translog_checkpoint(const struct translog *t)
{
	return t->checkpoint;
}

const char *translog_vkey(const struct translog *t)
{
	return t->vkey;
}

uint64_t translog_size(const struct translog *t)
{
	return t->committed;
}

const char *translog_broken(const struct translog *t)
{
	if (!t->broken)
		return NULL;
	return t->reason[0] ? t->reason : "a commit failed and the log could not be read back";
}

void translog_free(struct translog *t)
{
	if (!t)
		return;
	sync_drop(&t->sync);
	if (t->dfd >= 0)
		close(t->dfd);
	EVP_PKEY_free(t->key);
	free(t->origin);
	free(t->vkey);
	free(t->checkpoint);
	free(t->candidate);
	free(t->bundle);
	free(t);
}
