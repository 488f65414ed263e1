/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_UTIL_H
#define MODSIGN_UTIL_H

/*
 * Small helpers shared by modsignd and modsign-client.  Nothing here logs;
 * every function returns 0 or a negative errno.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "macro.h"

/* Zero a buffer that held a secret in a way the compiler may not elide. */
void memzero_explicit(void *p, size_t n);

/* Wipe and free a NUL-terminated secret; accepts NULL. */
void erase_and_free(char *s);
static inline void erase_and_freep(char **s)
{
	erase_and_free(*s);
}

/* Lower-case hex of @len bytes into a new string in *@ret. */
int hex_encode(const uint8_t *buf, size_t len, char **ret);
/* Parse exactly @max or fewer bytes of hex; -EINVAL on odd length or non-hex. */
int hex_decode(const char *s, uint8_t *out, size_t max, size_t *ret_len);

/* Standard base64 (RFC 4648, padded) of @len bytes into a new string. */
int base64_encode(const uint8_t *buf, size_t len, char **ret);
/* Decode into a new buffer; -EINVAL on malformed input. */
int base64_decode(const char *s, uint8_t **ret, size_t *ret_len);

/* Loop over short reads/writes and EINTR. read_full returns bytes read (short only at EOF). */
ssize_t read_full(int fd, void *buf, size_t len);
int write_full(int fd, const void *buf, size_t len);

/*
 * Make room in a receive buffer holding @len bytes: when it is full, double
 * *@cap (from 4096) up to @max.  Returns 0, -ENOBUFS when it is full at
 * @max (a whole frame is waiting), -ENOMEM.
 */
int buf_grow(uint8_t **buf, size_t *cap, size_t len, size_t max);

/*
 * Read a whole regular file of at most @max bytes into a new NUL-terminated
 * buffer.  @open_flags adds to O_RDONLY|O_CLOEXEC|O_NOCTTY (e.g. O_NOFOLLOW).
 * Returns 0, -errno from open/read, -EINVAL (not a regular file) or -EFBIG.
 */
int read_file(const char *path, size_t max, int open_flags, char **ret, size_t *ret_len);

/* The same from the open file @fd, which must be a regular file. */
int read_fd(int fd, size_t max, char **ret, size_t *ret_len);

/* read_file() of @path relative to the directory @dirfd (AT_FDCWD: the
 * current one). */
int read_file_at(int dirfd, const char *path, size_t max, int open_flags, char **ret,
		 size_t *ret_len);

/*
 * Length of the well-formed UTF-8 sequence (RFC 3629: shortest form, no
 * surrogates, at most U+10FFFF) that @s starts with, 0 if it does not start
 * with one (or is at its NUL).
 */
size_t utf8_seq_len(const char *s);

/* The code point of the well-formed sequence of @len bytes at @s (@len as
 * utf8_seq_len() returned it). */
uint32_t utf8_code_point(const char *s, size_t len);

/* Whether all of the NUL-terminated @s is well-formed UTF-8. */
bool utf8_is_valid(const char *s);

/*
 * A copy of @s in *@ret with each byte that does not belong to a
 * well-formed UTF-8 sequence replaced by U+FFFD (Unicode's "maximal
 * subpart" rule, one replacement per bad byte): text fit for JSON (RFC 8259
 * section 8.1) whatever the peer sent.  Returns 0 or -ENOMEM.
 */
int utf8_replace_invalid(const char *s, char **ret);

/*
 * A copy of @s in *@ret fit for a terminal or a log whoever wrote it (a
 * server, a file name): each byte of a control character shown as \xHH,
 * the rest copied as it is.  Controls are C0 ('\n' too, unless
 * @keep_newlines: text of several lines), DEL, C1 (U+0080-U+009F, its two
 * UTF-8 bytes) and a byte 0x80-0x9F outside a well-formed UTF-8 sequence,
 * which a terminal in an 8-bit mode takes as C1 (0x9B is CSI).  Well-formed
 * UTF-8 (a name in any script) and the other bytes (Latin-1 text) are kept;
 * so such a terminal still sees C1 in the bytes of some UTF-8 characters
 * (U+00DB is C3 9B): a UTF-8 terminal is the one fully covered
 * (docs/SECURITY.md row 62).
 * Returns 0 or -ENOMEM.
 */
int text_escape_controls(const char *s, bool keep_newlines, char **ret);

/*
 * @s (a certificate's name, UTF-8 free of controls) as one field of a log
 * line or an audit record, which nothing in it can make look like another
 * field ("cn=builder-1 addr=10.9.9.9:1" is not two): as it is when plain,
 * non-empty and every byte an ASCII letter, digit or one of "-._:@+"; else
 * between double quotes, a '"' or '\' inside written after a backslash and
 * controls as text_escape_controls() shows them.  So builder-1 stays
 * as it is, and "builder-1 addr=10.9.9.9:1", "Jürgen" or "bаd" (with a
 * Cyrillic а) are quoted: a name with any other byte is never bare.  Written to @buf of @size with its NUL;
 * returns 0, or -ENOBUFS when it does not fit (at most 2 * strlen(@s) + 3
 * bytes without controls, 4 * strlen(@s) + 3 with them).
 */
int text_quote_name(const char *s, char *buf, size_t size);

/*
 * A copy of the JSON text @json (as json-c writes it: C0 controls in
 * strings already escaped) in *@ret with DEL and C1 controls written as
 * \u escapes and each byte outside a well-formed UTF-8 sequence as
 * \ufffd: the same document where it was valid, valid JSON (RFC 8259
 * section 8.1) where it held bytes that are not UTF-8, and nothing a
 * terminal would act on.  Returns 0 or -ENOMEM.
 */
