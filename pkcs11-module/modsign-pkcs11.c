/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-pkcs11.so: a PKCS#11 2.40 module (3.0's C_GetInterface too)
 * that is a modsignd client (docs/PKCS11.md).  One slot per `server`
 * entry of the client's config (a tls: name with several addresses is a
 * pool: one slot, the first address that answers), each token's objects
 * the keys that server grants this caller.  C_Sign sends a digest and
 * returns the raw signature out of the daemon's PKCS#7; the data itself
 * never leaves the process.  Login is the connection's identity (peer
 * uid, TLS certificate): C_Login takes any PIN and ignores it.
 *
 * Thread safety: one mutex around every call (CKF_OS_LOCKING_OK; the
 * connections are blocking anyway), taken by the one prologue every
 * entry point starts with (enter, enter_slot, enter_session).  Fork safety as p11-kit asks: a
 * child inherits a module whose every call says
 * CKR_CRYPTOKI_NOT_INITIALIZED until it calls C_Initialize, which drops
 * the parent's connection without a word on it (the TLS session is the
 * parent's) and starts afresh.  A fork while another thread is in a
 * call (its lock held, its state half-changed) leaves the child a fresh
 * lock and that state abandoned, never freed (atfork_child).
 * C_Finalize returns everything to the state before the first
 * C_Initialize.
 *
 * OpenSSL: every call runs with a library context of the module's own
 * (the default provider alone) as the thread's default, so that the
 * module's hashing, verifying and TLS never reach the caller's providers:
 * loaded by OpenSSL's pkcs11-provider, which is loaded into the caller's
 * default context, the module verifying a signature through it would
 * call itself back (a deadlock on our lock; seen with sign-file).
 */
#define _GNU_SOURCE /* program_invocation_short_name */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include <openssl/evp.h>
#include <openssl/provider.h>

#include "cert.h"
#include "client.h"
#include "conn.h"
#include "p11-object.h"
#include "p11-sign.h"
#include "pkcs7.h"
#include "proto.h"
#include "rpc.h"
#include "util.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_SLOTS CONN_MAX_SERVERS
#define MAX_SESSIONS 64
#define MAX_KEYS 64
#define MAX_OBJECTS (3 * MAX_KEYS)

/*
 * One `server` entry of the config, as a slot: ids 1..n in list order.
 * Its token holds what that server grants: a key of another server is no
 * object of it, whatever its name.
 */
struct slot {
	const char *server;    /* tok.g's entry */
	char serial[17];       /* hex of SHA-256(server)'s first 8 bytes */
	struct conn *c;
	bool loaded;           /* keys read from the daemon */
	struct p11_key keys[MAX_KEYS];
	size_t n_keys;
	struct p11_object objs[MAX_OBJECTS];
	size_t n_objs;
};

struct session {
	bool open;
	CK_SESSION_HANDLE handle; /* session_handle() when opened */
	struct slot *slot;
	CK_SLOT_ID slot_id;
	CK_FLAGS flags;
	/* C_FindObjects*: the handles that matched, and how far read. */
	bool finding;
	CK_OBJECT_HANDLE found[MAX_OBJECTS];
	size_t n_found, pos;
	/* C_Sign*: the operation under way. */
	const struct p11_mech *mech; /* NULL: none */
	size_t key;
	EVP_MD_CTX *md;   /* hash-and-sign: the data hashed so far */
	uint8_t in[P11_MAX_PREHASHED]; /* else: the digest given so far */
	size_t in_len;
	bool updated;     /* C_SignUpdate called: C_Sign is no longer allowed */
};

static struct token {
	pthread_mutex_t lock;
	bool initialized;
	pid_t pid;             /* who initialized: another is a forked child */
	struct global g;
	struct slot slots[MAX_SLOTS];
	size_t n_slots;
	struct session sessions[MAX_SESSIONS];
	CK_SESSION_HANDLE opened; /* sessions ever opened: handles' generation;
				   * kept across C_Finalize */
	bool torn;              /* forked while another thread was in a call */
	OSSL_LIB_CTX *libctx;   /* ours, with the default provider */
	OSSL_PROVIDER *provider;
	OSSL_LIB_CTX *caller_libctx; /* the thread's default while we run */
} tok = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* ---- messages ----------------------------------------------------------- */

/*
 * A refusal's one line where a person sees it: stderr when it is a
 * terminal (a tool run by hand), else the journal (a build's log would
 * not be read).  Text from the daemon has its controls replaced, so no
 * peer writes escape sequences to a terminal.
 */
