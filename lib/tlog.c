/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RFC 6962 hashing over C2SP tlog-tiles.  The tree is kept as its partial
 * tiles, one per level (lib/tlog.h); this file is the arithmetic that
 * turns them into tiles and a root.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tlog.h"
#include "util.h"

/* SHA-256 fetched once: an implicit fetch (EVP_sha256()) per hash takes
 * locks and a table lookup each time, most of the cost of hashing 65
 * bytes, and the daemon hashes on its event loop. */
static EVP_MD *sha256_md;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_fetch(void)
{
	sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
}

static const EVP_MD *sha256(void)
{
	pthread_once(&sha256_once, sha256_fetch);
	/* SHA-256 does not fail on valid input; without it (an allocation
	 * failure) no hash could be returned, so abort rather than lie. */
	if (!sha256_md)
		abort();
	return sha256_md;
}

void tlog_leaf_hash(const void *entry, size_t len, uint8_t out[TLOG_HASH_LEN])
{
	static const uint8_t prefix = 0x00;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx || !EVP_DigestInit_ex(ctx, sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, &prefix, 1) || !EVP_DigestUpdate(ctx, entry, len) ||
	    !EVP_DigestFinal_ex(ctx, out, NULL))
		abort();
	EVP_MD_CTX_free(ctx);
}

void tlog_node_hash(const uint8_t l[TLOG_HASH_LEN], const uint8_t r[TLOG_HASH_LEN],
		    uint8_t out[TLOG_HASH_LEN])
{
	uint8_t buf[1 + 2 * TLOG_HASH_LEN];

	buf[0] = 0x01;
	memcpy(buf + 1, l, TLOG_HASH_LEN);
	memcpy(buf + 1 + TLOG_HASH_LEN, r, TLOG_HASH_LEN);
	if (!EVP_Digest(buf, sizeof(buf), out, NULL, sha256(), NULL))
		abort();
}

/* RFC 6962 section 2.1: split at the largest power of two below n. */
void tlog_mth(const uint8_t *hashes, uint64_t n, uint8_t out[TLOG_HASH_LEN])
{
	uint8_t l[TLOG_HASH_LEN], r[TLOG_HASH_LEN];
	uint64_t k = 1;

	if (n == 0) {
		if (!EVP_Digest("", 0, out, NULL, sha256(), NULL))
			abort();
		return;
	}
	if (n == 1) {
		memcpy(out, hashes, TLOG_HASH_LEN);
		return;
	}
	while (k << 1 < n)
		k <<= 1;
	tlog_mth(hashes, k, l);
	tlog_mth(hashes + k * TLOG_HASH_LEN, n - k, r);
	tlog_node_hash(l, r, out);
}

/* N in C2SP's groups of three digits: x001/x234/067. */
static int index_path(char *buf, size_t size, uint64_t index)
{
	char groups[8][4];
	size_t n = 0, used = 0;

	do {
		snprintf(groups[n++], sizeof(groups[0]), "%03u", (unsigned)(index % 1000));
		index /= 1000;
	} while (index > 0);
	while (n-- > 0) {
		int w = snprintf(buf + used, size - used, "%s%s%s", n ? "x" : "",
				 groups[n], n ? "/" : "");
		if (w < 0 || (size_t)w >= size - used)
			return -ENAMETOOLONG;
		used += w;
	}
	return 0;
}

int tlog_tile_path(char buf[TLOG_MAX_PATH], int level, uint64_t index, unsigned width)
{
	char n[40], l[16];
	int w;

	if (level < TLOG_LEVEL_ENTRIES || level >= (int)TLOG_LEVELS ||
	    width >= TLOG_TILE_WIDTH)
		return -EINVAL;
	if (index_path(n, sizeof(n), index) < 0)
		return -EINVAL;
	if (level == TLOG_LEVEL_ENTRIES)
		snprintf(l, sizeof(l), "entries");
	else
		snprintf(l, sizeof(l), "%d", level);
	if (width)
		w = snprintf(buf, TLOG_MAX_PATH, "tile/%s/%s.p/%u", l, n, width);
	else
		w = snprintf(buf, TLOG_MAX_PATH, "tile/%s/%s", l, n);
	return w < 0 || w >= (int)TLOG_MAX_PATH ? -ENAMETOOLONG : 0;
}

/* "x001/x234/067": groups of three digits, 'x' before all but the last,
 * their value into *@ret; NULL if it is not one or does not fit. */
