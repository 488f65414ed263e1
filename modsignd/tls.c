/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/err.h>
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
 * leaf with basicConstraints CA:TRUE: such a certificate can issue others,
 * so a builder holding one could mint any identity the CA is trusted for if
 * the CA bundle ever also named it.  And an extended key usage, where there
 * is one, must name clientAuth (not only anyExtendedKeyUsage).
 */
int tls_check_client_leaf(X509 *x)
{
	uint32_t flags = X509_get_extension_flags(x);

	if (flags & EXFLAG_INVALID)
		return -EINVAL;
	if (flags & EXFLAG_CA)
		return -EPERM;
	if ((flags & EXFLAG_XKUSAGE) && !(X509_get_extended_key_usage(x) & XKU_SSL_CLIENT))
		return -EPERM;
	if (X509_check_purpose(x, X509_PURPOSE_SSL_CLIENT, 0) != 1)
		return -EPERM;
	return 0;
}

/* Only the leaf, and only once it verified; the chain's own checks stay. */
static int verify_cb(int ok, X509_STORE_CTX *ctx)
{
	X509 *x = X509_STORE_CTX_get_current_cert(ctx);

	if (!ok || X509_STORE_CTX_get_error_depth(ctx) != 0 || !x)
		return ok;
	if (tls_check_client_leaf(x) < 0) {
		X509_STORE_CTX_set_error(ctx, X509_V_ERR_INVALID_PURPOSE);
		return 0;
	}
	return 1;
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
	if ((r = tlsgroups_set(ctx)) < 0) {
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
	if ((r = keyfile_use_tls(ctx, cfg->key, why, why_size)) < 0)
		goto fail;
	r = -EINVAL;
	if (SSL_CTX_load_verify_locations(ctx, cfg->client_ca, NULL) != 1) {
		snprintf(why, why_size, "%s: unreadable or invalid", cfg->client_ca);
		goto fail;
	}
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
