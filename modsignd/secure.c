/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <openssl/crypto.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "secure.h"

int secure_process(bool *ret_locked)
{
	const struct rlimit none = { 0, 0 };

	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return -errno;
	if (setrlimit(RLIMIT_CORE, &none) < 0)
		return -errno;
	/* Private BIGNUMs (RSA d, p, q..., EC private scalars) are allocated
	 * from here by OpenSSL, so they are locked against swap and cleared
	 * when freed.  It fails when RLIMIT_MEMLOCK is too small. */
	*ret_locked = CRYPTO_secure_malloc_initialized() ||
		      CRYPTO_secure_malloc_init(SECURE_HEAP_SIZE, 32) == 1;
	return 0;
}
