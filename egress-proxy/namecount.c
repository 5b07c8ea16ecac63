/* namecount.c: counts per name in a keyed hash table; see namecount.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "namecount.h"
#include "siphash.h"

#define NC_BUCKETS_MIN	64	/* a power of 2; doubled past one a chain */

struct nc_entry {
	struct nc_entry	*hnext;		/* hash chain */
	struct nc_entry	*cnext;		/* changed since asked */
	size_t		 count;
	void		*slot;		/* namecount_slot */
	int		 changed;
	char		 name[];
};

struct namecount {
	struct nc_entry	**buckets;
	size_t		  nbuckets;	/* a power of 2 */
	size_t		  nentries;	/* with some, or changed at 0 */
	struct nc_entry	 *changed;
};

static struct nc_entry	**nc_home(const struct namecount *, const char *);
static struct nc_entry	*nc_find(const struct namecount *, const char *);
static int		 nc_grow(struct namecount *);
static void		 nc_note(struct namecount *, struct nc_entry *);
static void		 nc_forget(struct namecount *, struct nc_entry *);

struct namecount *
namecount_new(void)
{
	struct namecount	*nc;

	if ((nc = calloc(1, sizeof(*nc))) == NULL)
		return NULL;
	nc->nbuckets = NC_BUCKETS_MIN;
	if ((nc->buckets = calloc(nc->nbuckets, sizeof(*nc->buckets))) ==
	    NULL) {
		free(nc);
		return NULL;
	}
	return nc;
}

void
namecount_free(struct namecount *nc)
{
	struct nc_entry	*e, *next;
	size_t		 i;

	if (nc == NULL)
		return;
	for (i = 0; i < nc->nbuckets; i++)
		for (e = nc->buckets[i]; e != NULL; e = next) {
			next = e->hnext;
			free(e);
		}
	free(nc->buckets);
	free(nc);
}

/* The chain name hashes to, under the process's key. */
static struct nc_entry **
nc_home(const struct namecount *nc, const char *name)
{
	return &nc->buckets[sg_keyed_hash((const unsigned char *)name,
	    strlen(name)) & (nc->nbuckets - 1)];
}

static struct nc_entry *
nc_find(const struct namecount *nc, const char *name)
{
	struct nc_entry	*e;

	for (e = *nc_home(nc, name); e != NULL; e = e->hnext)
		if (strcmp(e->name, name) == 0)
			return e;
	return NULL;
}

/* Twice the chains (none when out of memory: longer chains). 0 or -1. */
static int
nc_grow(struct namecount *nc)
{
	struct nc_entry	**old = nc->buckets, *e, *next, **home;
	size_t		  i, n = nc->nbuckets;

	if (n > SIZE_MAX / 2 / sizeof(*old) ||
	    (nc->buckets = calloc(2 * n, sizeof(*old))) == NULL) {
		nc->buckets = old;
		return -1;
	}
	nc->nbuckets = 2 * n;
	for (i = 0; i < n; i++)
		for (e = old[i]; e != NULL; e = next) {
			next = e->hnext;
			home = nc_home(nc, e->name);
			e->hnext = *home;
			*home = e;
		}
	free(old);
	return 0;
}

/* e's count went to or from 0: it is one of the changed names. */
static void
nc_note(struct namecount *nc, struct nc_entry *e)
{
	if (e->changed)
		return;
	e->changed = 1;
	e->cnext = nc->changed;
	nc->changed = e;
}

int
namecount_add(struct namecount *nc, const char *name)
{
	struct nc_entry	*e, **home;
	size_t		 len = strlen(name);

	if ((e = nc_find(nc, name)) == NULL) {
		if (nc->nentries >= nc->nbuckets)
			(void)nc_grow(nc);
		if ((e = calloc(1, sizeof(*e) + len + 1)) == NULL)
			return -1;
		memcpy(e->name, name, len + 1);
		home = nc_home(nc, name);
		e->hnext = *home;
		*home = e;
		nc->nentries++;
	}
	if (e->count++ == 0)
		nc_note(nc, e);
	return 0;
}

void
namecount_sub(struct namecount *nc, const char *name)
{
	struct nc_entry	*e = nc_find(nc, name);

	if (e == NULL || e->count == 0)
		return;
	if (--e->count == 0)
		nc_note(nc, e);
}

size_t
namecount_get(const struct namecount *nc, const char *name)
{
	const struct nc_entry	*e;

	if (nc == NULL || (e = nc_find(nc, name)) == NULL)
		return 0;
	return e->count;
}

void **
namecount_slot(struct namecount *nc, const char *name)
{
	struct nc_entry	*e = nc_find(nc, name);

	return e != NULL && e->count > 0 ? &e->slot : NULL;
}

/* Unlink e (at 0, asked for) from its chain and free it. */
static void
nc_forget(struct namecount *nc, struct nc_entry *e)
{
	struct nc_entry	**pp;

	for (pp = nc_home(nc, e->name); *pp != e; pp = &(*pp)->hnext)
		;
	*pp = e->hnext;
	nc->nentries--;
	free(e);
}

void
namecount_changed(struct namecount *nc, namecount_fn fn, void *arg)
{
	struct nc_entry	*e;

	while ((e = nc->changed) != NULL) {
		nc->changed = e->cnext;
		e->cnext = NULL;
		e->changed = 0;
		if (fn != NULL)
			fn(arg, e->name);
		if (e->count == 0)
			nc_forget(nc, e);
	}
}
