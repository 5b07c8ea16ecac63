/* test_grants.c: the proxy's table of grants (egress-proxy/grants.c). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "execcred.h"
#include "grants.h"

#define T0	((time_t)1780272000)	/* 2026-06-01T00:00:00Z */
#define M0	((time_t)5000)		/* grants_clock() at a restore */

static void
test_fill(struct grant *g, const char *host, const char *run, long secs)
{
	memset(g, 0, sizeof(*g));
	snprintf(g->sandbox, sizeof(g->sandbox), "sbx_a");
	snprintf(g->host, sizeof(g->host), "%s", host);
	g->port = 443;
	snprintf(g->run, sizeof(g->run), "%s", run);
	snprintf(g->by, sizeof(g->by), "alice (uid 1000)");
	snprintf(g->rationale, sizeof(g->rationale), "the task needs it");
	g->granted = T0;
	g->expires = T0 + secs;
	g->deadline = T0 + secs;	/* the tests' clock reads as T0 */
}

static size_t	test_seen;

static void
test_count(const struct grant *g, void *arg)
{
	(void)g;
	(void)arg;
	test_seen++;
}

static void
test_table(void **state)
{
	struct grants	*t = grants_new();
	struct grant	 g;
	const char	*cause;

	(void)state;
	assert_non_null(t);
	test_fill(&g, "a.corp.test", "", 60);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	test_fill(&g, "b.corp.test", "run_x", 10);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	/* Any exec of the sandbox, until it expires; nobody else. */
	assert_non_null(grants_match(t, "sbx_a", "", "a.corp.test", 443,
	    T0 + 59));
	assert_non_null(grants_match(t, "sbx_a", "run_y", "a.corp.test", 443,
	    T0));
	assert_null(grants_match(t, "sbx_a", "", "a.corp.test", 443, T0 + 60));
	assert_null(grants_match(t, "sbx_b", "", "a.corp.test", 443, T0));
	assert_null(grants_match(t, NULL, "", "a.corp.test", 443, T0));
	assert_null(grants_match(t, "sbx_a", "", "a.corp.test", 80, T0));
	/* One exec's only. */
	assert_non_null(grants_match(t, "sbx_a", "run_x", "b.corp.test", 443,
	    T0));
	assert_null(grants_match(t, "sbx_a", "run_y", "b.corp.test", 443, T0));
	assert_null(grants_match(t, "sbx_a", "", "b.corp.test", 443, T0));
	/* Expiry removes what is due, and tells who asks. */
	test_seen = 0;
	assert_int_equal(grants_expire(t, T0 + 10, test_count, NULL), 1);
	assert_int_equal(test_seen, 1);
	assert_null(grants_match(t, "sbx_a", "run_x", "b.corp.test", 443, T0));
	assert_int_equal(grants_remove(t, "sbx_a", "a.corp.test", 443, NULL,
	    NULL), 1);
	assert_int_equal(grants_remove(t, "sbx_a", "a.corp.test", 443, NULL,
	    NULL), 0);
	grants_free(t);
}

static void
test_refused(void **state)
{
	struct grants	*t = grants_new();
	struct grant	 g;
	const char	*cause;

	(void)state;
	test_fill(&g, "A.corp.test", "", 60);		/* not normalized */
	assert_int_equal(grants_add(t, &g, &cause), -1);
	test_fill(&g, "10.0.0.1", "", 60);		/* an address */
	assert_int_equal(grants_add(t, &g, &cause), -1);
	test_fill(&g, "a.corp.test", "", 0);		/* no time */
	assert_int_equal(grants_add(t, &g, &cause), -1);
	test_fill(&g, "a.corp.test", "", GRANTS_SECS_MAX + 1);
	assert_int_equal(grants_add(t, &g, &cause), -1);
	assert_string_equal(cause, "a grant lasts from 1 second to 7 days");
	test_fill(&g, "a.corp.test", "run x", 60);	/* a bad run id */
	assert_int_equal(grants_add(t, &g, &cause), -1);
	test_fill(&g, "a.corp.test", "", 60);
	g.rationale[0] = '\0';
	assert_int_equal(grants_add(t, &g, &cause), -1);
	test_fill(&g, "a.corp.test", "", 60);
	snprintf(g.rationale, sizeof(g.rationale), "two\nlines");
	assert_int_equal(grants_add(t, &g, &cause), -1);
	test_fill(&g, "a.corp.test", "", 60);
	g.port = 0;
	assert_int_equal(grants_add(t, &g, &cause), -1);
	grants_free(t);
}

