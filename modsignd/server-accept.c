/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Accepting connections.  A UNIX peer is judged by its credentials
 * before a byte is read, and against the connection limit.  A TLS peer
 * is unauthenticated until its handshake ends (server-handshake.c), so it
 * takes no connection slot while it runs: each TLS listener has its own
 * budget of handshakes in progress (--max-handshakes), and a full one
 * drops the oldest silent handshake (one without a byte sent:
 * conn_silent()) of the source holding most.  One source (an IPv4
 * address, an IPv6 /64) has only part of the key exchanges
 * (--max-handshakes-per-source), each for a token of its own; the
 * connections an identity or a source may hold are capped too
 * (admission.h, which owns those limits).  Authenticated TLS peers may
 * then take all connection slots but SERVER_UNIX_RESERVE, kept for local
 * clients.  server-internal.h.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "server-internal.h"
#include "util.h"

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
 * (attack-net: same-source-silent-sockets-*). */
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

void accept_one(struct server *s, struct listener *l)
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
