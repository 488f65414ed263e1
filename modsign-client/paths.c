/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <errno.h>
#include <ftw.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "paths.h"

int pathlist_add(struct pathlist *l, const char *path)
{
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 64;
		char **v = realloc(l->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n] = strdup(path);
	if (!l->v[l->n])
		return -ENOMEM;
	l->n++;
	return 0;
}

/* nftw() offers no context pointer; the walk is single-threaded. */
static struct pathlist *walk_list;

static int walk_one(const char *path, const struct stat *st _unused_, int type,
		    struct FTW *ftw _unused_)
{
	size_t n = strlen(path);

	if (type == FTW_F && n > 3 && strcmp(path + n - 3, ".ko") == 0)
		return pathlist_add(walk_list, path) < 0 ? -1 : 0;
	return 0;
}

static int cmp_path(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int pathlist_add_tree(struct pathlist *l, const char *dir)
{
	size_t first = l->n;
	int r;

	walk_list = l;
	r = nftw(dir, walk_one, 32, FTW_PHYS);
	walk_list = NULL;
	if (r != 0)
		return errno ? -errno : -ENOMEM;
	qsort(l->v + first, l->n - first, sizeof(*l->v), cmp_path);
	return 0;
}

int pathlist_add_lines(struct pathlist *l, FILE *f)
{
	_cleanup_(freep) char *line = NULL;
	size_t cap = 0;
	ssize_t n;

	while ((n = getline(&line, &cap, f)) >= 0) {
		if (n > 0 && line[n - 1] == '\n')
			line[--n] = '\0';
		if (n > 0 && pathlist_add(l, line) < 0)
			return -ENOMEM;
	}
	return ferror(f) ? -EIO : 0;
}

void pathlist_free(struct pathlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	*l = (struct pathlist){ 0 };
}
