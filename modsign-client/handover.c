/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The lean client's stand-in for the commands it leaves to
 * modsign-client-full (status, cert, verify, strip): each execs it with
 * the whole command line, global options included.  The lean client
 * links this file where the full one links cmd-status.o, cmd-cert.o,
 * cmd-verify.o and cmd-strip.o, and so needs neither X.509 nor PKCS#7.
 */
#define _GNU_SOURCE /* O_PATH, environ */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "handover.h"

#define _alias_(f) __attribute__((alias(#f)))

/*
 * Open @path if it may be run in our place: a regular file owned by root
 * or by us, writable by nobody else, and not this very program (a lean
 * client installed under the full one's name would exec itself forever).
 */
static int open_full(const char *path, const struct stat *self)
{
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != geteuid()) || (st.st_mode & 022) ||
	    (st.st_dev == self->st_dev && st.st_ino == self->st_ino)) {
		close(fd);
		return -EPERM;
	}
	return fd;
}

/*
 * Run modsign-client-full with our arguments: installed at
 * CLIENT_FULL_RELPATH from our own directory (the Makefile computes it
 * from BINDIR and LIBEXECDIR), or next to us as in the build tree.  Found
 * from /proc/self/exe, not $PATH or the environment, so that it is always
 * the one installed with us.
 */
_noreturn_ void handover_exec(const struct global *g, const char *why)
{
	static const char *const where[] = {
		"%s/" CLIENT_FULL_RELPATH,
		"%s/modsign-client-full",
	};
	char self[PATH_MAX], path[PATH_MAX + 256];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	struct stat self_st;
	int err = ENOENT;

	if (n > 0 && stat("/proc/self/exe", &self_st) == 0) {
		const char *dir;

		self[n] = '\0';
		dir = dirname(self);
		for (size_t i = 0; i < ELEMENTSOF(where); i++) {
			int fd;

			snprintf(path, sizeof(path), where[i], dir);
			fd = open_full(path, &self_st);
			if (fd >= 0) {
				int r;

				fexecve(fd, g->argv, environ);
				r = -errno;
				close(fd);
				fd = r;
			}
			if (fd != -ENOENT)
				err = -fd;
		}
	}
	warn_msg("%s needs modsign-client-full, which is not installed next to "
		 "modsign-client: %s", why, strerror(err));
	exit(1);
}
/* Any command of modsign-client-full: argv[0] names it. */
static int handover_command(const struct global *g, int argc _unused_, char **argv)
{
	handover_exec(g, argv[0]);
}

int cmd_status(const struct global *g, int argc, char **argv) _alias_(handover_command);
int cmd_cert(const struct global *g, int argc, char **argv) _alias_(handover_command);
int cmd_verify(const struct global *g, int argc, char **argv) _alias_(handover_command);
int cmd_strip(const struct global *g, int argc, char **argv) _alias_(handover_command);
