/*
 * test_ctltcp.c: the control API's bearer token (ctltcp.h) and the
 * policy watch's choice of inotify names (polwatch.h).
 */
#include <sys/stat.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ctltcp.h"
#include "polwatch.h"
#include "util.h"

#define TOK	"q7Z0v9Lk3X2mB8nR4tY6wE1aS5dF0gH2jK4lP6oI8uU="

static void
test_token_ok(void **state)
{
	static const struct {
		const char	*hdr;
		int		 ok;
	} cases[] = {
		{ "Bearer " TOK, 1 },
		{ "bearer " TOK, 1 },		/* the scheme has no case */
		{ "Bearer " TOK "x", 0 },
		{ "Bearer " TOK " ", 0 },
		{ "Bearer  " TOK, 0 },
		{ "Bearer q7Z0v9Lk3X2mB8nR4tY6wE1aS5dF0gH2jK4lP6oI8uU", 0 },
		{ "Bearer ", 0 },
		{ "Bearer", 0 },
		{ "Basic " TOK, 0 },
		{ TOK, 0 },
		{ "", 0 },
		{ NULL, 0 },
	};
	size_t	i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(ctltcp_token_ok(cases[i].hdr, TOK),
		    cases[i].ok);
	/* An empty token (never loaded) lets nobody in. */
	assert_int_equal(ctltcp_token_ok("Bearer ", ""), 0);
}

/* Write text to a fresh file of mode mode; its path (static). */
static const char *
token_file(const char *text, mode_t mode)
{
	static char	path[64];
	int		fd;

	snprintf(path, sizeof(path), "/tmp/test_ctltcp." UTIL_MKTEMP_SUFFIX);
	fd = mkstemp(path);
	assert_true(fd != -1);
	assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
	return path;
}

static void
test_token_read(void **state)
{
	static const struct {
		const char	*text;
		mode_t		 mode;
		const char	*cause;		/* NULL: accepted */
	} cases[] = {
		{ TOK "\n", 0600, NULL },
		{ TOK, 0400, NULL },
		{ TOK "\n", 0640, NULL },	/* fsGroup under Kubernetes */
		{ TOK "\n", 0604, "readable or writable by others" },
		{ TOK "\n", 0660, "readable or writable by others" },
		{ "short\n", 0600, "43 to 1024" },
		{ "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n", 0600,
		    "fewer than 10" },
		{ "q7Z0v9Lk3X2mB8nR4tY6 wE1aS5dF0gH2jK4lP6oI8uU=\n", 0600,
		    "space" },
		{ TOK "\n\n", 0600, "printable" },
	};
	char		 tok[CTLTCP_TOKEN_MAX + 1], *cause;
	const char	*path;
	size_t		 i;
	int		 rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		path = token_file(cases[i].text, cases[i].mode);
		cause = NULL;
		rc = ctltcp_token_read(path, tok, sizeof(tok), &cause);
		unlink(path);
		if (cases[i].cause == NULL) {
			assert_int_equal(rc, 0);
			assert_string_equal(tok, TOK);
		} else {
			assert_int_equal(rc, -1);
			assert_non_null(cause);
			assert_non_null(strstr(cause, cases[i].cause));
			assert_int_equal(tok[0], '\0');
		}
		free(cause);
	}
	cause = NULL;
	assert_int_equal(ctltcp_token_read("/nonexistent/token", tok,
	    sizeof(tok), &cause), -1);
	assert_non_null(cause);
	free(cause);
}

static void
test_watch_names(void **state)
{
	/*
	 * A ConfigMap folder: the ..data rename, and the links of files
	 * added or dropped, made or removed after it.
	 */
	assert_int_equal(polwatch_wants("..data", 1), 1);
	assert_int_equal(polwatch_wants("..data_tmp", 1), 0);
	assert_int_equal(polwatch_wants("..2026_12_02_10_00_00.1", 1), 0);
	assert_int_equal(polwatch_wants("test.yaml", 1), 1);
	assert_int_equal(polwatch_wants("README", 1), 0);
	assert_int_equal(polwatch_wants(NULL, 1), 0);
	/* A plain folder: .yaml files, not hidden ones or editor leftovers. */
	assert_int_equal(polwatch_wants("test.yaml", 0), 1);
	assert_int_equal(polwatch_wants(".test.yaml", 0), 0);
	assert_int_equal(polwatch_wants("test.yaml~", 0), 0);
	assert_int_equal(polwatch_wants(".yaml", 0), 0);
	assert_int_equal(polwatch_wants("..data", 0), 0);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_token_ok),
		cmocka_unit_test(test_token_read),
		cmocka_unit_test(test_watch_names),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
