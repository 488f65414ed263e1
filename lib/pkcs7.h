/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_PKCS7_H
#define MODSIGN_PKCS7_H

/*
 * Module signatures as the kernel takes them: a detached PKCS#7/CMS
 * SignedData over the "data" content type, with no certificates and no
 * signed attributes (6.1's pkcs7_verify() rejects module signatures that
 * carry authenticated attributes), one signer identified by issuer and
 * serial number (or by subjectKeyIdentifier).  This is byte for byte what
 * scripts/sign-file makes with CMS_NOCERTS | CMS_BINARY | CMS_DETACHED |
 * CMS_NOATTR.
 */

#include <openssl/evp.h>
#include <openssl/x509.h>
#include "digest.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * How a key signs a digest, the signature algorithm of the SignerInfo.
 * The key's owner says which (cert_key_alg(), set once when the key is
 * loaded); this file does not guess it from the key at each signature.
 */
enum pkcs7_sig {
	PKCS7_SIG_DEFAULT,   /* as OpenSSL's CMS code signs with the key */
	PKCS7_SIG_RSA_PKCS1, /* RSA, PKCS#1 v1.5 over a DigestInfo: rsaEncryption */
	PKCS7_SIG_ECDSA,     /* DER ECDSA-Sig-Value: ecdsa-with-SHA* */
	PKCS7_SIG_MLDSA,     /* pure ML-DSA (FIPS 204), empty context: id-ml-dsa-* */
};

/* What a signing key is, as modsign names it and signs with it. */
struct pkcs7_key_alg {
	char name[32];      /* "rsa4096", "ecdsa-p384"; else OpenSSL's type name */
	enum pkcs7_sig sig; /* how pkcs7_sign_digest_as() signs with it */
};

/*
 * Sign a precomputed digest.  Because there are no signed attributes the
 * signature is over the content digest itself, so the message can be built
 * from the digest alone: the module never has to reach the key holder.
 *
 * @key may be any EVP_PKEY able to sign (software, provider or engine),
 * in the way @sig says.  On success *@ret_der is a DER ContentInfo of
 * *@ret_len bytes, to be released with OPENSSL_free().
 * Returns 0, -EINVAL (digest length does not match @md, key does not match
 * @cert, no such @sig), -EIO (the key refused to sign) or -ENOMEM.
 */
int pkcs7_sign_digest_as(X509 *cert, EVP_PKEY *key, enum pkcs7_sig sig,
			 const struct digest *md, const uint8_t *digest, size_t digest_len,
			 bool use_keyid, uint8_t **ret_der, size_t *ret_len);

/*
 * The pure ML-DSA form the 7.x kernel verifies without signed attributes
 * (it hands the whole module to ML-DSA): the same SignedData, with
 * signature algorithm id-ml-dsa-44/65/87 and the signature made from
 * @mu, the external mu of the module for @cert's key (lib/mldsa.h).  The
 * digest algorithm field, which the kernel parses but does not use for
 * this form, says sha512, as sign-file with OpenSSL 4 and
 * CONFIG_MODULE_SIG_SHA512 writes it.  Needs OpenSSL 3.5 (its ML-DSA "mu"
 * parameter): -EOPNOTSUPP elsewhere; else as pkcs7_sign_digest_as().
 */
int pkcs7_sign_mu(X509 *cert, EVP_PKEY *key, const uint8_t *mu, size_t mu_len,
		  bool use_keyid, uint8_t **ret_der, size_t *ret_len);

/* The hash named in the digest algorithm of the pure ML-DSA form. */
#define PKCS7_MLDSA_DIGEST "sha512"
/* The one hash of the signed-attributes ML-DSA form. */
#define PKCS7_MLDSA_ATTRS_DIGEST "sha512"

/* pkcs7_sign_digest_as() in the way cert_key_alg() finds for @key. */
int pkcs7_sign_digest(X509 *cert, EVP_PKEY *key, const struct digest *md,
		      const uint8_t *digest, size_t digest_len, bool use_keyid,
		      uint8_t **ret_der, size_t *ret_len);

/*
 * Verify a module signature by the kernel's rules against @cert, hashing
 * the first @body_len bytes of @fd.  Returns:
 *   0             valid;
 *   -EBADMSG      not a detached PKCS#7 SignedData of type data with one signer,
 *                 or its signature algorithm is not one the kernel takes
 *                 (rsaEncryption, ecdsa-with-SHA*);
 *   -EPROTO       it carries signed attributes (the kernel rejects those);
 *   -ENOPKG       its hash algorithm is not one modsign accepts;
 *   -ENOKEY       its signer is not @cert;
 *   -EKEYREJECTED the signature does not match the module;
 *   other negative errno on I/O errors.
 * If @ret_hash is not NULL it receives the hash name ("sha256") when known.
 */
int pkcs7_verify_module(const uint8_t *der, size_t der_len, X509 *cert,
			int fd, size_t body_len, const char **ret_hash);

/*
 * The same checks over a digest already made with @md (a signature just
 * returned for it): -ENOPKG also when the signature is not made with @md,
 * -EBADMSG also when it is not the daemon's form (certificates, CRLs or
 * unsigned attributes inside) or names its signer otherwise than asked
 * (@use_keyid: by subjectKeyIdentifier; else by issuer and serial).
 */
int pkcs7_verify_digest(const uint8_t *der, size_t der_len, X509 *cert,
			const struct digest *md, const uint8_t *digest, size_t digest_len,
			bool use_keyid);

/* pkcs7_verify_digest() for the pure ML-DSA form made from @mu (the
 * daemon's reply to a mu request); -ENOSYS where this OpenSSL cannot
 * check ML-DSA. */
int pkcs7_verify_mu(const uint8_t *der, size_t der_len, X509 *cert, const uint8_t *mu,
		    size_t mu_len, bool use_keyid);

#endif
