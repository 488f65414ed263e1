/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Signing a batch of modules (batch.h): hash each module here, send only
 * its digest, and write back the returned signature.  Up to SIGN_WINDOW
 * requests are in flight on each connection of the pool (pool.h: every
 * server that answers), so hashing and writing here overlap with signing
 * on every core of every daemon.
 *
 * How a batch spreads and fails over: the connections are filled in
 * turn, one request each, up to their window; after that a connection
 * gets a new request when one of its replies arrives, so the fastest
 * server takes the most.  A connection that fails (reset, end of stream,
 * refusal, a server-side failure another server may not have) or stalls
 * (no reply for the stall timeout while another connection is live) is
 * closed, and its outstanding requests go back to the queue, in front,
 * to be sent on the others.  Each item is outstanding on one connection
 * at a time, and the module is written by its item only, once, from the
 * reply of that connection: a lost connection's late replies are never
 * read, since it is closed.  Its digest is kept, so a request sent again
 * is the same request.
 *
 * A compressed module is held decompressed in memory from its hash until
 * it is closed: no new module is opened while those open hold
 * BATCH_MAX_DECOMPRESSED_HELD (batch.h), unless none is in flight.
 */
#define _GNU_SOURCE /* asprintf */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "batch.h"
#include "cert.h"
#include "modfile.h"
#include "pkcs7.h"
#include "pool.h"
#include "rpc.h"
#include "protocol.h"
#include "util.h"

/* Requests in flight on each connection: the daemon's window, so its
 * workers keep signing while a group commits (docs/PERFORMANCE.md, "Sign
 * window and group commit"). */
#define SIGN_WINDOW PROTO_SIGN_WINDOW
/* Descriptors a module in flight holds: the module, its directory, the
 * directory of its detached signature, and a compressed module's
 * decompressed copy (modfile.h; in memory, within the batch's budget:
 * BATCH_MAX_DECOMPRESSED_HELD). */
#define SIGN_ITEM_FDS 4
/* Descriptors kept for the rest: standard streams, the connections, the
 * key's and certificate's files, OpenSSL's. */
#define SIGN_FD_RESERVE 64
/* Requests sent between two looks for replies (batch_fill()). */
#define SIGN_FILL_STEP 32u

/* The bytes of decompressed modules a batch holds (batch.h,
 * BATCH_MAX_DECOMPRESSED_HELD): counted when a module is opened
 * (item_hash()), released when it is closed (item_close()), whichever
 * way it ends: written, refused, failed, or left at the end. */
struct held {
	uint64_t now, peak;
};

struct item {
	const char *path;
	const char *dest; /* NULL: in place */
	char *p7s;        /* where the signature alone goes too; NULL: nowhere.
			   * Owned: freed by batch_sign_paths(), batch_sign_one(). */
	int p7s_dirfd;    /* sign-file -d/-p: its directory, resolved with the
			   * module's (m.dirfd's in place), -1 until then */
	char p7s_name[NAME_MAX + 1]; /* its name there */
	struct modfile m;
	uint8_t digest[DIGEST_MAX_LEN];
	size_t digest_len;     /* 0: not hashed yet */
	size_t on;             /* outstanding on pool connection on - 1; 0: not */
	uint64_t refused_by;   /* pool connections (bit i: v[i]) that refused it */
	char refusal[256];     /* the last refusal's reason */
	bool prepared, done, ok;
	bool server_failed;    /* not signed for the server's fault: refused,
				* what it returned did not verify, or lost */
	int prep_err;          /* modfile_prepare() failed: not written */
	const char *prep_why;
	struct held *held_in;  /* its batch's count (run_sign()) */
	uint64_t held;         /* what it adds to it: m.in_memory while open */
};

static void item_close(struct item *it)
{
	if (it->p7s_dirfd >= 0 && it->p7s_dirfd != it->m.dirfd)
		close(it->p7s_dirfd);
	it->p7s_dirfd = -1;
	modfile_close(&it->m);
	if (it->held) /* its memfd is freed with the close */
		it->held_in->now -= it->held;
	it->held = 0;
}

/* Count what @it, just opened, holds in memory. */
static void item_hold(struct item *it)
{
	struct held *h = it->held_in;

	it->held = it->m.in_memory;
	h->now += it->held;
	if (h->now > h->peak)
		h->peak = h->now;
}

