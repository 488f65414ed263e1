/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_NOTE_H
#define MODSIGN_NOTE_H

/*
 * C2SP signed notes with Ed25519 signatures: the envelope of a
 * transparency log's checkpoint (docs/TRANSPARENCY.md).  A note is its
 * text (UTF-8, ending in '\n'), an empty line, then one line per
 * signature, "\u2014 NAME BASE64(KEYHASH4 || SIG)\n", where the key hash
 * is the first 4 bytes of SHA-256(NAME || "\n" || 0x01 || PUBKEY).  A
 * verifier key is "NAME+HEX8(KEYHASH)+BASE64(0x01 || PUBKEY)".  Never
 * logs; returns 0 or a negative errno.
 */

#include <openssl/evp.h>
#include <stdint.h>

#define NOTE_MAX 16384u     /* a checkpoint is about 200 bytes */
#define NOTE_MAX_NAME 256u

struct note_verifier {
	char *name;
	uint32_t hash;
	EVP_PKEY *pub; /* Ed25519 */
};

/* Whether @name may name a key: non-empty, printable, no space, no '+'. */
int note_name_valid(const char *name);

/* The verifier key of Ed25519 @key under @name, a new string. -EINVAL for
 * a bad name or a key that is not Ed25519. */
int note_vkey(const char *name, EVP_PKEY *key, char **ret);

/* Parse a verifier key.  -EINVAL if it is not one (or not Ed25519). */
int note_verifier_parse(const char *vkey, struct note_verifier *ret);
/* Release what note_verifier_parse() filled; accepts a zeroed one. */
void note_verifier_done(struct note_verifier *v);

/* @text (ending in '\n') signed by Ed25519 @key as @name: a new note. */
int note_sign(const char *text, const char *name, EVP_PKEY *key, char **ret);

/*
 * Check @msg, a whole note, against @v: returns 0 with *@ret_text the
 * text (new string) when it carries a good signature by @v; -EBADMSG when
 * @msg is not a note; -ENOKEY when no signature line names @v's key (name
 * and hash); -EKEYREJECTED when one does and does not verify.
 */
int note_open(const char *msg, const struct note_verifier *v, char **ret_text);

#endif
