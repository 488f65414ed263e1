/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_BATCH_H
#define MODSIGN_CLIENT_BATCH_H

/*
 * Signing modules through the daemons, for sign and sign-file (the
 * commands parse their arguments into a struct batch_opts; everything
 * after that is here): hash each module, send its digest, check the
 * signature that comes back, and write it where it goes.
 *
 * A batch (batch_sign_paths()) keeps a window of requests in flight on
 * every server of its pool (pool.h) and fails over: a server that fails,
 * stalls or returns what does not verify is dropped and its requests go
 * to the others; a module one server refuses goes to one that has not.
 * kbuild's one module per call (batch_sign_one()) goes to one server,
 * and on that server's failure to the next of the list.
 *
 * Contract for both: a module is written at most once, only with a
 * signature verified over its digest with the batch's certificate, and
 * untouched otherwise (modfile.h); every module not signed is named on
 * stderr, once, with the reason.  The result is the process exit status:
 * 0 every module signed, 1 not.
 *
 * Layering: commands (cmd-*.c) call this; this calls pool.h and conn.h,
 * modfile.h and paths.h, and no command.
 */

#include <stdbool.h>

#include <openssl/x509.h>

#include "client.h"
#include "mldsa.h"
#include "paths.h"

/*
 * The decompressed modules a batch holds in memory at once.  A compressed
 * module is signed from its decompressed copy, a memfd of up to
 * MODFILE_MAX_DECOMPRESSED (modfile.h), held from its hash until its
 * signature is written; with a window of 1024 requests per server a tree
 * of crafted modules just under that limit would hold up to 256 GiB per
 * server (the attack review held 1.58 GB with 24 of 64 MiB).  A batch
 * opens no new module while the ones open hold this much, unless none is
 * in flight (one module always may, so that one of MODFILE_MAX_DECOMPRESSED
 * signs and a batch never waits on nothing): it holds less than this
 * plus one module, 512 MiB (batch.c, batch_may_open()).
 * Real trees never reach it: the most any 1024
 * modules in a row of Debian 13's hold (a full window) is 169 MiB, and a
 * batch of that tree, whose replies come back as fast as it hashes, holds
 * far fewer at once (docs/PERFORMANCE.md, "Decompressed modules held").
 */
#define BATCH_MAX_DECOMPRESSED_HELD (256u << 20)

struct batch_opts {
	const char *key;         /* NULL: the daemon's default */
	const struct digest *md;
	bool use_keyid;          /* the signer named by subjectKeyIdentifier */
	char *expect_cert;       /* sign-file, sign --cert: SHA-256 of the
				  * certificate given (kbuild's to embed);
				  * batch_pin_cert() */
	X509 *cert;              /* the certificate each signature returned is
				  * verified with: that one, or the pool's
				  * (pool_open()), parsed once per run */
	const char *expect_path; /* where it came from */
	bool sign_only;          /* sign-file -d, sign --detached: the
				  * signature alone, the module untouched */
	bool save_sig;           /* sign-file -p or -d: MODULE.p7s beside it */
	const char *sigdir;      /* sign --detached DIR: a signature tree
				  * (paths.h) */
	int sigfd;               /* its sigtree_open(), -1 if none */
	const char *suffix;      /* its files' suffix */
	const struct pathlist *roots; /* the --recursive trees, for its paths */
	/* An ML-DSA certificate: the pure form (each module's mu sent, with
	 * the tr of the certificate's key), unless @mldsa_attrs asks for
	 * the signed-attributes form.  Set by batch.c once @cert is known. */
	bool mldsa_attrs;        /* sign --signed-attrs, sign-file -a (sha512) */
	bool mu;
	uint8_t tr[MLDSA_TR_LEN];
	/* The budget of decompressed bytes held (0: BATCH_MAX_DECOMPRESSED_HELD;
	 * a test's smaller one), and, after a batch, the most it held at once
	 * and what it still counted once every module was closed (0: every
	 * path released what it held). */
	uint64_t held_budget;
	uint64_t held_peak, held_left;
};

/*
 * Pin @o to the certificate file @path: each server must hold its key,
 * and each signature must verify with it.  0, or -errno (said).
 */
int batch_pin_cert(struct batch_opts *o, const char *path);

/* Free what batch_pin_cert() and a batch put in @o, and close its sigfd. */
void batch_opts_done(struct batch_opts *o);

/*
 * Sign every path of @paths in one batch over the pool of @g's servers
 * (pool_open(): every one that holds the key of @o's certificate, or, if
 * none is pinned, all the same one, which @o->cert then is).  Where each
 * signature goes: into the module in place (default), and/or beside it
 * as MODULE.p7s (@o->save_sig), or into the tree @o->sigdir.  Returns the
 * exit status.
 */
int batch_sign_paths(const struct global *g, struct batch_opts *o,
		     const struct pathlist *paths);

/*
 * kbuild's one module per call: @path (to @dest; NULL: in place) on the
 * server a hash of its path picks (client_connect_spread()); on a server's
 * failure (a refusal, a signature that does not verify, the connection
 * lost before the reply) on the next of the list, each asked once.  A
 * failure of the module's own (its file, its write) is not tried again.
 * @o must be pinned (batch_pin_cert()).  Returns the exit status.
 */
int batch_sign_one(const struct global *g, struct batch_opts *o, const char *path,
		   const char *dest);

#endif
