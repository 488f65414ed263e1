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
#include <string.h>

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
 * and cipher policy): skip it when every server is local.  No
 * OPENSSL_cleanup() at exit: the process ends anyway, the client holds
 * no secret that it would wipe (a TLS key is freed with its context),
 * and kbuild's per-module path paid 6% of a client's instructions for it
 * (docs/PERFORMANCE.md, "One client or two").
 */
static void init_openssl(const struct global *g)
{
	uint64_t opts = OPENSSL_INIT_NO_ATEXIT;

	if (all_servers_local(g))
		opts |= OPENSSL_INIT_NO_LOAD_CONFIG;
	OPENSSL_init_crypto(opts, NULL);
}

int main(int argc, char **argv)
{
	struct global g = { 0 };
	const char *cmd;
	int ind;

	if (client_parse(&g, argc, argv, &cmd, &ind) < 0)
		return EXIT_USAGE;
	init_openssl(&g);
	return commands_run(&g, cmd, argc - ind, argv + ind);
}
