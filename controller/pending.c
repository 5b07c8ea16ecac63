/*
 * pending.c: the destinations blocked so far (pending.h), counted from
 * the security-event log through the one log reader (logread.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "log.h"
#include "logread.h"
#include "logset.h"
#include "pending.h"
#include "reason.h"
#include "siphash.h"
#include "token.h"
#include "util.h"

#define PENDING_LOG	"security-events.jsonl"

static struct pending_dest *pending_find(struct pending *, const char *,
		    const char *, int, const char *, int *);
static struct pending_dest *pending_stalest(struct pending *);
static uint32_t	pending_hash(const char *, const char *, int, const char *);
static size_t	pending_slot(const struct pending *, const struct pending_dest *);
static void	pending_hash_put(struct pending *, struct pending_dest *);
static void	pending_hash_del(struct pending *, struct pending_dest *);
static void	pending_rehash(struct pending *);
static void	pending_run(struct pending_dest *, const char *);
static void	pending_time(struct pending_dest *, const char *, int);
static int	pending_cmp(const void *, const void *);
static void	pending_cb(json_t *, void *);

void
pending_init(struct pending *p, const char *sandbox)
{
	memset(p, 0, sizeof(*p));
	p->sandbox = sandbox;
}

void
pending_release(struct pending *p)
{
	free(p->v);
	free(p->slots);
	memset(p, 0, sizeof(*p));
}

/*
 * The key (sandbox, host, port, reason) hashed under a key drawn once
 * per process: the names and the port come from sandboxes, which with
 * an unkeyed hash (FNV-1a) could pick 16384 keys of one slot for free
 * and make every lookup scan them all (atk1921c F7).
 */
static uint32_t
pending_hash(const char *sandbox, const char *host, int port,
    const char *reason)
{
	const char	*parts[3] = { sandbox, host, reason };
	unsigned char	 m[1024];
	size_t		 n = 0, i, l;

	for (i = 0; i < 3; i++) {
		/* Cut at 255 bytes each: a longer one only collides. */
		l = strnlen(parts[i], 255);
		m[n++] = (unsigned char)l;
		memcpy(m + n, parts[i], l);
		n += l;
	}
	m[n++] = (unsigned char)(port & 0xff);
	m[n++] = (unsigned char)((port >> 8) & 0xff);
	return (uint32_t)sg_keyed_hash(m, n);
}

/* The slot that holds d. */
static size_t
pending_slot(const struct pending *p, const struct pending_dest *d)
{
	size_t	i = d->hash & (PENDING_SLOTS - 1);

	while (p->slots[i] != (uint32_t)(d - p->v) + 1)
		i = (i + 1) & (PENDING_SLOTS - 1);
	return i;
}

static void
pending_hash_put(struct pending *p, struct pending_dest *d)
{
	size_t	i = d->hash & (PENDING_SLOTS - 1);

	while (p->slots[i] != 0)
		i = (i + 1) & (PENDING_SLOTS - 1);
	p->slots[i] = (uint32_t)(d - p->v) + 1;
}

/*
 * Take d out of the slots, moving back the entries after it in its run
 * that could not be found past the hole otherwise (no tombstones, so a
 * table that evicts forever never fills with them).
 */
static void
pending_hash_del(struct pending *p, struct pending_dest *d)
{
	size_t	hole = pending_slot(p, d), j = hole, home;

	p->slots[hole] = 0;
	for (;;) {
		j = (j + 1) & (PENDING_SLOTS - 1);
		if (p->slots[j] == 0)
			return;
		home = p->v[p->slots[j] - 1].hash & (PENDING_SLOTS - 1);
		/* does home lie cyclically in (hole, j]? then it stays */
		if (hole <= j ? (home > hole && home <= j) :
		    (home > hole || home <= j))
			continue;
		p->slots[hole] = p->slots[j];
		p->slots[j] = 0;
		hole = j;
	}
}

/* Index every entry again (after v was reordered). */
static void
pending_rehash(struct pending *p)
{
	size_t	i;

	if (p->slots == NULL)
		return;
	memset(p->slots, 0, PENDING_SLOTS * sizeof(*p->slots));
	for (i = 0; i < p->n; i++)
		pending_hash_put(p, &p->v[i]);
}

