/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

void memzero_explicit(void *p, size_t n)
{
	if (p && n)
		OPENSSL_cleanse(p, n);
}

void erase_and_free(char *s)
{
	if (!s)
		return;
	memzero_explicit(s, strlen(s));
	free(s);
}

int hex_encode(const uint8_t *buf, size_t len, char **ret)
{
	static const char digits[] = "0123456789abcdef";
	char *s;

	s = malloc(len * 2 + 1);
	if (!s)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++) {
		s[2 * i] = digits[buf[i] >> 4];
		s[2 * i + 1] = digits[buf[i] & 0xf];
	}
	s[len * 2] = '\0';
	*ret = s;
	return 0;
}

static int unhex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int hex_decode(const char *s, uint8_t *out, size_t max, size_t *ret_len)
{
	size_t n = strlen(s);

	if (n % 2 != 0)
		return -EINVAL;
	if (n / 2 > max)
		return -ERANGE;
	for (size_t i = 0; i < n / 2; i++) {
		int hi = unhex(s[2 * i]), lo = unhex(s[2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EINVAL;
		out[i] = (uint8_t)(hi << 4 | lo);
	}
	*ret_len = n / 2;
	return 0;
}

int base64_encode(const uint8_t *buf, size_t len, char **ret)
{
	char *s;

	if (len > INT_MAX / 2)
		return -ERANGE;
	s = malloc(4 * ((len + 2) / 3) + 1);
	if (!s)
		return -ENOMEM;
	EVP_EncodeBlock((unsigned char *)s, buf, (int)len);
	*ret = s;
	return 0;
}

/* EVP_DecodeBlock() takes '=' anywhere as zero bits and trims blanks, so
 * check the form ourselves: groups of four alphabet characters, with one
 * or two '=' only at the very end. */
static int base64_valid(const char *s, size_t n, size_t *ret_pad)
{
	size_t pad = 0;

	if (n % 4 != 0)
		return 0;
	if (n >= 1 && s[n - 1] == '=')
		pad++;
	if (n >= 2 && s[n - 2] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++)
		if (!isalnum((unsigned char)s[i]) && s[i] != '+' && s[i] != '/')
			return 0;
	*ret_pad = pad;
	return 1;
}

int base64_decode(const char *s, uint8_t **ret, size_t *ret_len)
{
	size_t n = strlen(s), pad;
	_cleanup_(freep) uint8_t *out = NULL;
	int r;

	if (n > INT_MAX || !base64_valid(s, n, &pad))
		return -EINVAL;
	out = malloc(n / 4 * 3 + 1);
	if (!out)
		return -ENOMEM;
	r = EVP_DecodeBlock(out, (const unsigned char *)s, (int)n);
	if (r < 0 || (size_t)r < pad)
		return -EINVAL;
	*ret_len = (size_t)r - pad; /* padding decodes as zero bytes */
	*ret = TAKE_PTR(out);
	return 0;
}

ssize_t read_full(int fd, void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)buf + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

int write_full(int fd, const void *buf, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)buf + done, len - done);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		done += (size_t)n;
	}
	return 0;
}

int buf_grow(uint8_t **buf, size_t *cap, size_t len, size_t max)
{
	size_t n = *cap ? *cap * 2 : 4096;
	uint8_t *p;

	if (len < *cap)
		return 0;
	if (*cap >= max)
		return -ENOBUFS;
	if (n > max)
		n = max;
	p = realloc(*buf, n);
	if (!p)
		return -ENOMEM;
	*buf = p;
	*cap = n;
	return 0;
}

int read_file(const char *path, size_t max, int open_flags, char **ret, size_t *ret_len)
{
	return read_file_at(AT_FDCWD, path, max, open_flags, ret, ret_len);
}

int read_file_at(int dirfd, const char *path, size_t max, int open_flags, char **ret,
		 size_t *ret_len)
{
	_cleanup_(closep) int fd = -1;

	fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | open_flags);
	if (fd < 0)
		return -errno;
	return read_fd(fd, max, ret, ret_len);
}

int read_fd(int fd, size_t max, char **ret, size_t *ret_len)
{
	_cleanup_(freep) char *buf = NULL;
	struct stat st;
	ssize_t n;

	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if ((size_t)st.st_size > max)
		return -EFBIG;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	n = read_full(fd, buf, (size_t)st.st_size);
	if (n < 0)
		return (int)n;
	buf[n] = '\0';
	*ret = TAKE_PTR(buf);
	*ret_len = (size_t)n;
	return 0;
}

