/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client/rpc.c, linked as an object with conn.c: each request
 * against a scripted peer on the other end of a socketpair.  The peer's
 * reply is written before the call (the socket holds it), and the request
 * the call sent is read back after: its words, and the reply's, are
 * those of lib/protocol.h.  Every ok reply has twins that must be
 * refused: the daemon's refusal (its text kept for the caller), a
 * field missing, of the wrong type, too long.
 */
#include <errno.h>
#include <openssl/evp.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "cert.h"
#include "conn-internal.h"
#include "digest.h"
#include "modsig.h"
#include "note.h"
#include "rpc.h"
#include "unit.h"
#include "util.h"

struct peer {
	struct conn *c; /* the client's end */
	int fd;         /* the scripted daemon's */
};

static void peer_open(struct peer *p)
{
	int sv[2];

	*p = (struct peer){ .fd = -1 };
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		abort();
	p->c = calloc(1, sizeof(*p->c));
	if (!p->c)
		abort();
	*p->c = (struct conn){ .fd = sv[0], .next_id = 1, .timeout_ms = 5000,
			       .address = strdup("unix:test") };
	conn_set_timeouts(sv[0], 5000);
	p->fd = sv[1];
}

static void peer_close(struct peer *p)
{
	conn_close(p->c);
	if (p->fd >= 0)
		close(p->fd);
}

/* The peer's next reply: @json framed as it is (it may be malformed). */
static void peer_says(struct peer *p, const char *json)
{
	uint8_t hdr[PROTO_HEADER_LEN];
	size_t n = strlen(json);

	hdr[0] = (uint8_t)(n >> 24), hdr[1] = (uint8_t)(n >> 16);
	hdr[2] = (uint8_t)(n >> 8), hdr[3] = (uint8_t)n;
	if (write(p->fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr) ||
	    write(p->fd, json, n) != (ssize_t)n)
		abort();
}

/* The request the client sent (new reference), or NULL. */
static json_object *peer_heard(struct peer *p)
{
	static uint8_t buf[PROTO_HEADER_LEN + PROTO_MAX_FRAME];
	json_object *req = NULL;
	size_t used = 0;
	ssize_t n = recv(p->fd, buf, sizeof(buf), MSG_DONTWAIT);

	if (n <= 0 || proto_frame_take(buf, (size_t)n, &req, &used) <= 0)
		return NULL;
	return req;
}

/* @req's string member @key equals @want (NULL: absent). */
static bool has_str(json_object *req, const char *key, const char *want)
{
	const char *s = NULL;

	if (proto_get_string(req, key, PROTO_MAX_FRAME, false, &s) < 0)
		return false;
	return want ? s && strcmp(s, want) == 0 : s == NULL;
}

/* An envelope the daemon would accept, for operation @op. */
static bool is_request(json_object *req, const char *op)
{
	uint64_t id = 0;

	return req && proto_check_envelope(req, &id) == 0 && id > 0 && has_str(req, PROTO_F_OP, op);
}

/* ---- status ------------------------------------------------------------- */

#define KEY_RSA "{\"name\":\"default\",\"algorithm\":\"rsa2048\",\"backend\":\"ephemeral\"," \
		"\"subject\":\"CN=x\",\"key_id\":\"ab\",\"serial\":\"01\",\"default\":true," \
		"\"health\":\"ok\"}"
#define KEY_TOK "{\"name\":\"tok\",\"algorithm\":\"ecdsa-p256\",\"backend\":\"pkcs11\"," \
		"\"subject\":\"CN=y\",\"key_id\":\"cd\",\"serial\":\"02\"," \
		"\"health\":\"unavailable\",\"health_error\":\"token gone\"}"

/* rpc_status() against a peer that says @json; its result. */
static int status_from(const char *json, struct rpc_status **ret, struct rpc_error *err,
		       json_object **ret_req)
{
	struct peer p;
	int r;

	peer_open(&p);
	peer_says(&p, json);
	r = rpc_status(p.c, ret, err);
	if (ret_req)
		*ret_req = peer_heard(&p);
	peer_close(&p);
	return r;
}

