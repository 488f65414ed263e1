/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd/admission.c, linked as an object: a source's tokens (taken,
 * refilled with time, never above the burst) and its share of key
 * exchanges at once, the caps on admitted
 * connections per identity and per source with their messages and
 * defaults, and the table recycling the fullest bucket.  Each refusal has
 * its twin: another source or identity, or the same after time passed or
 * a connection left.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "admission.h"
#include "macro.h"
#include "unit.h"

DEFINE_TRIVIAL_CLEANUP_FUNC(struct admission *, admission_free);

static struct admission_source v4(const char *addr)
{
	struct sockaddr_storage sa = { .ss_family = AF_INET };
	struct admission_source src;

	inet_pton(AF_INET, addr, &((struct sockaddr_in *)&sa)->sin_addr);
	admission_source_of(&sa, &src);
	return src;
}

static struct admission_source v6(const char *addr)
{
	struct sockaddr_storage sa = { .ss_family = AF_INET6 };
	struct admission_source src;

	inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&sa)->sin6_addr);
	admission_source_of(&sa, &src);
	return src;
}

/* Handshakes @src can start at @now, one after the other, up to @max;
 * each ended at once (so that only the tokens count). */
static unsigned take_all(struct admission *a, const struct admission_source *src,
			 uint64_t now, unsigned max)
{
	unsigned n = 0;

	while (n < max && admission_start_handshake(a, src, now)) {
		admission_end_handshake(a, src);
		n++;
	}
	return n;
}

/* The two sources the cases compare: each one's twin is the other. */
#define ONE v4("192.0.2.1")
#define TWO v4("192.0.2.2")

/* A new table of @cfg, its making checked as @check; NULL if it failed. */
static struct admission *made(const char *check, const struct admission_config *cfg)
{
	struct admission *a = NULL;

	if (!CHECK_EQ(check, admission_new(cfg, &a), 0))
		return NULL;
	return a;
}
#define MADE(check, ...) made((check), &(struct admission_config){ __VA_ARGS__ })

UNIT_TEST(tokens)
{
	_cleanup_(admission_freep) struct admission *a =
		MADE("tokens: new", .rate = 10, .burst = 5, .key_exchanges = 32, .tls_slots = 12);
	struct admission_source one = ONE, two = TWO;

	if (!a)
		return;
	CHECK_EQ("tokens: a burst at once", take_all(a, &one, 1000, 100), 5);
	CHECK_EQ("tokens: none left at once", take_all(a, &one, 1000, 100), 0);
	CHECK_EQ("tokens: twin, another source has its own", take_all(a, &two, 1000, 100), 5);
	CHECK_EQ("tokens: one back after 100 ms at 10/s", take_all(a, &one, 1100, 100), 1);
	CHECK_EQ("tokens: not before", take_all(a, &one, 1199, 100), 0);
	CHECK_EQ("tokens: never above the burst", take_all(a, &one, 100000, 100), 5);
}

UNIT_TEST(share)
{
	_cleanup_(admission_freep) struct admission *a =
		MADE("share: new", .rate = 1, .burst = 100, .key_exchanges = 3, .tls_slots = 12);
	struct admission_source one = ONE, two = TWO;
	unsigned n = 0;

	if (!a)
		return;
	while (n < 10 && admission_start_handshake(a, &one, 0))
		n++;
	CHECK_EQ("share: 3 key exchanges at once", n, 3);
	CHECK("share: twin, another source starts", admission_start_handshake(a, &two, 0));
	admission_end_handshake(a, &one);
	CHECK("share: twin, one ended, one more starts", admission_start_handshake(a, &one, 0));
	CHECK("share: and no more", !admission_start_handshake(a, &one, 0));
}

/* admission_source_eq() of two sources by value. */
static bool same(struct admission_source x, struct admission_source y)
{
	return admission_source_eq(&x, &y);
}

