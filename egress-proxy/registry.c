/* registry.c: client address -> sandbox and sets; see registry.h. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "keytab.h"
#include "namecount.h"
#include "policy.h"
#include "proxy.h"
#include "registry.h"
#include "regsize.h"
#include "token.h"

struct registry_entry {
	struct registry_entry	*next;
	struct registry_entry	*prev;
	struct registry_entry	*snext;		/* the sandbox's others */
	unsigned		 refs;
	int			 listed;	/* still in the registry */
	int			 extra;		/* not the session's address */
	int			 unsure;	/* restored while removals were not known */
	size_t			 text;		/* bytes it takes saved (registry_text) */
	char			 addr[INET6_ADDRSTRLEN];
	char			*sandbox;
	char			*sets_text;
	char			**sets;
	size_t			 nsets;
};

/* An address whose entry changed (registry_addr_changed). */
struct registry_addr {
	struct registry_addr	*next;
	char			 addr[INET6_ADDRSTRLEN];
};

/* A sandbox unregistered at a time, in the list oldest first. */
struct registry_gone {
	struct registry_gone	*next;
	struct registry_gone	*prev;
	time_t			 at;
	char			 sandbox[];
};

/*
 * Entries are listed (doubly, for a removal in constant time), indexed
 * by address in a keyed table (keytab.h), and each sandbox's listed
 * apart (the namecount slot): every connection's lookup, the check of
 * every open connection at each /register and /unregister, and the
 * removal of an address or a sandbox take what they touch, not the whole
 * registry (atk15r15 F1: 4,096 idle connections of an unregistered
 * client made each change walk them times 4,000 entries, 122 ms).
 */
struct registry {
	struct registry_entry	*head;
	size_t			 n;
	size_t			 text;		/* the entries' saved text */
	size_t			 unsure;	/* entries marked */
	size_t			 gone_text;	/* registry_gone_text */
	struct keytab		*byaddr;
	struct namecount	*sandboxes;	/* sandbox -> its entries */
	struct keytab		*gone;		/* sandbox -> registry_gone */
	struct registry_gone	*gone_head;	/* oldest first */
	struct registry_gone	*gone_tail;
	struct registry_addr	*addr_changed;	/* since last asked */
	time_t			 gone_floor;	/* latest forgotten */
	int			 gone_dirty;	/* changed since saved */
	registry_clock_fn	 clock;		/* wall and boot time */
	time_t			 gone_seen;	/* the clock entries age by */
	time_t			 gone_boot;	/* boot time at gone_seen */
	unsigned long long	 gone_early;	/* forgotten within their time */
};

static void	registry_entry_unref(struct registry_entry *);
static int	registry_same(struct registry *,
		    const struct registry_entry *);
static int	registry_canon(const char *, char *);
static void	registry_canon6(const unsigned char *, char *, size_t);
static void	registry_remove_session(struct registry *, const char *);
static void	registry_unlist(struct registry *, struct registry_entry *);
static void	registry_gone_unlink(struct registry *,
		    struct registry_gone *);
static void	registry_gone_out(struct registry *, struct registry_gone *);
static void	registry_gone_insert(struct registry *,
		    struct registry_gone *);
static size_t	registry_gone_size(const struct registry_gone *);
static int	registry_entry_is(const struct registry_entry *,
		    const char *, const char *, int);
static void	registry_link(struct registry *, struct registry_entry *);
static void	registry_addr_note(struct registry *, const char *);
static json_t	*registry_entry_json(const struct registry_entry *, int);
static size_t	registry_entry_text(const struct registry_entry *);
static long long registry_add_growth(struct registry *,
		    const struct registry_entry *);
static int	registry_room(const struct registry *,
		    const struct registry_entry *, long long, size_t);
static int	registry_is_move(const struct registry *,
		    const struct registry_entry *);

const char	registry_full[] = "the registry is full";

/* The wall clock and the time since boot (suspended time too). */
static void
registry_clock_real(time_t *wall, time_t *boot)
{
	struct timespec	ts;

	*wall = time(NULL);
	*boot = clock_gettime(CLOCK_BOOTTIME, &ts) == 0 ? ts.tv_sec : 0;
}

