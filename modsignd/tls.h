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

/*
 * Returns 0, or a negative errno with a line in @why naming the file at
 * fault and why.  The key is a secret file (lib/keyfile.h: keyfile_read()).
 * Client certificates must also pass tls_check_client_leaf().
 */
int tls_ctx_new(const struct tls_config *cfg, SSL_CTX **ret, char *why, size_t why_size);

/*
 * 0 if @x is fit to be a client certificate's leaf: not a CA
 * (basicConstraints CA:TRUE), an extended key usage naming clientAuth
 * (required), and OpenSSL's ssl_client purpose; -EPERM otherwise, -EINVAL
 * if its extensions do not parse.
 */
int tls_check_client_leaf(X509 *x);

/* Whether the @n bytes at @s, NUL-terminated after them, are well-formed
 * UTF-8 (lib/util.h: utf8_seq_len) of characters fit for a name: see
 * tls_peer_cn(). */
int tls_name_ok(const char *s, size_t n);

/*
 * The common name of the verified client certificate of @ssl.  -EPERM if
 * there is none or it did not verify, -EINVAL if it has no usable CN
 * (missing, several, or containing anything but well-formed UTF-8 free of
 * C0 and C1 controls, DEL and bidirectional formatting characters, so that
 * the name printed in logs and the audit log is the name that matched).
 */
int tls_peer_cn(SSL *ssl, char *buf, size_t size);

#endif
