/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transparency log's entry.  json-c keeps keys in insertion order and
 * JSON_C_TO_STRING_PLAIN writes no whitespace, so the same record always
 * comes out as the same bytes; the tree hashes those bytes.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

#include "proto.h"
#include "tlog.h"
#include "tlog-entry.h"
#include "util.h"

static int add_string(json_object *o, const char *key, const char *v)
{
	_cleanup_(freep) char *clean = NULL;
	json_object *s;
	int r;

	r = utf8_replace_invalid(v ?: "", &clean);
	if (r < 0)
		return r;
	s = json_object_new_string(clean);
	if (!s || json_object_object_add(o, key, s) < 0) {
		json_object_put(s);
		return -ENOMEM;
	}
	return 0;
}

static int add_hex(json_object *o, const char *key, const uint8_t *buf, size_t len)
{
	_cleanup_(freep) char *hex = NULL;
	int r = hex_encode(buf, len, &hex);

	return r < 0 ? r : add_string(o, key, hex);
}

static int add_client_cert(json_object *o, const struct tlog_entry *e)
{
	int r;

	if (!e->client_cert_sha256)
		return 0;
	if ((r = add_string(o, "client_cert_sha256", e->client_cert_sha256)) < 0 ||
	    (r = add_string(o, "client_serial", e->client_serial)) < 0 ||
	    (r = add_string(o, "client_issuer", e->client_issuer)) < 0 ||
	    (r = add_string(o, "client_issuer_sha256", e->client_issuer_sha256)) < 0)
		return r;
	return 0;
}

static int fill(json_object *o, const struct tlog_entry *e)
{
	uint8_t sig_md[32];
	char when[32];
	struct tm tm;
	int r;

	if (!gmtime_r(&e->time, &tm) || !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
		return -EINVAL;
	if (!EVP_Digest(e->sig, e->sig_len, sig_md, NULL, EVP_sha256(), NULL))
		return -EIO;
	if (json_object_object_add(o, "index", json_object_new_uint64(e->index)) < 0)
		return -ENOMEM;
	if ((r = add_string(o, "time", when)) < 0 || (r = add_string(o, "key", e->key)) < 0 ||
	    (r = add_string(o, "key_id", e->key_id)) < 0 ||
	    (r = add_string(o, "cert_sha256", e->cert_sha256)) < 0 ||
	    (r = add_string(o, "hash", e->hash)) < 0 ||
	    (r = add_hex(o, "digest", e->digest, e->digest_len)) < 0 ||
	    (r = add_string(o, "module", e->module)) < 0 ||
	    (e->program && (r = add_string(o, "program", e->program)) < 0) ||
	    (r = add_string(o, "client", e->client)) < 0 || (r = add_client_cert(o, e)) < 0 ||
	    (r = add_hex(o, "sig_sha256", sig_md, sizeof(sig_md))) < 0)
		return r;
	return 0;
}

int tlog_entry_format(const struct tlog_entry *e, char **ret, size_t *ret_len)
{
	_cleanup_(json_object_putp) json_object *o = json_object_new_object();
	const char *s;
	size_t len;
	int r;

	if (!o)
		return -ENOMEM;
	r = fill(o, e);
	if (r < 0)
		return r;
	s = json_object_to_json_string_length(
		o, JSON_C_TO_STRING_PLAIN | JSON_C_TO_STRING_NOSLASHESCAPE, &len);
	if (!s)
		return -ENOMEM;
	if (len > TLOG_MAX_ENTRY)
		return -E2BIG;
	*ret = strdup(s);
	if (!*ret)
		return -ENOMEM;
	*ret_len = len;
	return 0;
}

static int copy_hex(json_object *o, const char *key, char *out, size_t size)
{
	const char *v;

	if (proto_get_string(o, key, size - 1, true, &v) < 0 || !*v ||
	    strspn(v, "0123456789abcdef") != strlen(v))
		return -EBADMSG;
	memcpy(out, v, strlen(v) + 1);
	return 0;
}

int tlog_entry_parse(const uint8_t *data, size_t len, struct tlog_entry_view *ret)
{
	_cleanup_(json_object_putp) json_object *o = NULL;
	struct tlog_entry_view v;
	json_tokener *tok;
	const char *hash;

	if (len > TLOG_MAX_ENTRY)
		return -EBADMSG;
	tok = json_tokener_new();
	if (!tok)
		return -ENOMEM;
	o = json_tokener_parse_ex(tok, (const char *)data, (int)len);
	if (json_tokener_get_error(tok) != json_tokener_success ||
	    json_tokener_get_parse_end(tok) != len) {
		json_object_put(o);
		o = NULL;
	}
	json_tokener_free(tok);
	if (!o || !json_object_is_type(o, json_type_object) ||
	    proto_get_uint(o, "index", &v.index) < 0 ||
	    proto_get_string(o, "hash", sizeof(v.hash) - 1, true, &hash) < 0 ||
	    copy_hex(o, "digest", v.digest, sizeof(v.digest)) < 0 ||
	    copy_hex(o, "sig_sha256", v.sig_sha256, sizeof(v.sig_sha256)) < 0)
		return -EBADMSG;
	snprintf(v.hash, sizeof(v.hash), "%s", hash);
	*ret = v;
	return 0;
}