void
registry_set_clock(struct registry *r, registry_clock_fn fn)
{
	r->clock = fn != NULL ? fn : registry_clock_real;
	r->gone_boot = 0;
}

/*
 * The time removed sandboxes age by: the wall clock, but never further
 * past the last time seen than the boot clock went on since (atk1921j
 * F2: a wall clock ahead for a moment forgot every removal for good).
 * A clock stepped on, or time down between runs (the last time seen is
 * saved with them, registry_gone_load), keeps them longer: fails closed.
 */
static time_t
registry_gone_now(struct registry *r)
{
	time_t	wall, boot, lim;

	r->clock(&wall, &boot);
	if (r->gone_seen != 0 && r->gone_boot == 0)
		r->gone_boot = boot;	/* seen loaded: from here on */
	lim = r->gone_seen + (boot > r->gone_boot ? boot - r->gone_boot : 0);
	if (r->gone_seen != 0 && wall > lim)
		wall = lim;
	r->gone_seen = wall;
	r->gone_boot = boot;
	return wall;
}

time_t
registry_gone_seen(const struct registry *r)
{
	return r->gone_seen;
}

struct registry *
registry_new(void)
{
	struct registry	*r;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		return NULL;
	if ((r->sandboxes = namecount_new()) == NULL ||
	    (r->byaddr = keytab_new()) == NULL ||
	    (r->gone = keytab_new()) == NULL) {
		namecount_free(r->sandboxes);
		keytab_free(r->byaddr);
		free(r);
		return NULL;
	}
	r->clock = registry_clock_real;
	return r;
}

unsigned long long
registry_compared(const struct registry *r)
{
	return keytab_visited(r->byaddr);
}

unsigned long long
registry_sandbox_visited(const struct registry *r)
{
	return namecount_visited(r->sandboxes);
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
	while (r->gone_head != NULL)
		registry_gone_unlink(r, r->gone_head);
	registry_addr_changed(r, NULL, NULL);
	namecount_free(r->sandboxes);
	keytab_free(r->byaddr);
	keytab_free(r->gone);
	free(r);
}

/* Take g out of the time-ordered list (still in the table). */
static void
registry_gone_out(struct registry *r, struct registry_gone *g)
{
	r->gone_text -= registry_gone_size(g);
	if (g->prev != NULL)
		g->prev->next = g->next;
	else
		r->gone_head = g->next;
	if (g->next != NULL)
		g->next->prev = g->prev;
	else
		r->gone_tail = g->prev;
	g->next = g->prev = NULL;
}

static void
registry_gone_unlink(struct registry *r, struct registry_gone *g)
{
	registry_gone_out(r, g);
	(void)keytab_del(r->gone, g->sandbox);
	free(g);
}

/*
 * Forget the unregisters no token can outlast (issued before them, with
 * the clock skew a token's "issued" may have), and past max the oldest.
 * Every one forgotten raises the floor to its time (registry_gone_floor),
 * so a token of a forgotten sandbox is still refused, whatever the clock
 * did (atk1921j F2); the floor is never lowered: a token issued before
 * it is past its life on a right clock anyway. Oldest first: stops at
 * the first one kept.
 */
static void
registry_gone_prune(struct registry *r, time_t now, size_t max)
{
	struct registry_gone	*g;

	time_t			 old = now - TOKEN_TTL_MAX - 2 * TOKEN_SKEW;

	while ((g = r->gone_head) != NULL) {
		if (g->at >= old && keytab_count(r->gone) <= max)
			break;
		if (g->at > r->gone_floor)
			r->gone_floor = g->at;
		if (g->at >= old)
			r->gone_early++;
		registry_gone_unlink(r, g);
		r->gone_dirty = 1;
	}
}

/* Into the list by time (at the tail, unless loaded out of order). */
static void
registry_gone_insert(struct registry *r, struct registry_gone *g)
{
	struct registry_gone	*after = r->gone_tail;

	r->gone_text += registry_gone_size(g);
	while (after != NULL && after->at > g->at)
		after = after->prev;
	g->prev = after;
	g->next = after != NULL ? after->next : r->gone_head;
	if (g->next != NULL)
		g->next->prev = g;
	else
		r->gone_tail = g;
	if (after != NULL)
		after->next = g;
	else
		r->gone_head = g;
}

