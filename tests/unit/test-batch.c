/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-client/batch.c against a scripted pool: each server is a fake
 * in this process (one thread on a UNIX socket) that answers `cert` with
 * its certificate and each `sign` request as its script says for that
 * module: a signature (ok), a refusal, a key that went away, the
 * connection closed, silence, or a signature over another digest.  The
 * client side is the real one (batch.c, pool.c, conn.c), so failover,
 * retry on another server and the per-module reporting (the module
 * written or untouched, one line on stderr naming it) are checked
 * without a daemon.
 *
 * Deterministic: a script keys on the module, not on the order requests
 * arrive in, and a server reads the whole first window (its share of the
 * batch, which the client sends before it reads a reply) before it
 * answers any, so what is outstanding where when a server fails is
 * known.  Only the stall case waits: the stall timeout, 1 s (long enough
 * that a loaded machine does not make a good server look stalled).
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "batch.h"
#include "cert.h"
#include "compress.h"
#include "modfile.h"
#include "pkcs7.h"
#include "proto.h"
#include "unit.h"
#include "util.h"

#define STALL_MS 1000
#define N_MODS 6

/* ---- a key and its certificate ---- */

struct ident {
	EVP_PKEY *key;
	X509 *cert;
	char *der_b64; /* the certificate, as `cert` returns it */
	char *fp;      /* its SHA-256, as `sign` names it */
	char pem[PATH_MAX];
};

static char top[] = "/tmp/modsign-test-batch-XXXXXX";
static struct ident id_a, id_b;

static X509 *make_cert(EVP_PKEY *key, const char *cn)
{
	_cleanup_(X509_freep) X509 *x = X509_new();
	X509_NAME *name;

	if (!x)
		return NULL;
	name = X509_get_subject_name(x);
	if (!X509_set_version(x, X509_VERSION_3) ||
	    !ASN1_INTEGER_set(X509_get_serialNumber(x), 1) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, (const unsigned char *)cn,
					-1, -1, 0) ||
	    !X509_set_issuer_name(x, name) || !X509_gmtime_adj(X509_getm_notBefore(x), 0) ||
	    !X509_gmtime_adj(X509_getm_notAfter(x), 3600) || !X509_set_pubkey(x, key) ||
	    X509_sign(x, key, EVP_sha256()) <= 0)
		return NULL;
	return TAKE_PTR(x);
}

static bool ident_make(struct ident *id, const char *cn)
{
	_cleanup_(freep) uint8_t *der = NULL;
	size_t len;
	FILE *f;

	id->key = EVP_EC_gen("P-256");
	id->cert = id->key ? make_cert(id->key, cn) : NULL;
	if (!id->cert || cert_to_der(id->cert, &der, &len) < 0 ||
	    base64_encode(der, len, &id->der_b64) < 0 || cert_fingerprint(der, len, &id->fp) < 0)
		return false;
	snprintf(id->pem, sizeof(id->pem), "%s/%s.pem", top, cn);
	f = fopen(id->pem, "we");
	if (!f)
		return false;
	PEM_write_X509(f, id->cert);
	return fclose(f) == 0;
}

static void ident_free(struct ident *id)
{
	EVP_PKEY_free(id->key);
	X509_free(id->cert);
	free(id->der_b64);
	free(id->fp);
}

/* ---- the scripted server ---- */

enum act {
	ACT_OK,       /* sign it */
	ACT_REFUSE,   /* a policy refusal: another server may sign it */
	ACT_KEY_DOWN, /* the key is unavailable here: the server is dropped */
	ACT_CLOSE,    /* hang up, the rest of the window unanswered */
	ACT_SILENT,   /* answer nothing more: the client must call it stalled */
	ACT_BAD_SIG,  /* "ok", with a signature over another digest */
};

struct rule {
	const char *module; /* the module's file name; "*": every module */
	enum act act;
};

struct fake {
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	int lfd;
	pthread_t thread;
	const struct ident *id;
	const struct rule *rules; /* ended by { NULL } */
	unsigned gather;          /* sign requests read before the first answer */
	atomic_bool stop;
	atomic_uint signs;        /* sign requests it acted on */
};

static enum act act_for(const struct fake *f, const char *module)
{
	const char *base = strrchr(module, '/');

	base = base ? base + 1 : module;
	for (const struct rule *r = f->rules; r && r->module; r++)
		if (strcmp(r->module, "*") == 0 || strcmp(r->module, base) == 0)
			return r->act;
	return ACT_OK;
}

/* One frame from @fd within @timeout_ms (-1: no limit): 1, 0 on timeout,
 * -1 at the end of the stream or on garbage. */
