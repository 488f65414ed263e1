/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <malloc.h>
#include <openssl/crypto.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "secure.h"

/*
 * All of the process's memory is locked, not only OpenSSL's secure heap:
 * key material does not stay where it was allocated.  A scan of a running
 * daemon found both primes of a one-time RSA key in the ordinary heap,
 * copied there by the Montgomery contexts OpenSSL caches in the key, and
 * digests, PINs read from files and TLS secrets live in ordinary buffers
 * too.  MCL_ONFAULT: pages are locked as they are touched rather than all
 * at once, so that the 8 MiB thread stacks and the malloc arenas reserved
 * later cost what they use, not what they reserve (plain MCL_FUTURE would
 * fault every new mapping in whole).  The limit (RLIMIT_MEMLOCK, without
 * CAP_IPC_LOCK) still counts reservations, though: glibc reserves 64 MiB
 * of address space for each thread's own malloc arena, so all threads
 * share the main one (M_ARENA_MAX 1; a signature makes a few allocations
 * around milliseconds of arithmetic, so they hardly contend), and the
 * workers' stacks are small (workq.c).  What is left is the libraries and
 * the heap: a few tens of MiB, whatever --workers says (LimitMEMLOCK= in
 * the unit).
 */
static int lock_memory(void)
{
	/* Only the accounting depends on it: a malloc that does not take
	 * it (the sanitizers' own) still gets its memory locked. */
	(void)mallopt(M_ARENA_MAX, 1);
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) < 0)
		return -errno;
	return 0;
}

int secure_process(const char **ret_step, bool *ret_heap)
{
	const struct rlimit none = { 0, 0 };

	*ret_step = "prctl(PR_SET_DUMPABLE)";
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		return -errno;
	*ret_step = "setrlimit(RLIMIT_CORE)";
	if (setrlimit(RLIMIT_CORE, &none) < 0)
		return -errno;
	*ret_step = "mlockall";
	if (lock_memory() < 0)
		return -errno;
	*ret_step = NULL;
	/* Private BIGNUMs (RSA d, p, q..., EC private scalars) are allocated
	 * from here by OpenSSL: excluded from core dumps and cleared when
	 * freed, on top of the lock above. */
	*ret_heap = CRYPTO_secure_malloc_initialized() ||
		    CRYPTO_secure_malloc_init(SECURE_HEAP_SIZE, 32) == 1;
	return 0;
}
