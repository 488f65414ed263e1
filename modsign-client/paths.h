/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_PATHS_H
#define MODSIGN_CLIENT_PATHS_H

/* The modules a batch signs: from arguments, a directory tree, or stdin. */

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

struct pathlist {
	char **v;
	size_t n, cap;
};

int pathlist_add(struct pathlist *l, const char *path);

/* Every regular file named *.ko, *.ko.xz, *.ko.zst or *.ko.gz (compress.h)
 * under @dir, in sorted order: an installed /usr/lib/modules/VERSION.
 * Symbolic links are not followed, to files or to directories: a link in
 * the tree leads nowhere out of it (nor in twice).  -EPERM when a directory
 * of the tree is not the caller's or root's, or is group- or
 * other-writable: its entries could be swapped for links between the walk
 * and the opens that follow it (paths.c). */
int pathlist_add_tree(struct pathlist *l, const char *dir);

/* One path per line (blank lines skipped). */
int pathlist_add_lines(struct pathlist *l, FILE *f);

void pathlist_free(struct pathlist *l);

/*
 * The modules a command names: each of @argv ("-": one per line from
 * stdin), every module under each of @trees (--recursive), then stdin's
 * lines if @use_stdin.  Says why on stderr when a tree cannot be read.
 */
int pathlist_collect(int argc, char **argv, const struct pathlist *trees,
		     bool use_stdin, struct pathlist *ret);

/*
 * A signature tree (sign --detached DIR, attach --from DIR): the detached
 * signature of each module, at the module's path inside DIR plus a suffix
 * (".p7s" as sign-file -d names it; ".sig" for the layout of Debian's
 * linux-signed packages).  The path in the tree is the module's path
 * relative to the --recursive tree of @roots it lies under, else the path
 * as given without its leading '/': so "sign --detached S -r A" and
 * "attach --from S -r B" pair A/x/m.ko with B/x/m.ko.
 *
 * Into *@ret (new string) goes "@dir/REL@suffix", REL without empty or
 * "." components (one spelling for one file).  A path with a ".."
 * component is refused (-EINVAL): it would lead out of @dir.
 */
int sigtree_path(const char *dir, const struct pathlist *roots, const char *module,
		 const char *suffix, char **ret);

/*
 * The signature tree @dir, made first if @create and missing: an O_PATH
 * descriptor, or -errno.  @dir itself is resolved here, once, as the
 * caller named it (a link to the tree is theirs to make); everything
 * below it is reached from this descriptor by sigtree_open_dir().
 */
int sigtree_open(const char *dir, bool create);

/*
 * The directory that holds the signature at @path (what sigtree_path()
 * made of @dir), opened from @treefd (sigtree_open() of @dir) one level at
 * a time, never through a symbolic link, and made level by level (mode
 * 0777 & ~umask) if @create.  Returns an O_PATH descriptor (the caller's
 * to close) and points *@ret_name at the signature's file name in @path;
 * -ENOTDIR when a level is a link or not a directory: whoever can write
 * in the tree cannot send a signature written or read there elsewhere,
 * also by a swap after an earlier call.
 */
int sigtree_open_dir(int treefd, const char *dir, const char *path, bool create,
		     const char **ret_name);

/* A reason for sigtree_open_dir()'s -errno @r, for a message. */
const char *sigtree_strerror(int r);

#endif