UNIT_TEST(status_ok)
{
	struct rpc_status *s = NULL;
	struct rpc_error err;
	json_object *req = NULL;

	CHECK_EQ("status-ok", status_from("{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\","
					  "\"keys\":[" KEY_RSA "," KEY_TOK "]}", &s, &err, &req), 0);
	CHECK("status-request-words", is_request(req, PROTO_OP_STATUS));
	json_object_put(req);
	if (!CHECK("status-two-keys", s && s->n_keys == 2))
		goto out;
	CHECK("status-version", strcmp(s->version, "0.1") == 0);
	CHECK("status-key-fields", strcmp(s->keys[0].name, "default") == 0 &&
		      strcmp(s->keys[0].algorithm, "rsa2048") == 0 &&
		      strcmp(s->keys[0].backend, "ephemeral") == 0 &&
		      strcmp(s->keys[0].subject, "CN=x") == 0 &&
		      strcmp(s->keys[0].key_id, "ab") == 0 &&
		      strcmp(s->keys[0].serial, "01") == 0);
	CHECK("status-default-said", s->keys[0].is_default);
	CHECK("status-default-absent-false", !s->keys[1].is_default);
	CHECK("status-health", strcmp(s->keys[0].health, "ok") == 0 && !s->keys[0].health_error);
	CHECK("status-health-error", strcmp(s->keys[1].health, "unavailable") == 0 &&
		      strcmp(s->keys[1].health_error, "token gone") == 0);
out:
	rpc_status_free(s);
}

/* An older daemon says nothing of health: no key's health, not refused. */
UNIT_TEST(status_no_health)
{
	struct rpc_status *s = NULL;
	struct rpc_error err;

	CHECK_EQ("status-older-daemon-ok",
		 status_from("{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\",\"keys\":[{"
			     "\"name\":\"a\",\"algorithm\":\"rsa2048\",\"backend\":\"file\","
			     "\"subject\":\"CN=a\",\"key_id\":\"ab\",\"serial\":\"01\"}]}",
			     &s, &err, NULL), 0);
	CHECK("status-older-daemon-no-health", s && s->n_keys == 1 && !s->keys[0].health);
	rpc_status_free(s);
}

UNIT_TEST(status_refused)
{
	struct rpc_status *s = NULL;
	struct rpc_error err;

	CHECK_EQ("status-refused", status_from("{\"v\":1,\"id\":1,\"ok\":false,"
					       "\"error\":\"permission denied: uid:7\"}",
					       &s, &err, NULL), -EREMOTEIO);
	CHECK("status-refused-text-kept", !err.malformed &&
		      strcmp(err.why, "permission denied: uid:7") == 0);
	CHECK("status-refused-nothing-returned", s == NULL);
	/* Refused without a reason: the words every command printed. */
	CHECK_EQ("status-refused-no-text", status_from("{\"v\":1,\"id\":1,\"ok\":false}",
						       &s, &err, NULL), -EREMOTEIO);
	CHECK("status-refused-no-text-generic", strcmp(err.why, "request refused by modsignd") == 0);
}

