/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "compress.h"
#include "mldsa.h"
#include "modfile.h"
#include "util.h"

_printf_(3, 4) static int say(struct modfile *m, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(m->why, sizeof(m->why), fmt, ap);
	va_end(ap);
	return r;
}

/* Step @step failed with @r: the whole reason, "STEP: strerror", in
 * m->why and *@ret_err (modfile.h: a reason is complete, its caller adds
 * nothing to it). */
static int step_failed(struct modfile *m, int r, const char *step, const char **ret_err)
{
	*ret_err = m->why;
	return say(m, r, "%s: %s", step, strerror(-r));
}

/* The body must be exactly the ELF image: more is a damaged or truncated
 * signature (its magic gone, so it would be taken for module data and a
 * new signature stacked on top), less is a truncated module. */
static int check_elf_end(struct modfile *m, uint64_t elf_end, const char **ret_err)
{
	if (m->sig.body_len == elf_end)
		return 0;
	*ret_err = m->sig.body_len > elf_end ?
			   "data after the ELF image: truncated or corrupt signature trailer" :
			   "truncated module: shorter than its ELF headers say";
	modfile_close(m);
	return -EBADMSG;
}

/* Split @path into its directory (a new string) and its last component,
 * which must fit @size; "m.ko" is in ".", "/m.ko" in "/". */
static int split_path(const char *path, char **ret_dir, char *name, size_t size)
{
	const char *slash = strrchr(path, '/');
	const char *base = slash ? slash + 1 : path;
	size_t n = strlen(base);

	if (n == 0)
		return -EISDIR;
	if (n >= size)
		return -ENAMETOOLONG;
	memcpy(name, base, n + 1);
	*ret_dir = !slash ? strdup(".") :
			    strndup(path, slash == path ? 1 : (size_t)(slash - path));
	return *ret_dir ? 0 : -ENOMEM;
}

/*
 * The directory of @path, resolved now and never again, and the name in
 * it.  Symbolic links on the way are followed (/lib is one on merged-/usr
 * systems): what the path named when we were asked is what we sign; it is
 * a rename after this point that must not redirect us.
 */
