/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd/workq.c with a fake key backend: every job queued comes back,
 * the loop is woken once per WORKQ_WAKE_JOBS finished jobs while more are
 * queued (issue 34: a wake per job was three context switches per
 * module), and its twins: a job with nothing queued behind it wakes the
 * loop at once, never held for others that will not come; slow jobs
 * (a token's) are not held for a count they take seconds to reach.
 */
#include <errno.h>
#include <openssl/crypto.h>
#include <poll.h>
#include <stdlib.h>
#include <unistd.h>

#include "key-backend.h"
#include "keys.h"
#include "macro.h"
#include "unit.h"
#include "workq.h"

static unsigned sign_us = 200;

static int fake_sign(struct key *k _unused_, const struct digest *md _unused_,
		     const uint8_t *digest _unused_, size_t digest_len _unused_,
		     bool use_keyid _unused_, uint8_t **ret_der, size_t *ret_len)
{
	usleep(sign_us);
	*ret_der = OPENSSL_malloc(1);
	*ret_len = 1;
	return *ret_der ? 0 : -ENOMEM;
}

static const struct key_backend fake = { .name = "fake", .sign = fake_sign };
static struct key key = { .name = (char *)"fake", .ops = &fake };

static void push(struct workq *q, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct job *j = calloc(1, sizeof(*j));

		j->key = &key;
		j->id = i + 1;
		workq_push(q, j);
	}
}

/* Wait for jobs until @want came back or a wake took @timeout_ms; the
 * number of eventfd writes seen into *@writes.  Returns the jobs back. */
static size_t collect(struct workq *q, int efd, size_t want, int timeout_ms, uint64_t *writes)
{
	size_t got = 0;

	*writes = 0;
	while (got < want) {
		struct pollfd p = { .fd = efd, .events = POLLIN };
		uint64_t v = 0;
		struct job *list;

		if (poll(&p, 1, timeout_ms) != 1)
			break;
		/* Read the count here (workq_take_done() reads it too, then
		 * finds it 0): how many writes woke us. */
		if (read(efd, &v, sizeof(v)) == sizeof(v))
			*writes += v;
		list = workq_take_done(q);
		while (list) {
			struct job *next = list->next;

			got += list->r == 0 && list->der_len == 1;
			job_free(list);
			list = next;
		}
	}
	return got;
}

UNIT_TEST(wakes_batched)
{
	struct workq *q = NULL;
	uint64_t writes = 0;
	int efd = -1;

	CHECK("workq: started", workq_start(1, &q, &efd) == 0);
	if (!q)
		return;
	sign_us = 0;
	push(q, 40);
	CHECK_EQ("workq: all 40 jobs back", (long)collect(q, efd, 40, 5000, &writes), 40L);
	/* 16, 32, then the last with none queued: 3 (one thread); more
	 * only where the thread was preempted for WORKQ_HOLD_US.  A wake
	 * per job was 40. */
	CHECK("workq: 40 jobs, at most 20 wakes", writes >= 1 && writes <= 20);
	sign_us = 200;
	workq_stop(q);
}

UNIT_TEST(lone_job_wakes_at_once)
{
	struct workq *q = NULL;
	uint64_t writes = 0;
	int efd = -1;

	CHECK("workq: started (2 threads)", workq_start(2, &q, &efd) == 0);
	if (!q)
		return;
	for (int round = 0; round < 3; round++) {
		push(q, 1);
		CHECK_EQ("workq: a lone job is back within 2 s", (long)collect(q, efd, 1, 2000, &writes),
			 1L);
	}
	workq_stop(q);
}

UNIT_TEST(slow_jobs_not_held)
{
	struct workq *q = NULL;
	uint64_t writes = 0;
	int efd = -1;

	CHECK("workq: started", workq_start(1, &q, &efd) == 0);
	if (!q)
		return;
	sign_us = 30000; /* above WORKQ_HOLD_US */
	push(q, 4);
	CHECK_EQ("workq: all 4 slow jobs back", (long)collect(q, efd, 4, 5000, &writes), 4L);
	/* Held by count alone, the 4 would come in one wake, the first
	 * after 4 signatures; by time, in 2 or more. */
	CHECK("workq: slow jobs: 2 wakes or more", writes >= 2);
	sign_us = 200;
	workq_stop(q);
}

UNIT_MAIN()
