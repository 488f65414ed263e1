/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsignd/policy.c, linked as an object: who is admitted, which keys each
 * peer is granted, the default rule, and the rules refused at start-up.
 * Every grant has a refused twin: the same peer one id, group or name
 * away, or the same rule asked for another key.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy.h"
#include "unit.h"
#include "util.h"

static struct policy pol;

/* A fresh policy of the given rules; false if any was refused. */
static bool with_rules(const char *const *rules, size_t n)
{
	policy_clear(&pol);
	for (size_t i = 0; i < n; i++)
		if (policy_add(&pol, rules[i]) < 0) {
			printf("#   rule '%s' refused\n", rules[i]);
			return false;
		}
	return true;
}
#define RULES(...)                                                             \
	with_rules((const char *const[]){ __VA_ARGS__ },                       \
		   ELEMENTSOF(((const char *const[]){ __VA_ARGS__ })))

static struct peer unix_peer(uid_t uid, gid_t gid, const gid_t *groups, size_t n)
{
	struct peer p = { .uid = uid, .gid = gid, .n_groups = n };

	if (n)
		memcpy(p.groups, groups, n * sizeof(gid_t));
	snprintf(p.identity, sizeof(p.identity), "uid:%u", (unsigned)uid);
	return p;
}

static struct peer tls_peer(const char *cn)
{
	struct peer p;

	peer_from_cn(cn, "192.0.2.1:40000", &p);
	return p;
}

UNIT_TEST(uid)
{
	struct peer u1000 = unix_peer(1000, 1000, NULL, 0);
	struct peer u1001 = unix_peer(1001, 1000, NULL, 0);

	CHECK("uid:1000 parses", RULES("uid:1000"));
	CHECK("uid:1000 admits uid 1000", policy_admits(&pol, &u1000));
	CHECK("uid:1000 refuses uid 1001", !policy_admits(&pol, &u1001));
	CHECK("uid:1000 grants every key", policy_allows_key(&pol, &u1000, "a") &&
						   policy_allows_key(&pol, &u1000, "b"));
	CHECK("uid:1000 grants no key to uid 1001",
	      !policy_allows_key(&pol, &u1001, "a"));
	/* A uid rule says nothing of a group of the same number. */
	struct peer g1000 = unix_peer(1002, 1000, (gid_t[]){ 1000 }, 1);
	CHECK("uid:1000 refuses gid 1000 of another uid", !policy_admits(&pol, &g1000));
	/* Nor of a TLS peer, whose uid is -1 and whose cn is "1000". */
	struct peer cn = tls_peer("1000");
	CHECK("uid:1000 refuses cn 1000", !policy_admits(&pol, &cn));

	CHECK("uid:0 parses", RULES("uid:0"));
	struct peer root = unix_peer(0, 0, NULL, 0);
	CHECK("uid:0 admits root", policy_admits(&pol, &root));
	CHECK("uid:0 refuses uid 1000", !policy_admits(&pol, &u1000));
}

UNIT_TEST(gid)
{
	struct peer primary = unix_peer(1000, 2000, NULL, 0);
	struct peer supp = unix_peer(1001, 100, (gid_t[]){ 5, 2000, 7 }, 3);
	struct peer none = unix_peer(1002, 100, (gid_t[]){ 5, 2001, 7 }, 3);
	struct peer uid_only = unix_peer(2000, 100, NULL, 0);

	CHECK("gid:2000 parses", RULES("gid:2000"));
	CHECK("gid:2000 admits primary group 2000", policy_admits(&pol, &primary));
	CHECK("gid:2000 admits supplementary group 2000", policy_admits(&pol, &supp));
	CHECK("gid:2000 refuses groups 100,5,2001,7", !policy_admits(&pol, &none));
	CHECK("gid:2000 refuses uid 2000 not in the group",
	      !policy_admits(&pol, &uid_only));
	CHECK("gid:2000 grants the supplementary member every key",
	      policy_allows_key(&pol, &supp, "any"));
	CHECK("gid:2000 grants no key outside the group",
	      !policy_allows_key(&pol, &none, "any"));
	/* The last of PEER_MAX_GROUPS counts as much as the first. */
	gid_t many[PEER_MAX_GROUPS];
	for (size_t i = 0; i < PEER_MAX_GROUPS; i++)
		many[i] = (gid_t)(3000 + i);
	many[PEER_MAX_GROUPS - 1] = 2000;
	struct peer last = unix_peer(1003, 100, many, PEER_MAX_GROUPS);
	CHECK("gid:2000 admits it as the 64th supplementary group",
	      policy_admits(&pol, &last));
	last.n_groups--;
	CHECK("gid:2000 refuses it past n_groups", !policy_admits(&pol, &last));
}

