/*
 * test_pending.c: `sandgate pending` merging the blocks of several proxy
 * replicas (pending_record): one entry per sandbox, destination and
 * reason, attempts summed, first the earliest, last the latest, run ids
 * joined; records that are none left out.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>
#include <jansson.h>

#include "pending.h"

#define SBX	"sbx_0123456789abcdef01234567"

static json_t *
rec(const char *sandbox, const char *host, int port, const char *reason,
    long long attempts, const char *first, const char *last,
    const char *run)
{
	return json_pack("{s:s, s:s, s:i, s:s, s:I, s:s, s:s, s:s?, s:s}",
	    "sandbox", sandbox, "host", host, "port", port, "reason", reason,
	    "attempts", (json_int_t)attempts, "first", first, "last", last,
	    "run_id", run, "message", "network blocked by policy");
}

static void
add(struct pending *p, json_t *r)
{
	(void)pending_record(p, r);
	json_decref(r);
}

static const struct pending_dest *
find(const struct pending *p, const char *host, const char *reason)
{
	size_t	i;

	for (i = 0; i < p->n; i++)
		if (strcmp(p->v[i].host, host) == 0 &&
		    strcmp(p->v[i].reason, reason) == 0)
			return &p->v[i];
	return NULL;
}

/* One destination blocked through three replicas: one entry. */
static void
merge_three_replicas(void **state)
{
	struct pending			 p;
	const struct pending_dest	*d;

	(void)state;
	pending_init(&p, NULL);
	/* replica 1 */
	add(&p, rec(SBX, "a.blocked.test", 443, "not_allowlisted", 3,
	    "2026-12-02T08:00:02.000000Z", "2026-12-02T08:00:05.000000Z",
	    "run_aaaaaaaaaaaaaaaaaaaaaaaa"));
	/* replica 2: earlier first, same destination */
	add(&p, rec(SBX, "a.blocked.test", 443, "not_allowlisted", 2,
	    "2026-12-02T08:00:01.000000Z", "2026-12-02T08:00:03.000000Z",
	    NULL));
	/* replica 3: later last, another run */
	add(&p, rec(SBX, "a.blocked.test", 443, "not_allowlisted", 4,
	    "2026-12-02T08:00:04.000000Z", "2026-12-02T08:00:09.000000Z",
	    "run_bbbbbbbbbbbbbbbbbbbbbbbb"));
	assert_int_equal(p.n, 1);
	d = find(&p, "a.blocked.test", "not_allowlisted");
	assert_non_null(d);
	assert_int_equal(d->attempts, 9);
	assert_string_equal(d->first, "2026-12-02T08:00:01.000000Z");
	assert_string_equal(d->last, "2026-12-02T08:00:09.000000Z");
	assert_int_equal(d->nruns, 2);
	assert_string_equal(d->runs[0], "run_aaaaaaaaaaaaaaaaaaaaaaaa");
	assert_string_equal(d->runs[1], "run_bbbbbbbbbbbbbbbbbbbbbbbb");
	pending_release(&p);
}

/* Another reason, port or sandbox is another entry. */
static void
merge_keeps_reasons(void **state)
{
	struct pending			 p;
	const struct pending_dest	*d;

	(void)state;
	pending_init(&p, NULL);
	add(&p, rec(SBX, "b.test", 443, "not_allowlisted", 1,
	    "2026-12-02T08:00:01.000000Z", "2026-12-02T08:00:01.000000Z",
	    NULL));
	add(&p, rec(SBX, "b.test", 443, "token_other_sandbox", 2,
	    "2026-12-02T08:00:02.000000Z", "2026-12-02T08:00:02.000000Z",
	    NULL));
	add(&p, rec(SBX, "b.test", 80, "not_allowlisted", 1,
	    "2026-12-02T08:00:03.000000Z", "2026-12-02T08:00:03.000000Z",
	    NULL));
	add(&p, rec("sbx_other", "b.test", 443, "not_allowlisted", 1,
	    "2026-12-02T08:00:04.000000Z", "2026-12-02T08:00:04.000000Z",
	    NULL));
	assert_int_equal(p.n, 4);
	d = find(&p, "b.test", "token_other_sandbox");
	assert_non_null(d);
	assert_int_equal(d->attempts, 2);
	pending_release(&p);
}

