/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * C2SP signed-note, the Ed25519 algorithm only (signature type 0x01): the
 * format Go's golang.org/x/mod/sumdb/note reads, so that checkpoints can
 * be checked by an implementation that is not ours.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <openssl/evp.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "note.h"
#include "util.h"

#define ALG_ED25519 0x01
#define ED25519_LEN 32u
#define SIG_LEN 64u
static const char em_dash[] = "\xe2\x80\x94 "; /* U+2014 and a space */

DEFINE_TRIVIAL_CLEANUP_FUNC(EVP_MD_CTX *, EVP_MD_CTX_free);

int note_name_valid(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > NOTE_MAX_NAME || !utf8_is_valid(name))
		return 0;
	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		if (*p <= ' ' || *p == '+' || *p == 0x7f)
			return 0;
	return 1;
}

static int key_hash(const char *name, const uint8_t pub[ED25519_LEN], uint32_t *ret)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	uint8_t alg = ALG_ED25519, md[32];

	if (!ctx)
		return -ENOMEM;
	if (!EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) ||
	    !EVP_DigestUpdate(ctx, name, strlen(name)) || !EVP_DigestUpdate(ctx, "\n", 1) ||
	    !EVP_DigestUpdate(ctx, &alg, 1) || !EVP_DigestUpdate(ctx, pub, ED25519_LEN) ||
	    !EVP_DigestFinal_ex(ctx, md, NULL))
		return -EIO;
	*ret = (uint32_t)md[0] << 24 | (uint32_t)md[1] << 16 | (uint32_t)md[2] << 8 | md[3];
	return 0;
}

static int raw_public(EVP_PKEY *key, uint8_t pub[ED25519_LEN])
{
	size_t len = ED25519_LEN;

	if (EVP_PKEY_get_base_id(key) != EVP_PKEY_ED25519 ||
	    !EVP_PKEY_get_raw_public_key(key, pub, &len) || len != ED25519_LEN)
		return -EINVAL;
	return 0;
}

int note_vkey(const char *name, EVP_PKEY *key, char **ret)
{
	_cleanup_(freep) char *b64 = NULL;
	uint8_t blob[1 + ED25519_LEN];
	uint32_t hash;
	int r;

	if (!note_name_valid(name))
		return -EINVAL;
	blob[0] = ALG_ED25519;
	r = raw_public(key, blob + 1);
	if (r < 0)
		return r;
	r = key_hash(name, blob + 1, &hash);
	if (r < 0)
		return r;
	r = base64_encode(blob, sizeof(blob), &b64);
	if (r < 0)
		return r;
	return asprintf(ret, "%s+%08x+%s", name, hash, b64) < 0 ? -ENOMEM : 0;
}

void note_verifier_done(struct note_verifier *v)
{
	free(v->name);
	EVP_PKEY_free(v->pub);
	*v = (struct note_verifier){ 0 };
}

int note_verifier_parse(const char *vkey, struct note_verifier *ret)
{
	_cleanup_(freep) char *name = NULL;
	_cleanup_(freep) uint8_t *blob = NULL;
	const char *p1 = strchr(vkey, '+'), *p2 = p1 ? strchr(p1 + 1, '+') : NULL;
	char hex[9];
	size_t blob_len;
	uint32_t hash, want;
	EVP_PKEY *pub;
	int r;

	if (!p1 || !p2 || p2 - p1 != 9)
		return -EINVAL;
	name = strndup(vkey, p1 - vkey);
	if (!name)
		return -ENOMEM;
	memcpy(hex, p1 + 1, 8);
	hex[8] = '\0';
	if (!note_name_valid(name) || strspn(hex, "0123456789abcdef") != 8)
		return -EINVAL;
	want = (uint32_t)strtoul(hex, NULL, 16);
	r = base64_decode(p2 + 1, &blob, &blob_len);
	if (r < 0)
		return r == -ENOMEM ? r : -EINVAL;
	if (blob_len != 1 + ED25519_LEN || blob[0] != ALG_ED25519)
		return -EINVAL;
	r = key_hash(name, blob + 1, &hash);
	if (r < 0)
		return r;
	if (hash != want)
		return -EINVAL;
	pub = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, blob + 1, ED25519_LEN);
	if (!pub)
		return -EINVAL;
	*ret = (struct note_verifier){ .name = TAKE_PTR(name), .hash = hash, .pub = pub };
	return 0;
}

