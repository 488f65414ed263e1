/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_POLICY_H
#define MODSIGND_POLICY_H

/*
 * Who may sign, and with which keys.  A rule is IDENTITY[=KEY,...] where
 * IDENTITY is uid:N, gid:N, user:NAME, group:NAME (UNIX peers, from
 * SO_PEERCRED and SO_PEERGROUPS) or cn:NAME (TLS peers, the common name of
 * their verified client certificate).  A cn: rule may be preceded by pins,
 * each PIN:HEX/ (hex digits, any case, ':' between them allowed):
 * sha256: the SHA-256 of the client certificate itself, issuer-sha256: of
 * the CA certificate that issued it in the verified chain, serial: its
 * serial number (only with issuer-sha256:, a serial alone means nothing
 * across CAs).  A pinned rule names only a certificate whose every pin
 * matches, so "sha256:AB12...EF/cn:builder-1=dist" admits builder-1's
 * current certificate and not an older one, stolen, of the same name.
 * Hex and '/' hold no '=', so the first '=' still ends the identity.
 * Without =KEYS a rule grants every key.  A peer no rule names is refused
 * at connect; a peer named by some rule is refused, per request, the keys
 * no matching rule grants.  The socket file's mode is a second fence,
 * never the only one.
 */

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define POLICY_MAX_RULES 256
#define POLICY_MAX_KEYS 64   /* keys named by one rule */
#define PEER_MAX_GROUPS 64
#define PEER_MAX_CN 256
/* "cn:" and a name as text_quote_name() writes it: a name tls_name_ok()
 * took has no controls, so quoted it is at most twice as long, plus two
 * quotes.  The description adds the address. */
#define PEER_MAX_IDENTITY (2 * PEER_MAX_CN + 8)
#define PEER_MAX_DESC (PEER_MAX_IDENTITY + 72)
#define PEER_SHA256_HEX 65 /* 64 hex digits and a NUL */
#define PEER_MAX_SERIAL 41 /* 20 octets (RFC 5280 4.1.2.2) in hex, a NUL */
#define PEER_MAX_ISSUER 256

/*
 * What identifies a TLS peer's certificate beyond its name, for pins and
 * the audit and transparency logs.  Hex is lower-case; "" where unknown.
 */
struct peer_cert {
	char sha256[PEER_SHA256_HEX];        /* of the client certificate's DER */
	char issuer_sha256[PEER_SHA256_HEX]; /* of its issuer's, "" if the verified
						chain is it alone */
	char serial[PEER_MAX_SERIAL];        /* no leading zeros */
	char issuer[PEER_MAX_ISSUER];        /* issuer DN, RFC 2253, non-ASCII and
						controls escaped as \XX; cut to fit */
};

enum rule_kind { RULE_UID, RULE_GID, RULE_CN };

struct rule {
	enum rule_kind kind;
	unsigned long id; /* uid or gid */
	char *cn;
	struct peer_cert pin; /* cn: rules; "" fields: not pinned, issuer unused */
	char **keys;      /* NULL: every key */
	size_t n_keys;
	char *text;       /* as given, for logs */
};

struct policy {
	struct rule rules[POLICY_MAX_RULES];
	size_t n;
};

struct peer {
	bool tls;
	pid_t pid;
	uid_t uid;
	gid_t gid;
	gid_t groups[PEER_MAX_GROUPS];
	size_t n_groups;
	char cn[PEER_MAX_CN];           /* the bytes the policy compares */
	struct peer_cert cert; /* TLS peers, once tls_peer_cert() filled it */
	/* For audit and logs: "uid:1000" or "cn:builder-1", a name that is not
	 * plain quoted (cn:"builder 1"); with pid or address, "cn=builder-1
	 * addr=10.0.0.7:53122". */
	char identity[PEER_MAX_IDENTITY];
	char desc[PEER_MAX_DESC];
};

/* Add a rule.  -EINVAL bad form (also: a pin that is not hex of its
 * length, a pin twice, pins before anything but cn:, serial: without
 * issuer-sha256:), -ENOENT unknown user or group, -E2BIG full, -EDOM a
 * cn: rule whose name begins with '"' (the quoted form the log shows,
 * text_quote_name(): a rule names the bytes, without quotes). */
int policy_add(struct policy *p, const char *rule);

/* With no rules: root and the daemon's own uid, all keys. */
void policy_default(struct policy *p);

/* Read the credentials of a connected UNIX socket. */
int peer_from_socket(int fd, struct peer *ret);

/* Fill the identity of a TLS peer whose certificate has common name @cn
 * (shorter than PEER_MAX_CN, free of controls: tls_peer_cn()'s), connected
 * from @addr ("host:port"); the name is quoted in identity and desc as
 * text_quote_name() says, so that no name reads as another field. */
void peer_from_cn(const char *cn, const char *addr, struct peer *ret);

/* Whether any rule names @peer. */
bool policy_admits(const struct policy *p, const struct peer *peer);

/* Whether a rule naming @peer grants @key (a key name). */
bool policy_allows_key(const struct policy *p, const struct peer *peer,
		       const char *key);

/* Move @from's rules into @to (cleared first); @from ends empty. */
void policy_move(struct policy *to, struct policy *from);

void policy_clear(struct policy *p);

#endif
