/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client: sign kernel modules through modsignd.  One program,
 * linked against the shared libraries: kbuild starts it once per module,
 * and a second, leaner build for that path saved less than 10% of it once
 * both are dynamically linked (docs/PERFORMANCE.md, "One client or two").
 * Hashing goes through OpenSSL's EVP, so a FIPS configuration applies.
 */
#include <openssl/crypto.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "client.h"
#include "commands.h"

static bool all_servers_local(const struct global *g)
{
	for (size_t i = 0; i < g->n_servers; i++)
		if (strncmp(g->servers[i], "unix:", 5) != 0)
			return false;
	return true;
}

/*
 * Parsing openssl.cnf only matters for TLS (the system's security level
 * and cipher policy), and OpenSSL's error strings are read only to name
 * why a TLS connection failed (conn-tls.c): skip both when every server
 * is local: loading the strings was 7% of a per-module client's
 * instructions.  No OPENSSL_cleanup() at exit: the process ends anyway,
 * the client holds no secret that it would wipe (a TLS key is freed with
 * its context), and it was another 4% (docs/PERFORMANCE.md, "One client
 * or two").
 */
static void init_openssl(const struct global *g)
{
	uint64_t opts = OPENSSL_INIT_NO_ATEXIT;

	if (all_servers_local(g))
		opts |= OPENSSL_INIT_NO_LOAD_CONFIG | OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS;
	OPENSSL_init_crypto(opts, NULL);
}

/*
 * A batch keeps two or three descriptors open per module in flight (the
 * module, its directory, a detached signature's), SIGN_WINDOW of them on
 * each server of a pool: past the customary soft limit of 1024 with two
 * servers.  Raise it to the hard limit, as systemd advises programs that
 * need many descriptors and use poll(), not select(), to do.
 */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int main(int argc, char **argv)
{
	struct global g = { 0 };
	const char *cmd;
	int ind, r;

	r = client_parse(&g, argc, argv, &cmd, &ind);
	if (r != 0) {
		if (r > 0)
			commands_usage(r == CLIENT_HELP ? stdout : stderr);
		client_done(&g);
		return r == CLIENT_HELP ? 0 : EXIT_USAGE;
	}
	init_openssl(&g);
	raise_fd_limit();
	r = commands_run(&g, cmd, argc - ind, argv + ind);
	client_done(&g);
	return r;
}
