/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An LD_PRELOAD library for tests/integration/pkcs11-module.bats: the
 * first dlopen() of the soname in $HOLD_DLOPEN, in the process this was
 * loaded into, creates the file $HOLD_DLOPEN_MARK and never returns, as a
 * load whose library's constructor hangs: its caller holds lib/dlopen.c's
 * lock for as long as it lives.  In a forked child, and for any other
 * name, it is the C library's dlopen().
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static pid_t loaded_in;

__attribute__((constructor)) static void start(void)
{
	loaded_in = getpid();
}

void *dlopen(const char *file, int mode)
{
	const char *hold = getenv("HOLD_DLOPEN"), *mark = getenv("HOLD_DLOPEN_MARK");
	static int held;

	if (hold && mark && file && strcmp(file, hold) == 0 && getpid() == loaded_in &&
	    !__atomic_exchange_n(&held, 1, __ATOMIC_SEQ_CST)) {
		close(open(mark, O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
		for (;;)
			pause();
	}
	return ((void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen"))(file, mode);
}
