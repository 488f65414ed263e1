/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <stdio.h>
#include <string.h>

#include "audit.h"
#include "log.h"
#include "util.h"

/* Module names come from the peer: keep control characters out of logs. */
static void sanitize(const char *in, char *out, size_t size)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < size; i++)
		out[i] = (in[i] < 0x20 || in[i] == 0x7f || in[i] == '"') ? '?' : in[i];
	out[i] = '\0';
}

static void record(const struct peer *peer, const char *key, const char *key_id,
		   const EVP_MD *md, const uint8_t *digest, size_t digest_len,
		   const char *module, const char *result)
{
	_cleanup_(freep) char *hex = NULL;
	char mod[256];

	sanitize(module ?: "", mod, sizeof(mod));
	if (hex_encode(digest, digest_len, &hex) < 0)
		hex = NULL;
	log_msg(strcmp(result, "ok") == 0 ? LOG_INFO : LOG_WARNING,
		"audit: result=\"%s\" peer=\"%s\" key=%s key_id=%s hash=%s digest=%s module=\"%s\"",
		result, peer->desc, key ?: "-", key_id ?: "-",
		digest_name(md) ?: "-", hex ?: "-", mod);
}

void audit_sign(const struct peer *peer, const struct job *j, const char *result)
{
	record(peer, j->key->name, j->key->key_id, j->md, j->digest,
	       j->digest_len, j->module, result);
}

void audit_refused(const struct peer *peer, const struct request *req,
		   const char *reason)
{
	record(peer, req->key, NULL, req->md, req->digest, req->digest_len,
	       req->module, reason);
}
