/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * modsig_parse() and modsig_trailer() against the kernel's mod_check_sig()
 * rules.  Each valid trailer has a corrupted twin that must be refused.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "modsig.h"
#include "unit.h"

#define BODY_LEN 100u
#define SIG_LEN 50u
#define FILE_LEN (BODY_LEN + SIG_LEN + MODSIG_TRAILER_LEN)

/* Offsets inside the 12-byte struct module_signature. */
enum { OFF_ALGO, OFF_HASH, OFF_ID_TYPE, OFF_SIGNER_LEN, OFF_KEY_ID_LEN,
       OFF_PAD0, OFF_PAD1, OFF_PAD2, OFF_SIG_LEN };

/* body | fake signature | trailer, in @file (FILE_LEN bytes). */
static void make_signed(uint8_t file[FILE_LEN])
{
	for (size_t i = 0; i < BODY_LEN + SIG_LEN; i++)
		file[i] = (uint8_t)(i * 7 + 1);
	if (modsig_trailer(SIG_LEN, file + BODY_LEN + SIG_LEN) < 0)
		memset(file, 0, FILE_LEN);
}

static uint8_t *ms_of(uint8_t file[FILE_LEN])
{
	return file + FILE_LEN - MODSIG_TRAILER_LEN;
}

static void set_sig_len(uint8_t file[FILE_LEN], uint32_t v)
{
	uint8_t *p = ms_of(file) + OFF_SIG_LEN;

	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

UNIT_TEST(unsigned)
{
	static const uint8_t plain[] = "\177ELF plain module without signature";
	const size_t len = sizeof(plain) - 1;
	struct modsig_info mi;
	uint8_t none[1] = { 0 };
	int r;

	r = modsig_parse(plain, len, len, &mi);
	CHECK_EQ("modsig unsigned returns 0", r, 0);
	CHECK_EQ("modsig unsigned body_len == file_len", mi.body_len, len);
	CHECK("modsig unsigned sig_off/sig_len 0", mi.sig_off == 0 && mi.sig_len == 0);

	/* Only the last bytes are given: still unsigned, body is the file. */
	r = modsig_parse(plain + len - 10, 10, 5000, &mi);
	CHECK("modsig unsigned short tail of big file",
	      r == 0 && mi.body_len == 5000 && mi.sig_len == 0);

	r = modsig_parse(none, 0, 0, &mi);
	CHECK("modsig empty file is unsigned", r == 0 && mi.body_len == 0);

	/* Twin: the magic alone, with no room for the trailer. */
	r = modsig_parse((const uint8_t *)MODSIG_MAGIC, MODSIG_MAGIC_LEN,
			 MODSIG_MAGIC_LEN, &mi);
	CHECK_EQ("modsig magic only -> EBADMSG", r, -EBADMSG);
}

UNIT_TEST(trailer_layout)
{
	static const uint8_t want_hdr[12] = { 0, 0, 2, 0, 0, 0, 0, 0,
					      0x00, 0x00, 0x12, 0x34 };
	uint8_t t[MODSIG_TRAILER_LEN], u[MODSIG_TRAILER_LEN];

	CHECK_EQ("modsig trailer length 40", MODSIG_TRAILER_LEN, 40);
	CHECK_EQ("modsig_trailer 0x1234 returns 0", modsig_trailer(0x1234, t), 0);
	CHECK("modsig trailer header bytes", memcmp(t, want_hdr, 12) == 0);
	CHECK("modsig trailer magic bytes",
	      memcmp(t + 12, "~Module signature appended~\n", 28) == 0);

	/* Twin: another length changes exactly the big-endian length. */
	CHECK_EQ("modsig_trailer 0x1235 returns 0", modsig_trailer(0x1235, u), 0);
	CHECK("modsig trailer differs only in sig_len low byte",
	      memcmp(t, u, 11) == 0 && t[11] == 0x34 && u[11] == 0x35 &&
		      memcmp(t + 12, u + 12, 28) == 0);

	CHECK_EQ("modsig_trailer 1 ok", modsig_trailer(1, t), 0);
	CHECK_EQ("modsig_trailer MAX_SIG ok", modsig_trailer(MODSIG_MAX_SIG, t), 0);
	CHECK("modsig_trailer MAX_SIG big-endian",
	      t[8] == 0 && t[9] == 0x01 && t[10] == 0 && t[11] == 0);
	CHECK("modsig_trailer 0 rejected", modsig_trailer(0, t) < 0);
	CHECK("modsig_trailer MAX_SIG+1 rejected",
	      modsig_trailer(MODSIG_MAX_SIG + 1, t) < 0);
	CHECK("modsig_trailer 2^32+1 rejected",
	      modsig_trailer((size_t)UINT32_MAX + 2, t) < 0);
}

UNIT_TEST(valid)
{
	uint8_t file[FILE_LEN];
	struct modsig_info mi;
	int r;

	make_signed(file);
	r = modsig_parse(file, FILE_LEN, FILE_LEN, &mi);
	CHECK_EQ("modsig valid whole file returns 1", r, 1);
	CHECK_EQ("modsig valid body_len", mi.body_len, BODY_LEN);
	CHECK_EQ("modsig valid sig_off", mi.sig_off, BODY_LEN);
	CHECK_EQ("modsig valid sig_len", mi.sig_len, SIG_LEN);

	/* The same from only the trailer bytes. */
	mi = (struct modsig_info){ 0 };
	r = modsig_parse(ms_of(file), MODSIG_TRAILER_LEN, FILE_LEN, &mi);
	CHECK("modsig valid from trailer-only tail",
	      r == 1 && mi.body_len == BODY_LEN && mi.sig_off == BODY_LEN &&
		      mi.sig_len == SIG_LEN);

	/* Twin: the tail is shorter than the trailer but ends in the magic. */
	r = modsig_parse(file + FILE_LEN - MODSIG_MAGIC_LEN - 4,
			 MODSIG_MAGIC_LEN + 4, FILE_LEN, &mi);
	CHECK_EQ("modsig tail shorter than trailer -> EBADMSG", r, -EBADMSG);

	/* Twin: one byte of the magic changed makes it unsigned. */
	file[FILE_LEN - 2] ^= 0x20;
	r = modsig_parse(file, FILE_LEN, FILE_LEN, &mi);
	CHECK("modsig broken magic -> unsigned",
	      r == 0 && mi.body_len == FILE_LEN && mi.sig_len == 0);

	/* A tail longer than the file is a caller error. */
	make_signed(file);
	r = modsig_parse(file, FILE_LEN, FILE_LEN - 1, &mi);
	CHECK_EQ("modsig tail_len > file_len -> EINVAL", r, -EINVAL);
}

UNIT_TEST(sig_len)
{
	uint8_t file[FILE_LEN];
	struct modsig_info mi;
	const uint32_t room = FILE_LEN - MODSIG_TRAILER_LEN; /* body + sig */
	int r;

	make_signed(file);
	set_sig_len(file, 0);
	CHECK_EQ("modsig sig_len 0 -> EBADMSG",
		 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -EBADMSG);

	/* mod_check_sig(): sig_len >= file_len - trailer is refused ... */
	set_sig_len(file, room);
	CHECK_EQ("modsig sig_len == file_len - trailer -> EBADMSG",
		 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -EBADMSG);
	set_sig_len(file, room + 1);
	CHECK_EQ("modsig sig_len > file_len - trailer -> EBADMSG",
		 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -EBADMSG);
	set_sig_len(file, UINT32_MAX);
	CHECK_EQ("modsig sig_len 0xffffffff -> EBADMSG",
		 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -EBADMSG);

	/* ... its twin, one byte less, is the largest accepted (body 1). */
	set_sig_len(file, room - 1);
	r = modsig_parse(file, FILE_LEN, FILE_LEN, &mi);
	CHECK("modsig sig_len == file_len - trailer - 1 accepted",
	      r == 1 && mi.body_len == 1 && mi.sig_off == 1 &&
		      mi.sig_len == room - 1);
}

UNIT_TEST(fields)
{
	static const struct {
		size_t off;
		const char *name;
	} fields[] = {
		{ OFF_ALGO, "modsig algo != 0 -> EBADMSG" },
		{ OFF_HASH, "modsig hash != 0 -> EBADMSG" },
		{ OFF_SIGNER_LEN, "modsig signer_len != 0 -> EBADMSG" },
		{ OFF_KEY_ID_LEN, "modsig key_id_len != 0 -> EBADMSG" },
		{ OFF_PAD0, "modsig pad[0] != 0 -> EBADMSG" },
		{ OFF_PAD1, "modsig pad[1] != 0 -> EBADMSG" },
		{ OFF_PAD2, "modsig pad[2] != 0 -> EBADMSG" },
	};
	uint8_t file[FILE_LEN];
	struct modsig_info mi;

	for (size_t i = 0; i < ELEMENTSOF(fields); i++) {
		make_signed(file);
		ms_of(file)[fields[i].off] = 1;
		CHECK_EQ(fields[i].name,
			 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -EBADMSG);
	}

	make_signed(file);
	ms_of(file)[OFF_ID_TYPE] = 1; /* PKEY_ID_X509 */
	CHECK_EQ("modsig id_type 1 -> ENOPKG",
		 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -ENOPKG);
	ms_of(file)[OFF_ID_TYPE] = 0; /* PKEY_ID_PGP */
	CHECK_EQ("modsig id_type 0 -> ENOPKG",
		 modsig_parse(file, FILE_LEN, FILE_LEN, &mi), -ENOPKG);
}

UNIT_TEST(short_file)
{
	uint8_t buf[MODSIG_TRAILER_LEN + 1];
	struct modsig_info mi;

	/* Magic present, file shorter than the whole trailer. */
	memcpy(buf, "abc", 3);
	memcpy(buf + 3, MODSIG_MAGIC, MODSIG_MAGIC_LEN);
	CHECK_EQ("modsig magic in file shorter than trailer -> EBADMSG",
		 modsig_parse(buf, 3 + MODSIG_MAGIC_LEN, 3 + MODSIG_MAGIC_LEN, &mi),
		 -EBADMSG);

	/* Exactly a trailer and nothing before it: no room for a signature. */
	if (modsig_trailer(1, buf) == 0)
		CHECK_EQ("modsig file == trailer -> EBADMSG",
			 modsig_parse(buf, MODSIG_TRAILER_LEN, MODSIG_TRAILER_LEN, &mi),
			 -EBADMSG);
	/* One byte more: the single byte can only be the signature, sig_len
	 * 1 >= 41 - 40, still refused as the kernel does. */
	buf[0] = 0x30;
	if (modsig_trailer(1, buf + 1) == 0)
		CHECK_EQ("modsig trailer + 1 byte -> EBADMSG",
			 modsig_parse(buf, sizeof(buf), sizeof(buf), &mi), -EBADMSG);
}

UNIT_MAIN()
