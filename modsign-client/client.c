/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client's shared part: the global options, which come before
 * the command as in git, the environment and the config file behind
 * them; the connection they describe; the one-line messages.  main.c
 * runs the command they precede.
 */
#define _GNU_SOURCE /* vasprintf */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "conf.h"
#include "rpc.h"
#include "util.h"

void client_usage(FILE *f)
{
	fputs("Global options (also $MODSIGN_SERVER, $MODSIGN_TLS_CA, $MODSIGN_TLS_CERT,\n"
	      "$MODSIGN_TLS_KEY, and the config file $MODSIGN_CONFIG, ~/.config/modsign/client.conf\n"
	      "or " CLIENT_SYSTEM_CONFIG "):\n"
	      "  --server ADDR    unix:PATH or tls:HOST:PORT (repeatable; default\n"
	      "                   " CONN_DEFAULT_SERVER "); a batch spreads over every\n"
	      "                   server that answers, and every address of a name\n"
	      "  --stall-timeout SECS  a batch moves the requests of a server silent\n"
	      "                   this long to the others (default 10; $MODSIGN_STALL_TIMEOUT)\n"
	      "  --tls-ca FILE    CA that signed the servers' certificates\n"
	      "  --tls-cert FILE  our client certificate; --tls-key FILE its key\n"
	      "\nHASH: " DIGEST_NAMES " (default " DIGEST_DEFAULT ";\n"
	      "the sha3 ones for kernels 6.7 and later)\n",
	      f);
}

/*
 * @s on @f with its control characters shown as \xHH (text_escape_controls):
 * the one way the client prints text it did not write itself.  A server
 * chooses its error messages, key names, subjects and the log's notes; a
 * file name is anyone's who can create one in a tree we walk.  Neither may
 * forge a line ("all modules verified OK") or pass an escape sequence (a
 * window title, a cleared screen; C1 as well as ESC) to the terminal or the
 * build log.
 */
static void put_text(FILE *f, const char *s, bool keep_newlines)
{
	_cleanup_(freep) char *safe = NULL;

	fputs(text_escape_controls(s, keep_newlines, &safe) < 0 ? "(out of memory)" : safe, f);
}

/* @prefix, then @fmt's one line with every control shown, on @f. */
static void put_line(FILE *f, const char *prefix, const char *fmt, va_list ap)
{
	_cleanup_(freep) char *msg = NULL;

	if (vasprintf(&msg, fmt, ap) < 0)
		msg = NULL;
	fputs(prefix, f);
	put_text(f, msg ?: "out of memory", false);
	fputc('\n', f);
}

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_line(stderr, "modsign-client: ", fmt, ap);
	va_end(ap);
}

void out_line(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	put_line(stdout, "", fmt, ap);
	va_end(ap);
}

void out_text(const char *text)
{
	put_text(stdout, text, true);
}

void out_json(json_object *doc)
{
	_cleanup_(freep) char *safe = NULL;
	const char *json = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PLAIN |
								 JSON_C_TO_STRING_NOSLASHESCAPE);

	if (!json || json_escape_controls(json, &safe) < 0) {
		warn_msg("out of memory");
		return;
	}
	puts(safe);
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
		warn_msg("%s: %s", path, why ?: strerror(-r)); /* @why is complete */
}

