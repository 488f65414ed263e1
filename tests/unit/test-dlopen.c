/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/dlopen.c: a library's table filled all or nothing, once, from
 * several threads; a missing library or symbol refused with dlerror()'s
 * words and every pointer left NULL.  zlib stands in for the client's
 * libraries (the test links it too: dlopen() then finds it loaded).
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
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

UNIT_MAIN()
