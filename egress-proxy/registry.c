/* registry.c: client address -> sandbox and sets; see registry.h. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "namecount.h"
#include "policy.h"
#include "proxy.h"
#include "registry.h"
#include "siphash.h"
#include "token.h"

#define REG_BUCKETS_MIN	64	/* a power of 2; doubled past one an entry */

struct registry_entry {
	struct registry_entry	*next;
	struct registry_entry	*anext;		/* address chain */
	unsigned		 refs;
	int			 listed;	/* still in the registry */
	int			 extra;		/* not the session's address */
	char			 addr[INET6_ADDRSTRLEN];
	char			*sandbox;
	char			*sets_text;
	char			**sets;
	size_t			 nsets;
};

/*
 * Entries are listed (head) and, since one address has at most one
 * entry, indexed by address in a hash table under the process's key
 * (siphash.h): every connection's lookup, and the check of every open
 * connection at each /register and /unregister, takes one chain, not the
 * whole registry (atk15r15 F1: 4,096 idle connections of an unregistered
 * client made each change walk them times 4,000 entries, 122 ms).
 */
struct registry {
	struct registry_entry	*head;
	size_t			 n;
	struct registry_entry	**byaddr;
	size_t			 nbuckets;	/* a power of 2 */
	unsigned long long	 compared;	/* entries looked at by address */
	struct namecount	*sandboxes;	/* sandbox -> its entries */
	json_t			*gone;	/* {sandbox: unregistered at} */
};

static void	registry_entry_unref(struct registry_entry *);
static int	registry_same(struct registry *,
		    const struct registry_entry *);
static void	registry_canon6(const unsigned char *, char *, size_t);
static void	registry_remove_session(struct registry *, const char *);
static void	registry_unlist(struct registry *, struct registry_entry **);
static struct registry_entry *registry_find(struct registry *, const char *);
static void	registry_index(struct registry *, struct registry_entry *);

struct registry *
registry_new(void)
{
	struct registry	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	r->nbuckets = REG_BUCKETS_MIN;
	if ((r->sandboxes = namecount_new()) == NULL ||
	    (r->byaddr = calloc(r->nbuckets, sizeof(*r->byaddr))) == NULL) {
		namecount_free(r->sandboxes);
		free(r);
		return NULL;
	}
	return r;
}

/* The chain addr hashes to in a table of nb (a power of 2) chains. */
static struct registry_entry **
registry_home(struct registry_entry **b, size_t nb, const char *addr)
{
	return &b[sg_keyed_hash((const unsigned char *)addr, strlen(addr)) &
	    (nb - 1)];
}

static struct registry_entry *
registry_find(struct registry *r, const char *addr)
{
	struct registry_entry	*e;

	for (e = *registry_home(r->byaddr, r->nbuckets, addr); e != NULL;
	    e = e->anext) {
		r->compared++;
		if (strcmp(e->addr, addr) == 0)
			return e;
	}
	return NULL;
}

/*
 * Index a listed entry by its address. The table doubles once it holds
 * more entries than chains; when that takes more memory than there is,
 * the chains only grow longer.
 */
static void
registry_index(struct registry *r, struct registry_entry *e)
{
	struct registry_entry	**nb, **home, *x, *next;
	size_t			  i, n = r->nbuckets * 2;

	if (r->n >= r->nbuckets && (nb = calloc(n, sizeof(*nb))) != NULL) {
		for (i = 0; i < r->nbuckets; i++)
			for (x = r->byaddr[i]; x != NULL; x = next) {
				next = x->anext;
				home = registry_home(nb, n, x->addr);
				x->anext = *home;
				*home = x;
			}
		free(r->byaddr);
		r->byaddr = nb;
		r->nbuckets = n;
	}
	home = registry_home(r->byaddr, r->nbuckets, e->addr);
	e->anext = *home;
	*home = e;
}

unsigned long long
registry_compared(const struct registry *r)
{
	return r->compared;
}

static void
registry_entry_unref(struct registry_entry *e)
{
	if (e == NULL || --e->refs > 0)
		return;
	free(e->sandbox);
	free(e->sets_text);
	policy_set_list_free(e->sets);
	free(e);
}