/* Each reply wrong in one way, refused as malformed. */
UNIT_TEST(status_malformed)
{
	static const struct {
		const char *name, *json;
	} bad[] = {
		{ "status-no-keys", "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\"}" },
		{ "status-keys-not-array", "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\","
					   "\"keys\":{}}" },
		{ "status-no-version", "{\"v\":1,\"id\":1,\"ok\":true,\"keys\":[]}" },
		{ "status-key-not-object", "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\","
					   "\"keys\":[\"default\"]}" },
		{ "status-key-no-serial", "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\","
					  "\"keys\":[{\"name\":\"a\",\"algorithm\":\"r\","
					  "\"backend\":\"file\",\"subject\":\"CN=a\","
					  "\"key_id\":\"ab\"}]}" },
		{ "status-key-name-wrong-type", "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\","
						"\"keys\":[{\"name\":5,\"algorithm\":\"r\","
						"\"backend\":\"file\",\"subject\":\"CN=a\","
						"\"key_id\":\"ab\",\"serial\":\"01\"}]}" },
		{ "status-key-default-wrong-type",
		  "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\",\"keys\":[{\"name\":\"a\","
		  "\"algorithm\":\"r\",\"backend\":\"file\",\"subject\":\"CN=a\",\"key_id\":\"ab\","
		  "\"serial\":\"01\",\"default\":\"yes\"}]}" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct rpc_status *s = NULL;
		struct rpc_error err;

		char said[96];

		snprintf(said, sizeof(said), "%s-said-malformed", bad[i].name);
		CHECK_EQ(bad[i].name, status_from(bad[i].json, &s, &err, NULL), -EBADMSG);
		CHECK(said, err.malformed && strcmp(err.why, "malformed reply") == 0 && s == NULL);
	}
}

/* A key name of PROTO_MAX_NAME bytes is one; a byte more is refused. */
UNIT_TEST(status_name_bound)
{
	char name[PROTO_MAX_NAME + 2], json[1024];
	struct rpc_status *s = NULL;
	struct rpc_error err;

	for (size_t extra = 0; extra < 2; extra++) {
		memset(name, 'k', sizeof(name));
		name[PROTO_MAX_NAME + extra] = '\0';
		snprintf(json, sizeof(json), "{\"v\":1,\"id\":1,\"ok\":true,\"version\":\"0.1\","
			 "\"keys\":[{\"name\":\"%s\",\"algorithm\":\"r\",\"backend\":\"file\","
			 "\"subject\":\"CN=a\",\"key_id\":\"ab\",\"serial\":\"01\"}]}", name);
		CHECK_EQ(extra ? "status-name-too-long" : "status-name-longest",
			 status_from(json, &s, &err, NULL), extra ? -EBADMSG : 0);
		rpc_status_free(s);
		s = NULL;
	}
}

/* The daemon hangs up: the connection's words, not a reply's. */
UNIT_TEST(status_hangup)
{
	struct rpc_status *s = NULL;
	struct rpc_error err;
	struct peer p;

	peer_open(&p);
	shutdown(p.fd, SHUT_WR);
	CHECK_EQ("status-hangup", rpc_status(p.c, &s, &err), -ECONNRESET);
	CHECK("status-hangup-text", !err.malformed && strcmp(err.why, strerror(ECONNRESET)) == 0);
	peer_close(&p);
	/* Garbage on the wire is the connection's too, not a malformed reply. */
	peer_open(&p);
	peer_says(&p, "[1]");
	CHECK_EQ("status-not-an-object", rpc_status(p.c, &s, &err), -EBADMSG);
	CHECK("status-not-an-object-text", !err.malformed &&
		      strcmp(err.why, strerror(EBADMSG)) == 0);
	peer_close(&p);
}

/* ---- cert --------------------------------------------------------------- */

static X509 *make_cert(void)
{
	EVP_PKEY *k = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	X509 *x = X509_new();

	if (!k || !x)
		abort();
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)"rpc test", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 3600);
	X509_set_pubkey(x, k);
	if (!X509_sign(x, k, EVP_sha256()))
		abort();
	EVP_PKEY_free(k);
	return x;
}

/* rpc_cert(@key) against a peer that says @json. */
static int cert_from(const char *json, const char *key, X509 **ret, struct rpc_error *err,
		     json_object **ret_req)
{
	struct peer p;
	int r;

	peer_open(&p);
	peer_says(&p, json);
	r = rpc_cert(p.c, key, ret, err);
	if (ret_req)
		*ret_req = peer_heard(&p);
	peer_close(&p);
	return r;
}

