/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The event loop: what each event means, signals, timeouts, systemd's
 * notifications; setting the server up and freeing it.  The rest is in
 * the files server-internal.h lists, below this one.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "admission.h"
#include "log.h"
#include "metrics.h"
#include "server-internal.h"
#include "signals.h"
#include "syncer.h"
#include "tls.h"
#include "translog.h"
#include "util.h"
#include "workq.h"

/* ---- events ---------------------------------------------------------- */

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

	/* Already blocked by main() (signals.h); again here, for a server
	 * made by a test or a fuzzer that has no such main(). */
	signals_mask(&mask);
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
