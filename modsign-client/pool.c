/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pool of a batch.  Why one connection per target rather than one to
 * the first that answers: a signing host that dies or stops mid-batch
 * then costs the batch its outstanding requests only, which go to the
 * others, instead of the batch.  The connections are opened one after the
 * other, each bounded by the stall timeout (a stopped host accepts TCP
 * but never finishes the handshake).  Then each is asked for the
 * certificate of the batch's key, and only those holding the key the
 * batch pins are used: every signature is verified with that certificate
 * (batch.c), and a server that fails the check at the start costs no
 * request.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>

#include "pool.h"
#include "rpc.h"
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

/* Open a connection to every target; those that fail are said. */
static int pool_connect(struct pool *p, const struct global *g)
{
	_cleanup_(freep) struct conn_target *t = NULL;
	const char *whys[CONN_MAX_TARGETS];
	int errs[CONN_MAX_TARGETS];
	size_t nt = 0, failed = 0;
	int r;

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
	return p->n == 0 ? -ECONNREFUSED : (int)failed;
}

/* Why a connection did not give its certificate; "" if it did. */
typedef char pool_why[256];

/* Drop connection @i with the reason; not yet a signing server. */
static void drop_unused(struct pool *p, size_t i, const char *why)
{
	warn_msg("%s: not used: %s", conn_address(p->v[i].c), why);
	pool_drop(p, i);
}

/* The certificate in connection @i's reply to `cert` request @id, or
 * why there is none (in @why). */
static void read_cert(struct pool *p, size_t i, uint64_t id, X509 **ret, pool_why why)
{
	_cleanup_(json_object_putp) json_object *reply = NULL;
	struct conn *c = p->v[i].c;
	struct rpc_error err;
	uint64_t got;
	int r;

	r = conn_recv(c, &reply);
	if (r == -ETIMEDOUT)
		snprintf(why, sizeof(pool_why), "no answer to cert (stalled)");
	else if (r < 0)
		snprintf(why, sizeof(pool_why), "cert: %s", conn_strerror(c, r));
	else if (proto_get_uint(reply, PROTO_F_ID, &got) < 0 || got != id) {
		conn_note_refusal(c, reply_error(reply));
		snprintf(why, sizeof(pool_why), "cert: %s", conn_strerror(c, -ECONNREFUSED));
	} else if (rpc_cert_reply(reply, ret, &err) < 0)
		/* Cut at the end of @why, as ever. */
		snprintf(why, sizeof(pool_why), "cert: %.*s",
			 (int)(sizeof(pool_why) - sizeof("cert: ")),
			 err.malformed ? "malformed certificate" : err.why);
}

/* Every connection's certificate of @key into @certs, or why not into
 * @whys: the requests all sent first, so that the replies come in
 * parallel, and read against one deadline, the stall timeout from the
 * last request sent: n silent servers cost one stall, not n (each read
 * with a timeout of its own did). */
static void fetch_certs(struct pool *p, const char *key, X509 **certs, pool_why *whys)
{
	uint64_t ids[CONN_MAX_TARGETS], deadline;

	for (size_t i = 0; i < p->n; i++) {
		_cleanup_(json_object_putp) json_object *req = NULL;
		int r;

		ids[i] = conn_next_id(p->v[i].c);
		req = rpc_cert_request(ids[i], key);
		r = req ? conn_send(p->v[i].c, req) : -ENOMEM;
		if (r < 0)
			snprintf(whys[i], sizeof(pool_why), "cert: %s",
				 conn_strerror(p->v[i].c, r));
	}
	deadline = now_ms() + p->stall_ms;
	for (size_t i = 0; i < p->n; i++) {
		uint64_t now = now_ms();

		if (whys[i][0])
			continue;
		/* One server keeps its own timeout (pool_connect()). */
		if (p->n > 1)
			conn_set_timeout(p->v[i].c,
					 deadline > now + 1 ? (unsigned)(deadline - now) : 1);
		read_cert(p, i, ids[i], &certs[i], whys[i]);
		if (p->n > 1)
			conn_set_timeout(p->v[i].c, p->stall_ms);
	}
}

