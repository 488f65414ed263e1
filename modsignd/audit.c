/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "digest.h"
#include "log.h"
#include "proto.h"
#include "util.h"

struct audit {
	char *path;
	int fd;
	bool dirty;   /* records written since the last sync */
	bool journal; /* running under systemd: structured entries */
};

int audit_new(const char *path, struct audit **ret)
{
	struct audit *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	a->fd = -1;
	a->journal = getenv("JOURNAL_STREAM") || getenv("INVOCATION_ID");
	if (path && !(a->path = strdup(path))) {
		free(a);
		return -ENOMEM;
	}
	r = audit_reopen(a);
	if (r < 0) {
		audit_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

int audit_reopen(struct audit *a)
{
	int fd;

	if (!a->path)
		return 0;
	fd = open(a->path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0640);
	if (fd < 0)
		return -errno;
	if (a->fd >= 0) {
		fdatasync(a->fd);
		close(a->fd);
	}
	a->fd = fd;
	return 0;
}

void audit_free(struct audit *a)
{
	if (!a)
		return;
	if (a->fd >= 0) {
		fdatasync(a->fd);
		close(a->fd);
	}
	free(a->path);
	free(a);
}

static void now_rfc3339(char *buf, size_t size)
{
	struct timespec ts;
	struct tm tm;
	char base[32];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, size, "%s.%03ldZ", base, ts.tv_nsec / 1000000);
}

static json_object *event_json(const struct audit_event *e, const char *hex)
{
	json_object *o = json_object_new_object();
	char when[48];

	if (!o)
		return NULL;
	now_rfc3339(when, sizeof(when));
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "identity", json_object_new_string(e->peer->identity));
	json_object_object_add(o, "peer", json_object_new_string(e->peer->desc));
	json_object_object_add(o, "key", e->key ? json_object_new_string(e->key) : NULL);
	json_object_object_add(o, "key_id", e->key_id ? json_object_new_string(e->key_id) : NULL);
	json_object_object_add(o, "hash", e->md ? json_object_new_string(digest_name(e->md)) : NULL);
	json_object_object_add(o, "digest", hex ? json_object_new_string(hex) : NULL);
	json_object_object_add(o, "module", e->module ? json_object_new_string(e->module) : NULL);
	json_object_object_add(o, "result", json_object_new_string(e->result));
	return o;
}

static int write_line(struct audit *a, json_object *o)
{
	size_t n;
	const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n);
	_cleanup_(freep) char *line = NULL;
	int r;

	if (!s)
		return -ENOMEM;
	line = malloc(n + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, s, n);
	line[n] = '\n';
	/* One write() per line: O_APPEND keeps lines whole. */
	r = write_full(a->fd, line, n + 1);
	if (r >= 0)
		a->dirty = true;
	return r;
}

/* The journal entry; without journald, one line on stderr instead.  The
 * module name is the peer's: json-c escapes it; the journal takes binary. */
static void journal_or_stderr(const struct audit *a, const struct audit_event *e,
			      json_object *o)
{
	bool ok = strcmp(e->result, "ok") == 0;
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

	if (a->journal &&
	    sd_journal_send("MESSAGE=audit: %s", text, "PRIORITY=%d", ok ? LOG_INFO : LOG_WARNING,
			    "SYSLOG_IDENTIFIER=modsignd", "MODSIGN_RESULT=%s", e->result,
			    "MODSIGN_IDENTITY=%s", e->peer->identity, "MODSIGN_KEY=%s", e->key ?: "",
			    "MODSIGN_KEY_ID=%s", e->key_id ?: "", "MODSIGN_HASH=%s",
			    e->md ? digest_name(e->md) : "", "MODSIGN_DIGEST=%s",
			    json_object_get_string(json_object_object_get(o, "digest")) ?: "",
			    "MODSIGN_MODULE=%s", e->module ?: "", NULL) >= 0)
		return;
	log_msg(ok ? LOG_INFO : LOG_WARNING, "audit: %s", text);
}

int audit_record(struct audit *a, const struct audit_event *e)
{
	_cleanup_(freep) char *hex = NULL;
	_cleanup_(json_object_putp) json_object *o = NULL;

	if (e->digest && e->digest_len && hex_encode(e->digest, e->digest_len, &hex) < 0)
		return -ENOMEM;
	o = event_json(e, hex);
	if (!o)
		return -ENOMEM;
	journal_or_stderr(a, e, o);
	return a->fd >= 0 ? write_line(a, o) : 0;
}

int audit_sync(struct audit *a)
{
	if (a->fd < 0 || !a->dirty)
		return 0;
	if (fdatasync(a->fd) < 0)
		return -errno;
	a->dirty = false;
	return 0;
}
