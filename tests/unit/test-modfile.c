/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client/modfile.c, linked as an object, on synthetic ELF files in
 * a scratch directory: every refusal of modfile_open() with the reason the
 * user reads, and the steps of the replacement (prepare, commit, the
 * temporary name and who may take it over, the checks that the module did
 * not change meanwhile, a copy at DEST).  Each case has its own directory.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "modfile.h"
#include "unit.h"
#include "util.h"

#define BODY 100                       /* bytes between the ELF header and the section headers */
#define ELF_LEN (64 + BODY + 2 * 64)   /* a 64-bit ELF of two section headers */
#define SIG_LEN 40

static char top[] = "/tmp/modsign-test-modfile-XXXXXX";
static uint8_t elf[ELF_LEN], sig[SIG_LEN], sig2[SIG_LEN];
/* Never opened (not the zeroes that would close stdin): every case
 * starts from it. */
static struct modfile m = { .fd = -1, .out = -1, .dirfd = -1 };
static const char *err;

/* A little-endian ELF64 header whose section header table ends at ELF_LEN
 * (what modsig_elf_end() reads), then recognisable filler. */
static void make_elf(void)
{
	memcpy(elf, "\177ELF\2\1\1", 7);
	for (size_t i = 64; i < ELF_LEN; i++)
		elf[i] = (uint8_t)(i * 7);
	elf[0x28] = 64 + BODY;             /* e_shoff */
	elf[0x3a] = 64;                    /* e_shentsize */
	elf[0x3c] = 2;                     /* e_shnum */
	memset(sig, 0x5a, sizeof(sig));
	memset(sig2, 0xa5, sizeof(sig2));
}

/* @name in a case's directory.  Valid for the next 15 calls: a name
 * kept longer is copied into a path[] of its own (PATH_IN()). */
static const char *in(const char *dir, const char *name)
{
	static char paths[16][PATH_MAX];
	static unsigned next;
	char *p = paths[next++ % 16];

	snprintf(p, PATH_MAX, "%s/%s%s%s", top, dir, *name ? "/" : "", name);
	return p;
}
#define PATH_IN(var, dir, name)                                                \
	char var##_[PATH_MAX];                                                 \
	const char *var = strcpy(var##_, in(dir, name))

/* A directory of its own for one case. */
static const char *case_dir(const char *dir)
{
	const char *p = in(dir, "");

	mkdir(p, 0755);
	return dir;
}

static void put(const char *path, const void *a, size_t a_len, const void *b,
		size_t b_len, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || write_full(fd, a, a_len) < 0 || write_full(fd, b, b_len) < 0 ||
	    fchmod(fd, mode) < 0)
		printf("# cannot write %s\n", path);
	if (fd >= 0)
		close(fd);
}

/* @elf followed by @s and its trailer. */
static void put_signed(const char *path, const uint8_t *s, size_t len, mode_t mode)
{
	uint8_t buf[ELF_LEN + SIG_LEN + MODSIG_TRAILER_LEN];

	memcpy(buf, elf, ELF_LEN);
	memcpy(buf + ELF_LEN, s, len);
	modsig_trailer(len, buf + ELF_LEN + len);
	put(path, buf, ELF_LEN + len + MODSIG_TRAILER_LEN, NULL, 0, mode);
}

/* Whether @path holds exactly @elf, then @s (NULL: nothing) and its trailer. */
static bool holds(const char *path, const uint8_t *s, size_t len)
{
	uint8_t want[ELF_LEN + SIG_LEN + MODSIG_TRAILER_LEN], got[sizeof(want) + 1];
	size_t n = ELF_LEN;
	_cleanup_(closep) int fd = open(path, O_RDONLY | O_CLOEXEC);

	memcpy(want, elf, ELF_LEN);
	if (s) {
		memcpy(want + n, s, len);
		modsig_trailer(len, want + n + len);
		n += len + MODSIG_TRAILER_LEN;
	}
	return fd >= 0 && read_full(fd, got, sizeof(got)) == (ssize_t)n &&
	       memcmp(got, want, n) == 0;
}

