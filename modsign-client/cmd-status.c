/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * status: the daemon, its version and its keys.  status --json asks every
 * target of the pool (every server, every address of a name), for
 * scripts watching a farm: one JSON object on standard output.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "client.h"
#include "commands.h"
#include "util.h"

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
	out_line("  health:  %s%s%s%s", h, why ? " (" : "", why ?: "", why ? ")" : "");
}

/* The status reply of @c: 0 and *@ret, or -errno with *@ret_why. */
static int status_call(struct conn *c, json_object **ret, const char **ret_why)
{
	_cleanup_(json_object_putp) json_object *req = NULL;
	const char *err;
	int r;

	req = proto_request_new(conn_next_id(c), "status");
	if (!req)
		return -ENOMEM;
	r = conn_call(c, req, ret, &err);
	if (r < 0)
		*ret_why = r == -EREMOTEIO ? err : conn_strerror(c, r);
	return r;
}

static int print_text(json_object *reply, const char *address)
{
	json_object *keys;

	out_line("server: %s (modsignd %s)", address, str(reply, "version"));
	if (!json_object_object_get_ex(reply, "keys", &keys) ||
	    !json_object_is_type(keys, json_type_array))
		return 1;
	for (size_t i = 0; i < json_object_array_length(keys); i++) {
		json_object *k = json_object_array_get_idx(keys, i);
		bool def = false;

		proto_get_bool(k, "default", &def);
		out_line("key %s%s: %s, %s", str(k, "name"), def ? " (default)" : "",
			 str(k, "algorithm"), str(k, "backend"));
		out_line("  subject: %s", str(k, "subject"));
		out_line("  key id:  %s", str(k, "key_id"));
		out_line("  serial:  %s", str(k, "serial"));
		print_health(k);
	}
	return 0;
}

static int status_text(const struct global *g)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(json_object_putp) json_object *reply = NULL;
	const char *why = NULL;

	if (client_connect(g, &c) < 0)
		return 1;
	if (status_call(c, &reply, &why) < 0) {
		warn_msg("%s: %s", conn_address(c), why);
		return 1;
	}
	return print_text(reply, conn_address(c));
}

/* {"server":LABEL,"ok":true,"version":...,"keys":[...]} or
 * {"server":LABEL,"ok":false,"error":WHY}: one target. */
static json_object *target_status(const struct global *g, const struct conn_target *t)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	json_object *reply = NULL, *out = json_object_new_object(), *v;
	const char *why = NULL;
	int r;

	if (!out)
		return NULL;
	json_object_object_add(out, "server", json_object_new_string(t->label));
	r = conn_open_target(t, &g->tls, g->stall_ms, &c, &why);
	if (r >= 0)
		r = status_call(c, &reply, &why);
	json_object_object_add(out, "ok", json_object_new_boolean(r >= 0));
	if (r < 0)
		json_object_object_add(out, "error",
				       json_object_new_string(why ?: strerror(-r)));
	if (r >= 0 && json_object_object_get_ex(reply, "version", &v))
		json_object_object_add(out, "version", json_object_get(v));
	if (r >= 0 && json_object_object_get_ex(reply, "keys", &v))
		json_object_object_add(out, "keys", json_object_get(v));
	json_object_put(reply);
	return out;
}

/* Exit 0 if any target answered: a farm with a host down still serves. */
static int status_json(const struct global *g)
{
	_cleanup_(freep) struct conn_target *t = NULL;
	_cleanup_(json_object_putp) json_object *doc = json_object_new_object();
	json_object *arr = json_object_new_array();
	size_t nt = 0, up = 0;
	int r;

	if (!doc || !arr) {
		json_object_put(arr);
		return 1;
	}
	json_object_object_add(doc, "servers", arr);
	r = conn_targets(g->servers, g->n_servers, &t, &nt);
	if (r < 0) {
		warn_msg("%s", strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < nt; i++) {
		json_object *s = target_status(g, &t[i]);
		bool ok = false;

		if (!s)
			return 1;
		proto_get_bool(s, "ok", &ok);
		up += ok;
		json_object_array_add(arr, s);
	}
	json_object_object_add(doc, "up", json_object_new_int64((int64_t)up));
	json_object_object_add(doc, "total", json_object_new_int64((int64_t)nt));
	out_json(doc);
	return up > 0 ? 0 : 1;
}

static int do_status(const struct global *g, int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "--json") == 0)
		return status_json(g);
	if (argc != 1) {
		warn_msg("usage: status [--json]");
		return EXIT_USAGE;
	}
	return status_text(g);
}

const struct client_cmd cmd_status = {
	.name = "status",
	.fn = do_status,
	.usage = "status",
	.help = "show the daemon and its keys",
};
