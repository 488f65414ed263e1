/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_MACRO_H
#define MODSIGN_MACRO_H

/*
 * Scope-bound cleanup in the style of systemd and kmod: a local declared
 * _cleanup_(freep) is released on every return path, and TAKE_PTR() hands
 * ownership to the caller explicitly.
 */

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

#define TAKE_PTR(p)                                                            \
	({                                                                     \
		__typeof__(p) _p_ = (p);                                       \
		(p) = NULL;                                                    \
		_p_;                                                           \
	})

#define TAKE_FD(fd)                                                            \
	({                                                                     \
		int _fd_ = (fd);                                               \
		(fd) = -1;                                                     \
		_fd_;                                                          \
	})

/* Defines name##p(type **) calling func(*p) when *p is not NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)                                \
	static inline void func##p(type *p)                                    \
	{                                                                      \
		if (*p)                                                        \
			func(*p);                                              \
	}

static inline void freep(void *p)
{
	free(*(void **)p);
}

static inline void closep(int *fd)
{
	if (*fd >= 0) {
		int saved = errno;
		close(*fd);
		errno = saved;
	}
}

#endif
