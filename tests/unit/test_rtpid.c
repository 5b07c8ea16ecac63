/* test_rtpid.c: the runtime's pid files (exec ids, init.pid). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "rtpid.h"
#include "util.h"

#define EID "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

static char	dir[] = "/tmp/test_rtpid." UTIL_MKTEMP_SUFFIX;

static void
put(const char *name, const char *text)
{
	char	path[512];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

/* runc writes the pid alone; a newline after it is taken too. */
static void
test_read_pid(void **state)
{
	(void)state;
	put(EID ".pid", "4242");
	assert_int_equal(rtpid_read(dir, EID), 4242);
	put(EID ".pid", "17\n");
	assert_int_equal(rtpid_read(dir, EID), 17);
}

/* No file yet, or anything but a pid: 0, never a guess. */
static void
test_read_none(void **state)
{
	static const char *const bad[] = {
		"", "\n", "-5", "0x10", "12 ", " 12", "12\n\n", "12a",
		"99999999999", "4294967297",
	};
	size_t	i;

	(void)state;
	assert_int_equal(rtpid_read(dir, "abc"), 0);	/* no file */
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		put(EID ".pid", bad[i]);
		assert_int_equal(rtpid_read(dir, EID), 0);
	}
}

/* Only an exec id's hex digits name a file: no path, no init.pid. */
static void
test_read_names(void **state)
{
	(void)state;
	put("init.pid", "1");
	assert_int_equal(rtpid_read(dir, "init"), 0);
	assert_int_equal(rtpid_read(dir, "../x"), 0);
	assert_int_equal(rtpid_read(dir, ""), 0);
	assert_int_equal(rtpid_read(dir, "ABC"), 0);
}

/* A process whose parent keeps no runc bundle has none. */
static void
test_bundle_none(void **state)
{
	char	out[4096];

	(void)state;
	assert_int_equal(rtpid_bundle(getpid(), out, sizeof(out)), -1);
	assert_int_equal(rtpid_bundle(-1, out, sizeof(out)), -1);
}

static int
setup(void **state)
{
	(void)state;
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	char	cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_read_pid),
		cmocka_unit_test(test_read_none),
		cmocka_unit_test(test_read_names),
		cmocka_unit_test(test_bundle_none),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