/* The ID filter holds; what is no record is left out. */
static void
merge_filters_and_refuses(void **state)
{
	struct pending	 p;
	json_t		*bad;

	(void)state;
	pending_init(&p, SBX);
	add(&p, rec("sbx_other", "c.test", 443, "not_allowlisted", 1,
	    "2026-12-02T08:00:01.000000Z", "2026-12-02T08:00:01.000000Z",
	    NULL));
	add(&p, rec(SBX, "C.TEST\n", 443, "not_allowlisted", 1,
	    "2026-12-02T08:00:01.000000Z", "2026-12-02T08:00:01.000000Z",
	    NULL));
	add(&p, rec(SBX, "c.test", 443, "no_such_reason", 1,
	    "2026-12-02T08:00:01.000000Z", "2026-12-02T08:00:01.000000Z",
	    NULL));
	add(&p, rec(SBX, "c.test", 443, "not_allowlisted", 0,
	    "2026-12-02T08:00:01.000000Z", "2026-12-02T08:00:01.000000Z",
	    NULL));
	bad = json_pack("{s:s, s:s}", "host", "c.test", "reason",
	    "not_allowlisted");
	add(&p, bad);
	assert_int_equal(p.n, 0);
	pending_release(&p);
}

#define T1	"2026-12-02T08:00:01.000000Z"

/* A record of one sandbox and host at T1. */
static json_t *
at1(const char *sandbox, const char *host, long long attempts,
    const char *first)
{
	return rec(sandbox, host, 443, "not_allowlisted", attempts,
	    first ? first : T1, T1, NULL);
}

/* A replica's id with terminal escapes is no record. */
static void
merge_refuses_escapes(void **state)
{
	struct pending	p;

	(void)state;
	pending_init(&p, NULL);
	add(&p, at1("evil\x1b]0;PWNED\x07\x1b[2J", "x.test", 1, NULL));
	add(&p, at1("sbx a", "x.test", 1, NULL));
	add(&p, at1(SBX, "x.test", 1, "2026-12-02T08:00:01\x1b[2J"));
	assert_int_equal(p.n, 1);
	assert_string_equal(p.v[0].first, "");
	pending_release(&p);
}

/* Attempts near the top of the range saturate, never wrap. */
static void
merge_saturates(void **state)
{
	struct pending	p;

	(void)state;
	pending_init(&p, NULL);
	add(&p, at1(SBX, "x.test", 3, NULL));
	add(&p, at1(SBX, "x.test", INT64_MAX, NULL));
	add(&p, at1(SBX, "x.test", INT64_MAX, NULL));
	assert_int_equal(p.n, 1);
	assert_true(p.v[0].attempts == INT64_MAX);
	pending_release(&p);
}

/* A replica that floods the table leaves the next its share. */
static void
merge_fair_share(void **state)
{
	struct pending	p;
	char		host[64];
	int		i;

	(void)state;
	pending_init(&p, NULL);
	pending_source(&p, PENDING_DESTS_MAX / 2);
	for (i = 0; i < PENDING_DESTS_MAX + 10; i++) {
		snprintf(host, sizeof(host), "f%d.test", i);
		add(&p, at1("sbxZ", host, 1, NULL));
	}
	assert_int_equal(p.n, PENDING_DESTS_MAX / 2);
	assert_int_equal(p.src_dropped, PENDING_DESTS_MAX / 2 + 10);
	pending_source(&p, PENDING_DESTS_MAX / 2);
	add(&p, at1(SBX, "real.test", 1, NULL));
	assert_non_null(find(&p, "real.test", "not_allowlisted"));
	assert_int_equal(p.src_dropped, 0);
	assert_int_equal(p.dropped, PENDING_DESTS_MAX / 2 + 10);
	pending_release(&p);
}

/*
 * Following (pending_evict): a full table takes a new destination in the
 * place of the one last attempted longest ago, so a follower never goes
 * silent; without it the new one is dropped (what a log read reports).
 */
