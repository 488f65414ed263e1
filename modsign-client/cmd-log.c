/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * log: the transparency log (docs/TRANSPARENCY.md).  "log vkey" and "log
 * checkpoint" ask the daemon; "log verify" audits, offline on a copy of
 * the log's directory (--dir) or online on the tiles the daemon serves.
 *
 * The audit re-builds the whole tree from the entry bundles with the
 * daemon's own code (lib/tlog.c) and compares every tile on the way: an
 * entry edited, removed, added or moved changes a leaf hash, hence a tile
 * and the root.  Consistency with an older checkpoint is the root of the
 * first OLD_SIZE leaves of that same re-built tree, so a log that was
 * forked, rewritten or rolled back since the older checkpoint fails.
 * Then, from the leaf hashes, the RFC 6962 proofs a client without the
 * whole log would be given (a module's inclusion, the consistency of the
 * older checkpoint) are made and checked against the checkpoints' roots
 * alone (lib/tlog-proof.c), and with --proofs written out for another
 * implementation to check (tests/tlog-go).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "client.h"
#include "commands.h"
#include "modfile.h"
#include "note.h"
#include "rpc.h"
#include "tlog-entry.h"
#include "tlog-proof.h"
#include "tlog.h"
#include "util.h"

#define MAX_MODULES 4096

struct checkpoint {
	char *origin;
	uint64_t size;
	uint8_t root[TLOG_HASH_LEN];
};

struct module {
	const char *path;
	char sig_sha256[65];
	struct modfile m;
	bool found;
	uint64_t index;
};

struct audit {
	int dfd;           /* offline: the copy of the log's directory */
	struct conn *conn; /* online: the daemon that serves it */
	struct tlog_tree *tree;
	uint8_t *bundle;
	const struct checkpoint *old; /* NULL: none */
	struct module *mods;
	size_t n_mods;
	uint8_t *leaves; /* every leaf hash, for the proofs */
	size_t leaves_cap;
	FILE *proofs;    /* --proofs: where the proofs checked are written */
	char why[512]; /* the one line that says why the audit failed */
};

/* ---- online: the daemon's "log" op ---------------------------------------- */

static int fetch(const struct global *g, const char *field, char **ret)
{
	_cleanup_(conn_closep) struct conn *c = NULL;
	struct rpc_error err;
	int r;

	if (client_connect(g, &c) < 0)
		return -ENOTCONN;
	r = strcmp(field, PROTO_F_VKEY) == 0 ? rpc_log_vkey(c, ret, &err) :
					       rpc_log_checkpoint(c, ret, &err);
	if (r < 0 && err.malformed)
		warn_msg("%s: no \"%s\" in the reply", conn_address(c), field);
	else if (r < 0)
		warn_msg("%s: %s", conn_address(c), err.why);
	return r;
}

static int print_field(const struct global *g, int argc, const char *field)
{
	_cleanup_(freep) char *v = NULL;

	if (argc != 1) {
		warn_msg("log %s takes no arguments", field);
		return EXIT_USAGE;
	}
	if (fetch(g, field, &v) < 0)
		return 1;
	/* The checkpoint is a note of several lines; the key one line. */
	if (strcmp(field, "vkey") == 0)
		out_line("%s", v);
	else
		out_text(v);
	return 0;
}

/* ---- checkpoints ------------------------------------------------------------ */

static void checkpoint_done(struct checkpoint *c)
{
	free(c->origin);
}

/* Open the signed note @note (named @what) with @v into @ret. */
static int checkpoint_open(const char *note, const char *what,
			   const struct note_verifier *v, struct checkpoint *ret)
{
	_cleanup_(freep) char *text = NULL;
	int r = note_open(note, v, &text);

	if (r == -ENOKEY)
		warn_msg("%s: not signed by %s (another key, or another log)", what, v->name);
	else if (r == -EKEYREJECTED)
		warn_msg("%s: BAD signature: checkpoint modified or forged", what);
	else if (r < 0)
		warn_msg("%s: not a signed note", what);
	if (r < 0)
		return r;
	r = tlog_checkpoint_parse(text, &ret->origin, &ret->size, ret->root);
	if (r < 0)
		warn_msg("%s: not a checkpoint", what);
	else if (strcmp(ret->origin, v->name) != 0)
		warn_msg("%s: origin %s is not the key's name %s", what, ret->origin, v->name),
			r = -EXDEV;
	return r;
}

