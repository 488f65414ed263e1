/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dlopen.c: a library's table filled all or nothing, once, from
 * several threads; a missing library or symbol refused with dlerror()'s
 * words and every pointer left NULL.  zlib stands in for the client's
 * libraries (the test links it too: dlopen() then finds it loaded).
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "dlopen.h"
#include "unit.h"

/* Declared only: no library has it, so the table naming it cannot load. */
void modsign_no_such_symbol(void);

#define GOOD_SYMS(X) X(zlibVersion) X(crc32)
GOOD_SYMS(DLSYM_POINTER)
static const struct dlsym good_syms[] = { GOOD_SYMS(DLSYM_ENTRY) };

/* Its own pointers: crc32 resolves, then the second symbol does not. */
static __typeof__(crc32) *half_crc32;
static __typeof__(modsign_no_such_symbol) *half_missing;
static const struct dlsym half_syms[] = { { "crc32", (void **)&half_crc32 },
					   { "modsign_no_such_symbol", (void **)&half_missing } };

UNIT_TEST(loads_all_once)
{
	struct dlopen_lib lib = DLOPEN_LIB("libz.so.1", good_syms);
	char why[256] = "";
	void *h;

	CHECK_EQ("load-libz", dlopen_lib_load(&lib, why, sizeof(why)), 0);
	CHECK("load-sets-every-pointer", sym_zlibVersion && sym_crc32 && lib.handle);
	CHECK("load-pointer-is-the-function",
	      sym_crc32 && sym_crc32(0, (const Bytef *)"abc", 3) == crc32(0, (const Bytef *)"abc", 3));
	h = lib.handle;
	CHECK_EQ("load-again-is-a-no-op", dlopen_lib_load(&lib, why, sizeof(why)), 0);
	CHECK("load-again-same-handle", lib.handle == h);
}

/* Twin: one symbol missing, none set (the one found first cleared). */
UNIT_TEST(missing_symbol_sets_none)
{
	struct dlopen_lib lib = DLOPEN_LIB("libz.so.1", half_syms);
	char why[256] = "";

	CHECK_EQ("missing-symbol-refused", dlopen_lib_load(&lib, why, sizeof(why)), -ELIBACC);
	CHECK("missing-symbol-named", strstr(why, "modsign_no_such_symbol") != NULL);
	CHECK("missing-symbol-none-set", !half_crc32 && !half_missing && !lib.handle);
}

/* A third symbol after the missing one, its pointer stale (a load a
 * fork tore, lib/dlopen.c's atfork_child): cleared too. */
static __typeof__(adler32) *stale_adler32;
static const struct dlsym stale_syms[] = { { "crc32", (void **)&half_crc32 },
					    { "modsign_no_such_symbol", (void **)&half_missing },
					    { "adler32", (void **)&stale_adler32 } };

UNIT_TEST(missing_symbol_clears_stale)
{
	struct dlopen_lib lib = DLOPEN_LIB("libz.so.1", stale_syms);
	char why[256] = "";

	stale_adler32 = adler32;
	CHECK_EQ("stale-refused", dlopen_lib_load(&lib, why, sizeof(why)), -ELIBACC);
	CHECK("stale-every-pointer-cleared", !half_crc32 && !half_missing && !stale_adler32);
}

/* Twin: no such library, its name in the reason. */
UNIT_TEST(missing_library)
{
	struct dlopen_lib lib = DLOPEN_LIB("libmodsign-no-such.so.0", good_syms);
	char why[256] = "";

	CHECK_EQ("missing-library-refused", dlopen_lib_load(&lib, why, sizeof(why)), -ELIBACC);
	CHECK("missing-library-named", strstr(why, "libmodsign-no-such.so.0") != NULL);
	CHECK("missing-library-no-handle", !lib.handle);
}

static struct dlopen_lib shared_lib = DLOPEN_LIB("libz.so.1", good_syms);

static void *load_thread(void *arg)
{
	char why[256];

	*(int *)arg = dlopen_lib_load(&shared_lib, why, sizeof(why));
	return NULL;
}

