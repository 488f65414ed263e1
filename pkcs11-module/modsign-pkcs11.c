/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * modsign-pkcs11.so: a PKCS#11 2.40 module that is a modsignd client
 * (docs/PKCS11-MODULE.md).  One slot, whose token is the configured
 * server list (the client's config: servers, TLS files); its objects are
 * the keys the daemon grants this caller.  C_Sign sends a digest and
 * returns the raw signature out of the daemon's PKCS#7; the data itself
 * never leaves the process.  Login is the connection's identity (peer
 * uid, TLS certificate): C_Login takes any PIN and ignores it.
 *
 * Thread safety: one mutex around every call (CKF_OS_LOCKING_OK; the
 * one connection is blocking anyway).  Fork safety as p11-kit asks: a
 * child inherits a module whose every call says
 * CKR_CRYPTOKI_NOT_INITIALIZED until it calls C_Initialize, which drops
 * the parent's connection without a word on it (the TLS session is the
 * parent's) and starts afresh.  C_Finalize returns everything to the
 * state before the first C_Initialize.
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
#include "rpc.h"
#include "util.h"

#define EXPORT __attribute__((visibility("default")))
#define SLOT_ID 1
#define MAX_SESSIONS 64
#define MAX_KEYS 64
#define MAX_OBJECTS (3 * MAX_KEYS)