static void say(const char *fmt, ...) _printf_(1, 2);
static void say(const char *fmt, ...)
{
	char line[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	for (char *p = line; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			*p = '?';
	if (isatty(STDERR_FILENO))
		fprintf(stderr, "modsign-pkcs11: %s\n", line);
	else
		syslog(LOG_WARNING | LOG_USER, "modsign-pkcs11 (%s): %s",
		       program_invocation_short_name, line);
}

/* ---- the token's state -------------------------------------------------- */

static void session_reset_sign(struct session *s)
{
	EVP_MD_CTX_free(s->md);
	s->md = NULL;
	s->mech = NULL;
	s->in_len = 0;
	s->updated = false;
}

static void keys_drop(struct slot *sl)
{
	for (size_t i = 0; i < sl->n_objs; i++)
		p11_object_done(&sl->objs[i]);
	for (size_t i = 0; i < sl->n_keys; i++)
		p11_key_done(&sl->keys[i]);
	sl->n_objs = sl->n_keys = 0;
	sl->loaded = false;
}

static void sessions_close(const struct slot *sl)
{
	for (size_t i = 0; i < MAX_SESSIONS; i++)
		if (!sl || tok.sessions[i].slot == sl) {
			session_reset_sign(&tok.sessions[i]);
			tok.sessions[i] = (struct session){ 0 };
		}
}

static void token_reset(void)
{
	sessions_close(NULL);
	for (size_t i = 0; i < tok.n_slots; i++) {
		keys_drop(&tok.slots[i]);
		conn_close(tok.slots[i].c);
		tok.slots[i] = (struct slot){ 0 };
	}
	tok.n_slots = 0;
	client_done(&tok.g);
	memset(&tok.g, 0, sizeof(tok.g));
	tok.initialized = false;
}

/* A forked child's C_Initialize after a fork in the middle of another
 * thread's call: the slots, sessions and configuration may be half-made
 * or half-freed, so they are dropped as they are, never freed (a leak of
 * the parent's copy, once). */
static void token_abandon(void)
{
	memset(tok.slots, 0, sizeof(tok.slots));
	tok.n_slots = 0;
	memset(tok.sessions, 0, sizeof(tok.sessions));
	memset(&tok.g, 0, sizeof(tok.g));
	tok.initialized = tok.torn = false;
}

/*
 * fork() in the child: the lock is copied as it was.  Held by another
 * thread of the parent (one waiting on its server, up to
 * CONN_TIMEOUT_SEC), it would stay held for ever in the child, which has
 * no such thread: every call, C_Initialize too, waited on it.  The child
 * gets a fresh lock, and the state that thread was changing is marked
 * torn, for C_Initialize to abandon.
 */
static void atfork_child(void)
{
	if (pthread_mutex_trylock(&tok.lock) == 0) {
		pthread_mutex_unlock(&tok.lock);
		return;
	}
	tok.torn = true;
	pthread_mutex_init(&tok.lock, NULL);
}

/* Our own library context, made once: freeing it at C_Finalize while the
 * caller may hold objects of OpenSSL's that named it is not worth the
 * risk for a few kilobytes. */
static CK_RV libctx_make(void)
{
	if (tok.libctx)
		return CKR_OK;
	tok.libctx = OSSL_LIB_CTX_new();
	tok.provider = tok.libctx ? OSSL_PROVIDER_load(tok.libctx, "default") : NULL;
	if (!tok.provider) {
		OSSL_LIB_CTX_free(tok.libctx);
		tok.libctx = NULL;
		return CKR_HOST_MEMORY;
	}
	return CKR_OK;
}

static void libctx_enter(void)
{
	tok.caller_libctx = OSSL_LIB_CTX_set0_default(tok.libctx);
}

static void libctx_leave(void)
{
	OSSL_LIB_CTX_set0_default(tok.caller_libctx);
}

/* A slot per server entry; its token's serial number is the entry's
 * hash, so a `pkcs11:serial=` URI keeps naming the same server however
 * the list is reordered. */
static CK_RV slots_make(void)
{
	for (size_t i = 0; i < tok.g.n_servers; i++) {
		struct slot *sl = &tok.slots[i];
		uint8_t md[32];

		sl->server = tok.g.servers[i];
		if (!EVP_Digest(sl->server, strlen(sl->server), md, NULL, EVP_sha256(), NULL))
			return CKR_HOST_MEMORY;
		for (size_t j = 0; j < 8; j++)
			snprintf(sl->serial + 2 * j, 3, "%02x", md[j]);
	}
	tok.n_slots = tok.g.n_servers;
	return CKR_OK;
}

/* The slot's connection, opened on first use and again after it failed:
 * to its one entry (every address of a tls: name, the first that
 * answers). */
static CK_RV token_connect(struct slot *sl)
{
	char err[512];
	size_t which;

	if (sl->c)
		return CKR_OK;
	if (conn_open(&sl->server, 1, &tok.g.tls, &sl->c, &which, err, sizeof(err)) < 0) {
		say("%s", err);
		return CKR_DEVICE_ERROR;
	}
	return CKR_OK;
}

static void token_disconnect(struct slot *sl)
{
	conn_close(sl->c);
	sl->c = NULL;
}

/* One key of the status reply into the slot's token: its certificate
 * asked. */
static void token_add_key(struct slot *sl, const char *name)
{
	_cleanup_(X509_freep) X509 *cert = NULL;
	struct rpc_error err;
	char why[128];
	size_t n;
	int r;

	if (sl->n_keys >= MAX_KEYS) {
		say("%s: key %s: more than %d keys, left out", sl->server, name, MAX_KEYS);
		return;
	}
	if (rpc_cert(sl->c, name, &cert, &err) < 0) {
		say("%s: key %s: no certificate: %s", sl->server, name, err.why);
		return;
	}
	r = p11_key_objects(name, cert, sl->n_keys, &sl->keys[sl->n_keys],
			    &sl->objs[sl->n_objs], &n);
	if (r < 0) {
		say("%s: key %s: %s, left out", sl->server, name,
		    p11_key_strerror(cert, r, why, sizeof(why)));
		return;
	}
	sl->n_keys++;
	sl->n_objs += n;
}

/*
 * The keys the slot's server grants us, read once per C_Initialize.  A
 * server that does not answer is a token without objects, said once per
 * attempt and tried again at the next session: a tool looking for a key
 * in every slot then finds it on another server's token.
 */
static void token_load(struct slot *sl)
{
	_cleanup_(rpc_status_freep) struct rpc_status *s = NULL;
	struct rpc_error err;

	if (sl->loaded || token_connect(sl) != CKR_OK)
		return;
	if (rpc_status(sl->c, &s, &err) < 0) {
		say("%s: status: %s", conn_address(sl->c), err.why);
		token_disconnect(sl);
		return;
	}
	for (size_t i = 0; i < s->n_keys; i++)
		if (s->keys[i].granted)
			token_add_key(sl, s->keys[i].name);
	sl->loaded = true;
}

/* ---- the prologue ------------------------------------------------------- */

/*
 * Every call but C_Initialize, C_GetFunctionList and C_GetInterface*
 * starts with one of these.  On CKR_OK the lock is held (and our OpenSSL
 * context is the thread's) until leave(); on any other value nothing is
 * held and the caller returns that value as it is.
 */
static CK_RV enter(void)
{
	pthread_mutex_lock(&tok.lock);
	if (!tok.initialized || tok.pid != getpid()) {
		pthread_mutex_unlock(&tok.lock);
		return CKR_CRYPTOKI_NOT_INITIALIZED;
	}
	libctx_enter();
	return CKR_OK;
}

static CK_RV leave(CK_RV rv)
{
	libctx_leave();
	pthread_mutex_unlock(&tok.lock);
	return rv;
}

/* enter(), then the slot @id (CKR_SLOT_ID_INVALID). */
static CK_RV enter_slot(CK_SLOT_ID id, struct slot **ret)
{
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (id < 1 || id > tok.n_slots)
		return leave(CKR_SLOT_ID_INVALID);
	*ret = &tok.slots[id - 1];
	return CKR_OK;
}

/*
 * Session handles: the slot in tok.sessions is (handle - 1) % MAX_SESSIONS,
 * and each opening takes a new handle for it.  A handle that was the
 * first free index named, once its session was closed, the next session
 * opened, of any slot: a thread still holding it (a use after close)
 * signed in another's session, with another server's key.
 */
static CK_SESSION_HANDLE session_handle(size_t i)
{
	return ++tok.opened * MAX_SESSIONS + i + 1;
}

/* enter(), then the open session @h (CKR_SESSION_HANDLE_INVALID). */
static CK_RV enter_session(CK_SESSION_HANDLE h, struct session **ret)
{
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = h >= 1 ? &tok.sessions[(h - 1) % MAX_SESSIONS] : NULL;
	if (!s || !s->open || s->handle != h)
		return leave(CKR_SESSION_HANDLE_INVALID);
	*ret = s;
	return CKR_OK;
}

/*
 * Object handles: slot i's object j is i * MAX_OBJECTS + j + 1, so that
 * no two tokens share a handle.  A handle that indexed only the session's
 * token made a handle found on slot B, used in a session of slot A, slot
 * A's object of that index: another server's key, signing without a word.
 */
static CK_OBJECT_HANDLE object_handle(const struct slot *sl, size_t j)
{
	return (CK_OBJECT_HANDLE)(sl - tok.slots) * MAX_OBJECTS + j + 1;
}

static struct p11_object *object_get(const struct session *s, CK_OBJECT_HANDLE h)
{
	CK_OBJECT_HANDLE first = object_handle(s->slot, 0);

	return h >= first && h - first < s->slot->n_objs ? &s->slot->objs[h - first] : NULL;
}

static struct p11_key *session_key(const struct session *s)
{
	return &s->slot->keys[s->key];
}

/* ---- general ------------------------------------------------------------ */

static CK_RV mod_Initialize(CK_VOID_PTR args)
{
	CK_C_INITIALIZE_ARGS *a = args;
	char name[] = "modsign-pkcs11", *argv[] = { name, NULL };
	const char *cmd;
	int ind, r;

	/* Our own mutex is the OS's: fine with or without CKF_OS_LOCKING_OK;
	 * a caller that gives only its own lock functions we cannot use. */
	if (a && a->pReserved)
		return CKR_ARGUMENTS_BAD;
	if (a && a->CreateMutex && !(a->flags & CKF_OS_LOCKING_OK))
		return CKR_CANT_LOCK;
	pthread_mutex_lock(&tok.lock);
	if (libctx_make() != CKR_OK) {
		pthread_mutex_unlock(&tok.lock);
		return CKR_HOST_MEMORY;
	}
	libctx_enter();
	if (tok.initialized && tok.pid == getpid())
		return leave(CKR_CRYPTOKI_ALREADY_INITIALIZED);
	if (tok.initialized) {
		/* A forked child: the connections are the parent's; close our
		 * copies of their sockets, never their TLS sessions. */
		for (size_t i = 0; i < tok.n_slots; i++) {
			if (tok.slots[i].c)
				close(conn_fd(tok.slots[i].c));
			tok.slots[i].c = NULL;
		}
		if (tok.torn)
			token_abandon();
		else
			token_reset();
	}
	r = client_parse(&tok.g, 1, argv, &cmd, &ind);
	if (r < 0 || slots_make() != CKR_OK) {
		token_reset();
		return leave(CKR_GENERAL_ERROR);
	}
	tok.pid = getpid();
	tok.initialized = true;
	return leave(CKR_OK);
}

static CK_RV mod_Finalize(CK_VOID_PTR reserved)
{
	CK_RV rv = reserved ? CKR_ARGUMENTS_BAD : enter();

	if (rv != CKR_OK)
		return rv;
	token_reset();
	return leave(CKR_OK);
}

/* Blank-padded, as PKCS#11's fixed-size strings are. */
static void pad(CK_UTF8CHAR *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	memset(dst, ' ', size);
	memcpy(dst, src, n < size ? n : size);
}

static CK_RV mod_GetInfo(CK_INFO_PTR info)
{
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	memset(info, 0, sizeof(*info));
	info->cryptokiVersion = (CK_VERSION){ 2, 40 };
	pad(info->manufacturerID, sizeof(info->manufacturerID), "modsign");
	pad(info->libraryDescription, sizeof(info->libraryDescription), "modsignd client");
	info->libraryVersion = (CK_VERSION){ 0, 1 };
	return leave(CKR_OK);
}

static CK_RV mod_GetSlotList(CK_BBOOL present, CK_SLOT_ID_PTR list, CK_ULONG_PTR count)
{
	CK_RV rv = enter();

	(void)present;
	if (rv != CKR_OK)
		return rv;
	if (!count)
		return leave(CKR_ARGUMENTS_BAD);
	if (list && *count < tok.n_slots)
		rv = CKR_BUFFER_TOO_SMALL;
	else if (list)
		for (size_t i = 0; i < tok.n_slots; i++)
			list[i] = i + 1;
	*count = tok.n_slots;
	return leave(rv);
}

static CK_RV mod_GetSlotInfo(CK_SLOT_ID id, CK_SLOT_INFO_PTR info)
{
	struct slot *sl;
	CK_RV rv = enter_slot(id, &sl);

	if (rv != CKR_OK)
		return rv;
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	memset(info, 0, sizeof(*info));
	pad(info->slotDescription, sizeof(info->slotDescription), sl->server);
	pad(info->manufacturerID, sizeof(info->manufacturerID), "modsign");
	info->flags = CKF_TOKEN_PRESENT | CKF_REMOVABLE_DEVICE | CKF_HW_SLOT;
	return leave(CKR_OK);
}

static CK_RV mod_GetTokenInfo(CK_SLOT_ID id, CK_TOKEN_INFO_PTR info)
{
	struct slot *sl;
	CK_RV rv = enter_slot(id, &sl);

	if (rv != CKR_OK)
		return rv;
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	memset(info, 0, sizeof(*info));
	pad(info->label, sizeof(info->label), "modsign");
	pad(info->manufacturerID, sizeof(info->manufacturerID), "modsign");
	pad(info->model, sizeof(info->model), "modsignd");
	pad(info->serialNumber, sizeof(info->serialNumber), sl->serial);
	/* No CKF_LOGIN_REQUIRED: the connection is the identity. */
	info->flags = CKF_TOKEN_INITIALIZED | CKF_WRITE_PROTECTED;
	info->ulMaxSessionCount = MAX_SESSIONS;
	info->ulMaxRwSessionCount = MAX_SESSIONS;
	info->ulMaxPinLen = 0;
	info->ulMinPinLen = 0;
	info->ulTotalPublicMemory = info->ulFreePublicMemory = CK_UNAVAILABLE_INFORMATION;
	info->ulTotalPrivateMemory = info->ulFreePrivateMemory = CK_UNAVAILABLE_INFORMATION;
	info->hardwareVersion = info->firmwareVersion = (CK_VERSION){ 0, 1 };
	return leave(CKR_OK);
}

static CK_RV mod_GetMechanismList(CK_SLOT_ID id, CK_MECHANISM_TYPE_PTR list, CK_ULONG_PTR count)
{
	size_t n;
	const struct p11_mech *m = p11_mech_all(&n);
	struct slot *sl;
	CK_RV rv = enter_slot(id, &sl);

	if (rv != CKR_OK)
		return rv;
	if (!count)
		return leave(CKR_ARGUMENTS_BAD);
	if (list && *count < n)
		rv = CKR_BUFFER_TOO_SMALL;
	else if (list)
		for (size_t i = 0; i < n; i++)
			list[i] = m[i].type;
	*count = n;
	return leave(rv);
}

static CK_RV mod_GetMechanismInfo(CK_SLOT_ID id, CK_MECHANISM_TYPE type, CK_MECHANISM_INFO_PTR info)
{
	const struct p11_mech *m = p11_mech_find(type);
	struct slot *sl;
	CK_RV rv = enter_slot(id, &sl);

	if (rv != CKR_OK)
		return rv;
	if (!m)
		return leave(CKR_MECHANISM_INVALID);
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	info->ulMinKeySize = m->key_type == CKK_RSA ? 2048 : 256;
	info->ulMaxKeySize = m->key_type == CKK_RSA ? P11_RSA_MAX_BITS : 521;
	info->flags = CKF_SIGN | CKF_HW | (m->key_type == CKK_EC ? CKF_EC_F_P |
					   CKF_EC_NAMEDCURVE | CKF_EC_UNCOMPRESS : 0);
	return leave(CKR_OK);
}

/* ---- sessions ----------------------------------------------------------- */

static CK_RV mod_OpenSession(CK_SLOT_ID id, CK_FLAGS flags, CK_VOID_PTR app, CK_NOTIFY notify,
			   CK_SESSION_HANDLE_PTR ret)
{
	struct slot *sl;
	CK_RV rv = enter_slot(id, &sl);

	(void)app;
	(void)notify;
	if (rv != CKR_OK)
		return rv;
	if (!(flags & CKF_SERIAL_SESSION))
		return leave(CKR_SESSION_PARALLEL_NOT_SUPPORTED);
	if (!ret)
		return leave(CKR_ARGUMENTS_BAD);
	token_load(sl);
	for (size_t i = 0; i < MAX_SESSIONS; i++)
		if (!tok.sessions[i].open) {
			tok.sessions[i] = (struct session){
				.open = true, .handle = session_handle(i), .slot = sl,
				.slot_id = id, .flags = flags,
			};
			*ret = tok.sessions[i].handle;
			return leave(CKR_OK);
		}
	return leave(CKR_SESSION_COUNT);
}

static CK_RV mod_CloseSession(CK_SESSION_HANDLE h)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	session_reset_sign(s);
	*s = (struct session){ 0 };
	return leave(CKR_OK);
}

static CK_RV mod_CloseAllSessions(CK_SLOT_ID id)
{
	struct slot *sl;
	CK_RV rv = enter_slot(id, &sl);

	if (rv != CKR_OK)
		return rv;
	sessions_close(sl);
	return leave(CKR_OK);
}

static CK_RV mod_GetSessionInfo(CK_SESSION_HANDLE h, CK_SESSION_INFO_PTR info)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	info->slotID = s->slot_id;
	/* Public objects only, no login: every session is a user's. */
	info->state = s->flags & CKF_RW_SESSION ? CKS_RW_USER_FUNCTIONS : CKS_RO_USER_FUNCTIONS;
	info->flags = s->flags;
	info->ulDeviceError = 0;
	return leave(CKR_OK);
}