static void item_fail(struct item *it, int r, const char *why)
{
	warn_msg("%s: %s", it->path, why ?: strerror(-r));
	item_close(it);
	it->done = true;
}

/*
 * sign-file -d/-p: the directory of MODULE.p7s, resolved now, with the
 * module's, and written in later: a directory on the path swapped for a
 * link meanwhile cannot send the .p7s away from the module that was read
 * (or replaced in place, in the directory modfile_open() holds).
 */
static int item_open_p7s_dir(struct item *it)
{
	if (it->m.dirfd >= 0 && !it->dest) {
		it->p7s_dirfd = it->m.dirfd;
		return (size_t)snprintf(it->p7s_name, sizeof(it->p7s_name), "%s.p7s",
					it->m.name) < sizeof(it->p7s_name) ? 0 : -ENAMETOOLONG;
	}
	it->p7s_dirfd = modfile_open_dir(it->p7s, it->p7s_name, sizeof(it->p7s_name));
	return it->p7s_dirfd < 0 ? it->p7s_dirfd : 0;
}

/* Open (unless open already: hashed again for an ML-DSA key, run_sign())
 * and hash; false (said, and the item done) if the file is bad. */
static bool item_hash(const struct batch_opts *o, struct item *it)
{
	const char *why;
	int r;

	if (it->m.fd < 0) {
		r = modfile_open(it->path, it->dest == NULL && !o->sign_only, &it->m, &why);
		if (r < 0) {
			item_fail(it, r, why);
			return false;
		}
		item_hold(it);
		/* Before the request: what would fail the write after the
		 * daemon signed, and can be known now. */
		if (!o->sign_only && (r = modfile_check_dest(&it->m, it->dest, &why)) < 0) {
			warn_write(it->dest ?: it->path, r, why);
			item_close(it);
			it->done = true;
			return false;
		}
	}
	r = o->mu ? modfile_mu(&it->m, o->tr, it->digest, &it->digest_len) :
		    modfile_digest(&it->m, o->md, it->digest, &it->digest_len);
	if (r < 0) {
		item_fail(it, r, r == -ESTALE ? "changed while being read" : NULL);
		return false;
	}
	if (o->save_sig && it->p7s_dirfd < 0 && (r = item_open_p7s_dir(it)) < 0) {
		warn_msg("%s: cannot open its directory: %s", it->p7s, strerror(-r));
		item_close(it);
		it->done = true;
		return false;
	}
	return true;
}

/* Hash (unless done already) and send on pool connection @on - 1; a
 * failure of the file is said and makes the item done (0, not sent); a
 * failure to send is the connection's (-errno). */
static int item_send(struct conn *c, size_t on, const struct batch_opts *o,
		     struct item *it, uint64_t id)
{
	_cleanup_(json_object_putp) json_object *req = NULL;
	int r;

	if (it->done || (it->digest_len == 0 && !item_hash(o, it)))
		return 0;
	/* The module's name is for the audit record; the path says which
	 * build it is. */
	req = rpc_sign_request(id, &(struct rpc_sign_args){ .key = o->key,
							     .hash = digest_name(o->md),
							     .digest = it->digest,
							     .digest_len = it->digest_len,
							     .module = it->path,
							     .use_keyid = o->use_keyid,
							     .tr = o->mu ? o->tr : NULL });
	if (!req)
		return -ENOMEM;
	r = conn_send(c, req);
	if (r < 0)
		return r;
	it->on = on;
	/* While the daemon signs: the new file, all but the signature; once,
	 * however many servers the request goes to. */
	if (!o->sign_only && !it->prepared)
		it->prep_err = modfile_prepare(&it->m, it->dest, &it->prep_why);
	it->prepared = true;
	return 0;
}

/*
 * An ML-DSA signature where this OpenSSL has no ML-DSA (3.0, Debian 12):
 * pkcs7_verify_mu() checked all but the signature value (one signer, the
 * certificate's, id-ml-dsa-* of its key, no attributes, the form asked),
 * and the daemon checked that mu was made for its key (tr).  A builder
 * that can sign through a Debian 13 daemon is the point of the mu form,
 * so it is written, with one warning per run; docs/SECURITY.md.
 */
