/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_TLOG_ENTRY_H
#define MODSIGN_TLOG_ENTRY_H

/*
 * The record a transparency log holds per issued signature: one JSON
 * object, keys in this fixed order, no whitespace, '/' not escaped
 * (docs/TRANSPARENCY.md, "Entries"):
 *
 *   {"index":N,"time":"YYYY-MM-DDTHH:MM:SSZ","key":"NAME","key_id":"HEX",
 *    "cert_sha256":"HEX","hash":"sha256","digest":"HEX","module":"NAME",
 *    ["program":"PROG",]"client":"IDENTITY",["client_cert_sha256":"HEX","client_serial":"HEX",
 *    "client_issuer":"DN","client_issuer_sha256":"HEX",]"sig_sha256":"HEX"}
 *
 * The client_ fields are those of a TLS client's certificate (modsignd's
 * struct peer_cert), present only when client_cert_sha256 is given: a
 * UNIX client's entry is the same bytes as before they existed, and a
 * reader that does not know them (tlog_entry_parse()) skips them.
 * "program" likewise is there only when the request named one (the
 * PKCS#11 module does: the calling tool's name, the client's word).
 * "digest" is the module's digest as it was signed, "sig_sha256" the
 * SHA-256 of the PKCS#7 signature as it is appended to the module: an
 * auditor recomputes both from a signed .ko.  Strings that were not
 * well-formed UTF-8 carry U+FFFD in place of each bad byte.  Never logs.
 */

#include <json-c/json.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

struct tlog_entry {
	uint64_t index;
	time_t time;
	const char *key, *key_id, *cert_sha256, *hash;
	const uint8_t *digest;
	size_t digest_len;
	const char *module, *client;
	const char *program; /* NULL: none named, not recorded */
	/* NULL: not a TLS client, none of the four recorded */
	const char *client_cert_sha256, *client_serial, *client_issuer, *client_issuer_sha256;
	const uint8_t *sig; /* the PKCS#7 DER; its SHA-256 is recorded */
	size_t sig_len;
};

/* The canonical record of @e: a new string of *@ret_len bytes (at most
 * TLOG_MAX_ENTRY, else -E2BIG). */
int tlog_entry_format(const struct tlog_entry *e, char **ret, size_t *ret_len);

/* What an auditor matches in an entry (lower-case hex strings). */
struct tlog_entry_view {
	uint64_t index;
	char hash[16];
	char digest[129];
	char sig_sha256[65];
};

/* Parse an entry of @len bytes.  -EBADMSG if it is not one. */
int tlog_entry_parse(const uint8_t *data, size_t len, struct tlog_entry_view *ret);

#endif
