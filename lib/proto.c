/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <string.h>

#include "proto.h"
#include "protocol.h"

int proto_frame_take(const uint8_t *buf, size_t len, json_object **ret,
		     size_t *ret_used)
{
	_cleanup_(json_object_putp) json_object *obj = NULL;
	json_tokener *tok;
	uint32_t n;

	if (len < PROTO_HEADER_LEN)
		return 0;
	memcpy(&n, buf, sizeof(n));
	n = ntohl(n);
	if (n == 0 || n > PROTO_MAX_FRAME)
		return -EMSGSIZE;
	if (len - PROTO_HEADER_LEN < n)
		return 0;

	tok = json_tokener_new_ex(16); /* our messages are two levels deep */
	if (!tok)
		return -ENOMEM;
	/* JSON as RFC 8259 has it: no NaN, no single quotes, no lax numbers. */
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	obj = json_tokener_parse_ex(tok, (const char *)buf + PROTO_HEADER_LEN,
				    (int)n);
	/* The whole payload must be exactly one object: no trailing bytes,
	 * no truncated document, no embedded NUL. */
	*ret_used = PROTO_HEADER_LEN + n; /* lets the caller skip a bad one */
	if (!obj || json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != n ||
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
	size_t n;
	const char *s;
	uint8_t *buf;
	uint32_t be;

	s = json_object_to_json_string_length(obj, JSON_C_TO_STRING_PLAIN, &n);
	if (!s)
		return -ENOMEM;
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