UNIT_TEST(names)
{
	struct passwd *pw = getpwnam("root");
	struct group *gr = getgrnam("root");
	struct peer root = unix_peer(0, 0, NULL, 0);
	struct peer other = unix_peer(1000, 1000, NULL, 0);
	struct peer in_root_group = unix_peer(1000, 1000, (gid_t[]){ 0 }, 1);

	if (!CHECK("passwd and group know root", pw && gr))
		return;
	CHECK("user:root parses", RULES("user:root"));
	CHECK("user:root is a uid rule", pol.rules[0].kind == RULE_UID &&
						 pol.rules[0].id == pw->pw_uid);
	CHECK("user:root admits uid 0", policy_admits(&pol, &root));
	CHECK("user:root refuses uid 1000", !policy_admits(&pol, &other));
	CHECK("user:root refuses uid 1000 in group root",
	      !policy_admits(&pol, &in_root_group));

	CHECK("group:root parses", RULES("group:root"));
	CHECK("group:root is a gid rule", pol.rules[0].kind == RULE_GID &&
						  pol.rules[0].id == gr->gr_gid);
	CHECK("group:root admits a supplementary member",
	      policy_admits(&pol, &in_root_group));
	CHECK("group:root refuses uid 1000 outside it", !policy_admits(&pol, &other));

	policy_clear(&pol);
	CHECK_EQ("user:<unknown> -> ENOENT",
		 policy_add(&pol, "user:modsign-no-such-user"), -ENOENT);
	CHECK_EQ("group:<unknown> -> ENOENT",
		 policy_add(&pol, "group:modsign-no-such-group"), -ENOENT);
	CHECK_EQ("unknown names add no rule", pol.n, 0);
}

UNIT_TEST(cn)
{
	struct peer b1 = tls_peer("builder-1");
	struct peer b2 = tls_peer("builder-2");
	struct peer prefix = tls_peer("builder-10");
	struct peer upper = tls_peer("Builder-1");
	/* A UNIX peer is never matched by a cn rule, even with no name. */
	struct peer local = unix_peer(0, 0, NULL, 0);

	CHECK("cn:builder-1 parses", RULES("cn:builder-1"));
	CHECK("cn:builder-1 admits cn builder-1", policy_admits(&pol, &b1));
	CHECK("cn:builder-1 refuses cn builder-2", !policy_admits(&pol, &b2));
	CHECK("cn:builder-1 refuses cn builder-10", !policy_admits(&pol, &prefix));
	CHECK("cn:builder-1 refuses cn Builder-1 (exact case)",
	      !policy_admits(&pol, &upper));
	CHECK("cn:builder-1 refuses a UNIX peer", !policy_admits(&pol, &local));

	/* A TLS peer is never matched by a UNIX rule: its uid is not 0. */
	CHECK("uid:0 and gid:0 parse", RULES("uid:0", "gid:0"));
	struct peer cn_root = tls_peer("root");
	CHECK("uid:0, gid:0 refuse a TLS peer", !policy_admits(&pol, &cn_root));

	/* Names as long as a peer's CN may be, and one byte more. */
	char rule[PEER_MAX_CN + 8], cn[PEER_MAX_CN];
	memset(cn, 'a', sizeof(cn) - 1);
	cn[sizeof(cn) - 1] = '\0';
	snprintf(rule, sizeof(rule), "cn:%s", cn);
	struct peer longest = tls_peer(cn);
	CHECK("cn of 255 bytes parses", RULES(rule));
	CHECK("cn of 255 bytes admits its peer", policy_admits(&pol, &longest));
	snprintf(rule, sizeof(rule), "cn:%sa", cn);
	policy_clear(&pol);
	CHECK_EQ("cn of 256 bytes -> EINVAL", policy_add(&pol, rule), -EINVAL);

	/* The quoted form the log shows is not a rule: it would name the
	 * certificate whose name holds the quotes.  A quote inside is. */
	policy_clear(&pol);
	CHECK_EQ("cn:\"a b\" (the log's form) -> EDOM", policy_add(&pol, "cn:\"a b\""), -EDOM);
	CHECK("cn:a b and cn:b\"1 parse", RULES("cn:a b", "cn:b\"1"));
}

