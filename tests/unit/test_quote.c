/*
 * test_quote.c: names quoted as git quotes them, text with control
 * characters, invalid UTF-8 and bidi controls escaped, and the UTF-8
 * decoder under both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "quote.h"

struct qcase {
	const char	*in;
	size_t		 len;
	const char	*want;
};

#define Q(s, w)	{ s, sizeof(s) - 1, w }

static const struct qcase path_cases[] = {
	Q("src/app.py", "src/app.py"),
	Q("caf\xc3\xa9.txt", "caf\xc3\xa9.txt"),
	Q("new\nline", "\"new\\nline\""),
	Q("x\nD README.md  (deleted: harmless)",
	    "\"x\\nD README.md  (deleted: harmless)\""),
	Q("\x1b[2Kevil", "\"\\033[2Kevil\""),
	Q("tab\there", "\"tab\\there\""),
	Q("q\"b\\s", "\"q\\\"b\\\\s\""),
	Q("lat\xe9n1", "\"lat\\351n1\""),
	Q("c1\xc2\x9b", "\"c1\\302\\233\""),
	Q("rtl\xe2\x80\xaegpj.exe", "\"rtl\\342\\200\\256gpj.exe\""),
	Q("del\x7f", "\"del\\177\""),
	Q("\xf0\x9f\x98\x80.md", "\xf0\x9f\x98\x80.md"),
	Q("over\xc0\xaflong", "\"over\\300\\257long\""),
	Q("cut\xe2\x82", "\"cut\\342\\202\""),
};

static const struct qcase text_cases[] = {
	Q("plain text", "plain text"),
	Q("\tindented", "\tindented"),
	Q("crlf\r", "crlf\r"),
	Q("over\rwrite", "over\\x0dwrite"),
	Q("\x1b[2K\x1b[1Afake", "\\x1b[2K\\x1b[1Afake"),
	Q("lat\xe9n", "lat\\xe9n"),
	Q("caf\xc3\xa9", "caf\xc3\xa9"),
	Q("bell\a", "bell\\x07"),
	Q("nul\0x", "nul\\x00x"),
	Q("csi\xc2\x9b" "31m", "csi\\xc2\\x9b31m"),
	Q("bidi\xe2\x81\xa6x", "bidi\\xe2\\x81\\xa6x"),
	/* default-ignorable: nothing on a terminal (atk16r7 F2) */
	Q("\"guest\xe1\x9e\xb4\"", "\"guest\\xe1\\x9e\\xb4\""),
	Q("ok\xe1\x9e\xb5", "ok\\xe1\\x9e\\xb5"),
	Q("is_admin\xe1\xa0\x8b", "is_admin\\xe1\\xa0\\x8b"),
	Q("m\xe1\xa0\x8f", "m\\xe1\\xa0\\x8f"),
	Q("d\xf0\x9b\xb2\xa0", "d\\xf0\\x9b\\xb2\\xa0"),
	Q("n\xf0\x9d\x85\xb3", "n\\xf0\\x9d\\x85\\xb3"),
	Q("e\xf0\x93\x90\xb0", "e\\xf0\\x93\\x90\\xb0"),
	/* blank: U+00A0, U+2009, U+3000, U+2800 */
	Q("a\xc2\xa0" "b", "a\\xc2\\xa0b"),
	Q("a\xe2\x80\x89" "b", "a\\xe2\\x80\\x89b"),
	Q("a\xe3\x80\x80" "b", "a\\xe3\\x80\\x80b"),
	Q("a\xe2\xa0\x80" "b", "a\\xe2\\xa0\\x80b"),
	Q("snow\xe2\x98\x83", "snow\xe2\x98\x83"),
	/* a literal "\x0d" is not shown as a CR is (atk16r7 F3) */
	Q("C:\\x0dimport os", "C:\\x5cx0dimport os"),
	Q("C:\rimport os", "C:\\x0dimport os"),
	Q("a\\xb", "a\\x5cxb"),
	Q("a\\\x1b", "a\\\\x1b"),
	Q("C:\\dir\\n", "C:\\dir\\n"),
	Q("end\\", "end\\"),
};

/* A CR at a line's end: kept on a context line, shown on a - or + line. */
static const struct qcase line_cr_cases[] = {
	Q("cd /tmp/build\r", "cd /tmp/build\\x0d"),
	Q("cd /tmp/build", "cd /tmp/build"),
	Q("mid\rend\r", "mid\\x0dend\\x0d"),
};

static char *
run_path(const struct qcase *c)
{
	char	*s = NULL;
	size_t	 n = 0;
	FILE	*f = open_memstream(&s, &n);

	assert_non_null(f);
	assert_int_equal(quote_path(f, c->in, c->len), 0);
	fclose(f);
	return s;
}

static void
test_path(void **state)
{
	size_t	i;
	char	*s;

	(void)state;
	for (i = 0; i < sizeof(path_cases) / sizeof(path_cases[0]); i++) {
		s = run_path(&path_cases[i]);
		assert_string_equal(s, path_cases[i].want);
		assert_int_equal(quote_path_needed(path_cases[i].in,
		    path_cases[i].len), s[0] == '"');
		free(s);
	}
	s = quote_path_dup("a\nb");
	assert_string_equal(s, "\"a\\nb\"");
	free(s);
}

