/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* hex, base64, parse_uint, the full read/write loops, now_ms, split_host_port
 * and keyfile_read. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include "keyfile.h"
#include "unit-cert.h"
#include "unit.h"
#include "util.h"

UNIT_TEST(hex)
{
	static const uint8_t bin[] = { 0x00, 0x01, 0x7f, 0x80, 0xab, 0xff };
	_cleanup_(freep) char *s = NULL, *empty = NULL;
	uint8_t out[sizeof(bin)];
	size_t n = 999;

	CHECK_EQ("hex_encode returns 0", hex_encode(bin, sizeof(bin), &s), 0);
	CHECK("hex_encode lower-case", s && strcmp(s, "00017f80abff") == 0);
	CHECK("hex round trip",
	      hex_decode(s, out, sizeof(out), &n) == 0 && n == sizeof(bin) &&
		      memcmp(out, bin, n) == 0);
	n = 999;
	CHECK("hex_decode upper-case",
	      hex_decode("00017F80ABFF", out, sizeof(out), &n) == 0 &&
		      n == sizeof(bin) && memcmp(out, bin, n) == 0);
	CHECK("hex empty round trip",
	      hex_encode(bin, 0, &empty) == 0 && strcmp(empty, "") == 0 &&
		      hex_decode(empty, out, 0, &n) == 0 && n == 0);

	/* Tampered twins. */
	n = 999;
	CHECK_EQ("hex_decode odd length -> EINVAL",
		 hex_decode("00017f80abf", out, sizeof(out), &n), -EINVAL);
	CHECK_EQ("hex_decode bad char -> EINVAL",
		 hex_decode("00017g80abff", out, sizeof(out), &n), -EINVAL);
	CHECK_EQ("hex_decode space -> EINVAL",
		 hex_decode("0001 f80abff", out, sizeof(out), &n), -EINVAL);
	CHECK_EQ("hex_decode 0x prefix -> EINVAL",
		 hex_decode("0x01", out, sizeof(out), &n), -EINVAL);
	CHECK_EQ("hex_decode too long -> ERANGE",
		 hex_decode("00017f80abff00", out, sizeof(out), &n), -ERANGE);
	CHECK_EQ("hex_decode failures leave ret_len", n, 999);
}

/* RFC 4648 section 10. */
static const struct {
	const char *plain, *b64;
} rfc4648[] = {
	{ "", "" },	      { "f", "Zg==" },	   { "fo", "Zm8=" },
	{ "foo", "Zm9v" },    { "foob", "Zm9vYg==" }, { "fooba", "Zm9vYmE=" },
	{ "foobar", "Zm9vYmFy" },
};

UNIT_TEST(base64_vectors)
{
	char name[64];

	for (size_t i = 0; i < ELEMENTSOF(rfc4648); i++) {
		_cleanup_(freep) char *s = NULL;
		_cleanup_(freep) uint8_t *d = NULL;
		size_t n = 999, plen = strlen(rfc4648[i].plain);

		snprintf(name, sizeof(name), "base64_encode rfc4648 \"%s\"",
			 rfc4648[i].plain);
		CHECK(name, base64_encode((const uint8_t *)rfc4648[i].plain, plen,
					  &s) == 0 &&
				    strcmp(s, rfc4648[i].b64) == 0);
		snprintf(name, sizeof(name), "base64_decode rfc4648 \"%s\"",
			 rfc4648[i].b64);
		CHECK(name, base64_decode(rfc4648[i].b64, &d, &n) == 0 &&
				    n == plen && memcmp(d, rfc4648[i].plain, n) == 0);
	}
}

UNIT_TEST(base64_roundtrip)
{
	uint8_t bin[10];
	char name[64];

	for (size_t i = 0; i < sizeof(bin); i++)
		bin[i] = (uint8_t)(0xff - i * 37);
	for (size_t len = 0; len <= sizeof(bin); len++) {
		_cleanup_(freep) char *s = NULL;
		_cleanup_(freep) uint8_t *d = NULL;
		size_t n = 999;
		int r;

		r = base64_encode(bin, len, &s);
		snprintf(name, sizeof(name), "base64 encode length %zu", len);
		CHECK(name, r == 0 && strlen(s) == 4 * ((len + 2) / 3) &&
				    strspn(s, "=") == 0 &&
				    strlen(s) - strcspn(s, "=") == (3 - len % 3) % 3);
		if (r < 0)
			continue;
		r = base64_decode(s, &d, &n);
		snprintf(name, sizeof(name), "base64 round trip length %zu", len);
		CHECK(name, r == 0 && n == len && memcmp(d, bin, len) == 0);
	}
}