static int read_small(const char *path, int dfd, char **ret)
{
	_cleanup_(closep) int fd = openat(dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_(freep) char *buf = NULL;
	ssize_t n;

	if (fd < 0)
		return -errno;
	buf = calloc(1, NOTE_MAX + 2);
	if (!buf)
		return -ENOMEM;
	n = read_full(fd, buf, NOTE_MAX + 1);
	if (n < 0)
		return (int)n;
	if (n > (ssize_t)NOTE_MAX)
		return -EFBIG;
	*ret = TAKE_PTR(buf);
	return 0;
}

/* ---- the directory audit --------------------------------------------------- */

static int failf(struct audit *a, const char *fmt, ...) _printf_(2, 3);
static int failf(struct audit *a, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(a->why, sizeof(a->why), fmt, ap);
	va_end(ap);
	return -EBADMSG;
}

/* Up to @max bytes of the tile @path from the daemon, in pieces; more
 * than @max is -EFBIG. */
static int fetch_tile(struct audit *a, const char *path, uint8_t *buf, size_t max,
		      size_t *ret_len)
{
	struct rpc_error err;
	int r = rpc_log_tile_read(a->conn, path, buf, max, ret_len, &err);

	if (r < 0 && r != -EFBIG)
		return failf(a, "%s: %s", path, err.why); /* "malformed reply" too */
	return r;
}

/* Up to @max bytes of the tile @path, from the directory or the daemon:
 * -EFBIG past @max, else 0 or a reason in a->why. */
static int read_tile(struct audit *a, const char *path, uint8_t *buf, size_t max,
		     size_t *ret_len)
{
	_cleanup_(closep) int fd = -1;
	ssize_t n;

	if (a->conn)
		return fetch_tile(a, path, buf, max, ret_len);
	fd = openat(a->dfd, path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return failf(a, "%s: %s", path, strerror(errno));
	n = read_full(fd, buf, max);
	if (n < 0)
		return failf(a, "%s: %s", path, strerror((int)-n));
	if ((size_t)n == max) {
		uint8_t extra;
		if (read_full(fd, &extra, 1) == 1)
			return -EFBIG;
	}
	*ret_len = (size_t)n;
	return 0;
}

/* Tile (@level, @index, @width) of the log equals @want. */
static int tile_matches(struct audit *a, int level, uint64_t index, unsigned width,
			const uint8_t *want, size_t len)
{
	_cleanup_(freep) uint8_t *got = malloc(len);
	char path[TLOG_MAX_PATH];
	size_t n = 0;
	int r;

	if (!got)
		return -ENOMEM;
	tlog_tile_path(path, level, index, width);
	r = read_tile(a, path, got, len, &n);
	if (r == -EFBIG)
		return failf(a, "%s: more than %zu bytes (padded)", path, len);
	if (r < 0)
		return r;
	if (n != len)
		return failf(a, "%s: %zu bytes, expected %zu (truncated or padded)", path, n, len);
	if (memcmp(got, want, len) != 0)
		return failf(a, "%s: does not match the entries", path);
	return 0;
}

static int on_full(int level, uint64_t index, const uint8_t *hashes, void *userdata)
{
	return tile_matches(userdata, level, index, 0, hashes, TLOG_TILE_BYTES);
}

static void match_modules(struct audit *a, const struct tlog_entry_view *v)
{
	for (size_t i = 0; i < a->n_mods; i++) {
		struct module *m = &a->mods[i];
		const struct digest *md = digest_lookup(v->hash);
		uint8_t d[DIGEST_MAX_LEN];
		_cleanup_(freep) char *hex = NULL;
		size_t len;

		if (m->found || strcmp(m->sig_sha256, v->sig_sha256) != 0 || !md ||
		    modfile_digest(&m->m, md, d, &len) < 0 || hex_encode(d, len, &hex) < 0 ||
		    strcmp(hex, v->digest) != 0)
			continue;
		m->found = true;
		m->index = v->index;
	}
}

/* One entry: in its place, hashed into the tree, matched. */
static int audit_entry(struct audit *a, const uint8_t *e, size_t len)
{
	struct tlog_entry_view v;
	uint8_t leaf[TLOG_HASH_LEN], root[TLOG_HASH_LEN];
	int r;

	if (tlog_entry_parse(e, len, &v) < 0)
		return failf(a, "entry %" PRIu64 ": not an entry", a->tree->size);
	if (v.index != a->tree->size)
		return failf(a, "entry %" PRIu64 ": says index %" PRIu64
			     " (entries removed, added or reordered)", a->tree->size, v.index);
	tlog_leaf_hash(e, len, leaf);
	if (a->tree->size == a->leaves_cap) {
		size_t cap = a->leaves_cap ? 2 * a->leaves_cap : 1024;
		uint8_t *l = realloc(a->leaves, cap * TLOG_HASH_LEN);

		if (!l)
			return -ENOMEM;
		a->leaves = l;
		a->leaves_cap = cap;
	}
	memcpy(a->leaves + a->tree->size * TLOG_HASH_LEN, leaf, TLOG_HASH_LEN);
	r = tlog_tree_append(a->tree, leaf, on_full, a);
	if (r < 0)
		return r;
	match_modules(a, &v);
	if (a->old && a->tree->size == a->old->size) {
		tlog_tree_root(a->tree, root);
		if (memcmp(root, a->old->root, TLOG_HASH_LEN) != 0)
			return failf(a, "older checkpoint (size %" PRIu64 ") is not a prefix of this "
				     "log: forked or rewritten", a->old->size);
	}
	return 0;
}

/* The entry bundle @index, @width entries wide (0: full). */
static int audit_bundle(struct audit *a, uint64_t index, unsigned width)
{
	char path[TLOG_MAX_PATH];
	unsigned want = width ? width : TLOG_TILE_WIDTH, n = 0;
	const uint8_t *e;
	size_t pos = 0, len, got = 0;
	int r;

	tlog_tile_path(path, TLOG_LEVEL_ENTRIES, index, width);
	r = read_tile(a, path, a->bundle, TLOG_BUNDLE_MAX, &got);
	if (r == -EFBIG)
		return failf(a, "%s: larger than any bundle", path);
	if (r < 0)
		return r;
	while ((r = tlog_bundle_next(a->bundle, got, &pos, &e, &len)) > 0) {
		if (++n > want)
			return failf(a, "%s: more than %u entries", path, want);
		r = audit_entry(a, e, len);
		if (r < 0)
			return r;
	}
	if (r < 0 || n != want)
		return failf(a, "%s: %u entries, expected %u (truncated)", path, n, want);
	return 0;
}

static int audit_dir(struct audit *a, const struct checkpoint *cp)
{
	uint8_t root[TLOG_HASH_LEN];
	int r;

	for (uint64_t i = 0; i * TLOG_TILE_WIDTH < cp->size; i++) {
		uint64_t left = cp->size - i * TLOG_TILE_WIDTH;

		r = audit_bundle(a, i, left >= TLOG_TILE_WIDTH ? 0 : (unsigned)left);
		if (r < 0)
			return r;
	}
	for (unsigned level = 0; level < TLOG_LEVELS; level++) {
		unsigned w = tlog_tree_width(a->tree, level);

		if (w && (r = tile_matches(a, (int)level, tlog_tree_tile_index(a->tree, level), w,
					   a->tree->partial[level], w * TLOG_HASH_LEN)) < 0)
			return r;
	}
	tlog_tree_root(a->tree, root);
	if (memcmp(root, cp->root, TLOG_HASH_LEN) != 0)
		return failf(a, "the entries do not hash to the checkpoint's root");
	return 0;
}

/* ---- proofs ------------------------------------------------------------------- */

static void write_proof(FILE *f, const char *kind, uint64_t a, uint64_t b,
			uint8_t proof[][TLOG_HASH_LEN], size_t n)
{
	if (!f)
		return;
	fprintf(f, "%s %" PRIu64 " %" PRIu64, kind, a, b);
	for (size_t i = 0; i < n; i++) {
		_cleanup_(freep) char *b64 = NULL;

		if (base64_encode(proof[i], TLOG_HASH_LEN, &b64) >= 0)
			fprintf(f, " %s", b64);
	}
	fputc('\n', f);
}

/* The inclusion proof of leaf @index in the tree of @cp, checked against
 * its root alone: its length, or a negative errno. */
static int prove_leaf(struct audit *a, const struct checkpoint *cp, uint64_t index)
{
	uint8_t proof[TLOG_PROOF_MAX][TLOG_HASH_LEN];
	size_t n;
	int r = tlog_prove_inclusion(a->leaves, cp->size, index, proof, &n);

	if (r >= 0)
		r = tlog_check_inclusion((const uint8_t(*)[TLOG_HASH_LEN])proof, n, index, cp->size,
					 a->leaves + index * TLOG_HASH_LEN, cp->root);
	if (r < 0)
		return r;
	write_proof(a->proofs, "inclusion", index, cp->size, proof, n);
	return (int)n;
}

static int prove_old(struct audit *a, const struct checkpoint *cp)
{
	uint8_t proof[TLOG_PROOF_MAX][TLOG_HASH_LEN];
	size_t n;
	int r;

	if (!a->old || a->old->size == 0)
		return 0;
	r = tlog_prove_consistency(a->leaves, a->old->size, cp->size, proof, &n);
	if (r >= 0)
		r = tlog_check_consistency((const uint8_t(*)[TLOG_HASH_LEN])proof, n, a->old->size,
					   cp->size, a->old->root, cp->root);
	if (r < 0)
		return failf(a, "no consistency proof from the older checkpoint (size %" PRIu64
			     "): forked or rewritten", a->old->size);
	write_proof(a->proofs, "consistency", a->old->size, cp->size, proof, n);
	return (int)n;
}

/* ---- log verify --------------------------------------------------------------- */

struct verify_opts {
	const char *dir, *vkey, *vkey_file, *checkpoint, *old, *proofs;
};

static int load_verifier(const struct global *g, const struct verify_opts *o,
			 struct note_verifier *ret)
{
	_cleanup_(freep) char *vkey = NULL;
	int r;

	if (o->vkey)
		vkey = strdup(o->vkey);
	else if (o->vkey_file && (r = read_small(o->vkey_file, AT_FDCWD, &vkey)) < 0)
		return warn_msg("%s: %s", o->vkey_file, strerror(-r)), r;
	else if (!o->vkey_file && !o->dir && fetch(g, PROTO_F_VKEY, &vkey) < 0)
		return -ENOTCONN; /* trust on first use: docs/TRANSPARENCY.md */
	if (!vkey)
		return warn_msg("log verify: --vkey or --vkey-file is needed offline"), -EINVAL;
	vkey[strcspn(vkey, "\n")] = '\0';
	r = note_verifier_parse(vkey, ret);
	if (r < 0)
		warn_msg("log verify: not a verifier key: %s", vkey);
	return r;
}

/* The checkpoint to verify: --checkpoint, DIR/checkpoint or the daemon's. */
static int load_checkpoint(const struct global *g, const struct verify_opts *o, int dfd,
			   const struct note_verifier *v, struct checkpoint *ret)
{
	_cleanup_(freep) char *note = NULL;
	const char *what = o->checkpoint ?: o->dir ? "checkpoint" : "the daemon's checkpoint";
	int r;

	if (o->checkpoint || o->dir)
		r = read_small(o->checkpoint ?: "checkpoint", o->checkpoint ? AT_FDCWD : dfd, &note);
	else
		r = fetch(g, PROTO_F_CHECKPOINT, &note);
	if (r == -ENOTCONN)
		return r;
	if (r < 0)
		return warn_msg("%s: %s", what, strerror(-r)), r;
	return checkpoint_open(note, what, v, ret);
}

static int load_old(const struct verify_opts *o, const struct note_verifier *v,
		    const struct checkpoint *cp, struct checkpoint *ret)
{
	_cleanup_(freep) char *note = NULL;
	int r = read_small(o->old, AT_FDCWD, &note);

	if (r < 0)
		return warn_msg("%s: %s", o->old, strerror(-r)), r;
	r = checkpoint_open(note, o->old, v, ret);
	if (r < 0)
		return r;
	if (ret->size > cp->size)
		return warn_msg("%s: has %" PRIu64 " entries, the log only %" PRIu64
				": rolled back", o->old, ret->size, cp->size), -ESTALE;
	if (ret->size == cp->size && memcmp(ret->root, cp->root, TLOG_HASH_LEN) != 0)
		return warn_msg("%s: same size %" PRIu64 ", another root: the log forked",
				o->old, ret->size), -ESTALE;
	return 0;
}

static int load_module(struct module *m, const char *path)
{
	_cleanup_(freep) uint8_t *sig = NULL;
	uint8_t md[32];
	_cleanup_(freep) char *hex = NULL;
	const char *why;
	int r;

	m->path = path;
	r = modfile_open(path, false, &m->m, &why);
	if (r < 0)
		return warn_msg("%s: %s", path, why ?: strerror(-r)), r;
	r = modfile_read_sig(&m->m, &sig);
	if (r < 0)
		return warn_msg("%s: %s", path, r == -ENODATA ? "not signed" : strerror(-r)), r;
	if (!EVP_Digest(sig, m->m.sig.sig_len, md, NULL, EVP_sha256(), NULL) ||
	    hex_encode(md, sizeof(md), &hex) < 0)
		return -ENOMEM;
	snprintf(m->sig_sha256, sizeof(m->sig_sha256), "%s", hex);
	return 0;
}

/* The log (a directory or the daemon's) against @cp, and the modules. */
static int verify_dir(struct audit *a, const struct checkpoint *cp)
{
	int r, missing = 0;

	a->tree = calloc(1, sizeof(*a->tree));
	a->bundle = malloc(TLOG_BUNDLE_MAX);
	if (!a->tree || !a->bundle)
		return -ENOMEM;
	r = audit_dir(a, cp);
	if (r >= 0)
		r = prove_old(a, cp);
	if (r < 0) {
		warn_msg("log verify: %s", a->why);
		return r;
	}
	for (size_t i = 0; i < a->n_mods; i++) {
		int n = a->mods[i].found ? prove_leaf(a, cp, a->mods[i].index) : 0;

		if (n < 0)
			warn_msg("%s: entry %" PRIu64 ": its inclusion proof fails", a->mods[i].path,
				 a->mods[i].index), missing++;
		else if (a->mods[i].found)
			out_line("%s: in the log, entry %" PRIu64 " (inclusion proof of %d hashes checked)",
				 a->mods[i].path, a->mods[i].index, n);
		else
			warn_msg("%s: NOT in the log (no entry has its digest and signature)",
				 a->mods[i].path), missing++;
	}
	return missing ? -ENOENT : 0;
}

static int parse_verify(int argc, char **argv, struct verify_opts *o)
{
	static const struct option opts[] = {
		{ "dir", required_argument, NULL, 'd' },
		{ "vkey", required_argument, NULL, 'v' },
		{ "vkey-file", required_argument, NULL, 'V' },
		{ "checkpoint", required_argument, NULL, 'c' },
		{ "old", required_argument, NULL, 'o' },
		{ "proofs", required_argument, NULL, 'p' },
		{}
	};
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 'v': o->vkey = optarg; break;
		case 'V': o->vkey_file = optarg; break;
		case 'c': o->checkpoint = optarg; break;
		case 'o': o->old = optarg; break;
		case 'p': o->proofs = optarg; break;
		default: return -EINVAL;
		}
	}
	if (argc - optind > MAX_MODULES)
		return warn_msg("log verify: at most %u modules", MAX_MODULES), -EINVAL;
	return 0;
}