/* The names in a case's directory, space-separated, sorted. */
static const char *listing(const char *dir)
{
	static char out[512];
	struct dirent **names;
	int n = scandir(in(dir, ""), &names, NULL, alphasort);
	size_t len = 0;

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(names[i]->d_name, ".") && strcmp(names[i]->d_name, ".."))
			len += (size_t)snprintf(out + len, sizeof(out) - len, "%s%s",
						len ? " " : "", names[i]->d_name);
		free(names[i]);
	}
	free(n >= 0 ? names : NULL);
	return out;
}

static ino_t inode(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? st.st_ino : 0;
}

static mode_t mode_of(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 ? st.st_mode : 0;
}

static int open_m(const char *path, bool for_write)
{
	modfile_close(&m);
	return modfile_open(path, for_write, &m, &err);
}

/* modfile_open() refuses @path with -@want and exactly @why. */
static void refused(const char *name, const char *path, bool for_write, int want,
		    const char *why)
{
	int r = open_m(path, for_write);

	if (!CHECK(name, r == want && (why ? err && strcmp(err, why) == 0 : !err) &&
				 m.fd == -1 && m.dirfd == -1))
		printf("#   got %d \"%s\", want %d \"%s\"\n", r, err ?: "(null)", want,
		       why ?: "(null)");
}

static int next_fd(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	close(fd);
	return fd;
}

UNIT_TEST(open)
{
	const char *d = case_dir("open");
	uint8_t md[DIGEST_MAX_LEN], want[DIGEST_MAX_LEN];
	size_t md_len = 0, want_len = 0;
	uint8_t *got = NULL;

	put(in(d, "plain.ko"), elf, ELF_LEN, NULL, 0, 0644);
	put_signed(in(d, "signed.ko"), sig, SIG_LEN, 0644);
	CHECK_EQ("unsigned module opens", open_m(in(d, "plain.ko"), false), 0);
	CHECK("unsigned: no signature, body the whole file",
	      m.sig.sig_len == 0 && m.sig.body_len == ELF_LEN);
	CHECK_EQ("unsigned: read_sig -> ENODATA", modfile_read_sig(&m, &got), -ENODATA);
	CHECK_EQ("signed module opens for writing", open_m(in(d, "signed.ko"), true), 0);
	CHECK("signed: body and signature found",
	      m.sig.body_len == ELF_LEN && m.sig.sig_off == ELF_LEN &&
		      m.sig.sig_len == SIG_LEN && m.dirfd >= 0);
	CHECK("signed: read_sig reads it",
	      modfile_read_sig(&m, &got) == 0 && memcmp(got, sig, SIG_LEN) == 0);
	free(got);
	CHECK("digest is of the body only",
	      modfile_digest(&m, digest_lookup("sha256"), md, &md_len) == 0 &&
		      digest_buf(elf, ELF_LEN, digest_lookup("sha256"), want, &want_len) == 0 &&
		      md_len == 32 && want_len == 32 && memcmp(md, want, 32) == 0);
	modfile_close(&m);
	modfile_close(&m); /* twice is harmless */
	CHECK("close: every descriptor dropped", m.fd == -1 && m.out == -1 && m.dirfd == -1);
}

