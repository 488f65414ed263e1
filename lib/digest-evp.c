/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libmodsign's hashing: OpenSSL's EVP, through its providers. */
#include <errno.h>
#include <openssl/evp.h>

#include "digest-backend.h"

const EVP_MD *digest_evp(const struct digest *d)
{
	if (!d)
		return NULL;
	switch (d->id) {
	case DIGEST_SHA256:
		return EVP_sha256();
	case DIGEST_SHA384:
		return EVP_sha384();
	case DIGEST_SHA512:
		return EVP_sha512();
	}
	return NULL;
}

int digest_begin(const struct digest *d, struct digest_state **ret)
{
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();

	if (!ctx)
		return -ENOMEM;
	if (!EVP_DigestInit_ex(ctx, digest_evp(d), NULL)) {
		EVP_MD_CTX_free(ctx);
		return -EIO;
	}
	*ret = (struct digest_state *)ctx;
	return 0;
}

int digest_add(struct digest_state *s, const void *p, size_t n)
{
	return EVP_DigestUpdate((EVP_MD_CTX *)s, p, n) ? 0 : -EIO;
}

int digest_end(struct digest_state *s, uint8_t *out)
{
	EVP_MD_CTX *ctx = (EVP_MD_CTX *)s;
	int r = 0;

	if (out && !EVP_DigestFinal_ex(ctx, out, NULL))
		r = -EIO;
	EVP_MD_CTX_free(ctx);
	return r;
}
