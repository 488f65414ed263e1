/* SPDX-License-Identifier: LGPL-2.1-or-later */
#define _GNU_SOURCE
/* lib/tlog.c and lib/note.c: RFC 6962 hashes against the reference test
 * data of Certificate Transparency (RFC 9162's), the tile arithmetic
 * against the plain recursive MTH, tile paths, checkpoints, and signed
 * notes against golang.org/x/mod/sumdb/note's example. */
#include <errno.h>
#include <openssl/evp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "note.h"
#include "tlog.h"
#include "tlog-entry.h"
#include "tlog-proof.h"
#include "unit.h"
#include "util.h"

static const char *hex(const uint8_t *h)
{
	static char buf[2 * TLOG_HASH_LEN + 1];

	for (unsigned i = 0; i < TLOG_HASH_LEN; i++)
		snprintf(buf + 2 * i, 3, "%02x", h[i]);
	return buf;
}

/* Certificate Transparency's reference leaves and the roots of their
 * first 1..8 (merkle_tree_test.cc, also in RFC 9162's test data). */
UNIT_TEST(rfc6962_vectors)
{
	static const struct {
		const char *data;
		size_t len;
	} leaves[] = {
		{ "", 0 },
		{ "\x00", 1 },
		{ "\x10", 1 },
		{ "\x20\x21", 2 },
		{ "\x30\x31", 2 },
		{ "\x40\x41\x42\x43", 4 },
		{ "\x50\x51\x52\x53\x54\x55\x56\x57", 8 },
		{ "\x60\x61\x62\x63\x64\x65\x66\x67\x68\x69\x6a\x6b\x6c\x6d\x6e\x6f", 16 },
	};
	static const char *roots[] = {
		"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
		"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
		"aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
		"d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
		"4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
		"76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
		"ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
		"5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328",
	};
	static struct tlog_tree t;
	uint8_t hashes[8][TLOG_HASH_LEN], root[TLOG_HASH_LEN];
	char name[64];

	memset(&t, 0, sizeof(t));
	tlog_mth(NULL, 0, root);
	CHECK("tlog empty tree root",
	      strcmp(hex(root), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855") == 0);
	for (size_t i = 0; i < ELEMENTSOF(leaves); i++) {
		tlog_leaf_hash(leaves[i].data, leaves[i].len, hashes[i]);
		tlog_mth(&hashes[0][0], i + 1, root);
		snprintf(name, sizeof(name), "tlog RFC 6962 root of %zu leaves", i + 1);
		if (!CHECK(name, strcmp(hex(root), roots[i]) == 0))
			printf("#   got %s\n", hex(root));
		CHECK_EQ("tlog append", tlog_tree_append(&t, hashes[i], NULL, NULL), 0);
		tlog_tree_root(&t, root);
		snprintf(name, sizeof(name), "tlog tiled root of %zu leaves", i + 1);
		CHECK(name, strcmp(hex(root), roots[i]) == 0);
	}
}

struct fulls {
	uint64_t n[TLOG_LEVELS];
	const uint8_t *leaves;
	bool level0_ok;
};

static int on_full(int level, uint64_t index, const uint8_t *hashes, void *userdata)
{
	struct fulls *f = userdata;

	if (index != f->n[level])
		f->level0_ok = false;
	f->n[level]++;
	if (level == 0 &&
	    memcmp(hashes, f->leaves + index * TLOG_TILE_BYTES, TLOG_TILE_BYTES) != 0)
		f->level0_ok = false;
	return 0;
}

/* The tiled tree against the plain MTH across tile and level boundaries
 * (255, 256, 257 leaves; 65535, 65536, 65537: a level-2 tile). */
UNIT_TEST(tiles_against_mth)
{
	static const uint64_t sizes[] = { 255, 256, 257, 511, 512, 1000, 65535, 65536, 65537, 66000 };
	const uint64_t max = 66000;
	_cleanup_(freep) uint8_t *leaves = malloc(max * TLOG_HASH_LEN);
	static struct tlog_tree t;
	struct fulls f = { .leaves = leaves, .level0_ok = true };
	uint8_t a[TLOG_HASH_LEN], b[TLOG_HASH_LEN];
	size_t next = 0;
	bool all = true;

	memset(&t, 0, sizeof(t));
	for (uint64_t i = 0; i < max; i++) {
		uint8_t data[8] = { i >> 56, i >> 48, i >> 40, i >> 32, i >> 24, i >> 16, i >> 8, i };

		tlog_leaf_hash(data, sizeof(data), leaves + i * TLOG_HASH_LEN);
		tlog_tree_append(&t, leaves + i * TLOG_HASH_LEN, on_full, &f);
		if (i + 1 <= 300 || (next < ELEMENTSOF(sizes) && i + 1 == sizes[next])) {
			tlog_tree_root(&t, a);
			tlog_mth(leaves, i + 1, b);
			if (memcmp(a, b, TLOG_HASH_LEN) != 0) {
				printf("#   roots differ at size %llu\n", (unsigned long long)i + 1);
				all = false;
			}
			if (next < ELEMENTSOF(sizes) && i + 1 == sizes[next])
				next++;
		}
	}
	CHECK("tlog tiled root equals MTH at every size checked", all);
	CHECK_EQ("tlog full level-0 tiles", f.n[0], max / 256);
	CHECK_EQ("tlog full level-1 tiles", f.n[1], 1);
	CHECK("tlog full tiles in order and equal to the leaves", f.level0_ok);
	CHECK_EQ("tlog partial width level 0", tlog_tree_width(&t, 0), max % 256);
	CHECK_EQ("tlog partial width level 1", tlog_tree_width(&t, 1), (max / 256) % 256);
	CHECK_EQ("tlog partial width level 2", tlog_tree_width(&t, 2), 1);

	/* A tree read back from its partial tiles (a restart) goes on as
	 * the one that was never stopped. */
	static struct tlog_tree back;
	memset(&back, 0, sizeof(back));
	back.size = t.size;
	memcpy(back.partial, t.partial, sizeof(t.partial));
	tlog_tree_load(&back);
	tlog_tree_root(&t, a);
	tlog_tree_root(&back, b);
	CHECK("tlog loaded tree has the same root", memcmp(a, b, TLOG_HASH_LEN) == 0);
	for (unsigned i = 0; i < 300; i++) {
		tlog_tree_append(&t, leaves + i * TLOG_HASH_LEN, NULL, NULL);
		tlog_tree_append(&back, leaves + i * TLOG_HASH_LEN, NULL, NULL);
	}
	tlog_tree_root(&t, a);
	tlog_tree_root(&back, b);
	CHECK("tlog loaded tree appends as the original", memcmp(a, b, TLOG_HASH_LEN) == 0);
}

UNIT_TEST(paths)
{
	char p[TLOG_MAX_PATH];

	CHECK("tlog path 0", tlog_tile_path(p, 0, 0, 0) == 0 && strcmp(p, "tile/0/000") == 0);
	CHECK("tlog path 1234067",
	      tlog_tile_path(p, 0, 1234067, 0) == 0 && strcmp(p, "tile/0/x001/x234/067") == 0);
	CHECK("tlog path 1000",
	      tlog_tile_path(p, 2, 1000, 0) == 0 && strcmp(p, "tile/2/x001/000") == 0);
	CHECK("tlog partial path",
	      tlog_tile_path(p, 1, 5, 7) == 0 && strcmp(p, "tile/1/005.p/7") == 0);
	CHECK("tlog entries path",
	      tlog_tile_path(p, TLOG_LEVEL_ENTRIES, 1234, 255) == 0 &&
		      strcmp(p, "tile/entries/x001/234.p/255") == 0);
	CHECK_EQ("tlog path width 256 refused", tlog_tile_path(p, 0, 0, 256), -EINVAL);
	CHECK("tlog path valid: full", tlog_tile_path_valid("tile/0/x001/x234/067"));
	CHECK("tlog path valid: partial entries", tlog_tile_path_valid("tile/entries/x001/234.p/255"));
	CHECK("tlog path valid: level 7", tlog_tile_path_valid("tile/7/000.p/1"));
	CHECK("tlog path invalid: ..", !tlog_tile_path_valid("tile/0/../../etc/passwd"));
	CHECK("tlog path invalid: level 8", !tlog_tile_path_valid("tile/8/000"));
	CHECK("tlog path invalid: width 256", !tlog_tile_path_valid("tile/0/000.p/256"));
	CHECK("tlog path invalid: width 0", !tlog_tile_path_valid("tile/0/000.p/0"));
	CHECK("tlog path invalid: short group", !tlog_tile_path_valid("tile/0/01"));
	CHECK("tlog path invalid: trailing", !tlog_tile_path_valid("tile/0/000/"));
	CHECK("tlog path invalid: checkpoint", !tlog_tile_path_valid("checkpoint"));
	CHECK("tlog path invalid: tmp", !tlog_tile_path_valid("tile/0/000.p/5.tmp"));
	CHECK_EQ("tlog path level 8 refused", tlog_tile_path(p, 8, 0, 0), -EINVAL);
}

/* tlog_tile_path_parse() gives back what tlog_tile_path() was given, and
 * only for the one spelling it writes. */
UNIT_TEST(path_parse)
{
	static const struct {
		int level;
		uint64_t index;
		unsigned width;
	} tiles[] = {
		{ 0, 0, 0 }, { 0, 1234067, 0 }, { 2, 1000, 0 }, { 1, 5, 7 },
		{ TLOG_LEVEL_ENTRIES, 1234, 255 }, { 7, 0, 1 }, { 0, UINT64_MAX, 0 },
	};
	char p[TLOG_MAX_PATH], name[64];
	uint64_t index = 42;
	unsigned width = 42;
	int level = 42;

	for (size_t i = 0; i < sizeof(tiles) / sizeof(tiles[0]); i++) {
		snprintf(name, sizeof(name), "tlog path parse round trip %zu", i);
		CHECK(name, tlog_tile_path(p, tiles[i].level, tiles[i].index, tiles[i].width) == 0 &&
			    tlog_tile_path_parse(p, &level, &index, &width) == 0 &&
			    level == tiles[i].level && index == tiles[i].index &&
			    width == tiles[i].width);
	}
	level = 42;
	CHECK_EQ("tlog path parse: another spelling of 1 refused",
		 tlog_tile_path_parse("tile/0/x000/001", &level, &index, &width), -EINVAL);
	CHECK_EQ("tlog path parse: past 2^64 refused",
		 tlog_tile_path_parse("tile/0/x018/x446/x744/x073/x709/x551/616", &level, &index,
				      &width), -EINVAL);
	CHECK_EQ("tlog path parse: outputs untouched on failure", level, 42);
}

UNIT_TEST(checkpoint)
{
	_cleanup_(freep) char *text = NULL, *origin = NULL, *o2 = NULL;
	uint8_t root[TLOG_HASH_LEN], back[TLOG_HASH_LEN];
	uint64_t size = 0;

	memset(root, 0xab, sizeof(root));
	CHECK("tlog checkpoint format", tlog_checkpoint_format("example.com/log", 42, root, &text) == 0 &&
	      strcmp(text, "example.com/log\n42\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n") == 0);
	CHECK("tlog checkpoint parse",
	      tlog_checkpoint_parse(text, &origin, &size, back) == 0 && size == 42 &&
		      strcmp(origin, "example.com/log") == 0 && memcmp(back, root, 32) == 0);
	CHECK_EQ("tlog checkpoint leading zero refused",
		 tlog_checkpoint_parse("o\n042\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6s=\n", &o2, &size, back),
		 -EBADMSG);
	CHECK_EQ("tlog checkpoint root with non-zero padding bits refused",
		 tlog_checkpoint_parse("o\n4\nq6urq6urq6urq6urq6urq6urq6urq6urq6urq6urq6t=\n", &o2, &size, back),
		 -EBADMSG);
	CHECK_EQ("tlog checkpoint short root refused",
		 tlog_checkpoint_parse("o\n4\nq6ur\n", &o2, &size, back), -EBADMSG);
	CHECK_EQ("tlog checkpoint missing line refused",
		 tlog_checkpoint_parse("o\n4\n", &o2, &size, back), -EBADMSG);
}

UNIT_TEST(bundle)
{
	static const uint8_t b[] = { 0, 2, 'h', 'i', 0, 0, 0, 1, 'x' };
	const uint8_t *e;
	size_t pos = 0, n;

	CHECK("tlog bundle first", tlog_bundle_next(b, sizeof(b), &pos, &e, &n) == 1 && n == 2 && memcmp(e, "hi", 2) == 0);
	CHECK("tlog bundle empty entry", tlog_bundle_next(b, sizeof(b), &pos, &e, &n) == 1 && n == 0);
	CHECK("tlog bundle third", tlog_bundle_next(b, sizeof(b), &pos, &e, &n) == 1 && n == 1);
	CHECK_EQ("tlog bundle end", tlog_bundle_next(b, sizeof(b), &pos, &e, &n), 0);
	pos = 0;
	CHECK_EQ("tlog bundle cut short", tlog_bundle_next(b, 3, &pos, &e, &n), -EBADMSG);
}

/* The length prefix can say 65,535: past TLOG_MAX_ENTRY it is refused
 * (issue 27: the daemon's buffer holds 256 entries of that bound). */
UNIT_TEST(bundle_bound)
{
	static uint8_t b[2 + TLOG_MAX_ENTRY + 1];
	const uint8_t *e;
	size_t pos = 0, n = 0;

	b[0] = (TLOG_MAX_ENTRY + 1) >> 8;
	b[1] = (TLOG_MAX_ENTRY + 1) & 0xff;
	CHECK_EQ("tlog bundle entry of TLOG_MAX_ENTRY + 1 refused",
		 tlog_bundle_next(b, sizeof(b), &pos, &e, &n), -EBADMSG);
	b[0] = TLOG_MAX_ENTRY >> 8;
	b[1] = TLOG_MAX_ENTRY & 0xff;
	pos = 0;
	CHECK("tlog bundle twin: entry of TLOG_MAX_ENTRY taken",
	      tlog_bundle_next(b, sizeof(b) - 1, &pos, &e, &n) == 1 && n == TLOG_MAX_ENTRY);
}

/* golang.org/x/mod/sumdb/note's example_test.go. */
UNIT_TEST(note_go_vector)
{
	static const char vkey[] = "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
	static const char text[] = "If you think cryptography is the answer to your problem,\n"
				   "then you don't know what your problem is.\n";
	static const char sig[] = "\xe2\x80\x94 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZInNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
	/* The private key of the example, "AYEKFALV...", after its 0x01. */
	static const char seed_b64[] = "gQoUAtUUbI2E8kQzMPVAgOv5juF9nHT2JS/F1ccoMXM=";
	_cleanup_(freep) char *msg = NULL, *bad = NULL, *opened = NULL, *mine = NULL, *vk = NULL;
	_cleanup_(freep) uint8_t *seed = NULL;
	struct note_verifier v = { 0 };
	size_t seed_len;
	EVP_PKEY *key;

	CHECK_EQ("note parse Go's vkey", note_verifier_parse(vkey, &v), 0);
	CHECK("note msg", asprintf(&msg, "%s\n%s", text, sig) > 0);
	CHECK("note opens Go's note", note_open(msg, &v, &opened) == 0 && strcmp(opened, text) == 0);
	bad = strdup(msg);
	bad[3] ^= 1;
	CHECK_EQ("note edited text rejected", note_open(bad, &v, &opened), -EKEYREJECTED);
	CHECK(".. seed", base64_decode(seed_b64, &seed, &seed_len) == 0 && seed_len == 32);
	key = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, seed, 32);
	CHECK("note vkey of the example key", key && note_vkey("PeterNeumann", key, &vk) == 0 &&
	      strcmp(vk, vkey) == 0);
	CHECK("note sign byte for byte as Go",
	      key && note_sign(text, "PeterNeumann", key, &mine) == 0 && strcmp(mine, msg) == 0);
	EVP_PKEY_free(key);
	note_verifier_done(&v);
}

UNIT_TEST(note_other_key)
{
	_cleanup_(freep) char *msg = NULL, *vk = NULL, *opened = NULL, *vk2 = NULL;
	struct note_verifier v = { 0 }, v2 = { 0 };
	EVP_PKEY *a = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	EVP_PKEY *b = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

	CHECK("note sign", note_sign("origin\n1\nAAAA\n", "origin", a, &msg) == 0);
	CHECK("note vkeys", note_vkey("origin", a, &vk) == 0 && note_vkey("origin", b, &vk2) == 0 &&
	      note_verifier_parse(vk, &v) == 0 && note_verifier_parse(vk2, &v2) == 0);
	CHECK_EQ("note own key opens", note_open(msg, &v, &opened), 0);
	CHECK_EQ("note another key's verifier finds no signature", note_open(msg, &v2, &opened), -ENOKEY);
	CHECK_EQ("note text with an empty line refused", note_sign("a\n\nb\n", "origin", a, &opened), -EINVAL);
	CHECK_EQ("note name with + refused", note_sign("a\n", "a+b", a, &opened), -EINVAL);
	CHECK_EQ("note vkey bad hash refused",
		 note_verifier_parse("PeterNeumann+c74f20a4+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW", &v2),
		 -EINVAL);
	note_verifier_done(&v);
	note_verifier_done(&v2);
	EVP_PKEY_free(a);
	EVP_PKEY_free(b);
}

/* Every proof of every leaf and every older size, in trees of 1..70
 * leaves (past 64: a tree that is not a power of two above one that is),
 * checked; and each with a tampered twin that must fail. */
UNIT_TEST(proofs)
{
	enum { MAX = 70 };
	uint8_t leaves[MAX][TLOG_HASH_LEN], proof[TLOG_PROOF_MAX][TLOG_HASH_LEN];
	uint8_t roots[MAX + 1][TLOG_HASH_LEN];
	bool good = true, twins = true, cons = true, cons_twins = true;
	size_t n;

	for (unsigned i = 0; i < MAX; i++) {
		uint8_t b = (uint8_t)i;
		tlog_leaf_hash(&b, 1, leaves[i]);
	}
	for (unsigned size = 1; size <= MAX; size++)
		tlog_mth(&leaves[0][0], size, roots[size]);
	for (unsigned size = 1; size <= MAX; size++) {
		for (unsigned i = 0; i < size; i++) {
			if (tlog_prove_inclusion(&leaves[0][0], size, i, proof, &n) < 0 ||
			    tlog_check_inclusion((const uint8_t(*)[32])proof, n, i, size, leaves[i], roots[size]) < 0)
				good = false;
			/* Twins: another leaf at that index, another index. */
			if (tlog_check_inclusion((const uint8_t(*)[32])proof, n, i, size, leaves[(i + 1) % MAX], roots[size]) == 0 ||
			    (size > 1 && tlog_check_inclusion((const uint8_t(*)[32])proof, n, (i + 1) % size, size, leaves[i], roots[size]) == 0))
				twins = false;
			if (n > 0) {
				proof[n - 1][0] ^= 1;
				if (tlog_check_inclusion((const uint8_t(*)[32])proof, n, i, size, leaves[i], roots[size]) == 0)
					twins = false;
			}
		}
		for (unsigned old = 1; old <= size; old++) {
			if (tlog_prove_consistency(&leaves[0][0], old, size, proof, &n) < 0 ||
			    tlog_check_consistency((const uint8_t(*)[32])proof, n, old, size, roots[old], roots[size]) < 0)
				cons = false;
			/* Twins: a fork (another old root), another old size. */
			uint8_t fork[TLOG_HASH_LEN];
			memcpy(fork, roots[old], TLOG_HASH_LEN);
			fork[0] ^= 1;
			if (tlog_check_consistency((const uint8_t(*)[32])proof, n, old, size, fork, roots[size]) == 0)
				cons_twins = false;
			if (old > 1 && old < size &&
			    tlog_check_consistency((const uint8_t(*)[32])proof, n, old - 1, size, roots[old - 1], roots[size]) == 0)
				cons_twins = false;
		}
	}
	CHECK("tlog inclusion proofs of every leaf of trees of 1..70 check", good);
	CHECK("tlog inclusion proofs refuse another leaf, index or hash", twins);
	CHECK("tlog consistency proofs of every older size check", cons);
	CHECK("tlog consistency proofs refuse another old root or size", cons_twins);
	CHECK_EQ("tlog inclusion index past the tree", tlog_prove_inclusion(&leaves[0][0], 5, 5, proof, &n), -EINVAL);
	CHECK_EQ("tlog consistency of a larger old tree", tlog_prove_consistency(&leaves[0][0], 6, 5, proof, &n), -EINVAL);
}

/* A UNIX client's entry is the bytes it always was; a TLS client's names
 * its certificate after "client"; a reader of either finds what it
 * matches (old logs stay verifiable, new ones verify with old readers). */
UNIT_TEST(entry_client_cert)
{
	static const uint8_t digest[32], sig[3] = { 1, 2, 3 };
	struct tlog_entry e = {
		.index = 7, .time = 0, .key = "default", .key_id = "ab", .cert_sha256 = "cd",
		.hash = "sha256", .digest = digest, .digest_len = sizeof(digest),
		.module = "foo.ko", .client = "uid:0", .sig = sig, .sig_len = sizeof(sig),
	};
	static const char unix_entry[] =
		"{\"index\":7,\"time\":\"1970-01-01T00:00:00Z\",\"key\":\"default\","
		"\"key_id\":\"ab\",\"cert_sha256\":\"cd\",\"hash\":\"sha256\",\"digest\":\""
		"0000000000000000000000000000000000000000000000000000000000000000\","
		"\"module\":\"foo.ko\",\"client\":\"uid:0\",\"sig_sha256\":\""
		"039058c6f2c0cb492c533b0a4d14ef77cc0f78abccced5287d84a1a2011cfb81\"}";
	_cleanup_(freep) char *a = NULL, *b = NULL;
	struct tlog_entry_view v;
	size_t len;

	CHECK("a UNIX client's entry formats", tlog_entry_format(&e, &a, &len) == 0);
	CHECK("... to the bytes of the entries before client_ fields",
	      a && strcmp(a, unix_entry) == 0);
	e.client = "cn:builder-1";
	e.client_cert_sha256 = "11";
	e.client_serial = "1001";
	e.client_issuer = "CN=sub-a";
	e.client_issuer_sha256 = "22";
	CHECK("a TLS client's entry formats", tlog_entry_format(&e, &b, &len) == 0);
	CHECK("... naming its certificate after the client",
	      b && strstr(b, "\"client\":\"cn:builder-1\",\"client_cert_sha256\":\"11\","
			     "\"client_serial\":\"1001\",\"client_issuer\":\"CN=sub-a\","
			     "\"client_issuer_sha256\":\"22\",\"sig_sha256\""));
	CHECK("... and parses", b && tlog_entry_parse((uint8_t *)b, len, &v) == 0 &&
				       v.index == 7 && strcmp(v.hash, "sha256") == 0);
}

/* "program" only when the request named one, right after "module": an
 * entry without it is the bytes it always was. */
UNIT_TEST(entry_program)
{
	static const uint8_t digest[32], sig[3] = { 1, 2, 3 };
	struct tlog_entry e = {
		.index = 7, .time = 0, .key = "default", .key_id = "ab", .cert_sha256 = "cd",
		.hash = "sha256", .digest = digest, .digest_len = sizeof(digest),
		.module = "pkcs11:object=rsa", .client = "uid:0", .sig = sig,
		.sig_len = sizeof(sig),
	};
	_cleanup_(freep) char *a = NULL, *b = NULL;
	struct tlog_entry_view v;
	size_t len = 0;

	CHECK("an entry without program formats", tlog_entry_format(&e, &a, &len) == 0);
	CHECK("... with no program in it", a && !strstr(a, "program"));
	e.program = "sign-file";
	CHECK("an entry with program formats", tlog_entry_format(&e, &b, &len) == 0);
	CHECK("... after the module",
	      b && strstr(b, "\"module\":\"pkcs11:object=rsa\",\"program\":\"sign-file\","
			     "\"client\":\"uid:0\""));
	CHECK("... and parses", b && tlog_entry_parse((uint8_t *)b, len, &v) == 0 && v.index == 7);
	/* Review 20, tried and held: a program that looks like the next
	 * field is escaped, one string; "client" is still the daemon's. */
	free(b);
	b = NULL;
	e.program = "a\",\"client\":\"uid:1";
	CHECK("a program with quotes formats", tlog_entry_format(&e, &b, &len) == 0);
	CHECK("... escaped, the client the entry's",
	      b && strstr(b, "\"program\":\"a\\\",\\\"client\\\":\\\"uid:1\",\"client\":\"uid:0\"") &&
		      tlog_entry_parse((uint8_t *)b, len, &v) == 0);
}

UNIT_MAIN()