UNIT_TEST(refusals)
{
	const char *d = case_dir("refuse");
	uint8_t buf[ELF_LEN + SIG_LEN + MODSIG_TRAILER_LEN + 8];
	struct module_signature *ms;
	int fd_before = next_fd();

	put(in(d, "m.ko"), elf, ELF_LEN, NULL, 0, 0644);
	(void)!symlink("m.ko", in(d, "link.ko"));
	refused("symlink, to write in place", in(d, "link.ko"), true, -ELOOP,
		"is a symbolic link (sign its target)");
	CHECK_EQ("symlink, to read (its target)", open_m(in(d, "link.ko"), false), 0);

	mkdir(in(d, "dir.ko"), 0755);
	refused("directory, to read", in(d, "dir.ko"), false, -EINVAL, "not a regular file");
	refused("directory, to write", in(d, "dir.ko"), true, -EINVAL, "not a regular file");
	refused("/dev/null", "/dev/null", false, -EINVAL, "not a regular file");
	refused("missing file", in(d, "none.ko"), false, -ENOENT, NULL);
	refused("missing directory, to write", in("none", "m.ko"), true, -ENOENT, NULL);

	put(in(d, "ro.ko"), elf, ELF_LEN, NULL, 0, 0444);
	refused("read-only file, to write", in(d, "ro.ko"), true, -EACCES, "file is read-only");
	CHECK_EQ("read-only file, to read", open_m(in(d, "ro.ko"), false), 0);
	CHECK_EQ("0644 file, to write", open_m(in(d, "m.ko"), true), 0);

	put(in(d, "text.ko"), "hello, world: not an ELF file at all, not one bit of it.\n",
	    57, NULL, 0, 0644);
	refused("not ELF", in(d, "text.ko"), false, -ENOEXEC,
		"not an ELF file, nor a compressed module");
	put(in(d, "short.ko"), elf, 40, NULL, 0, 0644);
	refused("shorter than an ELF header", in(d, "short.ko"), false, -ENOEXEC,
		"not an ELF file, nor a compressed module");
	memcpy(buf, elf, ELF_LEN);
	buf[4] = 3;
	put(in(d, "class.ko"), buf, ELF_LEN, NULL, 0, 0644);
	refused("ELF of class 3", in(d, "class.ko"), false, -ENOEXEC,
		"not an ELF file, nor a compressed module");
	put(in(d, "empty.ko"), "", 0, NULL, 0, 0644);
	refused("empty file", in(d, "empty.ko"), false, -ENOEXEC,
		"not an ELF file, nor a compressed module");

	put(in(d, "trunc.ko"), elf, ELF_LEN - 1, NULL, 0, 0644);
	refused("truncated by one byte", in(d, "trunc.ko"), false, -EBADMSG,
		"truncated module: shorter than its ELF headers say");
	put(in(d, "after.ko"), elf, ELF_LEN, "x", 1, 0644);
	refused("one byte after the ELF image", in(d, "after.ko"), false, -EBADMSG,
		"data after the ELF image: truncated or corrupt signature trailer");
	/* A signature whose magic lost its last byte is such data. */
	memcpy(buf, elf, ELF_LEN);
	memcpy(buf + ELF_LEN, sig, SIG_LEN);
	modsig_trailer(SIG_LEN, buf + ELF_LEN + SIG_LEN);
	put(in(d, "cut.ko"), buf, ELF_LEN + SIG_LEN + MODSIG_TRAILER_LEN - 1, NULL, 0, 0644);
	refused("signature magic cut short", in(d, "cut.ko"), false, -EBADMSG,
		"data after the ELF image: truncated or corrupt signature trailer");
	/* Twin: the whole of it. */
	put(in(d, "whole.ko"), buf, ELF_LEN + SIG_LEN + MODSIG_TRAILER_LEN, NULL, 0, 0644);
	CHECK_EQ("the whole signature opens", open_m(in(d, "whole.ko"), false), 0);

	ms = (struct module_signature *)(buf + ELF_LEN + SIG_LEN);
	static const struct {
		const char *name;
		size_t off;
		uint8_t v;
		int r;
		const char *why;
	} bad[] = {
		{ "trailer algo set", 0, 1, -EBADMSG, "corrupt signature trailer" },
		{ "trailer hash set", 1, 1, -EBADMSG, "corrupt signature trailer" },
		{ "trailer signer_len set", 3, 1, -EBADMSG, "corrupt signature trailer" },
		{ "trailer key_id_len set", 4, 1, -EBADMSG, "corrupt signature trailer" },
		{ "trailer padding set", 7, 1, -EBADMSG, "corrupt signature trailer" },
		{ "trailer sig_len 0", 11, 0, -EBADMSG, "corrupt signature trailer" },
		{ "trailer sig_len past the file", 9, 1, -EBADMSG, "corrupt signature trailer" },
		{ "trailer id_type 1 (not PKCS#7)", 2, 1, -ENOPKG, "signature is not PKCS#7" },
		/* One byte too few or many: the body is then not the ELF image. */
		{ "trailer sig_len one short", 11, SIG_LEN - 1, -EBADMSG,
		  "data after the ELF image: truncated or corrupt signature trailer" },
		{ "trailer sig_len one long", 11, SIG_LEN + 1, -EBADMSG,
		  "truncated module: shorter than its ELF headers say" },
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		uint8_t copy[sizeof(buf)];

		memcpy(copy, buf, sizeof(copy));
		copy[(uint8_t *)ms - buf + bad[i].off] = bad[i].v;
		if (bad[i].off >= 8 && bad[i].off < 11) /* sig_len's high bytes */
			copy[(uint8_t *)ms - buf + 11] = SIG_LEN;
		put(in(d, "bad.ko"), copy, ELF_LEN + SIG_LEN + MODSIG_TRAILER_LEN, NULL, 0, 0644);
		refused(bad[i].name, in(d, "bad.ko"), false, bad[i].r, bad[i].why);
	}
	modfile_close(&m);
	CHECK_EQ("refusals leave no descriptor open", next_fd(), fd_before);
}

