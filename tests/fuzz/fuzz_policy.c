/*
 * fuzz_policy.c: load the input as one policy file, and when it loads,
 * ask every entry's own pattern back through the matcher.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "policy.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	fuzz_floors(const struct policy *, struct policy_query *);

static void
fuzz_query(const struct policy *p)
{
	const struct policy_entry	*e;
	struct policy_query		 q;
	struct policy_match		 m;
	struct host			 h;
	const char			*cause;
	char				 name[SG_HOST_MAX + 2];
	size_t				 i;

	memset(&q, 0, sizeof(q));
	q.host = &h;
	q.all_sets = 1;
	q.now = 1780272000;
	for (i = 0; i < policy_nentries(p) && i < 64; i++) {
		e = policy_entry_at(p, i);
		/* A name under a wildcard, or a CIDR's first address. */
		snprintf(name, sizeof(name), "%s%s", e->kind ==
		    POLICY_HOST_WILDCARD ? "a" : "", e->kind ==
		    POLICY_HOST_WILDCARD ? e->pattern + 1 : e->pattern);
		if (host_normalize(name, strcspn(name, "/"), &h, &cause) == -1)
			continue;
		q.port = e->ports[0];
		q.method = NULL;
		q.path = NULL;
		(void)policy_decide(p, &q, &m);
		q.method = "GET";
		q.path = e->npaths ? e->paths[0] : "/a/../b";
		(void)policy_decide(p, &q, &m);
	}
	fuzz_floors(p, &q);
}

/* Each deny entry's pattern, decided and asked for as a grant. */
static void
fuzz_floors(const struct policy *p, struct policy_query *q)
{
	const struct policy_entry	*e;
	struct host			 h;
	const char			*cause;
	char				 name[SG_HOST_MAX + 2], why[512];
	size_t				 i;

	q->host = &h;
	q->method = NULL;
	q->path = NULL;
	for (i = 0; i < policy_ndenies(p) && i < 64; i++) {
		e = policy_deny_at(p, i);
		snprintf(name, sizeof(name), "%s%s", e->kind ==
		    POLICY_HOST_WILDCARD ? "a" : "", e->kind ==
		    POLICY_HOST_WILDCARD ? e->pattern + 1 : e->pattern);
		if (host_normalize(name, strcspn(name, "/"), &h, &cause) == -1)
			continue;
		q->port = e->ports != NULL ? e->ports[0] : 8080;
		if (policy_decide(p, q, NULL) != SG_REASON_DENIED)
			__builtin_trap();	/* a floor that does not hold */
		(void)policy_grant_check(p, &h, q->port, why, sizeof(why));
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct policy_diags	 d;
	struct policy		*p;
	char			 line[512];
	size_t			 i;

	policy_diags_init(&d);
	p = policy_load_buffer("fuzz", "fuzz.yaml", (const char *)data, size,
	    1780272000, &d);
	for (i = 0; i < d.n; i++)
		policy_diag_format(&d.v[i], line, sizeof(line));
	if (p != NULL)
		fuzz_query(p);
	policy_free(p);
	policy_diags_release(&d);
	return 0;
}
