/* secret.c: credential values for terminated sessions; see secret.h. */
#include <sys/mman.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>

#include "policy.h"
#include "secret.h"
#include "util.h"

/* One value in pages of its own, out of core dumps. */
struct secret {
	char	 name[SG_POLICY_SET_NAME_MAX + 1];
	char	*value;
	size_t	 maplen;
};

struct secretstore {
	struct secret	*v;
	size_t		 n;
};

static void	secret_wipe(struct secret *);
static int	secret_read(const char *, const char *, struct secret *,
		    char **);
static void	secret_warn(char **, const char *, const char *);

struct secretstore *
secret_store_new(void)
{
	return util_xcalloc(1, sizeof(struct secretstore));
}

static void
secret_wipe(struct secret *s)
{
	if (s->value == NULL)
		return;
	OPENSSL_cleanse(s->value, s->maplen);
	munmap(s->value, s->maplen);
	s->value = NULL;
}

void
secret_store_free(struct secretstore *st)
{
	size_t	i;

	if (st == NULL)
		return;
	for (i = 0; i < st->n; i++)
		secret_wipe(&st->v[i]);
	free(st->v);
	free(st);
}

static void
secret_warn(char **w, const char *name, const char *why)
{
	char	*n;

	util_xasprintf(&n, "%ssecret \"%s\" left out: %s\n", *w ? *w : "",
	    name, why);
	free(*w);
	*w = n;
}

/* Read dir/name into s (mapped, locked if possible, not dumped). */
static int
secret_read(const char *dir, const char *name, struct secret *s,
    char **cause)
{
	char	*path, buf[SECRET_VALUE_MAX + 2];
	ssize_t	 n;
	size_t	 len = 0, page = (size_t)sysconf(_SC_PAGESIZE);
	int	 fd, rc = -1;

	util_xasprintf(&path, "%s/%s", dir, name);
	fd = util_open_private(path, "secret", SECRET_VALUE_MAX + 1, 1, cause);
	free(path);
	if (fd == -1)
		return -1;
	while (len < sizeof(buf) && (n = read(fd, buf + len,
	    sizeof(buf) - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (!policy_secret_value_valid(buf, len)) {
		util_xasprintf(cause, "empty, too long, or holds a control "
		    "character");
		goto out;
	}
	s->maplen = (len + 1 + page - 1) / page * page;
	s->value = mmap(NULL, s->maplen, PROT_READ | PROT_WRITE,
	    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (s->value == MAP_FAILED) {
		s->value = NULL;
		util_xasprintf(cause, "out of memory");
		goto out;
	}
	(void)madvise(s->value, s->maplen, MADV_DONTDUMP);
	(void)mlock(s->value, s->maplen);
	memcpy(s->value, buf, len);
	s->value[len] = '\0';
	util_strlcpy(s->name, name, sizeof(s->name));
	rc = 0;
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	return rc;
}

int
secret_store_load(struct secretstore *st, const char *dir, char **warnings,
    char **cause)
{
	struct secret	*v;
	struct dirent	*de;
	DIR		*d;
	char		*why;
	size_t		 n = 0, i;

	*warnings = NULL;
	if ((d = opendir(dir)) == NULL) {
		util_xasprintf(cause, "cannot read the secrets folder \"%s\": "
		    "%s", dir, strerror(errno));
		return -1;
	}
	v = util_xcalloc(SECRET_COUNT_MAX, sizeof(*v));
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		if (!policy_set_name_valid(de->d_name)) {
			secret_warn(warnings, de->d_name, "not a secret name");
			continue;
		}
		if (n == SECRET_COUNT_MAX) {
			secret_warn(warnings, de->d_name, "too many secrets");
			continue;
		}
		why = NULL;
		if (secret_read(dir, de->d_name, &v[n], &why) == -1) {
			secret_warn(warnings, de->d_name, why);
			free(why);
			continue;
		}
		n++;
	}
	closedir(d);
	for (i = 0; i < st->n; i++)
		secret_wipe(&st->v[i]);
	free(st->v);
	st->v = v;
	st->n = n;
	return (int)n;
}

const char *
secret_get(const struct secretstore *st, const char *name)
{
	size_t	i;

	if (st == NULL)
		return NULL;
	for (i = 0; i < st->n; i++)
		if (strcmp(st->v[i].name, name) == 0)
			return st->v[i].value;
	return NULL;
}