static int unverifiable_once(void)
{
	static bool said;

	if (!said)
		warn_msg("cannot check ML-DSA signatures here (" MLDSA_NEEDS "): "
			 "checked their form and signer only");
	said = true;
	return 0;
}

/*
 * The signature in @reply, into *@ret_sig (new) only once it verifies
 * over @it's digest with the batch's certificate: nothing a server
 * returns is written unchecked.  -EREMOTEIO: a refusal; -EBADMSG: no
 * signature, or not a PKCS#7 one; -ENOKEY: made by another key;
 * -EKEYREJECTED (or pkcs7_verify_digest()'s others): not over this
 * module's digest.  The cost (issue 34): one public-key verify and the
 * parse of the PKCS#7 (1-2 KiB) per module; the certificate and its key
 * were parsed once for the run (pool_open(), expect_cert()).
 */
static int reply_signature(const struct batch_opts *o, const struct item *it,
			   json_object *reply, uint8_t **ret_sig, size_t *ret_len)
{
	_cleanup_(rpc_sign_freep) struct rpc_sign *s = NULL;
	struct rpc_error err;
	int r;

	r = rpc_sign_reply(reply, o->expect_cert, &s, &err);
	if (r < 0)
		return r;
	if (!o->cert)
		return -ENOKEY; /* nothing to check it with: never written */
	r = o->mu ? pkcs7_verify_mu(s->signature, s->signature_len, o->cert, it->digest,
				    it->digest_len, o->use_keyid) :
		    pkcs7_verify_digest(s->signature, s->signature_len, o->cert, o->md, it->digest,
					it->digest_len, o->use_keyid);
	if (r == -ENOSYS)
		r = unverifiable_once();
	if (r < 0)
		return r;
	*ret_len = s->signature_len;
	*ret_sig = TAKE_PTR(s->signature);
	return 0;
}

/* What is wrong with a server whose reply_signature() failed with @r. */
static const char *server_fault(int r)
{
	if (r == -EBADMSG)
		return "its signature is malformed";
	if (r == -ENOKEY)
		return "signs with another key than the certificate";
	return "its signature does not match the module";
}

/* The signature alone into the signature tree, in the directory found
 * now from the tree's descriptor: not by its path, which a link swapped
 * into the tree since item_sig_path() would lead elsewhere. */
static int write_in_tree(const struct batch_opts *o, struct item *it, const uint8_t *sig,
			 size_t len)
{
	const char *name, *why = NULL;
	int dirfd, r;

	dirfd = sigtree_open_dir(o->sigfd, o->sigdir, it->p7s, true, &name);
	if (dirfd < 0) {
		warn_msg("%s: %s", it->p7s, sigtree_strerror(dirfd));
		return dirfd;
	}
	r = modfile_write_detached_at(&it->m, dirfd, name, sig, len, &why);
	close(dirfd);
	if (r < 0)
		warn_write(it->p7s, r, why);
	return r;
}

/* The signature to the .p7s (if asked for), then into the module (unless
 * -d): sign-file's order. */
static int item_write(const struct batch_opts *o, struct item *it, const uint8_t *sig,
		      size_t len)
{
	const char *why = NULL;
	int r = 0;

	if (it->p7s && o->sigdir)
		r = write_in_tree(o, it, sig, len);
	else if (it->p7s && (r = modfile_write_detached_at(&it->m, it->p7s_dirfd, it->p7s_name,
							    sig, len, &why)) < 0)
		warn_write(it->p7s, r, why);
	if (r < 0)
		return r;
	if (o->sign_only)
		return 0;
	r = modfile_commit(&it->m, sig, len, &why);
	if (r < 0)
		warn_write(it->dest ?: it->path, r, why);
	return r;
}

