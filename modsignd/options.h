/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_OPTIONS_H
#define MODSIGND_OPTIONS_H

/*
 * modsignd's settings, from the command line and modsignd.conf(5).  One
 * table names every option; the config file uses the same names, so every
 * command-line option has a config key.  The file is read first, then the
 * command line: repeatable options accumulate; a single one given on the
 * command line overrides the file's, and given twice in the same place
 * (two lines of the file, or twice on the command line) is an error: the
 * second would silently win.
 */

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "certgen.h"
#include "policy.h"
#include "server.h"
#include "tls.h"

#define OPTIONS_DEFAULT_CONFIG "/etc/modsignd/modsignd.conf"
#define OPTIONS_DEFAULT_SOCKET "/run/modsignd/modsignd.sock"
#define OPTIONS_MAX_LIST 64
#define OPTIONS_MAX_IDS 40
#define OPTIONS_SET_ON_CLI UINT_MAX

struct options {
	const char *config;       /* --config; NULL: none */
	bool check_config;
	const char *listen[OPTIONS_MAX_LIST]; /* none: systemd's sockets or the default */
	size_t n_listen;
	const char *keys[OPTIONS_MAX_LIST];
	size_t n_keys;
	const char *allow[POLICY_MAX_RULES];
	size_t n_allow;
	size_t n_allow_conf; /* the first n_allow_conf came from the file */
	const char *certs[OPTIONS_MAX_LIST]; /* NAME=PATH for token keys */
	size_t n_certs;
	const char *pin_file;
	const char *pkcs11_module;
	const char *audit_log;
	const char *metrics_file;
	const char *tlog_dir;   /* --transparency-log; NULL: none */
	const char *log_key;    /* a PEM file or "ephemeral" */
	const char *log_origin; /* NULL: HOSTNAME/modsign */
	struct certgen_params gen;
	struct tls_config tls;
	struct server_config server;
	/* strings read from the config file, owned here, in file order, and
	 * the option each was given for (to tell what a SIGHUP changed) */
	char *strings[1024];
	int string_ids[1024];
	size_t n_strings;
	/* where each single-valued option was set: 0 nowhere, a line of
	 * the file, or OPTIONS_SET_ON_CLI (indexed by option) */
	unsigned set_at[OPTIONS_MAX_IDS];
};

/*
 * Fill @o from the config file named by --config (or, with --check-config
 * and no --config, the default path) and the command line.  Returns 0, 1
 * when --help or --version was handled, or a negative errno after logging
 * a one-line error.
 */
int options_parse(int argc, char **argv, struct options *o);

/*
 * Re-read only the allow rules: config file, then command line.  Any other
 * setting of the file that differs from what the daemon started with is
 * named in a warning: it is not applied until a restart.
 */
int options_reload_allow(const struct options *o, struct policy *ret);

void options_free(struct options *o);

#endif
