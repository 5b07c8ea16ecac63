/*
 * cmd_policy.c: `sandgate policy check|explain|list|diff|suggest`: review
 * the egress policy with the same engine the proxy runs
 * (egress-proxy/core/policy.h), and draft a set from what the proxy blocked.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "host.h"
#include "log.h"
#include "logread.h"
#include "policy.h"
#include "reason.h"
#include "sglimits.h"
#include "state.h"
#include "suggest.h"
#include "util.h"

/* Options shared by the subcommands. */
struct popts {
	const char	*dir;
	const char	*sets;
	const char	*method;
	const char	*path;
	int		 json;
	/* suggest */
	const char	*log_dir;
	const char	*sandbox;
	const char	*since;
	const char	*set_name;
};

/* One destination of a policy, for diff. */
struct pdest {
	char				*key;	/* "set pattern:port" */
	char				*attrs;
	const struct policy_entry	*e;
};

static void	cmd_policy_opts(struct cmd_args *, struct popts *);
static struct policy *cmd_policy_load(const char *, int);
static int	cmd_policy_check_exec(struct cmd_args *);
static int	cmd_policy_explain_exec(struct cmd_args *);
static int	cmd_policy_explain_host(const char *, struct host *,
		    uint16_t *);
static int	cmd_policy_explain_sets(struct policy *, const char *,
		    struct policy_query *, char ***);
static int	cmd_policy_list_exec(struct cmd_args *);
static void	cmd_policy_explain_term(const struct policy_entry *);
static void	cmd_policy_list_text(const struct policy *, time_t);
static void	cmd_policy_list_floors(const struct policy *);
static json_t	*cmd_policy_floors_json(const struct policy *);
static int	cmd_policy_list_json(const struct policy *, time_t);
static json_t	*cmd_policy_entry_json(const struct policy_entry *, time_t);
static int	cmd_policy_diff_exec(struct cmd_args *);
static int	cmd_policy_dests_add(struct pdest *, size_t *,
		    const struct policy_entry *);
static struct pdest *cmd_policy_dests(const struct policy *, time_t,
		    size_t *);
static void	cmd_policy_dests_free(struct pdest *, size_t);
static int	cmd_policy_dest_cmp(const void *, const void *);
static int	cmd_policy_diff_sets(const struct policy *,
		    const struct policy *);
static void	cmd_policy_print_dest(char, const struct pdest *);
static void	cmd_policy_dest_attrs(const struct policy_entry *, uint16_t,
		    char *, size_t);
static int	cmd_policy_suggest_exec(struct cmd_args *);
static struct policy *cmd_policy_load_quiet(const char *);

static const struct option cmd_policy_options[] = {
	{ "policy-dir", required_argument, NULL, 'd' },
	{ "sets", required_argument, NULL, 's' },
	{ "method", required_argument, NULL, 'm' },
	{ "path", required_argument, NULL, 'p' },
	{ "json", no_argument, NULL, 'j' },
	{ "log-dir", required_argument, NULL, 'l' },
	{ "sandbox", required_argument, NULL, 'b' },
	{ "since", required_argument, NULL, 'S' },
	{ "set", required_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 }
};

static const struct cmd_entry cmd_policy_check = {
	.name = "check",
	.usage = "[--policy-dir DIR] [DIR]",
	.summary = "validate the policy folder; exit 1 listing every error",
	.parent = &cmd_policy,
	.accepts = "d",
	.args_max = 1,
	.exec = cmd_policy_check_exec,
};

static const struct cmd_entry cmd_policy_explain = {
	.name = "explain",
	.usage = "[--policy-dir DIR] [--sets a,b] [--method M --path P] "
	    "HOST[:PORT]",
	.summary = "show the decision for a destination",
	.parent = &cmd_policy,
	.accepts = "dsmp",
	.args_min = 1,
	.args_max = 1,
	.exec = cmd_policy_explain_exec,
};

static const struct cmd_entry cmd_policy_list = {
	.name = "list",
	.usage = "[--policy-dir DIR] [--json]",
	.summary = "every set and entry",
	.parent = &cmd_policy,
	.accepts = "dj",
	.args_max = 0,
	.exec = cmd_policy_list_exec,
};