void
registry_free(struct registry *r)
{
	struct registry_entry	*e;

	if (r == NULL)
		return;
	while ((e = r->head) != NULL) {
		r->head = e->next;
		e->listed = 0;
		registry_entry_unref(e);
	}
	namecount_free(r->sandboxes);
	json_decref(r->gone);
	free(r->byaddr);
	free(r);
}

/*
 * A sandbox unregistered at t: its tokens are refused (conn_token_gone).
 * Kept as long as any token issued before it could hold (with the clock
 * skew a token's "issued" may have), counted from its time, which
 * registry_gone_keep moves on to the controller's (atk1921h F7).
 */
void
registry_gone_set(struct registry *r, const char *sandbox, time_t t)
{
	const char	*k;
	json_t		*v;
	void		*tmp;

	if (r->gone == NULL && (r->gone = json_object()) == NULL)
		return;
	json_object_foreach_safe(r->gone, tmp, k, v)
		if (json_integer_value(v) + TOKEN_TTL_MAX + 2 * TOKEN_SKEW < t)
			json_object_del(r->gone, k);
	json_object_set_new(r->gone, sandbox, json_integer(t));
}

void
registry_gone_keep(struct registry *r, const char *sandbox, time_t at)
{
	json_t	*v = r->gone ? json_object_get(r->gone, sandbox) : NULL;

	if (v != NULL && json_integer_value(v) < (json_int_t)at)
		json_integer_set(v, (json_int_t)at);
}

void
registry_gone_clear(struct registry *r, const char *sandbox)
{
	if (r->gone != NULL)
		json_object_del(r->gone, sandbox);
}

time_t
registry_gone_at(const struct registry *r, const char *sandbox)
{
	return r->gone == NULL ? 0 :
	    (time_t)json_integer_value(json_object_get(r->gone, sandbox));
}

json_t *
registry_gone_json(const struct registry *r)
{
	return r->gone != NULL ? json_deep_copy(r->gone) : json_object();
}

void
registry_gone_load(struct registry *r, json_t *o)
{
	const char	*k;
	json_t		*v;

	json_object_foreach(o, k, v)
		if (json_is_integer(v) && registry_gone_at(r, k) <
		    (time_t)json_integer_value(v))
			registry_gone_set(r, k, (time_t)json_integer_value(v));
}

/*
 * The text an IPv6 address is looked up by; an IPv4-mapped one
 * (::ffff:a.b.c.d) is the IPv4 address, as the proxy sees such clients.
 */
static void
registry_canon6(const unsigned char *a, char *out, size_t size)
{
	static const unsigned char	mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	if (memcmp(a, mapped, sizeof(mapped)) == 0)
		inet_ntop(AF_INET, a + 12, out, (socklen_t)size);
	else
		inet_ntop(AF_INET6, a, out, (socklen_t)size);
}

/*
 * 1 when the registry holds e's address with e's sandbox, sets and
 * kind (the session's or an extra one).
 */
static int
registry_same(struct registry *r, const struct registry_entry *e)
{
	const struct registry_entry	*o = registry_find(r, e->addr);

	return o != NULL && strcmp(o->sandbox, e->sandbox) == 0 &&
	    strcmp(o->sets_text, e->sets_text) == 0 && o->extra == e->extra;
}

/* Take *pp out of the registry (connections may hold it still). */
static void
registry_unlist(struct registry *r, struct registry_entry **pp)
{
	struct registry_entry	*e = *pp, **ap;

	*pp = e->next;
	for (ap = registry_home(r->byaddr, r->nbuckets, e->addr); *ap != e;
	    ap = &(*ap)->anext)
		;
	*ap = e->anext;
	e->listed = 0;
	namecount_sub(r->sandboxes, e->sandbox);
	registry_entry_unref(e);
	r->n--;
}

/* Remove the session address of a sandbox, keeping its extra ones. */
static void
registry_remove_session(struct registry *r, const char *sandbox)
{
	struct registry_entry	**pp, *e;

	for (pp = &r->head; (e = *pp) != NULL;) {
		if (!e->extra && strcmp(e->sandbox, sandbox) == 0)
			registry_unlist(r, pp);
		else
			pp = &e->next;
	}
}