/* The bytes g takes in registry_gone_json written compact: "id":time, */
static size_t
registry_gone_size(const struct registry_gone *g)
{
	return strlen(g->sandbox) + 4 +
	    (size_t)regsize_digits((long long)g->at);
}

size_t
registry_gone_text(const struct registry *r)
{
	return r->gone_text;
}

/*
 * A removal's time as kept: at least 1 (0 reads as "not removed") and at
 * most the last second of year 9999, far from any overflow of the ageing
 * (atk15r18 F1: a time near the largest integer raised the floor past
 * every token, silently and for good). No clock bounds it: the ageing
 * clock lags after time down and cut genuine times short (atk15r19 F8).
 */
#define REGISTRY_GONE_LAST	253402300799LL	/* 9999-12-31T23:59:59Z */

static time_t
registry_gone_bound(time_t t)
{
	return t < 1 ? 1 : t > REGISTRY_GONE_LAST ? REGISTRY_GONE_LAST : t;
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
	struct registry_gone	*g;
	size_t			 len = strlen(sandbox);

	/*
	 * Only a name a token can carry: no other is ever refused, and the
	 * list's text stays within what a marks write keeps room for
	 * (control_register, atk36f F2).
	 */
	if (!token_id_ok(sandbox, len, 1))
		return;
	registry_gone_clear(r, sandbox);
	/*
	 * before: the new one stays until the next (a token may keep it);
	 * aged by this clock alone, never by t: one time far ahead (a
	 * controller's clock wrong for a moment, or a loaded entry) would
	 * prune every removal before it (atk1921i F2)
	 */
	registry_gone_prune(r, registry_gone_now(r), REGISTRY_GONE_MAX - 1);
	if ((g = calloc(1, sizeof(*g) + len + 1)) == NULL)
		return;
	memcpy(g->sandbox, sandbox, len + 1);
	g->at = registry_gone_bound(t);
	if (keytab_put(r->gone, sandbox, g) == -1) {
		free(g);
		return;
	}
	registry_gone_insert(r, g);
	r->gone_dirty = 1;
}

void
registry_gone_keep(struct registry *r, const char *sandbox, time_t at)
{
	struct registry_gone	*g = keytab_get(r->gone, sandbox);

	if (g == NULL || g->at >= (at = registry_gone_bound(at)))
		return;
	registry_gone_out(r, g);
	g->at = at;
	registry_gone_insert(r, g);	/* later: near the tail */
	r->gone_dirty = 1;
}

void
registry_gone_clear(struct registry *r, const char *sandbox)
{
	struct registry_gone	*g = keytab_get(r->gone, sandbox);

	if (g == NULL)
		return;
	registry_gone_unlink(r, g);
	r->gone_dirty = 1;
}

time_t
registry_gone_at(const struct registry *r, const char *sandbox)
{
	const struct registry_gone	*g = keytab_get(r->gone, sandbox);

	return g != NULL ? g->at : 0;
}

time_t
registry_gone_floor(const struct registry *r)
{
	return r->gone_floor;
}

unsigned long long
registry_gone_forgotten(const struct registry *r)
{
	return r->gone_early;
}

size_t
registry_gone_count(const struct registry *r)
{
	return keytab_count(r->gone);
}

int
registry_gone_dirty(const struct registry *r)
{
	return r->gone_dirty;
}

void
registry_gone_saved(struct registry *r)
{
	r->gone_dirty = 0;
}

json_t *
registry_gone_json(const struct registry *r)
{
	const struct registry_gone	*g;
	json_t				*o = json_object();

	for (g = r->gone_head; g != NULL && o != NULL; g = g->next)
		json_object_set_new(o, g->sandbox, json_integer(g->at));
	return o;
}

void
registry_gone_load(struct registry *r, json_t *o, time_t floor, time_t seen)
{
	const char	*k;
	json_t		*v;

	if (floor > r->gone_floor)
		r->gone_floor = registry_gone_bound(floor);
	if (seen > r->gone_seen) {
		r->gone_seen = seen;
		r->gone_boot = 0;	/* the boot clock: from the next look */
	}
	json_object_foreach(o, k, v)
		if (json_is_integer(v) && registry_gone_at(r, k) <
		    (time_t)json_integer_value(v))
			registry_gone_set(r, k, (time_t)json_integer_value(v));
}

