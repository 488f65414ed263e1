/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cert.h"
#include "keyfile.h"
#include "keys.h"
#include "pkcs7.h"
#include "proto.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free)

const char *key_backend_name(enum key_backend b)
{
	switch (b) {
	case KEY_EPHEMERAL:
		return "ephemeral";
	case KEY_FILE:
		return "file";
	case KEY_PKCS11:
		return "pkcs11";
	}
	return "unknown";
}

static void key_free(struct key *k)
{
	if (!k)
		return;
	free(k->name);
	EVP_PKEY_free(k->pkey);
	pkcs11_key_free(k->pkcs11);
	X509_free(k->cert);
	OPENSSL_free(k->cert_der);
	free(k->key_id);
	free(k->serial);
	free(k->cert_sha256);
	free(k->subject);
	free(k);
}

static int valid_name(const char *s, size_t n)
{
	if (n == 0 || n > PROTO_MAX_NAME)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (!(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z') &&
		    !(s[i] >= '0' && s[i] <= '9') && !strchr("-_.", s[i]))
			return 0;
	return 1;
}

static int make_ephemeral(const char *alg, const struct certgen_params *gen,
			  EVP_PKEY **ret_key, X509 **ret_cert, const char **ret_err)
{
	int r;

	r = certgen_key(alg, ret_key);
	if (r < 0)
		return (*ret_err = r == -EINVAL ? "unknown key algorithm" :
						  "key generation failed"), r;
	r = certgen_cert(*ret_key, gen, ret_cert, ret_err);
	if (r < 0)
		EVP_PKEY_free(TAKE_PTR(*ret_key));
	return r;
}

/* A certificate alone, for a token key (--cert NAME=PATH). */
static int load_cert(const char *path, X509 **ret, const char **ret_err)
{
	_cleanup_(BIO_freep) BIO *b = BIO_new_file(path, "r");

	*ret = b ? PEM_read_bio_X509(b, NULL, NULL, NULL) : NULL;
	ERR_clear_error();
	if (!*ret)
		return (*ret_err = "--cert: cannot read a PEM certificate"), -EBADMSG;
	return 0;
}

/* The --cert NAME=PATH path for @name, or NULL. */
static const char *cert_for(const struct keystore *ks, const char *name)
{
	size_t l = strlen(name);

	for (size_t i = 0; i < ks->n_certs; i++)
		if (strncmp(ks->certs[i], name, l) == 0 && ks->certs[i][l] == '=')
			return ks->certs[i] + l + 1;
	return NULL;
}

/*
 * The private key stays on the token: k->pkey is only the certificate's
 * public key, for the description; signing goes through k->pkcs11.
 */
static int open_pkcs11(const struct keystore *ks, struct key *k, const char *uri,
		       const char **ret_err)
{
	const char *cert_path = cert_for(ks, k->name);
	int r;

	if (cert_path && (r = load_cert(cert_path, &k->cert, ret_err)) < 0)
		return r;
	r = pkcs11_key_open(uri, &ks->pkcs11, &k->cert, &k->pkcs11, ret_err);
	if (r < 0)
		return r;
	k->pkey = X509_get_pubkey(k->cert);
	return k->pkey ? 0 : -ENOMEM;
}

int keystore_check_certs(const struct keystore *ks, const char **ret_name)
{
	for (size_t i = 0; i < ks->n_certs; i++) {
		const char *eq = strchr(ks->certs[i], '=');
		bool found = false;

		for (size_t j = 0; j < ks->n && eq && !found; j++)
			found = ks->keys[j]->backend == KEY_PKCS11 &&
				cert_for(ks, ks->keys[j]->name) == eq + 1;
		if (!found)
			return (*ret_name = ks->certs[i]), -ENOENT;
	}
	return 0;
}

/* Derived, printable facts about a loaded key. */
static int key_describe(struct key *k, const char **ret_err)
{
	if (!X509_check_private_key(k->cert, k->pkey)) {
		ERR_clear_error();
		return (*ret_err = "certificate does not match the private key"),
		       -EINVAL;
	}
	if (cert_key_id(k->cert, &k->key_id) < 0)
		return (*ret_err = "certificate has no subjectKeyIdentifier"),
		       -EINVAL;
	if (cert_subject(k->cert, &k->subject) < 0 ||
	    cert_serial(k->cert, &k->serial) < 0 ||
	    cert_to_der(k->cert, &k->cert_der, &k->cert_der_len) < 0 ||
	    cert_fingerprint(k->cert_der, k->cert_der_len, &k->cert_sha256) < 0)
		return -ENOMEM;
	return cert_key_alg(k->pkey, k->alg, sizeof(k->alg));
}

/* The NAME of NAME=SOURCE: its length, or -EINVAL and why not. */
static int spec_name_len(const char *spec, const char **ret_err)
{
	const char *eq = strchr(spec, '=');

	if (!eq || !valid_name(spec, (size_t)(eq - spec)))
		return (*ret_err = "expected NAME=SOURCE with NAME of [A-Za-z0-9._-]"),
		       -EINVAL;
	return (int)(eq - spec);
}

static bool is_file_source(const char *src)
{
	return strcmp(src, "ephemeral") != 0 && strncmp(src, "ephemeral:", 10) != 0 &&
	       !pkcs11_is_uri(src);
}

static int check_spec(const char *const *specs, size_t i, char *why, size_t why_size)
{
	const char *err;
	EVP_PKEY *pkey = NULL;
	X509 *cert = NULL;
	int len = spec_name_len(specs[i], &err), r;

	if (len < 0)
		return snprintf(why, why_size, "%s", err), len;
	for (size_t j = 0; j < i; j++)
		if (strncmp(specs[j], specs[i], (size_t)len + 1) == 0)
			return snprintf(why, why_size, "duplicate key name"), -EEXIST;
	if (!is_file_source(specs[i] + len + 1))
		return 0;
	r = keyfile_read(specs[i] + len + 1, &pkey, &cert, why, why_size);
	EVP_PKEY_free(pkey);
	X509_free(cert);
	return r;
}

int keystore_check(const char *const *specs, size_t n, char *why, size_t why_size,
		   size_t *ret_bad)
{
	for (size_t i = 0; i < n; i++) {
		int r = check_spec(specs, i, why, why_size);

		if (r < 0)
			return (*ret_bad = i), r;
	}
	return 0;
}

int keystore_add(struct keystore *ks, const char *spec,
		 const struct certgen_params *gen, const char **ret_err)
{
	const char *src;
	struct key *k;
	int len, r;

	*ret_err = NULL;
	len = spec_name_len(spec, ret_err);
	if (len < 0)
		return len;
	if (ks->n >= KEYS_MAX)
		return (*ret_err = "too many keys"), -E2BIG;
	src = spec + len + 1;
	k = calloc(1, sizeof(*k));
	if (!k || !(k->name = strndup(spec, (size_t)len))) {
		free(k);
		return -ENOMEM;
	}
	if (keystore_find(ks, k->name)) {
		key_free(k);
		return (*ret_err = "duplicate key name"), -EEXIST;
	}
	if (strcmp(src, "ephemeral") == 0 || strncmp(src, "ephemeral:", 10) == 0) {
		k->backend = KEY_EPHEMERAL;
		r = make_ephemeral(src[9] ? src + 10 : "rsa4096", gen, &k->pkey,
				   &k->cert, ret_err);
	} else if (pkcs11_is_uri(src)) {
		k->backend = KEY_PKCS11;
		r = open_pkcs11(ks, k, src, ret_err);
	} else {
		k->backend = KEY_FILE;
		r = keyfile_read(src, &k->pkey, &k->cert, ks->why, sizeof(ks->why));
		if (r < 0)
			*ret_err = ks->why;
	}
	if (r >= 0)
		r = key_describe(k, ret_err);
	if (r < 0) {
		key_free(k);
		return r;
	}
	ks->keys[ks->n++] = k;
	return 0;
}

int key_sign(struct key *k, const struct digest *md, const uint8_t *digest,
	     size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len)
{
	int r;

	if (k->backend == KEY_PKCS11) {
		const char *why;

		r = pkcs11_key_sign(k->pkcs11, md, digest, digest_len, use_keyid,
				    ret_der, ret_len);
		pkcs11_key_health(k->pkcs11, &why);
		__atomic_store_n(&k->health_why, why, __ATOMIC_RELEASE);
		return r;
	}
	r = pkcs7_sign_digest(k->cert, k->pkey, md, digest, digest_len, use_keyid,
			      ret_der, ret_len);
	ERR_clear_error();
	return r;
}

const char *key_strerror(const struct key *k, int err)
{
	const char *why;

	if (k->backend != KEY_PKCS11)
		return strerror(err < 0 ? -err : err);
	/* The token's own account, when it is about this failure. */
	if (pkcs11_key_health(k->pkcs11, &why) == err && why)
		return why;
	return pkcs11_strerror(err);
}

struct key *keystore_find(const struct keystore *ks, const char *name)
{
	for (size_t i = 0; i < ks->n; i++)
		if (strcmp(ks->keys[i]->name, name ?: "default") == 0)
			return ks->keys[i];
	if (!name && ks->n == 1)
		return ks->keys[0];
	return NULL;
}

void keystore_clear(struct keystore *ks)
{
	for (size_t i = 0; i < ks->n; i++)
		key_free(ks->keys[i]);
	ks->n = 0;
}
