/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A byte stream as the daemon and the client read it: take every frame
 * proto_frame_take() finds, exactly as modsignd/server-dispatch.c does, and run
 * each object through the envelope check and the typed accessors.  A
 * frame that parses must survive proto_frame_build() and parse again.
 */
#include <errno.h>

#include "fuzz.h"
#include "proto.h"

static void accessors(json_object *msg)
{
	static const char *const keys[] = { "v", "id", "op", "key", "hash",
					    "digest", "module", "keyid", "ok",
					    "error", "signature", "cert" };
	uint64_t id, u;
	const char *s;
	bool b;

	(void)proto_check_envelope(msg, &id);
	for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
		if (proto_get_string(msg, keys[i], PROTO_MAX_NAME, false, &s) == 0 && s)
			FUZZ_ASSERT(strlen(s) <= PROTO_MAX_NAME);
		if (proto_get_string(msg, keys[i], PROTO_MAX_FRAME, true, &s) == 0)
			FUZZ_ASSERT(s && strlen(s) <= PROTO_MAX_FRAME);
		(void)proto_get_uint(msg, keys[i], &u);
		(void)proto_get_bool(msg, keys[i], &b);
	}
}

static void roundtrip(json_object *msg)
{
	_cleanup_(json_object_putp) json_object *again = NULL;
	_cleanup_(freep) uint8_t *frame = NULL;
	size_t len, used = 0;
	int r;

	r = proto_frame_build(msg, &frame, &len);
	if (r == -EMSGSIZE) /* re-serialising may grow (escapes) */
		return;
	FUZZ_ASSERT(r == 0);
	r = proto_frame_take(frame, len, &again, &used);
	FUZZ_ASSERT(r == 1 && used == len);
	/* Not json_object_equal(): json-c reads "0e" as a double and writes
	 * it as the integer 0, and NaN is unequal to itself.  What we send
	 * must read back as what we meant to send: a serialisation fixed point. */
	FUZZ_ASSERT(strcmp(json_object_to_json_string_ext(msg, JSON_C_TO_STRING_PLAIN),
			   json_object_to_json_string_ext(again, JSON_C_TO_STRING_PLAIN)) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	fuzz_canary(data, size);
	while (off < size) {
		_cleanup_(json_object_putp) json_object *msg = NULL;
		size_t used = 0;
		int r = proto_frame_take(data + off, size - off, &msg, &used);

		FUZZ_ASSERT(r == 0 || r == 1 || r == -EMSGSIZE || r == -EBADMSG ||
			    r == -ENOMEM);
		if (r == 0 || r == -EMSGSIZE || r == -ENOMEM)
			break;
		FUZZ_ASSERT(used > PROTO_HEADER_LEN && used <= size - off);
		off += used;
		if (r < 0)
			continue;
		FUZZ_ASSERT(json_object_is_type(msg, json_type_object));
		accessors(msg);
		roundtrip(msg);
	}
	return 0;
}
