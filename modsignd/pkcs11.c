/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <fcntl.h>
#include <libp11.h>
#include <openssl/err.h>
#include <p11-kit/uri.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "log.h"
#include "pkcs11.h"
#include "pkcs7.h"
#include "util.h"

/*
 * One PKCS11_CTX per module path, shared by every key on it: a module is
 * initialised once per process (a second C_Initialize is refused and one
 * C_Finalize ends it for all).  Some modules never see a token again once
 * it went away (SoftHSM2 answers CKR_GENERAL_ERROR until C_Finalize), so a
 * key whose token is gone reloads the whole module, at most once per
 * PKCS11_RETRY_MS; the other keys on it re-open silently on their next use.
 * A module does not always give back all its memory at C_Finalize (SoftHSM2
 * under libp11: about 20 KiB a reload), so in a long outage the reloads
 * back off: after PKCS11_RELOAD_FAST in a row that did not bring the token
 * back, each waits twice as long as the last, up to PKCS11_RELOAD_MAX_MS.
 *
 * Lock order: module @lock, then key @lock.  Signers and re-opens hold the
 * module lock shared; a reload holds it exclusive, so no key is in use.
 */
struct pkcs11_module {
	char *path;
	PKCS11_CTX *ctx; /* NULL after a reload that failed */
	pthread_rwlock_t lock;
	uint64_t last_reload_ms;
	unsigned failed_reloads; /* in a row, the token still gone after each */
	struct pkcs11_key *keys;
	unsigned refs;
	struct pkcs11_module *next;
	/* p11-kit-client.so (a token on another host, over p11-kit's RPC):
	 * one call at a time.  Its transport carries one call at a time
	 * anyway, and in p11-kit 0.24.1 a call waiting behind another is
	 * never woken when the connection drops: the waiter hung for ever,
	 * holding the key's lock, so the key never failed fast nor came
	 * back (farm.bats, the HSM link cut mid-batch). */
	bool one_call;
	pthread_mutex_t call;
};

static struct pkcs11_module *modules; /* changed from the main thread only */

/*
 * The state behind @lock: the slot list this key enumerated, the token
 * key and the EVP_PKEY libp11 made of it.  Signers hold @lock shared;
 * re-opening holds it exclusive.  @gen counts re-opens, so that of many
 * signers that saw the same failure only the first tears down.
 */
struct pkcs11_key {
	P11KitUri *uri;
	struct pkcs11_module *mod;
	struct pkcs11_key *next_on_mod;
	char *pin_path;
	X509 *cert;
	pthread_rwlock_t lock;
	PKCS11_SLOT *slots;
	unsigned n_slots;
	EVP_PKEY *pkey;
	unsigned long gen;
	int err;              /* 0 or why the key is unavailable; atomic reads */
	const char *why;      /* static text for @err, or NULL; atomic reads */
	uint64_t last_try_ms; /* last re-open attempt */
	bool pin_refused;     /* the PIN file as it was in @refused was refused */
	struct stat refused;
	struct pkcs11_key_stats stats; /* atomic updates and reads */
};

/*
 * What the token link costs, counted where modsignd asks for it.  libp11
 * 0.4.12 keeps a pool of open sessions per slot (opened on demand, up to
 * 16, reused until the module is finalized) and the key's object handle
 * in the EVP_PKEY it made, so a signature through pk->pkey costs
 * C_SignInit and C_Sign on a pooled session: no C_OpenSession, C_Login or
 * C_FindObjects (measured over p11-kit-client.so, docs/BUILD-FARM.md).
 * An open is where those happen: the slots listed, the PIN sent, the
 * token's objects searched.
 */
