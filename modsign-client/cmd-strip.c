/* SPDX-License-Identifier: GPL-2.0-or-later */
/* strip: remove module signatures, offline. */
#include <getopt.h>
#include <string.h>

#include "client.h"
#include "commands.h"
#include "modfile.h"
#include "paths.h"

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
			warn_msg("%s: %s", path, why ?: strerror(-r));
	}
	modfile_close(&m);
	return r;
}

static int do_strip(const struct global *g _unused_, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "recursive", required_argument, NULL, 'r' },
		{}
	};
	_cleanup_(pathlist_free) struct pathlist trees = { 0 }, paths = { 0 };
	int o, failed = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
		if (o != 'r')
			return EXIT_USAGE;
		if (pathlist_add(&trees, optarg) < 0)
			return 1;
	}
	if (pathlist_collect(argc - optind, argv + optind, &trees, false, &paths) < 0)
		return 1;
	if (paths.n == 0) {
		warn_msg(trees.n ? "strip: no modules found" : "strip: no modules given");
		return trees.n ? 1 : EXIT_USAGE;
	}
	for (size_t i = 0; i < paths.n; i++)
		failed += strip_one(paths.v[i]) < 0;
	return failed ? 1 : 0;
}

const struct client_cmd cmd_strip = {
	.name = "strip",
	.fn = do_strip,
	.usage = "strip [--recursive DIR]... FILE...",
	.help = "remove signatures",
};
