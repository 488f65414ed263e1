/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Kept apart from digest.c so that hashing alone does not link EVP. */
#include <openssl/evp.h>
#include <string.h>

#include "digest.h"

const EVP_MD *digest_evp(const struct digest *d)
{
	const char *name = digest_name(d);

	if (!name)
		return NULL;
	if (strcmp(name, "sha256") == 0)
		return EVP_sha256();
	if (strcmp(name, "sha384") == 0)
		return EVP_sha384();
	if (strcmp(name, "sha512") == 0)
		return EVP_sha512();
	return NULL;
}
