/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The transparency log's parsers, which read what a log's publisher
 * serves (lib/tlog.c, lib/note.c, lib/tlog-entry.c): a signed note, a
 * checkpoint, an entry bundle, an entry.  The first byte picks one; each
 * checks its contract: a note opens only with the text it starts with, a
 * checkpoint parses only in its one canonical spelling, a bundle's
 * entries tile it exactly, an entry's hex is lower-case.
 */
#include <ctype.h>
#include <errno.h>
#include <openssl/evp.h>

#include "fuzz.h"
#include "note.h"
#include "tlog-entry.h"
#include "tlog.h"
#include "util.h"

/* The verifier of the seed corpus's notes (a fixed test key, seed 0x01..). */
static const struct note_verifier *verifier(void)
{
	static struct note_verifier v;
	static int done;

	if (!done) {
		uint8_t seed[32];
		_cleanup_(freep) char *vkey = NULL;
		EVP_PKEY *k;

		for (unsigned i = 0; i < sizeof(seed); i++)
			seed[i] = (uint8_t)(i + 1);
		k = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, sizeof(seed));
		FUZZ_ASSERT(k && note_vkey("fuzz.example/log", k, &vkey) == 0);
		FUZZ_ASSERT(note_verifier_parse(vkey, &v) == 0);
		EVP_PKEY_free(k);
		done = 1;
	}
	return &v;
}

static void check_note(const char *msg)
{
	_cleanup_(freep) char *text = NULL;

	if (note_open(msg, verifier(), &text) < 0)
		return;
	FUZZ_ASSERT(strncmp(msg, text, strlen(text)) == 0);
	FUZZ_ASSERT(msg[strlen(text)] == '\n');
}

static void check_checkpoint(const char *s)
{
	_cleanup_(freep) char *origin = NULL, *again = NULL;
	uint8_t root[TLOG_HASH_LEN];
	uint64_t size;

	if (tlog_checkpoint_parse(s, &origin, &size, root) < 0)
		return;
	FUZZ_ASSERT(tlog_checkpoint_format(origin, size, root, &again) == 0);
	FUZZ_ASSERT(strncmp(s, again, strlen(again)) == 0);
}

static void check_bundle(const uint8_t *d, size_t n)
{
	const uint8_t *e;
	size_t pos = 0, len, sum = 0;
	int r;

	while ((r = tlog_bundle_next(d, n, &pos, &e, &len)) > 0) {
		FUZZ_ASSERT(e >= d && e + len <= d + n);
		sum += 2 + len;
	}
	FUZZ_ASSERT(r == 0 ? sum == n : r == -EBADMSG);
}

static void check_entry(const uint8_t *d, size_t n)
{
	struct tlog_entry_view v;

	if (tlog_entry_parse(d, n, &v) < 0)
		return;
	for (const char *p = v.digest; *p; p++)
		FUZZ_ASSERT(isdigit((unsigned char)*p) || (*p >= 'a' && *p <= 'f'));
	FUZZ_ASSERT(strlen(v.sig_sha256) <= 64);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	_cleanup_(freep) char *s = NULL;

	fuzz_canary(data, size);
	if (size < 1 || size > 64 * 1024)
		return 0;
	s = strndup((const char *)data + 1, size - 1);
	if (!s)
		return 0;
	switch (data[0] % 4) {
	case 0: check_note(s); break;
	case 1: check_checkpoint(s); break;
	case 2: check_bundle(data + 1, size - 1); break;
	case 3: check_entry(data + 1, size - 1); break;
	}
	return 0;
}