int json_escape_controls(const char *json, char **ret);

/*
 * Open @path for reading, a file whose owner answers for its content: as
 * regular_file_openat() does (not through a symlink, never waited on, a
 * regular file), owned by root or by the caller's effective uid (whoever
 * owns it may chmod it and write it), and none of the mode bits
 * @forbidden set.  Mode and owner are taken from the opened file (fstat),
 * not from a path that can change in between.  Returns the fd; -errno
 * from open or fstat (-ELOOP: a symlink); -EINVAL if it is not a regular
 * file; -EPERM if a @forbidden bit is set or the owner is someone else
 * (*@ret_st, filled once the file is open, tells which).
 */
int owned_file_open(const char *path, mode_t forbidden, struct stat *ret_st);

/*
 * Open @path, a file that holds a secret (a private key, a PIN), for
 * reading: owned_file_open() with neither group nor others allowed to
 * read or write it; a group read bit is the mask of an ACL that grants
 * read to no one but us (a systemd 254+ credential: root's 0400 file
 * with user:<our uid>:r, shown as 0440).  The one check for every secret file the daemon
 * reads: keys, the TLS key, the PKCS#11 PIN; and the client's TLS key.
 */
int secret_file_open(const char *path, struct stat *ret_st);
/* Why secret_file_open() or secret_file_read() refused a file, for a
 * message "PATH: WHY", from its return @r and the *@st it filled; NULL if
 * @r is not one of its own refusals (open's or read's errors). */
const char *secret_file_refusal(int r, const struct stat *st);
/*
 * Read all of such a file, at most @max bytes, into a new buffer that the
 * caller wipes (memzero_explicit) and frees.  Errors as secret_file_open(),
 * and -EFBIG.
 */
int secret_file_read(const char *path, size_t max, struct stat *ret_st,
		     uint8_t **ret, size_t *ret_len);

/*
 * Open @name relative to @dirfd as a regular file, never waiting on it and
 * never through a link: @flags (O_RDONLY, O_WRONLY|O_CREAT|O_EXCL, ...)
 * gain O_NONBLOCK|O_NOFOLLOW|O_CLOEXEC|O_NOCTTY, and the opened file must be
 * a regular file (fstat).  A FIFO, socket or device planted at @name is
 * refused at once instead of stopping the caller's event loop, and is not
 * opened at all (its type is looked at first, without following a link):
 * opening a device can act (a watchdog armed, a serial line's DTR raised),
 * opening a FIFO lets its blocked writer go.  @mode as
 * openat()'s.  Returns the fd (O_NONBLOCK cleared again); -errno from open
 * or fstat (-ELOOP: a symlink); -EINVAL if it is not a regular file.
 */
int regular_file_openat(int dirfd, const char *name, int flags, mode_t mode);
/* Why regular_file_openat() refused, for a message "NAME: WHY" (-ELOOP,
 * -EINVAL); NULL if @r is not one of its own refusals. */
const char *regular_file_refusal(int r);

/*
 * Open the directory @path, which holds what only the caller may write (an
 * audit log, a transparency log, a metrics file), for use by descriptor
 * from then on: not through a symlink (the last component), a directory,
 * owned by the caller's effective uid, and writable by neither group nor
 * others (anyone who can write it can plant or swap files there).  Checked
 * on the opened directory (fstat).  Returns the fd; -errno from open or
 * fstat (-ENOTDIR: not a directory or a symlink); -EPERM if another user owns it or group or
 * others may write it.  *@ret_st is filled whenever fstat succeeded.
 */
int private_dir_open(const char *path, struct stat *ret_st);
/* Why private_dir_open() refused a directory, for a message "PATH: WHY",
 * from its return @r and the *@st it filled; NULL if @r is not one of its
 * own refusals. */
const char *private_dir_refusal(int r, const struct stat *st);
/*
 * The directory that holds @file (a path to a file the caller writes:
 * "/var/log/modsignd/audit.jsonl"), opened by private_dir_open() after its
 * symbolic links are resolved, for a caller that reaches @file by
 * descriptor and name from then on.  *@ret_name points into @file at its
 * last component; *@ret_dir is the directory as given (".": none), for
 * messages, allocated even on failure (NULL only on -ENOMEM), the
 * caller's to free.  Returns the fd, or private_dir_open()'s -errno,
 * realpath()'s, or -EISDIR when @file names no file ("dir/", "..").
 */
int private_dir_of(const char *file, char **ret_dir, const char **ret_name,
		   struct stat *ret_st);

/*
 * Milliseconds of CLOCK_MONOTONIC, from an arbitrary start: for deadlines
 * and intervals, which must not jump when the wall clock is set; never a
 * timestamp.  Cannot fail.
 */
uint64_t now_ms(void);

/*
 * Split @hp, "HOST:PORT", "[V6ADDR]:PORT" or ":PORT", in place at its last
 * ':' into *@ret_host (the brackets removed; "" for ":PORT", which a
 * listener takes as every address and a client refuses) and *@ret_port,
 * both pointing into @hp.  -EINVAL, with @hp untouched, when there is no
 * ':', the port is empty, or a host that opens with '[' is not one
 * bracketed address ("[::1]" without a port is such).  The port is not
 * otherwise checked: getaddrinfo() takes numbers and service names.
 */
int split_host_port(char *hp, char **ret_host, char **ret_port);

/* Parse a decimal unsigned int with a maximum; -EINVAL / -ERANGE. */
int parse_uint(const char *s, unsigned long max, unsigned long *ret);

#endif
