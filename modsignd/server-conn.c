/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A connection of the event loop: its life (slots, the handshake list,
 * closing and freeing), its bytes (UNIX or TLS, the buffers) and its
 * epoll interest.  Knows nothing of requests: server-internal.h.
 */
#include <errno.h>
#include <openssl/err.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "proto.h"
#include "server-internal.h"
#include "util.h"

int watch(struct server *s, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* ---- connections: life ------------------------------------------------ */

void handshake_join(struct server *s, struct listener *l, struct conn *c)
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

void conn_hold(struct server *s, struct conn *c)
{
	c->held = true;
	s->n_held++;
}

/* Give back the connection slot: once closed with no job out. */
void conn_release(struct server *s, struct conn *c)
{
	if (c->held && c->fd < 0 && c->inflight == 0) {
		c->held = false;
		s->n_held--;
	}
}

/* The handshake ended, one way or another: its budget slot is free. */
void handshake_leave(struct server *s, struct conn *c)
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

void conn_free(struct server *s, struct conn *c)
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
void conn_close(struct server *s, struct conn *c)
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

void reap_conns(struct server *s)
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
int tls_result(struct conn *c, int ret)
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

int conn_queue(struct conn *c, json_object *reply)
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

void conn_reply_error(struct conn *c, uint64_t id, const char *msg)
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

/* Read until the socket (and, for TLS, the record layer) is drained or
 * the buffer holds a whole frame we cannot take yet. */
int conn_fill(struct conn *c)
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

/* ---- connections: state ------------------------------------------------ */

/* Requests one connection may have in flight: its share of
 * SERVER_MAX_JOBS (server.h), SERVER_MAX_JOBS / (connections held), at
 * most SERVER_MAX_INFLIGHT.  A new connection so queues behind at most
 * that many (the work queue is first in, first out): four busy builders
 * get a full window each, 256 connections 16 each.  A connection over it
 * after others came reads again once its replies bring it under. */
unsigned conn_window(const struct server *s)
{
	unsigned share = SERVER_MAX_JOBS / (s->n_held ?: 1);

	return share < 1 ? 1 : share > SERVER_MAX_INFLIGHT ? SERVER_MAX_INFLIGHT : share;
}

bool conn_wants_input(const struct server *s, const struct conn *c)
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
void conn_update(struct server *s, struct conn *c)
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
