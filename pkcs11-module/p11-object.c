/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/x509.h>

#include "macro.h"
#include "p11-object.h"

static int add(struct p11_object *o, CK_ATTRIBUTE_TYPE type, const void *value, size_t len)
{
	void *copy = malloc(len ? len : 1);

	if (!copy || o->n >= P11_MAX_ATTRS) {
		free(copy);
		return -ENOMEM;
	}
	memcpy(copy, value, len);
	o->attrs[o->n++] = (struct p11_attr){ type, copy, (CK_ULONG)len };
	return 0;
}

static int add_bool(struct p11_object *o, CK_ATTRIBUTE_TYPE type, bool v)
{
	CK_BBOOL b = v ? CK_TRUE : CK_FALSE;

	return add(o, type, &b, sizeof(b));
}

static int add_ulong(struct p11_object *o, CK_ATTRIBUTE_TYPE type, CK_ULONG v)
{
	return add(o, type, &v, sizeof(v));
}

/* An i2d_*() result as attribute @type. */
static int add_der(struct p11_object *o, CK_ATTRIBUTE_TYPE type, unsigned char *der, int len)
{
	int r = der && len > 0 ? add(o, type, der, (size_t)len) : -ENOMEM;

	OPENSSL_free(der);
	return r;
}

static int add_bn(struct p11_object *o, CK_ATTRIBUTE_TYPE type, EVP_PKEY *pkey,
		  const char *param)
{
	BIGNUM *bn = NULL;
	unsigned char buf[P11_RSA_MAX_BITS / 8]; /* the largest modulus advertised */
	int len, r;

	if (!EVP_PKEY_get_bn_param(pkey, param, &bn))
		return -EOPNOTSUPP;
	len = BN_num_bytes(bn);
	if ((size_t)len > sizeof(buf))
		r = -EFBIG; /* an exponent: a modulus this large is refused before */
	else
		r = len > 0 && BN_bn2bin(bn, buf) == len ? add(o, type, buf, (size_t)len) :
							  -EOPNOTSUPP;
	BN_free(bn);
	return r;
}

/* CKA_EC_PARAMS (the named curve's DER OID) and CKA_EC_POINT (a DER
 * OCTET STRING of the uncompressed point, as PKCS#11 2.40 says). */
static int add_ec(struct p11_object *o, X509 *cert)
{
	X509_PUBKEY *xpk = X509_get_X509_PUBKEY(cert);
	const unsigned char *point;
	const void *pval;
	X509_ALGOR *alg;
	ASN1_OCTET_STRING *os;
	unsigned char *der = NULL;
	int ptype, plen, len, r;

	if (!X509_PUBKEY_get0_param(NULL, &point, &plen, &alg, xpk))
		return -EOPNOTSUPP;
	X509_ALGOR_get0(NULL, &ptype, &pval, alg);
	if (ptype != V_ASN1_OBJECT)
		return -EOPNOTSUPP; /* explicit curve parameters: none of ours */
	len = i2d_ASN1_OBJECT(pval, &der);
	r = add_der(o, CKA_EC_PARAMS, der, len);
	if (r < 0)
		return r;
	os = ASN1_OCTET_STRING_new();
	if (!os || !ASN1_OCTET_STRING_set(os, point, plen)) {
		ASN1_OCTET_STRING_free(os);
		return -ENOMEM;
	}
	der = NULL;
	len = i2d_ASN1_OCTET_STRING(os, &der);
	ASN1_OCTET_STRING_free(os);
	return add_der(o, CKA_EC_POINT, der, len);
}

/* The public half, on the public and the private key objects alike:
 * tools size signatures and pick mechanisms from it. */
static int add_public(struct p11_object *o, const struct p11_key *k, EVP_PKEY *pkey)
{
	int r = add_ulong(o, CKA_KEY_TYPE, k->type);

	if (r < 0)
		return r;
	if (k->type == CKK_EC)
		return add_ec(o, k->cert);
	r = add_bn(o, CKA_MODULUS, pkey, OSSL_PKEY_PARAM_RSA_N);
	if (r == 0)
		r = add_ulong(o, CKA_MODULUS_BITS, (CK_ULONG)EVP_PKEY_get_bits(pkey));
	return r < 0 ? r : add_bn(o, CKA_PUBLIC_EXPONENT, pkey, OSSL_PKEY_PARAM_RSA_E);
}

