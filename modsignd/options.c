/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admission.h"
#include "conf.h"
#include "log.h"
#include "options.h"
#include "util.h"

enum {
	OPT_CONFIG = 256, OPT_CHECK, OPT_LISTEN, OPT_KEY, OPT_ALLOW, OPT_CERT,
	OPT_PIN_FILE, OPT_PKCS11_MODULE, OPT_AUDIT_LOG, OPT_ORG, OPT_CN, OPT_EMAIL,
	OPT_DAYS, OPT_TEMPLATE, OPT_TLS_CERT, OPT_TLS_KEY, OPT_TLS_CA, OPT_TLS_CRL, OPT_WORKERS,
	OPT_MAXCONN, OPT_MAXCONN_SRC, OPT_MAXCONN_ID, OPT_MAXHS, OPT_MAXHS_SRC,
	OPT_HS_RATE, OPT_HS_BURST, OPT_HS_TIMEOUT, OPT_IDLE_TIMEOUT,
	OPT_MODE, OPT_METRICS, OPT_TLOG, OPT_LOG_KEY, OPT_LOG_ORIGIN, OPT_VERSION, OPT_HELP, OPT_END_
};
_Static_assert(OPT_END_ - OPT_CONFIG <= OPTIONS_MAX_IDS, "OPTIONS_MAX_IDS too small");

static const struct optdef {
	const char *name;
	int id;
	const char *arg; /* NULL: a flag */
	const char *help;
} optdefs[] = {
	{ "config", OPT_CONFIG, "FILE", "read settings from FILE (modsignd.conf(5))" },
	{ "check-config", OPT_CHECK, NULL, "validate the settings and exit" },
	{ "listen", OPT_LISTEN, "ADDR", "unix:PATH or tls:HOST:PORT (repeatable; default unix:" OPTIONS_DEFAULT_SOCKET ")" },
	{ "key", OPT_KEY, "NAME=SRC", "ephemeral[:ALG], a PEM file, or a pkcs11: URI (repeatable)" },
	{ "allow", OPT_ALLOW, "RULE", "IDENTITY[=KEY,...]: uid:N gid:N user:NAME group:NAME [PIN/...]cn:NAME (repeatable)" },
	{ "cert", OPT_CERT, "NAME=PATH", "certificate for a token key that has none on the token" },
	{ "pin-file", OPT_PIN_FILE, "FILE", "PKCS#11 PIN (mode 0600 or stricter)" },
	{ "pkcs11-module", OPT_PKCS11_MODULE, "PATH", "PKCS#11 module (default: p11-kit proxy)" },
	{ "audit-log", OPT_AUDIT_LOG, "FILE", "append a JSON line per request, synced before replying" },
	{ "organization", OPT_ORG, "TEXT", "O= of generated certificates" },
	{ "common-name", OPT_CN, "TEXT", "CN= of generated certificates" },
	{ "email", OPT_EMAIL, "TEXT", "emailAddress= of generated certificates" },
	{ "days", OPT_DAYS, "N", "validity of generated certificates (default 36500)" },
	{ "genkey-template", OPT_TEMPLATE, "FILE", "certificate template (default: built-in x509.genkey.in)" },
	{ "tls-cert", OPT_TLS_CERT, "FILE", "server certificate for tls: listeners" },
	{ "tls-key", OPT_TLS_KEY, "FILE", "its private key" },
	{ "tls-client-ca", OPT_TLS_CA, "FILE", "CA that client certificates must chain to" },
	{ "tls-crl", OPT_TLS_CRL, "FILE", "PEM CRLs of those CAs, checked for every client (re-read on SIGHUP)" },
	{ "workers", OPT_WORKERS, "N", "signing threads (default: number of CPUs)" },
	{ "max-connections", OPT_MAXCONN, "N", "concurrent connections (default 256; a quarter kept for unix:)" },
	{ "max-connections-per-source", OPT_MAXCONN_SRC, "N", "of the TLS ones, from one address or IPv6 /64 (default: 3/4 of them)" },
	{ "max-connections-per-identity", OPT_MAXCONN_ID, "N", "of the TLS ones, under one cn: (default: 3/4 of them)" },
	{ "max-handshakes", OPT_MAXHS, "N", "TLS handshakes in progress per listener (default 128)" },
	{ "max-handshakes-per-source", OPT_MAXHS_SRC, "N", "TLS key exchanges one address or IPv6 /64 runs at once; more wait (default 32)" },
	{ "handshake-rate", OPT_HS_RATE, "N", "TLS handshakes a source may start a second; more wait (default 50)" },
	{ "handshake-burst", OPT_HS_BURST, "N", "of which at once (default 100)" },
	{ "handshake-timeout", OPT_HS_TIMEOUT, "SECS", "time a TLS handshake may take (default 10)" },
	{ "idle-timeout", OPT_IDLE_TIMEOUT, "SECS", "close connections idle this long (default 60)" },
	{ "socket-mode", OPT_MODE, "MODE", "mode of created socket files (default 0660)" },
	{ "metrics-file", OPT_METRICS, "FILE", "Prometheus text counters, rewritten every 5 s (node_exporter textfile)" },
	{ "transparency-log", OPT_TLOG, "DIR", "record each signature in a C2SP tiled Merkle log in DIR" },
	{ "log-key", OPT_LOG_KEY, "FILE", "Ed25519 PEM key (mode 0600) that signs its checkpoints, or ephemeral" },
	{ "log-origin", OPT_LOG_ORIGIN, "NAME", "its checkpoints' origin line (default HOSTNAME/modsign)" },
	{ "version", OPT_VERSION, NULL, "print the version" },
	{ "help", OPT_HELP, NULL, "print this help" },
};

