/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Requests: whole frames from a connection's input, parsed
 * (request.c), authorized, and answered at once or queued for the
 * workers.  server-internal.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "protocol.h"
#include "request.h"
#include "server-internal.h"
#include "translog.h"
#include "util.h"
#include "workq.h"

/* Returns false when the refusal was only counted into a summary record:
 * then the caller does not log it either. */
bool audit_refusal(struct server *s, const struct peer *peer,
		   const struct request *req, const char *why)
{
	struct audit_event e = {
		.peer = peer, .key = req ? req->key : NULL,
		.md = req ? req->md : NULL, .digest = req ? req->digest : NULL,
		.digest_len = req ? req->digest_len : 0, .mu = req && req->mu,
		.module = req ? req->module : NULL, .program = req ? req->program : NULL,
		.result = why,
	};

	/* A refusal sends no signature, so its record need not be synced
	 * before the reply; the next sync makes it durable.  Without a
	 * request the peer was refused before it authenticated: repeating
	 * that costs it nothing, so such records are bounded (audit.h).  A
	 * request's refusal is recorded each time: its peer has authenticated,
	 * and could as well fill the log with signatures it is granted. */
	if (!req)
		return audit_unauth_refusal(s->audit, &e);
	audit_record(s->audit, &e);
	return true;
}

static void dispatch_sign(struct server *s, struct conn *c,
			  const struct request *req, struct key *k)
{
	struct job *j = calloc(1, sizeof(*j));

	if (!j || !(j->module = strdup(req->module)) ||
	    (req->program && !(j->program = strdup(req->program)))) {
		job_free(j);
		conn_reply_error(c, req->id, "out of memory");
		return;
	}
	j->conn = c;
	j->id = req->id;
	j->key = k;
	j->md = req->md;
	memcpy(j->digest, req->digest, req->digest_len);
	j->digest_len = req->digest_len;
	j->use_keyid = req->use_keyid;
	j->mu = req->mu;
	j->start_us = metrics_now_us();
	c->inflight++;
	s->inflight++;
	workq_push(s->wq, j);
}

/*
 * What a mu request binds (docs/PROTOCOL.md): mu is made from tr, the
 * hash of one public key, so it is a message for that key only.  The key
 * must be an ML-DSA key that can sign mu, and tr the one of its
 * certificate: a client that took another certificate (an old one, or
 * another daemon's) gets a refusal, not a signature no kernel with this
 * key would take nor one over another message.
 */
static bool mu_is_for(const struct key *k, const struct request *req, char *why,
		      size_t why_size)
{
	if (!key_signs_mu(k))
		snprintf(why, why_size, "key %s cannot sign \"" PROTO_F_MU "\": not an ML-DSA key%s",
			 k->name, k->mldsa ? " in software" : "");
	else if (memcmp(k->tr, req->tr, MLDSA_TR_LEN) != 0)
		snprintf(why, why_size,
			 "\"" PROTO_F_TR "\" is not key %s's: mu made for another certificate", k->name);
	else
		return true;
	return false;
}

static void handle_sign(struct server *s, struct conn *c, struct request *req)
{
	struct key *k = keystore_find(s->keys, req->key);
	char why[PROTO_MAX_NAME + PEER_MAX_IDENTITY + 64];

	if (!k) {
		snprintf(why, sizeof(why), "%s", req->key ? "unknown key" :
							   "no default key: name one");
		metrics_refused(s->metrics, s->keys, NULL, METRICS_UNKNOWN_KEY, 0);
		audit_refusal(s, &c->peer, req, why);
		conn_reply_error(c, req->id, why);
		return;
	}
	req->key = k->name;
	if (!policy_allows_key(s->policy, &c->peer, k->name)) {
		snprintf(why, sizeof(why), "permission denied: key %s is not granted to %s",
			 k->name, c->peer.identity);
		metrics_refused(s->metrics, s->keys, k, METRICS_NOT_GRANTED, 0);
		audit_refusal(s, &c->peer, req, why);
		conn_reply_error(c, req->id, why);
		return;
	}
	if (req->mu && !mu_is_for(k, req, why, sizeof(why))) {
		audit_refusal(s, &c->peer, req, why);
		conn_reply_error(c, req->id, why);
		return;
	}
	dispatch_sign(s, c, req, k);
}

