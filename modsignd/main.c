/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd: holds module-signing keys and signs module digests for
 * authorised clients.  See modsignd(8), modsignd.conf(5), docs/PROTOCOL.md.
 */
#include <errno.h>
#include <limits.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "audit.h"
#include "keyfile.h"
#include "keys.h"
#include "log.h"
#include "metrics.h"
#include "note.h"
#include "options.h"
#include "pkcs11.h"
#include "policy.h"
#include "secure.h"
#include "server.h"
#include "signals.h"
#include "tls.h"
#include "translog.h"
#include "util.h"

struct daemon {
	struct options opt;
	struct keystore keys;
	struct policy policy;
	struct audit *audit;
	struct metrics *metrics;
	struct stat audit_dir; /* the audit log's directory, if any */
	const char *audit_name; /* its name there; NULL: none */
	struct translog *translog;
	SSL_CTX *tls;
	struct server *server;
};

/* "NAME=..." as "NAME": a pkcs11: URI is not logged whole (it may hold a
 * refused PIN), and a key file's errors name the file themselves. */
static int key_label_len(const char *spec)
{
	return (int)strcspn(spec, strstr(spec, "=ephemeral") ? "" : "=");
}

/* --check-config: key files are read and checked as at start (mode, key,
 * certificate), without generating one-time keys or opening tokens. */
static int check_key_files(const struct options *o)
{
	char why[PATH_MAX + 128];
	size_t bad;
	int r = keystore_check(o->keys, o->n_keys, why, sizeof(why), &bad);

	if (r < 0)
		return log_error_errno(r, "key %.*s: %s: %m", key_label_len(o->keys[bad]),
				       o->keys[bad], why);
	return 0;
}

static int load_keys(struct daemon *d)
{
	const char *bad;

	d->keys.pkcs11 = (struct pkcs11_options){ .module = d->opt.pkcs11_module,
						  .pin_file = d->opt.pin_file };
	d->keys.certs = d->opt.certs;
	d->keys.n_certs = d->opt.n_certs;
	for (size_t i = 0; i < d->opt.n_keys; i++) {
		const char *err, *spec = d->opt.keys[i];
		struct key *k;
		int r = keystore_add(&d->keys, spec, &d->opt.gen, &err);

		if (r < 0)
			return log_error_errno(r, "key %.*s: %s%s%m", key_label_len(spec),
					       spec, err ?: "", err ? ": " : "");
		k = d->keys.keys[d->keys.n - 1];
		log_info("key %s: %s %s, key id %s, subject %s", k->name,
			 key_backend_name(k), k->alg.name, k->key_id, k->subject);
	}
	if (keystore_check_certs(&d->keys, &bad) < 0)
		return log_error_errno(-EINVAL, "cert %s: no PKCS#11 key of that name", bad);
	return 0;
}

/* The --tls-crl file, at start (@when NULL: a bad file stops the daemon)
 * or on SIGHUP (a bad file keeps the CRLs in force, and says so once). */
static int load_crl(struct daemon *d, const char *when)
{
	char why[PATH_MAX + 256];
	int r;

	if (!d->tls || !d->opt.tls.crl)
		return 0;
	r = tls_load_crl(d->tls, d->opt.tls.crl, why, sizeof(why));
	if (r < 0 && when)
		log_error("%s: keeping the CRLs in force: %s", when, why);
	if (r < 0)
		return when ? 0 : log_error_errno(r, "TLS: %s", why);
	if (r > 0)
		log_warning("TLS: %s: %d CRL(s) past their next update: the builders of "
			    "their CAs are refused until a fresh CRL is loaded", d->opt.tls.crl, r);
	log_info("TLS: client certificates checked against the CRLs of %s", d->opt.tls.crl);
	return 0;
}

/* SIGHUP: a new policy replaces the old one only if it parses whole, the
 * CRLs are re-read, and a token that was gone is looked for again at once. */
