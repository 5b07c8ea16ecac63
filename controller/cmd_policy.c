/*
 * cmd_policy.c: `sandgate policy check|explain|list|diff|suggest`: review
 * the egress policy with the same engine the proxy runs
 * (egress-proxy/policy.h), and draft a set from what the proxy blocked.
 */
#include <getopt.h>
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

#define POLICY_USAGE \
	"check|explain|list|diff|suggest [--policy-dir DIR] [ARGS]\n" \
	"  check [DIR]                     validate; exit 1 listing every " \
	"error\n" \
	"  explain HOST[:PORT] [--sets a,b] [--method M --path P]\n" \
	"                                  show the decision for a " \
	"destination\n" \
	"  list [--json]                   every set and entry\n" \
	"  diff OLD_DIR NEW_DIR            destinations newly allowed (+) " \
	"or no longer (-)\n" \
	"  suggest [--sandbox ID] [--since 2h|TIME] [--log-dir DIR] " \
	"[--set NAME]\n" \
	"                                  draft a set from blocked " \
	"destinations"

struct psub {
	const char	*name;
	const char	*usage;
	int		(*fn)(const struct psub *, int, char **);
};

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

static int	cmd_policy_exec(int, char **);
static int	cmd_policy_sub_usage(const struct psub *, const char *);
static int	cmd_policy_opts(const struct psub *, int, char **,
		    struct popts *, int *);
static struct policy *cmd_policy_load(const char *, int);
static int	cmd_policy_check(const struct psub *, int, char **);
static int	cmd_policy_explain(const struct psub *, int, char **);
static int	cmd_policy_explain_host(const char *, struct host *,
		    uint16_t *);
static int	cmd_policy_explain_sets(const struct psub *, struct policy *,
		    const char *, struct policy_query *, char ***);
static int	cmd_policy_list(const struct psub *, int, char **);
static void	cmd_policy_list_text(const struct policy *, time_t);
static int	cmd_policy_list_json(const struct policy *, time_t);
static json_t	*cmd_policy_entry_json(const struct policy_entry *, time_t);
static int	cmd_policy_diff(const struct psub *, int, char **);
static struct pdest *cmd_policy_dests(const struct policy *, time_t, size_t *);
static void	cmd_policy_dests_free(struct pdest *, size_t);
static int	cmd_policy_dest_cmp(const void *, const void *);
static int	cmd_policy_diff_sets(const struct policy *,
		    const struct policy *);
static void	cmd_policy_print_dest(char, const struct pdest *);
static void	cmd_policy_dest_attrs(const struct policy_entry *, uint16_t,
		    char *, size_t);
static int	cmd_policy_suggest(const struct psub *, int, char **);
static struct policy *cmd_policy_load_quiet(const char *);

const struct cmd_entry cmd_policy = {
	.name = "policy",
	.usage = POLICY_USAGE,
	.summary = "check, explain, list, compare and draft the egress policy "
	    "(policy.d)",
	.exec = cmd_policy_exec,
};

static const struct psub cmd_policy_subs[] = {
	{ "check", "check [--policy-dir DIR] [DIR]", cmd_policy_check },
	{ "explain", "explain [--policy-dir DIR] [--sets a,b] "
	    "[--method M] [--path P] HOST[:PORT]", cmd_policy_explain },
	{ "list", "list [--policy-dir DIR] [--json]", cmd_policy_list },
	{ "diff", "diff OLD_DIR NEW_DIR", cmd_policy_diff },
	{ "suggest", "suggest [--policy-dir DIR] [--log-dir DIR] "
	    "[--sandbox ID] [--since 2h|TIME] [--set NAME]",
	    cmd_policy_suggest },
};

