/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-journal.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "digest.h"
#include "log.h"
#include "proto.h"
#include "protocol.h"
#include "util.h"

/* A torn record left by a crash is at most this long; a longer tail
 * without a newline is not ours, and is not cut. */
#define AUDIT_MAX_LINE (64 * 1024)

/* One reason a slot tracks: its first refusal was recorded in full, the
 * others are counted here. */
struct reason_count {
	bool taken;
	char reason[AUDIT_MAX_REASON];
	uint64_t count;  /* counted after the recorded one */
};

/* Refusals of one source (or one verified name) this interval: the first
 * of each of its first AUDIT_REFUSAL_REASONS reasons is recorded in full,
 * the rest counted here, per reason or as "other". */
struct refusals {
	bool used;
	bool shared;                 /* the slot past the table */
	char source[PEER_MAX_IDENTITY];
	char peer[PEER_MAX_DESC];    /* the last one counted */
	char first[48], last[48];    /* wall-clock times of the counted ones */
	uint64_t start_ms;           /* monotonic: when the interval began */
	uint64_t count;              /* refusals counted, not recorded */
	struct reason_count reasons[AUDIT_REFUSAL_REASONS]; /* the first reasons */
	uint64_t other;              /* refusals for reasons past those */
};

/* Which table a refusal goes to (refusal_kind_of()). */
enum refusal_table_kind { REFUSAL_SOURCE, REFUSAL_NAME, REFUSAL_USER, REFUSAL_KINDS };

/* AUDIT_REFUSAL_SLOTS slots and the last, shared by every source once
 * the others are taken: memory and records stay bounded however many
 * sources there are. */
struct refusal_table {
	struct refusals slot[AUDIT_REFUSAL_SLOTS + 1];
};

/* The open log file and what we know of its end. */
struct log_file {
	int fd;
	bool regular;  /* a regular file: a torn append can be cut back */
	off_t synced;  /* end of the last record known durable */
	off_t cut;     /* -1, or where the file must be cut back to first */
};

struct audit {
	int dirfd;     /* the log's directory, opened once at start; -1: none */
	char *name;    /* the log's name in it */
	struct log_file f;
	bool dirty;    /* records written since the last sync */
	bool journal;  /* running under systemd: structured entries */
	struct refusal_table refusals[REFUSAL_KINDS];
};

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

/* ---- the file: whole records only --------------------------------------- */

/* Cut the file back to @off, the end of the last complete record; if that
 * fails, every later write tries again first (and fails until it works). */
static int cut_back(struct log_file *f, off_t off)
{
	if (ftruncate(f->fd, off) < 0) {
		f->cut = off;
		return -errno;
	}
	f->cut = -1;
	if (f->synced > off)
		f->synced = off;
	return 0;
}

/* A record torn by a crash (or by an older modsignd on a full disk) ends
 * without its newline; cut it, so that the next record starts its own
 * line.  A longer tail is not one of ours: end it with a newline instead. */
static int repair_tail(struct log_file *f, off_t size)
{
	char buf[4096];
	off_t end = size;

	while (end > 0 && size - end < AUDIT_MAX_LINE) {
		size_t n = end < (off_t)sizeof(buf) ? (size_t)end : sizeof(buf);
		ssize_t k = pread(f->fd, buf, n, end - (off_t)n);

		if (k != (ssize_t)n)
			return k < 0 ? -errno : -EIO;
		for (size_t i = n; i > 0; i--)
			if (buf[i - 1] == '\n')
				return cut_back(f, end - (off_t)n + (off_t)i);
		end -= (off_t)n;
	}
	if (end == 0)
		return cut_back(f, 0);
	return write_full(f->fd, "\n", 1);
}

static int open_log(struct log_file *f, int fd)
{
	struct stat st;
	char last;

	if (fstat(fd, &st) < 0)
		return -errno;
	*f = (struct log_file){ .fd = fd, .cut = -1, .regular = S_ISREG(st.st_mode) };
	f->synced = f->regular ? st.st_size : 0;
	if (!f->regular || st.st_size == 0)
		return 0;
	if (pread(fd, &last, 1, st.st_size - 1) != 1)
		return -EIO;
	return last == '\n' ? 0 : repair_tail(f, st.st_size);
}