UNIT_TEST(cert)
{
	_cleanup_(X509_freep) X509 *x = make_cert();
	_cleanup_(freep) uint8_t *der = NULL;
	_cleanup_(freep) char *b64 = NULL;
	char json[4096];
	size_t len = 0;
	X509 *got = NULL;
	struct rpc_error err;
	json_object *req = NULL;

	if (cert_to_der(x, &der, &len) < 0 || base64_encode(der, len, &b64) < 0)
		abort();
	snprintf(json, sizeof(json), "{\"v\":1,\"id\":1,\"ok\":true,\"key\":\"k\",\"cert\":\"%s\"}",
		 b64);
	CHECK_EQ("cert-ok", cert_from(json, "k", &got, &err, &req), 0);
	CHECK("cert-same-certificate", got && X509_cmp(got, x) == 0);
	CHECK("cert-request-names-key", is_request(req, PROTO_OP_CERT) &&
						has_str(req, PROTO_F_KEY, "k"));
	X509_free(got);
	json_object_put(req);
	got = NULL;
	CHECK_EQ("cert-default-ok", cert_from(json, NULL, &got, &err, &req), 0);
	CHECK("cert-default-request-names-none", is_request(req, PROTO_OP_CERT) &&
							 has_str(req, PROTO_F_KEY, NULL));
	X509_free(got);
	json_object_put(req);
	got = NULL;

	CHECK_EQ("cert-refused", cert_from("{\"v\":1,\"id\":1,\"ok\":false,"
					   "\"error\":\"unknown key 'other'\"}",
					   "other", &got, &err, NULL), -EREMOTEIO);
	CHECK("cert-refused-text-kept", !err.malformed &&
		      strcmp(err.why, "unknown key 'other'") == 0 && !got);
	CHECK_EQ("cert-missing", cert_from("{\"v\":1,\"id\":1,\"ok\":true}", NULL, &got, &err,
					   NULL), -EBADMSG);
	CHECK("cert-missing-malformed", err.malformed && !got);
	CHECK_EQ("cert-wrong-type", cert_from("{\"v\":1,\"id\":1,\"ok\":true,\"cert\":5}", NULL,
					      &got, &err, NULL), -EBADMSG);
	CHECK_EQ("cert-not-base64", cert_from("{\"v\":1,\"id\":1,\"ok\":true,\"cert\":\"!!\"}",
					      NULL, &got, &err, NULL), -EBADMSG);
	/* Base64 of bytes that are no certificate (a truncated one). */
	b64[len / 2 & ~3u] = '\0';
	snprintf(json, sizeof(json), "{\"v\":1,\"id\":1,\"ok\":true,\"cert\":\"%s\"}", b64);
	CHECK_EQ("cert-truncated", cert_from(json, NULL, &got, &err, NULL), -EBADMSG);
	CHECK("cert-malformed-nothing-returned", !got);
}

/* The pool's halves: the request alone, and a reply it matched by id. */
UNIT_TEST(cert_halves)
{
	_cleanup_(json_object_putp) json_object *req = rpc_cert_request(42, "dist");
	_cleanup_(json_object_putp) json_object *no_ok = json_tokener_parse("{\"v\":1,\"id\":42}");
	struct rpc_error err;
	uint64_t id = 0;
	X509 *got = NULL;

	CHECK("cert-request-id", req && proto_check_envelope(req, &id) == 0 && id == 42);
	CHECK("cert-request-key", has_str(req, PROTO_F_KEY, "dist"));
	/* No "ok": a refusal, as conn_call() reads it. */
	CHECK_EQ("cert-reply-no-ok", rpc_cert_reply(no_ok, &got, &err), -EREMOTEIO);
	CHECK("cert-reply-no-ok-generic", strcmp(err.why, "request refused by modsignd") == 0);
}

/* ---- sign --------------------------------------------------------------- */

