/* test_oomlog.c: the memory cgroup OOM kills read from /dev/kmsg records. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "oomlog.h"

static int
parse(const char *rec)
{
	return oomlog_parse(rec, strlen(rec));
}

/* The kill record gives its pid; the command name can't forge another. */
static void
test_parse_killed(void **state)
{
	(void)state;
	assert_int_equal(parse("3,1203,52093940501,-;Memory cgroup out of "
	    "memory: Killed process 6937 (tiny) total-vm:176kB, anon-rss:0kB"),
	    6937);
	assert_int_equal(parse("3,9,1,-;Memory cgroup out of memory: Killed "
	    "process 42 (Killed process 7 ) x"), 42);
	assert_int_equal(parse("3,9,1,-,caller=T12;Memory cgroup out of "
	    "memory: Killed process 1 (a)"), 1);
}

/* Everything else is no kill of ours: -1. */
static void
test_parse_other(void **state)
{
	static const char *const no[] = {
		"",
		"no semicolon Memory cgroup out of memory: Killed process 5 (x)",
		"6,1,1,-;oom-kill:constraint=CONSTRAINT_MEMCG,task=x,pid=5",
		"3,1,1,-;Out of memory: Killed process 5 (x)",
		"3,1,1,-;Memory cgroup out of memory: Killed process (x)",
		"3,1,1,-;Memory cgroup out of memory: Killed process 5",
		"3,1,1,-;Memory cgroup out of memory: Killed process 0 (x)",
		"3,1,1,-;Memory cgroup out of memory: Killed process -5 (x)",
		"3,1,1,-;Memory cgroup out of memory: Killed process 5x (x)",
		"3,1,1,-; Memory cgroup out of memory: Killed process 5 (x)",
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
		assert_int_equal(parse(no[i]), -1);
}

/* The record's length bounds the parse (no NUL needed). */
static void
test_parse_bounded(void **state)
{
	const char	*rec = "3,1,1,-;Memory cgroup out of memory: Killed "
			    "process 123 (x)";

	(void)state;
	assert_int_equal(oomlog_parse(rec, strlen(rec) - 4), -1);
	assert_int_equal(oomlog_parse(rec, strlen(rec) - 3), 123);
	assert_int_equal(oomlog_parse(rec, 10), -1);
	/* a pid past INT_MAX */
	assert_int_equal(parse("3,1,1,-;Memory cgroup out of memory: Killed "
	    "process 99999999999 (x)"), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_killed),
		cmocka_unit_test(test_parse_other),
		cmocka_unit_test(test_parse_bounded),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
