/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TLOG_H
#define MODSIGN_TLOG_H

/*
 * A Merkle tree log as RFC 6962 / RFC 9162 section 2.1 hashes it, stored
 * as C2SP tlog-tiles lays it out (docs/TRANSPARENCY.md).  The same code
 * builds the tree in modsignd and re-builds it in modsign-client's
 * auditor, so that what one writes the other recomputes.  Never logs;
 * every int return is 0 or a negative errno.
 *
 * The state of a tree of any size is its partial tiles: the hashes at
 * level L (each the root of a perfect subtree of 256^L leaves) that do
 * not fill a tile yet, (size >> 8L) & 255 of them.  That is all that is
 * needed to append and to compute the root, at most TLOG_LEVELS * 8 KiB.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TLOG_HASH_LEN 32u
#define TLOG_TILE_HEIGHT 8u
#define TLOG_TILE_WIDTH 256u /* hashes in a full tile */
#define TLOG_TILE_BYTES (TLOG_TILE_WIDTH * TLOG_HASH_LEN)
#define TLOG_LEVELS 8u       /* 256^8 = 2^64 leaves */
#define TLOG_LEVEL_ENTRIES (-1) /* tile/entries/N: the entry bundles */
/* Largest entry we write or accept: an entry bundle's length prefix is 16
 * bits; ours hold a module name of at most PROTO_MAX_MODULE bytes. */
#define TLOG_MAX_ENTRY 16384u
/* Largest entry bundle of a full tile (each entry with its 2-byte
 * length): what a tile reader or writer must hold. */
#define TLOG_BUNDLE_MAX (TLOG_TILE_WIDTH * (2 + TLOG_MAX_ENTRY))
#define TLOG_MAX_PATH 96u

/* RFC 6962: leaf hash H(0x00 || entry) and node hash H(0x01 || l || r). */
void tlog_leaf_hash(const void *entry, size_t len, uint8_t out[TLOG_HASH_LEN]);
void tlog_node_hash(const uint8_t l[TLOG_HASH_LEN], const uint8_t r[TLOG_HASH_LEN],
		    uint8_t out[TLOG_HASH_LEN]);

/* RFC 6962 MTH of @n consecutive leaf (or same-height node) hashes; for
 * @n = 0 the hash of the empty string. */
void tlog_mth(const uint8_t *hashes, uint64_t n, uint8_t out[TLOG_HASH_LEN]);

/*
 * The C2SP path of a tile: "tile/L/N" or "tile/entries/N", N as groups
 * of three digits, all but the last prefixed by 'x' (1234067 is
 * x001/x234/067); with @width 1..255 the partial tile "N.p/W", with 0
 * the full one.  -EINVAL for a bad level or width.
 */
int tlog_tile_path(char buf[TLOG_MAX_PATH], int level, uint64_t index, unsigned width);

/* The inverse of tlog_tile_path(): the level, index and width (0 for a
 * full tile) of @path, which must be exactly as tlog_tile_path() writes
 * it (nothing else: no "..", no other name, no other spelling of N),
 * else -EINVAL and the outputs untouched. */
int tlog_tile_path_parse(const char *path, int *ret_level, uint64_t *ret_index,
			 unsigned *ret_width);

/* Whether tlog_tile_path_parse() takes @path, for serving it. */
bool tlog_tile_path_valid(const char *path);

struct tlog_tree {
	uint64_t size;
	uint8_t partial[TLOG_LEVELS][TLOG_TILE_BYTES];
	/* peaks[L][j]: the root of the 2^j hashes of partial[L] that bit j
	 * of its width stands for (set bits only), kept as a binary counter
	 * so that an append costs one node hash amortized and the root at
	 * most 64, however wide the partial tiles. */
	uint8_t peaks[TLOG_LEVELS][TLOG_TILE_HEIGHT][TLOG_HASH_LEN];
};

/* After filling @t->size and the partial tiles @t->partial (read back
 * from storage), compute the rest of the state. */
void tlog_tree_load(struct tlog_tree *t);

/* Called when the tile (@level, @index) is full, with its 256 hashes; a
 * negative return stops tlog_tree_append() (the tree is then undefined:
 * the caller keeps a copy to go back to). */
typedef int (*tlog_full_fn)(int level, uint64_t index, const uint8_t *hashes,
			    void *userdata);

/* Append the leaf hash @leaf.  -EOVERFLOW if the tree is full. */
int tlog_tree_append(struct tlog_tree *t, const uint8_t leaf[TLOG_HASH_LEN],
		     tlog_full_fn full, void *userdata);

/* The width of the partial tile at @level (0 if none) and its index. */
unsigned tlog_tree_width(const struct tlog_tree *t, unsigned level);
uint64_t tlog_tree_tile_index(const struct tlog_tree *t, unsigned level);

/* The root hash of @t. */
void tlog_tree_root(const struct tlog_tree *t, uint8_t out[TLOG_HASH_LEN]);

/*
 * A checkpoint (C2SP tlog-checkpoint) body: "ORIGIN\nSIZE\nBASE64(ROOT)\n".
 * tlog_checkpoint_format() returns a new string; tlog_checkpoint_parse()
 * reads the first three lines of @text (extension lines are allowed and
 * ignored) into *@ret_origin (new string), *@ret_size and @ret_root.
 * -EBADMSG when it is not a checkpoint.
 */
int tlog_checkpoint_format(const char *origin, uint64_t size,
			   const uint8_t root[TLOG_HASH_LEN], char **ret);
int tlog_checkpoint_parse(const char *text, char **ret_origin, uint64_t *ret_size,
			  uint8_t ret_root[TLOG_HASH_LEN]);

/*
 * An entry bundle (tile/entries/N): each entry as a 2-byte big-endian
 * length and its bytes.  tlog_bundle_next() takes the entry at *@pos of
 * @buf (@len bytes) and advances *@pos; returns 1 with *@ret_entry and
 * *@ret_len pointing into @buf, 0 at the end, -EBADMSG if it is cut short
 * or longer than TLOG_MAX_ENTRY.
 */
int tlog_bundle_next(const uint8_t *buf, size_t len, size_t *pos,
		     const uint8_t **ret_entry, size_t *ret_len);

#endif
