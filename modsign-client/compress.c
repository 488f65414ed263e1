/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Compressed modules (compress.h): one table of formats, and one pump
 * that moves data between two descriptors through any format's step,
 * so that reading, the size limit, truncation and trailing data are
 * handled once, not per format.
 *
 * Libraries, not the tools: the client neither depends on xz, zstd and
 * gzip being installed and on $PATH nor forks per module (a tree has
 * 4000).  Compared byte for byte with the tools on 105 modules: xz and
 * zstd give the tools' output (xz: of xz 5.6+, see xz_enc_init()), zlib
 * gives gzip's on 19 of them only (GNU gzip has its own deflate).  That
 * difference is kept: the kernel sees only the decoded module, which
 * is what is signed, and matching gzip would mean running it
 * (compressed.bats checks that each tool decodes what we write).
 *
 * Each library is loaded when a module in its format is first met
 * (lib/dlopen.h): kbuild's per-module call on an uncompressed module,
 * the common case, maps none of the three.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#include "compress.h"
#include "dlopen.h"
#include "util.h"

/* What each format calls, written once: the pointers and the tables.
 * zlib's inflateInit2() and deflateInit2() are macros for the calls with
 * a trailing _ (the header's version and z_stream size as arguments). */
#define LZMA_SYMS(X)                                                           \
	X(lzma_stream_decoder) X(lzma_lzma_preset) X(lzma_stream_encoder_mt)   \
	X(lzma_code) X(lzma_end)
#define ZSTD_SYMS(X)                                                           \
	X(ZSTD_isError) X(ZSTD_getErrorCode) X(ZSTD_createDCtx)                \
	X(ZSTD_DCtx_setParameter) X(ZSTD_decompressStream) X(ZSTD_freeDCtx)    \
	X(ZSTD_createCCtx) X(ZSTD_CCtx_setParameter)                           \
	X(ZSTD_CCtx_setPledgedSrcSize) X(ZSTD_compressStream2) X(ZSTD_freeCCtx)
#define ZLIB_SYMS(X)                                                           \
	X(inflateInit2_) X(deflateInit2_) X(inflate) X(deflate) X(inflateEnd)  \
	X(deflateEnd)

LZMA_SYMS(DLSYM_POINTER)
ZSTD_SYMS(DLSYM_POINTER)
ZLIB_SYMS(DLSYM_POINTER)

static const struct dlsym lzma_syms[] = { LZMA_SYMS(DLSYM_ENTRY) };
static const struct dlsym zstd_syms[] = { ZSTD_SYMS(DLSYM_ENTRY) };
static const struct dlsym zlib_syms[] = { ZLIB_SYMS(DLSYM_ENTRY) };

static struct dlopen_lib lzma_lib = DLOPEN_LIB("liblzma.so.5", lzma_syms);
static struct dlopen_lib zstd_lib = DLOPEN_LIB("libzstd.so.1", zstd_syms);
static struct dlopen_lib zlib_lib = DLOPEN_LIB("libz.so.1", zlib_syms);

/* The last load that failed, for compress_strerror(): the client is one
 * thread. */
static const char *load_failed_soname;
static char load_failed_why[256];

#define CHUNK (64u * 1024)

/* One format's state, encoding or decoding. */
union zstate {
	lzma_stream xz;
	z_stream gz;
	ZSTD_DCtx *zd;
	ZSTD_CCtx *zc;
};

/* What a step consumes and fills: it advances @in and @out. */
struct zbuf {
	const uint8_t *in;
	size_t in_len;
	uint8_t *out;
	size_t out_len;
};

/* A format's codec: its library, init (@len: the input's size when
 * encoding), a step (1: the stream ended, 0: more, -errno), and its end. */
struct codec {
	struct dlopen_lib *lib;
	int (*init)(union zstate *s, uint64_t len);
	int (*step)(union zstate *s, struct zbuf *b, bool finish);
	void (*end)(union zstate *s);
};

/* ---- xz (liblzma) ---- */

static int xz_errno(lzma_ret ret)
{
	switch (ret) {
	case LZMA_OK:
	case LZMA_BUF_ERROR: /* no progress: the pump decides */
		return 0;
	case LZMA_STREAM_END:
		return 1;
	case LZMA_MEM_ERROR:
		return -ENOMEM;
	case LZMA_MEMLIMIT_ERROR:
		return -E2BIG;
	default: /* FORMAT, OPTIONS, DATA, UNSUPPORTED_CHECK... */
		return -EBADMSG;
	}
}

/* No LZMA_CONCATENATED: a second stream or padding is data after it. */
static int xz_dec_init(union zstate *s, uint64_t len _unused_)
{
	s->xz = (lzma_stream)LZMA_STREAM_INIT;
	return sym_lzma_stream_decoder(&s->xz, COMPRESS_MAX_MEM, 0) == LZMA_OK ? 0 : -ENOMEM;
}

