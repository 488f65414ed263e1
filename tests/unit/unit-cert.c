/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "unit-cert.h"

X509 *unit_cert_md(EVP_PKEY *pub, EVP_PKEY *issuer, const EVP_MD *md)
{
	X509 *x = X509_new();

	if (!x || !ASN1_INTEGER_set(X509_get_serialNumber(x), 1) ||
	    !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
					(const unsigned char *)"unit", -1, -1, 0) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(x)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 3600) || !X509_set_pubkey(x, pub) ||
	    X509_sign(x, issuer, md) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

X509 *unit_cert(EVP_PKEY *pub, EVP_PKEY *issuer)
{
	return unit_cert_md(pub, issuer, EVP_sha256());
}