/* A TLS peer whose certificate has these fingerprints and serial. */
static struct peer pinned_peer(const char *cn, char fp, char issuer_fp, const char *serial)
{
	struct peer p = tls_peer(cn);

	memset(p.cert.sha256, fp, 64);
	memset(p.cert.issuer_sha256, issuer_fp, 64);
	snprintf(p.cert.serial, sizeof(p.cert.serial), "%s", serial);
	return p;
}

#define FP_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define FP_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define FP_C "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc"

/* Pins: the re-issued builder's new certificate is admitted, the stolen
 * old one of the same name is not; a name minted by another CA is not. */
UNIT_TEST(pins)
{
	struct peer now = pinned_peer("builder-1", 'a', 'c', "1003");
	struct peer stolen = pinned_peer("builder-1", 'b', 'c', "1002");
	struct peer other_ca = pinned_peer("builder-1", 'b', 'b', "1003");
	struct peer unread = tls_peer("builder-1"); /* no certificate details */

	CHECK("sha256:A/cn:builder-1 parses", RULES("sha256:" FP_A "/cn:builder-1=dist"));
	CHECK("the pinned certificate is admitted", policy_admits(&pol, &now));
	CHECK("the pinned certificate gets its keys", policy_allows_key(&pol, &now, "dist"));
	CHECK("the same name's other certificate is refused", !policy_admits(&pol, &stolen));
	CHECK("no key for the other certificate", !policy_allows_key(&pol, &stolen, "dist"));
	CHECK("a peer with no certificate details is refused", !policy_admits(&pol, &unread));

	CHECK("fingerprints in upper case with colons parse",
	      RULES("sha256:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:AA:"
		    "AA:AA:AA:AA:AA:AA:AA:AA:AA:AA/cn:builder-1"));
	CHECK("... and match the lower-case fingerprint", policy_admits(&pol, &now));

	CHECK("issuer-sha256:C/cn:builder-1 parses", RULES("issuer-sha256:" FP_C "/cn:builder-1"));
	CHECK("a builder of the pinned issuer is admitted", policy_admits(&pol, &now));
	CHECK("the name from another issuer is refused", !policy_admits(&pol, &other_ca));

	CHECK("serial:0x1003 is refused (hex digits only)",
	      !RULES("issuer-sha256:" FP_C "/serial:0x1003/cn:builder-1"));
	CHECK("serial:001003 with issuer parses",
	      RULES("serial:00:10:03/issuer-sha256:" FP_C "/cn:builder-1"));
	CHECK("serial 1003 of the issuer is admitted", policy_admits(&pol, &now));
	CHECK("serial 1002 of the issuer is refused", !policy_admits(&pol, &stolen));
	CHECK("serial 1003 of another issuer is refused", !policy_admits(&pol, &other_ca));

	/* The cn still has to match: a pin narrows a cn: rule, never widens it. */
	CHECK("sha256:A/cn:builder-2 parses", RULES("sha256:" FP_A "/cn:builder-2"));
	CHECK("a pinned certificate of another name is refused", !policy_admits(&pol, &now));

	/* A CN may hold what a pin looks like: only the head is read as pins. */
	CHECK("cn:sha256:x/y parses as a name", RULES("cn:sha256:x/y"));
	struct peer odd = tls_peer("sha256:x/y");
	CHECK("... and names that peer", policy_admits(&pol, &odd));

	static const char *const bad[] = {
		"sha256:" FP_A "/uid:0", "sha256:" FP_A "/user:root", "sha256:" FP_A,
		"sha256:" FP_A "/", "sha256:" FP_A "cn:x", "sha256:abc/cn:x",
		"sha256:" FP_A "a/cn:x", "sha256:" FP_A "/sha256:" FP_B "/cn:x",
		"serial:1003/cn:x", "serial:/issuer-sha256:" FP_C "/cn:x",
		"serial:10g3/issuer-sha256:" FP_C "/cn:x",
		"serial:000000000000000000000000000000000000000001/issuer-sha256:" FP_C "/cn:x",
		"issuer-sha256:" FP_C "/cn:", "sha256::" FP_A "/cn:x",
	};
	char name[200];

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		policy_clear(&pol);
		snprintf(name, sizeof(name), "rule '%.150s' -> EINVAL", bad[i]);
		CHECK_EQ(name, policy_add(&pol, bad[i]), -EINVAL);
	}
}

