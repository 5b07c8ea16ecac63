/*
 * keytab.h: one keyed hash table of C-string keys to pointers, for every
 * per-sandbox or per-address index of the proxy (the registry's
 * addresses, namecount's names, execs by run id, block records by
 * sandbox). Keys are chosen by other parties (sandbox ids, addresses,
 * run ids), so each table hashes under its own SipHash key drawn at
 * keytab_new (siphash.h): no key can be picked to put every entry in one
 * chain. Chains double past one entry per chain, so a lookup looks at
 * about one entry whatever the table holds; keytab_visited counts them
 * (the tests assert the work per lookup is bounded).
 */
#ifndef SG_KEYTAB_H
#define SG_KEYTAB_H

#include <stddef.h>

struct keytab;

struct keytab	*keytab_new(void);		/* NULL: no memory */
/* Frees the table and its copies of the keys, not the values. NULL ok. */
void		 keytab_free(struct keytab *);

/* The value of key, or NULL. */
void		*keytab_get(const struct keytab *, const char *key);
/*
 * key's value set to val (key copied), replacing any; a NULL val keeps
 * the key (room taken ahead) though keytab_get finds nothing. 0, or -1
 * out of memory (unchanged).
 */
int		 keytab_put(struct keytab *, const char *key, void *val);
/* Remove key; its value, or NULL when it had none. */
void		*keytab_del(struct keytab *, const char *key);
size_t		 keytab_count(const struct keytab *);
/* Entries looked at by key so far (a test hook: the work per lookup). */
unsigned long long keytab_visited(const struct keytab *);

/* fn(arg, key, val) for each entry, in no order; fn must not change t. */
typedef void	(*keytab_fn)(void *arg, const char *key, void *val);
void		 keytab_each(const struct keytab *, keytab_fn, void *arg);

#endif
