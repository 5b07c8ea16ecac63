/*
 * cmd_policy.c: `sandgate policy check|explain|list|diff|suggest`: review
 * the egress policy with the same engine the proxy runs
 * (egress-proxy/policy.h), and draft a set from what the proxy blocked.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "eventlog.h"
#include "host.h"
#include "log.h"
#include "policy.h"
#include "reason.h"
#include "sglimits.h"
#include "state.h"
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

#define SUGGEST_LOG		"security-events.jsonl"
#define SUGGEST_ROTATED_MAX	1000	/* rotated files looked at */
#define SUGGEST_SANDBOXES	8	/* sandbox ids named per host */
#define SUGGEST_METHODS		8	/* refused methods named per host */
#define SUGGEST_TEXT_MAX	128	/* log strings shown in comments */

/* One destination host seen in blocked events, for suggest. */
struct sdest {
	struct host	 host;
	uint16_t	 ports[SG_SUGGEST_PORTS_MAX];
	size_t		 nports;
	int		 ports_dropped;
	long long	 attempts;
	unsigned	 reasons;	/* 1 << enum sg_reason */
	int		 plain;		/* a plain-HTTP request was refused */
	char		 sandboxes[SUGGEST_SANDBOXES][SUGGEST_TEXT_MAX];
	size_t		 nsandboxes;
	int		 more_sandboxes;
	char		 methods[SUGGEST_METHODS][32];
	size_t		 nmethods;
	char		 rule[SUGGEST_TEXT_MAX];  /* entry that refused it */
	char		 last[SUGGEST_TEXT_MAX];  /* ts of the last attempt */
};

/* What suggest gathered from the log. */
struct suggest {
	const char	*sandbox;	/* filter, or NULL */
	time_t		 since;		/* -1: no filter */
	struct sdest	*v;
	size_t		 n;
	size_t		 cap;
	long long	 used;		/* events that became suggestions */
	long long	 other;		/* blocks for reasons no entry fixes */
	long long	 dropped;	/* bad host or port, past the limit */
	int		 files;
};

/* The bit of every reason an allowlist entry can fix. */
#define SUGGEST_REASONS	((1u << SG_REASON_NOT_ALLOWLISTED) | \
	(1u << SG_REASON_PORT_NOT_ALLOWED) | (1u << SG_REASON_IP_LITERAL) | \
	(1u << SG_REASON_METHOD_NOT_ALLOWED) | \
	(1u << SG_REASON_PATH_NOT_ALLOWED))

/* The placeholder the loader refuses as a rationale (policy_load.c). */
static const char suggest_placeholder[] = { 'T', 'O', 'D', 'O', '\0' };

static void	policy_opts(struct cmd_args *, struct popts *);
static struct policy *policy_cli_load(const char *, int);
static int	cmd_policy_check_exec(struct cmd_args *);
static int	cmd_policy_explain_exec(struct cmd_args *);
static int	policy_explain_host(const char *, struct host *, uint16_t *);
static int	policy_explain_sets(struct policy *, const char *,
		    struct policy_query *, char ***);
static int	cmd_policy_list_exec(struct cmd_args *);
static void	policy_list_text(const struct policy *, time_t);
static int	policy_list_json(const struct policy *, time_t);
static json_t	*policy_entry_json(const struct policy_entry *, time_t);
static int	cmd_policy_diff_exec(struct cmd_args *);
static struct pdest *policy_dests(const struct policy *, time_t, size_t *);
static void	policy_dests_free(struct pdest *, size_t);
static int	policy_dest_cmp(const void *, const void *);
static int	policy_diff_sets(const struct policy *,
		    const struct policy *);
static void	policy_print_dest(char, const struct pdest *);
static void	policy_dest_attrs(const struct policy_entry *, uint16_t,
		    char *, size_t);
static int	cmd_policy_suggest_exec(struct cmd_args *);
static int	suggest_parse_time(const char *, time_t *);
static int	suggest_parse_ts(const char *, time_t *);
static int	suggest_cmp_rot(const void *, const void *);
static char	**suggest_files(const char *, int *);
static int	suggest_read_file(struct suggest *, const char *);
static int	suggest_read_log(struct suggest *, const char *);
static int	suggest_line(FILE *, char *, size_t, size_t *);
static void	suggest_event(struct suggest *, json_t *);
static struct sdest *suggest_dest(struct suggest *, const struct host *);
static void	suggest_note(struct sdest *, json_t *, uint16_t,
		    enum sg_reason);
