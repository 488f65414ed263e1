/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "modfile.h"
#include "util.h"

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

int modfile_open(const char *path, bool for_write, struct modfile *ret,
		 const char **ret_err)
{
	uint8_t tail[MODSIG_TRAILER_LEN], head[MODSIG_ELF_HDR_LEN];
	uint64_t elf_end;
	size_t tail_len;
	ssize_t n;
	int r;

	*ret = (struct modfile){ .path = path, .fd = -1, .out = -1 };
	*ret_err = NULL;
	ret->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | (for_write ? O_NOFOLLOW : 0));
	if (ret->fd < 0) {
		r = -errno;
		if (r == -ELOOP)
			*ret_err = "is a symbolic link (sign its target)";
		return r;
	}
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
			  faccessat(AT_FDCWD, path, W_OK, AT_EACCESS) < 0)) {
		r = -EACCES;
		*ret_err = "file is read-only";
		goto fail;
	}
	n = pread(ret->fd, head, sizeof(head), 0);
	if (n < 0 || modsig_elf_end(head, (size_t)n, &elf_end) < 0) {
		r = -ENOEXEC;
		*ret_err = "not an ELF file (a compressed module? decompress it first)";
		goto fail;
	}
	tail_len = (size_t)ret->st.st_size < sizeof(tail) ? (size_t)ret->st.st_size :
							    sizeof(tail);
	n = pread(ret->fd, tail, tail_len, ret->st.st_size - (off_t)tail_len);
	if (n != (ssize_t)tail_len) {
		r = n < 0 ? -errno : -EIO;
		goto fail;
	}
	r = modsig_parse(tail, tail_len, (size_t)ret->st.st_size, &ret->sig);
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
	close(m->fd);
	if (m->out >= 0) /* the new file; unnamed, so dropped, unless committed */
		close(m->out);
	m->fd = m->out = -1;
}

int modfile_digest(struct modfile *m, const struct digest *md, uint8_t *out,
		   size_t *ret_len)
{
	return digest_fd(m->fd, m->sig.body_len, md, out, ret_len);
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
 * file at its name: one renamed over it meanwhile (a rebuild) must not be
 * replaced by a signed copy of the old body. */
static bool unchanged(const struct modfile *m)
{
	struct stat now, named;

	if (fstat(m->fd, &now) < 0 || now.st_size != m->st.st_size ||
	    now.st_mtim.tv_sec != m->st.st_mtim.tv_sec ||
	    now.st_mtim.tv_nsec != m->st.st_mtim.tv_nsec)
		return false;
	if (m->dest != m->path)
		return true;
	return lstat(m->path, &named) == 0 && named.st_dev == now.st_dev &&
	       named.st_ino == now.st_ino;
}

/*
 * A name next to @dest for the new file, which O_TMPFILE leaves without
 * one, so that it can be renamed over @dest: ".BASE.modsign-tmp".
 *
 * Linux cannot link an unnamed file over an existing name, so a SIGKILL
 * between this link and the rename leaves that name behind.  Its writer
 * holds an flock on the file from modfile_prepare() until it exits, so a
 * later signer of the same module can tell: a name nobody holds belongs
 * to a dead writer and is removed; one that is held is another signer's,
 * mid-commit, whose rename we wait for.
 */
static int link_temp(int fd, const char *dir, const char *base, char *name,
		     size_t size)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	snprintf(name, size, "%s/.%s.modsign-tmp", dir, base);
	for (int tries = 0; tries < 16; tries++) {
		struct stat held, now;
		int other;

		if (linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW) == 0)
			return 0;
		if (errno != EEXIST)
			return -errno;
		other = open(name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
		if (other < 0) {
			if (errno == ENOENT) /* renamed away meanwhile */
				continue;
			return -errno;
		}
		/* Blocks while a live writer commits; at once if it died. */
		if (flock(other, LOCK_EX) == 0 && fstat(other, &held) == 0 &&
		    lstat(name, &now) == 0 && held.st_dev == now.st_dev &&
		    held.st_ino == now.st_ino)
			unlink(name); /* still the dead writer's: ours now */
		close(other);
	}
	return -EEXIST;
}

static int open_temp(const char *dir)
{
	int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);

	return fd < 0 ? -errno : fd;
}

int modfile_prepare(struct modfile *m, const char *dest, const char **ret_err)
{
	_cleanup_(freep) char *d = NULL;
	int r;

	*ret_err = NULL;
	m->dest = dest ?: m->path;
	d = strdup(m->dest);
	if (!d)
		return -ENOMEM;
	m->out = open_temp(dirname(d));
	if (m->out < 0) {
		r = m->out;
		m->out = -1;
		return (*ret_err = "cannot create a file in its directory"), r;
	}
	/* Held until we exit: see link_temp(). */
	if (flock(m->out, LOCK_EX) < 0)
		return (*ret_err = "cannot lock the new module"), -errno;
	r = copy_body(m->fd, m->out, m->sig.body_len);
	if (r < 0)
		return (*ret_err = r == -ESTALE ? NULL : "cannot write the new module"), r;
	if (fchmod(m->out, m->st.st_mode & 07777) < 0)
		return (*ret_err = "cannot set the mode"), -errno;
	if ((m->st.st_uid != geteuid() || m->st.st_gid != getegid()) &&
	    fchown(m->out, m->st.st_uid, m->st.st_gid) < 0)
		return (*ret_err = "cannot keep the owner"), -errno;
	return 0;
}

int modfile_commit(struct modfile *m, const uint8_t *sig, size_t sig_len,
		   const char **ret_err)
{
	_cleanup_(freep) char *d1 = NULL, *d2 = NULL;
	char tmp[4096];
	int r;

	*ret_err = NULL;
	if (m->out < 0)
		return -EBADF;
	if (sig) {
		r = write_signature(m->out, sig, sig_len);
		if (r < 0)
			return (*ret_err = "cannot write the new module"), r;
	}
	if (!unchanged(m))
		return -ESTALE;
	d1 = strdup(m->dest);
	d2 = strdup(m->dest);
	if (!d1 || !d2)
		return -ENOMEM;
	r = link_temp(m->out, dirname(d1), basename(d2), tmp, sizeof(tmp));
	if (r < 0)
		return (*ret_err = "cannot link the new module"), r;
	if (rename(tmp, m->dest) < 0) {
		r = -errno;
		unlink(tmp);
		return (*ret_err = "cannot rename the new module into place"), r;
	}
	return 0;
}

int modfile_write(struct modfile *m, const char *dest, const uint8_t *sig,
		  size_t sig_len, const char **ret_err)
{
	int r = modfile_prepare(m, dest, ret_err);

	return r < 0 ? r : modfile_commit(m, sig, sig_len, ret_err);
}
