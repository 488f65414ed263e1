/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_CONN_H
#define MODSIGN_CLIENT_CONN_H

/*
 * The client's side of docs/PROTOCOL.md: one blocking connection to the
 * first server in the list that answers, carrying any number of requests;
 * replies are matched to requests by id, so many can be in flight.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proto.h"

#define CONN_DEFAULT_SERVER "unix:/run/modsignd/modsignd.sock"
#define CONN_MAX_SERVERS 16
/* Places a server list expands to: every address of every tls: name. */
#define CONN_MAX_TARGETS 64
#define CONN_MAX_LABEL 320
/* A daemon that does not answer within this time is considered gone. */
#define CONN_TIMEOUT_SEC 120

struct conn;

/* Credentials for tls: servers: the CA that signed the server's
 * certificate, and our own certificate and key for mutual TLS. */
struct conn_tls {
	const char *ca;
	const char *cert;
	const char *key;
};

/*
 * One place a server can be reached: an entry of the server list as
 * given, and for a tls:HOST:PORT entry one of the addresses HOST resolved
 * to (the certificate is still checked against HOST).  A name with
 * several addresses is several targets: a pool.
 */
struct conn_target {
	const char *server;            /* borrowed: unix:PATH or tls:HOST:PORT */
	struct sockaddr_storage addr;  /* tls: the address to connect to */
	socklen_t addr_len;            /* 0: unix, or HOST did not resolve */
	char label[CONN_MAX_LABEL];    /* for messages: the entry, and the
					* address when the name has several */
	char why[CONN_MAX_LABEL];      /* non-empty: cannot be connected to
					* (the resolver's reason) */
};

/*
 * Expand @servers into targets, in list order (a name's addresses in the
 * resolver's order, duplicates dropped).  An entry that does not resolve
 * is one target whose why says so.  *@ret (new array, free()) has at
 * least one target per entry, at most CONN_MAX_TARGETS.
 */
int conn_targets(const char *const *servers, size_t n, struct conn_target **ret,
		 size_t *ret_n);

/*
 * Connect to @t; connect and TLS handshake may take @timeout_ms each, and
 * later reads and writes CONN_TIMEOUT_SEC (conn_set_timeout() changes
 * that).  On failure returns a negative errno (-EPROTO: the TLS handshake
 * failed, e.g. a certificate we do not trust) and *@ret_err may give the
 * reason (static text; NULL: strerror).
 */
int conn_open_target(const struct conn_target *t, const struct conn_tls *tls,
		     unsigned timeout_ms, struct conn **ret, const char **ret_err);

/* Reads and writes on @c give up after @ms (-ETIMEDOUT). */
void conn_set_timeout(struct conn *c, unsigned ms);

/* The socket, for poll(2). */
int conn_fd(const struct conn *c);

/* True when conn_recv() can return a frame without waiting for the
 * socket: a whole frame is buffered, or the TLS layer holds bytes that
 * poll(2) on the socket would not show. */
bool conn_has_input(const struct conn *c);

/*
 * Connect to the first of @servers (unix:PATH or tls:HOST:PORT) that
 * accepts; *@ret_index tells which.  On failure returns a negative errno
 * and writes a one-line reason (for the last server tried) into @err.
 */
int conn_open(const char *const *servers, size_t n, const struct conn_tls *tls,
	      struct conn **ret, size_t *ret_index, char *err, size_t err_size);
void conn_close(struct conn *c);
static inline void conn_closep(struct conn **c)
{
	conn_close(*c);
}

/* The address that answered. */
const char *conn_address(const struct conn *c);

/* A fresh request id. */
uint64_t conn_next_id(struct conn *c);

/* Send one message. */
int conn_send(struct conn *c, json_object *msg);

/* No more requests follow: a UNIX connection is half-closed, so the
 * daemon reads the end of input with the last request and hangs up right
 * after its reply instead of waking again for our close.  Replies still
 * come.  Over TLS, nothing. */
void conn_end_requests(struct conn *c);

/* Receive the next message (new reference).  -ECONNRESET if the daemon hung
 * up, -ETIMEDOUT, -EBADMSG/-EMSGSIZE for garbage. */
int conn_recv(struct conn *c, json_object **ret);

/*
 * Send @req and wait for its reply.  Returns 0 with *@ret the reply when
 * it says ok; -EREMOTEIO when the daemon refused (*@ret_error then points
 * into the reply, which is still returned in *@ret for the caller to put).
 */
int conn_call(struct conn *c, json_object *req, json_object **ret,
	      const char **ret_error);

/* Text for an error of this connection: the daemon's own reason when it
 * hung up on us with one (policy, connection limit), else strerror. */
const char *conn_strerror(const struct conn *c, int err);

/* Remember why the daemon refused the connection (a reply with id 0). */
void conn_note_refusal(struct conn *c, const char *why);

/* The "error" member of a failed reply, or a generic text. */
const char *reply_error(json_object *reply);

#endif