/* Drop the connections that gave no certificate, each said: "not used"
 * when another did, else why no module can be signed. */
static void drop_certless(struct pool *p, X509 **certs, pool_why *whys, const char *key)
{
	size_t have = 0;

	for (size_t i = 0; i < p->n; i++)
		have += certs[i] != NULL;
	for (size_t i = 0; i < p->n; i++) {
		if (certs[i])
			continue;
		if (have > 0) {
			drop_unused(p, i, whys[i]);
			continue;
		}
		warn_msg("%s: cannot sign with key '%s': %s", conn_address(p->v[i].c),
			 key ?: "default", whys[i]);
		pool_drop(p, i);
	}
}

/*
 * No certificate given: the servers' must all be one.  Pinning the first
 * reply's would let whichever member answers first choose the key a batch
 * is checked against (a member holding no key, or its own, would then
 * have the honest ones dropped); with a disagreement nothing tells the
 * honest servers apart, so the batch does not start.
 */
static int agree(struct pool *p, X509 **certs, struct pool_pin *pin)
{
	size_t first = p->n;

	for (size_t i = 0; i < p->n; i++) {
		if (!p->v[i].c)
			continue;
		if (first == p->n) {
			first = i;
		} else if (X509_cmp(certs[first], certs[i]) != 0) {
			warn_msg("%s and %s have different certificates for key '%s'; "
				 "name the one to sign with (sign --cert FILE, or cert in "
				 "the config); no module signed",
				 conn_address(p->v[first].c), conn_address(p->v[i].c),
				 pin->key ?: "default");
			return -ENOTUNIQ;
		}
	}
	if (first == p->n)
		return -ENOKEY; /* each said why */
	X509_up_ref(certs[first]);
	pin->cert = certs[first];
	return 0;
}

/* Leave out the servers whose key is not @pin's; -ENOKEY if that is
 * all of them, said in one line. */
static int drop_other_keys(struct pool *p, X509 **certs, const struct pool_pin *pin)
{
	size_t same = 0, other = 0;
	char why[512];

	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].c)
			X509_cmp(certs[i], pin->cert) == 0 ? same++ : other++;
	if (same == 0 && other > 0) {
		warn_msg("%s: the daemon's key '%s' is not this certificate; no module signed",
			 pin->path ?: "pinned", pin->key ?: "default");
		return -ENOKEY;
	}
	snprintf(why, sizeof(why), "its key '%s' is not the certificate %s",
		 pin->key ?: "default", pin->path ?: "pinned");
	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].c && X509_cmp(certs[i], pin->cert) != 0)
			drop_unused(p, i, why);
	return same > 0 ? 0 : -ENOKEY;
}

/* The connections left, to v[0..n). */
static void compact(struct pool *p)
{
	size_t k = 0;

	for (size_t i = 0; i < p->n; i++)
		if (p->v[i].c)
			p->v[k++] = p->v[i];
	for (size_t i = k; i < p->n; i++)
		p->v[i] = (struct pool_conn){ 0 };
	p->n = p->live = k;
}

int pool_open(struct pool *p, const struct global *g, struct pool_pin *pin)
{
	X509 *certs[CONN_MAX_TARGETS] = { 0 };
	pool_why whys[CONN_MAX_TARGETS] = { { 0 } };
	size_t opened;
	int failed, r;

	*p = (struct pool){ .stall_ms = g->stall_ms };
	failed = pool_connect(p, g);
	if (failed < 0)
		return failed;
	opened = p->n;
	fetch_certs(p, pin->key, certs, whys);
	drop_certless(p, certs, whys, pin->key);
	r = pin->cert ? 0 : agree(p, certs, pin);
	if (r >= 0)
		r = drop_other_keys(p, certs, pin);
	for (size_t i = 0; i < opened; i++)
		X509_free(certs[i]);
	compact(p);
	if (r < 0 || p->n == 0) {
		pool_close(p);
		return r < 0 ? r : -ENOKEY;
	}
	if (failed > 0 || p->n < opened)
		say_using(p);
	return 0;
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