/* One write() per record, as O_APPEND keeps it whole among other writers;
 * if it fails midway, the part written is cut off again. */
static int append(struct audit *a, const char *line, size_t len)
{
	struct log_file *f = &a->f;
	struct stat st;
	off_t start = -1;
	size_t done = 0;
	int r;

	if (f->regular) {
		if (f->cut >= 0 && (r = cut_back(f, f->cut)) < 0)
			return r;
		if (fstat(f->fd, &st) < 0)
			return -errno;
		start = st.st_size;
		if (f->synced > start)
			f->synced = start; /* shortened by someone else (copytruncate) */
	}
	while (done < len) {
		ssize_t n = write(f->fd, line + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			r = n < 0 ? -errno : -EIO;
			if (done > 0 && start >= 0)
				cut_back(f, start);
			return r;
		}
		done += (size_t)n;
	}
	a->dirty = true;
	return 0;
}

int audit_sync(struct audit *a)
{
	struct log_file *f = &a->f;
	struct stat st;
	int r;

	if (f->fd < 0 || !a->dirty)
		return 0;
	a->dirty = false;
	if (fdatasync(f->fd) < 0) {
		r = -errno;
		/* Not known to be durable: the server withholds what these
		 * records cover, so they go, lest the file say "ok" for it. */
		if (f->regular && fstat(f->fd, &st) == 0 && st.st_size > f->synced)
			cut_back(f, f->synced);
		return r;
	}
	if (f->regular && fstat(f->fd, &st) == 0)
		f->synced = st.st_size;
	return 0;
}

/* ---- records -------------------------------------------------------------- */

/* A JSON string of @s, its ill-formed UTF-8 replaced (RFC 8259 8.1). */
static json_object *text_new(const char *s)
{
	_cleanup_(freep) char *clean = NULL;

	if (!s)
		return NULL;
	if (utf8_is_valid(s))
		return json_object_new_string(s);
	if (utf8_replace_invalid(s, &clean) < 0)
		return NULL;
	return json_object_new_string(clean);
}

/* The module name is the peer's; when it is not UTF-8, its bytes are
 * kept too, so the record still names the file exactly. */
static void add_module(json_object *o, const char *module)
{
	_cleanup_(freep) char *hex = NULL;

	json_object_object_add(o, "module", text_new(module));
	if (module && !utf8_is_valid(module) &&
	    hex_encode((const uint8_t *)module, strlen(module), &hex) == 0)
		json_object_object_add(o, "module_hex", json_object_new_string(hex));
}

/* Which certificate a TLS peer used: its name alone does not tell a
 * stolen certificate from the one re-issued to replace it. */
static void add_client_cert(json_object *o, const struct peer *peer)
{
	const struct peer_cert *c = &peer->cert;

	if (!peer->tls || !c->sha256[0])
		return;
	json_object_object_add(o, "client_cert_sha256", json_object_new_string(c->sha256));
	json_object_object_add(o, "client_serial", json_object_new_string(c->serial));
	json_object_object_add(o, "client_issuer", text_new(c->issuer));
	json_object_object_add(o, "client_issuer_sha256", json_object_new_string(c->issuer_sha256));
}

static json_object *event_json(const struct audit_event *e, const char *hex)
{
	json_object *o = json_object_new_object();
	char when[48];

	if (!o)
		return NULL;
	now_rfc3339(when, sizeof(when));
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "identity", text_new(e->peer->identity));
	json_object_object_add(o, "peer", text_new(e->peer->desc));
	add_client_cert(o, e->peer);
	json_object_object_add(o, "key", text_new(e->key));
	json_object_object_add(o, "key_id", text_new(e->key_id));
	json_object_object_add(o, "hash", e->mu ? json_object_new_string(PROTO_HASH_MU) :
					  e->md ? json_object_new_string(digest_name(e->md)) :
						  NULL);
	json_object_object_add(o, "digest", hex ? json_object_new_string(hex) : NULL);
	add_module(o, e->module);
	if (e->program)
		json_object_object_add(o, "program", text_new(e->program));
	json_object_object_add(o, "result", text_new(e->result));
	return o;
}

static json_object *event_new(const struct audit_event *e)
{
	_cleanup_(freep) char *hex = NULL;

	if (e->digest && e->digest_len && hex_encode(e->digest, e->digest_len, &hex) < 0)
		return NULL;
	return event_json(e, hex);
}