static int read_frame(int fd, int timeout_ms, json_object **ret)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	_cleanup_(freep) uint8_t *body = NULL;
	uint8_t hdr[PROTO_HEADER_LEN];
	uint32_t len;

	if (poll(&p, 1, timeout_ms) == 0)
		return 0;
	if (read_full(fd, hdr, sizeof(hdr)) != (ssize_t)sizeof(hdr))
		return -1;
	len = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	if (len == 0 || len > PROTO_MAX_FRAME || !(body = malloc(len + 1)) ||
	    read_full(fd, body, len) != (ssize_t)len)
		return -1;
	body[len] = 0;
	*ret = json_tokener_parse((char *)body);
	return *ret ? 1 : -1;
}

static void send_frame(int fd, json_object *msg)
{
	_cleanup_(freep) uint8_t *buf = NULL;
	size_t len;

	if (proto_frame_build(msg, &buf, &len) == 0)
		(void)!send(fd, buf, len, MSG_NOSIGNAL);
	json_object_put(msg);
}

static json_object *cert_reply(const struct fake *f, uint64_t id)
{
	json_object *rep = proto_reply_new(id);

	json_object_object_add(rep, "cert", json_object_new_string(f->id->der_b64));
	return rep;
}

/* A signature over the request's digest (@bad: over another one). */
static json_object *sign_reply(const struct fake *f, json_object *req, uint64_t id, bool bad)
{
	_cleanup_(freep) char *b64 = NULL;
	const char *hex = NULL, *hash = NULL;
	uint8_t digest[DIGEST_MAX_LEN], *der = NULL;
	size_t len = 0, der_len = 0;
	bool use_keyid = false;
	json_object *rep;

	proto_get_string(req, "digest", 2 * DIGEST_MAX_LEN, true, &hex);
	proto_get_string(req, "hash", 16, true, &hash);
	proto_get_bool(req, "keyid", &use_keyid);
	if (!hex || !hash || hex_decode(hex, digest, sizeof(digest), &len) < 0)
		return proto_error_new(id, "bad request");
	digest[0] ^= bad;
	if (pkcs7_sign_digest(f->id->cert, f->id->key, digest_lookup(hash), digest, len,
			      use_keyid, &der, &der_len) < 0 ||
	    base64_encode(der, der_len, &b64) < 0) {
		OPENSSL_free(der);
		return proto_error_new(id, "cannot sign");
	}
	OPENSSL_free(der);
	rep = proto_reply_new(id);
	json_object_object_add(rep, "signature", json_object_new_string(b64));
	json_object_object_add(rep, "cert_sha256", json_object_new_string(f->id->fp));
	return rep;
}

/* Act on one sign request: 1 to go on, 0 to hang up, -1 to fall silent. */
static int answer(struct fake *f, int fd, json_object *req)
{
	const char *module = "";
	uint64_t id = 0;
	enum act act;

	proto_get_uint(req, "id", &id);
	proto_get_string(req, "module", PROTO_MAX_MODULE, true, &module);
	act = act_for(f, module);
	atomic_fetch_add(&f->signs, 1);
	switch (act) {
	case ACT_OK:
	case ACT_BAD_SIG:
		send_frame(fd, sign_reply(f, req, id, act == ACT_BAD_SIG));
		return 1;
	case ACT_REFUSE:
		send_frame(fd, proto_error_new(id, "not in this server's policy"));
		return 1;
	case ACT_KEY_DOWN:
		send_frame(fd, proto_error_new(id, "signing with key default failed: token removed"));
		return 1;
	case ACT_CLOSE:
		return 0;
	case ACT_SILENT:
		return -1;
	}
	return 0;
}

/* Read and drop what comes until the client hangs up. */
static void drain(int fd)
{
	json_object *req = NULL;

	while (read_frame(fd, -1, &req) == 1)
		json_object_put(req);
}

/* One connection: `cert` answered at once, sign requests as the script
 * says, the first @f->gather of them read before any is answered. */
static void serve(struct fake *f, int fd)
{
	json_object *pending[64];
	size_t np = 0;
	bool gathered = f->gather <= 1;
	int go = 1;

	while (go > 0) {
		json_object *req = NULL;
		const char *op = "";
		uint64_t id = 0;
		int r = read_frame(fd, !gathered && np > 0 ? 5000 : -1, &req);

		if (r < 0)
			break;
		if (r == 1) {
			proto_get_string(req, "op", 16, true, &op);
			proto_get_uint(req, "id", &id);
			if (strcmp(op, "cert") == 0) {
				send_frame(fd, cert_reply(f, id));
				json_object_put(req);
				continue;
			}
			pending[np++] = req;
			if (!gathered && np < f->gather && np < ELEMENTSOF(pending))
				continue;
		}
		gathered = true;
		for (size_t k = 0; k < np; k++) {
			if (go > 0)
				go = answer(f, fd, pending[k]);
			json_object_put(pending[k]);
		}
		np = 0;
	}
	for (size_t k = 0; k < np; k++)
		json_object_put(pending[k]);
	if (go < 0)
		drain(fd); /* silent: until the client gives up on us */
	close(fd);
}