/* What is saved loads back the same; a second grant replaces the first. */
static void
test_json(void **state)
{
	struct grants	*t = grants_new(), *u = grants_new();
	struct grant	 g;
	json_t		*a, *b;
	const char	*cause;

	(void)state;
	test_fill(&g, "a.corp.test", "run_x", 60);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	test_fill(&g, "a.corp.test", "run_x", 120);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	a = grants_json(t, NULL);
	assert_int_equal(json_array_size(a), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    a, 0), "expires")), "2026-06-01T00:02:00Z");
	assert_int_equal(grants_load_json(u, a, T0, T0, NULL, NULL), 1);
	b = grants_json(u, "sbx_a");
	assert_true(json_equal(a, b));
	json_decref(b);
	b = grants_json(u, "sbx_b");
	assert_int_equal(json_array_size(b), 0);
	json_decref(a);
	json_decref(b);
	grants_free(t);
	grants_free(u);
}

static size_t	test_nrefused;

static void
test_restore_cb(const struct grant *g, const char *cause, void *arg)
{
	(void)g;
	(void)arg;
	if (cause != NULL)
		test_nrefused++;
}

/*
 * A saved grant given in the future, or ending more than 7 days from
 * the load, is refused and reported; one given before loads.
 */
static void
test_load_refuses(void **state)
{
	struct grants	*t = grants_new(), *u = grants_new();
	struct grant	 g;
	json_t		*a;
	const char	*cause;

	(void)state;
	test_fill(&g, "a.corp.test", "", 60);
	g.granted = T0 + 3600;
	g.expires = T0 + 7200;
	assert_int_equal(grants_add(t, &g, &cause), 0);
	test_fill(&g, "b.corp.test", "", 60);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	a = grants_json(t, NULL);
	test_nrefused = 0;
	assert_int_equal(grants_load_json(u, a, T0 + 1, T0 + 1,
	    test_restore_cb, NULL), 1);
	assert_int_equal(test_nrefused, 1);
	assert_null(grants_match(u, "sbx_a", "", "a.corp.test", 443,
	    T0 + 4000));
	assert_non_null(grants_match(u, "sbx_a", "", "b.corp.test", 443,
	    T0 + 1));
	json_decref(a);
	grants_free(t);
	grants_free(u);
}

/*
 * Expiry goes by grants_clock(), never the wall clock: a grant ends at its
 * deadline whatever the wall-clock times say, and one restored gets what
 * the wall clock left of it on the clock of the proxy that restores it.
 */
static void
test_clock(void **state)
{
	struct grants	*t = grants_new(), *u;
	struct grant	 g;
	json_t		*a;
	const char	*cause;

	(void)state;
	/* Given for 60 s at clock M0; the wall clock then goes back an hour:
	 * the record's expires is then 3660 s ahead, the grant still ends
	 * at M0 + 60. */
	test_fill(&g, "a.corp.test", "", 60);
	g.deadline = M0 + 60;
	assert_int_equal(grants_add(t, &g, &cause), 0);
	assert_non_null(grants_match(t, "sbx_a", "", "a.corp.test", 443,
	    M0 + 59));
	assert_null(grants_match(t, "sbx_a", "", "a.corp.test", 443, M0 + 60));
	assert_int_equal(grants_expire(t, M0 + 59, NULL, NULL), 0);
	assert_int_equal(grants_expire(t, M0 + 60, NULL, NULL), 1);
	/* Saved, then restored 20 s later (wall) at clock 7: 40 s left. */
	test_fill(&g, "a.corp.test", "", 60);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	a = grants_json(t, NULL);
	u = grants_new();
	assert_int_equal(grants_load_json(u, a, T0 + 20, 7, NULL, NULL), 1);
	assert_non_null(grants_match(u, "sbx_a", "", "a.corp.test", 443, 46));
	assert_null(grants_match(u, "sbx_a", "", "a.corp.test", 443, 47));
	grants_free(u);
	/* Restored with the wall clock set back before it was given:
	 * refused, it can't be made to last longer so. */
	u = grants_new();
	test_nrefused = 0;
	assert_int_equal(grants_load_json(u, a, T0 - 3600, 7,
	    test_restore_cb, NULL), 0);
	assert_int_equal(test_nrefused, 1);
	grants_free(u);
	/* Restored after it ended (wall): it ends at the first check. */
	u = grants_new();
	assert_int_equal(grants_load_json(u, a, T0 + 3600, 7, NULL, NULL), 1);
	assert_null(grants_match(u, "sbx_a", "", "a.corp.test", 443, 7));
	assert_int_equal(grants_expire(u, 7, NULL, NULL), 1);
	grants_free(u);
	json_decref(a);
	grants_free(t);
}

