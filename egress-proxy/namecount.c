/* namecount.c: counts per name in a keyed table (keytab.h); see namecount.h. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "keytab.h"
#include "namecount.h"

struct nc_entry {
	struct nc_entry	*cnext;		/* changed since asked */
	size_t		 count;
	void		*slot;		/* namecount_slot */
	int		 changed;
	char		 name[];
};

/* Entries by name in a keyed table (keytab.h), those changed listed. */
struct namecount {
	struct keytab	*byname;
	struct nc_entry	*changed;
};

static void	nc_note(struct namecount *, struct nc_entry *);
static void	nc_free_entry(void *, const char *, void *);

struct namecount *
namecount_new(void)
{
	struct namecount	*nc;

	if ((nc = calloc(1, sizeof(*nc))) == NULL)
		return NULL;
	if ((nc->byname = keytab_new()) == NULL) {
		free(nc);
		return NULL;
	}
	return nc;
}

static void
nc_free_entry(void *arg, const char *name, void *e)
{
	(void)arg;
	(void)name;
	free(e);
}

void
namecount_free(struct namecount *nc)
{
	if (nc == NULL)
		return;
	keytab_each(nc->byname, nc_free_entry, NULL);
	keytab_free(nc->byname);
	free(nc);
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
	struct nc_entry	*e;
	size_t		 len = strlen(name);

	if ((e = keytab_get(nc->byname, name)) == NULL) {
		if ((e = calloc(1, sizeof(*e) + len + 1)) == NULL)
			return -1;
		memcpy(e->name, name, len + 1);
		if (keytab_put(nc->byname, name, e) == -1) {
			free(e);
			return -1;
		}
	}
	if (e->count++ == 0)
		nc_note(nc, e);
	return 0;
}

void
namecount_sub(struct namecount *nc, const char *name)
{
	struct nc_entry	*e = keytab_get(nc->byname, name);

	if (e == NULL || e->count == 0)
		return;
	if (--e->count == 0)
		nc_note(nc, e);
}

size_t
namecount_get(const struct namecount *nc, const char *name)
{
	const struct nc_entry	*e;

	if (nc == NULL || (e = keytab_get(nc->byname, name)) == NULL)
		return 0;
	return e->count;
}

void **
namecount_slot(struct namecount *nc, const char *name)
{
	struct nc_entry	*e = keytab_get(nc->byname, name);

	return e != NULL && e->count > 0 ? &e->slot : NULL;
}

unsigned long long
namecount_visited(const struct namecount *nc)
{
	return keytab_visited(nc->byname);
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
		if (e->count == 0) {
			(void)keytab_del(nc->byname, e->name);
			free(e);
		}
	}
}