UNIT_TEST(grants)
{
	struct peer u = unix_peer(1000, 1000, (gid_t[]){ 3000 }, 1);
	struct peer u2 = unix_peer(1001, 1001, NULL, 0);
	struct peer b = tls_peer("ci");

	CHECK("uid:1000=prod,test parses", RULES("uid:1000=prod,test"));
	CHECK("its keys are kept", pol.rules[0].n_keys == 2 &&
					   strcmp(pol.rules[0].keys[0], "prod") == 0 &&
					   strcmp(pol.rules[0].keys[1], "test") == 0);
	CHECK("uid:1000=prod,test admits uid 1000", policy_admits(&pol, &u));
	CHECK("uid:1000=prod,test grants prod", policy_allows_key(&pol, &u, "prod"));
	CHECK("uid:1000=prod,test grants test", policy_allows_key(&pol, &u, "test"));
	CHECK("uid:1000=prod,test refuses key other",
	      !policy_allows_key(&pol, &u, "other"));
	CHECK("uid:1000=prod,test refuses key pro (no prefix match)",
	      !policy_allows_key(&pol, &u, "pro"));
	CHECK("uid:1000=prod,test refuses key prod,test",
	      !policy_allows_key(&pol, &u, "prod,test"));
	CHECK("uid:1000=prod,test refuses key Prod", !policy_allows_key(&pol, &u, "Prod"));
	CHECK("uid:1000=prod,test refuses prod to uid 1001",
	      !policy_allows_key(&pol, &u2, "prod"));

	/* Grants of several matching rules add up. */
	CHECK("uid:1000=prod and gid:3000=test parse",
	      RULES("uid:1000=prod", "gid:3000=test"));
	CHECK("the uid rule grants prod", policy_allows_key(&pol, &u, "prod"));
	CHECK("the group rule grants test", policy_allows_key(&pol, &u, "test"));
	CHECK("neither grants other", !policy_allows_key(&pol, &u, "other"));
	u.n_groups = 0;
	CHECK("out of group 3000, test is refused", !policy_allows_key(&pol, &u, "test"));
	CHECK("out of group 3000, prod is still granted",
	      policy_allows_key(&pol, &u, "prod"));

	/* A rule without keys next to one with keys: every key. */
	CHECK("uid:1000=prod and uid:1000 parse", RULES("uid:1000=prod", "uid:1000"));
	CHECK("an unrestricted rule grants other", policy_allows_key(&pol, &u, "other"));

	CHECK("cn:ci=release parses", RULES("cn:ci=release"));
	CHECK("cn:ci=release grants release", policy_allows_key(&pol, &b, "release"));
	CHECK("cn:ci=release refuses test", !policy_allows_key(&pol, &b, "test"));

	/* Empty list items are skipped; a list of none is malformed. */
	CHECK("uid:1000=,a,,b, parses", RULES("uid:1000=,a,,b,"));
	CHECK("empty items are dropped", pol.rules[0].n_keys == 2);
	CHECK("...and grant nothing", !policy_allows_key(&pol, &u, ""));

	/* POLICY_MAX_KEYS names, and one more. */
	char list[POLICY_MAX_KEYS * 4 + 16];
	size_t len = (size_t)snprintf(list, sizeof(list), "uid:1000=");
	for (unsigned i = 0; i < POLICY_MAX_KEYS; i++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%sk%u",
					i ? "," : "", i);
	CHECK("64 keys in one rule parse", RULES(list));
	CHECK("the 64th is granted",
	      policy_allows_key(&pol, &u, "k63") && !policy_allows_key(&pol, &u, "k64"));
	snprintf(list + len, sizeof(list) - len, ",k64");
	policy_clear(&pol);
	CHECK_EQ("65 keys in one rule -> E2BIG", policy_add(&pol, list), -E2BIG);
}

