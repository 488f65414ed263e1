/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_CONN_INTERNAL_H
#define MODSIGN_CLIENT_CONN_INTERNAL_H

/* What conn.c shares with its TLS transport, conn-tls.c. */

#include <stdbool.h>
#include <sys/types.h>

#include "conn.h"

struct conn;

/* A transport other than plain send/recv on the socket. */
struct conn_ops {
	/* One send or receive: bytes moved, 0 at end of stream (receive),
	 * or -errno (-ETIMEDOUT, -EPIPE, -ECONNRESET). */
	ssize_t (*xfer)(struct conn *c, void *buf, size_t len, bool out);
	/* After a failed write: whatever the server sent before it hung up
	 * (its refusal frame), bytes read or -errno. */
	ssize_t (*read_waiting)(struct conn *c, void *buf, size_t len);
	void (*free)(struct conn *c);
	/* Bytes the transport has buffered past the socket. */
	size_t (*pending)(const struct conn *c);
};

struct conn {
	int fd;
	const struct conn_ops *tls_ops; /* NULL on UNIX sockets */
	void *tls;                      /* the transport's state */
	char *address;
	char *hangup; /* why the daemon hung up on us, if it said */
	uint64_t next_id;
	unsigned timeout_ms; /* a frame must arrive whole within this */
	uint8_t *in;
	size_t in_len, in_cap;
};

/* Give up on a daemon that does not answer within @ms. */
void conn_set_timeouts(int fd, unsigned ms);

/* Connect to @t (a tls: target; by name when it has no address) within
 * @timeout_ms and complete the TLS handshake within as long.  The server's
 * certificate must chain to --tls-ca, not be CA:TRUE, name the target's
 * host in its subjectAltName (a DNS name, a whole-label wildcard, or an
 * IP address as inet_pton() reads it; never its CN) and serverAuth in its
 * extended key usage.  On failure
 * *@ret_err may name the reason (else strerror of the result). */
int conn_open_tls(struct conn *c, const struct conn_target *t,
		  const struct conn_tls *tls, unsigned timeout_ms, const char **ret_err);

#endif