/* The identity is the connection's; a PIN proves nothing more. */
static CK_RV mod_Login(CK_SESSION_HANDLE h, CK_USER_TYPE user, CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	(void)pin;
	(void)len;
	if (rv != CKR_OK)
		return rv;
	return leave(user == CKU_USER || user == CKU_CONTEXT_SPECIFIC ? CKR_OK :
								      CKR_USER_TYPE_INVALID);
}

static CK_RV mod_Logout(CK_SESSION_HANDLE h)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	return rv != CKR_OK ? rv : leave(CKR_OK);
}

/* ---- objects ------------------------------------------------------------ */

static CK_RV mod_FindObjectsInit(CK_SESSION_HANDLE h, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (n && !tmpl)
		return leave(CKR_ARGUMENTS_BAD);
	if (s->finding)
		return leave(CKR_OPERATION_ACTIVE);
	s->n_found = s->pos = 0;
	for (size_t i = 0; i < s->slot->n_objs; i++)
		if (p11_object_match(&s->slot->objs[i], tmpl, n))
			s->found[s->n_found++] = object_handle(s->slot, i);
	s->finding = true;
	return leave(CKR_OK);
}

static CK_RV mod_FindObjects(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE_PTR out, CK_ULONG max,
			   CK_ULONG_PTR count)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);
	CK_ULONG k = 0;

	if (rv != CKR_OK)
		return rv;
	if (!s->finding)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	if (!out || !count)
		return leave(CKR_ARGUMENTS_BAD);
	while (k < max && s->pos < s->n_found)
		out[k++] = s->found[s->pos++];
	*count = k;
	return leave(CKR_OK);
}

