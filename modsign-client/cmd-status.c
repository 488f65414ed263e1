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
#include "rpc.h"
#include "util.h"

/* "health: ok", or "health: unavailable (why)"; nothing from an older daemon. */
static void print_health(const struct rpc_key *k)
{
	const char *why = k->health_error;

	if (!k->health)
		return;
	out_line("  health:  %s%s%s%s", k->health, why ? " (" : "", why ?: "", why ? ")" : "");
}

/* The status of @c, or why not in @err (said by the caller). */
static int status_call(struct conn *c, struct rpc_status **ret, struct rpc_error *err)
{
	int r = rpc_status(c, ret, err);

	if (r < 0 && err->malformed)
		snprintf(err->why, sizeof(err->why), "malformed status reply");
	return r;
}

static int print_text(const struct rpc_status *s, const char *address)
{
	out_line("server: %s (modsignd %s)", address, s->version);
	for (size_t i = 0; i < s->n_keys; i++) {
		const struct rpc_key *k = &s->keys[i];

		out_line("key %s%s: %s, %s", k->name, k->is_default ? " (default)" : "",
			 k->algorithm, k->backend);
		out_line("  subject: %s", k->subject);
		out_line("  key id:  %s", k->key_id);
		out_line("  serial:  %s", k->serial);
		print_health(k);
	}
	return 0;
}

static int status_text(const struct global *g)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(rpc_status_freep) struct rpc_status *s = NULL;
	struct rpc_error err;

	if (client_connect(g, &c) < 0)
		return 1;
	if (status_call(c, &s, &err) < 0) {
		warn_msg("%s: %s", conn_address(c), err.why);
		return 1;
	}
	return print_text(s, conn_address(c));
}

/* A key as status --json shows it: the daemon's fields, its names. */
static json_object *key_json(const struct rpc_key *k)
{
	json_object *o = json_object_new_object();

	if (!o)
		return NULL;
	json_object_object_add(o, PROTO_F_NAME, json_object_new_string(k->name));
	json_object_object_add(o, PROTO_F_ALGORITHM, json_object_new_string(k->algorithm));
	json_object_object_add(o, PROTO_F_BACKEND, json_object_new_string(k->backend));
	json_object_object_add(o, PROTO_F_SUBJECT, json_object_new_string(k->subject));
	json_object_object_add(o, PROTO_F_KEY_ID, json_object_new_string(k->key_id));
	json_object_object_add(o, PROTO_F_SERIAL, json_object_new_string(k->serial));
	json_object_object_add(o, PROTO_F_DEFAULT, json_object_new_boolean(k->is_default));
	if (k->health)
		json_object_object_add(o, PROTO_F_HEALTH, json_object_new_string(k->health));
	if (k->health_error)
		json_object_object_add(o, PROTO_F_HEALTH_ERROR,
				       json_object_new_string(k->health_error));
	return o;
}

static void add_status(json_object *out, const struct rpc_status *s)
{
	json_object *keys = json_object_new_array();

	json_object_object_add(out, PROTO_F_DAEMON_VERSION, json_object_new_string(s->version));
	for (size_t i = 0; keys && i < s->n_keys; i++)
		json_object_array_add(keys, key_json(&s->keys[i]));
	json_object_object_add(out, PROTO_F_KEYS, keys);
}

/* {"server":LABEL,"ok":true,"version":...,"keys":[...]} or
 * {"server":LABEL,"ok":false,"error":WHY}: one target. */
static json_object *target_status(const struct global *g, const struct conn_target *t)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(rpc_status_freep) struct rpc_status *s = NULL;
	json_object *out = json_object_new_object();
	struct rpc_error err;
	const char *why = NULL;
	int r;

	if (!out)
		return NULL;
	json_object_object_add(out, "server", json_object_new_string(t->label));
	r = conn_open_target(t, &g->tls, g->stall_ms, &c, &why);
	if (r >= 0 && (r = status_call(c, &s, &err)) < 0)
		why = err.why;
	json_object_object_add(out, "ok", json_object_new_boolean(r >= 0));
	if (r < 0)
		json_object_object_add(out, "error",
				       json_object_new_string(why ?: strerror(-r)));
	else
		add_status(out, s);
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
