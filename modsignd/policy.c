/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

static void rule_free(struct rule *r)
{
	for (size_t i = 0; i < r->n_keys; i++)
		free(r->keys[i]);
	free(r->keys);
	free(r->cn);
	free(r->text);
	*r = (struct rule){ 0 };
}

/* "k1,k2" into r->keys. */
static int parse_keys(struct rule *r, const char *list)
{
	_cleanup_(freep) char *copy = strdup(list);
	char *save = NULL;

	if (!copy)
		return -ENOMEM;
	r->keys = calloc(POLICY_MAX_KEYS, sizeof(char *));
	if (!r->keys)
		return -ENOMEM;
	for (char *k = strtok_r(copy, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		if (r->n_keys >= POLICY_MAX_KEYS)
			return -E2BIG;
		r->keys[r->n_keys] = strdup(k);
		if (!r->keys[r->n_keys++])
			return -ENOMEM;
	}
	return r->n_keys > 0 ? 0 : -EINVAL;
}

static int add_rule(struct policy *p, struct rule *r, const char *text)
{
	if (p->n >= POLICY_MAX_RULES)
		return -E2BIG;
	r->text = strdup(text);
	if (!r->text)
		return -ENOMEM;
	p->rules[p->n++] = *r;
	*r = (struct rule){ 0 };
	return 0;
}

static int lookup_user(const char *name, unsigned long *ret)
{
	struct passwd *pw;

	errno = 0;
	pw = getpwnam(name); /* start-up only, single-threaded */
	if (!pw)
		return errno ? -errno : -ENOENT;
	*ret = pw->pw_uid;
	return 0;
}

static int lookup_group(const char *name, unsigned long *ret)
{
	struct group *gr;

	errno = 0;
	gr = getgrnam(name);
	if (!gr)
		return errno ? -errno : -ENOENT;
	*ret = gr->gr_gid;
	return 0;
}

/*
 * The pins a cn: rule may carry, one row each; both the rule's and the
 * peer's values are a struct peer_cert, so one offset serves parsing and
 * matching.  Values are hex: lengths are digits, ':' between them skipped
 * (openssl x509 -fingerprint prints them so).
 */
static const struct pin_kind {
	const char *prefix;
	size_t off, min, max;
} pin_kinds[] = {
	{ "sha256:", offsetof(struct peer_cert, sha256), 64, 64 },
	{ "issuer-sha256:", offsetof(struct peer_cert, issuer_sha256), 64, 64 },
	{ "serial:", offsetof(struct peer_cert, serial), 1, PEER_MAX_SERIAL - 1 },
};

static char *pin_field(struct peer_cert *c, const struct pin_kind *k)
{
	return (char *)c + k->off;
}

static const char *pin_value(const struct peer_cert *c, const struct pin_kind *k)
{
	return (const char *)c + k->off;
}

/* The hex at @s, up to '/', lower-cased into @out (of k->max + 1 bytes).
 * Returns the length consumed, or -EINVAL. */
static int parse_pin_hex(const char *s, const struct pin_kind *k, char *out)
{
	const char *p = s;
	size_t n = 0;

	for (; *p && *p != '/'; p++) {
		if (*p == ':' && p > s && p[1] != '/' && p[1] != ':')
			continue;
		if (!isxdigit((unsigned char)*p) || n >= k->max)
			return -EINVAL;
		out[n++] = (char)tolower((unsigned char)*p);
	}
	out[n] = '\0';
	if (*p != '/' || n < k->min)
		return -EINVAL;
	return (int)(p - s);
}

/* Serial numbers compare as numbers: 00a1 is a1. */
static void strip_leading_zeros(char *hex)
{
	size_t z = strspn(hex, "0");

	if (z && !hex[z])
		z--;
	memmove(hex, hex + z, strlen(hex + z) + 1);
}

/* The "KIND:HEX/" pins at the head of *@id, consumed. */
static int parse_pins(struct rule *r, const char **id)
{
	for (;;) {
		const struct pin_kind *k = NULL;
		int n;

		for (size_t i = 0; i < ELEMENTSOF(pin_kinds) && !k; i++)
			if (strncmp(*id, pin_kinds[i].prefix, strlen(pin_kinds[i].prefix)) == 0)
				k = &pin_kinds[i];
		if (!k)
			break;
		*id += strlen(k->prefix);
		if (*pin_field(&r->pin, k)) /* twice */
			return -EINVAL;
		n = parse_pin_hex(*id, k, pin_field(&r->pin, k));
		if (n < 0)
			return n;
		*id += n + 1;
	}
	strip_leading_zeros(r->pin.serial);
	if (*r->pin.serial && !*r->pin.issuer_sha256)
		return -EINVAL;
	return 0;
}

static bool pins_match(const struct peer_cert *pin, const struct peer_cert *cert)
{
	for (size_t i = 0; i < ELEMENTSOF(pin_kinds); i++) {
		const char *want = pin_value(pin, &pin_kinds[i]);

		if (*want && strcmp(want, pin_value(cert, &pin_kinds[i])) != 0)
			return false;
	}
	return true;
}

static bool has_pins(const struct peer_cert *pin)
{
	for (size_t i = 0; i < ELEMENTSOF(pin_kinds); i++)
		if (*pin_value(pin, &pin_kinds[i]))
			return true;
	return false;
}

static int parse_identity(struct rule *r, const char *id)
{
	const char *v;
	int res = parse_pins(r, &id);

	if (res < 0)
		return res;
	if (has_pins(&r->pin) && strncmp(id, "cn:", 3) != 0)
		return -EINVAL;
	v = strchr(id, ':');
	if (!v || !v[1])
		return -EINVAL;
	v++;
	if (strncmp(id, "uid:", 4) == 0 || strncmp(id, "gid:", 4) == 0) {
		r->kind = id[0] == 'u' ? RULE_UID : RULE_GID;
		res = parse_uint(v, (uid_t)-2, &r->id);
		return res < 0 ? -EINVAL : 0;
	}
	if (strncmp(id, "user:", 5) == 0) {
		r->kind = RULE_UID;
		return lookup_user(v, &r->id);
	}
	if (strncmp(id, "group:", 6) == 0) {
		r->kind = RULE_GID;
		return lookup_group(v, &r->id);
	}
	if (strncmp(id, "cn:", 3) == 0 && strlen(v) < PEER_MAX_CN) {
		/* The log shows a name that is not plain quoted (cn:"a b"):
		 * copied into a rule, that text would name another
		 * certificate, one whose name holds the quotes. */
		if (v[0] == '"')
			return -EDOM;
		r->kind = RULE_CN;
		r->cn = strdup(v);
		return r->cn ? 0 : -ENOMEM;
	}
	return -EINVAL;
}

int policy_add(struct policy *p, const char *text)
{
	_cleanup_(freep) char *id = strdup(text);
	struct rule r = { 0 };
	char *eq;
	int res;

	if (!id)
		return -ENOMEM;
	eq = strchr(id, '=');
	if (eq)
		*eq = '\0';
	res = parse_identity(&r, id);
	if (res >= 0 && eq)
		res = parse_keys(&r, eq + 1);
	if (res >= 0)
		res = add_rule(p, &r, text);
	rule_free(&r);
	return res;
}

void policy_default(struct policy *p)
{
	char text[32];
	struct rule r = { .kind = RULE_UID, .id = 0 };

	add_rule(p, &r, "uid:0");
	if (geteuid() != 0) {
		snprintf(text, sizeof(text), "uid:%u", (unsigned)geteuid());
		r = (struct rule){ .kind = RULE_UID, .id = geteuid() };
		add_rule(p, &r, text);
	}
}

int peer_from_socket(int fd, struct peer *ret)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	gid_t groups[PEER_MAX_GROUPS];

	memset(ret, 0, sizeof(*ret));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return -errno;
	ret->pid = cred.pid;
	ret->uid = cred.uid;
	ret->gid = cred.gid;
	len = sizeof(groups);
	/* A peer in more groups than we keep is judged on its primary group. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
		ret->n_groups = len / sizeof(gid_t);
		memcpy(ret->groups, groups, ret->n_groups * sizeof(gid_t));
	}
	snprintf(ret->identity, sizeof(ret->identity), "uid:%u", (unsigned)cred.uid);
	snprintf(ret->desc, sizeof(ret->desc), "uid=%u pid=%d",
		 (unsigned)cred.uid, (int)cred.pid);
	return 0;
}

void peer_from_cn(const char *cn, const char *addr, struct peer *ret)
{
	char name[PEER_MAX_IDENTITY - 3];

	memset(ret, 0, sizeof(*ret));
	ret->tls = true;
	ret->uid = (uid_t)-1;
	ret->gid = (gid_t)-1;
	snprintf(ret->cn, sizeof(ret->cn), "%s", cn);
	/* A name too long to quote is not tls_peer_cn()'s; it is not shown
	 * cut, as a quote left open would take in the fields after it. */
	if (text_quote_name(ret->cn, name, sizeof(name)) < 0)
		snprintf(name, sizeof(name), "(unprintable)");
	snprintf(ret->identity, sizeof(ret->identity), "cn:%s", name);
	snprintf(ret->desc, sizeof(ret->desc), "cn=%s addr=%.56s", name, addr);
}

