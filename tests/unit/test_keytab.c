/*
 * test_keytab.c: the keyed hash table (keytab.h) every per-sandbox and
 * per-address index uses: what is put is found, replaced and deleted,
 * through its growth, and a lookup looks at about one entry whatever
 * the table holds (the counter the other tests read).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>

#include "keytab.h"

#define NKEY		20000
#define NMISS		1000
#define PER_LOOKUP	4

static void
test_put_get_del_through_growth(void **state)
{
	struct keytab		*t = keytab_new();
	static int		 vals[NKEY];
	char			 k[32];
	unsigned long long	 before;
	int			 i, x = 0;

	(void)state;
	assert_non_null(t);
	for (i = 0; i < NKEY; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		assert_int_equal(keytab_put(t, k, &vals[i]), 0);
	}
	assert_int_equal(keytab_count(t), NKEY);
	for (i = 0; i < NKEY; i++) {
		snprintf(k, sizeof(k), "key-%d", i);
		assert_ptr_equal(keytab_get(t, k), &vals[i]);
	}
	before = keytab_visited(t);
	for (i = 0; i < NMISS; i++) {
		snprintf(k, sizeof(k), "miss-%d", i);
		assert_null(keytab_get(t, k));
	}
	if (keytab_visited(t) - before > NMISS * PER_LOOKUP)
		fail_msg("%llu entries looked at for %d lookups among %d",
		    keytab_visited(t) - before, NMISS, NKEY);
	assert_int_equal(keytab_put(t, "key-5", &x), 0);	/* replaced */
	assert_ptr_equal(keytab_get(t, "key-5"), &x);
	assert_int_equal(keytab_count(t), NKEY);
	for (i = 0; i < NKEY; i += 2) {
		snprintf(k, sizeof(k), "key-%d", i);
		assert_non_null(keytab_del(t, k));
	}
	assert_null(keytab_del(t, "key-0"));
	assert_int_equal(keytab_count(t), NKEY / 2);
	assert_null(keytab_get(t, "key-2"));
	assert_ptr_equal(keytab_get(t, "key-3"), &vals[3]);
	keytab_free(t);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_put_get_del_through_growth),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
