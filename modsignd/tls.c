/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <ctype.h>
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>

#include "keyfile.h"
#include "keys.h"
#include "tls.h"
#include "tlsgroups.h"
#include "util.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)

/*
 * What a client certificate must be beyond chaining to --tls-client-ca: a
 * leaf made for TLS clients.  OpenSSL's ssl_client purpose already looks at
 * the leaf's extended key usage, key usage and nsCertType, but it accepts a
 * leaf with basicConstraints CA:TRUE: such a certificate can issue others.
 * Refusing it as a leaf does not stop its holder from minting a leaf with
 * any CN and sending the CA:TRUE one as its intermediate (SECURITY.md,
 * known gaps: an issuer pin does).  And it accepts a leaf with no
 * extended key usage, which OpenSSL takes as fit for every purpose: the
 * farm CA's certificate for a signing host (CN = its host name, which an
 * allow rule may name), or one it issued for anything else, would pass
 * for a builder.  So an extended key usage is required, and must name
 * clientAuth (not only anyExtendedKeyUsage): the CA said "a TLS client".
 */
int tls_check_client_leaf(X509 *x)
{
	uint32_t flags = X509_get_extension_flags(x);

	if (flags & EXFLAG_INVALID)
		return -EINVAL;
	if (flags & EXFLAG_CA)
		return -EPERM;
	if (!(flags & EXFLAG_XKUSAGE) || !(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT))
		return -EPERM;
	if (X509_check_purpose(x, X509_PURPOSE_SSL_CLIENT, 0) != 1)
		return -EPERM;
	return 0;
}

bool tls_own_cert_clients_take(SSL_CTX *ctx)
{
	X509 *x = SSL_CTX_get0_certificate(ctx);
	uint32_t flags = x ? X509_get_extension_flags(x) : 0;
	int crit = 0;
	GENERAL_NAMES *san = x ? X509_get_ext_d2i(x, NID_subject_alt_name, &crit, NULL) : NULL;
	bool ok = san && sk_GENERAL_NAME_num(san) > 0 && !(flags & (EXFLAG_CA | EXFLAG_INVALID)) &&
		  (flags & EXFLAG_XKUSAGE) && (X509_get_extended_key_usage(x) & XKU_SSL_SERVER);

	GENERAL_NAMES_free(san);
	ERR_clear_error();
	return ok;
}

/*
 * The leaf, and its issuers, only once they verified; the chain's own
 * checks stay.  Every certificate of --tls-client-ca is an anchor
 * (X509_V_FLAG_PARTIAL_CHAIN), and OpenSSL takes an anchor for a CA when
 * it merely may be one: no basicConstraints but keyCertSign in its key
 * usage, or a v1 self-signed certificate.  A builder's own certificate of
 * that kind named in the file could then issue certificates for any name;
 * so an issuer must say CA:TRUE, as RFC 5280 requires.
 */
static int verify_cb(int ok, X509_STORE_CTX *ctx)
{
	X509 *x = X509_STORE_CTX_get_current_cert(ctx);

	if (!ok || !x)
		return ok;
	if (X509_STORE_CTX_get_error_depth(ctx) > 0) {
		if (X509_check_ca(x) == 1)
			return 1;
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_INVALID_CA);
		return 0;
	}
	if (tls_check_client_leaf(x) < 0) {
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_INVALID_PURPOSE);
		return 0;
	}
	return 1;
}

static bool store_has_crl(X509_STORE *store)
{
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(store);

	for (int i = 0; i < sk_X509_OBJECT_num(objs); i++)
		if (X509_OBJECT_get_type(sk_X509_OBJECT_value(objs, i)) == X509_LU_CRL)
			return true;
	return false;
}

