/*
 * test_util.c: number, size and duration parsing, time formatting, the
 * bounded flock wait.
 */
#include <sys/file.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

static void
test_strtonum(void **state)
{
	long long	 v;
	const char	*cause;

	assert_int_equal(util_strtonum("42", 0, 100, &v, &cause), 0);
	assert_int_equal(v, 42);
	assert_int_equal(util_strtonum("-1", 0, 100, &v, &cause), -1);
	assert_int_equal(util_strtonum("101", 0, 100, &v, &cause), -1);
	assert_string_equal(cause, "too large");
	assert_int_equal(util_strtonum("1x", 0, 100, &v, &cause), -1);
	assert_string_equal(cause, "invalid");
	assert_int_equal(util_strtonum("", 0, 100, &v, &cause), -1);
	assert_int_equal(util_strtonum(" 1", 0, 100, &v, &cause), -1);
	assert_int_equal(util_strtonum("99999999999999999999", 0, 100, &v,
	    &cause), -1);
}

static void
test_sizes(void **state)
{
	unsigned long long	b;
	long long		s;

	assert_int_equal(util_parse_size("2g", &b), 0);
	assert_true(b == 2ULL << 30);
	assert_int_equal(util_parse_size("256MiB", &b), 0);
	assert_true(b == 256ULL << 20);
	assert_int_equal(util_parse_size("512", &b), 0);
	assert_true(b == 512);
	assert_int_equal(util_parse_size("1q", &b), -1);
	assert_int_equal(util_parse_size("-1", &b), -1);
	assert_int_equal(util_parse_size("99999999999t", &b), -1);
	assert_int_equal(util_parse_duration("2h", &s), 0);
	assert_int_equal(s, 7200);
	assert_int_equal(util_parse_duration("30", &s), 0);
	assert_int_equal(s, 30);
	assert_int_equal(util_parse_duration("h", &s), -1);
}

static void
test_time_and_hex(void **state)
{
	struct timespec	ts = { 1796025478, 123456789 };
	char		buf[UTIL_TS_LEN], hex[9];
	unsigned char	in[4] = { 0xde, 0xad, 0x00, 0x0f };

	util_rfc3339(&ts, buf);
	assert_string_equal(buf, "2026-11-30T07:57:58.123456Z");
	util_hex(in, 4, hex);
	assert_string_equal(hex, "dead000f");
	assert_int_equal(util_strlcpy(hex, "longer than nine", sizeof(hex)),
	    16);
	assert_string_equal(hex, "longer t");
}

/* Counts summed from untrusted sources saturate, never wrap. */
static void
test_add_sat(void **state)
{
	(void)state;
	assert_true(util_add_sat(2, 3) == 5);
	assert_true(util_add_sat(LLONG_MAX, 1) == LLONG_MAX);
	assert_true(util_add_sat(LLONG_MAX - 1, LLONG_MAX) == LLONG_MAX);
	assert_true(util_add_sat(LLONG_MIN, -1) == LLONG_MIN);
	assert_true(util_add_sat(LLONG_MAX, LLONG_MIN) == -1);
}

/* the folder of a name at the root is "/" (atk35c: it was "") */
static void
test_dirname(void **state)
{
	const char	*cases[][2] = {
		{ "/control.sock", "/" }, { "control.sock", "." },
		{ "/run/sg/control.sock", "/run/sg" }, { "run/c", "run" },
	};
	char		*d;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		d = util_dirname(cases[i][0]);
		assert_string_equal(d, cases[i][1]);
		free(d);
	}
}

static int
stop_now(void)
{
	return 1;
}

/* util_flock_wait: held by a child, a bound ends it, so does stop. */
static void
test_flock_wait(void **state)
{
	char		 path[64];
	int		 fd, fd2, up[2], down[2], st;
	pid_t		 pid;
	char		 c;
	uint64_t	 t0;

	snprintf(path, sizeof(path), "/tmp/sg-test-flock.%ld", (long)getpid());
	(void)unlink(path);
	assert_int_not_equal(fd = open(path, O_RDWR | O_CREAT | O_EXCL, 0600),
	    -1);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(down), 0);
	if ((pid = fork()) == 0) {
		int	cfd = open(path, O_RDWR);

		if (cfd == -1 || flock(cfd, LOCK_EX) == -1)
			_exit(1);
		if (write(up[1], "x", 1) != 1 || read(down[0], &c, 1) != 1)
			_exit(1);
		_exit(0);
	}
	assert_int_equal(read(up[0], &c, 1), 1);
	assert_int_not_equal(fd2 = open(path, O_RDWR), -1);
	/* an until_us already past: one try */
	assert_int_equal(util_flock_wait(fd2, LOCK_SH, 1, NULL), -1);
	assert_int_equal(errno, ETIMEDOUT);
	t0 = util_now_us();
	assert_int_equal(util_flock_wait(fd2, LOCK_SH, t0 + 200000, NULL), -1);
	assert_int_equal(errno, ETIMEDOUT);
	assert_true(util_now_us() - t0 >= 200000);
	assert_int_equal(util_flock_wait(fd2, LOCK_EX, 0, stop_now), -1);
	assert_int_equal(errno, EINTR);
	assert_int_equal(write(down[1], "y", 1), 1);	/* the child lets go */
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* free: taken, even with a stop that says end */
	assert_int_equal(util_flock_wait(fd2, LOCK_EX, 1, stop_now), 0);
	close(fd2);
	assert_int_equal(util_flock_wait(fd, LOCK_SH, 0, NULL), 0);
	close(fd);
	close(up[0]);
	close(up[1]);
	close(down[0]);
	close(down[1]);
	unlink(path);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_strtonum),
		cmocka_unit_test(test_sizes),
		cmocka_unit_test(test_time_and_hex),
		cmocka_unit_test(test_add_sat),
		cmocka_unit_test(test_dirname),
		cmocka_unit_test(test_flock_wait),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
