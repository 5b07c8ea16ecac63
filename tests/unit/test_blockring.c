/*
 * test_blockring.c: each sandbox's recent blocks (blockring.h). A block
 * finds its sandbox's records through the keyed table, whatever number
 * of sandboxes have records and however early its own were made: the
 * list walk looked at every record made after the sandbox's (~200 us
 * of proxy CPU per blocked request of a long-lived sandbox with 4,000
 * others, atk15r16 F4). The least recently blocked sandbox's records go
 * first past BLOCKRING_SANDBOXES; dropped records are gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "blockring.h"

#define NSBX		4000	/* other sandboxes with records */
#define NBLOCK		1000	/* blocks of the early sandbox */
/*
 * Records looked at per block: the early sandbox's place in its chain,
 * one lookup after another, so not an average. With at most one entry
 * per chain on average a chain this long comes about once in ~1e-30
 * tables; 4 failed one run in ~50 (a chain of 5 is ~0.4 %, and the
 * table's key is random). The list walk looked at ~4,000.
 */
#define PER_BLOCK	32

static void
note(struct blockring *br, unsigned long long serial, const char *sbx,
    const char *host)
{
	blockring_note(br, 0, serial, sbx, NULL, host, 443, "not_allowlisted",
	    "blocked");
}

/* How many records sbx has (its attempts in *attempts). */
static size_t
records(struct blockring *br, const char *sbx, long long *attempts)
{
	json_t	*a, *o;
	size_t	 i, n;
	int	 trunc = 0;

	a = blockring_json(br, sbx, 0, NULL, 0, &trunc);
	assert_non_null(a);
	n = json_array_size(a);
	*attempts = 0;
	json_array_foreach(a, i, o)
		*attempts += json_integer_value(json_object_get(o, "attempts"));
	json_decref(a);
	return n;
}

static void
test_early_sandbox_found_by_key(void **state)
{
	struct blockring	*br = blockring_new();
	unsigned long long	 serial = 0, before;
	long long		 attempts;
	char			 s[64];
	int			 i;

	(void)state;
	assert_non_null(br);
	note(br, ++serial, "early", "a.invalid");
	for (i = 0; i < NSBX; i++) {
		snprintf(s, sizeof(s), "sbx_%d", i);
		note(br, ++serial, s, "b.invalid");
	}
	before = blockring_visited(br);
	for (i = 0; i < NBLOCK; i++)
		note(br, ++serial, "early", "a.invalid");
	if (blockring_visited(br) - before > (unsigned long long)NBLOCK *
	    PER_BLOCK)
		fail_msg("%llu records looked at for %d blocks of a sandbox "
		    "among %d", blockring_visited(br) - before, NBLOCK,
		    NSBX + 1);
	assert_int_equal(records(br, "early", &attempts), 1);
	assert_int_equal(attempts, NBLOCK + 1);
	assert_int_equal(records(br, "sbx_7", &attempts), 1);
	blockring_drop(br, "early");
	assert_int_equal(records(br, "early", &attempts), 0);
	blockring_free(br);
}

static void
test_least_recently_blocked_goes_first(void **state)
{
	struct blockring	*br = blockring_new();
	unsigned long long	 serial = 0;
	long long		 attempts;
	char			 s[64];
	int			 i;

	(void)state;
	for (i = 0; i < BLOCKRING_SANDBOXES; i++) {
		snprintf(s, sizeof(s), "sbx_%d", i);
		note(br, ++serial, s, "a.invalid");
	}
	note(br, ++serial, "sbx_0", "a.invalid");	/* used again */
	note(br, ++serial, "new", "a.invalid");		/* evicts sbx_1 */
	assert_int_equal(records(br, "sbx_0", &attempts), 1);
	assert_int_equal(attempts, 2);
	assert_int_equal(records(br, "sbx_1", &attempts), 0);
	assert_int_equal(records(br, "sbx_2", &attempts), 1);
	assert_int_equal(records(br, "new", &attempts), 1);
	blockring_free(br);
}

/* Whether GET /blocks of sbx after a cursor says "truncated". */
static int
truncated(struct blockring *br, const char *sbx, unsigned long long after)
{
	json_t	*a;
	int	 trunc = -1;

	a = sbx != NULL ? blockring_json(br, sbx, after, NULL, 0, &trunc) :
	    blockring_all(br, after, &trunc);
	json_decref(a);
	return trunc;
}

/*
 * atk15r17 F9: a sandbox's records evicted by others' blocks after a
 * cursor are reported truncated, whether it has no records now or new
 * ones made since; a cursor after the eviction, or a sandbox dropped
 * (unregistered), is not.
 */
static void
test_evicted_after_cursor_is_truncated(void **state)
{
	struct blockring	*br = blockring_new();
	unsigned long long	 serial = 100, cursor = 100, later;
	char			 s[64];
	int			 i;

	(void)state;
	note(br, ++serial, "sbx_a", "blocked.invalid");
	note(br, ++serial, "sbx_gone", "x.invalid");
	blockring_drop(br, "sbx_gone");
	assert_int_equal(truncated(br, "sbx_a", cursor), 0);
	for (i = 0; i < BLOCKRING_SANDBOXES; i++) {
		snprintf(s, sizeof(s), "sbx_%d", i);
		note(br, ++serial, s, "b.invalid");
	}
	later = serial;
	assert_int_equal(truncated(br, "sbx_a", cursor), 1);
	assert_int_equal(truncated(br, NULL, cursor), 1);
	note(br, ++serial, "sbx_a", "blocked.invalid");
	assert_int_equal(truncated(br, "sbx_a", cursor), 1);
	assert_int_equal(truncated(br, "sbx_a", later), 0);
	assert_int_equal(truncated(br, NULL, later), 0);
	assert_int_equal(truncated(br, "sbx_7", cursor), 0);
	blockring_free(br);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_early_sandbox_found_by_key),
		cmocka_unit_test(test_least_recently_blocked_goes_first),
		cmocka_unit_test(test_evicted_after_cursor_is_truncated),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
