/* test_risky.c: the risky-path rules table and the NFC name classifier. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