static bool in_groups(const struct peer *peer, unsigned long gid)
{
	if (peer->gid == gid)
		return true;
	for (size_t i = 0; i < peer->n_groups; i++)
		if (peer->groups[i] == gid)
			return true;
	return false;
}

static bool rule_matches(const struct rule *r, const struct peer *peer)
{
	if (peer->tls)
		return r->kind == RULE_CN && strcmp(r->cn, peer->cn) == 0 &&
		       pins_match(&r->pin, &peer->cert);
	if (r->kind == RULE_UID)
		return r->id == peer->uid;
	if (r->kind == RULE_GID)
		return in_groups(peer, r->id);
	return false;
}

bool policy_admits(const struct policy *p, const struct peer *peer)
{
	for (size_t i = 0; i < p->n; i++)
		if (rule_matches(&p->rules[i], peer))
			return true;
	return false;
}

static bool rule_grants(const struct rule *r, const char *key)
{
	if (!r->keys)
		return true;
	for (size_t i = 0; i < r->n_keys; i++)
		if (strcmp(r->keys[i], key) == 0)
			return true;
	return false;
}

bool policy_allows_key(const struct policy *p, const struct peer *peer,
		       const char *key)
{
	for (size_t i = 0; i < p->n; i++)
		if (rule_matches(&p->rules[i], peer) && rule_grants(&p->rules[i], key))
			return true;
	return false;
}

void policy_move(struct policy *to, struct policy *from)
{
	policy_clear(to);
	memcpy(to->rules, from->rules, from->n * sizeof(from->rules[0]));
	to->n = from->n;
	from->n = 0;
}

void policy_clear(struct policy *p)
{
	for (size_t i = 0; i < p->n; i++)
		rule_free(&p->rules[i]);
	p->n = 0;
}
