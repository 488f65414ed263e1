/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_KEY_BACKEND_H
#define MODSIGND_KEY_BACKEND_H

/*
 * Where a key lives: one file and one row of key_backends[] per kind
 * (key-ephemeral.c, key-pkcs11.c, key-file.c), as kmod keeps one row per
 * compression and the client one conn_ops per transport.  keys.c walks
 * the table and knows no backend by name; metrics.c writes what a row
 * says it counts.  A new backend is a new file, its row below and its
 * options (struct keystore, modsignd/options.c).
 *
 * Contracts, for every row:
 *   claims   true when SOURCE (of NAME=SOURCE) names a key of this kind;
 *            the first row that claims it wins, so a catch-all is last.
 *   check    --check-config: what can be checked of SOURCE without making
 *            a key or opening a token; 0, or -errno and why in @why.
 *            NULL: nothing to check.
 *   open     make or load the key: set k->cert, k->pkey (the private key,
 *            or the certificate's public key when the private part stays
 *            elsewhere), k->state, and k->cert_option when a --cert was
 *            taken.  On failure -errno and *@ret_err a static text (or
 *            ks->why filled), or NULL; the half-made key is freed by the
 *            caller (free, then the generic fields).
 *   sign     @digest into a module signature (lib/pkcs7.h), from any
 *            signing thread; the key says how it signs (k->alg.sig).
 *   sign_mu  an ML-DSA key's mu into the pure form (pkcs7_sign_mu()),
 *            as sign; NULL: the backend cannot (mu requests refused).
 *   health   NULL: always healthy.  Else 0, or the -errno of the last
 *            failure with a static text in *@ret_why; read after each
 *            sign, for key_health().
 *   strerror text for an error of sign; NULL: strerror().
 *   metrics  the per-key counters the backend keeps, written for each of
 *            its keys after the common ones: n_metrics families, each a
 *            counter named and helped once, valued by metric(k, i).
 *   free     release k->state; accepts NULL.  NULL: no state.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "certgen.h"
#include "keys.h"

struct key_metric {
	const char *name; /* modsignd_..._total */
	const char *help;
};

struct key_backend {
	const char *name;
	bool (*claims)(const char *src);
	int (*check)(const char *src, char *why, size_t why_size);
	int (*open)(struct key *k, const char *src, struct keystore *ks,
		    const struct certgen_params *gen, const char **ret_err);
	int (*sign)(struct key *k, const struct digest *md, const uint8_t *digest,
		    size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len);
	int (*sign_mu)(struct key *k, const uint8_t *mu, size_t mu_len, bool use_keyid,
		       uint8_t **ret_der, size_t *ret_len);
	int (*health)(const struct key *k, const char **ret_why);
	const char *(*strerror)(const struct key *k, int err);
	const struct key_metric *metrics;
	size_t n_metrics;
	unsigned long (*metric)(const struct key *k, size_t i);
	void (*free)(void *state);
};

extern const struct key_backend key_backend_ephemeral;
extern const struct key_backend key_backend_pkcs11;
extern const struct key_backend key_backend_file;

/* In order of precedence; NULL-terminated. */
extern const struct key_backend *const key_backends[];

/* The row that claims @src: never NULL (the file backend takes the rest). */
const struct key_backend *key_backend_for(const char *src);

/* Software keys (one-time or file): lib/pkcs7 with k->pkey. */
int key_sign_soft(struct key *k, const struct digest *md, const uint8_t *digest,
		  size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len);

int key_sign_soft_mu(struct key *k, const uint8_t *mu, size_t mu_len, bool use_keyid,
		     uint8_t **ret_der, size_t *ret_len);

#endif