UNIT_TEST(malformed)
{
	static const char *const bad[] = {
		"", "uid", "uid:", "uid:-1", "uid:+1", "uid: 1", "uid:1 ", "uid:0x10",
		"uid:1000a", "uid:4294967295", "gid:4294967295", "gid:", "gid:abc",
		"user:", "group:", "cn:", "cn", "name:root", "UID:0", "uid=0",
		"uid:1000=", "uid:1000=,", "uid:1000=,,", ":1000", "1000",
		"gid:99999999999999999999",
	};
	char name[96];

	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		policy_clear(&pol);
		snprintf(name, sizeof(name), "rule '%s' -> EINVAL", bad[i]);
		CHECK_EQ(name, policy_add(&pol, bad[i]), -EINVAL);
	}
	policy_clear(&pol);
	CHECK_EQ("refused rules add nothing", pol.n, 0);
	/* The largest: (uid_t)-1 is "no uid" (a TLS peer's), refused above. */
	CHECK("uid:4294967294 parses", RULES("uid:4294967294"));
	/* A refused rule leaves the ones before it. */
	policy_add(&pol, "uid:x");
	CHECK_EQ("a refused rule keeps the others", pol.n, 1);
	CHECK("the text of a rule is kept for logs",
	      strcmp(pol.rules[0].text, "uid:4294967294") == 0);

	policy_clear(&pol);
	char rule[32];
	int r = 0;
	for (unsigned i = 0; i < POLICY_MAX_RULES && r == 0; i++) {
		snprintf(rule, sizeof(rule), "uid:%u", 10000 + i);
		r = policy_add(&pol, rule);
	}
	CHECK("256 rules fit", r == 0 && pol.n == POLICY_MAX_RULES);
	CHECK_EQ("the 257th -> E2BIG", policy_add(&pol, "uid:1"), -E2BIG);
	struct peer last = unix_peer(10255, 1, NULL, 0), past = unix_peer(1, 1, NULL, 0);
	CHECK("the 256th rule admits", policy_admits(&pol, &last));
	CHECK("the refused 257th does not", !policy_admits(&pol, &past));
}

UNIT_TEST(default)
{
	struct peer root = unix_peer(0, 0, NULL, 0);
	struct peer self = unix_peer(geteuid(), getegid(), NULL, 0);
	struct peer other = unix_peer(geteuid() == 0 ? 1000 : 0xfffe, 1000, NULL, 0);
	struct peer root_group = unix_peer(1000, 0, (gid_t[]){ 0 }, 1);
	struct peer cn_root = tls_peer("root");

	policy_clear(&pol);
	policy_default(&pol);
	CHECK_EQ("default: uid:0 and, if not root, our own uid", pol.n,
		 geteuid() == 0 ? 1 : 2);
	CHECK("default rule is uid:0", strcmp(pol.rules[0].text, "uid:0") == 0 &&
					      pol.rules[0].kind == RULE_UID &&
					      !pol.rules[0].keys);
	CHECK("default admits root, every key",
	      policy_admits(&pol, &root) && policy_allows_key(&pol, &root, "any"));
	CHECK("default admits the daemon's own uid", policy_admits(&pol, &self));
	CHECK("default refuses another uid", !policy_admits(&pol, &other) &&
						     !policy_allows_key(&pol, &other, "any"));
	CHECK("default refuses group root", !policy_admits(&pol, &root_group));
	CHECK("default refuses every TLS peer", !policy_admits(&pol, &cn_root));

	/* With allow rules the default is not added (options_reload_allow()
	 * adds it only to an empty policy): root is refused unless named. */
	CHECK("uid:1000 alone parses", RULES("uid:1000"));
	CHECK("with an allow rule, root is refused", !policy_admits(&pol, &root));
	CHECK("cn:x alone parses", RULES("cn:x"));
	CHECK("with only TLS rules, root is refused", !policy_admits(&pol, &root));
}