struct session {
	bool open;
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
	struct conn *c;
	bool loaded;           /* keys read from the daemon */
	struct p11_key keys[MAX_KEYS];
	size_t n_keys;
	struct p11_object objs[MAX_OBJECTS];
	size_t n_objs;
	struct session sessions[MAX_SESSIONS];
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

static void keys_drop(void)
{
	for (size_t i = 0; i < tok.n_objs; i++)
		p11_object_done(&tok.objs[i]);
	for (size_t i = 0; i < tok.n_keys; i++)
		p11_key_done(&tok.keys[i]);
	tok.n_objs = tok.n_keys = 0;
	tok.loaded = false;
}

static void token_reset(void)
{
	for (size_t i = 0; i < MAX_SESSIONS; i++) {
		session_reset_sign(&tok.sessions[i]);
		tok.sessions[i] = (struct session){ 0 };
	}
	keys_drop();
	conn_close(tok.c);
	tok.c = NULL;
	client_done(&tok.g);
	memset(&tok.g, 0, sizeof(tok.g));
	tok.initialized = false;
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

/* The connection, opened on first use and again after it failed. */
static CK_RV token_connect(void)
{
	char err[512];
	size_t which;

	if (tok.c)
		return CKR_OK;
	if (conn_open(tok.g.servers, tok.g.n_servers, &tok.g.tls, &tok.c, &which, err,
		      sizeof(err)) < 0) {
		say("%s", err);
		return CKR_DEVICE_ERROR;
	}
	return CKR_OK;
}

static void token_disconnect(void)
{
	conn_close(tok.c);
	tok.c = NULL;
}

/* One key of the status reply into the token: its certificate asked. */
static void token_add_key(const char *name)
{
	_cleanup_(X509_freep) X509 *cert = NULL;
	struct rpc_error err;
	size_t n;

	if (tok.n_keys >= MAX_KEYS) {
		say("key %s: more than %d keys, left out", name, MAX_KEYS);
		return;
	}
	if (rpc_cert(tok.c, name, &cert, &err) < 0) {
		say("key %s: no certificate: %s", name, err.why);
		return;
	}
	if (p11_key_objects(name, cert, tok.n_keys, &tok.keys[tok.n_keys],
			    &tok.objs[tok.n_objs], &n) < 0) {
		say("key %s: neither RSA nor EC, left out", name);
		return;
	}
	tok.n_keys++;
	tok.n_objs += n;
}

/* The keys the daemon grants us, read once per C_Initialize. */
static CK_RV token_load(void)
{
	_cleanup_(rpc_status_freep) struct rpc_status *s = NULL;
	struct rpc_error err;
	CK_RV rv;

	if (tok.loaded)
		return CKR_OK;
	rv = token_connect();
	if (rv != CKR_OK)
		return rv;
	if (rpc_status(tok.c, &s, &err) < 0) {
		say("%s: status: %s", conn_address(tok.c), err.why);
		token_disconnect();
		return CKR_DEVICE_ERROR;
	}
	for (size_t i = 0; i < s->n_keys; i++)
		if (s->keys[i].granted)
			token_add_key(s->keys[i].name);
	tok.loaded = true;
	return CKR_OK;
}

/* Every call but C_Initialize and C_GetFunctionList starts here. */
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

static struct session *session_get(CK_SESSION_HANDLE h)
{
	if (h < 1 || h > MAX_SESSIONS || !tok.sessions[h - 1].open)
		return NULL;
	return &tok.sessions[h - 1];
}

static struct p11_object *object_get(CK_OBJECT_HANDLE h)
{
	return h >= 1 && h <= tok.n_objs ? &tok.objs[h - 1] : NULL;
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
		/* A forked child: the connection is the parent's; close our copy
		 * of its socket, never its TLS session. */
		if (tok.c)
			close(conn_fd(tok.c));
		tok.c = NULL;
		token_reset();
	}
	r = client_parse(&tok.g, 1, argv, &cmd, &ind);
	if (r < 0) {
		client_done(&tok.g);
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
	if (list && *count < 1)
		rv = CKR_BUFFER_TOO_SMALL;
	else if (list)
		list[0] = SLOT_ID;
	*count = 1;
	return leave(rv);
}

static CK_RV mod_GetSlotInfo(CK_SLOT_ID id, CK_SLOT_INFO_PTR info)
{
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (id != SLOT_ID)
		return leave(CKR_SLOT_ID_INVALID);
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	memset(info, 0, sizeof(*info));
	pad(info->slotDescription, sizeof(info->slotDescription), tok.g.servers[0]);
	pad(info->manufacturerID, sizeof(info->manufacturerID), "modsign");
	info->flags = CKF_TOKEN_PRESENT | CKF_REMOVABLE_DEVICE | CKF_HW_SLOT;
	return leave(CKR_OK);
}

static CK_RV mod_GetTokenInfo(CK_SLOT_ID id, CK_TOKEN_INFO_PTR info)
{
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (id != SLOT_ID)
		return leave(CKR_SLOT_ID_INVALID);
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	memset(info, 0, sizeof(*info));
	pad(info->label, sizeof(info->label), "modsign");
	pad(info->manufacturerID, sizeof(info->manufacturerID), "modsign");
	pad(info->model, sizeof(info->model), "modsignd");
	pad(info->serialNumber, sizeof(info->serialNumber), "1");
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
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (id != SLOT_ID)
		return leave(CKR_SLOT_ID_INVALID);
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
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (id != SLOT_ID)
		return leave(CKR_SLOT_ID_INVALID);
	if (!m)
		return leave(CKR_MECHANISM_INVALID);
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	info->ulMinKeySize = m->key_type == CKK_RSA ? 2048 : 256;
	info->ulMaxKeySize = m->key_type == CKK_RSA ? 16384 : 521;
	info->flags = CKF_SIGN | CKF_HW | (m->key_type == CKK_EC ? CKF_EC_F_P |
					   CKF_EC_NAMEDCURVE | CKF_EC_UNCOMPRESS : 0);
	return leave(CKR_OK);
}

/* ---- sessions ----------------------------------------------------------- */

static CK_RV mod_OpenSession(CK_SLOT_ID id, CK_FLAGS flags, CK_VOID_PTR app, CK_NOTIFY notify,
			   CK_SESSION_HANDLE_PTR ret)
{
	CK_RV rv = enter();

	(void)app;
	(void)notify;
	if (rv != CKR_OK)
		return rv;
	if (id != SLOT_ID)
		return leave(CKR_SLOT_ID_INVALID);
	if (!(flags & CKF_SERIAL_SESSION))
		return leave(CKR_SESSION_PARALLEL_NOT_SUPPORTED);
	if (!ret)
		return leave(CKR_ARGUMENTS_BAD);
	rv = token_load();
	if (rv != CKR_OK)
		return leave(rv);
	for (size_t i = 0; i < MAX_SESSIONS; i++)
		if (!tok.sessions[i].open) {
			tok.sessions[i] = (struct session){ .open = true, .flags = flags };
			*ret = i + 1;
			return leave(CKR_OK);
		}
	return leave(CKR_SESSION_COUNT);
}

static CK_RV mod_CloseSession(CK_SESSION_HANDLE h)
{
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	session_reset_sign(s);
	*s = (struct session){ 0 };
	return leave(CKR_OK);
}

static CK_RV mod_CloseAllSessions(CK_SLOT_ID id)
{
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (id != SLOT_ID)
		return leave(CKR_SLOT_ID_INVALID);
	for (size_t i = 0; i < MAX_SESSIONS; i++) {
		session_reset_sign(&tok.sessions[i]);
		tok.sessions[i] = (struct session){ 0 };
	}
	return leave(CKR_OK);
}

static CK_RV mod_GetSessionInfo(CK_SESSION_HANDLE h, CK_SESSION_INFO_PTR info)
{
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (!info)
		return leave(CKR_ARGUMENTS_BAD);
	info->slotID = SLOT_ID;
	/* Public objects only, no login: every session is a user's. */
	info->state = s->flags & CKF_RW_SESSION ? CKS_RW_USER_FUNCTIONS : CKS_RO_USER_FUNCTIONS;
	info->flags = s->flags;
	info->ulDeviceError = 0;
	return leave(CKR_OK);
}

/* The identity is the connection's; a PIN proves nothing more. */
static CK_RV mod_Login(CK_SESSION_HANDLE h, CK_USER_TYPE user, CK_UTF8CHAR_PTR pin, CK_ULONG len)
{
	CK_RV rv = enter();

	(void)pin;
	(void)len;
	if (rv != CKR_OK)
		return rv;
	if (!session_get(h))
		return leave(CKR_SESSION_HANDLE_INVALID);
	return leave(user == CKU_USER || user == CKU_CONTEXT_SPECIFIC ? CKR_OK :
								      CKR_USER_TYPE_INVALID);
}

static CK_RV mod_Logout(CK_SESSION_HANDLE h)
{
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	return leave(session_get(h) ? CKR_OK : CKR_SESSION_HANDLE_INVALID);
}

/* ---- objects ------------------------------------------------------------ */

static CK_RV mod_FindObjectsInit(CK_SESSION_HANDLE h, CK_ATTRIBUTE_PTR tmpl, CK_ULONG n)
{
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (n && !tmpl)
		return leave(CKR_ARGUMENTS_BAD);
	if (s->finding)
		return leave(CKR_OPERATION_ACTIVE);
	s->n_found = s->pos = 0;
	for (size_t i = 0; i < tok.n_objs; i++)
		if (p11_object_match(&tok.objs[i], tmpl, n))
			s->found[s->n_found++] = i + 1;
	s->finding = true;
	return leave(CKR_OK);
}

static CK_RV mod_FindObjects(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE_PTR out, CK_ULONG max,
			   CK_ULONG_PTR count)
{
	CK_RV rv = enter();
	struct session *s;
	CK_ULONG k = 0;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
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
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (!s->finding)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	s->finding = false;
	return leave(CKR_OK);
}

static CK_RV mod_GetAttributeValue(CK_SESSION_HANDLE h, CK_OBJECT_HANDLE oh, CK_ATTRIBUTE_PTR t,
				 CK_ULONG n)
{
	CK_RV rv = enter(), first = CKR_OK;
	const struct p11_object *o;

	if (rv != CKR_OK)
		return rv;
	if (!session_get(h))
		return leave(CKR_SESSION_HANDLE_INVALID);
	o = object_get(oh);
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
	CK_RV rv = enter();

	if (rv != CKR_OK)
		return rv;
	if (!session_get(h))
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (!object_get(oh))
		return leave(CKR_OBJECT_HANDLE_INVALID);
	if (!size)
		return leave(CKR_ARGUMENTS_BAD);
	*size = CK_UNAVAILABLE_INFORMATION;
	return leave(CKR_OK);
}

/* ---- signing ------------------------------------------------------------ */

static CK_RV mod_SignInit(CK_SESSION_HANDLE h, CK_MECHANISM_PTR mech, CK_OBJECT_HANDLE key)
{
	CK_RV rv = enter();
	const struct p11_object *o;
	const struct p11_mech *m;
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (!mech)
		return leave(CKR_ARGUMENTS_BAD);
	if (s->mech)
		return leave(CKR_OPERATION_ACTIVE);
	o = object_get(key);
	if (!o || o->class != CKO_PRIVATE_KEY)
		return leave(CKR_KEY_HANDLE_INVALID);
	m = p11_mech_find(mech->mechanism);
	if (!m) {
		say("mechanism 0x%lx: not one modsign signs with", (unsigned long)mech->mechanism);
		return leave(CKR_MECHANISM_INVALID);
	}
	if (mech->ulParameterLen)
		return leave(CKR_MECHANISM_PARAM_INVALID);
	if (m->key_type != tok.keys[o->key].type) {
		say("key %s: mechanism 0x%lx is for another key type", tok.keys[o->key].name,
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
	    "or use a hash-and-sign mechanism)", tok.keys[s->key].name, len);
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
			    tok.keys[s->key].name);
			return CKR_DATA_INVALID;
		}
		memcpy(digest, d, *digest_len);
		return CKR_OK;
	}
	if (p11_digest_by_len(len, md) < 0) {
		say("key %s: a %zu-byte ECDSA digest is none of sha256, sha384, sha512",
		    tok.keys[s->key].name, len);
		return CKR_DATA_LEN_RANGE;
	}
	memcpy(digest, data, len);
	*digest_len = len;
	return CKR_OK;
}