UNIT_TEST(in_place)
{
	const char *d = case_dir("inplace");
	PATH_IN(mod, d, "m.ko");
	ino_t before;

	put(mod, elf, ELF_LEN, NULL, 0, 0640);
	before = inode(mod);
	CHECK_EQ("in place: open", open_m(mod, true), 0);
	CHECK_EQ("in place: prepare", modfile_prepare(&m, NULL, &err), 0);
	CHECK("in place: prepare leaves the module and no name",
	      holds(mod, NULL, 0) && inode(mod) == before && strcmp(listing(d), "m.ko") == 0);
	CHECK_EQ("in place: commit", modfile_commit(&m, sig, SIG_LEN, &err), 0);
	CHECK("in place: body, signature, trailer", holds(mod, sig, SIG_LEN));
	CHECK("in place: a new file, renamed over it", inode(mod) != before);
	CHECK_EQ("in place: mode kept", mode_of(mod) & 07777, 0640);
	CHECK("in place: no temporary name left", strcmp(listing(d), "m.ko") == 0);

	/* Re-signing drops the old signature; stripping leaves the body. */
	CHECK("re-sign: open, write", open_m(mod, true) == 0 &&
					      modfile_write(&m, NULL, sig2, SIG_LEN, &err) == 0);
	CHECK("re-sign: one signature, the new one", holds(mod, sig2, SIG_LEN));
	CHECK("strip: open, write", open_m(mod, true) == 0 &&
					    modfile_write(&m, NULL, NULL, 0, &err) == 0);
	CHECK("strip: the ELF image alone", holds(mod, NULL, 0));

	/* Prepared, never committed: nothing happened. */
	before = inode(mod);
	CHECK("abandon: open, prepare",
	      open_m(mod, true) == 0 && modfile_prepare(&m, NULL, &err) == 0);
	modfile_close(&m);
	CHECK("abandon: module untouched, no litter",
	      inode(mod) == before && holds(mod, NULL, 0) && strcmp(listing(d), "m.ko") == 0);

	CHECK_EQ("commit without prepare -> EBADF",
		 (open_m(mod, true), modfile_commit(&m, sig, SIG_LEN, &err)), -EBADF);
	CHECK_EQ("in place on a module opened to read -> EBADF",
		 (open_m(mod, false), modfile_prepare(&m, NULL, &err)), -EBADF);
	CHECK_EQ("a signature of 0 bytes -> ERANGE",
		 (open_m(mod, true), modfile_write(&m, NULL, sig, 0, &err)), -ERANGE);
	CHECK_EQ("a signature over 64 KiB -> ERANGE",
		 (open_m(mod, true), modfile_write(&m, NULL, sig, MODSIG_MAX_SIG + 1, &err)),
		 -ERANGE);
	modfile_close(&m);
	CHECK("refused writes: module untouched, no litter",
	      holds(mod, NULL, 0) && strcmp(listing(d), "m.ko") == 0);
}

