/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client/paths.c, linked as an object: where a signature tree puts
 * each module's signature (one spelling per file, no way out of the tree),
 * and the walk to its directory, which never goes through a link, also one
 * put there after the directories were made.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "paths.h"
#include "unit.h"

/* paths.c names unreadable trees with warn_msg() (client.c). */
void warn_msg(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	printf("# ");
	vprintf(fmt, ap);
	putchar('\n');
	va_end(ap);
}

static char top[] = "/tmp/modsign-test-paths-XXXXXX";

/* sigtree_path("S", {"tree"}, @module, ".p7s") is @want (NULL: -EINVAL). */
static void check_path(const char *name, const char *module, const char *want)
{
	char *roots_v[] = { (char *)"tree" };
	struct pathlist roots = { .v = roots_v, .n = 1, .cap = 1 };
	char *got = NULL;
	int r = sigtree_path("S", &roots, module, ".p7s", &got);

	if (!want)
		CHECK_EQ(name, r, -EINVAL);
	else if (CHECK(name, r == 0 && strcmp(got, want) == 0) == false)
		printf("#   got %s, want %s\n", got ? got : "(none)", want);
	free(got);
}

UNIT_TEST(sigtree_path)
{
	check_path("path: below a root", "tree/kernel/fs/a.ko", "S/kernel/fs/a.ko.p7s");
	check_path("path: as given", "kernel/x.ko", "S/kernel/x.ko.p7s");
	check_path("path: empty and . components dropped", "./kernel//./x.ko",
		   "S/kernel/x.ko.p7s");
	check_path("path: absolute loses its /", "//abs/x.ko", "S/abs/x.ko.p7s");
	check_path("path: .. refused", "kernel/../x.ko", NULL);
	check_path("path: .. first refused", "../x.ko", NULL);
	check_path("path: nothing left refused", "./", NULL);
}

/* In top (the current directory): the tree S. */
UNIT_TEST(sigtree_open_dir)
{
	const char *name = NULL;
	int tree, fd;

	tree = sigtree_open("S", true);
	CHECK("open_dir: tree made and opened", tree >= 0);
	fd = sigtree_open_dir(tree, "S", "S/a/b/m.ko.p7s", true, &name);
	CHECK("open_dir: levels made", fd >= 0 && access("S/a/b", F_OK) == 0);
	CHECK("open_dir: the file's name", name && strcmp(name, "m.ko.p7s") == 0);
	if (fd >= 0)
		close(fd);

	/* a, once made, swapped for a link to a directory outside */
	CHECK("open_dir: swap", rename("S/a", "S/a.made") == 0 && mkdir("out", 0700) == 0 &&
					symlink("../out", "S/a") == 0);
	CHECK_EQ("open_dir: link in a level refused",
		 sigtree_open_dir(tree, "S", "S/a/b/m.ko.p7s", true, &name), -ENOTDIR);
	CHECK("open_dir: nothing made through it", access("out/b", F_OK) < 0);
	CHECK_EQ("open_dir: read: link in a level refused",
		 sigtree_open_dir(tree, "S", "S/a/b/m.ko.p7s", false, &name), -ENOTDIR);

	/* a file in a directory's place; a level missing when reading */
	close(open("S/f", O_WRONLY | O_CREAT | O_CLOEXEC, 0600));
	CHECK_EQ("open_dir: file in a level refused",
		 sigtree_open_dir(tree, "S", "S/f/m.ko.p7s", true, &name), -ENOTDIR);
	CHECK_EQ("open_dir: read: missing level",
		 sigtree_open_dir(tree, "S", "S/none/m.ko.p7s", false, &name), -ENOENT);
	CHECK("open_dir: read makes nothing", access("S/none", F_OK) < 0);
	close(tree);
}

/* The fixture: a scratch directory, the current one of every case. */
static bool fixture(void)
{
	return unit_mkdtemp(top) && chdir(top) == 0;
}

static void fixture_free(void)
{
	if (chdir("/") == 0)
		unit_rm_rf(top);
}

UNIT_MAIN(.setup = fixture, .teardown = fixture_free)
