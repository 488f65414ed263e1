/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_KEYS_H
#define MODSIGND_KEYS_H

/*
 * The daemon's signing keys.  A key is immutable once loaded, so worker
 * threads use it without locks; the private part never leaves this process
 * (or the token that holds it).
 */

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "certgen.h"

#define KEYS_MAX 64

enum key_backend {
	KEY_EPHEMERAL, /* made in memory at start, gone at exit */
	KEY_FILE,      /* PEM file: private key + certificate */
};

struct key {
	char *name;
	enum key_backend backend;
	EVP_PKEY *pkey;
	X509 *cert;
	uint8_t *cert_der;
	size_t cert_der_len;
	char alg[32];   /* "rsa4096", "ecdsa-p384" */
	char *key_id;   /* hex subjectKeyIdentifier (sig_key with --keyid) */
	char *serial;   /* hex serial number (modinfo's sig_key otherwise) */
	char *subject;
};

struct keystore {
	struct key *keys[KEYS_MAX];
	size_t n;
};

const char *key_backend_name(enum key_backend b);

/*
 * Add a key from a --key specification, NAME=ephemeral[:ALG] or
 * NAME=PATH.  On failure returns a negative errno and sets *@ret_err to a
 * static description of what was wrong.
 */
int keystore_add(struct keystore *ks, const char *spec,
		 const struct certgen_params *gen, const char **ret_err);

/*
 * Sign @digest with @k into a module signature (lib/pkcs7.h); called from
 * the signing threads, concurrently.  The backend owns any locking or
 * recovery it needs.  *@ret_der is released with OPENSSL_free().
 */
int key_sign(struct key *k, const EVP_MD *md, const uint8_t *digest,
	     size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len);

/* The key called @name; with @name NULL, the key "default" or the only one. */
struct key *keystore_find(const struct keystore *ks, const char *name);

/* Free every key; private parts are cleared by OpenSSL as they are freed. */
void keystore_clear(struct keystore *ks);

#endif
