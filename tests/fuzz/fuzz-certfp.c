/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * lib/certfp.c reads the certificate file kbuild hands the signing command
 * (sign-file mode), PEM or DER, without OpenSSL's PEM code.  On success
 * the result is a SHA-256 in lower-case hex, of the whole buffer when it
 * is DER, and of a DER certificate decoded from the armour otherwise.
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>

#include "certfp.h"
#include "digest.h"
#include "fuzz.h"
#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(freep) char *buf = NULL, *fp = NULL, *whole = NULL;
	int r;

	fuzz_canary(data, size);
	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	r = cert_buf_fingerprint(buf, size, &fp);
	if (r < 0) {
		FUZZ_ASSERT(r == -EBADMSG || r == -ENOMEM);
		FUZZ_ASSERT(fp == NULL);
		return 0;
	}
	FUZZ_ASSERT(fp && strlen(fp) == 64);
	for (const char *p = fp; *p; p++)
		FUZZ_ASSERT((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f'));
	if (size >= 2 && data[0] == 0x30 && data[1] >= 0x81 && data[1] <= 0x84) {
		FUZZ_ASSERT(cert_fingerprint(data, size, &whole) == 0);
		FUZZ_ASSERT(strcmp(whole, fp) == 0);
	} else {
		FUZZ_ASSERT(memmem(buf, size, "-----BEGIN CERTIFICATE-----", 27));
		FUZZ_ASSERT(memmem(buf, size, "-----END CERTIFICATE-----", 25));
	}
	return 0;
}
