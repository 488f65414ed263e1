/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_CONN_H
#define MODSIGN_CLIENT_CONN_H

/*
 * The client's side of docs/PROTOCOL.md: one blocking connection to the
 * first server in the list that answers, carrying any number of requests;
 * replies are matched to requests by id, so many can be in flight.
 */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

#define CONN_DEFAULT_SERVER "unix:/run/modsignd/modsignd.sock"
#define CONN_MAX_SERVERS 16
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
