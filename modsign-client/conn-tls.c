/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The TLS transport of conn.c: TLS 1.3, the server verified against
 * --tls-ca, the name it was asked for and serverAuth (expect_server()),
 * our certificate for mutual TLS.
 *
 * libssl is loaded here, when a tls: server is first opened
 * (lib/dlopen.h): the per-module call over the local socket never maps
 * it.  The PKCS#11 module, which links these objects and libssl too,
 * gets the same handle.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "conn-internal.h"
#include "dlopen.h"
#include "keyfile.h"
#include "tlsgroups.h"
#include "util.h"

/* Every libssl call of the client.  Macros of ssl.h are SSL_ctrl() and
 * SSL_CTX_ctrl() with a command, spelt out where they are used. */
#define SSL_SYMS(X)                                                            \
	X(TLS_client_method) X(SSL_CTX_new) X(SSL_CTX_free) X(SSL_CTX_ctrl)    \
	X(SSL_CTX_set_verify) X(SSL_CTX_load_verify_locations)                 \
	X(SSL_CTX_use_certificate_chain_file) X(SSL_CTX_use_PrivateKey)        \
	X(SSL_CTX_check_private_key) X(SSL_new) X(SSL_free) X(SSL_ctrl)        \
	X(SSL_set_fd) X(SSL_set_verify) X(SSL_set_purpose) X(SSL_set_hostflags) \
	X(SSL_get0_param) X(SSL_set1_host) X(SSL_connect)                      \
	X(SSL_get_verify_result) X(SSL_read_ex) X(SSL_write_ex)                \
	X(SSL_get_error) X(SSL_pending)
SSL_SYMS(DLSYM_POINTER)
static const struct dlsym ssl_syms[] = { SSL_SYMS(DLSYM_ENTRY) };
static struct dlopen_lib ssl_lib = DLOPEN_LIB("libssl.so.3", ssl_syms);

struct tls_state {
	SSL_CTX *ctx;
	SSL *ssl;
};

static int connect_addr(const struct sockaddr *sa, socklen_t len, unsigned timeout_ms)
{
	int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* connect(2) and the handshake's reads honour these: a host that
	 * accepts but never answers (stopped) costs @timeout_ms, not minutes. */
	conn_set_timeouts(fd, timeout_ms);
	if (connect(fd, sa, len) == 0)
		return fd;
	fd = (close(fd), -errno);
	return fd == -EINPROGRESS || fd == -EAGAIN ? -ETIMEDOUT : fd;
}

/* A name that does not resolve is not "No route to host": *@ret_err says
 * what the resolver said, naming the host. */
static int connect_tcp(const char *host, const char *port, unsigned timeout_ms,
		       const char **ret_err)
{
	static char why[NI_MAXHOST + 96]; /* *@ret_err: one client, one server */
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *a;
	int fd = -EHOSTUNREACH, r;

	r = getaddrinfo(host, port, &hints, &ai);
	if (r != 0) {
		snprintf(why, sizeof(why), "cannot resolve %s: %s", host,
			 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		*ret_err = why;
		return -EHOSTUNREACH;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = connect_addr(a->ai_addr, a->ai_addrlen, timeout_ms);
		if (fd >= 0)
			break;
	}
	freeaddrinfo(ai);
	return fd;
}

static const char *ssl_reason(void)
{
	static char buf[256];
	unsigned long e = ERR_peek_last_error();
	const char *reason = e ? ERR_reason_error_string(e) : NULL;

	snprintf(buf, sizeof(buf), "TLS: %s", reason ?: "handshake failed");
	ERR_clear_error();
	return buf;
}

/*
 * What the server's certificate must be beyond chaining to --tls-ca
 * (OpenSSL's ssl_server purpose checks the rest: key usage, nsCertType,
 * an EKU that names something else): one made for a TLS server.  An
 * extended key usage is required and must name serverAuth.  A farm CA
 * also issues the builders' certificates, and OpenSSL takes a
 * certificate with no EKU as fit for every purpose: a builder's
 * certificate (CN = a name the builder asked for, e.g. "localhost")
 * would pass for the signing host, and whoever holds a builder's key
 * could take the builders' requests: see each module's name and digest,
 * and answer with signatures of a key of its own.
 */
static int server_leaf_cb(int ok, X509_STORE_CTX *ctx)
{
	X509 *x = X509_STORE_CTX_get_current_cert(ctx);

	if (!ok || X509_STORE_CTX_get_error_depth(ctx) != 0 || !x)
		return ok;
	/* A CA:TRUE certificate is a sub-CA, not a signing host's: refused,
	 * as the daemon refuses a builder's (tls_check_client_leaf()).  The
	 * leaves it could issue still chain (SECURITY.md, known gaps). */
	if (X509_get_extension_flags(x) & EXFLAG_CA) {
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_INVALID_NON_CA);
		return 0;
	}
	/* X509_get_extended_key_usage() is all ones when there is none. */
	if (!(X509_get_extension_flags(x) & EXFLAG_XKUSAGE) ||
	    !(X509_get_extended_key_usage(x) & XKU_SSL_SERVER)) {
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_INVALID_PURPOSE);
		return 0;
	}
	return 1;
}