/* The checkpoint and key, or a piece of a tile (docs/PROTOCOL.md, "log"). */
static void handle_log(struct server *s, struct conn *c, const struct request *req)
{
	uint8_t buf[PROTO_LOG_CHUNK];
	uint64_t size;
	size_t len;
	int r;

	if (!s->translog) {
		conn_reply_error(c, req->id, "no transparency log");
		return;
	}
	if (!req->path) {
		conn_queue(c, reply_log(req->id, translog_checkpoint(s->translog),
					translog_vkey(s->translog)));
		return;
	}
	r = translog_read(s->translog, req->path, req->offset, buf, sizeof(buf), &len, &size);
	if (r < 0)
		conn_reply_error(c, req->id, r == -EINVAL ? "not a tile path" :
					     r == -ENOENT ? "no such tile" : strerror(-r));
	else
		conn_queue(c, reply_log_data(req->id, buf, len, size));
}

/* For status: may the peer in @ctx sign with @k. */
struct granted_ctx {
	const struct policy *policy;
	const struct peer *peer;
};

static bool peer_granted(const struct key *k, const void *ctx)
{
	const struct granted_ctx *g = ctx;

	return policy_allows_key(g->policy, g->peer, k->name);
}

static void handle_message(struct server *s, struct conn *c, json_object *msg)
{
	struct request req;
	const char *err, *op = NULL;
	struct key *k;

	if (request_parse(msg, &req, &err) < 0) {
		log_notice("%s: bad request: %s", c->peer.desc, err);
		proto_get_string(msg, PROTO_F_OP, PROTO_MAX_OP, true, &op);
		if (op && strcmp(op, PROTO_OP_SIGN) == 0)
			audit_refusal(s, &c->peer, &req, err);
		conn_reply_error(c, req.id, err);
		return;
	}
	switch (req.op) {
	case OP_STATUS:
		conn_queue(c, reply_status(req.id, s->keys, peer_granted,
					   &(struct granted_ctx){ s->policy, &c->peer }));
		break;
	case OP_CERT:
		k = keystore_find(s->keys, req.key);
		if (k)
			conn_queue(c, reply_cert(req.id, k));
		else
			conn_reply_error(c, req.id, req.key ? "unknown key" :
							      "no default key: name one");
		break;
	case OP_SIGN:
		handle_sign(s, c, &req);
		break;
	case OP_LOG:
		handle_log(s, c, &req);
		break;
	}
}

/* Take every whole frame we may act on from the input buffer. */
void conn_process(struct server *s, struct conn *c)
{
	size_t off = 0;

	while (!c->closing && !s->stopping && c->inflight < conn_window(s) &&
	       c->out_len < SERVER_OUT_HIGH) {
		_cleanup_(json_object_putp) json_object *msg = NULL;
		size_t used = 0;
		int r;

		r = proto_frame_take(c->in + off, c->in_len - off, &msg, &used);
		if (r == 0)
			break;
		if (r == -EMSGSIZE) {
			/* The framing is lost: answer once and hang up. */
			log_notice("%s: frame length out of bounds", c->peer.desc);
			conn_reply_error(c, 0, "frame length out of bounds");
			c->closing = true;
			off = c->in_len;
			break;
		}
		off += used;
		if (r < 0) {
			/* Well framed but not JSON: skip just this message. */
			log_notice("%s: message is not a JSON object", c->peer.desc);
			conn_reply_error(c, 0, "message is not a JSON object");
			continue;
		}
		handle_message(s, c, msg);
	}
	memmove(c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	if (off > 0 && c->in_len > 0)
		c->in_since_ms = now_ms(); /* the rest starts the next request */
}

void conn_readable(struct server *s, struct conn *c)
{
	int r = conn_fill(c);

	if (r < 0) {
		log_debug("%s: read failed: %s", c->peer.desc, strerror(-r));
		conn_close(s, c);
		return;
	}
	conn_process(s, c);
	conn_update(s, c);
}

/* TLS may hold decrypted bytes the socket no longer signals: read them
 * once there is room again. */
void conn_drain_tls(struct server *s, struct conn *c)
{
	if (c->fd >= 0 && c->ssl && !c->handshaking && SSL_pending(c->ssl) > 0 &&
	    conn_wants_input(s, c))
		conn_readable(s, c);
}
