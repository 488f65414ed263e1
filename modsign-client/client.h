/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_H
#define MODSIGN_CLIENT_H

/*
 * modsign-client commands.  Each returns the process exit status:
 * 0 success, 1 a file or request failed, 2 usage error.
 * Errors are one line on stderr: "modsign-client: WHAT: why".
 */

#include <stddef.h>

#include "conn.h"
#include "macro.h"

#define EXIT_USAGE 2

#define CLIENT_SYSTEM_CONFIG "/etc/modsign/client.conf"

struct global {
	const char *servers[CONN_MAX_SERVERS];
	size_t n_servers;
	struct conn_tls tls;
	char *strings[64]; /* values read from the config file or environment */
	size_t n_strings;
};

void warn_msg(const char *fmt, ...) _printf_(1, 2);

/* Connect as the global options say, or print why not. */
int client_connect(const struct global *g, struct conn **ret);

int cmd_status(const struct global *g, int argc, char **argv);
int cmd_cert(const struct global *g, int argc, char **argv);
int cmd_sign(const struct global *g, int argc, char **argv);
int cmd_sign_file(const struct global *g, int argc, char **argv);
int cmd_verify(const struct global *g, int argc, char **argv);
int cmd_strip(const struct global *g, int argc, char **argv);

/* Fetch the certificate of @key (NULL: default) from the daemon. */
struct x509_st;
int fetch_cert(struct conn *c, const char *key, struct x509_st **ret);

#endif
