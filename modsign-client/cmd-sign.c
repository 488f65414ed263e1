/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sign: modules named, found under --recursive trees or read from stdin,
 * signed in one batch over every server of the pool (batch.h), in place
 * or into a signature tree (--detached DIR).
 */
#include <getopt.h>
#include <string.h>

#include "batch.h"
#include "client.h"
#include "commands.h"
#include "paths.h"

/* A signature tree's suffix: a name's end, not a path. */
static bool suffix_ok(const char *suffix)
{
	if (*suffix && !strchr(suffix, '/'))
		return true;
	warn_msg("--suffix '%s': must be a non-empty file name ending, without '/'",
		 suffix);
	return false;
}

static int do_sign(const struct global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "hash", required_argument, NULL, 'H' },
		{ "keyid", no_argument, NULL, 'i' },
		{ "signed-attrs", no_argument, NULL, 'a' },
		{ "recursive", required_argument, NULL, 'r' },
		{ "stdin", no_argument, NULL, 's' },
		{ "detached", required_argument, NULL, 'd' },
		{ "suffix", required_argument, NULL, 'S' },
		{ "cert", required_argument, NULL, 'c' },
		{}
	};
	const char *cert = g->cert;
	struct batch_opts o = { .md = digest_lookup(DIGEST_DEFAULT), .suffix = ".p7s",
				.sigfd = -1 };
	struct pathlist trees = { 0 }, paths = { 0 };
	bool use_stdin = false, suffix_set = false;
	int c, r = EXIT_USAGE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
		if (c == 'k')
			o.key = optarg;
		else if (c == 'H' && !(o.md = client_hash_arg(optarg)))
			goto out;
		else if (c == 'i')
			o.use_keyid = true;
		else if (c == 'a')
			o.mldsa_attrs = true;
		else if (c == 'r' && pathlist_add(&trees, optarg) < 0)
			goto out;
		else if (c == 's')
			use_stdin = true;
		else if (c == 'd')
			o.sigdir = optarg;
		else if (c == 'S' && !suffix_ok(o.suffix = optarg))
			goto out;
		else if (c == 'S')
			suffix_set = true;
		else if (c == 'c')
			cert = optarg;
		else if (c == '?')
			goto out;
	}
	if (suffix_set && !o.sigdir) {
		warn_msg("sign: --suffix is for --detached DIR");
		goto out;
	}
	o.sign_only = o.sigdir != NULL;
	o.roots = &trees;
	if (pathlist_collect(argc - optind, argv + optind, &trees, use_stdin, &paths) < 0) {
		r = 1;
		goto out;
	}
	if (paths.n == 0) {
		warn_msg("sign: no modules given");
		goto out;
	}
	if (o.sigdir && (o.sigfd = sigtree_open(o.sigdir, true)) < 0) {
		warn_msg("%s: cannot make the signature tree: %s", o.sigdir, strerror(-o.sigfd));
		r = 1;
		goto out;
	}
	if (cert && batch_pin_cert(&o, cert) < 0) {
		r = 1;
		goto out;
	}
	r = batch_sign_paths(g, &o, &paths);
out:
	batch_opts_done(&o);
	pathlist_free(&trees);
	pathlist_free(&paths);
	return r;
}

const struct client_cmd cmd_sign = {
	.name = "sign",
	.fn = do_sign,
	.usage = "sign [--key NAME] [--cert CERT] [--hash HASH] [--keyid] [--signed-attrs]\n"
		 "     [--detached DIR [--suffix .p7s|.sig]] [--recursive DIR] [--stdin] FILE...",
	.help = "sign modules in place (re-signs signed ones),\n"
		"or into a signature tree DIR, modules untouched;\n"
		"FILE '-' reads paths from stdin",
};
