/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
#include <signal.h>

/*
 * The daemon's signals: SIGTERM and SIGINT stop it, SIGHUP re-reads the
 * policy.  The event loop reads them from a signalfd, which sees only
 * signals that no thread takes: a process-directed signal goes to any
 * thread that does not block it, and there its default action ends the
 * process and destroys the one-time keys.  Libraries start threads of
 * their own (p11-kit loading opensc, whose GLib starts one; an
 * LD_PRELOADed library's constructor, before main), so blocking in the
 * loop's thread is not enough:
 *
 *   signals_block() runs first in main(): every thread started after it
 *   inherits the mask, whatever library starts it;
 *   and it installs a handler for each, so that a thread started before
 *   main() (or one that unblocked them) that receives one hands it to the
 *   main thread, where it stays pending for the signalfd, instead of
 *   dying of it.  Until the loop runs the signals wait, pending: a SIGTERM
 *   during start-up stops the daemon as soon as it is ready.
 *   A child a library forks gets them back as a new program expects
 *   them (pthread_atfork); one made by posix_spawn or vfork does not.
 *   A signal aimed at one thread the daemon started (tgkill to a worker)
 *   stays pending there: only root or the daemon's uid can send it, and
 *   kill and systemd signal the process.
 */

/* The set of the daemon's signals. */
void signals_mask(sigset_t *mask);

/* Block them in the calling (main) thread and install the forwarding
 * handlers; negative errno on failure. */
int signals_block(void);
