/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Why a file and not an HTTP endpoint: the daemon listens on nothing but
 * its signing sockets (a second listener is a second attack surface in a
 * process that holds private keys), and node_exporter's textfile
 * collector, which every Prometheus installation has, reads such files.
 *
 * Counters are indexed by the key's place in the keystore (keys do not
 * change while the daemon runs; SIGHUP keeps them), so a label value is
 * always a configured key name, never a string a peer sent: a client
 * cannot grow the file by inventing key names.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "key-backend.h"
#include "metrics.h"
#include "util.h"

/* Upper bounds in seconds: a signature takes a millisecond (RSA-2048)
 * to tens (RSA-4096, a network HSM); a queue, seconds. */
static const double buckets[] = { 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1,
				  0.25, 0.5, 1, 2.5, 5, 10 };
#define N_BUCKETS (sizeof(buckets) / sizeof(buckets[0]))

static const char *const refusal_names[METRICS_REFUSAL_N_] = {
	[METRICS_UNKNOWN_KEY] = "unknown_key",
	[METRICS_NOT_GRANTED] = "not_granted",
	[METRICS_KEY_FAILED] = "token_unavailable",
	[METRICS_AUDIT_FAILED] = "audit_unavailable",
};

struct metrics {
	int dirfd;   /* the file's directory, opened once at start */
	char *name;  /* the file's name in it */
	char *tmp;   /* NAME.tmp: written, then renamed over NAME */
	uint64_t issued[KEYS_MAX];
	uint64_t refused[KEYS_MAX + 1][METRICS_REFUSAL_N_]; /* [KEYS_MAX]: unknown */
	uint64_t bucket[N_BUCKETS + 1];                     /* + Inf */
	uint64_t tls[METRICS_TLS_N_];
	double sum_s;
	uint64_t last_write_ms;
};

int metrics_new(int dirfd, const char *name, struct metrics **ret)
{
	struct metrics *m;

	*ret = NULL;
	if (dirfd < 0)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->dirfd = -1;
	if (!(m->name = strdup(name)) || asprintf(&m->tmp, "%s.tmp", name) < 0) {
		m->tmp = NULL;
		metrics_free(m);
		return -ENOMEM;
	}
	m->dirfd = dirfd;
	*ret = m;
	return 0;
}

void metrics_free(struct metrics *m)
{
	if (!m)
		return;
	if (m->dirfd >= 0)
		close(m->dirfd);
	free(m->name);
	free(m->tmp);
	free(m);
}

uint64_t metrics_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

static size_t key_index(const struct keystore *ks, const struct key *k)
{
	for (size_t i = 0; k && i < ks->n; i++)
		if (ks->keys[i] == k)
			return i;
	return KEYS_MAX;
}

static void observe(struct metrics *m, uint64_t start_us)
{
	double s;
	size_t b = 0;

	if (!start_us)
		return;
	s = (double)(metrics_now_us() - start_us) / 1e6;
	while (b < N_BUCKETS && s > buckets[b])
		b++;
	m->bucket[b]++;
	m->sum_s += s;
}

void metrics_issued(struct metrics *m, const struct keystore *ks, const struct key *k,
		    uint64_t start_us)
{
	size_t i;

	if (!m || (i = key_index(ks, k)) == KEYS_MAX)
		return;
	m->issued[i]++;
	observe(m, start_us);
}

void metrics_refused(struct metrics *m, const struct keystore *ks, const struct key *k,
		     enum metrics_refusal why, uint64_t start_us)
{
	if (!m)
		return;
	m->refused[key_index(ks, k)][why]++;
	observe(m, start_us);
}

void metrics_tls(struct metrics *m, enum metrics_tls what)
{
	if (m)
		m->tls[what]++;
}

/* A label value: backslash, double quote and newline escaped. */
static void put_label(FILE *f, const char *v)
{
	for (; *v; v++) {
		if (*v == '\\' || *v == '"')
			fputc('\\', f);
		if (*v == '\n')
			fputs("\\n", f);
		else
			fputc(*v, f);
	}
}

static void write_counters(FILE *f, const struct metrics *m, const struct keystore *ks)
{
	fputs("# HELP modsignd_signatures_issued_total Signatures sent to clients.\n"
	      "# TYPE modsignd_signatures_issued_total counter\n", f);
	for (size_t i = 0; i < ks->n; i++) {
		fputs("modsignd_signatures_issued_total{key=\"", f);
		put_label(f, ks->keys[i]->name);
		fprintf(f, "\"} %" PRIu64 "\n", m->issued[i]);
	}
	fputs("# HELP modsignd_signatures_refused_total Sign requests answered with an error.\n"
	      "# TYPE modsignd_signatures_refused_total counter\n", f);
	for (size_t i = 0; i <= ks->n; i++) {
		size_t slot = i < ks->n ? i : KEYS_MAX;

		for (int w = 0; w < METRICS_REFUSAL_N_; w++) {
			if (slot == KEYS_MAX && w != METRICS_UNKNOWN_KEY)
				continue;
			if (slot != KEYS_MAX && w == METRICS_UNKNOWN_KEY)
				continue;
			fputs("modsignd_signatures_refused_total{key=\"", f);
			put_label(f, slot == KEYS_MAX ? "" : ks->keys[i]->name);
			fprintf(f, "\",reason=\"%s\"} %" PRIu64 "\n", refusal_names[w],
				m->refused[slot][w]);
		}
	}
}

