/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "proto.h"
#include "protocol.h"
#include "request.h"
#include "util.h"

static int parse_op(const char *op, enum request_op *ret)
{
	static const struct {
		const char *name;
		enum request_op op;
	} ops[] = { { PROTO_OP_STATUS, OP_STATUS },
		    { PROTO_OP_CERT, OP_CERT },
		    { PROTO_OP_SIGN, OP_SIGN },
		    { PROTO_OP_LOG, OP_LOG } };

	for (size_t i = 0; i < ELEMENTSOF(ops); i++)
		if (strcmp(op, ops[i].name) == 0) {
			*ret = ops[i].op;
			return 0;
		}
	return -EOPNOTSUPP;
}

/* "mu" and "tr", each 64 bytes in hex: the pure ML-DSA form. */
static int parse_mu(json_object *msg, struct request *req, const char **ret_err)
{
	const char *hex;
	size_t len;

	if (json_object_object_get_ex(msg, PROTO_F_HASH, NULL) ||
	    json_object_object_get_ex(msg, PROTO_F_DIGEST, NULL))
		return (*ret_err = "\"" PROTO_F_MU "\" with \"" PROTO_F_HASH "\" or \"" PROTO_F_DIGEST "\""),
		       -EINVAL;
	if (proto_get_string(msg, PROTO_F_MU, 2 * MLDSA_MU_LEN, true, &hex) < 0 ||
	    hex_decode(hex, req->digest, sizeof(req->digest), &req->digest_len) < 0 ||
	    req->digest_len != MLDSA_MU_LEN)
		return (*ret_err = "missing or bad \"" PROTO_F_MU "\""), -EINVAL;
	if (proto_get_string(msg, PROTO_F_TR, 2 * MLDSA_TR_LEN, true, &hex) < 0 ||
	    hex_decode(hex, req->tr, sizeof(req->tr), &len) < 0 || len != MLDSA_TR_LEN)
		return (*ret_err = "missing or bad \"" PROTO_F_TR "\""), -EINVAL;
	req->mu = true;
	return 0;
}

/* "hash" and "digest": every other form. */
static int parse_digest(json_object *msg, struct request *req, const char **ret_err)
{
	const char *hash, *hex;

	if (proto_get_string(msg, PROTO_F_HASH, 16, true, &hash) < 0)
		return (*ret_err = "missing or bad \"" PROTO_F_HASH "\""), -EINVAL;
	req->md = digest_lookup(hash);
	if (!req->md)
		return (*ret_err = "hash algorithm not allowed (" DIGEST_NAMES ")"),
		       -EINVAL;
	if (proto_get_string(msg, PROTO_F_DIGEST, 2 * DIGEST_MAX_LEN, true, &hex) < 0 ||
	    hex_decode(hex, req->digest, sizeof(req->digest), &req->digest_len) < 0)
		return (*ret_err = "missing or bad \"" PROTO_F_DIGEST "\""), -EINVAL;
	if (req->digest_len != digest_size(req->md))
		return (*ret_err = "digest length does not match the hash"), -EINVAL;
	return 0;
}

/*
 * "program": the asking program's name, a hint no one vouches for (the
 * identity is the connection's).  One printable word or the request is
 * refused, so no record shows a control character or a forged line; a
 * bad one is not kept, so the refusal's record does not show it either.
 */
static int parse_program(json_object *msg, struct request *req, const char **ret_err)
{
	const char *p = NULL;

	if (proto_get_string(msg, PROTO_F_PROGRAM, PROTO_MAX_PROGRAM, false, &p) < 0 ||
	    (p && !proto_program_valid(p)))
		return (*ret_err = "bad \"" PROTO_F_PROGRAM "\" (one word of printable ASCII)"),
		       -EINVAL;
	req->program = p;
	return 0;
}

static int parse_sign(json_object *msg, struct request *req, const char **ret_err)
{
	int r = json_object_object_get_ex(msg, PROTO_F_MU, NULL) ? parse_mu(msg, req, ret_err) :
								   parse_digest(msg, req, ret_err);

	if (r < 0)
		return r;
	/* Only the client's word, for the audit log; but a record that
	 * names no module at all is useless to whoever reads it. */
	if (proto_get_string(msg, PROTO_F_MODULE, PROTO_MAX_MODULE, true, &req->module) < 0 ||
	    !req->module[0])
		return (*ret_err = "missing or bad \"" PROTO_F_MODULE "\""), -EINVAL;
	r = parse_program(msg, req, ret_err);
	if (r < 0)
		return r;
	if (proto_get_bool(msg, PROTO_F_USE_KEYID, &req->use_keyid) < 0)
		return (*ret_err = "bad \"" PROTO_F_USE_KEYID "\""), -EINVAL;
	return 0;
}

static int parse_log(json_object *msg, struct request *req, const char **ret_err)
{
	if (proto_get_string(msg, PROTO_F_PATH, PROTO_MAX_LOG_PATH, false, &req->path) < 0)
		return (*ret_err = "bad \"" PROTO_F_PATH "\""), -EINVAL;
	if (json_object_object_get_ex(msg, PROTO_F_OFFSET, NULL) &&
	    proto_get_uint(msg, PROTO_F_OFFSET, &req->offset) < 0)
		return (*ret_err = "bad \"" PROTO_F_OFFSET "\""), -EINVAL;
	return 0;
}

