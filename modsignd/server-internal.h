/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_SERVER_INTERNAL_H
#define MODSIGND_SERVER_INTERNAL_H

/*
 * The event loop's insides (server.h is its contract with main.c), shared
 * by the files it is split into, one concern each.  A file calls only
 * those below it, never one beside or above it, so the calls between
 * them make no loop (checked with nm: every undefined symbol of each
 * server*.o that another one defines):
 *
 *   server.c            the loop: events, signals, timeouts, set-up, free
 *   server-listen.c     binding listeners, adopting systemd's sockets
 *   server-accept.c     accepting: UNIX admission, TLS sources and each
 *                       listener's handshake budget
 *   server-handshake.c  TLS handshakes: a token to go on, then the end
 *                       (certificate, policy, connection slots)
 *   server-commit.c     jobs back from the workers: group commit, audit,
 *                       reply
 *   server-dispatch.c   requests: parse, authorize, answer or queue
 *   server-conn.c       a connection's life, bytes and epoll interest
 *
 *   server.c           -> accept, handshake, commit, dispatch, conn
 *   server-listen.c    -> conn (watch() only)
 *   server-accept.c    -> dispatch, conn
 *   server-handshake.c -> dispatch, conn
 *   server-commit.c    -> dispatch, conn
 *   server-dispatch.c  -> conn
 *   server-conn.c      -> none of them
 *
 * server-listen.c is reached from main.c through server.h.  Admission
 * policy (tokens, shares, caps) is admission.c's; these files only say
 * when to ask it.
 */

#include <json-c/json.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "admission.h"
#include "audit.h"
#include "keys.h"
#include "policy.h"
#include "request.h"
#include "server.h"
#include "workq.h"

/* Finished jobs held for one transparency log commit, and the longest
 * the first waits (server-commit.c, group_ready(); measured:
 * docs/PERFORMANCE.md, "Sign window and group commit"). */
#define SERVER_GROUP_JOBS 256u
#define SERVER_GROUP_WAIT_MS 80u

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
	/* What it serves with: the caller's, outliving the server. */
	struct server_config cfg;
	struct keystore *keys;
	struct policy *policy;
	struct audit *audit;
	struct translog *translog; /* NULL: no --transparency-log */
	struct metrics *metrics; /* NULL: no --metrics-file; cfg's */

	/* The loop (server.c): epoll, signals, stopping, the watchdog. */
	int epfd;
	enum watch_kind sig_watch;
	int sig_fd;
	bool stopping;
	uint64_t drain_deadline_ms;
	uint64_t watchdog_usec;

	/* Listening sockets (server-listen.c). */
	struct listener listeners[SERVER_MAX_LISTENERS];
	size_t n_listeners;

	/* Connections (server-conn.c). */
	struct conn *conns;
	unsigned n_conns;      /* all in s->conns, handshaking and dead ones too */
	unsigned n_handshakes; /* of which TLS handshakes in progress */
	/* Connection slots taken: authenticated peers, open or with jobs
	 * still out (--max-connections); and of those, TLS peers still open. */
	unsigned n_held, n_tls;
	unsigned n_dead; /* closed, waiting for reap_conns() */

	/* Unauthenticated TLS peers (server-accept.c, server-handshake.c). */
	unsigned n_deferred; /* handshakes waiting for a token */
	struct admission *adm; /* per-source and per-identity limits */
	struct drop_counts dropped, dropped_logged;
	uint64_t drop_log_ms;

	/* Signing: the workers' queue and what is out on it. */
	struct workq *wq;
	enum watch_kind wq_watch;
	int wq_fd;
	unsigned inflight;
	uint64_t signed_total;

	/* Group commit (server-commit.c).  Finished jobs held for a larger
	 * group commit (with a log only). */
	struct job *held, *held_tail;
	unsigned n_held_jobs;
	uint64_t held_since_ms;
	/* The group whose log commit the syncer thread is making durable. */
	struct job *committing;
	struct translog_commit *commit;
	struct syncer *syncer;
	enum watch_kind syncer_watch;
	int syncer_fd;
};

/* server-conn.c: a connection's life, its bytes, its epoll interest. */
int watch(struct server *s, int fd, uint32_t events, void *ptr);
void handshake_join(struct server *s, struct listener *l, struct conn *c);
void handshake_leave(struct server *s, struct conn *c);
void conn_hold(struct server *s, struct conn *c);
void conn_release(struct server *s, struct conn *c);
void conn_close(struct server *s, struct conn *c);
void conn_free(struct server *s, struct conn *c);
void reap_conns(struct server *s);
int tls_result(struct conn *c, int ret);
int conn_fill(struct conn *c);
/* Frame @reply (consumed; NULL gives -ENOMEM) onto the output buffer. */
int conn_queue(struct conn *c, json_object *reply);
void conn_reply_error(struct conn *c, uint64_t id, const char *msg);
unsigned conn_window(const struct server *s);
bool conn_wants_input(const struct server *s, const struct conn *c);
void conn_update(struct server *s, struct conn *c);

/* server-dispatch.c: requests, from the input buffer to a reply or a job. */
bool audit_refusal(struct server *s, const struct peer *peer,
		   const struct request *req, const char *why);
void conn_process(struct server *s, struct conn *c);
void conn_readable(struct server *s, struct conn *c);
void conn_drain_tls(struct server *s, struct conn *c);

/* server-handshake.c */
void conn_handshake(struct server *s, struct conn *c);
bool handshake_charge(struct server *s, struct conn *c);
void resume_deferred(struct server *s);

/* server-accept.c */
void accept_one(struct server *s, struct listener *l);

/* server-commit.c: jobs back from the workers. */
bool group_waiting(const struct server *s);
void drain_workq(struct server *s);
void commit_done(struct server *s);
void end_commit(struct server *s);
void free_jobs(struct job *list);

#endif
