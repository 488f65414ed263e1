/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_PROTO_H
#define MODSIGN_PROTO_H

/*
 * The modsign wire protocol (docs/PROTOCOL.md): each message is a frame of
 * a 4-byte big-endian length followed by that many bytes of one JSON
 * object.  The same framing runs over the UNIX socket and over TLS.
 * This layer only frames and validates; it never logs.
 */

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "macro.h"

#define PROTO_VERSION 1
#define PROTO_HEADER_LEN 4u
/* Largest frame either side accepts: a status reply with many keys, or a
 * certificate, fits many times over; anything larger is an attack. */
#define PROTO_MAX_FRAME (64u * 1024)
#define PROTO_MAX_NAME 128u      /* key names */
#define PROTO_MAX_MODULE 4096u   /* module name (a path) */
#define PROTO_MAX_ERROR 512u     /* error strings */
#define PROTO_MAX_PROGRAM 64u    /* a sign request's "program" */
#define PROTO_MAX_LOG_PATH 128u  /* a log request's tile path */

static inline void json_object_putp(json_object **o)
{
	if (*o)
		json_object_put(*o);
}

/*
 * Try to take one frame from the front of @buf.  Returns 1 and sets
 * *@ret (new reference) and *@ret_used when a whole frame is there, 0 when
 * more bytes are needed, -EMSGSIZE when the announced length is 0 or above
 * PROTO_MAX_FRAME, -EBADMSG when the payload is not one JSON object (then
 * *@ret_used is still set, so the caller may skip the frame).
 */
int proto_frame_take(const uint8_t *buf, size_t len, json_object **ret,
		     size_t *ret_used);

/*
 * @in (@n bytes of JSON text) with every well-formed non-ASCII UTF-8
 * sequence written as a \uXXXX escape (a surrogate pair beyond U+FFFF); a
 * byte of no well-formed sequence, or one right after a backslash, is kept
 * as it is, for the parser to judge.  Returns 0 when @in has no byte above
 * 0x7f (*@ret NULL), 1 with *@ret a new NUL-terminated copy of *@ret_len
 * bytes, -ENOMEM, -EMSGSIZE.  Both ends of a frame pass through it
 * (lib/proto.c says why).
 */
int proto_ascii(const uint8_t *in, size_t n, char **ret, size_t *ret_len);

/* Serialise @obj as a frame into a new buffer, ASCII only (proto_ascii).
 * -EMSGSIZE if too large. */
int proto_frame_build(json_object *obj, uint8_t **ret, size_t *ret_len);

/*
 * Accessors that check type and bound.  A missing optional member leaves
 * *ret NULL and returns 0; a member of the wrong type or too long is
 * -EINVAL.  Strings stay owned by @obj.
 */
int proto_get_string(json_object *obj, const char *key, size_t max,
		     bool required, const char **ret);
int proto_get_uint(json_object *obj, const char *key, uint64_t *ret);
int proto_get_bool(json_object *obj, const char *key, bool *ret);

/*
 * A sign request's "program" (PROTO_F_PROGRAM): the asking program's name
 * as the client saw it, a hint for the audit and transparency logs that
 * nothing authenticates.  Its one rule, here for both ends: 1 to
 * PROTO_MAX_PROGRAM bytes, each printable ASCII other than space (0x21 to
 * 0x7e), so a record shows it as it is, one word, whatever reads it.
 */
bool proto_program_valid(const char *s);

/* @in made to that rule into @out (PROTO_MAX_PROGRAM + 1 bytes): every
 * other byte as '_', cut at PROTO_MAX_PROGRAM bytes, "?" when empty. */
void proto_program_clean(const char *in, char out[static PROTO_MAX_PROGRAM + 1]);

/* New request {"v":1,"id":id,"op":op}. */
json_object *proto_request_new(uint64_t id, const char *op);
/* New reply {"v":1,"id":id,"ok":true}. */
json_object *proto_reply_new(uint64_t id);
/* New error reply {"v":1,"id":id,"ok":false,"error":msg}. */
json_object *proto_error_new(uint64_t id, const char *msg);

/* Validate the envelope of a received message: version and id. */
int proto_check_envelope(json_object *msg, uint64_t *ret_id);

#endif
