/*
 * test_suggest.c: the engine of `sandgate policy suggest`: given log
 * events, the entries it drafts (hosts, ports, comments), what it leaves
 * out (other reasons, bad hosts, filters) and its output kept to
 * printable ASCII.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "policy.h"
#include "suggest.h"
#include "util.h"

#define T0	1769860800LL	/* 2026-01-31T12:00:00Z */

static const struct suggest_draft draft = {
	"/var/log/sandgate", "/etc/sandgate/policy.d", NULL, NULL, "drafted"
};

/* Feed events (JSON lines) and print the draft; out and err (heap). */
static int
run(struct suggest *sg, const char *const *events, char **out, char **err)
{
	FILE	*fo, *fe;
	size_t	 lo, le, i;
	json_t	*o;
	int	 n;

	for (i = 0; events[i] != NULL; i++) {
		o = json_loads(events[i], 0, NULL);
		assert_non_null(o);
		suggest_event(sg, o);
		json_decref(o);
	}
	suggest_sort(sg);
	fo = open_memstream(out, &lo);
	fe = open_memstream(err, &le);
	n = suggest_print(sg, &draft, NULL, fo, fe);
	fclose(fo);
	fclose(fe);
	return n;
}

static int
count(const char *hay, const char *needle)
{
	int	n = 0;

	while ((hay = strstr(hay, needle)) != NULL) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

#define BLOCK(host, port, reason, sbx, ts) \
	"{\"event\":\"egress.blocked\",\"host\":\"" host "\",\"port\":" \
	#port ",\"reason\":\"" reason "\",\"sandbox\":\"" sbx "\"," \
	"\"ts\":\"" ts "\"}"

static void
test_entries(void **state)
{
	static const char *const ev[] = {
		BLOCK("pypi.org", 8443, "not_allowlisted", "sbx_a",
		    "2026-01-31T11:00:00Z"),
		BLOCK("pypi.org", 443, "port_not_allowed", "sbx_b",
		    "2026-01-31T11:30:00Z"),
		BLOCK("pypi.org", 443, "not_allowlisted", "sbx_a",
		    "2026-01-31T11:40:00Z"),
		BLOCK("192.0.2.7", 443, "ip_literal", "sbx_a",
		    "2026-01-31T11:50:00Z"),
		"{\"event\":\"egress.would_block\",\"host\":\"mirror.test\","
		"\"port\":80,\"reason\":\"not_allowlisted\","
		"\"method\":\"GET\"}",
		BLOCK("sni.test", 443, "sni_mismatch", "sbx_a", "x"),
		BLOCK("Bad.Host", 443, "not_allowlisted", "sbx_a", "x"),
		BLOCK("port0.test", 0, "not_allowlisted", "sbx_a", "x"),
		"{\"event\":\"egress.allowed\",\"host\":\"ok.test\","
		"\"port\":443}",
		NULL,
	};
	struct suggest	 sg;
	char		*out, *err, want[128];

	(void)state;
	suggest_init(&sg, NULL, -1);
	assert_int_equal(run(&sg, ev, &out, &err), 3);
	assert_int_equal(sg.used, 5);
	assert_int_equal(sg.other, 1);
	assert_int_equal(sg.dropped, 2);
	assert_int_equal(count(out, "  - host: "), 3);
	/* sorted by host; ports sorted; one entry per host */
	assert_true(strstr(out, "\"192.0.2.7\"") < strstr(out,
	    "\"mirror.test\""));
	assert_true(strstr(out, "\"mirror.test\"") < strstr(out,
	    "\"pypi.org\""));
	assert_non_null(strstr(out, "  - host: \"pypi.org\"\n    ports: "
	    "[443, 8443]\n"));
	assert_non_null(strstr(out, "  # 3 attempts (not_allowlisted, "
	    "port_not_allowed) by sbx_a, sbx_b; last 2026-01-31T11:40:00Z\n"));
	snprintf(want, sizeof(want), "  - host: \"mirror.test\"\n    ports: "
	    "[80]\n    rationale: %s\n", policy_placeholder);
	assert_non_null(strstr(out, want));
	snprintf(want, sizeof(want), "rationale: %s", policy_placeholder);
	assert_int_equal(count(out, want), 3);
	snprintf(want, sizeof(want), "owner: %s", policy_placeholder);
	assert_non_null(strstr(out, want));
	assert_non_null(strstr(out, "# Draft policy set \"drafted\""));
	assert_non_null(strstr(out, "1 other block (private address"));
	assert_null(strstr(out, "sni.test"));
	assert_null(strstr(out, "ok.test"));
	assert_string_equal(err, "");
	free(out);
	free(err);
	suggest_release(&sg);
}

/* --sandbox and --since (with an offset) leave events out. */
static void
test_filters(void **state)
{
	static const char *const ev[] = {
		BLOCK("new.test", 443, "not_allowlisted", "sbx_a",
		    "2026-01-31T12:30:00Z"),
		/* 11:59:59Z, written with an offset: before since */
		BLOCK("old.test", 443, "not_allowlisted", "sbx_a",
		    "2026-01-31T13:59:59+02:00"),
		BLOCK("late.test", 443, "not_allowlisted", "sbx_a",
		    "2026-01-31T07:00:01-05:00"),
		BLOCK("other.test", 443, "not_allowlisted", "sbx_b",
		    "2026-01-31T12:30:00Z"),
		BLOCK("nots.test", 443, "not_allowlisted", "sbx_a", "never"),
		NULL,
	};
	struct suggest	 sg;
	char		*out, *err;

	(void)state;
	suggest_init(&sg, "sbx_a", T0 * 1000000);
	assert_int_equal(run(&sg, ev, &out, &err), 2);
	assert_non_null(strstr(out, "\"new.test\""));
	assert_non_null(strstr(out, "\"late.test\""));
	assert_null(strstr(out, "old.test"));
	assert_null(strstr(out, "other.test"));
	assert_null(strstr(out, "nots.test"));
	free(out);
	free(err);
	suggest_release(&sg);
}

/* Plain HTTP refused by a rule: tls optional on 443, the rule named. */
static void
test_plain_http(void **state)
{
	static const char *const ev[] = {
		"{\"event\":\"egress.blocked\",\"host\":\"api.test\",\"port\":"
		"443,\"reason\":\"method_not_allowed\",\"method\":\"POST\","
		"\"rule\":\"api.yaml:4\",\"sandbox\":\"s\\nx\"}",
		NULL,
	};
	struct suggest	 sg;
	char		*out, *err;

	(void)state;
	suggest_init(&sg, NULL, -1);
	assert_int_equal(run(&sg, ev, &out, &err), 1);
	assert_non_null(strstr(out, "  # plain-HTTP POST refused by the entry "
	    "at api.yaml:4"));
	assert_non_null(strstr(out, "    tls: optional\n"));
	/* a newline in a log string cannot end the YAML comment */
	assert_non_null(strstr(out, " by s?x; last -\n"));
	free(out);
	free(err);
	suggest_release(&sg);
}

/* Nothing to draft: the other blocks go to err, nothing to out. */
static void
test_nothing(void **state)
{
	static const char *const ev[] = {
		BLOCK("10.0.0.1", 443, "private_address", "s", "x"),
		NULL,
	};
	struct suggest	 sg;
	char		*out, *err;

	(void)state;
	suggest_init(&sg, NULL, -1);
	assert_int_equal(run(&sg, ev, &out, &err), 0);
	assert_string_equal(out, "");
	assert_non_null(strstr(err, "1 other block"));
	free(out);
	free(err);
	suggest_release(&sg);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_entries),
		cmocka_unit_test(test_filters),
		cmocka_unit_test(test_plain_http),
		cmocka_unit_test(test_nothing),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