static const char *parse_index(const char *p, uint64_t *ret)
{
	uint64_t v = 0;

	for (;;) {
		bool x = *p == 'x';
		unsigned d;

		p += x;
		if (strspn(p, "0123456789") < 3)
			return NULL;
		d = (unsigned)((p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0'));
		if (v > (UINT64_MAX - d) / 1000)
			return NULL;
		v = v * 1000 + d;
		p += 3;
		if (!x) {
			*ret = v;
			return p;
		}
		if (*p++ != '/')
			return NULL;
	}
}

/* The level part, "entries/" or "L/", into *@ret. */
static const char *parse_level(const char *p, int *ret)
{
	if (strncmp(p, "entries/", 8) == 0) {
		*ret = TLOG_LEVEL_ENTRIES;
		return p + 8;
	}
	if (*p >= '0' && *p < '0' + (int)TLOG_LEVELS && p[1] == '/') {
		*ret = *p - '0';
		return p + 2;
	}
	return NULL;
}

/* The width part: "" (a full tile) or ".p/W", W 1..255. */
static int parse_width(const char *p, unsigned *ret)
{
	size_t w;

	if (!*p) {
		*ret = 0;
		return 0;
	}
	if (strncmp(p, ".p/", 3) != 0)
		return -EINVAL;
	p += 3;
	w = strspn(p, "0123456789");
	if (w < 1 || w > 3 || p[w] || p[0] == '0' || atoi(p) >= (int)TLOG_TILE_WIDTH)
		return -EINVAL;
	*ret = (unsigned)atoi(p);
	return 0;
}

int tlog_tile_path_parse(const char *path, int *ret_level, uint64_t *ret_index,
			 unsigned *ret_width)
{
	char again[TLOG_MAX_PATH];
	const char *p;
	uint64_t index;
	unsigned width;
	int level;

	if (strncmp(path, "tile/", 5) != 0 || strlen(path) >= TLOG_MAX_PATH)
		return -EINVAL;
	p = parse_level(path + 5, &level);
	if (p)
		p = parse_index(p, &index);
	if (!p || parse_width(p, &width) < 0)
		return -EINVAL;
	/* One spelling per tile ("x000/001" is not 1's): the name parsed is
	 * the name of the tile whose extent a caller checks. */
	if (tlog_tile_path(again, level, index, width) < 0 || strcmp(again, path) != 0)
		return -EINVAL;
	*ret_level = level;
	*ret_index = index;
	*ret_width = width;
	return 0;
}

bool tlog_tile_path_valid(const char *path)
{
	uint64_t index;
	unsigned width;
	int level;

	return tlog_tile_path_parse(path, &level, &index, &width) == 0;
}

unsigned tlog_tree_width(const struct tlog_tree *t, unsigned level)
{
	return (unsigned)((t->size >> (TLOG_TILE_HEIGHT * level)) & (TLOG_TILE_WIDTH - 1));
}

uint64_t tlog_tree_tile_index(const struct tlog_tree *t, unsigned level)
{
	unsigned shift = TLOG_TILE_HEIGHT * (level + 1);

	return shift >= 64 ? 0 : t->size >> shift;
}

/*
 * Appending a leaf adds a hash to level 0's partial tile; a tile that
 * fills is handed to @full and its root (a node 8 levels up) goes to the
 * next level's partial tile, as a carry propagates in base 256.  Within a
 * tile the peaks are a binary counter: the new hash merges with the peak
 * of each set low bit of the width, and the tile's root is the last carry.
 */
int tlog_tree_append(struct tlog_tree *t, const uint8_t leaf[TLOG_HASH_LEN],
		     tlog_full_fn full, void *userdata)
{
	uint8_t h[TLOG_HASH_LEN];
	int r;

	if (t->size == UINT64_MAX)
		return -EOVERFLOW;
	memcpy(h, leaf, TLOG_HASH_LEN);
	for (unsigned level = 0; level < TLOG_LEVELS; level++) {
		unsigned w = tlog_tree_width(t, level), j = 0;

		memcpy(t->partial[level] + w * TLOG_HASH_LEN, h, TLOG_HASH_LEN);
		for (; j < TLOG_TILE_HEIGHT && (w & (1u << j)); j++)
			tlog_node_hash(t->peaks[level][j], h, h);
		if (j < TLOG_TILE_HEIGHT) {
			memcpy(t->peaks[level][j], h, TLOG_HASH_LEN);
			break;
		}
		if (full) {
			r = full((int)level, tlog_tree_tile_index(t, level),
				 t->partial[level], userdata);
			if (r < 0)
				return r;
		}
	}
	t->size++;
	return 0;
}

void tlog_tree_load(struct tlog_tree *t)
{
	for (unsigned level = 0; level < TLOG_LEVELS; level++) {
		unsigned w = tlog_tree_width(t, level), pos = 0;

		for (int j = TLOG_TILE_HEIGHT - 1; j >= 0; j--) {
			if (!(w & (1u << j)))
				continue;
			tlog_mth(t->partial[level] + pos * TLOG_HASH_LEN, 1u << j,
				 t->peaks[level][j]);
			pos += 1u << j;
		}
	}
}

/*
 * The root from the peaks: each set bit of the size is a perfect subtree,
 * bit 8L+j the peak j of level L, the largest (leftmost) first; RFC
 * 6962's MTH of the whole tree is these subtree roots folded from the
 * right.
 */
void tlog_tree_root(const struct tlog_tree *t, uint8_t out[TLOG_HASH_LEN])
{
	const uint8_t *peaks[TLOG_LEVELS * TLOG_TILE_HEIGHT];
	size_t n = 0;

	if (t->size == 0) {
		tlog_mth(NULL, 0, out);
		return;
	}
	for (int level = TLOG_LEVELS - 1; level >= 0; level--) {
		unsigned w = tlog_tree_width(t, (unsigned)level);

		for (int j = TLOG_TILE_HEIGHT - 1; j >= 0; j--)
			if (w & (1u << j))
				peaks[n++] = t->peaks[level][j];
	}
	memcpy(out, peaks[n - 1], TLOG_HASH_LEN);
	while (n-- > 1)
		tlog_node_hash(peaks[n - 1], out, out);
}

int tlog_checkpoint_format(const char *origin, uint64_t size,
			   const uint8_t root[TLOG_HASH_LEN], char **ret)
{
	_cleanup_(freep) char *b64 = NULL;
	int r;

	r = base64_encode(root, TLOG_HASH_LEN, &b64);
	if (r < 0)
		return r;
	if (asprintf(ret, "%s\n%" PRIu64 "\n%s\n", origin, size, b64) < 0)
		return -ENOMEM;
	return 0;
}

/* One line of @text at *@p, without its '\n', into a new string. */
static int take_line(const char **p, char **ret)
{
	const char *nl = strchr(*p, '\n');

	if (!nl || nl == *p)
		return -EBADMSG;
	*ret = strndup(*p, nl - *p);
	if (!*ret)
		return -ENOMEM;
	*p = nl + 1;
	return 0;
}

static int parse_size(const char *s, uint64_t *ret)
{
	uint64_t v = 0;

	/* Decimal, no sign, no leading zero: one spelling per size. */
	if (!*s || (s[0] == '0' && s[1]) || strlen(s) > 20)
		return -EBADMSG;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - (*s - '0')) / 10)
			return -EBADMSG;
		v = v * 10 + (*s - '0');
	}
	*ret = v;
	return 0;
}