static void	suggest_safe(const char *, char *, size_t);
static int	suggest_cmp_dest(const void *, const void *);
static int	suggest_cmp_port(const void *, const void *);
static size_t	suggest_open_ports(const struct policy *,
		    const struct sdest *, uint16_t *, char *, size_t);
static void	suggest_print_header(const struct suggest *,
		    const struct popts *, const struct policy *);
static void	suggest_print_entry(const struct sdest *, const uint16_t *,
		    size_t);
static int	suggest_print(const struct suggest *, const struct popts *,
		    const struct policy *);
static struct policy *suggest_policy(const char *);

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
policy_opts(struct cmd_args *args, struct popts *o)
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
policy_cli_load(const char *dir, int warnings)
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
		log_warnx("policy in %s has %zu error%s",
		    dir, d.nerrors, d.nerrors == 1 ? "" : "s");
	policy_diags_release(&d);
	return p;
}

static int
cmd_policy_check_exec(struct cmd_args *args)
{
	struct popts	 o;
	struct policy	*p;

	policy_opts(args, &o);
	if (args->argc == 1)
		o.dir = args->argv[0];
	p = policy_cli_load(o.dir, 1);
	if (p == NULL)
		return SG_EXIT_FAIL;
	printf("policy OK: %zu sets, %zu entries, digest %s\n",
	    policy_nsets(p), policy_nentries(p), policy_digest(p));
	policy_free(p);
	return SG_EXIT_OK;
}

/* HOST[:PORT], with IPv6 bracketed or bare; port 443 by default. */
static int
policy_explain_host(const char *arg, struct host *h, uint16_t *port)
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
policy_explain_sets(struct policy *p, const char *list,
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

	policy_opts(args, &o);
	if (policy_explain_host(args->argv[0], &h, &port) == -1)
		return cmd_usage_error(args->entry, "not a valid HOST[:PORT]");
	p = policy_cli_load(o.dir, 0);
	if (p == NULL)
		return SG_EXIT_ERROR;
	memset(&q, 0, sizeof(q));
	rc = policy_explain_sets(p, o.sets, &q, &names);
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
cmd_policy_list_exec(struct cmd_args *args)
{
	struct popts	 o;
	struct policy	*p;
	int		 rc = SG_EXIT_OK;

	policy_opts(args, &o);
	p = policy_cli_load(o.dir, 0);
	if (p == NULL)
		return SG_EXIT_ERROR;
	if (o.json)
		rc = policy_list_json(p, time(NULL));
	else
		policy_list_text(p, time(NULL));
	policy_free(p);
	return rc;
}

static void
policy_list_text(const struct policy *p, time_t now)
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
policy_entry_json(const struct policy_entry *e, time_t now)
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
policy_list_json(const struct policy *p, time_t now)
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
			json_array_append_new(entries, policy_entry_json(
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
policy_dest_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pdest *)a)->key,
	    ((const struct pdest *)b)->key);
}

/* The conditions of an entry on one port, as text compared by diff. */
static void
policy_dest_attrs(const struct policy_entry *e, uint16_t port, char *buf,
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
policy_dests(const struct policy *p, time_t now, size_t *n)
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
			policy_dest_attrs(e, e->ports[k], attrs, sizeof(attrs));
			if (asprintf(&v[*n].key, strchr(e->pattern, ':') ?
			    "%s [%s]:%u" : "%s %s:%u", e->set->name,
			    e->pattern, e->ports[k]) == -1)
				v[*n].key = NULL;
			v[*n].attrs = strdup(attrs);
			if (v[*n].key == NULL || v[*n].attrs == NULL) {
				policy_dests_free(v, *n + 1);
				return NULL;
			}
		}
	}
	qsort(v, *n, sizeof(*v), policy_dest_cmp);
	return v;
}