int tls_ctx_new(const struct tls_config *cfg, SSL_CTX **ret, char *why, size_t why_size)
{
	SSL_CTX *ctx;
	int r = -EINVAL;

	if (!cfg->cert || !cfg->key || !cfg->client_ca)
		return snprintf(why, why_size,
				"TLS needs --tls-cert, --tls-key and --tls-client-ca"), -EINVAL;
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return snprintf(why, why_size, "%s", strerror(ENOMEM)), -ENOMEM;
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	/* No resumption: every connection proves its certificate afresh. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	/* Cheap key exchanges only: a peer picks the group, and pays nothing
	 * for the daemon's CPU (lib/tlsgroups.h). */
	if ((r = tlsgroups_set(ctx, &SSLCALLS_LINKED)) < 0) {
		snprintf(why, why_size, "TLS: none of the groups %s available", TLSGROUPS_LIST);
		goto fail;
	}
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
				      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert) != 1) {
		snprintf(why, why_size, "%s: unreadable or invalid", cfg->cert);
		goto fail;
	}
	if ((r = keyfile_use_tls(ctx, &SSLCALLS_LINKED, cfg->key, why, why_size)) < 0)
		goto fail;
	r = -EINVAL;
	if (SSL_CTX_load_verify_locations(ctx, cfg->client_ca, NULL) != 1) {
		snprintf(why, why_size, "%s: unreadable or invalid", cfg->client_ca);
		goto fail;
	}
	if (store_has_crl(SSL_CTX_get_cert_store(ctx))) {
		snprintf(why, why_size, "%s: holds a CRL, which would not be checked there: "
			 "give CRLs with --tls-crl", cfg->client_ca);
		goto fail;
	}
	X509_STORE_set_flags(SSL_CTX_get_cert_store(ctx), X509_V_FLAG_PARTIAL_CHAIN);
	SSL_CTX_set_purpose(ctx, X509_PURPOSE_SSL_CLIENT);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_cb);
	ERR_clear_error();
	*ret = ctx;
	return 0;
fail:
	ERR_clear_error();
	SSL_CTX_free(ctx);
	return r;
}

/*
 * Whether code point @c may be in a name that reaches policy, logs and the
 * audit log: no C0 or C1 control or DEL; no bidirectional formatting
 * character (the marks, embeddings, overrides and isolates that make
 * "cn:a\u202Eb" print as something else); no invisible character or
 * line break that makes two different names look alike (zero-width
 * space, joiners, word joiner, line and paragraph separators, BOM).
 */
static bool name_code_point_ok(uint32_t c)
{
	return c >= 0x20 && !(c >= 0x7f && c <= 0x9f) && c != 0x61c &&
	       !(c >= 0x200b && c <= 0x200f) && !(c >= 0x2028 && c <= 0x202e) &&
	       !(c >= 0x2060 && c <= 0x2069) && c != 0xfeff;
}

int tls_name_ok(const char *s, size_t n)
{
	if (strnlen(s, n) != n)
		return 0; /* a NUL inside */
	for (size_t i = 0, l; i < n; i += l)
		if (!(l = utf8_seq_len(s + i)) ||
		    !name_code_point_ok(utf8_code_point(s + i, l)))
			return 0;
	return 1;
}

int tls_peer_cn(SSL *ssl, char *buf, size_t size)
{
	X509 *cert = SSL_get0_peer_certificate(ssl);
	X509_NAME *name;
	unsigned char *utf8 = NULL;
	int i, len;

	if (!cert || SSL_get_verify_result(ssl) != X509_V_OK)
		return -EPERM;
	name = X509_get_subject_name(cert);
	i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	if (i < 0 || X509_NAME_get_index_by_NID(name, NID_commonName, i) >= 0)
		return -EINVAL;
	/* As UTF-8 whatever the ASN.1 string type, so the check below sees
	 * the characters a terminal or a JSON reader will show. */
	len = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i)));
	if (len <= 0 || (size_t)len >= size || !tls_name_ok((char *)utf8, (size_t)len)) {
		OPENSSL_free(utf8);
		ERR_clear_error();
		return -EINVAL;
	}
	memcpy(buf, utf8, (size_t)len);
	buf[len] = '\0';
	OPENSSL_free(utf8);
	return 0;
}