/* Eight threads at once (the PKCS#11 module's callers): all succeed. */
UNIT_TEST(threads)
{
	pthread_t t[8];
	int r[8];
	size_t i, ok = 0;

	for (i = 0; i < 8; i++)
		pthread_create(&t[i], NULL, load_thread, &r[i]);
	for (i = 0; i < 8; i++) {
		pthread_join(t[i], NULL);
		ok += r[i] == 0;
	}
	CHECK_EQ("threads-all-loaded", ok, 8);
	CHECK("threads-one-handle", shared_lib.handle != NULL);
}

/*
 * The fork case's seam: this file's dlopen(), to which lib/dlopen.c's
 * call binds (the test links it statically).  Armed, it holds its caller
 * inside the load, as a slow library's constructor would, until
 * released; else it is the C library's.
 */
static pthread_mutex_t seam_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t seam_cond = PTHREAD_COND_INITIALIZER;
static enum { SEAM_OFF, SEAM_ARMED, SEAM_INSIDE, SEAM_RELEASED } seam;

void *dlopen(const char *file, int mode)
{
	void *(*real)(const char *, int) = (void *(*)(const char *, int))dlsym(RTLD_NEXT, "dlopen");

	pthread_mutex_lock(&seam_lock);
	if (seam == SEAM_ARMED) {
		seam = SEAM_INSIDE;
		pthread_cond_broadcast(&seam_cond);
		while (seam != SEAM_RELEASED)
			pthread_cond_wait(&seam_cond, &seam_lock);
	}
	pthread_mutex_unlock(&seam_lock);
	return real(file, mode);
}

#define FORK_SYMS(X) X(adler32) X(crc32_combine)
FORK_SYMS(DLSYM_POINTER)
static const struct dlsym fork_syms[] = { FORK_SYMS(DLSYM_ENTRY) };
static struct dlopen_lib fork_lib = DLOPEN_LIB("libz.so.1", fork_syms);

static void *fork_thread(void *arg)
{
	char why[256];

	*(int *)arg = dlopen_lib_load(&fork_lib, why, sizeof(why));
	return NULL;
}

/*
 * fork() while another thread is inside a load (the PKCS#11 module in a
 * threaded program: a thread's first tls: server, lib/dlopen.c's lock
 * held): the child, which has no such thread, loads the library itself.
 * Its copy of the lock was held for ever, and its first load (the
 * module's first TLS connection after its C_Initialize) waited on it.
 */
UNIT_TEST(fork_during_a_load)
{
	pthread_t t;
	int r = -1, status = 0;
	pid_t pid;

	seam = SEAM_ARMED;
	pthread_create(&t, NULL, fork_thread, &r);
	pthread_mutex_lock(&seam_lock);
	while (seam != SEAM_INSIDE)
		pthread_cond_wait(&seam_cond, &seam_lock);
	pthread_mutex_unlock(&seam_lock);
	pid = fork();
	if (pid == 0) {
		char why[256];

		alarm(5); /* a load that waits for ever: killed, said below */
		_exit(dlopen_lib_load(&fork_lib, why, sizeof(why)) == 0 && sym_adler32 &&
				      sym_crc32_combine && fork_lib.handle ?
			      0 :
			      1);
	}
	CHECK("fork-during-load-forked", pid > 0);
	waitpid(pid, &status, 0);
	if (WIFSIGNALED(status))
		printf("# the child died of signal %d (SIGALRM: it waited on the lock)\n",
		       WTERMSIG(status));
	CHECK("fork-during-load-child-loads", WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* Twin: the parent's thread, released, loads as ever. */
	pthread_mutex_lock(&seam_lock);
	seam = SEAM_RELEASED;
	pthread_cond_broadcast(&seam_cond);
	pthread_mutex_unlock(&seam_lock);
	pthread_join(t, NULL);
	CHECK_EQ("fork-during-load-parent-loads", r, 0);
	CHECK("fork-during-load-parent-table", sym_adler32 && sym_crc32_combine && fork_lib.handle);
}

UNIT_MAIN()
