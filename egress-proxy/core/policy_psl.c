/*
 * policy_psl.c: which names have public suffixes under them, from the
 * text of the public suffix list.
 *
 * "*.amazonaws.com" is no public suffix itself, yet the list has
 * s3.amazonaws.com and *.compute.amazonaws.com under it: each is where
 * strangers register their own names (anyone's bucket is
 * bucket.s3.amazonaws.com). A wildcard over such a name would allow all
 * of them, so the validator refuses it. libpsl answers "is this a public
 * suffix" but cannot list the suffixes under a name, so the list's text
 * is read once: for every rule, each name above it (and for "*.R" also R)
 * is a name with suffixes under it. Loaded once per process; read-only
 * afterwards, so safe from several threads.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpsl.h>

#include "policy_int.h"

#define PPSL_FILE	"/usr/share/publicsuffix/public_suffix_list.dat"
#define PPSL_LINE_MAX	512

/* A name with public suffixes under it, and one of those suffixes. */
struct ppsl_parent {
	char	*name;
	char	*example;
};

static struct ppsl_parent	*ppsl_v;
static size_t			 ppsl_n;
static int			 ppsl_missing;
static pthread_once_t		 ppsl_once = PTHREAD_ONCE_INIT;

static void	ppsl_init(void);
static FILE	*ppsl_open(void);
static void	ppsl_rule(const char *, size_t *);
static int	ppsl_add(const char *, const char *, size_t *);
static int	ppsl_cmp(const void *, const void *);

/* The list's text: the file the built-in list came from, or Debian's. */
static FILE *
ppsl_open(void)
{
	const char	*builtin = psl_builtin_filename();
	FILE		*f = NULL;

	if (builtin != NULL && *builtin != '\0')
		f = fopen(builtin, "re");
	if (f == NULL)
		f = fopen(PPSL_FILE, "re");
	return f;
}

static int
ppsl_add(const char *name, const char *example, size_t *cap)
{
	struct ppsl_parent	*nv;

	if (ppsl_n == *cap) {
		*cap = *cap ? *cap * 2 : 16384;
		if ((nv = realloc(ppsl_v, *cap * sizeof(*nv))) == NULL)
			return -1;
		ppsl_v = nv;
	}
	ppsl_v[ppsl_n].name = strdup(name);
	ppsl_v[ppsl_n].example = strdup(example);
	if (ppsl_v[ppsl_n].name == NULL || ppsl_v[ppsl_n].example == NULL) {
		free(ppsl_v[ppsl_n].name);
		free(ppsl_v[ppsl_n].example);
		return -1;
	}
	ppsl_n++;
	return 0;
}

/* One rule of the list: every name above it has a suffix under it. */
static void
ppsl_rule(const char *text, size_t *cap)
{
	struct host	 h;
	const char	*cause, *rule = text, *p;
	int		 wild = 0;

	if (*rule == '!')
		rule++;
	else if (strncmp(rule, "*.", 2) == 0) {
		rule += 2;
		wild = 1;
	}
	if (host_normalize(rule, strlen(rule), &h, &cause) == -1 ||
	    h.type != HOST_DNS)
		return;
	/* "*.R": the names under R are suffixes, so R has some under it. */
	if (wild)
		ppsl_add(h.name, text, cap);
	for (p = strchr(h.name, '.'); p != NULL; p = strchr(p + 1, '.'))
		ppsl_add(p + 1, text, cap);
}

static int
ppsl_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ppsl_parent *)a)->name,
	    ((const struct ppsl_parent *)b)->name);
}

static void
ppsl_init(void)
{
	char	 line[PPSL_LINE_MAX], *end;
	size_t	 cap = 0;
	FILE	*f;

	if ((f = ppsl_open()) == NULL) {
		ppsl_missing = 1;
		return;
	}
	while (fgets(line, sizeof(line), f) != NULL) {
		if (line[0] == '/' || line[0] == '\n' || line[0] == ' ' ||
		    line[0] == '\t')
			continue;
		end = line + strcspn(line, " \t\r\n");
		*end = '\0';
		if (line[0] != '\0')
			ppsl_rule(line, &cap);
	}
	fclose(f);
	if (ppsl_n > 0)
		qsort(ppsl_v, ppsl_n, sizeof(*ppsl_v), ppsl_cmp);
	else
		ppsl_missing = 1;
}

const char *
ppsl_inner(const char *name, int *missing)
{
	struct ppsl_parent	 key, *hit;

	pthread_once(&ppsl_once, ppsl_init);
	*missing = ppsl_missing;
	if (ppsl_missing)
		return NULL;
	key.name = (char *)name;
	hit = bsearch(&key, ppsl_v, ppsl_n, sizeof(*ppsl_v), ppsl_cmp);
	return hit != NULL ? hit->example : NULL;
}
