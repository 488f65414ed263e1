/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_TLS_H
#define MODSIGND_TLS_H

/*
 * The daemon's TLS: 1.3 only, a client certificate required and verified
 * against --tls-client-ca; the client's identity is its certificate's
 * common name.  The record layer is driven non-blocking by server.c.
 */

#include <openssl/ssl.h>
#include <stddef.h>

struct tls_config {
	const char *cert;      /* server certificate (PEM, chain allowed) */
	const char *key;       /* its private key (PEM) */
	const char *client_ca; /* CA bundle that client certificates must chain to */
};

/* Returns 0, or a negative errno with *@ret_err naming the file at fault. */
int tls_ctx_new(const struct tls_config *cfg, SSL_CTX **ret, const char **ret_err);

/*
 * The common name of the verified client certificate of @ssl.  -EPERM if
 * there is none or it did not verify, -EINVAL if it has no usable CN
 * (missing, several, or containing NUL or control characters).
 */
int tls_peer_cn(SSL *ssl, char *buf, size_t size);

#endif