/* The full table's entry last attempted longest ago, to be made new. */
static struct pending_dest *
pending_stalest(struct pending *p)
{
	struct pending_dest	*d = &p->v[0];
	size_t			 i;

	for (i = 1; i < p->n; i++)
		if (p->v[i].last_us < d->last_us)
			d = &p->v[i];
	p->evicted++;
	return d;
}

void
pending_evict(struct pending *p)
{
	p->evict = 1;
}

static struct pending_dest *
pending_find(struct pending *p, const char *sandbox, const char *host,
    int port, const char *reason, int *isnew)
{
	struct pending_dest	*d;
	uint32_t		 h = pending_hash(sandbox, host, port, reason);
	size_t			 i;

	*isnew = 0;
	if (p->slots == NULL &&
	    (p->slots = calloc(PENDING_SLOTS, sizeof(*p->slots))) == NULL)
		fatal("calloc");
	for (i = h & (PENDING_SLOTS - 1); p->slots[i] != 0;
	    i = (i + 1) & (PENDING_SLOTS - 1)) {
		d = &p->v[p->slots[i] - 1];
		if (d->hash == h && d->port == port &&
		    strcmp(d->host, host) == 0 &&
		    strcmp(d->reason, reason) == 0 &&
		    strcmp(d->sandbox, sandbox) == 0)
			return d;
	}
	if (p->n == PENDING_DESTS_MAX && p->evict) {
		d = pending_stalest(p);
		pending_hash_del(p, d);
	} else if (p->n == PENDING_DESTS_MAX || (p->share > 0 &&
	    p->src_new == p->share)) {
		p->dropped++;
		p->src_dropped++;
		return NULL;
	} else {
		p->src_new++;
		if (p->n == p->cap) {
			p->cap = p->cap ? p->cap * 2 : 16;
			p->v = reallocarray(p->v, p->cap, sizeof(*p->v));
			if (p->v == NULL)
				fatal("reallocarray");
		}
		d = &p->v[p->n++];
	}
	memset(d, 0, sizeof(*d));
	snprintf(d->sandbox, sizeof(d->sandbox), "%s", sandbox);
	snprintf(d->host, sizeof(d->host), "%s", host);
	d->port = port;
	snprintf(d->reason, sizeof(d->reason), "%s", reason);
	d->hash = h;
	pending_hash_put(p, d);
	*isnew = 1;
	return d;
}

static void
pending_run(struct pending_dest *d, const char *run)
{
	int	i;

	if (run == NULL || strlen(run) >= sizeof(d->runs[0]) ||
	    strspn(run, "abcdefghijklmnopqrstuvwxyz0123456789_") !=
	    strlen(run))
		return;
	for (i = 0; i < d->nruns; i++)
		if (strcmp(d->runs[i], run) == 0)
			return;
	if (d->nruns < PENDING_RUNS_MAX)
		snprintf(d->runs[d->nruns++], sizeof(d->runs[0]), "%s", run);
}

/* Widen [first, last] by the time s (first and last: which ends). */
static void
pending_time(struct pending_dest *d, const char *s, int which)
{
	int64_t	us;

	if (s == NULL || strlen(s) >= sizeof(d->first) ||
	    !util_printable(s) || logread_parse_ts(s, &us) == -1)
		return;
	if ((which & 1) && (d->first[0] == '\0' || us < d->first_us)) {
		d->first_us = us;
		snprintf(d->first, sizeof(d->first), "%s", s);
	}
	if ((which & 2) && (d->last[0] == '\0' || us > d->last_us)) {
		d->last_us = us;
		snprintf(d->last, sizeof(d->last), "%s", s);
	}
}

