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
#include "pkcs7.h"
#include "util.h"

const char *verify_reason(int r)
{
	switch (r) {
	case -EBADMSG:
		return "malformed PKCS#7 signature";
	case -EPROTO:
		return "signature has signed attributes (the kernel rejects it)";
	case -ENOPKG:
		return "signature uses a hash the kernel build does not offer";
	case -ENOKEY:
		return "signed by a different key";
	case -EKEYREJECTED:
		return "BAD signature: module or signature modified";
	}
	return strerror(-r);
}

static int verify_one(const char *path, X509 *cert)
{
	_cleanup_(freep) uint8_t *sig = NULL;
	struct modfile m;
	const char *why, *hash = NULL;
	int r;

	r = modfile_open(path, false, &m, &why);
	if (r < 0) {
		warn_msg("%s: %s", path, why ?: strerror(-r));
		return r;
	}
	if (m.sig.sig_len == 0) {
		warn_msg("%s: not signed", path);
		modfile_close(&m);
		return -ENODATA;
	}
	r = modfile_read_sig(&m, &sig);
	if (r >= 0)
		r = pkcs7_verify_module(sig, m.sig.sig_len, cert, m.fd, m.sig.body_len,
					&hash);
	modfile_close(&m);
	if (r < 0) {
		warn_msg("%s: %s", path, verify_reason(r));
		return r;
	}
	printf("%s: OK (%s)\n", path, hash);
	return 0;
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
	return r < 0 ? r : cmd_cert_fetch(c, key, ret);
}

int cmd_verify(const struct global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "cert", required_argument, NULL, 'c' },
		{ "key", required_argument, NULL, 'k' },
		{}
	};
	_cleanup_(X509_freep) X509 *cert = NULL;
	const char *cert_path = NULL, *key = NULL;
	int o, failed = 0;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (o == 'c')
			cert_path = optarg;
		else if (o == 'k')
			key = optarg;
		else
			return EXIT_USAGE;
	}
	if (optind >= argc) {
		warn_msg("verify: no modules given");
		return EXIT_USAGE;
	}
	if (load_verify_cert(g, cert_path, key, &cert) < 0)
		return 1;
	for (int i = optind; i < argc; i++)
		failed += verify_one(argv[i], cert) < 0;
	return failed ? 1 : 0;
}