static const struct cmd_entry cmd_policy_diff = {
	.name = "diff",
	.usage = "OLD_DIR NEW_DIR",
	.summary = "destinations newly allowed (+) or no longer (-)",
	.parent = &cmd_policy,
	.accepts = "d",
	.args_min = 2,
	.args_max = 2,
	.exec = cmd_policy_diff_exec,
};

static const struct cmd_entry cmd_policy_suggest = {
	.name = "suggest",
	.usage = "[--policy-dir DIR] [--log-dir DIR] [--sandbox ID] "
	    "[--since 2h|TIME] [--set NAME]",
	.summary = "draft a set from blocked destinations",
	.parent = &cmd_policy,
	.accepts = "dlbSn",
	.args_max = 0,
	.exec = cmd_policy_suggest_exec,
};

static const struct cmd_entry *const cmd_policy_verbs[] = {
	&cmd_policy_check, &cmd_policy_explain, &cmd_policy_list,
	&cmd_policy_diff, &cmd_policy_suggest, NULL
};

const struct cmd_entry cmd_policy = {
	.name = "policy",
	.usage = "check|explain|list|diff|suggest [--policy-dir DIR] [ARGS]",
	.summary = "check, explain, list, compare and draft the egress policy",
	.options = cmd_policy_options,
	.verbs = cmd_policy_verbs,
};

/* The options given, into o. */
static void
cmd_policy_opts(struct cmd_args *args, struct popts *o)
{
	const struct cmd_opt	*opt;

	memset(o, 0, sizeof(*o));
	o->dir = state_policy_dir();
	while ((opt = cmd_args_next(args)) != NULL) {
		switch (opt->ch) {
		case 'd': o->dir = opt->arg; break;
		case 's': o->sets = opt->arg; break;
		case 'm': o->method = opt->arg; break;
		case 'p': o->path = opt->arg; break;
		case 'j': o->json = 1; break;
		case 'l': o->log_dir = opt->arg; break;
		case 'b': o->sandbox = opt->arg; break;
		case 'S': o->since = opt->arg; break;
		case 'n': o->set_name = opt->arg; break;
		}
	}
}

/* Load dir, print diagnostics (warnings too when verbose) to stderr. */
static struct policy *
cmd_policy_load(const char *dir, int warnings)
{
	struct policy_diags	 d;
	struct policy		*p;
	char			 line[2048];
	size_t			 i;

	policy_diags_init(&d);
	p = policy_load_dir(dir, time(NULL), &d);
	for (i = 0; i < d.n; i++) {
		if (p != NULL && !warnings)
			break;
		policy_diag_format(&d.v[i], line, sizeof(line));
		fprintf(stderr, "%s\n", line);
	}
	if (d.dropped > 0 && (p == NULL || warnings))
		fprintf(stderr, "%s: %zu more diagnostics not shown\n", dir,
		    d.dropped);
	if (p == NULL)
		log_warnx("policy in %s has %zu error%s", dir, d.nerrors,
		    d.nerrors == 1 ? "" : "s");
	policy_diags_release(&d);
	return p;
}

static int
cmd_policy_check_exec(struct cmd_args *args)
{
	struct popts	 o;
	struct policy	*p;

	cmd_policy_opts(args, &o);
	if (args->argc == 1)
		o.dir = args->argv[0];
	p = cmd_policy_load(o.dir, 1);
	if (p == NULL)
		return SG_EXIT_FAIL;
	if (policy_ndenies(p) > 0)
		printf("policy OK: %zu sets, %zu entries, %zu deny entries, "
		    "digest %s\n", policy_nsets(p), policy_nentries(p),
		    policy_ndenies(p), policy_digest(p));
	else
		printf("policy OK: %zu sets, %zu entries, digest %s\n",
		    policy_nsets(p), policy_nentries(p), policy_digest(p));
	policy_free(p);
	return SG_EXIT_OK;
}