/* grants.json text as the proxy reads it at start. */
static void
test_text(void **state)
{
	struct grants	*u = grants_new();
	char		 err[256];
	const char	*ok = "[{\"sandbox\":\"sbx_a\",\"host\":\"a.corp.test\","
			    "\"port\":443,\"by\":\"alice (uid 1000)\","
			    "\"rationale\":\"r\",\"granted\":"
			    "\"2026-06-01T00:00:00Z\",\"expires\":"
			    "\"2026-06-01T00:01:00Z\"}]";

	(void)state;
	assert_int_equal(grants_load_text(u, ok, strlen(ok), T0, M0, NULL,
	    NULL, err, sizeof(err)), 1);
	assert_non_null(grants_match(u, "sbx_a", "", "a.corp.test", 443,
	    M0 + 59));
	assert_int_equal(grants_load_text(u, "{}", 2, T0, M0, NULL, NULL,
	    err, sizeof(err)), -1);
	assert_string_equal(err, "neither an array nor an object with "
	    "\"grants\", an array");
	assert_int_equal(grants_load_text(u, "{\"generation\":1,\"grants\":"
	    "{}}", 29, T0, M0, NULL, NULL, err, sizeof(err)), -1);
	assert_int_equal(grants_load_text(u, "7", 1, T0, M0, NULL, NULL,
	    err, sizeof(err)), -1);
	assert_int_equal(grants_load_text(u, "[1,", 3, T0, M0, NULL, NULL,
	    err, sizeof(err)), -1);
	assert_non_null(strstr(err, "line 1"));
	/* Entries of the wrong shape are refused one by one. */
	assert_int_equal(grants_load_text(u, "[1,{},[]]", 9, T0, M0, NULL,
	    NULL, err, sizeof(err)), 0);
	grants_free(u);
}

/*
 * The revokes of text, read into a table (grants_tombs_add): 1 when they
 * end g, 0 when not, -1 when text is damaged.
 */
static int
test_ends(const struct grant *g, const char *text, size_t len)
{
	struct grants_tombs	*t = grants_tombs_new();
	int			 r;

	assert_non_null(t);
	r = grants_tombs_add(t, text, len) != NULL ? -1 :
	    grants_tombs_ends(t, g);
	grants_tombs_free(t);
	return r;
}

/*
 * The revokes file: a line ends the grants of its sandbox, host and port
 * read from a grants.json saved at or before the save it postdates
 * ("after"); one saved after it, or a line of another grant, does not.
 */
static void
test_tomb(void **state)
{
	struct grant	 g, other;
	char		*line;

	(void)state;
	test_fill(&g, "a.corp.test", "", 60);
	test_fill(&other, "b.corp.test", "", 60);
	g.generation = other.generation = 3;
	assert_non_null(line = grants_tomb_line(&g, T0 + 5, 3));
	assert_int_equal(line[0], '\n');
	assert_int_equal(line[strlen(line) - 1], '\n');
	assert_non_null(strstr(line, "\"after\":3"));
	assert_int_equal(test_ends(&g, line, strlen(line)), 1);
	assert_int_equal(test_ends(&other, line, strlen(line)), 0);
	/* Saved after the revoke: a grant given again, not ended by it. */
	g.generation = 4;
	assert_int_equal(test_ends(&g, line, strlen(line)), 0);
	g.generation = 3;
	g.port = 80;
	assert_int_equal(test_ends(&g, line, strlen(line)), 0);
	assert_int_equal(test_ends(&g, "", 0), 0);
	assert_int_equal(test_ends(&g, "  \n\n   \n", 8), 0);	/* padding */
	free(line);
}

/*
 * A damaged line may be the revoke of any grant (atk15r21 F3): the
 * torn end of a crash, a NUL, a line that is no revoke, a key twice,
 * wherever it is, makes the text unusable, and says why.
 */