/* Every object's: class, token, label, id, not private (there is no
 * login: the connection is the identity), not modifiable. */
static int add_common(struct p11_object *o, CK_OBJECT_CLASS class, const char *name)
{
	size_t len = strlen(name);
	int r;

	o->class = class;
	if ((r = add_ulong(o, CKA_CLASS, class)) < 0 || (r = add_bool(o, CKA_TOKEN, true)) < 0 ||
	    (r = add_bool(o, CKA_PRIVATE, false)) < 0 ||
	    (r = add_bool(o, CKA_MODIFIABLE, false)) < 0 ||
	    (r = add(o, CKA_LABEL, name, len)) < 0)
		return r;
	return add(o, CKA_ID, name, len);
}

static int cert_object(struct p11_object *o, const struct p11_key *k)
{
	X509_NAME *subj = X509_get_subject_name(k->cert), *iss = X509_get_issuer_name(k->cert);
	unsigned char *der;
	int r;

	if ((r = add_common(o, CKO_CERTIFICATE, k->name)) < 0 ||
	    (r = add_ulong(o, CKA_CERTIFICATE_TYPE, CKC_X_509)) < 0 ||
	    (r = add_bool(o, CKA_TRUSTED, false)) < 0)
		return r;
	der = NULL;
	if ((r = add_der(o, CKA_VALUE, der, i2d_X509(k->cert, &der))) < 0)
		return r;
	der = NULL;
	if ((r = add_der(o, CKA_SUBJECT, der, i2d_X509_NAME(subj, &der))) < 0)
		return r;
	der = NULL;
	if ((r = add_der(o, CKA_ISSUER, der, i2d_X509_NAME(iss, &der))) < 0)
		return r;
	der = NULL;
	return add_der(o, CKA_SERIAL_NUMBER, der,
		       i2d_ASN1_INTEGER(X509_get_serialNumber(k->cert), &der));
}

static int key_object(struct p11_object *o, const struct p11_key *k, EVP_PKEY *pkey,
		      bool private)
{
	X509_NAME *subj = X509_get_subject_name(k->cert);
	unsigned char *der = NULL;
	int r;

	if ((r = add_common(o, private ? CKO_PRIVATE_KEY : CKO_PUBLIC_KEY, k->name)) < 0 ||
	    (r = add_public(o, k, pkey)) < 0 || (r = add_bool(o, CKA_LOCAL, false)) < 0 ||
	    (r = add_bool(o, CKA_DERIVE, false)) < 0 ||
	    (r = add_der(o, CKA_SUBJECT, der, i2d_X509_NAME(subj, &der))) < 0)
		return r;
	if (!private && ((r = add_bool(o, CKA_ENCRYPT, false)) < 0 ||
			 (r = add_bool(o, CKA_WRAP, false)) < 0))
		return r;
	if (!private)
		return add_bool(o, CKA_VERIFY, true);
	/* Sign only; the key never leaves the daemon. */
	if ((r = add_bool(o, CKA_SIGN, true)) < 0 || (r = add_bool(o, CKA_DECRYPT, false)) < 0 ||
	    (r = add_bool(o, CKA_UNWRAP, false)) < 0 ||
	    (r = add_bool(o, CKA_SENSITIVE, true)) < 0 ||
	    (r = add_bool(o, CKA_ALWAYS_SENSITIVE, true)) < 0 ||
	    (r = add_bool(o, CKA_EXTRACTABLE, false)) < 0 ||
	    (r = add_bool(o, CKA_NEVER_EXTRACTABLE, true)) < 0)
		return r;
	return add_bool(o, CKA_ALWAYS_AUTHENTICATE, false);
}

/* The key's type and its raw signature's length; -EFBIG: an RSA key
 * larger than the token lists. */
