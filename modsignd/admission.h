/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef MODSIGND_ADMISSION_H
#define MODSIGND_ADMISSION_H

/*
 * Who may start TLS handshakes, and hold TLS connections: the per-source
 * and per-identity limits of TLS peers, in one place (issue 28).  A source
 * is an IPv4 address or an IPv6 /64 (one host usually holds the whole
 * prefix).  Two bounded tables:
 *
 *  - sources, each with a token bucket of new handshakes, a count of key
 *    exchanges in progress and a count of admitted connections.  A
 *    handshake starts (admission_start_handshake()) when its first bytes
 *    arrive, not at accept: a silent socket costs the daemon no
 *    cryptography, so it must not drain the tokens, nor take the share, of
 *    a builder behind the same address.  It takes a token, and a place
 *    among its source's --max-handshakes-per-source key exchanges; with
 *    either missing, the handshake is deferred (not read until both are
 *    there: server-handshake.c), not refused, so that a builder over the rate is
 *    slowed, not failed for it (though a handshake that waits still ends
 *    at --handshake-timeout).  Tokens come back at --handshake-rate a
 *    second, up to --handshake-burst.  An entry is kept while it holds a handshake
 *    or a connection, or its bucket is not full; a full table recycles the
 *    entry with the fullest bucket that holds neither, so an attacker with
 *    more addresses than the table has entries gets fresh buckets (the
 *    listener's handshake budget still bounds what they hold at once:
 *    server.h).
 *  - identities (cn:NAME), each with a count of admitted connections.
 *
 * Admitted connections are capped per identity and per source
 * (--max-connections-per-identity, --max-connections-per-source): by
 * default three quarters of the TLS slots each (the TLS slots are
 * --max-connections less the quarter kept for UNIX clients), so that one
 * builder, or one address, leaves at least a quarter to the others, and a
 * make -j64 farm builder signing module by module (64 connections at
 * once) or a pool client (one connection per server) fits under it with
 * the default 256 connections (144 each).
 *
 * Called from the event loop only; never logs.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define ADMISSION_DEFAULT_RATE 50   /* handshakes a second, per source */
#define ADMISSION_DEFAULT_BURST 100 /* of which at once, per source */

struct admission_source {
	uint8_t addr[16];
};

struct admission_config {
	unsigned rate, burst;        /* tokens a second; most a bucket holds */
	unsigned key_exchanges;      /* per source at once */
	unsigned handshakes;         /* most in progress at once, all listeners */
	unsigned per_source;         /* admitted connections; 0: the default */
	unsigned per_identity;       /* the same, per cn: */
	unsigned tls_slots;          /* connections TLS peers may hold in all */
};

struct admission;

/* The tables hold as many entries as @cfg->tls_slots and
 * @cfg->handshakes, plus some spare: every source or identity that holds
 * a connection or a handshake has one.  0 or -ENOMEM. */
int admission_new(const struct admission_config *cfg, struct admission **ret);
void admission_free(struct admission *a);

/* The caps in force, the defaults resolved (for messages). */
unsigned admission_per_source(const struct admission *a);
unsigned admission_per_identity(const struct admission *a);

/* The source of peer address @sa. */
void admission_source_of(const struct sockaddr_storage *sa, struct admission_source *ret);
bool admission_source_eq(const struct admission_source *a, const struct admission_source *b);

/* A handshake from @src sent its first bytes at @now_ms: true if it may go
 * on (a token taken, and counted among its source's key exchanges until
 * admission_end_handshake()), false if it must wait. */
bool admission_start_handshake(struct admission *a, const struct admission_source *src,
			       uint64_t now_ms);
/* A handshake that started ended, one way or another. */
void admission_end_handshake(struct admission *a, const struct admission_source *src);

/*
 * An authenticated TLS peer @identity from @src asks for a connection: 0
 * with it counted against both, or -EUSERS with a line in @why naming the
 * cap it would pass ("too many connections for cn:NAME (N)", "... from
 * this address (N)").  The caller checks the listener's own limits.
 */
int admission_admit(struct admission *a, const struct admission_source *src,
		    const char *identity, uint64_t now_ms, char *why, size_t size);

/* An admitted connection closed: its counts given back. */
void admission_leave(struct admission *a, const struct admission_source *src,
		     const char *identity);

#endif