UNIT_TEST(sign_request)
{
	static const uint8_t digest[] = { 0xde, 0xad, 0xbe, 0xef };
	struct rpc_sign_args a = { .key = "dist", .hash = "sha256", .digest = digest,
				   .digest_len = sizeof(digest), .module = "drivers/x.ko",
				   .use_keyid = true };
	json_object *req = rpc_sign_request(3, &a);
	bool keyid = false;
	uint64_t id = 0;

	CHECK("sign-request-envelope", is_request(req, PROTO_OP_SIGN) &&
					       proto_check_envelope(req, &id) == 0 && id == 3);
	CHECK("sign-request-fields", has_str(req, PROTO_F_KEY, "dist") &&
					     has_str(req, PROTO_F_HASH, "sha256") &&
					     has_str(req, PROTO_F_DIGEST, "deadbeef") &&
					     has_str(req, PROTO_F_MODULE, "drivers/x.ko"));
	CHECK("sign-request-keyid", proto_get_bool(req, PROTO_F_USE_KEYID, &keyid) == 0 && keyid);
	json_object_put(req);
	/* Twin: the default key, by issuer and serial: neither word sent. */
	a.key = NULL;
	a.use_keyid = false;
	req = rpc_sign_request(4, &a);
	CHECK("sign-request-default-key", req && has_str(req, PROTO_F_KEY, NULL) &&
						  !json_object_object_get_ex(req, PROTO_F_USE_KEYID,
									     NULL));
	json_object_put(req);
}

/* rpc_sign_reply() of the reply @json, expecting @expect. */
static int sign_from(const char *json, const char *expect, struct rpc_sign **ret,
		     struct rpc_error *err)
{
	_cleanup_(json_object_putp) json_object *reply = json_tokener_parse(json);

	if (!reply)
		abort();
	return rpc_sign_reply(reply, expect, ret, err);
}

#define SIG_OK "{\"v\":1,\"id\":3,\"ok\":true,\"key\":\"dist\",\"key_id\":\"ab12\"," \
	       "\"cert_sha256\":\"00ff\",\"signature\":\"AQID\""

UNIT_TEST(sign_reply)
{
	struct rpc_sign *s = NULL;
	struct rpc_error err;

	CHECK_EQ("sign-reply-ok", sign_from(SIG_OK ",\"log_index\":9}", NULL, &s, &err), 0);
	CHECK("sign-reply-signature", s && s->signature_len == 3 && s->signature[0] == 1 &&
					      s->signature[2] == 3);
	CHECK("sign-reply-words", s && strcmp(s->key, "dist") == 0 &&
					  strcmp(s->key_id, "ab12") == 0 &&
					  strcmp(s->cert_sha256, "00ff") == 0);
	CHECK("sign-reply-log-index", s && s->logged && s->log_index == 9);
	rpc_sign_free(s);
	s = NULL;
	CHECK_EQ("sign-reply-unlogged", sign_from(SIG_OK "}", NULL, &s, &err), 0);
	CHECK("sign-reply-unlogged-no-index", s && !s->logged);
	rpc_sign_free(s);
	s = NULL;
	CHECK_EQ("sign-reply-expected-signer", sign_from(SIG_OK "}", "00ff", &s, &err), 0);
	rpc_sign_free(s);
	s = NULL;
}

UNIT_TEST(sign_reply_refused)
{
	struct rpc_sign *s = NULL;
	struct rpc_error err;

	CHECK_EQ("sign-reply-refused",
		 sign_from("{\"v\":1,\"id\":3,\"ok\":false,\"error\":\"signing with key dist "
			   "failed: token gone\"}", NULL, &s, &err), -EREMOTEIO);
	CHECK("sign-reply-refused-text-kept", !err.malformed && !s &&
		      strcmp(err.why, "signing with key dist failed: token gone") == 0);
	CHECK_EQ("sign-reply-other-signer", sign_from(SIG_OK "}", "11ee", &s, &err), -ENOKEY);
	CHECK_EQ("sign-reply-no-signer-said",
		 sign_from("{\"v\":1,\"id\":3,\"ok\":true,\"signature\":\"AQID\"}", "00ff", &s, &err),
		 -ENOKEY);
	/* The signer is checked first: another key's garbage is named for
	 * its key, as the batch names it. */
	CHECK_EQ("sign-reply-other-signer-before-garbage",
		 sign_from("{\"v\":1,\"id\":3,\"ok\":true,\"cert_sha256\":\"11ee\","
			   "\"signature\":5}", "00ff", &s, &err), -ENOKEY);
	CHECK("sign-reply-refused-nothing-returned", s == NULL);
}