UNIT_TEST(sources)
{
	CHECK("source: an IPv6 /64 is one",
	      same((struct admission_source){ 0 }, (struct admission_source){ 0 }) &&
		      same(v6("2001:db8::1"), v6("2001:db8::ffff:2")));
	CHECK("source: twin, another /64 is another",
	      !same(v6("2001:db8::1"), v6("2001:db8:0:1::1")));
	CHECK("source: a v4-mapped address is its IPv4 one",
	      same(v6("::ffff:192.0.2.1"), ONE));
}

UNIT_TEST(caps)
{
	_cleanup_(admission_freep) struct admission *a =
		MADE("caps: new", .rate = 1, .burst = 1, .key_exchanges = 1, .tls_slots = 12);
	struct admission_source one = ONE, two = TWO;
	char why[128] = "";

	if (!a)
		return;
	CHECK_EQ("caps: default, 3/4 of 12 per identity", admission_per_identity(a), 9);
	CHECK_EQ("caps: default, 3/4 of 12 per source", admission_per_source(a), 9);
	for (int i = 0; i < 9; i++)
		admission_admit(a, &one, "cn:b1", 0, why, sizeof(why));
	CHECK_EQ("caps: the 10th of one identity refused",
		 admission_admit(a, &two, "cn:b1", 0, why, sizeof(why)), -EUSERS);
	CHECK("caps: the refusal names the identity and cap",
	      strcmp(why, "too many connections for cn:b1 (9), try again later") == 0);
	CHECK_EQ("caps: the same source, another identity, refused for the source",
		 admission_admit(a, &one, "cn:b2", 0, why, sizeof(why)), -EUSERS);
	CHECK("caps: that refusal names the source's cap",
	      strcmp(why, "too many connections from this address (9), try again later") == 0);
	CHECK_EQ("caps: twin, another identity from another source",
		 admission_admit(a, &two, "cn:b2", 0, why, sizeof(why)), 0);
	admission_leave(a, &one, "cn:b1");
	CHECK_EQ("caps: twin, one left, one more admitted",
		 admission_admit(a, &one, "cn:b1", 0, why, sizeof(why)), 0);
}

UNIT_TEST(caps_given)
{
	_cleanup_(admission_freep) struct admission *a =
		MADE("caps: given", .rate = 1, .burst = 1, .per_identity = 2, .per_source = 3,
		     .tls_slots = 3);

	CHECK("caps: given ones kept",
	      a && admission_per_identity(a) == 2 && admission_per_source(a) == 3);
}

UNIT_TEST(caps_default_of_slots)
{
	_cleanup_(admission_freep) struct admission *a =
		MADE("caps: 3 slots", .rate = 1, .burst = 1, .tls_slots = 3);

	CHECK_EQ("caps: default of 3 slots is 3", a ? admission_per_identity(a) : 0, 3);
}

/* More sources than the table holds: the fullest bucket is forgotten,
 * never an entry that holds a connection. */
UNIT_TEST(recycling)
{
	_cleanup_(admission_freep) struct admission *a =
		MADE("recycling: new", .rate = 1, .burst = 2, .key_exchanges = 1, .per_source = 1,
		     .tls_slots = 1);
	struct admission_source held = v4("198.51.100.1");
	char why[128];
	unsigned refused = 0;

	if (!a)
		return;
	CHECK_EQ("recycling: one source holds its connection",
		 admission_admit(a, &held, "cn:h", 0, why, sizeof(why)), 0);
	for (unsigned i = 0; i < 3000; i++) {
		struct sockaddr_storage sa = { .ss_family = AF_INET };
		struct admission_source src;

		((struct sockaddr_in *)&sa)->sin_addr.s_addr = htonl(0x0a000000 + i);
		admission_source_of(&sa, &src);
		refused += !admission_start_handshake(a, &src, 5);
		admission_end_handshake(a, &src);
	}
	CHECK_EQ("recycling: each new source has its bucket", refused, 0);
	CHECK_EQ("recycling: the held source's count kept",
		 admission_admit(a, &held, "cn:h2", 5, why, sizeof(why)), -EUSERS);
}

UNIT_MAIN()
