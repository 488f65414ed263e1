/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The certificate template (--genkey-template FILE, keygen/x509.genkey.in)
 * and the fields substituted into it (--organization, --common-name,
 * --email), through certgen_cert() (modsignd/certgen.c, linked as an
 * object).  Input: "ORG\0CN\0EMAIL\0TEMPLATE".  Either the template is
 * refused with a reason or the certificate is self-signed by the key.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <unistd.h>

#include "certgen.h"
#include "fuzz.h"

/* Only --genkey-template is fuzzed; the built-in copy is not needed. */
const char certgen_builtin_template[] = "";

static EVP_PKEY *key;

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc _unused_, char ***argv _unused_)
{
	key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	if (!key)
		abort();
	return 0;
}

/* The next NUL-terminated field of the input, or "" past its end. */
static const char *field(const char **p, const char *end)
{
	const char *s = *p, *nul = s < end ? memchr(s, '\0', (size_t)(end - s)) : NULL;

	if (!nul)
		return "";
	*p = nul + 1;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(freep) char *copy = NULL;
	struct certgen_params p = { .days = 3650 };
	const char *cur, *end, *err = NULL;
	char path[64];
	X509 *cert = NULL;
	int fd, r;

	fuzz_canary(data, size);
	if (size > 64 * 1024)
		return 0;
	copy = malloc(size + 1);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	copy[size] = '\0';
	cur = copy;
	end = copy + size;
	p.organization = field(&cur, end);
	p.common_name = field(&cur, end);
	p.email = field(&cur, end);

	fd = memfd_create("fuzz-template", MFD_CLOEXEC);
	if (fd < 0)
		abort();
	if (end > cur && write(fd, cur, (size_t)(end - cur)) != end - cur)
		abort();
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	p.template_path = path;

	r = certgen_cert(key, &p, &cert, &err);
	close(fd);
	if (r < 0) {
		FUZZ_ASSERT(!cert);
		return 0;
	}
	FUZZ_ASSERT(cert && X509_verify(cert, key) == 1);
	FUZZ_ASSERT(X509_NAME_entry_count(X509_get_subject_name(cert)) > 0);
	X509_free(cert);
	return 0;
}
