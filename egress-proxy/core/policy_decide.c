/*
 * policy_decide.c: whether a request is allowed. Candidates are found by
 * hash lookups only: the exact name, then each proper suffix of the name
 * among wildcards (most specific first), or for an IP literal each prefix
 * length in use, longest first. The first candidate of a set in force
 * that allows the request decides; otherwise the nearest miss names the
 * reason.
 */
#include <sys/socket.h>

#include <string.h>

#include "policy_int.h"
#include "urlpath.h"

struct decide {
	const struct policy		*p;
	const struct policy_query	*q;
	const struct pentry		*best;
	enum sg_reason			 reason;
	int				 rank;	/* how near best came */
	/* The normalized path, made for the first entry with paths. */
	int				 norm;	/* 0 not yet, 1 made, -1 bad */
	char				 path[SG_HTTP_LINE_MAX + 1];
	/* Its reading with "%2F" as data, for prefixes holding "%2F". */
	int				 norm_slash;
	char				 path_slash[SG_HTTP_LINE_MAX + 1];
};

static void	decide_lookup(struct decide *);
static int	decide_chain(struct decide *, uint32_t);
static int	decide_entry(struct decide *, const struct pentry *);
static void	decide_near(struct decide *, int, enum sg_reason,
		    const struct pentry *);
static int	decide_in_force(const struct policy_entry *,
		    const struct policy_query *);
static int	decide_port(const struct policy_entry *, uint16_t);
static int	decide_method(const struct policy_entry *, const char *);
static int	decide_path(struct decide *, const struct policy_entry *);
static void	decide_ip(struct decide *);
static void	decide_name(struct decide *);
static int	decide_name_walk(const struct policy *, const char *,
		    int (*)(void *, uint32_t), void *);
static int	decide_chain_cb(void *, uint32_t);
static int	decide_terminate_cb(void *, uint32_t);
static void	decide_fill(struct policy_match *, const struct pentry *,
		    uint16_t);

enum sg_reason
policy_decide(const struct policy *p, const struct policy_query *q,
    struct policy_match *m)
{
	struct decide	d;

	/* Not memset: the path buffer is filled only when an entry needs it. */
	d.p = p;
	d.q = q;
	d.best = NULL;
	d.reason = SG_REASON_NONE;
	d.rank = 0;
	d.norm = 0;
	d.norm_slash = 0;
	if (p->floor != NULL && (d.best = pdecide_floor(p->floor, q)) != NULL)
		d.reason = SG_REASON_DENIED;
	else
		decide_lookup(&d);
	if (m != NULL)
		decide_fill(m, d.best, q->port);
	return d.reason;
}

/* The allow entries' verdict, or the nearest miss. */
static void
decide_lookup(struct decide *d)
{
	if (d->q->host->type == HOST_DNS) {
		d->reason = SG_REASON_NOT_ALLOWLISTED;
		decide_name(d);
	} else {
		d->reason = SG_REASON_IP_LITERAL;
		decide_ip(d);
	}
}

/*
 * The floor holds deny entries only, every set in force: one that covers
 * the host and port "allows" in this lookup, and so denies.
 */
const struct pentry *
pdecide_floor(const struct policy *floor, const struct policy_query *q)
{
	struct policy_query	fq = *q;
	struct decide		d;

	fq.all_sets = 1;
	fq.path = NULL;
	d.p = floor;
	d.q = &fq;
	d.best = NULL;
	d.rank = 0;
	d.norm = 0;
	d.norm_slash = 0;
	decide_lookup(&d);
	return d.reason == SG_REASON_NONE ? d.best : NULL;
}

static void
decide_fill(struct policy_match *m, const struct pentry *pe, uint16_t port)
{
	memset(m, 0, sizeof(*m));
	if (pe == NULL)
		return;
	m->entry = &pe->pub;
	m->set = pe->pub.set->name;
	m->file = pe->pub.set->file;
	m->line = pe->pub.line;
	m->pattern = pe->pub.pattern;
	m->rationale = pe->pub.rationale;
	m->allow_private = pe->pub.allow_private;
	m->tls = policy_entry_tls(&pe->pub, port);
}

/*
 * fn(arg, head) for the chain of each key a name is looked up under: the
 * exact name, then "*.suffix" for each proper suffix, most specific
 * first, until fn returns 1. 1 when it did.
 */
static int
decide_name_walk(const struct policy *p, const char *name,
    int (*fn)(void *, uint32_t), void *arg)
{
	const char	*s;

	if (fn(arg, ptable_get(&p->exact, name, strlen(name))))
		return 1;
	for (s = strchr(name, '.'); s != NULL; s = strchr(s + 1, '.')) {
		if (fn(arg, ptable_get(&p->wild, s + 1, strlen(s + 1))))
			return 1;
	}
	return 0;
}

static int
decide_chain_cb(void *d, uint32_t head)
{
	return decide_chain(d, head);
}

static void
decide_name(struct decide *d)
{
	(void)decide_name_walk(d->p, d->q->host->name, decide_chain_cb, d);
}

/* A name's first tls: terminate entry, as decide_terminate_cb finds it. */
struct decide_term {
	const struct policy	*p;
	const struct pentry	*found;
};

static int
decide_terminate_cb(void *arg, uint32_t head)
{
	struct decide_term	*t = arg;
	const struct pentry	*e;
	uint32_t		 j;

	for (j = head; j != 0; j = e->next) {
		e = &t->p->entries[j - 1];
		if (e->pub.tls == POLICY_TLS_TERMINATE) {
			t->found = e;
			return 1;
		}
	}
	return 0;
}

