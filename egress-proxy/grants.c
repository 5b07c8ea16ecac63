/*
 * grants.c: the table of grants (grants.h). A person gives a handful at a
 * time, so a list.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "apartfile.h"
#include "grants.h"
#include "host.h"
#include "util.h"

struct grants {
	struct grant	*head;
	size_t		 n;
};

static int	grants_id_ok(const char *, size_t, int);
static int	grants_line_ok(const char *, const char *);
static int	grants_valid(const struct grant *, const char **);
static int	grants_restorable(const struct grant *, time_t,
		    const char **);
static int	grants_parse_time(const char *, time_t *);
static int	grants_parse_gen(const json_t *, json_int_t *);
static const char *grants_read_text(const json_t *, struct grant *);
static size_t	grants_load_arr(struct grants *, json_t *, json_int_t,
		    const char *, time_t, time_t,
		    void (*)(const struct grant *, const char *, void *),
		    void *);
static int	grants_pick_dest(const struct grant *, const void *);
static int	grants_pick_expired(const struct grant *, const void *);

time_t
grants_clock(void)
{
	struct timespec	ts;

	if (clock_gettime(CLOCK_BOOTTIME, &ts) == -1)
		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec;
}

struct grants *
grants_new(void)
{
	return calloc(1, sizeof(struct grants));
}

void
grants_free(struct grants *t)
{
	struct grant	*g, *next;

	if (t == NULL)
		return;
	for (g = t->head; g != NULL; g = next) {
		next = g->next;
		free(g);
	}
	free(t);
}

/* An id of [A-Za-z0-9_-], at most max bytes (empty when empty_ok). */
static int
grants_id_ok(const char *s, size_t max, int empty_ok)
{
	size_t	n = strlen(s);

	if (n == 0)
		return empty_ok;
	return n <= max && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

/* s is one line of text: not empty, no control bytes, none of also. */
static int
grants_line_ok(const char *s, const char *also)
{
	const unsigned char	*p;

	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < 0x20 || *p == 0x7f || strchr(also, *p) != NULL)
			return 0;
	return s[0] != '\0';
}

static int
grants_valid(const struct grant *g, const char **cause)
{
	struct host	 h;
	const char	*hc;

	if (!grants_id_ok(g->sandbox, 64, 0) ||
	    !grants_id_ok(g->run, EXECCRED_RUN_MAX, 1)) {
		*cause = "sandbox and run_id must be ids of [A-Za-z0-9_-]";
		return -1;
	}
	if (host_normalize(g->host, strlen(g->host), &h, &hc) == -1 ||
	    h.type != HOST_DNS || strcmp(h.name, g->host) != 0) {
		*cause = "host must be a normalized host name";
		return -1;
	}
	if (g->port < 1 || g->port > 65535) {
		*cause = "port must be 1 to 65535";
		return -1;
	}
	if (g->expires <= g->granted ||
	    g->expires - g->granted > GRANTS_SECS_MAX) {
		*cause = "a grant lasts from 1 second to 7 days";
		return -1;
	}
	if (!grants_line_ok(g->rationale, "")) {
		*cause = "a grant needs a rationale: one line of text";
		return -1;
	}
	if (!grants_line_ok(g->by, "\"\\")) {
		*cause = "a grant needs who gave it: one line, no quotes or "
		    "backslashes";
		return -1;
	}
	return 0;
}

int
grants_add(struct grants *t, const struct grant *g, const char **cause)
{
	struct grant	*e, *next;

	if (grants_valid(g, cause) == -1)
		return -1;
	for (e = t->head; e != NULL; e = e->next) {
		if (e->port == g->port && strcmp(e->sandbox, g->sandbox) ==
		    0 && strcmp(e->host, g->host) == 0 &&
		    strcmp(e->run, g->run) == 0) {
			next = e->next;
			*e = *g;
			e->next = next;
			return 0;
		}
	}
	if (t->n >= GRANTS_MAX) {
		*cause = "too many grants";
		return -1;
	}
	if ((e = malloc(sizeof(*e))) == NULL) {
		*cause = "out of memory";
		return -1;
	}
	*e = *g;
	e->next = t->head;
	t->head = e;
	t->n++;
	return 0;
}

size_t
grants_drop(struct grants *t, int (*pick)(const struct grant *,
    const void *), const void *key, void (*cb)(const struct grant *,
    void *), void *arg)
{
	struct grant	*g, **pp;
	size_t		 n = 0;

	for (pp = &t->head; (g = *pp) != NULL;) {
		if (!pick(g, key)) {
			pp = &g->next;
			continue;
		}
		*pp = g->next;
		if (cb != NULL)
			cb(g, arg);
		free(g);
		t->n--;
		n++;
	}
	return n;
}

