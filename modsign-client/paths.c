/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "client.h"
#include "compress.h"
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
static char *walk_unsafe; /* the first directory someone else could swap */

/*
 * Whether @st, a directory of the tree, is one only the caller and root
 * can change.  The modules are opened by path after the walk: another
 * user who can rename an entry of a directory in the tree could swap a
 * subdirectory for a symbolic link between the walk and the open, and
 * lead the command (root's, writing in place) out of the tree.
 */
static bool dir_is_ours(const struct stat *st)
{
	return (st->st_uid == geteuid() || st->st_uid == 0) &&
	       (st->st_mode & (S_IWGRP | S_IWOTH)) == 0;
}

static int walk_one(const char *path, const struct stat *st, int type,
		    struct FTW *ftw _unused_)
{
	if (type == FTW_D && !dir_is_ours(st)) {
		walk_unsafe = strdup(path);
		errno = walk_unsafe ? EPERM : ENOMEM;
		return -1;
	}
	if (type == FTW_F && compress_is_module_name(path))
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

int pathlist_collect(int argc, char **argv, const struct pathlist *trees,
		     bool use_stdin, struct pathlist *ret)
{
	int r = 0;

	for (int i = 0; i < argc && r >= 0; i++)
		r = strcmp(argv[i], "-") == 0 ? pathlist_add_lines(ret, stdin) :
						pathlist_add(ret, argv[i]);
	for (size_t i = 0; i < trees->n && r >= 0; i++) {
		r = pathlist_add_tree(ret, trees->v[i]);
		if (r == -EPERM && walk_unsafe)
			warn_msg("%s: directory %s can be changed by a user other than you and "
				 "root (owner or group/other write): a directory swapped during "
				 "the walk would lead out of the tree; run as its owner",
				 trees->v[i], walk_unsafe);
		else if (r < 0)
			warn_msg("%s: %s", trees->v[i], strerror(-r));
		free(walk_unsafe);
		walk_unsafe = NULL;
	}
	if (r >= 0 && use_stdin)
		r = pathlist_add_lines(ret, stdin);
	return r;
}

/* @path below @root ("root/rel"), the rel part; NULL if it is not. */
static const char *below(const char *root, const char *path)
{
	size_t n = strlen(root);

	while (n > 1 && root[n - 1] == '/')
		n--;
	if (strncmp(root, path, n) != 0 || (path[n] != '/' && root[n - 1] != '/'))
		return NULL;
	return path + n;
}

/* Whether @rel, a relative path, steps out of where it starts. */
static bool has_dotdot(const char *rel)
{
	for (const char *p = rel; p; p = strchr(p, '/'), p = p ? p + 1 : NULL)
		if (p[0] == '.' && p[1] == '.' && (p[2] == '/' || p[2] == '\0'))
			return true;
	return false;
}

/* Drop the empty and "." components of the relative path @s, in place:
 * one file of the tree has one spelling, which refuse_shared_sig_paths()
 * (batch.c) compares. */
static void drop_dot_components(char *s)
{
	char *out = s;

	for (char *p = s; *p; p += strspn(p, "/")) {
		size_t n = strcspn(p, "/");

		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (out != s)
				*out++ = '/';
			memmove(out, p, n);
			out += n;
		}
		p += n;
	}
	*out = '\0';
}

int sigtree_path(const char *dir, const struct pathlist *roots, const char *module,
		 const char *suffix, char **ret)
{
	_cleanup_(freep) char *rel = NULL;
	const char *in = NULL;

	for (size_t i = 0; roots && i < roots->n && !in; i++)
		in = below(roots->v[i], module);
	rel = strdup(in ?: module);
	if (!rel)
		return -ENOMEM;
	drop_dot_components(rel);
	if (!*rel || has_dotdot(rel))
		return -EINVAL;
	return asprintf(ret, "%s/%s%s", dir, rel, suffix) < 0 ? -ENOMEM : 0;
}

int sigtree_open(const char *dir, bool create)
{
	int fd;

	if (create && mkdir(dir, 0777) < 0 && errno != EEXIST)
		return -errno;
	fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

/* Directory @name in @fd, made first if @create; never through a link. */
static int open_level(int fd, const char *name, bool create)
{
	int next;

	if (create && mkdirat(fd, name, 0777) < 0 && errno != EEXIST)
		return -errno;
	next = openat(fd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (next < 0)
		return errno == ENOTDIR || errno == ELOOP ? -ENOTDIR : -errno;
	return next;
}

int sigtree_open_dir(int treefd, const char *dir, const char *path, bool create,
		     const char **ret_name)
{
	const char *rel = path + strlen(dir) + 1;
	_cleanup_(freep) char *levels = strdup(rel);
	_cleanup_(closep) int fd = -1;
	char *p, *slash;

	if (!levels)
		return -ENOMEM;
	fd = fcntl(treefd, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	for (p = levels; (slash = strchr(p, '/')); p = slash + 1) {
		int next;

		*slash = '\0';
		if (!*p || strcmp(p, ".") == 0)
			continue;
		next = open_level(fd, p, create);
		if (next < 0)
			return next;
		close(fd);
		fd = next;
	}
	*ret_name = rel + (p - levels);
	return TAKE_FD(fd);
}

const char *sigtree_strerror(int r)
{
	if (r == -ENOTDIR)
		return "a directory on its path in the signature tree is a link or not a directory";
	return strerror(-r);
}