/* HOST[:PORT], with IPv6 bracketed or bare; port 443 by default. */
static int
cmd_policy_explain_host(const char *arg, struct host *h, uint16_t *port)
{
	const char	*cause;

	if (host_parse_authority(arg, strlen(arg), 443, h, port,
	    &cause) == 0)
		return 0;
	*port = 443;
	return host_normalize(arg, strlen(arg), h, &cause);
}

/* --sets into the query; every name must exist. */
static int
cmd_policy_explain_sets(struct policy *p, const char *list,
    struct policy_query *q, char ***names)
{
	const char	*cause;
	char		 sets[1024] = "";
	size_t		 i, n, len;

	*names = NULL;
	if (list == NULL) {
		q->all_sets = 1;
		return 0;
	}
	if (policy_set_list_parse(list, names, &n, &cause) == -1) {
		log_warnx("--sets \"%s\": %s", list, cause);
		return SG_EXIT_USAGE;
	}
	for (i = 0; i < n; i++) {
		if (!policy_set_exists(p, (*names)[i])) {
			for (n = 0, len = 0; n < policy_nsets(p) &&
			    len < sizeof(sets); n++)
				len += (size_t)snprintf(sets + len,
				    sizeof(sets) - len, " %s",
				    policy_set_at(p, n)->name);
			log_warnx("no set \"%s\"; the sets are:%s", (*names)[i],
			    sets);
			return SG_EXIT_USAGE;
		}
	}
	q->sets = (const char *const *)*names;
	q->nsets = n;
	return 0;
}

static int
cmd_policy_explain_exec(struct cmd_args *args)
{
	struct popts		 o;
	struct policy		*p;
	struct policy_query	 q;
	struct policy_match	 m;
	struct host		 h;
	enum sg_reason		 r;
	char			 msg[1024], **names = NULL;
	uint16_t		 port;
	int			 rc;

	cmd_policy_opts(args, &o);
	if (cmd_policy_explain_host(args->argv[0], &h, &port) == -1)
		return cmd_usage_error(args->entry, "not a valid HOST[:PORT]");
	p = cmd_policy_load(o.dir, 0);
	if (p == NULL)
		return SG_EXIT_ERROR;
	memset(&q, 0, sizeof(q));
	rc = cmd_policy_explain_sets(p, o.sets, &q, &names);
	if (rc != 0)
		goto out;
	q.host = &h;
	q.port = port;
	q.now = time(NULL);
	if (o.method != NULL || o.path != NULL) {
		q.method = o.method ? o.method : "GET";
		q.path = o.path ? o.path : "/";
	}
	r = policy_decide(p, &q, &m);
	/*
	 * A request to a tls: terminate entry is one inside the session the
	 * proxy terminates (HTTPS): decide it as such.
	 */
	if (r == SG_REASON_NOT_TLS && m.tls == POLICY_TLS_TERMINATE) {
		q.terminated = 1;
		r = policy_decide(p, &q, &m);
	}
	if (r == SG_REASON_NONE) {
		printf("ALLOW via set %s (%s:%d): %s\n", m.set, m.file, m.line,
		    m.rationale);
		if (m.tls == POLICY_TLS_TERMINATE)
			cmd_policy_explain_term(m.entry);
		rc = SG_EXIT_OK;
	} else {
		reason_message(msg, sizeof(msg), r, h.name, port, NULL, NULL);
		printf("BLOCK %s: %s\n", reason_code(r), msg);
		if (r == SG_REASON_DENIED)
			printf("  deny entry: \"%s\" in set %s (%s:%d): %s\n",
			    m.pattern, m.set, m.file, m.line, m.rationale);
		else if (m.entry != NULL)
			printf("  nearest entry: \"%s\" in set %s (%s:%d)\n",
			    m.pattern, m.set, m.file, m.line);
		if (policy_grant_check_query(p, &q, &m, msg, sizeof(msg)) == 0)
			printf("  a grant may open it (sandgate grant)\n");
		else
			printf("  no grant may open it: %s\n", msg);
		rc = SG_EXIT_FAIL;
	}
out:
	policy_set_list_free(names);
	policy_free(p);
	return rc;
}

/*
 * What the proxy does for a tls: terminate entry: the names of its CA
 * file and of its credential's secret, never a value.
 */
