/* test_risky.c: the risky-path rules table and the NFC name classifier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "risky.h"

struct risky_case {
	const char	*path;
	int		 risky;
};

static const struct risky_case risky_cases[] = {
	{ ".github/workflows/ci.yml", 1 },
	{ ".github/workflows/sub/x.yaml", 1 },
	{ ".github/CODEOWNERS", 0 },
	{ ".gitlab-ci.yml", 1 },
	{ "Makefile", 1 },
	{ "src/Makefile", 1 },
	{ "rules.mk", 1 },
	{ "lib/build/common.mk", 1 },
	{ "package.json", 1 },
	{ "web/package.json", 1 },
	{ "package-lock.json", 0 },
	{ "setup.py", 1 },
	{ "setup.cfg", 1 },
	{ "pyproject.toml", 1 },
	{ ".vscode/tasks.json", 1 },
	{ ".vscode/settings.json", 0 },
	{ ".envrc", 1 },
	{ ".bashrc", 1 },
	{ "home/.zshrc", 1 },
	{ ".profile", 1 },
	{ ".bash_profile", 1 },
	{ ".githooks/pre-commit", 1 },
	{ ".git/config", 1 },
	{ ".gitmodules", 1 },
	{ ".gitattributes", 1 },
	{ ".gitignore", 0 },
	{ "Dockerfile", 1 },
	{ "docker/Dockerfile", 1 },
	{ ".pre-commit-config.yaml", 1 },
	{ "src/main.c", 0 },
	{ "README.md", 0 },
	{ "docs/Makefile.txt", 0 },
	{ "a..b", 0 },
	{ "caf\xc3\xa9.py", 0 },		/* NFC */
	{ "cafe\xcc\x81.py", 1 },		/* NFD: e + U+0301 */
	{ "src/\xe1\x84\x92\xe1\x85\xa1.txt", 1 },	/* Hangul jamo */
	/* not in NFC, with no combining character of any list */
	{ "\xe2\x84\xabngstrom.py", 1 },		/* U+212B ANGSTROM SIGN */
	{ "\xe2\x84\xaa" "config", 1 },		/* U+212A KELVIN SIGN */
	{ "\xd8\xa7\xd9\x93.py", 1 },		/* alef + U+0653 */
	{ "\xd8\xa7\xd9\x94mn.py", 1 },		/* alef + U+0654 */
	{ "dir/\xe2\x84\xab/x.py", 1 },		/* in a folder's name */
	{ "\xc3\x85ngstrom.py", 0 },		/* U+00C5: NFC */
	{ "\xd8\xa2.py", 0 },			/* U+0622: NFC */
	{ "\xed\x95\x9c.txt", 0 },		/* Hangul syllable: NFC */
	{ "build.sh\xe2\xa0\x80", 0 },		/* blank, but NFC: quoted */
	{ "caf\xe9" ".py", 0 },			/* not UTF-8: never applied */
	/* the rules match case-insensitively and the look-alike key */
	{ ".GIT/hooks/post-checkout", 1 },
	{ ".GitHub/workflows/evil.yml", 1 },
	{ ".VSCode/tasks.json", 1 },
	{ "PACKAGE.JSON", 1 },
	{ "SETUP.PY", 1 },
	{ ".BASHRC", 1 },
	{ "DOCKERFILE", 1 },
	{ "setup\xe2\x80\xa4py", 1 },		/* U+2024 ONE DOT LEADER */
	{ ".github\xe2\x88\x95workflows\xe2\x88\x95x.yml", 1 },	/* U+2215 */
	{ "package\xef\xbc\x8ejson", 1 },	/* U+FF0E FULLWIDTH FULL STOP */
	/* confusables.txt's, once missing from a hand-kept list */
	{ "setup\xd9\xa0py", 1 },		/* U+0660 ARABIC-INDIC ZERO */
	{ "setup\xdb\xb0py", 1 },		/* U+06F0 EXT. ARABIC-INDIC ZERO */
	{ ".github\xe2\x9f\x8bworkflows/x.yml", 1 },	/* U+27CB */
	{ ".github\xe3\x87\x93workflows/x.yml", 1 },	/* U+31D3 */
	{ ".github\xe4\xb8\xbfworkflows/x.yml", 1 },	/* U+4E3F */
	/* letters of scripts no name mixes */
	{ "s\xd0\xb5tup.py", 1 },		/* Latin and Cyrillic U+0435 */
	{ "src/p\xce\xbfrt.c", 1 },		/* Latin and Greek U+03BF */
	{ "\xd0\xbf\xd1\x80\xd0\xb8\xd0\xbc\xd0\xb5\xd1\x80.txt", 0 },	/* Cyrillic only */
	{ "\xe6\x97\xa5\xe6\x9c\xac\xe3\x83\x86\xe3\x82\xb9\xe3\x83\x88" "a.txt", 0 },	/* Han, Katakana, Latin */
	{ "\xed\x95\x9c\xe5\xad\x97" "a.txt", 0 },	/* Hangul, Han, Latin */
	{ "\xd0\xbf/abc.txt", 0 },		/* one script per name */
	{ "\xd0\xbf\xd1\x80.py", 0 },		/* a Cyrillic word, a Latin extension */
	{ "s\xd0\xb5tup_v2.py", 1 },
	{ "CONTRIBUTING.md", 0 },
};

