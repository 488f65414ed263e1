/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TESTS_UNIT_CERT_H
#define MODSIGN_TESTS_UNIT_CERT_H

#include <openssl/evp.h>
#include <openssl/x509.h>

/*
 * Certificates the unit tests make (linked, tests/unit/unit-cert.o, into
 * the tests the Makefile names with it).
 *
 * unit_cert(): a certificate of @pub, valid for an hour from now, subject
 * and issuer name "CN=unit", serial 1, signed with SHA-256 by @issuer
 * (@pub's own private key for a self-signed one; another key signs a
 * made-up public key that has no private key).  Its names and serial are
 * no test's concern.  A new X509 (X509_free()), or NULL if OpenSSL
 * failed.
 */
X509 *unit_cert(EVP_PKEY *pub, EVP_PKEY *issuer);

/*
 * unit_cert_md(): the same, signed with @md, or with no digest named at
 * all if @md is NULL (ML-DSA and Ed25519 hash the message themselves and
 * refuse one).
 */
X509 *unit_cert_md(EVP_PKEY *pub, EVP_PKEY *issuer, const EVP_MD *md);

#endif
