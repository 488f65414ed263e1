/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_CERTFP_H
#define MODSIGN_CERTFP_H

/*
 * Certificate fingerprints without OpenSSL's X.509 code: kbuild's
 * per-module signing command (sign-file mode) only needs to know whether
 * the certificate it was given is the daemon's, and parsing it would cost
 * more than signing the module.
 */

#include <stddef.h>
#include <stdint.h>

/* Largest certificate file we read (a kernel cert is ~1.5 KiB). */
#define CERT_MAX_FILE (1024u * 1024)

/* SHA-256 of a DER certificate as lower-case hex, new string. */
int cert_fingerprint(const uint8_t *der, size_t len, char **ret);

/*
 * The same of the first certificate in @path, DER or PEM (the first
 * "CERTIFICATE" block; other blocks, such as the private key in
 * certs/signing_key.pem, are skipped).  The certificate is decoded but not
 * parsed.  Returns 0, an errno from reading, or -EBADMSG if there is no
 * certificate.
 */
int cert_file_fingerprint(const char *path, char **ret);

/* The same of the file's contents: @n bytes at @buf, and a NUL after them
 * (as read_file() leaves it). */
int cert_buf_fingerprint(const char *buf, size_t n, char **ret);

#endif
