/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pool of a batch.  Why one connection per target rather than one to
 * the first that answers: a signing host that dies or stops mid-batch
 * then costs the batch its outstanding requests only, which go to the
 * others, instead of the batch.  The connections are opened one after the
 * other, each bounded by the stall timeout (a stopped host accepts TCP
 * but never finishes the handshake).
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "pool.h"
#include "util.h"

/* "did not answer" for a host that is down; a TLS failure (a certificate
 * we do not trust, a wrong name) says it is not used, which is the point:
 * such a host could be anyone's. */
static void say_failed(const struct conn_target *t, int r, const char *why, bool none)
{
	const char *reason = why ?: strerror(-r);

	if (none)
		warn_msg("cannot connect to modsignd at %s: %s", t->label, reason);
	else if (r == -EPROTO)
		warn_msg("%s: not used: %s", t->label, reason);
	else
		warn_msg("%s did not answer: %s", t->label, reason);
}

/* "using A, B" after some targets failed: where the signatures come from. */
static void say_using(const struct pool *p)
{
	char line[1024] = "";
	size_t used = 0;

	for (size_t i = 0; i < p->n && used < sizeof(line); i++)
		used += (size_t)snprintf(line + used, sizeof(line) - used, "%s%s",
					 i ? ", " : "", conn_address(p->v[i].c));
	warn_msg("using %s", line);
}

int pool_open(struct pool *p, const struct global *g)
{
	_cleanup_(freep) struct conn_target *t = NULL;
	const char *whys[CONN_MAX_TARGETS];
	int errs[CONN_MAX_TARGETS];
	size_t nt = 0, failed = 0;
	int r;

	*p = (struct pool){ .stall_ms = g->stall_ms };
	r = conn_targets(g->servers, g->n_servers, &t, &nt);
	if (r < 0) {
		warn_msg("%s", strerror(-r));
		return r;
	}
	for (size_t i = 0; i < nt; i++) {
		struct conn *c = NULL;

		errs[i] = conn_open_target(&t[i], &g->tls, g->stall_ms, &c, &whys[i]);
		if (errs[i] < 0) {
			failed++;
			continue;
		}
		/* A reply normally comes in milliseconds; a read or write cut
		 * off halfway waits no longer than a stall. */
		if (nt > 1)
			conn_set_timeout(c, g->stall_ms);
		p->v[p->n++] = (struct pool_conn){ .c = c };
	}
	p->live = p->n;
	for (size_t i = 0; i < nt; i++)
		if (errs[i] < 0)
			say_failed(&t[i], errs[i], whys[i], p->n == 0);
	if (failed > 0 && p->n > 0)
		say_using(p);
	return p->n > 0 ? 0 : -ECONNREFUSED;
}

void pool_adopt(struct pool *p, struct conn *c, unsigned stall_ms)
{
	*p = (struct pool){ .stall_ms = stall_ms, .n = 1, .live = 1 };
	p->v[0].c = c;
}

void pool_sent(struct pool *p, size_t i)
{
	if (p->v[i].inflight++ == 0)
		p->v[i].progress_ms = now_ms();
}

void pool_replied(struct pool *p, size_t i)
{
	p->v[i].inflight--;
	p->v[i].progress_ms = now_ms();
}

/* How long connection @i may stay silent with requests outstanding. */
static uint64_t stall_limit(const struct pool *p)
{
	return p->live > 1 ? p->stall_ms : (uint64_t)CONN_TIMEOUT_SEC * 1000;
}

/* The connection that has waited longest past its limit, if any; else
 * the time in ms until the first one reaches it. */
static int next_deadline(const struct pool *p, size_t *ret_i)
{
	uint64_t now = now_ms(), limit = stall_limit(p), soonest = UINT64_MAX;

	for (size_t i = 0; i < p->n; i++) {
		const struct pool_conn *pc = &p->v[i];
		uint64_t due;

		if (!pc->c || pc->inflight == 0)
			continue;
		due = pc->progress_ms + limit;
		if (due <= now) {
			*ret_i = i;
			return 0;
		}
		if (due - now < soonest)
			soonest = due - now;
	}
	return soonest == UINT64_MAX ? -1 : (int)(soonest > 60000 ? 60000 : soonest);
}

int pool_wait(struct pool *p, bool block, size_t *ret_i)
{
	struct pollfd fds[CONN_MAX_TARGETS];
	size_t idx[CONN_MAX_TARGETS], nf = 0, stalled = 0;
	int timeout, r;

	for (size_t i = 0; i < p->n; i++) {
		if (!p->v[i].c || p->v[i].inflight == 0)
			continue;
		if (conn_has_input(p->v[i].c)) {
			*ret_i = i;
			return 1;
		}
		fds[nf] = (struct pollfd){ .fd = conn_fd(p->v[i].c), .events = POLLIN };
		idx[nf++] = i;
	}
	if (nf == 0)
		return -ENOTCONN;
	for (;;) {
		/* A deadline passed is a stall only if nothing has arrived: a
		 * reply may have waited while we wrote modules. */
		timeout = next_deadline(p, &stalled);
		r = poll(fds, nf, block ? timeout : 0);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		for (size_t k = 0; k < nf; k++)
			if (fds[k].revents) {
				*ret_i = idx[k];
				return 1;
			}
		if (!block && timeout != 0)
			return -EAGAIN;
		if (timeout == 0) {
			*ret_i = stalled;
			return 0;
		}
	}
}

void pool_drop(struct pool *p, size_t i)
{
	if (!p->v[i].c)
		return;
	conn_close(p->v[i].c);
	p->v[i] = (struct pool_conn){ 0 };
	p->live--;
}

void pool_close(struct pool *p)
{
	for (size_t i = 0; i < p->n; i++)
		pool_drop(p, i);
}
