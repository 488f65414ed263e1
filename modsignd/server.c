/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "admission.h"
#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "protocol.h"
#include "request.h"
#include "server.h"
#include "syncer.h"
#include "tls.h"
#include "translog.h"
#include "util.h"
#include "workq.h"

/* What an epoll event points at; the first member of each watched thing. */
enum watch_kind { W_LISTENER, W_CONN, W_WORKQ, W_SYNCER, W_SIGNAL };

struct conn;

struct listener {
	enum watch_kind kind;
	int fd;
	bool tls;
	char *path; /* socket file to unlink at exit; NULL if not ours */
	/* TLS handshakes in progress here, oldest first: their own budget,
	 * apart from the connection limit (see SERVER_DEFAULT_MAX_HANDSHAKES) */
	struct conn *hs_first, *hs_last;
	unsigned n_handshakes;
};

struct conn {
	enum watch_kind kind;
	struct conn *prev, *next;
	int fd; /* -1 once closed while jobs are still out */
	SSL *ssl; /* NULL on UNIX sockets */
	bool handshaking; /* then linked in listener->hs_first..hs_last */
	bool held;         /* counted in server->n_held */
	bool tls_admitted; /* counted in server->n_tls and in server->adm */
	/* A handshake that has sent its first bytes took a token of its
	 * source's (admission.h); one that found none waits, unread. */
	bool charged, deferred;
	struct listener *listener;
	struct conn *hs_prev, *hs_next;
	struct admission_source source;
	uint32_t ssl_want; /* EPOLLIN/EPOLLOUT the last blocked TLS call needs */
	struct peer peer;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_cap;
	unsigned inflight;
	uint32_t events;
	bool eof;     /* peer finished sending (may still read replies) */
	bool closing; /* refused or protocol error: flush, then close */
	uint64_t last_io_ms;
	/* Since when a request has been arriving, or replies waiting to be
	 * read: a peer gets SERVER_IO_TIMEOUT_MS for each, however it drips. */
	uint64_t in_since_ms, out_since_ms;
	uint64_t accepted_ms; /* a TLS handshake must end within the timeout */
};

/* Unauthenticated TLS peers dropped, by cause: counted, and summed up in
 * the log at most once a minute, so that a flood does not flood the log. */
struct drop_counts {
	uint64_t listener_budget, handshake_timeout;
	uint64_t deferred; /* not dropped: handshakes made to wait for a token */
};

struct server {
	struct server_config cfg;
	struct keystore *keys;
	struct policy *policy;
	struct audit *audit;
	struct translog *translog; /* NULL: no --transparency-log */
	/* Finished jobs held for a larger group commit (with a log only). */
	struct job *held, *held_tail;
	unsigned n_held_jobs;
	uint64_t held_since_ms;
	/* The group whose log commit the syncer thread is making durable. */
	struct job *committing;
	struct translog_commit *commit;
	struct syncer *syncer;
	enum watch_kind syncer_watch;
	int syncer_fd;
	int epfd;
	struct listener listeners[SERVER_MAX_LISTENERS];
	size_t n_listeners;
	struct conn *conns;
	unsigned n_conns;      /* all in s->conns, handshaking and dead ones too */
	unsigned n_handshakes; /* of which TLS handshakes in progress */
	/* Connection slots taken: authenticated peers, open or with jobs
	 * still out (--max-connections); and of those, TLS peers still open. */
	unsigned n_held, n_tls;
	unsigned n_dead; /* closed, waiting for reap_conns() */
	unsigned n_deferred; /* handshakes waiting for a token */
	struct admission *adm; /* per-source and per-identity limits */
	struct drop_counts dropped, dropped_logged;
	uint64_t drop_log_ms;
	unsigned inflight;
	uint64_t signed_total;
	struct workq *wq;
	enum watch_kind wq_watch, sig_watch;
	int wq_fd, sig_fd;
	bool stopping;
	uint64_t drain_deadline_ms;
	uint64_t watchdog_usec;
	struct metrics *metrics; /* NULL: no --metrics-file; cfg's */
};

