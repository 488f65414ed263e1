/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client: sign kernel modules through modsignd.  Global options
 * come before the command, as in git.
 */
#include <errno.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client.h"

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: modsign-client [--server ADDR]... COMMAND [ARGS]\n\n"
		"Commands:\n"
		"  status                       show the daemon and its keys\n"
		"  cert [--key NAME] [--der]    print a key's certificate\n"
		"  sign [--key NAME] [--hash sha256|sha384|sha512] [--keyid] FILE...\n"
		"                               sign modules in place (re-signs signed ones)\n"
		"  verify [--cert CERT | --key NAME] FILE...\n"
		"                               check signatures by the kernel's rules\n"
		"  strip FILE...                remove signatures\n"
		"  sign-file [-k] HASH KEY X509 MODULE [DEST]\n"
		"                               scripts/sign-file drop-in (KEY: modsign:NAME)\n\n"
		"Global options:\n"
		"  --server ADDR    unix:PATH (repeatable, tried in order; default $MODSIGN_SERVER\n"
		"                   or " CONN_DEFAULT_SERVER ")\n");
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
	int r;

	r = conn_open(g->servers, g->n_servers, ret, err, sizeof(err));
	if (r < 0)
		warn_msg("%s", err);
	return r;
}

static int parse_global(int argc, char **argv, struct global *g, int *ret_ind)
{
	const char *env = getenv("MODSIGN_SERVER");
	int i;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *v = NULL;

		if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("modsign-client %s\n", MODSIGN_VERSION);
			exit(0);
		}
		if (strcmp(argv[i], "--server") == 0 && i + 1 < argc)
			v = argv[++i];
		else if (strncmp(argv[i], "--server=", 9) == 0)
			v = argv[i] + 9;
		if (!v) {
			warn_msg("unknown global option '%s'", argv[i]);
			return -EINVAL;
		}
		if (g->n_servers >= CONN_MAX_SERVERS) {
			warn_msg("too many --server options");
			return -E2BIG;
		}
		g->servers[g->n_servers++] = v;
	}
	if (g->n_servers == 0)
		g->servers[g->n_servers++] = env && *env ? env : CONN_DEFAULT_SERVER;
	*ret_ind = i;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int (*fn)(const struct global *, int, char **);
	} cmds[] = {
		{ "status", cmd_status }, { "cert", cmd_cert },
		{ "sign", cmd_sign },     { "sign-file", cmd_sign_file },
		{ "verify", cmd_verify }, { "strip", cmd_strip },
	};
	struct global g = { 0 };
	int ind;

	/* Installed as scripts/sign-file, behave as it. */
	if (strcmp(basename(argv[0]), "sign-file") == 0) {
		parse_global(1, argv, &g, &ind);
		return cmd_sign_file(&g, argc, argv);
	}
	if (parse_global(argc, argv, &g, &ind) < 0)
		return EXIT_USAGE;
	if (ind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	for (size_t i = 0; i < ELEMENTSOF(cmds); i++)
		if (strcmp(argv[ind], cmds[i].name) == 0)
			return cmds[i].fn(&g, argc - ind, argv + ind);
	warn_msg("unknown command '%s' (try --help)", argv[ind]);
	return EXIT_USAGE;
}
