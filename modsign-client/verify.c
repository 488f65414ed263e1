/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Why a module signature fails the kernel's rules (verify.h). */
#include <errno.h>
#include <string.h>

#include "mldsa.h"
#include "verify.h"

const char *verify_reason(int r)
{
	switch (r) {
	case -EBADMSG:
		return "malformed PKCS#7 signature";
	case -EPROTO:
		return "signature has signed attributes (the kernel rejects it)";
	case -ENOPKG:
		return "signature uses a hash the kernel build does not offer";
	case -ENOKEY:
		return "signed by a different key";
	case -ENOSYS:
		return "cannot check an ML-DSA signature here: " MLDSA_NEEDS;
	case -EKEYREJECTED:
		return "BAD signature: module or signature modified";
	}
	return strerror(-r);
}
