/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_COMPRESS_H
#define MODSIGN_CLIENT_COMPRESS_H

/*
 * The compressions an installed module may have (Debian 13 ships .ko.xz;
 * CONFIG_MODULE_COMPRESS_{XZ,ZSTD,GZIP}): one row each, found by the
 * magic its data starts with or by the suffix of its name.  Encoding
 * makes what the kernel's `make modules_install` makes
 * (scripts/Makefile.modinst, the same in 6.1, 6.12 and 7.3):
 *
 *   xz    xz --check=crc32 --lzma2=dict=1MiB   (preset 6, one stream)
 *   zstd  zstd -q                              (level 3, checksum, size)
 *   gzip  gzip -n                              (level 6, no name, mtime 0)
 *
 * with Debian's liblzma, libzstd and zlib, not the tools: see
 * compress.c for the output compared with theirs.
 *
 * Decoding takes exactly one stream (frame, member) and nothing after
 * it: trailing data, a second stream or padding is refused as corrupt,
 * since whatever follows would be dropped by a re-sign and is not what
 * the kernel checks.  Nothing here logs; errors are negative errno:
 *   -EBADMSG  corrupt data (or data after the stream)
 *   -ENODATA  truncated: the input ends inside the stream
 *   -EFBIG    decodes to more than the caller's @max bytes
 *   -E2BIG    needs more memory to decode than COMPRESS_MAX_MEM
 *   -ESTALE   the input to encode shrank under us
 *   -ELIBACC  the format's library (liblzma, libzstd, zlib: loaded on
 *             first use, lib/dlopen.h) cannot be loaded
 * and read/write/allocation errors.  compress_strerror() words them.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Decoder memory allowed (xz's memlimit, zstd's window): xz -9e needs
 * 65 MiB, zstd's default window limit is 128 MiB (2^27). */
#define COMPRESS_MAX_MEM (128u << 20)

struct dlopen_lib;

struct compressor {
	const char *name;      /* "xz": for messages */
	const char *suffix;    /* ".xz": a module NAME.ko.xz */
	const uint8_t *magic;  /* what its data starts with */
	size_t magic_len;
	/* The stream in @in (read with pread from offset 0 to its end) into
	 * @out (written at its offset), at most @max bytes; 0 or -errno. */
	int (*decode)(int in, int out, uint64_t max);
	/* The first @len bytes of @in (pread from 0) encoded into @out. */
	int (*encode)(int in, uint64_t len, int out);
	struct dlopen_lib *lib; /* the library both use: compress_load() */
};

/* The row whose magic @head (@len bytes of a file's start) begins with;
 * NULL: none (an ELF module, or anything else). */
const struct compressor *compress_by_magic(const uint8_t *head, size_t len);

/* The row whose suffix @name ends with; NULL: none. */
const struct compressor *compress_by_suffix(const char *name);

/* Whether @name is a module's: NAME.ko, or NAME.ko plus a row's suffix. */
bool compress_is_module_name(const char *name);

/*
 * Load @c's library now, as its first decode or encode would: 0, or
 * -ELIBACC (compress_strerror() names the file and why).  A writer that
 * is to encode only after something it cannot take back (a signature
 * the daemon issues and audits) loads it first, so that a library that
 * cannot load fails before, not after.
 */
int compress_load(const struct compressor *c);

/* @r (a decode's or encode's) in words, naming @c's format. */
const char *compress_strerror(const struct compressor *c, int r, char *buf, size_t size);

#endif