static int key_kind(struct p11_key *k, EVP_PKEY *pkey)
{
	if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_RSA) {
		if (EVP_PKEY_get_bits(pkey) > P11_RSA_MAX_BITS)
			return -EFBIG;
		k->type = CKK_RSA;
		k->sig_len = (size_t)EVP_PKEY_get_size(pkey);
	} else if (EVP_PKEY_get_base_id(pkey) == EVP_PKEY_EC) {
		k->type = CKK_EC;
		k->sig_len = 2 * (size_t)((EVP_PKEY_get_bits(pkey) + 7) / 8);
	} else {
		return -EOPNOTSUPP;
	}
	return 0;
}

int p11_key_objects(const char *name, X509 *cert, size_t index, struct p11_key *k,
		    struct p11_object *objs, size_t *ret_n)
{
	EVP_PKEY *pkey = X509_get0_pubkey(cert);
	int r;

	memset(k, 0, sizeof(*k));
	memset(objs, 0, 3 * sizeof(*objs));
	if (!pkey)
		return -EOPNOTSUPP;
	r = key_kind(k, pkey);
	if (r < 0)
		return r;
	k->name = strdup(name);
	if (!k->name)
		return -ENOMEM;
	k->cert = cert;
	X509_up_ref(cert);
	for (size_t i = 0; i < 3; i++)
		objs[i].key = index;
	r = cert_object(&objs[0], k);
	if (r == 0)
		r = key_object(&objs[1], k, pkey, false);
	if (r == 0)
		r = key_object(&objs[2], k, pkey, true);
	if (r < 0) {
		for (size_t i = 0; i < 3; i++)
			p11_object_done(&objs[i]);
		p11_key_done(k);
		return r;
	}
	*ret_n = 3;
	return 0;
}

const char *p11_key_strerror(X509 *cert, int r, char *buf, size_t size)
{
	EVP_PKEY *pkey = X509_get0_pubkey(cert);
	int bits = pkey ? EVP_PKEY_get_bits(pkey) : 0;

	if (r == -EFBIG && bits > P11_RSA_MAX_BITS)
		snprintf(buf, size, "RSA key of %d bits, over the %d the token lists", bits,
			 P11_RSA_MAX_BITS);
	else if (r == -EFBIG)
		snprintf(buf, size, "RSA public exponent of over %d bits", P11_RSA_MAX_BITS);
	else if (r == -EOPNOTSUPP)
		snprintf(buf, size, "neither RSA nor EC");
	else
		snprintf(buf, size, "%s", strerror(-r));
	return buf;
}

void p11_key_done(struct p11_key *k)
{
	free(k->name);
	X509_free(k->cert);
	memset(k, 0, sizeof(*k));
}

void p11_object_done(struct p11_object *o)
{
	for (size_t i = 0; i < o->n; i++)
		free(o->attrs[i].value);
	o->n = 0;
}

static const struct p11_attr *find_attr(const struct p11_object *o, CK_ATTRIBUTE_TYPE type)
{
	for (size_t i = 0; i < o->n; i++)
		if (o->attrs[i].type == type)
			return &o->attrs[i];
	return NULL;
}

bool p11_object_match(const struct p11_object *o, const CK_ATTRIBUTE *tmpl, CK_ULONG n)
{
	for (CK_ULONG i = 0; i < n; i++) {
		const struct p11_attr *a = find_attr(o, tmpl[i].type);

		if (!a || a->len != tmpl[i].ulValueLen ||
		    (a->len && (!tmpl[i].pValue || memcmp(a->value, tmpl[i].pValue, a->len) != 0)))
			return false;
	}
	return true;
}

CK_RV p11_object_get(const struct p11_object *o, CK_ATTRIBUTE *t)
{
	const struct p11_attr *a = find_attr(o, t->type);

	if (!a) {
		t->ulValueLen = CK_UNAVAILABLE_INFORMATION;
		return CKR_ATTRIBUTE_TYPE_INVALID;
	}
	if (!t->pValue) {
		t->ulValueLen = a->len;
		return CKR_OK;
	}
	if (t->ulValueLen < a->len) {
		t->ulValueLen = CK_UNAVAILABLE_INFORMATION;
		return CKR_BUFFER_TOO_SMALL;
	}
	memcpy(t->pValue, a->value, a->len);
	t->ulValueLen = a->len;
	return CKR_OK;
}
