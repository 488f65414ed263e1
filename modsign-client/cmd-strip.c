/* SPDX-License-Identifier: GPL-2.0-or-later */
/* strip: remove module signatures, offline. */
#include <string.h>

#include "client.h"
#include "commands.h"
#include "modfile.h"

static int strip_one(const char *path)
{
	struct modfile m;
	const char *why;
	int r;

	r = modfile_open(path, true, &m, &why);
	if (r < 0) {
		warn_msg("%s: %s", path, why ?: strerror(-r));
		return r;
	}
	if (m.sig.sig_len > 0) {
		r = modfile_write(&m, NULL, NULL, 0, &why);
		if (r < 0)
			warn_msg("%s: %s%s%s", path, why ?: "", why ? ": " : "",
				 strerror(-r));
	}
	modfile_close(&m);
	return r;
}

static int do_strip(const struct global *g _unused_, int argc, char **argv)
{
	int failed = 0;

	if (argc < 2) {
		warn_msg("strip: no modules given");
		return EXIT_USAGE;
	}
	for (int i = 1; i < argc; i++)
		failed += strip_one(argv[i]) < 0;
	return failed ? 1 : 0;
}

const struct client_cmd cmd_strip = {
	.name = "strip",
	.fn = do_strip,
	.usage = "strip FILE...",
	.help = "remove signatures",
};