static void
test_text(void **state)
{
	size_t	i, esc;
	char	*s;
	FILE	*f;
	size_t	 n;

	(void)state;
	for (i = 0; i < sizeof(text_cases) / sizeof(text_cases[0]); i++) {
		s = NULL;
		esc = 0;
		f = open_memstream(&s, &n);
		assert_non_null(f);
		assert_int_equal(quote_text(f, text_cases[i].in,
		    text_cases[i].len, &esc), 0);
		fclose(f);
		assert_memory_equal(s, text_cases[i].want,
		    strlen(text_cases[i].want) + 1);
		assert_int_equal(esc != 0,
		    strcmp(text_cases[i].in, text_cases[i].want) != 0 ||
		    text_cases[i].len != strlen(text_cases[i].want));
		free(s);
	}
	for (i = 0; i < sizeof(line_cr_cases) / sizeof(line_cr_cases[0]);
	    i++) {
		s = NULL;
		f = open_memstream(&s, &n);
		assert_non_null(f);
		assert_int_equal(quote_line(f, line_cr_cases[i].in,
		    line_cr_cases[i].len, 0, NULL), 0);
		fclose(f);
		assert_string_equal(s, line_cr_cases[i].want);
		free(s);
	}
	/* a cause holding a name the sandbox chose, as cmd_warn_text shows it */
	s = quote_text_dup("cannot read 'a\033[2Jb': bad\r\n");
	assert_non_null(s);
	assert_string_equal(s, "cannot read 'a\\x1b[2Jb': bad\\x0d\\x0a");
	free(s);
	/* a value ending in a lone CR, inside the controller's own line
	   (atk1921k F3: a replica's string overwrote the line) */
	s = quote_text_dup("ok\r");
	assert_non_null(s);
	assert_string_equal(s, "ok\\x0d");
	free(s);
}

static void
test_utf8(void **state)
{
	uint32_t	cp = 0;

	(void)state;
	assert_int_equal(quote_utf8_len((const unsigned char *)"a", 1, &cp),
	    1);
	assert_int_equal(quote_utf8_len((const unsigned char *)"\xc3\xa9", 2,
	    &cp), 2);
	assert_int_equal(cp, 0xe9);
	assert_int_equal(quote_utf8_len((const unsigned char *)"\xed\xa0\x80",
	    3, &cp), 0);	/* a surrogate */
	assert_int_equal(quote_utf8_len((const unsigned char *)
	    "\xf4\x90\x80\x80", 4, &cp), 0);	/* past U+10FFFF */
	assert_int_equal(quote_utf8_len((const unsigned char *)"\xe0\x80\x80",
	    3, &cp), 0);	/* overlong */
	assert_true(quote_unsafe_cp(0x202e));
	assert_true(quote_unsafe_cp(0x9b));
	assert_false(quote_unsafe_cp(0xe9));
	/* bidi and invisible characters a name could hide behind */
	assert_true(quote_unsafe_cp(0x061c));
	assert_true(quote_unsafe_cp(0x200b));
	assert_true(quote_unsafe_cp(0xfeff));
	assert_true(quote_unsafe_cp(0x2028));
	assert_true(quote_unsafe_cp(0x2029));
	assert_true(quote_unsafe_cp(0x2060));
	assert_false(quote_unsafe_cp(0x2030));
	assert_false(quote_unsafe_cp(0x4e2d));
}

/* Characters that render blank, by Unicode property, make a name quoted. */
static void
test_blank(void **state)
{
	static const uint32_t	blank[] = { 0x00a0, 0x1680, 0x2000, 0x2009,
	    0x200a, 0x202f, 0x205f, 0x3000, 0x2800, 0x3164, 0x115f, 0x00ad,
	    0x200b, 0xfe0f, 0x85, 0x17b4, 0x17b5, 0x180b, 0x180f, 0x1bca0,
	    0x1d173, 0x13430 };
	static const uint32_t	shown[] = { ' ', 'a', 0xe9, 0x4e2d, 0x2801,
	    0x0622, 0x212b, 0x0301 };
	size_t	i;

	(void)state;
	for (i = 0; i < sizeof(blank) / sizeof(blank[0]); i++)
		if (!quote_blank_cp(blank[i]))
			fail_msg("U+%04X should count as blank", blank[i]);
	for (i = 0; i < sizeof(shown) / sizeof(shown[0]); i++)
		if (quote_blank_cp(shown[i]))
			fail_msg("U+%04X should not count as blank", shown[i]);
	assert_int_equal(quote_path_needed("build.sh\xe2\xa0\x80", 11), 1);
	assert_int_equal(quote_path_needed("build.sh\xc2\xa0", 10), 1);
	assert_int_equal(quote_path_needed("build.sh\xe3\x80\x80", 11), 1);
	assert_int_equal(quote_path_needed("build.sh ", 9), 1);
	assert_int_equal(quote_path_needed("dir /x", 6), 1);
	assert_int_equal(quote_path_needed("a b.txt", 7), 0);
	assert_int_equal(quote_path_needed("caf\xc3\xa9", 5), 0);
	/* drawn like '/' or '.' */
	assert_int_equal(quote_path_needed("src\xe2\x88\x95" "app.py", 12), 1);
	assert_int_equal(quote_path_needed("src\xef\xbc\x8f" "app.py", 12), 1);
	assert_int_equal(quote_path_needed("src\xe2\x81\x84" "app.py", 12), 1);
	assert_int_equal(quote_path_needed("setup\xe2\x80\xa4py", 10), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_path),
		cmocka_unit_test(test_text),
		cmocka_unit_test(test_utf8),
		cmocka_unit_test(test_blank),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