static void write_latency(FILE *f, const struct metrics *m)
{
	uint64_t cum = 0;

	fputs("# HELP modsignd_request_duration_seconds Sign requests, queued to answered.\n"
	      "# TYPE modsignd_request_duration_seconds histogram\n", f);
	for (size_t b = 0; b < N_BUCKETS; b++) {
		cum += m->bucket[b];
		fprintf(f, "modsignd_request_duration_seconds_bucket{le=\"%g\"} %" PRIu64 "\n",
			buckets[b], cum);
	}
	cum += m->bucket[N_BUCKETS];
	fprintf(f, "modsignd_request_duration_seconds_bucket{le=\"+Inf\"} %" PRIu64 "\n"
		   "modsignd_request_duration_seconds_sum %.6f\n"
		   "modsignd_request_duration_seconds_count %" PRIu64 "\n", cum, m->sum_s, cum);
}

static void write_keys(FILE *f, const struct keystore *ks)
{
	fputs("# HELP modsignd_key_up 1 if the key signed (or loaded) fine at its last use.\n"
	      "# TYPE modsignd_key_up gauge\n", f);
	for (size_t i = 0; i < ks->n; i++) {
		const char *why;

		fputs("modsignd_key_up{key=\"", f);
		put_label(f, ks->keys[i]->name);
		fprintf(f, "\",backend=\"%s\"} %d\n", key_backend_name(ks->keys[i]),
			key_health(ks->keys[i], &why) == KEY_HEALTH_OK);
	}
}

/* Each backend's own counters (a PKCS#11 token's re-opens, logins, ...),
 * in the order of its row: every family named once, then its keys. */
static void write_backends(FILE *f, const struct keystore *ks)
{
	for (size_t b = 0; key_backends[b]; b++) {
		const struct key_backend *be = key_backends[b];

		for (size_t c = 0; c < be->n_metrics; c++) {
			fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", be->metrics[c].name,
				be->metrics[c].help, be->metrics[c].name);
			for (size_t i = 0; i < ks->n; i++) {
				if (ks->keys[i]->ops != be)
					continue;
				fprintf(f, "%s{key=\"", be->metrics[c].name);
				put_label(f, ks->keys[i]->name);
				fprintf(f, "\"} %lu\n", be->metric(ks->keys[i], c));
			}
		}
	}
}

static const struct {
	const char *name, *help;
} tls_counters[METRICS_TLS_N_] = {
	[METRICS_TLS_DROPPED] = { "modsignd_tls_handshakes_dropped_total",
				  "Unauthenticated TLS peers closed to make room in a full listener." },
	[METRICS_TLS_TIMED_OUT] = { "modsignd_tls_handshakes_timed_out_total",
				    "TLS handshakes not finished within the handshake timeout." },
	[METRICS_TLS_DEFERRED] = { "modsignd_tls_handshakes_deferred_total",
				   "TLS handshakes made to wait for a token or key-exchange slot of their source's." },
	[METRICS_TLS_CAPPED] = { "modsignd_tls_connections_capped_total",
				 "Authenticated TLS peers refused for a per-identity or per-source cap." },
};

static void write_tls(FILE *f, const struct metrics *m)
{
	for (size_t c = 0; c < METRICS_TLS_N_; c++)
		fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", tls_counters[c].name,
			tls_counters[c].help, tls_counters[c].name, tls_counters[c].name, m->tls[c]);
}

/*
 * A new temporary, never one found there: whatever is at NAME.tmp (a
 * stale one from a crash, or a FIFO planted to stop the event loop at its
 * open) is unlinked, which never opens it, and O_EXCL then makes a new
 * file or fails.  Mode 0644 whatever the umask (the unit's UMask=0077):
 * node_exporter's textfile collector reads it as another user.  The
 * counters are no secret; the directory, not the file, keeps others out.
 */
static int open_tmp(const struct metrics *m)
{
	_cleanup_(closep) int fd = -1;

	if (unlinkat(m->dirfd, m->tmp, 0) < 0 && errno != ENOENT)
		return -errno;
	fd = regular_file_openat(m->dirfd, m->tmp, O_WRONLY | O_CREAT | O_EXCL, 0644);
	if (fd < 0)
		return fd;
	if (fchmod(fd, 0644) < 0)
		return -errno;
	return TAKE_FD(fd);
}

static void write_all(FILE *f, const struct metrics *m, const struct keystore *ks,
		      unsigned inflight)
{
	write_counters(f, m, ks);
	write_latency(f, m);
	fprintf(f, "# HELP modsignd_requests_in_flight Sign requests queued or being signed.\n"
		   "# TYPE modsignd_requests_in_flight gauge\n"
		   "modsignd_requests_in_flight %u\n", inflight);
	write_keys(f, ks);
	write_backends(f, ks);
	write_tls(f, m);
}

static int write_file(const struct metrics *m, const struct keystore *ks, unsigned inflight)
{
	FILE *f;
	int fd, r = 0;

	fd = open_tmp(m);
	if (fd < 0)
		return fd;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlinkat(m->dirfd, m->tmp, 0);
		return -ENOMEM;
	}
	write_all(f, m, ks, inflight);
	if (ferror(f))
		r = -EIO;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && renameat(m->dirfd, m->tmp, m->dirfd, m->name) < 0)
		r = -errno;
	if (r < 0)
		unlinkat(m->dirfd, m->tmp, 0);
	return r;
}

int metrics_tick(struct metrics *m, const struct keystore *ks, unsigned inflight, bool force)
{
	if (!m || (!force && now_ms() - m->last_write_ms < METRICS_INTERVAL_MS))
		return 0;
	m->last_write_ms = now_ms();
	return write_file(m, ks, inflight);
}