static void help(void)
{
	printf("Usage: modsignd [OPTIONS]\n"
	       "Hold kernel module signing keys and sign module digests for authorised clients.\n\n");
	for (size_t i = 0; i < ELEMENTSOF(optdefs); i++) {
		char lhs[48];

		snprintf(lhs, sizeof(lhs), "--%s%s%s", optdefs[i].name,
			 optdefs[i].arg ? " " : "", optdefs[i].arg ?: "");
		printf("  %-31s %s\n", lhs, optdefs[i].help);
	}
}

static int push(const char **list, size_t *n, size_t max, const char *v)
{
	if (*n >= max)
		return log_error_errno(-E2BIG, "too many values for a repeatable option");
	list[(*n)++] = v;
	return 0;
}

static int number(const char *name, const char *v, unsigned long max, unsigned *ret)
{
	unsigned long n;

	if (parse_uint(v, max, &n) < 0 || n == 0)
		return log_error_errno(-EINVAL, "%s: '%s' is not a number from 1 to %lu",
				       name, v, max);
	*ret = (unsigned)n;
	return 0;
}

static int socket_mode(const char *v, mode_t *ret)
{
	char *end;
	unsigned long mode = strtoul(v, &end, 8);

	if (!*v || *end || mode > 0777)
		return log_error_errno(-EINVAL, "socket-mode: '%s' is not an octal mode", v);
	*ret = (mode_t)mode;
	return 0;
}

static bool repeatable(int id)
{
	return id == OPT_LISTEN || id == OPT_KEY || id == OPT_ALLOW || id == OPT_CERT;
}

static const char *opt_name(int id)
{
	for (size_t i = 0; i < ELEMENTSOF(optdefs); i++)
		if (optdefs[i].id == id)
			return optdefs[i].name;
	return "?";
}

/*
 * Note that single-valued option @id is set @at (a line of the file, or
 * OPTIONS_SET_ON_CLI).  Twice in one place is refused: the last would win
 * without a word, and which of two audit logs or keys is in force should
 * not depend on line order.  The command line overriding the file is the
 * documented way to change one setting for one run.
 */