/*
 * xz --check=crc32 --lzma2=dict=1MiB: preset 6 with a 1 MiB dictionary,
 * as xz 5.6 and later run it (Debian 13's 5.8): in the multi-threaded
 * format, blocks of 3 MiB with their sizes in their headers, made here
 * by one thread.  That is byte for byte what Debian 13 installs (42
 * modules of linux-image-6.12.117+deb13 compared, and amdgpu.ko's and
 * i915.ko's several blocks); xz 5.4 (Debian 12) makes one block without
 * sizes by default, which decodes the same.
 */
static int xz_enc_init(union zstate *s, uint64_t len _unused_)
{
	lzma_options_lzma opt;
	lzma_filter filters[] = { { LZMA_FILTER_LZMA2, &opt },
				  { LZMA_VLI_UNKNOWN, NULL } };
	lzma_mt mt = { .threads = 1, .filters = filters, .check = LZMA_CHECK_CRC32 };

	if (sym_lzma_lzma_preset(&opt, 6))
		return -EINVAL;
	opt.dict_size = 1u << 20;
	s->xz = (lzma_stream)LZMA_STREAM_INIT;
	return sym_lzma_stream_encoder_mt(&s->xz, &mt) == LZMA_OK ? 0 : -ENOMEM;
}

static int xz_step(union zstate *s, struct zbuf *b, bool finish)
{
	lzma_ret ret;

	s->xz.next_in = b->in;
	s->xz.avail_in = b->in_len;
	s->xz.next_out = b->out;
	s->xz.avail_out = b->out_len;
	ret = sym_lzma_code(&s->xz, finish ? LZMA_FINISH : LZMA_RUN);
	b->in = s->xz.next_in;
	b->in_len = s->xz.avail_in;
	b->out = s->xz.next_out;
	b->out_len = s->xz.avail_out;
	return xz_errno(ret);
}

static void xz_end(union zstate *s)
{
	sym_lzma_end(&s->xz);
}

/* ---- zstd (libzstd) ---- */

static int zstd_errno(size_t ret)
{
	if (!sym_ZSTD_isError(ret))
		return 0;
	if (sym_ZSTD_getErrorCode(ret) == ZSTD_error_memory_allocation)
		return -ENOMEM;
	if (sym_ZSTD_getErrorCode(ret) == ZSTD_error_frameParameter_windowTooLarge)
		return -E2BIG;
	return -EBADMSG;
}

static int zstd_dec_init(union zstate *s, uint64_t len _unused_)
{
	s->zd = sym_ZSTD_createDCtx();
	if (!s->zd)
		return -ENOMEM;
	/* 2^27 = COMPRESS_MAX_MEM */
	return zstd_errno(sym_ZSTD_DCtx_setParameter(s->zd, ZSTD_d_windowLogMax, 27));
}

static int zstd_dec_step(union zstate *s, struct zbuf *b, bool finish _unused_)
{
	ZSTD_inBuffer in = { b->in, b->in_len, 0 };
	ZSTD_outBuffer out = { b->out, b->out_len, 0 };
	size_t ret = sym_ZSTD_decompressStream(s->zd, &out, &in);

	b->in += in.pos;
	b->in_len -= in.pos;
	b->out += out.pos;
	b->out_len -= out.pos;
	if (sym_ZSTD_isError(ret))
		return zstd_errno(ret);
	return ret == 0 ? 1 : 0; /* 0: a frame is complete and flushed */
}

static void zstd_dec_end(union zstate *s)
{
	sym_ZSTD_freeDCtx(s->zd);
}

/* zstd -q: level 3, a checksum, the content size in the header (the
 * tool pledges the file's size); one thread, as the tool by default. */
static int zstd_enc_init(union zstate *s, uint64_t len)
{
	int r;

	s->zc = sym_ZSTD_createCCtx();
	if (!s->zc)
		return -ENOMEM;
	r = zstd_errno(sym_ZSTD_CCtx_setParameter(s->zc, ZSTD_c_compressionLevel, 3));
	if (r == 0)
		r = zstd_errno(sym_ZSTD_CCtx_setParameter(s->zc, ZSTD_c_checksumFlag, 1));
	if (r == 0)
		r = zstd_errno(sym_ZSTD_CCtx_setPledgedSrcSize(s->zc, len));
	return r < 0 ? -EINVAL : 0;
}

