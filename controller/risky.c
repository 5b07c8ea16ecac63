/* risky.c: the risky-path rules; see risky.h. */
#include <fnmatch.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <unicase.h>
#include <unictype.h>
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

/*
 * Characters drawn like '/' or '.' (risky_slashes, risky_dots): all that
 * UTS #39 confusables.txt gives for them, generated into
 * risky_lookalikes.h by scripts/gen-lookalikes.py, so that the list is
 * Unicode's, not one found case at a time. NFKC maps U+FF0F, U+FF0E and
 * U+FE52 itself; the look-alike key reads the rest as the ASCII character.
 */
#include "risky_lookalikes.h"

static int
risky_in(uint32_t cp, const uint32_t *v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (v[i] == cp)
			return 1;
	return 0;
}

int
risky_lookalike_cp(uint32_t cp)
{
	if (risky_in(cp, risky_slashes, sizeof(risky_slashes) /
	    sizeof(risky_slashes[0])))
		return '/';
	if (risky_in(cp, risky_dots, sizeof(risky_dots) /
	    sizeof(risky_dots[0])))
		return '.';
	if (cp == 0xff0f)
		return '/';
	if (cp == 0x2024 || cp == 0xfe52 || cp == 0xff0e)
		return '.';
	return 0;
}

/* Scripts that may share a name (UTS #39 "highly restrictive"). */
static unsigned
risky_script_bit(const uc_script_t *sc)
{
	static const char	*const names[] = { "Latin", "Han", "Hiragana",
	    "Katakana", "Bopomofo", "Hangul" };
	size_t			 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strcmp(sc->name, names[i]) == 0)
			return 1u << i;
	return 0;
}

/* 1 when a word's scripts (other: the one outside cjk) don't mix. */
static int
risky_mixed_word(const uc_script_t *other, unsigned cjk)
{
	if (other != NULL)
		return cjk != 0;
	/* Latin + Han + Hiragana + Katakana, + Bopomofo, or + Hangul */
	return (cjk & ~0x0fu) != 0 && (cjk & ~0x13u) != 0 &&
	    (cjk & ~0x23u) != 0;
}

/*
 * 1 when a word (a run of letters, marks inside it included) of
 * s[0..n) has letters of scripts no name mixes. Words, not whole names:
 * a Cyrillic or Arabic name keeps its ".py".
 */
static int
risky_mixed_component(const uint8_t *s, size_t n)
{
	const uc_script_t	*sc, *other = NULL;
	const uint8_t		*p = s, *end = s + n;
	ucs4_t			 cp;
	unsigned		 cjk = 0, bit;
	int			 len;

	while (p < end && (len = u8_mbtouc(&cp, p, (size_t)(end - p))) > 0) {
		p += len;
		sc = uc_script(cp);
		if (sc != NULL && strcmp(sc->name, "Inherited") == 0)
			continue;
		if (!uc_is_property_alphabetic(cp) || sc == NULL ||
		    strcmp(sc->name, "Common") == 0) {
			if (risky_mixed_word(other, cjk))
				return 1;
			other = NULL;
			cjk = 0;
			continue;
		}
		if ((bit = risky_script_bit(sc)) != 0)
			cjk |= bit;
		else if (other != NULL && other != sc)
			return 1;
		else
			other = sc;
	}
	return risky_mixed_word(other, cjk);
}

int
risky_mixed_script(const char *relpath)
{
	const uint8_t	*s = (const uint8_t *)relpath, *slash;
	size_t		 n = strlen(relpath);

	if (u8_check(s, n) != NULL)
		return 0;
	while (n > 0) {
		slash = memchr(s, '/', n);
		if (risky_mixed_component(s, slash != NULL ?
		    (size_t)(slash - s) : n))
			return 1;
		if (slash == NULL)
			break;
		n -= (size_t)(slash - s) + 1;
		s = slash + 1;
	}
	return 0;
}

/* libunistring's len bytes at s as a C string (s freed), or NULL. */
static char *
risky_terminate(uint8_t *s, size_t len)
{
	char	*z;

	if (s == NULL)
		return NULL;
	if ((z = realloc(s, len + 1)) == NULL) {
		free(s);
		return NULL;
	}
	z[len] = '\0';
	return z;
}

char *
risky_key_dup(const char *relpath)
{
	const uint8_t	*s = (const uint8_t *)relpath;
	size_t		 n = strlen(relpath), i, o = 0, len = 0;
	uint8_t		*mapped, *folded;
	ucs4_t		 cp;
	int		 l, c;

	if (u8_check(s, n) != NULL)
		return NULL;		/* not UTF-8 */
	if ((mapped = malloc(n + 1)) == NULL)
		return NULL;
	for (i = 0; i < n; i += (size_t)l) {
		l = u8_mbtouc(&cp, s + i, n - i);
		if ((c = risky_lookalike_cp(cp)) != 0)
			mapped[o++] = (uint8_t)c;
		else {
			memcpy(mapped + o, s + i, (size_t)l);
			o += (size_t)l;
		}
	}
	folded = u8_casefold(mapped, o, NULL, UNINORM_NFKC, NULL, &len);
	free(mapped);
	return risky_terminate(folded, len);
}

/* Does the rule match path (its look-alike key, or the bytes)? */
static int
risky_rule_match(const struct risky_rule *r, const char *path)
{
	const char	*base;

	base = strrchr(path, '/');
	base = base != NULL ? base + 1 : path;
	return r->scope == RISKY_BASE ?
	    fnmatch(r->pattern, base, FNM_PERIOD | FNM_CASEFOLD) == 0 :
	    fnmatch(r->pattern, path, FNM_CASEFOLD) == 0;
}

char *
risky_nfc_dup(const char *relpath)
{
	size_t	 len = 0;
	uint8_t	*n;

	if (u8_check((const uint8_t *)relpath, strlen(relpath)) != NULL)
		return NULL;		/* not UTF-8 */
	n = u8_normalize(UNINORM_NFC, (const uint8_t *)relpath,
	    strlen(relpath), NULL, &len);
	return risky_terminate(n, len);
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
	const char	*w = NULL;
	char		*key;
	size_t		 i;

	if (risky_not_nfc(relpath))
		w = RISKY_WHY_NFC;
	else if (risky_mixed_script(relpath))
		w = RISKY_WHY_MIXED;
	key = risky_key_dup(relpath);
	for (i = 0; w == NULL && i < RISKY_NRULES; i++) {
		if (risky_rule_match(&risky_rules[i], relpath) ||
		    (key != NULL && risky_rule_match(&risky_rules[i], key)))
			w = risky_rules[i].why;
	}
	free(key);
	if (w != NULL && why != NULL)
		*why = w;
	return w != NULL;
}