UNIT_TEST(base64_malformed)
{
	static const struct {
		const char *in, *name;
	} bad[] = {
		{ "Zg=", "base64 length 3 -> EINVAL" },
		{ "Zm9vY", "base64 length 5 -> EINVAL" },
		{ "Zg!=", "base64 bad char -> EINVAL" },
		{ "Zm9v\x80YmE", "base64 high-bit char -> EINVAL" },
		{ "Z m9", "base64 inner space -> EINVAL" },
		{ "Zm=v", "base64 '=' inside a group -> EINVAL" },
		{ "Zg==Zm9v", "base64 '=' before the last group -> EINVAL" },
		{ "Z===", "base64 three '=' -> EINVAL" },
		{ "====", "base64 only padding -> EINVAL" },
		{ "Zg==    ", "base64 trailing spaces -> EINVAL" },
	};

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		uint8_t *d = NULL;
		size_t n = 999;
		int r = base64_decode(bad[i].in, &d, &n);

		if (!CHECK_EQ(bad[i].name, r, -EINVAL))
			printf("#   input \"%s\" decoded to %zu bytes\n", bad[i].in, n);
		free(d);
	}
}

UNIT_TEST(parse_uint)
{
	static const struct {
		const char *s;
		unsigned long max, want;
		int r;
	} cases[] = {
		{ "0", 0, 0, 0 },
		{ "1", 0, 0, -ERANGE },
		{ "10", 10, 10, 0 },
		{ "11", 10, 0, -ERANGE },
		{ "007", 10, 7, 0 },
		{ "4294967295", UINT32_MAX, UINT32_MAX, 0 },
		{ "4294967296", UINT32_MAX, 0, -ERANGE },
		{ "18446744073709551615", ULONG_MAX, ULONG_MAX, 0 },
		{ "", 10, 0, -EINVAL },
		{ "-1", ULONG_MAX, 0, -EINVAL },
		{ "+1", 10, 0, -EINVAL },
		{ " 1", 10, 0, -EINVAL },
		{ "1 ", 10, 0, -EINVAL },
		{ "12x", 100, 0, -EINVAL },
		{ "0x10", 100, 0, -EINVAL },
	};
	char name[80];

	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		unsigned long v = 12345;
		int r = parse_uint(cases[i].s, cases[i].max, &v);

		snprintf(name, sizeof(name), "parse_uint \"%s\" max %lu -> %d",
			 cases[i].s, cases[i].max, cases[i].r);
		CHECK(name, r == cases[i].r &&
				    v == (r == 0 ? cases[i].want : 12345));
	}

	unsigned long v = 12345;
	int r = parse_uint("18446744073709551616", ULONG_MAX, &v);
	CHECK("parse_uint overflow of unsigned long refused", r < 0 && v == 12345);
	CHECK_EQ("parse_uint NULL -> EINVAL", parse_uint(NULL, 10, &v), -EINVAL);
}

UNIT_TEST(read_write_full)
{
	char path[] = "/tmp/modsign-test-util-XXXXXX";
	_cleanup_(closep) int fd = -1;
	_cleanup_(freep) uint8_t *in = NULL, *out = NULL;
	const size_t len = 300 * 1024;

	in = malloc(len);
	out = malloc(len + 10);
	fd = mkstemp(path);
	if (!CHECK("read/write_full temp file", fd >= 0 && in && out))
		return;
	unlink(path);
	for (size_t i = 0; i < len; i++)
		in[i] = (uint8_t)(i ^ (i >> 8));
	CHECK_EQ("write_full returns 0", write_full(fd, in, len), 0);
	CHECK("read_full after lseek", lseek(fd, 0, SEEK_SET) == 0 &&
					       read_full(fd, out, len) == (ssize_t)len &&
					       memcmp(in, out, len) == 0);
	/* Short only at EOF. */
	CHECK("read_full short at EOF",
	      lseek(fd, -5, SEEK_END) >= 0 && read_full(fd, out, 10) == 5 &&
		      memcmp(out, in + len - 5, 5) == 0);
	CHECK_EQ("read_full bad fd -> EBADF", read_full(-1, out, 1), -EBADF);
	CHECK_EQ("write_full bad fd -> EBADF", write_full(-1, in, 1), -EBADF);
}

UNIT_TEST(erase)
{
	char *s = strdup("secret");

	erase_and_free(NULL);
	erase_and_free(s);
	memzero_explicit(NULL, 0);
	CHECK("erase_and_free accepts NULL", true);
}

