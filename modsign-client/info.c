/* SPDX-License-Identifier: GPL-2.0-or-later */
/* status and cert: what the daemon holds. */
#include <errno.h>
#include <getopt.h>
#include <openssl/pem.h>
#include <stdio.h>
#include <string.h>

#include "cert.h"
#include "client.h"
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

int fetch_cert(struct conn *c, const char *key, X509 **ret)
{
	_cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
	_cleanup_(freep) uint8_t *der = NULL;
	const char *err, *b64;
	size_t len;
	int r;

	req = proto_request_new(conn_next_id(c), "cert");
	if (!req)
		return -ENOMEM;
	if (key)
		json_object_object_add(req, "key", json_object_new_string(key));
	r = conn_call(c, req, &reply, &err);
	if (r < 0) {
		warn_msg("%s: %s", key ?: "default key", r == -EREMOTEIO ? err : conn_strerror(c, r));
		return r;
	}
	if (proto_get_string(reply, "cert", PROTO_MAX_FRAME, true, &b64) < 0 ||
	    base64_decode(b64, &der, &len) < 0 || cert_from_der(der, len, ret) < 0) {
		warn_msg("malformed certificate from modsignd");
		return -EBADMSG;
	}
	return 0;
}

int cmd_cert(const struct global *g, int argc, char **argv)
{
	static const struct option opts[] = {
		{ "key", required_argument, NULL, 'k' },
		{ "der", no_argument, NULL, 'd' },
		{}
	};
	_cleanup_(conn_closep) struct conn *c = NULL;
	_cleanup_(X509_freep) X509 *cert = NULL;
	const char *key = NULL;
	bool der = false;
	int o, ok;

	optind = 1;
	while ((o = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		if (o == 'k')
			key = optarg;
		else if (o == 'd')
			der = true;
		else
			return EXIT_USAGE;
	}
	if (optind != argc) {
		warn_msg("cert: unexpected argument '%s'", argv[optind]);
		return EXIT_USAGE;
	}
	if (client_connect(g, &c) < 0 || fetch_cert(c, key, &cert) < 0)
		return 1;
	ok = der ? i2d_X509_fp(stdout, cert) : PEM_write_X509(stdout, cert);
	if (!ok || fflush(stdout) != 0) {
		warn_msg("cannot write the certificate to stdout");
		return 1;
	}
	return 0;
}
