/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_H
#define MODSIGN_CLIENT_H

/*
 * What every modsign-client command shares (client.c): the global options
 * (command line, environment, config file), the connection they describe,
 * and the one-line error messages.  Knows no command (commands.h has
 * those).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "conn.h"
#include "digest.h"
#include "macro.h"

/* Exit statuses: 0 success, 1 a file or request failed, 2 usage error,
 * 3 verify could not check a signature (ML-DSA where OpenSSL < 3.5) and
 * none failed. */
#define EXIT_USAGE 2
#define EXIT_UNCHECKED 3

#define CLIENT_SYSTEM_CONFIG "/etc/modsign/client.conf"

/* A batch moves a silent server's requests to the others after this. */
#define CLIENT_STALL_DEFAULT_MS 10000

struct global {
	const char *servers[CONN_MAX_SERVERS];
	size_t n_servers;
	struct conn_tls tls;
	unsigned stall_ms; /* --stall-timeout, $MODSIGN_STALL_TIMEOUT, stall-timeout */
	const char *cert;  /* cert (config): the certificate sign pins */
	char *strings[64]; /* values read from the config file or environment */
	size_t n_strings;
};

/*
 * What the client prints: every character of text it did not write itself
 * (a server's strings, a file name) goes through one escaping, control
 * characters (C0, DEL, C1) shown as \xHH, so that no peer forges a line or
 * sends the terminal an escape sequence (docs/SECURITY.md rows 43, 62).
 */

/* "modsign-client: WHAT: why", one line on stderr. */
void warn_msg(const char *fmt, ...) _printf_(1, 2);

/* One line on stdout, a newline added. */
void out_line(const char *fmt, ...) _printf_(1, 2);

/* Text of several lines (a signed note) on stdout as it is, newlines kept,
 * its other controls shown. */
void out_text(const char *text);

/* @doc on stdout as one line of JSON: DEL and C1 as \u escapes, bytes
 * that are not UTF-8 as U+FFFD (json_escape_controls). */
void out_json(json_object *doc);

/* A certificate file at @path that could not be read (@r from
 * cert_load_file() or cert_file_fingerprint()), in one line. */
void warn_cert(const char *path, int r);

/* A module (or .p7s) at @path that could not be written (@r and @why
 * from modfile_write() and its kin: @why the whole reason, or NULL), in
 * one line. */
void warn_write(const char *path, int r, const char *why);

/*
 * Read the global options before the command, then the environment and
 * the config file, into @g.  On success (0) *@ret_cmd is the command's
 * name and *@ret_ind its index in @argv: invoked as "sign-file" (installed
 * as scripts/sign-file), or with a hash name (sha256, ...) as its first
 * argument (DKMS's sign_file), the program is that command, *@ret_ind 0,
 * and takes no global options.  --version prints and exits 0.  The usage lists the commands,
 * which this file does not know: CLIENT_HELP (--help) and
 * CLIENT_NO_COMMAND leave it to the caller (commands_usage()), to stdout
 * and stderr.  A usage error is printed and returns a negative errno.
 */
#define CLIENT_HELP 1
#define CLIENT_NO_COMMAND 2
int client_parse(struct global *g, int argc, char **argv, const char **ret_cmd,
		 int *ret_ind);

/* The global options' part of the usage. */
void client_usage(FILE *f);

/* Free the values client_parse() kept from the config file. */
void client_done(struct global *g);

/* The digest a command's HASH or --hash names, or NULL (said why). */
const struct digest *client_hash_arg(const char *name);

/* Connect as the global options say (the first server, or address, that
 * answers, in list order), or print why not. */
int client_connect(const struct global *g, struct conn **ret);

/*
 * kbuild's one call per module: the server list is a pool too, so each
 * call starts at the target that a hash of @spread (the module's path)
 * picks and tries the others after it in turn; a call whose first pick
 * did not answer says which one did.  Prints why not on failure.  Starts
 * at the *@from-th target in that order (0: the pick), and sets *@from
 * past the one connected, for a next call to try the others after it;
 * -ENOENT, unsaid, when none is left.  When none answers, the one line
 * names @spread: "MODULE: not signed: cannot connect to ...".
 */
int client_connect_spread(const struct global *g, const char *spread, size_t *from,
			  struct conn **ret);

/* The certificate of @key (NULL: the default key) from the daemon on @c
 * (rpc_cert()); says why not on stderr.  *@ret: X509_free(). */
struct x509_st;
int client_cert_fetch(struct conn *c, const char *key, struct x509_st **ret);

#endif