UNIT_TEST(utf8)
{
	_cleanup_(freep) char *a = NULL, *b = NULL, *c = NULL;

	CHECK("utf8 ascii valid", utf8_is_valid("snd-hda.ko"));
	CHECK("utf8 two/three/four-byte valid", utf8_is_valid("\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	CHECK("utf8 empty valid", utf8_is_valid(""));
	/* Tampered twins: every kind of ill-formed sequence. */
	CHECK("utf8 0xff invalid", !utf8_is_valid("\xff\xfe.ko"));
	CHECK("utf8 lone continuation invalid", !utf8_is_valid("a\x80"));
	CHECK("utf8 overlong invalid", !utf8_is_valid("\xc0\xaf"));
	CHECK("utf8 overlong three-byte invalid", !utf8_is_valid("\xe0\x80\xaf"));
	CHECK("utf8 surrogate invalid", !utf8_is_valid("\xed\xa0\x80"));
	CHECK("utf8 past U+10FFFF invalid", !utf8_is_valid("\xf4\x90\x80\x80"));
	CHECK("utf8 truncated invalid", !utf8_is_valid("\xe2\x82"));

	CHECK("utf8_replace_invalid bad bytes",
	      utf8_replace_invalid("\xff\xfe.ko", &a) == 0 &&
		      strcmp(a, "\xef\xbf\xbd\xef\xbf\xbd.ko") == 0 && utf8_is_valid(a));
	CHECK("utf8_replace_invalid keeps good text",
	      utf8_replace_invalid("\xc3\xa9t\xc3\xa9.ko", &b) == 0 && strcmp(b, "\xc3\xa9t\xc3\xa9.ko") == 0);
	CHECK("utf8_replace_invalid truncated sequence",
	      utf8_replace_invalid("x\xe2\x82", &c) == 0 &&
		      strcmp(c, "x\xef\xbf\xbd\xef\xbf\xbd") == 0);
}

/* text_escape_controls(): what a server or a file name may carry that a
 * terminal acts on is shown as \xHH; honest text in any script is kept. */
UNIT_TEST(escape_text)
{
	_cleanup_(freep) char *osc = NULL, *c1 = NULL, *raw = NULL, *line = NULL, *lines = NULL,
			     *honest = NULL, *latin1 = NULL, *del = NULL;

	CHECK("escape OSC title and BEL",
	      text_escape_controls("\x1b]0;owned\x07ok", false, &osc) == 0 &&
		      strcmp(osc, "\\x1b]0;owned\\x07ok") == 0);
	CHECK("escape C1 CSI in UTF-8 (U+009B)",
	      text_escape_controls("a\xc2\x9b" "2Jb", false, &c1) == 0 &&
		      strcmp(c1, "a\\xc2\\x9b" "2Jb") == 0);
	CHECK("escape 8-bit CSI outside UTF-8 (0x9B)",
	      text_escape_controls("a\x9b" "2J\x85", false, &raw) == 0 &&
		      strcmp(raw, "a\\x9b" "2J\\x85") == 0);
	CHECK("escape DEL", text_escape_controls("a\x7f", false, &del) == 0 &&
				    strcmp(del, "a\\x7f") == 0);
	CHECK("escape newline in one line (no forged line)",
	      text_escape_controls("CN=x\nall modules verified OK", false, &line) == 0 &&
		      strcmp(line, "CN=x\\x0aall modules verified OK") == 0);
	CHECK("escape keeps newlines of a note, not its other controls",
	      text_escape_controls("log\n5\n\x1b[2J\n", true, &lines) == 0 &&
		      strcmp(lines, "log\n5\n\\x1b[2J\n") == 0);
	/* Twins: honest UTF-8 (U+00A0 and up: no C1) and Latin-1 bytes. */
	CHECK("escape keeps honest UTF-8 subject",
	      text_escape_controls("CN=J\xc3\xbcrgen \xc2\xa0\xe7\xbd\xb2\xe5\x90\x8d \xf0\x9f\x94\x91", false,
				   &honest) == 0 &&
		      strcmp(honest, "CN=J\xc3\xbcrgen \xc2\xa0\xe7\xbd\xb2\xe5\x90\x8d \xf0\x9f\x94\x91") == 0);
	CHECK("escape keeps Latin-1 bytes past 0x9F",
	      text_escape_controls("caf\xe9.ko", false, &latin1) == 0 &&
		      strcmp(latin1, "caf\xe9.ko") == 0);
}

/* text_quote_name(): a certificate's name as one field of a log line. */
UNIT_TEST(quote_name)
{
	char buf[64], tiny[6];

	CHECK("quote name: a field inside is quoted",
	      text_quote_name("builder-1 addr=10.9.9.9:1", buf, sizeof(buf)) == 0 &&
		      strcmp(buf, "\"builder-1 addr=10.9.9.9:1\"") == 0);
	CHECK("quote name: quote and backslash escaped",
	      text_quote_name("a\"b\\", buf, sizeof(buf)) == 0 && strcmp(buf, "\"a\\\"b\\\\\"") == 0);
	CHECK("quote name: controls shown as \\xHH inside",
	      text_quote_name("a\nb", buf, sizeof(buf)) == 0 && strcmp(buf, "\"a\\x0ab\"") == 0);
	CHECK("quote name: not ASCII (a Cyrillic a) is quoted",
	      text_quote_name("b\xd0\xb0" "d", buf, sizeof(buf)) == 0 && strcmp(buf, "\"b\xd0\xb0" "d\"") == 0);
	CHECK("quote name: empty is quoted", text_quote_name("", buf, sizeof(buf)) == 0 &&
						     strcmp(buf, "\"\"") == 0);
	CHECK("quote name: too long -> ENOBUFS",
	      text_quote_name("a b c", tiny, sizeof(tiny)) == -ENOBUFS &&
		      text_quote_name("abcdef", tiny, sizeof(tiny)) == -ENOBUFS);
	/* Twin: a plain name reads as before. */
	CHECK("quote name: plain name as it is",
	      text_quote_name("builder-1.farm_2@x+y:z", buf, sizeof(buf)) == 0 &&
		      strcmp(buf, "builder-1.farm_2@x+y:z") == 0);
	CHECK("quote name: just fits", text_quote_name("a b", tiny, sizeof(tiny)) == 0 &&
					       strcmp(tiny, "\"a b\"") == 0);
}

/* json_escape_controls(): json-c leaves DEL, C1 and bytes that are not
 * UTF-8 as they are; after it the document holds none and is valid JSON. */
UNIT_TEST(escape_json)
{
	_cleanup_(freep) char *bad = NULL, *honest = NULL, *ws = NULL;
	const char *doc = "{\"subject\":\"a\x7f\xc2\x9b" "2J\x9b\xff\\u001b\"}";

	CHECK("json escape DEL, C1, bytes not UTF-8",
	      json_escape_controls(doc, &bad) == 0 &&
		      strcmp(bad, "{\"subject\":\"a\\u007f\\u009b" "2J\\ufffd\\ufffd\\u001b\"}") == 0 &&
		      utf8_is_valid(bad));
	CHECK("json escape keeps honest UTF-8",
	      json_escape_controls("{\"s\":\"J\xc3\xbcrgen \xe7\xbd\xb2\"}", &honest) == 0 &&
		      strcmp(honest, "{\"s\":\"J\xc3\xbcrgen \xe7\xbd\xb2\"}") == 0);
	CHECK("json escape keeps white space between tokens",
	      json_escape_controls("{\n\t\"a\": 1\n}", &ws) == 0 && strcmp(ws, "{\n\t\"a\": 1\n}") == 0);
}

static uint64_t clock_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000 + (uint64_t)t.tv_nsec / 1000000;
}

UNIT_TEST(now_ms)
{
	uint64_t before = clock_ms(), n = now_ms(), after = clock_ms(), later;

	CHECK("now_ms is CLOCK_MONOTONIC in ms", before <= n && n <= after);
	nanosleep(&(struct timespec){ .tv_nsec = 20 * 1000000 }, NULL);
	later = now_ms();
	CHECK("now_ms counts the time slept", later >= n + 20);
}

UNIT_TEST(split_host_port)
{
	static const struct {
		const char *in, *host, *port;
	} ok[] = {
		{ "localhost:8443", "localhost", "8443" },
		{ "127.0.0.1:1", "127.0.0.1", "1" },
		{ "[::1]:8443", "::1", "8443" },
		{ "[2001:db8::1]:https", "2001:db8::1", "https" },
		{ ":8443", "", "8443" },
		{ "::1:8443", "::1", "8443" }, /* unbracketed: the last ':' */
		{ "[fe80::1%eth0]:9", "fe80::1%eth0", "9" },
	};
	static const char *const bad[] = {
		"localhost", "localhost:", "", ":", "[::1]", "[::1]:", "[]:80", "[::1:80",
		"[x:80", "[::1]x:80",
	};
	char buf[64], name[96], *host, *port;

	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		snprintf(buf, sizeof(buf), "%s", ok[i].in);
		snprintf(name, sizeof(name), "split_host_port \"%s\"", ok[i].in);
		CHECK(name, split_host_port(buf, &host, &port) == 0 &&
				    strcmp(host, ok[i].host) == 0 && strcmp(port, ok[i].port) == 0 &&
				    host >= buf && port < buf + sizeof(buf));
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		host = port = NULL;
		snprintf(buf, sizeof(buf), "%s", bad[i]);
		snprintf(name, sizeof(name), "split_host_port \"%s\" -> EINVAL, untouched", bad[i]);
		CHECK(name, split_host_port(buf, &host, &port) == -EINVAL &&
				    strcmp(buf, bad[i]) == 0 && !host && !port);
	}
}