static int
grants_pick_dest(const struct grant *g, const void *key)
{
	const struct grant	*k = key;

	return g->port == k->port && strcmp(g->sandbox, k->sandbox) == 0 &&
	    strcmp(g->host, k->host) == 0;
}

static int
grants_pick_expired(const struct grant *g, const void *key)
{
	return g->deadline <= *(const time_t *)key;
}

size_t
grants_remove(struct grants *t, const char *sandbox, const char *host,
    int port, void (*cb)(const struct grant *, void *), void *arg)
{
	struct grant	k;

	memset(&k, 0, sizeof(k));
	snprintf(k.sandbox, sizeof(k.sandbox), "%s", sandbox);
	snprintf(k.host, sizeof(k.host), "%s", host);
	k.port = port;
	return grants_drop(t, grants_pick_dest, &k, cb, arg);
}

size_t
grants_expire(struct grants *t, time_t now,
    void (*cb)(const struct grant *, void *), void *arg)
{
	return grants_drop(t, grants_pick_expired, &now, cb, arg);
}

const struct grant *
grants_match(const struct grants *t, const char *sandbox, const char *run,
    const char *host, int port, time_t now)
{
	const struct grant	*g;

	if (sandbox == NULL)
		return NULL;
	for (g = t->head; g != NULL; g = g->next) {
		if (g->port == port && now < g->deadline &&
		    strcmp(g->host, host) == 0 &&
		    strcmp(g->sandbox, sandbox) == 0 &&
		    (g->run[0] == '\0' || strcmp(g->run, run) == 0))
			return g;
	}
	return NULL;
}

void
grants_time(time_t t, char *buf, size_t size)
{
	struct tm	tm;

	if (gmtime_r(&t, &tm) == NULL ||
	    strftime(buf, size, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(buf, size, "-");
}

static int
grants_parse_time(const char *s, time_t *out)
{
	struct tm	tm;
	const char	*end;

	memset(&tm, 0, sizeof(tm));
	if (s == NULL || (end = strptime(s, "%Y-%m-%dT%H:%M:%SZ", &tm)) ==
	    NULL || *end != '\0')
		return -1;
	*out = timegm(&tm);
	return 0;
}

json_t *
grants_one_json(const struct grant *g)
{
	char	granted[32], expires[32];

	grants_time(g->granted, granted, sizeof(granted));
	grants_time(g->expires, expires, sizeof(expires));
	return json_pack("{s:s, s:s, s:i, s:s?, s:s, s:s, s:s, s:s}",
	    "sandbox", g->sandbox, "host", g->host, "port", g->port,
	    "run_id", g->run[0] ? g->run : NULL, "by", g->by, "rationale",
	    g->rationale, "granted", granted, "expires", expires);
}

json_t *
grants_json(const struct grants *t, const char *sandbox)
{
	const struct grant	*g;
	json_t			*a = json_array();

	for (g = t->head; g != NULL && a != NULL; g = g->next)
		if (sandbox == NULL || strcmp(sandbox, g->sandbox) == 0)
			json_array_append_new(a, grants_one_json(g));
	return a;
}

/*
 * The number first, so a file torn after it still gives it
 * (grants_text_generation); none above what the reader takes.
 */
json_t *
grants_save_json(const struct grants *t, json_int_t generation)
{
	json_t	*a;

	if (generation < 0 || generation > GRANTS_GEN_MAX ||
	    (a = grants_json(t, NULL)) == NULL)
		return NULL;
	return json_pack("{s:I, s:o}", "generation", generation, "grants", a);
}

/*
 * A "generation" or "after" (GRANTS_GEN_MAX) into *out: 0, or -1 when it
 * is no whole number in range (absent, null, a real, a string, negative,
 * too large).
 */
static int
grants_parse_gen(const json_t *v, json_int_t *out)
{
	*out = 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > GRANTS_GEN_MAX)
		return -1;
	*out = json_integer_value(v);
	return 0;
}

/*
 * A saved grant given before now and ending at most GRANTS_SECS_MAX
 * after now (a hand-edited file can claim anything); 0 or -1 with
 * *cause static.
 */
static int
grants_restorable(const struct grant *g, time_t now, const char **cause)
{
	if (g->granted > now) {
		*cause = "granted in the future";
		return -1;
	}
	if (g->expires > now && g->expires - now > GRANTS_SECS_MAX) {
		*cause = "ends more than 7 days from now";
		return -1;
	}
	return grants_valid(g, cause);
}

size_t
grants_load_json(struct grants *t, json_t *arr, time_t now, time_t clock,
    void (*cb)(const struct grant *, const char *, void *), void *arg)
{
	return grants_load_arr(t, arr, GRANTS_GEN_NONE, NULL, now, clock, cb,
	    arg);
}

/*
 * The text members of a saved grant o into g, each whole: NULL, or a
 * static cause naming the first longer than its field. Never cut to fit:
 * a cut sandbox or run_id names another, and a "by" or rationale cut
 * inside a character is no UTF-8, so the grant could be neither listed
 * nor saved again (fuzz_grants).
 */
_Static_assert(SG_HOST_MAX == 253 && EXECCRED_RUN_MAX == 64 &&
    GRANTS_TEXT_MAX == 512 && GRANTS_BY_MAX == 127,
    "grants_read_text's causes name the sizes");

static const char *
grants_read_text(const json_t *o, struct grant *g)
{
	const struct {
		const char	*key;
		char		*buf;
		size_t		 size;
		const char	*cause;
	} m[] = {
		{ "sandbox", g->sandbox, sizeof(g->sandbox),
		    "sandbox is longer than 64 bytes" },
		{ "host", g->host, sizeof(g->host),
		    "host is longer than 253 bytes" },
		{ "run_id", g->run, sizeof(g->run),
		    "run_id is longer than 64 bytes" },
		{ "by", g->by, sizeof(g->by), "by is longer than 127 bytes" },
		{ "rationale", g->rationale, sizeof(g->rationale),
		    "rationale is longer than 512 bytes" },
	};
	const char	*s;
	size_t		 i;

	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		s = json_string_value(json_object_get(o, m[i].key));
		if (util_strlcpy(m[i].buf, s != NULL ? s : "", m[i].size) >=
		    m[i].size) {
			/* what a warning names: not a cut value (another) */
			util_strlcpy(m[i].buf, "(too long)", m[i].size);
			return m[i].cause;
		}
	}
	return NULL;
}