/* The wall clock (registry_set_clock). */
static time_t
registry_wall(const struct registry *r)
{
	time_t	wall, boot;

	r->clock(&wall, &boot);
	return wall;
}

time_t
registry_gone_latest(struct registry *r)
{
	time_t	aged = registry_gone_now(r), wall = registry_wall(r);

	return wall > aged ? wall : aged;
}

void
registry_gone_unknown(struct registry *r)
{
	time_t	now = registry_gone_latest(r);

	if (now > r->gone_floor)
		r->gone_floor = now;
	r->gone_dirty = 1;
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
	return registry_entry_is(keytab_get(r->byaddr, e->addr), e->sandbox,
	    e->sets_text, e->extra);
}

/* o (NULL: none) is sandbox's with the sets text and kind given. */
static int
registry_entry_is(const struct registry_entry *o, const char *sandbox,
    const char *sets, int extra)
{
	return o != NULL && strcmp(o->sandbox, sandbox) == 0 &&
	    strcmp(o->sets_text, sets) == 0 && o->extra == (extra != 0);
}

int
registry_registered(struct registry *r, const char *addr,
    const char *sandbox, const char *sets, int extra)
{
	char	canon[INET6_ADDRSTRLEN];

	if (sandbox == NULL || registry_canon(addr, canon) == -1)
		return 0;
	return registry_entry_is(keytab_get(r->byaddr, canon), sandbox,
	    sets != NULL ? sets : "", extra);
}

/* Take e out of the registry (connections may hold it still). */
static void
registry_unlist(struct registry *r, struct registry_entry *e)
{
	void			**slot = namecount_slot(r->sandboxes,
				    e->sandbox);
	struct registry_entry	 *x, *prev = NULL;

	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		r->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	for (x = slot != NULL ? *slot : NULL; x != NULL && x != e;
	    x = x->snext)
		prev = x;
	if (x != NULL && prev == NULL)
		*slot = e->snext;
	else if (x != NULL)
		prev->snext = e->snext;
	(void)keytab_del(r->byaddr, e->addr);
	registry_addr_note(r, e->addr);
	e->listed = 0;
	namecount_sub(r->sandboxes, e->sandbox);
	r->text -= e->text;
	r->unsure -= e->unsure != 0;
	registry_entry_unref(e);
	r->n--;
}

/*
 * Remove the addresses of a sandbox (all: its session address, or with
 * session_only the session address alone, keeping its extra ones); how
 * many. Its own list: what it has, not the registry.
 */
static size_t
registry_remove_of(struct registry *r, const char *sandbox, int session_only)
{
	void			**slot = namecount_slot(r->sandboxes, sandbox);
	struct registry_entry	 *e, *next;
	size_t			  n = 0;

	for (e = slot != NULL ? *slot : NULL; e != NULL; e = next) {
		next = e->snext;
		if (session_only && e->extra)
			continue;
		registry_unlist(r, e);
		n++;
	}
	return n;
}

static void
registry_remove_session(struct registry *r, const char *sandbox)
{
	(void)registry_remove_of(r, sandbox, 1);
}

/* addr as the registry keeps it in canon[INET6_ADDRSTRLEN]; 0 or -1. */
static int
registry_canon(const char *addr, char *canon)
{
	unsigned char	buf[16];

	if (inet_pton(AF_INET, addr, buf) == 1)
		inet_ntop(AF_INET, buf, canon, INET6_ADDRSTRLEN);
	else if (inet_pton(AF_INET6, addr, buf) == 1)
		registry_canon6(buf, canon, INET6_ADDRSTRLEN);
	else
		return -1;
	return 0;
}

int
registry_add(struct registry *r, const char *addr, const char *sandbox,
    const char *sets, int extra, const char **cause)
{
	return registry_add_within(r, addr, sandbox, sets, extra, SIZE_MAX,
	    cause);
}

