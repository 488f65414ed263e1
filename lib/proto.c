/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto.h"
#include "protocol.h"

/*
 * The wire is ASCII: a character beyond it travels as a \uXXXX escape
 * (RFC 8259 section 7), on the way out and, for a peer that sends raw
 * UTF-8 (modsign before this rule), rewritten so on the way in.  Why:
 * json-c 0.18 (Debian 13) refuses every byte above 0x7f in a string in
 * JSON_TOKENER_STRICT mode, with or without JSON_TOKENER_VALIDATE_UTF8
 * (json-c issues 875, 892), and the transparency log's checkpoint carries
 * an em dash (C2SP signed-note), so "log" failed there.  0.16 (Debian 12)
 * takes both forms.
 */

/* One UTF-8 sequence at @s (at most @n bytes): its code point and length,
 * or -EBADMSG (overlong, surrogate, beyond U+10FFFF, truncated, stray). */
static int utf8_decode(const uint8_t *s, size_t n, uint32_t *cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	size_t len, i;
	uint32_t c;

	if (s[0] >= 0xc2 && s[0] <= 0xdf)
		len = 2, c = s[0] & 0x1f;
	else if (s[0] >= 0xe0 && s[0] <= 0xef)
		len = 3, c = s[0] & 0x0f;
	else if (s[0] >= 0xf0 && s[0] <= 0xf4)
		len = 4, c = s[0] & 0x07;
	else
		return -EBADMSG;
	if (n < len)
		return -EBADMSG;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -EBADMSG;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[len] || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return -EBADMSG;
	*cp = c;
	return (int)len;
}

static size_t put_u16(char *o, uint32_t u)
{
	static const char hex[] = "0123456789abcdef";

	o[0] = '\\';
	o[1] = 'u';
	o[2] = hex[u >> 12 & 0xf];
	o[3] = hex[u >> 8 & 0xf];
	o[4] = hex[u >> 4 & 0xf];
	o[5] = hex[u & 0xf];
	return 6;
}

int proto_ascii(const uint8_t *in, size_t n, char **ret, size_t *ret_len)
{
	bool esc = false; /* the byte before began an escape (a backslash) */
	uint32_t cp;
	size_t i, o = 0;
	char *out;
	int len;

	*ret = NULL;
	for (i = 0; i < n && in[i] < 0x80; i++)
		;
	if (i == n)
		return 0;
	/* At most 12 bytes (a surrogate pair) for each 4 of input. */
	if (n > SIZE_MAX / 3)
		return -EMSGSIZE;
	out = malloc(3 * n + 1);
	if (!out)
		return -ENOMEM;
	for (i = 0; i < n; i += (size_t)len) {
		len = 1;
		if (in[i] < 0x80) {
			esc = in[i] == '\\' && !esc;
			out[o++] = (char)in[i];
			continue;
		}
		/* A byte that begins no well-formed sequence, or any byte right
		 * after a backslash (rewriting it would make an escape), goes as
		 * it is: the parser decides, as before this rewrite (json-c 0.16
		 * keeps such bytes, 0.18 refuses them), and no string's bytes
		 * ever change. */
		len = utf8_decode(in + i, n - i, &cp);
		if (len < 0 || esc) {
			len = 1;
			esc = false;
			out[o++] = (char)in[i];
			continue;
		}
		if (cp >= 0x10000) {
			cp -= 0x10000;
			o += put_u16(out + o, 0xd800 | cp >> 10);
			o += put_u16(out + o, 0xdc00 | (cp & 0x3ff));
		} else {
			o += put_u16(out + o, cp);
		}
	}
	out[o] = '\0';
	*ret = out;
	*ret_len = o;
	return 1;
}

int proto_frame_take(const uint8_t *buf, size_t len, json_object **ret,
		     size_t *ret_used)
{
	_cleanup_(json_object_putp) json_object *obj = NULL;
	_cleanup_(freep) char *ascii = NULL;
	const char *text;
	json_tokener *tok;
	size_t an = 0;
	uint32_t n;
	int r;

	if (len < PROTO_HEADER_LEN)
		return 0;
	memcpy(&n, buf, sizeof(n));
	n = ntohl(n);
	if (n == 0 || n > PROTO_MAX_FRAME)
		return -EMSGSIZE;
	if (len - PROTO_HEADER_LEN < n)
		return 0;

	*ret_used = PROTO_HEADER_LEN + n; /* lets the caller skip a bad one */
	r = proto_ascii(buf + PROTO_HEADER_LEN, n, &ascii, &an);
	if (r < 0)
		return r == -ENOMEM ? r : -EBADMSG;
	text = r > 0 ? ascii : (const char *)buf + PROTO_HEADER_LEN;
	if (r == 0)
		an = n;
	tok = json_tokener_new_ex(16); /* our messages are two levels deep */
	if (!tok)
		return -ENOMEM;
	/* JSON as RFC 8259 has it: no NaN, no single quotes, no lax numbers. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, text, (int)an);
	/* The whole payload must be exactly one object: no trailing bytes,
	 * no truncated document, no embedded NUL. */
	if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != an ||
	    !json_object_is_type(obj, json_type_object)) {
		json_tokener_free(tok);
		return -EBADMSG;
	}
	json_tokener_free(tok);
	*ret = TAKE_PTR(obj);
	return 1;
}

