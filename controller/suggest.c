/* suggest.c: a draft policy set from the blocks in the log; suggest.h. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "log.h"
#include "logread.h"
#include "logset.h"
#include "policy.h"
#include "reason.h"
#include "suggest.h"
#include "util.h"

/* The bit of every reason an allowlist entry can fix. */
#define SUGGEST_BIT(r)	(UINT64_C(1) << (r))
#define SUGGEST_REASONS	(SUGGEST_BIT(SG_REASON_NOT_ALLOWLISTED) | \
	SUGGEST_BIT(SG_REASON_PORT_NOT_ALLOWED) | \
	SUGGEST_BIT(SG_REASON_IP_LITERAL) | \
	SUGGEST_BIT(SG_REASON_METHOD_NOT_ALLOWED) | \
	SUGGEST_BIT(SG_REASON_PATH_NOT_ALLOWED))
_Static_assert(SG_REASON_MAX <= 64, "struct suggest_dest reasons: 64 bits");

static void	suggest_event_cb(json_t *, void *);
static struct suggest_dest *suggest_dest(struct suggest *,
		    const struct host *);
static void	suggest_note(struct suggest_dest *, json_t *, uint16_t,
		    enum sg_reason);
static void	suggest_safe(const char *, char *, size_t);
static int	suggest_cmp_dest(const void *, const void *);
static int	suggest_cmp_port(const void *, const void *);
static size_t	suggest_open_ports(const struct policy *,
		    const struct suggest_dest *, uint16_t *, char *, size_t);
static void	suggest_print_header(FILE *, const struct suggest *,
		    const struct suggest_draft *, const struct policy *);
static void	suggest_print_entry(FILE *, const struct suggest_dest *,
		    const uint16_t *, size_t);

void
suggest_init(struct suggest *sg, const char *sandbox, int64_t since)
{
	memset(sg, 0, sizeof(*sg));
	sg->sandbox = sandbox;
	sg->since = since;
}

void
suggest_release(struct suggest *sg)
{
	free(sg->v);
	sg->v = NULL;
	sg->n = sg->cap = 0;
}

void
suggest_sort(struct suggest *sg)
{
	if (sg->n > 1)
		qsort(sg->v, sg->n, sizeof(*sg->v), suggest_cmp_dest);
}

static void
suggest_event_cb(json_t *o, void *arg)
{
	suggest_event(arg, o);
}

int
suggest_read_log(struct suggest *sg, const char *dir, char **cause)
{
	struct logread_stats	st = { 0, 0 };
	int			rc;

	rc = logset_read_log(dir, SUGGEST_LOG, suggest_event_cb, sg, &st,
	    cause);
	sg->files = st.files;
	suggest_sort(sg);
	return rc;
}

/*
 * One log event: blocked (or would have been, in report mode) for a
 * reason an allowlist entry can fix, and passing the filters. Log bytes
 * are untrusted: the host must be one the proxy could have written.
 */