int modfile_open_dir(const char *path, char *name, size_t size)
{
	_cleanup_(freep) char *dir = NULL;
	int r = split_path(path, &dir, name, size), fd;

	if (r < 0)
		return r;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* How a module is opened: O_NONBLOCK so that a FIFO (or a device) put at
 * its name is refused as "not a regular file" instead of hanging the open
 * for ever; it changes nothing for the regular file that is read. */
#define MODFILE_OPEN_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

/* In place: the directory, then the module in it, never through a link. */
static int open_in_dir(const char *path, struct modfile *m)
{
	int dfd = modfile_open_dir(path, m->name, sizeof(m->name)), fd;

	if (dfd < 0)
		return dfd;
	fd = openat(dfd, m->name, MODFILE_OPEN_FLAGS | O_NOFOLLOW);
	if (fd < 0) {
		fd = -errno;
		close(dfd);
		return fd;
	}
	m->dirfd = dfd;
	return fd;
}

/*
 * The format @head (@len bytes of the file's start) is in must be the
 * one its name says: kmod picks a decoder by the data, the kernel by its
 * configuration, and a re-sign writes the format of the name; a name
 * that says otherwise is refused rather than guessed at.
 */
static int check_format(struct modfile *m, const uint8_t *head, size_t len,
			const char **ret_err)
{
	const struct compressor *by_data = compress_by_magic(head, len);
	const struct compressor *by_name = compress_by_suffix(m->path);

	m->comp = by_data;
	if (by_data == by_name)
		return 0;
	if (by_data)
		say(m, 0, "%s data, but its name does not end in %s", by_data->name,
		    by_data->suffix);
	else
		say(m, 0, "not %s data, though its name ends in %s", by_name->name,
		    by_name->suffix);
	*ret_err = m->why;
	return -ENOEXEC;
}

/* A compressed module, decoded into an unnamed file in memory that
 * becomes m->fd (m->file stays the file on disk). */
static int decompress(struct modfile *m, const char **ret_err)
{
	char buf[256]; /* compress_strerror(): a library that would not load, named */
	int fd = memfd_create("modsign-module", MFD_CLOEXEC), r;

	if (fd < 0)
		return -errno;
	r = m->comp->decode(m->file, fd, MODFILE_MAX_DECOMPRESSED);
	if (r < 0) {
		close(fd);
		if (r == -EFBIG)
			say(m, r, "%s data decompresses to more than %u MiB: refused",
			    m->comp->name, MODFILE_MAX_DECOMPRESSED >> 20);
		else
			say(m, r, "%s", compress_strerror(m->comp, r, buf, sizeof(buf)));
		*ret_err = m->why;
		return r;
	}
	m->fd = fd;
	return 0;
}

/* What the module is: the file, or its decompressed copy; its size in
 * *@ret_size. */
static int open_content(struct modfile *m, off_t *ret_size, const char **ret_err)
{
	uint8_t head[MODSIG_ELF_HDR_LEN];
	struct stat st;
	ssize_t n = pread(m->file, head, sizeof(head), 0);
	int r;

	if (n < 0)
		return -errno;
	r = check_format(m, head, (size_t)n, ret_err);
	if (r < 0 || !m->comp) {
		*ret_size = m->st.st_size;
		return r;
	}
	r = decompress(m, ret_err);
	if (r < 0)
		return r;
	if (fstat(m->fd, &st) < 0)
		return -errno;
	*ret_size = st.st_size;
	m->in_memory = (uint64_t)st.st_size;
	return 0;
}

int modfile_open(const char *path, bool for_write, struct modfile *ret,
		 const char **ret_err)
{
	uint8_t tail[MODSIG_TRAILER_LEN], head[MODSIG_ELF_HDR_LEN];
	uint64_t elf_end;
	size_t tail_len;
	off_t size = 0;
	ssize_t n;
	int r;

	*ret = (struct modfile){ .path = path, .fd = -1, .file = -1, .out = -1,
				 .plain = -1, .dirfd = -1 };
	*ret_err = NULL;
	if (for_write)
		ret->fd = open_in_dir(path, ret);
	else if ((ret->fd = open(path, MODFILE_OPEN_FLAGS)) < 0)
		ret->fd = -errno;
	if (ret->fd < 0) {
		r = ret->fd;
		ret->fd = -1;
		if (r == -ELOOP)
			*ret_err = "is a symbolic link (sign its target)";
		return r;
	}
	ret->file = ret->fd;
	if (fstat(ret->fd, &ret->st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISREG(ret->st.st_mode)) {
		r = -EINVAL;
		*ret_err = "not a regular file";
		goto fail;
	}
	if (for_write && (!(ret->st.st_mode & 0222) ||
			  faccessat(ret->dirfd, ret->name, W_OK, AT_EACCESS) < 0)) {
		r = -EACCES;
		*ret_err = "file is read-only";
		goto fail;
	}
	r = open_content(ret, &size, ret_err);
	if (r < 0)
		goto fail;
	n = pread(ret->fd, head, sizeof(head), 0);
	if (n < 0 || modsig_elf_end(head, (size_t)n, &elf_end) < 0) {
		r = -ENOEXEC;
		*ret_err = ret->comp ? "not an ELF file once decompressed" :
				       "not an ELF file, nor a compressed module";
		goto fail;
	}
	tail_len = (size_t)size < sizeof(tail) ? (size_t)size : sizeof(tail);
	n = pread(ret->fd, tail, tail_len, size - (off_t)tail_len);
	if (n != (ssize_t)tail_len) {
		r = n < 0 ? -errno : -EIO;
		goto fail;
	}
	r = modsig_parse(tail, tail_len, (size_t)size, &ret->sig);
	if (r < 0) {
		*ret_err = r == -ENOPKG ? "signature is not PKCS#7" :
					  "corrupt signature trailer";
		goto fail;
	}
	return check_elf_end(ret, elf_end, ret_err);
fail:
	modfile_close(ret);
	return r;
}

void modfile_close(struct modfile *m)
{
	if (m->fd < 0) /* never opened, or closed already */
		return;
	if (m->file >= 0 && m->file != m->fd)
		close(m->file);
	if (m->plain >= 0 && m->plain != m->fd)
		close(m->plain);
	close(m->fd);
	if (m->out >= 0) /* the new file; unnamed, so dropped, unless committed */
		close(m->out);
	if (m->dirfd >= 0)
		close(m->dirfd);
	m->fd = m->file = m->plain = m->out = m->dirfd = -1;
	m->in_memory = 0;
}

int modfile_digest(struct modfile *m, const struct digest *md, uint8_t *out,
		   size_t *ret_len)
{
	return digest_fd(m->fd, m->sig.body_len, md, out, ret_len);
}

int modfile_mu(struct modfile *m, const uint8_t *tr, uint8_t *out, size_t *ret_len)
{
	int r = mldsa_mu_fd(tr, m->fd, m->sig.body_len, out);

	if (r == 0)
		*ret_len = MLDSA_MU_LEN;
	return r;
}

int modfile_read_sig(struct modfile *m, uint8_t **ret)
{
	_cleanup_(freep) uint8_t *buf = NULL;
	ssize_t n;

	if (m->sig.sig_len == 0)
		return -ENODATA;
	if (m->sig.sig_len > MODSIG_MAX_SIG)
		return -EFBIG;
	buf = malloc(m->sig.sig_len);
	if (!buf)
		return -ENOMEM;
	n = pread(m->fd, buf, m->sig.sig_len, (off_t)m->sig.sig_off);
	if (n < 0)
		return -errno;
	if ((size_t)n != m->sig.sig_len)
		return -EIO;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* copy_file_range shares extents where the filesystem can; fall back to
 * plain reads and writes where it cannot. */
static int copy_body(int in, int out, size_t len)
{
	char buf[64 * 1024];
	loff_t off = 0;

	while ((size_t)off < len) {
		ssize_t n = copy_file_range(in, &off, out, NULL, len - (size_t)off, 0);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
			      errno == EOPNOTSUPP))
			break;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ESTALE; /* shrank under us */
	}
	while ((size_t)off < len) {
		size_t want = len - (size_t)off < sizeof(buf) ? len - (size_t)off : sizeof(buf);
		ssize_t n = pread(in, buf, want, off);
		int r;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -ESTALE;
		r = write_full(out, buf, (size_t)n);
		if (r < 0)
			return r;
		off += n;
	}
	return 0;
}

static int write_signature(int out, const uint8_t *sig, size_t sig_len)
{
	uint8_t trailer[MODSIG_TRAILER_LEN];
	int r;

	r = modsig_trailer(sig_len, trailer);
	if (r < 0)
		return r;
	r = write_full(out, sig, sig_len);
	if (r < 0)
		return r;
	return write_full(out, trailer, sizeof(trailer));
}

/* The module we read is as we read it and, signed in place, still the
 * file at its name in the directory we opened: one renamed over it
 * meanwhile (a rebuild) must not be replaced by a signed copy of the old
 * body. */
static bool unchanged(const struct modfile *m)
{
	struct stat now, named;

	if (fstat(m->file, &now) < 0 || now.st_size != m->st.st_size ||
	    now.st_mtim.tv_sec != m->st.st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != m->st.st_mtim.tv_nsec)
		return false;
	if (!m->in_place)
		return true;
	return fstatat(m->dirfd, m->name, &named, AT_SYMLINK_NOFOLLOW) == 0 &&
	       named.st_dev == now.st_dev && named.st_ino == now.st_ino;
}

/* flock(LOCK_EX), but -EBUSY once @deadline (now_ms()) has passed: a
 * writer stopped while holding it must not stop us for ever. */
static int lock_until(int fd, uint64_t deadline)
{
	for (long ms = 1;; ms = ms < 64 ? ms * 2 : ms) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (now_ms() >= deadline)
			return -EBUSY;
		nanosleep(&(struct timespec){ .tv_nsec = ms * 1000000 }, NULL);
	}
}

