/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client's shared part: the global options, which come before
 * the command as in git, the environment and the config file behind
 * them; the connection they describe; the one-line messages.  main.c
 * runs the command they precede.
 */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "client.h"
#include "conf.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: modsign-client [--server ADDR]... COMMAND [ARGS]\n\n"
		"Commands:\n"
		"  status                       show the daemon and its keys\n"
		"  cert [--key NAME] [--der]    print a key's certificate\n"
		"  sign [--key NAME] [--cert CERT] [--hash sha256|sha384|sha512] [--keyid]\n"
		"       [--detached DIR [--suffix .p7s|.sig]] [--recursive DIR] [--stdin] FILE...\n"
		"                               sign modules in place (re-signs signed ones),\n"
		"                               or into a signature tree DIR, modules untouched;\n"
		"                               FILE '-' reads paths from stdin\n"
		"  attach --from DIR --cert CERT [--suffix SUF] [--recursive DIR] [--stdin] FILE...\n"
		"                               append signatures from a tree, each verified first\n"
		"  verify [--cert CERT | --key NAME] FILE...\n"
		"                               check signatures by the kernel's rules\n"
		"  strip FILE...                remove signatures\n"
		"  sign-file [-dpk] HASH KEY X509 MODULE [DEST]\n"
		"  sign-file -s SIG HASH X509 MODULE [DEST]\n"
		"  sign-file --batch [-dpk] HASH KEY X509 < MODULES\n"
		"                               scripts/sign-file drop-in (KEY: modsign:NAME)\n\n"
		"Global options (also $MODSIGN_SERVER, $MODSIGN_TLS_CA, $MODSIGN_TLS_CERT,\n"
		"$MODSIGN_TLS_KEY, and the config file $MODSIGN_CONFIG, ~/.config/modsign/client.conf\n"
		"or " CLIENT_SYSTEM_CONFIG "):\n"
		"  --server ADDR    unix:PATH or tls:HOST:PORT (repeatable; default\n"
		"                   " CONN_DEFAULT_SERVER "); a batch spreads over every\n"
		"                   server that answers, and every address of a name\n"
		"  --stall-timeout SECS  a batch moves the requests of a server silent\n"
		"                   this long to the others (default 10; $MODSIGN_STALL_TIMEOUT)\n"
		"  --tls-ca FILE    CA that signed the servers' certificates\n"
		"  --tls-cert FILE  our client certificate; --tls-key FILE its key\n");
}

/* One line whatever the names in it: a file name is anyone's who can
 * create one in a tree we walk, so its control bytes (a newline, an ESC
 * sequence) are shown as \xHH, never passed to the terminal or the log. */
void warn_msg(const char *fmt, ...)
{
	_cleanup_(freep) char *msg = NULL;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	fputs("modsign-client: ", stderr);
	for (const char *p = n < 0 ? "out of memory" : msg; *p; p++) {
		unsigned char ch = (unsigned char)*p;

		if (ch < 0x20 || ch == 0x7f)
			fprintf(stderr, "\\x%02x", ch);
		else
			fputc(ch, stderr);
	}
	fputc('\n', stderr);
}

void warn_cert(const char *path, int r)
{
	warn_msg("%s: cannot read certificate: %s", path,
		 r == -EBADMSG ? "no PEM or DER certificate" : strerror(-r));
}

void warn_write(const char *path, int r, const char *why)
{
	if (r == -ESTALE)
		warn_msg("%s: changed while being signed", path);
	else
		warn_msg("%s: %s%s%s", path, why ?: "", why ? ": " : "", strerror(-r));
}

int client_connect(const struct global *g, struct conn **ret)
{
	char err[512];
	size_t which = 0;
	int r;

	r = conn_open(g->servers, g->n_servers, &g->tls, ret, &which, err, sizeof(err));
	if (r < 0)
		warn_msg("%s", err);
	else if (which > 0) /* failed over: say where the signatures come from */
		warn_msg("%s did not answer; using %s", g->servers[0], g->servers[which]);
	return r;
}

/* Where kbuild's call for one module starts: FNV-1a of its path. */
static size_t spread_start(const char *spread, size_t n)
{
	uint32_t h = 2166136261u;

	for (const char *s = spread; s && *s; s++)
		h = (h ^ (uint8_t)*s) * 16777619u;
	return n ? h % n : 0;
}

int client_connect_spread(const struct global *g, const char *spread, struct conn **ret)
{
	_cleanup_(freep) struct conn_target *t = NULL;
	const char *why = NULL;
	size_t nt = 0, first;
	int r;

	r = conn_targets(g->servers, g->n_servers, &t, &nt);
	if (r < 0 || nt == 0) {
		warn_msg("%s", r < 0 ? strerror(-r) : "no server given");
		return r < 0 ? r : -EINVAL;
	}
	first = spread_start(spread, nt);
	for (size_t k = 0; k < nt; k++) {
		size_t i = (first + k) % nt;

		r = conn_open_target(&t[i], &g->tls, g->stall_ms, ret, &why);
		if (r >= 0) {
			if (k > 0)
				warn_msg("%s did not answer; using %s", t[first].label,
					 t[i].label);
			return 0;
		}
		if (nt == 1 || k + 1 == nt)
			warn_msg("cannot connect to modsignd at %s: %s", t[i].label,
				 why ?: strerror(-r));
	}
	return r;
}

static const char *keep(struct global *g, const char *v)
{
	char *copy;

	if (g->n_strings >= ELEMENTSOF(g->strings) || !(copy = strdup(v)))
		return NULL;
	g->strings[g->n_strings++] = copy;
	return copy;
}