UNIT_TEST(sign_reply_malformed)
{
	char long_fp[2 * DIGEST_MAX_LEN + 2], json[512];
	static const struct {
		const char *name, *json;
	} bad[] = {
		{ "sign-reply-no-signature", "{\"v\":1,\"id\":3,\"ok\":true,\"key\":\"dist\"}" },
		{ "sign-reply-signature-wrong-type", "{\"v\":1,\"id\":3,\"ok\":true,\"signature\":7}" },
		{ "sign-reply-signature-empty", "{\"v\":1,\"id\":3,\"ok\":true,\"signature\":\"\"}" },
		{ "sign-reply-signature-not-base64",
		  "{\"v\":1,\"id\":3,\"ok\":true,\"signature\":\"*?\"}" },
		{ "sign-reply-key-id-wrong-type", "{\"v\":1,\"id\":3,\"ok\":true,\"key_id\":[],"
						  "\"signature\":\"AQID\"}" },
		{ "sign-reply-log-index-negative", SIG_OK ",\"log_index\":-1}" },
		{ "sign-reply-log-index-string", SIG_OK ",\"log_index\":\"9\"}" },
	};
	struct rpc_sign *s = NULL;
	struct rpc_error err;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char said[96];

		snprintf(said, sizeof(said), "%s-said-malformed", bad[i].name);
		CHECK_EQ(bad[i].name, sign_from(bad[i].json, NULL, &s, &err), -EBADMSG);
		CHECK(said, err.malformed && s == NULL);
	}
	memset(long_fp, 'a', sizeof(long_fp));
	long_fp[sizeof(long_fp) - 1] = '\0';
	snprintf(json, sizeof(json), "{\"v\":1,\"id\":3,\"ok\":true,\"cert_sha256\":\"%s\","
		 "\"signature\":\"AQID\"}", long_fp);
	CHECK_EQ("sign-reply-cert-sha256-too-long", sign_from(json, NULL, &s, &err), -EBADMSG);
}

/* A signature past MODSIG_MAX_SIG is no module signature. */
UNIT_TEST(sign_reply_too_long)
{
	_cleanup_(freep) uint8_t *big = calloc(1, MODSIG_MAX_SIG + 1);
	_cleanup_(freep) char *b64 = NULL;
	_cleanup_(json_object_putp) json_object *reply = proto_reply_new(3);
	struct rpc_sign *s = NULL;
	struct rpc_error err;

	if (!big || !reply || base64_encode(big, MODSIG_MAX_SIG + 1, &b64) < 0)
		abort();
	json_object_object_add(reply, PROTO_F_SIGNATURE, json_object_new_string(b64));
	CHECK_EQ("sign-reply-signature-too-long", rpc_sign_reply(reply, NULL, &s, &err), -EBADMSG);
}

/* ---- log ---------------------------------------------------------------- */

#define NOTE "modsign.example/log\\n3\\nq83vEjRWeJq80=\\n\\n\\u2014 modsign.example/log C6vw\\n"