/* Write @key (encrypted with @pass if set) and @cert to @path, mode @mode. */
static bool write_pem(const char *path, EVP_PKEY *key, X509 *cert, const char *pass,
		      mode_t mode)
{
	FILE *f = fopen(path, "w");
	bool ok = f && chmod(path, mode) == 0;

	if (ok && key)
		ok = PEM_write_PrivateKey(f, key, pass ? EVP_aes_128_cbc() : NULL,
					  (unsigned char *)pass, pass ? (int)strlen(pass) : 0,
					  NULL, NULL) == 1;
	if (ok && cert)
		ok = PEM_write_X509(f, cert) == 1;
	if (f && fclose(f) != 0)
		ok = false;
	return ok;
}

static void keyfile_refused(const char *name, const char *path, bool with_cert, int want,
			    const char *why_tail)
{
	EVP_PKEY *key = (EVP_PKEY *)1;
	X509 *cert = (X509 *)1;
	char why[512] = "", want_why[512];
	int r = keyfile_read(path, &key, with_cert ? &cert : NULL, why, sizeof(why));

	snprintf(want_why, sizeof(want_why), "%s: %s", path, why_tail);
	if (!CHECK(name, r == want && strcmp(why, want_why) == 0 && key == (EVP_PKEY *)1 &&
				 cert == (X509 *)1))
		printf("#   got %d \"%s\", want %d \"%s\"\n", r, why, want, want_why);
}