/* Seconds, fractions allowed: 0.5 for tests, 10 by default. */
static int parse_stall(struct global *g, const char *v)
{
	char *end;
	double s;

	errno = 0;
	s = strtod(v, &end);
	if (errno || end == v || *end || !(s >= 0.05 && s <= 3600))
		return -EINVAL;
	g->stall_ms = (unsigned)(s * 1000);
	return 0;
}

/* Settings the command line did not give, from one config file. */
static int conf_setting(const char *key, const char *value, void *userdata)
{
	struct global *g = userdata;

	if (strcmp(key, "server") == 0) {
		if (g->n_servers >= CONN_MAX_SERVERS)
			return -E2BIG;
		g->servers[g->n_servers++] = keep(g, value);
	} else if (strcmp(key, "tls-ca") == 0)
		g->tls.ca = g->tls.ca ?: keep(g, value);
	else if (strcmp(key, "tls-cert") == 0)
		g->tls.cert = g->tls.cert ?: keep(g, value);
	else if (strcmp(key, "tls-key") == 0)
		g->tls.key = g->tls.key ?: keep(g, value);
	else if (strcmp(key, "cert") == 0)
		g->cert = g->cert ?: keep(g, value);
	else if (strcmp(key, "stall-timeout") == 0)
		return g->stall_ms ? 0 : parse_stall(g, value);
	else
		return -ENOENT;
	return 0;
}

static int read_config(struct global *g, bool have_servers)
{
	const char *env = getenv("MODSIGN_CONFIG"), *home = getenv("HOME");
	char path[4096] = CLIENT_SYSTEM_CONFIG;
	size_t n_servers = g->n_servers;
	unsigned line;
	int r;

	if (env && *env)
		snprintf(path, sizeof(path), "%s", env);
	else if (home && *home) {
		snprintf(path, sizeof(path), "%s/.config/modsign/client.conf", home);
		if (access(path, F_OK) < 0)
			snprintf(path, sizeof(path), "%s", CLIENT_SYSTEM_CONFIG);
	}
	r = conf_parse(path, conf_setting, g, &line);
	if (r == -ENOENT && line == 0 && !env)
		return 0; /* no config file is fine */
	if (r < 0) {
		warn_msg("%s%s%u: %s", path, line ? ":" : "", line,
			 r == -ENOENT ? "unknown setting" : strerror(-r));
		return r;
	}
	if (have_servers)
		g->n_servers = n_servers; /* the command line's list wins */
	return 0;
}

static int from_env(struct global *g)
{
	const char *v;

	if (!g->tls.ca && (v = getenv("MODSIGN_TLS_CA")) && *v)
		g->tls.ca = v;
	if (!g->tls.cert && (v = getenv("MODSIGN_TLS_CERT")) && *v)
		g->tls.cert = v;
	if (!g->tls.key && (v = getenv("MODSIGN_TLS_KEY")) && *v)
		g->tls.key = v;
	if (g->n_servers == 0 && (v = getenv("MODSIGN_SERVER")) && *v)
		g->servers[g->n_servers++] = v;
	if (!g->stall_ms && (v = getenv("MODSIGN_STALL_TIMEOUT")) && *v &&
	    parse_stall(g, v) < 0) {
		warn_msg("MODSIGN_STALL_TIMEOUT='%s': expected seconds, 0.05 to 3600", v);
		return -EINVAL;
	}
	return 0;
}

static const char **global_slot(struct global *g, const char *opt)
{
	if (strcmp(opt, "--tls-ca") == 0)
		return &g->tls.ca;
	if (strcmp(opt, "--tls-cert") == 0)
		return &g->tls.cert;
	if (strcmp(opt, "--tls-key") == 0)
		return &g->tls.key;
	return NULL;
}

static int parse_global(int argc, char **argv, struct global *g, int *ret_ind)
{
	int i, r;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char **slot;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("modsign-client %s\n", MODSIGN_VERSION);
			exit(0);
		}
		if (i + 1 >= argc) {
			warn_msg("option '%s' needs a value", argv[i]);
			return -EINVAL;
		}
		if (strcmp(argv[i], "--server") == 0) {
			if (g->n_servers >= CONN_MAX_SERVERS) {
				warn_msg("too many --server options");
				return -E2BIG;
			}
			g->servers[g->n_servers++] = argv[++i];
		} else if (strcmp(argv[i], "--stall-timeout") == 0) {
			if (parse_stall(g, argv[++i]) < 0) {
				warn_msg("--stall-timeout '%s': expected seconds, 0.05 to 3600",
					 argv[i]);
				return -EINVAL;
			}
		} else if ((slot = global_slot(g, argv[i]))) {
			*slot = argv[++i];
		} else {
			warn_msg("unknown global option '%s'", argv[i]);
			return -EINVAL;
		}
	}
	r = from_env(g);
	if (r < 0)
		return r;
	r = read_config(g, g->n_servers > 0);
	if (r < 0)
		return r;
	if (g->n_servers == 0)
		g->servers[g->n_servers++] = CONN_DEFAULT_SERVER;
	if (!g->stall_ms)
		g->stall_ms = CLIENT_STALL_DEFAULT_MS;
	*ret_ind = i;
	return 0;
}

int client_parse(struct global *g, int argc, char **argv, const char **ret_cmd,
		 int *ret_ind)
{
	int ind, r;

	/* Installed as scripts/sign-file, behave as it. */
	if (strcmp(basename(argv[0]), "sign-file") == 0) {
		r = parse_global(1, argv, g, &ind);
		if (r < 0)
			return r;
		*ret_cmd = "sign-file";
		*ret_ind = 0;
		return 0;
	}
	r = parse_global(argc, argv, g, &ind);
	if (r < 0)
		return r;
	if (ind >= argc) {
		usage(stderr);
		return -EINVAL;
	}
	*ret_cmd = argv[ind];
	*ret_ind = ind;
	return 0;
}
