/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status: the daemon, its version and its keys. */
#include <errno.h>
#include <stdio.h>

#include "client.h"
#include "commands.h"

static const char *str(json_object *o, const char *key)
{
	const char *s = NULL;

	proto_get_string(o, key, PROTO_MAX_FRAME, true, &s);
	return s ?: "?";
}

/* "health: ok", or "health: unavailable (why)"; nothing from an older daemon. */
static void print_health(json_object *k)
{
	const char *h = NULL, *why = NULL;

	if (proto_get_string(k, "health", PROTO_MAX_NAME, true, &h) < 0)
		return;
	proto_get_string(k, "health_error", PROTO_MAX_ERROR, true, &why);
	printf("  health:  %s%s%s%s\n", h, why ? " (" : "", why ?: "", why ? ")" : "");
}

int cmd_status(const struct global *g, int argc, char **argv _unused_)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
	json_object *keys;
	const char *err;
	int r;

	if (argc != 1) {
		warn_msg("status takes no arguments");
		return EXIT_USAGE;
	}
	if (client_connect(g, &c) < 0)
		return 1;
	req = proto_request_new(conn_next_id(c), "status");
	r = conn_call(c, req, &reply, &err);
	if (r < 0) {
		warn_msg("%s: %s", conn_address(c), r == -EREMOTEIO ? err : conn_strerror(c, r));
		return 1;
	}
	printf("server: %s (modsignd %s)\n", conn_address(c), str(reply, "version"));
	if (!json_object_object_get_ex(reply, "keys", &keys) ||
	    !json_object_is_type(keys, json_type_array))
		return 1;
	for (size_t i = 0; i < json_object_array_length(keys); i++) {
		json_object *k = json_object_array_get_idx(keys, i);
		bool def = false;

		proto_get_bool(k, "default", &def);
		printf("key %s%s: %s, %s\n  subject: %s\n  key id:  %s\n  serial:  %s\n",
		       str(k, "name"), def ? " (default)" : "", str(k, "algorithm"),
		       str(k, "backend"), str(k, "subject"), str(k, "key_id"),
		       str(k, "serial"));
		print_health(k);
	}
	return 0;
}
