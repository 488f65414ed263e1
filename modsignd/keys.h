/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_KEYS_H
#define MODSIGND_KEYS_H

/*
 * The daemon's signing keys.  A key's description is immutable once
 * loaded, so worker threads use it without locks; the private part never
 * leaves this process (or the token that holds it).  Where a key comes
 * from, how it signs and what it reports is its backend's
 * (modsignd/key-backend.h: one file and one table row per kind of key);
 * keys.c keeps the keystore and reaches a backend only through its row,
 * and struct keystore carries the backends' options.  A backend
 * with state that changes (a PKCS#11 token's handle and health) keeps it
 * behind key_sign() and key_health().
 */

#include <limits.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include "digest.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "certgen.h"
#include "pkcs11.h"
#include "mldsa.h"
#include "pkcs7.h"

#define KEYS_MAX 64

struct key_backend;

enum key_health {
	KEY_HEALTH_OK,          /* signed (or loaded) fine last time */
	KEY_HEALTH_UNAVAILABLE, /* token failed; re-opened on later requests */
};

struct key {
	char *name;
	const struct key_backend *ops; /* where the key lives: its row of key_backends[] */
	void *state;     /* the backend's own, freed by ops->free; NULL when none */
	EVP_PKEY *pkey;  /* the private key, or (a token key) the certificate's public key */
	const char *cert_option; /* the --cert PATH the key took (in keystore.certs), or NULL */
	const char *health_why; /* NULL: healthy; else why not (static text; atomic) */
	X509 *cert;
	uint8_t *cert_der;
	size_t cert_der_len;
	struct pkcs7_key_alg alg; /* "rsa4096", "ecdsa-p384"; and how it signs: set at open */
	char *key_id;   /* hex subjectKeyIdentifier (sig_key with --keyid) */
	char *serial;   /* hex serial number (modinfo's sig_key otherwise) */
	char *cert_sha256; /* hex SHA-256 of cert_der: clients match it cheaply */
	char *subject;
	bool mldsa;     /* an ML-DSA key: signs mu requests, with ... */
	uint8_t tr[MLDSA_TR_LEN]; /* ... tr of its certificate's key (lib/mldsa.h) */
};

struct keystore {
	struct key *keys[KEYS_MAX];
	size_t n;
	/* Settings for keys added later: set before keystore_add(). */
	struct pkcs11_options pkcs11;
	const char *const *certs; /* --cert NAME=PATH, for keys that take one */
	size_t n_certs;
	char why[PATH_MAX + 128]; /* room for the *ret_err of keystore_add() */
};

/* The name of @k's backend ("ephemeral", "file", "pkcs11"): the status
 * reply's "backend", the metrics' label. */
const char *key_backend_name(const struct key *k);

/*
 * For --check-config: check @specs as keystore_add() would, without making
 * one-time keys or opening tokens: each NAME valid and used once, each
 * SOURCE checked by the backend that claims it (a key file read with
 * keyfile_read() and forgotten).  Returns 0, or -errno with the reason in
 * @why and the index of the first bad spec in *@ret_bad.
 */
int keystore_check(const char *const *specs, size_t n, char *why, size_t why_size,
		   size_t *ret_bad);

/*
 * Add a key from a --key specification, NAME=ephemeral[:ALG], NAME=PATH
 * or NAME=pkcs11:URI.  On failure returns a negative errno and sets
 * *@ret_err to a static description of what was wrong (or NULL).
 */
int keystore_add(struct keystore *ks, const char *spec,
		 const struct certgen_params *gen, const char **ret_err);

/*
 * Sign @digest with @k into a module signature (lib/pkcs7.h); called from
 * the signing threads, concurrently.  The backend owns any locking or
 * recovery it needs.  *@ret_der is released with OPENSSL_free().
 */
int key_sign(struct key *k, const struct digest *md, const uint8_t *digest,
	     size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len);

/*
 * Sign @mu (the external mu of a module for this key, lib/mldsa.h) into
 * the pure ML-DSA module signature (pkcs7_sign_mu()).  -EOPNOTSUPP when
 * the key's backend cannot (a token), or the key is no ML-DSA key.
 */
bool key_signs_mu(const struct key *k);
int key_sign_mu(struct key *k, const uint8_t *mu, size_t mu_len, bool use_keyid,
		uint8_t **ret_der, size_t *ret_len);

/* Text for an error key_sign() returned for @k; never NULL. */
const char *key_strerror(const struct key *k, int err);

/*
 * The key's health as of its last use; *@ret_why is NULL or a static text
 * saying what is wrong.  Inline, so that readers (request.c) need nothing
 * from the backends.
 */
static inline enum key_health key_health(const struct key *k, const char **ret_why)
{
	*ret_why = __atomic_load_n(&k->health_why, __ATOMIC_ACQUIRE);
	return *ret_why ? KEY_HEALTH_UNAVAILABLE : KEY_HEALTH_OK;
}

static inline const char *key_health_name(enum key_health h)
{
	return h == KEY_HEALTH_OK ? "ok" : "unavailable";
}

/* The PATH of the --cert NAME=PATH for the key @name, or NULL (for the
 * backends that take a certificate apart from the key). */
const char *keystore_cert_for(const struct keystore *ks, const char *name);

/* 0 when every --cert was taken by a key, else -ENOENT with *@ret_name. */
int keystore_check_certs(const struct keystore *ks, const char **ret_name);

/* The key called @name; with @name NULL, the key "default" or the only one. */
struct key *keystore_find(const struct keystore *ks, const char *name);

/* Free every key; private parts are cleared by OpenSSL as they are freed. */
void keystore_clear(struct keystore *ks);

#endif
