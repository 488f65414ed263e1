/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_POOL_H
#define MODSIGN_CLIENT_POOL_H

/*
 * A batch's connections: one to every target of the server list that
 * answers (every `server` entry, every address of a tls: name), each
 * carrying its own window of requests.  pool_wait() says which connection
 * has a reply waiting or has stalled; the caller drops a connection that
 * failed and sends its requests again on the others (batch.c).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <openssl/x509.h>

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
 * The certificate a batch signs with, which every server of its pool must
 * hold the key of.  @cert given (sign --cert, the config's cert, the X509
 * of sign-file): a server with another key is left out.  @cert NULL: the
 * servers' own, which must all be the same one (a server that answers
 * first is no more trusted than the others); pool_open() then sets it,
 * a reference the caller frees.
 */
struct pool_pin {
	const char *key;  /* the key asked for; NULL: the default key */
	X509 *cert;
	const char *path; /* where @cert came from, for messages */
};

/*
 * Connect to every target of @g's server list, and ask each for the
 * certificate of @pin->key, all at once (a silent server costs one stall
 * timeout, not one each; each connection's wait is bounded by it as a
 * signature's is).  A target that cannot be reached, whose TLS
 * certificate we do not trust, that does not answer `cert` or refuses it,
 * or whose key is not @pin's, is named on stderr with the reason and left
 * out (never used): v[0..n) are the servers that hold the key.  0 if at
 * least one does; else, each failure said: -ECONNREFUSED (none
 * answered), -ENOKEY (none holds the key), -ENOTUNIQ (no @pin->cert given
 * and two servers hold different keys: refused, both named).
 */
int pool_open(struct pool *p, const struct global *g, struct pool_pin *pin);

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