const struct digest *client_hash_arg(const char *name)
{
	const struct digest *md = digest_lookup(name);

	if (!md)
		warn_msg("hash '%s' not allowed: use one of " DIGEST_NAMES, name);
	return md;
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

int client_connect_spread(const struct global *g, const char *spread, size_t *from,
			  struct conn **ret)
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
	if (*from >= nt)
		return -ENOENT; /* every one tried; each said why */
	first = spread_start(spread, nt);
	for (size_t k = *from; k < nt; k++) {
		size_t i = (first + k) % nt;

		r = conn_open_target(&t[i], &g->tls, g->stall_ms, ret, &why);
		if (r >= 0) {
			if (k > *from)
				warn_msg("%s did not answer; using %s",
					 t[(first + *from) % nt].label, t[i].label);
			*from = k + 1;
			return 0;
		}
		/* The module first: under DKMS (sign_file) this line is all
		 * the build shows of why that module is unsigned. */
		if (nt == 1 || k + 1 == nt)
			warn_msg("%s: not signed: cannot connect to modsignd at %s: %s", spread,
				 t[i].label, why ?: strerror(-r));
	}
	*from = nt;
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

void client_done(struct global *g)
{
	for (size_t i = 0; i < g->n_strings; i++)
		free(g->strings[i]);
	g->n_strings = 0;
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

/*
 * Whose ~/.config/modsign/client.conf is read, as ssh finds ~/.ssh/config:
 * root's is in the password database, never in $HOME, which `sudo -E` or
 * `su` without `-` keep from the user who called them (her file would
 * choose the servers whose signatures root writes into modules).  Others'
 * is $HOME, else the database's.  A uid 0 that may not search root's home
 * is no root (fakeroot, as package builds run kbuild's modules_install; a
 * user namespace): $HOME is its user's own, as before.  Either way the file
 * must be its reader's or root's (config_open).  A new path, or NULL
 * without a home.
 */
static char *config_user_path(void)
{
	const char *env = getenv("HOME"), *home = env && *env ? env : NULL, *db;
	bool root = geteuid() == 0, not_root;
	struct passwd *pw = root || !home ? getpwuid(geteuid()) : NULL;
	char *path;

	db = pw && pw->pw_dir && *pw->pw_dir ? pw->pw_dir : NULL;
	not_root = root && home && db && faccessat(AT_FDCWD, db, X_OK, AT_EACCESS) < 0 &&
		   errno == EACCES;
	if ((root || !home) && !not_root)
		home = db;
	if (!home || asprintf(&path, "%s/.config/modsign/client.conf", home) < 0)
		return NULL;
	return path;
}

/* ssh's StrictModes for its configuration: whoever may write the file
 * chooses the servers, and a TLS key, the client uses. */
#define CONFIG_FORBIDDEN_MODE (S_IWGRP | S_IWOTH)

/*
 * Open the config file @path if its owner answers for it (owned_file_open:
 * root's or the caller's, writable by neither group nor others, a regular
 * file, not through a link, a FIFO not waited on).  Says why not, except
 * for -ENOENT and @quiet: whether a missing file matters is the caller's
 * to say.
 */
static int config_open_quiet(const char *path, int quiet)
{
	struct stat st;
	int fd = owned_file_open(path, CONFIG_FORBIDDEN_MODE, &st);

	if (fd == quiet)
		return fd;
	if (fd == -EPERM && (st.st_mode & CONFIG_FORBIDDEN_MODE))
		warn_msg("%s: mode %04o: group or others may write it (chmod go-w)", path,
			 (unsigned)(st.st_mode & 07777));
	else if (fd == -EPERM)
		warn_msg("%s: owner uid %u: neither root nor uid %u who runs this (chown it)",
			 path, (unsigned)st.st_uid, (unsigned)geteuid());
	else if (fd == -ELOOP)
		warn_msg("%s: a symbolic link: not followed (put the file itself there)", path);
	else if (fd == -EINVAL)
		warn_msg("%s: not a regular file", path);
	else if (fd < 0 && fd != -ENOENT)
		warn_msg("%s: %s", path, strerror(-fd));
	return fd;
}

static int config_open(const char *path)
{
	return config_open_quiet(path, -ENOENT);
}

/* The config file: $MODSIGN_CONFIG (which must exist), else the caller's
 * own, else the system's, else none (-ENOENT, *@ret_path NULL). */
static int config_find(const char **ret_path, char **ret_user)
{
	const char *env = getenv("MODSIGN_CONFIG");
	int fd;

	*ret_path = NULL;
	if (env && *env) {
		fd = config_open(env);
		if (fd == -ENOENT)
			warn_msg("%s: %s", env, strerror(ENOENT));
		*ret_path = env;
		return fd;
	}
	*ret_user = config_user_path();
	fd = *ret_user ? config_open_quiet(*ret_user, -EACCES) : -ENOENT;
	/* A home the caller may not search or a file it may not read holds
	 * nothing of its own (`sudo -u builder` without -H keeps root's
	 * HOME): as ssh does with ~/.ssh/config, the system's is read. */
	if (fd == -EACCES)
		fd = -ENOENT;
	if (fd != -ENOENT) {
		*ret_path = *ret_user;
		return fd;
	}
	fd = config_open(CLIENT_SYSTEM_CONFIG);
	if (fd != -ENOENT)
		*ret_path = CLIENT_SYSTEM_CONFIG;
	return fd;
}

static int read_config(struct global *g, bool have_servers)
{
	_cleanup_(freep) char *user = NULL;
	_cleanup_(closep) int fd = -1;
	size_t n_servers = g->n_servers;
	const char *path;
	unsigned line;
	int r;

	fd = config_find(&path, &user);
	if (fd == -ENOENT && !path)
		return 0; /* no config file is fine */
	if (fd < 0)
		return fd;
	r = conf_parse_fd(fd, conf_setting, g, &line);
	if (r < 0 && line)
		warn_msg("%s:%u: %s", path, line, r == -ENOENT ? "unknown setting" : strerror(-r));
	else if (r < 0)
		warn_msg("%s: %s", path, strerror(-r));
	if (r < 0)
		return r;
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

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
			return CLIENT_HELP;
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

/*
 * A call in sign-file's words: installed as scripts/sign-file, or handed
 * sign-file's arguments by a program that runs a configured signer with
 * them, as DKMS runs its sign_file ("$sign_file" HASH KEY X509 MODULE):
 * `sign_file=/usr/bin/modsign-client` then works as it is.  No command
 * and no global option is named like a hash, so a first argument that is
 * one cannot mean anything else.
 */
static bool sign_file_call(int argc, char **argv)
{
	return strcmp(basename(argv[0]), "sign-file") == 0 ||
	       (argc > 1 && digest_lookup(argv[1]));
}

int client_parse(struct global *g, int argc, char **argv, const char **ret_cmd,
		 int *ret_ind)
{
	int ind, r;

	if (sign_file_call(argc, argv)) {
		r = parse_global(1, argv, g, &ind);
		if (r != 0)
			return r;
		*ret_cmd = "sign-file";
		*ret_ind = 0;
		return 0;
	}
	r = parse_global(argc, argv, g, &ind);
	if (r != 0)
		return r;
	if (ind >= argc)
		return CLIENT_NO_COMMAND;
	*ret_cmd = argv[ind];
	*ret_ind = ind;
	return 0;
}

int client_cert_fetch(struct conn *c, const char *key, X509 **ret)
{
	struct rpc_error err;
	int r = rpc_cert(c, key, ret, &err);

	if (r < 0 && err.malformed)
		warn_msg("malformed certificate from modsignd");
	else if (r < 0)
		warn_msg("%s: %s", key ?: "default key", err.why);
	return r;
}
