/* test_procstat.c: /proc/PID/stat fields, whatever the command name holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include <cmocka.h>

#include "procstat.h"

/* Fields 3 to 22 after the name; start time 4242, ppid 7. */
#define TAIL	" S 7 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4242 " \
		"1000 200 18446744073709551615"

static void
test_names(void **state)
{
	static const char *const lines[] = {
		"123 (sh)" TAIL,
		"123 (a b c)" TAIL,
		"123 (x) S 9 9 9) y)" TAIL,	/* a name that fakes fields */
		"123 ()" TAIL,
		"123 ())))" TAIL,
	};
	struct procstat	ps;
	size_t		i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		assert_int_equal(procstat_parse(lines[i], &ps), 0);
		assert_int_equal(ps.state, 'S');
		assert_int_equal(ps.ppid, 7);
		assert_true(ps.start == 4242);
	}
}

static void
test_bad(void **state)
{
	static const char *const bad[] = {
		"", "123", "123 (sh", "123 (sh)", "123 (sh) ", "123 (sh)S 7",
		"123 (sh) S 7 1 1", "123 (sh) S 7 1 1 0 -1 4194560 100 0 0 0 "
		"1 2 0 0 20 0 1 0 x",
	};
	struct procstat	ps;
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (procstat_parse(bad[i], &ps) != -1)
			fail_msg("accepted '%s'", bad[i]);
}

/* This process: parent and a start time that is set. */
static void
test_read_self(void **state)
{
	struct procstat	ps;

	assert_int_equal(procstat_read((int)getpid(), &ps), 0);
	assert_int_equal(ps.ppid, (int)getppid());
	assert_int_equal(ps.state, 'R');
	assert_int_equal(procstat_read(-1, &ps), -1);
	assert_int_equal(procstat_read(0x3fffffff, &ps), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_read_self),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
