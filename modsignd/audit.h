/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_AUDIT_H
#define MODSIGND_AUDIT_H

/*
 * One record per signing request, granted or refused: time, identity, key,
 * key id, hash, digest, module and result ("ok" or why not).  Each record
 * is a JSON line in --audit-log (opened for append) and a structured
 * journal entry.  Records are written as they come and made durable by
 * audit_sync(); the server sends no signature before the sync covering its
 * record has succeeded.  Syncing once per batch of completions keeps the
 * cost of fdatasync() off each signature.
 */

#include "digest.h"
#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "policy.h"

struct audit_event {
	const struct peer *peer;
	const char *key;     /* NULL if none was resolved */
	const char *key_id;
	const struct digest *md;    /* NULL if the request had no valid hash */
	const uint8_t *digest;
	size_t digest_len;
	const char *module;
	const char *result;  /* "ok" or the reason for refusal */
};

struct audit;

/* Open the log at @path (NULL: journal/stderr only).  Returns 0 or -errno. */
int audit_new(const char *path, struct audit **ret);

/* Record an event.  Returns 0, or -errno if the log file write failed. */
int audit_record(struct audit *a, const struct audit_event *e);

/* Make every record so far durable.  Returns 0 or -errno. */
int audit_sync(struct audit *a);

/* Reopen the log file (after rotation, on SIGHUP). */
int audit_reopen(struct audit *a);

void audit_free(struct audit *a);

#endif