static int note_set(struct options *o, int id, unsigned at)
{
	unsigned *prev = &o->set_at[id - OPT_CONFIG];

	if (repeatable(id) || id == OPT_CHECK)
		return 0;
	if (*prev && at == OPTIONS_SET_ON_CLI && *prev == OPTIONS_SET_ON_CLI)
		return log_error_errno(-EINVAL, "--%s given twice on the command line; "
					  "it takes one value", opt_name(id));
	if (*prev && at != OPTIONS_SET_ON_CLI)
		return log_error_errno(-EINVAL, "%s:%u: '%s' given twice (first on line %u); "
					  "it takes one value", o->config, at, opt_name(id), *prev);
	*prev = at;
	return 0;
}

/* Apply one setting; @v must live as long as @o. */
static int apply(struct options *o, int id, const char *v)
{
	switch (id) {
	case OPT_CONFIG: o->config = v; return 0;
	case OPT_CHECK: o->check_config = true; return 0;
	case OPT_LISTEN: return push(o->listen, &o->n_listen, OPTIONS_MAX_LIST, v);
	case OPT_KEY: return push(o->keys, &o->n_keys, OPTIONS_MAX_LIST, v);
	case OPT_ALLOW: return push(o->allow, &o->n_allow, POLICY_MAX_RULES, v);
	case OPT_CERT: return push(o->certs, &o->n_certs, OPTIONS_MAX_LIST, v);
	case OPT_PIN_FILE: o->pin_file = v; return 0;
	case OPT_PKCS11_MODULE: o->pkcs11_module = v; return 0;
	case OPT_AUDIT_LOG: o->audit_log = v; return 0;
	case OPT_METRICS: o->metrics_file = v; return 0;
	case OPT_TLOG: o->tlog_dir = v; return 0;
	case OPT_LOG_KEY: o->log_key = v; return 0;
	case OPT_LOG_ORIGIN: o->log_origin = v; return 0;
	case OPT_ORG: o->gen.organization = v; return 0;
	case OPT_CN: o->gen.common_name = v; return 0;
	case OPT_EMAIL: o->gen.email = v; return 0;
	case OPT_TEMPLATE: o->gen.template_path = v; return 0;
	case OPT_DAYS: return number("days", v, 36500 * 2, &o->gen.days);
	case OPT_TLS_CERT: o->tls.cert = v; return 0;
	case OPT_TLS_KEY: o->tls.key = v; return 0;
	case OPT_TLS_CA: o->tls.client_ca = v; return 0;
	case OPT_TLS_CRL: o->tls.crl = v; return 0;
	case OPT_WORKERS: return number("workers", v, 256, &o->server.workers);
	case OPT_MAXCONN: return number("max-connections", v, 65536, &o->server.max_conns);
	case OPT_MAXCONN_SRC:
		return number("max-connections-per-source", v, 65536,
			      &o->server.max_conns_per_source);
	case OPT_MAXCONN_ID:
		return number("max-connections-per-identity", v, 65536,
			      &o->server.max_conns_per_identity);
	case OPT_HS_RATE: return number("handshake-rate", v, 100000, &o->server.handshake_rate);
	case OPT_HS_BURST: return number("handshake-burst", v, 100000, &o->server.handshake_burst);
	case OPT_MAXHS: return number("max-handshakes", v, 65536, &o->server.max_handshakes);
	case OPT_MAXHS_SRC:
		return number("max-handshakes-per-source", v, 65536,
			      &o->server.max_handshakes_per_source);
	case OPT_HS_TIMEOUT:
		return number("handshake-timeout", v, 3600, &o->server.handshake_timeout);
	case OPT_IDLE_TIMEOUT:
		return number("idle-timeout", v, 86400, &o->server.idle_timeout);
	case OPT_MODE: return socket_mode(v, &o->server.socket_mode);
	}
	return -EINVAL;
}

