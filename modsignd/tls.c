/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <string.h>

#include "tls.h"

int tls_ctx_new(const struct tls_config *cfg, SSL_CTX **ret, const char **ret_err)
{
	SSL_CTX *ctx;

	*ret_err = NULL;
	if (!cfg->cert || !cfg->key || !cfg->client_ca)
		return (*ret_err = "TLS needs --tls-cert, --tls-key and --tls-client-ca"), -EINVAL;
	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return -ENOMEM;
	SSL_CTX_set_min_proto_version(ctx, TLS1_3_VERSION);
	/* No resumption: every connection proves its certificate afresh. */
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_num_tickets(ctx, 0);
	SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE |
				      SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				      SSL_MODE_RELEASE_BUFFERS);
	if (SSL_CTX_use_certificate_chain_file(ctx, cfg->cert) != 1) {
		*ret_err = cfg->cert;
		goto fail;
	}
	if (SSL_CTX_use_PrivateKey_file(ctx, cfg->key, SSL_FILETYPE_PEM) != 1 ||
	    SSL_CTX_check_private_key(ctx) != 1) {
		*ret_err = cfg->key;
		goto fail;
	}
	if (SSL_CTX_load_verify_locations(ctx, cfg->client_ca, NULL) != 1) {
		*ret_err = cfg->client_ca;
		goto fail;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	*ret = ctx;
	return 0;
fail:
	SSL_CTX_free(ctx);
	return -EINVAL;
}

int tls_peer_cn(SSL *ssl, char *buf, size_t size)
{
	X509 *cert = SSL_get0_peer_certificate(ssl);
	X509_NAME *name;
	const ASN1_STRING *data;
	int i, len;

	if (!cert || SSL_get_verify_result(ssl) != X509_V_OK)
		return -EPERM;
	name = X509_get_subject_name(cert);
	i = X509_NAME_get_index_by_NID(name, NID_commonName, -1);
	if (i < 0 || X509_NAME_get_index_by_NID(name, NID_commonName, i) >= 0)
		return -EINVAL;
	data = X509_NAME_ENTRY_get_data(X509_NAME_get_entry(name, i));
	len = ASN1_STRING_length(data);
	if (len <= 0 || (size_t)len >= size)
		return -EINVAL;
	memcpy(buf, ASN1_STRING_get0_data(data), (size_t)len);
	buf[len] = '\0';
	for (i = 0; i < len; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			return -EINVAL;
	return 0;
}
