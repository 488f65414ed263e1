// SPDX-License-Identifier: GPL-2.0
/*
 * modload CASE FILE MODNAME: load FILE with init_module(2), print one line
 *
 *	MODTEST name=CASE rc=0|-1 errno=NAME
 *
 * on the console, and unload the module again on success so that the next
 * case may load a module of the same name.  Busybox insmod would do, but
 * prints only strerror(); the test asserts the errno by name.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *errno_name(int e)
{
	switch (e) {
	case 0: return "0";
	case EKEYREJECTED: return "EKEYREJECTED";
	case ENOKEY: return "ENOKEY";
	case ENOPKG: return "ENOPKG";
	case EBADMSG: return "EBADMSG";
	case ENOEXEC: return "ENOEXEC";
	case EEXIST: return "EEXIST";
	case EINVAL: return "EINVAL";
	case ENOENT: return "ENOENT";
	case ENOMEM: return "ENOMEM";
	case EPERM: return "EPERM";
	default: return "other";
	}
}

static void *read_file(const char *path, size_t *ret_len)
{
	struct stat st;
	char *buf;
	ssize_t n;
	size_t off = 0;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc(st.st_size ? st.st_size : 1);
	while (buf && off < (size_t)st.st_size) {
		n = read(fd, buf + off, st.st_size - off);
		if (n <= 0) {
			free(buf);
			buf = NULL;
			break;
		}
		off += n;
	}
	close(fd);
	*ret_len = off;
	return buf;
}

int main(int argc, char **argv)
{
	size_t len = 0;
	void *image;
	long r;
	int e;

	if (argc != 4) {
		fprintf(stderr, "usage: modload CASE FILE MODNAME\n");
		return 2;
	}
	image = read_file(argv[2], &len);
	if (!image) {
		printf("MODTEST name=%s rc=-1 errno=%s (read)\n", argv[1],
		       errno_name(errno));
		return 1;
	}
	r = syscall(SYS_init_module, image, len, "");
	e = r ? errno : 0;
	printf("MODTEST name=%s rc=%ld errno=%s\n", argv[1], r, errno_name(e));
	fflush(stdout);
	if (r == 0 && syscall(SYS_delete_module, argv[3], O_NONBLOCK) != 0)
		printf("MODTEST-NOTE name=%s rmmod errno=%d\n", argv[1], errno);
	free(image);
	return r ? 1 : 0;
}
