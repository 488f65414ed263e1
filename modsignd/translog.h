/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_TRANSLOG_H
#define MODSIGND_TRANSLOG_H

/*
 * The transparency log (--transparency-log DIR, docs/TRANSPARENCY.md): a
 * directory laid out as C2SP tlog-tiles, one leaf per issued signature,
 * a checkpoint signed by the log key (never a module key) published
 * after each commit.  It joins the audit log's group commit: entries are
 * appended as jobs complete, translog_commit() writes their tiles and
 * the new checkpoint to "checkpoint.tmp", makes them durable together
 * (each file and directory it changed), then renames it to "checkpoint"
 * and syncs the directory; only then may the signatures leave.  A commit that fails is undone by reloading the state
 * of the last published checkpoint, as a restart does.
 *
 * On open the directory is read back: the checkpoint, the partial tiles
 * it names and the partial entry bundle must agree with it (else the log
 * refuses to start: something it published is gone or changed); anything
 * past it (the torn tail of a commit that a crash interrupted: its
 * signatures were never released) is removed.  Never logs.
 */

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>

#include "tlog-entry.h"

struct translog;

/*
 * Open or create the log in @dir (created mode 0755 if missing) with the
 * Ed25519 @key (taken: freed with the log, also on failure) under
 * @origin.  @ephemeral: the key was made at start, so an existing
 * checkpoint cannot carry its signature and is taken as it is; otherwise
 * it must verify with @key (-EKEYREJECTED).  Other errors: -EBADMSG (the
 * directory disagrees with its checkpoint, reason in @why), -EXDEV (the
 * checkpoint has another origin), -errno.
 */
int translog_open(const char *dir, EVP_PKEY *key, bool ephemeral, const char *origin,
		  struct translog **ret, char *why, size_t why_size);

/* Append @e (its index is set here) to the pending commit; *@ret_index
 * is its leaf index.  On failure the pending commit will fail too. */
int translog_append(struct translog *t, struct tlog_entry *e, uint64_t *ret_index);

/* Whether anything is pending. */
bool translog_pending(const struct translog *t);

/*
 * A commit in three steps, so that its syncs need not stop the caller:
 * translog_commit_begin() writes the pending entries' tiles and the new
 * checkpoint to "checkpoint.tmp" (returns 1 and the commit in *@ret, 0
 * and NULL if nothing is pending, or -errno as translog_commit() does);
 * translog_commit_sync() makes them durable and renames the checkpoint
 * into place, on any thread, touching nothing but @c; and
 * translog_commit_end() takes its result @r and frees @c: 0, the entries
 * are published; else they are gone as in translog_commit() and -errno.
 * Between begin and end nothing else may be appended or committed
 * (-EBUSY); the published checkpoint, the vkey and reads stay usable.
 */
struct translog_commit;
int translog_commit_begin(struct translog *t, struct translog_commit **ret);
int translog_commit_sync(struct translog_commit *c);
int translog_commit_end(struct translog *t, struct translog_commit *c, int r);

/* Write, sync and publish the pending entries (see above), all three
 * steps at once.  Returns 0 or -errno, and then the pending entries are
 * gone and the log is as its last checkpoint says. */
int translog_commit(struct translog *t);

/* Drop the pending entries (their signatures will not be released). */
int translog_abort(struct translog *t);

/* The signed checkpoint last published, and the log's verifier key. */
const char *translog_checkpoint(const struct translog *t);
const char *translog_vkey(const struct translog *t);
uint64_t translog_size(const struct translog *t);

/*
 * Read up to @max bytes from @offset of the tile @path (a name that
 * tlog_tile_path() makes, else -EINVAL), opened beneath the log
 * directory without following any symbolic link; *@ret_len bytes read,
 * *@ret_size the file's size.  -ENOENT if there is no such tile, or if
 * the published checkpoint does not cover all of it (a commit in flight
 * wrote it: it is not part of the log yet, and is cut back if the commit
 * fails).  For clients that audit the log online (the "log" request);
 * the checkpoint itself is translog_checkpoint(), the published one.
 */
int translog_read(struct translog *t, const char *path, uint64_t offset, uint8_t *buf,
		  size_t max, size_t *ret_len, uint64_t *ret_size);

/* Accepts NULL. */
void translog_free(struct translog *t);

#endif
