/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admission.h"

/* Entries beyond the TLS slots: sources whose buckets refill while they
 * hold nothing.  Past them the fullest is recycled (admission.h). */
#define ADMISSION_SPARE_SOURCES 1024u

struct source_entry {
	struct admission_source src;
	bool used;
	uint64_t tokens_milli; /* thousandths of a token */
	uint64_t stamp_ms;     /* when tokens_milli was last brought up to date */
	unsigned handshakes;   /* started and not ended */
	unsigned conns;
};

struct identity_entry {
	char *name; /* NULL: free */
	unsigned conns;
};

struct admission {
	struct admission_config cfg;
	unsigned per_source, per_identity;
	struct source_entry *sources;
	size_t n_sources;
	struct identity_entry *ids;
	size_t n_ids;
};

/* Three quarters of the TLS slots, at least one: see admission.h. */
static unsigned default_cap(unsigned tls_slots)
{
	unsigned cap = tls_slots - tls_slots / 4;

	return cap ?: 1;
}

int admission_new(const struct admission_config *cfg, struct admission **ret)
{
	struct admission *a = calloc(1, sizeof(*a));

	if (!a)
		return -ENOMEM;
	a->cfg = *cfg;
	a->per_source = cfg->per_source ?: default_cap(cfg->tls_slots);
	a->per_identity = cfg->per_identity ?: default_cap(cfg->tls_slots);
	a->n_sources = (size_t)cfg->tls_slots + cfg->handshakes + ADMISSION_SPARE_SOURCES;
	a->n_ids = (size_t)cfg->tls_slots + 1;
	a->sources = calloc(a->n_sources, sizeof(*a->sources));
	a->ids = calloc(a->n_ids, sizeof(*a->ids));
	if (!a->sources || !a->ids) {
		admission_free(a);
		return -ENOMEM;
	}
	*ret = a;
	return 0;
}

void admission_free(struct admission *a)
{
	if (!a)
		return;
	for (size_t i = 0; a->ids && i < a->n_ids; i++)
		free(a->ids[i].name);
	free(a->ids);
	free(a->sources);
	free(a);
}

unsigned admission_per_source(const struct admission *a)
{
	return a->per_source;
}

unsigned admission_per_identity(const struct admission *a)
{
	return a->per_identity;
}

