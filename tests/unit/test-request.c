/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd/request.c, linked as an object: which requests a peer may send
 * (docs/PROTOCOL.md), each refusal with the exact reason the peer reads,
 * and the replies built for a real (one-time) key.  Every accepted request
 * has a refused twin differing in one member.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "key-backend.h"
#include "proto.h"
#include "request.h"
#include "unit.h"
#include "util.h"

#define SHA256_HEX "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define SIGN_(extra)                                                                \
	"{\"v\":1,\"id\":7,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"" SHA256_HEX \
	"\",\"module\":\"snd.ko\"" extra "}"
#define SIGN SIGN_("")

static json_object *msg;
static struct request req;
static const char *err;

/* Parse @text as the daemon does a frame's payload, then request_parse(). */
static int parse(const char *text)
{
	json_object_putp(&msg);
	msg = json_tokener_parse(text);
	if (!msg) {
		printf("#   not JSON: %s\n", text);
		return -999;
	}
	err = NULL;
	return request_parse(msg, &req, &err);
}

/* Refused with -@errno and exactly @why. */
static void refused(const char *name, const char *text, int want, const char *why)
{
	int r = parse(text);

	if (!CHECK(name, r == want && err && strcmp(err, why) == 0))
		printf("#   got %d \"%s\", want %d \"%s\"\n", r, err ?: "(null)", want, why);
}

