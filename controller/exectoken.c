/* exectoken.c: an exec's signed sandbox token; exectoken.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "exectoken.h"
#include "util.h"

static int	exectoken_cmp(const void *, const void *);
static int	exectoken_sets(struct token *, json_t *, const char **);

static int
exectoken_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
exectoken_grants_digest(json_t *grants, const char *sandbox,
    const char *run, unsigned char *d)
{
	char		**lines, *all = NULL, *tmp;
	const char	 *gs, *gr;
	json_t		 *g;
	size_t		  i, n = 0;
	int		  rc = 0;

	memset(d, 0, TOKEN_DIGEST_RAW);
	lines = util_xcalloc(json_array_size(grants) + 1, sizeof(*lines));
	json_array_foreach(grants, i, g) {
		gs = json_string_value(json_object_get(g, "sandbox"));
		gr = json_string_value(json_object_get(g, "run_id"));
		if (gs == NULL || strcmp(gs, sandbox) != 0 || (gr != NULL &&
		    (run == NULL || strcmp(gr, run) != 0)))
			continue;
		util_xasprintf(&lines[n++], "%s %lld %s %s\n",
		    json_string_value(json_object_get(g, "host")) ?: "",
		    (long long)json_integer_value(json_object_get(g, "port")),
		    gr ? gr : "-", json_string_value(json_object_get(g,
		    "expires")) ?: "");
	}
	qsort(lines, n, sizeof(*lines), exectoken_cmp);
	all = util_xstrdup("");
	for (i = 0; i < n; i++) {
		util_xasprintf(&tmp, "%s%s", all, lines[i]);
		free(all);
		all = tmp;
		free(lines[i]);
	}
	if (n > 0 && token_digest(all, strlen(all), d) == -1)
		rc = -1;
	free(all);
	free(lines);
	return rc;
}

/* The sets, "a,b", into t->sets. */
static int
exectoken_sets(struct token *t, json_t *sets, const char **cause)
{
	const char	*s;
	size_t		 i, off = 0, len;

	t->sets[0] = '\0';
	for (i = 0; i < json_array_size(sets); i++) {
		if ((s = json_string_value(json_array_get(sets, i))) == NULL)
			continue;
		len = strlen(s);
		if (off + len + (off > 0) > TOKEN_SETS_MAX) {
			*cause = "the sets in force are longer than a token "
			    "holds";
			return -1;
		}
		snprintf(t->sets + off, sizeof(t->sets) - off, "%s%s",
		    off > 0 ? "," : "", s);
		off += len + (off > 0);
	}
	return 0;
}

int
exectoken_fill(struct token *t, const char *sandbox, const char *run,
    json_t *sets, json_t *grants, time_t now, long long timeout,
    const char **cause)
{
	long long	ttl;

	memset(t, 0, sizeof(*t));
	if (strlen(sandbox) > TOKEN_ID_MAX || strlen(run) > TOKEN_ID_MAX) {
		*cause = "a sandbox or run id longer than a token holds";
		return -1;
	}
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", sandbox);
	snprintf(t->run, sizeof(t->run), "%s", run);
	if (exectoken_sets(t, sets, cause) == -1)
		return -1;
	if (exectoken_grants_digest(grants, sandbox, run, t->grants) == -1) {
		*cause = "cannot hash the grants";
		return -1;
	}
	ttl = timeout > 0 && timeout < TOKEN_TTL_MAX - EXECTOKEN_MARGIN ?
	    timeout + EXECTOKEN_MARGIN : TOKEN_TTL_MAX;
	t->issued = (uint64_t)now;
	t->expires = t->issued + (uint64_t)ttl;
	return 0;
}
