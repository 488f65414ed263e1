/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd: holds module-signing keys and signs module digests for
 * authorised clients.  See modsignd(8) and docs/PROTOCOL.md.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "keys.h"
#include "log.h"
#include "policy.h"
#include "secure.h"
#include "server.h"
#include "util.h"

#define DEFAULT_SOCKET "/run/modsignd/modsignd.sock"
#define MAX_OPT_LIST 64

struct options {
	const char *listen[MAX_OPT_LIST];
	size_t n_listen;
	const char *keys[MAX_OPT_LIST];
	size_t n_keys;
	const char *allow[POLICY_MAX_RULES];
	size_t n_allow;
	struct certgen_params gen;
	struct server_config server;
};

static void help(void)
{
	printf("Usage: modsignd [OPTIONS]\n"
	       "Hold kernel module signing keys and sign module digests for authorised clients.\n\n"
	       "  --listen unix:PATH        listen on a UNIX socket (repeatable; default " DEFAULT_SOCKET ")\n"
	       "  --key NAME=ephemeral[:ALG]  one-time key made in memory (ALG: rsa2048, rsa3072,\n"
	       "                            rsa4096 [default], ecdsa-p256, ecdsa-p384)\n"
	       "  --key NAME=PATH           long-lived key from a PEM file (private key + certificate)\n"
	       "  --allow RULE              uid:N, gid:N, user:NAME or group:NAME (repeatable;\n"
	       "                            default: root and the daemon's own uid)\n"
	       "  --organization TEXT       O= of generated certificates\n"
	       "  --common-name TEXT        CN= of generated certificates\n"
	       "  --email TEXT              emailAddress= of generated certificates\n"
	       "  --days N                  validity of generated certificates (default 36500)\n"
	       "  --genkey-template FILE    certificate template (default: built-in x509.genkey.in)\n"
	       "  --workers N               signing threads (default: number of CPUs)\n"
	       "  --max-connections N       concurrent connections (default %u)\n"
	       "  --socket-mode MODE        mode of created socket files (default 0660)\n"
	       "  --version, --help\n",
	       SERVER_DEFAULT_MAX_CONNS);
}

enum { OPT_LISTEN = 256, OPT_KEY, OPT_ALLOW, OPT_ORG, OPT_CN, OPT_EMAIL, OPT_DAYS,
       OPT_TEMPLATE, OPT_WORKERS, OPT_MAXCONN, OPT_MODE, OPT_VERSION, OPT_HELP };

static int push(const char **list, size_t *n, size_t max, const char *v)
{
	if (*n >= max)
		return -E2BIG;
	list[(*n)++] = v;
	return 0;
}

static int parse_number_opt(const char *name, const char *v, unsigned long max,
			    unsigned *ret)
{
	unsigned long n;

	if (parse_uint(v, max, &n) < 0 || n == 0) {
		log_error("--%s: '%s' is not a number from 1 to %lu", name, v, max);
		return -EINVAL;
	}
	*ret = (unsigned)n;
	return 0;
}

static int parse_option(struct options *o, int c, const char *arg)
{
	unsigned long mode;

	switch (c) {
	case OPT_LISTEN:
		return push(o->listen, &o->n_listen, MAX_OPT_LIST, arg);
	case OPT_KEY:
		return push(o->keys, &o->n_keys, MAX_OPT_LIST, arg);
	case OPT_ALLOW:
		return push(o->allow, &o->n_allow, POLICY_MAX_RULES, arg);
	case OPT_ORG:
		o->gen.organization = arg;
		return 0;
	case OPT_CN:
		o->gen.common_name = arg;
		return 0;
	case OPT_EMAIL:
		o->gen.email = arg;
		return 0;
	case OPT_TEMPLATE:
		o->gen.template_path = arg;
		return 0;
	case OPT_DAYS:
		return parse_number_opt("days", arg, 36500 * 2, &o->gen.days);
	case OPT_WORKERS:
		return parse_number_opt("workers", arg, 256, &o->server.workers);
	case OPT_MAXCONN:
		return parse_number_opt("max-connections", arg, 65536,
					&o->server.max_conns);
	case OPT_MODE:
		mode = strtoul(arg, NULL, 8);
		if (mode > 0777) {
			log_error("--socket-mode: '%s' is not an octal mode", arg);
			return -EINVAL;
		}
		o->server.socket_mode = (mode_t)mode;
		return 0;
	}
	return -EINVAL;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "key", required_argument, NULL, OPT_KEY },
		{ "allow", required_argument, NULL, OPT_ALLOW },
		{ "organization", required_argument, NULL, OPT_ORG },
		{ "common-name", required_argument, NULL, OPT_CN },
		{ "email", required_argument, NULL, OPT_EMAIL },
		{ "days", required_argument, NULL, OPT_DAYS },
		{ "genkey-template", required_argument, NULL, OPT_TEMPLATE },
		{ "workers", required_argument, NULL, OPT_WORKERS },
		{ "max-connections", required_argument, NULL, OPT_MAXCONN },
		{ "socket-mode", required_argument, NULL, OPT_MODE },
		{ "version", no_argument, NULL, OPT_VERSION },
		{ "help", no_argument, NULL, OPT_HELP },
		{}
	};
	int c;

	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		if (c == OPT_HELP) {
			help();
			return 1;
		}
		if (c == OPT_VERSION) {
			printf("modsignd %s\n", MODSIGN_VERSION);
			return 1;
		}
		if (c == '?' || parse_option(o, c, optarg) < 0)
			return -EINVAL;
	}
	if (optind < argc) {
		log_error("unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	if (o->n_keys == 0) {
		log_error("no keys: give at least one --key");
		return -EINVAL;
	}
	if (o->n_listen == 0)
		o->listen[o->n_listen++] = "unix:" DEFAULT_SOCKET;
	return 0;
}

