/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_AUDIT_H
#define MODSIGND_AUDIT_H

/*
 * One record per signing request, granted or refused: time, identity, key,
 * key id, hash, digest, module, the asking program when the request
 * named one (a hint, PROTO_F_PROGRAM) and result ("ok" or why not).  Each record
 * is a JSON line in --audit-log (opened for append) and a structured
 * journal entry.  Records are written as they come and made durable by
 * audit_sync(); the server sends no signature before the sync covering its
 * record has succeeded.  Syncing once per batch of completions keeps the
 * cost of fdatasync() off each signature.
 *
 * The file holds whole records only: an append that fails midway (a full
 * disk) is cut back to where the last complete record ends before anything
 * else is written, and a failed sync cuts back to the last durable record,
 * so that the file never says "ok" for a signature that was withheld.
 * Every string is well-formed UTF-8: bytes a peer sent that are not are
 * replaced by U+FFFD, and the module's raw bytes are kept in "module_hex".
 *
 * Refusals of peers that never authenticated cost nothing to repeat, so
 * they are bounded (see audit_unauth_refusal()).  Each of three tables
 * (unauthenticated network sources; names from certificates that
 * verified, refused by the policy; local users the policy refuses) has
 * AUDIT_REFUSAL_SLOTS slots, one per source,
 * and one shared past them.  In a slot's interval (AUDIT_REFUSAL_INTERVAL_S
 * from its first refusal) the first refusal of each of its first
 * AUDIT_REFUSAL_REASONS reasons is recorded, the rest are counted into one
 * summary at its end, and the next interval starts after that: at most
 * AUDIT_REFUSAL_REASONS + 1 records per slot and interval.  So at most
 * AUDIT_REFUSAL_MAX_RECORDS (975) such records per 60 s on average, and
 * never more than 2 * 4 + 1 per slot (1755 in all) within any 60 s,
 * whatever the rate of connections, of addresses, of reasons or of names
 * (a SIGHUP, the operator's, ends every interval early).  A name's or a
 * user's own slot sees one reason, its refusal by the policy: two records
 * at most.
 */

#include "digest.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "policy.h"

#define AUDIT_REFUSAL_INTERVAL_S 60u
#define AUDIT_REFUSAL_SLOTS 64u    /* per table, sources tracked apart; the rest share one */
#define AUDIT_REFUSAL_REASONS 4u   /* per slot, reasons recorded once; the rest are "other" */
/* Three tables of AUDIT_REFUSAL_SLOTS + 1 slots, each a record per reason
 * and a summary per interval. */
#define AUDIT_REFUSAL_MAX_RECORDS (3u * (AUDIT_REFUSAL_SLOTS + 1u) * (AUDIT_REFUSAL_REASONS + 1u))
#define AUDIT_MAX_REASON (PEER_MAX_IDENTITY + 64)

struct audit_event {
	const struct peer *peer;
	const char *key;     /* NULL if none was resolved */
	const char *key_id;
	const struct digest *md;    /* NULL if the request had no valid hash */
	bool mu;             /* a mu request (@digest is mu): "hash" says PROTO_HASH_MU */
	const uint8_t *digest;
	size_t digest_len;
	const char *module;
	const char *program; /* NULL: the request named none; else the
			      * client's unauthenticated word, one
			      * printable word (proto_program_valid) */
	const char *result;  /* "ok" or the reason for refusal */
};

struct audit;

/* Open the log @name in the directory @dirfd (-1: journal/stderr only),
 * a regular file (regular_file_openat()), created mode 0640 if absent.
 * *@ret owns @dirfd from then on, and reopens @name there on SIGHUP; on
 * failure @dirfd stays the caller's.  Returns 0 or -errno (-EINVAL: not a
 * regular file, -ELOOP: a symbolic link, -EPERM: not the daemon's own, or
 * group or others may write it). */
int audit_new(int dirfd, const char *name, struct audit **ret);

/* Append @e to the log file only.  Returns 0, or -errno when the write
 * failed (then nothing of it is left in the file). */
int audit_write(struct audit *a, const struct audit_event *e);

/* The journal entry for @e (stderr without journald), nothing else. */
void audit_journal(struct audit *a, const struct audit_event *e);

/* Both: the file, then the journal.  Returns audit_write()'s result. */
int audit_record(struct audit *a, const struct audit_event *e);

/*
 * Record the refusal of a peer that never authenticated: a UNIX peer no
 * rule names, a TLS peer whose handshake or certificate failed, or whose
 * verified name no rule admits.  The source is @e->peer->identity
 * ("uid:N", "tls:ADDRESS" or "cn:NAME"); the names ("cn:", @e->peer->cn
 * set) have a table of their own, so that no number of addresses can
 * crowd out the refusals of a certificate the CA issued (a revoked
 * builder's), and so have the local users ("uid:", a UNIX peer).  The first refusal of a source is recorded as
 * audit_record() would, and so is the first of each new reason until
 * AUDIT_REFUSAL_REASONS are taken; the others in the next
 * AUDIT_REFUSAL_INTERVAL_S seconds are only counted, and one summary
 * record follows when the interval is over (or on SIGHUP, or at exit):
 * "summary":true, "count" (the refusals not recorded), "first", "last",
 * "interval_s", and "reasons" (how many of "count" each reason had,
 * those past the first AUDIT_REFUSAL_REASONS as "other"); its result is
 * their reason when they had one, else "several reasons (see
 * \"reasons\")".  Sources past
 * AUDIT_REFUSAL_SLOTS share one slot per table, identity "*", "cn:*" or "uid:*"
 * (a quoted name never reads "cn:*": text_quote_name() quotes it).
 * Returns true when @e was recorded in full, false when it was only
 * counted: the caller logs its own line only in the first case, so that
 * the journal is bounded as the file is.
 */
bool audit_unauth_refusal(struct audit *a, const struct audit_event *e);

/* Write the summaries of intervals that are over; call about once a second. */
void audit_tick(struct audit *a);

/* Make every record so far durable.  Returns 0 or -errno; on failure the
 * records since the last good sync are cut from the file. */
int audit_sync(struct audit *a);

/* Reopen the log file (after rotation, on SIGHUP) by its name in the
 * directory opened at start; pending summaries go to the old file first.
 * On failure (as audit_new()'s) the old file stays in use. */
int audit_reopen(struct audit *a);

/* Why audit_new() or audit_reopen() refused the file, for a message
 * "FILE: WHY" (-EPERM: not the daemon's own, or group or others may write
 * it; regular_file_refusal()'s); NULL for another error. */
const char *audit_file_refusal(int r);

/* Write pending summaries, sync, close; accepts NULL. */
void audit_free(struct audit *a);

#endif
