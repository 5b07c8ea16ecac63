/* hostsfile.c: a static name map in /etc/hosts format; see hostsfile.h. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "hostsfile.h"
#include "sglimits.h"

struct hostsfile_entry {
	char			name[SG_HOST_MAX + 1];
	struct sockaddr_storage	addr;
};

struct hostsfile {
	struct hostsfile_entry	*v;
	size_t			 n;
	size_t			 cap;
};

static int	hostsfile_line(struct hostsfile *, char *line, char **errp);
static int	hostsfile_add(struct hostsfile *, const char *name,
		    const struct sockaddr_storage *);
static int	hostsfile_cmp(const void *, const void *);
static char	*hostsfile_token(char **);

/* The next blank-separated word of *p, or NULL at the end of the line. */
static char *
hostsfile_token(char **p)
{
	char	*s = *p, *start;

	while (*s == ' ' || *s == '\t' || *s == '\r')
		s++;
	if (*s == '\0')
		return NULL;
	start = s;
	while (*s != '\0' && *s != ' ' && *s != '\t' && *s != '\r')
		s++;
	if (*s != '\0')
		*s++ = '\0';
	*p = s;
	return start;
}

/* Parse one line (comment already cut); 0, or -1 with *errp static. */
static int
hostsfile_line(struct hostsfile *hf, char *line, char **errp)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)&ss;
	char			*tok, *addr;
	struct host		 h;
	const char		*cause;
	int			 nnames = 0;

	addr = hostsfile_token(&line);
	if (addr == NULL)
		return 0;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &sin->sin_addr) == 1)
		sin->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &sin6->sin6_addr) == 1)
		sin6->sin6_family = AF_INET6;
	else {
		*errp = "invalid address";
		return -1;
	}
	while ((tok = hostsfile_token(&line)) != NULL) {
		if (host_normalize(tok, strlen(tok), &h, &cause) == -1) {
			*errp = (char *)cause;
			return -1;
		}
		if (hostsfile_add(hf, h.name, &ss) == -1) {
			*errp = "out of memory";
			return -1;
		}
		nnames++;
	}
	if (nnames == 0) {
		*errp = "address without a name";
		return -1;
	}
	return 0;
}

static int
hostsfile_add(struct hostsfile *hf, const char *name,
    const struct sockaddr_storage *ss)
{
	struct hostsfile_entry	*v;
	size_t			 cap;

	if (hf->n == hf->cap) {
		cap = hf->cap ? hf->cap * 2 : 16;
		v = reallocarray(hf->v, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		hf->v = v;
		hf->cap = cap;
	}
	snprintf(hf->v[hf->n].name, sizeof(hf->v[hf->n].name), "%s", name);
	hf->v[hf->n].addr = *ss;
	hf->n++;
	return 0;
}

/* Sort by name, keeping file order among equal names (index tiebreak). */
static int
hostsfile_cmp(const void *a, const void *b)
{
	const struct hostsfile_entry	*x = a, *y = b;
	int				 c = strcmp(x->name, y->name);

	if (c != 0)
		return c;
	return x < y ? -1 : x > y;
}

struct hostsfile *
hostsfile_parse(const char *text, size_t len, const char *file, char **cause)
{
	struct hostsfile	*hf;
	char			*copy, *line, *next, *hash, *err = NULL;
	int			 lineno = 0;

	*cause = NULL;
	if ((hf = calloc(1, sizeof(*hf))) == NULL ||
	    (copy = strndup(text, len)) == NULL) {
		free(hf);
		*cause = strdup("out of memory");
		return NULL;
	}
	if (memchr(text, '\0', len) != NULL) {
		err = "NUL byte in file";
		goto fail;
	}
	for (line = copy; line != NULL; line = next) {
		lineno++;
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((hash = strchr(line, '#')) != NULL)
			*hash = '\0';
		if (hostsfile_line(hf, line, &err) == -1)
			goto fail;
	}
	free(copy);
	/* qsort with the address tiebreak keeps file order stable. */
	if (hf->n > 1)		/* an empty map has no array at all */
		qsort(hf->v, hf->n, sizeof(*hf->v), hostsfile_cmp);
	return hf;
fail:
	if (asprintf(cause, "%s:%d: %s", file, lineno, err) == -1)
		*cause = NULL;
	free(copy);
	hostsfile_free(hf);
	return NULL;
}

struct hostsfile *
hostsfile_load(const char *path, char **cause)
{
	struct hostsfile	*hf;
	FILE			*f;
	char			*buf;
	size_t			 len;

	if ((f = fopen(path, "re")) == NULL) {
		if (asprintf(cause, "%s: %s", path, strerror(errno)) == -1)
			*cause = NULL;
		return NULL;
	}
	buf = malloc(SG_POLICY_FILE_MAX);
	if (buf == NULL) {
		fclose(f);
		*cause = strdup("out of memory");
		return NULL;
	}
	len = fread(buf, 1, SG_POLICY_FILE_MAX, f);
	fclose(f);
	hf = hostsfile_parse(buf, len, path, cause);
	free(buf);
	return hf;
}

void
hostsfile_free(struct hostsfile *hf)
{
	if (hf == NULL)
		return;
	free(hf->v);
	free(hf);
}

size_t
hostsfile_lookup(const struct hostsfile *hf, const char *name,
    struct sockaddr_storage *out, size_t max)
{
	size_t	lo = 0, hi = hf->n, mid, n = 0;

	/* Lower bound: the first entry whose name is >= name. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (strcmp(hf->v[mid].name, name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (lo < hf->n && n < max && strcmp(hf->v[lo].name, name) == 0)
		out[n++] = hf->v[lo++].addr;
	return n;
}