static void count(unsigned long *c)
{
	__atomic_fetch_add(c, 1, __ATOMIC_RELAXED);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(P11KitUri *, p11_kit_uri_free)

bool pkcs11_is_uri(const char *spec)
{
	return strncmp(spec, "pkcs11:", 7) == 0;
}

const char *pkcs11_strerror(int err)
{
	switch (err) {
	case 0:
		return "ok";
	case -ENODEV:
		return "PKCS#11 token unavailable (not present or unreachable)";
	case -EACCES:
		return "the token refused the PIN";
	case -ENOKEY:
		return "private key not found on the token";
	case -EKEYREJECTED:
		return "the key on the token does not match the certificate";
	case -EIO:
		return "PKCS#11 operation failed";
	case -ENOMEM:
		return "out of memory";
	default:
		return "cannot open the key";
	}
}

/* ---- URI ---------------------------------------------------------------- */

static int uri_parse(const char *s, P11KitUri **ret, const char **ret_err)
{
	_cleanup_(p11_kit_uri_freep) P11KitUri *uri = p11_kit_uri_new();
	CK_ATTRIBUTE *cls;

	if (!uri)
		return -ENOMEM;
	if (p11_kit_uri_parse(s, P11_KIT_URI_FOR_OBJECT_ON_TOKEN_AND_MODULE, uri) !=
	    P11_KIT_URI_OK)
		return (*ret_err = "malformed pkcs11: URI (RFC 7512)"), -EINVAL;
	if (p11_kit_uri_get_pin_value(uri) || p11_kit_uri_get_pin_source(uri))
		return (*ret_err = "no PIN in the URI: use --pin-file or the " PKCS11_CREDENTIAL
				   " credential"), -EINVAL;
	if (p11_kit_uri_any_unrecognized(uri))
		return (*ret_err = "unsupported attribute in pkcs11: URI"), -EINVAL;
	if (p11_kit_uri_get_module_name(uri))
		return (*ret_err = "module-name= is not supported: use module-path="), -EINVAL;
	cls = p11_kit_uri_get_attribute(uri, CKA_CLASS);
	if (cls && (cls->ulValueLen != sizeof(CK_OBJECT_CLASS) ||
		    *(CK_OBJECT_CLASS *)cls->pValue != CKO_PRIVATE_KEY))
		return (*ret_err = "the URI must name a private key (type=private)"), -EINVAL;
	*ret = TAKE_PTR(uri);
	return 0;
}

/* Space-padded, as CK_TOKEN_INFO holds it. */
static void pad(unsigned char *dst, size_t n, const char *src)
{
	size_t l = src ? strlen(src) : 0;

	memset(dst, ' ', n);
	memcpy(dst, src, l < n ? l : n);
}

static bool uri_match_token(P11KitUri *uri, const PKCS11_TOKEN *t)
{
	CK_TOKEN_INFO info = { 0 };

	pad(info.label, sizeof(info.label), t->label);
	pad(info.manufacturerID, sizeof(info.manufacturerID), t->manufacturer);
	pad(info.model, sizeof(info.model), t->model);
	pad(info.serialNumber, sizeof(info.serialNumber), t->serialnr);
	return p11_kit_uri_match_token_info(uri, &info) == 1;
}

static bool attr_match(P11KitUri *uri, CK_ATTRIBUTE_TYPE type, const void *v,
		       size_t len)
{
	CK_ATTRIBUTE *a = p11_kit_uri_get_attribute(uri, type);

	if (!a)
		return true;
	return v && a->ulValueLen == len && memcmp(a->pValue, v, len) == 0;
}

static bool uri_match_object(P11KitUri *uri, const char *label,
			     const unsigned char *id, size_t id_len)
{
	return attr_match(uri, CKA_LABEL, label, label ? strlen(label) : 0) &&
	       attr_match(uri, CKA_ID, id, id_len);
}

/* ---- modules ------------------------------------------------------------ */

static int module_load(const char *path, PKCS11_CTX **ret)
{
	PKCS11_CTX *ctx = PKCS11_CTX_new();

	if (!ctx)
		return -ENOMEM;
	if (PKCS11_CTX_load(ctx, path) < 0) {
		PKCS11_CTX_free(ctx);
		ERR_clear_error();
		return -ELIBBAD;
	}
	*ret = ctx;
	return 0;
}

static void module_unload(struct pkcs11_module *m)
{
	if (!m->ctx)
		return;
	PKCS11_CTX_unload(m->ctx);
	PKCS11_CTX_free(TAKE_PTR(m->ctx));
}

static const char *basename_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static int module_get(const char *path, struct pkcs11_module **ret)
{
	struct pkcs11_module *m;
	int r;

	for (m = modules; m; m = m->next)
		if (strcmp(m->path, path) == 0) {
			m->refs++;
			*ret = m;
			return 0;
		}
	m = calloc(1, sizeof(*m));
	if (!m || !(m->path = strdup(path))) {
		free(m);
		return -ENOMEM;
	}
	r = module_load(path, &m->ctx);
	if (r < 0) {
		free(m->path);
		free(m);
		return r;
	}
	pthread_rwlock_init(&m->lock, NULL);
	pthread_mutex_init(&m->call, NULL);
	m->one_call = strcmp(basename_of(path), "p11-kit-client.so") == 0;
	m->refs = 1;
	m->next = modules;
	modules = m;
	*ret = m;
	return 0;
}

static void module_put(struct pkcs11_module *m)
{
	struct pkcs11_module **p;

	if (!m || --m->refs > 0)
		return;
	for (p = &modules; *p != m; p = &(*p)->next)
		;
	*p = m->next;
	module_unload(m);
	pthread_rwlock_destroy(&m->lock);
	pthread_mutex_destroy(&m->call);
	free(m->path);
	free(m);
}

/* ---- PIN ---------------------------------------------------------------- */

/* The PIN file: --pin-file, else the systemd credential when there is one. */
static int pin_path(const struct pkcs11_options *opt, char **ret)
{
	const char *dir = getenv("CREDENTIALS_DIRECTORY");
	char buf[4096];

	if (opt->pin_file)
		return (*ret = strdup(opt->pin_file)) ? 0 : -ENOMEM;
	if (!dir || snprintf(buf, sizeof(buf), "%s/" PKCS11_CREDENTIAL, dir) >= (int)sizeof(buf) ||
	    access(buf, F_OK) < 0) {
		*ret = NULL;
		return 0;
	}
	return (*ret = strdup(buf)) ? 0 : -ENOMEM;
}

/*
 * Read the PIN into @pin (PKCS11_MAX_PIN + 2 bytes, NUL-terminated, the
 * trailing newline dropped).  A file others may read is refused: the PIN
 * is as secret as the key it unlocks.
 */
static int pin_read(const char *path, char *pin, struct stat *ret_st,
		    const char **ret_err)
{
	_cleanup_(closep) int fd = -1;
	struct stat st;
	ssize_t n;

	fd = secret_file_open(path, &st);
	if (fd < 0 && secret_file_refusal(fd, &st))
		return (*ret_err = secret_file_refusal(fd, &st)), fd;
	if (fd < 0)
		return (*ret_err = "cannot open the PIN file"), fd;
	n = read_full(fd, pin, PKCS11_MAX_PIN + 1);
	if (n < 0)
		return (*ret_err = "cannot read the PIN file"), (int)n;
	if (n > 0 && pin[n - 1] == '\n')
		n--;
	pin[n] = '\0';
	if (n == 0 || n > PKCS11_MAX_PIN || memchr(pin, '\n', (size_t)n))
		return (*ret_err = "the PIN file must hold one line of at most 256 bytes"),
		       -EINVAL;
	*ret_st = st;
	return 0;
}

static bool same_file_state(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino &&
	       a->st_size == b->st_size && a->st_mtim.tv_sec == b->st_mtim.tv_sec &&
	       a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* C_Login with @pin, read from the file as it is in @st. */
static int login_with(struct pkcs11_key *pk, PKCS11_SLOT *slot, const char *pin,
		      const struct stat *st, const char **ret_err)
{
	count(&pk->stats.logins);
	if (PKCS11_login(slot, 0, pin) < 0) {
		pk->pin_refused = true;
		pk->refused = *st;
		return (*ret_err = "the token refused the PIN"), -EACCES;
	}
	pk->pin_refused = false;
	return 0;
}

/*
 * Log in to @slot with the PIN read just now; the PIN is wiped on return.
 * A PIN the token refused is not offered again until the file changes:
 * tokens lock the PIN after a few wrong tries.
 */
static int login(struct pkcs11_key *pk, PKCS11_SLOT *slot, const char **ret_err)
{
	char pin[PKCS11_MAX_PIN + 2];
	int logged_in = 0, r;
	struct stat st;

	if (!slot->token->loginRequired ||
	    (PKCS11_is_logged_in(slot, 0, &logged_in) == 0 && logged_in))
		return 0;
	if (!pk->pin_path)
		return (*ret_err = "the token needs a PIN: give --pin-file or the "
				   PKCS11_CREDENTIAL " credential"), -EACCES;
	r = pin_read(pk->pin_path, pin, &st, ret_err);
	if (r >= 0 && pk->pin_refused && same_file_state(&st, &pk->refused)) {
		*ret_err = "the token refused the PIN (not tried again until the PIN file changes)";
		r = -EACCES;
	} else if (r >= 0)
		r = login_with(pk, slot, pin, &st, ret_err);
	memzero_explicit(pin, sizeof(pin));
	return r;
}

/* ---- finding the key ------------------------------------------------------ */

static PKCS11_SLOT *find_token(struct pkcs11_key *pk, const char **ret_err)
{
	PKCS11_SLOT *found = NULL;

	for (unsigned i = 0; i < pk->n_slots; i++) {
		PKCS11_SLOT *s = &pk->slots[i];

		if (!s->token || !s->token->initialized || !uri_match_token(pk->uri, s->token))
			continue;
		if (found)
			return (*ret_err = "the URI matches more than one token"), NULL;
		found = s;
	}
	if (!found)
		*ret_err = "PKCS#11 token unavailable (no token matches the URI)";
	return found;
}

static PKCS11_KEY *find_key(struct pkcs11_key *pk, PKCS11_TOKEN *t, const char **ret_err)
{
	PKCS11_KEY *keys = NULL, *found = NULL;
	unsigned n = 0;

	count(&pk->stats.lookups);
	if (PKCS11_enumerate_keys(t, &keys, &n) < 0)
		return (*ret_err = "cannot list the token's keys"), NULL;
	for (unsigned i = 0; i < n; i++) {
		if (!keys[i].isPrivate ||
		    !uri_match_object(pk->uri, keys[i].label, keys[i].id, keys[i].id_len))
			continue;
		if (found)
			return (*ret_err = "the URI matches more than one private key"), NULL;
		found = &keys[i];
	}
	if (!found)
		*ret_err = "no private key on the token matches the URI";
	return found;
}

/*
 * The certificate the URI names on the token (when it names an object),
 * else the one with the key's id.
 */
static X509 *find_cert(struct pkcs11_key *pk, PKCS11_TOKEN *t, PKCS11_KEY *key)
{
	PKCS11_CERT *certs = NULL, *c = NULL;
	bool named = p11_kit_uri_get_attribute(pk->uri, CKA_LABEL) ||
		     p11_kit_uri_get_attribute(pk->uri, CKA_ID);
	unsigned n = 0;

	count(&pk->stats.lookups);
	if (PKCS11_enumerate_certs(t, &certs, &n) < 0)
		return NULL;
	for (unsigned i = 0; i < n && named && !c; i++)
		if (uri_match_object(pk->uri, certs[i].label, certs[i].id, certs[i].id_len))
			c = &certs[i];
	if (!c)
		c = PKCS11_find_certificate(key);
	return c && c->x509 && X509_up_ref(c->x509) ? c->x509 : NULL;
}

static void teardown(struct pkcs11_key *pk)
{
	EVP_PKEY_free(TAKE_PTR(pk->pkey));
	if (pk->slots && pk->mod->ctx)
		PKCS11_release_all_slots(pk->mod->ctx, pk->slots, pk->n_slots);
	pk->slots = NULL;
	pk->n_slots = 0;
}

/*
 * Enumerate afresh, log in and make pk->pkey; on the way a missing
 * certificate is taken from the token.  Called with @lock held
 * exclusively (or before any thread can see @pk).
 */
static int attach(struct pkcs11_key *pk, const char **ret_err)
{
	PKCS11_SLOT *slot;
	PKCS11_KEY *key;
	EVP_PKEY *pkey;
	int r;

	/*
	 * A token that went away can fail the whole listing (SoftHSM2); libp11
	 * 0.4.12 then leaks the slots it had built (a few hundred bytes per
	 * failed attempt, at most one a second).
	 */
	if (!pk->mod->ctx || PKCS11_enumerate_slots(pk->mod->ctx, &pk->slots, &pk->n_slots) < 0)
		return (*ret_err = "PKCS#11 token unavailable (the module lists no usable slots)"),
		       -ENODEV;
	slot = find_token(pk, ret_err);
	if (!slot)
		return -ENODEV;
	r = login(pk, slot, ret_err);
	if (r < 0)
		return r;
	key = find_key(pk, slot->token, ret_err);
	if (!key)
		return -ENOKEY;
	if (!pk->cert && !(pk->cert = find_cert(pk, slot->token, key)))
		return (*ret_err = "no certificate for the key on the token: give --cert"),
		       -ENOENT;
	pkey = PKCS11_get_private_key(key);
	if (!pkey)
		return (*ret_err = "cannot use the private key"), -EIO;
	if (!X509_check_private_key(pk->cert, pkey)) {
		EVP_PKEY_free(pkey);
		return (*ret_err = "the key on the token does not match the certificate"),
		       -EKEYREJECTED;
	}
	pk->pkey = pkey;
	count(&pk->stats.opens);
	return 0;
}

static void set_health(struct pkcs11_key *pk, int err, const char *why)
{
	__atomic_store_n(&pk->why, err < 0 ? why : NULL, __ATOMIC_RELEASE);
	__atomic_store_n(&pk->err, err, __ATOMIC_RELEASE);
}

static int reattach(struct pkcs11_key *pk)
{
	const char *err = NULL;
	int r;

	teardown(pk);
	pk->last_try_ms = now_ms();
	r = attach(pk, &err);
	if (r < 0)
		teardown(pk);
	ERR_clear_error();
	pk->gen++;
	set_health(pk, r, err);
	return r;
}

int pkcs11_key_open(const char *uri, const struct pkcs11_options *opt,
		    X509 **io_cert, struct pkcs11_key **ret, const char **ret_err)
{
	struct pkcs11_key *pk;
	const char *path;
	int r;

	pk = calloc(1, sizeof(*pk));
	if (!pk)
		return -ENOMEM;
	pthread_rwlock_init(&pk->lock, NULL);
	r = uri_parse(uri, &pk->uri, ret_err);
	if (r < 0)
		goto fail;
	/* The key's own URI is the most specific, then the daemon's option. */
	path = p11_kit_uri_get_module_path(pk->uri) ?: opt->module ?: PKCS11_DEFAULT_MODULE;
	r = module_get(path, &pk->mod);
	if (r < 0) {
		*ret_err = r == -ELIBBAD ? "cannot load the PKCS#11 module" : NULL;
		goto fail;
	}
	pk->next_on_mod = pk->mod->keys;
	pk->mod->keys = pk;
	r = pin_path(opt, &pk->pin_path);
	if (r < 0)
		goto fail;
	if (*io_cert && X509_up_ref(*io_cert))
		pk->cert = *io_cert;
	r = attach(pk, ret_err);
	ERR_clear_error();
	if (r < 0)
		goto fail;
	if (!*io_cert && X509_up_ref(pk->cert))
		*io_cert = pk->cert;
	pk->last_try_ms = now_ms();
	*ret = pk;
	return 0;
fail:
	pkcs11_key_free(pk);
	return r;
}

/* ---- signing and recovery --------------------------------------------- */

/* Sign with the current handle: 1 when there is none (unavailable). */
static int sign_once(struct pkcs11_key *pk, enum pkcs7_sig sig, const struct digest *md,
		     const uint8_t *digest, size_t digest_len, bool use_keyid,
		     uint8_t **ret_der, size_t *ret_len, unsigned long *ret_gen)
{
	int r = 1;

	pthread_rwlock_rdlock(&pk->mod->lock);
	pthread_rwlock_rdlock(&pk->lock);
	*ret_gen = pk->gen;
	if (pk->pkey) {
		if (pk->mod->one_call)
			pthread_mutex_lock(&pk->mod->call);
		count(&pk->stats.sign_calls);
		r = pkcs7_sign_digest_as(pk->cert, pk->pkey, sig, md, digest, digest_len,
					 use_keyid, ret_der, ret_len);
		if (pk->mod->one_call)
			pthread_mutex_unlock(&pk->mod->call);
		ERR_clear_error();
	}
	pthread_rwlock_unlock(&pk->lock);
	pthread_rwlock_unlock(&pk->mod->lock);
	return r;
}

/* PKCS11_RETRY_MS, doubled for each failed reload past the first
 * PKCS11_RELOAD_FAST, up to PKCS11_RELOAD_MAX_MS. */
static uint64_t reload_interval_ms(const struct pkcs11_module *m)
{
	unsigned n = m->failed_reloads > PKCS11_RELOAD_FAST ? m->failed_reloads - PKCS11_RELOAD_FAST : 0;
	uint64_t ms = (uint64_t)PKCS11_RETRY_MS << (n < 8 ? n : 8);

	return ms < PKCS11_RELOAD_MAX_MS ? ms : PKCS11_RELOAD_MAX_MS;
}

/*
 * Finalize and initialize the module again, unless another key just did
 * or the back-off says not yet.  Every key on it drops its handles and
 * re-opens at its next use.
 */
static bool module_reload(struct pkcs11_module *m)
{
	bool due;

	pthread_rwlock_wrlock(&m->lock);
	due = now_ms() - m->last_reload_ms >= reload_interval_ms(m);
	if (due) {
		for (struct pkcs11_key *k = m->keys; k; k = k->next_on_mod) {
			teardown(k);
			k->gen++;
			k->last_try_ms = 0; /* re-open at once, not a failure */
		}
		module_unload(m);
		module_load(m->path, &m->ctx);
		m->last_reload_ms = now_ms();
		log_notice("PKCS#11 module %s reloaded: a token was gone", m->path);
	}
	pthread_rwlock_unlock(&m->lock);
	return due;
}

void pkcs11_retry_now(void)
{
	for (struct pkcs11_module *m = modules; m; m = m->next) {
		pthread_rwlock_wrlock(&m->lock);
		m->failed_reloads = 0;
		m->last_reload_ms = 0;
		for (struct pkcs11_key *k = m->keys; k; k = k->next_on_mod) {
			pthread_rwlock_wrlock(&k->lock);
			k->last_try_ms = 0;
			pthread_rwlock_unlock(&k->lock);
		}
		pthread_rwlock_unlock(&m->lock);
	}
}

/* After a reload: whether it brought the token back. */
static void module_reload_done(struct pkcs11_module *m, bool token_back)
{
	pthread_rwlock_wrlock(&m->lock);
	m->failed_reloads = token_back ? 0 : m->failed_reloads + 1;
	if (!token_back && m->failed_reloads == PKCS11_RELOAD_FAST)
		log_warning("PKCS#11 module %s: token still gone, reloading less often (at most every %d s)",
			    m->path, PKCS11_RELOAD_MAX_MS / 1000);
	pthread_rwlock_unlock(&m->lock);
}

/*
 * Re-open after a failure seen at generation @gen.  After a failed
 * signature (@now) it runs at once, which also tells why the token
 * failed; for a key already unavailable, at most every PKCS11_RETRY_MS.
 */
static int reopen(struct pkcs11_key *pk, unsigned long gen, bool now, bool *ret_tried)
{
	int r;

	*ret_tried = false;
	pthread_rwlock_rdlock(&pk->mod->lock);
	pthread_rwlock_wrlock(&pk->lock);
	if (pk->gen != gen)
		r = pk->pkey ? 0 : pk->err; /* another thread got here first */
	else if (!now && now_ms() - pk->last_try_ms < PKCS11_RETRY_MS)
		r = pk->err;
	else {
		if (pk->mod->one_call)
			pthread_mutex_lock(&pk->mod->call);
		r = reattach(pk);
		if (pk->mod->one_call)
			pthread_mutex_unlock(&pk->mod->call);
		*ret_tried = true;
	}
	pthread_rwlock_unlock(&pk->lock);
	pthread_rwlock_unlock(&pk->mod->lock);
	return r;
}

static int recover(struct pkcs11_key *pk, unsigned long gen, bool now)
{
	bool tried;
	int r = reopen(pk, gen, now, &tried);

	/* The token is gone for this module instance: start it afresh. */
	if (r != -ENODEV || !tried || !module_reload(pk->mod))
		return r;
	pthread_rwlock_rdlock(&pk->lock);
	gen = pk->gen;
	pthread_rwlock_unlock(&pk->lock);
	r = reopen(pk, gen, true, &tried);
	module_reload_done(pk->mod, r != -ENODEV);
	return r;
}

int pkcs11_key_sign(struct pkcs11_key *pk, enum pkcs7_sig sig, const struct digest *md,
		    const uint8_t *digest, size_t digest_len, bool use_keyid,
		    uint8_t **ret_der, size_t *ret_len)
{
	unsigned long gen;
	int r;

	r = sign_once(pk, sig, md, digest, digest_len, use_keyid, ret_der, ret_len, &gen);
	if (r == 0) {
		/* A signature is the proof of health: clear a stale failure. */
		if (__atomic_load_n(&pk->err, __ATOMIC_ACQUIRE) != 0)
			set_health(pk, 0, NULL);
		return 0;
	}
	/* r > 0: unavailable, try again when due; r < 0: diagnose now. */
	r = recover(pk, gen, r < 0);
	if (r < 0)
		return r;
	r = sign_once(pk, sig, md, digest, digest_len, use_keyid, ret_der, ret_len, &gen);
	if (r != 0) {
		/* Re-opened but still failing: an error we cannot name. */
		set_health(pk, -EIO, "the token failed to sign");
		return -EIO;
	}
	set_health(pk, 0, NULL);
	return 0;
}

int pkcs11_key_health(const struct pkcs11_key *pk, const char **ret_why)
{
	int err = __atomic_load_n(&pk->err, __ATOMIC_ACQUIRE);
	const char *why = __atomic_load_n(&pk->why, __ATOMIC_ACQUIRE);

	*ret_why = err < 0 ? why ?: pkcs11_strerror(err) : NULL;
	return err;
}

unsigned long pkcs11_key_reopens(const struct pkcs11_key *pk)
{
	/* gen counts every reattach(); read without the lock, as a gauge is */
	return __atomic_load_n(&pk->gen, __ATOMIC_RELAXED);
}

void pkcs11_key_stats(const struct pkcs11_key *pk, struct pkcs11_key_stats *ret)
{
	ret->opens = __atomic_load_n(&pk->stats.opens, __ATOMIC_RELAXED);
	ret->logins = __atomic_load_n(&pk->stats.logins, __ATOMIC_RELAXED);
	ret->lookups = __atomic_load_n(&pk->stats.lookups, __ATOMIC_RELAXED);
	ret->sign_calls = __atomic_load_n(&pk->stats.sign_calls, __ATOMIC_RELAXED);
}

void pkcs11_key_free(struct pkcs11_key *pk)
{
	if (!pk)
		return;
	if (pk->mod) {
		struct pkcs11_key **p = &pk->mod->keys;

		while (*p && *p != pk)
			p = &(*p)->next_on_mod;
		if (*p)
			*p = pk->next_on_mod;
		teardown(pk);
	}
	module_put(pk->mod);
	X509_free(pk->cert);
	p11_kit_uri_free(pk->uri);
	free(pk->pin_path);
	pthread_rwlock_destroy(&pk->lock);
	free(pk);
}