/* risky_not_nfc and risky_nfc_dup, the classifier's two halves. */
static void
test_risky_nfc(void **state)
{
	char	*n;

	(void)state;
	assert_int_equal(risky_not_nfc("Kconfig"), 0);
	assert_int_equal(risky_not_nfc("\xe2\x84\xaa" "config"), 1);
	assert_int_equal(risky_not_nfc("\xff\xfe"), 0);
	n = risky_nfc_dup("\xe2\x84\xaa" "config");
	assert_non_null(n);
	assert_string_equal(n, "Kconfig");
	free(n);
	n = risky_nfc_dup("\xd8\xa7\xd9\x94mn.py");
	assert_non_null(n);
	assert_string_equal(n, "\xd8\xa3" "mn.py");
	free(n);
	n = risky_nfc_dup("cafe\xcc\x81");
	assert_non_null(n);
	assert_string_equal(n, "caf\xc3\xa9");
	free(n);
	assert_null(risky_nfc_dup("\xc3"));
}

/* The look-alike key: slash and dot look-alikes, NFKC, case folding. */
static void
test_risky_key(void **state)
{
	static const char	*const same[][2] = {
		{ "setup\xe2\x80\xa4py", "setup.py" },	/* U+2024 */
		{ "src\xe2\x88\x95" "app.py", "src/app.py" },	/* U+2215 */
		{ "src\xef\xbc\x8f" "app.py", "src/app.py" },	/* U+FF0F */
		{ "src\xe2\x81\x84" "app.py", "src/app.py" },	/* U+2044 */
		{ "src\xe2\x9f\x8b" "app.py", "src/app.py" },	/* U+27CB */
		{ "src\xe3\x87\x93" "app.py", "src/app.py" },	/* U+31D3 */
		{ "src\xe4\xb8\xbf" "app.py", "src/app.py" },	/* U+4E3F */
		{ "setup\xd9\xa0py", "setup.py" },	/* U+0660 */
		{ "setup\xdb\xb0py", "setup.py" },	/* U+06F0 */
		{ "con\xef\xac\x81g.py", "config.py" },	/* U+FB01 fi */
		{ "SETUP.PY", "setup.py" },
		{ "\xe2\x84\xaa" "config", "kconfig" },	/* U+212A */
		{ "cafe\xcc\x81", "caf\xc3\xa9" },
	};
	char	*k;
	size_t	 i;

	(void)state;
	for (i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
		k = risky_key_dup(same[i][0]);
		assert_non_null(k);
		if (strcmp(k, same[i][1]) != 0)
			fail_msg("key of '%s' is '%s', not '%s'", same[i][0], k,
			    same[i][1]);
		free(k);
	}
	assert_null(risky_key_dup("\xc3"));
	assert_int_equal(risky_lookalike_cp(0x2215), '/');
	assert_int_equal(risky_lookalike_cp(0xff0f), '/');
	assert_int_equal(risky_lookalike_cp(0x2024), '.');
	assert_int_equal(risky_lookalike_cp('a'), 0);
	assert_int_equal(risky_lookalike_cp(0x30ce), 0);	/* katakana no */
}

static void
test_risky_table(void **state)
{
	const char	*why;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(risky_cases) / sizeof(risky_cases[0]); i++) {
		why = NULL;
		if (risky_path(risky_cases[i].path, &why) !=
		    risky_cases[i].risky)
			fail_msg("risky_path('%s') != %d", risky_cases[i].path,
			    risky_cases[i].risky);
		if (risky_cases[i].risky)
			assert_non_null(why);
	}
	assert_int_equal(risky_path("Makefile", NULL), 1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_risky_table),
		cmocka_unit_test(test_risky_nfc),
		cmocka_unit_test(test_risky_key),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
