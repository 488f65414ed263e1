/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_AUDIT_H
#define MODSIGND_AUDIT_H

/*
 * One record per signing request, granted or refused: who asked, with
 * which key, for which module and digest, and the outcome.  Called on the
 * event loop before a signature is queued for the peer, so no signature
 * leaves the daemon unrecorded.
 */

#include "policy.h"
#include "request.h"
#include "workq.h"

void audit_sign(const struct peer *peer, const struct job *j, const char *result);
void audit_refused(const struct peer *peer, const struct request *req,
		   const char *reason);

#endif