static void *fake_main(void *arg)
{
	struct fake *f = arg;

	for (;;) {
		int fd = accept4(f->lfd, NULL, NULL, SOCK_CLOEXEC);

		if (atomic_load(&f->stop)) {
			if (fd >= 0)
				close(fd);
			return NULL;
		}
		if (fd >= 0)
			serve(f, fd);
	}
}

static bool fake_start(struct fake *f, const char *dir, const char *name,
		       const struct ident *id, const struct rule *rules, unsigned gather)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	*f = (struct fake){ .id = id, .rules = rules, .gather = gather };
	if (snprintf(f->path, sizeof(f->path), "%s/%s.sock", dir, name) >= (int)sizeof(f->path))
		return false;
	strcpy(sa.sun_path, f->path);
	f->lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (f->lfd < 0 || bind(f->lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(f->lfd, 16) < 0)
		return false;
	return pthread_create(&f->thread, NULL, fake_main, f) == 0;
}

/* Wake the accept with a connection of our own, and wait for the end. */
static void fake_stop(struct fake *f)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	atomic_store(&f->stop, true);
	strcpy(sa.sun_path, f->path);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		pthread_join(f->thread, NULL);
	if (fd >= 0)
		close(fd);
	close(f->lfd);
}

/* ---- modules, and what became of them ---- */

#define BODY 100
#define ELF_LEN (64 + BODY + 2 * 64)

/* A little-endian ELF64 whose section header table ends at ELF_LEN (as
 * in test-modfile.c), then filler that differs per module. */
static bool make_module(const char *path, unsigned seed)
{
	uint8_t elf[ELF_LEN] = { 0 };
	int fd;
	bool ok;

	memcpy(elf, "\177ELF\2\1\1", 7);
	for (size_t i = 64; i < ELF_LEN; i++)
		elf[i] = (uint8_t)(i * 7 + seed);
	elf[0x28] = 64 + BODY;
	elf[0x3a] = 64;
	elf[0x3c] = 2;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	ok = write_full(fd, elf, sizeof(elf)) == 0;
	return close(fd) == 0 && ok;
}

/* A case's directory, with modules m1.ko..m@n.ko in @paths. */
struct scene {
	char dir[PATH_MAX - 16];
	char mod[N_MODS + 2][PATH_MAX];
	struct pathlist paths;
	struct fake srv[3];
	size_t n_srv;
	char err[8192]; /* what the client said on stderr */
};

static bool scene_make(struct scene *sc, const char *name, size_t n)
{
	bool ok = true;

	memset(sc, 0, sizeof(*sc));
	snprintf(sc->dir, sizeof(sc->dir), "%s/%s", top, name);
	if (mkdir(sc->dir, 0700) < 0)
		return false;
	for (size_t i = 0; i < n && ok; i++) {
		ok = snprintf(sc->mod[i], PATH_MAX, "%s/m%zu.ko", sc->dir, i + 1) < PATH_MAX &&
		     make_module(sc->mod[i], (unsigned)i) && pathlist_add(&sc->paths, sc->mod[i]) >= 0;
	}
	return ok;
}

static void scene_done(struct scene *sc)
{
	for (size_t i = 0; i < sc->n_srv; i++)
		fake_stop(&sc->srv[i]);
	pathlist_free(&sc->paths);
}

/* The global options of a client whose server list is the scene's. */
static struct global scene_global(const struct scene *sc)
{
	struct global g = { .n_servers = sc->n_srv, .stall_ms = STALL_MS };
	static char addr[ELEMENTSOF(sc->srv)][PATH_MAX];

	for (size_t i = 0; i < sc->n_srv; i++) {
		snprintf(addr[i], PATH_MAX, "unix:%s", sc->srv[i].path);
		g.servers[i] = addr[i];
	}
	return g;
}

/* Run @fn with stderr into sc->err. */
#define CAPTURE(sc, expr)                                                         \
	({                                                                       \
		char tmp_[PATH_MAX + 8];                                         \
		int saved_, fd_, rc_;                                            \
		snprintf(tmp_, sizeof(tmp_), "%s/stderr", (sc)->dir);            \
		fflush(stderr);                                                  \
		saved_ = dup(STDERR_FILENO);                                     \
		fd_ = open(tmp_, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);  \
		dup2(fd_, STDERR_FILENO);                                        \
		rc_ = (expr);                                                    \
		fflush(stderr);                                                  \
		dup2(saved_, STDERR_FILENO);                                     \
		close(saved_);                                                   \
		memset((sc)->err, 0, sizeof((sc)->err));                         \
		(void)!pread(fd_, (sc)->err, sizeof((sc)->err) - 1, 0);          \
		close(fd_);                                                      \
		rc_;                                                             \
	})

