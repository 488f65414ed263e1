/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/crypto.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "workq.h"

#define WORKQ_MAX_THREADS 256
#define WORKQ_STACK_SIZE (1024u * 1024)

struct workq {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct job *todo, **todo_tail;
	struct job *done, **done_tail;
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
		/* An eventfd write cannot block or fail short of overflow. */
		(void)!write(q->efd, &one, sizeof(one));
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