static int zstd_enc_step(union zstate *s, struct zbuf *b, bool finish)
{
	ZSTD_inBuffer in = { b->in, b->in_len, 0 };
	ZSTD_outBuffer out = { b->out, b->out_len, 0 };
	size_t ret = sym_ZSTD_compressStream2(s->zc, &out, &in, finish ? ZSTD_e_end : ZSTD_e_continue);

	b->in += in.pos;
	b->in_len -= in.pos;
	b->out += out.pos;
	b->out_len -= out.pos;
	if (sym_ZSTD_isError(ret))
		return zstd_errno(ret);
	return finish && ret == 0 ? 1 : 0;
}

static void zstd_enc_end(union zstate *s)
{
	sym_ZSTD_freeCCtx(s->zc);
}

/* ---- gzip (zlib) ---- */

static int gz_errno(int ret)
{
	switch (ret) {
	case Z_OK:
	case Z_BUF_ERROR: /* no progress: the pump decides */
		return 0;
	case Z_STREAM_END:
		return 1;
	case Z_MEM_ERROR:
		return -ENOMEM;
	default: /* Z_DATA_ERROR, Z_NEED_DICT, Z_STREAM_ERROR */
		return -EBADMSG;
	}
}

/* 16 + 15: a gzip member only (not zlib, not raw deflate). */
static int gz_dec_init(union zstate *s, uint64_t len _unused_)
{
	s->gz = (z_stream){ 0 };
	return sym_inflateInit2_(&s->gz, 16 + 15, ZLIB_VERSION, (int)sizeof(z_stream)) == Z_OK ? 0 : -ENOMEM;
}

/* gzip -n: level 6; zlib's header is then gzip's (mtime 0, no name, XFL
 * 0, OS 3). */
static int gz_enc_init(union zstate *s, uint64_t len _unused_)
{
	s->gz = (z_stream){ 0 };
	return sym_deflateInit2_(&s->gz, 6, Z_DEFLATED, 16 + 15, 8, Z_DEFAULT_STRATEGY,
				 ZLIB_VERSION, (int)sizeof(z_stream)) == Z_OK ?
		       0 :
		       -ENOMEM;
}

static int gz_step(union zstate *s, struct zbuf *b, bool finish, bool enc)
{
	int ret;

	s->gz.next_in = (Bytef *)b->in;
	s->gz.avail_in = (uInt)b->in_len;
	s->gz.next_out = b->out;
	s->gz.avail_out = (uInt)b->out_len;
	ret = enc ? sym_deflate(&s->gz, finish ? Z_FINISH : Z_NO_FLUSH) :
		    sym_inflate(&s->gz, Z_NO_FLUSH);
	b->in = s->gz.next_in;
	b->in_len = s->gz.avail_in;
	b->out = s->gz.next_out;
	b->out_len = s->gz.avail_out;
	return gz_errno(ret);
}

static int gz_dec_step(union zstate *s, struct zbuf *b, bool finish)
{
	return gz_step(s, b, finish, false);
}

static int gz_enc_step(union zstate *s, struct zbuf *b, bool finish)
{
	return gz_step(s, b, finish, true);
}

static void gz_dec_end(union zstate *s)
{
	sym_inflateEnd(&s->gz);
}

static void gz_enc_end(union zstate *s)
{
	sym_deflateEnd(&s->gz);
}

/* ---- the pump ---- */

/* @lib, or -ELIBACC with its failure kept for compress_strerror(). */
static int load(struct dlopen_lib *lib)
{
	int r = dlopen_lib_load(lib, load_failed_why, sizeof(load_failed_why));

	if (r < 0)
		load_failed_soname = lib->soname;
	return r;
}

/*
 * @in (from offset 0: to its end when decoding, @len bytes when
 * encoding) through @codec into @out, at most @max bytes out.  The end
 * of the input with the stream not ended and no progress made is a
 * truncated stream; input left after the stream's end is refused.
 */
static int pump(const struct codec *codec, bool decoding, int in, uint64_t len, int out,
		uint64_t max)
{
	uint8_t ib[CHUNK], ob[CHUNK];
	struct zbuf b = { .in = ib };
	union zstate s;
	uint64_t off = 0, total = 0;
	bool eof = false;
	int r = load(codec->lib);

	if (r < 0)
		return r;
	r = codec->init(&s, len);

	while (r >= 0) {
		size_t produced, taken = b.in_len;

		if (b.in_len == 0 && !eof) {
			size_t want = decoding ? CHUNK : (size_t)(len - off < CHUNK ? len - off : CHUNK);
			ssize_t n = want ? pread(in, ib, want, (off_t)off) : 0;

			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0) {
				r = -errno;
				break;
			}
			if (!decoding && n == 0 && off < len) {
				r = -ESTALE;
				break;
			}
			off += (uint64_t)n;
			eof = n == 0 || (!decoding && off == len);
			b.in = ib;
			taken = b.in_len = (size_t)n;
		}
		b.out = ob;
		b.out_len = sizeof(ob);
		r = codec->step(&s, &b, eof);
		produced = sizeof(ob) - b.out_len;
		if (produced > max - total) {
			r = -EFBIG;
			break;
		}
		if (produced && write_full(out, ob, produced) < 0) {
			r = -errno;
			break;
		}
		total += produced;
		if (r == 1) { /* the stream ended: nothing may follow it */
			if (decoding && (b.in_len > 0 || pread(in, ib, 1, (off_t)off) != 0))
				r = -EBADMSG;
			else
				r = 0;
			break;
		}
		if (r == 0 && eof && b.in_len == 0 && taken == 0 && produced == 0)
			r = -ENODATA;
	}
	codec->end(&s);
	return r;
}