static int
cmd_policy_exec(int argc, char **argv)
{
	size_t	i;

	if (argc < 2)
		return cmd_usage_error(&cmd_policy, "missing subcommand");
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(&cmd_policy);
	for (i = 0; i < sizeof(cmd_policy_subs) / sizeof(cmd_policy_subs[0]);
	    i++) {
		if (strcmp(argv[1], cmd_policy_subs[i].name) == 0)
			return cmd_policy_subs[i].fn(&cmd_policy_subs[i],
			    argc - 1,
			    argv + 1);
	}
	return cmd_usage_error(&cmd_policy, "unknown policy subcommand '%s'",
	    argv[1]);
}

static int
cmd_policy_sub_usage(const struct psub *s, const char *msg)
{
	fprintf(stderr, "sandgate: %s\nusage: sandgate policy %s\n", msg,
	    s->usage);
	return SG_EXIT_USAGE;
}

/*
 * Parse the options of a subcommand; *first is the index of the first
 * operand. Returns -1 after --help (printed), SG_EXIT_USAGE on a bad
 * option, else 0.
 */
static int
cmd_policy_opts(const struct psub *s, int argc, char **argv, struct popts *o,
    int *first)
{
	static const struct option longopts[] = {
		{ "policy-dir", required_argument, NULL, 'd' },
		{ "sets", required_argument, NULL, 's' },
		{ "method", required_argument, NULL, 'm' },
		{ "path", required_argument, NULL, 'p' },
		{ "json", no_argument, NULL, 'j' },
		{ "log-dir", required_argument, NULL, 'l' },
		{ "sandbox", required_argument, NULL, 'b' },
		{ "since", required_argument, NULL, 'S' },
		{ "set", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	int	c;

	memset(o, 0, sizeof(*o));
	o->dir = state_policy_dir();
	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":d:s:m:p:jl:b:S:n:h", longopts,
	    NULL)) != -1) {
		switch (c) {
		case 'd': o->dir = optarg; break;
		case 's': o->sets = optarg; break;
		case 'm': o->method = optarg; break;
		case 'p': o->path = optarg; break;
		case 'j': o->json = 1; break;
		case 'l': o->log_dir = optarg; break;
		case 'b': o->sandbox = optarg; break;
		case 'S': o->since = optarg; break;
		case 'n': o->set_name = optarg; break;
		case 'h':
			printf("usage: sandgate policy %s\n", s->usage);
			return -1;
		default:
			return cmd_policy_sub_usage(s, "unknown or incomplete "
			    "option");
		}
	}
	if ((o->sets || o->method || o->path) &&
	    strcmp(s->name, "explain") != 0)
		return cmd_policy_sub_usage(s,
		    "--sets, --method and --path are "
		    "for explain");
	if (o->json && strcmp(s->name, "list") != 0)
		return cmd_policy_sub_usage(s, "--json is for list");
	if ((o->log_dir || o->sandbox || o->since || o->set_name) &&
	    strcmp(s->name, "suggest") != 0)
		return cmd_policy_sub_usage(s,
		    "--log-dir, --sandbox, --since and "
		    "--set are for suggest");
	*first = optind;
	return 0;
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
		fprintf(stderr, "sandgate: policy in %s has %zu error%s\n",
		    dir, d.nerrors, d.nerrors == 1 ? "" : "s");
	policy_diags_release(&d);
	return p;
}

