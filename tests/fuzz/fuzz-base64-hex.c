/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The text decoders of lib/util.c, which read what a peer sends (hex
 * digests in requests, base64 signatures and certificates in replies) and
 * what an operator types (numbers).  Decoding only accepts the strict form,
 * and what it returns encodes back to something that decodes the same.
 */
#include <ctype.h>
#include <errno.h>

#include "fuzz.h"
#include "util.h"

static bool b64_char(char c)
{
	return isalnum((unsigned char)c) || c == '+' || c == '/';
}

static void check_base64(const char *s)
{
	_cleanup_(freep) uint8_t *out = NULL, *again = NULL;
	_cleanup_(freep) char *enc = NULL;
	size_t n = strlen(s), len, len2, pad = 0;

	if (base64_decode(s, &out, &len) < 0)
		return;
	/* Strict RFC 4648: groups of four, '=' only as the last one or two. */
	FUZZ_ASSERT(n % 4 == 0);
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	for (size_t i = 0; i < n - pad; i++)
		FUZZ_ASSERT(b64_char(s[i]));
	FUZZ_ASSERT(len == n / 4 * 3 - pad);
	FUZZ_ASSERT(base64_encode(out, len, &enc) == 0);
	FUZZ_ASSERT(strlen(enc) == n);
	FUZZ_ASSERT(base64_decode(enc, &again, &len2) == 0);
	FUZZ_ASSERT(len2 == len && memcmp(again, out, len) == 0);
}

static void check_hex(const char *s)
{
	_cleanup_(freep) char *enc = NULL;
	uint8_t out[64];
	size_t len, n = strlen(s);

	if (hex_decode(s, out, sizeof(out), &len) < 0)
		return;
	FUZZ_ASSERT(n % 2 == 0 && len == n / 2 && len <= sizeof(out));
	FUZZ_ASSERT(hex_encode(out, len, &enc) == 0);
	for (size_t i = 0; i < n; i++)
		FUZZ_ASSERT(tolower((unsigned char)s[i]) == enc[i]);
}

static void check_uint(const char *s)
{
	unsigned long v;

	if (parse_uint(s, 65536, &v) < 0)
		return;
	FUZZ_ASSERT(v <= 65536 && isdigit((unsigned char)s[0]));
	for (const char *p = s; *p; p++)
		FUZZ_ASSERT(isdigit((unsigned char)*p));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(freep) char *s = NULL;
	_cleanup_(freep) char *enc = NULL;
	_cleanup_(freep) uint8_t *dec = NULL;
	size_t len;

	fuzz_canary(data, size);
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	check_base64(s);
	check_hex(s);
	check_uint(s);

	/* And any bytes survive encode then decode. */
	FUZZ_ASSERT(base64_encode(data, size, &enc) == 0);
	FUZZ_ASSERT(base64_decode(enc, &dec, &len) == 0);
	FUZZ_ASSERT(len == size && (size == 0 || memcmp(dec, data, size) == 0));
	return 0;
}