static int write_json(struct audit *a, json_object *o)
{
	size_t n;
	const char *s = json_object_to_json_string_length(o, JSON_C_TO_STRING_PLAIN, &n);
	_cleanup_(freep) char *line = NULL;

	if (a->f.fd < 0)
		return 0;
	if (!s)
		return -ENOMEM;
	line = malloc(n + 1);
	if (!line)
		return -ENOMEM;
	memcpy(line, s, n);
	line[n] = '\n';
	return append(a, line, n + 1);
}

static const char *field(json_object *o, const char *name)
{
	return json_object_get_string(json_object_object_get(o, name)) ?: "";
}

/* The journal entry; without journald, one line on stderr instead.  Both
 * take the record's text, which is UTF-8 whatever the peer sent. */
static void journal_json(const struct audit *a, json_object *o)
{
	const char *result = field(o, "result");
	bool ok = strcmp(result, "ok") == 0;
	const char *text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);

	if (a->journal &&
	    sd_journal_send("MESSAGE=audit: %s", text, "PRIORITY=%d", ok ? LOG_INFO : LOG_WARNING,
			    "SYSLOG_IDENTIFIER=modsignd", "MODSIGN_RESULT=%s", result,
			    "MODSIGN_IDENTITY=%s", field(o, "identity"), "MODSIGN_KEY=%s",
			    field(o, "key"), "MODSIGN_KEY_ID=%s", field(o, "key_id"),
			    "MODSIGN_HASH=%s", field(o, "hash"), "MODSIGN_DIGEST=%s",
			    field(o, "digest"), "MODSIGN_MODULE=%s", field(o, "module"),
			    "MODSIGN_PROGRAM=%s", field(o, "program"),
			    "MODSIGN_COUNT=%s", field(o, "count"), "MODSIGN_CLIENT_CERT_SHA256=%s",
			    field(o, "client_cert_sha256"), NULL) >= 0)
		return;
	log_msg(ok ? LOG_INFO : LOG_WARNING, "audit: %s", text);
}

int audit_write(struct audit *a, const struct audit_event *e)
{
	_cleanup_(json_object_putp) json_object *o = event_new(e);

	return o ? write_json(a, o) : -ENOMEM;
}

void audit_journal(struct audit *a, const struct audit_event *e)
{
	_cleanup_(json_object_putp) json_object *o = event_new(e);

	if (o)
		journal_json(a, o);
}

int audit_record(struct audit *a, const struct audit_event *e)
{
	_cleanup_(json_object_putp) json_object *o = event_new(e);
	int r;

	if (!o)
		return -ENOMEM;
	r = write_json(a, o);
	journal_json(a, o);
	return r;
}

/* ---- refusals before admission --------------------------------------------- */

/* The tables, and what each one's shared slot says of itself. */
static const struct refusal_kind {
	const char *shared_source;  /* the identity of the slot past the table */
	const char *shared_reason;  /* its summary's result */
} refusal_kinds[REFUSAL_KINDS] = {
	[REFUSAL_SOURCE] = { "*", "refused before authentication (sources past the table)" },
	[REFUSAL_NAME] = { "cn:*", "refused by the policy (verified names past the table)" },
	[REFUSAL_USER] = { "uid:*", "refused by the policy (local users past the table)" },
};

/* A certificate that verified names its peer, the kernel a UNIX peer's
 * uid: their refusals go to tables of their own, where no number of
 * addresses can crowd them out (nor take the reasons of the slot past
 * the table, and leave a local user only counted there as "other"). */
static enum refusal_table_kind refusal_kind_of(const struct peer *peer)
{
	if (!peer->tls)
		return REFUSAL_USER;
	return peer->cn[0] ? REFUSAL_NAME : REFUSAL_SOURCE;
}

static bool interval_over(const struct refusals *f, uint64_t now)
{
	return now - f->start_ms >= AUDIT_REFUSAL_INTERVAL_S * 1000ull;
}

/* The slot for @source in @t: its own, a free one, or the shared last one. */
static struct refusals *refusals_slot(struct refusal_table *t, const char *source)
{
	struct refusals *free_slot = NULL;

