/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "certfp.h"
#include "digest.h"
#include "macro.h"
#include "util.h"

int cert_fingerprint(const uint8_t *der, size_t len, char **ret)
{
	uint8_t md[DIGEST_MAX_LEN];
	size_t n;
	int r = digest_buf(der, len, digest_lookup("sha256"), md, &n);

	return r < 0 ? r : hex_encode(md, n, ret);
}

/* A DER SEQUENCE with a long-form length, as every certificate starts. */
static bool looks_like_der(const char *buf, size_t n)
{
	return n >= 2 && (uint8_t)buf[0] == 0x30 && (uint8_t)buf[1] >= 0x81 &&
	       (uint8_t)buf[1] <= 0x84;
}

/* Decode the base64 between the first CERTIFICATE armour lines of the
 * NUL-terminated @pem (RFC 7468; no PEM headers in certificates). */
static int pem_certificate(const char *pem, uint8_t **ret, size_t *ret_len)
{
	static const char begin[] = "-----BEGIN CERTIFICATE-----";
	static const char end[] = "-----END CERTIFICATE-----";
	_cleanup_(freep) char *b64 = NULL;
	const char *p = pem, *q;
	size_t n = 0;

	for (;; p++) {
		p = strstr(p, begin);
		if (!p)
			return -EBADMSG;
		if (p == pem || p[-1] == '\n')
			break;
	}
	p += sizeof(begin) - 1;
	p += *p == '\r';
	if (*p != '\n') /* nothing else on the armour line */
		return -EBADMSG;
	q = strstr(p, end);
	if (!q || q[-1] != '\n')
		return -EBADMSG;
	b64 = malloc((size_t)(q - p) + 1);
	if (!b64)
		return -ENOMEM;
	for (; p < q; p++)
		if (!strchr(" \t\r\n", *p))
			b64[n++] = *p;
	b64[n] = '\0';
	return base64_decode(b64, ret, ret_len) < 0 ? -EBADMSG : 0;
}

int cert_file_fingerprint(const char *path, char **ret)
{
	_cleanup_(freep) char *buf = NULL;
	size_t n;
	int r;

	r = read_file(path, CERT_MAX_FILE, 0, &buf, &n);
	if (r < 0)
		return r;
	return cert_buf_fingerprint(buf, n, ret);
}

int cert_buf_fingerprint(const char *buf, size_t n, char **ret)
{
	_cleanup_(freep) uint8_t *der = NULL;
	size_t der_len;
	int r;

	if (looks_like_der(buf, n))
		return cert_fingerprint((const uint8_t *)buf, n, ret);
	if (strlen(buf) != n) /* a NUL inside: neither PEM nor DER */
		return -EBADMSG;
	r = pem_certificate(buf, &der, &der_len);
	if (r < 0)
		return r;
	if (!looks_like_der((const char *)der, der_len))
		return -EBADMSG;
	return cert_fingerprint(der, der_len, ret);
}
