/* test_apartfile.c: changes kept apart, in room reserved at start. */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "apartfile.h"
#include "util.h"

/* What a start finds, and what is kept then. */
static const struct {
	const char	*name;
	const char	*before;	/* NULL: no file */
	int		 lines;		/* kept after the start */
	size_t		 len;		/* of each, newline included */
	long long	 size;		/* of the file after them */
} cases[] = {
	{ "no file: padded", NULL, 0, 0, APARTFILE_RESERVE },
	{ "empty file: padded", "", 0, 0, APARTFILE_RESERVE },
	{ "blank short file: padded to the room", "    \n", 0, 0,
	    APARTFILE_RESERVE },
	{ "changes kept in place", NULL, 3, 100, APARTFILE_RESERVE },
	/* the padding's last newline stays: 163 fit, 2 appended after it */
	{ "past the padding: appended", NULL, 165, 100,
	    APARTFILE_RESERVE + 2 * 100 },
	{ "an older file's lines: appended, not padded", "{\"key\":\"a\"}\n",
	    1, 50, 12 + 50 },
};

static char *
tmpfile_path(void)
{
	char	*p = strdup("/tmp/test_apartfile." UTIL_MKTEMP_SUFFIX);
	int	 fd;

	assert_non_null(p);
	assert_true((fd = mkstemp(p)) != -1);
	close(fd);
	unlink(p);
	return p;
}

static char *
slurp(const char *path, size_t *len)
{
	FILE	*f = fopen(path, "r");
	char	*t;

	assert_non_null(f);
	t = calloc(1, 1 << 20);
	assert_non_null(t);
	*len = fread(t, 1, (1 << 20) - 1, f);
	fclose(f);
	return t;
}

/* The line i: "{" then its number, "x" to len - 2, "}\n". */
static void
line_of(int i, size_t len, char *buf)
{
	int	n = snprintf(buf, len, "{%d", i);

	memset(buf + n, 'x', len - 2 - (size_t)n);
	buf[len - 2] = '}';
	buf[len - 1] = '\n';
	buf[len] = '\0';
}

/* The non-blank lines of t are lines 0..n-1 of len, in order. */
static void
check_lines(char *t, int n, size_t len)
{
	char	 want[256], *p, *nl;
	int	 i = 0;

	for (p = t; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		if (strspn(p, " ") == strlen(p) || p[0] != '{')
			continue;
		line_of(i++, len, want);
		want[len - 1] = '\0';
		assert_string_equal(p, want);
	}
	assert_int_equal(i, n);
}

static void
test_cases(void **state)
{
	struct stat	 st;
	char		*path, *t, line[256];
	size_t		 i, len;
	int		 j;
	FILE		*f;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		path = tmpfile_path();
		if (cases[i].before != NULL) {
			assert_non_null(f = fopen(path, "w"));
			fputs(cases[i].before, f);
			fclose(f);
		}
		apartfile_create(path, "a test change");
		assert_int_equal(apartfile_blank(path), cases[i].before ==
		    NULL || strspn(cases[i].before, " \n") ==
		    strlen(cases[i].before));
		for (j = 0; j < cases[i].lines; j++) {
			line_of(j, cases[i].len, line);
			assert_int_equal(apartfile_add(path, line), 0);
		}
		assert_int_equal(stat(path, &st), 0);
		if (st.st_size != cases[i].size)
			fail_msg("%s: size %lld, want %lld", cases[i].name,
			    (long long)st.st_size, cases[i].size);
		t = slurp(path, &len);
		if (cases[i].before == NULL)
			check_lines(t, cases[i].lines, cases[i].len);
		free(t);
		unlink(path);
		free(path);
	}
}

static void
test_clear_keeps_the_room(void **state)
{
	struct stat	 st;
	char		*path, line[256];
	int		 j, n;

	(void)state;
	for (n = 1; n <= 200; n += 199) {
		path = tmpfile_path();
		apartfile_create(path, "a test change");
		for (j = 0; j < n; j++) {
			line_of(j, 100, line);
			assert_int_equal(apartfile_add(path, line), 0);
		}
		assert_false(apartfile_blank(path));
		apartfile_clear(path);
		assert_true(apartfile_blank(path));
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, APARTFILE_RESERVE);
		/* the room is used again from its start */
		line_of(0, 100, line);
		assert_int_equal(apartfile_add(path, line), 0);
		assert_int_equal(stat(path, &st), 0);
		assert_int_equal(st.st_size, APARTFILE_RESERVE);
		unlink(path);
		free(path);
	}
}

/*
 * A line that would take the file past what is read back is refused
 * (EFBIG), the file left as it was and readable; one that fits is kept
 * (atk37d F1: a file grown past 8 MiB lost every line at the next start).
 */
static void
test_never_past_the_read_limit(void **state)
{
	struct stat	 st;
	char		*path = tmpfile_path(), line[256];
	int		 fd;
	off_t		 size = APARTFILE_MAX - 30;

	(void)state;
	assert_true((fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600)) != -1);
	assert_int_equal(ftruncate(fd, size - 1), 0);
	assert_int_equal(pwrite(fd, "\n", 1, size - 1), 1);
	close(fd);
	line_of(0, 100, line);
	errno = 0;
	assert_int_equal(apartfile_add(path, line), -1);
	assert_int_equal(errno, EFBIG);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, size);
	line_of(1, 20, line);
	assert_int_equal(apartfile_add(path, line), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, size + 20);
	assert_true(st.st_size <= APARTFILE_MAX);
	/* still read whole: not blank, so a start would read its lines */
	assert_false(apartfile_blank(path));
	unlink(path);
	free(path);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_clear_keeps_the_room),
		cmocka_unit_test(test_never_past_the_read_limit),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