static void
cmd_policy_explain_term(const struct policy_entry *e)
{
	printf("  TLS terminated by the proxy (sandgate CA); upstream "
	    "verified against the system store%s%s\n",
	    e->ca_file ? " and " : "", e->ca_file ? e->ca_file : "");
	if (e->cred_header != NULL)
		printf("  the proxy sets %s from secret %s\n", e->cred_header,
		    e->cred_secret);
}

static int
cmd_policy_list_exec(struct cmd_args *args)
{
	struct popts	 o;
	struct policy	*p;
	int		 rc = SG_EXIT_OK;

	cmd_policy_opts(args, &o);
	p = cmd_policy_load(o.dir, 0);
	if (p == NULL)
		return SG_EXIT_ERROR;
	if (o.json)
		rc = cmd_policy_list_json(p, time(NULL));
	else
		cmd_policy_list_text(p, time(NULL));
	policy_free(p);
	return rc;
}

static void
cmd_policy_list_text(const struct policy *p, time_t now)
{
	const struct policy_set		*s;
	const struct policy_entry	*e;
	size_t				 i, j, k;

	for (i = 0; i < policy_nsets(p); i++) {
		s = policy_set_at(p, i);
		printf("%sset %s (%s, %s): %s\n  owner: %s\n", i ? "\n" : "",
		    s->name, s->file, policy_mode_name(s->mode),
		    *s->description ? s->description : "-",
		    *s->owner ? s->owner : "-");
		for (j = 0; j < s->nentries; j++) {
			e = policy_entry_at(p, s->first + j);
			printf("  %s ports ", e->pattern);
			for (k = 0; k < e->nports; k++)
				printf("%s%u", k ? "," : "", e->ports[k]);
			for (k = 0; k < e->nmethods; k++)
				printf("%s%s", k ? "," : " methods ",
				    e->methods[k]);
			for (k = 0; k < e->npaths; k++)
				printf("%s%s", k ? "," : " paths ",
				    e->paths[k]);
			if (e->allow_private)
				printf(" allow_private");
			if (e->tls != POLICY_TLS_DEFAULT)
				printf(" tls %s", policy_tls_name(e->tls));
			if (e->expires_text != NULL)
				printf(" %s %s", policy_entry_active(e, now) ?
				    "expires" : "EXPIRED", e->expires_text);
			printf(" (line %d)\n    %s\n", e->line, e->rationale);
		}
	}
	cmd_policy_list_floors(p);
}

/* The deny entries and the domains grants may cover. */
static void
cmd_policy_list_floors(const struct policy *p)
{
	const struct policy_entry	*e;
	const struct policy_grant_domain *g;
	size_t				 i, k;

	if (policy_ndenies(p) > 0)
		printf("\ndeny (every sandbox, over every allow and grant):\n");
	for (i = 0; i < policy_ndenies(p); i++) {
		e = policy_deny_at(p, i);
		printf("  %s ports ", e->pattern);
		for (k = 0; k < e->nports; k++)
			printf("%s%u", k ? "," : "", e->ports[k]);
		printf("%s (%s:%d)\n    %s\n", e->ports == NULL ? "all" : "",
		    e->set->file, e->line, e->rationale);
	}
	printf("\ngrants may cover:%s%s\n", policy_ngrant_domains(p) == 0 ?
	    " nothing (no \"grants: under:\" list)" : "",
	    policy_grants_allow_private(p) ? " (private addresses too)" : "");
	for (i = 0; i < policy_ngrant_domains(p); i++) {
		g = policy_grant_domain_at(p, i);
		printf("  %s and names under it (%s:%d)\n", g->name, g->file,
		    g->line);
	}
}