/*
 * Why a saved port v is refused, naming it as saved (the grant's port
 * is 0 then, which a warning would show instead): static storage.
 */
static const char *
grants_port_cause(const json_t *v)
{
	static char	 buf[96];
	char		*text;

	if (v == NULL)
		return "port is missing";
	text = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
	snprintf(buf, sizeof(buf), "port %.40s%s is not from 1 to 65535",
	    text != NULL ? text : "?", text != NULL && strlen(text) > 40 ?
	    "..." : "");
	free(text);
	return buf;
}

/*
 * The grants of arr, of a save numbered gen; each refused with refuse
 * when it is not NULL (the file's number is damaged).
 */
static size_t
grants_load_arr(struct grants *t, json_t *arr, json_int_t gen,
    const char *refuse, time_t now, time_t clock,
    void (*cb)(const struct grant *, const char *, void *), void *arg)
{
	struct grant	 g;
	json_t		*o;
	json_int_t	 port;
	const char	*cause;
	size_t		 i, n = 0;

	json_array_foreach(arr, i, o) {
		memset(&g, 0, sizeof(g));
		g.generation = gen;
		port = json_integer_value(json_object_get(o, "port"));
		/* out of range: 0, refused (never narrowed into range) */
		g.port = port >= 1 && port <= 65535 ? (int)port : 0;
		if ((cause = grants_read_text(o, &g)) != NULL)
			;
		else if (g.port == 0)	/* the warning names what was saved */
			cause = grants_port_cause(json_object_get(o, "port"));
		else if (grants_parse_time(json_string_value(json_object_get(o,
		    "granted")), &g.granted) == -1 ||
		    grants_parse_time(json_string_value(json_object_get(o,
		    "expires")), &g.expires) == -1)
			cause = "granted and expires must be UTC times";
		else if ((cause = refuse) != NULL)
			;
		else if (grants_restorable(&g, now, &cause) == 0) {
			/* What the wall clock leaves of it, on our clock. */
			g.deadline = clock + (g.expires > now ? g.expires -
			    now : 0);
			if (grants_add(t, &g, &cause) == 0) {
				n++;
				cause = NULL;
			}
		}
		if (cb != NULL)
			cb(&g, cause, arg);
	}
	return n;
}

