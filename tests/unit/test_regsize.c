/*
 * test_regsize.c: the registry file's text is built again only when a
 * count its size depends on changed (regsize.h, atk37f F1: an 8 MiB
 * registry too large to save was built again every second).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "regsize.h"

static struct regsize_key
key(void)
{
	struct regsize_key	k = { .text = 8u << 20, .unsure = 3,
	    .gone = 2, .gone_text = 60, .floor = 1700000000, .removals = 0 };

	return k;
}

static void
test_nothing_measured_is_stale(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = key();

	(void)state;
	regsize_init(&rs);
	assert_true(regsize_stale(&rs, &k));
}

static void
test_same_key_reuses_the_length(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = key(), again = key();

	(void)state;
	regsize_init(&rs);
	regsize_note(&rs, &k, 8500000);
	assert_false(regsize_stale(&rs, &again));
	assert_int_equal(regsize_len(&rs), 8500000);
}

static void
test_each_count_makes_it_stale(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = key(), c[6];
	size_t			i;

	(void)state;
	for (i = 0; i < 6; i++)
		c[i] = key();
	c[0].text--;
	c[1].unsure = 0;
	c[2].gone++;
	c[3].gone_text += 10;
	c[4].floor++;
	c[5].removals = 1;
	regsize_init(&rs);
	regsize_note(&rs, &k, 8500000);
	for (i = 0; i < 6; i++)
		assert_true(regsize_stale(&rs, &c[i]));
	/* measured again: the new key stands, the old one no longer */
	regsize_note(&rs, &c[5], 9000000);
	assert_false(regsize_stale(&rs, &c[5]));
	assert_true(regsize_stale(&rs, &k));
	assert_int_equal(regsize_len(&rs), 9000000);
}

static void
test_more_removals_stay_over(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = key(), more = key(), c[6];
	size_t			i;

	(void)state;
	regsize_init(&rs);
	assert_false(regsize_still_over(&rs, &k, 8u << 20));
	regsize_note(&rs, &k, (8u << 20) + 1);
	assert_true(regsize_still_over(&rs, &k, 8u << 20));
	more.gone++;
	more.gone_text += 28;
	assert_true(regsize_still_over(&rs, &more, 8u << 20));
	/* anything that may shrink it is measured again */
	for (i = 0; i < 6; i++)
		c[i] = more;
	c[0].text--;
	c[1].unsure--;
	c[2].gone = k.gone - 1;
	c[3].gone_text = k.gone_text - 1;
	c[4].floor = 99;			/* fewer digits */
	c[5].removals = 1;
	for (i = 0; i < 6; i++)
		assert_false(regsize_still_over(&rs, &c[i], 8u << 20));
	/*
	 * atk39f F1: removals full, each new one forgets the oldest and
	 * raises the floor: a floor of as many digits is no shorter
	 */
	c[0] = more;
	c[0].floor += 3600;
	assert_true(regsize_still_over(&rs, &c[0], 8u << 20));
	c[1] = more;
	c[1].floor = 999999999;			/* one digit fewer */
	assert_false(regsize_still_over(&rs, &c[1], 8u << 20));
	regsize_note(&rs, &c[1], (8u << 20) + 1);
	c[2] = c[1];
	c[2].floor = 0;				/* none: one digit */
	assert_false(regsize_still_over(&rs, &c[2], 8u << 20));
	/* a length that fitted says nothing of a larger key */
	regsize_note(&rs, &k, 8u << 20);
	assert_false(regsize_still_over(&rs, &more, 8u << 20));
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_measured_is_stale),
		cmocka_unit_test(test_same_key_reuses_the_length),
		cmocka_unit_test(test_each_count_makes_it_stale),
		cmocka_unit_test(test_more_removals_stay_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