static int reload_policy(void *userdata)
{
	struct daemon *d = userdata;
	struct policy fresh = { 0 };
	int r;

	pkcs11_retry_now();
	load_crl(d, "SIGHUP");
	r = options_reload_allow(&d->opt, &fresh);

	if (r < 0) {
		policy_clear(&fresh);
		return r;
	}
	policy_move(&d->policy, &fresh);
	log_info("policy reloaded: %zu rule(s)", d->policy.n);
	return 0;
}

/* The log key: a one-time Ed25519 key, or a PEM file read as every key
 * file is (secret_file_open()'s checks), which must hold an Ed25519 key. */
static int log_key_load(const char *spec, EVP_PKEY **ret, char *why, size_t size)
{
	EVP_PKEY *k = NULL;
	int r;

	if (strcmp(spec, "ephemeral") == 0) {
		k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
		if (!k)
			return snprintf(why, size, "cannot make a one-time Ed25519 key"), -ENOMEM;
	} else {
		r = keyfile_read(spec, &k, NULL, why, size);
		if (r < 0)
			return r;
		if (EVP_PKEY_get_base_id(k) != EVP_PKEY_ED25519) {
			EVP_PKEY_free(k);
			return snprintf(why, size, "%s: not an Ed25519 key", spec), -EINVAL;
		}
	}
	*ret = k;
	return 0;
}

static int setup_translog(struct daemon *d)
{
	char why[PATH_MAX + 128] = "", host[256] = "", origin[300];
	const char *spec = d->opt.log_key;
	EVP_PKEY *key = NULL;
	int r;

	if (!d->opt.tlog_dir)
		return d->opt.log_key || d->opt.log_origin ?
			       log_error_errno(-EINVAL, "--log-key and --log-origin need --transparency-log") : 0;
	if (!spec)
		return log_error_errno(-EINVAL, "--transparency-log needs --log-key FILE or ephemeral");
	if (!d->opt.log_origin && gethostname(host, sizeof(host)) < 0)
		snprintf(host, sizeof(host), "localhost");
	host[sizeof(host) - 1] = '\0';
	snprintf(origin, sizeof(origin), "%s/modsign", host);
	if (!note_name_valid(d->opt.log_origin ?: origin))
		return log_error_errno(-EINVAL, "--log-origin '%s': a key name, without spaces or '+'",
				       d->opt.log_origin ?: origin);
	r = log_key_load(spec, &key, why, sizeof(why));
	if (r < 0)
		return log_error_errno(r, "log key: %s", why);
	if (d->opt.check_config) {
		EVP_PKEY_free(key);
		return 0;
	}
	r = translog_open(d->opt.tlog_dir, key, strcmp(spec, "ephemeral") == 0,
			  d->opt.log_origin ?: origin, &d->translog, why, sizeof(why));
	if (r < 0)
		return log_error_errno(r, "transparency log %s: %s", d->opt.tlog_dir, why);
	log_info("transparency log %s: %llu entries, verifier key %s", d->opt.tlog_dir,
		 (unsigned long long)translog_size(d->translog), translog_vkey(d->translog));
	return 0;
}

static bool wants_tls(const struct options *o)
{
	for (size_t i = 0; i < o->n_listen; i++)
		if (strncmp(o->listen[i], "tls:", 4) == 0)
			return true;
	return o->tls.cert != NULL;
}

static int setup_tls(struct daemon *d)
{
	char why[PATH_MAX + 128];
	int r;

	if (!wants_tls(&d->opt))
		return 0;
	r = tls_ctx_new(&d->opt.tls, &d->tls, why, sizeof(why));
	if (r < 0)
		return log_error_errno(r, "TLS: %s", why);
	if (!tls_own_cert_clients_take(d->tls))
		log_warning("TLS: %s: modsign-client refuses it: it needs a subjectAltName, "
			    "serverAuth and no CA:TRUE (docs/BUILD-FARM.md, \"Certificates "
			    "issued before the usage checks\")", d->opt.tls.cert);
	return load_crl(d, NULL);
}

