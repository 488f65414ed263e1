/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * One frame's payload through request_parse() (modsignd/request.c, linked
 * as an object): whatever a peer sends, the result is either a refusal
 * with a reason or a request whose every field is within its limits.
 */
#include <arpa/inet.h>
#include <errno.h>

#include "fuzz.h"
#include "proto.h"
#include "request.h"

/* request.o also holds the reply builders, which use the keystore; they
 * are not fuzzed here, so the keystore is stubbed rather than linked. */
const char *key_backend_name(const struct key *k _unused_)
{
	abort();
}

struct key *keystore_find(const struct keystore *ks _unused_,
			  const char *name _unused_)
{
	abort();
}

/* Every op request_parse() knows, each with its own fields in bounds: a
 * new op or form the contract does not name breaks it, so the harness is
 * kept up with the protocol. */
static void check_sign(const struct request *req)
{
	FUZZ_ASSERT(req->module && req->module[0] && strlen(req->module) <= PROTO_MAX_MODULE);
	FUZZ_ASSERT(!req->program || proto_program_valid(req->program));
	if (req->mu) { /* pure ML-DSA: mu and tr, no hash */
		FUZZ_ASSERT(!req->md && req->digest_len == MLDSA_MU_LEN);
		return;
	}
	FUZZ_ASSERT(req->md && digest_name(req->md));
	FUZZ_ASSERT(req->digest_len == digest_size(req->md));
	FUZZ_ASSERT(req->digest_len <= sizeof(req->digest));
}

static void check_request(const struct request *req)
{
	if (req->key)
		FUZZ_ASSERT(strlen(req->key) <= PROTO_MAX_NAME);
	switch (req->op) {
	case OP_STATUS:
	case OP_CERT:
		return;
	case OP_SIGN:
		check_sign(req);
		return;
	case OP_LOG:
		FUZZ_ASSERT(!req->path || strlen(req->path) <= PROTO_MAX_LOG_PATH);
		return;
	}
	FUZZ_ASSERT(!"an op the contract does not know");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(json_object_putp) json_object *msg = NULL;
	_cleanup_(freep) uint8_t *frame = NULL;
	struct request req;
	const char *err = NULL;
	uint32_t be;
	size_t used;
	int r;

	fuzz_canary(data, size);
	if (size == 0 || size > PROTO_MAX_FRAME)
		return 0;
	frame = malloc(PROTO_HEADER_LEN + size);
	if (!frame)
		return 0;
	be = htonl((uint32_t)size);
	memcpy(frame, &be, sizeof(be));
	memcpy(frame + PROTO_HEADER_LEN, data, size);
	if (proto_frame_take(frame, PROTO_HEADER_LEN + size, &msg, &used) != 1)
		return 0;

	r = request_parse(msg, &req, &err);
	if (r < 0) {
		FUZZ_ASSERT(err && *err && strlen(err) < PROTO_MAX_ERROR);
		return 0;
	}
	check_request(&req);
	return 0;
}