/* Write or fail @it from its reply, checked (reply_signature()'s @r). */
static void item_finish(const struct batch_opts *o, struct item *it, json_object *reply,
			int r, const uint8_t *sig, size_t len)
{
	const int reply_r = r;

	if (r == -EREMOTEIO)
		warn_msg("%s: modsignd refused: %s", it->path, reply_error(reply));
	else if (r == -ENOKEY && o->expect_path)
		warn_msg("%s: the daemon's key is not the certificate given (%s); not signed",
			 it->path, o->expect_path);
	else if (r == -ENOKEY)
		warn_msg("%s: signed with another key than the servers' certificate; not signed",
			 it->path);
	else if (r == -EBADMSG)
		warn_msg("%s: malformed signature from modsignd", it->path);
	else if (r < 0)
		/* A server of the pool that answers for another module, or
		 * with a signature that does not verify. */
		warn_msg("%s: the signature from modsignd does not match the module; not signed",
			 it->path);
	else if ((r = it->prep_err) < 0)
		warn_write(it->dest ?: it->path, r, it->prep_why);
	else
		r = item_write(o, it, sig, len);
	it->server_failed = r < 0 && reply_r < 0;
	item_close(it);
	it->done = true;
	it->ok = r >= 0;
}

/* On a terminal, a status line: done/total, rate, time left. */
struct progress {
	bool on;
	size_t total, done;
	uint64_t start_ms, last_ms; /* now_ms() */
};

/* Seconds since @ms (now_ms()). */
static double since(uint64_t ms)
{
	return (double)(now_ms() - ms) / 1000;
}

static void progress_step(struct progress *p)
{
	double el, rate;

	p->done++;
	if (!p->on || (since(p->last_ms) < 0.1 && p->done < p->total))
		return;
	p->last_ms = now_ms();
	el = since(p->start_ms);
	rate = el > 0 ? (double)p->done / el : 0;
	fprintf(stderr, "\r\033[Ksigned %zu/%zu  %.0f/s  %.0f s left", p->done, p->total,
		rate, rate > 0 ? (double)(p->total - p->done) / rate : 0.0);
	if (p->done == p->total)
		fputc('\n', stderr);
}

/* A batch over a pool: its items, the first never sent, and those whose
 * connection was lost, to send again first. */
struct batch {
	const struct batch_opts *o;
	struct item *items;
	size_t n, next;
	size_t *again, n_again;
	struct pool pool;
	struct progress prog;
	unsigned window;     /* requests in flight per connection, sign_window() */
	size_t turn;         /* the connection batch_fill() starts with */
	bool ended;          /* conn_end_requests() said */
	char why[512];       /* why the last connection was lost */
	struct held held;    /* the decompressed modules open */
	uint64_t budget;     /* what they may hold before no new one opens */
};

/* Bit of pool connection @i in item.refused_by. */
#define CONN_BIT(i) (UINT64_C(1) << (i))
_Static_assert(CONN_MAX_TARGETS <= 64, "item.refused_by has a bit per connection");

/* The live connections, as bits. */
static uint64_t batch_live(const struct batch *b)
{
	uint64_t m = 0;

	for (size_t i = 0; i < b->pool.n; i++)
		if (b->pool.v[i].c)
			m |= CONN_BIT(i);
	return m;
}

/* An item to send again on connection @i: one it has not refused.  The
 * most recent first; a done one is taken out on the way. */
static bool batch_take_again(struct batch *b, size_t i, size_t *ret)
{
	for (size_t j = b->n_again; j-- > 0;) {
		size_t k = b->again[j];

		if (!b->items[k].done && (b->items[k].refused_by & CONN_BIT(i)))
			continue;
		b->again[j] = b->again[--b->n_again];
		if (!b->items[k].done) {
			*ret = k;
			return true;
		}
	}
	return false;
}

/*
 * Whether a new module may be opened (batch.h, BATCH_MAX_DECOMPRESSED_HELD):
 * while the open ones hold less than the budget, or when none is in
 * flight and none waits in the queue, so that one always can (one larger
 * than the budget signs alone), and the batch never waits for a reply
 * that cannot come.  Those it holds are in flight, or queued to be sent
 * again (batch_take_again(), always taken: they hold their memory
 * already), so replies release them.  A queued one waits for a server
 * that has not refused it, and there is one, live (batch_fail_refused()),
 * which takes it in this fill: opening one more meanwhile let each
 * server that refuses every module open one more (review 22: with k of
 * them, k modules over the bound).  The most held is the budget plus one
 * module.
 */