int
registry_add_within(struct registry *r, const char *addr,
    const char *sandbox, const char *sets, int extra, size_t max,
    const char **cause)
{
	struct registry_entry	*e;
	char			 canon[INET6_ADDRSTRLEN];
	long long		 growth;

	if (registry_canon(addr, canon) == -1) {
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
		registry_unsure_set(r, sandbox, 0);
		registry_entry_unref(e);
		return 0;
	}
	e->text = registry_entry_text(e);
	growth = registry_add_growth(r, e);
	if (e->text == 0 || !registry_room(r, e, growth, max)) {
		*cause = e->text == 0 ? "out of memory" : registry_full;
		registry_entry_unref(e);
		return -1;
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
	/* room for its index kept first: a new address needs a node */
	if (keytab_get(r->byaddr, addr) == NULL &&
	    keytab_put(r->byaddr, addr, NULL) == -1) {
		namecount_sub(r->sandboxes, e->sandbox);
		registry_entry_unref(e);
		*cause = "out of memory";
		return -1;
	}
	(void)registry_remove_address(r, addr);
	if (!extra)
		registry_remove_session(r, e->sandbox);
	registry_link(r, e);
	/* registered (again): no longer a restored one (registry_unsure_all) */
	registry_unsure_set(r, e->sandbox, 0);
	return 0;
}

/* List e, index it by address (room made) and in its sandbox's list. */
static void
registry_link(struct registry *r, struct registry_entry *e)
{
	void	**slot = namecount_slot(r->sandboxes, e->sandbox);

	registry_addr_note(r, e->addr);
	e->listed = 1;
	e->prev = NULL;
	e->next = r->head;
	if (r->head != NULL)
		r->head->prev = e;
	r->head = e;
	(void)keytab_put(r->byaddr, e->addr, e);
	e->snext = *slot;
	*slot = e;
	r->n++;
	r->text += e->text;
}

/*
 * The bytes e takes in the saved registry (registry_json_saved, written
 * compact): its text and the comma before the next; 0: out of memory.
 */
static size_t
registry_entry_text(const struct registry_entry *e)
{
	json_t	*o = registry_entry_json(e, 0);
	char	*text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	size_t	 n = text != NULL ? strlen(text) + 1 : 0;

	free(text);
	json_decref(o);
	return n;
}

/*
 * How much e, added, grows the saved text: its own less the entries it
 * replaces (the one at its address, and for a session address the
 * sandbox's session entry at another).
 */
static long long
registry_add_growth(struct registry *r, const struct registry_entry *e)
{
	const struct registry_entry	*at = keytab_get(r->byaddr, e->addr);
	void				**slot;
	const struct registry_entry	*x;
	long long			 growth = (long long)e->text;

	if (at != NULL)
		growth -= (long long)at->text;
	if (e->extra || (slot = namecount_slot(r->sandboxes,
	    e->sandbox)) == NULL)
		return growth;
	for (x = *slot; x != NULL; x = x->snext)
		if (!x->extra && x != at)
			growth -= (long long)x->text;
	return growth;
}

/*
 * Whether e, growing the text by growth, fits: what takes no more room
 * always does; else the text stays within max, or for a move of a
 * sandbox's session to another address (its sets as they are) within
 * max and REGISTRY_MOVE_ROOM (atk37b F2: a session restarted with a
 * longer address was cut off at the bound). The text may be over both
 * already (an older proxy's file, loaded with no bound): then nothing
 * grows it (atk37b F1: max - text wrapped and every /register passed).
 */
static int
registry_room(const struct registry *r, const struct registry_entry *e,
    long long growth, size_t max)
{
	if (growth <= 0)
		return 1;
	if (max <= SIZE_MAX - REGISTRY_MOVE_ROOM && registry_is_move(r, e))
		max += REGISTRY_MOVE_ROOM;
	return r->text < max && (unsigned long long)growth <= max - r->text;
}

/*
 * e moves its sandbox's session: not an extra address, and the sandbox
 * has a session entry with the same sets (more sets is not a move).
 */
static int
registry_is_move(const struct registry *r, const struct registry_entry *e)
{
	void				**slot;
	const struct registry_entry	*x;
	size_t				 i;

	if (e->extra || (slot = namecount_slot(r->sandboxes,
	    e->sandbox)) == NULL)
		return 0;
	for (x = *slot; x != NULL; x = x->snext) {
		if (x->extra || x->nsets != e->nsets)
			continue;
		for (i = 0; i < e->nsets; i++)
			if (strcmp(x->sets[i], e->sets[i]) != 0)
				break;
		if (i == e->nsets)
			return 1;
	}
	return 0;
}

size_t
registry_text(const struct registry *r)
{
	return r->text;
}

size_t
registry_remove_address(struct registry *r, const char *addr)
{
	char			 canon[INET6_ADDRSTRLEN];
	struct registry_entry	*e;

	if (registry_canon(addr, canon) == -1 ||
	    (e = keytab_get(r->byaddr, canon)) == NULL)
		return 0;
	registry_unlist(r, e);
	return 1;
}

size_t
registry_remove_sandbox(struct registry *r, const char *sandbox)
{
	return registry_remove_of(r, sandbox, 0);
}

/*
 * addr's entry changed. Out of memory it is not noted; its connections
 * then keep the entry they hold (the one the registry had) until closed.
 */
static void
registry_addr_note(struct registry *r, const char *addr)
{
	struct registry_addr	*a;

	if ((a = calloc(1, sizeof(*a))) == NULL)
		return;
	snprintf(a->addr, sizeof(a->addr), "%s", addr);
	a->next = r->addr_changed;
	r->addr_changed = a;
}

void
registry_addr_changed(struct registry *r, registry_addr_fn fn, void *arg)
{
	struct registry_addr	*a;

	while ((a = r->addr_changed) != NULL) {
		r->addr_changed = a->next;
		if (fn != NULL)
			fn(arg, a->addr);
		free(a);
	}
}

void
registry_unsure_set(struct registry *r, const char *sandbox, int unsure)
{
	struct registry_entry	*e;
	void			**slot;

	if ((slot = namecount_slot(r->sandboxes, sandbox)) == NULL)
		return;
	for (e = *slot; e != NULL; e = e->snext) {
		r->unsure += (unsure != 0) - (e->unsure != 0);
		e->unsure = unsure != 0;
	}
}

size_t
registry_unsure_all(struct registry *r)
{
	struct registry_entry	*e;
	size_t			 n = 0;

	for (e = r->head; e != NULL; e = e->next, n++)
		e->unsure = 1;
	r->unsure = n;
	return n;
}

size_t
registry_unsure_count(const struct registry *r)
{
	return r->unsure;
}

int
registry_sandbox_unsure(const struct registry *r, const char *sandbox)
{
	const struct registry_entry	*e;
	void				**slot;

	if (r == NULL || (slot = namecount_slot(r->sandboxes,
	    sandbox)) == NULL)
		return 0;
	for (e = *slot; e != NULL; e = e->snext)
		if (e->unsure)
			return 1;
	return 0;
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
	if ((e = keytab_get(r->byaddr, a)) == NULL)
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

/* One entry as saved and shown, with its mark when mark is set. */
static json_t *
registry_entry_json(const struct registry_entry *e, int mark)
{
	json_t	*sets = json_array(), *o;
	size_t	 i;

	for (i = 0; i < e->nsets; i++)
		json_array_append_new(sets, json_string(e->sets[i]));
	o = json_pack("{s:s, s:s, s:o, s:b}", "address", e->addr,
	    "sandbox", e->sandbox, "sets", sets, "extra", e->extra);
	if (o != NULL && mark && e->unsure)
		json_object_set_new(o, "unsure", json_true());
	return o;
}

json_t *
registry_json(const struct registry *r)
{
	struct registry_entry	*e;
	json_t			*arr = json_array();

	for (e = r->head; arr != NULL && e != NULL; e = e->next)
		json_array_append_new(arr, registry_entry_json(e, 1));
	return arr;
}

json_t *
registry_json_saved(const struct registry *r, size_t *unsure)
{
	struct registry_entry	*e;
	json_t			*arr = json_array();
	int			 pass;

	*unsure = 0;
	for (pass = 1; pass >= 0; pass--)
		for (e = r->head; arr != NULL && e != NULL; e = e->next) {
			if ((e->unsure != 0) != pass)
				continue;
			json_array_append_new(arr, registry_entry_json(e, 0));
			*unsure += (size_t)pass;
		}
	return arr;
}
