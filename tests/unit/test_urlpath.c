/*
 * test_urlpath.c: the one reading of a request path that `paths` rules
 * are decided on (urlpath.h): what is refused, what is normalized, and
 * that a normalized path reads the same when normalized again.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <string.h>

#include "urlpath.h"

/* Refused: every spelling a server could read as another path. */
static void
test_ambiguous(void **state)
{
	static const char *const bad[] = {
		/* issue 15, finding 9 */
		"/simple/..;/admin", "/simple/%2e%2e;/admin",
		"/simple/..%3b/admin", "/simple/%252e%252e/admin",
		"/simple/%c0%ae%c0%ae/admin",
		/* dot segments, raw or encoded */
		"/simple/../admin", "/simple/./x", "/simple/..", "/.",
		"/simple/%2e%2e/admin", "/simple/%2E/x", "/simple/.%2e/x",
		/* separators and escapes of them */
		"/simple\\admin", "/simple/%5c../admin", "/simple%2fadmin",
		"/simple/%3badmin", "/a;b", "/%25", "/%",  "/%2", "/%zz",
		"/%00x", "/a%0d%0ab", "/%7f",
		/* bad UTF-8: overlong, stray continuation, surrogate */
		"/%c1%bf", "/%80", "/%e0%80%af", "/%ed%a0%80", "/%f5%80%80%80",
		"/%c3", "/%c3%28",
		/*
		 * Issue 15, F4: segments of dots and spaces (Windows trims
		 * trailing dots and spaces: "..%20" and "..." are ".."),
		 * and Unicode lookalikes of '.', '/' and '\' that NFKC
		 * (some Java and .NET stacks) folds to them.
		 */
		"/simple/..%20/admin", "/simple/.../admin", "/simple/.%20/x",
		"/simple/%20..%20/admin", "/simple/.%20.", "/simple/....",
		"/simple/%EF%BC%8E%EF%BC%8E/admin",	/* U+FF0E */
		"/simple/%EF%BC%8F..%EF%BC%8Fadmin",	/* U+FF0F */
		"/simple/%ef%bc%bc..%ef%bc%bcadmin",	/* U+FF3C */
		"/simple/%E2%80%A4%E2%80%A4/admin",	/* U+2024 */
		"/simple/%E2%80%A5/admin",		/* U+2025 */
		"/simple/%E2%80%A6/admin",		/* U+2026 */
		"/simple/%EF%B8%99/admin",		/* U+FE19 */
		"/simple/%EF%B8%B0/admin",		/* U+FE30 */
		"/simple/%EF%B9%92%EF%B9%92/admin",	/* U+FE52 */
		"/simple/%EF%B9%A8../admin",		/* U+FE68 */
		"/simple/x%E2%84%80y",			/* U+2100 a/c */
		"/simple/%E2%84%81", "/simple/%E2%84%85", "/simple/%E2%84%86",
		"/simple/..%E2%88%95admin",		/* U+2215 */
		"/simple/..%E2%88%96admin",		/* U+2216 */
		/*
		 * atk15r9 F3: best-fit backslashes (U+00A5, U+20A9), UTS #39
		 * confusables of '/' and '.', code points a normalizer drops
		 * or trims next to dots, and an NTFS stream on a dot segment.
		 */
		"/simple/..%C2%A5admin", "/simple/..%E2%82%A9admin",
		"/simple/..%E2%81%84admin", "/simple/%E2%A7%B8",
		"/simple/%E3%80%82%E3%80%82/admin",
		"/simple/%EF%BD%A1%EF%BD%A1/admin", "/simple/%EF%BD%A5",
		"/simple/.%C2%AD./admin", "/simple/.%E2%80%8B./admin",
		"/simple/.%CC%B8./admin", "/simple/..%C2%A0/admin",
		"/simple/..::$INDEX_ALLOCATION/admin", "/simple/a.%C3%A9",
		/* atk15r10 F3: an escaped colon, a named index stream */
		"/simple/..%3A%3A$INDEX_ALLOCATION/admin",
		"/simple/..%3a%3a%24INDEX_ALLOCATION/admin",
		"/simple/..%3A%3A%24DATA/admin",
		"/simple/..:$I30:$INDEX_ALLOCATION/admin", "/simple/a.b:c",
		/*
		 * atk15r11 F3: an escaped '?' or '#' after dots (a server that
		 * decodes, then cuts there, reads ".."), and '+' next to dots
		 * (a space to a form-decoding server; Windows trims it).
		 */
		"/simple/..%3F", "/simple/..%3f", "/simple/..%23",
		"/simple/..%3Fx/admin", "/simple/a.b%23c", "/simple/..+",
		"/simple/..%20+", "/simple/..+%20", "/simple/+..",
		/* not a path */
		"*", "", "simple/x", "/\xc3\xa9",
	};
	char		out[256];
	const char	*cause;
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cause = NULL;
		if (urlpath_normalize(bad[i], out, sizeof(out), &cause) != -1)
			fail_msg("\"%s\" was taken as \"%s\"", bad[i], out);
		assert_non_null(cause);
		assert_string_equal(out, "");
	}
}

