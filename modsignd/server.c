/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
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
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "log.h"
#include "proto.h"
#include "request.h"
#include "server.h"
#include "workq.h"

/* What an epoll event points at; the first member of each watched thing. */
enum watch_kind { W_LISTENER, W_CONN, W_WORKQ, W_SIGNAL };

struct listener {
	enum watch_kind kind;
	int fd;
	char *path; /* socket file to unlink at exit */
};

struct conn {
	enum watch_kind kind;
	struct conn *prev, *next;
	int fd; /* -1 once closed while jobs are still out */
	struct peer peer;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_len, out_cap;
	unsigned inflight;
	uint32_t events;
	bool eof;     /* peer finished sending (may still read replies) */
	bool closing; /* protocol error: flush, then close */
	uint64_t last_io_ms;
};

struct server {
	struct server_config cfg;
	const struct keystore *keys;
	const struct policy *policy;
	int epfd;
	struct listener listeners[SERVER_MAX_LISTENERS];
	size_t n_listeners;
	struct conn *conns;
	unsigned n_conns;
	unsigned inflight;
	struct workq *wq;
	enum watch_kind wq_watch, sig_watch;
	int wq_fd, sig_fd;
	bool stopping;
	uint64_t drain_deadline_ms;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int watch(struct server *s, int fd, uint32_t events, void *ptr)
{
	struct epoll_event ev = { .events = events, .data.ptr = ptr };

	return epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

/* ---- connections ------------------------------------------------------ */

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

/* Close the socket now; the struct lives until its last job returns. */
static void conn_close(struct server *s, struct conn *c)
{
	if (c->fd >= 0) {
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
	}
	if (c->inflight == 0)
		conn_free(s, c);
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
		ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
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

static bool conn_wants_input(const struct server *s, const struct conn *c)
{
	return !s->stopping && !c->eof && !c->closing &&
	       c->inflight < SERVER_MAX_INFLIGHT && c->out_len < SERVER_OUT_HIGH;
}

static bool conn_finished(const struct server *s, const struct conn *c)
{
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
	r = conn_flush(c);
	if (r < 0) {
		log_debug("%s: write failed: %s", c->peer.desc, strerror(-r));
		conn_close(s, c);
		return;
	}
	if (conn_finished(s, c)) {
		if (c->in_len > 0 && c->eof)
			log_notice("%s: disconnected mid-request", c->peer.desc);
		conn_close(s, c);
		return;
	}
	ev.events = (conn_wants_input(s, c) ? EPOLLIN : 0) |
		    (c->out_len ? EPOLLOUT : 0);
	if (ev.events != c->events) {
		epoll_ctl(s->epfd, EPOLL_CTL_MOD, c->fd, &ev);
		c->events = ev.events;
	}
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
	c->inflight++;
	s->inflight++;
	workq_push(s->wq, j);
}

static void handle_message(struct server *s, struct conn *c, json_object *msg)
{
	struct request req;
	const char *err;
	struct key *k;
	int r;

	r = request_parse(msg, &req, &err);
	if (r < 0) {
		log_notice("%s: bad request: %s", c->peer.desc, err);
		conn_reply_error(c, req.id, err);
		return;
	}
	if (req.op == OP_STATUS) {
		conn_queue(c, reply_status(req.id, s->keys));
		return;
	}
	k = keystore_find(s->keys, req.key);
	if (!k) {
		if (req.op == OP_SIGN)
			audit_refused(&c->peer, &req, "unknown key");
		conn_reply_error(c, req.id, req.key ? "unknown key" :
						      "no default key: name one");
		return;
	}
	if (req.op == OP_CERT)
		conn_queue(c, reply_cert(req.id, k));
	else
		dispatch_sign(s, c, &req, k);
}

/* Take every whole frame we may act on from the input buffer. */
static void conn_process(struct server *s, struct conn *c)
{
	size_t off = 0;

	while (!c->closing && !s->stopping && c->inflight < SERVER_MAX_INFLIGHT &&
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
}

static int conn_grow_input(struct conn *c)
{
	const size_t max = PROTO_HEADER_LEN + PROTO_MAX_FRAME;
	size_t cap;
	uint8_t *p;

	if (c->in_len < c->in_cap)
		return 0;
	if (c->in_cap >= max)
		return -ENOBUFS; /* a whole frame is already buffered */
	cap = c->in_cap ? c->in_cap * 2 : 4096;
	if (cap > max)
		cap = max;
	p = realloc(c->in, cap);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->in_cap = cap;
	return 0;
}

static void conn_readable(struct server *s, struct conn *c)
{
	ssize_t n;

	if (conn_grow_input(c) < 0) {
		conn_close(s, c);
		return;
	}
	n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n < 0) {
		log_debug("%s: read failed: %m", c->peer.desc);
		conn_close(s, c);
		return;
	}
	if (n == 0) {
		c->eof = true;
	} else {
		c->in_len += (size_t)n;
		c->last_io_ms = now_ms();
	}
	conn_process(s, c);
	conn_update(s, c);
}

static void conn_event(struct server *s, struct conn *c, uint32_t events)
{
	if (events & EPOLLIN)
		conn_readable(s, c);
	else if (events & (EPOLLHUP | EPOLLERR) && !(events & EPOLLOUT))
		conn_close(s, c);
	else
		conn_update(s, c);
}

/* ---- accepting -------------------------------------------------------- */

/* Best effort: tell a refused peer why, then hang up. */
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

static void accept_one(struct server *s, int lfd)
{
	struct conn *c;
	struct peer peer;
	int fd;

	fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0) {
		if (errno != EAGAIN && errno != EINTR && errno != ECONNABORTED)
			log_warning("accept failed: %m");
		return;
	}
	if (peer_from_socket(fd, &peer) < 0) {
		close(fd);
		return;
	}
	if (!policy_allows(s->policy, &peer)) {
		log_warning("%s: refused: not allowed by policy", peer.desc);
		refuse(fd, "permission denied: not allowed by the daemon's policy");
		return;
	}
	if (s->n_conns >= s->cfg.max_conns) {
		log_warning("%s: refused: connection limit (%u) reached", peer.desc,
			    s->cfg.max_conns);
		refuse(fd, "too many connections, try again later");
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->kind = W_CONN;
	c->fd = fd;
	c->peer = peer;
	c->events = EPOLLIN;
	c->last_io_ms = now_ms();
	if (watch(s, fd, EPOLLIN, c) < 0) {
		close(fd);
		free(c);
		return;
	}
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	log_debug("%s: connected", peer.desc);
}

/* ---- completions, signals, timeouts ----------------------------------- */

static void complete(struct server *s, struct job *j)
{
	struct conn *c = j->conn;

	c->inflight--;
	s->inflight--;
	if (c->fd < 0) {
		audit_sign(&c->peer, j, "client gone");
		if (c->inflight == 0)
			conn_free(s, c);
		return;
	}
	if (j->r < 0) {
		audit_sign(&c->peer, j, "signing failed");
		conn_reply_error(c, j->id, "signing failed");
	} else {
		/* The record comes first: no signature leaves unaudited. */
		audit_sign(&c->peer, j, "ok");
		conn_queue(c, reply_signature(j->id, j->key, j->der, j->der_len));
	}
	conn_process(s, c); /* input held back by the in-flight limit */
	conn_update(s, c);
}

static void drain_workq(struct server *s)
{
	struct job *j = workq_take_done(s->wq);

	while (j) {
		struct job *next = j->next;

		complete(s, j);
		job_free(j);
		j = next;
	}
}

static void begin_stop(struct server *s)
{
	struct conn *c, *next;

	s->stopping = true;
	s->drain_deadline_ms = now_ms() + SERVER_DRAIN_TIMEOUT_MS;
	for (size_t i = 0; i < s->n_listeners; i++)
		epoll_ctl(s->epfd, EPOLL_CTL_DEL, s->listeners[i].fd, NULL);
	for (c = s->conns; c; c = next) {
		next = c->next;
		conn_update(s, c);
	}
}

static void handle_signal(struct server *s)
{
	struct signalfd_siginfo si;

	if (read(s->sig_fd, &si, sizeof(si)) != sizeof(si))
		return;
	if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT) {
		log_info("signal %d: finishing %u in-flight request(s), then exiting",
			 (int)si.ssi_signo, s->inflight);
		begin_stop(s);
	}
}

static void sweep_timeouts(struct server *s)
{
	uint64_t now = now_ms();
	struct conn *c, *next;

	for (c = s->conns; c; c = next) {
		next = c->next;
		if (c->fd < 0 || (c->in_len == 0 && c->out_len == 0))
			continue;
		if (now - c->last_io_ms > SERVER_IO_TIMEOUT_MS) {
			log_notice("%s: timed out with %s pending", c->peer.desc,
				   c->out_len ? "unread replies" : "a partial request");
			conn_close(s, c);
		}
	}
}

static void dispatch(struct server *s, struct epoll_event *ev)
{
	enum watch_kind *kind = ev->data.ptr;

	switch (*kind) {
	case W_LISTENER:
		accept_one(s, ((struct listener *)kind)->fd);
		break;
	case W_CONN:
		conn_event(s, (struct conn *)kind, ev->events);
		break;
	case W_WORKQ:
		drain_workq(s);
		break;
	case W_SIGNAL:
		handle_signal(s);
		break;
	}
}

int server_run(struct server *s)
{
	struct epoll_event evs[64];
	uint64_t last_sweep = now_ms();

	for (;;) {
		int n = epoll_wait(s->epfd, evs, ELEMENTSOF(evs), 1000);

		if (n < 0 && errno != EINTR)
			return log_error_errno(-errno, "epoll_wait: %m");
		for (int i = 0; i < n; i++)
			dispatch(s, &evs[i]);
		if (now_ms() - last_sweep >= 1000) {
			sweep_timeouts(s);
			last_sweep = now_ms();
		}
		if (s->stopping &&
		    (s->n_conns == 0 || now_ms() > s->drain_deadline_ms))
			break;
	}
	return 0;
}

/* ---- set-up ----------------------------------------------------------- */

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

int server_new(const struct server_config *cfg, const struct keystore *keys,
	       const struct policy *policy, struct server **ret)
{
	struct server *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	s->cfg = *cfg;
	s->keys = keys;
	s->policy = policy;
	s->wq_fd = s->sig_fd = -1;
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
	struct listener *l;
	mode_t old;
	int fd, r;

	if (s->n_listeners >= SERVER_MAX_LISTENERS)
		return -E2BIG;
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
	l = &s->listeners[s->n_listeners];
	*l = (struct listener){ .kind = W_LISTENER, .fd = fd, .path = strdup(path) };
	r = watch(s, fd, EPOLLIN, l);
	if (r < 0) {
		close(fd);
		free(l->path);
		return r;
	}
	s->n_listeners++;
	return 0;
}

void server_free(struct server *s)
{
	if (!s)
		return;
	while (s->conns) {
		struct conn *c = s->conns;

		if (c->fd >= 0)
			close(c->fd);
		conn_free(s, c);
	}
	workq_stop(s->wq);
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
	free(s);
}
