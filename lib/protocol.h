/* SPDX-License-Identifier: LGPL-2.1-or-later */
#ifndef MODSIGN_PROTOCOL_H
#define MODSIGN_PROTOCOL_H

/*
 * The words of the modsign protocol (docs/PROTOCOL.md), shared by the
 * daemon (modsignd/request.c, server-*.c) and every client
 * (modsign-client/rpc.c), so that the two ends cannot drift apart
 * silently: a renamed field or operation is a compile error, not a
 * request the other end refuses.  Framing and accessors: lib/proto.h.
 */

/* Operations ("op"). */
#define PROTO_OP_STATUS "status"
#define PROTO_OP_CERT   "cert"
#define PROTO_OP_SIGN   "sign"
#define PROTO_OP_LOG    "log"
#define PROTO_MAX_OP    16u /* longest "op" a daemon reads */

/* Envelope fields, in every message. */
#define PROTO_F_VERSION  "v"
#define PROTO_F_ID       "id"
#define PROTO_F_OP       "op"
#define PROTO_F_OK       "ok"
#define PROTO_F_ERROR    "error"

/* status */
#define PROTO_F_DAEMON_VERSION "version"
#define PROTO_F_KEYS           "keys"
#define PROTO_F_NAME           "name"
#define PROTO_F_ALGORITHM      "algorithm"
#define PROTO_F_BACKEND        "backend"
#define PROTO_F_SUBJECT        "subject"
#define PROTO_F_SERIAL         "serial"
#define PROTO_F_DEFAULT        "default"
#define PROTO_F_HEALTH         "health"
#define PROTO_F_HEALTH_ERROR   "health_error"
#define PROTO_F_GRANTED        "granted"  /* may the asker sign with it */

/* cert, sign */
#define PROTO_F_KEY         "key"
#define PROTO_F_CERT        "cert"
#define PROTO_F_HASH        "hash"
#define PROTO_F_DIGEST      "digest"
#define PROTO_F_MODULE      "module"
#define PROTO_F_PROGRAM     "program"    /* request: who asked, a hint
					  * (proto_program_valid) */
#define PROTO_F_USE_KEYID   "keyid"      /* request: name signer by SKID */
#define PROTO_F_KEY_ID      "key_id"     /* reply: hex subjectKeyIdentifier */
#define PROTO_F_CERT_SHA256 "cert_sha256"
#define PROTO_F_SIGNATURE   "signature"
#define PROTO_F_LOG_INDEX   "log_index"
/* sign, pure ML-DSA from the external mu (docs/PROTOCOL.md): "mu" in
 * place of "hash" and "digest", and the "tr" it was made with, which must
 * be the key's; audit and transparency log records name the hash
 * PROTO_HASH_MU. */
#define PROTO_F_MU          "mu"
#define PROTO_F_TR          "tr"
#define PROTO_HASH_MU       "mldsa-mu"

/* log */
#define PROTO_F_CHECKPOINT "checkpoint"
#define PROTO_F_VKEY       "vkey"
#define PROTO_F_PATH       "path"
#define PROTO_F_OFFSET     "offset"
#define PROTO_F_SIZE       "size"
#define PROTO_F_DATA       "data"

/*
 * Sign requests one connection may have in flight: the daemon stops
 * reading a connection past it, and the client keeps that many on each
 * connection, so one number serves both (why 1024: docs/PERFORMANCE.md).
 */
#define PROTO_SIGN_WINDOW 1024

/* Bytes of a log tile per "log" reply: its base64 fits a frame. */
#define PROTO_LOG_CHUNK (32u * 1024)

#endif
