/*
 * test_exectoken.c: what an exec's sandbox token says (exectoken.h):
 * the sandbox, run and sets, the grants digest of the grants in force
 * for that exec only, and an expiry bounded by the timeout plus the
 * margin and by the token's own limit.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "exectoken.h"

#define NOW	1800000000LL
#define SBX	"sbx_0123456789abcdef01234567"
#define RUN	"run_0123456789abcdef01234567"

static json_t *
grant(const char *sandbox, const char *host, int port, const char *run,
    const char *expires)
{
	return json_pack("{s:s, s:s, s:i, s:s?, s:s, s:s}", "sandbox",
	    sandbox, "host", host, "port", port, "run_id", run, "expires",
	    expires, "by", "me (uid 1)");
}

static void
fill_members(void **state)
{
	struct token	 t;
	json_t		*sets = json_pack("[s, s]", "pypi", "github");
	const char	*cause = NULL;

	(void)state;
	assert_int_equal(exectoken_fill(&t, SBX, RUN, sets, NULL, NOW, 600,
	    &cause), 0);
	assert_string_equal(t.sandbox, SBX);
	assert_string_equal(t.run, RUN);
	assert_string_equal(t.sets, "pypi,github");
	assert_int_equal(t.issued, NOW);
	assert_int_equal(t.expires, NOW + 600 + EXECTOKEN_MARGIN);
	/* No grants: zeros, as docs/proxy.md says. */
	for (size_t i = 0; i < TOKEN_DIGEST_RAW; i++)
		assert_int_equal(t.grants[i], 0);
	json_decref(sets);
}

static void
fill_expiry_bounded(void **state)
{
	struct token	 t;
	const char	*cause = NULL;

	(void)state;
	assert_int_equal(exectoken_fill(&t, SBX, RUN, NULL, NULL, NOW,
	    100LL * 24 * 3600, &cause), 0);
	assert_int_equal(t.expires - t.issued, TOKEN_TTL_MAX);
	assert_string_equal(t.sets, "");
}

static void
fill_sets_too_long(void **state)
{
	struct token	 t;
	json_t		*sets = json_array();
	const char	*cause = NULL;
	char		 name[40];

	(void)state;
	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "set-%02d-abcdefghijklmnopqrstuvw",
		    i);
		json_array_append_new(sets, json_string(name));
	}
	assert_int_equal(exectoken_fill(&t, SBX, RUN, sets, NULL, NOW, 60,
	    &cause), -1);
	assert_non_null(strstr(cause, "sets"));
	json_decref(sets);
}

/* Only this sandbox's grants for every exec or this run; order-free. */
static void
digest_counts_own_grants(void **state)
{
	unsigned char	 a[TOKEN_DIGEST_RAW], b[TOKEN_DIGEST_RAW];
	unsigned char	 c[TOKEN_DIGEST_RAW], z[TOKEN_DIGEST_RAW];
	json_t		*g1, *g2, *g3;

	(void)state;
	memset(z, 0, sizeof(z));
	g1 = json_pack("[o, o]", grant(SBX, "a.test", 443, NULL, "T1"),
	    grant(SBX, "b.test", 443, RUN, "T2"));
	g2 = json_pack("[o, o, o, o]", grant(SBX, "b.test", 443, RUN, "T2"),
	    grant("sbx_other", "c.test", 443, NULL, "T3"),
	    grant(SBX, "d.test", 443, "run_other", "T4"),
	    grant(SBX, "a.test", 443, NULL, "T1"));
	g3 = json_pack("[o]", grant(SBX, "a.test", 443, NULL, "T9"));
	assert_int_equal(exectoken_grants_digest(g1, SBX, RUN, a), 0);
	assert_int_equal(exectoken_grants_digest(g2, SBX, RUN, b), 0);
	assert_memory_equal(a, b, sizeof(a));
	assert_memory_not_equal(a, z, sizeof(a));
	/* Another expiry is another digest. */
	assert_int_equal(exectoken_grants_digest(g3, SBX, RUN, c), 0);
	assert_memory_not_equal(a, c, sizeof(a));
	/* Grants of other sandboxes and runs only: zeros. */
	json_array_remove(g2, 3);
	json_array_remove(g2, 0);
	assert_int_equal(exectoken_grants_digest(g2, SBX, RUN, c), 0);
	assert_memory_equal(c, z, sizeof(c));
	json_decref(g1);
	json_decref(g2);
	json_decref(g3);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fill_members),
		cmocka_unit_test(fill_expiry_bounded),
		cmocka_unit_test(fill_sets_too_long),
		cmocka_unit_test(digest_counts_own_grants),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
