/*
 * policy_index.c: the lookup tables of a loaded policy (exact names,
 * wildcard suffixes, CIDR prefixes keyed per length) and the warnings
 * that compare entries: exact duplicates and entries made redundant by a
 * broader one in the same set.
 */
#include <sys/socket.h>

#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

static uint64_t	ptable_hash(const void *, size_t);
static int	ptable_init(struct ptable *, size_t);
static void	ptable_link(struct policy *, struct ptable *,
		    const void *, size_t, uint32_t);
static void	pindex_key(struct policy *, const struct pentry *,
		    struct ptable **, const void **, size_t *);
static void	pindex_check(struct ploader *, size_t);
static int	pindex_check_chain(struct ploader *, size_t, uint32_t);
static int	pindex_covers(const struct policy_entry *,
		    const struct policy_entry *, time_t);
static int	pindex_host_covers(const struct policy_entry *,
		    const struct policy_entry *);
static int	pindex_ports_cover(const struct policy_entry *,
		    const struct policy_entry *);
static int	pindex_lists_cover(const struct policy_entry *,
		    const struct policy_entry *);

/* FNV-1a: the keys are the policy's own, not a client's. */
static uint64_t
ptable_hash(const void *key, size_t len)
{
	const unsigned char	*p = key;
	uint64_t		 h = 0xcbf29ce484222325ULL;

	while (len-- > 0) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

static int
ptable_init(struct ptable *t, size_t n)
{
	size_t	cap = 8;

	while (cap < n * 2)
		cap *= 2;
	t->slots = calloc(cap, sizeof(*t->slots));
	if (t->slots == NULL)
		return -1;
	t->mask = cap - 1;
	return 0;
}

void
ptable_free(struct ptable *t)
{
	free(t->slots);
	t->slots = NULL;
	t->mask = 0;
}

/* Put entry idx at the front of the chain for key. */
static void
ptable_link(struct policy *p, struct ptable *t, const void *key,
    size_t klen, uint32_t idx)
{
	struct pslot	*s;
	size_t		 i = (size_t)ptable_hash(key, klen) & t->mask;

	for (;; i = (i + 1) & t->mask) {
		s = &t->slots[i];
		if (s->head == 0) {
			s->key = key;
			s->klen = (uint32_t)klen;
			break;
		}
		if (s->klen == klen && memcmp(s->key, key, klen) == 0)
			break;
	}
	p->entries[idx].next = s->head;
	s->head = idx + 1;
}

uint32_t
ptable_get(const struct ptable *t, const void *key, size_t klen)
{
	const struct pslot	*s;
	size_t			 i;

	if (t->slots == NULL)
		return 0;
	for (i = (size_t)ptable_hash(key, klen) & t->mask;;
	    i = (i + 1) & t->mask) {
		s = &t->slots[i];
		if (s->head == 0)
			return 0;
		if (s->klen == klen && memcmp(s->key, key, klen) == 0)
			return s->head;
	}
}

void
pindex_ckey(uint8_t key[PENTRY_CKEY_LEN], int family, unsigned prefix,
    const uint8_t *bytes)
{
	unsigned	i, len = family == AF_INET ? 4 : 16;

	memset(key, 0, PENTRY_CKEY_LEN);
	key[0] = family == AF_INET ? 4 : 6;
	key[1] = (uint8_t)prefix;
	for (i = 0; i < len && i * 8 < prefix; i++) {
		if (prefix - i * 8 >= 8)
			key[2 + i] = bytes[i];
		else
			key[2 + i] = bytes[i] &
			    (uint8_t)(0xff << (8 - (prefix - i * 8)));
	}
}

/* Which table an entry lives in and under which key. */
static void
pindex_key(struct policy *p, const struct pentry *e, struct ptable **t,
    const void **key, size_t *klen)
{
	switch (e->pub.kind) {
	case POLICY_HOST_NAME:
		*t = &p->exact;
		*key = e->pub.name;
		*klen = strlen(e->pub.name);
		break;
	case POLICY_HOST_WILDCARD:
		*t = &p->wild;
		*key = e->pub.name;
		*klen = strlen(e->pub.name);
		break;
	default:
		*t = &p->cidr;
		*key = e->ckey;
		*klen = PENTRY_CKEY_LEN;
		break;
	}
}

int
pindex_len_used(const struct policy *p, int family, unsigned prefix)
{
	if (family == AF_INET)
		return prefix <= 32 && (p->v4lens >> prefix) & 1;
	return prefix <= 128 && (p->v6lens[prefix / 64] >> (prefix % 64)) & 1;
}

int
pindex_build(struct ploader *ld)
{
	struct policy	*p = ld->p;
	struct pentry	*e;
	struct ptable	*t;
	const void	*key;
	size_t		 i, klen, n = p->nentries;
	unsigned	 pl;

	if (ptable_init(&p->exact, n) == -1 || ptable_init(&p->wild, n) ==
	    -1 || ptable_init(&p->cidr, n) == -1)
		return -1;
	/* Backwards, so that each chain ends up in file order. */
	for (i = n; i-- > 0;) {
		e = &p->entries[i];
		if (e->pub.kind == POLICY_HOST_CIDR) {
			pl = e->pub.cidr.prefix;
			pindex_ckey(e->ckey, e->pub.cidr.family, pl,
			    e->pub.cidr.bytes);
			if (e->pub.cidr.family == AF_INET)
				p->v4lens |= 1ULL << pl;
			else
				p->v6lens[pl / 64] |= 1ULL << (pl % 64);
		}
		pindex_key(p, e, &t, &key, &klen);
		ptable_link(p, t, key, klen, (uint32_t)i);
	}
	for (i = 0; i < n; i++)
		pindex_check(ld, i);
	return 0;
}

/* Warn once if entry i repeats or is covered by another of its set. */
static void
pindex_check(struct ploader *ld, size_t i)
{
	struct policy			*p = ld->p;
	const struct policy_entry	*e = &p->entries[i].pub;
	uint8_t				 key[PENTRY_CKEY_LEN];
	const char			*s;
	int				 pl;

	ld->file = e->set->file;
	if (e->kind == POLICY_HOST_NAME) {
		if (pindex_check_chain(ld, i, ptable_get(&p->exact, e->name,
		    strlen(e->name))))
			return;
	} else if (e->kind == POLICY_HOST_WILDCARD) {
		if (pindex_check_chain(ld, i, ptable_get(&p->wild, e->name,
		    strlen(e->name))))
			return;
	} else {
		for (pl = (int)e->cidr.prefix; pl >= 0; pl--) {
			if (!pindex_len_used(p, e->cidr.family, (unsigned)pl))
				continue;
			pindex_ckey(key, e->cidr.family, (unsigned)pl,
			    e->cidr.bytes);
			if (pindex_check_chain(ld, i, ptable_get(&p->cidr, key,
			    sizeof(key))))
				return;
		}
		return;
	}
	for (s = strchr(e->name, '.'); s != NULL; s = strchr(s + 1, '.')) {
		if (pindex_check_chain(ld, i, ptable_get(&p->wild, s + 1,
		    strlen(s + 1))))
			return;
	}
}

/* Compare entry i with a chain; 1 once a warning was given. */
static int
pindex_check_chain(struct ploader *ld, size_t i, uint32_t head)
{
	const struct pentry		*me = &ld->p->entries[i], *w;
	const struct policy_entry	*e = &me->pub;
	uint32_t			 j;

	for (j = head; j != 0; j = w->next) {
		w = &ld->p->entries[j - 1];
		if (j - 1 == i || w->setidx != me->setidx ||
		    !pindex_covers(&w->pub, e, ld->now))
			continue;
		if (pindex_covers(e, &w->pub, ld->now)) {
			if (j - 1 > i)
				continue;	/* the later one is warned */
			ploader_diag(ld, POLICY_WARNING, e->line, e->col,
			    "entry for \"%s\" duplicates the entry at line %d; "
			    "remove one of them", e->pattern, w->pub.line);
		} else
			ploader_diag(ld, POLICY_WARNING, e->line, e->col,
			    "entry for \"%s\" is redundant: the entry for "
			    "\"%s\" at line %d already %s all of it; "
			    "remove it or narrow the broader one", e->pattern,
			    w->pub.pattern, w->pub.line, e->deny ? "denies" :
			    "allows");
		return 1;
	}
	return 0;
}

/* 1 when w allows every request that e allows, for as long. */
static int
pindex_covers(const struct policy_entry *w, const struct policy_entry *e,
    time_t now)
{
	if (!policy_entry_active(w, now))
		return 0;
	if (e->allow_private && !w->allow_private)
		return 0;
	if (w->expires != 0 && (e->expires == 0 || e->expires > w->expires))
		return 0;
	return pindex_host_covers(w, e) && pindex_ports_cover(w, e) &&
	    pindex_lists_cover(w, e);
}

static int
pindex_host_covers(const struct policy_entry *w, const struct policy_entry *e)
{
	size_t	lw, le;

	switch (w->kind) {
	case POLICY_HOST_NAME:
		return e->kind == POLICY_HOST_NAME &&
		    strcmp(w->name, e->name) == 0;
	case POLICY_HOST_WILDCARD:
		if (e->kind == POLICY_HOST_CIDR)
			return 0;
		if (e->kind == POLICY_HOST_WILDCARD &&
		    strcmp(w->name, e->name) == 0)
			return 1;
		lw = strlen(w->name);
		le = strlen(e->name);
		return le > lw + 1 && e->name[le - lw - 1] == '.' &&
		    strcmp(e->name + le - lw, w->name) == 0;
	default:
		return e->kind == POLICY_HOST_CIDR &&
		    addr_cidr_covers(&w->cidr, &e->cidr);
	}
}

/* Every port of e is in w, and w is not stricter about TLS there. */
static int
pindex_ports_cover(const struct policy_entry *w, const struct policy_entry *e)
{
	size_t	i, j;

	if (w->ports == NULL || e->ports == NULL)
		return w->ports == NULL;	/* NULL: every port */
	for (i = 0; i < e->nports; i++) {
		for (j = 0; j < w->nports && w->ports[j] != e->ports[i]; j++)
			;
		if (j == w->nports)
			return 0;
		if (policy_entry_tls(w, w->ports[j]) == POLICY_TLS_REQUIRED &&
		    policy_entry_tls(e, e->ports[i]) != POLICY_TLS_REQUIRED)
			return 0;
	}
	return 1;
}

/* w's methods and paths, if any, allow everything e's do. */
static int
pindex_lists_cover(const struct policy_entry *w, const struct policy_entry *e)
{
	size_t	i, j;

	if (w->methods != NULL) {
		if (e->methods == NULL)
			return 0;
		for (i = 0; i < e->nmethods; i++) {
			for (j = 0; j < w->nmethods &&
			    strcmp(w->methods[j], e->methods[i]) != 0; j++)
				;
			if (j == w->nmethods)
				return 0;
		}
	}
	if (w->paths != NULL) {
		if (e->paths == NULL)
			return 0;
		for (i = 0; i < e->npaths; i++) {
			for (j = 0; j < w->npaths && strncmp(e->paths[i],
			    w->paths[j], strlen(w->paths[j])) != 0; j++)
				;
			if (j == w->npaths)
				return 0;
		}
	}
	return 1;
}