static void
policy_dests_free(struct pdest *v, size_t n)
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
policy_print_dest(char sign, const struct pdest *d)
{
	printf("%c %s  (%s:%d, %s) %s\n", sign, d->key, d->e->set->file,
	    d->e->line, d->attrs, d->e->rationale);
}

/* Sets added, removed or switched between enforce and report. */
static int
policy_diff_sets(const struct policy *a, const struct policy *b)
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

	a = policy_cli_load(args->argv[0], 0);
	b = policy_cli_load(args->argv[1], 0);
	rc = SG_EXIT_ERROR;
	if (a == NULL || b == NULL)
		goto out;
	va = policy_dests(a, now, &na);
	vb = policy_dests(b, now, &nb);
	if (va == NULL || vb == NULL)
		goto out;
	changed = policy_diff_sets(a, b);
	while (i < na || j < nb) {
		c = i == na ? 1 : j == nb ? -1 : strcmp(va[i].key, vb[j].key);
		if (c < 0)
			policy_print_dest('-', &va[i++]);
		else if (c > 0)
			policy_print_dest('+', &vb[j++]);
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
	policy_dests_free(va, na);
	policy_dests_free(vb, nb);
	policy_free(a);
	policy_free(b);
	return rc;
}


/* "2h" (that long ago) or a UTC time "2026-01-31[T12:00[:00][.f]][Z]". */
static int
suggest_parse_time(const char *s, time_t *t)
{
	long long	secs;
	time_t		now = time(NULL);

	if (util_parse_duration(s, &secs) == 0) {
		*t = secs > now ? 0 : now - (time_t)secs;
		return 0;
	}
	return suggest_parse_ts(s, t);
}

/* A UTC timestamp, as the log writes it or shorter; to seconds. */
static int
suggest_parse_ts(const char *s, time_t *t)
{
	struct tm	 tm;
	const char	*p;

	memset(&tm, 0, sizeof(tm));
	if ((p = strptime(s, "%Y-%m-%d", &tm)) == NULL)
		return -1;
	if (*p == 'T' || *p == ' ') {
		if ((p = strptime(p + 1, "%H:%M", &tm)) == NULL)
			return -1;
		if (*p == ':' && (p = strptime(p + 1, "%S", &tm)) == NULL)
			return -1;
		if (*p == '.')
			for (p++; *p >= '0' && *p <= '9'; p++)
				;
	}
	if (*p == 'Z')
		p++;
	if (*p != '\0')
		return -1;
	*t = timegm(&tm);
	return 0;
}

/* Rotation numbers for qsort: highest (oldest) first. */
static int
suggest_cmp_rot(const void *x, const void *y)
{
	long long	a = *(const long long *)x, b = *(const long long *)y;

	return a < b ? 1 : a > b ? -1 : 0;
}

/*
 * The log files of dir, oldest first: NAME.N .. NAME.1, NAME (the last
 * may not exist). A NULL-terminated array, or NULL when dir cannot be
 * read.
 */
static char **
suggest_files(const char *dir, int *n)
{
	DIR		*d;
	struct dirent	*de;
	long long	 rot[SUGGEST_ROTATED_MAX], num;
	size_t		 nrot = 0, len = strlen(SUGGEST_LOG), i;
	const char	*errstr;
	char		**files;

	if ((d = opendir(dir)) == NULL)
		return NULL;
	while ((de = readdir(d)) != NULL && nrot < SUGGEST_ROTATED_MAX) {
		if (strncmp(de->d_name, SUGGEST_LOG, len) == 0 &&
		    de->d_name[len] == '.' && util_strtonum(de->d_name + len +
		    1, 1, 1000000, &num, &errstr) == 0)
			rot[nrot++] = num;
	}
	closedir(d);
	if (nrot > 1)
		qsort(rot, nrot, sizeof(rot[0]), suggest_cmp_rot);
	files = util_xcalloc(nrot + 2, sizeof(*files));
	for (i = 0; i < nrot; i++)
		util_xasprintf(&files[i], "%s/%s.%lld", dir, SUGGEST_LOG,
		    rot[i]);
	util_xasprintf(&files[nrot], "%s/%s", dir, SUGGEST_LOG);
	*n = (int)nrot + 1;
	return files;
}