/* A note's text: well-formed UTF-8 ending in '\n', no other control
 * character than '\n', no empty line (it would end the text). */
static bool text_valid(const char *text)
{
	size_t n = strlen(text);

	if (n == 0 || text[n - 1] != '\n' || !utf8_is_valid(text) || strstr(text, "\n\n") ||
	    text[0] == '\n')
		return false;
	for (const unsigned char *p = (const unsigned char *)text; *p; p++)
		if ((*p < ' ' && *p != '\n') || *p == 0x7f)
			return false;
	return true;
}

static int ed25519(EVP_PKEY *key, const char *text, uint8_t *sig, bool sign)
{
	_cleanup_(EVP_MD_CTX_freep) EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	size_t len = SIG_LEN;

	if (!ctx)
		return -ENOMEM;
	if (sign)
		return EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
				       EVP_DigestSign(ctx, sig, &len, (const uint8_t *)text,
						      strlen(text)) == 1 && len == SIG_LEN ?
			       0 : -EIO;
	if (EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) != 1)
		return -EIO;
	return EVP_DigestVerify(ctx, sig, SIG_LEN, (const uint8_t *)text, strlen(text)) == 1 ?
		       0 : -EKEYREJECTED;
}

int note_sign(const char *text, const char *name, EVP_PKEY *key, char **ret)
{
	_cleanup_(freep) char *b64 = NULL;
	uint8_t pub[ED25519_LEN], blob[4 + SIG_LEN];
	uint32_t hash;
	int r;

	if (!text_valid(text) || !note_name_valid(name))
		return -EINVAL;
	r = raw_public(key, pub);
	if (r < 0)
		return r;
	r = key_hash(name, pub, &hash);
	if (r < 0)
		return r;
	blob[0] = hash >> 24, blob[1] = hash >> 16, blob[2] = hash >> 8, blob[3] = hash;
	r = ed25519(key, text, blob + 4, true);
	if (r < 0)
		return r;
	r = base64_encode(blob, sizeof(blob), &b64);
	if (r < 0)
		return r;
	return asprintf(ret, "%s\n%s%s %s\n", text, em_dash, name, b64) < 0 ? -ENOMEM : 0;
}

/* Check one signature line (without its '\n') against @v: 1 if it is
 * not @v's, 0 if it verifies, -EKEYREJECTED / -EBADMSG otherwise. */
static int check_line(const char *line, const char *text, const struct note_verifier *v)
{
	_cleanup_(freep) uint8_t *blob = NULL;
	const char *name = line + strlen(em_dash), *sp;
	size_t blob_len;
	uint32_t hash;

	if (strncmp(line, em_dash, strlen(em_dash)) != 0)
		return -EBADMSG;
	sp = strchr(name, ' ');
	if (!sp || sp == name)
		return -EBADMSG;
	if (base64_decode(sp + 1, &blob, &blob_len) < 0 || blob_len < 4)
		return -EBADMSG;
	hash = (uint32_t)blob[0] << 24 | (uint32_t)blob[1] << 16 | (uint32_t)blob[2] << 8 |
	       blob[3];
	if ((size_t)(sp - name) != strlen(v->name) || strncmp(name, v->name, sp - name) != 0 ||
	    hash != v->hash)
		return 1;
	if (blob_len != 4 + SIG_LEN)
		return -EKEYREJECTED;
	return ed25519(v->pub, text, blob + 4, false);
}

int note_open(const char *msg, const struct note_verifier *v, char **ret_text)
{
	_cleanup_(freep) char *text = NULL, *sigs = NULL;
	const char *split;
	int found = -ENOKEY;

	if (strlen(msg) > NOTE_MAX || !utf8_is_valid(msg))
		return -EBADMSG;
	/* The text has no empty line, so the first one ends it. */
	split = strstr(msg, "\n\n");
	if (!split)
		return -EBADMSG;
	text = strndup(msg, split - msg + 1);
	sigs = strdup(split + 2);
	if (!text || !sigs)
		return -ENOMEM;
	if (!text_valid(text) || !*sigs || sigs[strlen(sigs) - 1] != '\n')
		return -EBADMSG;
	for (char *line = sigs, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
		int r;

		*nl = '\0';
		r = check_line(line, text, v);
		if (r < 0)
			return r;
		if (r == 0)
			found = 0;
	}
	if (found < 0)
		return found;
	*ret_text = TAKE_PTR(text);
	return 0;
}
