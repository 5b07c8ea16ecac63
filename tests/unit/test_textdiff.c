/*
 * test_textdiff.c: the in-process line diff: exact hunks for small
 * cases, and for random and adversarial inputs that applying the hunks
 * to the old text gives the new one (tests/lib/textdiff_check.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "textdiff.h"

#include "../lib/textdiff_check.h"

/* The unified body as text, the way workspace_text.c writes it. */
struct body {
	FILE	*f;
};

static int
body_hunk(void *arg, size_t a, size_t alen, size_t b, size_t blen)
{
	struct body	*t = arg;

	fprintf(t->f, "@@ -%zu,%zu +%zu,%zu @@\n", a, alen, b, blen);
	return 0;
}

static int
body_line(void *arg, char op, const char *text, size_t len, int noeol)
{
	struct body	*t = arg;

	fprintf(t->f, "%c%.*s\n%s", op, (int)len, text,
	    noeol ? "\\ No newline at end of file\n" : "");
	return 0;
}

static char *
body_of(const char *a, const char *b, unsigned context)
{
	struct body		 t;
	struct textdiff_out	 cb = { body_hunk, body_line, &t };
	char			*s = NULL;
	size_t			 n = 0;

	t.f = open_memstream(&s, &n);
	assert_non_null(t.f);
	assert_int_equal(textdiff_unified(a, strlen(a), b, strlen(b),
	    context, &cb), 0);
	fclose(t.f);
	return s;
}

struct body_case {
	const char	*a, *b, *want;
};

static const struct body_case body_cases[] = {
	{ "a\nb\nc\n", "a\nb\nc\n", "" },
	{ "", "x\n", "@@ -0,0 +1,1 @@\n+x\n" },
	{ "x\n", "", "@@ -1,1 +0,0 @@\n-x\n" },
	{ "a\nb\nc\n", "a\nB\nc\n", "@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n" },
	{ "a\nb\n", "a\nb", "@@ -1,2 +1,2 @@\n a\n-b\n+b\n"
	    "\\ No newline at end of file\n" },
	{ "1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n", "1\n2\n3\n4\n5\nx\n7\n8\n9\n10\n",
	    "@@ -3,7 +3,7 @@\n 3\n 4\n 5\n-6\n+x\n 7\n 8\n 9\n" },
	/* changes 9 lines apart: two hunks with 3 lines of context */
	{ "a\n1\n2\n3\n4\n5\n6\n7\n8\nb\n", "A\n1\n2\n3\n4\n5\n6\n7\n8\nB\n",
	    "@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n"
	    "@@ -7,4 +7,4 @@\n 6\n 7\n 8\n-b\n+B\n" },
	/* 6 apart: one hunk */
	{ "a\n1\n2\n3\n4\n5\nb\n", "A\n1\n2\n3\n4\n5\nB\n",
	    "@@ -1,7 +1,7 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n-b\n+B\n" },
	{ "\x1b[2K\n", "\x1b[2Kx\n", "@@ -1,1 +1,1 @@\n-\x1b[2K\n+\x1b[2Kx\n" },
};

static void
test_body(void **state)
{
	size_t	i;
	char	*s;

	(void)state;
	for (i = 0; i < sizeof(body_cases) / sizeof(body_cases[0]); i++) {
		s = body_of(body_cases[i].a, body_cases[i].b, 3);
		assert_string_equal(s, body_cases[i].want);
		free(s);
	}
}

static void
test_lines(void **state)
{
	(void)state;
	assert_int_equal(textdiff_lines("", 0), 0);
	assert_int_equal(textdiff_lines("a", 1), 1);
	assert_int_equal(textdiff_lines("a\n", 2), 1);
	assert_int_equal(textdiff_lines("a\nb", 3), 2);
	assert_int_equal(textdiff_lines("\n\n", 2), 2);
}

/* n random lines from an alphabet of k; some without a last newline. */
static char *
random_text(unsigned *seed, size_t n, unsigned k, size_t *len)
{
	char	*s = malloc(n * 8 + 1), *p = s;
	size_t	 i;

	assert_non_null(s);
	for (i = 0; i < n; i++)
		p += snprintf(p, 8, "%u\n", (unsigned)rand_r(seed) % k);
	if (n > 0 && rand_r(seed) % 4 == 0)
		p--;		/* no newline at the end */
	*len = (size_t)(p - s);
	return s;
}

static void
test_random(void **state)
{
	unsigned	seed = 16;
	size_t		i, alen, blen, na, nb;
	char		*a, *b;

	(void)state;
	for (i = 0; i < 3000; i++) {
		na = (size_t)rand_r(&seed) % 60;
		nb = (size_t)rand_r(&seed) % 60;
		a = random_text(&seed, na, 1 + (unsigned)i % 9, &alen);
		b = random_text(&seed, nb, 1 + (unsigned)i % 9, &blen);
		assert_int_equal(tdcheck_run(a, alen, b, blen, (unsigned)i % 5,
		    NULL), 0);
		free(a);
		free(b);
	}
}

/*
 * Past the cost limit: 20,000 distinct lines against the same lines in
 * another order. The diff must still be right (and finish).
 */
static void
test_expensive(void **state)
{
	size_t	 n = 20000, i, alen = 0, blen = 0, hunks = 0;
	char	*a = malloc(n * 12), *b = malloc(n * 12);

	(void)state;
	assert_non_null(a);
	assert_non_null(b);
	for (i = 0; i < n; i++)
		alen += (size_t)snprintf(a + alen, 12, "line %zu\n", i);
	for (i = 0; i < n; i++)
		blen += (size_t)snprintf(b + blen, 12, "line %zu\n",
		    (i * 7919) % n);
	assert_int_equal(tdcheck_run(a, alen, b, blen, 3, &hunks), 0);
	assert_true(hunks > 0);
	free(a);
	free(b);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_body),
		cmocka_unit_test(test_lines),
		cmocka_unit_test(test_random),
		cmocka_unit_test(test_expensive),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
