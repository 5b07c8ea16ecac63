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
	struct regsize_key	k = key(), more = key(), c[3];
	size_t			i;

	(void)state;
	regsize_init(&rs);
	assert_false(regsize_still_over(&rs, &k, 8u << 20));
	regsize_note(&rs, &k, (8u << 20) + 1000);
	assert_true(regsize_still_over(&rs, &k, 8u << 20));
	more.gone++;
	more.gone_text += 28;
	assert_true(regsize_still_over(&rs, &more, 8u << 20));
	/* a part whose length is not followed is measured again */
	for (i = 0; i < 3; i++)
		c[i] = more;
	c[0].text--;
	c[1].unsure--;
	c[2].removals = 1;
	for (i = 0; i < 3; i++)
		assert_false(regsize_still_over(&rs, &c[i], 8u << 20));
	/*
	 * atk39f F1: removals full, each new one forgets the oldest and
	 * raises the floor; a floor of fewer digits is as many bytes
	 * shorter: still over by far
	 */
	c[0] = more;
	c[0].floor += 3600;
	assert_true(regsize_still_over(&rs, &c[0], 8u << 20));
	c[1] = more;
	c[1].floor = 999999999;			/* one digit fewer */
	assert_true(regsize_still_over(&rs, &c[1], 8u << 20));
	/* a removal forgotten with no new one (the plain write: a count) */
	c[2] = k;
	c[2].gone--;
	assert_true(regsize_still_over(&rs, &c[2], 8u << 20));
}

/*
 * atk39f2 F1: in a marks write with the removals full, a new removal
 * shorter than the one it forgets made the text shorter by a few bytes
 * and it was built again (~0.25 s) on each such unregister, though its
 * length follows from the key.
 */
static struct regsize_key
full(void)
{
	struct regsize_key	k = key();

	k.removals = 1;
	k.gone = 4096;
	k.gone_text = 4096 * (40 + 4 + 10);	/* 40-byte names */
	return k;
}

static void
test_shorter_removal_at_the_cap(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = full(), shorter = full();
	size_t			max = 8u << 20;

	(void)state;
	shorter.gone_text -= 12;		/* a 28-byte name for a 40 */
	shorter.floor += 5;
	regsize_init(&rs);
	regsize_note(&rs, &k, max + 300000);
	assert_true(regsize_still_over(&rs, &shorter, max));
	/* then the shorter text, within the margin: measured */
	regsize_note(&rs, &k, max + 12 + REGSIZE_MARGIN);
	assert_false(regsize_still_over(&rs, &shorter, max));
	regsize_note(&rs, &k, max + 13 + REGSIZE_MARGIN);
	assert_true(regsize_still_over(&rs, &shorter, max));
	/* landing at the limit, or under it: measured (it may be saved) */
	regsize_note(&rs, &k, max + 12);
	assert_false(regsize_still_over(&rs, &shorter, max));
	regsize_note(&rs, &k, max + 1);
	assert_false(regsize_still_over(&rs, &shorter, max));
}

static void
test_the_length_follows_the_key(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = full(), c;
	size_t			max = 1000, over = max + REGSIZE_MARGIN + 1;

	(void)state;
	regsize_init(&rs);
	/* the first removal: its text, but no comma (the last one has none) */
	k.gone = 0;
	k.gone_text = 0;
	k.floor = 0;
	regsize_note(&rs, &k, over - 29);
	c = k;
	c.gone = 1;
	c.gone_text = 30;
	assert_true(regsize_still_over(&rs, &c, max));
	regsize_note(&rs, &k, over - 30);
	assert_false(regsize_still_over(&rs, &c, max));
	/*
	 * one more removal (30), "kept" 9 to 10 and the floor 0 to ten
	 * digits (10): 40 bytes more
	 */
	k.gone = 9;
	k.gone_text = 9 * 30;
	regsize_note(&rs, &k, over - 10);
	c = k;
	c.gone = 10;
	c.gone_text = 10 * 30;
	c.floor = 1700000000;
	assert_true(regsize_still_over(&rs, &c, max + 30));
	assert_false(regsize_still_over(&rs, &c, max + 31));
	/*
	 * the plain write holds no removals, only their count, and no
	 * "seen": its length is exact, over by one byte is over
	 */
	k.removals = c.removals = 0;
	k.gone_text = c.gone_text = 0;
	regsize_note(&rs, &k, max - 9);
	assert_true(regsize_still_over(&rs, &c, max));
	assert_int_equal(regsize_len(&rs), max + 1);
	regsize_note(&rs, &k, max - 10);
	assert_false(regsize_still_over(&rs, &c, max));
}

/*
 * atk40f F1: a refusal said the length last measured, stale after the
 * removals' text shrank, even one that fit; the length worked out is
 * the one kept.
 */
static void
test_the_length_worked_out_is_kept(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = full(), shorter = full(), c;
	size_t			max = 8u << 20;

	(void)state;
	shorter.gone_text -= 12;
	regsize_init(&rs);
	regsize_note(&rs, &k, max + 300000);
	assert_true(regsize_still_over(&rs, &shorter, max));
	assert_int_equal(regsize_len(&rs), max + 300000 - 12);
	assert_false(regsize_stale(&rs, &shorter));
	/* the next change counts from it */
	c = shorter;
	c.gone_text -= 12;
	assert_true(regsize_still_over(&rs, &c, max));
	assert_int_equal(regsize_len(&rs), max + 300000 - 24);
	/* measured as fitting (its save failed), then over by a longer one */
	regsize_note(&rs, &k, max - 10);
	c = k;
	c.gone_text += 78;
	assert_true(regsize_still_over(&rs, &c, max));
	assert_int_equal(regsize_len(&rs), max + 68);
}

/*
 * atk40f F2: a plain write over by 1 to 20 bytes was built again on
 * each unregister that changed the removals' count or the floor.
 */
static void
test_plain_write_near_the_limit_stays_over(void **state)
{
	struct regsize		rs;
	struct regsize_key	k = key(), c = key();
	size_t			max = 8u << 20;

	(void)state;
	c.gone++;
	c.floor += 60;
	regsize_init(&rs);
	regsize_note(&rs, &k, max + 10);
	assert_true(regsize_still_over(&rs, &c, max));
	assert_int_equal(regsize_len(&rs), max + 10);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_nothing_measured_is_stale),
		cmocka_unit_test(test_same_key_reuses_the_length),
		cmocka_unit_test(test_each_count_makes_it_stale),
		cmocka_unit_test(test_more_removals_stay_over),
		cmocka_unit_test(test_shorter_removal_at_the_cap),
		cmocka_unit_test(test_the_length_follows_the_key),
		cmocka_unit_test(test_the_length_worked_out_is_kept),
		cmocka_unit_test(test_plain_write_near_the_limit_stays_over),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
