/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * attach: put the detached signatures of a signature tree (sign
 * --detached DIR) into their modules where the package is built, each
 * verified first (attach.h).
 */
#include <errno.h>
#include <getopt.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "client.h"
#include "commands.h"
#include "paths.h"
#include "util.h"

struct attach_opts {
	struct attach_pin pin;
	const char *sigdir;        /* attach --from DIR */
	int sigfd;                 /* its sigtree_open() */
	const char *suffix;
	const struct pathlist *roots;
};

/* The signature at @path in the tree, read from the tree's descriptor one
 * level at a time, never through a link. */
static int read_tree_sig(const struct attach_opts *o, const char *path, uint8_t **ret,
			 size_t *ret_len)
{
	const char *name;
	int dirfd = sigtree_open_dir(o->sigfd, o->sigdir, path, false, &name), r;

	if (dirfd < 0) {
		warn_msg("%s: cannot read signature: %s", path, sigtree_strerror(dirfd));
		return dirfd;
	}
	r = attach_read_sig(dirfd, name, path, ret, ret_len);
	close(dirfd);
	return r;
}

/* Each module with its signature from the tree; how many failed. */
static size_t attach_paths(const struct attach_opts *o, const struct pathlist *paths)
{
	size_t failed = 0;

	for (size_t i = 0; i < paths->n; i++) {
		_cleanup_(freep) char *path = NULL;
		_cleanup_(freep) uint8_t *sig = NULL;
		size_t len = 0;
		int r = sigtree_path(o->sigdir, o->roots, paths->v[i], o->suffix, &path);

		if (r == -EINVAL)
			warn_msg("%s: a path with '..' has no place in the signature tree",
				 paths->v[i]);
		else if (r < 0)
			warn_msg("%s", strerror(-r));
		else if ((r = read_tree_sig(o, path, &sig, &len)) >= 0)
			r = attach_module(&o->pin, paths->v[i], NULL, sig, len);
		failed += r < 0;
	}
	return failed;
}

static int usage(const char *why)
{
	warn_msg("attach: %s (usage: attach --from DIR --cert CERT [--suffix SUF] "
		 "[--recursive TREE]... [--stdin] [MODULE...])", why);
	return EXIT_USAGE;
}

static int do_attach(const struct global *g _unused_, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "from", required_argument, NULL, 'f' },
		{ "cert", required_argument, NULL, 'c' },
		{ "suffix", required_argument, NULL, 'S' },
		{ "hash", required_argument, NULL, 'H' },
		{ "recursive", required_argument, NULL, 'r' },
		{ "stdin", no_argument, NULL, 's' },
		{}
	};
	struct attach_opts o = { .suffix = ".p7s", .sigfd = -1 };
	struct pathlist trees = { 0 }, paths = { 0 };
	bool use_stdin = false;
	int c, r = EXIT_USAGE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
		if (c == 'f')
			o.sigdir = optarg;
		else if (c == 'c')
			o.pin.cert_path = optarg;
		else if (c == 'S')
			o.suffix = optarg;
		else if (c == 'H' && !(o.pin.md = client_hash_arg(optarg)))
			goto out;
		else if (c == 'r' && pathlist_add(&trees, optarg) < 0)
			goto out;
		else if (c == 's')
			use_stdin = true;
		else if (c == '?')
			goto out;
	}
	if (!o.sigdir || !o.pin.cert_path) {
		r = usage(!o.sigdir ? "--from DIR is required" : "--cert CERT is required");
		goto out;
	}
	if (!*o.suffix || strchr(o.suffix, '/')) {
		r = usage("--suffix must be a non-empty file name ending, without '/'");
		goto out;
	}
	o.roots = &trees;
	if (pathlist_collect(argc - optind, argv + optind, &trees, use_stdin, &paths) < 0 ||
	    attach_pin_load(&o.pin, o.pin.cert_path) < 0) {
		r = 1;
		goto out;
	}
	if (paths.n == 0) {
		r = usage("no modules given");
		goto out;
	}
	o.sigfd = sigtree_open(o.sigdir, false);
	if (o.sigfd < 0) {
		warn_msg("%s: cannot open the signature tree: %s", o.sigdir, strerror(-o.sigfd));
		r = 1;
		goto out;
	}
	r = attach_paths(&o, &paths) ? 1 : 0;
out:
	X509_free(o.pin.cert);
	if (o.sigfd >= 0)
		close(o.sigfd);
	pathlist_free(&trees);
	pathlist_free(&paths);
	return r;
}

const struct client_cmd cmd_attach = {
	.name = "attach",
	.fn = do_attach,
	.usage = "attach --from DIR --cert CERT [--suffix SUF] [--recursive DIR] [--stdin] FILE...",
	.help = "append signatures from a tree, each verified first",
};
