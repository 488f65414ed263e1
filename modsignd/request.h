/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_REQUEST_H
#define MODSIGND_REQUEST_H

/*
 * Requests and replies of docs/PROTOCOL.md, as JSON objects: parse and
 * validate what a peer sent, build what we answer.  No I/O, no logging.
 */

#include <json-c/json.h>
#include <stdbool.h>

#include "digest.h"
#include "keys.h"
#include "mldsa.h"

enum request_op { OP_STATUS, OP_CERT, OP_SIGN, OP_LOG };

struct request {
	uint64_t id;
	enum request_op op;
	const char *key; /* NULL: the default key */
	/* OP_SIGN only */
	const struct digest *md;
	uint8_t digest[DIGEST_MAX_LEN];
	size_t digest_len;
	const char *module;
	const char *program; /* NULL, or proto_program_valid() */
	bool use_keyid;
	/* a mu request (PROTO_F_MU): digest holds mu, md is NULL, and tr
	 * the client made it with */
	bool mu;
	uint8_t tr[MLDSA_TR_LEN];
	/* OP_LOG only: a tile to read (NULL: the checkpoint and key), from */
	const char *path;
	uint64_t offset;
};

/*
 * Validate @msg.  Strings in *@ret point into @msg.  On failure returns a
 * negative errno, with *@ret_err a static reason for the peer and ret->id
 * set when the envelope was readable (0 otherwise).
 */
int request_parse(json_object *msg, struct request *ret, const char **ret_err);

/* The keys of @ks; @granted non-NULL: each says whether the asker may
 * sign with it ("granted"), so a client such as the PKCS#11 module shows
 * only those (a key not granted is still listed: status never hid names). */
typedef bool (*reply_granted_fn)(const struct key *k, const void *ctx);
json_object *reply_status(uint64_t id, const struct keystore *ks, reply_granted_fn granted,
			  const void *ctx);
json_object *reply_cert(uint64_t id, const struct key *k);
/* The transparency log's signed checkpoint and verifier key. */
json_object *reply_log(uint64_t id, const char *checkpoint, const char *vkey);
/* @len bytes of a log file of @size, as "data" (base64) and "size". */
json_object *reply_log_data(uint64_t id, const uint8_t *data, size_t len, uint64_t size);
json_object *reply_signature(uint64_t id, const struct key *k,
			     const uint8_t *der, size_t der_len);

#endif
