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
 * and syncs the directory; only then may the signatures leave.  A commit
 * that fails is undone by reading the directory back, as a restart does,
 * but only as far as the checkpoint the daemon published (or the one the
 * failed commit signed, if it reached the disk): another one, even an
 * older one the log key signed, leaves the log broken (translog_broken())
 * until the published one is back, so that it is never rolled back.
 *
 * On open the directory is read back: the checkpoint, the partial tiles
 * it names and the partial entry bundle must agree with it (else the log
 * refuses to start: something it published is gone or changed), each
 * entry of the bundle an entry of at most TLOG_MAX_ENTRY bytes whose index
 * is its place; anything past it (the torn tail of a commit that a crash
 * interrupted: its signatures were never released) is removed.  Every file
 * is reached from the directory's descriptor, never through a link, and
 * must be a regular file (a FIFO is refused, never waited on).  Never logs.
 */

#include <openssl/evp.h>
#include <stdbool.h>
#include <stdint.h>

#include "tlog-entry.h"

struct translog;

/*
 * Open or create the log in @dir (created mode 0755 if missing) with the
 * Ed25519 @key (taken: freed with the log, also on failure) under
 * @origin.  @dir must be the caller's own and writable by neither group
 * nor others (-EPERM), not a symbolic link (-ENOTDIR).  An existing
 * checkpoint must verify with @key (-EKEYREJECTED); with @ephemeral (the
 * key was made at start) it cannot, and only the empty tree's is taken:
 * a one-time key never continues a log it did not sign (-EKEYREJECTED).
 * Other errors: -EBADMSG (the directory disagrees with its checkpoint),
 * -EXDEV (the checkpoint has another origin), -EBUSY (another daemon holds
 * it), -errno.  On failure @why says why in a few words, for a message
 * "DIR: WHY".
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

/* Drop the pending entries (their signatures will not be released); a
 * broken log is read back (0 if it works again). */
int translog_abort(struct translog *t);

/* The signed checkpoint last published, and the log's verifier key. */
const char *translog_checkpoint(const struct translog *t);
const char *translog_vkey(const struct translog *t);
uint64_t translog_size(const struct translog *t);

/* NULL while the log works; once a failed commit could not be undone
 * (the directory no longer holds the published checkpoint, a tile is
 * gone), why: appends and commits fail until a reload (translog_abort(),
 * or a failed commit's) finds the published checkpoint and its tiles
 * again. */
const char *translog_broken(const struct translog *t);

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