/* Normalized: unreserved escapes decoded, hex uppercase, query kept. */
static void
test_normalized(void **state)
{
	static const struct {
		const char	*in;
		const char	*want;
	} t[] = {
		{ "/simple/pkg/", "/simple/pkg/" },
		{ "/", "/" },
		/* dots or spaces with other bytes are a name, not ".." */
		{ "/simple/a..%20b/", "/simple/a..%20b/" },
		{ "/simple/..a/", "/simple/..a/" },
		{ "/simple/%20/", "/simple/%20/" },
		{ "/simple/%C3%A9/", "/simple/%C3%A9/" },
		{ "/simple/%7epkg/%41%2d%5f", "/simple/~pkg/A-_" },
		{ "/a%20b", "/a%20b" },
		{ "/a%2a%3a", "/a%2A%3A" },
		{ "/caf%c3%a9", "/caf%C3%A9" },
		{ "/%f0%9f%98%80", "/%F0%9F%98%80" },
		{ "/simple//x", "/simple//x" },
		{ "/simple/pkg?x=/../admin;%2e", "/simple/pkg?x=/../admin;%2e" },
		{ "/a.b/..c/c..", "/a.b/..c/c.." },
		/* outside ASCII or a colon without a dot */
		{ "/simple/%C3%A9-x/a:b", "/simple/%C3%A9-x/a:b" },
		{ "/v2/x/blobs/sha256%3aab", "/v2/x/blobs/sha256%3Aab" },
		{ "/simple/a.b/%C3%A9", "/simple/a.b/%C3%A9" },
	};
	char		out[256], again[256];
	const char	*cause;
	size_t		i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		if (urlpath_normalize(t[i].in, out, sizeof(out), &cause) != 0)
			fail_msg("\"%s\" refused: %s", t[i].in, cause);
		assert_string_equal(out, t[i].want);
		assert_true(strlen(out) <= strlen(t[i].in));
		assert_int_equal(urlpath_normalize(out, again, sizeof(again),
		    &cause), 0);
		assert_string_equal(again, out);
	}
}

/*
 * atk15r9 F4: npm's "/@scope%2fname" read with "%2F" as data; the pieces
 * around it still get every check.
 */
static void
test_slash_as_data(void **state)
{
	static const char *const bad[] = {
		"/@s%2f..%2fadmin", "/@s%2f.", "/@s%2f..%20", "/@s%2f%2e%2e",
		"/@s%2fa.%C3%A9", "/@s%2f..::$DATA", "/@s%2f..;x",
		"/@s%2f..%3A%3A%24INDEX_ALLOCATION%2fadmin",
		"/@s%2f..:$I30:$INDEX_ALLOCATION%2fadmin",
	};
	char		out[256];
	const char	*cause;
	size_t		i;

	assert_int_equal(urlpath_normalize("/@scope%2fname", out,
	    sizeof(out), &cause), -1);
	assert_int_equal(urlpath_normalize_slash("/@scope%2fname", out,
	    sizeof(out), &cause), 0);
	assert_string_equal(out, "/@scope%2Fname");
	assert_int_equal(urlpath_normalize_slash(out, out + 128, 128,
	    &cause), 0);
	assert_string_equal(out + 128, out);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (urlpath_normalize_slash(bad[i], out, sizeof(out),
		    &cause) != -1)
			fail_msg("\"%s\" was taken as \"%s\"", bad[i], out);
}

/* The output buffer must hold the input: a short one is refused. */
static void
test_short_buffer(void **state)
{
	char		out[4];
	const char	*cause;

	assert_int_equal(urlpath_normalize("/abcdef", out, sizeof(out),
	    &cause), -1);
	assert_string_equal(out, "");
}

/*
 * atk15r11 F2: a prefix with a query names the whole query; repeating
 * its key after it no longer passes.
 */
static void
test_match(void **state)
{
	static const struct {
		const char	*path, *prefix;
		int		 match;
	} cases[] = {
		{ "/simple/x", "/simple/", 1 },
		{ "/simple", "/simple/", 0 },
		{ "/simple/x?a=b", "/simple/", 1 },
		{ "/r.git/info/refs?service=git-upload-pack",
		  "/r.git/info/refs?service=git-upload-pack", 1 },
		{ "/r.git/info/refs?service=git-upload-pack&service=git-"
		  "receive-pack", "/r.git/info/refs?service=git-upload-pack", 0 },
		{ "/r.git/info/refs?service=git-upload-packx",
		  "/r.git/info/refs?service=git-upload-pack", 0 },
		{ "/index.php?action=view&action=delete",
		  "/index.php?action=view", 0 },
		{ "/index.php?action=view", "/index.php?action=view", 1 },
		{ "/index.php/x?action=view", "/index.php?action=view", 0 },
	};
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		if (urlpath_match(cases[i].path, cases[i].prefix) !=
		    cases[i].match)
			fail_msg("%s against %s: want %d", cases[i].path,
			    cases[i].prefix, cases[i].match);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ambiguous),
		cmocka_unit_test(test_normalized),
		cmocka_unit_test(test_short_buffer),
		cmocka_unit_test(test_slash_as_data),
		cmocka_unit_test(test_match),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