static int watch(struct server *s, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* ---- connections: life ------------------------------------------------ */

static void handshake_join(struct server *s, struct listener *l, struct conn *c)
{
	c->handshaking = true;
	c->listener = l;
	c->hs_prev = l->hs_last;
	if (l->hs_last)
		l->hs_last->hs_next = c;
	else
		l->hs_first = c;
	l->hs_last = c;
	l->n_handshakes++;
	s->n_handshakes++;
}

static void conn_hold(struct server *s, struct conn *c)
{
	c->held = true;
	s->n_held++;
}

/* Give back the connection slot: once closed with no job out. */
static void conn_release(struct server *s, struct conn *c)
{
	if (c->held && c->fd < 0 && c->inflight == 0) {
		c->held = false;
		s->n_held--;
	}
}

/* The handshake ended, one way or another: its budget slot is free. */
static void handshake_leave(struct server *s, struct conn *c)
{
	struct listener *l = c->listener;

	if (!c->handshaking)
		return;
	c->handshaking = false;
	if (c->deferred) {
		c->deferred = false;
		s->n_deferred--;
	}
	if (c->charged)
		admission_end_handshake(s->adm, &c->source);
	if (c->hs_prev)
		c->hs_prev->hs_next = c->hs_next;
	else
		l->hs_first = c->hs_next;
	if (c->hs_next)
		c->hs_next->hs_prev = c->hs_prev;
	else
		l->hs_last = c->hs_prev;
	c->hs_prev = c->hs_next = NULL;
	l->n_handshakes--;
	s->n_handshakes--;
}

static void conn_free(struct server *s, struct conn *c)
{
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	free(c->in);
	free(c->out);
	free(c);
}

/*
 * Close the socket now.  The struct lives on, with fd -1, until its last
 * job has returned and the event loop has finished the batch of events it
 * is dispatching (one may still point at it): reap_conns() frees it.
 */
static void conn_close(struct server *s, struct conn *c)
{
	if (c->fd >= 0) {
		bool shutdown = c->ssl && !c->handshaking;

		epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		handshake_leave(s, c);
		if (c->tls_admitted) {
			c->tls_admitted = false;
			s->n_tls--;
			admission_leave(s->adm, &c->source, c->peer.identity);
		}
		if (shutdown)
			SSL_shutdown(c->ssl); /* best effort, non-blocking */
		SSL_free(c->ssl);
		c->ssl = NULL;
		ERR_clear_error();
		close(c->fd);
		c->fd = -1;
		s->n_dead++;
		conn_release(s, c);
	}
}

static void reap_conns(struct server *s)
{
	struct conn *c, *next;

	for (c = s->conns; c && s->n_dead > 0; c = next) {
		next = c->next;
		if (c->fd < 0 && c->inflight == 0) {
			conn_free(s, c);
			s->n_dead--;
		}
	}
}

/* ---- connections: bytes ------------------------------------------------ */

/* Map a blocked or failed TLS call: 0 = try later (ssl_want set), <0 = dead. */
static int tls_result(struct conn *c, int ret)
{
	switch (SSL_get_error(c->ssl, ret)) {
	case SSL_ERROR_WANT_READ:
		c->ssl_want = EPOLLIN;
		return 0;
	case SSL_ERROR_WANT_WRITE:
		c->ssl_want = EPOLLOUT;
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return -ECONNRESET;
	default:
		ERR_clear_error();
		return -EPROTO;
	}
}

/* Read what is there: >0 bytes, 0 nothing now, -ECONNRESET at EOF, <0 error. */
static ssize_t conn_recv(struct conn *c, void *buf, size_t len)
{
	ssize_t n;
	size_t got;

	if (c->ssl) {
		int r;

		c->ssl_want = 0;
		if (SSL_read_ex(c->ssl, buf, len, &got) == 1)
			return (ssize_t)got;
		r = tls_result(c, 0);
		/* A read waiting for input is the normal case, governed by
		 * conn_wants_input(); only a read that must write is special. */
		if (c->ssl_want == EPOLLIN)
			c->ssl_want = 0;
		return r;
	}
	n = recv(c->fd, buf, len, MSG_DONTWAIT);
	if (n > 0)
		return n;
	if (n == 0)
		return -ECONNRESET;
	return errno == EAGAIN || errno == EINTR ? 0 : -errno;
}

static ssize_t conn_send(struct conn *c, const void *buf, size_t len)
{
	ssize_t n;
	size_t put;

	if (c->ssl) {
		int r;

		c->ssl_want = 0;
		if (SSL_write_ex(c->ssl, buf, len, &put) == 1)
			return (ssize_t)put;
		r = tls_result(c, 0);
		if (c->ssl_want == EPOLLOUT)
			c->ssl_want = 0; /* pending output asks for EPOLLOUT anyway */
		return r;
	}
	n = send(c->fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (n >= 0)
		return n;
	return errno == EAGAIN || errno == EINTR ? 0 : -errno;
}

static int conn_queue(struct conn *c, json_object *reply)
{
	_cleanup_(freep) uint8_t *frame = NULL;
	size_t len;
	int r;

	if (!reply)
		return -ENOMEM;
	r = proto_frame_build(reply, &frame, &len);
	json_object_put(reply);
	if (r < 0)
		return r;
	if (c->out_len + len > c->out_cap) {
		size_t cap = (c->out_len + len) * 2;
		uint8_t *p = realloc(c->out, cap);

		if (!p)
			return -ENOMEM;
		c->out = p;
		c->out_cap = cap;
	}
	if (c->out_len == 0)
		c->out_since_ms = now_ms();
	memcpy(c->out + c->out_len, frame, len);
	c->out_len += len;
	return 0;
}

static void conn_reply_error(struct conn *c, uint64_t id, const char *msg)
{
	(void)conn_queue(c, proto_error_new(id, msg));
}

/* Write what we can; returns -errno on a dead peer. */
static int conn_flush(struct conn *c)
{
	while (c->out_len > 0) {
		ssize_t n = conn_send(c, c->out, c->out_len);

		if (n <= 0)
			return (int)n;
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
		c->last_io_ms = now_ms();
	}
	/* Give back the memory a burst of replies took. */
	if (c->out_cap > 64 * 1024) {
		free(c->out);
		c->out = NULL;
		c->out_cap = 0;
	}
	return 0;
}

/* ---- connections: state ------------------------------------------------ */

/* Requests one connection may have in flight: its share of
 * SERVER_MAX_JOBS (server.h).  A connection over it after others came
 * reads again once its replies bring it under. */
static unsigned conn_window(const struct server *s)
{
	unsigned share = SERVER_MAX_JOBS / (s->n_held ?: 1);

	return share < 1 ? 1 : share > SERVER_MAX_INFLIGHT ? SERVER_MAX_INFLIGHT : share;
}

static bool conn_wants_input(const struct server *s, const struct conn *c)
{
	return !s->stopping && !c->eof && !c->closing && !c->deferred &&
	       c->inflight < conn_window(s) && c->out_len < SERVER_OUT_HIGH;
}

static bool conn_finished(const struct server *s, const struct conn *c)
{
	/* A handshake is no work in flight: on stop, it is not waited for. */
	if (c->handshaking)
		return s->stopping;
	if (c->out_len > 0 || c->inflight > 0)
		return false;
	return c->eof || c->closing || s->stopping;
}

/* Flush, close if done, and keep epoll's interest set in step. */
static void conn_update(struct server *s, struct conn *c)
{
	struct epoll_event ev = { .data.ptr = c };
	int r;

	if (c->fd < 0)
		return;
	r = c->handshaking ? 0 : conn_flush(c);
	if (r < 0) {
		log_debug("%s: write failed: %s", c->peer.desc, strerror(-r));
		conn_close(s, c);
		return;
	}
	if (conn_finished(s, c)) {
		/* Not for a peer we were closing (refused, or its framing
		 * lost): what it sent after is not read, and a refused name's
		 * refusals are bounded (audit.h), its log lines with them. */
		if (c->in_len > 0 && c->eof && !c->closing)
			log_notice("%s: disconnected mid-request", c->peer.desc);
		conn_close(s, c);
		return;
	}
	ev.events = (conn_wants_input(s, c) ? EPOLLIN : 0) |
		    (c->out_len ? EPOLLOUT : 0) | c->ssl_want;
	if (ev.events != c->events) {
		epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->events = ev.events;
	}
}

/* ---- requests ---------------------------------------------------------- */

/* Returns false when the refusal was only counted into a summary record:
 * then the caller does not log it either. */
static bool audit_refusal(struct server *s, const struct peer *peer,
			  const struct request *req, const char *why)
{
	struct audit_event e = {
		.peer = peer, .key = req ? req->key : NULL,
		.md = req ? req->md : NULL, .digest = req ? req->digest : NULL,
		.digest_len = req ? req->digest_len : 0,
		.module = req ? req->module : NULL, .result = why,
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

	if (!j || !(j->module = strdup(req->module))) {
		free(j);
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
	j->start_us = metrics_now_us();
	c->inflight++;
	s->inflight++;
	workq_push(s->wq, j);
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
		conn_queue(c, reply_status(req.id, s->keys));
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
static void conn_process(struct server *s, struct conn *c)
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

/* Read until the socket (and, for TLS, the record layer) is drained or
 * the buffer holds a whole frame we cannot take yet. */
static int conn_fill(struct conn *c)
{
	for (;;) {
		ssize_t n;

		/* Full means a whole frame waits for the in-flight limit. */
		if (buf_grow(&c->in, &c->in_cap, c->in_len,
			     PROTO_HEADER_LEN + PROTO_MAX_FRAME) < 0)
			return 0;
		n = conn_recv(c, c->in + c->in_len, c->in_cap - c->in_len);
		if (n == -ECONNRESET) {
			c->eof = true;
			return 0;
		}
		if (n <= 0)
			return (int)n;
		if (c->in_len == 0)
			c->in_since_ms = now_ms();
		c->in_len += (size_t)n;
		c->last_io_ms = now_ms();
	}
}

static void conn_readable(struct server *s, struct conn *c)
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

/* ---- TLS handshakes ---------------------------------------------------- */

/* Why a handshake failed, for the log and the audit record: the
 * certificate's verification error if it got that far, else OpenSSL's
 * reason ("peer did not return a certificate", "http request", "wrong
 * version number"), else the socket's, so that a peer speaking something
 * else is told apart from a builder without its certificate.  @err is the
 * first error OpenSSL queued (the cause; later ones are consequences),
 * @ssl_err SSL_get_error()'s verdict and @errnum errno right after. */
static const char *handshake_error(SSL *ssl, unsigned long err, int ssl_err, int errnum,
				   char *buf, size_t size)
{
	long v = SSL_get_verify_result(ssl);
	const char *why = NULL;

	if (v != X509_V_OK)
		return X509_verify_cert_error_string(v);
	if (err)
		why = ERR_reason_error_string(err);
	else if (ssl_err == SSL_ERROR_SYSCALL && errnum)
		why = strerror(errnum);
	snprintf(buf, size, "TLS handshake failed: %s", why ?: "connection closed by the peer");
	return buf;
}

/* Whether an authenticated TLS peer finds no slot: it may not take the
 * ones kept for UNIX clients. */
static bool tls_conns_full(const struct server *s)
{
	unsigned max = s->cfg.max_conns - SERVER_UNIX_RESERVE(s->cfg.max_conns);

	return s->n_held >= s->cfg.max_conns || s->n_tls >= max;
}

static void handshake_done(struct server *s, struct conn *c)
{
	char why[PEER_MAX_IDENTITY + 64], cn[PEER_MAX_CN], addr[64];

	snprintf(addr, sizeof(addr), "%.63s", c->peer.desc); /* "host:port" so far */
	handshake_leave(s, c);
	if (tls_peer_cn(c->ssl, cn, sizeof(cn)) < 0) {
		audit_refusal(s, &c->peer, NULL, "client certificate has no usable common name");
		conn_reply_error(c, 0, "permission denied: client certificate has no usable common name");
		c->closing = true;
		return;
	}
	peer_from_cn(cn, addr, &c->peer);
	/* Pins match on these, and every record of the peer carries them,
	 * so that a stolen certificate's use is told from its successor's. */
	if (tls_peer_cert(c->ssl, &c->peer.cert) < 0) {
		audit_refusal(s, &c->peer, NULL, "client certificate unreadable");
		conn_reply_error(c, 0, "permission denied: client certificate unreadable");
		c->closing = true;
		return;
	}
	/* The certificate was verified when it arrived, against the CRLs of
	 * then: a SIGHUP since (close_revoked() passed this connection by,
	 * not admitted yet) may have revoked it. */
	if (tls_peer_revoked(c->ssl)) {
		audit_refusal(s, &c->peer, NULL, "certificate revoked");
		conn_reply_error(c, 0, "permission denied: certificate revoked");
		c->closing = true;
		return;
	}
	if (!policy_admits(s->policy, &c->peer)) {
		snprintf(why, sizeof(why), "permission denied: %s is not named by the policy",
			 c->peer.identity);
		if (audit_refusal(s, &c->peer, NULL, why))
			log_warning("%s: refused: not allowed by policy", c->peer.desc);
		conn_reply_error(c, 0, why);
		c->closing = true;
		return;
	}
	/* Refused in TLS's own terms: an error frame over TLS, then
	 * close_notify; never plaintext on the raw socket. */
	if (tls_conns_full(s)) {
		log_notice("%s: refused: connection limit for TLS peers (%u) reached",
			   c->peer.desc,
			   s->cfg.max_conns - SERVER_UNIX_RESERVE(s->cfg.max_conns));
		conn_reply_error(c, 0, "too many connections, try again later");
		c->closing = true;
		return;
	}
	if (admission_admit(s->adm, &c->source, c->peer.identity, now_ms(), why,
			    sizeof(why)) < 0) {
		log_notice("%s: refused: %s", c->peer.desc, why);
		metrics_tls(s->metrics, METRICS_TLS_CAPPED);
		conn_reply_error(c, 0, why);
		c->closing = true;
		return;
	}
	conn_hold(s, c);
	c->tls_admitted = true;
	s->n_tls++;
	log_debug("%s: TLS connected", c->peer.desc);
}

static void conn_handshake(struct server *s, struct conn *c)
{
	char buf[128];
	unsigned long err;
	const char *why;
	int ret, ssl_err, errnum;

	c->ssl_want = 0;
	ERR_clear_error(); /* the queue is the thread's: start it empty */
	errno = 0;
	ret = SSL_accept(c->ssl);
	errnum = errno;
	if (ret == 1) {
		handshake_done(s, c);
		/* Data may have come with the handshake; this also flushes a
		 * refusal and may free @c, so it is the last use of it. */
		conn_readable(s, c);
		return;
	}
	err = ERR_peek_error(); /* tls_result() clears the queue */
	ssl_err = SSL_get_error(c->ssl, ret);
	if (tls_result(c, ret) == 0) {
		c->last_io_ms = now_ms();
		conn_update(s, c);
		return;
	}
	why = handshake_error(c->ssl, err, ssl_err, errnum, buf, sizeof(buf));
	if (audit_refusal(s, &c->peer, NULL, why))
		log_notice("%s: %s", c->peer.desc, why);
	ERR_clear_error();
	conn_close(s, c);
}

/*
 * A handshake's first bytes are here: it goes on if its source has fewer
 * than --max-handshakes-per-source key exchanges in progress and a token
 * (admission.h); else it waits, unread, until both are there
 * (resume_deferred()), so that replayed ClientHellos from one address
 * cost the daemon at most --handshake-rate key exchanges a second and a
 * builder behind that address is slowed, not refused.  True if it may go
 * on.
 */
static bool handshake_charge(struct server *s, struct conn *c)
{
	if (admission_start_handshake(s->adm, &c->source, now_ms())) {
		/* charged and deferred never both: a deferred one charged
		 * twice would hold a key-exchange place for good */
		c->charged = true;
		if (c->deferred) {
			c->deferred = false;
			s->n_deferred--;
		}
		return true;
	}
	if (!c->deferred) {
		c->deferred = true;
		s->n_deferred++;
		s->dropped.deferred++;
		metrics_tls(s->metrics, METRICS_TLS_DEFERRED);
		conn_update(s, c); /* no EPOLLIN until resumed */
	}
	return false;
}

/* Handshakes that waited, in the order they came, go on when their
 * source has a token and a key-exchange place again; the others wait on. */
static void resume_deferred(struct server *s)
{
	for (size_t i = 0; i < s->n_listeners && s->n_deferred > 0; i++) {
		struct conn *c, *next;

		for (c = s->listeners[i].hs_first; c; c = next) {
			next = c->hs_next;
			if (!c->deferred || !handshake_charge(s, c))
				continue;
			conn_handshake(s, c);
		}
	}
}

/* TLS may hold decrypted bytes the socket no longer signals: read them
 * once there is room again. */
static void conn_drain_tls(struct server *s, struct conn *c)
{
	if (c->fd >= 0 && c->ssl && !c->handshaking && SSL_pending(c->ssl) > 0 &&
	    conn_wants_input(s, c))
		conn_readable(s, c);
}

/* Whether the peer on @fd hung up, or the socket failed, before sending a
 * byte: SSL_accept() then only reads the end (no cryptography), so such a
 * socket, like a silent one, costs its source no token and no share; a
 * connect-and-close (a port scan, a health check) from a builder's address
 * took one of its tokens. */
static bool fd_gone(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

static void conn_event(struct server *s, struct conn *c, uint32_t events)
{
	if (c->fd < 0)
		return; /* closed earlier in this batch of events */
	if (c->deferred && events & (EPOLLHUP | EPOLLERR)) {
		conn_close(s, c); /* reported even unasked: gone while it waited */
		return;
	}
	if (c->handshaking && !c->charged && !fd_gone(c->fd) && !handshake_charge(s, c))
		return;
	if (c->handshaking)
		conn_handshake(s, c);
	else if (events & EPOLLIN || (c->ssl_want & events))
		conn_readable(s, c);
	else if (events & (EPOLLHUP | EPOLLERR) && !(events & EPOLLOUT))
		conn_close(s, c);
	else {
		conn_update(s, c);
		conn_drain_tls(s, c);
	}
}

/* ---- accepting --------------------------------------------------------- */

/* Best effort: tell a refused UNIX peer why, then hang up.  Never for a
 * TLS peer: it expects TLS records, and plaintext is no answer. */
static void refuse(int fd, const char *why)
{
	json_object *o = proto_error_new(0, why);
	uint8_t *frame = NULL;
	size_t len;

	if (o && proto_frame_build(o, &frame, &len) == 0)
		(void)!send(fd, frame, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	free(frame);
	json_object_put(o);
	close(fd);
}

/* A UNIX peer is judged before we read a byte from it. */
static int admit_unix(struct server *s, int fd, struct peer *peer)
{
	if (peer_from_socket(fd, peer) < 0)
		return -EIO;
	if (!policy_admits(s->policy, peer)) {
		if (audit_refusal(s, peer, NULL, "permission denied: not allowed by policy"))
			log_warning("%s: refused: not allowed by policy", peer->desc);
		refuse(fd, "permission denied: not allowed by the daemon's policy");
		return -EPERM;
	}
	return 0;
}

static void peer_from_address(int fd, struct peer *ret)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char host[INET6_ADDRSTRLEN] = "?", port[8] = "?";

	memset(ret, 0, sizeof(*ret));
	ret->tls = true;
	if (getpeername(fd, (struct sockaddr *)&sa, &len) == 0)
		getnameinfo((struct sockaddr *)&sa, len, host, sizeof(host), port,
			    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV);
	snprintf(ret->identity, sizeof(ret->identity), "tls:%s", host);
	snprintf(ret->desc, sizeof(ret->desc), "%s:%s", host, port);
}

static unsigned handshakes_from(const struct listener *l, const struct admission_source *src)
{
	unsigned n = 0;

	for (const struct conn *c = l->hs_first; c; c = c->hs_next)
		n += admission_source_eq(&c->source, src);
	return n;
}

/* Whether nothing has arrived on @fd yet.  A socket the loop has not read
 * is not silent if its peer's ClientHello waits in it: a builder whose
 * first flight came while the loop was busy looks, to OpenSSL, like a
 * socket that sent nothing (SSL_in_before()), and was dropped as one
 * (attack-review: same-source-silent-sockets-*). */
static bool fd_silent(int fd)
{
	char b;
	ssize_t n = recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

static bool conn_silent(const struct conn *c)
{
	return !c->charged && SSL_in_before(c->ssl) && fd_silent(c->fd);
}

/* The source holding most handshakes at @l. O(n^2) in the budget, which
 * is small; only reached when it is exhausted. */
static const struct admission_source *busiest_source(const struct listener *l)
{
	const struct admission_source *src = NULL;
	unsigned most = 0;

	for (const struct conn *c = l->hs_first; c; c = c->hs_next) {
		unsigned n = handshakes_from(l, &c->source);

		if (n > most) {
			most = n;
			src = &c->source;
		}
	}
	return src;
}

/* The oldest handshake from @src that has not sent a byte
 * (conn_silent()), or else its oldest.  A client sends its ClientHello as
 * it connects; a silent socket is the cheapest thing to hold, and would
 * otherwise, reopened as it is dropped, push a real client's handshake
 * out. */
static struct conn *oldest_from(const struct listener *l, const struct admission_source *src)
{
	struct conn *oldest = NULL;

	for (struct conn *c = l->hs_first; c; c = c->hs_next) {
		if (!admission_source_eq(&c->source, src))
			continue;
		if (conn_silent(c))
			return c;
		if (!oldest)
			oldest = c;
	}
	return oldest;
}

/*
 * Make room for a handshake: a full listener drops the oldest silent
 * handshake (else the oldest) of the source holding most, so that a flood
 * from some addresses evicts itself rather than the one peer of another.
 * A source's own share (--max-handshakes-per-source) is not checked here
 * but when its handshakes speak (handshake_charge()): a silent socket
 * costs an fd and no cryptography, and dropping them at a source's share
 * let 40 silent sockets, reopened as they were dropped, push out a
 * builder behind the same address (a NAT, a /64, localhost) that had
 * connected and not yet sent its ClientHello: dropping the newcomer
 * instead had locked every such builder out.  An unauthenticated peer
 * costs a debug line and a counter, no more: it can open connections
 * faster than a log should grow.
 */
static void handshake_budget(struct server *s, struct listener *l)
{
	struct conn *victim;

	if (l->n_handshakes < s->cfg.max_handshakes)
		return;
	victim = oldest_from(l, busiest_source(l));
	log_debug("%s: closed: %u TLS handshakes in progress, making room",
		  victim->peer.desc, s->cfg.max_handshakes);
	s->dropped.listener_budget++;
	metrics_tls(s->metrics, METRICS_TLS_DROPPED);
	conn_close(s, victim);
}

static int conn_start_tls(struct server *s, struct listener *l, struct conn *c)
{
	c->ssl = SSL_new(s->cfg.tls);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
		return -ENOMEM;
	handshake_join(s, l, c);
	return 0;
}

/*
 * A TLS peer is checked against the handshake budget only: the connection
 * limit applies once it has authenticated (handshake_done()).  A UNIX
 * peer, already authenticated, against the connection limit, which
 * handshakes in progress do not use.
 */
static int admit(struct server *s, struct listener *l, int fd,
		 const struct sockaddr_storage *sa, struct peer *peer,
		 struct admission_source *src)
{
	if (l->tls) {
		peer_from_address(fd, peer);
		admission_source_of(sa, src);
		handshake_budget(s, l);
		return 0;
	}
	if (admit_unix(s, fd, peer) < 0)
		return -EPERM;
	if (s->n_held >= s->cfg.max_conns) {
		log_warning("%s: refused: connection limit (%u) reached", peer->desc,
			    s->cfg.max_conns);
		refuse(fd, "too many connections, try again later");
		return -EAGAIN;
	}
	return 0;
}

static void accept_one(struct server *s, struct listener *l)
{
	struct sockaddr_storage sa;
	socklen_t sa_len = sizeof(sa);
	struct admission_source src = { 0 };
	struct conn *c;
	struct peer peer;
	int fd;

	fd = accept4(l->fd, (struct sockaddr *)&sa, &sa_len, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warning("accept failed: %m");
		return;
	}
	if (admit(s, l, fd, &sa, &peer, &src) < 0)
		return;
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	*c = (struct conn){ .kind = W_CONN, .fd = fd, .peer = peer, .source = src,
			    .events = EPOLLIN, .last_io_ms = now_ms(),
			    .accepted_ms = now_ms() };
	if (watch(s, fd, EPOLLIN, c) < 0 || (l->tls && conn_start_tls(s, l, c) < 0)) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
		handshake_leave(s, c);
		SSL_free(c->ssl);
		close(fd);
		free(c);
		return;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	if (!l->tls)
		conn_hold(s, c);
	log_debug("%s: connected", peer.desc);
	/* kbuild's one-shot client hashes first and sends its request right
	 * after connecting, so it is often waiting already (a third of the
	 * time in the bench): read it now rather than after another trip
	 * through epoll_wait(); if it is not there, recv() says so. */
	if (!l->tls)
		conn_readable(s, c);
}

/* ---- completions: audit first, then reply ------------------------------ */

/* "ok", or why signing failed, naming the key. */
static const char *job_result(const struct job *j, char *buf, size_t size)
{
	if (j->r >= 0 && j->tlog_r < 0) {
		snprintf(buf, size, "withheld: transparency log unavailable: %s",
			 strerror(-j->tlog_r));
		return buf;
	}
	if (j->r >= 0)
		return j->conn->fd < 0 ? "ok, client gone" : "ok";
	snprintf(buf, size, "signing with key %s failed: %s", j->key->name,
		 key_strerror(j->key, j->r));
	return buf;
}

static struct audit_event job_event(const struct job *j, const char *result)
{
	return (struct audit_event){
		.peer = &j->conn->peer, .key = j->key->name, .key_id = j->key->key_id,
		.md = j->md, .digest = j->digest, .digest_len = j->digest_len,
		.module = j->module, .result = result,
	};
}

static void audit_job(struct server *s, struct job *j)
{
	char buf[PROTO_MAX_ERROR];
	struct audit_event e = job_event(j, job_result(j, buf, sizeof(buf)));

	/* Unrecorded: the signature must not leave. */
	j->audit_r = audit_write(s->audit, &e);
}

/* Why a signature that was made is not sent, or NULL if it is. */
static const char *job_withheld(const struct job *j, int sync_r, char *buf, size_t size)
{
	int r = j->audit_r < 0 ? j->audit_r : sync_r;

	if (j->r < 0 || r >= 0)
		return NULL;
	snprintf(buf, size, "withheld: audit log unavailable: %s", strerror(-r));
	return buf;
}

/* The journal's record, once the file's fate is known: it says
 * "withheld", not "ok", for a signature the file could not hold. */
static void journal_job(struct server *s, const struct job *j, int sync_r)
{
	char buf[PROTO_MAX_ERROR], why[PROTO_MAX_ERROR];
	const char *withheld = job_withheld(j, sync_r, why, sizeof(why));
	struct audit_event e = job_event(j, withheld ?: job_result(j, buf, sizeof(buf)));

	audit_journal(s->audit, &e);
}

static void job_metrics(struct server *s, const struct job *j, int sync_r)
{
	if (sync_r < 0 || j->audit_r < 0)
		metrics_refused(s->metrics, s->keys, j->key, METRICS_AUDIT_FAILED, j->start_us);
	else if (j->r < 0)
		metrics_refused(s->metrics, s->keys, j->key, METRICS_KEY_FAILED, j->start_us);
	else
		metrics_issued(s->metrics, s->keys, j->key, j->start_us);
}

static void reply_job(struct server *s, struct job *j, int sync_r)
{
	struct conn *c = j->conn;
	char msg[PROTO_MAX_ERROR];

	c->inflight--;
	s->inflight--;
	job_metrics(s, j, sync_r);
	if (c->fd < 0) {
		conn_release(s, c);
		return; /* reap_conns() frees it */
	}
	if (sync_r < 0 || j->audit_r < 0) {
		snprintf(msg, sizeof(msg), "audit log unavailable (%s): not signed",
			 strerror(-(j->audit_r < 0 ? j->audit_r : sync_r)));
		conn_reply_error(c, j->id, msg);
	} else if (j->r >= 0 && j->tlog_r < 0) {
		snprintf(msg, sizeof(msg), "transparency log unavailable (%s): not signed",
			 strerror(-j->tlog_r));
		conn_reply_error(c, j->id, msg);
	} else if (j->r < 0)
		conn_reply_error(c, j->id, job_result(j, msg, sizeof(msg)));
	else {
		json_object *o = reply_signature(j->id, j->key, j->der, j->der_len);

		if (o && j->logged)
			json_object_object_add(o, PROTO_F_LOG_INDEX,
					       json_object_new_uint64(j->log_index));
		conn_queue(c, o);
		s->signed_total++;
	}
	conn_process(s, c); /* input held back by the in-flight limit */
	conn_update(s, c);
	conn_drain_tls(s, c);
}

static void log_job(struct server *s, struct job *j)
{
	struct tlog_entry e = {
		.time = time(NULL), .key = j->key->name, .key_id = j->key->key_id,
		.cert_sha256 = j->key->cert_sha256, .hash = digest_name(j->md),
		.digest = j->digest, .digest_len = j->digest_len, .module = j->module,
		.client = j->conn->peer.identity, .sig = j->der, .sig_len = j->der_len,
	};
	const struct peer_cert *c = &j->conn->peer.cert;

	if (j->conn->peer.tls && c->sha256[0]) {
		e.client_cert_sha256 = c->sha256;
		e.client_serial = c->serial;
		e.client_issuer = c->issuer;
		e.client_issuer_sha256 = c->issuer_sha256;
	}

	j->tlog_r = translog_append(s->translog, &e, &j->log_index);
	j->logged = j->tlog_r >= 0;
}

static void log_failed(struct server *s, struct job *list, int r)
{
	const char *broken = translog_broken(s->translog);

	log_error("transparency log commit failed, withholding signatures: %s",
		  broken ?: strerror(-r));
	for (struct job *j = list; j; j = j->next)
		if (j->r >= 0) {
			j->tlog_r = r;
			j->logged = false;
		}
}

static int commit_sync(void *commit)
{
	return translog_commit_sync(commit);
}

/*
 * The transparency log's part of the group commit: a leaf per signature
 * made, tiles written, synced and covered by a new checkpoint before any
 * of them leaves.  It comes before the audit records, so that these say
 * "withheld" for a signature the log could not hold.  A signature that
 * the audit log then withholds stays in the transparency log: the log may
 * name a signature nobody received, never miss one that was sent.
 *
 * The writes are done here; the syncs and the rename that publishes the
 * checkpoint go to the syncer thread, and the group waits in
 * s->committing until commit_done().  True if it waits.
 */
static bool log_group(struct server *s, struct job *list)
{
	struct translog_commit *commit;
	int r;

	/* Nothing is pending between groups, but a log that a failed commit
	 * left broken: read back first, it may hold the published checkpoint
	 * again (translog_broken()); if not, this group is withheld too. */
	translog_abort(s->translog);
	for (struct job *j = list; j; j = j->next)
		if (j->r >= 0)
			log_job(s, j);
	r = translog_commit_begin(s->translog, &commit);
	if (r > 0) {
		s->committing = list;
		s->commit = commit;
		syncer_submit(s->syncer, commit_sync, commit);
		return true;
	}
	if (r < 0)
		log_failed(s, list, r);
	return false;
}

/*
 * With a transparency log a commit costs files, a signed checkpoint and
 * syncs, so finished jobs are held for a larger group: until
 * SERVER_GROUP_JOBS are done, or nothing else is being signed (no other
 * completion would come to end the wait), or the first has waited
 * SERVER_GROUP_WAIT_MS (server_run() wakes for it), and never while the
 * syncer still works on the group before.  Signing goes on meanwhile: a
 * client with many requests in flight loses no throughput, and one
 * request waits at most that long more.  Fewer, larger commits cost less
 * CPU (files, an Ed25519 signature, the syncs' writeback), which the
 * workers need: at 16 jobs or 2 ms, an RSA-2048 batch with a log ran at
 * 85% of its rate without one; at 128 or 40 ms, 96-99% on tmpfs but
 * about 95% on this machine's disk, where each commit cost ~14 device
 * flushes and ~40 writes (the fdatasync of each tile, the fsync of each
 * new directory entry, the journal's): at 256 or 80 ms, half as many
 * commits, 97-98%.  256 is a quarter of the SERVER_MAX_INFLIGHT window,
 * so that while one group is synced and the next gathers the workers
 * still have work queued (with half the window, the disk's slow syncs
 * left them idle: the machine 93% busy instead of 97%).
 */
#define SERVER_GROUP_JOBS 256u
#define SERVER_GROUP_WAIT_MS 80u

/* A held group waits while the previous one's commit is being synced:
 * it grows meanwhile, and commits come as fast as the disk takes them. */
static bool group_waiting(const struct server *s)
{
	return s->held && !s->committing;
}

static bool group_ready(const struct server *s)
{
	return !s->translog || s->stopping || s->n_held_jobs >= SERVER_GROUP_JOBS ||
	       s->inflight <= s->n_held_jobs ||
	       now_ms() - s->held_since_ms >= SERVER_GROUP_WAIT_MS;
}

/* Add the jobs just finished to those held; the group, when it is ready. */
static struct job *take_group(struct server *s)
{
	struct job *list = workq_take_done(s->wq), *group;

	for (struct job *j = list; j; j = j->next) {
		if (!s->held)
			s->held_since_ms = now_ms();
		if (s->held_tail)
			s->held_tail->next = j;
		else
			s->held = j;
		s->held_tail = j;
		s->n_held_jobs++;
	}
	if (!s->held || s->committing || !group_ready(s))
		return NULL;
	group = s->held;
	s->held = s->held_tail = NULL;
	s->n_held_jobs = 0;
	return group;
}

/*
 * Group commit: write every finished job's record, make them durable with
 * one sync, and only then journal each with its real fate and queue the
 * signatures for their peers.
 */
static void finish_group(struct server *s, struct job *list)
{
	struct job *j, *next;
	int r;

	for (j = list; j; j = j->next)
		audit_job(s, j);
	r = audit_sync(s->audit);
	if (r < 0)
		log_error("audit log sync failed, withholding signatures: %s", strerror(-r));
	for (j = list; j; j = next) {
		next = j->next;
		journal_job(s, j, r);
		reply_job(s, j, r);
		job_free(j);
	}
}

static void drain_workq(struct server *s)
{
	struct job *list = take_group(s);

	if (!list || (s->translog && log_group(s, list)))
		return;
	finish_group(s, list);
}

/* The syncer is done with the group in s->committing: on with it, and
 * with the group that gathered meanwhile.  The event is taken first,
 * whatever follows (syncer_take() reads the eventfd): the watch is
 * level-triggered, and an event left unread would wake the loop again at
 * once, for ever.  A step is submitted with a group only (log_group()):
 * the check on s->committing only keeps translog_commit_end() from ever
 * being handed no commit. */
static void commit_done(struct server *s)
{
	struct job *list;
	int r;

	if (!syncer_take(s->syncer, &r) || !s->committing)
		return;
	list = TAKE_PTR(s->committing);
	r = translog_commit_end(s->translog, TAKE_PTR(s->commit), r);
	if (r < 0)
		log_failed(s, list, r);
	finish_group(s, list);
	drain_workq(s);
}

/* ---- signals, timeouts, systemd ---------------------------------------- */

static void begin_stop(struct server *s)
{
	struct conn *c, *next;

	s->stopping = true;
	s->drain_deadline_ms = now_ms() + SERVER_DRAIN_TIMEOUT_MS;
	sd_notify(0, "STOPPING=1");
	for (size_t i = 0; i < s->n_listeners; i++)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listeners[i].fd, NULL);
	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_update(s, c);
	}
}

/* A CRL re-read on SIGHUP also ends the connections of the certificates
 * it now revokes: the handshake checked them against the CRLs of then. */
static void close_revoked(struct server *s)
{
	for (struct conn *c = s->conns; c; c = c->next)
		if (c->fd >= 0 && c->tls_admitted && tls_peer_revoked(c->ssl)) {
			log_notice("%s: closing: its certificate is now revoked", c->peer.desc);
			conn_close(s, c);
		}
}

static void reload(struct server *s)
{
	int r;

	sd_notify(0, "RELOADING=1");
	r = s->cfg.reload ? s->cfg.reload(s->cfg.userdata) : 0;
	if (r < 0)
		log_error("SIGHUP: keeping the old policy: %s", strerror(-r));
	close_revoked(s);
	r = audit_reopen(s->audit);
	if (r < 0)
		log_error("SIGHUP: cannot reopen the audit log %s (the old one stays in use): %s",
			  s->cfg.audit_log ?: "", audit_file_refusal(r) ?: strerror(-r));
	sd_notify(0, "READY=1");
}

static void handle_signal(struct server *s)
{
	struct signalfd_siginfo si;

	if (read(s->sig_fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGHUP) {
		log_info("SIGHUP: re-reading the policy; keys stay");
		reload(s);
		return;
	}
	log_info("signal %d: finishing %u in-flight request(s), then exiting",
		 (int)si.ssi_signo, s->inflight);
	begin_stop(s);
}

/* Whether @c has kept us waiting too long: for its TLS handshake, for a
 * request it started sending, for replies it does not read, or, with
 * nothing pending either way, in silence.  A connection whose requests
 * are being signed waits for us, not we for it. */
static const char *conn_overdue(const struct server *s, const struct conn *c,
				uint64_t now)
{
	if (c->handshaking)
		return now - c->accepted_ms > s->cfg.handshake_timeout * 1000ull ?
			       "a TLS handshake" : NULL;
	if (c->in_len > 0 && now - c->in_since_ms > SERVER_IO_TIMEOUT_MS)
		return "a partial request";
	if (c->out_len > 0 && now - c->out_since_ms > SERVER_IO_TIMEOUT_MS)
		return "unread replies";
	if (c->in_len == 0 && c->out_len == 0 && c->inflight == 0 &&
	    now - c->last_io_ms > s->cfg.idle_timeout * 1000ull)
		return "nothing";
	return NULL;
}

/* Once a minute at most, how many unauthenticated TLS peers were dropped
 * since the last time: one line however many there were. */
static void log_drops(struct server *s, uint64_t now)
{
	struct drop_counts *d = &s->dropped, *was = &s->dropped_logged;

	if (now - s->drop_log_ms < 60000 || memcmp(d, was, sizeof(*d)) == 0)
		return;
	log_notice("dropped unauthenticated TLS peers: %llu over the listener's "
		   "handshake budget (%u), %llu handshake timeouts (%u s); %llu "
		   "handshakes made to wait for their source's rate (%u/s) or "
		   "share (%u)",
		   (unsigned long long)(d->listener_budget - was->listener_budget),
		   s->cfg.max_handshakes,
		   (unsigned long long)(d->handshake_timeout - was->handshake_timeout),
		   s->cfg.handshake_timeout,
		   (unsigned long long)(d->deferred - was->deferred), s->cfg.handshake_rate,
		   s->cfg.max_handshakes_per_source);
	*was = *d;
	s->drop_log_ms = now;
}

static void sweep_timeouts(struct server *s)
{
	uint64_t now = now_ms();
	struct conn *c, *next;

	for (c = s->conns; c; c = next) {
		const char *what;

		next = c->next;
		if (c->fd < 0 || !(what = conn_overdue(s, c, now)))
			continue;
		if (c->handshaking) {
			log_debug("%s: timed out with %s pending", c->peer.desc, what);
			s->dropped.handshake_timeout++;
			metrics_tls(s->metrics, METRICS_TLS_TIMED_OUT);
		} else if (c->in_len == 0 && c->out_len == 0) {
			log_debug("%s: idle for %u s, closing", c->peer.desc,
				  s->cfg.idle_timeout);
		} else {
			log_notice("%s: timed out with %s pending", c->peer.desc, what);
		}
		conn_close(s, c);
	}
	log_drops(s, now);
}

static void notify_status(struct server *s)
{
	const char *broken = s->translog ? translog_broken(s->translog) : NULL;

	/* A broken log withholds every signature: systemctl status says why,
	 * not only the journal line of each group. */
	sd_notifyf(0, "STATUS=%u connection(s), %u in flight, %llu signature(s) given%s%s",
		   s->n_conns, s->inflight, (unsigned long long)s->signed_total,
		   broken ? "; transparency log broken, signatures withheld: " : "",
		   broken ?: "");
	if (s->watchdog_usec)
		sd_notify(0, "WATCHDOG=1");
}

static void dispatch(struct server *s, struct epoll_event *ev)
{
	enum watch_kind *kind = ev->data.ptr;

	switch (*kind) {
	case W_LISTENER:
		accept_one(s, (struct listener *)kind);
		break;
	case W_CONN:
		conn_event(s, (struct conn *)kind, ev->events);
		break;
	case W_WORKQ:
		drain_workq(s);
		break;
	case W_SYNCER:
		commit_done(s);
		break;
	case W_SIGNAL:
		handle_signal(s);
		break;
	}
}

/* Every METRICS_INTERVAL_MS, at start and at exit (@now). */
static void write_metrics(struct server *s, bool now)
{
	int r = metrics_tick(s->metrics, s->keys, s->inflight, now);

	if (r < 0)
		log_warning("metrics file %s: %s", s->cfg.metrics_file, strerror(-r));
}

/* How long the loop may sleep: a tick, less while a group commit waits,
 * or while handshakes wait for a token (one comes every 1000/rate ms). */
static int loop_timeout(const struct server *s, int tick)
{
	int t = group_waiting(s) ? (int)SERVER_GROUP_WAIT_MS : tick;
	int token_ms = (int)(1000 / s->cfg.handshake_rate) ?: 1;

	return s->n_deferred > 0 && token_ms < t ? token_ms : t;
}

int server_run(struct server *s)
{
	struct epoll_event evs[64];
	uint64_t last_tick = now_ms();
	/* Wake often enough to ping a watchdog at half its period. */
	int tick = s->watchdog_usec && s->watchdog_usec / 2000 < 1000 ?
			   (int)(s->watchdog_usec / 2000) : 1000;

	notify_status(s);
	write_metrics(s, true);
	for (;;) {
		int n = epoll_wait(s->epfd, evs, ELEMENTSOF(evs), loop_timeout(s, tick));

		if (n < 0 && errno != EINTR)
			return log_error_errno(-errno, "epoll_wait: %m");
		for (int i = 0; i < n; i++)
			dispatch(s, &evs[i]);
		if (group_waiting(s))
			drain_workq(s); /* a held group whose wait is over */
		if (s->n_deferred > 0)
			resume_deferred(s);
		reap_conns(s);
		if (now_ms() - last_tick >= (uint64_t)tick) {
			sweep_timeouts(s);
			audit_tick(s->audit);
			write_metrics(s, false);
			notify_status(s);
			last_tick = now_ms();
		}
		if (s->stopping && (s->n_conns == 0 || now_ms() > s->drain_deadline_ms))
			break;
	}
	write_metrics(s, true);
	return 0;
}

/* ---- set-up ------------------------------------------------------------ */

static int setup_signals(struct server *s)
{
	sigset_t mask;

	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return -EINVAL;
	signal(SIGPIPE, SIG_IGN);
	s->sig_fd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sig_fd < 0)
		return -errno;
	s->sig_watch = W_SIGNAL;
	return watch(s, s->sig_fd, EPOLLIN, &s->sig_watch);
}

int server_set_translog(struct server *s, struct translog *t)
{
	int r = syncer_start(&s->syncer, &s->syncer_fd);

	if (r < 0)
		return r;
	s->translog = t;
	s->syncer_watch = W_SYNCER;
	return watch(s, s->syncer_fd, EPOLLIN, &s->syncer_watch);
}

static void free_jobs(struct job *list)
{
	while (list) {
		struct job *next = list->next;

		job_free(list);
		list = next;
	}
}

/* At exit: the commit in progress ends (its entries published or cut
 * back, as in a running daemon); the jobs held have no one to reply to. */
static void end_commit(struct server *s)
{
	struct pollfd p = { .fd = s->syncer_fd, .events = POLLIN };
	int r;

	if (!s->committing)
		return;
	while (!syncer_take(s->syncer, &r))
		poll(&p, 1, -1);
	translog_commit_end(s->translog, TAKE_PTR(s->commit), r);
	free_jobs(TAKE_PTR(s->committing));
}

int server_new(const struct server_config *cfg, struct keystore *keys,
	       struct policy *policy, struct audit *audit, struct server **ret)
{
	struct server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->keys = keys;
	s->policy = policy;
	s->audit = audit;
	s->wq_fd = s->sig_fd = s->syncer_fd = -1;
	s->metrics = cfg->metrics;
	r = admission_new(&(struct admission_config){
				  .rate = cfg->handshake_rate, .burst = cfg->handshake_burst,
				  .key_exchanges = cfg->max_handshakes_per_source,
				  .handshakes = cfg->max_handshakes * SERVER_MAX_LISTENERS,
				  .per_source = cfg->max_conns_per_source,
				  .per_identity = cfg->max_conns_per_identity,
				  .tls_slots = cfg->max_conns - SERVER_UNIX_RESERVE(cfg->max_conns) },
			  &s->adm);
	if (r < 0) {
		free(s);
		return r;
	}
	if (sd_watchdog_enabled(0, &s->watchdog_usec) <= 0)
		s->watchdog_usec = 0;
	s->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (s->epfd < 0) {
		r = -errno;
		goto fail;
	}
	/* Signals are blocked before the workers start so that they inherit
	 * the mask and only the loop's signalfd sees SIGTERM. */
	r = setup_signals(s);
	if (r < 0)
		goto fail;
	r = workq_start(cfg->workers, &s->wq, &s->wq_fd);
	if (r < 0)
		goto fail;
	s->wq_watch = W_WORKQ;
	r = watch(s, s->wq_fd, EPOLLIN, &s->wq_watch);
	if (r < 0)
		goto fail;
	*ret = s;
	return 0;
fail:
	server_free(s);
	return r;
}

static int add_listener(struct server *s, int fd, bool tls, const char *path)
{
	struct listener *l;
	int r;

	if (s->n_listeners >= SERVER_MAX_LISTENERS)
		return -E2BIG;
	if (tls && !s->cfg.tls)
		return -ENOPROTOOPT;
	l = &s->listeners[s->n_listeners];
	*l = (struct listener){ .kind = W_LISTENER, .fd = fd, .tls = tls };
	if (path && !(l->path = strdup(path)))
		return -ENOMEM;
	r = watch(s, fd, EPOLLIN, l);
	if (r < 0) {
		free(l->path);
		return r;
	}
	s->n_listeners++;
	return 0;
}

/* A socket file that nobody answers on is left over from a crash. */
static int remove_stale_socket(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

int server_listen_unix(struct server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	r = remove_stale_socket(path, &sa);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Create the file with its final mode: no window where it is wider. */
	old = umask(~s->cfg.socket_mode & 0777);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	r = add_listener(s, fd, false, path);
	if (r < 0)
		close(fd);
	return r;
}

/* "HOST:PORT" or "[V6]:PORT" into a bound, listening TCP socket. */
static int tcp_listen(const char *host_port)
{
	_cleanup_(freep) char *buf = strdup(host_port);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char *host, *port;
	int fd = -EADDRNOTAVAIL, one = 1;

	if (!buf)
		return -ENOMEM;
	if (split_host_port(buf, &host, &port) < 0)
		return -EINVAL;
	/* ":PORT": every address */
	if (getaddrinfo(*host ? host : NULL, port, &hints, &ai) != 0)
		return -EADDRNOTAVAIL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
			int r = -errno;
			close(fd);
			fd = r;
		}
	} else {
		fd = -errno;
	}
	freeaddrinfo(ai);
	return fd;
}

int server_listen_tls(struct server *s, const char *host_port)
{
	int fd, r;

	if (!s->cfg.tls)
		return -ENOPROTOOPT;
	fd = tcp_listen(host_port);
	if (fd < 0)
		return fd;
	r = add_listener(s, fd, true, NULL);
	if (r < 0)
		close(fd);
	return r;
}

int server_adopt_systemd(struct server *s)
{
	char **names = NULL;
	int n, r = 0;

	n = sd_listen_fds_with_names(1, &names);
	if (n <= 0)
		return n;
	for (int i = 0; i < n && r >= 0; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		bool tls = (names && names[i] && strcmp(names[i], "tls") == 0) ||
			   sd_is_socket_inet(fd, 0, SOCK_STREAM, 1, 0) > 0;

		if (!tls && sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
			r = -EBADF;
		else {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
			r = add_listener(s, fd, tls, NULL);
		}
	}
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return r < 0 ? r : n;
}

void server_free(struct server *s)
{
	if (!s)
		return;
	while (s->conns) {
		struct conn *c = s->conns;

		SSL_free(c->ssl);
		if (c->fd >= 0)
			close(c->fd);
		conn_free(s, c);
	}
	workq_stop(s->wq);
	end_commit(s);
	syncer_stop(s->syncer);
	free_jobs(s->held);
	for (size_t i = 0; i < s->n_listeners; i++) {
		close(s->listeners[i].fd);
		if (s->listeners[i].path)
			unlink(s->listeners[i].path);
		free(s->listeners[i].path);
	}
	if (s->sig_fd >= 0)
		close(s->sig_fd);
	if (s->epfd >= 0)
		close(s->epfd);
	admission_free(s->adm);
	free(s);
}