static bool batch_may_open(const struct batch *b)
{
	if (b->held.now < b->budget)
		return true;
	for (size_t i = 0; i < b->pool.n; i++)
		if (b->pool.v[i].c && b->pool.v[i].inflight > 0)
			return false;
	return b->n_again == 0;
}

static bool batch_take(struct batch *b, size_t i, size_t *ret)
{
	if (batch_take_again(b, i, ret))
		return true;
	if (!batch_may_open(b))
		return false;
	while (b->next < b->n)
		if (!b->items[b->next++].done) {
			*ret = b->next - 1;
			return true;
		}
	return false;
}

static bool batch_more(const struct batch *b)
{
	return b->n_again > 0 || b->next < b->n;
}

/* A server-side failure that another server may not share: the key's
 * token or the audit log (docs/PROTOCOL.md): that server is dropped.
 * Another refusal (policy) goes to the servers that have not refused the
 * module, the server kept (batch_refused()). */
static bool error_elsewhere(json_object *reply)
{
	const char *e = reply_error(reply);

	return strncmp(e, "signing with key ", 17) == 0 ||
	       strncmp(e, "audit log unavailable", 21) == 0;
}

/* Fail the queued items that every live server has refused (a server
 * that had not is gone), each with its last refusal. */
static void batch_fail_refused(struct batch *b)
{
	uint64_t live = batch_live(b);

	if (live == 0)
		return; /* the items left are named at the end */
	for (size_t k = 0; k < b->n; k++) {
		struct item *it = &b->items[k];

		if (it->done || it->on || !it->refused_by || (it->refused_by & live) != live)
			continue;
		warn_msg("%s: modsignd refused: %s", it->path, it->refusal);
		item_close(it);
		it->done = true;
		progress_step(&b->prog);
	}
}

/*
 * Connection @i refused @it: true if it goes back to the queue for
 * another server that has not refused it (a member that refuses, by its
 * policy or its fault, must not fail modules an honest one signs); false
 * when every live server has, and the refusal stands.
 */
static bool batch_refused(struct batch *b, size_t i, struct item *it, json_object *reply)
{
	uint64_t live = batch_live(b);

	it->refused_by |= CONN_BIT(i);
	snprintf(it->refusal, sizeof(it->refusal), "%s", reply_error(reply));
	if ((it->refused_by & live) == live)
		return false;
	it->on = 0;
	b->again[b->n_again++] = (size_t)(it - b->items);
	return true;
}

/* Close connection @i; its outstanding items go back to the queue. */
static void batch_lose(struct batch *b, size_t i, const char *why)
{
	size_t moved = 0;

	snprintf(b->why, sizeof(b->why), "%s: %s", conn_address(b->pool.v[i].c), why);
	for (size_t k = 0; k < b->n; k++) {
		struct item *it = &b->items[k];

		if (it->on != i + 1 || it->done)
			continue;
		it->on = 0;
		b->again[b->n_again++] = k;
		moved++;
	}
	pool_drop(&b->pool, i);
	batch_fail_refused(b);
	if (b->pool.live > 0)
		warn_msg("%s; %zu request%s sent to the other server%s", b->why, moved,
			 moved == 1 ? "" : "s", b->pool.live == 1 ? "" : "s");
	else if (b->pool.n > 1) /* each of the others was named as it went */
		warn_msg("%s; no server left: all %zu of the pool failed", b->why, b->pool.n);
}

/*
 * The window per connection: SIGN_WINDOW, or what the descriptor limit
 * (raised to the hard one at start) holds across @servers connections.  A
 * smaller window is slower; running out of descriptors fails modules
 * ("Too many open files").
 */
static unsigned sign_window(size_t servers)
{
	struct rlimit rl;
	rlim_t w;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY)
		return SIGN_WINDOW;
	if (rl.rlim_cur <= SIGN_FD_RESERVE + servers)
		return 1; /* what can be opened is opened; the rest is named */
	w = (rl.rlim_cur - SIGN_FD_RESERVE - servers) / (SIGN_ITEM_FDS * (servers ?: 1));
	return w < 1 ? 1 : w > SIGN_WINDOW ? SIGN_WINDOW : (unsigned)w;
}

