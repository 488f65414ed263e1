/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>

#include "conf.h"
#include "macro.h"
#include "util.h"

static char *trim(char *s, char *end)
{
	while (s < end && isspace((unsigned char)*s))
		s++;
	while (end > s && isspace((unsigned char)end[-1]))
		end--;
	*end = '\0';
	return s;
}

static int valid_key(const char *k)
{
	if (!*k)
		return 0;
	for (; *k; k++)
		if (!islower((unsigned char)*k) && !isdigit((unsigned char)*k) && *k != '-')
			return 0;
	return 1;
}

static int parse_line(char *line, size_t len, conf_cb cb, void *userdata)
{
	char *eq, *key, *value, *start = trim(line, line + len);

	if (!*start || *start == '#')
		return 0;
	eq = strchr(start, '=');
	if (!eq)
		return -EBADMSG;
	key = trim(start, eq);
	value = trim(eq + 1, eq + 1 + strlen(eq + 1));
	if (!valid_key(key))
		return -EBADMSG;
	return cb(key, value, userdata);
}

int conf_parse_buf(const char *buf, size_t len, conf_cb cb, void *userdata,
		   unsigned *ret_line)
{
	char line[CONF_MAX_LINE + 1];
	unsigned n = 0;
	size_t pos = 0;

	*ret_line = 0;
	if (memchr(buf, '\0', len))
		return -EBADMSG;
	while (pos < len) {
		const char *nl = memchr(buf + pos, '\n', len - pos);
		size_t l = nl ? (size_t)(nl - (buf + pos)) : len - pos;
		int r;

		n++;
		if (l > CONF_MAX_LINE) {
			*ret_line = n;
			return -EBADMSG;
		}
		memcpy(line, buf + pos, l);
		line[l] = '\0';
		*ret_line = n;
		r = parse_line(line, l, cb, userdata);
		if (r < 0)
			return r;
		pos += l + 1;
	}
	*ret_line = 0;
	return 0;
}

int conf_parse(const char *path, conf_cb cb, void *userdata, unsigned *ret_line)
{
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);

	*ret_line = 0;
	if (fd < 0)
		return -errno;
	return conf_parse_fd(fd, cb, userdata, ret_line);
}

int conf_parse_fd(int fd, conf_cb cb, void *userdata, unsigned *ret_line)
{
	_cleanup_(freep) char *buf = NULL;
	size_t len;
	int r;

	*ret_line = 0;
	r = read_fd(fd, CONF_MAX_FILE, &buf, &len);
	if (r < 0)
		return r;
	return conf_parse_buf(buf, len, cb, userdata, ret_line);
}