	for (size_t i = 0; i < AUDIT_REFUSAL_SLOTS; i++) {
		struct refusals *f = &t->slot[i];

		if (f->used && strcmp(f->source, source) == 0)
			return f;
		if (!f->used && !free_slot)
			free_slot = f;
	}
	return free_slot ?: &t->slot[AUDIT_REFUSAL_SLOTS];
}

/* The entry of @reason in @f: its own, or a new one (*@ret_new) while
 * fewer than AUDIT_REFUSAL_REASONS are taken; NULL past those ("other"). */
static struct reason_count *reason_entry(struct refusals *f, const char *reason, bool *ret_new)
{
	*ret_new = false;
	for (size_t i = 0; i < AUDIT_REFUSAL_REASONS; i++) {
		struct reason_count *rc = &f->reasons[i];

		if (!rc->taken) {
			*rc = (struct reason_count){ .taken = true };
			snprintf(rc->reason, sizeof(rc->reason), "%s", reason);
			*ret_new = true;
			return rc;
		}
		if (strcmp(rc->reason, reason) == 0)
			return rc;
	}
	return NULL;
}

/* Count @e, a refusal for the reason @rc (NULL: "other"). */
static void refusals_count(struct refusals *f, struct reason_count *rc,
			   const struct audit_event *e)
{
	f->count++;
	if (rc)
		rc->count++;
	else
		f->other++;
	snprintf(f->peer, sizeof(f->peer), "%s", e->peer->desc);
	now_rfc3339(f->last, sizeof(f->last));
	if (f->count == 1)
		memcpy(f->first, f->last, sizeof(f->first));
}

/* The summary's result: the reason of every refusal counted when they
 * share one, as a summary always said; else "several reasons", each in
 * "reasons". */
static const char *summary_result(const struct refusals *f, enum refusal_table_kind k)
{
	const char *one = NULL;
	size_t n = f->other ? 1 : 0;

	if (f->shared)
		return refusal_kinds[k].shared_reason;
	for (size_t i = 0; i < AUDIT_REFUSAL_REASONS; i++)
		if (f->reasons[i].count && n++ == 0)
			one = f->reasons[i].reason;
	return n == 1 && one ? one : "several reasons (see \"reasons\")";
}

static json_object *reasons_json(const struct refusals *f)
{
	json_object *o = json_object_new_object();

	for (size_t i = 0; o && i < AUDIT_REFUSAL_REASONS; i++)
		if (f->reasons[i].count)
			json_object_object_add(o, f->reasons[i].reason,
					       json_object_new_uint64(f->reasons[i].count));
	if (o && f->other)
		json_object_object_add(o, "other", json_object_new_uint64(f->other));
	return o;
}

/* One record for the refusals counted since the recorded one. */
static void refusals_summary(struct audit *a, const struct refusals *f, enum refusal_table_kind k)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	char when[48];

	if (!o)
		return;
	now_rfc3339(when, sizeof(when));
	json_object_object_add(o, "time", json_object_new_string(when));
	json_object_object_add(o, "identity", text_new(f->source));
	json_object_object_add(o, "peer", text_new(f->peer));
	json_object_object_add(o, "key", NULL);
	json_object_object_add(o, "key_id", NULL);
	json_object_object_add(o, "hash", NULL);
	json_object_object_add(o, "digest", NULL);
	json_object_object_add(o, "module", NULL);
	json_object_object_add(o, "result", text_new(summary_result(f, k)));
	json_object_object_add(o, "summary", json_object_new_boolean(true));
	json_object_object_add(o, "count", json_object_new_uint64(f->count));
	json_object_object_add(o, "first", json_object_new_string(f->first));
	json_object_object_add(o, "last", json_object_new_string(f->last));
	json_object_object_add(o, "interval_s", json_object_new_int(AUDIT_REFUSAL_INTERVAL_S));
	json_object_object_add(o, "reasons", reasons_json(f));
	write_json(a, o);
	journal_json(a, o);
}

static void refusals_end(struct audit *a, struct refusals *f, enum refusal_table_kind k)
{
	if (f->used && f->count)
		refusals_summary(a, f, k);
	f->used = false;
}

