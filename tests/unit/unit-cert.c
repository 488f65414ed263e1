/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "unit-cert.h"

X509 *unit_cert(EVP_PKEY *pub, EVP_PKEY *issuer)
{
	X509 *x = X509_new();

	if (!x || !ASN1_INTEGER_set(X509_get_serialNumber(x), 1) ||
	    !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
					(const unsigned char *)"unit", -1, -1, 0) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(x)) ||
	    !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 3600) || !X509_set_pubkey(x, pub) ||
	    X509_sign(x, issuer, EVP_sha256()) <= 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}