/*
 * Fill the windows in turn, one request each, so that a batch starts on
 * every server at once; true if it stopped after SIGN_FILL_STEP requests
 * with more to send.  Hashing a whole window (1024 modules, ~100 MB)
 * before reading a reply would leave the signatures that came meanwhile
 * unwritten, and the daemon's replies piling up.
 */
static bool batch_fill(struct batch *b)
{
	bool sent = true;
	unsigned step = 0;

	while (sent && batch_more(b)) {
		sent = false;
		for (size_t t = 0; t < b->pool.n && batch_more(b); t++) {
			size_t i = (b->turn + t) % b->pool.n;
			struct pool_conn *pc = &b->pool.v[i];
			size_t k;
			int r;

			if (!pc->c || pc->inflight >= b->window || !batch_take(b, i, &k))
				continue;
			r = item_send(pc->c, i + 1, b->o, &b->items[k], k + 1);
			if (r < 0) {
				b->again[b->n_again++] = k;
				batch_lose(b, i, conn_strerror(pc->c, r));
				/* Another round: the queue changed, and a server
				 * seen before in this one may take it. */
				sent = true;
				continue;
			}
			if (b->items[k].on)
				pool_sent(&b->pool, i);
			sent = true;
			if (++step == SIGN_FILL_STEP) {
				b->turn = (i + 1) % b->pool.n; /* the next call goes on */
				return batch_more(b);
			}
		}
	}
	/* One server and nothing left to send: it may hang up after the
	 * last reply (conn.h).  Not with more: a lost one's requests may
	 * yet go to any. */
	if (!batch_more(b) && b->pool.n == 1 && b->pool.live == 1 && !b->ended) {
		conn_end_requests(b->pool.v[0].c);
		b->ended = true;
	}
	return false;
}

/* Read one reply from connection @i, and finish its item. */
static void batch_reply(struct batch *b, size_t i)
{
	_cleanup_(json_object_putp) json_object *reply = NULL;
	_cleanup_(freep) uint8_t *sig = NULL;
	struct conn *c = b->pool.v[i].c;
	struct item *it;
	size_t len = 0;
	uint64_t id;
	int r;

	r = conn_recv(c, &reply);
	if (r < 0)
		return batch_lose(b, i, conn_strerror(c, r));
	if (proto_get_uint(reply, PROTO_F_ID, &id) < 0 || id == 0 || id > b->n ||
	    b->items[id - 1].on != i + 1) {
		/* id 0: the daemon refused the connection or the frame */
		conn_note_refusal(c, reply_error(reply));
		return batch_lose(b, i, conn_strerror(c, -ECONNREFUSED));
	}
	it = &b->items[id - 1];
	pool_replied(&b->pool, i);
	r = reply_signature(b->o, it, reply, &sig, &len);
	/* While another server is live, nothing fails here that it may
	 * sign: a server that returns what does not verify is dropped (it
	 * could be anyone's), one whose key is unavailable too; a refusal
	 * goes to a server that has not refused it. */
	if (r < 0 && r != -EREMOTEIO && b->pool.live > 1)
		return batch_lose(b, i, server_fault(r)); /* it goes back too */
	if (r == -EREMOTEIO && b->pool.live > 1 && error_elsewhere(reply))
		return batch_lose(b, i, reply_error(reply));
	if (r == -EREMOTEIO && b->pool.live > 1 && batch_refused(b, i, it, reply))
		return;
	it->on = 0;
	item_finish(b->o, it, reply, r, sig, len);
	progress_step(&b->prog);
}

static void batch_run(struct batch *b)
{
	for (;;) {
		size_t i;
		int r;

		bool more = batch_fill(b);

		/* With more to send, only the replies already here. */
		r = pool_wait(&b->pool, !more, &i);
		if (r == 0) {
			batch_lose(b, i, "no reply (stalled)");
			continue;
		}
		if (r < 0) {
			if (more)
				continue;
			break; /* nothing outstanding after batch_fill(): done, or
				* no server left for what remains */
		}
		do /* this reply, and every other already here */
			batch_reply(b, i);
		while (pool_wait(&b->pool, false, &i) == 1);
	}
}

