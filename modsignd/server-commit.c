/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Jobs back from the workers: the group commit.  Every finished job's
 * records (the transparency log's, then the audit log's) are made
 * durable, and only then are the signatures queued for their peers.
 * server-internal.h.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "metrics.h"
#include "proto.h"
#include "protocol.h"
#include "request.h"
#include "server-internal.h"
#include "syncer.h"
#include "translog.h"
#include "util.h"

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
		.md = j->md, .mu = j->mu, .digest = j->digest, .digest_len = j->digest_len,
		.module = j->module, .program = j->program, .result = result,
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
		.cert_sha256 = j->key->cert_sha256, .hash = j->mu ? PROTO_HASH_MU : digest_name(j->md),
		.digest = j->digest, .digest_len = j->digest_len, .module = j->module,
		.program = j->program, .client = j->conn->peer.identity, .sig = j->der, .sig_len = j->der_len,
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

/* A held group waits while the previous one's commit is being synced:
 * it grows meanwhile, and commits come as fast as the disk takes them. */
bool group_waiting(const struct server *s)
{
	return s->held && !s->committing;
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
 * workers need; a group is a quarter of the SERVER_MAX_INFLIGHT window,
 * so that while one group is synced and the next gathers the workers
 * still have work queued (what other sizes cost: docs/PERFORMANCE.md,
 * "Sign window and group commit").
 */
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

void drain_workq(struct server *s)
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
void commit_done(struct server *s)
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

void free_jobs(struct job *list)
{
	while (list) {
		struct job *next = list->next;

		job_free(list);
		list = next;
	}
}

/* At exit: the commit in progress ends (its entries published or cut
 * back, as in a running daemon); the jobs held have no one to reply to. */
void end_commit(struct server *s)
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
