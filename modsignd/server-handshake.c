/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * TLS handshakes, once accepted (server-accept.c): a key exchange waits
 * for a token of its source's (admission.h), and a finished handshake
 * is admitted by name, policy and connection slots or refused in TLS's
 * own terms.  server-internal.h.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "log.h"
#include "metrics.h"
#include "server-internal.h"
#include "tls.h"
#include "util.h"

/* Why a handshake failed, for the log and the audit record: the
 * certificate's verification error if it got that far, else OpenSSL's
 * reason ("peer did not return a certificate", "http request", "wrong
 * version number"), else the socket's, so that a peer speaking something
 * else is told apart from a builder without its certificate.  @err is the
 * first error OpenSSL queued (the cause; later ones are consequences),
 * @ssl_err SSL_get_error()'s verdict and @errnum errno right after. */
static const char *handshake_error(SSL *ssl, unsigned long err, int ssl_err, int errnum,
				   char *buf, size_t size)
{
	long v = SSL_get_verify_result(ssl);
	const char *why = NULL;

	if (v != X509_V_OK)
		return X509_verify_cert_error_string(v);
	if (err)
		why = ERR_reason_error_string(err);
	else if (ssl_err == SSL_ERROR_SYSCALL && errnum)
		why = strerror(errnum);
	snprintf(buf, size, "TLS handshake failed: %s", why ?: "connection closed by the peer");
	return buf;
}

/* Whether an authenticated TLS peer finds no slot: it may not take the
 * ones kept for UNIX clients. */
static bool tls_conns_full(const struct server *s)
{
	unsigned max = s->cfg.max_conns - SERVER_UNIX_RESERVE(s->cfg.max_conns);

	return s->n_held >= s->cfg.max_conns || s->n_tls >= max;
}

static void handshake_done(struct server *s, struct conn *c)
{
	char why[PEER_MAX_IDENTITY + 64], cn[PEER_MAX_CN], addr[64];

	snprintf(addr, sizeof(addr), "%.63s", c->peer.desc); /* "host:port" so far */
	handshake_leave(s, c);
	if (tls_peer_cn(c->ssl, cn, sizeof(cn)) < 0) {
		audit_refusal(s, &c->peer, NULL, "client certificate has no usable common name");
		conn_reply_error(c, 0, "permission denied: client certificate has no usable common name");
		c->closing = true;
		return;
	}
	peer_from_cn(cn, addr, &c->peer);
	/* Pins match on these, and every record of the peer carries them,
	 * so that a stolen certificate's use is told from its successor's. */
	if (tls_peer_cert(c->ssl, &c->peer.cert) < 0) {
		audit_refusal(s, &c->peer, NULL, "client certificate unreadable");
		conn_reply_error(c, 0, "permission denied: client certificate unreadable");
		c->closing = true;
		return;
	}
	/* The certificate was verified when it arrived, against the CRLs of
	 * then: a SIGHUP since (close_revoked() passed this connection by,
	 * not admitted yet) may have revoked it. */
	if (tls_peer_revoked(c->ssl)) {
		audit_refusal(s, &c->peer, NULL, "certificate revoked");
		conn_reply_error(c, 0, "permission denied: certificate revoked");
		c->closing = true;
		return;
	}
	if (!policy_admits(s->policy, &c->peer)) {
		snprintf(why, sizeof(why), "permission denied: %s is not named by the policy",
			 c->peer.identity);
		if (audit_refusal(s, &c->peer, NULL, why))
			log_warning("%s: refused: not allowed by policy", c->peer.desc);
		conn_reply_error(c, 0, why);
		c->closing = true;
		return;
	}
	/* Refused in TLS's own terms: an error frame over TLS, then
	 * close_notify; never plaintext on the raw socket. */
	if (tls_conns_full(s)) {
		log_notice("%s: refused: connection limit for TLS peers (%u) reached",
			   c->peer.desc,
			   s->cfg.max_conns - SERVER_UNIX_RESERVE(s->cfg.max_conns));
		conn_reply_error(c, 0, "too many connections, try again later");
		c->closing = true;
		return;
	}
	if (admission_admit(s->adm, &c->source, c->peer.identity, now_ms(), why,
			    sizeof(why)) < 0) {
		log_notice("%s: refused: %s", c->peer.desc, why);
		metrics_tls(s->metrics, METRICS_TLS_CAPPED);
		conn_reply_error(c, 0, why);
		c->closing = true;
		return;
	}
	conn_hold(s, c);
	c->tls_admitted = true;
	s->n_tls++;
	log_debug("%s: TLS connected", c->peer.desc);
}

void conn_handshake(struct server *s, struct conn *c)
{
	char buf[128];
	unsigned long err;
	const char *why;
	int ret, ssl_err, errnum;

	c->ssl_want = 0;
	ERR_clear_error(); /* the queue is the thread's: start it empty */
	errno = 0;
	ret = SSL_accept(c->ssl);
	errnum = errno;
	if (ret == 1) {
		handshake_done(s, c);
		/* Data may have come with the handshake; this also flushes a
		 * refusal and may free @c, so it is the last use of it. */
		conn_readable(s, c);
		return;
	}
	err = ERR_peek_error(); /* tls_result() clears the queue */
	ssl_err = SSL_get_error(c->ssl, ret);
	if (tls_result(c, ret) == 0) {
		c->last_io_ms = now_ms();
		conn_update(s, c);
		return;
	}
	why = handshake_error(c->ssl, err, ssl_err, errnum, buf, sizeof(buf));
	if (audit_refusal(s, &c->peer, NULL, why))
		log_notice("%s: %s", c->peer.desc, why);
	ERR_clear_error();
	conn_close(s, c);
}

/*
 * A handshake's first bytes are here: it goes on if its source has fewer
 * than --max-handshakes-per-source key exchanges in progress and a token
 * (admission.h); else it waits, unread, until both are there
 * (resume_deferred()), so that replayed ClientHellos from one address
 * cost the daemon at most --handshake-rate key exchanges a second and a
 * builder behind that address is slowed, not refused.  True if it may go
 * on.
 */
bool handshake_charge(struct server *s, struct conn *c)
{
	if (admission_start_handshake(s->adm, &c->source, now_ms())) {
		/* charged and deferred never both: a deferred one charged
		 * twice would hold a key-exchange place for good */
		c->charged = true;
		if (c->deferred) {
			c->deferred = false;
			s->n_deferred--;
		}
		return true;
	}
	if (!c->deferred) {
		c->deferred = true;
		s->n_deferred++;
		s->dropped.deferred++;
		metrics_tls(s->metrics, METRICS_TLS_DEFERRED);
		conn_update(s, c); /* no EPOLLIN until resumed */
	}
	return false;
}

/* Handshakes that waited, in the order they came, go on when their
 * source has a token and a key-exchange place again; the others wait on. */
void resume_deferred(struct server *s)
{
	for (size_t i = 0; i < s->n_listeners && s->n_deferred > 0; i++) {
		struct conn *c, *next;

		for (c = s->listeners[i].hs_first; c; c = next) {
			next = c->hs_next;
			if (!c->deferred || !handshake_charge(s, c))
				continue;
			conn_handshake(s, c);
		}
	}
}
