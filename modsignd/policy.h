/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_POLICY_H
#define MODSIGND_POLICY_H

/*
 * Who may sign.  Every UNIX connection is checked with SO_PEERCRED (and
 * SO_PEERGROUPS for supplementary groups) against the --allow rules; the
 * socket file's mode is a second fence, never the only one.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define POLICY_MAX_RULES 256
#define PEER_MAX_GROUPS 64

enum rule_kind { RULE_UID, RULE_GID };

struct rule {
	enum rule_kind kind;
	unsigned long id;
	char *text; /* as given, for logs */
};

struct policy {
	struct rule rules[POLICY_MAX_RULES];
	size_t n;
};

struct peer {
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t groups[PEER_MAX_GROUPS];
	size_t n_groups;
	char desc[96]; /* "uid=1000 pid=42", for logs and audit */
};

/* Add uid:N, gid:N, user:NAME or group:NAME.  -EINVAL bad form, -ENOENT unknown name. */
int policy_add(struct policy *p, const char *rule);

/* With no rules: root and the daemon's own uid. */
void policy_default(struct policy *p);

/* Read the credentials of a connected UNIX socket. */
int peer_from_socket(int fd, struct peer *ret);

/* Whether @peer may use the daemon. */
bool policy_allows(const struct policy *p, const struct peer *peer);

void policy_clear(struct policy *p);

#endif
