/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Proofs: made by the recursive definitions of RFC 6962 (PATH, SUBPROOF),
 * which split a tree at the largest power of two below its size, as
 * tlog_mth() does; checked by the iterative algorithms of RFC 9162, which
 * need only the proof and the roots.
 */
#include <errno.h>
#include <string.h>

#include "tlog-proof.h"

static uint64_t split(uint64_t n)
{
	uint64_t k = 1;

	while (k << 1 < n)
		k <<= 1;
	return k;
}

static int push(uint8_t out[][TLOG_HASH_LEN], size_t *n, const uint8_t *leaves,
		uint64_t count)
{
	if (*n >= TLOG_PROOF_MAX)
		return -E2BIG;
	tlog_mth(leaves, count, out[(*n)++]);
	return 0;
}

/* PATH(m, D[lo:lo+size]): the audit path, bottom up. */
static int path(const uint8_t *d, uint64_t size, uint64_t m, uint8_t out[][TLOG_HASH_LEN],
		size_t *n)
{
	uint64_t k;
	int r;

	if (size <= 1)
		return 0;
	k = split(size);
	if (m < k) {
		r = path(d, k, m, out, n);
		return r < 0 ? r : push(out, n, d + k * TLOG_HASH_LEN, size - k);
	}
	r = path(d + k * TLOG_HASH_LEN, size - k, m - k, out, n);
	return r < 0 ? r : push(out, n, d, k);
}

int tlog_prove_inclusion(const uint8_t *leaves, uint64_t size, uint64_t index,
			 uint8_t out[][TLOG_HASH_LEN], size_t *ret_n)
{
	if (index >= size)
		return -EINVAL;
	*ret_n = 0;
	return path(leaves, size, index, out, ret_n);
}

/* SUBPROOF(m, D[0:size], whole). */
static int subproof(const uint8_t *d, uint64_t size, uint64_t m, int whole,
		    uint8_t out[][TLOG_HASH_LEN], size_t *n)
{
	uint64_t k;
	int r;

	if (m == size)
		return whole ? 0 : push(out, n, d, size);
	k = split(size);
	if (m <= k) {
		r = subproof(d, k, m, whole, out, n);
		return r < 0 ? r : push(out, n, d + k * TLOG_HASH_LEN, size - k);
	}
	r = subproof(d + k * TLOG_HASH_LEN, size - k, m - k, 0, out, n);
	return r < 0 ? r : push(out, n, d, k);
}

int tlog_prove_consistency(const uint8_t *leaves, uint64_t old, uint64_t size,
			   uint8_t out[][TLOG_HASH_LEN], size_t *ret_n)
{
	if (old == 0 || old > size)
		return -EINVAL;
	*ret_n = 0;
	return subproof(leaves, size, old, 1, out, ret_n);
}

/* RFC 9162 section 2.1.3.2. */
int tlog_check_inclusion(const uint8_t proof[][TLOG_HASH_LEN], size_t n, uint64_t index,
			 uint64_t size, const uint8_t leaf[TLOG_HASH_LEN],
			 const uint8_t root[TLOG_HASH_LEN])
{
	uint64_t fn = index, sn = size - 1;
	uint8_t r[TLOG_HASH_LEN];

	if (index >= size)
		return -EBADMSG;
	memcpy(r, leaf, TLOG_HASH_LEN);
	for (size_t i = 0; i < n; i++) {
		if (sn == 0)
			return -EBADMSG;
		if ((fn & 1) || fn == sn) {
			tlog_node_hash(proof[i], r, r);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else
			tlog_node_hash(r, proof[i], r);
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(r, root, TLOG_HASH_LEN) == 0 ? 0 : -EBADMSG;
}

/* RFC 9162 section 2.1.4.2. */
int tlog_check_consistency(const uint8_t proof[][TLOG_HASH_LEN], size_t n, uint64_t old,
			   uint64_t size, const uint8_t old_root[TLOG_HASH_LEN],
			   const uint8_t root[TLOG_HASH_LEN])
{
	uint8_t fr[TLOG_HASH_LEN], sr[TLOG_HASH_LEN];
	uint64_t fn = old - 1, sn = size - 1;
	size_t i = 0;

	if (old == 0 || old > size)
		return -EBADMSG;
	if (old == size)
		return n == 0 && memcmp(old_root, root, TLOG_HASH_LEN) == 0 ? 0 : -EBADMSG;
	if (n == 0)
		return -EBADMSG;
	/* A power of two: the old root is the first node of the path. */
	if ((old & (old - 1)) == 0) {
		memcpy(fr, old_root, TLOG_HASH_LEN);
	} else {
		memcpy(fr, proof[0], TLOG_HASH_LEN);
		i = 1;
	}
	memcpy(sr, fr, TLOG_HASH_LEN);
	while (fn & 1) {
		fn >>= 1;
		sn >>= 1;
	}
	for (; i < n; i++) {
		if (sn == 0)
			return -EBADMSG;
		if ((fn & 1) || fn == sn) {
			tlog_node_hash(proof[i], fr, fr);
			tlog_node_hash(proof[i], sr, sr);
			while (!(fn & 1) && fn != 0) {
				fn >>= 1;
				sn >>= 1;
			}
		} else
			tlog_node_hash(sr, proof[i], sr);
		fn >>= 1;
		sn >>= 1;
	}
	return sn == 0 && memcmp(fr, old_root, TLOG_HASH_LEN) == 0 &&
			       memcmp(sr, root, TLOG_HASH_LEN) == 0 ?
		       0 : -EBADMSG;
}
