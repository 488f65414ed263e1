/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGN_CLIENT_RPC_H
#define MODSIGN_CLIENT_RPC_H

/*
 * The client's requests (docs/PROTOCOL.md), one typed call each over the
 * generic request/reply of conn.h, as OpenSSH's authfd.c puts
 * ssh_agent_sign() over ssh_request_reply(): the words on the wire come
 * from lib/protocol.h, and no command builds or reads a message itself.
 *
 * Every call returns 0 or a negative errno, and never logs: on failure
 * *@err says why, for the one line the caller prints.  Output
 * parameters are untouched on failure.
 *
 * A batch pipelines many requests on one connection and matches replies
 * by id itself (batch.c, pool.c), so the requests it pipelines have a
 * builder (rpc_*_request(): a new message, or NULL when out of memory)
 * and a parser of a reply already matched to it (rpc_*_reply()) besides
 * the call that does both.
 */

#include <json-c/json.h>
#include <openssl/x509.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "conn.h"
#include "protocol.h"

/*
 * Why a call failed, in the words the client prints after "WHAT: ":
 * the daemon's own error text when it refused the request (-EREMOTEIO),
 * else the connection's (conn_strerror()).  A reply that came but is not
 * what the request asks for (a field missing, of the wrong type, too
 * long, undecodable) is -EBADMSG with @malformed set and @why "malformed
 * reply": what was wrong only the caller can name in its message.
 * Every text either end can give fits (the daemon's are at most
 * PROTO_MAX_ERROR bytes).
 */
struct rpc_error {
	bool malformed;
	char why[PROTO_MAX_ERROR + 1];
};

/* ---- status ------------------------------------------------------------- */

/* One key of a status reply; the strings are the daemon's, borrowed
 * from the reply that struct rpc_status keeps. */
struct rpc_key {
	const char *name;      /* at most PROTO_MAX_NAME bytes */
	const char *algorithm; /* "rsa4096", "ecdsa-p384", ... */
	const char *backend;   /* "ephemeral", "file", "pkcs11" */
	const char *subject;
	const char *key_id;    /* hex subjectKeyIdentifier */
	const char *serial;    /* hex */
	bool is_default;       /* absent: false */
	const char *health;       /* NULL: an older daemon that does not say */
	const char *health_error; /* NULL: none given */
	bool granted;             /* the asker may sign with it (an older
				   * daemon that does not say: true) */
};

struct rpc_status {
	json_object *reply; /* owns every string below */
	const char *version;
	size_t n_keys;
	struct rpc_key keys[]; /* the daemon's order */
};

/* The daemon's version and keys.  Every key must name name, algorithm,
 * backend, subject, key_id and serial (-EBADMSG else); default, health
 * and health_error are optional.  *@ret: rpc_status_free(). */
int rpc_status(struct conn *c, struct rpc_status **ret, struct rpc_error *err);
void rpc_status_free(struct rpc_status *s);
static inline void rpc_status_freep(struct rpc_status **s)
{
	rpc_status_free(*s);
}

/* ---- cert --------------------------------------------------------------- */

/* The certificate of @key (NULL: the default key's), *@ret a new X509;
 * -EBADMSG if the reply holds none, or not one. */
int rpc_cert(struct conn *c, const char *key, X509 **ret, struct rpc_error *err);
json_object *rpc_cert_request(uint64_t id, const char *key);
int rpc_cert_reply(json_object *reply, X509 **ret, struct rpc_error *err);

/* ---- sign --------------------------------------------------------------- */

struct rpc_sign_args {
	const char *key;       /* NULL: the default key */
	const char *hash;      /* digest_name(): "sha256", ... */
	const uint8_t *digest; /* of the module without its signature */
	size_t digest_len;
	const char *module;    /* for the audit record only */
	const char *program;   /* NULL, or the asking program's name for the
				* records (proto_program_clean() made) */
	bool use_keyid;        /* name the signer by subjectKeyIdentifier */
	const uint8_t *tr;     /* non-NULL: a mu request, @digest is mu (64
				* bytes) made with this tr (lib/mldsa.h);
				* @hash is not sent */
};

struct rpc_sign {
	json_object *reply;      /* owns the strings below */
	uint8_t *signature;      /* DER PKCS#7, 1..MODSIG_MAX_SIG bytes */
	size_t signature_len;
	const char *key;         /* NULL: not said */
	const char *key_id;      /* NULL: not said */
	const char *cert_sha256; /* NULL: not said */
	bool logged;             /* log_index given: in the transparency log */
	uint64_t log_index;
};

json_object *rpc_sign_request(uint64_t id, const struct rpc_sign_args *a);

/*
 * The reply to a sign request.  @expect_cert_sha256 non-NULL: the reply
 * must name that certificate (-ENOKEY), checked before the signature is
 * read, so a server that signs with another key is named for that even
 * when what it returned is no signature at all.  The signature is only
 * decoded here, not verified: that is the caller's (batch.c), with the
 * certificate it pinned.  *@ret: rpc_sign_free().
 */
int rpc_sign_reply(json_object *reply, const char *expect_cert_sha256,
		   struct rpc_sign **ret, struct rpc_error *err);
void rpc_sign_free(struct rpc_sign *s);
static inline void rpc_sign_freep(struct rpc_sign **s)
{
	rpc_sign_free(*s);
}

/* ---- log ---------------------------------------------------------------- */

/* The transparency log's latest checkpoint (a signed note of several
 * lines), or its verifier key; each at most NOTE_MAX bytes, *@ret new
 * (free()). */
int rpc_log_checkpoint(struct conn *c, char **ret, struct rpc_error *err);
int rpc_log_vkey(struct conn *c, char **ret, struct rpc_error *err);

/* A piece of a log tile: @len bytes from the offset asked for, of a tile
 * of @size bytes in all. */
struct rpc_tile {
	uint8_t *data; /* free() */
	size_t len;
	uint64_t size;
};

/* The piece of the tile @path (a C2SP tlog-tiles path) from @offset (the
 * daemon gives up to PROTO_LOG_CHUNK bytes at a time); a piece that is
 * empty before the tile's end is malformed (-EBADMSG).  Whether the
 * piece and the size fit what the caller expects is the caller's to
 * check. */
int rpc_log_tile(struct conn *c, const char *path, uint64_t offset, struct rpc_tile *ret,
		 struct rpc_error *err);

/* The whole tile @path into @buf, piece by piece (rpc_log_tile()), and
 * its length in *@ret_len.  -EFBIG: the tile is larger than @max; a piece
 * that names another size than the first did is malformed (-EBADMSG), so
 * nothing a server says is written outside @buf. */
int rpc_log_tile_read(struct conn *c, const char *path, uint8_t *buf, size_t max,
		      size_t *ret_len, struct rpc_error *err);

#endif