static int verify(const struct global *g, const struct verify_opts *o, struct audit *a,
		  char **mods, size_t n_mods)
{
	struct note_verifier v = { 0 };
	struct checkpoint cp = { 0 }, old = { 0 };
	int r;

	r = load_verifier(g, o, &v);
	if (r >= 0 && o->dir && (a->dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
		r = -errno, warn_msg("%s: %s", o->dir, strerror(errno));
	if (r >= 0 && !o->dir && client_connect(g, &a->conn) < 0)
		r = -ENOTCONN;
	if (r >= 0)
		r = load_checkpoint(g, o, a->dfd, &v, &cp);
	if (r >= 0 && o->old && (r = load_old(o, &v, &cp, &old)) >= 0)
		a->old = &old;
	for (size_t i = 0; r >= 0 && i < n_mods; i++, a->n_mods++)
		r = load_module(&a->mods[i], mods[i]);
	if (r >= 0)
		r = verify_dir(a, &cp);
	if (r >= 0)
		out_line("%s: OK, %" PRIu64 " entries, every tile checked%s%s%s", cp.origin, cp.size,
			 o->dir ? "" : " (online)", a->old ? ", consistent with " : "",
			 a->old ? o->old : "");
	checkpoint_done(&cp);
	checkpoint_done(&old);
	note_verifier_done(&v);
	return r;
}

static int cmd_log_verify(const struct global *g, int argc, char **argv)
{
	struct verify_opts o = { 0 };
	struct audit a = { .dfd = -1 };
	int r;

	if (parse_verify(argc, argv, &o) < 0)
		return EXIT_USAGE;
	if (o.proofs && !(a.proofs = fopen(o.proofs, "we"))) {
		warn_msg("%s: %s", o.proofs, strerror(errno));
		return 1;
	}
	a.mods = calloc(argc - optind + 1, sizeof(*a.mods));
	if (!a.mods)
		return 1;
	r = verify(g, &o, &a, argv + optind, argc - optind);
	for (size_t i = 0; i < a.n_mods; i++)
		modfile_close(&a.mods[i].m);
	free(a.mods);
	free(a.tree);
	free(a.bundle);
	free(a.leaves);
	if (a.proofs && fclose(a.proofs) != 0 && r >= 0) {
		warn_msg("%s: %s", o.proofs, strerror(errno));
		r = -EIO;
	}
	if (a.dfd >= 0)
		close(a.dfd);
	conn_close(a.conn);
	return r < 0 ? 1 : 0;
}

static int do_log(const struct global *g, int argc, char **argv)
{
	if (argc < 2) {
		warn_msg("log: vkey, checkpoint or verify");
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "vkey") == 0 || strcmp(argv[1], "checkpoint") == 0)
		return print_field(g, argc - 1, argv[1]);
	if (strcmp(argv[1], "verify") == 0)
		return cmd_log_verify(g, argc - 1, argv + 1);
	warn_msg("log: unknown subcommand '%s' (vkey, checkpoint, verify)", argv[1]);
	return EXIT_USAGE;
}

const struct client_cmd cmd_log = {
	.name = "log",
	.fn = do_log,
	.usage = "log vkey | checkpoint | verify [--dir DIR] [--vkey VKEY | --vkey-file FILE]\n"
		 "    [--checkpoint FILE] [--old FILE] [--proofs OUT] [MODULE...]",
	.help = "the transparency log's verifier key or latest\n"
		"checkpoint, or an audit of it (--dir: offline)",
};