static CK_RV mod_FindObjectsFinal(CK_SESSION_HANDLE h)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->finding)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	s->finding = false;
	return leave(CKR_OK);
}

static CK_RV mod_GetAttributeValue(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE oh, CK_ATTRIBUTE_PTR t,
				 CK_ULONG n)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s), first = CKR_OK;
	const struct p11_object *o;

	if (rv != CKR_OK)
		return rv;
	o = object_get(s, oh);
	if (!o)
		return leave(CKR_OBJECT_HANDLE_INVALID);
	if (n && !t)
		return leave(CKR_ARGUMENTS_BAD);
	/* Every attribute is answered; the first failure is returned. */
	for (CK_ULONG i = 0; i < n; i++) {
		CK_RV r = p11_object_get(o, &t[i]);

		if (first == CKR_OK)
			first = r;
	}
	return leave(first);
}

static CK_RV mod_GetObjectSize(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE oh, CK_ULONG_PTR size)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (!object_get(s, oh))
		return leave(CKR_OBJECT_HANDLE_INVALID);
	if (!size)
		return leave(CKR_ARGUMENTS_BAD);
	*size = CK_UNAVAILABLE_INFORMATION;
	return leave(CKR_OK);
}

/* ---- signing ------------------------------------------------------------ */

static CK_RV mod_SignInit(CK_SESSION_HANDLE h, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);
	const struct p11_object *o;
	const struct p11_mech *m;

	if (rv != CKR_OK)
		return rv;
	if (!mech)
		return leave(CKR_ARGUMENTS_BAD);
	if (s->mech)
		return leave(CKR_OPERATION_ACTIVE);
	o = object_get(s, key);
	if (!o || o->class != CKO_PRIVATE_KEY)
		return leave(CKR_KEY_HANDLE_INVALID);
	m = p11_mech_find(mech->mechanism);
	if (!m) {
		say("mechanism 0x%lx: not one modsign signs with", (unsigned long)mech->mechanism);
		return leave(CKR_MECHANISM_INVALID);
	}
	if (mech->ulParameterLen)
		return leave(CKR_MECHANISM_PARAM_INVALID);
	if (m->key_type != s->slot->keys[o->key].type) {
		say("key %s: mechanism 0x%lx is for another key type", s->slot->keys[o->key].name,
		    (unsigned long)m->type);
		return leave(CKR_KEY_TYPE_INCONSISTENT);
	}
	if (m->hash) {
		s->md = EVP_MD_CTX_new();
		if (!s->md || !EVP_DigestInit_ex(s->md, digest_evp(digest_lookup(m->hash)), NULL)) {
			session_reset_sign(s);
			return leave(CKR_HOST_MEMORY);
		}
	}
	s->mech = m;
	s->key = o->key;
	s->updated = false;
	return leave(CKR_OK);
}

