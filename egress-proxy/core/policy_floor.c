/*
 * policy_floor.c: the floors admins set under every allow entry and
 * grant. Deny entries of every file are kept as a policy of their own
 * (the floor), indexed like the allow entries, and decide before them;
 * the domains of `grants: under:` bound what a grant may open.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy_int.h"

static int	floor_under(const char *, const char *);

struct policy *
ploader_floor(struct ploader *ld)
{
	struct policy		*p = ld->p, *f = p->floor;
	const struct policy_set	*cur;
	long			 set;

	if (p->nsets == 0)
		return NULL;
	cur = &p->sets[p->nsets - 1];
	if (f == NULL) {
		f = calloc(1, sizeof(*f));
		if (f == NULL)
			return NULL;
		p->floor = f;
	}
	if (f->nsets > 0 && f->sets[f->nsets - 1].file == cur->file)
		return f;
	ld->p = f;
	set = ploader_add_set(ld, cur->name, cur->file);
	ld->p = p;
	return set == -1 ? NULL : f;
}

int
pfloor_build(struct ploader *ld)
{
	struct policy	*p = ld->p, *f = p->floor;
	size_t		 i;
	int		 rc;

	if (f == NULL)
		return 0;
	for (i = 0; i < f->nentries; i++)
		f->entries[i].pub.set = &f->sets[f->entries[i].setidx];
	ld->p = f;
	rc = pindex_build(ld);
	ld->p = p;
	return rc;
}

int
ploader_add_grant_domain(struct ploader *ld, const char *name, int line,
    int col)
{
	struct policy			*p = ld->p;
	struct policy_grant_domain	*v, *d;
	size_t				 cap;

	if (p->ngdomains == p->capgdomains) {
		cap = p->capgdomains ? p->capgdomains * 2 : 8;
		v = reallocarray(p->gdomains, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		p->gdomains = v;
		p->capgdomains = cap;
	}
	d = &p->gdomains[p->ngdomains];
	d->name = parena_strndup(&p->arena, name, strlen(name));
	d->file = ld->file;
	d->line = line;
	d->col = col;
	if (d->name == NULL)
		return -1;
	p->ngdomains++;
	return 0;
}

size_t
policy_ndenies(const struct policy *p)
{
	return p->floor != NULL ? p->floor->nentries : 0;
}

const struct policy_entry *
policy_deny_at(const struct policy *p, size_t i)
{
	return i < policy_ndenies(p) ? &p->floor->entries[i].pub : NULL;
}

int
policy_grants_allow_private(const struct policy *p)
{
	return p->grants_private;
}

size_t
policy_ngrant_domains(const struct policy *p)
{
	return p->ngdomains;
}

const struct policy_grant_domain *
policy_grant_domain_at(const struct policy *p, size_t i)
{
	return i < p->ngdomains ? &p->gdomains[i] : NULL;
}

/* 1 when name is domain or a name under it. */
static int
floor_under(const char *name, const char *domain)
{
	size_t	ln = strlen(name), ld = strlen(domain);

	if (ln == ld)
		return strcmp(name, domain) == 0;
	return ln > ld + 1 && name[ln - ld - 1] == '.' &&
	    strcmp(name + ln - ld, domain) == 0;
}

int
policy_grant_check(const struct policy *p, const struct host *h,
    uint16_t port, char *why, size_t size)
{
	struct policy_query		 q;
	const struct pentry		*deny;
	const struct policy_entry	*term;
	size_t				 i, len;

	if (h->type != HOST_DNS) {
		snprintf(why, size, "%s is an IP address; grants open host "
		    "names only, never addresses (rule: no grant covers an "
		    "address, private or not)", h->name);
		return -1;
	}
	memset(&q, 0, sizeof(q));
	q.host = h;
	q.port = port;
	deny = p->floor != NULL ? pdecide_floor(p->floor, &q) : NULL;
	if (deny != NULL) {
		snprintf(why, size, "%s:%u is denied by the deny entry \"%s\" "
		    "(%s:%d: %s); no grant can open it", h->name, port,
		    deny->pub.pattern, deny->pub.set->file, deny->pub.line,
		    deny->pub.rationale);
		return -1;
	}
	if ((term = policy_terminate_entry(p, h)) != NULL) {
		snprintf(why, size, "%s is a host the proxy terminates: the "
		    "tls: terminate entry \"%s\" (%s:%d) decides every request "
		    "to it, on every port, and no grant can open it (rule: "
		    "grants never open a tls: terminate entry's host, plain or "
		    "TLS, past its methods, paths, credential or ca_file)",
		    h->name, term->pattern, term->set->file, term->line);
		return -1;
	}
	for (i = 0; i < p->ngdomains; i++) {
		if (floor_under(h->name, p->gdomains[i].name))
			return 0;
	}
	if (p->ngdomains == 0) {
		snprintf(why, size, "no policy file has a \"grants: under:\" "
		    "list, so grants are off (rule: grants may only open "
		    "names under the domains admins list there)");
		return -1;
	}
	len = (size_t)snprintf(why, size, "%s is not under a domain grants "
	    "may cover (rule: grants: under:", h->name);
	for (i = 0; i < p->ngdomains && len < size; i++)
		len += (size_t)snprintf(why + len, size - len, "%s %s (%s:%d)",
		    i ? "," : "", p->gdomains[i].name, p->gdomains[i].file,
		    p->gdomains[i].line);
	if (len < size)
		snprintf(why + len, size - len, ")");
	return -1;
}

int
policy_grant_check_query(const struct policy *p, const struct policy_query *q,
    const struct policy_match *m, char *why, size_t size)
{
	if (!q->terminated)
		return policy_grant_check(p, q->host, q->port, why, size);
	if (m != NULL && m->entry != NULL)
		snprintf(why, size, "a request inside the TLS session the "
		    "proxy terminates for %s:%u is decided by the entry \"%s\" "
		    "(%s:%d) alone (rule: grants never widen a tls: terminate "
		    "entry's methods, paths, credential or ca_file)",
		    q->host->name, q->port, m->pattern, m->file, m->line);
	else
		snprintf(why, size, "a request inside the TLS session the "
		    "proxy terminates for %s:%u is decided by the policy's "
		    "entries alone (rule: grants never open a request inside "
		    "a terminated session)", q->host->name, q->port);
	return -1;
}