/* What the audit log records as the "module": which program asked,
 * through what, for which object. */
static void audit_name(const struct p11_key *k, char *buf, size_t size)
{
	snprintf(buf, size, "pkcs11:object=%s (by %s)", k->name, program_invocation_short_name);
}

/* The daemon's signature of @digest as PKCS#11 returns it. */
static CK_RV sign_remote(const struct p11_key *k, const struct digest *md, const uint8_t *digest,
			 size_t digest_len, uint8_t **ret, size_t *ret_len)
{
	_cleanup_(json_object_putp) json_object *req = NULL, *reply = NULL;
	_cleanup_(rpc_sign_freep) struct rpc_sign *sig = NULL;
	char module[PROTO_MAX_NAME + 256];
	struct rpc_sign_args a = {
		.key = k->name, .hash = digest_name(md), .digest = digest,
		.digest_len = digest_len, .module = module,
	};
	struct rpc_error err;
	const char *why = NULL;
	int r;

	audit_name(k, module, sizeof(module));
	for (int attempt = 0; attempt < 2; attempt++) {
		if (token_connect() != CKR_OK)
			return CKR_DEVICE_ERROR;
		req = rpc_sign_request(conn_next_id(tok.c), &a);
		if (!req)
			return CKR_HOST_MEMORY;
		r = conn_call(tok.c, req, &reply, &why);
		if (r != -ECONNRESET && r != -EPIPE)
			break;
		/* The daemon hung up an idle connection: once more, anew. */
		json_object_put(TAKE_PTR(req));
		token_disconnect();
	}
	if (r == -EREMOTEIO) {
		say("key %s: refused: %s", k->name, why ?: "?");
		return CKR_FUNCTION_REJECTED;
	}
	if (r < 0) {
		say("key %s: %s", k->name, conn_strerror(tok.c, r));
		token_disconnect();
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
 * small a buffer. */
static CK_RV sign_finish(struct session *s, const uint8_t *data, size_t len, CK_BYTE_PTR out,
			 CK_ULONG_PTR out_len)
{
	const struct p11_key *k = &tok.keys[s->key];
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
	rv = sign_digest(s, data, len, &md, digest, &digest_len);
	if (rv == CKR_OK)
		rv = sign_remote(k, md, digest, digest_len, &sig, &sig_len);
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
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (!s->mech || s->updated)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	if (!data && len)
		return leave(CKR_ARGUMENTS_BAD);
	if (out && s->mech->hash && !EVP_DigestUpdate(s->md, data, len)) {
		session_reset_sign(s);
		return leave(CKR_FUNCTION_FAILED);
	}
	return leave(sign_finish(s, data, len, out, out_len));
}

static CK_RV mod_SignUpdate(CK_SESSION_HANDLE h, CK_BYTE_PTR data, CK_ULONG len)
{
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
	if (!s->mech)
		return leave(CKR_OPERATION_NOT_INITIALIZED);
	if (!data && len)
		return leave(CKR_ARGUMENTS_BAD);
	/* The hash-and-sign mechanisms hash; the others (single-part in the
	 * standard, multi-part for tools that always update) keep a digest's
	 * worth and refuse more. */
	if (!s->mech->hash && s->in_len + len > sizeof(s->in)) {
		rv = too_long(s, s->in_len + len);
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
	CK_RV rv = enter();
	struct session *s;

	if (rv != CKR_OK)
		return rv;
	s = session_get(h);
	if (!s)
		return leave(CKR_SESSION_HANDLE_INVALID);
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

static CK_FUNCTION_LIST functions;

EXPORT CK_RV C_GetFunctionList(CK_FUNCTION_LIST_PTR_PTR ret)
{
	if (!ret)
		return CKR_ARGUMENTS_BAD;
	*ret = &functions;
	return CKR_OK;
}

/*
 * Every slot not filled below is not_supported, cast: a function that
 * takes any arguments and returns CKR_FUNCTION_NOT_SUPPORTED is what the
 * caller sees either way on every ABI this builds for (the callee ignores
 * its arguments; the caller cleans up after cdecl/SysV calls).
 */
__attribute__((constructor)) static void functions_fill(void)
{
	size_t first = offsetof(CK_FUNCTION_LIST, C_Initialize);
	void (**slot)(void) = (void (**)(void))((char *)&functions + first);
	size_t n = (sizeof(functions) - first) / sizeof(*slot);

	for (size_t i = 0; i < n; i++)
		slot[i] = (void (*)(void))not_supported;
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
}
