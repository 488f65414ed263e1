/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_POOL_H
#define MODSIGN_CLIENT_POOL_H

/*
 * A batch's connections: one to every target of the server list that
 * answers (every `server` entry, every address of a tls: name), each
 * carrying its own window of requests.  pool_wait() says which connection
 * has a reply waiting or has stalled; the caller drops a connection that
 * failed and sends its requests again on the others (cmd-sign.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client.h"
#include "conn.h"

struct pool_conn {
	struct conn *c;       /* NULL once dropped */
	size_t inflight;      /* requests sent and not answered */
	uint64_t progress_ms; /* now_ms() of its last reply, or of the
			       * request that ended its idleness */
};

struct pool {
	struct pool_conn v[CONN_MAX_TARGETS];
	size_t n;          /* connections opened: v[0..n) */
	size_t live;       /* of them, not dropped */
	unsigned stall_ms; /* an outstanding request unanswered this long,
			    * while another connection is live: stalled */
};

/*
 * Connect to every target of @g's server list.  A target that cannot be
 * reached, or whose TLS certificate we do not trust, is named on stderr
 * with the reason and left out (never used).  0 if at least one answered;
 * else -errno, each target's failure said.
 */
int pool_open(struct pool *p, const struct global *g);

/* A pool of the one connection @c, which it takes. */
void pool_adopt(struct pool *p, struct conn *c, unsigned stall_ms);

/* Book-keeping for the stall clock: a request sent on, a reply read from
 * connection @i. */
void pool_sent(struct pool *p, size_t i);
void pool_replied(struct pool *p, size_t i);

/*
 * Wait until a live connection with requests outstanding has input (1),
 * or one has stalled (0: no reply for stall_ms while another connection
 * is live, or for CONN_TIMEOUT_SEC when it is the last); *@ret_i says
 * which.  -ENOTCONN when no live connection has requests outstanding,
 * or poll(2)'s -errno.  Unless @block, it does not wait: -EAGAIN when no
 * input is there yet and no connection is past its stall deadline.
 */
int pool_wait(struct pool *p, bool block, size_t *ret_i);

/* Close connection @i; its outstanding requests are the caller's. */
void pool_drop(struct pool *p, size_t i);

/* Close every connection. */
void pool_close(struct pool *p);

#endif