/* A group other than ours the directory may be given: any, as root; else
 * a supplementary one; (gid_t)-1 when there is none. */
static gid_t other_group(void)
{
	gid_t g[64];
	int n;

	if (geteuid() == 0)
		return getegid() + 1;
	n = getgroups(64, g);
	for (int i = 0; i < n; i++)
		if (g[i] != getegid())
			return g[i];
	return (gid_t)-1;
}

/* In a set-group-ID directory the new file is born in the directory's
 * group, not ours: in place, the module's own group is still kept (a
 * 0640 module must not become readable by the directory's group). */
UNIT_TEST(setgid_dir)
{
	const char *d = case_dir("setgid");
	PATH_IN(mod, d, "m.ko");
	gid_t other = other_group();
	struct stat st;

	if (other == (gid_t)-1) {
		printf("note: setgid_dir: no second group to test with\n");
		return;
	}
	CHECK("setgid dir: made", chown(in(d, ""), (uid_t)-1, other) == 0 &&
					  chmod(in(d, ""), 02755) == 0);
	put(mod, elf, ELF_LEN, NULL, 0, 0640);
	CHECK("setgid dir: the module in our group",
	      chown(mod, (uid_t)-1, getegid()) == 0);
	CHECK("setgid dir: open, write", open_m(mod, true) == 0 &&
						modfile_write(&m, NULL, sig, SIG_LEN, &err) == 0);
	CHECK("setgid dir: signed", holds(mod, sig, SIG_LEN));
	CHECK("setgid dir: group kept, not the directory's",
	      stat(mod, &st) == 0 && st.st_gid == getegid());
	CHECK_EQ("setgid dir: mode kept", mode_of(mod) & 07777, 0640);
}

/* The directory is resolved once: renaming it away after the open
 * changes where nothing goes. */
UNIT_TEST(dir_swap)
{
	const char *d = case_dir("swap");

	mkdir(in(d, "a"), 0755);
	put(in(d, "a/m.ko"), elf, ELF_LEN, NULL, 0, 0644);
	CHECK_EQ("dir swap: open", open_m(in(d, "a/m.ko"), true), 0);
	rename(in(d, "a"), in(d, "b"));
	mkdir(in(d, "a"), 0755);
	put(in(d, "a/m.ko"), elf, ELF_LEN, NULL, 0, 0644);
	CHECK_EQ("dir swap: write", modfile_write(&m, NULL, sig, SIG_LEN, &err), 0);
	CHECK("dir swap: the opened directory's module is signed", holds(in(d, "b/m.ko"), sig, SIG_LEN));
	CHECK("dir swap: the new directory's is not", holds(in(d, "a/m.ko"), NULL, 0));
	modfile_close(&m);
}

/* Something at ".m.ko.modsign-tmp" when the new file is linked there. */
static int commit_over(const char *d, const char **why)
{
	int r;

	put(in(d, "m.ko"), elf, ELF_LEN, NULL, 0, 0644);
	r = open_m(in(d, "m.ko"), true);
	if (r == 0)
		r = modfile_prepare(&m, NULL, why);
	if (r == 0)
		r = modfile_commit(&m, sig, SIG_LEN, why);
	modfile_close(&m);
	return r;
}