UNIT_TEST(move)
{
	struct policy fresh = { 0 };
	struct peer u = unix_peer(1000, 1000, NULL, 0), v = unix_peer(1001, 1, NULL, 0);

	CHECK("uid:1001 in the old policy", RULES("uid:1001"));
	CHECK("uid:1000=k in the fresh one", policy_add(&fresh, "uid:1000=k") == 0);
	policy_move(&pol, &fresh);
	CHECK("policy_move: the fresh rules apply", policy_allows_key(&pol, &u, "k"));
	CHECK("policy_move: the old ones are gone", !policy_admits(&pol, &v));
	CHECK_EQ("policy_move: the source ends empty", fresh.n, 0);
	policy_clear(&fresh); /* nothing left to free twice */
}

/* The identity and description the daemon puts in its refusals:
 * "permission denied: key K is not granted to IDENTITY" and
 * "permission denied: IDENTITY is not named by the policy". */
UNIT_TEST(peers)
{
	_cleanup_(closep) int a = -1, b = -1;
	int sv[2];
	struct peer p;
	char want[64], longest[PEER_MAX_CN];

	if (!CHECK("socketpair", socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0))
		return;
	a = sv[0];
	b = sv[1];
	CHECK_EQ("peer_from_socket returns 0", peer_from_socket(a, &p), 0);
	CHECK("peer_from_socket: our uid, gid and pid",
	      p.uid == geteuid() && p.gid == getegid() && p.pid == getpid() && !p.tls);
	snprintf(want, sizeof(want), "uid:%u", (unsigned)geteuid());
	CHECK("peer_from_socket: identity uid:N", strcmp(p.identity, want) == 0);
	snprintf(want, sizeof(want), "uid=%u pid=%d", (unsigned)geteuid(), (int)getpid());
	CHECK("peer_from_socket: desc uid=N pid=P", strcmp(p.desc, want) == 0);
	_cleanup_(closep) int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
	CHECK_EQ("peer_from_socket: not a socket -> ENOTSOCK",
		 peer_from_socket(null, &p), -ENOTSOCK);

	peer_from_cn("builder-1", "[2001:db8::1]:4433", &p);
	CHECK("peer_from_cn: tls, no uid or gid",
	      p.tls && p.uid == (uid_t)-1 && p.gid == (gid_t)-1 && p.n_groups == 0);
	CHECK("peer_from_cn: identity cn:NAME", strcmp(p.identity, "cn:builder-1") == 0);
	CHECK("peer_from_cn: desc cn=NAME addr=ADDR",
	      strcmp(p.desc, "cn=builder-1 addr=[2001:db8::1]:4433") == 0);

	/* A name cannot forge the address field after it (issue 28, 8);
	 * the policy still compares its bytes. */
	peer_from_cn("builder-1 addr=10.9.9.9:1", "127.0.0.1:60202", &p);
	CHECK("peer_from_cn: a name with a field in it is quoted",
	      strcmp(p.desc, "cn=\"builder-1 addr=10.9.9.9:1\" addr=127.0.0.1:60202") == 0 &&
		      strcmp(p.identity, "cn:\"builder-1 addr=10.9.9.9:1\"") == 0 &&
		      strcmp(p.cn, "builder-1 addr=10.9.9.9:1") == 0);
	memset(longest, '"', sizeof(longest) - 1);
	longest[sizeof(longest) - 1] = '\0';
	peer_from_cn(longest, "127.0.0.1:1", &p);
	CHECK("peer_from_cn: the longest name, all quotes, is quoted whole",
	      strlen(p.identity) == 3 + 2 + 2 * strlen(longest) &&
		      p.identity[strlen(p.identity) - 1] == '"' &&
		      strstr(p.desc, "\" addr=127.0.0.1:1") != NULL);
}

UNIT_MAIN()