static void
test_tomb_damage(void **state)
{
	struct grants_tombs	*t;
	struct grant		 g;
	char			*line, text[1024];
	size_t			 n;

	(void)state;
	test_fill(&g, "a.corp.test", "", 60);
	assert_non_null(line = grants_tomb_line(&g, T0 + 5, 1));
	snprintf(text, sizeof(text), "{\"sandbox\":\"sb%s", line);
	assert_int_equal(test_ends(&g, text, strlen(text)), -1);
	snprintf(text, sizeof(text), "%s", line);
	assert_int_equal(test_ends(&g, text, strlen(text) - 3), -1);
	assert_int_equal(test_ends(&g, "[1]\n{}\n", 7), -1);
	n = (size_t)snprintf(text, sizeof(text), "%s%s", line, line);
	text[n / 2 + 4] = '\0';
	assert_int_equal(test_ends(&g, text, n), -1);
	snprintf(text, sizeof(text), "%.*s,\"port\":80}\n",
	    (int)strlen(line) - 2, line);
	assert_non_null(t = grants_tombs_new());
	assert_string_equal(grants_tombs_add(t, text, strlen(text)),
	    "a line that is not one of its revokes");
	grants_tombs_free(t);
	assert_non_null(t = grants_tombs_new());
	assert_string_equal(grants_tombs_add(t, line, strlen(line) - 1),
	    "a last line with no newline");
	grants_tombs_free(t);
	free(line);
}

/*
 * The table (atk35a F2: the file was walked again for each grant): the
 * revokes of a destination kept as the newest save they postdate, across
 * lines and the texts added (the file loaded's and the replica's own),
 * one entry each, looked up by sandbox, host and port; an older proxy's
 * line (no "after") by the newest grant it ended.
 */
static void
test_tombs_table(void **state)
{
	struct grants_tombs	*t;
	struct grant		 g, h;
	char			*a, *b, *c, text[1024];

	(void)state;
	test_fill(&g, "a.corp.test", "", 60);
	test_fill(&h, "a.corp.test", "", 60);
	snprintf(h.sandbox, sizeof(h.sandbox), "sbx_b");
	h.generation = 1;
	assert_non_null(a = grants_tomb_line(&g, T0 + 5, 5));
	assert_non_null(b = grants_tomb_line(&g, T0 + 105, 100));
	assert_non_null(c = grants_tomb_line(&g, T0 + 55, 50));
	assert_non_null(t = grants_tombs_new());
	snprintf(text, sizeof(text), "%s%s", a, b);
	assert_null(grants_tombs_add(t, text, strlen(text)));
	assert_null(grants_tombs_add(t, c, strlen(c)));	/* older: kept */
	assert_int_equal(grants_tombs_count(t), 1);
	assert_int_equal(grants_tombs_after(t), 100);
	g.generation = 100;
	assert_int_equal(grants_tombs_ends(t, &g), 1);
	g.generation = 101;
	assert_int_equal(grants_tombs_ends(t, &g), 0);
	assert_int_equal(grants_tombs_ends(t, &h), 0);	/* another sandbox */
	h.granted = T0 - 50;
	assert_null(grants_tombs_add(t, a, strlen(a)));	/* again */
	snprintf(text, sizeof(text), "\n{\"sandbox\":\"sbx_b\",\"host\":"
	    "\"a.corp.test\",\"port\":443,\"revoked\":%lld}\n",
	    (long long)T0);
	assert_null(grants_tombs_add(t, text, strlen(text)));
	assert_int_equal(grants_tombs_count(t), 2);
	assert_int_equal(grants_tombs_ends(t, &h), 1);
	g.generation = 100;
	assert_int_equal(grants_tombs_ends(t, &g), 1);
	h.port = 80;
	assert_int_equal(grants_tombs_ends(t, &h), 0);
	assert_int_equal(grants_tombs_after(t), 100);
	grants_tombs_free(t);
	free(a);
	free(b);
	free(c);
}

/*
 * An older proxy's lines (no "after"): a wall clock stepped back between
 * grant and revoke made the revoke time earlier than the grant's, so
 * they name the grants removed by their own granted time (atk1921c F8),
 * or have only the revoke's time.
 */
