/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client-full: every command, over UNIX sockets and TLS, hashing
 * through OpenSSL's EVP (so a FIPS configuration applies).  Linked with
 * conn-tls.o and the cmd-*.o files; the lean client (main-lean.c) hands
 * it what it does not do itself.
 */
#include <openssl/crypto.h>
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
 * and cipher policy): skip it when every server is local.
 */
static void init_openssl(const struct global *g)
{
	if (all_servers_local(g))
		OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CONFIG, NULL);
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