UNIT_TEST(temp_name)
{
	const char *d = case_dir("tmp");
	PATH_IN(tmp, d, ".m.ko.modsign-tmp");
	const char *why = NULL;
	time_t start;
	int r;

	/* A dead writer's: a file of ours that nobody holds. */
	put(tmp, "stale", 5, NULL, 0, 0600);
	CHECK_EQ("stale temp of a dead writer: commit", commit_over(d, &why), 0);
	CHECK("stale temp: removed, module signed",
	      holds(in(d, "m.ko"), sig, SIG_LEN) && strcmp(listing(d), "m.ko") == 0);
	/* Twin: a file of that name for another module is not touched. */
	put(in(d, ".n.ko.modsign-tmp"), "other", 5, NULL, 0, 0600);
	CHECK("another module's temp name is left alone",
	      commit_over(d, &why) == 0 &&
		      strcmp(listing(d), ".n.ko.modsign-tmp m.ko") == 0);
	unlink(in(d, ".n.ko.modsign-tmp"));

	/* Not a file of the signer's: left where it is, named. */
	mkfifo(tmp, 0600);
	alarm(60); /* a FIFO opened for reading would block: fail, do not hang */
	start = time(NULL);
	r = commit_over(d, &why);
	alarm(0);
	CHECK("FIFO at the temp name -> EEXIST, at once",
	      r == -EEXIST && time(NULL) - start < 5 && why &&
		      strcmp(why, ".m.ko.modsign-tmp next to it is in the way: not a regular "
				  "file of the signer's (remove it)") == 0);
	CHECK("FIFO: module untouched, FIFO left",
	      holds(in(d, "m.ko"), NULL, 0) && S_ISFIFO(mode_of(tmp)));
	unlink(tmp);
	(void)!symlink("m.ko", tmp);
	CHECK_EQ("symlink at the temp name -> EEXIST", commit_over(d, &why), -EEXIST);
	CHECK("symlink: left, its target untouched",
	      S_ISLNK(mode_of(tmp)) && holds(in(d, "m.ko"), NULL, 0));
	unlink(tmp);
	mkdir(tmp, 0700);
	CHECK_EQ("directory at the temp name -> EEXIST", commit_over(d, &why), -EEXIST);
	rmdir(tmp);

	if (geteuid() == 0) {
		/* Someone else's file: not ours to remove... */
		put(tmp, "theirs", 6, NULL, 0, 0644);
		(void)!chown(tmp, 65534, 65534);
		CHECK_EQ("another user's file at the temp name -> EEXIST",
			 commit_over(d, &why), -EEXIST);
		CHECK("another user's file left", inode(tmp) != 0);
		/* ...unless, in place, it is the module's owner's, to whom
		 * the writer gave it. */
		put(in(d, "m.ko"), elf, ELF_LEN, NULL, 0, 0644);
		(void)!chown(in(d, "m.ko"), 65534, 65534);
		r = open_m(in(d, "m.ko"), true);
		r = r ?: modfile_write(&m, NULL, sig, SIG_LEN, &why);
		modfile_close(&m);
		CHECK_EQ("the module owner's stale temp is taken over", r, 0);
		CHECK("...and the module keeps its owner",
		      holds(in(d, "m.ko"), sig, SIG_LEN) && strcmp(listing(d), "m.ko") == 0);
		struct stat st;
		CHECK("owner 65534 kept", stat(in(d, "m.ko"), &st) == 0 && st.st_uid == 65534);
	}
}

/* A live writer: holds the temp name's flock @hold_ms, then dies. */
static pid_t live_writer(const char *tmp, int hold_ms)
{
	int ready[2];
	char c;
	pid_t pid;

	if (pipe(ready) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		int fd = open(tmp, O_RDONLY | O_CLOEXEC);

		if (fd < 0 || flock(fd, LOCK_EX) < 0)
			_exit(1);
		(void)!write(ready[1], "x", 1);
		if (hold_ms >= 0)
			nanosleep(&(struct timespec){ .tv_sec = hold_ms / 1000,
						      .tv_nsec = (hold_ms % 1000) * 1000000L },
				  NULL);
		else
			pause();
		_exit(0);
	}
	close(ready[1]);
	if (pid < 0 || read(ready[0], &c, 1) != 1)
		pid = -1;
	close(ready[0]);
	return pid;
}

