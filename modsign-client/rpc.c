/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One function per request of docs/PROTOCOL.md: build the request with
 * the words of lib/protocol.h, call, and check every field of the reply
 * for type and bound before anything is handed out, as authfd.c checks
 * an agent's answer before it decodes a key.  A reply that passes is
 * the daemon's word, not the truth: what a signature is worth is checked
 * by the caller against the certificate it pinned.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cert.h"
#include "digest.h"
#include "modsig.h"
#include "note.h"
#include "mldsa.h"
#include "rpc.h"
#include "util.h"

#define MALFORMED "malformed reply"

static int fail(struct rpc_error *err, int r, const char *why)
{
	err->malformed = false;
	snprintf(err->why, sizeof(err->why), "%s", why);
	return r;
}

static int malformed(struct rpc_error *err)
{
	fail(err, -EBADMSG, MALFORMED);
	err->malformed = true;
	return -EBADMSG;
}

/* A reply matched to its request: 0 if it says ok, else -EREMOTEIO
 * with the daemon's reason. */
static int reply_check(json_object *reply, struct rpc_error *err)
{
	bool ok = false;

	if (proto_get_bool(reply, PROTO_F_OK, &ok) == 0 && ok)
		return 0;
	return fail(err, -EREMOTEIO, reply_error(reply));
}

/* Send @req (consumed; NULL: out of memory) and read its ok reply into
 * *@ret: the one round trip below every call. */
static int call(struct conn *c, json_object *req, json_object **ret, struct rpc_error *err)
{
	_cleanup_(json_object_putp) json_object *q = req, *reply = NULL;
	const char *why = NULL;
	int r;

	if (!q)
		return fail(err, -ENOMEM, strerror(ENOMEM));
	r = conn_call(c, q, &reply, &why);
	if (r == -EREMOTEIO)
		return fail(err, r, why);
	if (r < 0)
		return fail(err, r, conn_strerror(c, r));
	*ret = TAKE_PTR(reply);
	return 0;
}

/* A string member @key: required or not, at most @max bytes; -EBADMSG
 * for the wrong type or length. */
static int get_str(json_object *o, const char *key, size_t max, bool required,
		   const char **ret)
{
	return proto_get_string(o, key, max, required, ret) < 0 ? -EBADMSG : 0;
}

/* ---- status ------------------------------------------------------------- */

static int status_key(json_object *o, struct rpc_key *k)
{
	if (!json_object_is_type(o, json_type_object) ||
	    get_str(o, PROTO_F_NAME, PROTO_MAX_NAME, true, &k->name) < 0 ||
	    get_str(o, PROTO_F_ALGORITHM, PROTO_MAX_FRAME, true, &k->algorithm) < 0 ||
	    get_str(o, PROTO_F_BACKEND, PROTO_MAX_FRAME, true, &k->backend) < 0 ||
	    get_str(o, PROTO_F_SUBJECT, PROTO_MAX_FRAME, true, &k->subject) < 0 ||
	    get_str(o, PROTO_F_KEY_ID, PROTO_MAX_FRAME, true, &k->key_id) < 0 ||
	    get_str(o, PROTO_F_SERIAL, PROTO_MAX_FRAME, true, &k->serial) < 0 ||
	    proto_get_bool(o, PROTO_F_DEFAULT, &k->is_default) < 0 ||
	    get_str(o, PROTO_F_HEALTH, PROTO_MAX_NAME, false, &k->health) < 0 ||
	    get_str(o, PROTO_F_HEALTH_ERROR, PROTO_MAX_ERROR, false, &k->health_error) < 0 ||
	    proto_get_bool(o, PROTO_F_GRANTED, &k->granted) < 0)
		return -EBADMSG;
	if (!json_object_object_get_ex(o, PROTO_F_GRANTED, NULL))
		k->granted = true;
	return 0;
}

static int status_parse(json_object *reply, struct rpc_status **ret)
{
	_cleanup_(freep) struct rpc_status *s = NULL;
	json_object *keys;
	size_t n;

	if (!json_object_object_get_ex(reply, PROTO_F_KEYS, &keys) ||
	    !json_object_is_type(keys, json_type_array))
		return -EBADMSG;
	/* Each key is an object of at least a few bytes: the frame bounds n. */
	n = json_object_array_length(keys);
	s = calloc(1, sizeof(*s) + n * sizeof(s->keys[0]));
	if (!s)
		return -ENOMEM;
	if (get_str(reply, PROTO_F_DAEMON_VERSION, PROTO_MAX_NAME, true, &s->version) < 0)
		return -EBADMSG;
	for (size_t i = 0; i < n; i++)
		if (status_key(json_object_array_get_idx(keys, i), &s->keys[i]) < 0)
			return -EBADMSG;
	s->n_keys = n;
	s->reply = reply;
	*ret = TAKE_PTR(s);
	return 0;
}

