/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_HANDOVER_H
#define MODSIGN_CLIENT_HANDOVER_H

/* The lean client's hand-over to modsign-client-full (handover.c). */

#include "client.h"

/* Exec modsign-client-full with g->argv, or print that @why needs it and
 * exit 1. */
_noreturn_ void handover_exec(const struct global *g, const char *why);

#endif
