/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sign-file --batch [-dpk] HASH KEY X509: kbuild's MODULE_SIGN_BATCH_CMD
 * (kernel-patches/0004).  kbuild calls it once, after every module is
 * installed and before any is compressed, with the paths of all the
 * modules on standard input, one per line.  They are signed as "sign"
 * signs a batch, many requests in flight on one connection (cmd-sign.c),
 * with sign-file's arguments and its check that the daemon's key is the
 * certificate kbuild embeds.  -d and -p mean what they mean to sign-file:
 * each module's signature goes to MODULE.p7s too (-p) or only (-d).
 *
 * That check is made once, before the first module: a wrong certificate
 * is then one line and no module reaches the daemon, where one line per
 * module and a signature issued for each would otherwise be.  Every reply
 * is still checked as in sign-file mode (the daemon may have been
 * restarted with another key in between).
 */
#include <errno.h>
#include <openssl/x509.h>
#include <string.h>

#include "cert.h"
#include "certfp.h"
#include "client.h"
#include "commands.h"
#include "paths.h"
#include "util.h"

/* SHA-256 of the DER of the daemon's certificate for @key, new string. */
static int daemon_cert_sha256(const struct global *g, const char *key, char **ret)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(X509_freep) X509 *cert = NULL;
	unsigned char *der = NULL;
	int len, r;

	if (client_connect(g, &c) < 0)
		return -ECONNREFUSED; /* said why */
	r = cmd_cert_fetch(c, key, &cert);
	if (r < 0)
		return r; /* said why */
	len = i2d_X509(cert, &der);
	if (len <= 0)
		return -ENOMEM;
	r = cert_fingerprint(der, (size_t)len, ret);
	OPENSSL_free(der);
	return r;
}

int sign_file_check_key(const struct global *g, const char *key,
			const char *want_sha256, const char *x509)
{
	_cleanup_(freep) char *have = NULL;
	int r = daemon_cert_sha256(g, key, &have);

	if (r == -ENOMEM)
		warn_msg("%s", strerror(-r));
	if (r < 0)
		return r;
	if (strcmp(have, want_sha256) != 0) {
		warn_msg("%s: the daemon's key '%s' is not this certificate; no module signed",
			 x509, key ?: "default");
		return -ENOKEY;
	}
	return 0;
}

int cmd_sign_file_batch(const struct global *g, int argc, char **argv)
{
	struct pathlist paths = { 0 };
	int r;

	r = pathlist_add_lines(&paths, stdin);
	if (r < 0) {
		warn_msg("standard input: %s", strerror(-r));
		r = 1;
	} else if (paths.n == 0) {
		warn_msg("sign-file --batch: no modules on standard input");
		r = EXIT_USAGE;
	} else {
		r = sign_file_paths(g, argc, argv, &paths);
	}
	pathlist_free(&paths);
	return r;
}
