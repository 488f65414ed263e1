/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The command table. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

static const struct {
	const char *name;
	int (*fn)(const struct global *g, int argc, char **argv);
} commands[] = {
	{ "sign", cmd_sign },     { "sign-file", cmd_sign_file },
	{ "status", cmd_status }, { "cert", cmd_cert },
	{ "verify", cmd_verify }, { "strip", cmd_strip },
	{ "attach", cmd_attach },
	{ "log", cmd_log },
};

/* A report that did not reach stdout (a closed pipe: SIGPIPE is ignored
 * over TLS, see conn-tls.c; a full disk) is a failure, not exit 0. */
static int stdout_ok(int rc)
{
	if (fflush(stdout) == 0 && !ferror(stdout))
		return rc;
	warn_msg("cannot write to stdout: %s", strerror(errno));
	return rc ? rc : 1;
}

int commands_run(const struct global *g, const char *name, int argc, char **argv)
{
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (strcmp(name, commands[i].name) == 0)
			return stdout_ok(commands[i].fn(g, argc, argv));
	warn_msg("unknown command '%s' (try --help)", name);
	return EXIT_USAGE;
}
