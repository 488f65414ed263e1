/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client/compress.c, linked as an object: the table of formats
 * (found by magic and by suffix), and each row's decode and encode: what
 * one encodes the same row decodes; truncated, corrupt, trailing and
 * too large data are refused, each with its own error.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "compress.h"
#include "macro.h"
#include "unit.h"

static const char *const names[] = { "xz", "zstd", "gzip" };

/* The row named @name, found by its suffix. */
static const struct compressor *row(const char *name)
{
	char path[32];

	snprintf(path, sizeof(path), "m.ko.%s",
		 strcmp(name, "xz") == 0 ? "xz" : strcmp(name, "zstd") == 0 ? "zst" : "gz");
	return compress_by_suffix(path);
}

static int mem(const void *buf, size_t len)
{
	int fd = memfd_create("t", MFD_CLOEXEC);

	if (fd >= 0 && len && write(fd, buf, len) != (ssize_t)len)
		abort();
	return fd;
}

/* @fd's whole content, in a new buffer of *@ret_len bytes. */
static uint8_t *slurp(int fd, size_t *ret_len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	uint8_t *buf = malloc((size_t)n + 1);

	if (!buf || pread(fd, buf, (size_t)n, 0) != n)
		abort();
	*ret_len = (size_t)n;
	return buf;
}

/* Module-like data: compressible, not trivially. */
#define DATA_LEN (300u * 1024)
static uint8_t *data(void)
{
	uint8_t *d = malloc(DATA_LEN);

	for (size_t i = 0; i < DATA_LEN; i++)
		d[i] = (uint8_t)((i * 2654435761u) >> 13 ^ (i % 251 < 200 ? 0 : i));
	return d;
}

/* @c's encoding of data(), in a new buffer. */
static uint8_t *encoded(const struct compressor *c, size_t *ret_len)
{
	uint8_t *d = data(), *z;
	int in = mem(d, DATA_LEN), out = mem(NULL, 0);

	if (c->encode(in, DATA_LEN, out) < 0)
		abort();
	z = slurp(out, ret_len);
	close(in);
	close(out);
	free(d);
	return z;
}

/* Decode @len bytes of @z with @c, at most @max out; the result. */
static int decode(const struct compressor *c, const uint8_t *z, size_t len, uint64_t max,
		  uint8_t **ret, size_t *ret_len)
{
	int in = mem(z, len), out = mem(NULL, 0);
	int r = c->decode(in, out, max);

	if (ret)
		*ret = slurp(out, ret_len);
	close(in);
	close(out);
	return r;
}

UNIT_TEST(table)
{
	static const uint8_t elf[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0 };
	static const uint8_t xz[] = { 0xfd, '7', 'z', 'X', 'Z', 0, 0, 4 };
	static const uint8_t zst[] = { 0x28, 0xb5, 0x2f, 0xfd, 0x24 };
	static const uint8_t gz[] = { 0x1f, 0x8b, 8, 0 };

	CHECK("magic: ELF is none", compress_by_magic(elf, sizeof(elf)) == NULL);
	CHECK("magic: xz", compress_by_magic(xz, sizeof(xz)) == row("xz"));
	CHECK("magic: zstd", compress_by_magic(zst, sizeof(zst)) == row("zstd"));
	CHECK("magic: gzip", compress_by_magic(gz, sizeof(gz)) == row("gzip"));
	CHECK("magic: xz cut short is none", compress_by_magic(xz, 5) == NULL);
	CHECK("magic: empty is none", compress_by_magic(xz, 0) == NULL);
	for (size_t i = 0; i < 3; i++)
		CHECK(names[i], row(names[i]) && strcmp(row(names[i])->name, names[i]) == 0);
	CHECK("suffix: .ko is none", compress_by_suffix("a/m.ko") == NULL);
	CHECK("suffix: .bz2 is none", compress_by_suffix("m.ko.bz2") == NULL);
	CHECK("module name: m.ko", compress_is_module_name("d/m.ko"));
	CHECK("module name: m.ko.xz", compress_is_module_name("d/m.ko.xz"));
	CHECK("module name: m.ko.zst", compress_is_module_name("m.ko.zst"));
	CHECK("module name: m.ko.gz", compress_is_module_name("m.ko.gz"));
	CHECK("module name: twin m.xz is not", !compress_is_module_name("m.xz"));
	CHECK("module name: twin m.ko.bz2 is not", !compress_is_module_name("m.ko.bz2"));
	CHECK("module name: twin .ko alone is not", !compress_is_module_name(".ko"));
	CHECK("module name: twin m.ko.p7s is not", !compress_is_module_name("m.ko.p7s"));
}

/* Each row: round trip, then each kind of bad input refused. */
UNIT_TEST(rows)
{
	for (size_t i = 0; i < 3; i++) {
		const struct compressor *c = row(names[i]);
		_cleanup_(freep) uint8_t *z = NULL, *d = data(), *got = NULL;
		_cleanup_(freep) uint8_t *bad = NULL;
		size_t zlen, glen = 0;
		char name[96];

#define NAMED(what) (snprintf(name, sizeof(name), "%s: %s", c->name, what), name)
		z = encoded(c, &zlen);
		CHECK(NAMED("encoded starts with its magic"), compress_by_magic(z, zlen) == c);
		CHECK(NAMED("encoded is smaller"), zlen < DATA_LEN);
		CHECK_EQ(NAMED("round trip"), decode(c, z, zlen, DATA_LEN, &got, &glen), 0);
		CHECK(NAMED("round trip gives the data"),
		      glen == DATA_LEN && memcmp(got, d, DATA_LEN) == 0);
		CHECK_EQ(NAMED("over the limit by one byte: refused"),
			 decode(c, z, zlen, DATA_LEN - 1, NULL, NULL), -EFBIG);
		CHECK_EQ(NAMED("truncated by one byte"), decode(c, z, zlen - 1, DATA_LEN, NULL, NULL),
			 -ENODATA);
		CHECK_EQ(NAMED("truncated to half"), decode(c, z, zlen / 2, DATA_LEN, NULL, NULL),
			 -ENODATA);
		CHECK_EQ(NAMED("magic alone"), decode(c, z, c->magic_len, DATA_LEN, NULL, NULL),
			 -ENODATA);
		bad = malloc(zlen + 1);
		memcpy(bad, z, zlen);
		bad[zlen] = 'x';
		CHECK_EQ(NAMED("a byte after the stream"), decode(c, bad, zlen + 1, DATA_LEN, NULL, NULL),
			 -EBADMSG);
		bad[zlen / 2] ^= 0x55;
		CHECK_EQ(NAMED("a byte flipped inside"), decode(c, bad, zlen, DATA_LEN, NULL, NULL),
			 -EBADMSG);
		{ /* encoding more than the input holds: it shrank */
			int in = mem(d, 1000), out = mem(NULL, 0);

			CHECK_EQ(NAMED("input shrank while encoding"), c->encode(in, 2000, out),
				 -ESTALE);
			close(in);
			close(out);
		}
#undef NAMED
	}
}

UNIT_TEST(strerror)
{
	char buf[96];

	CHECK("corrupt named", strcmp(compress_strerror(row("xz"), -EBADMSG, buf, sizeof(buf)),
				      "corrupt xz data") == 0);
	CHECK("truncated named", strcmp(compress_strerror(row("gzip"), -ENODATA, buf, sizeof(buf)),
					"truncated gzip data") == 0);
}

UNIT_MAIN();