static void
full_table_evicts_when_following(void **state)
{
	struct pending			 p;
	const struct pending_dest	*d;
	char				 host[64], ts[64];
	int				 i, isnew;
	json_t				*ev;

	(void)state;
	pending_init(&p, NULL);
	for (i = 0; i < PENDING_DESTS_MAX; i++) {
		snprintf(host, sizeof(host), "f%d.test", i);
		snprintf(ts, sizeof(ts), "2026-12-01T%02d:%02d:%02d.000000Z",
		    10 + i / 3600, i / 60 % 60, i % 60);
		add(&p, rec("sbxZ", host, 443, "not_allowlisted", 1, ts, ts,
		    NULL));
	}
	add(&p, at1(SBX, "lost.test", 1, NULL));
	assert_null(find(&p, "lost.test", "not_allowlisted"));
	assert_int_equal(p.dropped, 1);
	pending_evict(&p);
	ev = json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "event",
	    "egress.blocked", "sandbox", SBX, "host", "victim.test", "port",
	    443, "reason", "not_allowlisted", "ts",
	    "2026-12-01T20:00:00.000000Z");
	d = pending_event(&p, ev, &isnew);
	json_decref(ev);
	assert_non_null(d);
	assert_true(isnew);
	assert_string_equal(d->host, "victim.test");
	assert_int_equal(p.n, PENDING_DESTS_MAX);
	assert_int_equal(p.evicted, 1);
	assert_null(find(&p, "f0.test", "not_allowlisted"));	/* oldest */
	assert_non_null(find(&p, "f1.test", "not_allowlisted"));
	pending_release(&p);
}

/* An egress.blocked event of host at second i of the day. */
static json_t *
blocked(const char *host, int i)
{
	char	ts[64];

	snprintf(ts, sizeof(ts), "2026-12-01T%02d:%02d:%02d.000000Z",
	    i / 3600 % 24, i / 60 % 60, i % 60);
	return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "event",
	    "egress.blocked", "sandbox", SBX, "host", host, "port", 443,
	    "reason", "not_allowlisted", "ts", ts);
}

/*
 * A full table, then many repeats of its last destination: each event
 * is found by its hash, not by comparing it with every entry (atk1921
 * F3: 16384 destinations and 100000 repeats took 17.5 s; now a few
 * hundredths). The bound is CPU time, far above the hashed cost and far
 * below the linear one.
 */
static void
full_table_lookup_is_not_linear(void **state)
{
	struct pending	 p;
	char		 host[64];
	clock_t		 t0;
	json_t		*ev;
	int		 i, isnew;

	(void)state;
	pending_init(&p, NULL);
	for (i = 0; i < PENDING_DESTS_MAX; i++) {
		snprintf(host, sizeof(host), "h%d.flood.test", i);
		ev = blocked(host, i);
		(void)pending_event(&p, ev, &isnew);
		json_decref(ev);
	}
	assert_int_equal(p.n, PENDING_DESTS_MAX);
	ev = blocked(host, 1);
	t0 = clock();
	for (i = 0; i < 200000; i++)
		assert_non_null(pending_event(&p, ev, &isnew));
	json_decref(ev);
	if (clock() - t0 > 2 * CLOCKS_PER_SEC)
		fail_msg("200000 repeats over %d entries took %.1f s of CPU",
		    PENDING_DESTS_MAX, (double)(clock() - t0) / CLOCKS_PER_SEC);
	assert_int_equal(p.v[PENDING_DESTS_MAX - 1].attempts, 200001);
	pending_release(&p);
}

/* The unkeyed hash pending.c had (FNV-1a), to craft its collisions. */
static uint32_t
fnv_key(const char *sandbox, const char *host, int port, const char *reason)
{
	const char	*parts[3] = { sandbox, host, reason };
	uint32_t	 h = 2166136261u;
	const char	*c;
	int		 i;

	for (i = 0; i < 3; i++) {
		for (c = parts[i]; *c != '\0'; c++)
			h = (h ^ (unsigned char)*c) * 16777619u;
		h = (h ^ 0xff) * 16777619u;
	}
	h = (h ^ (uint32_t)(port & 0xff)) * 16777619u;
	return (h ^ (uint32_t)(port >> 8)) * 16777619u;
}