static json_t *
cmd_policy_entry_json(const struct policy_entry *e, time_t now)
{
	json_t	*o, *ports, *m = json_null(), *pa = json_null();
	size_t	 k;

	ports = json_array();
	for (k = 0; k < e->nports; k++)
		json_array_append_new(ports, json_integer(e->ports[k]));
	if (e->methods != NULL) {
		m = json_array();
		for (k = 0; k < e->nmethods; k++)
			json_array_append_new(m, json_string(e->methods[k]));
	}
	if (e->paths != NULL) {
		pa = json_array();
		for (k = 0; k < e->npaths; k++)
			json_array_append_new(pa, json_string(e->paths[k]));
	}
	o = json_pack("{s:s, s:o, s:s, s:o, s:b, s:o, s:o, s:b, s:s, s:i}",
	    "host", e->pattern, "ports", ports, "rationale", e->rationale,
	    "expires", e->expires_text ? json_string(e->expires_text) :
	    json_null(), "expired", !policy_entry_active(e, now),
	    "methods", m, "paths", pa, "allow_private", e->allow_private,
	    "tls", policy_tls_name(e->tls), "line", e->line);
	return o;
}

static int
cmd_policy_list_json(const struct policy *p, time_t now)
{
	const struct policy_set	*s;
	json_t			*root, *sets, *entries;
	size_t			 i, j;
	int			 rc;

	sets = json_array();
	for (i = 0; i < policy_nsets(p); i++) {
		s = policy_set_at(p, i);
		entries = json_array();
		for (j = 0; j < s->nentries; j++)
			json_array_append_new(entries, cmd_policy_entry_json(
			    policy_entry_at(p, s->first + j), now));
		json_array_append_new(sets, json_pack("{s:s, s:s, s:s, s:s, "
		    "s:s, s:o}", "name", s->name, "file", s->file,
		    "description", s->description, "owner", s->owner, "mode",
		    policy_mode_name(s->mode), "entries", entries));
	}
	root = json_pack("{s:s, s:o}", "digest", policy_digest(p), "sets",
	    sets);
	if (root != NULL)
		json_object_update_new(root, cmd_policy_floors_json(p));
	rc = root != NULL && json_dumpf(root, stdout, JSON_INDENT(2)) == 0 ?
	    SG_EXIT_OK : SG_EXIT_ERROR;
	putchar('\n');
	json_decref(root);
	return rc;
}

/* {"deny": [entries, with set and file], "grants_under": [...]}. */
static json_t *
cmd_policy_floors_json(const struct policy *p)
{
	const struct policy_entry	*e;
	const struct policy_grant_domain *g;
	json_t				*deny, *under, *ports;
	size_t				 i, k;

	deny = json_array();
	for (i = 0; i < policy_ndenies(p); i++) {
		e = policy_deny_at(p, i);
		if (e->ports == NULL)
			ports = json_string("all");
		else {
			ports = json_array();
			for (k = 0; k < e->nports; k++)
				json_array_append_new(ports,
				    json_integer(e->ports[k]));
		}
		json_array_append_new(deny, json_pack("{s:s, s:o, s:s, s:s, "
		    "s:s, s:i}", "host", e->pattern, "ports", ports,
		    "rationale", e->rationale, "set", e->set->name, "file",
		    e->set->file, "line", e->line));
	}
	under = json_array();
	for (i = 0; i < policy_ngrant_domains(p); i++) {
		g = policy_grant_domain_at(p, i);
		json_array_append_new(under, json_pack("{s:s, s:s, s:i}",
		    "domain", g->name, "file", g->file, "line", g->line));
	}
	return json_pack("{s:o, s:o, s:b}", "deny", deny, "grants_under",
	    under, "grants_allow_private", policy_grants_allow_private(p));
}

static int
cmd_policy_dest_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pdest *)a)->key,
	    ((const struct pdest *)b)->key);
}

/* The conditions of an entry on one port, as text compared by diff. */
static void
cmd_policy_dest_attrs(const struct policy_entry *e, uint16_t port, char *buf,
    size_t size)
{
	size_t	k, len;

	len = (size_t)snprintf(buf, size, "tls %s%s",
	    policy_tls_name(policy_entry_tls(e, port)),
	    e->allow_private ? ", allow_private" : "");
	for (k = 0; k < e->nmethods && len < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
		    k ? "," : ", methods ", e->methods[k]);
	for (k = 0; k < e->npaths && len < size; k++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s",
		    k ? "," : ", paths ", e->paths[k]);
}