/* More than any digest, to a mechanism that takes one: the caller meant
 * to send data, which never leaves the module. */
static CK_RV too_long(const struct session *s, size_t len)
{
	say("key %s: %zu bytes or more to sign: a digest is expected (hash the data, "
	    "or use a hash-and-sign mechanism)", session_key(s)->name, len);
	return CKR_DATA_LEN_RANGE;
}

/* The hash and digest this operation sends: of the data hashed here, or
 * named by the caller's input (a DigestInfo, a raw ECDSA digest). */
static CK_RV sign_digest(struct session *s, const uint8_t *data, size_t len,
			 const struct digest **md, uint8_t *digest, size_t *digest_len)
{
	const uint8_t *d;
	unsigned dl;

	if (s->mech->hash) {
		*md = digest_lookup(s->mech->hash);
		if (!EVP_DigestFinal_ex(s->md, digest, &dl))
			return CKR_FUNCTION_FAILED;
		*digest_len = dl;
		return CKR_OK;
	}
	if (len > P11_MAX_PREHASHED)
		return too_long(s, len);
	if (s->mech->type == CKM_RSA_PKCS) {
		if (p11_digestinfo_parse(data, len, md, &d, digest_len) < 0) {
			say("key %s: CKM_RSA_PKCS input is not a DigestInfo of " DIGEST_NAMES,
			    session_key(s)->name);
			return CKR_DATA_INVALID;
		}
		memcpy(digest, d, *digest_len);
		return CKR_OK;
	}
	if (p11_digest_by_len(len, md) < 0) {
		say("key %s: a %zu-byte ECDSA digest is none of sha256, sha384, sha512",
		    session_key(s)->name, len);
		return CKR_DATA_LEN_RANGE;
	}
	memcpy(digest, data, len);
	*digest_len = len;
	return CKR_OK;
}

