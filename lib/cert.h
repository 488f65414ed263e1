/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_CERT_H
#define MODSIGN_CERT_H

#include <openssl/x509.h>
#include <stddef.h>
#include <stdint.h>

#include "certfp.h"
#include "macro.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(X509 *, X509_free)
DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_PKEY *, EVP_PKEY_free)

/*
 * Load the first certificate from @path, PEM or DER (as sign-file accepts).
 * Returns 0, -ENOENT/-EACCES/... from open, -EBADMSG if no certificate.
 */
int cert_load_file(const char *path, X509 **ret);

/* Parse a DER certificate. */
int cert_from_der(const uint8_t *der, size_t len, X509 **ret);

/* DER encoding into a new buffer. */
int cert_to_der(X509 *cert, uint8_t **ret, size_t *ret_len);

/* Hex of the subjectKeyIdentifier (the kernel's "sig_key"), new string;
 * -ENOENT if the certificate has none. */
int cert_key_id(X509 *cert, char **ret);

/* Hex of the serial number, new string. */
int cert_serial(X509 *cert, char **ret);

/* One-line RFC 2253 subject, new string. */
int cert_subject(X509 *cert, char **ret);

struct pkcs7_key_alg;

/* What @pkey is (lib/pkcs7.h): its short name, "rsa4096", "rsa4096-4p"
 * (a multi-prime private key), "ecdsa-p384", ..., and how it signs.  The
 * one place that looks at a key's type.  Returns 0. */
int cert_key_alg(EVP_PKEY *pkey, struct pkcs7_key_alg *ret);

#endif
