/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>

#include "dlopen.h"

/* One lock for every library: loading is rare and short. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * fork() in the child: the lock is copied as it was.  Held by another
 * thread of the parent in the middle of a load (the PKCS#11 module in a
 * threaded program, a thread's first tls: server), it stayed held for
 * ever in the child, which has no such thread: the child's first load
 * (its first TLS connection after its C_Initialize) waited on it.  The
 * child gets a fresh lock; that load's table, its handle still NULL, is
 * loaded again from the start by the child's first call.
 */
static void atfork_child(void)
{
	if (pthread_mutex_trylock(&lock) == 0) {
		pthread_mutex_unlock(&lock);
		return;
	}
	pthread_mutex_init(&lock, NULL);
}

/* glibc drops the handler when the object holding it (the PKCS#11
 * module) is unloaded. */
__attribute__((constructor)) static void atfork_register(void)
{
	pthread_atfork(NULL, NULL, atfork_child);
}

static int failed(void *handle, char *why, size_t why_size)
{
	const char *e = dlerror();

	snprintf(why, why_size, "%s", e ? e : "unknown error");
	if (handle)
		dlclose(handle);
	return -ELIBACC;
}

/* On a missing symbol every pointer is cleared again, those set so far
 * and any a load torn by a fork left (atfork_child): the table is all of
 * the library's or none of it. */
static int load_locked(struct dlopen_lib *lib, char *why, size_t why_size)
{
	void *h;
	size_t i;
	int r;

	dlerror();
	h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL);
	if (!h)
		return failed(NULL, why, why_size);
	for (i = 0; i < lib->n_syms; i++) {
		dlerror();
		*lib->syms[i].ptr = dlsym(h, lib->syms[i].name);
		if (!*lib->syms[i].ptr)
			break;
	}
	if (i == lib->n_syms) {
		lib->handle = h;
		return 0;
	}
	r = failed(h, why, why_size);
	for (i = 0; i < lib->n_syms; i++)
		*lib->syms[i].ptr = NULL;
	return r;
}

int dlopen_lib_load(struct dlopen_lib *lib, char *why, size_t why_size)
{
	int r = 0;

	pthread_mutex_lock(&lock);
	if (!lib->handle)
		r = load_locked(lib, why, why_size);
	pthread_mutex_unlock(&lock);
	return r;
}