struct pending_dest *
pending_event(struct pending *p, json_t *o, int *isnew)
{
	struct pending_dest	*d;
	struct host		 h;
	const char		*ev, *sbx, *host, *reason, *cause;
	json_int_t		 port, count = 1;
	int			 summary;

	*isnew = 0;
	ev = json_string_value(json_object_get(o, "event"));
	if (ev == NULL)
		return NULL;
	summary = strcmp(ev, "egress.blocked_summary") == 0;
	if (!summary && strcmp(ev, "egress.blocked") != 0)
		return NULL;
	sbx = json_string_value(json_object_get(o, "sandbox"));
	host = json_string_value(json_object_get(o, "host"));
	reason = json_string_value(json_object_get(o, "reason"));
	port = json_integer_value(json_object_get(o, "port"));
	/* An id with escapes would reach the terminal: the token's rule. */
	if (sbx == NULL || !token_id_ok(sbx, strlen(sbx), 1) ||
	    (p->sandbox != NULL &&
	    strcmp(sbx, p->sandbox) != 0) || host == NULL || reason == NULL ||
	    reason_from_code(reason) == SG_REASON_MAX || port < 1 ||
	    port > 65535 || host_normalize(host, strlen(host), &h,
	    &cause) == -1 || strcmp(h.name, host) != 0)
		return NULL;
	if (summary && (count = json_integer_value(json_object_get(o,
	    "count"))) < 1)
		return NULL;
	d = pending_find(p, sbx, host, (int)port, reason, isnew);
	if (d == NULL)
		return NULL;
	d->attempts = util_add_sat(d->attempts, count);
	if (summary) {
		pending_time(d, json_string_value(json_object_get(o, "first")),
		    1);
		pending_time(d, json_string_value(json_object_get(o, "last")),
		    2);
	} else
		pending_time(d, json_string_value(json_object_get(o, "ts")),
		    3);
	pending_run(d, json_string_value(json_object_get(o, "run_id")));
	return d;
}

struct pending_dest *
pending_record(struct pending *p, json_t *r)
{
	struct pending_dest	*d;
	json_t			*ev;
	int			 isnew;

	ev = json_pack("{s:s, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, s:O?, "
	    "s:O?}", "event", "egress.blocked_summary", "sandbox",
	    json_object_get(r, "sandbox"), "host", json_object_get(r, "host"),
	    "port", json_object_get(r, "port"), "reason", json_object_get(r,
	    "reason"), "count", json_object_get(r, "attempts"), "first",
	    json_object_get(r, "first"), "last", json_object_get(r, "last"),
	    "run_id", json_object_get(r, "run_id"));
	if (ev == NULL)
		return NULL;
	d = pending_event(p, ev, &isnew);
	json_decref(ev);
	return d;
}

void
pending_source(struct pending *p, size_t share)
{
	p->share = share;
	p->src_new = 0;
	p->src_dropped = 0;
}

static void
pending_cb(json_t *o, void *arg)
{
	int	isnew;

	(void)pending_event(arg, o, &isnew);
}

int
pending_read_log(struct pending *p, const char *dir, struct logset **keep,
    char **cause)
{
	struct logread_stats	 st = { 0, 0 };
	struct logset		*set;
	int			 rc;

	if (keep == NULL)
		return logset_read_log(dir, PENDING_LOG, pending_cb, p, &st,
		    cause);
	set = logset_new();
	rc = logset_add_log(set, dir, PENDING_LOG, cause);
	if (rc == 0)
		rc = logset_each(set, 0, logset_count(set), pending_cb, p, &st,
		    cause);
	if (rc == -1) {
		logset_free(set);
		set = NULL;
	}
	*keep = set;
	return rc;
}

static int
pending_cmp(const void *a, const void *b)
{
	const struct pending_dest	*x = a, *y = b;
	int				 c = strcmp(x->sandbox, y->sandbox);

	if (c != 0)
		return c;
	return x->last_us < y->last_us ? -1 : x->last_us > y->last_us;
}

void
pending_sort(struct pending *p)
{
	if (p->n > 1)
		qsort(p->v, p->n, sizeof(*p->v), pending_cmp);
	pending_rehash(p);
}

json_t *
pending_dest_json(const struct pending_dest *d)
{
	json_t	*runs = json_array();
	char	 dest[SG_HOST_MAX + 16];
	int	 i;

	for (i = 0; i < d->nruns; i++)
		json_array_append_new(runs, json_string(d->runs[i]));
	snprintf(dest, sizeof(dest), strchr(d->host, ':') ? "[%s]:%d" :
	    "%s:%d", d->host, d->port);
	return json_pack("{s:s, s:s, s:s, s:i, s:s, s:I, s:s?, s:s?, s:o}",
	    "sandbox", d->sandbox, "destination", dest, "host", d->host,
	    "port", d->port, "reason", d->reason, "attempts",
	    (json_int_t)d->attempts, "first", d->first[0] ? d->first : NULL,
	    "last", d->last[0] ? d->last : NULL, "run_ids", runs);
}