/* Signs @items over @b's pool; returns the number that were not signed. */
static size_t batch_sign(struct batch *b)
{
	size_t failed = 0;

	b->window = sign_window(b->pool.n);
	b->prog = (struct progress){ .on = b->n > 1 && isatty(STDERR_FILENO),
				     .total = b->n, .start_ms = now_ms() };
	batch_run(b);
	if (b->prog.on && b->prog.done < b->prog.total)
		fputc('\n', stderr); /* end the status line before the reasons */
	for (size_t i = 0; i < b->n; i++) {
		struct item *it = &b->items[i];

		if (!it->done) {
			warn_msg("%s: not signed: %s", it->path,
				 b->why[0] ? b->why : "no server left");
			it->server_failed = true;
		}
		if (!it->ok)
			failed++;
		item_close(it);
	}
	pool_close(&b->pool);
	return failed;
}

/*
 * kbuild's one module per call (@per_module) connects to one server of
 * the pool (client_connect_spread()), and checks its signature with the
 * certificate kbuild gave; a batch connects to all of them, each checked
 * to hold the key of @o's certificate, or all the same one when none was
 * given (that one is then @o's: pool_open()).
 */
/* The pure ML-DSA form (o->mu, o->tr) when @o's certificate is ML-DSA
 * and the signed-attributes form is not asked for; false when its key is
 * unusable (said). */
static bool choose_form(struct batch_opts *o)
{
	o->mu = false;
	if (!o->cert || !mldsa_of_cert(o->cert))
		return true;
	/* The kernel takes ML-DSA with signed attributes over sha512 only. */
	if (o->mldsa_attrs) {
		o->md = digest_lookup(PKCS7_MLDSA_ATTRS_DIGEST);
		return true;
	}
	if (mldsa_cert_tr(o->cert, o->tr) < 0) {
		warn_msg("%s: ML-DSA certificate with a bad public key", o->expect_path ?: "server");
		return false;
	}
	o->mu = true;
	return true;
}

static int run_sign(const struct global *g, struct batch_opts *o,
		    struct item *items, size_t n, size_t *per_module)
{
	struct pool_pin pin = { .key = o->key, .cert = o->cert, .path = o->expect_path };
	_cleanup_(freep) size_t *again = calloc(n ?: 1, sizeof(*again));
	struct batch b = { .o = o, .items = items, .n = n, .again = again,
			   .budget = o->held_budget ?: BATCH_MAX_DECOMPRESSED_HELD };
	struct conn *c = NULL;
	int r;

	if (!again || !choose_form(o))
		return 1;
	for (size_t k = 0; k < n; k++)
		items[k].held_in = &b.held;
	/* The first module is hashed before connecting: its request then
	 * follows the connect at once, and the daemon finds it waiting when
	 * it accepts (one wake-up fewer for kbuild's one module per run). */
	if (n > 0 && !items[0].done && !item_hash(o, &items[0]) && n == 1)
		return 1; /* said why; nothing to ask the daemon */
	if (per_module) {
		r = client_connect_spread(g, items[0].path, per_module, &c);
		if (r >= 0)
			pool_adopt(&b.pool, c, g->stall_ms);
	} else {
		r = pool_open(&b.pool, g, &pin);
		o->cert = pin.cert;
		/* The key is known only now when no certificate was given:
		 * an ML-DSA key's module is hashed again, into its mu (or
		 * with sha512 for the signed-attributes form). */
		if (r >= 0 && !pin.path) {
			if (!choose_form(o))
				r = -EINVAL;
			else if (mldsa_of_cert(o->cert) && n > 0)
				items[0].digest_len = 0;
		}
	}
	if (r < 0) {
		if (n > 0)
			item_close(&items[0]);
		return 1;
	}
	r = batch_sign(&b) ? 1 : 0;
	o->held_peak = b.held.peak;
	o->held_left = b.held.now;
	return r;
}

/*
 * Where @it's signature alone goes: sign-file names the .p7s after the
 * module (not its destination); sign --detached puts it in its tree.  A
 * module whose place cannot be made is named and left out of the batch.
 */