int rpc_status(struct conn *c, struct rpc_status **ret, struct rpc_error *err)
{
	json_object *reply = NULL;
	int r;

	r = call(c, proto_request_new(conn_next_id(c), PROTO_OP_STATUS), &reply, err);
	if (r < 0)
		return r;
	r = status_parse(reply, ret); /* which keeps @reply on success */
	if (r < 0) {
		json_object_put(reply);
		return r == -EBADMSG ? malformed(err) : fail(err, r, strerror(-r));
	}
	return 0;
}

void rpc_status_free(struct rpc_status *s)
{
	if (!s)
		return;
	json_object_put(s->reply);
	free(s);
}

/* ---- cert --------------------------------------------------------------- */

json_object *rpc_cert_request(uint64_t id, const char *key)
{
	json_object *req = proto_request_new(id, PROTO_OP_CERT);

	if (req && key)
		json_object_object_add(req, PROTO_F_KEY, json_object_new_string(key));
	return req;
}

int rpc_cert_reply(json_object *reply, X509 **ret, struct rpc_error *err)
{
	_cleanup_(freep) uint8_t *der = NULL;
	const char *b64;
	size_t len;
	int r;

	r = reply_check(reply, err);
	if (r < 0)
		return r;
	if (get_str(reply, PROTO_F_CERT, PROTO_MAX_FRAME, true, &b64) < 0 ||
	    base64_decode(b64, &der, &len) < 0 || cert_from_der(der, len, ret) < 0)
		return malformed(err);
	return 0;
}

int rpc_cert(struct conn *c, const char *key, X509 **ret, struct rpc_error *err)
{
	_cleanup_(json_object_putp) json_object *reply = NULL;
	int r;

	r = call(c, rpc_cert_request(conn_next_id(c), key), &reply, err);
	return r < 0 ? r : rpc_cert_reply(reply, ret, err);
}

/* ---- sign --------------------------------------------------------------- */

static int add_tr(json_object *req, const uint8_t *tr)
{
	_cleanup_(freep) char *hex = NULL;

	if (hex_encode(tr, MLDSA_TR_LEN, &hex) < 0)
		return -ENOMEM;
	json_object_object_add(req, PROTO_F_TR, json_object_new_string(hex));
	return 0;
}

json_object *rpc_sign_request(uint64_t id, const struct rpc_sign_args *a)
{
	_cleanup_(freep) char *hex = NULL;
	json_object *req = proto_request_new(id, PROTO_OP_SIGN);

	if (!req || hex_encode(a->digest, a->digest_len, &hex) < 0) {
		json_object_put(req);
		return NULL;
	}
	if (a->key)
		json_object_object_add(req, PROTO_F_KEY, json_object_new_string(a->key));
	if (a->tr && add_tr(req, a->tr) < 0) {
		json_object_put(req);
		return NULL;
	}
	if (!a->tr)
		json_object_object_add(req, PROTO_F_HASH, json_object_new_string(a->hash));
	json_object_object_add(req, a->tr ? PROTO_F_MU : PROTO_F_DIGEST, json_object_new_string(hex));
	/* The name is for the audit record; the path says which build it is. */
	json_object_object_add(req, PROTO_F_MODULE, json_object_new_string(a->module));
	if (a->program)
		json_object_object_add(req, PROTO_F_PROGRAM, json_object_new_string(a->program));
	if (a->use_keyid)
		json_object_object_add(req, PROTO_F_USE_KEYID, json_object_new_boolean(1));
	return req;
}

/* The signer named as @expect: the server's word, cheap to check. */
static bool signer_is(json_object *reply, const char *expect)
{
	const char *fp = NULL;

	proto_get_string(reply, PROTO_F_CERT_SHA256, 2 * DIGEST_MAX_LEN, true, &fp);
	return fp && strcmp(fp, expect) == 0;
}

static int sign_parse(json_object *reply, struct rpc_sign *s)
{
	const char *b64;

	if (get_str(reply, PROTO_F_KEY, PROTO_MAX_NAME, false, &s->key) < 0 ||
	    get_str(reply, PROTO_F_KEY_ID, PROTO_MAX_FRAME, false, &s->key_id) < 0 ||
	    get_str(reply, PROTO_F_CERT_SHA256, 2 * DIGEST_MAX_LEN, false, &s->cert_sha256) < 0)
		return -EBADMSG;
	s->logged = json_object_object_get_ex(reply, PROTO_F_LOG_INDEX, NULL);
	if (s->logged && proto_get_uint(reply, PROTO_F_LOG_INDEX, &s->log_index) < 0)
		return -EBADMSG;
	if (get_str(reply, PROTO_F_SIGNATURE, PROTO_MAX_FRAME, true, &b64) < 0 ||
	    base64_decode(b64, &s->signature, &s->signature_len) < 0 ||
	    s->signature_len == 0 || s->signature_len > MODSIG_MAX_SIG)
		return -EBADMSG;
	return 0;
}