int regular_file_openat(int dirfd, const char *name, int flags, mode_t mode)
{
	_cleanup_(closep) int fd = -1;
	struct stat st;

	/* What is at @name is looked at before it is opened: opening a
	 * device has effects of its own (a watchdog armed, a serial line's
	 * DTR raised, a tape rewound), and a FIFO's writer blocked in
	 * open(2) is let go, though both are refused once open.  The check
	 * after open stays: @name may change in between.  O_CREAT|O_EXCL
	 * never opens what is there. */
	if ((flags & (O_CREAT | O_EXCL)) != (O_CREAT | O_EXCL)) {
		if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			if (errno != ENOENT || !(flags & O_CREAT))
				return -errno;
		} else if (S_ISLNK(st.st_mode))
			return -ELOOP;
		else if (!S_ISREG(st.st_mode))
			return -EINVAL;
	}

	fd = openat(dirfd, name, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, mode);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	/* Regular files ignore O_NONBLOCK; cleared so that a caller handing
	 * the fd on (fdopen, sendfile) sees ordinary blocking semantics. */
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		return -errno;
	return TAKE_FD(fd);
}

const char *regular_file_refusal(int r)
{
	switch (r) {
	case -ELOOP:
		return "a symbolic link (not followed)";
	case -EINVAL:
		return "not a regular file (a FIFO, socket or device is never used)";
	default:
		return NULL;
	}
}

