/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "workq.h"

#define WORKQ_MAX_THREADS 256
#define WORKQ_STACK_SIZE (1024u * 1024)
/*
 * Finished jobs that wake the loop together while more are queued.  A
 * wake per job cost a batch three per module (the loop for the job, the
 * client for its reply, the loop again for the request that refills the
 * window), each a context switch into caches the signing had emptied:
 * with RSA-4096 the loop and the client spent 0.7 ms of CPU per module,
 * 15% of a signature (docs/PERFORMANCE.md, "Where the batch's time
 * goes").  A finished job waits for at most this many others, never when
 * none is queued behind it (the last one always wakes the loop), and no
 * longer than WORKQ_HOLD_US unless a slow signature is under way then: a
 * token that takes a second a signature delays a reply by one more
 * signature at most, far below a pool client's stall timeout (10 s).
 */
#define WORKQ_WAKE_JOBS 16
#define WORKQ_HOLD_US 20000

struct workq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *todo, **todo_tail;
	struct job *done, **done_tail;
	unsigned n_done; /* in done, not yet said on efd */
	uint64_t held_since_us; /* when the first of those was done */
	bool stop;
	int efd;
	unsigned n;
	pthread_t threads[WORKQ_MAX_THREADS];
};

void job_free(struct job *j)
{
	if (!j)
		return;
	free(j->module);
	OPENSSL_free(j->der);
	free(j);
}

static void job_run(struct job *j)
{
	j->r = j->mu ? key_sign_mu(j->key, j->digest, j->digest_len, j->use_keyid, &j->der,
				   &j->der_len) :
		       key_sign(j->key, j->md, j->digest, j->digest_len, j->use_keyid, &j->der,
				&j->der_len);
}

static uint64_t mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/* Under q->lock, @j just done: whether the loop is to be woken now. */
static bool wake_now(struct workq *q)
{
	uint64_t now = mono_us();

	if (q->n_done++ == 0)
		q->held_since_us = now;
	return q->n_done >= WORKQ_WAKE_JOBS || !q->todo || now - q->held_since_us >= WORKQ_HOLD_US;
}

static void *worker(void *arg)
{
	struct workq *q = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		struct job *j;

		while (!q->todo && !q->stop)
			pthread_cond_wait(&q->cond, &q->lock);
		if (!q->todo)
			break;
		j = q->todo;
		q->todo = j->next;
		if (!q->todo)
			q->todo_tail = &q->todo;
		pthread_mutex_unlock(&q->lock);

		job_run(j);

		pthread_mutex_lock(&q->lock);
		j->next = NULL;
		*q->done_tail = j;
		q->done_tail = &j->next;
		/* Else one of the jobs still queued wakes the loop for this
		 * one too.  An eventfd write cannot block or fail short of
		 * overflow. */
		if (wake_now(q)) {
			q->n_done = 0;
			(void)!write(q->efd, &one, sizeof(one));
		}
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/* A thread's stack is WORKQ_STACK_SIZE, not the 8 MiB default: all of the
 * daemon's memory is locked and RLIMIT_MEMLOCK counts a stack's whole
 * reservation (secure.c).  A signature's deepest path (OpenSSL's RSA and
 * EC code, a PKCS#11 module) uses tens of KiB. */
int thread_start(pthread_t *ret, void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int r = pthread_attr_init(&attr);

	if (r != 0)
		return -r;
	r = pthread_attr_setstacksize(&attr, WORKQ_STACK_SIZE);
	if (r == 0)
		r = pthread_create(ret, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -r;
}

int workq_start(unsigned n, struct workq **ret, int *ret_fd)
{
	struct workq *q;

	if (n == 0 || n > WORKQ_MAX_THREADS)
		return -EINVAL;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	pthread_mutex_init(&q->lock, NULL);
	pthread_cond_init(&q->cond, NULL);
	q->todo_tail = &q->todo;
	q->done_tail = &q->done;
	q->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (q->efd < 0) {
		int r = -errno;
		free(q);
		return r;
	}
	for (; q->n < n; q->n++) {
		int r = thread_start(&q->threads[q->n], worker, q);

		if (r < 0) {
			workq_stop(q);
			return r;
		}
	}
	*ret = q;
	*ret_fd = q->efd;
	return 0;
}

void workq_push(struct workq *q, struct job *j)
{
	j->next = NULL;
	pthread_mutex_lock(&q->lock);
	*q->todo_tail = j;
	q->todo_tail = &j->next;
	pthread_mutex_unlock(&q->lock);
	/* After the unlock: a worker woken while we hold the lock would only
	 * block on it again. */
	pthread_cond_signal(&q->cond);
}

struct job *workq_take_done(struct workq *q)
{
	struct job *list;
	uint64_t v;

	(void)!read(q->efd, &v, sizeof(v));
	pthread_mutex_lock(&q->lock);
	list = q->done;
	q->done = NULL;
	q->done_tail = &q->done;
	q->n_done = 0;
	pthread_mutex_unlock(&q->lock);
	return list;
}

void workq_stop(struct workq *q)
{
	struct job *j;

	if (!q)
		return;
	pthread_mutex_lock(&q->lock);
	q->stop = true;
	pthread_cond_broadcast(&q->cond);
	pthread_mutex_unlock(&q->lock);
	for (unsigned i = 0; i < q->n; i++)
		pthread_join(q->threads[i], NULL);
	while ((j = workq_take_done(q))) {
		while (j) {
			struct job *next = j->next;
			job_free(j);
			j = next;
		}
	}
	close(q->efd);
	pthread_mutex_destroy(&q->lock);
	pthread_cond_destroy(&q->cond);
	free(q);
}
