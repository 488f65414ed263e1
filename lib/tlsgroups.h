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

#include <openssl/ssl.h>

#define TLSGROUPS_LIST "X25519:P-256:P-384"

/* libssl's SSL_CTX_ctrl(), which SSL_CTX_set1_groups_list() expands to:
 * passed in, since lib/ does not link libssl (the client loads it only
 * for a tls: server, lib/dlopen.h; the daemon passes the function). */
typedef long tlsgroups_ctx_ctrl_fn(SSL_CTX *ctx, int cmd, long larg, void *parg);

/* Restrict @ctx to TLSGROUPS_LIST with @ctx_ctrl: 0, or -EINVAL if
 * OpenSSL knows none of them (its error queue cleared). */
int tlsgroups_set(SSL_CTX *ctx, tlsgroups_ctx_ctrl_fn *ctx_ctrl);

#endif
