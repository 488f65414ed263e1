/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client/conn.c, linked as an object: how a server list expands
 * into the targets of a pool (every entry, every address of a tls: name,
 * an unresolvable name kept with its reason), and when a connection has a
 * reply waiting without a read (conn_has_input(), which the pool's poll
 * loop trusts).  No daemon; nothing leaves the machine.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "conn-internal.h"
#include "unit.h"

UNIT_TEST(targets)
{
	const char *list[] = { "unix:/run/x.sock", "tls:127.0.0.1:7787",
			       "tls:no-such-host.invalid:7787" };
	struct conn_target *t = NULL;
	size_t n = 0;

	CHECK_EQ("targets-ok", conn_targets(list, 3, &t, &n), 0);
	CHECK_EQ("targets-one-per-entry-here", n, 3);
	CHECK("targets-order-kept", n == 3 && t[0].server == list[0] && t[1].server == list[1] &&
					     t[2].server == list[2]);
	CHECK("targets-unix-label", n == 3 && strcmp(t[0].label, "unix:/run/x.sock") == 0 &&
					    t[0].addr_len == 0 && !t[0].why[0]);
	/* One address: the label is the entry alone, as the user wrote it. */
	CHECK("targets-tls-address", n == 3 && t[1].addr_len > 0 && !t[1].why[0] &&
					     strcmp(t[1].label, "tls:127.0.0.1:7787") == 0);
	CHECK("targets-unresolvable-kept-with-reason",
	      n == 3 && strncmp(t[2].why, "cannot resolve no-such-host.invalid", 35) == 0);
	free(t);
}

/* Twin of the unresolvable target: connecting to it fails with its reason,
 * and a unix target that is not there with ENOENT. */
UNIT_TEST(open_refused)
{
	const char *list[] = { "tls:no-such-host.invalid:7787", "unix:/nonexistent/modsign.sock" };
	struct conn_target *t = NULL;
	struct conn *c = NULL;
	const char *why = NULL;
	size_t n = 0;

	if (!CHECK_EQ("open-targets", conn_targets(list, 2, &t, &n), 0))
		return;
	CHECK_EQ("open-unresolvable", conn_open_target(&t[0], NULL, 1000, &c, &why), -EHOSTUNREACH);
	CHECK("open-unresolvable-says-why", why && strncmp(why, "cannot resolve", 14) == 0);
	CHECK_EQ("open-unix-missing", conn_open_target(&t[1], NULL, 1000, &c, &why), -ENOENT);
	CHECK("open-failed-no-conn", c == NULL);
	free(t);
}

static void feed(struct conn *c, const uint8_t *bytes, size_t len)
{
	memcpy(c->in, bytes, len);
	c->in_len = len;
}

/* A frame waiting is input; a part of one is not (poll(2) must wait for
 * the rest); a bad length is (conn_recv() then says so at once). */
UNIT_TEST(has_input)
{
	static uint8_t buf[64];
	struct conn c = { .fd = -1, .in = buf, .in_cap = sizeof(buf) };
	const uint8_t whole[] = { 0, 0, 0, 2, '{', '}' };
	const uint8_t bad[] = { 0, 0, 0, 0 };

	CHECK("has-input-empty", !conn_has_input(&c));
	feed(&c, whole, 3);
	CHECK("has-input-part-of-header", !conn_has_input(&c));
	feed(&c, whole, 5);
	CHECK("has-input-part-of-frame", !conn_has_input(&c));
	feed(&c, whole, 6);
	CHECK("has-input-whole-frame", conn_has_input(&c));
	feed(&c, bad, 4);
	CHECK("has-input-bad-length", conn_has_input(&c));
}

UNIT_MAIN()
