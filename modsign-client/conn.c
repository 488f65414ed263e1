/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Connections to modsignd, and the UNIX-socket transport.  TLS lives in
 * conn-tls.c.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <stdbool.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn-internal.h"
#include "protocol.h"
#include "util.h"

void conn_set_timeouts(int fd, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (ms % 1000) * 1000 };

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

void conn_set_timeout(struct conn *c, unsigned ms)
{
	conn_set_timeouts(c->fd, ms);
	c->timeout_ms = ms;
}

int conn_fd(const struct conn *c)
{
	return c->fd;
}

bool conn_has_input(const struct conn *c)
{
	uint32_t len;

	if (c->tls_ops && c->tls_ops->pending(c) > 0)
		return true;
	if (c->in_len < PROTO_HEADER_LEN)
		return false;
	len = (uint32_t)c->in[0] << 24 | (uint32_t)c->in[1] << 16 |
	      (uint32_t)c->in[2] << 8 | c->in[3];
	/* A bad length is input too: conn_recv() returns its error at once. */
	return len == 0 || len > PROTO_MAX_FRAME || c->in_len - PROTO_HEADER_LEN >= len;
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
	conn_set_timeouts(c->fd, CONN_TIMEOUT_SEC * 1000);
	return 0;
}

int conn_open_target(const struct conn_target *t, const struct conn_tls *tls,
		     unsigned timeout_ms, struct conn **ret, const char **ret_err)
{
	struct conn *c;
	int r;

	*ret_err = NULL;
	if (t->why[0]) {
		*ret_err = t->why;
		return -EHOSTUNREACH;
	}
	c = calloc(1, sizeof(*c));
	if (!c)
		return -ENOMEM;
	c->fd = -1;
	c->next_id = 1;
	c->timeout_ms = CONN_TIMEOUT_SEC * 1000;
	if (strncmp(t->server, "unix:", 5) == 0)
		r = open_unix(c, t->server + 5);
	else if (strncmp(t->server, "tls:", 4) == 0)
		r = conn_open_tls(c, t, tls, timeout_ms, ret_err);
	else {
		*ret_err = "unsupported address (expected unix:PATH or tls:HOST:PORT)";
		r = -EINVAL;
	}
	if (r >= 0 && !(c->address = strdup(t->label)))
		r = -ENOMEM;
	if (r < 0) {
		conn_close(c);
		return r;
	}
	*ret = c;
	return 0;
}

static bool same_addr(const struct conn_target *a, const struct addrinfo *ai)
{
	return a->addr_len == ai->ai_addrlen && memcmp(&a->addr, ai->ai_addr, ai->ai_addrlen) == 0;
}

/* One target per distinct address of a tls: entry; *@n grows. */
static int add_tls_targets(const char *server, struct conn_target *v, size_t *n)
{
	_cleanup_(freep) char *hp = strdup(server + 4);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL;
	size_t first = *n;
	char *host, *port;
	int r;

	if (!hp)
		return -ENOMEM;
	v[*n] = (struct conn_target){ .server = server };
	snprintf(v[*n].label, sizeof(v[*n].label), "%s", server);
	if (split_host_port(hp, &host, &port) < 0 || !*host) {
		(*n)++; /* conn_open_tls() names the mistake */
		return 0;
	}
	r = getaddrinfo(host, port, &hints, &ai);
	if (r != 0) {
		snprintf(v[*n].why, sizeof(v[*n].why), "cannot resolve %s: %s", host,
			 r == EAI_SYSTEM ? strerror(errno) : gai_strerror(r));
		(*n)++;
		return 0;
	}
	for (struct addrinfo *a = ai; a && *n < CONN_MAX_TARGETS; a = a->ai_next) {
		bool dup = false;

		for (size_t i = first; i < *n && !dup; i++)
			dup = same_addr(&v[i], a);
		if (dup || a->ai_addrlen > sizeof(v[*n].addr))
			continue;
		v[*n] = (struct conn_target){ .server = server, .addr_len = a->ai_addrlen };
		memcpy(&v[*n].addr, a->ai_addr, a->ai_addrlen);
		(*n)++;
	}
	freeaddrinfo(ai);
	for (size_t i = first; i < *n; i++) {
		char ip[NI_MAXHOST] = "?";

		getnameinfo((struct sockaddr *)&v[i].addr, v[i].addr_len, ip, sizeof(ip), NULL,
			    0, NI_NUMERICHOST);
		if (*n - first > 1)
			snprintf(v[i].label, sizeof(v[i].label), "%s (%s)", server, ip);
		else
			snprintf(v[i].label, sizeof(v[i].label), "%s", server);
	}
	return 0;
}

