/* repset.c: the proxy replicas a sandbox is registered with (repset.h). */
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

char *
repset_load(const char *id)
{
	char	 path[4096], *buf;
	ssize_t	 n;
	int	 fd;

	if (state_path(path, sizeof(path), id, REPSET_FILE) == -1 ||
	    (fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return NULL;
	buf = util_xmalloc(REPSET_MAX + 1);
	n = read(fd, buf, REPSET_MAX);
	close(fd);
	if (n <= 0) {
		free(buf);
		return NULL;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return buf;
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

int
repset_record(const char *id, char **cause)
{
	char	path[4096], *old = repset_load(id), *now, *set, *line;
	int	rc;

	now = proxyctl_set();
	set = repset_union(old ? old : "", now ? now : "");
	free(old);
	free(now);
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
