/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <netdb.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"
#include "util.h"

struct conn {
	int fd;
	SSL_CTX *ctx;
	SSL *ssl; /* NULL on UNIX sockets */
	char *address;
	char *hangup; /* why the daemon hung up on us, if it said */
	uint64_t next_id;
	uint8_t *in;
	size_t in_len, in_cap;
};

static void set_timeouts(int fd)
{
	struct timeval tv = { .tv_sec = CONN_TIMEOUT_SEC };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

/* "HOST:PORT" or "[V6]:PORT" into host and port, in place. */
static int split_host_port(char *hp, char **ret_host, char **ret_port)
{
	char *port = strrchr(hp, ':');

	if (!port || !port[1] || port == hp)
		return -EINVAL;
	*port++ = '\0';
	if (hp[0] == '[' && hp[strlen(hp) - 1] == ']') {
		hp[strlen(hp) - 1] = '\0';
		hp++;
	}
	*ret_host = hp;
	*ret_port = port;
	return 0;
}

static int connect_tcp(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *a;
	int fd = -EHOSTUNREACH;

	if (getaddrinfo(host, port, &hints, &ai) != 0)
		return -EHOSTUNREACH;
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			fd = -errno;
			continue;
		}
		set_timeouts(fd);
		if (connect(fd, a->ai_addr, a->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -errno;
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

static int tls_context(const struct conn_tls *tls, SSL_CTX **ret, const char **ret_err)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (!ctx)
		return -ENOMEM;
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (!tls || !tls->ca)
		*ret_err = "tls: servers need --tls-ca";
	else if (SSL_CTX_load_verify_locations(ctx, tls->ca, NULL) != 1)
		*ret_err = tls->ca;
	else if (tls->cert && SSL_CTX_use_certificate_chain_file(ctx, tls->cert) != 1)
		*ret_err = tls->cert;
	else if (tls->key && (SSL_CTX_use_PrivateKey_file(ctx, tls->key, SSL_FILETYPE_PEM) != 1 ||
			      SSL_CTX_check_private_key(ctx) != 1))
		*ret_err = tls->key;
	else {
		*ret = ctx;
		return 0;
	}
	SSL_CTX_free(ctx);
	ERR_clear_error();
	return -EINVAL;
}

/* Connect, then check the server's certificate names the host we asked for. */
static int open_tls(struct conn *c, const char *host_port, const struct conn_tls *tls,
		    const char **ret_err)
{
	_cleanup_(freep) char *hp = strdup(host_port);
	char *host, *port;
	int r;

	if (!hp)
		return -ENOMEM;
	if (split_host_port(hp, &host, &port) < 0)
		return (*ret_err = "expected tls:HOST:PORT"), -EINVAL;
	r = tls_context(tls, &c->ctx, ret_err);
	if (r < 0)
		return r;
	c->fd = connect_tcp(host, port);
	if (c->fd < 0)
		return c->fd;
	c->ssl = SSL_new(c->ctx);
	if (!c->ssl || SSL_set_fd(c->ssl, c->fd) != 1)
		return -ENOMEM;
	SSL_set_tlsext_host_name(c->ssl, host);
	if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), host) != 1)
		SSL_set1_host(c->ssl, host);
	ERR_clear_error();
	if (SSL_connect(c->ssl) != 1)
		return (*ret_err = ssl_reason()), -EPROTO;
	return 0;
}

static int open_unix(struct conn *c, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0)
		return -errno;
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -errno;
	set_timeouts(c->fd);
	return 0;
}