static int item_sig_path(const struct batch_opts *o, struct item *it)
{
	const char *name;
	int r;

	if (o->save_sig)
		return asprintf(&it->p7s, "%s.p7s", it->path) < 0 ? -ENOMEM : 0;
	if (!o->sigdir)
		return 0;
	r = sigtree_path(o->sigdir, o->roots, it->path, o->suffix, &it->p7s);
	if (r == -EINVAL) {
		item_fail(it, r, "a path with '..' has no place in the signature tree");
		return 0;
	}
	if (r >= 0 && (r = sigtree_open_dir(o->sigfd, o->sigdir, it->p7s, true, &name)) < 0) {
		warn_msg("%s: cannot make its directory: %s", it->p7s, sigtree_strerror(r));
		it->done = true;
	}
	if (r >= 0)
		close(r);
	return r == -ENOMEM ? r : 0;
}

static int cmp_sig_path(const void *a, const void *b)
{
	const struct item *x = *(struct item *const *)a, *y = *(struct item *const *)b;
	int c = strcmp(x->p7s, y->p7s);

	return c ? c : (x > y) - (x < y); /* the first given first */
}

/*
 * Two modules whose signatures would go to one file (two --recursive
 * trees with the same layout, a module named twice): the first given
 * keeps it, the others are named and left out, so that no signature file
 * is written twice and none holds another module's signature.
 */
static int refuse_shared_sig_paths(struct item *items, size_t n)
{
	_cleanup_(freep) struct item **v = calloc(n ?: 1, sizeof(*v));
	const struct item *first = NULL;
	size_t k = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		if (items[i].p7s && !items[i].done)
			v[k++] = &items[i];
	qsort(v, k, sizeof(*v), cmp_sig_path);
	for (size_t i = 0; i < k; i++) {
		if (!first || strcmp(first->p7s, v[i]->p7s) != 0) {
			first = v[i];
			continue;
		}
		warn_msg("%s: its signature would go where %s's goes (%s); not signed",
			 v[i]->path, first->path, v[i]->p7s);
		v[i]->done = true;
	}
	return 0;
}

int batch_sign_paths(const struct global *g, struct batch_opts *o,
		     const struct pathlist *paths)
{
	_cleanup_(freep) struct item *items = calloc(paths->n, sizeof(*items));
	int r = 0;

	if (!items)
		return 1;
	for (size_t i = 0; i < paths->n && r >= 0; i++) {
		items[i] = (struct item){ .path = paths->v[i], .p7s_dirfd = -1, .m.fd = -1 };
		r = item_sig_path(o, &items[i]);
	}
	if (r >= 0)
		r = refuse_shared_sig_paths(items, paths->n);
	if (r >= 0)
		r = run_sign(g, o, items, paths->n, NULL);
	for (size_t i = 0; i < paths->n; i++)
		free(items[i].p7s);
	return r < 0 ? 1 : r;
}

int batch_pin_cert(struct batch_opts *o, const char *path)
{
	int r = cert_file_fingerprint(path, &o->expect_cert);

	if (r >= 0)
		r = cert_load_file(path, &o->cert);
	o->expect_path = path;
	if (r < 0) {
		warn_cert(path, r);
		free(o->expect_cert);
		o->expect_cert = NULL;
	}
	return r;
}

void batch_opts_done(struct batch_opts *o)
{
	free(o->expect_cert);
	o->expect_cert = NULL;
	X509_free(o->cert);
	o->cert = NULL;
	if (o->sigfd >= 0)
		close(o->sigfd);
	o->sigfd = -1;
}

/*
 * kbuild's one module per call, on the server its path picks: a server
 * that refuses it, returns what does not verify or is lost before
 * answering sends it to the next (review of dd63b44: one member failed
 * the modules its paths picked, and modules_install stopped).
 */
static int sign_one(const struct global *g, struct batch_opts *o, struct item *it)
{
	size_t from = 0;
	int r;

	for (;;) {
		r = run_sign(g, o, it, 1, &from);
		if (r == 0 || !it->server_failed)
			return r;
		*it = (struct item){ .path = it->path, .dest = it->dest, .p7s = it->p7s,
				     .p7s_dirfd = -1, .m.fd = -1 };
	}
}

int batch_sign_one(const struct global *g, struct batch_opts *o, const char *path,
		   const char *dest)
{
	struct item it = { .path = path, .dest = dest, .p7s_dirfd = -1, .m.fd = -1 };
	int r;

	r = item_sig_path(o, &it) < 0 ? 1 : sign_one(g, o, &it);
	free(it.p7s);
	return r;
}
