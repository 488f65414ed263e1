/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The daemon's signals: blocked everywhere, forwarded to the main thread
 * from a thread that did not block them.  Contract in signals.h. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>

#include "signals.h"

static const int daemon_signals[] = { SIGTERM, SIGINT, SIGHUP };

/* Set once, before any handler is installed; read by the handler only. */
static pthread_t main_thread;

void signals_mask(sigset_t *mask)
{
	sigemptyset(mask);
	for (size_t i = 0; i < sizeof(daemon_signals) / sizeof(daemon_signals[0]); i++)
		sigaddset(mask, daemon_signals[i]);
}

/* Runs only in a thread that does not block the signal (the main thread
 * always blocks it): make it pending on the main thread, where the
 * loop's signalfd reads it.  pthread_kill is async-signal-safe. */
static void forward(int signo)
{
	int saved = errno;

	if (!pthread_equal(pthread_self(), main_thread))
		pthread_kill(main_thread, signo);
	errno = saved;
}

/* In a child a library forks (p11-kit's "remote: |command" transport
 * execs its helper): the signals as a new program expects them, not
 * blocked and not forwarded to a main thread the child does not have, so
 * that the library's SIGTERM at finalize still ends its helper. */
static void child_reset(void)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL };
	sigset_t mask;

	for (size_t i = 0; i < sizeof(daemon_signals) / sizeof(daemon_signals[0]); i++)
		sigaction(daemon_signals[i], &dfl, NULL);
	signals_mask(&mask);
	pthread_sigmask(SIG_UNBLOCK, &mask, NULL);
}

int signals_block(void)
{
	struct sigaction sa;
	sigset_t mask;

	main_thread = pthread_self();
	signals_mask(&mask);
	/* Blocked before the handlers exist: the handler must never run in
	 * the main thread, where forwarding to itself would loop. */
	if (pthread_sigmask(SIG_BLOCK, &mask, NULL) != 0)
		return -EINVAL;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward;
	sa.sa_mask = mask;
	sa.sa_flags = SA_RESTART;
	for (size_t i = 0; i < sizeof(daemon_signals) / sizeof(daemon_signals[0]); i++)
		if (sigaction(daemon_signals[i], &sa, NULL) < 0)
			return -errno;
	return -pthread_atfork(NULL, NULL, child_reset);
}