static int
cmd_policy_check(const struct psub *s, int argc, char **argv)
{
	struct popts	 o;
	struct policy	*p;
	int		 first, rc;

	rc = cmd_policy_opts(s, argc, argv, &o, &first);
	if (rc != 0)
		return rc == -1 ? SG_EXIT_OK : rc;
	if (argc - first > 1)
		return cmd_policy_sub_usage(s, "too many arguments");
	if (argc - first == 1)
		o.dir = argv[first];
	p = cmd_policy_load(o.dir, 1);
	if (p == NULL)
		return SG_EXIT_FAIL;
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
cmd_policy_explain_sets(const struct psub *s, struct policy *p,
    const char *list, struct policy_query *q, char ***names)
{
	const char	*cause;
	size_t		 i, n;

	*names = NULL;
	if (list == NULL) {
		q->all_sets = 1;
		return 0;
	}
	if (policy_set_list_parse(list, names, &n, &cause) == -1) {
		fprintf(stderr, "sandgate: --sets \"%s\": %s\n", list, cause);
		return SG_EXIT_USAGE;
	}
	for (i = 0; i < n; i++) {
		if (!policy_set_exists(p, (*names)[i])) {
			fprintf(stderr, "sandgate: no set \"%s\"; the sets "
			    "are:", (*names)[i]);
			for (n = 0; n < policy_nsets(p); n++)
				fprintf(stderr, " %s",
				    policy_set_at(p, n)->name);
			fputc('\n', stderr);
			return SG_EXIT_USAGE;
		}
	}
	q->sets = (const char *const *)*names;
	q->nsets = n;
	return 0;
}

static int
cmd_policy_explain(const struct psub *s, int argc, char **argv)
{
	struct popts		 o;
	struct policy		*p;
	struct policy_query	 q;
	struct policy_match	 m;
	struct host		 h;
	enum sg_reason		 r;
	char			 msg[1024], **names = NULL;
	uint16_t		 port;
	int			 first, rc;

	rc = cmd_policy_opts(s, argc, argv, &o, &first);
	if (rc != 0)
		return rc == -1 ? SG_EXIT_OK : rc;
	if (argc - first != 1)
		return cmd_policy_sub_usage(s, "give one HOST[:PORT]");
	if (cmd_policy_explain_host(argv[first], &h, &port) == -1)
		return cmd_policy_sub_usage(s, "not a valid HOST[:PORT]");
	p = cmd_policy_load(o.dir, 0);
	if (p == NULL)
		return SG_EXIT_ERROR;
	memset(&q, 0, sizeof(q));
	rc = cmd_policy_explain_sets(s, p, o.sets, &q, &names);
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
	if (r == SG_REASON_NONE) {
		printf("ALLOW via set %s (%s:%d): %s\n", m.set, m.file, m.line,
		    m.rationale);
		rc = SG_EXIT_OK;
	} else {
		reason_message(msg, sizeof(msg), r, h.name, port, NULL, NULL);
		printf("BLOCK %s: %s\n", reason_code(r), msg);
		if (m.entry != NULL)
			printf("  nearest entry: \"%s\" in set %s (%s:%d)\n",
			    m.pattern, m.set, m.file, m.line);
		rc = SG_EXIT_FAIL;
	}
out:
	policy_set_list_free(names);
	policy_free(p);
	return rc;
}

static int
cmd_policy_list(const struct psub *s, int argc, char **argv)
{
	struct popts	 o;
	struct policy	*p;
	int		 first, rc;

	rc = cmd_policy_opts(s, argc, argv, &o, &first);
	if (rc != 0)
		return rc == -1 ? SG_EXIT_OK : rc;
	if (argc != first)
		return cmd_policy_sub_usage(s, "too many arguments");
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
	rc = root != NULL && json_dumpf(root, stdout, JSON_INDENT(2)) == 0 ?
	    SG_EXIT_OK : SG_EXIT_ERROR;
	putchar('\n');
	json_decref(root);
	return rc;
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

/* Every (set, pattern, port) in force at now, sorted, with conditions. */
static struct pdest *
cmd_policy_dests(const struct policy *p, time_t now, size_t *n)
{
	const struct policy_entry	*e;
	struct pdest			*v;
	size_t				 i, k, cap = 1;
	char				 attrs[4096];

	*n = 0;
	for (i = 0; i < policy_nentries(p); i++)
		cap += policy_entry_at(p, i)->nports;
	v = calloc(cap, sizeof(*v));
	if (v == NULL)
		return NULL;
	for (i = 0; i < policy_nentries(p); i++) {
		e = policy_entry_at(p, i);
		if (!policy_entry_active(e, now))
			continue;
		for (k = 0; k < e->nports; k++, (*n)++) {
			v[*n].e = e;
			cmd_policy_dest_attrs(e, e->ports[k], attrs,
			    sizeof(attrs));
			if (asprintf(&v[*n].key, strchr(e->pattern, ':') ?
			    "%s [%s]:%u" : "%s %s:%u", e->set->name,
			    e->pattern, e->ports[k]) == -1)
				v[*n].key = NULL;
			v[*n].attrs = strdup(attrs);
			if (v[*n].key == NULL || v[*n].attrs == NULL) {
				cmd_policy_dests_free(v, *n + 1);
				return NULL;
			}
		}
	}
	qsort(v, *n, sizeof(*v), cmd_policy_dest_cmp);
	return v;
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
cmd_policy_diff(const struct psub *s, int argc, char **argv)
{
	struct popts	 o;
	struct policy	*a = NULL, *b = NULL;
	struct pdest	*va = NULL, *vb = NULL;
	size_t		 na = 0, nb = 0, i = 0, j = 0;
	int		 first, rc, c, changed;
	time_t		 now = time(NULL);

	rc = cmd_policy_opts(s, argc, argv, &o, &first);
	if (rc != 0)
		return rc == -1 ? SG_EXIT_OK : rc;
	if (argc - first != 2)
		return cmd_policy_sub_usage(s, "give OLD_DIR and NEW_DIR");
	a = cmd_policy_load(argv[first], 0);
	b = cmd_policy_load(argv[first + 1], 0);
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
		fprintf(stderr, "sandgate: policy in %s has %zu error%s (see "
		    "`sandgate policy check`); destinations it allows are not "
		    "left out\n", dir, d.nerrors, d.nerrors == 1 ? "" : "s");
	policy_diags_release(&d);
	return p;
}


/*
 * Draft a set from the blocked destinations in the security-event log
 * (suggest.h): every rationale is the placeholder, so check refuses the
 * draft until a person has reviewed and explained each entry.
 */
static int
cmd_policy_suggest(const struct psub *s, int argc, char **argv)
{
	struct popts		 o;
	struct suggest		 sg;
	struct suggest_draft	 dr;
	struct policy		*p = NULL;
	int64_t			 since = -1;
	char			*cause = NULL;
	int			 first, rc;

	rc = cmd_policy_opts(s, argc, argv, &o, &first);
	if (rc != 0)
		return rc == -1 ? SG_EXIT_OK : rc;
	if (argc != first)
		return cmd_policy_sub_usage(s, "too many arguments");
	if (o.since != NULL && logread_parse_time(o.since, logread_now(),
	    &since) == -1)
		return cmd_policy_sub_usage(s, "--since takes 2h, 30m, 7d or "
		    "an RFC 3339 time like 2026-01-31T12:00:00Z");
	if (o.set_name == NULL)
		o.set_name = "suggested";
	if (!policy_set_name_valid(o.set_name))
		return cmd_policy_sub_usage(s, "--set takes a set name: a-z, "
		    "0-9, '_' and '-'");
	if (o.log_dir == NULL)
		o.log_dir = state_log_dir();
	suggest_init(&sg, o.sandbox, since);
	if (suggest_read_log(&sg, o.log_dir, &cause) == -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		suggest_release(&sg);
		return SG_EXIT_ERROR;
	}
	if (sg.dropped > 0)
		fprintf(stderr, "sandgate: %lld blocked event%s left out (not "
		    "a valid host and port, or past %d hosts)\n", sg.dropped,
		    sg.dropped == 1 ? "" : "s", SG_SUGGEST_DESTS_MAX);
	p = cmd_policy_load_quiet(o.dir);
	dr = (struct suggest_draft){ o.log_dir, o.dir, o.sandbox, o.since,
	    o.set_name };
	rc = SG_EXIT_OK;
	if (suggest_print(&sg, &dr, p, stdout, stderr) == 0) {
		fprintf(stderr, "sandgate: nothing to suggest: %s\n", sg.n ?
		    "the policy already allows every blocked destination" :
		    "no blocked destination in the log");
		rc = SG_EXIT_FAIL;
	}
	policy_free(p);
	suggest_release(&sg);
	return rc;
}
