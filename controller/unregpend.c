/* unregpend.c: the unregisters the proxy still owes (unregpend.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "proxyctl.h"
#include "runrec.h"
#include "state.h"
#include "unregpend.h"
#include "util.h"

#define UNREGPEND_DIR	"unregister"

static int
unregpend_dir(char *buf, size_t size)
{
	int	n = snprintf(buf, size, "%s/" UNREGPEND_DIR, state_root());

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int
unregpend_path(char *buf, size_t size, const char *id)
{
	int	n = snprintf(buf, size, "%s/" UNREGPEND_DIR "/%s",
	    state_root(), id);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int
unregpend_add(const char *id, const char *why, char **cause)
{
	char	dir[4096], path[4096];
	int	fd, bad;

	if (unregpend_dir(dir, sizeof(dir)) == -1 ||
	    unregpend_path(path, sizeof(path), id) == -1)
		return util_cause(cause, "state path too long");
	if (state_mkdirs(dir, 0700) == -1 || (fd = open(path, O_WRONLY |
	    O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return util_cause(cause, "cannot keep it in %s: %s", path,
		    strerror(errno));
	bad = dprintf(fd, "%s\n", why) < 0 || fsync(fd) == -1;
	if (close(fd) == -1 || bad)
		return util_cause(cause, "cannot keep it in %s: %s", path,
		    strerror(errno));
	return 0;
}

void
unregpend_done(const char *id)
{
	char	path[4096];

	if (unregpend_path(path, sizeof(path), id) == 0 &&
	    unlink(path) == -1 && errno != ENOENT)
		log_warn("cannot remove %s", path);
}

/* id's kept unregister sent again: 0 done, or -1 with *why. */
static int
unregpend_one(const char *id, char **why)
{
	char	*c2 = NULL;

	if (proxyctl_unregister(id, why) == -1) {
		if (unregpend_add(id, *why, &c2) == -1) {
			log_warnx("warning: %s", c2);
			free(c2);
		}
		return -1;
	}
	unregpend_done(id);
	if (runrec_event("sandbox.unregistered", id, "the unregister kept "
	    "when the sandbox was removed is confirmed by every proxy "
	    "replica", &c2) == -1) {
		log_warnx("warning: run record not written: %s", c2);
		free(c2);
	}
	return 0;
}

int
unregpend_retry(int dry, unregpend_cb cb, void *arg)
{
	struct dirent	*de;
	DIR		*dp;
	char		 dir[4096], *why;
	int		 owed = 0;

	if (unregpend_dir(dir, sizeof(dir)) == -1 ||
	    (dp = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(dp)) != NULL) {
		if (state_valid_id(de->d_name) != 0)
			continue;
		why = NULL;
		if (dry) {
			cb(de->d_name, "not sent (--dry-run)", arg);
			owed++;
		} else if (unregpend_one(de->d_name, &why) == -1) {
			cb(de->d_name, why, arg);
			owed++;
		} else
			cb(de->d_name, NULL, arg);
		free(why);
	}
	closedir(dp);
	return owed;
}

void
unregpend_report(const char *id, const char *why, void *arg)
{
	(void)arg;
	if (why == NULL)
		printf("unregistered %s from the proxy (owed since it was "
		    "removed)\n", id);
	else
		log_warnx("warning: the unregister of %s (removed) is still "
		    "owed: %s", id, why);
}
