/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_P11_OBJECT_H
#define MODSIGN_P11_OBJECT_H

/*
 * The token's objects (p11-object.c): for each key the daemon grants the
 * caller, its certificate, its public key and its private key, each a
 * list of attributes made once from the certificate when the key list is
 * read.  CKA_ID and CKA_LABEL are the key's name on all three, so
 * `pkcs11:object=NAME` finds them.  The private key holds nothing secret:
 * signing is a request to the daemon.  Never logs.
 */

#include <stdbool.h>
#include <stddef.h>

#include <openssl/x509.h>
#include <p11-kit/pkcs11.h>

#define P11_MAX_ATTRS 24

/* The largest RSA key the token lists and C_GetMechanismInfo advertises:
 * OpenSSL's own limit (OPENSSL_RSA_MAX_MODULUS_BITS).  A larger one is
 * not listed. */
#define P11_RSA_MAX_BITS 16384

struct p11_attr {
	CK_ATTRIBUTE_TYPE type;
	void *value; /* malloc()ed, owned */
	CK_ULONG len;
};

struct p11_object {
	CK_OBJECT_CLASS class;
	size_t key; /* index of its key in the token's list */
	struct p11_attr attrs[P11_MAX_ATTRS];
	size_t n;
};

/* What a key signs with, from its certificate. */
struct p11_key {
	char *name;
	X509 *cert;
	CK_KEY_TYPE type;   /* CKK_RSA or CKK_EC */
	size_t sig_len;     /* a raw signature's length (C_Sign's size query) */
};

/*
 * The key @name of certificate @cert, and its three objects into @objs
 * (which must have room for 3), *@ret_n set to 3.  -EOPNOTSUPP: a key
 * type neither RSA nor EC (or one whose public numbers cannot be read);
 * -EFBIG: an RSA key over P11_RSA_MAX_BITS (or a public exponent over
 * that); -ENOMEM.  On success @k owns copies of @name and a reference to
 * @cert.
 */
int p11_key_objects(const char *name, X509 *cert, size_t index, struct p11_key *k,
		    struct p11_object *objs, size_t *ret_n);

/* Why p11_key_objects() left @cert's key out (@r), in words, into @buf:
 * "RSA key of 16392 bits, over the 16384 the token lists". */
const char *p11_key_strerror(X509 *cert, int r, char *buf, size_t size);

void p11_key_done(struct p11_key *k);
void p11_object_done(struct p11_object *o);

/* Does @o hold every attribute of @tmpl with the same value. */
bool p11_object_match(const struct p11_object *o, const CK_ATTRIBUTE *tmpl, CK_ULONG n);

/* C_GetAttributeValue's rules for one attribute of @o into @a:
 * CKR_OK, CKR_ATTRIBUTE_TYPE_INVALID or CKR_BUFFER_TOO_SMALL (then the
 * caller's other attributes are still filled). */
CK_RV p11_object_get(const struct p11_object *o, CK_ATTRIBUTE *a);

#endif
