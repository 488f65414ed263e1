/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/err.h>
#include <stdio.h>
#include <string.h>

#include "cert.h"
#include "key-backend.h"
#include "keys.h"
#include "pkcs7.h"
#include "proto.h"
#include "util.h"

/* Who claims a SOURCE, first first: the file backend takes whatever is
 * left, so it is last. */
const struct key_backend *const key_backends[] = {
	&key_backend_ephemeral,
	&key_backend_pkcs11,
	&key_backend_file,
	NULL,
};

const struct key_backend *key_backend_for(const char *src)
{
	for (size_t i = 0; key_backends[i]; i++)
		if (key_backends[i]->claims(src))
			return key_backends[i];
	return &key_backend_file;
}

const char *key_backend_name(const struct key *k)
{
	return k->ops->name;
}

static void key_free(struct key *k)
{
	if (!k)
		return;
	free(k->name);
	EVP_PKEY_free(k->pkey);
	if (k->ops && k->ops->free)
		k->ops->free(k->state);
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

const char *keystore_cert_for(const struct keystore *ks, const char *name)
{
	size_t l = strlen(name);

	for (size_t i = 0; i < ks->n_certs; i++)
		if (strncmp(ks->certs[i], name, l) == 0 && ks->certs[i][l] == '=')
			return ks->certs[i] + l + 1;
	return NULL;
}

int keystore_check_certs(const struct keystore *ks, const char **ret_name)
{
	for (size_t i = 0; i < ks->n_certs; i++) {
		const char *eq = strchr(ks->certs[i], '=');
		bool found = false;

		for (size_t j = 0; j < ks->n && eq && !found; j++)
			found = ks->keys[j]->cert_option == eq + 1;
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
	if (mldsa_of_cert(k->cert)) {
		if (mldsa_cert_tr(k->cert, k->tr) < 0)
			return (*ret_err = "ML-DSA certificate with a bad public key"), -EINVAL;
		k->mldsa = true;
	}
	return cert_key_alg(k->pkey, &k->alg);
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

static int check_spec(const char *const *specs, size_t i, char *why, size_t why_size)
{
	const struct key_backend *b;
	const char *err;
	int len = spec_name_len(specs[i], &err);

	if (len < 0)
		return snprintf(why, why_size, "%s", err), len;
	for (size_t j = 0; j < i; j++)
		if (strncmp(specs[j], specs[i], (size_t)len + 1) == 0)
			return snprintf(why, why_size, "duplicate key name"), -EEXIST;
	b = key_backend_for(specs[i] + len + 1);
	return b->check ? b->check(specs[i] + len + 1, why, why_size) : 0;
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
	k->ops = key_backend_for(src);
	r = k->ops->open(k, src, ks, gen, ret_err);
	if (r >= 0)
		r = key_describe(k, ret_err);
	if (r < 0) {
		key_free(k);
		return r;
	}
	ks->keys[ks->n++] = k;
	return 0;
}

int key_sign_soft(struct key *k, const struct digest *md, const uint8_t *digest,
		  size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len)
{
	int r = pkcs7_sign_digest_as(k->cert, k->pkey, k->alg.sig, md, digest, digest_len,
				     use_keyid, ret_der, ret_len);

	ERR_clear_error();
	return r;
}

int key_sign_soft_mu(struct key *k, const uint8_t *mu, size_t mu_len, bool use_keyid,
		     uint8_t **ret_der, size_t *ret_len)
{
	int r = pkcs7_sign_mu(k->cert, k->pkey, mu, mu_len, use_keyid, ret_der, ret_len);

	ERR_clear_error();
	return r;
}

bool key_signs_mu(const struct key *k)
{
	return k->mldsa && k->ops->sign_mu;
}

int key_sign_mu(struct key *k, const uint8_t *mu, size_t mu_len, bool use_keyid,
		uint8_t **ret_der, size_t *ret_len)
{
	if (!key_signs_mu(k))
		return -EOPNOTSUPP;
	return k->ops->sign_mu(k, mu, mu_len, use_keyid, ret_der, ret_len);
}

int key_sign(struct key *k, const struct digest *md, const uint8_t *digest,
	     size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len)
{
	int r = k->ops->sign(k, md, digest, digest_len, use_keyid, ret_der, ret_len);

	if (k->ops->health) {
		const char *why;

		k->ops->health(k, &why);
		__atomic_store_n(&k->health_why, why, __ATOMIC_RELEASE);
	}
	return r;
}

const char *key_strerror(const struct key *k, int err)
{
	if (k->ops->strerror)
		return k->ops->strerror(k, err);
	return strerror(err < 0 ? -err : err);
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
