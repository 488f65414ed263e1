/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_WORKQ_H
#define MODSIGND_WORKQ_H

/*
 * A pool of signing threads.  The event loop never signs: it queues a job
 * and goes on serving other connections; a worker signs and hands the job
 * back, and an eventfd wakes the loop.  Private-key operations thus use
 * every core while no slow client can hold anyone up.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "digest.h"
#include "keys.h"

struct conn;

struct job {
	struct job *next;
	/* request, set by the loop */
	struct conn *conn;
	uint64_t id;
	struct key *key;
	const struct digest *md;
	uint8_t digest[DIGEST_MAX_LEN];
	size_t digest_len;
	bool use_keyid;
	bool mu;  /* digest is an ML-DSA mu (request.h) */
	char *module;
	char *program;   /* NULL: the request named none */
	uint64_t start_us; /* metrics_now_us() when queued */
	/* result, set by the worker */
	int r;
	int audit_r; /* set by the loop: < 0, the record failed and the signature must not leave */
	int tlog_r;  /* likewise for the transparency log's entry */
	bool logged; /* in the transparency log, as leaf log_index */
	uint64_t log_index;
	uint8_t *der;
	size_t der_len;
};

struct workq;

void job_free(struct job *j);

/* Start a daemon thread running @fn(@arg), with a stack small enough
 * to be locked (see secure.c).  0 or -errno. */
int thread_start(pthread_t *ret, void *(*fn)(void *), void *arg);

/* Start @n threads.  *@ret_fd becomes readable when jobs are done. */
int workq_start(unsigned n, struct workq **ret, int *ret_fd);

/* Queue a job; the queue owns it until workq_take_done() returns it. */
void workq_push(struct workq *q, struct job *j);

/* All finished jobs (a list linked by ->next), oldest first, or NULL. */
struct job *workq_take_done(struct workq *q);

/* Finish queued work, join the threads and free the queue; accepts NULL. */
void workq_stop(struct workq *q);

#endif
