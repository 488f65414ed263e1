/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_TLS_H
#define MODSIGND_TLS_H

/*
 * The daemon's TLS: 1.3 only, a client certificate required and verified
 * against --tls-client-ca; the client's identity is its certificate's
 * common name.  The record layer is driven non-blocking by server-conn.c.
 */

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "policy.h"

struct tls_config {
	const char *cert;      /* server certificate (PEM, chain allowed) */
	const char *key;       /* its private key (PEM) */
	const char *client_ca; /* CA bundle that client certificates must chain to */
	const char *crl;       /* PEM CRLs of those CAs; NULL: none checked */
};

/*
 * Returns 0, or a negative errno with a line in @why naming the file at
 * fault and why.  The key is a secret file (lib/keyfile.h: keyfile_read()).
 * Client certificates must also pass tls_check_client_leaf(), and each
 * certificate above them in the verified chain, the anchor too, must be
 * CA:TRUE (X509_check_ca() == 1).  Every
 * certificate of --tls-client-ca is a trust anchor, an intermediate too
 * (X509_V_FLAG_PARTIAL_CHAIN): a farm may trust one issuing CA of a
 * larger PKI without trusting its root's other sub-CAs.  A CRL in that
 * file is refused (-EINVAL): it would be loaded but never checked, and
 * the revoked builder admitted; CRLs go in cfg->crl, loaded by
 * tls_load_crl().
 */
int tls_ctx_new(const struct tls_config *cfg, SSL_CTX **ret, char *why, size_t why_size);

/*
 * Check every client certificate against the PEM CRLs of @path from now
 * on: one or more, each signed by a CA of --tls-client-ca and complete
 * (no delta, indirect or reason-scoped CRL: OpenSSL would read a delta
 * as complete, and skip the others) (the file is checked whole before
 * anything changes).  A client certificate whose
 * issuer has no CRL there is refused ("unable to get certificate CRL"),
 * and so is one whose issuer's CRL is past its next update ("CRL has
 * expired"): revocation fails closed.  Only the leaf is checked, not
 * the CAs above it.  Called again (SIGHUP), a file that fails leaves the
 * CRLs in force as they were.  Returns how many of the CRLs loaded are
 * past their next update (0 when all are current), or a negative errno
 * with a line in @why naming the file and the fault.
 */
int tls_load_crl(SSL_CTX *ctx, const char *path, char *why, size_t why_size);

/* Whether a CRL in force now revokes the client certificate of @ssl, a
 * connection admitted, or a handshake verified, before that CRL was
 * loaded. */
bool tls_peer_revoked(SSL *ssl);

/*
 * 0 if @x is fit to be a client certificate's leaf: not a CA
 * (basicConstraints CA:TRUE), an extended key usage naming clientAuth
 * (required), and OpenSSL's ssl_client purpose; -EPERM otherwise, -EINVAL
 * if its extensions do not parse.
 */
int tls_check_client_leaf(X509 *x);

/* Whether modsign-client takes @ctx's own certificate for a signing
 * host's: subjectAltName, serverAuth in its extended key usage, not
 * CA:TRUE (the names in it are the client's to check). */
bool tls_own_cert_clients_take(SSL_CTX *ctx);

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

/*
 * What identifies the verified client certificate of @ssl beyond its name
 * (policy.h: struct peer_cert): its SHA-256, its issuer's in the verified
 * chain, its serial number and issuer DN.  -EPERM as tls_peer_cn(),
 * -EINVAL for a serial number longer than 20 octets (RFC 5280 allows no
 * more, and a pin could not name it), -ENOMEM.
 */
int tls_peer_cert(SSL *ssl, struct peer_cert *ret);

#endif