/* A new interval for the slot @f, whose first refusal @e is recorded. */
static void refusals_open(struct refusals *f, const struct audit_event *e,
			  enum refusal_table_kind k, bool shared, uint64_t now)
{
	*f = (struct refusals){ .used = true, .shared = shared, .start_ms = now };
	snprintf(f->source, sizeof(f->source), "%s",
		 shared ? refusal_kinds[k].shared_source : e->peer->identity);
}

bool audit_unauth_refusal(struct audit *a, const struct audit_event *e)
{
	enum refusal_table_kind k = refusal_kind_of(e->peer);
	struct refusal_table *t = &a->refusals[k];
	struct refusals *f = refusals_slot(t, e->peer->identity);
	struct reason_count *rc;
	uint64_t now = now_ms();
	bool fresh;

	if (f->used && interval_over(f, now))
		refusals_end(a, f, k);
	if (!f->used)
		refusals_open(f, e, k, f == &t->slot[AUDIT_REFUSAL_SLOTS], now);
	rc = reason_entry(f, e->result, &fresh);
	if (fresh) {
		audit_record(a, e);
		return true;
	}
	refusals_count(f, rc, e);
	return false;
}

/* End the intervals that are over, or (@all) every one. */
static void refusals_end_all(struct audit *a, bool all)
{
	uint64_t now = now_ms();

	for (size_t k = 0; k < REFUSAL_KINDS; k++)
		for (size_t i = 0; i <= AUDIT_REFUSAL_SLOTS; i++) {
			struct refusals *f = &a->refusals[k].slot[i];

			if (f->used && (all || interval_over(f, now)))
				refusals_end(a, f, (enum refusal_table_kind)k);
		}
}

void audit_tick(struct audit *a)
{
	refusals_end_all(a, false);
}

static void refusals_flush(struct audit *a)
{
	refusals_end_all(a, true);
}

/* ---- life cycle ----------------------------------------------------------- */

int audit_new(int dirfd, const char *name, struct audit **ret)
{
	struct audit *a = calloc(1, sizeof(*a));
	int r;

	if (!a)
		return -ENOMEM;
	a->f.fd = a->dirfd = -1;
	a->journal = getenv("JOURNAL_STREAM") || getenv("INVOCATION_ID");
	if (dirfd >= 0 && !(a->name = strdup(name))) {
		free(a);
		return -ENOMEM;
	}
	a->dirfd = dirfd;
	r = audit_reopen(a);
	if (r < 0) {
		a->dirfd = -1; /* still the caller's */
		audit_free(a);
		return r;
	}
	*ret = a;
	return 0;
}

int audit_reopen(struct audit *a)
{
	_cleanup_(closep) int fd = -1;
	struct log_file next;
	struct stat st;
	int r;

	if (a->dirfd < 0)
		return 0;
	/* Read as well as append: a torn last record is found by reading.
	 * By name in the directory opened at start, never by path (a
	 * rotation must not move the log elsewhere), and never anything but
	 * a regular file: a FIFO put there would take the records away, or
	 * stop the event loop once its pipe is full. */
	fd = regular_file_openat(a->dirfd, a->name, O_RDWR | O_APPEND | O_CREAT, 0640);
	if (fd < 0)
		return fd;
	/* Nobody else may write the records (nor has open_log() cut or
	 * extend a file of someone else's): the daemon's own, writable by
	 * neither group nor others, as its directory. */
	if (fstat(fd, &st) < 0)
		return -errno;
	if (st.st_uid != geteuid() || (st.st_mode & (S_IWGRP | S_IWOTH)))
		return -EPERM;
	r = open_log(&next, fd);
	if (r < 0)
		return r;
	if (a->f.fd >= 0) {
		refusals_flush(a); /* the summaries belong to the old file */
		fdatasync(a->f.fd);
		close(a->f.fd);
	}
	TAKE_FD(fd);
	a->f = next;
	a->dirty = false;
	return 0;
}

const char *audit_file_refusal(int r)
{
	if (r == -EPERM)
		return "not the daemon's own, or group or others may write it (chown it, chmod go-w)";
	return regular_file_refusal(r);
}

void audit_free(struct audit *a)
{
	if (!a)
		return;
	refusals_flush(a);
	if (a->f.fd >= 0) {
		fdatasync(a->f.fd);
		close(a->f.fd);
	}
	if (a->dirfd >= 0)
		close(a->dirfd);
	free(a->name);
	free(a);
}