/*
 * The next line of f into buf (NUL-terminated, newline cut). A line that
 * does not fit is skipped to its end and given *len == size, so the
 * caller drops it. Returns 1, or 0 at end of file.
 */
static int
suggest_line(FILE *f, char *buf, size_t size, size_t *len)
{
	int	c;

	if (fgets(buf, (int)size, f) == NULL)
		return 0;
	*len = strlen(buf);
	if (*len > 0 && buf[*len - 1] == '\n') {
		buf[--*len] = '\0';
		return 1;
	}
	if (feof(f))
		return 1;
	while ((c = getc(f)) != EOF && c != '\n')
		;
	*len = size;
	return 1;
}

/* Feed every event of one file; 0, or -1 when it cannot be read. */
static int
suggest_read_file(struct suggest *sg, const char *path)
{
	FILE		*f;
	char		*buf;
	size_t		 size = SG_LOG_LINE_MAX + 2, len;
	struct stat	 st;
	json_t		*o;
	json_error_t	 err;
	int		 fd;

	/* the proxy's uid owns the folder: a regular file, not through a link */
	if ((fd = eventlog_open_file(path, O_RDONLY, &st)) == -1)
		return -1;
	if ((f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return -1;
	}
	buf = util_xmalloc(size);
	while (suggest_line(f, buf, size, &len) == 1) {
		if (len >= size - 1 || len == 0)
			continue;
		o = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &err);
		if (json_is_object(o))
			suggest_event(sg, o);
		json_decref(o);
	}
	free(buf);
	fclose(f);
	sg->files++;
	return 0;
}

/*
 * One log event: blocked (or would have been, in report mode) for a
 * reason an allowlist entry can fix, and passing the filters. Log bytes
 * are untrusted: the host must be one the proxy could have written.
 */
static void
suggest_event(struct suggest *sg, json_t *o)
{
	const char	*ev, *v, *cause;
	struct sdest	*d;
	struct host	 h;
	enum sg_reason	 r;
	json_int_t	 port;
	time_t		 ts;

	ev = json_string_value(json_object_get(o, "event"));
	if (ev == NULL || (strcmp(ev, "egress.blocked") != 0 &&
	    strcmp(ev, "egress.blocked_summary") != 0 &&
	    strcmp(ev, "egress.would_block") != 0 &&
	    strcmp(ev, "egress.would_block_summary") != 0))
		return;
	v = json_string_value(json_object_get(o, "sandbox"));
	if (sg->sandbox != NULL && (v == NULL || strcmp(v, sg->sandbox) != 0))
		return;
	if (sg->since != -1 && ((v = json_string_value(json_object_get(o,
	    "ts"))) == NULL || suggest_parse_ts(v, &ts) == -1 ||
	    ts < sg->since))
		return;
	v = json_string_value(json_object_get(o, "reason"));
	r = v != NULL ? reason_from_code(v) : SG_REASON_MAX;
	if (r >= SG_REASON_MAX || !(SUGGEST_REASONS & (1u << r))) {
		sg->other++;
		return;
	}
	v = json_string_value(json_object_get(o, "host"));
	port = json_integer_value(json_object_get(o, "port"));
	if (v == NULL || port < 1 || port > 65535 ||
	    host_normalize(v, strlen(v), &h, &cause) == -1 ||
	    strcmp(h.name, v) != 0 || (d = suggest_dest(sg, &h)) == NULL) {
		sg->dropped++;
		return;
	}
	suggest_note(d, o, (uint16_t)port, r);
	sg->used++;
}

/* The destination of a host, added when new; NULL past the limit. */
static struct sdest *
suggest_dest(struct suggest *sg, const struct host *h)
{
	size_t	i;

	for (i = 0; i < sg->n; i++)
		if (host_equal(&sg->v[i].host, h))
			return &sg->v[i];
	if (sg->n == SG_SUGGEST_DESTS_MAX)
		return NULL;
	if (sg->n == sg->cap) {
		sg->cap = sg->cap ? sg->cap * 2 : 16;
		sg->v = realloc(sg->v, sg->cap * sizeof(*sg->v));
		if (sg->v == NULL)
			fatal("realloc");
	}
	memset(&sg->v[sg->n], 0, sizeof(sg->v[0]));
	sg->v[sg->n].host = *h;
	return &sg->v[sg->n++];
}