/* Whom our own temporary file would belong to when linked: the caller,
 * or in place the module's owner (modfile_prepare() gives it to them). */
static bool ours(const struct modfile *m, uid_t uid)
{
	return uid == geteuid() || (m->in_place && uid == m->st.st_uid);
}

/*
 * Something is at the temporary name @tmp.  A dead writer's leftover is
 * removed (0); a live writer's, mid-commit, is waited for until it renames
 * it away (0; waited for until @deadline, then -EBUSY); anything else is
 * not ours to remove or to wait for.  Opened without following a link and
 * without blocking, so that a FIFO or a lease cannot hold us either.
 */
static int clear_temp(struct modfile *m, const char *tmp, uint64_t deadline)
{
	_cleanup_(closep) int other = -1;
	struct stat held, now;
	int r;

	other = openat(m->dirfd, tmp,
		       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (other < 0 && errno == ENOENT) /* renamed away meanwhile */
		return 0;
	if (other < 0 && errno != ELOOP && errno != EWOULDBLOCK)
		return say(m, -errno, "cannot open %s next to it: %s", tmp, strerror(errno));
	if (other < 0 || fstat(other, &held) < 0 || !S_ISREG(held.st_mode) ||
	    !ours(m, held.st_uid))
		return say(m, -EEXIST,
			   "%s next to it is in the way: not a regular file of the signer's (remove it)",
			   tmp);
	r = lock_until(other, deadline);
	if (r < 0)
		return say(m, r, "%s next to it is still locked by another signer after %d s",
			   tmp, MODFILE_TEMP_WAIT_MS / 1000);
	if (fstatat(m->dirfd, tmp, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    held.st_dev == now.st_dev && held.st_ino == now.st_ino)
		unlinkat(m->dirfd, tmp, 0); /* still the dead writer's: ours now */
	return 0;
}

/* Give the unnamed file @fd the name @tmp in @dirfd.  AT_EMPTY_PATH needs
 * CAP_DAC_READ_SEARCH; without it, the magic link in /proc does. */
static int link_fd(int fd, int dirfd, const char *tmp)
{
	char proc[64];

	if (linkat(fd, "", dirfd, tmp, AT_EMPTY_PATH) == 0)
		return 0;
	if (errno != ENOENT && errno != EPERM)
		return -errno;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, dirfd, tmp, AT_SYMLINK_FOLLOW) < 0 ? -errno : 0;
}

/*
 * A name next to the destination for the new file, which O_TMPFILE
 * leaves without one, so that it can be renamed over it:
 * ".NAME.modsign-tmp".
 *
 * Linux cannot link an unnamed file over an existing name, so a SIGKILL
 * between this link and the rename leaves that name behind.  Its writer
 * holds an flock on the file from modfile_prepare() until it exits, so a
 * later signer of the same module can tell: a name nobody holds belongs
 * to a dead writer and is removed; one that is held is another signer's,
 * mid-commit, whose rename we wait for (see clear_temp()).
 */
static int link_temp(struct modfile *m, char *tmp, size_t size)
{
	uint64_t deadline = now_ms() + MODFILE_TEMP_WAIT_MS;
	int r;

	if ((size_t)snprintf(tmp, size, ".%s.modsign-tmp", m->name) >= size)
		return -ENAMETOOLONG;
	for (int tries = 0; tries < 16; tries++) {
		r = link_fd(m->out, m->dirfd, tmp);
		if (r != -EEXIST)
			return r < 0 ? say(m, r, "cannot link the new module as %s: %s", tmp,
					   strerror(-r)) :
				       0;
		r = clear_temp(m, tmp, deadline);
		if (r < 0)
			return r;
	}
	return say(m, -EEXIST, "%s next to it keeps coming back", tmp);
}

/* The name of group @gid, or its number, for a message. */
static const char *group_name(gid_t gid, char *buf, size_t size)
{
	struct group *g = getgrgid(gid);

	if (g)
		snprintf(buf, size, "'%s'", g->gr_name);
	else
		snprintf(buf, size, "%u", (unsigned)gid);
	return buf;
}

/*
 * In place, the new file takes the module's owner and group.  Only root
 * gives a file to another user, and a user gives one only to a group
 * they are in; sign-file, which rewrites the file itself, needs neither.
 * The usual case is the caller's own module in a group not theirs (root
 * copied it in and changed only its owner): the owner is kept, and the
 * new file stays in the caller's group when that changes nobody's
 * access, i.e. the mode gives the group exactly what it gives others (0644,
 * 0755).  Otherwise it is refused, saying which cannot be kept and what
 * to do: the rename stays atomic, and no one's access changes silently.
 */
static int keep_owner(struct modfile *m, const char **ret_err)
{
	mode_t mode = m->st.st_mode;
	struct stat now;
	char g[64];

	/* What the new file was born with: not always our egid (a
	 * set-group-ID directory gives its own group). */
	if (fstat(m->out, &now) < 0)
		return step_failed(m, -errno, "cannot keep its owner and group", ret_err);
	if (m->st.st_uid == now.st_uid && m->st.st_gid == now.st_gid)
		return 0;
	if (fchown(m->out, m->st.st_uid, m->st.st_gid) == 0)
		return 0;
	*ret_err = m->why;
	if (errno != EPERM)
		return step_failed(m, -errno, "cannot keep its owner and group", ret_err);
	if (m->st.st_uid != now.st_uid)
		return say(m, -EPERM,
			   "cannot keep its owner (uid %u): only root can give a file to "
			   "another user; sign it as root or as uid %u",
			   (unsigned)m->st.st_uid, (unsigned)m->st.st_uid);
	/* Equal, not merely no more: a group with less than others (0604)
	 * is a deny list, and moving the file out of it would let that
	 * group in. */
	if (((mode >> 3) & 07) == (mode & 07))
		return 0; /* the group has what others have: nothing changes */
	return say(m, -EPERM,
		   "cannot keep its group %s (you are not in it; the owner is kept), and its "
		   "mode %04o gives that group %s than others: chgrp it to a group of "
		   "yours, or sign it as root",
		   group_name(m->st.st_gid, g, sizeof(g)), (unsigned)(mode & 07777),
		   (((mode >> 3) & 07) & ~(mode & 07)) ? "more" : "less");
}

/* Where the new module is built before it is compressed into m->out:
 * the decompressed module itself (ours, in memory: its body is already
 * there), or a new file in memory with the plain module's body. */
static int prepare_plain(struct modfile *m)
{
	if (m->comp) {
		m->plain = m->fd;
		return 0;
	}
	m->plain = memfd_create("modsign-module", MFD_CLOEXEC);
	if (m->plain < 0)
		return -errno;
	return copy_body(m->fd, m->plain, m->sig.body_len);
}

/* modfile_prepare() once m->dirfd and m->name say where the new file
 * goes. */
static int prepare_in_dir(struct modfile *m, const char **ret_err)
{
	int r;

	/* A copy is the caller's new file, as sign-file's fopen "wb" makes
	 * it: 0666 & ~umask.  Only in place are mode and owner kept. */
	m->out = openat(m->dirfd, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC,
			m->in_place ? 0600 : 0666);
	if (m->out < 0)
		return step_failed(m, -errno, "cannot create a file in its directory", ret_err);
	/* Held until we exit: see link_temp(). */
	if (flock(m->out, LOCK_EX) < 0)
		return step_failed(m, -errno, "cannot lock the new module", ret_err);
	m->out_comp = m->detached ? NULL : compress_by_suffix(m->name);
	if (m->detached)
		r = 0;
	else if (m->out_comp)
		r = prepare_plain(m);
	else
		r = copy_body(m->fd, m->out, m->sig.body_len);
	if (r == -ESTALE)
		return r; /* *@ret_err NULL: the caller says it changed */
	if (r < 0)
		return step_failed(m, r, "cannot write the new module", ret_err);
	if (!m->in_place)
		return 0;
	if (fchmod(m->out, m->st.st_mode & 07777) < 0)
		return step_failed(m, -errno, "cannot set the mode", ret_err);
	return keep_owner(m, ret_err);
}

/*
 * The new module, complete in m->plain, compressed into m->out and
 * synced: an installed module replaced by one a crash left empty would
 * not load.  m->plain, when it is m->fd, is the decompressed module
 * rewritten here: nothing reads it after a commit.
 */
static int compress_out(struct modfile *m, const uint8_t *sig, size_t sig_len,
			const char **ret_err)
{
	char buf[256]; /* compress_strerror(): a library that would not load, named */
	size_t len = m->sig.body_len + (sig ? sig_len + MODSIG_TRAILER_LEN : 0);
	int r;

	if (ftruncate(m->plain, (off_t)m->sig.body_len) < 0 ||
	    lseek(m->plain, (off_t)m->sig.body_len, SEEK_SET) < 0)
		return step_failed(m, -errno, "cannot write the new module", ret_err);
	r = sig ? write_signature(m->plain, sig, sig_len) : 0;
	if (r < 0)
		return step_failed(m, r, "cannot write the new module", ret_err);
	r = m->out_comp->encode(m->plain, len, m->out);
	if (r < 0) {
		*ret_err = m->why;
		return say(m, r, "cannot compress the new module: %s",
			   compress_strerror(m->out_comp, r, buf, sizeof(buf)));
	}
	if (fdatasync(m->out) < 0)
		return step_failed(m, -errno, "cannot sync the new module", ret_err);
	return 0;
}

int modfile_check_dest(struct modfile *m, const char *dest, const char **ret_err)
{
	char buf[256]; /* compress_strerror(): a library that would not load, named */
	const struct compressor *c = compress_by_suffix(dest ?: m->path);
	int r = c ? compress_load(c) : 0;

	*ret_err = NULL;
	if (r < 0) {
		*ret_err = m->why;
		say(m, r, "%s", compress_strerror(c, r, buf, sizeof(buf)));
	}
	return r;
}

int modfile_prepare(struct modfile *m, const char *dest, const char **ret_err)
{
	int r;

	*ret_err = NULL;
	m->in_place = !dest;
	m->dest = dest ?: m->path;
	if (!m->in_place) {
		if (m->dirfd >= 0)
			close(m->dirfd);
		m->dirfd = modfile_open_dir(dest, m->name, sizeof(m->name));
		if (m->dirfd < 0) {
			r = m->dirfd;
			m->dirfd = -1;
			return step_failed(m, r, "cannot open its directory", ret_err);
		}
	} else if (m->dirfd < 0) {
		return -EBADF; /* not opened for writing */
	}
	return prepare_in_dir(m, ret_err);
}

int modfile_commit(struct modfile *m, const uint8_t *sig, size_t sig_len,
		   const char **ret_err)
{
	char tmp[NAME_MAX + 1];
	int r;

	*ret_err = NULL;
	m->why[0] = '\0';
	if (m->out < 0)
		return -EBADF;
	if (m->out_comp) {
		r = compress_out(m, sig, sig_len, ret_err);
		if (r < 0)
			return r;
	} else if (sig) {
		r = m->detached ? write_full(m->out, sig, sig_len) :
				  write_signature(m->out, sig, sig_len);
		if (r < 0)
			return step_failed(m, r, "cannot write the new module", ret_err);
	}
	if (!unchanged(m))
		return -ESTALE;
	r = link_temp(m, tmp, sizeof(tmp));
	if (r < 0 && !m->why[0])
		return step_failed(m, r, "cannot link the new module", ret_err);
	if (r < 0)
		return (*ret_err = m->why), r;
	/* Both names in the directory we opened: a rename of a directory on
	 * the path meanwhile changes nothing here. */
	if (renameat(m->dirfd, tmp, m->dirfd, m->name) < 0) {
		r = -errno;
		unlinkat(m->dirfd, tmp, 0);
		return step_failed(m, r, "cannot rename the new module into place", ret_err);
	}
	return 0;
}

int modfile_write(struct modfile *m, const char *dest, const uint8_t *sig,
		  size_t sig_len, const char **ret_err)
{
	int r = modfile_prepare(m, dest, ret_err);

	return r < 0 ? r : modfile_commit(m, sig, sig_len, ret_err);
}

int modfile_write_detached_at(struct modfile *m, int dirfd, const char *name,
			      const uint8_t *sig, size_t sig_len, const char **ret_err)
{
	/* A second writer on the same open module: its descriptor is
	 * borrowed (unchanged() checks it), and so is @dirfd; the rest is
	 * this writer's. */
	struct modfile d = { .path = m->path, .fd = m->fd, .file = m->file, .st = m->st,
			     .sig = m->sig, .dest = name, .out = -1, .plain = -1,
			     .dirfd = dirfd, .detached = true };
	int r;

	*ret_err = NULL;
	if (!sig)
		return -EINVAL;
	if ((size_t)snprintf(d.name, sizeof(d.name), "%s", name) >= sizeof(d.name))
		return -ENAMETOOLONG;
	r = prepare_in_dir(&d, ret_err);
	if (r >= 0)
		r = modfile_commit(&d, sig, sig_len, ret_err);
	if (r < 0 && *ret_err == d.why) { /* d's reason outlives d in m */
		memcpy(m->why, d.why, sizeof(m->why));
		*ret_err = m->why;
	}
	/* Not modfile_close(): m's descriptor and @dirfd stay open. */
	if (d.out >= 0)
		close(d.out);
	return r;
}
