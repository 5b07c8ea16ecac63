/* test_risky.c: the risky-path rules table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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
};

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
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
