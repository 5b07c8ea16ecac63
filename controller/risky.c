/* risky.c: the risky-path rules; see risky.h. */
#include <fnmatch.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <uninorm.h>
#include <unistr.h>

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

char *
risky_nfc_dup(const char *relpath)
{
	size_t	 len = 0;
	uint8_t	*n;
	char	*z;

	if (u8_check((const uint8_t *)relpath, strlen(relpath)) != NULL)
		return NULL;		/* not UTF-8 */
	n = u8_normalize(UNINORM_NFC, (const uint8_t *)relpath,
	    strlen(relpath), NULL, &len);
	if (n == NULL)
		return NULL;
	if ((z = realloc(n, len + 1)) == NULL) {
		free(n);
		return NULL;
	}
	z[len] = '\0';
	return z;
}

int
risky_not_nfc(const char *relpath)
{
	const unsigned char	*s = (const unsigned char *)relpath;
	char			*n;
	int			 differs;

	while (*s != '\0' && *s < 0x80)
		s++;
	if (*s == '\0')
		return 0;		/* ASCII is NFC */
	if ((n = risky_nfc_dup(relpath)) == NULL)
		return 0;	/* not UTF-8: never applied anyway */
	differs = strcmp(n, relpath) != 0;
	free(n);
	return differs;
}

int
risky_path(const char *relpath, const char **why)
{
	const struct risky_rule	*r;
	const char		*base;
	size_t			 i;

	if (risky_not_nfc(relpath)) {
		if (why != NULL)
			*why = RISKY_WHY_NFC;
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
