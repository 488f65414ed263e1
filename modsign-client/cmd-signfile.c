/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * sign-file, scripts/sign-file's drop-in, in all its forms:
 *
 *   sign-file [-dpka] HASH KEY X509 MODULE [DEST]   kbuild's one module per
 *       call, signed by the daemon (batch_sign_one());
 *   sign-file -s SIG HASH X509 MODULE [DEST]       a signature made before,
 *       attached once it verifies (attach.h);
 *   sign-file --batch [-dpka] HASH KEY X509         kbuild's
 *       MODULE_SIGN_BATCH_CMD (kernel-patches/0004): called once, after
 *       every module is installed and before any is compressed, with the
 *       paths of all the modules on standard input, one per line, signed
 *       as "sign" signs a batch (batch_sign_paths()).
 *
 * -d and -p mean what they mean to sign-file: each module's signature
 * goes to MODULE.p7s too (-p) or only (-d).  The daemon's key must be the
 * certificate X509 that kbuild embeds.  In a batch that is checked on
 * every server of the pool as it opens (pool.c), before the first module:
 * a server whose key is another is left out, and when none holds it,
 * that is one line and no module reaches a daemon, where one line per
 * module and a signature issued for each would otherwise be.  Every
 * signature returned is still verified with the certificate before it is
 * written (batch.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <p11-kit/uri.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "batch.h"
#include "client.h"
#include "commands.h"
#include "dlopen.h"
#include "paths.h"
#include "util.h"

/* p11-kit parses a pkcs11: KEY only: loaded when one is given
 * (lib/dlopen.h), not by every per-module call. */
#define P11KIT_SYMS(X)                                                         \
	X(p11_kit_uri_new) X(p11_kit_uri_parse) X(p11_kit_uri_get_attribute)  \
	X(p11_kit_uri_free)
P11KIT_SYMS(DLSYM_POINTER)
static const struct dlsym p11kit_syms[] = { P11KIT_SYMS(DLSYM_ENTRY) };
static struct dlopen_lib p11kit_lib = DLOPEN_LIB("libp11-kit.so.0", p11kit_syms);

/* The bytes of attribute @type of @uri as a key name (*@ret, a new
 * string), or *@ret NULL when the URI has none; -EINVAL for an empty one
 * or one with a NUL (percent-encoded: %00), which no key is named. */
static int uri_name(P11KitUri *uri, CK_ATTRIBUTE_TYPE type, char **ret)
{
	CK_ATTRIBUTE *a = sym_p11_kit_uri_get_attribute(uri, type);

	*ret = NULL;
	if (!a)
		return 0;
	if (a->ulValueLen == 0 || a->ulValueLen == CK_UNAVAILABLE_INFORMATION ||
	    memchr(a->pValue, 0, a->ulValueLen))
		return -EINVAL;
	*ret = strndup(a->pValue, a->ulValueLen);
	return *ret ? 0 : -ENOMEM;
}

/* A pkcs11: KEY's daemon key: object=, else id=, else none (NULL). */
static int key_from_uri(const char *arg, char **ret)
{
	P11KitUri *uri = sym_p11_kit_uri_new();
	CK_ATTRIBUTE *cls;
	int r = -EINVAL;

	*ret = NULL;
	if (!uri)
		return -ENOMEM;
	if (sym_p11_kit_uri_parse(arg, P11_KIT_URI_FOR_OBJECT_ON_TOKEN_AND_MODULE, uri) !=
	    P11_KIT_URI_OK)
		goto out;
	cls = sym_p11_kit_uri_get_attribute(uri, CKA_CLASS);
	if (cls && (cls->ulValueLen != sizeof(CK_OBJECT_CLASS) ||
		    *(CK_OBJECT_CLASS *)cls->pValue != CKO_PRIVATE_KEY))
		goto out; /* type=cert or public: not a key to sign with */
	r = uri_name(uri, CKA_LABEL, ret);
	if (r == 0 && !*ret)
		r = uri_name(uri, CKA_ID, ret);
out:
	sym_p11_kit_uri_free(uri);
	return r;
}

/*
 * sign-file's KEY argument, as the daemon key it names (*@ret, a new
 * string; NULL: the daemon's default key):
 *
 *   modsign:NAME         the key NAME;
 *   pkcs11:URI           the key its object= names (else its id=, else the
 *                        default key): RFC 7512's URI, parsed by p11-kit
 *                        (percent-encoding, token=, type=private, id=).
 *                        It is how modsign's PKCS#11 module names a daemon
 *                        key (issue 32), so one DKMS line,
 *                        mok_signing_key=pkcs11:object=NAME, works with
 *                        this client as sign_file and with the kernel's
 *                        sign-file through that module; and DKMS makes no
 *                        key for a pkcs11: one (docs/KERNEL.md);
 *   anything else        a key file of the unpatched kbuild: the default
 *                        key.
 *
 * Which key signs is still pinned by X509 (batch_pin_cert()).  A pkcs11:
 * URI that is malformed, names no private key or an empty name is
 * refused: -EINVAL, said; so is p11-kit that cannot be loaded: -ELIBACC.
 */
static int key_arg(const char *arg, char **ret)
{
	char why[256];
	int r;

	*ret = NULL;
	if (strncmp(arg, "modsign:", 8) == 0 && arg[8])
		return (*ret = strdup(arg + 8)) ? 0 : -ENOMEM;
	if (strncmp(arg, "pkcs11:", 7) != 0)
		return 0;
	r = dlopen_lib_load(&p11kit_lib, why, sizeof(why));
	if (r < 0) {
		warn_msg("key '%s': cannot load %s to parse it: %s", arg, p11kit_lib.soname, why);
		return r;
	}
	r = key_from_uri(arg, ret);
	if (r == -EINVAL)
		warn_msg("key '%s': not a pkcs11: URI of a daemon key "
			 "(pkcs11:object=NAME, RFC 7512)", arg);
	else if (r < 0)
		warn_msg("%s", strerror(-r));
	return r;
}

/*
 * sign-file's options: -p also writes MODULE.p7s, -d writes only that,
 * -k names the signer by subjectKeyIdentifier, -a (modsign's own) makes
 * an ML-DSA key's signature with signed attributes, -s attaches a signature
 * made before (*@ret_raw; then -d and -p mean nothing and are refused,
 * as -s is with --batch, @raw_ok false).  Returns the index of the first
 * argument, or -EINVAL (said why).
 */
static int sign_file_opts(int argc, char **argv, bool raw_ok, struct batch_opts *o,
			  bool *ret_raw)
{
	int c;

	*ret_raw = false;
	optind = 1;
	opterr = 0;
	while ((c = getopt(argc, argv, "+sdpka")) != -1) {
		if (c == 'k')
			o->use_keyid = true;
		else if (c == 'a')
			o->mldsa_attrs = true;
		else if (c == 'p')
			o->save_sig = true;
		else if (c == 'd')
			o->save_sig = o->sign_only = true;
		else if (c == 's' && raw_ok)
			*ret_raw = true;
		else if (c == 's') {
			warn_msg("sign-file --batch: '-s' attaches one signature; "
				 "for many, use 'attach --from DIR'");
			return -EINVAL;
		} else {
			warn_msg("sign-file: option '-%c' is not supported", optopt);
			return -EINVAL;
		}
	}
	if (*ret_raw && o->save_sig) {
		warn_msg("sign-file: '-s' attaches a signature, '-%c' would make one: use one of them",
			 o->sign_only ? 'd' : 'p');
		return -EINVAL;
	}
	return optind;
}

/* sign-file -s SIG HASH X509 MODULE [DEST]: the signature in the file
 * @sig appended to @module (at @dest; NULL: in place) once it verifies
 * over it with the certificate in @x509 and is made with @hash. */
static int sign_file_attach(const char *sig, const char *hash, const char *x509,
			    const char *module, const char *dest)
{
	_cleanup_(freep) uint8_t *raw = NULL;
	struct attach_pin pin = { .md = client_hash_arg(hash) };
	size_t len;
	int r;

	if (!pin.md)
		return EXIT_USAGE;
	if (attach_pin_load(&pin, x509) < 0)
		return 1;
	r = attach_read_sig(AT_FDCWD, sig, sig, &raw, &len);
	if (r >= 0)
		r = attach_module(&pin, module, dest, raw, len);
	X509_free(pin.cert);
	return r < 0 ? 1 : 0;
}

/* sign-file's HASH KEY X509 into @o, the key's name in *@keyname (the
 * caller frees it after @o's use); the exit status if they are wrong. */
static int sign_file_args(char **args, struct batch_opts *o, char **keyname)
{
	int r;

	o->md = client_hash_arg(args[0]);
	if (!o->md)
		return EXIT_USAGE;
	r = key_arg(args[1], keyname);
	if (r < 0)
		return r == -ELIBACC ? 1 : EXIT_USAGE; /* not the caller's mistake */
	o->key = *keyname;
	return batch_pin_cert(o, args[2]) < 0 ? 1 : 0;
}

/* sign-file --batch [-dpka] HASH KEY X509, the modules on stdin: @argv[0]
 * is "--batch". */
static int sign_file_batch(const struct global *g, int argc, char **argv)
{
	_cleanup_(freep) char *keyname = NULL;
	struct batch_opts o = { .sigfd = -1 };
	struct pathlist paths = { 0 };
	bool raw;
	int i, r;

	r = pathlist_add_lines(&paths, stdin);
	if (r < 0) {
		warn_msg("standard input: %s", strerror(-r));
		r = 1;
	} else if (paths.n == 0) {
		warn_msg("sign-file --batch: no modules on standard input");
		r = EXIT_USAGE;
	} else if ((i = sign_file_opts(argc, argv, false, &o, &raw)) < 0) {
		r = EXIT_USAGE;
	} else if (argc - i != 3) {
		warn_msg("usage: sign-file --batch [-dpka] <hash> <key> <x509> < list of modules");
		r = EXIT_USAGE;
	} else if ((r = sign_file_args(argv + i, &o, &keyname)) == 0) {
		r = batch_sign_paths(g, &o, &paths); /* each server's key checked first */
	}
	batch_opts_done(&o);
	pathlist_free(&paths);
	return r;
}

static int do_sign_file(const struct global *g, int argc, char **argv)
{
	_cleanup_(freep) char *keyname = NULL;
	struct batch_opts o = { .sigfd = -1 };
	const char *dest = NULL;
	bool raw;
	int i, r;

	if (argc > 1 && strcmp(argv[1], "--batch") == 0)
		return sign_file_batch(g, argc - 1, argv + 1);
	i = sign_file_opts(argc, argv, true, &o, &raw);
	if (i < 0)
		return EXIT_USAGE;
	if (argc - i < 4 || argc - i > 5) {
		warn_msg("usage: sign-file [-dpka] <hash> <key> <x509> <module> [<dest>]");
		warn_msg("usage: sign-file -s <raw sig> <hash> <x509> <module> [<dest>]");
		return EXIT_USAGE;
	}
	if (argc - i == 5 && strcmp(argv[i + 3], argv[i + 4]) != 0)
		dest = argv[i + 4];
	if (raw)
		return sign_file_attach(argv[i], argv[i + 1], argv[i + 2], argv[i + 3], dest);
	r = sign_file_args(argv + i, &o, &keyname);
	if (r == 0)
		r = batch_sign_one(g, &o, argv[i + 3], dest);
	batch_opts_done(&o);
	return r;
}

const struct client_cmd cmd_sign_file = {
	.name = "sign-file",
	.fn = do_sign_file,
	.usage = "sign-file [-dpka] HASH KEY X509 MODULE [DEST]\n"
		 "sign-file -s SIG HASH X509 MODULE [DEST]\n"
		 "sign-file --batch [-dpka] HASH KEY X509 < MODULES",
	.help = "scripts/sign-file drop-in (KEY: modsign:NAME or\n"
		"pkcs11:object=NAME); also run as sign-file, or\n"
		"with HASH first (DKMS's sign_file)",
};