static const struct optdef *lookup(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(optdefs); i++)
		if (strcmp(optdefs[i].name, name) == 0)
			return &optdefs[i];
	return NULL;
}

struct conf_ctx {
	struct options *o;
	bool allow_only;
	const unsigned *line; /* conf_parse()'s, during a callback */
};

static int conf_setting(const char *key, const char *value, void *userdata)
{
	struct conf_ctx *ctx = userdata;
	struct options *o = ctx->o;
	const struct optdef *d = lookup(key);
	char *copy;

	if (!d || d->id == OPT_CONFIG || d->id == OPT_CHECK || d->id == OPT_HELP ||
	    d->id == OPT_VERSION)
		return log_error_errno(-ENOENT, "%s: unknown setting '%s'", o->config, key);
	if (d->arg && !*value)
		return log_error_errno(-EINVAL, "%s: '%s' needs a value", o->config, key);
	if (note_set(o, d->id, *ctx->line) < 0)
		return -EINVAL;
	if (o->n_strings >= ELEMENTSOF(o->strings) || !(copy = strdup(value)))
		return -ENOMEM;
	o->string_ids[o->n_strings] = d->id;
	o->strings[o->n_strings++] = copy;
	/* On reload the rest is only kept, to be compared with the start's. */
	if (ctx->allow_only && d->id != OPT_ALLOW)
		return 0;
	return apply(o, d->id, copy);
}

static int read_config(struct options *o, bool allow_only)
{
	unsigned line = 0;
	struct conf_ctx ctx = { .o = o, .allow_only = allow_only, .line = &line };
	int r;

	r = conf_parse(o->config, conf_setting, &ctx, &line);
	if (r == -EBADMSG)
		return log_error_errno(r, "%s:%u: expected 'key = value'", o->config, line);
	if (r < 0 && line == 0)
		return log_error_errno(r, "%s: %m", o->config);
	return r;
}

static void defaults(struct options *o)
{
	*o = (struct options){
		.gen = { .organization = "", .common_name = "modsignd one-time key",
			 .email = "", .days = 36500 },
		.server = { .max_conns = SERVER_DEFAULT_MAX_CONNS,
			    .max_handshakes = SERVER_DEFAULT_MAX_HANDSHAKES,
			    .max_handshakes_per_source = SERVER_DEFAULT_MAX_HANDSHAKES_PER_SOURCE,
			    .handshake_timeout = SERVER_DEFAULT_HANDSHAKE_TIMEOUT,
			    .handshake_rate = ADMISSION_DEFAULT_RATE,
			    .handshake_burst = ADMISSION_DEFAULT_BURST,
			    .idle_timeout = SERVER_DEFAULT_IDLE_TIMEOUT,
			    .socket_mode = 0660 },
	};
}

/* The command line, in two passes: --config and --check-config first
 * (the file is read before the other options apply), then the rest. */
static int parse_cli(int argc, char **argv, struct options *o, bool early)
{
	struct option longopts[ELEMENTSOF(optdefs) + 1] = { 0 };
	int c;

	for (size_t i = 0; i < ELEMENTSOF(optdefs); i++)
		longopts[i] = (struct option){ optdefs[i].name,
					       optdefs[i].arg ? required_argument : no_argument,
					       NULL, optdefs[i].id };
	optind = 1;
	opterr = !early;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == '?') {
			if (early)
				continue;
			return -EINVAL;
		}
		if (early != (c == OPT_CONFIG || c == OPT_CHECK))
			continue;
		if (c == OPT_HELP || c == OPT_VERSION) {
			if (c == OPT_HELP)
				help();
			else
				printf("modsignd %s\n", MODSIGN_VERSION);
			return 1;
		}
		if (note_set(o, c, OPTIONS_SET_ON_CLI) < 0 || apply(o, c, optarg) < 0)
			return -EINVAL;
	}
	if (!early && optind < argc)
		return log_error_errno(-EINVAL, "unexpected argument '%s'", argv[optind]);
	return 0;
}

