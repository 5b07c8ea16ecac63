/*
 * namecount.h: how many of something each name has (a sandbox id's
 * registered addresses, its running execs), found in constant time in a
 * keyed table (keytab.h), and which names went from none to some or back
 * since they were last asked for (namecount_changed): so a
 * change to one sandbox costs what that sandbox has, not what every
 * registered sandbox has (a /register re-checked the whole registry
 * against every block-log identity, ~0.2 s at 4,000 sandboxes,
 * atk15r14 F1).
 */
#ifndef SG_NAMECOUNT_H
#define SG_NAMECOUNT_H

#include <stddef.h>

struct namecount;

struct namecount	*namecount_new(void);		/* NULL: no memory */
void			 namecount_free(struct namecount *);	/* NULL ok */

/* One more for name (a C string). 0, or -1 out of memory (unchanged). */
int		 namecount_add(struct namecount *, const char *name);
/* One less for name; a name with none: nothing. */
void		 namecount_sub(struct namecount *, const char *name);
/* How many name has; NULL table: 0. */
size_t		 namecount_get(const struct namecount *, const char *name);
/*
 * A pointer the caller keeps with name while name has some (the first of
 * its own list of what it counts, say), NULL before; NULL when name has
 * none. The caller empties it before the count goes back to 0.
 */
void		**namecount_slot(struct namecount *, const char *name);
/* Entries looked at by name so far (keytab_visited: a test hook). */
unsigned long long namecount_visited(const struct namecount *);

/*
 * fn(arg, name) once for each name whose count went from 0 to some or
 * from some to 0 (and maybe back) since the last call, in no particular
 * order; the table forgets them as changed (and those at 0 for good).
 * fn must not change the table.
 */
typedef void	(*namecount_fn)(void *arg, const char *name);
void		 namecount_changed(struct namecount *, namecount_fn,
		    void *arg);

#endif
