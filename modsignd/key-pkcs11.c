/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A key on a PKCS#11 token, NAME=pkcs11:URI, over the token layer of
 * pkcs11.c.  The private key stays on the token: k->pkey is only the
 * certificate's public key, for the description; signing, health and
 * the token's counters go through k->state (a struct pkcs11_key).  The
 * certificate comes from --cert NAME=PATH, else from the token.
 */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <string.h>

#include "key-backend.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(BIO *, BIO_free)

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

static int p11_open(struct key *k, const char *src, struct keystore *ks,
		    const struct certgen_params *gen _unused_, const char **ret_err)
{
	const char *cert_path = keystore_cert_for(ks, k->name);
	struct pkcs11_key *pk = NULL;
	int r;

	k->cert_option = cert_path;
	if (cert_path && (r = load_cert(cert_path, &k->cert, ret_err)) < 0)
		return r;
	r = pkcs11_key_open(src, &ks->pkcs11, &k->cert, &pk, ret_err);
	if (r < 0)
		return r;
	k->state = pk;
	k->pkey = X509_get_pubkey(k->cert);
	return k->pkey ? 0 : -ENOMEM;
}

static int p11_sign(struct key *k, const struct digest *md, const uint8_t *digest,
		    size_t digest_len, bool use_keyid, uint8_t **ret_der, size_t *ret_len)
{
	return pkcs11_key_sign(k->state, k->alg.sig, md, digest, digest_len, use_keyid,
			       ret_der, ret_len);
}

static int p11_health(const struct key *k, const char **ret_why)
{
	return pkcs11_key_health(k->state, ret_why);
}

static const char *p11_strerror(const struct key *k, int err)
{
	const char *why;

	/* The token's own account, when it is about this failure. */
	if (pkcs11_key_health(k->state, &why) == err && why)
		return why;
	return pkcs11_strerror(err);
}

/* In the order of p11_metric(): how much each token key's open is
 * reused (opens, logins and lookups stay while sign calls grow). */
static const struct key_metric p11_metrics[] = {
	{ "modsignd_pkcs11_reopens_total", "Times a token key was opened again after a failure." },
	{ "modsignd_pkcs11_opens_total",
	  "Times a token key was opened and made usable (slots listed, login, objects searched)." },
	{ "modsignd_pkcs11_logins_total", "C_Login calls made for a token key." },
	{ "modsignd_pkcs11_object_lookups_total", "Searches of the token's objects for a key." },
	{ "modsignd_pkcs11_sign_calls_total",
	  "Signatures asked of the token on the kept key handle and a pooled session." },
};

static unsigned long p11_metric(const struct key *k, size_t i)
{
	struct pkcs11_key_stats st;

	if (i == 0)
		return pkcs11_key_reopens(k->state);
	pkcs11_key_stats(k->state, &st);
	switch (i) {
	case 1:
		return st.opens;
	case 2:
		return st.logins;
	case 3:
		return st.lookups;
	default:
		return st.sign_calls;
	}
}

static void p11_free(void *state)
{
	pkcs11_key_free(state);
}

const struct key_backend key_backend_pkcs11 = {
	.name = "pkcs11",
	.claims = pkcs11_is_uri,
	.open = p11_open,
	.sign = p11_sign,
	.health = p11_health,
	.strerror = p11_strerror,
	.metrics = p11_metrics,
	.n_metrics = ELEMENTSOF(p11_metrics),
	.metric = p11_metric,
	.free = p11_free,
};
