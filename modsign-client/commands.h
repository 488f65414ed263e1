/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_COMMANDS_H
#define MODSIGN_CLIENT_COMMANDS_H

/*
 * The commands (commands.c holds their one table).  Each gets its own
 * name in argv[0] and returns the process exit status: 0 success, 1 a
 * file or request failed, EXIT_USAGE.  Errors are one line on stderr.
 *
 * cmd-sign.c holds sign and sign-file; cmd-attach.c, cmd-status.c,
 * cmd-cert.c, cmd-verify.c and cmd-strip.c the others.
 */

#include "client.h"

int cmd_sign(const struct global *g, int argc, char **argv);
int cmd_sign_file(const struct global *g, int argc, char **argv);
int cmd_status(const struct global *g, int argc, char **argv);
int cmd_cert(const struct global *g, int argc, char **argv);
int cmd_verify(const struct global *g, int argc, char **argv);
int cmd_strip(const struct global *g, int argc, char **argv);
/* cmd-log.c: log vkey | checkpoint | verify (docs/TRANSPARENCY.md). */
int cmd_log(const struct global *g, int argc, char **argv);

/*
 * sign-file --batch [-dpk] HASH KEY X509 (cmd-signfile-batch.c), kbuild's
 * MODULE_SIGN_BATCH_CMD: the paths of the modules on standard input.
 * @argv[0] is "--batch".
 */
int cmd_sign_file_batch(const struct global *g, int argc, char **argv);

/*
 * cmd-sign.c: sign every path of @paths in one batch (many requests in
 * flight), each as "sign-file [-dpk] HASH KEY X509 PATH" (@argv, from
 * @argv[1]) would sign it, on the servers that hold the key of X509
 * (pool_open()).  Returns the exit
 * status; each failed module is named on stderr.
 */
struct pathlist;
int sign_file_paths(const struct global *g, int argc, char **argv,
		    const struct pathlist *paths);

/*
 * cmd-attach.c: attach, and sign-file -s SIG HASH X509 MODULE [DEST]:
 * the detached signature in the file @sig appended to @module (at @dest,
 * NULL: in place), once it verifies over the module with the certificate
 * in @x509 and is made with @hash.  Returns the exit status.
 */
int cmd_attach(const struct global *g, int argc, char **argv);
int attach_sign_file(const char *sig, const char *hash, const char *x509,
		     const char *module, const char *dest);

/* cmd-verify.c: a verify failure (pkcs7_verify_module()'s @r), in words. */
const char *verify_reason(int r);

/* Run the command @name with @argc/@argv (argv[0] is the command), or
 * refuse an unknown one.  Returns the exit status. */
int commands_run(const struct global *g, const char *name, int argc, char **argv);

/* cmd-cert.c: fetch the certificate of @key (NULL: default) from the
 * daemon; prints why not. */
struct x509_st;
int cmd_cert_fetch(struct conn *c, const char *key, struct x509_st **ret);

#endif
