/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Listening sockets: UNIX and TCP ones bound here, or those systemd
 * passed.  server.h; server-internal.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "server-internal.h"
#include "util.h"

static int add_listener(struct server *s, int fd, bool tls, const char *path)
{
	struct listener *l;
	int r;

	if (s->n_listeners >= SERVER_MAX_LISTENERS)
		return -E2BIG;
	if (tls && !s->cfg.tls)
		return -ENOPROTOOPT;
	l = &s->listeners[s->n_listeners];
	*l = (struct listener){ .kind = W_LISTENER, .fd = fd, .tls = tls };
	if (path && !(l->path = strdup(path)))
		return -ENOMEM;
	r = watch(s, fd, EPOLLIN, l);
	if (r < 0) {
		free(l->path);
		return r;
	}
	s->n_listeners++;
	return 0;
}

/* A socket file that nobody answers on is left over from a crash. */
static int remove_stale_socket(const char *path, const struct sockaddr_un *sa)
{
	struct stat st;
	int fd, r;

	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode))
		return -EEXIST;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	r = connect(fd, (const struct sockaddr *)sa, sizeof(*sa));
	close(fd);
	if (r == 0)
		return -EADDRINUSE;
	return unlink(path) < 0 ? -errno : 0;
}

int server_listen_unix(struct server *s, const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	mode_t old;
	int fd, r;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	r = remove_stale_socket(path, &sa);
	if (r < 0)
		return r;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	/* Create the file with its final mode: no window where it is wider. */
	old = umask(~s->cfg.socket_mode & 0777);
	r = bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	umask(old);
	if (r < 0 || listen(fd, SOMAXCONN) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	r = add_listener(s, fd, false, path);
	if (r < 0)
		close(fd);
	return r;
}

/* "HOST:PORT" or "[V6]:PORT" into a bound, listening TCP socket. */
static int tcp_listen(const char *host_port)
{
	_cleanup_(freep) char *buf = strdup(host_port);
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char *host, *port;
	int fd = -EADDRNOTAVAIL, one = 1;

	if (!buf)
		return -ENOMEM;
	if (split_host_port(buf, &host, &port) < 0)
		return -EINVAL;
	/* ":PORT": every address */
	if (getaddrinfo(*host ? host : NULL, port, &hints, &ai) != 0)
		return -EADDRNOTAVAIL;
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0) {
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, SOMAXCONN) < 0) {
			int r = -errno;
			close(fd);
			fd = r;
		}
	} else {
		fd = -errno;
	}
	freeaddrinfo(ai);
	return fd;
}

int server_listen_tls(struct server *s, const char *host_port)
{
	int fd, r;

	if (!s->cfg.tls)
		return -ENOPROTOOPT;
	fd = tcp_listen(host_port);
	if (fd < 0)
		return fd;
	r = add_listener(s, fd, true, NULL);
	if (r < 0)
		close(fd);
	return r;
}

int server_adopt_systemd(struct server *s)
{
	char **names = NULL;
	int n, r = 0;

	n = sd_listen_fds_with_names(1, &names);
	if (n <= 0)
		return n;
	for (int i = 0; i < n && r >= 0; i++) {
		int fd = SD_LISTEN_FDS_START + i;
		bool tls = (names && names[i] && strcmp(names[i], "tls") == 0) ||
			   sd_is_socket_inet(fd, 0, SOCK_STREAM, 1, 0) > 0;

		if (!tls && sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0)
			r = -EBADF;
		else {
			fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
			r = add_listener(s, fd, tls, NULL);
		}
	}
	for (int i = 0; names && i < n; i++)
		free(names[i]);
	free(names);
	return r < 0 ? r : n;
}