/*
 * What the daemon's records say of a request (docs/PROTOCOL.md "sign"):
 * the "module" is the object the tool named, `pkcs11:object=NAME`, and
 * the "program" the caller's name, program_invocation_short_name (argv[0]'s
 * last part: `sign-file` for scripts/sign-file, which /proc/self/comm
 * would cut to 15 bytes) made to the protocol's rule.  Both are the
 * caller's word; the connection's identity is the daemon's own.
 */
static void request_names(const struct p11_key *k, char *module, size_t size,
			  char program[static PROTO_MAX_PROGRAM + 1])
{
	snprintf(module, size, "pkcs11:object=%s", k->name);
	proto_program_clean(program_invocation_short_name, program);
}

/* The daemon of @sl's signature of @digest as PKCS#11 returns it. */
static CK_RV sign_remote(struct slot *sl, const struct p11_key *k, const struct digest *md,
			 const uint8_t *digest, size_t digest_len, uint8_t **ret, size_t *ret_len)
{
	_cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
	_cleanup_(rpc_sign_freep) struct rpc_sign *sig = NULL;
	char module[PROTO_MAX_NAME + 32], program[PROTO_MAX_PROGRAM + 1];
	struct rpc_sign_args a = {
		.key = k->name, .hash = digest_name(md), .digest = digest,
		.digest_len = digest_len, .module = module, .program = program,
	};
	struct rpc_error err;
	const char *why = NULL;
	int r;

	request_names(k, module, sizeof(module), program);
	for (int attempt = 0; attempt < 2; attempt++) {
		if (token_connect(sl) != CKR_OK)
			return CKR_DEVICE_ERROR;
		req = rpc_sign_request(conn_next_id(sl->c), &a);
		if (!req)
			return CKR_HOST_MEMORY;
		r = conn_call(sl->c, req, &reply, &why);
		if (r != -ECONNRESET && r != -EPIPE)
			break;
		/* The daemon hung up an idle connection: once more, anew. */
		json_object_put(TAKE_PTR(req));
		token_disconnect(sl);
	}
	if (r == -EREMOTEIO) {
		say("key %s: refused: %s", k->name, why ?: "?");
		return CKR_FUNCTION_REJECTED;
	}
	if (r < 0) {
		say("key %s: %s", k->name, conn_strerror(sl->c, r));
		token_disconnect(sl);
		return CKR_DEVICE_ERROR;
	}
	if (rpc_sign_reply(reply, NULL, &sig, &err) < 0) {
		say("key %s: %s", k->name, err.why);
		return CKR_DEVICE_ERROR;
	}
	/* The daemon's word checked as the client checks it: a signature of
	 * this digest by this certificate's key, or nothing. */
	if (pkcs7_verify_digest(sig->signature, sig->signature_len, k->cert, md, digest,
				digest_len, false) < 0 ||
	    p11_sig_from_pkcs7(sig->signature, sig->signature_len, k->type, k->sig_len / 2, ret,
			       ret_len) < 0) {
		say("key %s: the daemon's signature does not verify", k->name);
		return CKR_DEVICE_ERROR;
	}
	return CKR_OK;
}