int private_dir_open(const char *path, struct stat *ret_st)
{
	_cleanup_(closep) int fd = -1;

	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, ret_st) < 0)
		return -errno;
	if (ret_st->st_uid != geteuid() || (ret_st->st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	return TAKE_FD(fd);
}

const char *private_dir_refusal(int r, const struct stat *st)
{
	switch (r) {
	case -ELOOP:
	case -ENOTDIR:
		/* O_DIRECTORY|O_NOFOLLOW on a link gives ENOTDIR. */
		return "not a directory (a symbolic link is not followed)";
	case -EPERM:
		return st->st_uid != geteuid() ? "not owned by the daemon's own user (chown it)" :
						 "group or others may write it (chmod go-w)";
	default:
		return NULL;
	}
}

int private_dir_of(const char *file, char **ret_dir, const char **ret_name,
		   struct stat *ret_st)
{
	const char *slash = strrchr(file, '/');
	const char *name = slash ? slash + 1 : file;
	_cleanup_(freep) char *dir = NULL;
	_cleanup_(freep) char *real = NULL;

	*ret_dir = NULL;
	*ret_name = name;
	if (!*name || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return -EISDIR;
	dir = !slash ? strdup(".") : strndup(file, slash == file ? 1 : (size_t)(slash - file));
	if (!dir)
		return -ENOMEM;
	/* Links on the way are resolved before the open: systemd's
	 * DynamicUser= makes /var/log/modsignd a link to private/modsignd.
	 * That gives nothing away: what is checked is the directory opened,
	 * and a link can only lead to one that passes the same checks. */
	real = realpath(dir, NULL);
	*ret_dir = TAKE_PTR(dir);
	if (!real)
		return -errno;
	return private_dir_open(real, ret_st);
}

int owned_file_open(const char *path, mode_t forbidden, struct stat *ret_st)
{
	_cleanup_(closep) int fd = regular_file_openat(AT_FDCWD, path, O_RDONLY, 0);

	if (fd < 0)
		return fd;
	if (fstat(fd, ret_st) < 0)
		return -errno;
	if (ret_st->st_mode & forbidden)
		return -EPERM;
	if (ret_st->st_uid != 0 && ret_st->st_uid != geteuid())
		return -EPERM;
	return TAKE_FD(fd);
}

/* POSIX ACL entries as the kernel stores them in the xattr
 * system.posix_acl_access (linux/posix_acl_xattr.h): a 4-byte version,
 * then 8-byte entries { u16 tag, u16 perm, u32 id }. */
enum { ACL_TAG_USER = 0x02, ACL_TAG_GROUP_OBJ = 0x04, ACL_TAG_GROUP = 0x08 };

/* Whether the ACL on @fd lets no one read it but its owner and us: the
 * group bits of a file with an ACL are its mask, not its group's, and a
 * systemd 254+ credential (Debian 13's 257) is root's 0400 file with one
 * entry, user:<the service's uid>:r, so it shows as 0440.  Every named
 * user must be us, no named group (our group may be shared: modsign), no
 * permission for the owning group.  No ACL: the group bits are the
 * group's, and a group-readable secret is refused. */
static bool acl_only_us(int fd)
{
	uint8_t b[512];
	ssize_t n = fgetxattr(fd, "system.posix_acl_access", b, sizeof(b));

	if (n < 0 || n < 4 || (n - 4) % 8)
		return false;
	for (ssize_t i = 4; i < n; i += 8) {
		uint16_t tag, perm;
		uint32_t id;

		memcpy(&tag, b + i, 2);
		memcpy(&perm, b + i + 2, 2);
		memcpy(&id, b + i + 4, 4);
		if ((tag == ACL_TAG_USER && id != geteuid()) || tag == ACL_TAG_GROUP ||
		    (tag == ACL_TAG_GROUP_OBJ && perm != 0))
			return false;
	}
	return true;
}

int secret_file_open(const char *path, struct stat *ret_st)
{
	_cleanup_(closep) int fd =
		owned_file_open(path, (S_IRWXG & ~S_IRGRP) | S_IRWXO, ret_st);

	if (fd < 0)
		return fd;
	if ((ret_st->st_mode & S_IRGRP) && !acl_only_us(fd))
		return -EPERM;
	return TAKE_FD(fd);
}

const char *secret_file_refusal(int r, const struct stat *st)
{
	switch (r) {
	case -ELOOP:
		return "a symbolic link: name the file itself";
	case -EINVAL:
		return "not a regular file";
	case -EPERM:
		return st->st_mode & (S_IRWXG | S_IRWXO) ?
			       "group or others may read or write it (chmod 0600)" :
			       "owned by neither root nor the daemon's own user (chown it)";
	default:
		return NULL;
	}
}

int secret_file_read(const char *path, size_t max, struct stat *ret_st,
		     uint8_t **ret, size_t *ret_len)
{
	_cleanup_(closep) int fd = secret_file_open(path, ret_st);
	uint8_t *buf;
	size_t size;
	ssize_t n;

	if (fd < 0)
		return fd;
	if ((size_t)ret_st->st_size > max)
		return -EFBIG;
	size = (size_t)ret_st->st_size;
	buf = malloc(size + 1);
	if (!buf)
		return -ENOMEM;
	n = read_full(fd, buf, size);
	if (n < 0) {
		memzero_explicit(buf, size);
		free(buf);
		return (int)n;
	}
	*ret = buf;
	*ret_len = (size_t)n;
	return 0;
}

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int split_host_port(char *hp, char **ret_host, char **ret_port)
{
	char *colon = strrchr(hp, ':');
	size_t n;

	if (!colon || !colon[1])
		return -EINVAL;
	n = (size_t)(colon - hp);
	if (hp[0] == '[') {
		/* "[", an address of at least one character, "]" */
		if (n < 3 || hp[n - 1] != ']')
			return -EINVAL;
		hp[n - 1] = '\0';
		hp++;
	}
	*colon = '\0';
	*ret_host = hp;
	*ret_port = colon + 1;
	return 0;
}

int parse_uint(const char *s, unsigned long max, unsigned long *ret)
{
	char *end;
	unsigned long v;

	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (errno || *end)
		return -EINVAL;
	if (v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

size_t utf8_seq_len(const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xbf;
	size_t n;

	if (u[0] < 0x80)
		return u[0] ? 1 : 0;
	if (u[0] < 0xc2 || u[0] > 0xf4)
		return 0; /* continuation byte, overlong lead, or past U+10FFFF */
	n = u[0] < 0xe0 ? 2 : u[0] < 0xf0 ? 3 : 4;
	/* The second byte's range excludes overlongs, surrogates and
	 * code points past U+10FFFF (RFC 3629 section 4). */
	if (u[0] == 0xe0)
		lo = 0xa0;
	else if (u[0] == 0xed)
		hi = 0x9f;
	else if (u[0] == 0xf0)
		lo = 0x90;
	else if (u[0] == 0xf4)
		hi = 0x8f;
	if (u[1] < lo || u[1] > hi)
		return 0;
	for (size_t i = 2; i < n; i++)
		if (u[i] < 0x80 || u[i] > 0xbf)
			return 0;
	return n;
}

uint32_t utf8_code_point(const char *s, size_t len)
{
	const unsigned char *u = (const unsigned char *)s;
	uint32_t c = len == 1 ? u[0] : u[0] & (0x7f >> len);

	for (size_t i = 1; i < len; i++)
		c = c << 6 | (u[i] & 0x3f);
	return c;
}

bool utf8_is_valid(const char *s)
{
	size_t n;

	for (; *s; s += n)
		if (!(n = utf8_seq_len(s)))
			return false;
	return true;
}

int utf8_replace_invalid(const char *s, char **ret)
{
	static const char fffd[] = "\xef\xbf\xbd";
	size_t len = strlen(s), o = 0, n;
	char *out;

	if (len > (SIZE_MAX - 1) / 3)
		return -ENOMEM;
	out = malloc(len * 3 + 1); /* each bad byte grows to three */
	if (!out)
		return -ENOMEM;
	for (; *s; s += n) {
		n = utf8_seq_len(s);
		if (n) {
			memcpy(out + o, s, n);
			o += n;
		} else {
			memcpy(out + o, fffd, 3);
			o += 3;
			n = 1;
		}
	}
	out[o] = '\0';
	*ret = out;
	return 0;
}

/*
 * The code point of the control character @s starts with, and its length
 * in *@ret_len (the length of what @s starts with in any case: a
 * well-formed sequence, or one byte); -1 if it is none.  C0, DEL and C1
 * (U+0080-U+009F) are controls; so is a byte 0x80-0x9F that belongs to no
 * well-formed sequence, which a terminal in an 8-bit mode takes as C1
 * (0x9B is CSI).
 */
static int32_t control_at(const char *s, size_t *ret_len)
{
	unsigned char b = (unsigned char)*s;
	size_t n = utf8_seq_len(s);
	uint32_t c;

	*ret_len = n ? n : 1;
	if (!n)
		return b >= 0x80 && b <= 0x9f ? b : -1;
	c = utf8_code_point(s, n);
	return c < 0x20 || (c >= 0x7f && c <= 0x9f) ? (int32_t)c : -1;
}

/* What escape_text() escapes besides control characters. */
enum {
	ESCAPE_KEEP_NEWLINES = 1 << 0, /* text of several lines: '\n' as it is */
	ESCAPE_QUOTED = 1 << 1,        /* inside "...": '"' and '\\' too */
};

/*
 * The one escaper of text for terminals and log lines: @s into @out (NULL:
 * only count), each byte of a control character as \xHH, and with
 * ESCAPE_QUOTED a double quote or backslash after a backslash, so that
 * the quoted text ends only at its closing quote.  Returns the length
 * written, without a NUL.
 */
static size_t escape_text(char *out, const char *s, unsigned flags)
{
	size_t o = 0, n;

	for (; *s; s += n) {
		int32_t c = control_at(s, &n);

		if (c >= 0 && !(c == '\n' && (flags & ESCAPE_KEEP_NEWLINES))) {
			for (size_t i = 0; i < n; i++, o += 4)
				if (out)
					sprintf(out + o, "\\x%02x", (unsigned char)s[i]);
			continue;
		}
		if ((flags & ESCAPE_QUOTED) && (*s == '"' || *s == '\\')) {
			if (out)
				out[o] = '\\';
			o++;
		}
		if (out)
			memcpy(out + o, s, n);
		o += n;
	}
	return o;
}

int text_escape_controls(const char *s, bool keep_newlines, char **ret)
{
	unsigned flags = keep_newlines ? ESCAPE_KEEP_NEWLINES : 0;
	size_t len = escape_text(NULL, s, flags);
	char *out = malloc(len + 1);

	if (!out)
		return -ENOMEM;
	escape_text(out, s, flags);
	out[len] = '\0';
	*ret = out;
	return 0;
}

/* A name that reads as one word next to "key=value" fields, alike in
 * every script a terminal may show: ASCII letters, digits and these. */
static bool name_is_plain(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isascii((unsigned char)*s) ||
		    !(isalnum((unsigned char)*s) || strchr("-._:@+", *s)))
			return false;
	return true;
}

int text_quote_name(const char *s, char *buf, size_t size)
{
	size_t len;

	if (name_is_plain(s)) {
		len = strlen(s);
		if (len >= size)
			return -ENOBUFS;
		memcpy(buf, s, len + 1);
		return 0;
	}
	len = escape_text(NULL, s, ESCAPE_QUOTED);
	if (len + 3 > size)
		return -ENOBUFS;
	buf[0] = '"';
	escape_text(buf + 1, s, ESCAPE_QUOTED);
	memcpy(buf + 1 + len, "\"", 2);
	return 0;
}

int json_escape_controls(const char *json, char **ret)
{
	size_t len = strlen(json), o = 0, n;
	char *out;

	if (len > (SIZE_MAX - 1) / 6)
		return -ENOMEM;
	out = malloc(len * 6 + 1); /* "\u00XX" or "\ufffd" for one byte */
	if (!out)
		return -ENOMEM;
	for (; *json; json += n) {
		int32_t c = control_at(json, &n);

		/* Outside its strings JSON text is ASCII, and a C0 control
		 * there is white space between tokens (inside a string,
		 * json-c writes it as \u00XX): what is replaced here, DEL
		 * and above, is inside a string. */
		if (!utf8_seq_len(json))
			o += (size_t)sprintf(out + o, "\\ufffd");
		else if (c >= 0x7f)
			o += (size_t)sprintf(out + o, "\\u%04x", (unsigned)c);
		else {
			memcpy(out + o, json, n);
			o += n;
		}
	}
	out[o] = '\0';
	*ret = out;
	return 0;
}