static json_t *
blocked_port(const char *host, int port)
{
	return json_pack("{s:s, s:s, s:s, s:i, s:s, s:s}", "event",
	    "egress.blocked", "sandbox", SBX, "host", host, "port", port,
	    "reason", "not_allowlisted", "ts", "2026-12-01T00:00:00.000000Z");
}

/*
 * A sandbox picks its destinations: with an unkeyed hash it could pick,
 * for each host, the port that lands in one slot (atk1921c F7), so that
 * the whole table is one run and every lookup scans it. The hash is now
 * keyed per process: the crafted keys spread, and lookups stay cheap.
 */
static void
crafted_keys_do_not_collide(void **state)
{
	struct pending	 p;
	char		 host[64];
	clock_t		 t0;
	json_t		*ev;
	int		 i, port, isnew, last = 0;

	(void)state;
	pending_init(&p, NULL);
	for (i = 0; p.n < PENDING_DESTS_MAX; i++) {
		snprintf(host, sizeof(host), "c%d.flood.test", i);
		for (port = 1; port < 65536; port++)
			if ((fnv_key(SBX, host, port, "not_allowlisted") &
			    (PENDING_SLOTS - 1)) == 4660)
				break;
		if (port == 65536)
			continue;
		ev = blocked_port(host, port);
		(void)pending_event(&p, ev, &isnew);
		json_decref(ev);
		last = port;
	}
	ev = blocked_port(host, last);
	t0 = clock();
	for (i = 0; i < 100000; i++)
		assert_non_null(pending_event(&p, ev, &isnew));
	json_decref(ev);
	if (clock() - t0 > 2 * CLOCKS_PER_SEC)
		fail_msg("100000 repeats over %d crafted entries took %.1f s of "
		    "CPU", PENDING_DESTS_MAX, (double)(clock() - t0) /
		    CLOCKS_PER_SEC);
	pending_release(&p);
}

/*
 * Evicting (following) and sorting move entries: every one kept is
 * still found (no second entry for it), and none forgotten is.
 */
static void
evict_and_sort_keep_lookups(void **state)
{
	struct pending	 p;
	char		 host[64];
	json_t		*ev;
	size_t		 n;
	int		 i, isnew;

	(void)state;
	pending_init(&p, NULL);
	pending_evict(&p);
	for (i = 0; i < PENDING_DESTS_MAX + 3000; i++) {
		snprintf(host, sizeof(host), "e%d.test", i);
		ev = blocked(host, i);
		(void)pending_event(&p, ev, &isnew);
		json_decref(ev);
	}
	assert_int_equal(p.evicted, 3000);
	pending_sort(&p);
	for (i = 3000; i < PENDING_DESTS_MAX + 3000; i++) {
		snprintf(host, sizeof(host), "e%d.test", i);
		ev = blocked(host, 86399);
		assert_non_null(pending_event(&p, ev, &isnew));
		json_decref(ev);
		assert_false(isnew);
	}
	assert_int_equal(p.evicted, 3000);
	assert_int_equal(p.n, PENDING_DESTS_MAX);
	/* a forgotten one comes back new, in the place of another */
	ev = blocked("e0.test", 86399);
	n = p.evicted;
	assert_non_null(pending_event(&p, ev, &isnew));
	json_decref(ev);
	assert_true(isnew);
	assert_int_equal(p.evicted, n + 1);
	assert_int_equal(p.n, PENDING_DESTS_MAX);
	assert_null(find(&p, "e2999.test", "not_allowlisted"));
	assert_non_null(find(&p, "e0.test", "not_allowlisted"));
	pending_release(&p);
}

/*
 * An exec's network_blocked (pending_exec): a replica's records pass
 * pending's checks; another run's, another sandbox's, a host the proxy
 * could not have written are left out; a message that is not short
 * printable text is made again from the reason; each replica adds at
 * most PENDING_EXEC_SHARE destinations (atk1921 F5).
 */
