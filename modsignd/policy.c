/* SPDX-License-Identifier: GPL-2.0-or-later */
#define _GNU_SOURCE
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "policy.h"
#include "util.h"

static int add_rule(struct policy *p, enum rule_kind kind, unsigned long id,
		    const char *text)
{
	if (p->n >= POLICY_MAX_RULES)
		return -E2BIG;
	p->rules[p->n].text = strdup(text);
	if (!p->rules[p->n].text)
		return -ENOMEM;
	p->rules[p->n].kind = kind;
	p->rules[p->n].id = id;
	p->n++;
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

int policy_add(struct policy *p, const char *rule)
{
	const char *v = strchr(rule, ':');
	unsigned long id;
	int r;

	if (!v || !v[1])
		return -EINVAL;
	v++;
	if (strncmp(rule, "uid:", 4) == 0) {
		r = parse_uint(v, (uid_t)-2, &id);
		return r < 0 ? -EINVAL : add_rule(p, RULE_UID, id, rule);
	}
	if (strncmp(rule, "gid:", 4) == 0) {
		r = parse_uint(v, (gid_t)-2, &id);
		return r < 0 ? -EINVAL : add_rule(p, RULE_GID, id, rule);
	}
	if (strncmp(rule, "user:", 5) == 0) {
		r = lookup_user(v, &id);
		return r < 0 ? r : add_rule(p, RULE_UID, id, rule);
	}
	if (strncmp(rule, "group:", 6) == 0) {
		r = lookup_group(v, &id);
		return r < 0 ? r : add_rule(p, RULE_GID, id, rule);
	}
	return -EINVAL;
}

void policy_default(struct policy *p)
{
	char text[32];

	add_rule(p, RULE_UID, 0, "uid:0");
	if (geteuid() != 0) {
		snprintf(text, sizeof(text), "uid:%u", (unsigned)geteuid());
		add_rule(p, RULE_UID, geteuid(), text);
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
	/* A peer in more groups than we keep is judged on the first ones. */
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) == 0) {
		ret->n_groups = len / sizeof(gid_t);
		memcpy(ret->groups, groups, ret->n_groups * sizeof(gid_t));
	}
	snprintf(ret->desc, sizeof(ret->desc), "uid=%u pid=%d",
		 (unsigned)cred.uid, (int)cred.pid);
	return 0;
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

bool policy_allows(const struct policy *p, const struct peer *peer)
{
	for (size_t i = 0; i < p->n; i++) {
		const struct rule *r = &p->rules[i];

		if (r->kind == RULE_UID && r->id == peer->uid)
			return true;
		if (r->kind == RULE_GID && in_groups(peer, r->id))
			return true;
	}
	return false;
}

void policy_clear(struct policy *p)
{
	for (size_t i = 0; i < p->n; i++)
		free(p->rules[i].text);
	p->n = 0;
}
