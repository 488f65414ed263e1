/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_SECURE_H
#define MODSIGND_SECURE_H

/*
 * Process hardening that must happen before any key exists: no core
 * dumps, no ptrace by our own uid (PR_SET_DUMPABLE 0), and OpenSSL's
 * secure heap (mlock'd, excluded from dumps) for private key material.
 * Returns 0, or a negative errno for what could not be done; the secure
 * heap is best effort (*@ret_locked says whether it is in place).
 */

#include <stdbool.h>

/* Secure heap size: far more than dozens of RSA-4096 keys need. */
#define SECURE_HEAP_SIZE (1u << 20)

int secure_process(bool *ret_locked);

#endif