static int load_keys(const struct options *o, struct keystore *ks)
{
	for (size_t i = 0; i < o->n_keys; i++) {
		const char *err;
		struct key *k;
		int r = keystore_add(ks, o->keys[i], &o->gen, &err);

		if (r < 0)
			return log_error_errno(r, "--key %s: %s%s%m", o->keys[i],
					       err ?: "", err ? ": " : "");
		k = ks->keys[ks->n - 1];
		log_info("key %s: %s %s, key id %s, subject %s", k->name,
			 key_backend_name(k->backend), k->alg, k->key_id, k->subject);
	}
	return 0;
}

static int load_policy(const struct options *o, struct policy *p)
{
	for (size_t i = 0; i < o->n_allow; i++) {
		int r = policy_add(p, o->allow[i]);

		if (r == -EINVAL)
			return log_error_errno(r, "--allow %s: expected uid:N, gid:N, "
						  "user:NAME or group:NAME", o->allow[i]);
		if (r < 0)
			return log_error_errno(r, "--allow %s: %m", o->allow[i]);
	}
	if (o->n_allow == 0)
		policy_default(p);
	return 0;
}

static int open_listeners(const struct options *o, struct server *s)
{
	for (size_t i = 0; i < o->n_listen; i++) {
		const char *a = o->listen[i];
		int r;

		if (strncmp(a, "unix:", 5) != 0 || !a[5])
			return log_error_errno(-EINVAL, "--listen %s: expected unix:PATH", a);
		r = server_listen_unix(s, a + 5);
		if (r < 0)
			return log_error_errno(r, "--listen %s: %m", a);
		log_info("listening on %s", a);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct options o = {
		.gen = { .organization = "", .common_name = "modsignd one-time key",
			 .email = "", .days = 36500 },
		.server = { .max_conns = SERVER_DEFAULT_MAX_CONNS, .socket_mode = 0660 },
	};
	struct keystore keys = { 0 };
	struct policy policy = { 0 };
	struct server *srv = NULL;
	bool locked = false;
	long ncpu;
	int r;

	log_setup();
	r = secure_process(&locked);
	if (r < 0)
		return log_error_errno(r, "cannot harden the process: %m"), 1;
	r = parse_args(argc, argv, &o);
	if (r != 0)
		return r > 0 ? 0 : 2;
	if (!locked)
		log_warning("secure heap unavailable (RLIMIT_MEMLOCK?): keys may be swapped");
	ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	if (!o.server.workers)
		o.server.workers = ncpu > 0 && ncpu <= 256 ? (unsigned)ncpu : 1;

	r = load_policy(&o, &policy);
	if (r >= 0)
		r = load_keys(&o, &keys);
	if (r >= 0)
		r = server_new(&o.server, &keys, &policy, &srv);
	if (r >= 0)
		r = open_listeners(&o, srv);
	if (r >= 0) {
		log_info("ready: %zu key(s), %u signing thread(s)", keys.n, o.server.workers);
		r = server_run(srv);
	}
	server_free(srv);
	keystore_clear(&keys); /* ephemeral keys are destroyed here */
	policy_clear(&policy);
	if (r >= 0)
		log_info("stopped; one-time keys destroyed");
	return r < 0 ? 1 : 0;
}