/* 1: @path carries a signature that verifies with @id's certificate;
 * 0: it carries none; -1: one that does not verify. */
static int signed_by(const char *path, const struct ident *id)
{
	_cleanup_(freep) uint8_t *sig = NULL;
	struct modfile m;
	const char *why;
	int r;

	if (modfile_open(path, false, &m, &why) < 0)
		return -1;
	if (m.sig.sig_len == 0) {
		modfile_close(&m);
		return 0;
	}
	r = modfile_read_sig(&m, &sig);
	if (r >= 0)
		r = pkcs7_verify_module(sig, m.sig.sig_len, id->cert, m.fd, m.sig.body_len, NULL);
	modfile_close(&m);
	return r < 0 ? -1 : 1;
}

static size_t count_signed(const struct scene *sc, size_t n, const struct ident *id)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += signed_by(sc->mod[i], id) == 1;
	return k;
}

static size_t count_lines(const char *text, const char *needle)
{
	size_t k = 0;

	for (const char *s = text; (s = strstr(s, needle)); s++)
		k++;
	return k;
}

static struct batch_opts sha256_opts(void)
{
	return (struct batch_opts){ .md = digest_lookup("sha256"), .sigfd = -1 };
}

/* A server of a case: its script, its key (NULL: id_a's). */
struct spec {
	const struct rule *rules;
	const struct ident *id;
};

/* Start the scene's servers, each reading its share of the batch before
 * it answers (@gather: that many; 0: its share of N_MODS). */
static bool start_servers(struct scene *sc, const struct spec *spec, size_t n_srv,
			  unsigned gather)
{
	for (size_t i = 0; i < n_srv; i++) {
		char name[24]; /* "s" and any size_t */

		snprintf(name, sizeof(name), "s%zu", i);
		if (!fake_start(&sc->srv[i], sc->dir, name, spec[i].id ?: &id_a, spec[i].rules,
				gather ?: (unsigned)(N_MODS / n_srv)))
			return false;
		sc->n_srv++;
	}
	return true;
}

/* sign's batch of the scene's modules over its servers with @o, whose
 * servers gather @gather requests (0: their share) before they answer;
 * @pin: the certificate file it pins (NULL: the servers' own). */
static int run_batch_with(struct scene *sc, const struct spec *spec, size_t n_srv,
			  const char *pin, struct batch_opts *o, unsigned gather)
{
	struct global g;
	int r = 1;

	if (!start_servers(sc, spec, n_srv, gather))
		return -1;
	g = scene_global(sc);
	if (!pin || batch_pin_cert(o, pin) >= 0)
		r = CAPTURE(sc, batch_sign_paths(&g, o, &sc->paths));
	batch_opts_done(o);
	return r;
}

static int run_batch(struct scene *sc, const struct spec *spec, size_t n_srv, const char *pin)
{
	struct batch_opts o = sha256_opts();

	return run_batch_with(sc, spec, n_srv, pin, &o, 0);
}

/* sign-file's one module per call, for each of the scene's modules;
 * the number of calls that failed. */
static int run_each(struct scene *sc, const struct spec *spec, size_t n_srv, size_t n)
{
	struct global g;
	int failed = 0;

	if (!start_servers(sc, spec, n_srv, 1))
		return -1;
	g = scene_global(sc);
	for (size_t i = 0; i < n; i++) {
		struct batch_opts o = sha256_opts();

		if (batch_pin_cert(&o, id_a.pem) < 0)
			return -1;
		failed += CAPTURE(sc, batch_sign_one(&g, &o, sc->mod[i], NULL)) != 0;
		batch_opts_done(&o);
	}
	return failed;
}

static unsigned signs(const struct scene *sc, size_t i)
{
	return atomic_load(&sc->srv[i].signs);
}

/* ---- the cases ---- */

static const struct rule all_ok[] = { { .module = NULL } };

/* Two servers that sign: the batch is spread over both (its first window
 * in turn, one request each), every module signed and verified. */