static int open_one(const char *addr, const struct conn_tls *tls, struct conn **ret,
		    const char **ret_err)
{
	struct conn *c = calloc(1, sizeof(*c));
	int r;

	*ret_err = NULL;
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->next_id = 1;
	if (strncmp(addr, "unix:", 5) == 0)
		r = open_unix(c, addr + 5);
	else if (strncmp(addr, "tls:", 4) == 0)
		r = open_tls(c, addr + 4, tls, ret_err);
	else {
		*ret_err = "unsupported address (expected unix:PATH or tls:HOST:PORT)";
		r = -EINVAL;
	}
	if (r >= 0 && !(c->address = strdup(addr)))
		r = -ENOMEM;
	if (r < 0) {
		conn_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

int conn_open(const char *const *servers, size_t n, const struct conn_tls *tls,
	      struct conn **ret, size_t *ret_index, char *err, size_t err_size)
{
	int r = -EINVAL;

	snprintf(err, err_size, "no server given");
	for (size_t i = 0; i < n; i++) {
		const char *why;

		r = open_one(servers[i], tls, ret, &why);
		if (r >= 0) {
			*ret_index = i;
			return 0;
		}
		snprintf(err, err_size, "cannot connect to modsignd at %s: %s", servers[i],
			 why ?: strerror(-r));
	}
	return r;
}

void conn_close(struct conn *c)
{
	if (!c)
		return;
	SSL_free(c->ssl);
	SSL_CTX_free(c->ctx);
	if (c->fd >= 0)
		close(c->fd);
	free(c->address);
	free(c->hangup);
	free(c->in);
	free(c);
}

const char *conn_address(const struct conn *c)
{
	return c->address;
}

uint64_t conn_next_id(struct conn *c)
{
	return c->next_id++;
}

/* One send or recv on either transport: bytes moved, or -errno. */
static ssize_t xfer(struct conn *c, void *buf, size_t len, bool out)
{
	size_t done = 0;
	ssize_t n;

	if (c->ssl) {
		int ok = out ? SSL_write_ex(c->ssl, buf, len, &done) :
			       SSL_read_ex(c->ssl, buf, len, &done);
		int e = ok ? SSL_ERROR_NONE : SSL_get_error(c->ssl, 0);

		if (ok)
			return (ssize_t)done;
		if (e == SSL_ERROR_ZERO_RETURN)
			return out ? -EPIPE : 0;
		if (e == SSL_ERROR_SYSCALL && errno == EAGAIN)
			return -ETIMEDOUT;
		if (!c->hangup && ERR_peek_last_error())
			c->hangup = strdup(ssl_reason());
		return out ? -EPIPE : -ECONNRESET;
	}
	n = out ? send(c->fd, buf, len, MSG_NOSIGNAL) : recv(c->fd, buf, len, 0);
	if (n < 0)
		return errno == EAGAIN ? -ETIMEDOUT : -errno;
	return n;
}

/*
 * The daemon refuses a peer (policy, connection limit) by sending one
 * error frame and hanging up; we see that as EPIPE on our next write.
 * Read the frame that is waiting so the user learns why.
 */
static int note_hangup(struct conn *c, int err)
{
	_cleanup_(json_object_putp) json_object *msg = NULL;
	uint8_t buf[PROTO_HEADER_LEN + PROTO_MAX_ERROR + 256];
	ssize_t n;
	size_t used;

	if (c->ssl) {
		size_t got = 0;

		/* The server's alert (expired, unknown CA...) or refusal frame
		 * may be waiting behind the failed write. */
		ERR_clear_error();
		if (SSL_read_ex(c->ssl, buf, sizeof(buf), &got) == 1)
			n = (ssize_t)got;
		else {
			if (!c->hangup && ERR_peek_last_error())
				c->hangup = strdup(ssl_reason());
			return err;
		}
	} else
		n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0 && proto_frame_take(buf, (size_t)n, &msg, &used) > 0 && !c->hangup)
		c->hangup = strdup(reply_error(msg));
	return err;
}

void conn_note_refusal(struct conn *c, const char *why)
{
	if (!c->hangup)
		c->hangup = strdup(why);
}

const char *conn_strerror(const struct conn *c, int err)
{
	if ((err == -EPIPE || err == -ECONNRESET || err == -EPROTO ||
	     err == -ECONNREFUSED) && c->hangup)
		return c->hangup;
	return strerror(-err);
}

int conn_send(struct conn *c, json_object *msg)
{
	_cleanup_(freep) uint8_t *frame = NULL;
	size_t len;
	int r;

	r = proto_frame_build(msg, &frame, &len);
	if (r < 0)
		return r;
	while (len > 0) {
		ssize_t n = xfer(c, frame, len, true);

		if (n == -EINTR)
			continue;
		if (n == -EPIPE || n == -ECONNRESET)
			return note_hangup(c, (int)n);
		if (n < 0)
			return (int)n;
		memmove(frame, frame + n, len - (size_t)n);
		len -= (size_t)n;
	}
	return 0;
}

int conn_recv(struct conn *c, json_object **ret)
{
	for (;;) {
		size_t used = 0;
		ssize_t n;
		int r = proto_frame_take(c->in, c->in_len, ret, &used);

		if (r != 0) {
			memmove(c->in, c->in + used, c->in_len - used);
			c->in_len -= used;
			return r > 0 ? 0 : r;
		}
		r = buf_grow(&c->in, &c->in_cap, c->in_len, PROTO_HEADER_LEN + PROTO_MAX_FRAME);
		if (r < 0)
			return r == -ENOBUFS ? -EMSGSIZE : r;
		n = xfer(c, c->in + c->in_len, c->in_cap - c->in_len, false);
		if (n == -EINTR)
			continue;
		if (n < 0)
			return (int)n;
		if (n == 0)
			return -ECONNRESET;
		c->in_len += (size_t)n;
	}
}

const char *reply_error(json_object *reply)
{
	const char *e = NULL;

	if (proto_get_string(reply, "error", PROTO_MAX_ERROR, true, &e) < 0 || !e)
		return "request refused by modsignd";
	return e;
}

static bool reply_ok(json_object *reply)
{
	bool ok = false;

	return proto_get_bool(reply, "ok", &ok) == 0 && ok;
}

int conn_call(struct conn *c, json_object *req, json_object **ret,
	      const char **ret_error)
{
	json_object *reply = NULL;
	int r;

	*ret = NULL;
	r = conn_send(c, req);
	if (r >= 0)
		r = conn_recv(c, &reply);
	if (r < 0)
		return r;
	*ret = reply;
	if (!reply_ok(reply)) {
		*ret_error = reply_error(reply);
		return -EREMOTEIO;
	}
	return 0;
}