UNIT_TEST(envelope)
{
	CHECK_EQ("status request parses", parse("{\"v\":1,\"id\":3,\"op\":\"status\"}"), 0);
	CHECK("status: op, id, no key", req.op == OP_STATUS && req.id == 3 && !req.key);
	CHECK_EQ("cert request parses",
		 parse("{\"v\":1,\"id\":4,\"op\":\"cert\",\"key\":\"prod\"}"), 0);
	CHECK("cert: op, id, key", req.op == OP_CERT && req.id == 4 &&
					   strcmp(req.key, "prod") == 0);
	CHECK_EQ("id 0 parses", parse("{\"v\":1,\"id\":0,\"op\":\"status\"}"), 0);
	CHECK_EQ("id 2^64-1 parses",
		 parse("{\"v\":1,\"id\":18446744073709551615,\"op\":\"status\"}"), 0);
	CHECK("id 2^64-1 kept", req.id == UINT64_MAX);

	refused("no v", "{\"id\":1,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("v as a string", "{\"v\":\"1\",\"id\":1,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("v 1.0", "{\"v\":1.0,\"id\":1,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("v 2", "{\"v\":2,\"id\":1,\"op\":\"status\"}", -EPROTONOSUPPORT,
		"unsupported protocol version");
	refused("v 0", "{\"v\":0,\"id\":1,\"op\":\"status\"}", -EPROTONOSUPPORT,
		"unsupported protocol version");
	refused("no id", "{\"v\":1,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("id -1", "{\"v\":1,\"id\":-1,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("id 1.5", "{\"v\":1,\"id\":1.5,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("id as a string", "{\"v\":1,\"id\":\"1\",\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	refused("id null", "{\"v\":1,\"id\":null,\"op\":\"status\"}", -EINVAL,
		"missing or bad \"v\" or \"id\"");
	CHECK_EQ("bad id: the reply's id is 0", req.id, 0);
	refused("not an object", "[1,2]", -EINVAL, "missing or bad \"v\" or \"id\"");

	refused("no op", "{\"v\":1,\"id\":9}", -EINVAL, "missing or bad \"op\"");
	CHECK_EQ("bad op: the reply still carries the id", req.id, 9);
	refused("op as a number", "{\"v\":1,\"id\":9,\"op\":1}", -EINVAL,
		"missing or bad \"op\"");
	refused("op of 17 bytes", "{\"v\":1,\"id\":9,\"op\":\"statusstatusstatu\"}",
		-EINVAL, "missing or bad \"op\"");
	refused("op Status", "{\"v\":1,\"id\":9,\"op\":\"Status\"}", -EOPNOTSUPP,
		"unknown operation");
	refused("op verify", "{\"v\":1,\"id\":9,\"op\":\"verify\"}", -EOPNOTSUPP,
		"unknown operation");
	refused("op with a NUL", "{\"v\":1,\"id\":9,\"op\":\"status\\u0000\"}", -EINVAL,
		"missing or bad \"op\"");
}

UNIT_TEST(key)
{
	char text[512], key[PROTO_MAX_NAME + 2];

	memset(key, 'k', PROTO_MAX_NAME);
	key[PROTO_MAX_NAME] = '\0';
	snprintf(text, sizeof(text), "{\"v\":1,\"id\":1,\"op\":\"cert\",\"key\":\"%s\"}", key);
	CHECK_EQ("key of 128 bytes parses", parse(text), 0);
	CHECK("key of 128 bytes kept", req.key && strlen(req.key) == PROTO_MAX_NAME);
	snprintf(text, sizeof(text), "{\"v\":1,\"id\":1,\"op\":\"cert\",\"key\":\"%sk\"}", key);
	refused("key of 129 bytes", text, -EINVAL, "bad \"key\"");
	refused("key as a number", "{\"v\":1,\"id\":1,\"op\":\"cert\",\"key\":5}", -EINVAL,
		"bad \"key\"");
	refused("key with a NUL", "{\"v\":1,\"id\":1,\"op\":\"cert\",\"key\":\"a\\u0000b\"}",
		-EINVAL, "bad \"key\"");
	/* null is as good as absent: the default key. */
	CHECK_EQ("key null parses", parse("{\"v\":1,\"id\":1,\"op\":\"cert\",\"key\":null}"), 0);
	CHECK("key null is the default key", req.key == NULL);
	refused("sign: key as an array", SIGN_(",\"key\":[\"prod\"]"), -EINVAL, "bad \"key\"");
}

UNIT_TEST(sign)
{
	CHECK_EQ("sign request parses", parse(SIGN), 0);
	CHECK("sign: op, id, hash, module",
	      req.op == OP_SIGN && req.id == 7 && req.md == digest_lookup("sha256") &&
		      strcmp(req.module, "snd.ko") == 0 && !req.key && !req.use_keyid);
	CHECK("sign: the digest's 32 bytes", req.digest_len == 32 && req.digest[0] == 0 &&
						     req.digest[31] == 0x1f);
	CHECK_EQ("sign with key and keyid parses",
		 parse(SIGN_(",\"key\":\"prod\",\"keyid\":true")), 0);
	CHECK("sign: key and keyid kept", strcmp(req.key, "prod") == 0 && req.use_keyid);
	CHECK_EQ("keyid false parses", parse(SIGN_(",\"keyid\":false")), 0);
	CHECK("keyid false kept", !req.use_keyid);
	/* Receivers ignore members they do not know (docs/PROTOCOL.md). */
	CHECK_EQ("unknown members are ignored", parse(SIGN_(",\"future\":{\"x\":1}")), 0);
	CHECK_EQ("upper-case hex parses",
		 parse("{\"v\":1,\"id\":7,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\""
		       "000102030405060708090A0B0C0D0E0F101112131415161718191A1B1C1D1E1F"
		       "\",\"module\":\"m.ko\"}"), 0);

	refused("keyid as a string", SIGN_(",\"keyid\":\"true\""), -EINVAL, "bad \"keyid\"");
	refused("keyid 1", SIGN_(",\"keyid\":1"), -EINVAL, "bad \"keyid\"");

	refused("sign without hash",
		"{\"v\":1,\"id\":7,\"op\":\"sign\",\"digest\":\"" SHA256_HEX
		"\",\"module\":\"m.ko\"}",
		-EINVAL, "missing or bad \"hash\"");
	refused("sign without digest",
		"{\"v\":1,\"id\":7,\"op\":\"sign\",\"hash\":\"sha256\",\"module\":\"m.ko\"}",
		-EINVAL, "missing or bad \"digest\"");
	refused("sign without module",
		"{\"v\":1,\"id\":7,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"" SHA256_HEX
		"\"}",
		-EINVAL, "missing or bad \"module\"");
	CHECK_EQ("a refused sign still carries the id", req.id, 7);
}

UNIT_TEST(hash)
{
	static const struct {
		const char *hash;
		size_t len;
	} ok[] = { { "sha256", 32 },   { "sha384", 48 },   { "sha512", 64 },
		   { "sha3-256", 32 }, { "sha3-384", 48 }, { "sha3-512", 64 } };
	static const char *const bad[] = { "sha1",	"md5",	    "SHA256",	"sha256 ",
					   "sha224",	"sha3-224", "SHA3-256", "sha3_256",
					   "shake256", "" };
	char text[512], hex[2 * DIGEST_MAX_LEN + 3], name[80];

	for (size_t i = 0; i < ELEMENTSOF(ok); i++) {
		memset(hex, 'a', 2 * ok[i].len);
		hex[2 * ok[i].len] = '\0';
		snprintf(text, sizeof(text),
			 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"%s\",\"digest\":\"%s\","
			 "\"module\":\"m.ko\"}", ok[i].hash, hex);
		snprintf(name, sizeof(name), "%s with %zu bytes parses", ok[i].hash, ok[i].len);
		CHECK(name, parse(text) == 0 && req.digest_len == ok[i].len &&
				    digest_size(req.md) == ok[i].len);
		/* Twins: one byte short, one byte long. */
		hex[2 * ok[i].len - 2] = '\0';
		snprintf(text, sizeof(text),
			 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"%s\",\"digest\":\"%s\","
			 "\"module\":\"m.ko\"}", ok[i].hash, hex);
		snprintf(name, sizeof(name), "%s with %zu bytes", ok[i].hash, ok[i].len - 1);
		refused(name, text, -EINVAL, "digest length does not match the hash");
		memset(hex, 'a', 2 * ok[i].len + 2);
		hex[2 * ok[i].len + 2] = '\0';
		snprintf(text, sizeof(text),
			 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"%s\",\"digest\":\"%s\","
			 "\"module\":\"m.ko\"}", ok[i].hash, hex);
		snprintf(name, sizeof(name), "%s with %zu bytes", ok[i].hash, ok[i].len + 1);
		refused(name, text, -EINVAL,
			ok[i].len < DIGEST_MAX_LEN ? "digest length does not match the hash" :
						     "missing or bad \"digest\"");
	}
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		snprintf(text, sizeof(text),
			 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"%s\",\"digest\":\"" SHA256_HEX
			 "\",\"module\":\"m.ko\"}", bad[i]);
		snprintf(name, sizeof(name), "hash \"%s\"", bad[i]);
		refused(name, text, -EINVAL,
			"hash algorithm not allowed (sha256, sha384, sha512, sha3-256, sha3-384, "
			"sha3-512)");
	}
	refused("hash of 17 bytes",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256sha256sha25\",\"digest\":\""
		SHA256_HEX "\",\"module\":\"m.ko\"}",
		-EINVAL, "missing or bad \"hash\"");
	refused("hash as a number",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":256,\"digest\":\"" SHA256_HEX
		"\",\"module\":\"m.ko\"}",
		-EINVAL, "missing or bad \"hash\"");
}

UNIT_TEST(digest)
{
	static const struct {
		const char *name, *digest;
	} bad[] = {
		{ "digest of odd length", SHA256_HEX "0" },
		{ "digest with a non-hex char", "g00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1" },
		{ "digest with a 0x prefix", "0x0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" },
		{ "digest with a space", "00 102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" },
	};
	char text[512], name[80];

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		snprintf(text, sizeof(text),
			 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"%s\","
			 "\"module\":\"m.ko\"}", bad[i].digest);
		snprintf(name, sizeof(name), "%s", bad[i].name);
		refused(name, text, -EINVAL, "missing or bad \"digest\"");
	}
	refused("digest as base64",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":"
		"\"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=\",\"module\":\"m.ko\"}",
		-EINVAL, "missing or bad \"digest\"");
	refused("digest as an array",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":[0,1],"
		"\"module\":\"m.ko\"}", -EINVAL, "missing or bad \"digest\"");
	refused("empty digest",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"\","
		"\"module\":\"m.ko\"}", -EINVAL, "digest length does not match the hash");
}

/* The pure ML-DSA request (issue 31): "mu" and "tr" in place of "hash"
 * and "digest", each 64 bytes of hex. */
#define HEX64 "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f" \
	      "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
#define MU_(fields) "{\"v\":1,\"id\":9,\"op\":\"sign\"," fields ",\"module\":\"m.ko\"}"

UNIT_TEST(mu)
{
	CHECK_EQ("mu-request-parses", parse(MU_("\"mu\":\"" HEX64 "\",\"tr\":\"" HEX64 "\"")), 0);
	CHECK("mu-request-fields", req.mu && !req.md && req.digest_len == 64 && req.tr[63] == 0x3f &&
					   req.digest[1] == 0x01);
	CHECK_EQ("digest-request-is-not-mu", parse(SIGN), 0);
	CHECK("digest-request-is-not-mu-fields", !req.mu && req.md);
	refused("mu with a hash", MU_("\"hash\":\"sha512\",\"mu\":\"" HEX64 "\",\"tr\":\"" HEX64 "\""),
		-EINVAL, "\"mu\" with \"hash\" or \"digest\"");
	refused("mu with a digest", MU_("\"digest\":\"" HEX64 "\",\"mu\":\"" HEX64 "\",\"tr\":\"" HEX64 "\""),
		-EINVAL, "\"mu\" with \"hash\" or \"digest\"");
	refused("mu of 32 bytes", MU_("\"mu\":\"" SHA256_HEX "\",\"tr\":\"" HEX64 "\""), -EINVAL,
		"missing or bad \"mu\"");
	refused("mu without tr", MU_("\"mu\":\"" HEX64 "\""), -EINVAL, "missing or bad \"tr\"");
	refused("tr of 32 bytes", MU_("\"mu\":\"" HEX64 "\",\"tr\":\"" SHA256_HEX "\""), -EINVAL,
		"missing or bad \"tr\"");
}

/* "program": optional, one word of printable ASCII up to
 * PROTO_MAX_PROGRAM bytes (the PKCS#11 module's caller), else refused. */
UNIT_TEST(program)
{
	char text[512], word[PROTO_MAX_PROGRAM + 2];

	CHECK_EQ("sign without program parses", parse(SIGN), 0);
	CHECK("sign without program: none", req.program == NULL);
	CHECK_EQ("sign with program parses", parse(SIGN_(",\"program\":\"pkcs11-tool\"")), 0);
	CHECK("sign: program kept", req.program && strcmp(req.program, "pkcs11-tool") == 0);
	memset(word, 'p', PROTO_MAX_PROGRAM);
	word[PROTO_MAX_PROGRAM] = '\0';
	snprintf(text, sizeof(text), SIGN_(",\"program\":\"%s\""), word);
	CHECK_EQ("program of 64 bytes parses", parse(text), 0);
	snprintf(text, sizeof(text), SIGN_(",\"program\":\"%sp\""), word);
	refused("program of 65 bytes", text, -EINVAL, "bad \"program\" (one word of printable ASCII)");
	refused("program with a newline", SIGN_(",\"program\":\"a\\nb\""), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	refused("program with an escape", SIGN_(",\"program\":\"\\u001b[31m\""), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	refused("program with a space", SIGN_(",\"program\":\"a b\""), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	refused("program not ASCII", SIGN_(",\"program\":\"s\\u00efgn\""), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	refused("program empty", SIGN_(",\"program\":\"\""), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	refused("program as a number", SIGN_(",\"program\":7"), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	/* Review 20, tried and held: a NUL would cut the name short of
	 * what the peer sent (proto_get_string); a quote and a backslash
	 * are printable and kept, for the records' JSON to escape. */
	refused("program with a NUL", SIGN_(",\"program\":\"a\\u0000b\""), -EINVAL,
		"bad \"program\" (one word of printable ASCII)");
	CHECK_EQ("program with a quote and a backslash parses",
		 parse(SIGN_(",\"program\":\"a\\\",\\\"client\\\":\\\\\"")), 0);
	CHECK("... kept as sent", req.program && strcmp(req.program, "a\",\"client\":\\") == 0);
}

UNIT_TEST(module)
{
	_cleanup_(freep) char *text = malloc(PROTO_MAX_MODULE + 256);
	_cleanup_(freep) char *mod = malloc(PROTO_MAX_MODULE + 2);

	if (!CHECK("module buffers", text && mod))
		return;
	memset(mod, 'm', PROTO_MAX_MODULE);
	mod[PROTO_MAX_MODULE] = '\0';
	snprintf(text, PROTO_MAX_MODULE + 256,
		 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"" SHA256_HEX
		 "\",\"module\":\"%s\"}", mod);
	CHECK_EQ("module name of 4096 bytes parses", parse(text), 0);
	CHECK("module name of 4096 bytes kept", strlen(req.module) == PROTO_MAX_MODULE);
	snprintf(text, PROTO_MAX_MODULE + 256,
		 "{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"" SHA256_HEX
		 "\",\"module\":\"%sm\"}", mod);
	refused("module name of 4097 bytes", text, -EINVAL, "missing or bad \"module\"");
	refused("module name with a NUL", SIGN_(",\"module\":\"a.ko\\u0000b\""), -EINVAL,
		"missing or bad \"module\"");
	refused("module name empty", SIGN_(",\"module\":\"\""), -EINVAL,
		"missing or bad \"module\"");
	refused("module name as a number",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"" SHA256_HEX
		"\",\"module\":7}", -EINVAL, "missing or bad \"module\"");
	refused("module name null",
		"{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\"" SHA256_HEX
		"\",\"module\":null}", -EINVAL, "missing or bad \"module\"");
	/* Only a name for the audit log: any UTF-8 path is taken as it is. */
	CHECK_EQ("module name with a path and UTF-8 parses",
		 parse("{\"v\":1,\"id\":1,\"op\":\"sign\",\"hash\":\"sha256\",\"digest\":\""
		       SHA256_HEX "\",\"module\":\"../caf\\u00e9/x.ko\"}"), 0);
	CHECK("module name decoded", strcmp(req.module, "../caf\xc3\xa9/x.ko") == 0);
}

static bool refuse_all(const struct key *k, const void *ctx)
{
	(void)k;
	(void)ctx;
	return false;
}

static bool grant_all(const struct key *k, const void *ctx)
{
	(void)k;
	(void)ctx;
	return true;
}

/* The replies, for a one-time key: the members docs/PROTOCOL.md names. */
UNIT_TEST(replies)
{
	static struct keystore ks;
	struct certgen_params gen = { .organization = "", .common_name = "unit",
				      .email = "", .days = 1 };
	const char *e = NULL, *s;
	json_object *o, *keys, *k0, *v;
	static const uint8_t der[] = { 0x30, 0x03, 0x02, 0x01, 0x01 };

	if (!CHECK("one-time ecdsa-p256 key", keystore_add(&ks, "k1=ephemeral:ecdsa-p256",
							   &gen, &e) == 0)) {
		printf("#   %s\n", e ?: "?");
		return;
	}
	o = reply_status(11, &ks, NULL, NULL);
	CHECK("status reply: v, id, ok",
	      o && proto_check_envelope(o, &(uint64_t){ 0 }) == 0 &&
		      json_object_get_int64(json_object_object_get(o, "id")) == 11 &&
		      json_object_get_boolean(json_object_object_get(o, "ok")));
	keys = o ? json_object_object_get(o, "keys") : NULL;
	k0 = keys ? json_object_array_get_idx(keys, 0) : NULL;
	CHECK("status reply: one key, named, default, healthy",
	      k0 && json_object_array_length(keys) == 1 &&
		      proto_get_string(k0, "name", 64, true, &s) == 0 && strcmp(s, "k1") == 0 &&
		      json_object_get_boolean(json_object_object_get(k0, "default")) &&
		      proto_get_string(k0, "health", 64, true, &s) == 0 &&
		      strcmp(s, "ok") == 0 && !json_object_object_get_ex(k0, "health_error", &v));
	CHECK("status reply: algorithm, backend, key_id, serial",
	      k0 && proto_get_string(k0, "algorithm", 64, true, &s) == 0 &&
		      strcmp(s, "ecdsa-p256") == 0 &&
		      proto_get_string(k0, "backend", 64, true, &s) == 0 &&
		      strcmp(s, "ephemeral") == 0 && strcmp(s, key_backend_name(ks.keys[0])) == 0 &&
		      proto_get_string(k0, "key_id", 256, true, &s) == 0 && *s &&
		      proto_get_string(k0, "serial", 256, true, &s) == 0 && *s);
	CHECK("status reply without a grant function: no \"granted\"",
	      k0 && !json_object_object_get_ex(k0, "granted", &v));
	json_object_put(o);

	o = reply_status(14, &ks, refuse_all, NULL);
	keys = o ? json_object_object_get(o, "keys") : NULL;
	k0 = keys ? json_object_array_get_idx(keys, 0) : NULL;
	CHECK("status reply: \"granted\" false for a key the peer is not granted",
	      k0 && json_object_object_get_ex(k0, "granted", &v) &&
		      json_object_is_type(v, json_type_boolean) && !json_object_get_boolean(v));
	json_object_put(o);
	o = reply_status(15, &ks, grant_all, NULL);
	keys = o ? json_object_object_get(o, "keys") : NULL;
	k0 = keys ? json_object_array_get_idx(keys, 0) : NULL;
	CHECK("twin: \"granted\" true for a granted key",
	      k0 && json_object_object_get_ex(k0, "granted", &v) && json_object_get_boolean(v));
	json_object_put(o);

	o = reply_cert(12, ks.keys[0]);
	_cleanup_(freep) uint8_t *cert = NULL;
	size_t cert_len = 0;
	CHECK("cert reply: the certificate's DER in base64",
	      o && proto_get_string(o, "cert", PROTO_MAX_FRAME, true, &s) == 0 &&
		      base64_decode(s, &cert, &cert_len) == 0 &&
		      cert_len == ks.keys[0]->cert_der_len &&
		      memcmp(cert, ks.keys[0]->cert_der, cert_len) == 0);
	json_object_put(o);

	o = reply_signature(13, ks.keys[0], der, sizeof(der));
	_cleanup_(freep) uint8_t *sig = NULL;
	size_t sig_len = 0;
	CHECK("signature reply: key, key_id, cert_sha256, signature",
	      o && proto_get_string(o, "key", 64, true, &s) == 0 && strcmp(s, "k1") == 0 &&
		      proto_get_string(o, "key_id", 256, true, &s) == 0 &&
		      strcmp(s, ks.keys[0]->key_id) == 0 &&
		      proto_get_string(o, "cert_sha256", 256, true, &s) == 0 &&
		      strcmp(s, ks.keys[0]->cert_sha256) == 0 &&
		      proto_get_string(o, "signature", 256, true, &s) == 0 &&
		      base64_decode(s, &sig, &sig_len) == 0 && sig_len == sizeof(der) &&
		      memcmp(sig, der, sizeof(der)) == 0);
	json_object_put(o);
	keystore_clear(&ks);
}

/* Which backend claims a --key SOURCE: the first row of key_backends[]
 * that does, the file backend taking whatever is left; --check-config
 * asks the same rows, and makes no key and opens no token. */
UNIT_TEST(backends)
{
	static const struct {
		const char *src;
		const struct key_backend *want;
	} cases[] = {
		{ "ephemeral", &key_backend_ephemeral },
		{ "ephemeral:ecdsa-p256", &key_backend_ephemeral },
		{ "pkcs11:token=t;object=k;type=private", &key_backend_pkcs11 },
		{ "/etc/modsign/key.pem", &key_backend_file },
		{ "ephemeralx", &key_backend_file },
		{ "./pkcs11:object=k", &key_backend_file },
	};
	static const char *const specs[] = { "a=ephemeral:ecdsa-p256",
					     "b=pkcs11:token=absent;type=private", "a=ephemeral" };
	char why[256] = "";
	size_t bad = 99;
	bool ok = true;

	for (size_t i = 0; i < ELEMENTSOF(cases); i++)
		if (key_backend_for(cases[i].src) != cases[i].want) {
			printf("#   %s: claimed by %s\n", cases[i].src, key_backend_for(cases[i].src)->name);
			ok = false;
		}
	CHECK("key backends: first claimer wins, file takes the rest", ok);
	CHECK("key backends: named ephemeral, pkcs11, file",
	      strcmp(key_backend_ephemeral.name, "ephemeral") == 0 &&
		      strcmp(key_backend_pkcs11.name, "pkcs11") == 0 &&
		      strcmp(key_backend_file.name, "file") == 0);
	CHECK_EQ("check-config: one-time and token keys pass unmade",
		 keystore_check(specs, 2, why, sizeof(why), &bad), 0);
	CHECK("check-config: a name used twice is the third spec",
	      keystore_check(specs, 3, why, sizeof(why), &bad) == -EEXIST && bad == 2 &&
		      strcmp(why, "duplicate key name") == 0);
	CHECK("check-config: a one-time key's unknown algorithm is refused unmade",
	      keystore_check((const char *const[]){ "a=ephemeral:no-such-alg" }, 1, why,
			     sizeof(why), &bad) == -EINVAL && bad == 0 &&
		      strcmp(why, "unknown key algorithm") == 0);
	CHECK("check-config: a key file is read (the file backend's check)",
	      keystore_check((const char *const[]){ "c=/nonexistent/modsign-key.pem" }, 1, why,
			     sizeof(why), &bad) == -ENOENT && bad == 0);
}

/* The transparency log's request: the checkpoint, or a piece of a tile. */
UNIT_TEST(log)
{
	CHECK("log without a path",
	      parse("{\"v\":1,\"id\":3,\"op\":\"log\"}") == 0 && req.op == OP_LOG &&
		      !req.path && req.offset == 0);
	CHECK("log with a path and an offset",
	      parse("{\"v\":1,\"id\":3,\"op\":\"log\",\"path\":\"tile/0/000\",\"offset\":5}") == 0 &&
		      req.path && strcmp(req.path, "tile/0/000") == 0 && req.offset == 5);
	refused("log path as a number", "{\"v\":1,\"id\":3,\"op\":\"log\",\"path\":1}", -EINVAL,
		"bad \"path\"");
	refused("log offset -1", "{\"v\":1,\"id\":3,\"op\":\"log\",\"path\":\"tile/0/000\",\"offset\":-1}",
		-EINVAL, "bad \"offset\"");
	refused("log offset as a string",
		"{\"v\":1,\"id\":3,\"op\":\"log\",\"path\":\"tile/0/000\",\"offset\":\"0\"}", -EINVAL,
		"bad \"offset\"");
}

UNIT_MAIN()
