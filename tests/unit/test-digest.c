/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/digest.c and lib/certfp.c, the client's hashing and certificate
 * reading: check them against EVP_Digest() and OpenSSL's own DER encoding
 * of a certificate it wrote as PEM.
 */
#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "certfp.h"
#include "digest.h"
#include "macro.h"
#include "unit.h"
#include "util.h"

static char tmpdir[] = "/tmp/test-digest-XXXXXX";

static void fill(uint8_t *p, size_t n)
{
	uint32_t x = 2463534242u;

	for (size_t i = 0; i < n; i++) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		p[i] = (uint8_t)x;
	}
}

static bool same_as_evp(const char *name, const uint8_t *buf, size_t len,
			const uint8_t *got, size_t got_len)
{
	uint8_t want[EVP_MAX_MD_SIZE];
	unsigned n = 0;

	return EVP_Digest(buf, len, want, &n, EVP_get_digestbyname(name), NULL) &&
	       n == got_len && memcmp(want, got, n) == 0;
}

static int write_tmp(const char *name, const void *p, size_t n, char *path)
{
	int fd;

	snprintf(path, 4096, "%s/%s", tmpdir, name);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (write_full(fd, p, n) < 0) {
		close(fd);
		return -EIO;
	}
	return fd;
}

/* digest_buf and digest_fd equal EVP for every algorithm, across the
 * digest_fd chunk size (16 KiB) and for empty input. */
UNIT_TEST(digests)
{
	static const char *const names[] = { "sha256",	 "sha384",   "sha512",
					     "sha3-256", "sha3-384", "sha3-512" };
	static const size_t lens[] = { 0, 1, 55, 64, 4096, 16384, 16385, 262145, 700001 };
	enum { MAX = 700001 };
	_cleanup_(freep) uint8_t *buf = malloc(MAX);
	char path[4096];
	int fd;

	fill(buf, MAX);
	fd = write_tmp("data", buf, MAX, path);
	CHECK("digest-tmpfile", fd >= 0);
	for (size_t a = 0; a < ELEMENTSOF(names); a++) {
		const struct digest *d = digest_lookup(names[a]);
		bool buf_ok = true, fd_ok = true, twin_ok = true;
		char name[64];

		CHECK(names[a], d && strcmp(digest_name(d), names[a]) == 0);
		if (!d)
			continue;
		for (size_t i = 0; i < ELEMENTSOF(lens); i++) {
			uint8_t out[DIGEST_MAX_LEN];
			size_t n = 0;

			buf_ok &= digest_buf(buf, lens[i], d, out, &n) == 0 &&
				  n == digest_size(d) && same_as_evp(names[a], buf, lens[i], out, n);
			n = 0;
			fd_ok &= digest_fd(fd, lens[i], d, out, &n) == 0 &&
				 same_as_evp(names[a], buf, lens[i], out, n);
			/* twin: one bit of the input changed */
			if (lens[i] > 0) {
				uint8_t orig[DIGEST_MAX_LEN];

				digest_buf(buf, lens[i], d, orig, &n);
				buf[lens[i] - 1] ^= 1;
				twin_ok &= digest_buf(buf, lens[i], d, out, &n) == 0 &&
					   memcmp(orig, out, n) != 0;
				buf[lens[i] - 1] ^= 1;
			}
		}
		snprintf(name, sizeof(name), "digest-buf-equals-evp-%s", names[a]);
		CHECK(name, buf_ok);
		snprintf(name, sizeof(name), "digest-fd-equals-evp-%s", names[a]);
		CHECK(name, fd_ok);
		snprintf(name, sizeof(name), "digest-tampered-differs-%s", names[a]);
		CHECK(name, twin_ok);
	}
	if (fd >= 0) {
		uint8_t out[DIGEST_MAX_LEN];
		size_t n;

		CHECK_EQ("digest-fd-shorter-file", digest_fd(fd, MAX + 1, digest_lookup("sha256"), out, &n),
			 -ESTALE);
		close(fd);
	}
	CHECK("digest-refuses-sha1", !digest_lookup("sha1") && !digest_lookup("md5") &&
					     !digest_lookup("SHA256") && !digest_lookup(NULL));
	/* No CONFIG_MODULE_SIG_SHA3_224, and SHAKE is no fixed-length hash. */
	CHECK("digest-refuses-sha3-224-shake", !digest_lookup("sha3-224") &&
						       !digest_lookup("SHA3-256") &&
						       !digest_lookup("shake256"));
}

/* DIGEST_NAMES, the list the refusals print, is the table: every name in
 * it is allowed under that very name, in the table's order and count. */
UNIT_TEST(names)
{
	static const char *const table[] = { "sha256",	 "sha384",   "sha512",
					     "sha3-256", "sha3-384", "sha3-512" };
	char list[] = DIGEST_NAMES, *save = NULL;
	size_t n = 0;
	bool ok = true;

	for (char *t = strtok_r(list, ", ", &save); t; t = strtok_r(NULL, ", ", &save), n++)
		ok &= n < ELEMENTSOF(table) && strcmp(t, table[n]) == 0 && digest_lookup(t) &&
		      strcmp(digest_name(digest_lookup(t)), t) == 0;
	CHECK("digest-names-are-the-table", ok && n == ELEMENTSOF(table));
}

