/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_SERVER_H
#define MODSIGND_SERVER_H

/*
 * The event loop: listeners, connections (UNIX or TLS), framing, access
 * checks and dispatch.  One thread runs it; signing happens in the workq.
 * Every limit that a peer could push against is named here.
 */

#include <openssl/ssl.h>
#include <sys/types.h>

#include "audit.h"
#include "keys.h"
#include "policy.h"
#include "protocol.h"

#define SERVER_MAX_LISTENERS 16
#define SERVER_DEFAULT_MAX_CONNS 256
/* TLS handshakes in progress per listener: unauthenticated, they take no
 * connection slot, so they have a budget of their own (server-accept.c). */
#define SERVER_DEFAULT_MAX_HANDSHAKES 128
/* Key exchanges one source (an IPv4 address, an IPv6 /64) may run at once,
 * so that one address cannot take the whole budget (admission.h). */
#define SERVER_DEFAULT_MAX_HANDSHAKES_PER_SOURCE 32
/* Connection slots TLS peers may not take: kept for local clients. */
#define SERVER_UNIX_RESERVE(max_conns) ((max_conns) / 4)
/* A TLS handshake must end, and a connection with nothing pending may
 * stay silent, this long (seconds; --handshake-timeout, --idle-timeout). */
#define SERVER_DEFAULT_HANDSHAKE_TIMEOUT 10
#define SERVER_DEFAULT_IDLE_TIMEOUT 60
/* Requests one connection may have queued for signing; past it we stop
 * reading it.  Four group commits, so that the workers still have work
 * while one syncs; the client keeps as many in flight (lib/protocol.h;
 * docs/PERFORMANCE.md, "Sign window and group commit"). */
#define SERVER_MAX_INFLIGHT PROTO_SIGN_WINDOW
/* Requests in flight across all connections, shared out between them
 * (server-conn.c, conn_window()): what peers can make the daemon hold in
 * locked memory is bounded whatever their number (docs/PERFORMANCE.md). */
#define SERVER_MAX_JOBS 4096
/* Unsent reply bytes after which we stop reading a connection: a client
 * must read its replies while it writes requests (modsign-client looks
 * every 32), else it waits until SERVER_IO_TIMEOUT_MS. */
#define SERVER_OUT_HIGH (256u * 1024)
/* A peer that leaves a frame half-sent or its replies unread for this
 * long is disconnected. */
#define SERVER_IO_TIMEOUT_MS 30000
/* On SIGTERM, how long in-flight requests get to finish. */
#define SERVER_DRAIN_TIMEOUT_MS 10000

struct metrics;

struct server_config {
	unsigned workers;
	unsigned max_conns;
	unsigned max_handshakes;            /* per TLS listener */
	unsigned max_handshakes_per_source; /* key exchanges per source */
	unsigned handshake_timeout;         /* seconds */
	/* Per source: new handshakes a second and at once; admitted
	 * connections per source and per identity (0: the default):
	 * admission.h. */
	unsigned handshake_rate, handshake_burst;
	unsigned max_conns_per_source, max_conns_per_identity;
	unsigned idle_timeout;              /* seconds */
	mode_t socket_mode;
	SSL_CTX *tls; /* NULL: no TLS listeners allowed */
	const char *audit_log;     /* for messages */
	const char *metrics_file;  /* for messages */
	struct metrics *metrics;   /* NULL: none (metrics.h); the caller's */
	/* Called on SIGHUP to re-read the policy in place; may be NULL. */
	int (*reload)(void *userdata);
	void *userdata;
};

struct server;

/* @keys, @policy and @audit stay owned by the caller and must outlive @ret. */
int server_new(const struct server_config *cfg, struct keystore *keys,
	       struct policy *policy, struct audit *audit, struct server **ret);

/* Record every issued signature in @t (owned by the caller, outliving
 * @s) before it is released; docs/TRANSPARENCY.md.  Starts the thread
 * that syncs its commits: 0 or -errno. */
struct translog;
int server_set_translog(struct server *s, struct translog *t);

/* Bind and listen on a UNIX socket path, replacing a stale socket file. */
int server_listen_unix(struct server *s, const char *path);

/* Bind and listen on TCP HOST:PORT for TLS clients. */
int server_listen_tls(struct server *s, const char *host_port);

/*
 * Take the sockets systemd passed (sd_listen_fds_with_names): UNIX stream
 * sockets serve local clients, TCP sockets (or any named "tls") serve TLS.
 * Returns the number adopted, or a negative errno.
 */
int server_adopt_systemd(struct server *s);

/* Serve until SIGTERM or SIGINT, then finish in-flight requests. */
int server_run(struct server *s);

/* Close everything, unlink socket files we created; accepts NULL. */
void server_free(struct server *s);

#endif
