/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_PKCS11_H
#define MODSIGND_PKCS11_H

/*
 * Keys on a PKCS#11 token, through libp11.  The private key never leaves
 * the token: modsignd holds a libp11 handle and asks the token to sign.
 *
 * A key is named by an RFC 7512 URI (token=, manufacturer=, model=,
 * serial=, object=, id=, type=private, module-path=).  A PIN never comes
 * from the URI (pin-value= and pin-source= are refused): it is read from
 * the PIN file at each login and wiped as soon as C_Login returns.
 *
 * Signing is safe from many threads at once: libp11 keeps a pool of
 * sessions per slot.  When the token fails (removed, PIN refused, key
 * deleted) the key is marked unavailable and later requests re-open it,
 * at most once per PKCS11_RETRY_MS; other keys are not affected.
 *
 * Nothing here logs: errors are negative errno values, explained by
 * pkcs11_strerror().
 */

#include <openssl/evp.h>
#include <openssl/x509.h>
#include "digest.h"
#include "pkcs7.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define PKCS11_MAX_PIN 256       /* bytes in a PIN file, newline excluded */
#define PKCS11_RETRY_MS 1000     /* minimum interval between re-open attempts */
#define PKCS11_RELOAD_FAST 4     /* module reloads at that pace before backing off */
#define PKCS11_RELOAD_MAX_MS 10000 /* longest wait between reloads in an outage */
#define PKCS11_CREDENTIAL "pkcs11-pin" /* systemd credential name */
#ifndef PKCS11_DEFAULT_MODULE
#define PKCS11_DEFAULT_MODULE "/usr/lib/x86_64-linux-gnu/p11-kit-proxy.so"
#endif

struct pkcs11_options {
	const char *module;   /* --pkcs11-module: unless the URI has module-path */
	const char *pin_file; /* --pin-file; NULL: $CREDENTIALS_DIRECTORY/pkcs11-pin */
};

struct pkcs11_key;

/* True when @spec is a pkcs11: URI. */
bool pkcs11_is_uri(const char *spec);

/*
 * Open the key @uri names: load the module, find the token, log in, find
 * exactly one private key and check it against the certificate.  With
 * *@io_cert NULL the certificate comes from the token (the object the URI
 * names, or the one with the key's CKA_ID) and is returned there; a
 * non-NULL *@io_cert is used as given (a reference is taken).
 * On failure returns a negative errno, sets *@ret_err to a static text,
 * and leaves *@ret and *@io_cert untouched.  Call from the main thread.
 */
int pkcs11_key_open(const char *uri, const struct pkcs11_options *opt,
		    X509 **io_cert, struct pkcs11_key **ret, const char **ret_err);

/*
 * Sign @digest into a module signature (lib/pkcs7.h) in the way @sig
 * says (the key's, cert_key_alg()), concurrently from any thread.  A key found unavailable is re-opened first (rate limited).
 * Returns 0, or a negative errno for pkcs11_strerror(): -ENODEV (token
 * not present), -EACCES (PIN refused or missing), -ENOKEY (key not on the
 * token), -EKEYREJECTED (key does not match the certificate), -EIO.
 */
int pkcs11_key_sign(struct pkcs11_key *pk, enum pkcs7_sig sig, const struct digest *md,
		    const uint8_t *digest, size_t digest_len, bool use_keyid,
		    uint8_t **ret_der, size_t *ret_len);

/*
 * 0 when the key was usable at its last use, else why not: a negative
 * errno, and in *@ret_why a static text (NULL when healthy).
 */
int pkcs11_key_health(const struct pkcs11_key *pk, const char **ret_why);

/* Times the key was opened again after a failure (for metrics). */
unsigned long pkcs11_key_reopens(const struct pkcs11_key *pk);

/*
 * What the key cost on its token so far (for metrics).  @opens: times it
 * was opened and made usable (at start, after each re-open that worked):
 * the slots listed, the PIN sent when needed, the objects searched, a
 * session taken from libp11's pool.  @logins: C_Login calls made for it.
 * @lookups: searches of the token's objects (keys, certificates).
 * @sign_calls: signatures asked of the token through the kept handle
 * (C_SignInit and C_Sign on a pooled session each), failed ones too.
 * Reuse shows as @sign_calls growing while the others stay.
 */
struct pkcs11_key_stats {
	unsigned long opens;
	unsigned long logins;
	unsigned long lookups;
	unsigned long sign_calls;
};

void pkcs11_key_stats(const struct pkcs11_key *pk, struct pkcs11_key_stats *ret);

/* Text for an error of this file; never NULL. */
const char *pkcs11_strerror(int err);

/* Forget the back-off of module reloads: the next request for a key whose
 * token is gone reloads its module at once (SIGHUP: the operator says the
 * token is back).  Main thread only. */
void pkcs11_retry_now(void);

/* Release the key (and its module when it was the last); accepts NULL. */
void pkcs11_key_free(struct pkcs11_key *pk);

#endif