long
grants_load_text(struct grants *t, const char *text, size_t len,
    time_t now, time_t clock, void (*cb)(const struct grant *,
    const char *, void *), void *arg, char *err, size_t errsize)
{
	json_error_t	 je;
	json_t		*top, *arr;
	json_int_t	 gen = GRANTS_GEN_NONE;
	const char	*refuse = NULL;
	long		 n = -1;

	if ((top = json_loadb(text, len, 0, &je)) == NULL) {
		snprintf(err, errsize, "line %d column %d: %s", je.line,
		    je.column, je.text);
		return -1;
	}
	arr = json_is_array(top) ? top : json_object_get(top, "grants");
	if (!json_is_array(arr))
		snprintf(err, errsize, "neither an array nor an object with "
		    "\"grants\", an array");
	else {
		if (arr != top && grants_parse_gen(json_object_get(top,
		    "generation"), &gen) == -1)
			refuse = "the file's generation is not a whole number "
			    "from 0 to 2^53 - 1";
		n = (long)grants_load_arr(t, arr, gen, refuse, now, clock,
		    cb, arg);
	}
	json_decref(top);
	return n;
}

json_int_t
grants_text_generation(const char *text, size_t len)
{
	static const char	 head[] = "{\"generation\":";
	json_t			*top;
	json_int_t		 gen = 0;
	size_t			 i;

	if ((top = json_loadb(text, len, 0, NULL)) != NULL) {
		if (json_is_object(top))
			(void)grants_parse_gen(json_object_get(top,
			    "generation"), &gen);
		json_decref(top);
		return gen;
	}
	if (len < sizeof(head) - 1 || memcmp(text, head, sizeof(head) - 1))
		return 0;
	/* 16 digits at most: 2^53 - 1 has 16 */
	for (i = sizeof(head) - 1; i < len && i < sizeof(head) + 15 &&
	    text[i] >= '0' && text[i] <= '9'; i++)
		gen = gen * 10 + (text[i] - '0');
	/* the proxy writes "," after it: a number torn short is no number */
	if (i == sizeof(head) - 1 || i >= len || text[i] != ',' ||
	    gen > GRANTS_GEN_MAX)
		return 0;
	return gen;
}

char *
grants_tomb_line(const struct grant *g, time_t revoked, json_int_t after)
{
	json_t	*o = json_pack("{s:s, s:s, s:i, s:I, s:I, s:I}", "sandbox",
		    g->sandbox, "host", g->host, "port", g->port, "revoked",
		    (json_int_t)revoked, "granted", (json_int_t)g->granted,
		    "after", after);
	char	*text = o ? json_dumps(o, JSON_COMPACT) : NULL;
	char	*line = text ? malloc(strlen(text) + 3) : NULL;

	if (line != NULL)
		snprintf(line, strlen(text) + 3, "\n%s\n", text);
	free(text);
	json_decref(o);
	return line;
}

/*
 * A destination's revokes: the newest save of grants.json they postdate
 * (-1: none said); of the lines that do not say (an older proxy's), the
 * newest grant they ended (GRANTS_NONE: none); of every line, the newest
 * grant ended (for a grants.json with no number).
 */
struct grants_tomb {
	char		*mem;		/* holds sandbox and host */
	const char	*sandbox, *host;
	json_int_t	 port;
	json_int_t	 after;
	json_int_t	 granted;
	json_int_t	 granted_any;
};

#define GRANTS_NONE	LLONG_MIN	/* ends no grant: no time is this */

/* Sorted by destination (grants_tomb_cmp), one entry each. */
struct grants_tombs {
	struct grants_tomb	*v;
	size_t			 n, cap;
	json_int_t		 after;	/* the highest "after" (0: none) */
	const char		*why;	/* what is wrong in the text added */
};

struct grants_tombs *
grants_tombs_new(void)
{
	return calloc(1, sizeof(struct grants_tombs));
}

void
grants_tombs_free(struct grants_tombs *t)
{
	size_t	i;

	if (t == NULL)
		return;
	for (i = 0; i < t->n; i++)
		free(t->v[i].mem);
	free(t->v);
	free(t);
}

size_t
grants_tombs_count(const struct grants_tombs *t)
{
	return t->n;
}

json_int_t
grants_tombs_after(const struct grants_tombs *t)
{
	return t->after;
}

static int
grants_tomb_cmp(const void *a, const void *b)
{
	const struct grants_tomb	*x = a, *y = b;
	int				 c;

	if ((c = strcmp(x->sandbox, y->sandbox)) != 0 ||
	    (c = strcmp(x->host, y->host)) != 0)
		return c;
	return (x->port > y->port) - (x->port < y->port);
}