/* C_Sign and C_SignFinal: the size query, then the signature; the
 * operation ends unless the caller only asked the size or gave too
 * small a buffer.  @data is C_Sign's (hashed here by a hash-and-sign
 * mechanism) or the digest C_SignUpdate kept (C_SignFinal; none for a
 * hash-and-sign mechanism, whose updates are hashed as they come). */
static CK_RV sign_finish(struct session *s, const uint8_t *data, size_t len, CK_BYTE_PTR out,
			 CK_ULONG_PTR out_len)
{
	const struct p11_key *k = session_key(s);
	uint8_t digest[DIGEST_MAX_LEN], *sig = NULL;
	const struct digest *md = NULL;
	size_t digest_len = 0, sig_len = 0;
	CK_RV rv;

	if (!out_len)
		return CKR_ARGUMENTS_BAD;
	if (!out) {
		*out_len = k->sig_len;
		return CKR_OK;
	}
	if (*out_len < k->sig_len) {
		*out_len = k->sig_len;
		return CKR_BUFFER_TOO_SMALL;
	}
	/* Hashed only now, when the operation ends: data hashed before a
	 * size query or a short buffer would be hashed again when the
	 * caller calls back with the same data, and data||data signed. */
	rv = s->mech->hash && len && !EVP_DigestUpdate(s->md, data, len) ? CKR_FUNCTION_FAILED :
									     CKR_OK;
	if (rv == CKR_OK)
		rv = sign_digest(s, data, len, &md, digest, &digest_len);
	if (rv == CKR_OK)
		rv = sign_remote(s->slot, k, md, digest, digest_len, &sig, &sig_len);
	if (rv == CKR_OK && sig_len > *out_len)
		rv = CKR_DEVICE_ERROR;
	if (rv == CKR_OK) {
		memcpy(out, sig, sig_len);
		*out_len = sig_len;
	}
	free(sig);
	session_reset_sign(s);
	return rv;
}

static CK_RV mod_Sign(CK_SESSION_HANDLE h, CK_BYTE_PTR data, CK_ULONG len, CK_BYTE_PTR out,
		    CK_ULONG_PTR out_len)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->mech || s->updated)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	if (!data && len)
		return leave(CKR_ARGUMENTS_BAD);
	return leave(sign_finish(s, data, len, out, out_len));
}

static CK_RV mod_SignUpdate(CK_SESSION_HANDLE h, CK_BYTE_PTR data, CK_ULONG len)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->mech)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	if (!data && len)
		return leave(CKR_ARGUMENTS_BAD);
	/* The hash-and-sign mechanisms hash; the others (single-part in the
	 * standard, multi-part for tools that always update) keep a digest's
	 * worth and refuse more. */
	/* The bound as room left: in_len + len wraps for len near
	 * CK_ULONG's maximum, and passed. */
	if (!s->mech->hash && len > sizeof(s->in) - s->in_len) {
		rv = too_long(s, len > SIZE_MAX - s->in_len ? SIZE_MAX : s->in_len + len);
		session_reset_sign(s);
		return leave(rv);
	}
	if (!s->mech->hash) {
		memcpy(s->in + s->in_len, data, len);
		s->in_len += len;
	} else if (!EVP_DigestUpdate(s->md, data, len)) {
		session_reset_sign(s);
		return leave(CKR_FUNCTION_FAILED);
	}
	s->updated = true;
	return leave(CKR_OK);
}

static CK_RV mod_SignFinal(CK_SESSION_HANDLE h, CK_BYTE_PTR out, CK_ULONG_PTR out_len)
{
	struct session *s;
	CK_RV rv = enter_session(h, &s);

	if (rv != CKR_OK)
		return rv;
	if (!s->mech)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	s->updated = true;
	return leave(sign_finish(s, s->in, s->in_len, out, out_len));
}

/* ---- the function list -------------------------------------------------- */

/* Everything else: a token that only signs. */
static CK_RV not_supported(void)
{
	return CKR_FUNCTION_NOT_SUPPORTED;
}

/*
 * PKCS#11 3.0's function list is 2.40's, then these 24, in this order
 * (the standard's CK_FUNCTION_LIST_3_0).  Its types are ours: bookworm's
 * p11-kit (0.24) has no 3.0 header, trixie's (0.25) has one, and a
 * structure of our own names is the same bytes under either.  Of the
 * 3.0 functions only the two that find the lists are done; the rest
 * (C_LoginUser, C_SessionCancel, the message-based ones) are
 * not_supported.
 */
enum {
	FN3_GET_INTERFACE_LIST, FN3_GET_INTERFACE, FN3_LOGIN_USER, FN3_SESSION_CANCEL,
	FN3_COUNT = 24,
};

struct function_list_3_0 {
	CK_FUNCTION_LIST v2;
	void (*v3[FN3_COUNT])(void);
};

/* CK_INTERFACE. */
struct interface {
	CK_UTF8CHAR *name;
	void *functions;
	CK_FLAGS flags;
};

static CK_FUNCTION_LIST functions;
static struct function_list_3_0 functions_3_0;