static void
test_tomb_old_lines(void **state)
{
	struct grant	 g;
	char		 text[1024];

	(void)state;
	test_fill(&g, "a.corp.test", "", 60);
	g.generation = 7;	/* any: these lines do not say */
	snprintf(text, sizeof(text), "\n{\"sandbox\":\"%s\",\"host\":"
	    "\"%s\",\"port\":%d,\"revoked\":%lld,\"granted\":%lld}\n",
	    g.sandbox, g.host, g.port, (long long)g.granted - 20,
	    (long long)g.granted);
	assert_int_equal(test_ends(&g, text, strlen(text)), 1);
	g.granted += 1;		/* given again since: not ended */
	assert_int_equal(test_ends(&g, text, strlen(text)), 0);
	g.granted -= 1;
	snprintf(text, sizeof(text), "\n{\"sandbox\":\"%s\",\"host\":"
	    "\"%s\",\"port\":%d,\"revoked\":%lld}\n", g.sandbox, g.host,
	    g.port, (long long)g.granted);
	assert_int_equal(test_ends(&g, text, strlen(text)), 1);
	g.granted += 1;
	assert_int_equal(test_ends(&g, text, strlen(text)), 0);
}

/* The grant read from grants.json text (test_restore_grant). */
static struct grant	test_loaded;
static const char	*test_loaded_cause;

static void
test_restore_grant(const struct grant *g, const char *cause, void *arg)
{
	(void)arg;
	test_loaded = *g;
	test_loaded_cause = cause;
}

/*
 * grants.json holding sbx_a's grant of a.corp.test:443, granted at
 * T0 + granted, in a save of generation gen ({"generation": gen,
 * "grants": [...]}; NULL: a bare array, an older proxy's), read back as
 * a start reads it into test_loaded: 0, or -1 when it was refused.
 */
static int
test_load_one(const char *gen, long granted)
{
	struct grants	*u = grants_new();
	char		 text[1024], at[32], end[32], err[256];
	long		 n;

	grants_time(T0 + granted, at, sizeof(at));
	grants_time(T0 + granted + 3600, end, sizeof(end));
	snprintf(text, sizeof(text), "%s%s%s[{\"sandbox\":\"sbx_a\","
	    "\"host\":\"a.corp.test\",\"port\":443,\"by\":\"root\","
	    "\"rationale\":\"r\",\"granted\":\"%s\",\"expires\":\"%s\"}]%s",
	    gen ? "{\"generation\":" : "", gen ? gen : "",
	    gen ? ",\"grants\":" : "", at, end, gen ? "}" : "");
	test_loaded_cause = "not called";
	n = grants_load_text(u, text, strlen(text), T0 + 60, M0,
	    test_restore_grant, NULL, err, sizeof(err));
	assert_int_equal(n, test_loaded_cause == NULL ? 1 : 0);
	grants_free(u);
	return test_loaded_cause == NULL ? 0 : -1;
}

/* A revoke line of that grant's destination, as a proxy writes it. */
static const char *
test_line(char *buf, size_t size, long granted, const char *after)
{
	snprintf(buf, size, "\n{\"sandbox\":\"sbx_a\",\"host\":"
	    "\"a.corp.test\",\"port\":443,\"revoked\":%lld,\"granted\":%lld"
	    "%s%s}\n", (long long)T0 + granted, (long long)T0 + granted,
	    after ? ",\"after\":" : "", after ? after : "");
	return buf;
}

/*
 * atk35d F1: saved at T0 + 5 in generation 7; the wall clock stepped
 * back 5 s, the grant was given again (at T0, unsaved: the folder was
 * full) and revoked; the line's "granted" (T0) was older than the saved
 * grant's, so a restart brought it back. The rule is by generation,
 * whatever the clocks: grants.json of the generation the revoke
 * postdates (equal) or older is ended; one saved after the revoke
 * (newer: the emptying of the revokes file did not happen) is not,
 * whatever the times say.
 */
static void
test_restore_generation(void **state)
{
	char	line[512];

	(void)state;
	assert_int_equal(test_load_one("7", 5), 0);
	assert_int_equal(test_loaded.generation, 7);
	test_line(line, sizeof(line), 0, "7");		/* equal */
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 1);
	test_line(line, sizeof(line), 0, "9");		/* grants.json older */
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 1);
	/* grants.json newer: the line is stale, even if its time is later. */
	test_line(line, sizeof(line), 30, "6");
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 0);
	test_line(line, sizeof(line), 30, "0");
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 0);
	/*
	 * atk36b F3: a grants.json with no number (an older proxy's, after a
	 * roll back): by the granted time against every line, as that proxy
	 * judged them; its grant given again after the line stays.
	 */
	assert_int_equal(test_load_one(NULL, 5), 0);
	assert_int_equal(test_loaded.generation, GRANTS_GEN_NONE);
	test_line(line, sizeof(line), 5, "0");
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 1);
	test_line(line, sizeof(line), 4, "99");
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 0);
	test_line(line, sizeof(line), 4, NULL);
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 0);
	/* A line without "after" (an older proxy's): by the grant's time. */
	assert_int_equal(test_load_one("7", 5), 0);
	test_line(line, sizeof(line), 4, NULL);
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 0);
	test_line(line, sizeof(line), 5, NULL);
	assert_int_equal(test_ends(&test_loaded, line, strlen(line)), 1);
}