UNIT_TEST(live_writer)
{
	const char *d = case_dir("live");
	PATH_IN(tmp, d, ".m.ko.modsign-tmp");
	const char *why = NULL;
	struct timespec t0, t1;
	pid_t pid;
	int r;

	/* Released while we wait: then it is a dead writer's, and ours. */
	put(tmp, "held", 4, NULL, 0, 0600);
	pid = live_writer(tmp, 300);
	r = commit_over(d, &why);
	CHECK_EQ("a live writer's temp, released: commit waits and succeeds", r, 0);
	CHECK("released: module signed, no litter",
	      holds(in(d, "m.ko"), sig, SIG_LEN) && strcmp(listing(d), "m.ko") == 0);
	if (pid > 0)
		waitpid(pid, NULL, 0);

	/* Held for ever: given up after MODFILE_TEMP_WAIT_MS. */
	put(tmp, "held", 4, NULL, 0, 0600);
	pid = live_writer(tmp, -1);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	r = commit_over(d, &why);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	CHECK("a temp held for ever -> EBUSY, naming it",
	      r == -EBUSY && why &&
		      strcmp(why, ".m.ko.modsign-tmp next to it is still locked by another "
				  "signer after 10 s") == 0);
	/* Its deadline is in whole ms of a later now_ms(): allow for the
	 * rounding, not for an early give-up. */
	CHECK("...after the wait, not before",
	      (t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 >=
		      MODFILE_TEMP_WAIT_MS - 2);
	CHECK("held: module untouched, the writer's file left",
	      holds(in(d, "m.ko"), NULL, 0) && inode(tmp) != 0);
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
}

/* unchanged(): the module as read, and still the file at its name. */
UNIT_TEST(changed)
{
	const char *d = case_dir("changed");
	PATH_IN(mod, d, "m.ko");
	uint8_t other[ELF_LEN];
	int fd;

	memcpy(other, elf, ELF_LEN);
	other[ELF_LEN - 1] ^= 1; /* same size, other content */

	put(mod, elf, ELF_LEN, NULL, 0, 0644);
	open_m(mod, true);
	modfile_prepare(&m, NULL, &err);
	put(in(d, "new.ko"), other, ELF_LEN, NULL, 0, 0644);
	rename(in(d, "new.ko"), mod);
	CHECK_EQ("renamed over after prepare -> ESTALE",
		 modfile_commit(&m, sig, SIG_LEN, &err), -ESTALE);
	modfile_close(&m);
	fd = open(mod, O_RDONLY);
	uint8_t got[ELF_LEN + 1];
	CHECK("renamed over: the new module stays, unsigned, no litter",
	      read_full(fd, got, sizeof(got)) == ELF_LEN && memcmp(got, other, ELF_LEN) == 0 &&
		      strcmp(listing(d), "m.ko") == 0);
	close(fd);

	put(mod, elf, ELF_LEN, NULL, 0, 0644);
	open_m(mod, true);
	modfile_prepare(&m, NULL, &err);
	fd = open(mod, O_WRONLY | O_APPEND);
	(void)!write(fd, "x", 1);
	close(fd);
	CHECK_EQ("appended to after prepare -> ESTALE",
		 modfile_commit(&m, sig, SIG_LEN, &err), -ESTALE);

	/* Rewritten in place at the same size: its mtime tells.  Set it
	 * apart explicitly: a rewrite within one clock tick keeps it. */
	put(mod, elf, ELF_LEN, NULL, 0, 0644);
	open_m(mod, true);
	modfile_prepare(&m, NULL, &err);
	fd = open(mod, O_WRONLY);
	(void)!pwrite(fd, other + ELF_LEN - 1, 1, ELF_LEN - 1);
	futimens(fd, (struct timespec[]){ { .tv_nsec = UTIME_OMIT },
					  { .tv_sec = m.st.st_mtim.tv_sec + 1 } });
	close(fd);
	CHECK_EQ("rewritten at the same size after prepare -> ESTALE",
		 modfile_commit(&m, sig, SIG_LEN, &err), -ESTALE);
	modfile_close(&m);
	CHECK("refused commits leave no temporary name", strcmp(listing(d), "m.ko") == 0);

	/* Twin: only the mtime touched back to what it was: unchanged. */
	put(mod, elf, ELF_LEN, NULL, 0, 0644);
	open_m(mod, true);
	modfile_prepare(&m, NULL, &err);
	fd = open(mod, O_WRONLY);
	futimens(fd, (struct timespec[]){ { .tv_nsec = UTIME_OMIT }, m.st.st_mtim });
	close(fd);
	CHECK_EQ("same size and mtime: commits", modfile_commit(&m, sig, SIG_LEN, &err), 0);
	modfile_close(&m);
}

UNIT_TEST(dest)
{
	const char *d = case_dir("dest");
	PATH_IN(src, d, "src.ko");
	PATH_IN(dst, d, "out/m.ko");
	mode_t old = umask(022);
	ino_t src_ino;

	mkdir(in(d, "out"), 0755);
	put_signed(src, sig, SIG_LEN, 0600);
	src_ino = inode(src);
	CHECK("DEST: open to read, write a copy",
	      open_m(src, false) == 0 && modfile_write(&m, dst, sig2, SIG_LEN, &err) == 0);
	CHECK("DEST: body and the new signature", holds(dst, sig2, SIG_LEN));
	CHECK("DEST: the source untouched", inode(src) == src_ino && holds(src, sig, SIG_LEN));
	CHECK_EQ("DEST: a new file of mode 0666 & ~umask", mode_of(dst) & 07777, 0644);
	CHECK("DEST: no temporary name left", strcmp(listing("dest/out"), "m.ko") == 0);

	/* Whatever is at DEST is replaced, not written through. */
	put(dst, "old", 3, NULL, 0, 0600);
	ino_t dst_ino = inode(dst);
	CHECK("DEST over a file: write", open_m(src, false) == 0 &&
						 modfile_write(&m, dst, NULL, 0, &err) == 0);
	CHECK("DEST over a file: replaced, stripped copy, mode 0644",
	      inode(dst) != dst_ino && holds(dst, NULL, 0) && (mode_of(dst) & 07777) == 0644);
	put(in(d, "target"), "target", 6, NULL, 0, 0600);
	unlink(dst);
	(void)!symlink("../target", dst);
	CHECK("DEST over a symlink: write", open_m(src, false) == 0 &&
						    modfile_write(&m, dst, sig, SIG_LEN, &err) == 0);
	CHECK("DEST over a symlink: the link replaced by a file",
	      S_ISREG(mode_of(dst)) && holds(dst, sig, SIG_LEN));
	char t[8] = "";
	int fd = open(in(d, "target"), O_RDONLY);
	CHECK("DEST over a symlink: its target untouched",
	      read_full(fd, t, sizeof(t)) == 6 && memcmp(t, "target", 6) == 0);
	close(fd);

	CHECK_EQ("DEST in a missing directory -> ENOENT",
		 (open_m(src, false), modfile_write(&m, in(d, "none/m.ko"), sig, SIG_LEN, &err)),
		 -ENOENT);
	CHECK("...naming the step and why, once",
	      err && strcmp(err, "cannot open its directory: No such file or directory") == 0);
	CHECK_EQ("DEST ending in / -> EISDIR",
		 (open_m(src, false), modfile_write(&m, in(d, "out/"), sig, SIG_LEN, &err)),
		 -EISDIR);

	/* A copy signs what was read: the source renamed over meanwhile
	 * does not matter, the source rewritten does. */
	open_m(src, false);
	modfile_prepare(&m, dst, &err);
	put(in(d, "new.ko"), elf, ELF_LEN, NULL, 0, 0644);
	rename(in(d, "new.ko"), src);
	CHECK_EQ("DEST: source renamed over after prepare still commits",
		 modfile_commit(&m, sig2, SIG_LEN, &err), 0);
	put_signed(src, sig, SIG_LEN, 0600);
	open_m(src, false);
	modfile_prepare(&m, dst, &err);
	fd = open(src, O_WRONLY | O_APPEND);
	(void)!write(fd, "x", 1);
	close(fd);
	CHECK_EQ("DEST: source appended to after prepare -> ESTALE",
		 modfile_commit(&m, sig2, SIG_LEN, &err), -ESTALE);
	modfile_close(&m);
	umask(old);
}

static int rm(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(path);
}

/* The fixture: one scratch directory (each case makes its own below it)
 * and the module and signatures it writes there. */
static bool fixture(void)
{
	make_elf();
	return unit_mkdtemp(top);
}

static void fixture_free(void)
{
	nftw(top, rm, 16, FTW_DEPTH | FTW_PHYS);
}

UNIT_MAIN(.setup = fixture, .teardown = fixture_free)