const struct policy_entry *
policy_terminate_entry(const struct policy *p, const struct host *h)
{
	struct decide_term	t = { p, NULL };

	if (h->type != HOST_DNS ||
	    !decide_name_walk(p, h->name, decide_terminate_cb, &t))
		return NULL;
	return &t.found->pub;
}

/* Each prefix length in use, longest first. */
static void
decide_ip(struct decide *d)
{
	const struct host	*h = d->q->host;
	uint8_t			 key[PENTRY_CKEY_LEN];
	int			 family, pl;

	family = h->type == HOST_IPV4 ? AF_INET : AF_INET6;
	for (pl = family == AF_INET ? 32 : 128; pl >= 0; pl--) {
		if (!pindex_len_used(d->p, family, (unsigned)pl))
			continue;
		pindex_ckey(key, family, (unsigned)pl,
		    (const uint8_t *)&h->ip);
		if (decide_chain(d, ptable_get(&d->p->cidr, key, sizeof(key))))
			return;
	}
}

/* Try each entry of a chain; 1 when one allowed the request. */
static int
decide_chain(struct decide *d, uint32_t head)
{
	const struct pentry	*e;
	uint32_t		 j;

	for (j = head; j != 0; j = e->next) {
		e = &d->p->entries[j - 1];
		if (decide_entry(d, e))
			return 1;
	}
	return 0;
}

static void
decide_near(struct decide *d, int rank, enum sg_reason r,
    const struct pentry *e)
{
	if (rank > d->rank) {
		d->rank = rank;
		d->reason = r;
		d->best = e;
	}
}

/* One candidate whose host matched. 1 when it allows the request. */
static int
decide_entry(struct decide *d, const struct pentry *pe)
{
	const struct policy_query	*q = d->q;
	const struct policy_entry	*e = &pe->pub;

	if (!decide_in_force(e, q))
		return 0;
	if (!decide_port(e, q->port)) {
		decide_near(d, 1, SG_REASON_PORT_NOT_ALLOWED, pe);
		return 0;
	}
	if (q->path == NULL) {
		/*
		 * CONNECT hides method and path: such entries can't, unless
		 * the proxy terminates the session and sees each request.
		 */
		if ((e->methods != NULL || e->paths != NULL) &&
		    policy_entry_tls(e, q->port) != POLICY_TLS_TERMINATE) {
			decide_near(d, 2, SG_REASON_METHOD_NOT_ALLOWED, pe);
			return 0;
		}
	} else if (!q->terminated && policy_entry_tls(e, q->port) !=
	    POLICY_TLS_OPTIONAL) {
		decide_near(d, 2, SG_REASON_NOT_TLS, pe);
		return 0;
	} else if (!decide_method(e, q->method)) {
		decide_near(d, 2, SG_REASON_METHOD_NOT_ALLOWED, pe);
		return 0;
	} else if (!decide_path(d, e)) {
		decide_near(d, 2, SG_REASON_PATH_NOT_ALLOWED, pe);
		return 0;
	}
	d->best = pe;
	d->reason = SG_REASON_NONE;
	d->rank = 3;
	return 1;
}

static int
decide_in_force(const struct policy_entry *e, const struct policy_query *q)
{
	size_t	i;

	if (!policy_entry_active(e, q->now))
		return 0;
	if (q->all_sets)
		return 1;
	for (i = 0; i < q->nsets; i++) {
		if (q->sets[i] != NULL && strcmp(q->sets[i], e->set->name) == 0)
			return 1;
	}
	return 0;
}

static int
decide_port(const struct policy_entry *e, uint16_t port)
{
	size_t	lo = 0, hi = e->nports, mid;

	if (e->ports == NULL)
		return 1;	/* a deny entry without ports */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (e->ports[mid] == port)
			return 1;
		if (e->ports[mid] < port)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

static int
decide_method(const struct policy_entry *e, const char *method)
{
	size_t	i;

	if (method != NULL && e->cred_header != NULL &&
	    policy_method_echoes(method))
		return 0;	/* the answer would carry the credential */
	if (e->methods == NULL)
		return 1;
	if (method == NULL)
		return 0;
	for (i = 0; i < e->nmethods; i++) {
		if (strcmp(e->methods[i], method) == 0)
			return 1;
	}
	return 0;
}

/*
 * A prefix of the normalized path (urlpath.h; a prefix with a query
 * names it whole); a path a server could read as another one matches no
 * prefix. A prefix holding "%2F" is matched
 * against the reading that keeps "%2F" as data, and only such a prefix.
 */
static int
decide_path(struct decide *d, const struct policy_entry *e)
{
	const char	*cause;
	size_t		 i;

	if (e->paths == NULL)
		return 1;
	for (i = 0; i < e->npaths; i++) {
		if (strstr(e->paths[i], "%2F") == NULL) {
			if (d->norm == 0)
				d->norm = urlpath_normalize(d->q->path,
				    d->path, sizeof(d->path), &cause) == 0 ?
				    1 : -1;
			if (d->norm == 1 && urlpath_match(d->path, e->paths[i]))
				return 1;
			continue;
		}
		/* An explicit "%2F": npm's "/@scope%2fname". */
		if (d->norm_slash == 0)
			d->norm_slash = urlpath_normalize_slash(d->q->path,
			    d->path_slash, sizeof(d->path_slash), &cause) ==
			    0 ? 1 : -1;
		if (d->norm_slash == 1 &&
		    urlpath_match(d->path_slash, e->paths[i]))
			return 1;
	}
	return 0;
}
