/* risky.c: the risky-path rules; see risky.h. */
#include <fnmatch.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "quote.h"
#include "risky.h"

/*
 * A rule matches the whole relative path (RISKY_PATH; '*' also crosses
 * folders, so nested hooks count) or the base name at any depth
 * (RISKY_BASE).
 */
enum risky_scope {
	RISKY_PATH,
	RISKY_BASE
};

struct risky_rule {
	enum risky_scope	 scope;
	const char		*pattern;
	const char		*why;
};

static const struct risky_rule risky_rules[] = {
	{ RISKY_PATH, ".github/workflows/*", "CI workflow" },
	{ RISKY_PATH, ".github/actions/*", "CI action" },
	{ RISKY_BASE, ".gitlab-ci.yml", "CI configuration" },
	{ RISKY_BASE, "Makefile", "build file" },
	{ RISKY_BASE, "GNUmakefile", "build file" },
	{ RISKY_BASE, "makefile", "build file" },
	{ RISKY_BASE, "*.mk", "build file" },
	{ RISKY_BASE, "package.json", "package scripts" },
	{ RISKY_BASE, "setup.py", "python build script" },
	{ RISKY_BASE, "setup.cfg", "python build configuration" },
	{ RISKY_BASE, "pyproject.toml", "python build configuration" },
	{ RISKY_PATH, ".vscode/tasks.json", "editor tasks" },
	{ RISKY_BASE, ".envrc", "direnv script" },
	{ RISKY_BASE, ".bashrc", "shell rc file" },
	{ RISKY_BASE, ".bash_profile", "shell rc file" },
	{ RISKY_BASE, ".bash_login", "shell rc file" },
	{ RISKY_BASE, ".zshrc", "shell rc file" },
	{ RISKY_BASE, ".zshenv", "shell rc file" },
	{ RISKY_BASE, ".zprofile", "shell rc file" },
	{ RISKY_BASE, ".profile", "shell rc file" },
	{ RISKY_PATH, ".githooks/*", "git hook" },
	{ RISKY_PATH, ".husky/*", "git hook" },
	{ RISKY_PATH, ".git/*", "git internals" },
	{ RISKY_BASE, ".gitmodules", "git configuration" },
	{ RISKY_BASE, ".gitattributes", "git configuration" },
	{ RISKY_BASE, "Dockerfile", "container build file" },
	{ RISKY_BASE, "Dockerfile.*", "container build file" },
	{ RISKY_BASE, "*.dockerfile", "container build file" },
	{ RISKY_BASE, ".pre-commit-config.yaml", "git hook configuration" },
};
#define RISKY_NRULES (sizeof(risky_rules) / sizeof(risky_rules[0]))

/*
 * Combining characters that Unicode normalisation composes with the
 * letter before them (and conjoining Hangul jamo): a name holding one
 * (cafe + U+0301) shows as another name (café) that may exist beside it.
 */
static const uint32_t risky_combining[][2] = {
	{ 0x0300, 0x036f }, { 0x1100, 0x11ff }, { 0x1ab0, 0x1aff },
	{ 0x1dc0, 0x1dff }, { 0x20d0, 0x20ff }, { 0x3099, 0x309a },
	{ 0xfe20, 0xfe2f },
};

static int
risky_decomposed(const char *relpath)
{
	const unsigned char	*s = (const unsigned char *)relpath;
	size_t			 n = strlen(relpath), l, i;
	uint32_t		 cp;

	while (n > 0) {
		if ((l = quote_utf8_len(s, n, &cp)) == 0)
			l = 1;
		else
			for (i = 0; i < sizeof(risky_combining) /
			    sizeof(risky_combining[0]); i++)
				if (cp >= risky_combining[i][0] &&
				    cp <= risky_combining[i][1])
					return 1;
		s += l;
		n -= l;
	}
	return 0;
}

int
risky_path(const char *relpath, const char **why)
{
	const struct risky_rule	*r;
	const char		*base;
	size_t			 i;

	if (risky_decomposed(relpath)) {
		if (why != NULL)
			*why = "name with a combining character: it may look "
			    "like another name";
		return 1;
	}

	base = strrchr(relpath, '/');
	base = base != NULL ? base + 1 : relpath;
	for (i = 0; i < RISKY_NRULES; i++) {
		r = &risky_rules[i];
		if (r->scope == RISKY_BASE ?
		    fnmatch(r->pattern, base, FNM_PERIOD) == 0 :
		    fnmatch(r->pattern, relpath, 0) == 0) {
			if (why != NULL)
				*why = r->why;
			return 1;
		}
	}
	return 0;
}
