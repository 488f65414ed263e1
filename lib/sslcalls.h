/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_SSLCALLS_H
#define MODSIGN_SSLCALLS_H

/*
 * The libssl calls lib/ makes, passed in by the caller: lib/ does not
 * link libssl, because the client loads it only for a tls: server
 * (lib/dlopen.h, modsign-client/conn-tls.c fills this from its sym_
 * pointers).  The daemon, linked with libssl, passes SSLCALLS_LINKED.
 * One struct for every such call, so that a new one is added in one place.
 */

#include <openssl/ssl.h>

struct sslcalls {
	int (*use_key)(SSL_CTX *ctx, EVP_PKEY *pkey);               /* SSL_CTX_use_PrivateKey */
	int (*check_key)(const SSL_CTX *ctx);                       /* SSL_CTX_check_private_key */
	long (*ctx_ctrl)(SSL_CTX *ctx, int cmd, long larg, void *parg); /* SSL_CTX_ctrl */
};

#define SSLCALLS_LINKED                                                            \
	((const struct sslcalls){ SSL_CTX_use_PrivateKey, SSL_CTX_check_private_key, \
				  SSL_CTX_ctrl })

#endif