int options_parse(int argc, char **argv, struct options *o)
{
	int r;

	defaults(o);
	r = parse_cli(argc, argv, o, true);
	if (r != 0)
		return r;
	if (!o->config && o->check_config)
		o->config = OPTIONS_DEFAULT_CONFIG;
	if (o->config && (r = read_config(o, false)) < 0)
		return r;
	o->n_allow_conf = o->n_allow;
	r = parse_cli(argc, argv, o, false);
	if (r != 0)
		return r;
	if (o->n_keys == 0)
		return log_error_errno(-EINVAL, "no keys: give at least one --key");
	return 0;
}

static int add_rules(struct policy *p, const char *const *rules, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int r = policy_add(p, rules[i]);

		if (r == -EINVAL)
			return log_error_errno(r, "allow %s: expected IDENTITY[=KEY,...] with "
						  "uid:N, gid:N, user:NAME, group:NAME or [PIN/...]cn:NAME "
						  "(pins: sha256:HEX, issuer-sha256:HEX, serial:HEX with "
						  "issuer-sha256:)",
					       rules[i]);
		if (r == -EDOM)
			return log_error_errno(r, "allow %s: a rule names the certificate's name as "
						  "it is, not quoted as the log shows it: cn:NAME "
						  "without the quotes", rules[i]);
		if (r < 0)
			return log_error_errno(r, "allow %s: %m", rules[i]);
	}
	return 0;
}

/* Whether option @id has the same values, in the same order, in both. */
static bool same_values(const struct options *a, const struct options *b, int id)
{
	size_t i = 0, j = 0;

	for (;;) {
		while (i < a->n_strings && a->string_ids[i] != id)
			i++;
		while (j < b->n_strings && b->string_ids[j] != id)
			j++;
		if (i == a->n_strings || j == b->n_strings)
			return i == a->n_strings && j == b->n_strings;
		if (strcmp(a->strings[i++], b->strings[j++]) != 0)
			return false;
	}
}

/* SIGHUP applies the allow rules only: say which other settings of the
 * file changed, so that an edited key or audit-log is not believed live. */
static void warn_not_applied(const struct options *old, const struct options *fresh)
{
	char names[512] = "";
	size_t len = 0;

	for (size_t i = 0; i < ELEMENTSOF(optdefs); i++) {
		int id = optdefs[i].id;

		if (id == OPT_ALLOW || same_values(old, fresh, id) ||
		    len >= sizeof(names) - 1) /* names are short: never cut, in practice */
			continue;
		len += (size_t)snprintf(names + len, sizeof(names) - len, "%s%s",
					len ? ", " : "", optdefs[i].name);
	}
	if (len)
		log_warning("SIGHUP: %s: changed %s: not applied until modsignd restarts "
			    "(a reload applies the allow rules, re-reads the tls-crl file and reopens the audit log)",
			    old->config, names);
}

int options_reload_allow(const struct options *o, struct policy *ret)
{
	struct options fresh;
	int r = 0;

	defaults(&fresh);
	fresh.config = o->config;
	if (fresh.config)
		r = read_config(&fresh, true);
	if (r >= 0 && fresh.config)
		warn_not_applied(o, &fresh);
	if (r >= 0)
		r = add_rules(ret, fresh.allow, fresh.n_allow);
	if (r >= 0)
		r = add_rules(ret, o->allow + o->n_allow_conf, o->n_allow - o->n_allow_conf);
	if (r >= 0 && ret->n == 0)
		policy_default(ret);
	options_free(&fresh);
	return r;
}

void options_free(struct options *o)
{
	for (size_t i = 0; i < o->n_strings; i++)
		free(o->strings[i]);
	o->n_strings = 0;
}