UNIT_TEST(log)
{
	struct peer p;
	struct rpc_error err;
	json_object *req;
	char *v = NULL;

	peer_open(&p);
	peer_says(&p, "{\"v\":1,\"id\":1,\"ok\":true,\"checkpoint\":\"" NOTE "\","
		      "\"vkey\":\"modsign.example/log+0badf00d+AAAA\"}");
	CHECK_EQ("log-checkpoint-ok", rpc_log_checkpoint(p.c, &v, &err), 0);
	CHECK("log-checkpoint-as-sent",
	      v && strcmp(v, "modsign.example/log\n3\nq83vEjRWeJq80=\n\n\xe2\x80\x94 "
			     "modsign.example/log C6vw\n") == 0);
	req = peer_heard(&p);
	CHECK("log-request-words", is_request(req, PROTO_OP_LOG) && has_str(req, PROTO_F_PATH, NULL));
	json_object_put(req);
	free(v);
	v = NULL;
	peer_says(&p, "{\"v\":1,\"id\":2,\"ok\":true,\"checkpoint\":\"x\","
		      "\"vkey\":\"modsign.example/log+0badf00d+AAAA\"}");
	CHECK_EQ("log-vkey-ok", rpc_log_vkey(p.c, &v, &err), 0);
	CHECK("log-vkey-as-sent", v && strcmp(v, "modsign.example/log+0badf00d+AAAA") == 0);
	free(v);
	v = NULL;
	peer_says(&p, "{\"v\":1,\"id\":3,\"ok\":false,\"error\":\"no transparency log\"}");
	CHECK_EQ("log-refused", rpc_log_checkpoint(p.c, &v, &err), -EREMOTEIO);
	CHECK("log-refused-text-kept", !err.malformed && strcmp(err.why, "no transparency log") == 0);
	peer_says(&p, "{\"v\":1,\"id\":4,\"ok\":true,\"checkpoint\":\"x\"}");
	CHECK_EQ("log-vkey-missing", rpc_log_vkey(p.c, &v, &err), -EBADMSG);
	CHECK("log-vkey-missing-malformed", err.malformed && !v);
	peer_says(&p, "{\"v\":1,\"id\":5,\"ok\":true,\"checkpoint\":1}");
	CHECK_EQ("log-checkpoint-wrong-type", rpc_log_checkpoint(p.c, &v, &err), -EBADMSG);
	peer_close(&p);
}

/* A note of NOTE_MAX bytes is one; a byte more is refused. */
UNIT_TEST(log_bound)
{
	_cleanup_(freep) char *json = malloc(NOTE_MAX + 128);
	struct rpc_error err;
	char *v = NULL;

	if (!json)
		abort();
	for (size_t extra = 0; extra < 2; extra++) {
		struct peer p;
		int n = sprintf(json, "{\"v\":1,\"id\":1,\"ok\":true,\"checkpoint\":\"");

		memset(json + n, 'c', NOTE_MAX + extra);
		strcpy(json + n + NOTE_MAX + extra, "\"}");
		peer_open(&p);
		peer_says(&p, json);
		CHECK_EQ(extra ? "log-checkpoint-too-long" : "log-checkpoint-longest",
			 rpc_log_checkpoint(p.c, &v, &err), extra ? -EBADMSG : 0);
		free(v);
		v = NULL;
		peer_close(&p);
	}
}