static int open_one(struct server *s, const char *a)
{
	int r;

	if (strncmp(a, "unix:", 5) == 0 && a[5])
		r = server_listen_unix(s, a + 5);
	else if (strncmp(a, "tls:", 4) == 0 && a[4])
		r = server_listen_tls(s, a + 4);
	else
		return log_error_errno(-EINVAL, "listen %s: expected unix:PATH or tls:HOST:PORT", a);
	if (r < 0)
		return log_error_errno(r, "listen %s: %m", a);
	log_info("listening on %s", a);
	return 0;
}

static int open_listeners(struct daemon *d)
{
	int n = server_adopt_systemd(d->server), r = 0;

	if (n < 0)
		return log_error_errno(n, "sockets from systemd: %m");
	if (n > 0)
		log_info("using %d socket(s) from systemd", n);
	for (size_t i = 0; i < d->opt.n_listen && r >= 0; i++)
		r = open_one(d->server, d->opt.listen[i]);
	if (r >= 0 && n == 0 && d->opt.n_listen == 0)
		r = open_one(d->server, "unix:" OPTIONS_DEFAULT_SOCKET);
	return r;
}

/* The directory of a file the daemon writes (the audit log, the metrics
 * file), opened once, here, and used by descriptor from then on: one line
 * "DIR: why" when it is not the daemon's own or others may write it. */
static int open_file_dir(const char *file, const char **ret_name, struct stat *ret_st)
{
	_cleanup_(freep) char *dir = NULL;
	struct stat st;
	const char *why;
	int fd = private_dir_of(file, &dir, ret_name, &st);

	if (fd >= 0) {
		if (ret_st)
			*ret_st = st;
		return fd;
	}
	if (!dir || fd == -EISDIR)
		return log_error_errno(fd, "%s: %m", file);
	/* Links on this path are followed (private_dir_of()): not
	 * private_dir_refusal()'s "a symbolic link is not followed". */
	if (fd == -ENOTDIR)
		return log_error_errno(fd, "%s: not a directory", dir);
	why = private_dir_refusal(fd, &st);
	if (why)
		return log_error_errno(fd, "%s: %s", dir, why);
	return log_error_errno(fd, "%s: %m", dir);
}

static int setup_audit(struct daemon *d)
{
	const char *name = NULL, *why;
	int dirfd = -1, r;

	if (d->opt.audit_log &&
	    (dirfd = open_file_dir(d->opt.audit_log, &name, &d->audit_dir)) < 0)
		return dirfd;
	r = audit_new(dirfd, name, &d->audit);
	if (r >= 0) {
		d->audit_name = name;
		return 0;
	}
	if (dirfd >= 0)
		close(dirfd);
	why = audit_file_refusal(r);
	if (why)
		return log_error_errno(r, "audit log %s: %s", d->opt.audit_log, why);
	return log_error_errno(r, "audit log %s: %m", d->opt.audit_log);
}

/* Whether the metrics file @name (rewritten by rename every 5 s) or its
 * temporary NAME.tmp (unlinked first) would be the audit log @audit or
 * one of its rotations (AUDIT.1, AUDIT.1.gz, ...), in one directory. */
static bool metrics_clobbers_audit(const char *name, const char *audit)
{
	size_t n = strlen(name), a = strlen(audit);

	if (strncmp(name, audit, a) == 0 && (name[a] == '\0' || name[a] == '.'))
		return true;
	return a == n + 4 && strncmp(audit, name, n) == 0 && strcmp(audit + n, ".tmp") == 0;
}