/*
 * A damaged generation is damage as any other field: in grants.json each
 * grant is refused (named: a revoke could not be weighed against it),
 * as in a file with "grants" and no number; in a revoke line "after"
 * makes the revokes file unusable (no grant restored).
 */
static void
test_generation_damage(void **state)
{
	static const char	*bad[] = { "-1", "1.5", "7.0", "\"7\"", "null",
				    "true", "[7]", "9007199254740992",
				    "9223372036854775807" };
	static const char	 nonum[] = "{\"grants\":[{\"sandbox\":"
				    "\"sbx_a\",\"host\":\"a.corp.test\","
				    "\"port\":443,\"by\":\"root\","
				    "\"rationale\":\"r\",\"granted\":"
				    "\"2026-06-01T00:00:00Z\",\"expires\":"
				    "\"2026-06-01T01:00:00Z\"}]}";
	struct grants		*u;
	char			 line[512], err[256];
	size_t			 i;

	(void)state;
	assert_int_equal(test_load_one("9007199254740991", 5), 0);
	assert_int_equal(test_load_one("1,\"x\":1", 5), 0);	/* more: ok */
	assert_int_equal(test_load_one("1,\"generation\":2", 5), 0);
	assert_int_equal(test_load_one("null", 5), -1);
	assert_string_equal(test_loaded_cause, "the file's generation is not "
	    "a whole number from 0 to 2^53 - 1");
	/* "grants" and no number: as damaged */
	assert_non_null(u = grants_new());
	test_loaded_cause = NULL;
	assert_int_equal(grants_load_text(u, nonum, strlen(nonum), T0 + 60,
	    M0, test_restore_grant, NULL, err, sizeof(err)), 0);
	assert_non_null(test_loaded_cause);
	grants_free(u);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(test_load_one(bad[i], 5), -1);
		assert_int_equal(test_load_one("1", 5), 0);
		test_line(line, sizeof(line), 5, bad[i]);
		assert_int_equal(test_ends(&test_loaded, line, strlen(line)),
		    -1);
	}
}

/*
 * grants.json as saved: {"generation", "grants"}, the number first, read
 * back with it; none is saved above GRANTS_GEN_MAX (atk36b F2: 2^53 was
 * written, then refused with every grant); grants_tombs_after the highest
 * a revokes text names.
 */
static void
test_save_generation(void **state)
{
	struct grants		*t = grants_new(), *u = grants_new();
	struct grants_tombs	*tb = grants_tombs_new();
	struct grant		 g;
	json_t			*a;
	const char		*cause;
	char			 line[512], *text, err[256];

	(void)state;
	test_fill(&g, "a.corp.test", "", 60);
	assert_int_equal(grants_add(t, &g, &cause), 0);
	assert_non_null(a = grants_save_json(t, 42));
	assert_non_null(text = json_dumps(a, JSON_COMPACT));
	assert_memory_equal(text, "{\"generation\":42,\"grants\":[{", 28);
	assert_int_equal(grants_load_text(u, text, strlen(text), T0 + 1, M0,
	    test_restore_grant, NULL, err, sizeof(err)), 1);
	assert_int_equal(test_loaded.generation, 42);
	free(text);
	json_decref(a);
	assert_non_null(a = grants_save_json(t, GRANTS_GEN_MAX));
	json_decref(a);
	assert_null(grants_save_json(t, GRANTS_GEN_MAX + 1));
	assert_null(grants_save_json(t, -1));
	assert_int_equal(grants_tombs_after(tb), 0);
	test_line(line, sizeof(line), 0, NULL);
	assert_null(grants_tombs_add(tb, line, strlen(line)));
	assert_int_equal(grants_tombs_after(tb), 0);
	test_line(line, sizeof(line), 0, "12");
	assert_null(grants_tombs_add(tb, line, strlen(line)));
	test_line(line, sizeof(line), 0, "3");
	assert_null(grants_tombs_add(tb, line, strlen(line)));
	assert_int_equal(grants_tombs_after(tb), 12);
	grants_tombs_free(tb);
	grants_free(t);
	grants_free(u);
}

