/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TLOG_PROOF_H
#define MODSIGN_TLOG_PROOF_H

/*
 * Merkle proofs of RFC 6962 section 2.1.1 (inclusion, the audit path)
 * and 2.1.2 (consistency), made from the leaf hashes of a tree and
 * checked as RFC 9162 sections 2.1.3.2 and 2.1.4.2 say, against roots
 * only.  The format of Go's golang.org/x/mod/sumdb/tlog RecordProof and
 * TreeProof (the suite checks ours with Go's CheckRecord and CheckTree).
 * Never logs; 0 or a negative errno.
 */

#include <stddef.h>
#include <stdint.h>

#include "tlog.h"

#define TLOG_PROOF_MAX 64u /* hashes: log2 of 2^64 leaves, and room */

/*
 * The inclusion proof of leaf @index in the tree of the @size leaf hashes
 * @leaves, into @out (TLOG_PROOF_MAX hashes) and *@ret_n.  -EINVAL if
 * @index >= @size.
 */
int tlog_prove_inclusion(const uint8_t *leaves, uint64_t size, uint64_t index,
			 uint8_t out[][TLOG_HASH_LEN], size_t *ret_n);

/* The consistency proof of the tree of the first @old leaves with the
 * tree of @size.  -EINVAL unless 0 < @old <= @size. */
int tlog_prove_consistency(const uint8_t *leaves, uint64_t old, uint64_t size,
			   uint8_t out[][TLOG_HASH_LEN], size_t *ret_n);

/* 0 if @proof shows @leaf at @index in the tree of @size with @root,
 * else -EBADMSG. */
int tlog_check_inclusion(const uint8_t proof[][TLOG_HASH_LEN], size_t n, uint64_t index,
			 uint64_t size, const uint8_t leaf[TLOG_HASH_LEN],
			 const uint8_t root[TLOG_HASH_LEN]);

/* 0 if @proof shows the tree of @old with @old_root a prefix of the tree
 * of @size with @root, else -EBADMSG. */
int tlog_check_consistency(const uint8_t proof[][TLOG_HASH_LEN], size_t n, uint64_t old,
			   uint64_t size, const uint8_t old_root[TLOG_HASH_LEN],
			   const uint8_t root[TLOG_HASH_LEN]);

#endif