UNIT_TEST(spread)
{
	const struct spec spec[] = { { .rules = all_ok }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("spread-setup", scene_make(&sc, "spread", N_MODS)))
		return;
	CHECK_EQ("spread-exit-0", run_batch(&sc, spec, 2, NULL), 0);
	CHECK_EQ("spread-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("spread-s0-took-half", signs(&sc, 0), N_MODS / 2);
	CHECK_EQ("spread-s1-took-half", signs(&sc, 1), N_MODS / 2);
	CHECK("spread-nothing-said", sc.err[0] == 0);
	scene_done(&sc);
}

/* A server that hangs up mid-window (after m1, at m3): its outstanding
 * requests (m3, m5) go to the other, and every module is signed once. */
UNIT_TEST(close_mid_window)
{
	static const struct rule close_m3[] = { { "m3.ko", ACT_CLOSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = close_m3 }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("close-setup", scene_make(&sc, "close", N_MODS)))
		return;
	CHECK_EQ("close-exit-0", run_batch(&sc, spec, 2, NULL), 0);
	CHECK_EQ("close-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("close-other-took-the-rest", signs(&sc, 1), N_MODS / 2 + 2);
	CHECK("close-says-which-and-how-many",
	      strstr(sc.err, "s0.sock: ") && strstr(sc.err, "; 2 requests sent to the other server"));
	scene_done(&sc);
}

/* A server that stops answering (at m3) is called stalled after the stall
 * timeout; its requests go to the other. */
UNIT_TEST(stall)
{
	static const struct rule silent_m3[] = { { "m3.ko", ACT_SILENT }, { .module = NULL } };
	const struct spec spec[] = { { .rules = silent_m3 }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("stall-setup", scene_make(&sc, "stall", N_MODS)))
		return;
	CHECK_EQ("stall-exit-0", run_batch(&sc, spec, 2, NULL), 0);
	CHECK_EQ("stall-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK("stall-says-stalled",
	      strstr(sc.err, "s0.sock: no reply (stalled); 2 requests sent to the other server"));
	scene_done(&sc);
}

/* A refusal by one server goes to a server that has not refused it: the
 * module is signed, and nothing is said. */
UNIT_TEST(refused_once)
{
	static const struct rule refuse_m1[] = { { "m1.ko", ACT_REFUSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = refuse_m1 }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("refused-once-setup", scene_make(&sc, "refused-once", N_MODS)))
		return;
	CHECK_EQ("refused-once-exit-0", run_batch(&sc, spec, 2, NULL), 0);
	CHECK_EQ("refused-once-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("refused-once-other-signed-it", signs(&sc, 1), N_MODS / 2 + 1);
	CHECK("refused-once-nothing-said", sc.err[0] == 0);
	scene_done(&sc);
}

/* Twin: refused by every server, the module fails with the refusal, said
 * once, and stays as it was; the others are signed. */
UNIT_TEST(refused_by_all)
{
	static const struct rule refuse_m1[] = { { "m1.ko", ACT_REFUSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = refuse_m1 }, { .rules = refuse_m1 } };
	struct scene sc;

	if (!CHECK("refused-all-setup", scene_make(&sc, "refused-all", N_MODS)))
		return;
	CHECK_EQ("refused-all-exit-1", run_batch(&sc, spec, 2, NULL), 1);
	CHECK_EQ("refused-all-module-untouched", signed_by(sc.mod[0], &id_a), 0);
	CHECK_EQ("refused-all-others-signed", count_signed(&sc, N_MODS, &id_a), N_MODS - 1);
	CHECK_EQ("refused-all-said-once",
		 count_lines(sc.err, "m1.ko: modsignd refused: not in this server's policy"), 1);
	CHECK_EQ("refused-all-only-it-said", count_lines(sc.err, "\n"), 1);
	scene_done(&sc);
}

/* A server whose key went away is dropped at its first such reply (m3);
 * what it had (m3, m5) goes to the other. */
UNIT_TEST(key_down)
{
	static const struct rule down_m3[] = { { "m3.ko", ACT_KEY_DOWN }, { .module = NULL } };
	const struct spec spec[] = { { .rules = down_m3 }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("key-down-setup", scene_make(&sc, "key-down", N_MODS)))
		return;
	CHECK_EQ("key-down-exit-0", run_batch(&sc, spec, 2, NULL), 0);
	CHECK_EQ("key-down-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK("key-down-says-why",
	      strstr(sc.err, "s0.sock: signing with key default failed: token removed; "
			     "2 requests sent to the other server"));
	scene_done(&sc);
}

/* A server that returns a signature over another digest is dropped (it
 * could be anyone's) and its whole window (m1, m3, m5) goes to the other:
 * nothing it returned is written. */
UNIT_TEST(bad_signature)
{
	static const struct rule bad_m1[] = { { "m1.ko", ACT_BAD_SIG }, { .module = NULL } };
	const struct spec spec[] = { { .rules = bad_m1 }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("bad-sig-setup", scene_make(&sc, "bad-sig", N_MODS)))
		return;
	CHECK_EQ("bad-sig-exit-0", run_batch(&sc, spec, 2, NULL), 0);
	CHECK_EQ("bad-sig-all-signed-and-verify", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK("bad-sig-says-why",
	      strstr(sc.err, "s0.sock: its signature does not match the module; "
			     "3 requests sent to the other server"));
	scene_done(&sc);
}

/* Twin: with no other server, that module is not signed (said, file
 * untouched); the rest are. */
UNIT_TEST(bad_signature_alone)
{
	static const struct rule bad_m1[] = { { "m1.ko", ACT_BAD_SIG }, { .module = NULL } };
	const struct spec spec[] = { { .rules = bad_m1 } };
	struct scene sc;

	if (!CHECK("bad-sig-alone-setup", scene_make(&sc, "bad-sig-alone", N_MODS)))
		return;
	CHECK_EQ("bad-sig-alone-exit-1", run_batch(&sc, spec, 1, NULL), 1);
	CHECK_EQ("bad-sig-alone-module-untouched", signed_by(sc.mod[0], &id_a), 0);
	CHECK_EQ("bad-sig-alone-others-signed", count_signed(&sc, N_MODS, &id_a), N_MODS - 1);
	CHECK_EQ("bad-sig-alone-said",
		 count_lines(sc.err, "m1.ko: the signature from modsignd does not match the "
				     "module; not signed"), 1);
	scene_done(&sc);
}

/* Every server lost: no module is written, each is named once, and the
 * end of the pool is said. */
UNIT_TEST(no_server_left)
{
	static const struct rule close_m1[] = { { "m1.ko", ACT_CLOSE }, { .module = NULL } };
	static const struct rule close_m2[] = { { "m2.ko", ACT_CLOSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = close_m1 }, { .rules = close_m2 } };
	struct scene sc;
	bool each = true;

	if (!CHECK("no-server-setup", scene_make(&sc, "no-server", N_MODS)))
		return;
	CHECK_EQ("no-server-exit-1", run_batch(&sc, spec, 2, NULL), 1);
	CHECK_EQ("no-server-none-written", count_signed(&sc, N_MODS, &id_a), 0);
	for (size_t i = 0; i < N_MODS; i++) {
		char line[64];

		snprintf(line, sizeof(line), "m%zu.ko: not signed: ", i + 1);
		each = each && count_lines(sc.err, line) == 1;
	}
	CHECK("no-server-each-module-named-once", each);
	CHECK("no-server-says-pool-gone", strstr(sc.err, "no server left: all 2 of the pool failed"));
	scene_done(&sc);
}

/* The pool walk: pinned to id_a's certificate, a server with another key
 * is left out before any module is sent, and the batch goes to the one
 * that holds it. */
UNIT_TEST(pin_leaves_out_other_key)
{
	const struct spec spec[] = { { .rules = all_ok }, { .rules = all_ok, .id = &id_b } };
	struct scene sc;

	if (!CHECK("pin-setup", scene_make(&sc, "pin", N_MODS)))
		return;
	/* The holder reads all N_MODS before answering only if it knows it
	 * has them all: gather by its share is the half, which suffices. */
	CHECK_EQ("pin-exit-0", run_batch(&sc, spec, 2, id_a.pem), 0);
	CHECK_EQ("pin-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("pin-other-key-sent-nothing", signs(&sc, 1), 0);
	CHECK("pin-other-key-said-not-used", strstr(sc.err, "s1.sock: not used: its key 'default' "
							    "is not the certificate"));
	scene_done(&sc);
}

/* sign-file's one module per call: a server that refuses it (s0 refuses
 * every module) sends it to the next, whichever server its path picks
 * first; every module is signed. */
UNIT_TEST(one_fails_over)
{
	static const struct rule refuse_all[] = { { "*", ACT_REFUSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = refuse_all }, { .rules = all_ok } };
	struct scene sc;

	if (!CHECK("one-failover-setup", scene_make(&sc, "one-failover", N_MODS)))
		return;
	CHECK_EQ("one-failover-none-failed", run_each(&sc, spec, 2, N_MODS), 0);
	CHECK_EQ("one-failover-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("one-failover-each-signed-by-the-other", signs(&sc, 1), N_MODS);
	CHECK("one-failover-refuser-was-asked", signs(&sc, 0) > 0);
	scene_done(&sc);
}

/* Twin: refused by both, the module fails after each server was asked
 * once, and stays as it was. */
UNIT_TEST(one_refused_by_all)
{
	static const struct rule refuse_all[] = { { "*", ACT_REFUSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = refuse_all }, { .rules = refuse_all } };
	struct scene sc;

	if (!CHECK("one-refused-setup", scene_make(&sc, "one-refused", 1)))
		return;
	CHECK_EQ("one-refused-failed", run_each(&sc, spec, 2, 1), 1);
	CHECK_EQ("one-refused-untouched", signed_by(sc.mod[0], &id_a), 0);
	CHECK_EQ("one-refused-s0-asked-once", signs(&sc, 0), 1);
	CHECK_EQ("one-refused-s1-asked-once", signs(&sc, 1), 1);
	scene_done(&sc);
}

/* ---- the decompressed modules a batch holds (batch.h) ---- */

/* The scene's modules compressed: each m@i.ko becomes m@i.ko.zst, whose
 * decompressed copy (ELF_LEN bytes) the batch holds while it is open. */
static bool scene_compress(struct scene *sc, size_t n)
{
	const struct compressor *zst = compress_by_suffix("m.ko.zst");
	bool ok = zst != NULL;

	pathlist_free(&sc->paths);
	for (size_t i = 0; i < n && ok; i++) {
		char out[PATH_MAX];
		int in, fd;

		ok = snprintf(out, sizeof(out), "%s.zst", sc->mod[i]) < (int)sizeof(out);
		in = ok ? open(sc->mod[i], O_RDONLY | O_CLOEXEC) : -1;
		fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		ok = ok && in >= 0 && fd >= 0 && zst->encode(in, ELF_LEN, fd) == 0;
		if (in >= 0)
			close(in);
		ok = fd >= 0 && close(fd) == 0 && ok && unlink(sc->mod[i]) == 0;
		snprintf(sc->mod[i], PATH_MAX, "%s", out);
		ok = ok && pathlist_add(&sc->paths, sc->mod[i]) >= 0;
	}
	return ok;
}

/* A batch of the scene's compressed modules with a budget of @budget
 * bytes held, servers answering each request as it comes. */
static int run_held(struct scene *sc, const struct spec *spec, size_t n_srv, uint64_t budget,
		    struct batch_opts *o)
{
	*o = sha256_opts();
	o->held_budget = budget;
	return run_batch_with(sc, spec, n_srv, NULL, o, 1);
}

/* A budget smaller than one module: each is opened alone once none is in
 * flight, and signs (the one-at-least rule: no stall); what was counted
 * is released when each is closed. */
UNIT_TEST(held_one_at_a_time)
{
	const struct spec spec[] = { { .rules = all_ok }, { .rules = all_ok } };
	struct batch_opts o;
	struct scene sc;

	if (!CHECK("held-one-setup", scene_make(&sc, "held-one", N_MODS) &&
					     scene_compress(&sc, N_MODS)))
		return;
	CHECK_EQ("held-one-exit-0", run_held(&sc, spec, 2, 1, &o), 0);
	CHECK_EQ("held-one-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("held-one-one-at-a-time", o.held_peak, ELF_LEN);
	CHECK_EQ("held-one-all-released", o.held_left, 0);
	CHECK("held-one-nothing-said", sc.err[0] == 0);
	scene_done(&sc);
}

/* Twin: a budget of three modules holds three at once (the fill opens
 * them before it reads a reply), not one, and not the window. */
UNIT_TEST(held_up_to_budget)
{
	const struct spec spec[] = { { .rules = all_ok } };
	struct batch_opts o;
	struct scene sc;

	if (!CHECK("held-budget-setup", scene_make(&sc, "held-budget", N_MODS) &&
						scene_compress(&sc, N_MODS)))
		return;
	CHECK_EQ("held-budget-exit-0", run_held(&sc, spec, 1, 3 * ELF_LEN, &o), 0);
	CHECK_EQ("held-budget-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("held-budget-three-at-once", o.held_peak, 3 * ELF_LEN);
	CHECK_EQ("held-budget-all-released", o.held_left, 0);
	scene_done(&sc);
}

/* Every way a module ends releases what it held, and a module sent again
 * keeps its copy (counted once): a server lost mid-batch (its request
 * sent again elsewhere), a refusal sent to the other server, a refusal
 * by all, a signature that does not verify with no server left to ask,
 * every server lost.  Budget one module, so one at a time, each to s0
 * first (the fill starts there); a module s0 refused goes to s1 before
 * s0 opens the next (batch_may_open(); two held before review 22). */
UNIT_TEST(held_released_on_every_path)
{
	static const struct rule close_m3[] = { { "m3.ko.zst", ACT_CLOSE }, { .module = NULL } };
	static const struct rule refuse_m1[] = { { "m1.ko.zst", ACT_REFUSE }, { .module = NULL } };
	static const struct rule bad_m1[] = { { "m1.ko.zst", ACT_BAD_SIG }, { .module = NULL } };
	static const struct rule close_m1[] = { { "m1.ko.zst", ACT_CLOSE }, { .module = NULL } };
	static const struct rule close_m2[] = { { "m2.ko.zst", ACT_CLOSE }, { .module = NULL } };
	static const struct {
		const char *name;
		struct spec spec[2];
		size_t n_srv, signed_, peak;
	} cases[] = {
		{ "lost", { { .rules = close_m3 }, { .rules = all_ok } }, 2, N_MODS, 1 },
		{ "refused-once", { { .rules = refuse_m1 }, { .rules = all_ok } }, 2, N_MODS, 1 },
		{ "refused-all", { { .rules = refuse_m1 }, { .rules = refuse_m1 } }, 2, N_MODS - 1,
		  1 },
		{ "bad-sig-alone", { { .rules = bad_m1 } }, 1, N_MODS - 1, 1 },
		/* m1 lost with s0, signed by s1, which is lost at m2 */
		{ "no-server", { { .rules = close_m1 }, { .rules = close_m2 } }, 2, 1, 1 },
	};

	for (size_t k = 0; k < ELEMENTSOF(cases); k++) {
		char name[64];
		struct batch_opts o;
		struct scene sc;

		snprintf(name, sizeof(name), "held-%s", cases[k].name);
		if (!CHECK(name, scene_make(&sc, name, N_MODS) && scene_compress(&sc, N_MODS)))
			return;
		run_held(&sc, cases[k].spec, cases[k].n_srv, 1, &o);
		snprintf(name, sizeof(name), "held-%s-signed", cases[k].name);
		CHECK_EQ(name, count_signed(&sc, N_MODS, &id_a), cases[k].signed_);
		snprintf(name, sizeof(name), "held-%s-all-released", cases[k].name);
		CHECK_EQ(name, o.held_left, 0);
		snprintf(name, sizeof(name), "held-%s-peak", cases[k].name);
		CHECK_EQ(name, o.held_peak, cases[k].peak * ELF_LEN);
		scene_done(&sc);
	}
}

/* Review 22: servers that refuse every module (a pool member's policy,
 * or a malicious one) must not raise what the batch holds.  Whenever
 * nothing was in flight, one more module was opened though those waiting
 * in the queue for another server already held the budget: with two
 * refusers of three, three held with a budget of one module, and with k
 * refusers k + 1 (64 servers: 64 modules of up to 256 MiB).  Now one at a
 * time: a module waiting in the queue goes to the server that may sign
 * it before a new one opens. */
UNIT_TEST(held_refusers_open_no_more)
{
	static const struct rule refuse_all[] = { { "*", ACT_REFUSE }, { .module = NULL } };
	const struct spec spec[] = { { .rules = refuse_all }, { .rules = refuse_all },
				     { .rules = all_ok } };
	struct batch_opts o;
	struct scene sc;

	if (!CHECK("held-refusers-setup", scene_make(&sc, "held-refusers", N_MODS) &&
						  scene_compress(&sc, N_MODS)))
		return;
	CHECK_EQ("held-refusers-exit-0", run_held(&sc, spec, 3, 1, &o), 0);
	CHECK_EQ("held-refusers-all-signed", count_signed(&sc, N_MODS, &id_a), N_MODS);
	CHECK_EQ("held-refusers-one-at-a-time", o.held_peak, ELF_LEN);
	CHECK_EQ("held-refusers-all-released", o.held_left, 0);
	scene_done(&sc);
}

/* A file that is no module among them: refused at its open, never
 * counted; the others sign one at a time. */
UNIT_TEST(held_not_a_module)
{
	const struct spec spec[] = { { .rules = all_ok } };
	struct batch_opts o;
	struct scene sc;
	int fd;

	if (!CHECK("held-junk-setup", scene_make(&sc, "held-junk", N_MODS) &&
					      scene_compress(&sc, N_MODS)))
		return;
	fd = open(sc.mod[1], O_WRONLY | O_TRUNC | O_CLOEXEC);
	CHECK("held-junk-made", fd >= 0 && write_full(fd, "junk", 4) == 0 && close(fd) == 0);
	CHECK_EQ("held-junk-exit-1", run_held(&sc, spec, 1, 1, &o), 1);
	CHECK_EQ("held-junk-others-signed", count_signed(&sc, N_MODS, &id_a), N_MODS - 1);
	CHECK_EQ("held-junk-all-released", o.held_left, 0);
	CHECK_EQ("held-junk-one-at-a-time", o.held_peak, ELF_LEN);
	scene_done(&sc);
}

/* Made once, in the parent: the scratch directory and the two keys every
 * case's servers sign with. */
static bool fixture(void)
{
	signal(SIGPIPE, SIG_IGN);
	return unit_mkdtemp(top) &&
	       CHECK("identities", ident_make(&id_a, "modsign-test-a") &&
					   ident_make(&id_b, "modsign-test-b"));
}

static void fixture_free(void)
{
	ident_free(&id_a);
	ident_free(&id_b);
	unit_rm_rf(top);
}

UNIT_MAIN(.setup = fixture, .teardown = fixture_free)