int conn_targets(const char *const *servers, size_t n, struct conn_target **ret,
		 size_t *ret_n)
{
	_cleanup_(freep) struct conn_target *v = calloc(CONN_MAX_TARGETS, sizeof(*v));
	size_t k = 0;
	int r;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && k < CONN_MAX_TARGETS; i++) {
		if (strncmp(servers[i], "tls:", 4) == 0) {
			r = add_tls_targets(servers[i], v, &k);
			if (r < 0)
				return r;
			continue;
		}
		v[k] = (struct conn_target){ .server = servers[i] };
		snprintf(v[k].label, sizeof(v[k].label), "%s", servers[i]);
		k++;
	}
	*ret = TAKE_PTR(v);
	*ret_n = k;
	return 0;
}

int conn_open(const char *const *servers, size_t n, const struct conn_tls *tls,
	      struct conn **ret, size_t *ret_index, char *err, size_t err_size)
{
	_cleanup_(freep) struct conn_target *t = NULL;
	size_t nt = 0;
	int r;

	snprintf(err, err_size, "no server given");
	r = conn_targets(servers, n, &t, &nt);
	if (r < 0)
		return r;
	r = -EINVAL;
	for (size_t i = 0; i < nt; i++) {
		const char *why;

		r = conn_open_target(&t[i], tls, CONN_TIMEOUT_SEC * 1000, ret, &why);
		if (r >= 0) {
			*ret_index = 0;
			for (size_t j = 0; j < n; j++)
				if (servers[j] == t[i].server)
					*ret_index = j;
			return 0;
		}
		snprintf(err, err_size, "cannot connect to modsignd at %s: %s", t[i].label,
			 why ?: strerror(-r));
	}
	return r;
}

void conn_close(struct conn *c)
{
	if (!c)
		return;
	if (c->tls_ops)
		c->tls_ops->free(c);
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
	ssize_t n;

	if (c->tls_ops)
		return c->tls_ops->xfer(c, buf, len, out);
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

	if (c->tls_ops) {
		n = c->tls_ops->read_waiting(c, buf, sizeof(buf));
		if (n < 0)
			return err;
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

void conn_end_requests(struct conn *c)
{
	if (!c->tls_ops)
		shutdown(c->fd, SHUT_WR);
}

/* The socket's timeout bounds each read only: a server that sends a byte
 * now and then would hold us for ever.  The whole frame gets as long. */
int conn_recv(struct conn *c, json_object **ret)
{
	uint64_t start = now_ms();

	for (;;) {
		size_t used = 0;
		ssize_t n;
		int r = proto_frame_take(c->in, c->in_len, ret, &used);

		if (r != 0) {
			memmove(c->in, c->in + used, c->in_len - used);
			c->in_len -= used;
			return r > 0 ? 0 : r;
		}
		if (c->timeout_ms && now_ms() - start >= c->timeout_ms)
			return -ETIMEDOUT;
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

	if (proto_get_string(reply, PROTO_F_ERROR, PROTO_MAX_ERROR, true, &e) < 0 || !e)
		return "request refused by modsignd";
	return e;
}

static bool reply_ok(json_object *reply)
{
	bool ok = false;

	return proto_get_bool(reply, PROTO_F_OK, &ok) == 0 && ok;
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