/* Count one attempt at d: port, reason, method, sandbox, rule, time. */
static void
suggest_note(struct sdest *d, json_t *o, uint16_t port, enum sg_reason r)
{
	const char	*m, *sbx, *rule, *ts;
	char		 safe[SUGGEST_TEXT_MAX];
	size_t		 i;

	d->attempts++;
	d->reasons |= 1u << r;
	for (i = 0; i < d->nports && d->ports[i] != port; i++)
		;
	if (i == d->nports && d->nports < SG_SUGGEST_PORTS_MAX)
		d->ports[d->nports++] = port;
	else if (i == d->nports)
		d->ports_dropped = 1;
	m = json_string_value(json_object_get(o, "method"));
	if (m != NULL && strcmp(m, "CONNECT") != 0) {
		d->plain = 1;
		suggest_safe(m, safe, sizeof(d->methods[0]));
		for (i = 0; i < d->nmethods && strcmp(d->methods[i], safe); i++)
			;
		if (i == d->nmethods && d->nmethods < SUGGEST_METHODS)
			util_strlcpy(d->methods[d->nmethods++], safe,
			    sizeof(d->methods[0]));
	}
	sbx = json_string_value(json_object_get(o, "sandbox"));
	suggest_safe(sbx ? sbx : "(no sandbox)", safe, sizeof(safe));
	for (i = 0; i < d->nsandboxes && strcmp(d->sandboxes[i], safe); i++)
		;
	if (i == d->nsandboxes && d->nsandboxes < SUGGEST_SANDBOXES)
		util_strlcpy(d->sandboxes[d->nsandboxes++], safe, sizeof(safe));
	else if (i == d->nsandboxes)
		d->more_sandboxes = 1;
	rule = json_string_value(json_object_get(o, "rule"));
	if (rule != NULL && (r == SG_REASON_METHOD_NOT_ALLOWED ||
	    r == SG_REASON_PATH_NOT_ALLOWED))
		suggest_safe(rule, d->rule, sizeof(d->rule));
	if ((ts = json_string_value(json_object_get(o, "ts"))) != NULL)
		suggest_safe(ts, d->last, sizeof(d->last));
}

/*
 * Copy a string for a YAML comment, which runs to the end of the line:
 * printable ASCII as is, anything else (a newline above all) as '?'.
 */