static int sha256_hex(X509 *x, char out[PEER_SHA256_HEX])
{
	unsigned char md[32];
	unsigned int n = 0;
	_cleanup_(freep) char *hex = NULL;

	if (X509_digest(x, EVP_sha256(), md, &n) != 1 || n != sizeof(md) ||
	    hex_encode(md, n, &hex) < 0)
		return -ENOMEM;
	memcpy(out, hex, PEER_SHA256_HEX);
	return 0;
}

/* Lower-case hex without leading zeros, as policy.c keeps a pinned one. */
static int serial_hex(X509 *x, char *out, size_t size)
{
	BIGNUM *bn = ASN1_INTEGER_to_BN(X509_get0_serialNumber(x), NULL);
	char *hex = bn ? BN_bn2hex(bn) : NULL;
	int r = -ENOMEM;

	if (hex && strlen(hex) < size) {
		for (char *p = hex; *p; p++)
			*p = (char)tolower((unsigned char)*p);
		snprintf(out, size, "%s", hex + (hex[0] == '0' && hex[1]));
		r = 0;
	} else if (hex)
		r = -EINVAL;
	OPENSSL_free(hex);
	BN_free(bn);
	return r;
}

/* RFC 2253 with ASN1_STRFLGS_ESC_MSB: ASCII only, controls escaped. */
static void issuer_dn(X509 *x, char *out, size_t size)
{
	BIO *b = BIO_new(BIO_s_mem());
	int n = b ? X509_NAME_print_ex(b, X509_get_issuer_name(x), 0, XN_FLAG_RFC2253) : -1;

	out[0] = '\0';
	if (n > 0) {
		n = BIO_read(b, out, (int)size - 1);
		out[n > 0 ? n : 0] = '\0';
	}
	BIO_free(b);
}

int tls_peer_cert(SSL *ssl, struct peer_cert *ret)
{
	X509 *cert = SSL_get0_peer_certificate(ssl);
	STACK_OF(X509) *chain = SSL_get0_verified_chain(ssl);
	struct peer_cert c = { 0 };
	int r;

	if (!cert || SSL_get_verify_result(ssl) != X509_V_OK)
		return -EPERM;
	if ((r = sha256_hex(cert, c.sha256)) < 0 ||
	    (r = serial_hex(cert, c.serial, sizeof(c.serial))) < 0)
		goto out;
	/* chain[0] is the leaf; chain[1] its issuer, absent when the leaf
	 * itself is in --tls-client-ca (a partial chain of one). */
	if (chain && sk_X509_num(chain) > 1 &&
	    (r = sha256_hex(sk_X509_value(chain, 1), c.issuer_sha256)) < 0)
		goto out;
	issuer_dn(cert, c.issuer, sizeof(c.issuer));
	*ret = c;
out:
	ERR_clear_error();
	return r;
}

/* ---- revocation ------------------------------------------------------------ */

/*
 * The CRLs in force hang on the verify store (ex_data, freed with it) and
 * reach verification through the store's CRL lookup: a reload swaps one
 * stack for another, where CRLs added to the store itself could never be
 * taken out again.  Verification runs on the event loop, as do reloads.
 */
static int crl_index = -1;

static void crls_free(void *parent, void *ptr, CRYPTO_EX_DATA *ad, int idx, long argl,
		      void *argp)
{
	(void)parent;
	(void)ad;
	(void)idx;
	(void)argl;
	(void)argp;
	sk_X509_CRL_pop_free(ptr, X509_CRL_free);
}

/* OpenSSL's lookup_crls: the CRLs in force of @issuer, a new stack that
 * the caller frees, each CRL with a reference of its own. */
