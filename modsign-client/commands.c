/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The command table: each command's row is at the end of its file. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "commands.h"

/* In the order --help lists them. */
static const struct client_cmd *const commands[] = {
	&cmd_status, &cmd_cert,  &cmd_sign,      &cmd_attach,
	&cmd_verify, &cmd_strip, &cmd_sign_file, &cmd_log,
};

/* Where a command's help starts: after its synopsis on the same line when
 * that is short enough, else on the next. */
#define HELP_COLUMN 31

/* @text's lines, each indented by @indent; the first by @first instead
 * (what is already on its line). */
static void put_lines(FILE *f, const char *text, int first, int indent)
{
	for (const char *s = text; *s;) {
		size_t len = strcspn(s, "\n");

		fprintf(f, "%*s%.*s\n", s == text ? first : indent, "", (int)len, s);
		s += len + (s[len] == '\n');
	}
}

/* "  SYNOPSIS   help", the help at HELP_COLUMN. */
static void usage_cmd(FILE *f, const struct client_cmd *cmd)
{
	const char *s = cmd->usage;
	size_t len;

	/* Every line of the synopsis; the help follows its last. */
	while (s[len = strcspn(s, "\n")] == '\n') {
		fprintf(f, "  %.*s\n", (int)len, s);
		s += len + 1;
	}
	fprintf(f, "  %s", s);
	if (2 + len < HELP_COLUMN) {
		put_lines(f, cmd->help, HELP_COLUMN - 2 - (int)len, HELP_COLUMN);
		return;
	}
	fputc('\n', f);
	put_lines(f, cmd->help, HELP_COLUMN, HELP_COLUMN);
}

void commands_usage(FILE *f)
{
	fputs("Usage: modsign-client [--server ADDR]... COMMAND [ARGS]\n\n"
	      "Commands:\n", f);
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		usage_cmd(f, commands[i]);
	fputc('\n', f);
	client_usage(f);
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

int commands_run(const struct global *g, const char *name, int argc, char **argv)
{
	for (size_t i = 0; i < ELEMENTSOF(commands); i++)
		if (strcmp(name, commands[i]->name) == 0)
			return stdout_ok(commands[i]->fn(g, argc, argv));
	warn_msg("unknown command '%s' (try --help)", name);
	return EXIT_USAGE;
}