int request_parse(json_object *msg, struct request *ret, const char **ret_err)
{
	const char *op;
	int r;

	memset(ret, 0, sizeof(*ret));
	r = proto_check_envelope(msg, &ret->id);
	if (r == -EPROTONOSUPPORT)
		return (*ret_err = "unsupported protocol version"), r;
	if (r < 0)
		return (*ret_err = "missing or bad \"" PROTO_F_VERSION "\" or \"" PROTO_F_ID "\""),
		       r;
	if (proto_get_string(msg, PROTO_F_OP, PROTO_MAX_OP, true, &op) < 0)
		return (*ret_err = "missing or bad \"" PROTO_F_OP "\""), -EINVAL;
	if (parse_op(op, &ret->op) < 0)
		return (*ret_err = "unknown operation"), -EOPNOTSUPP;
	if (proto_get_string(msg, PROTO_F_KEY, PROTO_MAX_NAME, false, &ret->key) < 0)
		return (*ret_err = "bad \"" PROTO_F_KEY "\""), -EINVAL;
	if (ret->op == OP_SIGN)
		return parse_sign(msg, ret, ret_err);
	if (ret->op == OP_LOG)
		return parse_log(msg, ret, ret_err);
	return 0;
}

/* "health": "ok" or "unavailable", and then "health_error": why. */
static json_object *key_add_health(json_object *o, const struct key *k)
{
	const char *why;
	enum key_health h = key_health(k, &why);

	json_object_object_add(o, PROTO_F_HEALTH, json_object_new_string(key_health_name(h)));
	if (why)
		json_object_object_add(o, PROTO_F_HEALTH_ERROR, json_object_new_string(why));
	return o;
}

static json_object *key_object(const struct key *k, bool is_default)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, PROTO_F_NAME, json_object_new_string(k->name));
	json_object_object_add(o, PROTO_F_ALGORITHM, json_object_new_string(k->alg.name));
	json_object_object_add(o, PROTO_F_BACKEND,
			       json_object_new_string(key_backend_name(k)));
	json_object_object_add(o, PROTO_F_SUBJECT, json_object_new_string(k->subject));
	json_object_object_add(o, PROTO_F_KEY_ID, json_object_new_string(k->key_id));
	json_object_object_add(o, PROTO_F_SERIAL, json_object_new_string(k->serial));
	json_object_object_add(o, PROTO_F_DEFAULT, json_object_new_boolean(is_default));
	return key_add_health(o, k);
}

json_object *reply_status(uint64_t id, const struct keystore *ks, reply_granted_fn granted,
			  const void *ctx)
{
	json_object *o = proto_reply_new(id), *arr = json_object_new_array();
	const struct key *def = keystore_find(ks, NULL);

	if (!o || !arr) {
		json_object_put(o);
		json_object_put(arr);
		return NULL;
	}
	for (size_t i = 0; i < ks->n; i++) {
		json_object *k = key_object(ks->keys[i], ks->keys[i] == def);

		if (k && granted)
			json_object_object_add(k, PROTO_F_GRANTED,
					       json_object_new_boolean(granted(ks->keys[i], ctx)));
		json_object_array_add(arr, k);
	}
	json_object_object_add(o, PROTO_F_DAEMON_VERSION, json_object_new_string(MODSIGN_VERSION));
	json_object_object_add(o, PROTO_F_KEYS, arr);
	return o;
}

static json_object *add_base64(json_object *o, const char *field,
			       const uint8_t *buf, size_t len)
{
	_cleanup_(freep) char *b64 = NULL;

	if (!o || base64_encode(buf, len, &b64) < 0) {
		json_object_put(o);
		return NULL;
	}
	json_object_object_add(o, field, json_object_new_string(b64));
	return o;
}

json_object *reply_cert(uint64_t id, const struct key *k)
{
	json_object *o = proto_reply_new(id);

	if (o)
		json_object_object_add(o, PROTO_F_KEY, json_object_new_string(k->name));
	return add_base64(o, PROTO_F_CERT, k->cert_der, k->cert_der_len);
}

json_object *reply_signature(uint64_t id, const struct key *k,
			     const uint8_t *der, size_t der_len)
{
	json_object *o = proto_reply_new(id);

	if (o) {
		json_object_object_add(o, PROTO_F_KEY, json_object_new_string(k->name));
		json_object_object_add(o, PROTO_F_KEY_ID, json_object_new_string(k->key_id));
		json_object_object_add(o, PROTO_F_CERT_SHA256, json_object_new_string(k->cert_sha256));
	}
	return add_base64(o, PROTO_F_SIGNATURE, der, der_len);
}

json_object *reply_log(uint64_t id, const char *checkpoint, const char *vkey)
{
	json_object *o = proto_reply_new(id);

	if (o) {
		json_object_object_add(o, PROTO_F_CHECKPOINT, json_object_new_string(checkpoint));
		json_object_object_add(o, PROTO_F_VKEY, json_object_new_string(vkey));
	}
	return o;
}

json_object *reply_log_data(uint64_t id, const uint8_t *data, size_t len, uint64_t size)
{
	json_object *o = proto_reply_new(id);

	if (o)
		json_object_object_add(o, PROTO_F_SIZE, json_object_new_uint64(size));
	return add_base64(o, PROTO_F_DATA, data, len);
}