/*
 * atk36b F1: the number a grants.json holds, a save of no grants too, as
 * far as it can be read (the counter at start must not go below it): a
 * file torn after the number still gives it; an older proxy's array, or
 * text that does not start as the proxy writes, none (0).
 */
static void
test_text_generation(void **state)
{
	static const struct {
		const char	*text;
		json_int_t	 gen;
	} c[] = {
		{ "{\"generation\":5,\"grants\":[]}", 5 },
		{ " { \"grants\": [], \"generation\": 6 } ", 6 },
		{ "{\"generation\":7,\"grants\":[{\"sandb", 7 },
		{ "{\"generation\":9007199254740991,\"gr", GRANTS_GEN_MAX },
		{ "{\"generation\":9007199254740992,\"gr", 0 },
		{ "{\"generation\":12345678901234567890", 0 },
		{ "{\"generation\":", 0 },
		/* torn inside the number (13 cut to 1): no number, atk36d F1 */
		{ "{\"generation\":1", 0 },
		{ "{\"generation\":13", 0 },
		{ "{\"generation\":-3,", 0 },
		{ "{\"generation\":\"5\",\"grants\":[]}", 0 },
		{ "[]", 0 },
		{ "", 0 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++)
		assert_int_equal(grants_text_generation(c[i].text,
		    strlen(c[i].text)), c[i].gen);
}

static char	test_cause[128];
static char	test_named[512];	/* sandbox, host and run of it */

static void
test_cause_cb(const struct grant *g, const char *cause, void *arg)
{
	(void)arg;
	snprintf(test_cause, sizeof(test_cause), "%s", cause ? cause : "");
	snprintf(test_named, sizeof(test_named), "%s %s %s", g->sandbox,
	    g->host, g->run);
}

/*
 * One saved grant whose member key is value (the rest fit): what
 * grants_load_text takes of it, the cause in test_cause, and how many
 * grants the table then lists.
 */
static long
test_load_member(const char *key, const char *value, size_t *listed)
{
	struct grants	*u = grants_new();
	json_t		*o, *a;
	char		*text, err[256];
	long		 n;

	o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "sandbox",
	    "sbx_a", "host", "a.corp.test", "port", 443, "by",
	    "alice (uid 1000)", "rationale", "the task needs it", "granted",
	    "2026-06-01T00:00:00Z", "expires", "2026-06-01T01:00:00Z");
	assert_non_null(o);
	assert_int_equal(json_object_set_new(o, key, json_string(value)), 0);
	a = json_pack("[o]", o);
	text = json_dumps(a, JSON_COMPACT);
	assert_non_null(text);
	json_decref(a);
	test_cause[0] = '\0';
	n = grants_load_text(u, text, strlen(text), T0 + 60, M0,
	    test_cause_cb, NULL, err, sizeof(err));
	a = grants_json(u, NULL);
	*listed = json_array_size(a);
	json_decref(a);
	free(text);
	grants_free(u);
	return n;
}

/*
 * A saved port out of range, or no whole number, is refused, the cause
 * naming it as saved (atk41g2: the warning showed port 0, what the grant
 * held once refused). Never narrowed into range.
 */
static void
test_load_port(void **state)
{
	static const struct {
		const char	*json;
		const char	*cause;
	} t[] = {
		{ "70000", "port 70000 is not from 1 to 65535" },
		{ "0", "port 0 is not from 1 to 65535" },
		{ "-443", "port -443 is not from 1 to 65535" },
		{ "\"443\"", "port \"443\" is not from 1 to 65535" },
		{ "4.5", "port 4.5 is not from 1 to 65535" },
		{ NULL, "port is missing" },
	};
	struct grants	*u;
	char		 text[512], err[256];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		u = grants_new();
		snprintf(text, sizeof(text), "[{\"sandbox\":\"sbx_a\","
		    "\"host\":\"a.corp.test\",%s%s%s\"by\":\"alice\","
		    "\"rationale\":\"the task needs it\",\"granted\":"
		    "\"2026-06-01T00:00:00Z\",\"expires\":"
		    "\"2026-06-01T01:00:00Z\"}]", t[i].json ? "\"port\":" : "",
		    t[i].json ? t[i].json : "", t[i].json ? "," : "");
		test_cause[0] = '\0';
		assert_int_equal(grants_load_text(u, text, strlen(text),
		    T0 + 60, M0, test_cause_cb, NULL, err, sizeof(err)), 0);
		assert_string_equal(test_cause, t[i].cause);
		grants_free(u);
	}
}

