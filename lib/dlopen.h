/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_DLOPEN_H
#define MODSIGN_DLOPEN_H

/*
 * A library loaded on first use, as systemd's dlopen_many_sym_or_warn()
 * does: the client's per-module call (kbuild and DKMS run it once per
 * module, over the local socket, on an uncompressed module) needs only
 * libcrypto and json-c, and every library the loader maps and relocates
 * at start costs it page faults (docs/PERFORMANCE.md, "Lazy loading").
 * libssl (a tls: server), p11-kit (a pkcs11: key) and liblzma, libzstd
 * and zlib (a compressed module) are loaded by the file that owns that
 * concern, when it meets one.
 *
 * The owner writes its symbol list once, as an X-macro, and gets from
 * it the typed pointers it calls (sym_NAME, with the type of NAME's own
 * prototype, so a wrong argument is still a compiler error) and the
 * table the loader fills:
 *
 *   #define LZMA_SYMS(X) X(lzma_code) X(lzma_end)
 *   LZMA_SYMS(DLSYM_POINTER)
 *   static const struct dlsym lzma_syms[] = { LZMA_SYMS(DLSYM_ENTRY) };
 *   static struct dlopen_lib lzma_lib = DLOPEN_LIB("liblzma.so.5", lzma_syms);
 *   ...
 *   r = dlopen_lib_load(&lzma_lib, why, sizeof(why));
 *
 * A header's function-like macro is not a symbol (zlib's inflateInit2
 * is inflateInit2_, SSL_set_tlsext_host_name is SSL_ctrl): the list
 * names what it expands to, and the call site writes the expansion.
 *
 * The soname is a fixed string in the program, never from the
 * environment or a configuration (dlopen() still searches the loader's
 * paths, as for a library linked at build time).  Debian's
 * dh_shlibdeps does not see a dlopen()ed library: debian/control names
 * each in the client's Depends.
 */

#include <stddef.h>

struct dlsym {
	const char *name;
	void **ptr;
};

struct dlopen_lib {
	const char *soname;       /* "liblzma.so.5": the ABI the prototypes are of */
	const struct dlsym *syms;
	size_t n_syms;
	void *handle;             /* set once every symbol is resolved; never closed */
};

#define DLOPEN_LIB(soname, syms) { (soname), (syms), sizeof(syms) / sizeof((syms)[0]), NULL }

/* For an X-macro of symbol names: the pointer sym_NAME, of NAME's type... */
#define DLSYM_POINTER(f) static __typeof__(f) *sym_##f;
/* ...and its row of the table. */
#define DLSYM_ENTRY(f) { #f, (void **)&sym_##f },

/*
 * Load @lib (RTLD_NOW | RTLD_LOCAL) and set every pointer of its table:
 * all or nothing, once (a second call after success returns at once;
 * after a failure it tries again).  Safe from several threads (the
 * PKCS#11 module's callers), and in the child of a fork() made while
 * another thread was loading (the lock is the child's own again; that
 * load is made afresh).  Returns 0, or -ELIBACC with dlerror()'s text in
 * @why (which names the file or the missing symbol) and every pointer
 * NULL.  Never logs.
 */
int dlopen_lib_load(struct dlopen_lib *lib, char *why, size_t why_size);

#endif