static STACK_OF(X509_CRL) *lookup_crls(const X509_STORE_CTX *ctx, const X509_NAME *issuer)
{
	STACK_OF(X509_CRL) *all = X509_STORE_get_ex_data(X509_STORE_CTX_get0_store(ctx), crl_index);
	STACK_OF(X509_CRL) *ret = sk_X509_CRL_new_null();

	for (int i = 0; ret && i < sk_X509_CRL_num(all); i++) {
		X509_CRL *crl = sk_X509_CRL_value(all, i);

		if (X509_NAME_cmp(X509_CRL_get_issuer(crl), issuer) == 0 &&
		    X509_CRL_up_ref(crl) && !sk_X509_CRL_push(ret, crl))
			X509_CRL_free(crl);
	}
	return ret;
}

/* Whether a CA certificate of @store signed @crl: a CRL of another PKI
 * (the wrong file) would revoke nothing, and is refused instead. */
static bool crl_signed_by_store(X509_STORE *store, X509_CRL *crl)
{
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(store);

	for (int i = 0; i < sk_X509_OBJECT_num(objs); i++) {
		X509 *ca = X509_OBJECT_get0_X509(sk_X509_OBJECT_value(objs, i));

		if (ca && X509_NAME_cmp(X509_get_subject_name(ca), X509_CRL_get_issuer(crl)) == 0 &&
		    X509_CRL_verify(crl, X509_get0_pubkey(ca)) == 1)
			return true;
	}
	return false;
}

/* Every PEM CRL of @path; a file that holds none, or a block that does
 * not parse, is refused. */
static int read_crls(const char *path, STACK_OF(X509_CRL) **ret, char *why, size_t size)
{
	STACK_OF(X509_CRL) *sk = sk_X509_CRL_new_null();
	BIO *b = BIO_new_file(path, "r");
	X509_CRL *crl;
	unsigned long err;

	if (!sk || !b) {
		snprintf(why, size, "%s: %s", path, sk ? "unreadable" : strerror(ENOMEM));
		BIO_free(b);
		sk_X509_CRL_free(sk);
		return sk ? -ENOENT : -ENOMEM;
	}
	while ((crl = PEM_read_bio_X509_CRL(b, NULL, NULL, NULL)))
		if (!sk_X509_CRL_push(sk, crl))
			X509_CRL_free(crl);
	err = ERR_peek_last_error();
	BIO_free(b);
	if (ERR_GET_REASON(err) != PEM_R_NO_START_LINE || sk_X509_CRL_num(sk) == 0) {
		snprintf(why, size, "%s: %s", path,
			 sk_X509_CRL_num(sk) ? "a CRL does not parse" : "holds no PEM CRL");
		sk_X509_CRL_pop_free(sk, X509_CRL_free);
		return -EINVAL;
	}
	*ret = sk;
	return 0;
}

/*
 * What keeps @crl from being its issuer's complete list of revocations,
 * as verification takes it, or NULL.  OpenSSL (without
 * X509_V_FLAG_USE_DELTAS) reads a delta CRL as a complete one and picks
 * its issuer's newest CRL: a delta beside its base would hide the base's
 * revocations.  It skips a CRL of some reasons only, or an indirect one,
 * for another CRL of the issuer: the revocations only those hold would
 * be ignored.  Such a file is refused rather than half read.
 */
static const char *crl_scoped(X509_CRL *crl)
{
	int crit = -1;
	ASN1_INTEGER *delta = X509_CRL_get_ext_d2i(crl, NID_delta_crl, &crit, NULL);
	bool is_delta = delta || crit != -1; /* one, several or unreadable */
	ISSUING_DIST_POINT *idp;
	const char *why = NULL;

	ASN1_INTEGER_free(delta);
	if (is_delta)
		return "delta CRL (give the complete CRL)";
	crit = -1;
	idp = X509_CRL_get_ext_d2i(crl, NID_issuing_distribution_point, &crit, NULL);
	if (!idp && crit == -2)
		why = "CRL of several issuing distribution points";
	else if (!idp && crit != -1)
		why = "CRL with an unreadable issuing distribution point";
	else if (idp && idp->indirectCRL)
		why = "indirect CRL";
	else if (idp && idp->onlysomereasons)
		why = "CRL of some revocation reasons only";
	else if (idp && idp->onlyattr)
		why = "CRL of attribute certificates";
	ISSUING_DIST_POINT_free(idp);
	return why;
}

