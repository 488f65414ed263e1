/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TLSGROUPS_H
#define MODSIGN_TLSGROUPS_H

/*
 * The key-exchange groups both ends of modsign's TLS offer, in order of
 * preference: X25519, P-256, P-384.  Nothing else, and above all none of
 * the finite-field groups (ffdhe2048..ffdhe8192) OpenSSL accepts by
 * default: a recorded ClientHello asking for ffdhe8192 costs the daemon
 * 134.6 ms of CPU on its event loop, X25519 0.8 ms (docs/SECURITY.md,
 * row 77).  Every modsign client has always offered X25519 first, so no
 * client of ours loses anything.
 */

#include "sslcalls.h"

#define TLSGROUPS_LIST "X25519:P-256:P-384"

/* Restrict @ctx to TLSGROUPS_LIST with @ssl's SSL_CTX_ctrl(): 0, or
 * -EINVAL if OpenSSL knows none of them (its error queue cleared). */
int tlsgroups_set(SSL_CTX *ctx, const struct sslcalls *ssl);

#endif