static void
exec_blocks_checked(void **state)
{
	static const char	 run[] = "run_0123456789abcdef01234567";
	struct pending_exec	 x;
	json_t			*recs = json_array(), *out, *o;
	char			 host[64], big[2048];
	int			 i;

	(void)state;
	memset(big, 'A', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	json_array_append_new(recs, rec(SBX, "own.test", 443,
	    "not_allowlisted", 2, "2026-12-01T10:00:00Z",
	    "2026-12-01T10:00:01Z", run));
	json_array_append_new(recs, rec(SBX, "none.test", 443,
	    "not_allowlisted", 1, "2026-12-01T10:00:00Z",
	    "2026-12-01T10:00:01Z", NULL));
	json_array_append_new(recs, rec(SBX, "other.test", 443,
	    "not_allowlisted", 1, "2026-12-01T10:00:00Z",
	    "2026-12-01T10:00:01Z", "run_ffffffffffffffffffffffff"));
	json_array_append_new(recs, rec("sbx_other", "sbx.test", 443,
	    "not_allowlisted", 1, "2026-12-01T10:00:00Z",
	    "2026-12-01T10:00:01Z", run));
	json_array_append_new(recs, rec(SBX, "Bad Host\x1b[2J", 443,
	    "not_allowlisted", 1, "2026-12-01T10:00:00Z",
	    "2026-12-01T10:00:01Z", run));
	o = rec(SBX, "loud.test", 443, "not_allowlisted", 1,
	    "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z", run);
	json_object_set_new(o, "message", json_string(big));
	json_array_append_new(recs, o);
	/* /blocks?sandbox=ID names no sandbox: the one asked for */
	o = rec(SBX, "unnamed.test", 80, "not_allowlisted", 1,
	    "2026-12-01T10:00:00Z", "2026-12-01T10:00:01Z", NULL);
	json_object_del(o, "sandbox");
	json_array_append_new(recs, o);
	pending_exec_init(&x, SBX, run);
	pending_exec_add(&x, recs);
	out = pending_exec_list(&x);
	assert_int_equal(json_array_size(out), 4);
	o = json_array_get(out, 0);
	assert_string_equal(json_string_value(json_object_get(o,
	    "destination")), "own.test:443");
	assert_string_equal(json_string_value(json_object_get(o, "run_id")),
	    run);
	assert_int_equal(json_integer_value(json_object_get(o, "attempts")),
	    2);
	assert_string_equal(json_string_value(json_object_get(o, "message")),
	    "network blocked by policy");
	o = json_array_get(out, 1);
	assert_string_equal(json_string_value(json_object_get(o,
	    "destination")), "loud.test:443");
	assert_string_equal(json_string_value(json_object_get(o, "message")),
	    "network blocked by policy: destination loud.test:443 not "
	    "allowlisted");
	o = json_array_get(out, 2);
	assert_string_equal(json_string_value(json_object_get(o,
	    "destination")), "none.test:443");
	assert_true(json_is_null(json_object_get(o, "run_id")));
	assert_string_equal(json_string_value(json_object_get(json_array_get(
	    out, 3), "destination")), "unnamed.test:80");
	assert_false(x.truncated);
	json_decref(out);
	/* a second replica floods: its share, and truncated */
	json_array_clear(recs);
	for (i = 0; i < 3 * PENDING_EXEC_SHARE; i++) {
		snprintf(host, sizeof(host), "f%d.test", i);
		json_array_append_new(recs, rec(SBX, host, 443,
		    "not_allowlisted", 1, "2026-12-01T10:00:00Z",
		    "2026-12-01T10:00:01Z", run));
	}
	pending_exec_add(&x, recs);
	out = pending_exec_list(&x);
	assert_int_equal(json_array_size(out), 4 + PENDING_EXEC_SHARE);
	assert_true(x.truncated);
	json_decref(out);
	json_decref(recs);
	pending_exec_release(&x);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(merge_three_replicas),
		cmocka_unit_test(merge_keeps_reasons),
		cmocka_unit_test(merge_filters_and_refuses),
		cmocka_unit_test(merge_refuses_escapes),
		cmocka_unit_test(merge_saturates),
		cmocka_unit_test(merge_fair_share),
		cmocka_unit_test(full_table_evicts_when_following),
		cmocka_unit_test(full_table_lookup_is_not_linear),
		cmocka_unit_test(crafted_keys_do_not_collide),
		cmocka_unit_test(evict_and_sort_keep_lookups),
		cmocka_unit_test(exec_blocks_checked),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