void
suggest_event(struct suggest *sg, json_t *o)
{
	const char	*ev, *v, *cause;
	struct suggest_dest	*d;
	struct host	 h;
	enum sg_reason	 r;
	json_int_t	 port;
	int64_t		 ts;

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
	    "ts"))) == NULL || logread_parse_ts(v, &ts) == -1 ||
	    ts < sg->since))
		return;
	v = json_string_value(json_object_get(o, "reason"));
	r = v != NULL ? reason_from_code(v) : SG_REASON_MAX;
	if (r >= SG_REASON_MAX || !(SUGGEST_REASONS & SUGGEST_BIT(r))) {
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
static struct suggest_dest *
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
suggest_note(struct suggest_dest *d, json_t *o, uint16_t port,
    enum sg_reason r)
{
	const char	*m, *sbx, *rule, *ts;
	char		 safe[SUGGEST_TEXT_MAX];
	size_t		 i;

	d->attempts++;
	d->reasons |= SUGGEST_BIT(r);
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
	return strcmp(((const struct suggest_dest *)a)->host.name,
	    ((const struct suggest_dest *)b)->host.name);
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
suggest_open_ports(const struct policy *p, const struct suggest_dest *d,
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
suggest_print_header(FILE *f, const struct suggest *sg,
    const struct suggest_draft *o, const struct policy *p)
{
	const struct policy_set	*s;
	char			 logd[1024], dir[1024], txt[SUGGEST_TEXT_MAX];

	suggest_safe(o->log_dir, logd, sizeof(logd));
	suggest_safe(o->policy_dir, dir, sizeof(dir));
	fprintf(f, "# Draft policy set \"%s\", drafted by `sandgate policy "
	    "suggest` from %lld\n# blocked attempt%s in %s/%s", o->set_name,
	    sg->used, sg->used == 1 ? "" : "s", logd, SUGGEST_LOG);
	if (sg->files > 1)
		fprintf(f, " and %d rotated file%s", sg->files - 1,
		    sg->files == 2 ? "" : "s");
	if (o->sandbox != NULL) {
		suggest_safe(o->sandbox, txt, sizeof(txt));
		fprintf(f, ",\n# sandbox %s", txt);
	}
	if (sg->since != -1 && o->since != NULL) {
		suggest_safe(o->since, txt, sizeof(txt));
		fprintf(f, ", since %s", txt);
	}
	fprintf(f, ".\n#\n"
	    "# Review it before it goes live: delete every destination the "
	    "task should\n# not reach, write in each rationale why the rest "
	    "is needed, and fill in\n# owner. `sandgate policy check` and "
	    "the proxy refuse a rationale that\n# still reads %s.\n"
	    "# Save it as %s/%s.yaml, then run: sandgate policy check\n",
	    policy_placeholder, dir, o->set_name);
	if (p != NULL && (s = policy_set_find(p, o->set_name)) != NULL)
		fprintf(f,
		    "# Set \"%s\" already exists: merge these entries into "
		    "it.\n", s->name);
	fprintf(f,
	    "description: \"destinations the proxy blocked, drafted from "
	    "the security-event log\"\nowner: %s\nallow:\n",
	    policy_placeholder);
}

/* One drafted entry with a comment saying what was seen. */
static void
suggest_print_entry(FILE *f, const struct suggest_dest *d,
    const uint16_t *ports, size_t n)
{
	size_t	i, k;
	int	tls443 = 0;

	fprintf(f, "  # %lld attempt%s (", d->attempts, d->attempts == 1 ? "" :
	    "s");
	for (i = 0, k = 0; i < SG_REASON_MAX; i++)
		if (d->reasons & SUGGEST_BIT(i))
			fprintf(f, "%s%s", k++ ? ", " : "",
			    reason_code((enum sg_reason)i));
	fprintf(f, ") by");
	for (i = 0; i < d->nsandboxes; i++)
		fprintf(f, "%s %s", i ? "," : "", d->sandboxes[i]);
	fprintf(f, "%s; last %s\n", d->more_sandboxes ? " and others" : "",
	    d->last[0] ? d->last : "-");
	if (d->rule[0] != '\0') {
		fprintf(f, "  # plain-HTTP");
		for (i = 0; i < d->nmethods; i++)
			fprintf(f, "%s %s", i ? "," : "", d->methods[i]);
		fprintf(f, " refused by the entry at %s; widening its methods\n"
		    "  # or paths there may be enough\n", d->rule);
	}
	if (d->ports_dropped)
		fprintf(f,
		    "  # more than %d ports were tried; only the first are "
		    "listed\n", SG_SUGGEST_PORTS_MAX);
	fprintf(f, "  - host: \"%s\"\n    ports: [", d->host.name);
	for (i = 0; i < n; i++) {
		fprintf(f, "%s%u", i ? ", " : "", ports[i]);
		tls443 |= ports[i] == 443;
	}
	fprintf(f, "]\n");
	/* Plain HTTP to 443 is refused unless the entry says so. */
	if (d->plain && tls443)
		fprintf(f, "    tls: optional\n");
	fprintf(f, "    rationale: %s\n", policy_placeholder);
}

/*
 * Print the draft: every destination with ports no set of p allows yet,
 * then the ones some set already allows (the sandbox lacks that set).
 * Returns the number of entries drafted.
 */
int
suggest_print(const struct suggest *sg, const struct suggest_draft *o,
    const struct policy *p, FILE *f, FILE *err)
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
			suggest_print_header(f, sg, o, p);
		if (note[0] != '\0')
			fprintf(f, "  # already allowed: port %s\n", note);
		suggest_print_entry(f, &sg->v[i], open, n);
		entries++;
	}
	for (i = 0, header = 0; i < sg->n; i++) {
		if (suggest_open_ports(p, &sg->v[i], open, note,
		    sizeof(note)) != 0)
			continue;
		fprintf(entries ? f : err, "%s# %s: already allowed, "
		    "port %s;\n#   the sandbox lacks that set (sandgate create "
		    "--allow SET)\n", header++ ? "" : "\n", sg->v[i].host.name,
		    note);
	}
	if (sg->other > 0)
		fprintf(entries ? f : err, "\n# %lld other block%s "
		    "(private address, SNI, TLS or malformed requests) %s not "
		    "for the\n# allowlist to fix; see `sandgate audit "
		    "summary`\n", sg->other, sg->other == 1 ? "" : "s",
		    sg->other == 1 ? "is" : "are");
	return entries;
}