/*
 * Every (set, pattern, port) in force at now, sorted, with conditions;
 * deny entries as ("DENY set", pattern, port or "*").
 */
static struct pdest *
cmd_policy_dests(const struct policy *p, time_t now, size_t *n)
{
	const struct policy_entry	*e;
	struct pdest			*v;
	size_t				 i, nall, cap = 1;

	*n = 0;
	nall = policy_nentries(p) + policy_ndenies(p);
	for (i = 0; i < nall; i++) {
		e = i < policy_nentries(p) ? policy_entry_at(p, i) :
		    policy_deny_at(p, i - policy_nentries(p));
		cap += e->ports == NULL ? 1 : e->nports;
	}
	v = calloc(cap, sizeof(*v));
	if (v == NULL)
		return NULL;
	for (i = 0; i < nall; i++) {
		e = i < policy_nentries(p) ? policy_entry_at(p, i) :
		    policy_deny_at(p, i - policy_nentries(p));
		if (policy_entry_active(e, now) &&
		    cmd_policy_dests_add(v, n, e) == -1) {
			cmd_policy_dests_free(v, *n + 1);
			return NULL;
		}
	}
	qsort(v, *n, sizeof(*v), cmd_policy_dest_cmp);
	return v;
}

/* The destinations of one entry, one per port, at v[*n...]. 0 or -1. */
static int
cmd_policy_dests_add(struct pdest *v, size_t *n, const struct policy_entry *e)
{
	char		attrs[4096], port[8];
	const char	*fmt = strchr(e->pattern, ':') ? "%s%s [%s]:%s" :
			    "%s%s %s:%s";
	size_t		k, nports = e->ports == NULL ? 1 : e->nports;

	for (k = 0; k < nports; k++, (*n)++) {
		v[*n].e = e;
		if (e->deny)
			snprintf(attrs, sizeof(attrs), "deny");
		else
			cmd_policy_dest_attrs(e, e->ports[k], attrs,
			    sizeof(attrs));
		if (e->ports == NULL)
			snprintf(port, sizeof(port), "*");
		else
			snprintf(port, sizeof(port), "%u", e->ports[k]);
		if (asprintf(&v[*n].key, fmt, e->deny ? "DENY " : "",
		    e->set->name, e->pattern, port) == -1)
			v[*n].key = NULL;
		v[*n].attrs = strdup(attrs);
		if (v[*n].key == NULL || v[*n].attrs == NULL)
			return -1;
	}
	return 0;
}

static void
cmd_policy_dests_free(struct pdest *v, size_t n)
{
	size_t	i;

	if (v == NULL)
		return;
	for (i = 0; i < n; i++) {
		free(v[i].key);
		free(v[i].attrs);
	}
	free(v);
}

static void
cmd_policy_print_dest(char sign, const struct pdest *d)
{
	printf("%c %s  (%s:%d, %s) %s\n", sign, d->key, d->e->set->file,
	    d->e->line, d->attrs, d->e->rationale);
}

/* Sets added, removed or switched between enforce and report. */
static int
cmd_policy_diff_sets(const struct policy *a, const struct policy *b)
{
	const struct policy_set	*s, *t;
	size_t			 i;
	int			 changed = 0;

	for (i = 0; i < policy_nsets(a); i++) {
		s = policy_set_at(a, i);
		t = policy_set_find(b, s->name);
		if (t == NULL)
			printf("- set %s (%s)\n", s->name, s->file);
		else if (t->mode != s->mode)
			printf("~ set %s: mode %s -> %s\n", s->name,
			    policy_mode_name(s->mode),
			    policy_mode_name(t->mode));
		changed |= t == NULL || t->mode != s->mode;
	}
	for (i = 0; i < policy_nsets(b); i++) {
		t = policy_set_at(b, i);
		if (policy_set_find(a, t->name) == NULL) {
			printf("+ set %s (%s)\n", t->name, t->file);
			changed = 1;
		}
	}
	return changed;
}

