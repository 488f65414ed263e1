/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "conn.h"
#include "util.h"

struct conn {
	int fd;
	char *address;
	char *hangup; /* why the daemon hung up on us, if it said */
	uint64_t next_id;
	uint8_t *in;
	size_t in_len, in_cap;
};

static int connect_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CONN_TIMEOUT_SEC };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;
		close(fd);
		return r;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	return fd;
}

int conn_open(const char *const *servers, size_t n, struct conn **ret,
	      char *err, size_t err_size)
{
	struct conn *c;
	int fd = -EINVAL;

	snprintf(err, err_size, "no server given");
	for (size_t i = 0; i < n; i++) {
		if (strncmp(servers[i], "unix:", 5) != 0) {
			snprintf(err, err_size, "%s: unsupported address (expected unix:PATH)",
				 servers[i]);
			fd = -EINVAL;
			continue;
		}
		fd = connect_unix(servers[i] + 5);
		if (fd >= 0) {
			c = calloc(1, sizeof(*c));
			if (!c || !(c->address = strdup(servers[i]))) {
				free(c);
				close(fd);
				return -ENOMEM;
			}
			c->fd = fd;
			c->next_id = 1;
			*ret = c;
			return 0;
		}
		snprintf(err, err_size, "cannot connect to modsignd at %s: %s",
			 servers[i], strerror(-fd));
	}
	return fd;
}

void conn_close(struct conn *c)
{
	if (!c)
		return;
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

	n = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
	if (n > 0 && proto_frame_take(buf, (size_t)n, &msg, &used) > 0 && !c->hangup)
		c->hangup = strdup(reply_error(msg));
	return err;
}

const char *conn_strerror(const struct conn *c, int err)
{
	if ((err == -EPIPE || err == -ECONNRESET) && c->hangup)
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
		ssize_t n = send(c->fd, frame, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EPIPE || errno == ECONNRESET))
			return note_hangup(c, -errno);
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
		memmove(frame, frame + n, len - (size_t)n);
		len -= (size_t)n;
	}
	return 0;
}

static int conn_grow(struct conn *c)
{
	const size_t max = PROTO_HEADER_LEN + PROTO_MAX_FRAME;
	size_t cap = c->in_cap ? c->in_cap * 2 : 8192;
	uint8_t *p;

	if (c->in_len < c->in_cap)
		return 0;
	if (cap > max)
		cap = max;
	if (cap <= c->in_len)
		return -EMSGSIZE;
	p = realloc(c->in, cap);
	if (!p)
		return -ENOMEM;
	c->in = p;
	c->in_cap = cap;
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
		r = conn_grow(c);
		if (r < 0)
			return r;
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno == EAGAIN ? -ETIMEDOUT : -errno;
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