static X509 *make_cert(EVP_PKEY **ret_key)
{
	EVP_PKEY *key = EVP_EC_gen("P-256");
	X509 *x = X509_new();
	X509_NAME *name = X509_get_subject_name(x);
	bool ok = key && x && ASN1_INTEGER_set(X509_get_serialNumber(x), 7) &&
		  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					     (const unsigned char *)"fp test", -1, -1, 0) &&
		  X509_set_issuer_name(x, name) && X509_gmtime_adj(X509_getm_notBefore(x), 0) &&
		  X509_gmtime_adj(X509_getm_notAfter(x), 3600) && X509_set_pubkey(x, key) &&
		  X509_sign(x, key, EVP_sha256()) > 0;

	if (!ok) {
		X509_free(x);
		EVP_PKEY_free(key);
		return NULL;
	}
	*ret_key = key;
	return x;
}

/* Write @cert as PEM into @name, after @key's PEM if @key_first. */
static int write_pem(const char *name, X509 *cert, EVP_PKEY *key, bool key_first, char *path)
{
	FILE *f;
	bool ok;

	snprintf(path, 4096, "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	if (!f)
		return -errno;
	ok = (!key_first || PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL)) &&
	     PEM_write_X509(f, cert);
	return fclose(f) == 0 && ok ? 0 : -EIO;
}

/* Rewrite @path with byte @at (from the end if negative) replaced. */
static int poke(const char *path, long at, char c)
{
	_cleanup_(freep) char *buf = NULL;
	size_t n;
	int fd, r = read_file(path, CERT_MAX_FILE, 0, &buf, &n);

	if (r < 0)
		return r;
	buf[at < 0 ? (long)n + at : at] = c;
	fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	r = write_full(fd, buf, n);
	close(fd);
	return r;
}

UNIT_TEST(fingerprints)
{
	_cleanup_(freep) char *want = NULL, *got = NULL;
	unsigned char *der = NULL;
	uint8_t md[32];
	unsigned md_len = 0;
	EVP_PKEY *key = NULL;
	X509 *cert = make_cert(&key);
	char path[4096];
	int der_len, fd;

	if (!CHECK("fp-make-cert", cert))
		return;
	der_len = i2d_X509(cert, &der);
	EVP_Digest(der, (size_t)der_len, md, &md_len, EVP_sha256(), NULL);
	hex_encode(md, md_len, &want);

	CHECK("fp-pem", write_pem("cert.pem", cert, key, false, path) == 0 &&
				cert_file_fingerprint(path, &got) == 0 && strcmp(got, want) == 0);
	free(TAKE_PTR(got));
	/* certs/signing_key.pem: the private key first, then the certificate */
	CHECK("fp-pem-after-key", write_pem("both.pem", cert, key, true, path) == 0 &&
					  cert_file_fingerprint(path, &got) == 0 &&
					  strcmp(got, want) == 0);
	free(TAKE_PTR(got));
	fd = write_tmp("cert.der", der, (size_t)der_len, path);
	CHECK("fp-der", fd >= 0 && cert_file_fingerprint(path, &got) == 0 && strcmp(got, want) == 0);
	free(TAKE_PTR(got));
	if (fd >= 0)
		close(fd);
	/* twin: the DER with a byte of the signature changed has another print */
	der[der_len - 1] ^= 1;
	fd = write_tmp("tampered.der", der, (size_t)der_len, path);
	CHECK("fp-tampered-der-differs", fd >= 0 && cert_file_fingerprint(path, &got) == 0 &&
						 strcmp(got, want) != 0);
	free(TAKE_PTR(got));
	if (fd >= 0)
		close(fd);

	/* Broken PEM is refused, not fingerprinted. */
	write_pem("bad64.pem", cert, key, false, path);
	poke(path, 40, '*');
	CHECK_EQ("fp-bad-base64", cert_file_fingerprint(path, &got), -EBADMSG);
	write_pem("noend.pem", cert, key, false, path);
	poke(path, -3, 'X'); /* "-----END CERTIFICATE--X--" */
	CHECK_EQ("fp-no-end-line", cert_file_fingerprint(path, &got), -EBADMSG);
	snprintf(path, sizeof(path), "%s/key.pem", tmpdir);
	{
		FILE *f = fopen(path, "w");

		if (f) {
			PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
			fclose(f);
		}
	}
	CHECK_EQ("fp-key-only", cert_file_fingerprint(path, &got), -EBADMSG);
	fd = write_tmp("empty", "", 0, path);
	CHECK_EQ("fp-empty-file", cert_file_fingerprint(path, &got), -EBADMSG);
	if (fd >= 0)
		close(fd);
	snprintf(path, sizeof(path), "%s/missing", tmpdir);
	CHECK_EQ("fp-missing-file", cert_file_fingerprint(path, &got), -ENOENT);
	CHECK("fp-nothing-returned", got == NULL);

	OPENSSL_free(der);
	X509_free(cert);
	EVP_PKEY_free(key);
}

static bool fixture(void)
{
	return unit_mkdtemp(tmpdir);
}

static void fixture_free(void)
{
	unit_rm_rf(tmpdir);
}

UNIT_MAIN(.setup = fixture, .teardown = fixture_free)