/*
 * The identity @ssl's server must prove: @host, an address or a name,
 * only in its subjectAltName.  Never the subject's CN: any certificate
 * the CA signed has one, whatever it was issued for (RFC 6125 6.4.4 makes
 * the fallback a legacy choice; RFC 9525 drops it).  No partial wildcard:
 * "s*.farm.test" would match sign.farm.test and every other name with
 * that first letter; "*.farm.test", a whole leftmost label, still does.
 * OpenSSL matches an address only against iPAddress entries.
 */
static int expect_server(SSL *ssl, const char *host)
{
	unsigned char a[sizeof(struct in6_addr)];

	sym_SSL_set_verify(ssl, SSL_VERIFY_PEER, server_leaf_cb);
	sym_SSL_set_purpose(ssl, X509_PURPOSE_SSL_SERVER);
	sym_SSL_set_hostflags(ssl, X509_CHECK_FLAG_NEVER_CHECK_SUBJECT |
				       X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	/* An address in inet_pton()'s form, the one getaddrinfo() connected
	 * to (odd_address() refused the others); no SNI (RFC 6066 3). */
	if (inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1)
		return X509_VERIFY_PARAM_set1_ip_asc(sym_SSL_get0_param(ssl), host) == 1 ? 0 :
										      -ENOMEM;
	/* SSL_set_tlsext_host_name(ssl, host) */
	sym_SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name, (char *)host);
	return sym_SSL_set1_host(ssl, host) == 1 ? 0 : -ENOMEM;
}

/*
 * Whether @host is an address to getaddrinfo() in a form other than
 * inet_pton()'s: inet_aton() takes "127.1", "2130706433", "0x7f.1" and
 * "0177.0.0.1" (octal) for 127.0.0.1, and IPv6 with a "%zone".  OpenSSL
 * reads these as a DNS name (taken by a certificate with DNS:127.1) or
 * as another address (0177.0.0.1 is 177.0.0.1 to it): the certificate
 * checked would not be the address connected to.
 */
static bool odd_address(const char *host)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST }, *ai = NULL;
	unsigned char a[sizeof(struct in6_addr)];
	bool odd;

	if (inet_pton(AF_INET, host, a) == 1 || inet_pton(AF_INET6, host, a) == 1)
		return false;
	odd = getaddrinfo(host, NULL, &hints, &ai) == 0;
	if (ai)
		freeaddrinfo(ai);
	return odd;
}

/* ssl_reason(), and for a server certificate refused, which check refused
 * it: "hostname mismatch", "unsuitable certificate purpose"... */
static const char *handshake_reason(SSL *ssl)
{
	static char buf[384]; /* one client, one handshake at a time */
	long v = sym_SSL_get_verify_result(ssl);
	const char *r = ssl_reason();

	if (v == X509_V_OK)
		return r;
	snprintf(buf, sizeof(buf), "%s (%s)", r, X509_verify_cert_error_string(v));
	return buf;
}

static int tls_context(const struct conn_tls *tls, SSL_CTX **ret, const char **ret_err)
{
	static char key_why[PATH_MAX + 128]; /* *@ret_err: one client, one context */
	const struct sslcalls ssl = { sym_SSL_CTX_use_PrivateKey, sym_SSL_CTX_check_private_key,
				      sym_SSL_CTX_ctrl };
	SSL_CTX *ctx = sym_SSL_CTX_new(sym_TLS_client_method());

	if (!ctx)
		return -ENOMEM;
	/* SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION) */
	sym_SSL_CTX_ctrl(ctx, SSL_CTRL_SET_MIN_PROTO_VERSION, TLS1_3_VERSION, NULL);
	sym_SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (tlsgroups_set(ctx, &ssl) < 0)
		*ret_err = "tls: none of the groups " TLSGROUPS_LIST " available";
	else if (!tls || !tls->ca)
		*ret_err = "tls: servers need --tls-ca";
	else if (sym_SSL_CTX_load_verify_locations(ctx, tls->ca, NULL) != 1)
		*ret_err = tls->ca;
	else if (tls->cert && sym_SSL_CTX_use_certificate_chain_file(ctx, tls->cert) != 1)
		*ret_err = tls->cert;
	else if (tls->key && keyfile_use_tls(ctx, &ssl, tls->key, key_why, sizeof(key_why)) < 0)
		*ret_err = key_why; /* refused as every key file is: mode, owner, link */
	else {
		*ret = ctx;
		return 0;
	}
	sym_SSL_CTX_free(ctx);
	ERR_clear_error();
	return -EINVAL;
}