/* What C_GetInterfaceList offers, the default first.  Flags 0: not
 * CKF_INTERFACE_FORK_SAFE, a child must call C_Initialize (as p11-kit
 * asks of every module). */
static struct interface interfaces[] = {
	{ (CK_UTF8CHAR *)"PKCS 11", &functions_3_0, 0 },
	{ (CK_UTF8CHAR *)"PKCS 11", &functions, 0 },
};

static CK_VERSION interface_version(const struct interface *i)
{
	return ((const CK_FUNCTION_LIST *)i->functions)->version;
}

EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ret)
{
	if (!ret)
		return CKR_ARGUMENTS_BAD;
	*ret = &functions;
	return CKR_OK;
}

/* Exported under the standard's names, declared under ours: trixie's
 * header declares C_GetInterface* with its own CK_INTERFACE. */
EXPORT CK_RV mod_GetInterfaceList(struct interface *list, CK_ULONG_PTR count)
	__asm__("C_GetInterfaceList");
EXPORT CK_RV mod_GetInterface(CK_UTF8CHAR_PTR name, CK_VERSION_PTR version,
			      struct interface **ret, CK_FLAGS flags) __asm__("C_GetInterface");

CK_RV mod_GetInterfaceList(struct interface *list, CK_ULONG_PTR count)
{
	CK_ULONG n = ELEMENTSOF(interfaces);

	if (!count)
		return CKR_ARGUMENTS_BAD;
	if (list && *count < n) {
		*count = n;
		return CKR_BUFFER_TOO_SMALL;
	}
	if (list)
		memcpy(list, interfaces, sizeof(interfaces));
	*count = n;
	return CKR_OK;
}

/* The first interface named @name (NULL: any) of @version (NULL: any)
 * with every flag of @flags; none is CKR_ARGUMENTS_BAD, as the standard
 * says. */
CK_RV mod_GetInterface(CK_UTF8CHAR_PTR name, CK_VERSION_PTR version, struct interface **ret,
		       CK_FLAGS flags)
{
	if (!ret)
		return CKR_ARGUMENTS_BAD;
	for (size_t i = 0; i < ELEMENTSOF(interfaces); i++) {
		struct interface *it = &interfaces[i];
		CK_VERSION v = interface_version(it);

		if (name && strcmp((const char *)name, (const char *)it->name) != 0)
			continue;
		if (version && (version->major != v.major || version->minor != v.minor))
			continue;
		if ((it->flags & flags) != flags)
			continue;
		*ret = it;
		return CKR_OK;
	}
	return CKR_ARGUMENTS_BAD;
}

/*
 * Every slot not filled below is not_supported, cast: a function that
 * takes any arguments and returns CKR_FUNCTION_NOT_SUPPORTED is what the
 * caller sees either way on every ABI this builds for (the callee ignores
 * its arguments; the caller cleans up after cdecl/SysV calls).
 */
static void fill_not_supported(void (**slot)(void), size_t n)
{
	for (size_t i = 0; i < n; i++)
		slot[i] = (void (*)(void))not_supported;
}

__attribute__((constructor)) static void functions_fill(void)
{
	size_t first = offsetof(CK_FUNCTION_LIST, C_Initialize);

	/* glibc drops the handler when the module is unloaded (dlclose). */
	pthread_atfork(NULL, NULL, atfork_child);
	fill_not_supported((void (**)(void))((char *)&functions + first),
			   (sizeof(functions) - first) / sizeof(void (*)(void)));
	functions.version = (CK_VERSION){ 2, 40 };
	functions.C_Initialize = mod_Initialize;
	functions.C_Finalize = mod_Finalize;
	functions.C_GetInfo = mod_GetInfo;
	functions.C_GetFunctionList = C_GetFunctionList;
	functions.C_GetSlotList = mod_GetSlotList;
	functions.C_GetSlotInfo = mod_GetSlotInfo;
	functions.C_GetTokenInfo = mod_GetTokenInfo;
	functions.C_GetMechanismList = mod_GetMechanismList;
	functions.C_GetMechanismInfo = mod_GetMechanismInfo;
	functions.C_OpenSession = mod_OpenSession;
	functions.C_CloseSession = mod_CloseSession;
	functions.C_CloseAllSessions = mod_CloseAllSessions;
	functions.C_GetSessionInfo = mod_GetSessionInfo;
	functions.C_Login = mod_Login;
	functions.C_Logout = mod_Logout;
	functions.C_GetAttributeValue = mod_GetAttributeValue;
	functions.C_GetObjectSize = mod_GetObjectSize;
	functions.C_FindObjectsInit = mod_FindObjectsInit;
	functions.C_FindObjects = mod_FindObjects;
	functions.C_FindObjectsFinal = mod_FindObjectsFinal;
	functions.C_SignInit = mod_SignInit;
	functions.C_Sign = mod_Sign;
	functions.C_SignUpdate = mod_SignUpdate;
	functions.C_SignFinal = mod_SignFinal;

	/* 3.0: the same functions, then its own. */
	functions_3_0.v2 = functions;
	functions_3_0.v2.version = (CK_VERSION){ 3, 0 };
	fill_not_supported(functions_3_0.v3, FN3_COUNT);
	functions_3_0.v3[FN3_GET_INTERFACE_LIST] = (void (*)(void))mod_GetInterfaceList;
	functions_3_0.v3[FN3_GET_INTERFACE] = (void (*)(void))mod_GetInterface;
}