UNIT_TEST(keyfile)
{
	char dir[] = "/tmp/modsign-test-keyfile-XXXXXX", path[7][64], why[512];
	EVP_PKEY *key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256"), *got = NULL;
	X509 *cert = key ? unit_cert(key, key) : NULL, *got_cert = NULL;

	if (!CHECK("keyfile: key, certificate, directory", key && cert && mkdtemp(dir))) {
		EVP_PKEY_free(key);
		X509_free(cert);
		return;
	}
	static const char *const names[] = { "both.pem", "key.pem", "open.pem", "link.pem",
					     "enc.pem", "big.pem", "none.pem" };
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		snprintf(path[i], sizeof(path[i]), "%s/%s", dir, names[i]);
	CHECK("keyfile: files written",
	      write_pem(path[0], key, cert, NULL, 0600) && write_pem(path[1], key, NULL, NULL, 0400) &&
		      write_pem(path[2], key, cert, NULL, 0640) &&
		      symlink(path[0], path[3]) == 0 && write_pem(path[4], key, cert, "pw", 0600));

	CHECK_EQ("keyfile_read key and certificate",
		 keyfile_read(path[0], &got, &got_cert, why, sizeof(why)), 0);
	CHECK("keyfile_read: the key and its certificate",
	      got && got_cert && EVP_PKEY_eq(got, key) == 1 &&
		      X509_check_private_key(got_cert, got) == 1);
	EVP_PKEY_free(TAKE_PTR(got));
	X509_free(TAKE_PTR(got_cert));
	CHECK("keyfile_read key alone, no certificate asked",
	      keyfile_read(path[1], &got, NULL, why, sizeof(why)) == 0 && got &&
		      EVP_PKEY_eq(got, key) == 1);
	EVP_PKEY_free(TAKE_PTR(got));

	keyfile_refused("keyfile_read key alone, certificate asked", path[1], true, -EBADMSG,
			"no certificate");
	keyfile_refused("keyfile_read mode 0640", path[2], false, -EPERM,
			"mode 0640: group or others may read or write it (chmod 0600)");
	chmod(path[2], 0604);
	keyfile_refused("keyfile_read mode 0604", path[2], false, -EPERM,
			"mode 0604: group or others may read or write it (chmod 0600)");
	keyfile_refused("keyfile_read through a symlink", path[3], false, -ELOOP,
			"a symbolic link: name the file itself");
	/* Twin of the mode checks: a 0600 file another user owns. */
	CHECK("keyfile: owner changed", chown(path[0], 65534, 65534) == 0);
	keyfile_refused("keyfile_read owned by another user", path[0], false, -EPERM,
			"owner uid 65534: owned by neither root nor the daemon's own user (chown it)");
	(void)!chown(path[0], 0, 0);
	keyfile_refused("keyfile_read encrypted key", path[4], false, -EBADMSG,
			"no unencrypted private key");
	keyfile_refused("keyfile_read a directory", dir, false, -EINVAL, "not a regular file");
	keyfile_refused("keyfile_read missing file", path[6], false, -ENOENT,
			"cannot read: No such file or directory");
	int fd = open(path[5], O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	CHECK("keyfile: large file written", fd >= 0 && ftruncate(fd, KEYFILE_MAX + 1) == 0);
	close(fd);
	keyfile_refused("keyfile_read over KEYFILE_MAX", path[5], false, -EFBIG,
			"too large for a key file");
	(void)!truncate(path[5], 0);
	keyfile_refused("keyfile_read empty file", path[5], false, -EBADMSG,
			"no unencrypted private key");
	write_pem(path[5], NULL, cert, NULL, 0600);
	keyfile_refused("keyfile_read certificate alone", path[5], true, -EBADMSG,
			"no unencrypted private key");

	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		unlink(path[i]);
	rmdir(dir);
	EVP_PKEY_free(key);
	X509_free(cert);
}

/*
 * Whether regular_file_openat() opens the FIFO @name in @dir (@dfd): a
 * child blocked in open(2) for writing is let go by any reader's open.
 * Opening a device acts the same way (a watchdog armed, a serial line's
 * DTR raised), which is why what is not a regular file must not be opened
 * at all, only refused.
 */
static bool fifo_opened(int dfd, const char *dir, const char *name)
{
	char path[128];
	int ready[2], status, fd;
	bool opened = false;
	pid_t pid;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (pipe(ready) < 0 || (pid = fork()) < 0)
		return true;
	if (pid == 0) {
		(void)!write(ready[1], "x", 1);
		_exit(open(path, O_WRONLY) < 0 ? 1 : 0);
	}
	(void)!read(ready[0], path, 1);
	close(ready[0]);
	close(ready[1]);
	nanosleep(&(struct timespec){ .tv_nsec = 200 * 1000000 }, NULL); /* in open(2) */
	fd = regular_file_openat(dfd, name, O_RDONLY, 0);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 100 && !opened; i++) {
		opened = waitpid(pid, &status, WNOHANG) == pid;
		nanosleep(&(struct timespec){ .tv_nsec = 10 * 1000000 }, NULL);
	}
	if (!opened) {
		kill(pid, SIGKILL);
		waitpid(pid, &status, 0);
	}
	return opened;
}