int proto_frame_build(json_object *obj, uint8_t **ret, size_t *ret_len)
{
	_cleanup_(freep) char *ascii = NULL;
	size_t n;
	int r;
	const char *s;
	uint8_t *buf;
	uint32_t be;

	s = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &n);
	if (!s)
		return -ENOMEM;
	r = proto_ascii((const uint8_t *)s, n, &ascii, &n);
	if (r < 0)
		return r;
	if (r > 0)
		s = ascii;
	if (n == 0 || n > PROTO_MAX_FRAME)
		return -EMSGSIZE;
	buf = malloc(PROTO_HEADER_LEN + n);
	if (!buf)
		return -ENOMEM;
	be = htonl((uint32_t)n);
	memcpy(buf, &be, sizeof(be));
	memcpy(buf + PROTO_HEADER_LEN, s, n);
	*ret = buf;
	*ret_len = PROTO_HEADER_LEN + n;
	return 0;
}

int proto_get_string(json_object *obj, const char *key, size_t max,
		     bool required, const char **ret)
{
	json_object *v;
	const char *s;
	int len;

	*ret = NULL;
	if (!json_object_object_get_ex(obj, key, &v) || !v)
		return required ? -EINVAL : 0;
	if (!json_object_is_type(v, json_type_string))
		return -EINVAL;
	s = json_object_get_string(v);
	len = json_object_get_string_len(v);
	/* Reject embedded NULs: the C string must be the whole JSON string. */
	if ((size_t)len > max || strlen(s) != (size_t)len)
		return -EINVAL;
	*ret = s;
	return 0;
}

int proto_get_uint(json_object *obj, const char *key, uint64_t *ret)
{
	json_object *v;

	if (!json_object_object_get_ex(obj, key, &v) ||
	    !json_object_is_type(v, json_type_int))
		return -EINVAL;
	if (json_object_get_int64(v) < 0)
		return -EINVAL;
	*ret = json_object_get_uint64(v);
	return 0;
}

int proto_get_bool(json_object *obj, const char *key, bool *ret)
{
	json_object *v;

	*ret = false;
	if (!json_object_object_get_ex(obj, key, &v) || !v)
		return 0;
	if (!json_object_is_type(v, json_type_boolean))
		return -EINVAL;
	*ret = json_object_get_boolean(v);
	return 0;
}

static json_object *envelope(uint64_t id)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, PROTO_F_VERSION, json_object_new_int(PROTO_VERSION));
	json_object_object_add(o, PROTO_F_ID, json_object_new_uint64(id));
	return o;
}

json_object *proto_request_new(uint64_t id, const char *op)
{
	json_object *o = envelope(id);

	if (o)
		json_object_object_add(o, PROTO_F_OP, json_object_new_string(op));
	return o;
}

json_object *proto_reply_new(uint64_t id)
{
	json_object *o = envelope(id);

	if (o)
		json_object_object_add(o, PROTO_F_OK, json_object_new_boolean(1));
	return o;
}

json_object *proto_error_new(uint64_t id, const char *msg)
{
	json_object *o = envelope(id);

	if (!o)
		return NULL;
	json_object_object_add(o, PROTO_F_OK, json_object_new_boolean(0));
	json_object_object_add(
		o, PROTO_F_ERROR,
		json_object_new_string_len(msg, (int)strnlen(msg, PROTO_MAX_ERROR)));
	return o;
}

int proto_check_envelope(json_object *msg, uint64_t *ret_id)
{
	uint64_t v;
	int r;

	r = proto_get_uint(msg, PROTO_F_VERSION, &v);
	if (r < 0)
		return r;
	if (v != PROTO_VERSION)
		return -EPROTONOSUPPORT;
	return proto_get_uint(msg, PROTO_F_ID, ret_id);
}

static bool program_byte(char c)
{
	return c > 0x20 && c < 0x7f;
}

bool proto_program_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > PROTO_MAX_PROGRAM)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!program_byte(s[i]))
			return false;
	return true;
}

void proto_program_clean(const char *in, char out[static PROTO_MAX_PROGRAM + 1])
{
	size_t n = 0;

	for (; in && in[n] && n < PROTO_MAX_PROGRAM; n++)
		out[n] = program_byte(in[n]) ? in[n] : '_';
	out[n] = 0;
	if (n == 0)
		strcpy(out, "?");
}
