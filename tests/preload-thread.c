/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An LD_PRELOAD library for tests/integration/signals.bats: its
 * constructor starts a thread before the program's main(), every signal
 * unblocked, as a library's own thread may be (opensc's GLib thread under
 * p11-kit; any constructor).  The thread is named "lib-thread" (its comm)
 * so that a test can aim a signal at it, and sleeps until the end.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

static void *idle(void *arg)
{
	sigset_t none;

	(void)arg;
	sigemptyset(&none);
	pthread_sigmask(SIG_SETMASK, &none, NULL);
	pthread_setname_np(pthread_self(), "lib-thread");
	for (;;)
		pause();
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, idle, NULL) == 0)
		pthread_detach(t);
}
