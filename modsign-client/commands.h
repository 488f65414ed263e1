/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_COMMANDS_H
#define MODSIGN_CLIENT_COMMANDS_H

/*
 * The commands, one file each (cmd-NAME.c), each ending with its row of
 * the table: `const struct client_cmd cmd_NAME = { ... }`, as kmod's tools
 * end with their struct kmod_cmd.  commands.c holds the table of them,
 * runs one by its name, and prints --help from them.  A command calls no
 * other command: what two of them share lives in a file of its own
 * (batch.h, attach.h, verify.h).
 */

#include <stdio.h>

#include "client.h"

struct client_cmd {
	const char *name;
	/* argv[0] is the command's name; returns the process exit status:
	 * 0 success, 1 a file or request failed, EXIT_USAGE.  Errors are one
	 * line on stderr. */
	int (*fn)(const struct global *g, int argc, char **argv);
	/* Its synopsis in --help: "NAME ARGS...", further forms or the rest
	 * of a long one on lines of their own (as aligned there). */
	const char *usage;
	/* What it does, in --help: one line or a few. */
	const char *help;
};

extern const struct client_cmd cmd_status, cmd_cert, cmd_sign, cmd_attach, cmd_verify,
	cmd_strip, cmd_sign_file, cmd_log;

/* Run the command @name with @argc/@argv (argv[0] is the command), or
 * refuse an unknown one.  Returns the exit status. */
int commands_run(const struct global *g, const char *name, int argc, char **argv);

/* The usage: the commands from their table, then the global options
 * (client_usage()). */
void commands_usage(FILE *f);

#endif
