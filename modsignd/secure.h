/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_SECURE_H
#define MODSIGND_SECURE_H

/*
 * Process hardening that must happen before any key exists: no core
 * dumps, no ptrace by our own uid (PR_SET_DUMPABLE 0), all memory locked
 * against swap (mlockall, current and future, locked as pages fault in),
 * and OpenSSL's secure heap (excluded from dumps, cleared when freed) for
 * private key material.  Returns 0, or a negative errno with *@ret_step
 * naming what could not be done; a daemon that cannot lock its memory must
 * not go on to hold keys.  The secure heap is best effort (*@ret_heap says
 * whether it is in place).
 */

#include <stdbool.h>

/* Secure heap size: far more than dozens of RSA-4096 keys need. */
#define SECURE_HEAP_SIZE (1u << 20)

int secure_process(const char **ret_step, bool *ret_heap);

#endif
