/* SPDX-License-Identifier: GPL-2.0-or-later */
/* cert: print a key's certificate, as the daemon hands it out. */
#include <errno.h>
#include <getopt.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <unistd.h>

#include "cert.h"
#include "client.h"
#include "commands.h"
#include "rpc.h"
#include "util.h"

static int do_cert(const struct global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "der", no_argument, NULL, 'd' },
		{}
	};
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(X509_freep) X509 *cert = NULL;
	const char *key = NULL;
	bool der = false;
	int o, ok;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (o == 'k')
			key = optarg;
		else if (o == 'd')
			der = true;
		else
			return EXIT_USAGE;
	}
	if (optind != argc) {
		warn_msg("cert: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	/* DER is the server's bytes as they are (its subject may hold an
	 * escape sequence): like gzip, never written to a terminal. */
	if (der && isatty(STDOUT_FILENO)) {
		warn_msg("cert --der: binary not written to a terminal (redirect it to a file)");
		return EXIT_USAGE;
	}
	if (client_connect(g, &c) < 0 || client_cert_fetch(c, key, &cert) < 0)
		return 1;
	ok = der ? i2d_X509_fp(stdout, cert) : PEM_write_X509(stdout, cert);
	if (!ok || fflush(stdout) != 0) {
		warn_msg("cannot write the certificate to stdout");
		return 1;
	}
	return 0;
}

const struct client_cmd cmd_cert = {
	.name = "cert",
	.fn = do_cert,
	.usage = "cert [--key NAME] [--der]",
	.help = "print a key's certificate",
};