int tlog_checkpoint_parse(const char *text, char **ret_origin, uint64_t *ret_size,
			  uint8_t ret_root[TLOG_HASH_LEN])
{
	_cleanup_(freep) char *origin = NULL, *size_s = NULL, *root_s = NULL, *again = NULL;
	_cleanup_(freep) uint8_t *root = NULL;
	const char *p = text;
	size_t root_len;
	uint64_t size;
	int r;

	if (take_line(&p, &origin) < 0 || take_line(&p, &size_s) < 0 ||
	    take_line(&p, &root_s) < 0)
		return -EBADMSG;
	r = parse_size(size_s, &size);
	if (r < 0)
		return r;
	r = base64_decode(root_s, &root, &root_len);
	if (r == -ENOMEM)
		return r;
	if (r < 0 || root_len != TLOG_HASH_LEN)
		return -EBADMSG;
	/* One spelling per root: base64 ignores the low bits of the last
	 * character, which must then be zero (found by fuzz-tlog). */
	r = base64_encode(root, root_len, &again);
	if (r < 0)
		return r;
	if (strcmp(again, root_s) != 0)
		return -EBADMSG;
	memcpy(ret_root, root, TLOG_HASH_LEN);
	*ret_size = size;
	*ret_origin = TAKE_PTR(origin);
	return 0;
}

int tlog_bundle_next(const uint8_t *buf, size_t len, size_t *pos,
		     const uint8_t **ret_entry, size_t *ret_len)
{
	size_t n;

	if (*pos == len)
		return 0;
	if (len - *pos < 2)
		return -EBADMSG;
	n = (size_t)buf[*pos] << 8 | buf[*pos + 1];
	/* The prefix could say 65,535; no entry we write is over
	 * TLOG_MAX_ENTRY, and a reader sizes its buffers by that bound. */
	if (n > TLOG_MAX_ENTRY || n > len - *pos - 2)
		return -EBADMSG;
	*ret_entry = buf + *pos + 2;
	*ret_len = n;
	*pos += 2 + n;
	return 1;
}