static int
cmd_policy_diff_exec(struct cmd_args *args)
{
	struct policy	*a = NULL, *b = NULL;
	struct pdest	*va = NULL, *vb = NULL;
	size_t		 na = 0, nb = 0, i = 0, j = 0;
	int		 rc, c, changed;
	time_t		 now = time(NULL);

	a = cmd_policy_load(args->argv[0], 0);
	b = cmd_policy_load(args->argv[1], 0);
	rc = SG_EXIT_ERROR;
	if (a == NULL || b == NULL)
		goto out;
	va = cmd_policy_dests(a, now, &na);
	vb = cmd_policy_dests(b, now, &nb);
	if (va == NULL || vb == NULL)
		goto out;
	changed = cmd_policy_diff_sets(a, b);
	while (i < na || j < nb) {
		c = i == na ? 1 : j == nb ? -1 : strcmp(va[i].key, vb[j].key);
		if (c < 0)
			cmd_policy_print_dest('-', &va[i++]);
		else if (c > 0)
			cmd_policy_print_dest('+', &vb[j++]);
		else if (strcmp(va[i].attrs, vb[j].attrs) != 0) {
			printf("~ %s  (%s -> %s)\n", vb[j].key, va[i].attrs,
			    vb[j].attrs);
			i++, j++;
		} else {
			i++, j++;
			continue;
		}
		changed = 1;
	}
	rc = changed ? SG_EXIT_FAIL : SG_EXIT_OK;
out:
	cmd_policy_dests_free(va, na);
	cmd_policy_dests_free(vb, nb);
	policy_free(a);
	policy_free(b);
	return rc;
}

/* The policy in force, quietly: suggest leaves out what it allows. */
static struct policy *
cmd_policy_load_quiet(const char *dir)
{
	struct policy_diags	 d;
	struct policy		*p;

	policy_diags_init(&d);
	p = policy_load_dir(dir, time(NULL), &d);
	if (p == NULL)
		log_warnx("policy in %s has %zu error%s (see `sandgate policy "
		    "check`); destinations it allows are not left out", dir,
		    d.nerrors, d.nerrors == 1 ? "" : "s");
	policy_diags_release(&d);
	return p;
}

/*
 * Draft a set from the blocked destinations in the security-event log
 * (suggest.h): every rationale is the placeholder, so check refuses the
 * draft until a person has reviewed and explained each entry.
 */
static int
cmd_policy_suggest_exec(struct cmd_args *args)
{
	struct popts		 o;
	struct suggest		 sg;
	struct suggest_draft	 dr;
	struct policy		*p = NULL;
	int64_t			 since = -1;
	char			*cause = NULL;
	int			 rc;

	cmd_policy_opts(args, &o);
	if (o.since != NULL && logread_parse_time(o.since, logread_now(),
	    &since) == -1)
		return cmd_usage_error(args->entry, "--since takes 2h, 30m, "
		    "7d or an RFC 3339 time like 2026-01-31T12:00:00Z");
	if (o.set_name == NULL)
		o.set_name = "suggested";
	if (!policy_set_name_valid(o.set_name))
		return cmd_usage_error(args->entry, "--set takes a set name: "
		    "a-z, 0-9, '_' and '-'");
	if (o.log_dir == NULL)
		o.log_dir = state_log_dir();
	suggest_init(&sg, o.sandbox, since);
	if (suggest_read_log(&sg, o.log_dir, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		suggest_release(&sg);
		return SG_EXIT_ERROR;
	}
	if (sg.dropped > 0)
		log_warnx("%lld blocked event%s left out (not a valid host "
		    "and port, or past %d hosts)", sg.dropped,
		    sg.dropped == 1 ? "" : "s", SG_SUGGEST_DESTS_MAX);
	p = cmd_policy_load_quiet(o.dir);
	dr = (struct suggest_draft){ o.log_dir, o.dir, o.sandbox, o.since,
	    o.set_name };
	rc = SG_EXIT_OK;
	if (suggest_print(&sg, &dr, p, stdout, stderr) == 0) {
		log_warnx("nothing to suggest: %s", sg.n ?
		    "the policy already allows every blocked destination" :
		    "no blocked destination in the log");
		rc = SG_EXIT_FAIL;
	}
	policy_free(p);
	suggest_release(&sg);
	return rc;
}