UNIT_TEST(log_tile)
{
	struct rpc_tile t = { 0 };
	struct rpc_error err;
	struct peer p;
	json_object *req;
	uint64_t off = 0;

	peer_open(&p);
	peer_says(&p, "{\"v\":1,\"id\":1,\"ok\":true,\"size\":6,\"data\":\"AQID\"}");
	CHECK_EQ("log-tile-ok", rpc_log_tile(p.c, "tile/0/000", 3, &t, &err), 0);
	CHECK("log-tile-piece", t.len == 3 && t.size == 6 && t.data && t.data[1] == 2);
	free(t.data);
	req = peer_heard(&p);
	CHECK("log-tile-request-words", is_request(req, PROTO_OP_LOG) &&
						has_str(req, PROTO_F_PATH, "tile/0/000") &&
						proto_get_uint(req, PROTO_F_OFFSET, &off) == 0 && off == 3);
	json_object_put(req);
	/* Nothing left to give at the end is a piece; before it, a loop. */
	t = (struct rpc_tile){ 0 };
	peer_says(&p, "{\"v\":1,\"id\":2,\"ok\":true,\"size\":6,\"data\":\"\"}");
	CHECK_EQ("log-tile-empty-at-end", rpc_log_tile(p.c, "tile/0/000", 6, &t, &err), 0);
	free(t.data);
	t = (struct rpc_tile){ 0 };
	peer_says(&p, "{\"v\":1,\"id\":3,\"ok\":true,\"size\":6,\"data\":\"\"}");
	CHECK_EQ("log-tile-empty-before-end", rpc_log_tile(p.c, "tile/0/000", 3, &t, &err),
		 -EBADMSG);
	CHECK("log-tile-malformed-text", err.malformed && strcmp(err.why, "malformed reply") == 0);
	peer_says(&p, "{\"v\":1,\"id\":4,\"ok\":true,\"data\":\"AQID\"}");
	CHECK_EQ("log-tile-no-size", rpc_log_tile(p.c, "tile/0/000", 0, &t, &err), -EBADMSG);
	peer_says(&p, "{\"v\":1,\"id\":5,\"ok\":true,\"size\":6,\"data\":[]}");
	CHECK_EQ("log-tile-data-wrong-type", rpc_log_tile(p.c, "tile/0/000", 0, &t, &err),
		 -EBADMSG);
	peer_says(&p, "{\"v\":1,\"id\":6,\"ok\":false,\"error\":\"no such tile\"}");
	CHECK_EQ("log-tile-refused", rpc_log_tile(p.c, "tile/0/001", 0, &t, &err), -EREMOTEIO);
	CHECK("log-tile-refused-text-kept", strcmp(err.why, "no such tile") == 0 && !t.data);
	peer_close(&p);
}

/* A whole tile from its pieces; a server whose later piece names a
 * smaller size than the first (so that size - offset would wrap) or a
 * larger one than the buffer is refused, and nothing lands past @max. */
UNIT_TEST(log_tile_read)
{
	uint8_t buf[16 + 8];
	struct rpc_error err;
	struct peer p;
	size_t got = 0;

	memset(buf, 0xaa, sizeof(buf));
	peer_open(&p);
	peer_says(&p, "{\"v\":1,\"id\":1,\"ok\":true,\"size\":6,\"data\":\"AQID\"}");
	peer_says(&p, "{\"v\":1,\"id\":2,\"ok\":true,\"size\":6,\"data\":\"BAUG\"}");
	CHECK_EQ("log-tile-read-two-pieces", rpc_log_tile_read(p.c, "tile/0/000", buf, 16, &got, &err), 0);
	CHECK("log-tile-read-assembled", got == 6 && memcmp(buf, "\1\2\3\4\5\6", 6) == 0);
	memset(buf, 0xaa, sizeof(buf));
	peer_says(&p, "{\"v\":1,\"id\":3,\"ok\":true,\"size\":16,\"data\":\"AQID\"}");
	peer_says(&p, "{\"v\":1,\"id\":4,\"ok\":true,\"size\":0,"
		      "\"data\":\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}");
	CHECK_EQ("log-tile-read-size-shrinks-refused",
		 rpc_log_tile_read(p.c, "tile/0/000", buf, 16, &got, &err), -EBADMSG);
	CHECK("log-tile-read-nothing-past-max", buf[16] == 0xaa && buf[23] == 0xaa);
	peer_says(&p, "{\"v\":1,\"id\":5,\"ok\":true,\"size\":17,\"data\":\"AQID\"}");
	CHECK_EQ("log-tile-read-too-large-refused",
		 rpc_log_tile_read(p.c, "tile/0/000", buf, 16, &got, &err), -EFBIG);
	peer_close(&p);
}

UNIT_MAIN()