static ssize_t tls_xfer(struct conn *c, void *buf, size_t len, bool out)
{
	struct tls_state *t = c->tls;
	size_t done = 0;
	int ok = out ? sym_SSL_write_ex(t->ssl, buf, len, &done) :
		       sym_SSL_read_ex(t->ssl, buf, len, &done);
	int e = ok ? SSL_ERROR_NONE : sym_SSL_get_error(t->ssl, 0);

	if (ok)
		return (ssize_t)done;
	if (e == SSL_ERROR_ZERO_RETURN)
		return out ? -EPIPE : 0;
	if (e == SSL_ERROR_SYSCALL && errno == EAGAIN)
		return -ETIMEDOUT;
	if (ERR_peek_last_error())
		conn_note_refusal(c, ssl_reason());
	return out ? -EPIPE : -ECONNRESET;
}

/* The server's alert (expired, unknown CA...) or refusal frame may be
 * waiting behind the failed write. */
static ssize_t tls_read_waiting(struct conn *c, void *buf, size_t len)
{
	struct tls_state *t = c->tls;
	size_t got = 0;

	ERR_clear_error();
	if (sym_SSL_read_ex(t->ssl, buf, len, &got) == 1)
		return (ssize_t)got;
	if (ERR_peek_last_error())
		conn_note_refusal(c, ssl_reason());
	return -ECONNRESET;
}

static size_t tls_pending(const struct conn *c)
{
	struct tls_state *t = c->tls;

	return t && t->ssl ? (size_t)sym_SSL_pending(t->ssl) : 0;
}

static void tls_free(struct conn *c)
{
	struct tls_state *t = c->tls;

	if (!t)
		return;
	sym_SSL_free(t->ssl);
	sym_SSL_CTX_free(t->ctx);
	free(t);
	c->tls = NULL;
}

static const struct conn_ops tls_ops = {
	.xfer = tls_xfer,
	.read_waiting = tls_read_waiting,
	.free = tls_free,
	.pending = tls_pending,
};

/* libssl, on the first tls: server; its failure in *@ret_err, naming it. */
static int load_libssl(const char **ret_err)
{
	static char why[320]; /* *@ret_err: one client, one server at a time */
	char e[256];
	int r = dlopen_lib_load(&ssl_lib, e, sizeof(e));

	if (r < 0) {
		snprintf(why, sizeof(why), "cannot load %s: %s", ssl_lib.soname, e);
		*ret_err = why;
	}
	return r;
}

/* Connect, then check the server's certificate names the host we asked
 * for (the target's name, whichever of its addresses we reach) and is a
 * server's (expect_server()). */
int conn_open_tls(struct conn *c, const struct conn_target *target,
		  const struct conn_tls *tls, unsigned timeout_ms, const char **ret_err)
{
	struct tls_state *t;
	_cleanup_(freep) char *hp = strdup(target->server + 4);
	char *host, *port;
	int r;

	if (!hp)
		return -ENOMEM;
	/* A client names the server: ":PORT" is no address to connect to. */
	if (split_host_port(hp, &host, &port) < 0 || !*host)
		return (*ret_err = "expected tls:HOST:PORT"), -EINVAL;
	if (odd_address(host)) {
		static char why[NI_MAXHOST + 96]; /* *@ret_err: one client, one server */

		snprintf(why, sizeof(why), "%.*s: an IPv4 address must be written a.b.c.d, "
			 "an IPv6 one without %%zone", NI_MAXHOST, host);
		return (*ret_err = why), -EINVAL;
	}
	r = load_libssl(ret_err);
	if (r < 0)
		return r;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	c->tls = t;
	c->tls_ops = &tls_ops;
	r = tls_context(tls, &t->ctx, ret_err);
	if (r < 0)
		return r;
	/* OpenSSL writes to the socket with write(2): a daemon that went away
	 * mid-batch would kill us with SIGPIPE before we could name the
	 * modules left unsigned.  As EPIPE it is an error like any other. */
	signal(SIGPIPE, SIG_IGN);
	if (target->addr_len > 0)
		c->fd = connect_addr((const struct sockaddr *)&target->addr, target->addr_len,
				     timeout_ms);
	else
		c->fd = connect_tcp(host, port, timeout_ms, ret_err);
	if (c->fd < 0)
		return c->fd;
	t->ssl = sym_SSL_new(t->ctx);
	if (!t->ssl || sym_SSL_set_fd(t->ssl, c->fd) != 1)
		return -ENOMEM;
	if (expect_server(t->ssl, host) < 0)
		return -ENOMEM;
	ERR_clear_error();
	if (sym_SSL_connect(t->ssl) != 1)
		return (*ret_err = errno == EAGAIN ? "TLS handshake timed out" :
						     handshake_reason(t->ssl)),
		       -EPROTO;
	conn_set_timeouts(c->fd, CONN_TIMEOUT_SEC * 1000);
	return 0;
}

