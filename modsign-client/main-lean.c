/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client, the lean client.  kbuild runs the client once per
 * module, so process start-up is most of a module's cost: this one is
 * linked (statically by default) against the little that sign and
 * sign-file need over UNIX sockets: json-c, OpenSSL's low-level SHA-2
 * (digest-lowlevel.o), libc.  Its object list has conn-tls-none.o for
 * TLS and handover.o for status, cert, verify and strip, which exec
 * modsign-client-full with the same arguments; so does a tls: server.
 * docs/PERFORMANCE.md says what this buys.
 */
#include <string.h>

#include "client.h"
#include "commands.h"
#include "handover.h"

static bool any_tls_server(const struct global *g)
{
	for (size_t i = 0; i < g->n_servers; i++)
		if (strncmp(g->servers[i], "tls:", 4) == 0)
			return true;
	return false;
}

int main(int argc, char **argv)
{
	struct global g = { 0 };
	const char *cmd;
	int ind;

	if (client_parse(&g, argc, argv, &cmd, &ind) < 0)
		return EXIT_USAGE;
	if (any_tls_server(&g))
		handover_exec(&g, "a tls: server");
	return commands_run(&g, cmd, argc - ind, argv + ind);
}