static void
suggest_safe(const char *s, char *out, size_t size)
{
	size_t	i;

	for (i = 0; s[i] != '\0' && i + 1 < size; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[i] = '\0';
}

static int
suggest_cmp_dest(const void *a, const void *b)
{
	return strcmp(((const struct sdest *)a)->host.name,
	    ((const struct sdest *)b)->host.name);
}

static int
suggest_cmp_port(const void *a, const void *b)
{
	return (int)*(const uint16_t *)a - (int)*(const uint16_t *)b;
}

/*
 * The ports of d that no set of p allows yet, into open (sorted); the
 * others are named in note ("443 by set pypi (file:line)"). Without a
 * policy every port is open.
 */
static size_t
suggest_open_ports(const struct policy *p, const struct sdest *d,
    uint16_t *open, char *note, size_t size)
{
	struct policy_query	q;
	struct policy_match	m;
	size_t			i, n = 0, len = 0;

	note[0] = '\0';
	for (i = 0; i < d->nports; i++) {
		memset(&q, 0, sizeof(q));
		q.host = &d->host;
		q.port = d->ports[i];
		q.all_sets = 1;
		q.now = time(NULL);
		if (p == NULL || policy_decide(p, &q, &m) != SG_REASON_NONE) {
			open[n++] = d->ports[i];
			continue;
		}
		if (len < size)
			len += (size_t)snprintf(note + len, size - len,
			    "%s%u by set %s (%s:%d)", len ? ", " : "",
			    d->ports[i], m.set, m.file, m.line);
	}
	suggest_safe(note, note, size);	/* in place: the file is a path */
	if (n > 1)
		qsort(open, n, sizeof(*open), suggest_cmp_port);
	return n;
}

/* The comment block that opens a draft: where it came from, what to do. */
static void
suggest_print_header(const struct suggest *sg, const struct popts *o,
    const struct policy *p)
{
	const struct policy_set	*s;
	char			 logd[1024], dir[1024], txt[SUGGEST_TEXT_MAX];

	suggest_safe(o->log_dir, logd, sizeof(logd));
	suggest_safe(o->dir, dir, sizeof(dir));
	printf("# Draft policy set \"%s\", drafted by `sandgate policy "
	    "suggest` from %lld\n# blocked attempt%s in %s/%s", o->set_name,
	    sg->used, sg->used == 1 ? "" : "s", logd, SUGGEST_LOG);
	if (sg->files > 1)
		printf(" and %d rotated file%s", sg->files - 1,
		    sg->files == 2 ? "" : "s");
	if (o->sandbox != NULL) {
		suggest_safe(o->sandbox, txt, sizeof(txt));
		printf(",\n# sandbox %s", txt);
	}
	if (sg->since != -1) {
		suggest_safe(o->since, txt, sizeof(txt));
		printf(", since %s", txt);
	}
	printf(".\n#\n"
	    "# Review it before it goes live: delete every destination the "
	    "task should\n# not reach, write in each rationale why the rest "
	    "is needed, and fill in\n# owner. `sandgate policy check` and "
	    "the proxy refuse a rationale that\n# still reads %s.\n"
	    "# Save it as %s/%s.yaml, then run: sandgate policy check\n",
	    suggest_placeholder, dir, o->set_name);
	if (p != NULL && (s = policy_set_find(p, o->set_name)) != NULL)
		printf("# Set \"%s\" already exists: merge these entries into "
		    "it.\n", s->name);
	printf("description: \"destinations the proxy blocked, drafted from "
	    "the security-event log\"\nowner: %s\nallow:\n",
	    suggest_placeholder);
}

/* One drafted entry with a comment saying what was seen. */
static void
suggest_print_entry(const struct sdest *d, const uint16_t *ports,
    size_t n)
{
	size_t	i, k;
	int	tls443 = 0;

	printf("  # %lld attempt%s (", d->attempts, d->attempts == 1 ? "" :
	    "s");
	for (i = 0, k = 0; i < SG_REASON_MAX; i++)
		if (d->reasons & (1u << i))
			printf("%s%s", k++ ? ", " : "",
			    reason_code((enum sg_reason)i));
	printf(") by");
	for (i = 0; i < d->nsandboxes; i++)
		printf("%s %s", i ? "," : "", d->sandboxes[i]);
	printf("%s; last %s\n", d->more_sandboxes ? " and others" : "",
	    d->last[0] ? d->last : "-");
	if (d->rule[0] != '\0') {
		printf("  # plain-HTTP");
		for (i = 0; i < d->nmethods; i++)
			printf("%s %s", i ? "," : "", d->methods[i]);
		printf(" refused by the entry at %s; widening its methods\n"
		    "  # or paths there may be enough\n", d->rule);
	}
	if (d->ports_dropped)
		printf("  # more than %d ports were tried; only the first are "
		    "listed\n", SG_SUGGEST_PORTS_MAX);
	printf("  - host: \"%s\"\n    ports: [", d->host.name);
	for (i = 0; i < n; i++) {
		printf("%s%u", i ? ", " : "", ports[i]);
		tls443 |= ports[i] == 443;
	}
	printf("]\n");
	/* Plain HTTP to 443 is refused unless the entry says so. */
	if (d->plain && tls443)
		printf("    tls: optional\n");
	printf("    rationale: %s\n", suggest_placeholder);
}

/*
 * Print the draft: every destination with ports no set of p allows yet,
 * then the ones some set already allows (the sandbox lacks that set).
 * Returns the number of entries drafted.
 */
static int
suggest_print(const struct suggest *sg, const struct popts *o,
    const struct policy *p)
{
	uint16_t	open[SG_SUGGEST_PORTS_MAX];
	char		note[1024];
	size_t		i, n;
	int		entries = 0, header = 0;

	for (i = 0; i < sg->n; i++) {
		n = suggest_open_ports(p, &sg->v[i], open, note, sizeof(note));
		if (n == 0)
			continue;
		if (!header++)
			suggest_print_header(sg, o, p);
		if (note[0] != '\0')
			printf("  # already allowed: port %s\n", note);
		suggest_print_entry(&sg->v[i], open, n);
		entries++;
	}
	for (i = 0, header = 0; i < sg->n; i++) {
		if (suggest_open_ports(p, &sg->v[i], open, note,
		    sizeof(note)) != 0)
			continue;
		fprintf(entries ? stdout : stderr, "%s# %s: already allowed, "
		    "port %s;\n#   the sandbox lacks that set (sandgate create "
		    "--allow SET)\n", header++ ? "" : "\n", sg->v[i].host.name,
		    note);
	}
	if (sg->other > 0)
		fprintf(entries ? stdout : stderr, "\n# %lld other block%s "
		    "(private address, SNI, TLS or malformed requests) %s not "
		    "for the\n# allowlist to fix; see `sandgate audit "
		    "summary`\n", sg->other, sg->other == 1 ? "" : "s",
		    sg->other == 1 ? "is" : "are");
	return entries;
}

/* The policy in force, quietly: suggest leaves out what it allows. */
static struct policy *
suggest_policy(const char *dir)
{
	struct policy_diags	 d;
	struct policy		*p;

	policy_diags_init(&d);
	p = policy_load_dir(dir, time(NULL), &d);
	if (p == NULL)
		log_warnx("policy in %s has %zu error%s (see "
		    "`sandgate policy check`); destinations it allows are not "
		    "left out", dir, d.nerrors, d.nerrors == 1 ? "" : "s");
	policy_diags_release(&d);
	return p;
}

/* Every file of the log, oldest first; 0, or -1 with a message. */
static int
suggest_read_log(struct suggest *sg, const char *dir)
{
	char	**files;
	int	  nfiles, i, nread = 0;

	if ((files = suggest_files(dir, &nfiles)) == NULL) {
		log_warnx("cannot read the log folder %s",
		    dir);
		return -1;
	}
	for (i = 0; i < nfiles; i++) {
		nread += suggest_read_file(sg, files[i]) == 0;
		free(files[i]);
	}
	free(files);
	if (nread == 0) {
		log_warnx("no log at %s/%s", dir,
		    SUGGEST_LOG);
		return -1;
	}
	return 0;
}

/*
 * Draft a set from the blocked destinations in the security-event log:
 * every rationale is the placeholder, so check refuses the draft until a
 * person has reviewed and explained each entry.
 */
static int
cmd_policy_suggest_exec(struct cmd_args *args)
{
	struct popts	 o;
	struct suggest	 sg;
	struct policy	*p = NULL;
	int		 rc;

	policy_opts(args, &o);
	memset(&sg, 0, sizeof(sg));
	sg.since = -1;
	sg.sandbox = o.sandbox;
	if (o.since != NULL && suggest_parse_time(o.since, &sg.since) == -1)
		return cmd_usage_error(args->entry, "--since takes 2h, 30m, 7d or a UTC "
		    "time like 2026-01-31T12:00:00Z");
	if (o.set_name == NULL)
		o.set_name = "suggested";
	if (!policy_set_name_valid(o.set_name))
		return cmd_usage_error(args->entry, "--set takes a set name: a-z, 0-9, "
		    "'_' and '-'");
	if (o.log_dir == NULL)
		o.log_dir = state_log_dir();
	if (suggest_read_log(&sg, o.log_dir) == -1)
		return SG_EXIT_ERROR;
	if (sg.dropped > 0)
		log_warnx("%lld blocked event%s left out (not "
		    "a valid host and port, or past %d hosts)", sg.dropped,
		    sg.dropped == 1 ? "" : "s", SG_SUGGEST_DESTS_MAX);
	if (sg.n > 0)
		qsort(sg.v, sg.n, sizeof(*sg.v), suggest_cmp_dest);
	p = suggest_policy(o.dir);
	rc = SG_EXIT_OK;
	if (suggest_print(&sg, &o, p) == 0) {
		log_warnx("nothing to suggest: %s", sg.n ?
		    "the policy already allows every blocked destination" :
		    "no blocked destination in the log");
		rc = SG_EXIT_FAIL;
	}
	policy_free(p);
	free(sg.v);
	return rc;
}
