/* keytab.c: a keyed hash table with chains; see keytab.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/rand.h>

#include "keytab.h"
#include "siphash.h"

#define KT_CHAINS_MIN	64	/* a power of 2; doubled past one an entry */

struct kt_entry {
	struct kt_entry	*next;
	uint64_t	 hash;
	void		*val;
	char		 key[];
};

struct keytab {
	struct kt_entry		**chains;
	size_t			  nchains;	/* a power of 2 */
	size_t			  n;
	uint64_t		  key[2];	/* this table's SipHash key */
	/* a test hook, not state: counted by const lookups too */
	unsigned long long	 *visited;
};

struct keytab *
keytab_new(void)
{
	struct keytab	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->nchains = KT_CHAINS_MIN;
	if ((t->chains = calloc(t->nchains, sizeof(*t->chains))) == NULL ||
	    (t->visited = calloc(1, sizeof(*t->visited))) == NULL ||
	    RAND_bytes((unsigned char *)t->key, sizeof(t->key)) != 1) {
		keytab_free(t);
		return NULL;
	}
	return t;
}

void
keytab_free(struct keytab *t)
{
	struct kt_entry	*e, *next;
	size_t		 i;

	if (t == NULL)
		return;
	for (i = 0; t->chains != NULL && i < t->nchains; i++)
		for (e = t->chains[i]; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	free(t->chains);
	free(t->visited);
	free(t);
}

static uint64_t
kt_hash(const struct keytab *t, const char *key)
{
	return sg_siphash(t->key, (const unsigned char *)key, strlen(key));
}

/* The link that points at key's entry (at the chain's end: not there). */
static struct kt_entry **
kt_link(const struct keytab *t, const char *key)
{
	uint64_t	  h = kt_hash(t, key);
	struct kt_entry	**pp = &t->chains[h & (t->nchains - 1)];

	for (; *pp != NULL; pp = &(*pp)->next) {
		(*t->visited)++;
		if ((*pp)->hash == h && strcmp((*pp)->key, key) == 0)
			break;
	}
	return pp;
}

/* Twice the chains; out of memory, the chains only grow longer. */
static void
kt_grow(struct keytab *t)
{
	struct kt_entry	**nc, *e, *next;
	size_t		  i, n = t->nchains * 2;

	if (n > SIZE_MAX / sizeof(*nc) || (nc = calloc(n, sizeof(*nc))) ==
	    NULL)
		return;
	for (i = 0; i < t->nchains; i++)
		for (e = t->chains[i]; e != NULL; e = next) {
			next = e->next;
			e->next = nc[e->hash & (n - 1)];
			nc[e->hash & (n - 1)] = e;
		}
	free(t->chains);
	t->chains = nc;
	t->nchains = n;
}

void *
keytab_get(const struct keytab *t, const char *key)
{
	struct kt_entry	*e = *kt_link(t, key);

	return e != NULL ? e->val : NULL;
}

int
keytab_put(struct keytab *t, const char *key, void *val)
{
	struct kt_entry	**pp = kt_link(t, key), *e;
	size_t		  len = strlen(key);

	if (*pp != NULL) {
		(*pp)->val = val;
		return 0;
	}
	if ((e = calloc(1, sizeof(*e) + len + 1)) == NULL)
		return -1;
	memcpy(e->key, key, len + 1);
	e->hash = kt_hash(t, key);
	e->val = val;
	if (t->n >= t->nchains)
		kt_grow(t);
	e->next = t->chains[e->hash & (t->nchains - 1)];
	t->chains[e->hash & (t->nchains - 1)] = e;
	t->n++;
	return 0;
}

void *
keytab_del(struct keytab *t, const char *key)
{
	struct kt_entry	**pp = kt_link(t, key), *e = *pp;
	void		 *val;

	if (e == NULL)
		return NULL;
	*pp = e->next;
	val = e->val;
	free(e);
	t->n--;
	return val;
}

size_t
keytab_count(const struct keytab *t)
{
	return t->n;
}

unsigned long long
keytab_visited(const struct keytab *t)
{
	return *t->visited;
}

void
keytab_each(const struct keytab *t, keytab_fn fn, void *arg)
{
	struct kt_entry	*e;
	size_t		 i;

	for (i = 0; i < t->nchains; i++)
		for (e = t->chains[i]; e != NULL; e = e->next)
			fn(arg, e->key, e->val);
}