void
pending_dest_print(const struct pending_dest *d)
{
	char	dest[SG_HOST_MAX + 16];
	int	i;

	snprintf(dest, sizeof(dest), strchr(d->host, ':') ? "[%s]:%d" :
	    "%s:%d", d->host, d->port);
	printf("%s  %s  %s  %lld attempt%s  %s .. %s", d->sandbox, dest,
	    d->reason, d->attempts, d->attempts == 1 ? "" : "s",
	    d->first[0] ? d->first : "-", d->last[0] ? d->last : "-");
	for (i = 0; i < d->nruns; i++)
		printf("%s%s", i ? "," : "  runs ", d->runs[i]);
	printf("\n");
}

void
pending_exec_init(struct pending_exec *x, const char *sandbox,
    const char *run)
{
	memset(x, 0, sizeof(*x));
	x->run = run;
	pending_init(&x->own, sandbox);
	pending_init(&x->none, sandbox);
	x->msgs[0] = json_object();
	x->msgs[1] = json_object();
}

void
pending_exec_release(struct pending_exec *x)
{
	pending_release(&x->own);
	pending_release(&x->none);
	json_decref(x->msgs[0]);
	json_decref(x->msgs[1]);
	memset(x, 0, sizeof(*x));
}

/* Keep the message of r for the new entry d of table k, if sound. */
static void
pending_exec_message(struct pending_exec *x, int k, struct pending *p,
    struct pending_dest *d, json_t *r)
{
	const char	*m = json_string_value(json_object_get(r, "message"));
	char		 key[32];

	if (m == NULL || strlen(m) > PENDING_MESSAGE_MAX || !util_printable(m))
		return;
	snprintf(key, sizeof(key), "%zu", (size_t)(d - p->v));
	json_object_set_new(x->msgs[k], key, json_string(m));
}

void
pending_exec_add(struct pending_exec *x, json_t *records)
{
	struct pending_dest	*d;
	struct pending		*p;
	json_t			*r, *c, *jrun;
	const char		*run;
	size_t			 i, n;
	int			 own;

	pending_source(&x->own, PENDING_EXEC_SHARE);
	pending_source(&x->none, PENDING_EXEC_SHARE);
	json_array_foreach(records, i, r) {
		jrun = json_object_get(r, "run_id");
		run = json_string_value(jrun);
		if (x->run != NULL && ((run != NULL && strcmp(run, x->run) !=
		    0) || (run == NULL && jrun != NULL && !json_is_null(jrun))))
			continue;	/* another run's, or no run id */
		own = x->run != NULL && run != NULL;
		p = own ? &x->own : &x->none;
		n = p->n;
		/* asked for one sandbox, a replica names it in no record */
		if ((c = json_copy(r)) == NULL)
			continue;
		if (json_object_get(c, "sandbox") == NULL)
			json_object_set_new(c, "sandbox",
			    json_string(p->sandbox));
		if ((d = pending_record(p, c)) != NULL && p->n > n)
			pending_exec_message(x, own, p, d, c);
		json_decref(c);
	}
	if (x->own.src_dropped > 0 || x->none.src_dropped > 0)
		x->truncated = 1;
}

/* The network_blocked element of entry i of table k. */
static json_t *
pending_exec_item(struct pending_exec *x, int k, size_t i)
{
	struct pending		*p = k ? &x->own : &x->none;
	struct pending_dest	*d = &p->v[i];
	json_t			*o = pending_dest_json(d), *out;
	const char		*m;
	char			 key[32], made[PENDING_MESSAGE_MAX + 1];

	snprintf(key, sizeof(key), "%zu", i);
	if ((m = json_string_value(json_object_get(x->msgs[k], key))) ==
	    NULL) {
		(void)reason_message(made, sizeof(made),
		    reason_from_code(d->reason), d->host, (unsigned)d->port,
		    NULL, NULL);
		m = made;
	}
	out = json_pack("{s:O, s:s, s:s, s:I, s:s?}", "destination",
	    json_object_get(o, "destination"), "reason", d->reason,
	    "message", m, "attempts", (json_int_t)d->attempts, "run_id",
	    k ? x->run : d->nruns == 1 && x->run == NULL ? d->runs[0] : NULL);
	json_decref(o);
	return out;
}

json_t *
pending_exec_list(struct pending_exec *x)
{
	json_t	*out = json_array();
	size_t	 i;
	int	 k;

	for (k = 1; k >= 0; k--)
		for (i = 0; i < (k ? x->own.n : x->none.n); i++)
			json_array_append_new(out, pending_exec_item(x, k, i));
	return out;
}
