/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_PATHS_H
#define MODSIGN_CLIENT_PATHS_H

/* The modules a batch signs: from arguments, a directory tree, or stdin. */

#include <stddef.h>
#include <stdio.h>

struct pathlist {
	char **v;
	size_t n, cap;
};

int pathlist_add(struct pathlist *l, const char *path);

/* Every regular file named *.ko under @dir, in sorted order.  Symbolic links
 * are not followed. */
int pathlist_add_tree(struct pathlist *l, const char *dir);

/* One path per line (blank lines skipped). */
int pathlist_add_lines(struct pathlist *l, FILE *f);

void pathlist_free(struct pathlist *l);

#endif