static int setup_metrics(struct daemon *d)
{
	const char *name = NULL;
	struct stat st;
	int dirfd, r;

	if (!d->opt.metrics_file)
		return 0;
	dirfd = open_file_dir(d->opt.metrics_file, &name, &st);
	if (dirfd < 0)
		return dirfd;
	if (d->audit_name && st.st_dev == d->audit_dir.st_dev && st.st_ino == d->audit_dir.st_ino &&
	    metrics_clobbers_audit(name, d->audit_name)) {
		close(dirfd);
		return log_error_errno(-EEXIST, "metrics file %s: it would replace the audit log %s",
				       d->opt.metrics_file, d->opt.audit_log);
	}
	r = metrics_new(dirfd, name, &d->metrics);
	if (r < 0) {
		close(dirfd);
		return log_error_errno(r, "metrics file %s: %m", d->opt.metrics_file);
	}
	return 0;
}

static int setup(struct daemon *d)
{
	int r;

	if (!d->opt.server.workers) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		d->opt.server.workers = ncpu > 0 && ncpu <= 256 ? (unsigned)ncpu : 1;
	}
	r = options_reload_allow(&d->opt, &d->policy);
	if (r >= 0)
		r = setup_tls(d);
	/* Not for --check-config: run by the operator, not as the daemon's
	 * user (a dynamic one), it would find their directories another
	 * user's, or not yet made (the unit makes them at start), and would
	 * create the audit log as itself. */
	if (r >= 0 && !d->opt.check_config)
		r = setup_audit(d);
	if (r >= 0 && !d->opt.check_config)
		r = setup_metrics(d);
	if (r >= 0)
		r = setup_translog(d);
	if (r >= 0)
		r = d->opt.check_config ? check_key_files(&d->opt) : load_keys(d);
	return r;
}

static int serve(struct daemon *d)
{
	struct server_config cfg = d->opt.server;
	int r;

	cfg.tls = d->tls;
	cfg.audit_log = d->opt.audit_log;
	cfg.metrics_file = d->opt.metrics_file;
	cfg.metrics = d->metrics;
	cfg.reload = reload_policy;
	cfg.userdata = d;
	r = server_new(&cfg, &d->keys, &d->policy, d->audit, &d->server);
	if (r < 0)
		return log_error_errno(r, "cannot start the server: %m");
	if (d->translog) {
		r = server_set_translog(d->server, d->translog);
		if (r < 0)
			return log_error_errno(r, "cannot start the transparency log's thread: %m");
	}
	r = open_listeners(d);
	if (r < 0)
		return r;
	log_info("ready: %zu key(s), %u signing thread(s)", d->keys.n, cfg.workers);
	sd_notifyf(0, "READY=1\nSTATUS=serving %zu key(s)", d->keys.n);
	return server_run(d->server);
}

int main(int argc, char **argv)
{
	struct daemon d = { 0 };
	const char *step;
	bool locked = false;
	int r;

	log_setup();
	/* First: a thread a library starts from here on inherits the mask. */
	r = signals_block();
	if (r < 0)
		return log_error_errno(r, "cannot block signals: %m"), 1;
	r = secure_process(&step, &locked);
	if (r < 0 && step && strcmp(step, "mlockall") == 0)
		return log_error_errno(r, "cannot lock memory against swap (mlockall: %m): "
				       "raise RLIMIT_MEMLOCK (LimitMEMLOCK=) or grant CAP_IPC_LOCK"), 1;
	if (r < 0)
		return log_error_errno(r, "cannot harden the process: %s: %m", step ?: "?"), 1;
	r = options_parse(argc, argv, &d.opt);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (!locked)
		log_warning("OpenSSL secure heap unavailable: private key numbers share the ordinary heap");
	r = setup(&d);
	if (r >= 0 && d.opt.check_config)
		printf("%s: OK\n", d.opt.config ?: "settings");
	else if (r >= 0)
		r = serve(&d);
	server_free(d.server);
	keystore_clear(&d.keys); /* one-time keys are destroyed here */
	policy_clear(&d.policy);
	audit_free(d.audit);
	metrics_free(d.metrics);
	translog_free(d.translog);
	SSL_CTX_free(d.tls);
	options_free(&d.opt);
	if (r >= 0 && !d.opt.check_config)
		log_info("stopped; one-time keys destroyed");
	return r < 0 ? 1 : 0;
}