/* One revoke appended (unsorted until grants_tombs_sort): 0, or -1. */
static int
grants_tombs_push(struct grants_tombs *t, const char *sbx, const char *host,
    json_int_t port, json_int_t after, json_int_t granted)
{
	json_int_t		 any = granted;
	struct grants_tomb	*v;
	size_t			 ls = strlen(sbx), lh = strlen(host);
	char			*s;

	if (t->n == t->cap) {
		if ((v = reallocarray(t->v, t->cap ? t->cap * 2 : 64,
		    sizeof(*v))) == NULL)
			return -1;
		t->v = v;
		t->cap = t->cap ? t->cap * 2 : 64;
	}
	if ((s = malloc(ls + lh + 2)) == NULL)
		return -1;
	memcpy(s, sbx, ls + 1);
	memcpy(s + ls + 1, host, lh + 1);
	v = &t->v[t->n++];
	v->mem = s;
	v->sandbox = s;
	v->host = s + ls + 1;
	v->port = port;
	v->after = after;
	v->granted = after != -1 ? GRANTS_NONE : granted;
	v->granted_any = any;
	if (after > t->after)
		t->after = after;
	return 0;
}

/*
 * Sorted, the revokes of one destination merged into the newest: a grant
 * any of them ends, the merged one ends.
 */
static void
grants_tombs_sort(struct grants_tombs *t)
{
	size_t	i, k = 0;

	if (t->n == 0)
		return;
	qsort(t->v, t->n, sizeof(*t->v), grants_tomb_cmp);
	for (i = 1; i < t->n; i++) {
		if (grants_tomb_cmp(&t->v[k], &t->v[i]) != 0) {
			t->v[++k] = t->v[i];
			continue;
		}
		if (t->v[i].after > t->v[k].after)
			t->v[k].after = t->v[i].after;
		if (t->v[i].granted > t->v[k].granted)
			t->v[k].granted = t->v[i].granted;
		if (t->v[i].granted_any > t->v[k].granted_any)
			t->v[k].granted_any = t->v[i].granted_any;
		free(t->v[i].mem);
	}
	t->n = k + 1;
}

/*
 * apartfile_lines(): one line, a revoke added, or what is wrong in it in
 * t->why (then the walk stops). "after" is the save of grants.json it
 * postdates (grants_tombs_ends); a line without it (an older proxy's)
 * has "granted", the newest grant it removed in the grants' own record
 * (atk1921c F8), or only the revoke's time.
 */
static int
grants_tombs_line(const char *s, size_t n, int damage, void *arg)
{
	struct grants_tombs	*t = arg;
	const char		*sbx, *host;
	json_int_t		 port, at, granted = -1, after = -1;
	json_t			*o, *a = NULL;

	if ((t->why = apartfile_damage(damage)) != NULL)
		return -1;
	o = json_loadb(s, n, JSON_REJECT_DUPLICATES, NULL);
	if (o == NULL || json_unpack(o, "{s:s, s:s, s:I, s:I, s?I, s?o}",
	    "sandbox", &sbx, "host", &host, "port", &port, "revoked", &at,
	    "granted", &granted, "after", &a) != 0)
		t->why = "a line that is not one of its revokes";
	else if (a != NULL && grants_parse_gen(a, &after) == -1)
		t->why = "a revoke whose \"after\" is no generation (a whole "
		    "number from 0 to 2^53 - 1)";
	else if (grants_tombs_push(t, sbx, host, port, a != NULL ? after : -1,
	    granted != -1 ? granted : at) == -1)
		t->why = "out of memory";
	json_decref(o);
	return t->why != NULL ? -1 : 0;
}

const char *
grants_tombs_add(struct grants_tombs *t, const char *text, size_t len)
{
	t->why = NULL;
	apartfile_lines(text, len, grants_tombs_line, t);
	grants_tombs_sort(t);
	return t->why;
}

int
grants_tombs_ends(const struct grants_tombs *t, const struct grant *g)
{
	struct grants_tomb	 k = { NULL, g->sandbox, g->host, g->port, 0,
				    0, 0 };
	struct grants_tomb	*e;

	if (t->n == 0 || (e = bsearch(&k, t->v, t->n, sizeof(*t->v),
	    grants_tomb_cmp)) == NULL)
		return 0;
	if (g->generation == GRANTS_GEN_NONE)
		return (json_int_t)g->granted <= e->granted_any;
	if (e->after != -1 && g->generation <= e->after)
		return 1;
	return (json_int_t)g->granted <= e->granted;
}