void admission_source_of(const struct sockaddr_storage *sa, struct admission_source *ret)
{
	memset(ret, 0, sizeof(*ret));
	if (sa->ss_family == AF_INET) {
		memcpy(ret->addr, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	} else if (sa->ss_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;

		/* A v4-mapped peer of a dual-stack listener is its IPv4
		 * address: the tables are shared by every listener. */
		if (IN6_IS_ADDR_V4MAPPED(a)) {
			memcpy(ret->addr, &a->s6_addr[12], 4);
			return;
		}
		memcpy(ret->addr, a->s6_addr, 8); /* the /64 */
		ret->addr[15] = 6;                /* never equal to an IPv4 source */
	}
}

bool admission_source_eq(const struct admission_source *a, const struct admission_source *b)
{
	return memcmp(a->addr, b->addr, sizeof(a->addr)) == 0;
}

static uint64_t full_milli(const struct admission *a)
{
	return (uint64_t)a->cfg.burst * 1000;
}

/* Bring @e's bucket up to @now_ms: rate tokens a second is rate
 * thousandths a millisecond. */
static void refill(const struct admission *a, struct source_entry *e, uint64_t now_ms)
{
	uint64_t add = now_ms > e->stamp_ms ? (now_ms - e->stamp_ms) * a->cfg.rate : 0;

	e->tokens_milli = e->tokens_milli + add > full_milli(a) ? full_milli(a) :
								 e->tokens_milli + add;
	e->stamp_ms = now_ms;
}

/* The entry that may be given to a new source: a free one, else the one
 * holding no handshake or connection whose bucket is fullest (forgetting
 * it costs the least).  NULL only if every entry holds something, which
 * the table's size rules out. */
static struct source_entry *source_slot(struct admission *a, uint64_t now_ms)
{
	struct source_entry *best = NULL;

	for (size_t i = 0; i < a->n_sources; i++) {
		struct source_entry *e = &a->sources[i];

		if (!e->used)
			return e;
		if (e->conns || e->handshakes)
			continue;
		refill(a, e, now_ms);
		if (!best || e->tokens_milli > best->tokens_milli)
			best = e;
	}
	return best;
}

static struct source_entry *source_find(struct admission *a, const struct admission_source *src)
{
	for (size_t i = 0; i < a->n_sources; i++)
		if (a->sources[i].used && admission_source_eq(&a->sources[i].src, src))
			return &a->sources[i];
	return NULL;
}

/* @src's entry, made with a full bucket if it had none (@now_ms). */
static struct source_entry *source_get(struct admission *a, const struct admission_source *src,
				       uint64_t now_ms)
{
	struct source_entry *e = source_find(a, src);

	if (e)
		return e;
	e = source_slot(a, now_ms);
	if (e)
		*e = (struct source_entry){ .src = *src, .used = true,
					    .tokens_milli = full_milli(a), .stamp_ms = now_ms };
	return e;
}

bool admission_start_handshake(struct admission *a, const struct admission_source *src,
			       uint64_t now_ms)
{
	struct source_entry *e = source_get(a, src, now_ms);

	if (!e)
		return true; /* cannot happen (source_slot()); never lock out */
	refill(a, e, now_ms);
	if (e->tokens_milli < 1000 || e->handshakes >= a->cfg.key_exchanges)
		return false;
	e->tokens_milli -= 1000;
	e->handshakes++;
	return true;
}

void admission_end_handshake(struct admission *a, const struct admission_source *src)
{
	struct source_entry *e = source_find(a, src);

	if (e && e->handshakes > 0)
		e->handshakes--;
}

static struct identity_entry *identity_find(struct admission *a, const char *name)
{
	for (size_t i = 0; i < a->n_ids; i++)
		if (a->ids[i].name && strcmp(a->ids[i].name, name) == 0)
			return &a->ids[i];
	return NULL;
}

static struct identity_entry *identity_get(struct admission *a, const char *name)
{
	struct identity_entry *e = identity_find(a, name);

	for (size_t i = 0; !e && i < a->n_ids; i++)
		if (!a->ids[i].name) {
			e = &a->ids[i];
			if (!(e->name = strdup(name)))
				return NULL;
			e->conns = 0;
		}
	return e;
}

int admission_admit(struct admission *a, const struct admission_source *src,
		    const char *identity, uint64_t now_ms, char *why, size_t size)
{
	struct source_entry *s = source_get(a, src, now_ms);
	struct identity_entry *id = identity_get(a, identity);

	if (!s || !id) {
		snprintf(why, size, "out of memory");
		return -ENOMEM;
	}
	if (id->conns >= a->per_identity) {
		snprintf(why, size, "too many connections for %s (%u), try again later",
			 identity, a->per_identity);
		goto refused;
	}
	if (s->conns >= a->per_source) {
		snprintf(why, size, "too many connections from this address (%u), try again later",
			 a->per_source);
		goto refused;
	}
	s->conns++;
	id->conns++;
	return 0;
refused:
	if (id->conns == 0) {
		free(id->name);
		id->name = NULL;
	}
	return -EUSERS;
}

void admission_leave(struct admission *a, const struct admission_source *src,
		     const char *identity)
{
	struct identity_entry *id = identity_find(a, identity);
	struct source_entry *e = source_find(a, src);

	if (e && e->conns > 0)
		e->conns--;
	if (id && id->conns > 0 && --id->conns == 0) {
		free(id->name);
		id->name = NULL;
	}
}