/* regular_file_openat() and private_dir_open(): a FIFO or a link planted
 * where a file is expected is refused at once; a directory others can
 * write, or another user's, is refused; the legitimate twins open. */
UNIT_TEST(private_files)
{
	char dir[] = "/tmp/modsign-test-private-XXXXXX", sub[64];
	struct stat st;
	int fd;

	if (!CHECK("private: directory made", mkdtemp(dir) != NULL))
		return;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	CHECK("private: fifo, link and file made",
	      dfd >= 0 && mkfifoat(dfd, "fifo", 0600) == 0 &&
		      symlinkat("file", dfd, "link") == 0 &&
		      (fd = openat(dfd, "file", O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) >= 0 &&
		      close(fd) == 0);
	CHECK_EQ("regular_file_openat a FIFO (no reader: not waited on)",
		 regular_file_openat(dfd, "fifo", O_RDONLY, 0), -EINVAL);
	CHECK_EQ("regular_file_openat a FIFO for writing",
		 regular_file_openat(dfd, "fifo", O_WRONLY, 0), -EINVAL);
	CHECK("regular_file_openat a FIFO never opens it (its writer stays blocked)",
	      !fifo_opened(dfd, dir, "fifo"));
	CHECK_EQ("regular_file_openat a device", regular_file_openat(AT_FDCWD, "/dev/null", O_RDONLY, 0),
		 -EINVAL);
	CHECK_EQ("regular_file_openat through a symlink",
		 regular_file_openat(dfd, "link", O_RDONLY, 0), -ELOOP);
	CHECK_EQ("regular_file_openat O_EXCL over a file",
		 regular_file_openat(dfd, "file", O_WRONLY | O_CREAT | O_EXCL, 0600), -EEXIST);
	fd = regular_file_openat(dfd, "file", O_RDONLY, 0);
	CHECK("regular_file_openat a regular file, blocking again",
	      fd >= 0 && !(fcntl(fd, F_GETFL) & O_NONBLOCK));
	if (fd >= 0)
		close(fd);

	fd = private_dir_open(dir, &st);
	CHECK("private_dir_open own 0700 directory", fd >= 0);
	if (fd >= 0)
		close(fd);
	chmod(dir, 0770);
	CHECK("private_dir_open group-writable refused",
	      private_dir_open(dir, &st) == -EPERM &&
		      strcmp(private_dir_refusal(-EPERM, &st),
			     "group or others may write it (chmod go-w)") == 0);
	chmod(dir, 0757);
	CHECK_EQ("private_dir_open world-writable refused", private_dir_open(dir, &st), -EPERM);
	chmod(dir, 0755);
	CHECK("private_dir_open 0755 taken", (fd = private_dir_open(dir, &st)) >= 0 && close(fd) == 0);
	CHECK("private: owner changed", chown(dir, 65534, 65534) == 0);
	CHECK("private_dir_open another user's refused",
	      private_dir_open(dir, &st) == -EPERM &&
		      strcmp(private_dir_refusal(-EPERM, &st),
			     "not owned by the daemon's own user (chown it)") == 0);
	(void)!chown(dir, 0, 0);
	snprintf(sub, sizeof(sub), "%s/dlink", dir);
	CHECK("private: link to a directory made", symlink("/tmp", sub) == 0);
	CHECK_EQ("private_dir_open through a symlink", private_dir_open(sub, &st), -ENOTDIR);
	unlinkat(dfd, "dlink", 0);
	snprintf(sub, sizeof(sub), "%s/file", dir);
	CHECK_EQ("private_dir_open a file", private_dir_open(sub, &st), -ENOTDIR);

	unlinkat(dfd, "fifo", 0);
	unlinkat(dfd, "link", 0);
	unlinkat(dfd, "file", 0);
	close(dfd);
	rmdir(dir);
}

/* set_acl FILE TAG ID GROUP_PERM: FILE's access ACL: the owner r, one
 * named entry TAG (user 0x02, group 0x08) for ID with r, the owning group
 * GROUP_PERM, the mask r, others nothing (linux/posix_acl_xattr.h). */
static int set_acl(const char *file, uint16_t tag, uint32_t id, uint16_t group_perm)
{
	struct {
		uint16_t tag, perm;
		uint32_t id;
	} e[] = { { 0x01, 4, UINT32_MAX }, { 0x04, group_perm, UINT32_MAX }, { tag, 4, id },
		  { 0x10, 4, UINT32_MAX }, { 0x20, 0, UINT32_MAX } };
	uint8_t b[4 + sizeof(e)];
	uint32_t version = 2;

	if (tag == 0x02) { /* entries in tag order, as the kernel wants */
		e[2] = e[1];
		e[1] = (__typeof__(e[1])){ tag, 4, id };
	}

	memcpy(b, &version, 4);
	memcpy(b + 4, e, sizeof(e));
	return setxattr(file, "system.posix_acl_access", b, sizeof(b), 0);
}

/* owned_file_open() as the client opens its configuration (ssh's
 * StrictModes): readable by all is fine, writable by group or others or
 * another user's file is refused, a FIFO at once. */
UNIT_TEST(owned_file)
{
	char dir[] = "/tmp/modsign-test-owned-XXXXXX", file[64], fifo[64];
	const mode_t no_write = S_IWGRP | S_IWOTH;
	struct stat st;
	int fd;

	if (!CHECK("owned: directory made", mkdtemp(dir) != NULL))
		return;
	snprintf(file, sizeof(file), "%s/client.conf", dir);
	snprintf(fifo, sizeof(fifo), "%s/fifo.conf", dir);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	CHECK("owned: file and FIFO made", fd >= 0 && close(fd) == 0 && mkfifo(fifo, 0644) == 0);
	fd = owned_file_open(file, no_write, &st);
	CHECK("owned_file_open own 0644 file read", fd >= 0 && close(fd) == 0);
	chmod(file, 0600);
	fd = owned_file_open(file, no_write, &st);
	CHECK("owned_file_open own 0600 file read", fd >= 0 && close(fd) == 0);
	chmod(file, 0664);
	CHECK("owned_file_open group-writable refused",
	      owned_file_open(file, no_write, &st) == -EPERM && (st.st_mode & S_IWGRP));
	chmod(file, 0646);
	CHECK_EQ("owned_file_open world-writable refused", owned_file_open(file, no_write, &st),
		 -EPERM);
	chmod(file, 0644);
	CHECK("owned: owner changed", chown(file, 65534, 65534) == 0);
	CHECK("owned_file_open another user's 0644 file refused",
	      owned_file_open(file, no_write, &st) == -EPERM && st.st_uid == 65534 &&
		      !(st.st_mode & no_write));
	CHECK_EQ("owned_file_open a FIFO (not waited on)", owned_file_open(fifo, no_write, &st),
		 -EINVAL);
	/* Twin: a secret's stricter check on the same 0644 root file. */
	(void)!chown(file, 0, 0);
	CHECK_EQ("secret_file_open 0644 refused", secret_file_open(file, &st), -EPERM);
	/* systemd 254+'s credentials: root's 0400 file with an ACL entry
	 * user:<the service>:r, shown as 0440.  An entry for us: read; for
	 * another user, a named group, the owning group's read: refused,
	 * as is a plain 0440 (no ACL: the group's own bits). */
	chmod(file, 0440);
	CHECK_EQ("secret_file_open 0440 without an ACL refused", secret_file_open(file, &st),
		 -EPERM);
	chmod(file, 0400);
	CHECK("secret_file_open ACL user:us:r read",
	      set_acl(file, 0x02, geteuid(), 0) == 0 &&
		      (fd = secret_file_open(file, &st)) >= 0 && close(fd) == 0 &&
		      (st.st_mode & S_IRGRP));
	CHECK("secret_file_open ACL user:nobody:r refused",
	      set_acl(file, 0x02, 65534, 0) == 0 && secret_file_open(file, &st) == -EPERM);
	CHECK("secret_file_open ACL group:nobody:r refused",
	      set_acl(file, 0x08, 65534, 0) == 0 && secret_file_open(file, &st) == -EPERM);
	CHECK("secret_file_open ACL user:us:r with the group's read refused",
	      set_acl(file, 0x02, geteuid(), 4) == 0 && secret_file_open(file, &st) == -EPERM);
	removexattr(file, "system.posix_acl_access");
	unlink(file);
	unlink(fifo);
	rmdir(dir);
}

/* private_dir_of(): the directory of a file path, its links resolved
 * (DynamicUser='s /var/log/modsignd -> private/modsignd), then checked as
 * private_dir_open() checks; the name is the path's last component. */
UNIT_TEST(private_dir_of)
{
	char dir[] = "/tmp/modsign-test-dirof-XXXXXX", path[128];
	char *d = NULL;
	const char *name = NULL;
	struct stat st;
	int fd;

	if (!CHECK("dir_of: directory made", mkdtemp(dir) != NULL))
		return;
	snprintf(path, sizeof(path), "%s/private", dir);
	CHECK("dir_of: private/d and a link to it made",
	      mkdir(path, 0700) == 0 && (strcat(path, "/d"), mkdir(path, 0755)) == 0 &&
		      (snprintf(path, sizeof(path), "%s/d", dir), symlink("private/d", path)) == 0);
	snprintf(path, sizeof(path), "%s/d/audit.jsonl", dir);
	fd = private_dir_of(path, &d, &name, &st);
	CHECK("private_dir_of through a link to the daemon's own directory",
	      fd >= 0 && strcmp(name, "audit.jsonl") == 0 && d && strcmp(d, path) != 0 &&
		      strncmp(d, path, strlen(d)) == 0);
	if (fd >= 0)
		close(fd);
	free(d);
	snprintf(path, sizeof(path), "%s/private/d", dir);
	chmod(path, 0775);
	snprintf(path, sizeof(path), "%s/d/m.prom", dir);
	CHECK_EQ("private_dir_of: the link's target group-writable refused",
		 private_dir_of(path, &d, &name, &st), -EPERM);
	free(d);
	snprintf(path, sizeof(path), "%s/none/m.prom", dir);
	CHECK("private_dir_of a missing directory, named",
	      private_dir_of(path, &d, &name, &st) == -ENOENT && d && strstr(d, "/none"));
	free(d);
	snprintf(path, sizeof(path), "%s/d/", dir);
	CHECK_EQ("private_dir_of a path naming no file", private_dir_of(path, &d, &name, &st), -EISDIR);
	free(d);
	CHECK("private_dir_of a bare name: the current directory",
	      private_dir_of("x.prom", &d, &name, &st) != -EISDIR && d && strcmp(d, ".") == 0 &&
		      strcmp(name, "x.prom") == 0);
	free(d);

	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	(void)!system(path);
}

UNIT_MAIN()
