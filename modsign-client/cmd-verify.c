/* SPDX-License-Identifier: GPL-2.0-or-later */
/* verify: check module signatures by the kernel's rules, offline (verify
 * --key asks the daemon for the certificate only). */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cert.h"
#include "client.h"
#include "commands.h"
#include "modfile.h"
#include "paths.h"
#include "pkcs7.h"
#include "util.h"
#include "verify.h"

/* Check @path's signature against @cert, with @m: 0 and *@ret_hash, or
 * -errno and *@ret_why (static text or in @m, NULL: verify_reason()). */
static int verify_check(const char *path, X509 *cert, struct modfile *m,
			const char **ret_hash, const char **ret_why)
{
	_cleanup_(freep) uint8_t *sig = NULL;
	int r;

	*ret_why = NULL;
	r = modfile_open(path, false, m, ret_why);
	if (r < 0) {
		*ret_why = *ret_why ?: strerror(-r); /* the file's, not a signature's */
		return r;
	}
	if (m->sig.sig_len == 0) {
		modfile_close(m);
		*ret_why = "not signed";
		return -ENODATA;
	}
	r = modfile_read_sig(m, &sig);
	if (r >= 0)
		r = pkcs7_verify_module(sig, m->sig.sig_len, cert, m->fd, m->sig.body_len,
					ret_hash);
	modfile_close(m);
	return r;
}

static int verify_one(const char *path, X509 *cert, json_object *json)
{
	const char *why, *hash = NULL;
	struct modfile m; /* its reason outlives its close, for the message */
	int r = verify_check(path, cert, &m, &hash, &why);
	json_object *o;

	if (!json) {
		if (r < 0)
			warn_msg("%s: %s", path, why ?: verify_reason(r));
		else
			out_line("%s: OK (%s)", path, hash);
		return r;
	}
	o = json_object_new_object();
	if (!o)
		return -ENOMEM;
	json_object_object_add(o, "module", json_object_new_string(path));
	json_object_object_add(o, "ok", json_object_new_boolean(r >= 0));
	if (r >= 0)
		json_object_object_add(o, "hash", json_object_new_string(hash));
	else
		json_object_object_add(o, "error",
				       json_object_new_string(why ?: verify_reason(r)));
	json_object_array_add(json, o);
	return r;
}

/* verify --json: {"modules":[{"module":P,"ok":B,"hash"|"error":S}...],
 * "failed":N} on standard output, nothing on stderr per module. */
static void print_json(json_object *arr, int failed)
{
	_cleanup_(json_object_putp) json_object *doc = json_object_new_object();

	if (!doc)
		return;
	json_object_object_add(doc, "modules", json_object_get(arr));
	json_object_object_add(doc, "failed", json_object_new_int(failed));
	out_json(doc);
}

static int load_verify_cert(const struct global *g, const char *path,
			    const char *key, X509 **ret)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	int r;

	if (path) {
		r = cert_load_file(path, ret);
		if (r < 0)
			warn_cert(path, r);
		return r;
	}
	r = client_connect(g, &c);
	return r < 0 ? r : client_cert_fetch(c, key, ret);
}

static int do_verify(const struct global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{ "json", no_argument, NULL, 'j' },
		{ "recursive", required_argument, NULL, 'r' },
		{}
	};
	_cleanup_(X509_freep) X509 *cert = NULL;
	_cleanup_(json_object_putp) json_object *json = NULL;
	_cleanup_(pathlist_free) struct pathlist trees = { 0 }, paths = { 0 };
	const char *cert_path = NULL, *key = NULL;
	int o, r, failed = 0, unchecked = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
		if (o == 'c')
			cert_path = optarg;
		else if (o == 'k')
			key = optarg;
		else if (o == 'j' && !json && !(json = json_object_new_array()))
			return 1;
		else if (o == 'r' && pathlist_add(&trees, optarg) < 0)
			return 1;
		else if (o != 'j' && o != 'r')
			return EXIT_USAGE;
	}
	if (pathlist_collect(argc - optind, argv + optind, &trees, false, &paths) < 0)
		return 1;
	if (paths.n == 0) {
		warn_msg(trees.n ? "verify: no modules found" : "verify: no modules given");
		return trees.n ? 1 : EXIT_USAGE;
	}
	if (load_verify_cert(g, cert_path, key, &cert) < 0)
		return 1;
	/* A signature this OpenSSL cannot check is neither: counted apart,
	 * and the exit status says so when nothing failed. */
	for (size_t i = 0; i < paths.n; i++) {
		r = verify_one(paths.v[i], cert, json);
		unchecked += r == -ENOSYS;
		failed += r < 0 && r != -ENOSYS;
	}
	if (json)
		print_json(json, failed);
	return failed ? 1 : unchecked ? EXIT_UNCHECKED : 0;
}

const struct client_cmd cmd_verify = {
	.name = "verify",
	.fn = do_verify,
	.usage = "verify [--cert CERT | --key NAME] [--json] [--recursive DIR]... FILE...",
	.help = "check signatures by the kernel's rules",
};
