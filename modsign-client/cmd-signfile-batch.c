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
 * That check is made on every server of the pool as it opens (pool.c),
 * before the first module: a server whose key is another is left out,
 * and when none holds it, that is one line and no module reaches a
 * daemon, where one line per module and a signature issued for each
 * would otherwise be.  Every signature returned is still verified with
 * the certificate before it is written (cmd-sign.c).
 */
#include <errno.h>
#include <string.h>

#include "client.h"
#include "commands.h"
#include "paths.h"

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
