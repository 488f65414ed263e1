/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_SYNCER_H
#define MODSIGND_SYNCER_H

/*
 * One thread for the slow half of a group commit: the syncs that make a
 * transparency log commit durable and the rename that publishes its
 * checkpoint.  The event loop hands over one step at a time and goes on
 * meanwhile: it reads requests, queues them to the signing workers and
 * collects their signatures for the next group.  An eventfd wakes it when
 * the step is done.  With the syncs on the loop itself every commit
 * stopped the daemon for as long as the disk took, and the workers ran
 * dry (an RSA-2048 batch at 40% of its rate without a log, on disk).
 */

#include <stdbool.h>

struct syncer;

/* Start the thread.  *@ret_fd becomes readable when a step is done. */
int syncer_start(struct syncer **ret, int *ret_fd);

/* Run @fn(@arg) on the thread.  One step at a time: the caller submits
 * the next only after syncer_take() returned this one. */
void syncer_submit(struct syncer *s, int (*fn)(void *), void *arg);

/* The step's result (what @fn returned) into *@ret_r, if it is done;
 * false while it runs. */
bool syncer_take(struct syncer *s, int *ret_r);

/* Wait for a step in progress, then stop the thread; accepts NULL. */
void syncer_stop(struct syncer *s);

#endif
