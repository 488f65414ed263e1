/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client: sign kernel modules through modsignd.  Global options
 * come before the command, as in git.
 *
 * Built twice from these sources.  kbuild runs the client once per module,
 * so process start-up is most of a module's cost: the installed
 * `modsign-client` is the lean build (CLIENT_LEAN), statically linked
 * against the little it needs (json-c, SHA-2, libc), which signs over
 * UNIX sockets.  Everything else (tls: servers, verify, status, cert,
 * strip) it hands to `modsign-client-full` by exec, with the same
 * arguments.  See docs/PERFORMANCE.md for what this buys.
 */
#define _GNU_SOURCE /* O_PATH, environ */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if !CLIENT_LEAN
#include <openssl/crypto.h>
#endif

#include "conf.h"

#include "client.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: modsign-client [--server ADDR]... COMMAND [ARGS]\n\n"
		"Commands:\n"
		"  status                       show the daemon and its keys\n"
		"  cert [--key NAME] [--der]    print a key's certificate\n"
		"  sign [--key NAME] [--hash sha256|sha384|sha512] [--keyid]\n"
		"       [--recursive DIR] [--stdin] FILE...\n"
		"                               sign modules in place (re-signs signed ones);\n"
		"                               FILE '-' reads paths from stdin\n"
		"  verify [--cert CERT | --key NAME] FILE...\n"
		"                               check signatures by the kernel's rules\n"
		"  strip FILE...                remove signatures\n"
		"  sign-file [-k] HASH KEY X509 MODULE [DEST]\n"
		"                               scripts/sign-file drop-in (KEY: modsign:NAME)\n\n"
		"Global options (also $MODSIGN_SERVER, $MODSIGN_TLS_CA, $MODSIGN_TLS_CERT,\n"
		"$MODSIGN_TLS_KEY, and the config file $MODSIGN_CONFIG, ~/.config/modsign/client.conf\n"
		"or " CLIENT_SYSTEM_CONFIG "):\n"
		"  --server ADDR    unix:PATH or tls:HOST:PORT (repeatable, tried in order;\n"
		"                   default " CONN_DEFAULT_SERVER ")\n"
		"  --tls-ca FILE    CA that signed the servers' certificates\n"
		"  --tls-cert FILE  our client certificate; --tls-key FILE its key\n");
}

void warn_msg(const char *fmt, ...)
{
	va_list ap;

	fputs("modsign-client: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
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

static const char *keep(struct global *g, const char *v)
{
	char *copy;

	if (g->n_strings >= ELEMENTSOF(g->strings) || !(copy = strdup(v)))
		return NULL;
	g->strings[g->n_strings++] = copy;
	return copy;
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

static void from_env(struct global *g)
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
}

#if !CLIENT_LEAN
static bool all_servers_local(const struct global *g)
{
	for (size_t i = 0; i < g->n_servers; i++)
		if (strncmp(g->servers[i], "unix:", 5) != 0)
			return false;
	return true;
}

/*
 * Parsing openssl.cnf only matters for TLS (the system's security level
 * and cipher policy): skip it when every server is local.
 */
static void init_openssl(const struct global *g)
{
	if (all_servers_local(g))
		OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
}
#else
static bool any_tls_server(const struct global *g)
{
	for (size_t i = 0; i < g->n_servers; i++)
		if (strncmp(g->servers[i], "tls:", 4) == 0)
			return true;
	return false;
}

/*
 * Open @path if it may be run in our place: a regular file owned by root
 * or by us, writable by nobody else, and not this very program (a lean
 * client installed under the full one's name would exec itself forever).
 */
static int open_full(const char *path, const struct stat *self)
{
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022) ||
	    (st.st_dev == self->st_dev && st.st_ino == self->st_ino)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * Run modsign-client-full with our arguments: installed at
 * CLIENT_FULL_RELPATH from our own directory (the Makefile computes it
 * from BINDIR and LIBEXECDIR), or next to us as in the build tree.  Found
 * from /proc/self/exe, not $PATH or the environment, so that it is always
 * the one installed with us.
 */
static _noreturn_ void exec_full(char **argv, const char *why)
{
	static const char *const where[] = {
		"%s/" CLIENT_FULL_RELPATH,
		"%s/modsign-client-full",
	};
	char self[PATH_MAX], path[PATH_MAX + 256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct stat self_st;
	int err = ENOENT;

	if (n > 0 && stat("/proc/self/exe", &self_st) == 0) {
		const char *dir;

		self[n] = '\0';
		dir = dirname(self);
		for (size_t i = 0; i < ELEMENTSOF(where); i++) {
			int fd;

			snprintf(path, sizeof(path), where[i], dir);
			fd = open_full(path, &self_st);
			if (fd >= 0) {
				int r;

				fexecve(fd, argv, environ);
				r = -errno;
				close(fd);
				fd = r;
			}
			if (fd != -ENOENT)
				err = -fd;
		}
	}
	warn_msg("%s needs modsign-client-full, which is not installed next to "
		 "modsign-client: %s", why, strerror(err));
	exit(1);
}
#endif

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
		} else if ((slot = global_slot(g, argv[i]))) {
			*slot = argv[++i];
		} else {
			warn_msg("unknown global option '%s'", argv[i]);
			return -EINVAL;
		}
	}
	from_env(g);
	r = read_config(g, g->n_servers > 0);
	if (r < 0)
		return r;
	if (g->n_servers == 0)
		g->servers[g->n_servers++] = CONN_DEFAULT_SERVER;
#if !CLIENT_LEAN
	init_openssl(g);
#endif
	*ret_ind = i;
	return 0;
}

/* A report that did not reach stdout (a closed pipe: SIGPIPE is ignored
 * over TLS, see conn-tls.c; a full disk) is a failure, not exit 0. */
static int stdout_ok(int rc)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	warn_msg("cannot write to stdout: %s", strerror(errno));
	return rc ? rc : 1;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(const struct global *, int, char **);
	} cmds[] = {
		{ "sign", cmd_sign },     { "sign-file", cmd_sign_file },
#if !CLIENT_LEAN
		{ "status", cmd_status }, { "cert", cmd_cert },
		{ "verify", cmd_verify }, { "strip", cmd_strip },
#endif
	};
#if CLIENT_LEAN
	/* modsign-client-full's commands */
	static const char *const full_only[] = { "status", "cert", "verify", "strip" };
#endif
	struct global g = { 0 };
	int ind;

	/* Installed as scripts/sign-file, behave as it. */
	if (strcmp(basename(argv[0]), "sign-file") == 0) {
		if (parse_global(1, argv, &g, &ind) < 0)
			return EXIT_USAGE;
#if CLIENT_LEAN
		if (any_tls_server(&g))
			exec_full(argv, "a tls: server");
#endif
		return cmd_sign_file(&g, argc, argv);
	}
	if (parse_global(argc, argv, &g, &ind) < 0)
		return EXIT_USAGE;
	if (ind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
#if CLIENT_LEAN
	if (any_tls_server(&g))
		exec_full(argv, "a tls: server");
	for (size_t i = 0; i < ELEMENTSOF(full_only); i++)
		if (strcmp(argv[ind], full_only[i]) == 0)
			exec_full(argv, argv[ind]);
#endif
	for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
		if (strcmp(argv[ind], cmds[i].name) == 0)
			return stdout_ok(cmds[i].fn(&g, argc - ind, argv + ind));
	warn_msg("unknown command '%s' (try --help)", argv[ind]);
	return EXIT_USAGE;
}
