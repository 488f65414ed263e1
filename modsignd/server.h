/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_SERVER_H
#define MODSIGND_SERVER_H

/*
 * The event loop: listeners, connections, framing and dispatch.  One
 * thread runs it; signing happens in the workq.  Every limit that a peer
 * could push against is named here.
 */

#include <sys/types.h>

#include "keys.h"
#include "policy.h"

#define SERVER_MAX_LISTENERS 16
#define SERVER_DEFAULT_MAX_CONNS 256
/* Requests one connection may have queued for signing at once; past it we
 * stop reading from that connection until replies drain. */
#define SERVER_MAX_INFLIGHT 64
/* Unsent reply bytes after which we stop reading a connection. */
#define SERVER_OUT_HIGH (256u * 1024)
/* A peer that leaves a frame half-sent, or does not read its replies,
 * for this long is disconnected. */
#define SERVER_IO_TIMEOUT_MS 30000
/* On SIGTERM, how long in-flight requests get to finish. */
#define SERVER_DRAIN_TIMEOUT_MS 10000

struct server_config {
	unsigned workers;
	unsigned max_conns;
	mode_t socket_mode;
};

struct server;

int server_new(const struct server_config *cfg, const struct keystore *keys,
	       const struct policy *policy, struct server **ret);

/* Bind and listen on a UNIX socket path, replacing a stale socket file. */
int server_listen_unix(struct server *s, const char *path);

/* Serve until SIGTERM or SIGINT, then finish in-flight requests. */
int server_run(struct server *s);

/* Close everything, unlink socket files we created; accepts NULL. */
void server_free(struct server *s);

#endif
