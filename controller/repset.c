/* repset.c: the proxy replicas a sandbox is registered with (repset.h). */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proxyctl.h"
#include "repset.h"
#include "state.h"
#include "util.h"

#define REPSET_FILE	"replicas"
#define REPSET_MAX	(PROXYCTL_TARGETS_MAX * PROXYCTL_URL_MAX)

/* The text of fd, a regular file ending in its newline (heap), or NULL. */
static char *
repset_text(int fd, const char **why)
{
	struct stat	 st;
	char		*buf;
	ssize_t		 n;

	*why = "not a regular file";
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode))
		return NULL;
	*why = "empty, cut or too long";
	buf = util_xmalloc(REPSET_MAX + 1);
	if ((n = read(fd, buf, REPSET_MAX)) <= 0 || buf[n - 1] != '\n') {
		if (n == -1)
			*why = strerror(errno);
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
}

char *
repset_load(const char *id, char **bad)
{
	char		 path[4096] = "", *set = NULL, whybuf[128];
	const char	*why = "state path too long";
	int		 fd = -1;

	*bad = NULL;
	/* this uid's alone (atk44f T1: one planted named a listener of
	   another uid's, which got the control token) */
	if (state_path(path, sizeof(path), id, REPSET_FILE) == 0 &&
	    (fd = state_open_private(path, whybuf, sizeof(whybuf))) == -1) {
		if (errno == ENOENT)	/* none recorded: an older sandgate */
			return NULL;
		why = whybuf;
	}
	if (fd != -1) {
		set = repset_text(fd, &why);
		close(fd);
	}
	if (set == NULL)
		util_xasprintf(bad, "the proxy replicas %s was registered "
		    "with cannot be read from %s: %s", id, path, why);
	return set;
}

/* Whether the comma-separated set holds name. */
static int
repset_has(const char *set, const char *name)
{
	size_t	len, nl = strlen(name);

	for (; *set != '\0'; set += len + (set[len] == ',')) {
		len = strcspn(set, ",");
		if (len == nl && memcmp(set, name, len) == 0)
			return 1;
	}
	return 0;
}

/* old with each name of add it does not hold yet (heap). */
static char *
repset_union(const char *old, const char *add)
{
	char	*set = util_xstrdup(old), *tmp, name[PROXYCTL_URL_MAX];
	size_t	 len;

	for (; *add != '\0'; add += len + (add[len] == ',')) {
		len = strcspn(add, ",");
		if (len == 0 || len >= sizeof(name))
			continue;
		memcpy(name, add, len);
		name[len] = '\0';
		if (repset_has(set, name))
			continue;
		util_xasprintf(&tmp, "%s%s%s", set, *set ? "," : "", name);
		free(set);
		set = tmp;
	}
	return set;
}

/* How many names the comma-separated set holds. */
static size_t
repset_count(const char *set)
{
	size_t	n = 0, len;

	for (; *set != '\0'; set += len + (set[len] == ','))
		n += (len = strcspn(set, ",")) > 0;
	return n;
}

/* repset_record() under the folder's lock. */
static int
repset_record_locked(const char *id, char **cause)
{
	char	path[4096], *bad, *old = repset_load(id, &bad), *now, *set;
	char	*line;
	int	rc, same;

	if (bad != NULL) {	/* not overwritten (atk1921i F8) */
		util_cause(cause, "%s: not recorded again", bad);
		free(bad);
		return -1;
	}
	now = proxyctl_set();
	set = repset_union(old ? old : "", now ? now : "");
	free(now);
	/* unchanged (each exec asks, atk1921i F3): nothing written */
	same = old != NULL && strcmp(old, set) == 0;
	free(old);
	if (same || repset_count(set) > PROXYCTL_TARGETS_MAX) {
		if (!same)
			util_cause(cause, "%s would be registered with more "
			    "than %d proxy replicas (%s): refused", id,
			    PROXYCTL_TARGETS_MAX, set);
		free(set);
		return same ? 0 : -1;
	}
	if (state_path(path, sizeof(path), id, REPSET_FILE) == -1) {
		free(set);
		return util_cause(cause, "state path too long");
	}
	util_xasprintf(&line, "%s\n", set);
	free(set);
	rc = state_replace(path, line, 0600);
	free(line);
	if (rc == -1)
		return util_cause(cause, "cannot record the proxy replicas of "
		    "%s in %s: %s", id, path, strerror(errno));
	return 0;
}

int
repset_record(const char *id, char **cause)
{
	char	dir[4096];
	int	dfd = -1, rc;

	/* two execs at once (the sandbox lock shared): neither one's lost */
	if (state_path(dir, sizeof(dir), id, NULL) == 0 &&
	    (dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) != -1)
		while (flock(dfd, LOCK_EX) == -1 && errno == EINTR)
			;
	rc = repset_record_locked(id, cause);
	if (dfd != -1)
		close(dfd);
	return rc;
}

int
repset_unknown(char *bad, int rc, char **left, char **why)
{
	char	*env, *tmp;

	if (bad == NULL)
		return rc;
	env = proxyctl_set();
	tmp = repset_union(*left ? *left : "", env ? env : "");
	free(env);
	free(*left);
	*left = tmp;
	util_xasprintf(&tmp, "%s%s%s", bad, *why ? "; " : "",
	    *why ? *why : "");
	free(*why);
	free(bad);
	*why = tmp;
	return -1;
}