/* Of @sk: -EINVAL if one is not signed by a CA of @store or is not a
 * complete CRL (crl_scoped()), else how many are past their next update. */
static int check_crls(X509_STORE *store, STACK_OF(X509_CRL) *sk, const char *path, char *why,
		      size_t size)
{
	int expired = 0;

	for (int i = 0; i < sk_X509_CRL_num(sk); i++) {
		X509_CRL *crl = sk_X509_CRL_value(sk, i);
		const ASN1_TIME *next = X509_CRL_get0_nextUpdate(crl);
		char issuer[PEER_MAX_ISSUER];
		const char *scoped;

		if (!crl_signed_by_store(store, crl)) {
			X509_NAME_oneline(X509_CRL_get_issuer(crl), issuer, sizeof(issuer));
			snprintf(why, size, "%s: the CRL of %s is not signed by a CA of "
				 "--tls-client-ca", path, issuer);
			return -EINVAL;
		}
		if ((scoped = crl_scoped(crl))) {
			X509_NAME_oneline(X509_CRL_get_issuer(crl), issuer, sizeof(issuer));
			snprintf(why, size, "%s: the CRL of %s is a %s", path, issuer, scoped);
			return -EINVAL;
		}
		expired += next && X509_cmp_current_time(next) < 0;
	}
	return expired;
}

int tls_load_crl(SSL_CTX *ctx, const char *path, char *why, size_t why_size)
{
	X509_STORE *store = SSL_CTX_get_cert_store(ctx);
	STACK_OF(X509_CRL) *sk = NULL, *old;
	int r;

	if (crl_index < 0)
		crl_index = X509_STORE_get_ex_new_index(0, NULL, NULL, NULL, crls_free);
	if (crl_index < 0)
		return snprintf(why, why_size, "%s", strerror(ENOMEM)), -ENOMEM;
	old = X509_STORE_get_ex_data(store, crl_index);
	r = read_crls(path, &sk, why, why_size);
	if (r >= 0)
		r = check_crls(store, sk, path, why, why_size);
	if (r >= 0 && !X509_STORE_set_ex_data(store, crl_index, sk)) {
		snprintf(why, why_size, "%s", strerror(ENOMEM));
		r = -ENOMEM;
	}
	ERR_clear_error();
	if (r < 0) {
		sk_X509_CRL_pop_free(sk, X509_CRL_free);
		return r;
	}
	sk_X509_CRL_pop_free(old, X509_CRL_free);
	X509_STORE_set_lookup_crls(store, lookup_crls);
	X509_STORE_set_flags(store, X509_V_FLAG_CRL_CHECK);
	return r;
}

bool tls_peer_revoked(SSL *ssl)
{
	X509_STORE *store = SSL_CTX_get_cert_store(SSL_get_SSL_CTX(ssl));
	STACK_OF(X509_CRL) *all = crl_index < 0 ? NULL : X509_STORE_get_ex_data(store, crl_index);
	X509 *cert = SSL_get0_peer_certificate(ssl);
	X509_REVOKED *entry;

	for (int i = 0; cert && i < sk_X509_CRL_num(all); i++) {
		X509_CRL *crl = sk_X509_CRL_value(all, i);

		if (X509_NAME_cmp(X509_CRL_get_issuer(crl), X509_get_issuer_name(cert)) == 0 &&
		    X509_CRL_get0_by_cert(crl, &entry, cert) == 1)
			return true;
	}
	return false;
}
