/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "syncer.h"
#include "workq.h" /* thread_start */

struct syncer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int (*fn)(void *); /* the step submitted, NULL once it ran */
	void *arg;
	bool done, stop;
	int r;
	int efd;
	pthread_t thread;
};

static void *run(void *arg)
{
	struct syncer *s = arg;
	const uint64_t one = 1;

	pthread_mutex_lock(&s->lock);
	for (;;) {
		int (*fn)(void *);
		void *fn_arg;
		int r;

		while (!s->fn && !s->stop)
			pthread_cond_wait(&s->cond, &s->lock);
		if (!s->fn)
			break;
		/* The step as submitted, both halves under the lock that
		 * syncer_submit() wrote them under. */
		fn = s->fn;
		fn_arg = s->arg;
		pthread_mutex_unlock(&s->lock);

		r = fn(fn_arg);

		pthread_mutex_lock(&s->lock);
		s->fn = NULL;
		s->r = r;
		s->done = true;
		(void)!write(s->efd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int syncer_start(struct syncer **ret, int *ret_fd)
{
	struct syncer *s = calloc(1, sizeof(*s));
	int r;

	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	r = s->efd < 0 ? -errno : thread_start(&s->thread, run, s);
	if (r < 0) {
		if (s->efd >= 0)
			close(s->efd);
		pthread_mutex_destroy(&s->lock);
		pthread_cond_destroy(&s->cond);
		free(s);
		return r;
	}
	*ret = s;
	*ret_fd = s->efd;
	return 0;
}

void syncer_submit(struct syncer *s, int (*fn)(void *), void *arg)
{
	pthread_mutex_lock(&s->lock);
	s->fn = fn;
	s->arg = arg;
	s->done = false;
	pthread_mutex_unlock(&s->lock);
	pthread_cond_signal(&s->cond);
}

bool syncer_take(struct syncer *s, int *ret_r)
{
	uint64_t v;
	bool done;

	(void)!read(s->efd, &v, sizeof(v));
	pthread_mutex_lock(&s->lock);
	done = s->done;
	if (done) {
		*ret_r = s->r;
		s->done = false;
	}
	pthread_mutex_unlock(&s->lock);
	return done;
}

void syncer_stop(struct syncer *s)
{
	if (!s)
		return;
	pthread_mutex_lock(&s->lock);
	s->stop = true; /* the thread finishes a step submitted first */
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	pthread_join(s->thread, NULL);
	close(s->efd);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->cond);
	free(s);
}
