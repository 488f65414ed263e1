/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_MODFILE_H
#define MODSIGN_CLIENT_MODFILE_H

/*
 * A kernel module file on disk: what is signed in it, and how to replace it
 * so that it is at every moment either untouched or completely rewritten.
 * The new content goes to an unnamed file (O_TMPFILE) in the same
 * directory, takes the old mode and owner, and is renamed over the
 * original; a crash leaves the original and no litter.
 *
 * The directory is resolved once, when the module is opened for writing
 * (or, for a copy, when the copy is prepared); every later step is
 * relative to that descriptor, so whoever can rename a directory on the
 * path cannot redirect the new file into another directory.
 *
 * A compressed module (NAME.ko.xz, .ko.zst, .ko.gz: compress.h) is
 * decompressed, once, when opened, into an unnamed file in memory, at
 * most MODFILE_MAX_DECOMPRESSED bytes; everything below reads and signs
 * that, the module the kernel sees.  Its data must be of the format its
 * name says.  Written back (in place, or to a destination whose name
 * has a compressed suffix), it is compressed again as the kernel's
 * modules_install does, into the unnamed new file, which is synced
 * before the rename: an installed module is not to be lost to a crash.
 */

#include <limits.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "digest.h"
#include "modsig.h"

/* A decompressed module larger than this is refused (-EFBIG): 8 times
 * the largest of Debian 13's (amdgpu.ko, 30 MB), and the cap on what a
 * crafted small file (a decompression bomb) makes us hold in memory. */
#define MODFILE_MAX_DECOMPRESSED (256u << 20)

struct compressor;

struct modfile {
	const char *path; /* borrowed */
	int fd;           /* the module: the file, or its decompressed copy */
	int file;         /* the file on disk (== fd unless compressed) */
	const struct compressor *comp; /* its compression; NULL: none */
	struct stat st;   /* of the file on disk */
	struct modsig_info sig; /* of the module (decompressed) */
	uint64_t in_memory; /* bytes of it held in memory: the decompressed
			     * copy's size when compressed, else 0 */
	const char *dest; /* borrowed: where modfile_commit() puts it */
	int out;          /* the unnamed new file, -1 until prepared */
	const struct compressor *out_comp; /* how it is compressed; NULL: not */
	int plain;        /* compressed out: the new module before compression
			   * (fd, reused, if compressed too), -1 if none */
	bool in_place;    /* dest is the module: keep its mode and owner */
	bool detached;    /* dest gets the signature alone (MODULE.p7s) */
	int dirfd;        /* O_PATH: dest's directory, -1 until known */
	char name[NAME_MAX + 1]; /* dest's name in dirfd */
	char why[NAME_MAX + 128]; /* a reason naming a file, see ret_err */
};

/*
 * Open @path and inspect its signature trailer.  Refuses what is not a
 * regular ELF file (or one compressed as its name says) or has a corrupt
 * trailer; corrupt, truncated or too large compressed data too.  With
 * @for_write (to replace it in place), also refuses a symbolic link and
 * a read-only file, and keeps its directory open.  On failure returns a
 * negative errno and sets *@ret_err to a reason (static text, text in
 * @ret, or NULL to use strerror).
 */
int modfile_open(const char *path, bool for_write, struct modfile *ret,
		 const char **ret_err);
void modfile_close(struct modfile *m);

/* The external mu (lib/mldsa.h) of the module without any signature, for
 * the ML-DSA key whose tr is @tr: MLDSA_MU_LEN bytes. */
int modfile_mu(struct modfile *m, const uint8_t *tr, uint8_t *out, size_t *ret_len);

/* Digest of the module without any signature. */
int modfile_digest(struct modfile *m, const struct digest *md, uint8_t *out,
		   size_t *ret_len);

/* Read the current signature (m->sig.sig_len bytes) into a new buffer. */
int modfile_read_sig(struct modfile *m, uint8_t **ret);

/*
 * Write the module body followed by @sig (NULL: no signature, i.e. strip)
 * and its trailer to @dest (NULL: replace @m in place), atomically.
 * -ESTALE if the module changed since it was opened.  On failure nothing
 * at @dest has changed, and *@ret_err is the whole reason, the step and
 * why ("cannot create a file in its directory: Permission denied"), to
 * print as it is, pointing into @m (valid until the next call on @m); or
 * NULL when strerror(-r) is all there is to say (-ESTALE among them).
 *
 * In place, the new file keeps the module's mode and owner.  A copy at
 * @dest is a new file of the caller's, mode 0666 & ~umask (what
 * scripts/sign-file's fopen "wb" creates); whatever was at @dest is
 * replaced atomically, not written through.
 *
 * The temporary name ".NAME.modsign-tmp" next to @dest is taken over only
 * from a dead writer: a regular file owned by the caller (or, in place,
 * by the module's owner, whom the writer gave it), whose flock nobody
 * holds.  A live writer's is waited for at most MODFILE_TEMP_WAIT_MS;
 * anything else there is an error (-EEXIST, -EBUSY) naming it.
 */
#define MODFILE_TEMP_WAIT_MS 10000

int modfile_write(struct modfile *m, const char *dest, const uint8_t *sig,
		  size_t sig_len, const char **ret_err);

/*
 * What can be known of @dest (NULL: in place) before its signature is
 * asked for, checked then, so that its failure costs no signature (the
 * daemon audits every one it issues): the library of the format @dest's
 * name says is loaded.  A plain module signed to NAME.ko.xz would
 * otherwise load liblzma only in modfile_commit(), after the daemon
 * signed.  The rest of modfile_prepare() is made while the daemon signs,
 * and fails after it.  Errors as modfile_write().
 */
int modfile_check_dest(struct modfile *m, const char *dest, const char **ret_err);

/*
 * modfile_write() in two steps, so that a signer can do the first while
 * the daemon signs: prepare the unnamed new file (body, mode, owner) in
 * @dest's directory, then commit it (signature and trailer, the check
 * that the module did not change, the rename).  modfile_close() without a
 * commit drops the new file.  Errors as modfile_write().
 */
int modfile_prepare(struct modfile *m, const char *dest, const char **ret_err);
int modfile_commit(struct modfile *m, const uint8_t *sig, size_t sig_len,
		   const char **ret_err);

/*
 * Write @sig alone (the raw PKCS#7 DER, what sign-file -d writes to
 * MODULE.p7s) to the file @name in the directory @dirfd (borrowed, which
 * the caller resolved: nothing here is reached by a path), atomically, by
 * the same temporary-name-and-rename path as modfile_write(), as the
 * caller's new file; @m (open, not changed) is only checked to be
 * unchanged.  Errors as modfile_write().
 */
int modfile_write_detached_at(struct modfile *m, int dirfd, const char *name,
			      const uint8_t *sig, size_t sig_len, const char **ret_err);

/*
 * The directory of @path, opened O_PATH now and never resolved again, and
 * in @name (of @size bytes) the last component.  Links on the way are
 * followed: what the path names when asked is what is used.  Returns the
 * descriptor or -errno (-EISDIR: @path ends in '/').
 */
int modfile_open_dir(const char *path, char *name, size_t size);

#endif
