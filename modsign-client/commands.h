/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_COMMANDS_H
#define MODSIGN_CLIENT_COMMANDS_H

/*
 * The commands (commands.c holds their one table).  Each gets its own
 * name in argv[0] and returns the process exit status: 0 success, 1 a
 * file or request failed, EXIT_USAGE.  Errors are one line on stderr.
 *
 * cmd-sign.c holds sign and sign-file; cmd-status.c, cmd-cert.c,
 * cmd-verify.c and cmd-strip.c the others.
 */

#include "client.h"

int cmd_sign(const struct global *g, int argc, char **argv);
int cmd_sign_file(const struct global *g, int argc, char **argv);
int cmd_status(const struct global *g, int argc, char **argv);
int cmd_cert(const struct global *g, int argc, char **argv);
int cmd_verify(const struct global *g, int argc, char **argv);
int cmd_strip(const struct global *g, int argc, char **argv);

/* Run the command @name with @argc/@argv (argv[0] is the command), or
 * refuse an unknown one.  Returns the exit status. */
int commands_run(const struct global *g, const char *name, int argc, char **argv);

/* cmd-cert.c: fetch the certificate of @key (NULL: default) from the
 * daemon; prints why not. */
struct x509_st;
int cmd_cert_fetch(struct conn *c, const char *key, struct x509_st **ret);

#endif
