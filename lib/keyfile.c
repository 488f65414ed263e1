/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cert.h"
#include "keyfile.h"
#include "util.h"

/* A passphrase-protected key cannot be unlocked by a daemon: refuse. */
static int no_passphrase(char *buf _unused_, int size _unused_, int rwflag _unused_,
			 void *u _unused_)
{
	return -1;
}

/* The reason a secret file was refused, naming it, into @buf. */
static int refused(int err, const char *path, const struct stat *st, char *buf,
		   size_t size)
{
	const char *why = secret_file_refusal(err, st);

	if (err == -EPERM && (st->st_mode & (S_IRWXG | S_IRWXO)))
		snprintf(buf, size, "%s: mode %04o: %s", path,
			 (unsigned)(st->st_mode & 07777), why);
	else if (err == -EPERM)
		snprintf(buf, size, "%s: owner uid %u: %s", path, (unsigned)st->st_uid, why);
	else if (why)
		snprintf(buf, size, "%s: %s", path, why);
	else if (err == -EFBIG)
		snprintf(buf, size, "%s: too large for a key file", path);
	else
		snprintf(buf, size, "%s: cannot read: %s", path, strerror(-err));
	return err;
}

/* The key, and with @ret_cert the certificate, from @n bytes of PEM. */
static int parse(const uint8_t *pem, size_t n, const char *path, EVP_PKEY **ret_key,
		 X509 **ret_cert, char *why, size_t why_size)
{
	BIO *b = BIO_new_mem_buf(pem, (int)n);
	EVP_PKEY *key = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	X509 *cert = NULL;
	int r = 0;

	if (!key) {
		r = -EBADMSG;
		snprintf(why, why_size, "%s: no unencrypted private key", path);
	} else if (ret_cert) {
		BIO_reset(b);
		cert = PEM_read_bio_X509(b, NULL, NULL, NULL);
		if (!cert) {
			r = -EBADMSG;
			snprintf(why, why_size, "%s: no certificate", path);
		}
	}
	BIO_free(b);
	ERR_clear_error();
	if (r < 0) {
		EVP_PKEY_free(key);
		return r;
	}
	*ret_key = key;
	if (ret_cert)
		*ret_cert = cert;
	return 0;
}

int keyfile_read(const char *path, EVP_PKEY **ret_key, X509 **ret_cert, char *why,
		 size_t why_size)
{
	struct stat st;
	uint8_t *buf = NULL;
	size_t n = 0;
	int r;

	r = secret_file_read(path, KEYFILE_MAX, &st, &buf, &n);
	if (r < 0)
		return refused(r, path, &st, why, why_size);
	r = parse(buf, n, path, ret_key, ret_cert, why, why_size);
	memzero_explicit(buf, n);
	free(buf);
	return r;
}

int keyfile_use_tls(SSL_CTX *ctx, const struct sslcalls *ssl, const char *path, char *why,
		    size_t why_size)
{
	_cleanup_(EVP_PKEY_freep) EVP_PKEY *pkey = NULL;
	int r = keyfile_read(path, &pkey, NULL, why, why_size);

	if (r < 0)
		return r;
	if (ssl->use_key(ctx, pkey) != 1 || ssl->check_key(ctx) != 1) {
		snprintf(why, why_size, "%s: does not match the certificate", path);
		ERR_clear_error();
		return -EINVAL;
	}
	return 0;
}
