/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_KEYFILE_H
#define MODSIGN_KEYFILE_H

/*
 * A PEM private key on disk (a --key file, the daemon's --tls-key): read
 * as a secret file, parsed, and the bytes that held it wiped.  The one
 * place that reads one; never logs.
 */

#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stddef.h>

#include "sslcalls.h"

/* Larger than any PEM key and certificate chain, small enough to hold. */
#define KEYFILE_MAX (1024u * 1024)

/*
 * Read the unencrypted PEM private key in @path and, with @ret_cert, the
 * first PEM certificate of the same file.  @path is opened as
 * secret_file_open() opens it (no symlink, a regular file, no access for
 * group or others, root's or the caller's own); the buffer the file was read into is wiped before it
 * is freed, on every return.  Returns 0 with *@ret_key (and *@ret_cert)
 * new references; on failure both are untouched and @why holds a line
 * naming @path and the reason:
 *   -EPERM    its mode is open to group or others, or another user owns it
 *   -ELOOP    a symbolic link
 *   -EINVAL   not a regular file
 *   -EFBIG    larger than KEYFILE_MAX
 *   -EBADMSG  no unencrypted private key, or (with @ret_cert) no certificate
 *   -errno    from open or read ("cannot read")
 */
int keyfile_read(const char *path, EVP_PKEY **ret_key, X509 **ret_cert, char *why,
		 size_t why_size);

/*
 * TLS's own key (the daemon's --tls-key, a builder's): keyfile_read() of
 * @path into @ctx with @ssl's calls; @ctx's certificate must already be
 * set and match it.  Errors as keyfile_read(), and -EINVAL "does not
 * match" in @why.
 */
int keyfile_use_tls(SSL_CTX *ctx, const struct sslcalls *ssl, const char *path, char *why,
		    size_t why_size);

#endif