int
registry_add(struct registry *r, const char *addr, const char *sandbox,
    const char *sets, int extra, const char **cause)
{
	struct registry_entry	*e;
	unsigned char		 buf[16];
	char			 canon[INET6_ADDRSTRLEN];

	if (inet_pton(AF_INET, addr, buf) == 1)
		inet_ntop(AF_INET, buf, canon, sizeof(canon));
	else if (inet_pton(AF_INET6, addr, buf) == 1)
		registry_canon6(buf, canon, sizeof(canon));
	else {
		*cause = "invalid address";
		return -1;
	}
	addr = canon;
	if (sandbox == NULL || *sandbox == '\0' || strlen(sandbox) > 64) {
		*cause = "invalid sandbox id";
		return -1;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL) {
		*cause = "out of memory";
		return -1;
	}
	if (sets == NULL || *sets == '\0') {
		if ((e->sets = calloc(1, sizeof(*e->sets))) == NULL) {
			free(e);
			*cause = "out of memory";
			return -1;
		}
	} else if (policy_set_list_parse(sets, &e->sets, &e->nsets,
	    cause) == -1) {
		free(e);
		return -1;
	}
	e->sandbox = strdup(sandbox);
	e->sets_text = strdup(sets ? sets : "");
	if (e->sandbox == NULL || e->sets_text == NULL) {
		e->refs = 1;
		registry_entry_unref(e);
		*cause = "out of memory";
		return -1;
	}
	snprintf(e->addr, sizeof(e->addr), "%s", addr);
	e->extra = extra != 0;
	e->refs = 1;
	if (registry_same(r, e)) {
		/* Registered again as it is: connections keep their entry. */
		registry_entry_unref(e);
		return 0;
	}
	/* Counted first: the sandbox never seems unregistered meanwhile. */
	if (namecount_add(r->sandboxes, e->sandbox) == -1) {
		registry_entry_unref(e);
		*cause = "out of memory";
		return -1;
	}
	/*
	 * Whoever held the address before goes; a session container that
	 * moved (restarted) leaves its old address, not the sandbox's extra
	 * ones: `exec --fresh` containers still running.
	 */
	registry_remove(r, addr);
	if (!extra)
		registry_remove_session(r, e->sandbox);
	e->listed = 1;
	e->next = r->head;
	r->head = e;
	registry_index(r, e);
	r->n++;
	return 0;
}

size_t
registry_remove(struct registry *r, const char *key)
{
	struct registry_entry	**pp, *e;
	size_t			  n = 0;

	for (pp = &r->head; (e = *pp) != NULL;) {
		if (strcmp(e->addr, key) == 0 || strcmp(e->sandbox, key) == 0) {
			registry_unlist(r, pp);
			n++;
		} else
			pp = &e->next;
	}
	return n;
}

int
registry_has_sandbox(const struct registry *r, const char *sandbox)
{
	return namecount_get(r != NULL ? r->sandboxes : NULL, sandbox) > 0;
}

void
registry_changed(struct registry *r, namecount_fn fn, void *arg)
{
	namecount_changed(r->sandboxes, fn, arg);
}

size_t
registry_count(const struct registry *r)
{
	return r->n;
}

int
registry_lookup(struct registry *r, const struct sockaddr *sa,
    struct proxy_client *out)
{
	struct registry_entry	*e;
	char			 a[INET6_ADDRSTRLEN];

	if (r == NULL || r->head == NULL)
		return -1;
	addr_to_string(sa, a, sizeof(a));
	if ((e = registry_find(r, a)) == NULL)
		return -1;
	e->refs++;
	out->sandbox = e->sandbox;
	out->sets = (const char *const *)e->sets;
	out->nsets = e->nsets;
	out->sets_text = e->sets_text;
	out->ref = e;
	return 0;
}

void
registry_client_release(struct proxy_client *pc)
{
	registry_entry_unref(pc->ref);
	pc->ref = NULL;
}

json_t *
registry_json(const struct registry *r)
{
	struct registry_entry	*e;
	json_t			*arr = json_array(), *o, *sets;
	size_t			 i;

	for (e = r->head; arr != NULL && e != NULL; e = e->next) {
		sets = json_array();
		for (i = 0; i < e->nsets; i++)
			json_array_append_new(sets, json_string(e->sets[i]));
		o = json_pack("{s:s, s:s, s:o, s:b}", "address", e->addr,
		    "sandbox", e->sandbox, "sets", sets, "extra", e->extra);
		json_array_append_new(arr, o);
	}
	return arr;
}