int rpc_sign_reply(json_object *reply, const char *expect_cert_sha256,
		   struct rpc_sign **ret, struct rpc_error *err)
{
	_cleanup_(rpc_sign_freep) struct rpc_sign *s = NULL;
	int r;

	r = reply_check(reply, err);
	if (r < 0)
		return r;
	if (expect_cert_sha256 && !signer_is(reply, expect_cert_sha256))
		return fail(err, -ENOKEY, "signs with another key than the certificate");
	s = calloc(1, sizeof(*s));
	if (!s)
		return fail(err, -ENOMEM, strerror(ENOMEM));
	if (sign_parse(reply, s) < 0)
		return malformed(err);
	s->reply = json_object_get(reply);
	*ret = TAKE_PTR(s);
	return 0;
}

void rpc_sign_free(struct rpc_sign *s)
{
	if (!s)
		return;
	json_object_put(s->reply);
	free(s->signature);
	free(s);
}

/* ---- log ---------------------------------------------------------------- */

/* The member @field of the reply to a plain "log" request, a copy. */
static int log_field(struct conn *c, const char *field, char **ret, struct rpc_error *err)
{
	_cleanup_(json_object_putp) json_object *reply = NULL;
	const char *v;
	char *copy;
	int r;

	r = call(c, proto_request_new(conn_next_id(c), PROTO_OP_LOG), &reply, err);
	if (r < 0)
		return r;
	if (get_str(reply, field, NOTE_MAX, true, &v) < 0)
		return malformed(err);
	copy = strdup(v);
	if (!copy)
		return fail(err, -ENOMEM, strerror(ENOMEM));
	*ret = copy;
	return 0;
}

int rpc_log_checkpoint(struct conn *c, char **ret, struct rpc_error *err)
{
	return log_field(c, PROTO_F_CHECKPOINT, ret, err);
}

int rpc_log_vkey(struct conn *c, char **ret, struct rpc_error *err)
{
	return log_field(c, PROTO_F_VKEY, ret, err);
}

static json_object *tile_request(uint64_t id, const char *path, uint64_t offset)
{
	json_object *req = proto_request_new(id, PROTO_OP_LOG);

	if (req) {
		json_object_object_add(req, PROTO_F_PATH, json_object_new_string(path));
		json_object_object_add(req, PROTO_F_OFFSET, json_object_new_uint64(offset));
	}
	return req;
}

int rpc_log_tile(struct conn *c, const char *path, uint64_t offset, struct rpc_tile *ret,
		 struct rpc_error *err)
{
	_cleanup_(json_object_putp) json_object *reply = NULL;
	_cleanup_(freep) uint8_t *data = NULL;
	const char *b64;
	uint64_t size;
	size_t n;
	int r;

	r = call(c, tile_request(conn_next_id(c), path, offset), &reply, err);
	if (r < 0)
		return r;
	/* An empty piece before the end would have the caller ask for ever. */
	if (proto_get_uint(reply, PROTO_F_SIZE, &size) < 0 ||
	    get_str(reply, PROTO_F_DATA, PROTO_MAX_FRAME, true, &b64) < 0 ||
	    base64_decode(b64, &data, &n) < 0 || (n == 0 && offset < size))
		return malformed(err);
	*ret = (struct rpc_tile){ .data = TAKE_PTR(data), .len = n, .size = size };
	return 0;
}

int rpc_log_tile_read(struct conn *c, const char *path, uint8_t *buf, size_t max,
		      size_t *ret_len, struct rpc_error *err)
{
	uint64_t off = 0, size = 0;

	do {
		_cleanup_(freep) uint8_t *data = NULL;
		struct rpc_tile t = { 0 };
		int r = rpc_log_tile(c, path, off, &t, err);

		if (r < 0)
			return r;
		data = t.data;
		/* Every piece names the size the first did: one that shrank
		 * below what came already would let a server write past @buf
		 * (SECURITY.md row 115). */
		if (off > 0 && t.size != size)
			return malformed(err);
		size = t.size;
		if (size > max || off > size || t.len > size - off)
			return fail(err, -EFBIG, "tile larger than a tile can be");
		memcpy(buf + off, data, t.len);
		off += t.len;
	} while (off < size);
	*ret_len = off;
	return 0;
}