static const struct codec xz_dec = { &lzma_lib, xz_dec_init, xz_step, xz_end };
static const struct codec xz_enc = { &lzma_lib, xz_enc_init, xz_step, xz_end };
static const struct codec zstd_dec = { &zstd_lib, zstd_dec_init, zstd_dec_step, zstd_dec_end };
static const struct codec zstd_enc = { &zstd_lib, zstd_enc_init, zstd_enc_step, zstd_enc_end };
static const struct codec gz_dec = { &zlib_lib, gz_dec_init, gz_dec_step, gz_dec_end };
static const struct codec gz_enc = { &zlib_lib, gz_enc_init, gz_enc_step, gz_enc_end };

static int xz_decode(int in, int out, uint64_t max)
{
	return pump(&xz_dec, true, in, 0, out, max);
}

static int xz_encode(int in, uint64_t len, int out)
{
	return pump(&xz_enc, false, in, len, out, UINT64_MAX);
}

static int zstd_decode(int in, int out, uint64_t max)
{
	return pump(&zstd_dec, true, in, 0, out, max);
}

static int zstd_encode(int in, uint64_t len, int out)
{
	return pump(&zstd_enc, false, in, len, out, UINT64_MAX);
}

static int gz_decode(int in, int out, uint64_t max)
{
	return pump(&gz_dec, true, in, 0, out, max);
}

static int gz_encode(int in, uint64_t len, int out)
{
	return pump(&gz_enc, false, in, len, out, UINT64_MAX);
}

/* ---- the table ---- */

static const uint8_t xz_magic[] = { 0xfd, '7', 'z', 'X', 'Z', 0x00 };
static const uint8_t zstd_magic[] = { 0x28, 0xb5, 0x2f, 0xfd };
static const uint8_t gz_magic[] = { 0x1f, 0x8b };

static const struct compressor compressors[] = {
	{ "xz", ".xz", xz_magic, sizeof(xz_magic), xz_decode, xz_encode, &lzma_lib },
	{ "zstd", ".zst", zstd_magic, sizeof(zstd_magic), zstd_decode, zstd_encode, &zstd_lib },
	{ "gzip", ".gz", gz_magic, sizeof(gz_magic), gz_decode, gz_encode, &zlib_lib },
};

int compress_load(const struct compressor *c)
{
	return load(c->lib);
}

const struct compressor *compress_by_magic(const uint8_t *head, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(compressors); i++)
		if (len >= compressors[i].magic_len &&
		    memcmp(head, compressors[i].magic, compressors[i].magic_len) == 0)
			return &compressors[i];
	return NULL;
}

static bool ends_with(const char *s, size_t n, const char *end)
{
	size_t e = strlen(end);

	return n >= e && memcmp(s + n - e, end, e) == 0;
}

const struct compressor *compress_by_suffix(const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; i < ELEMENTSOF(compressors); i++)
		if (ends_with(name, n, compressors[i].suffix))
			return &compressors[i];
	return NULL;
}

bool compress_is_module_name(const char *name)
{
	const struct compressor *c = compress_by_suffix(name);
	size_t n = strlen(name) - (c ? strlen(c->suffix) : 0);

	return n > 3 && ends_with(name, n, ".ko");
}

const char *compress_strerror(const struct compressor *c, int r, char *buf, size_t size)
{
	const char *name = c ? c->name : "compressed";

	switch (r) {
	case -EBADMSG:
		snprintf(buf, size, "corrupt %s data", name);
		break;
	case -ENODATA:
		snprintf(buf, size, "truncated %s data", name);
		break;
	case -E2BIG:
		snprintf(buf, size, "%s data needs more than %u MiB to decompress", name,
			 COMPRESS_MAX_MEM >> 20);
		break;
	case -ESTALE:
		snprintf(buf, size, "changed while being compressed");
		break;
	case -ELIBACC:
		snprintf(buf, size, "%s: cannot load %s: %s", name,
			 load_failed_soname ?: "its library", load_failed_why);
		break;
	default:
		snprintf(buf, size, "%s: %s", name, strerror(-r));
	}
	return buf;
}
