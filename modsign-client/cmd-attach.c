/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * attach and sign-file -s: put a detached signature, made where the key
 * is (sign --detached, sign-file -d), into its module where the package
 * is built.
 *
 * sign-file -s appends whatever file it is given.  Here the signature is
 * first verified over this very module with the certificate, by the
 * kernel's rules (pkcs7_verify_module()): a module rebuilt differently
 * from the one that was signed, or a signature by another key, is refused
 * with one line naming the module and why, and the module stays as it
 * was.  Only then is it written, by modfile_write(): untouched or
 * completely signed, never half-written; an old signature is replaced.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <openssl/x509.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "client.h"
#include "commands.h"
#include "modfile.h"
#include "paths.h"
#include "pkcs7.h"
#include "util.h"

struct attach_opts {
	X509 *cert;
	const char *cert_path;
	const struct digest *md;   /* NULL: any hash the kernel takes */
	const char *sigdir;        /* attach --from DIR */
	int sigfd;                 /* its sigtree_open() */
	const char *suffix;
	const struct pathlist *roots;
};

/* Why @sig does not belong to @module, in the words of the distribution
 * flow: the usual cause is a module that was rebuilt differently. */
static void warn_verify(const struct attach_opts *o, const char *module, int r)
{
	if (r == -EKEYREJECTED)
		warn_msg("%s: module differs from the one that was signed", module);
	else if (r == -ENOKEY)
		warn_msg("%s: signature was made by another key than %s", module,
			 o->cert_path);
	else
		warn_msg("%s: %s", module, verify_reason(r));
}

/* The signature file @name in @dirfd (@path in messages): a regular
 * file, not through a link, at most what a module trailer can hold.
 * O_NONBLOCK: a FIFO planted in the tree is refused as not a regular file
 * instead of holding the open for ever. */
static int read_sig(int dirfd, const char *name, const char *path, uint8_t **ret,
		    size_t *ret_len)
{
	char *buf = NULL;
	int r = read_file_at(dirfd, name, MODSIG_MAX_SIG, O_NOFOLLOW | O_NONBLOCK, &buf,
			     ret_len);

	if (r == 0 && *ret_len == 0) {
		free(buf);
		r = -ENODATA;
	}
	if (r < 0) {
		warn_msg("%s: cannot read signature: %s", path,
			 r == -EFBIG    ? "larger than any module signature" :
			 r == -ENODATA  ? "empty file" :
			 r == -EINVAL   ? "not a regular file" :
			 r == -ELOOP    ? "is a symbolic link" : strerror(-r));
		return r;
	}
	*ret = (uint8_t *)buf;
	return 0;
}

/* Verify @sig over the open @m, then write it in. */
static int attach_open(const struct attach_opts *o, struct modfile *m,
		       const char *dest, const uint8_t *sig, size_t len)
{
	const char *why = NULL, *hash = NULL;
	int r;

	r = pkcs7_verify_module(sig, len, o->cert, m->fd, m->sig.body_len, &hash);
	if (r < 0) {
		warn_verify(o, m->path, r);
		return r;
	}
	if (o->md && hash && strcmp(hash, digest_name(o->md)) != 0) {
		warn_msg("%s: signature is made with %s, not %s", m->path, hash,
			 digest_name(o->md));
		return -ENOPKG;
	}
	r = modfile_write(m, dest, sig, len, &why);
	if (r < 0)
		warn_write(dest ?: m->path, r, why);
	return r;
}

/* Verify the signature @sig (@len bytes) over @module, then write it in. */
static int attach_one(const struct attach_opts *o, const char *module,
		      const char *dest, const uint8_t *sig, size_t len)
{
	struct modfile m;
	const char *why;
	int r;

	r = modfile_open(module, dest == NULL, &m, &why);
	if (r < 0) {
		warn_msg("%s: %s", module, why ?: strerror(-r));
		return r;
	}
	r = attach_open(o, &m, dest, sig, len);
	modfile_close(&m);
	return r;
}

static int load_cert(const char *path, X509 **ret)
{
	int r = cert_load_file(path, ret);

	if (r < 0)
		warn_cert(path, r);
	return r;
}

int attach_sign_file(const char *sig, const char *hash, const char *x509,
		     const char *module, const char *dest)
{
	_cleanup_(X509_freep) X509 *cert = NULL;
	_cleanup_(freep) uint8_t *raw = NULL;
	struct attach_opts o = { .cert_path = x509, .md = digest_lookup(hash), .sigfd = -1 };
	size_t len;

	if (!o.md) {
		warn_msg("hash '%s' not allowed: use sha256, sha384 or sha512", hash);
		return EXIT_USAGE;
	}
	if (load_cert(x509, &cert) < 0)
		return 1;
	o.cert = cert;
	if (read_sig(AT_FDCWD, sig, sig, &raw, &len) < 0)
		return 1;
	return attach_one(&o, module, dest, raw, len) < 0 ? 1 : 0;
}

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
	r = read_sig(dirfd, name, path, ret, ret_len);
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
			r = attach_one(o, paths->v[i], NULL, sig, len);
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

int cmd_attach(const struct global *g _unused_, int argc, char **argv)
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
	_cleanup_(X509_freep) X509 *cert = NULL;
	struct attach_opts o = { .suffix = ".p7s", .sigfd = -1 };
	struct pathlist trees = { 0 }, paths = { 0 };
	bool use_stdin = false;
	int c, r = EXIT_USAGE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+r:", opts, NULL)) != -1) {
		if (c == 'f')
			o.sigdir = optarg;
		else if (c == 'c')
			o.cert_path = optarg;
		else if (c == 'S')
			o.suffix = optarg;
		else if (c == 'H' && !(o.md = digest_lookup(optarg))) {
			warn_msg("hash '%s' not allowed: use sha256, sha384 or sha512", optarg);
			goto out;
		} else if (c == 'r' && pathlist_add(&trees, optarg) < 0)
			goto out;
		else if (c == 's')
			use_stdin = true;
		else if (c == '?')
			goto out;
	}
	if (!o.sigdir || !o.cert_path) {
		r = usage(!o.sigdir ? "--from DIR is required" : "--cert CERT is required");
		goto out;
	}
	if (!*o.suffix || strchr(o.suffix, '/')) {
		r = usage("--suffix must be a non-empty file name ending, without '/'");
		goto out;
	}
	o.roots = &trees;
	if (pathlist_collect(argc - optind, argv + optind, &trees, use_stdin, &paths) < 0 ||
	    load_cert(o.cert_path, &cert) < 0) {
		r = 1;
		goto out;
	}
	if (paths.n == 0) {
		r = usage("no modules given");
		goto out;
	}
	o.cert = cert;
	o.sigfd = sigtree_open(o.sigdir, false);
	if (o.sigfd < 0) {
		warn_msg("%s: cannot open the signature tree: %s", o.sigdir, strerror(-o.sigfd));
		r = 1;
		goto out;
	}
	r = attach_paths(&o, &paths) ? 1 : 0;
out:
	if (o.sigfd >= 0)
		close(o.sigfd);
	pathlist_free(&trees);
	pathlist_free(&paths);
	return r;
}
