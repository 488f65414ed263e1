/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_METRICS_H
#define MODSIGND_METRICS_H

/*
 * The daemon's counters in the Prometheus text exposition format (0.0.4),
 * written to one file (--metrics-file) that node_exporter's textfile
 * collector, or any scraper of files, reads: signatures issued by key,
 * requests refused by key and reason, a latency histogram, requests in
 * flight, and per key its health and PKCS#11 re-opens.  The file is
 * replaced atomically (a temporary name in its directory, then rename), so
 * a reader never sees half of it, and is mode 0644 whatever the umask.
 * The directory is reached by the descriptor opened at start (the daemon's
 * own: private_dir_of()); nothing in it is ever opened but a file just
 * made with O_EXCL, so nothing planted there can block the event loop.
 * Called from the event loop only; never logs.
 */

#include <stdbool.h>
#include <stdint.h>

#include "keys.h"

/* How often metrics_tick() rewrites the file. */
#define METRICS_INTERVAL_MS 5000

enum metrics_refusal {
	METRICS_UNKNOWN_KEY,    /* the request named no key we have */
	METRICS_NOT_GRANTED,    /* policy: the key is not the peer's */
	METRICS_KEY_FAILED,     /* the key's token failed (unavailable) */
	METRICS_AUDIT_FAILED,   /* the audit record could not be written */
	METRICS_REFUSAL_N_
};

/* What happened to TLS peers before and at admission (admission.h). */
enum metrics_tls {
	METRICS_TLS_DROPPED,   /* closed to make room in a full listener */
	METRICS_TLS_TIMED_OUT, /* handshake not finished in time */
	METRICS_TLS_DEFERRED,  /* made to wait for its source's token or share */
	METRICS_TLS_CAPPED,    /* refused for a per-identity or per-source cap */
	METRICS_TLS_N_
};

struct metrics;

/* The file @name in the directory @dirfd, which *@ret owns from then on
 * (metrics_free() closes it; on failure it stays the caller's).  *@ret is
 * NULL when @dirfd is negative (no metrics file): every call below
 * accepts NULL. */
int metrics_new(int dirfd, const char *name, struct metrics **ret);
void metrics_free(struct metrics *m);

/* Monotonic microseconds, for a request's start. */
uint64_t metrics_now_us(void);

/* A request of key @k (index into @ks) answered; @start_us its start
 * (metrics_now_us()), 0 when refused before it was queued. */
void metrics_issued(struct metrics *m, const struct keystore *ks, const struct key *k,
		    uint64_t start_us);
/* @k NULL: an unknown key (no label value a peer chooses). */
void metrics_refused(struct metrics *m, const struct keystore *ks, const struct key *k,
		     enum metrics_refusal why, uint64_t start_us);

void metrics_tls(struct metrics *m, enum metrics_tls what);

/* Rewrite the file if METRICS_INTERVAL_MS have passed (@force: now).
 * Returns 0, or the -errno of a failed write (the old file stays). */
int metrics_tick(struct metrics *m, const struct keystore *ks, unsigned inflight, bool force);

#endif