/*
 * A saved member longer than its field is refused, naming the member,
 * never cut to fit: a "by" cut inside a character could not be listed
 * or saved again (the fuzz target's finding), a cut sandbox or run_id
 * names another one. One that fits exactly is taken and listed.
 */
static void
test_load_too_long(void **state)
{
	static const struct {
		const char	*key;
		size_t		 max;
	} m[] = {
		{ "sandbox", 64 },
		{ "run_id", EXECCRED_RUN_MAX },
		{ "by", GRANTS_BY_MAX },
		{ "rationale", GRANTS_TEXT_MAX },
	};
	char	v[GRANTS_TEXT_MAX + 8];
	size_t	i, listed;

	(void)state;
	for (i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
		memset(v, 'a', m[i].max);
		v[m[i].max] = '\0';
		assert_int_equal(test_load_member(m[i].key, v, &listed), 1);
		assert_int_equal(listed, 1);
		/* one byte over */
		v[m[i].max] = 'a';
		v[m[i].max + 1] = '\0';
		assert_int_equal(test_load_member(m[i].key, v, &listed), 0);
		assert_int_equal(listed, 0);
		assert_non_null(strstr(test_cause, m[i].key));
		/* what a warning names is no cut value (atk41g F4) */
		assert_null(strstr(test_named, "aaaa"));
		/* a two-byte character across the end */
		v[m[i].max - 1] = '\xc3';
		v[m[i].max] = '\xa9';
		if (strcmp(m[i].key, "by") == 0 ||
		    strcmp(m[i].key, "rationale") == 0) {
			assert_int_equal(test_load_member(m[i].key, v,
			    &listed), 0);
			assert_int_equal(listed, 0);
			assert_non_null(strstr(test_cause, m[i].key));
		}
	}
}

/*
 * A saved port outside int is refused, never narrowed into range
 * (atk41g F2: 4294967376 was restored as port 80); who gave it is one
 * line without control bytes, so its save never grows by escapes.
 */
static void
test_load_odd_members(void **state)
{
	static const char *const bad[] = {
	    "{\"port\":4294967376}", "{\"port\":-4294967216}",
	    "{\"by\":\"alice\\u0001\"}", "{\"by\":\"al\\u007fice\"}",
	};
	struct grants	*u;
	json_t		*o, *patch;
	char		*text, err[256];
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		u = grants_new();
		o = json_pack("{s:s, s:s, s:i, s:s, s:s, s:s, s:s}", "sandbox",
		    "sbx_a", "host", "a.corp.test", "port", 80, "by", "alice",
		    "rationale", "the task needs it", "granted",
		    "2026-06-01T00:00:00Z", "expires", "2026-06-01T01:00:00Z");
		patch = json_loads(bad[i], 0, NULL);
		assert_non_null(patch);
		assert_int_equal(json_object_update(o, patch), 0);
		json_decref(patch);
		patch = json_pack("[o]", o);
		text = json_dumps(patch, JSON_COMPACT);
		assert_non_null(text);
		test_cause[0] = '\0';
		assert_int_equal(grants_load_text(u, text, strlen(text),
		    T0 + 60, M0, test_cause_cb, NULL, err, sizeof(err)), 0);
		assert_string_not_equal(test_cause, "");
		assert_null(grants_match(u, "sbx_a", "", "a.corp.test", 80,
		    M0));
		json_decref(patch);
		free(text);
		grants_free(u);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_table),
		cmocka_unit_test(test_refused),
		cmocka_unit_test(test_json),
		cmocka_unit_test(test_load_refuses),
		cmocka_unit_test(test_clock),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_tomb),
		cmocka_unit_test(test_tomb_damage),
		cmocka_unit_test(test_tombs_table),
		cmocka_unit_test(test_tomb_old_lines),
		cmocka_unit_test(test_restore_generation),
		cmocka_unit_test(test_generation_damage),
		cmocka_unit_test(test_save_generation),
		cmocka_unit_test(test_text_generation),
		cmocka_unit_test(test_load_too_long),
		cmocka_unit_test(test_load_port),
		cmocka_unit_test(test_load_odd_members),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
