/* logfollow.c: following a log across its writer's rotations; logfollow.h. */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "logfollow.h"
#include "logread.h"
#include "logset.h"
#include "util.h"

struct logfollow {
	char		*dir;
	char		*name;
	char		*path;		/* dir/name: the current file */
	int		 fd;		/* the file read; -1: none yet */
	dev_t		 dev;
	ino_t		 ino;
	struct logread	*r;
	char		*cause;		/* the last listing's failure, shown */
};

static int	logfollow_take(struct logfollow *, int, long long);
static int	logfollow_lines(struct logfollow *,
		    void (*)(json_t *, void *), void *);
static int	logfollow_moved(struct logfollow *);
static int	logfollow_find(const struct logset *, dev_t, ino_t);
static int	logfollow_newer(struct logfollow *, const struct logset *,
		    void (*)(json_t *, void *), void *);
static int	logfollow_rotated(struct logfollow *,
		    void (*)(json_t *, void *), void *);

/* Follow a duplicate of fd from offset on. 0, or -1 (cause on stderr). */
static int
logfollow_take(struct logfollow *f, int fd, long long offset)
{
	struct stat	st;
	int		nfd;

	if ((nfd = dup(fd)) == -1 || fstat(nfd, &st) == -1 ||
	    lseek(nfd, (off_t)offset, SEEK_SET) == -1) {
		log_warnx("cannot follow '%s': %s", f->path, strerror(errno));
		if (nfd != -1)
			close(nfd);
		return -1;
	}
	if (f->fd != -1)
		close(f->fd);
	f->fd = nfd;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	logread_init(f->r, nfd, 1, -1);
	return 0;
}

struct logfollow *
logfollow_new(const struct logset *set)
{
	struct logfollow	*f = util_xcalloc(1, sizeof(*f));
	const char		*last, *slash;
	long long		 size;
	int			 i, fd;

	last = logset_name(set, logset_count(set) - 1);
	if ((slash = strrchr(last, '/')) == NULL)
		f->dir = util_xstrdup(".");
	else
		util_xasprintf(&f->dir, "%.*s", (int)(slash - last), last);
	f->name = util_xstrdup(slash != NULL ? slash + 1 : last);
	util_xasprintf(&f->path, "%s/%s", f->dir, f->name);
	f->r = util_xmalloc(sizeof(*f->r));
	f->fd = -1;
	for (i = logset_count(set) - 1; i >= 0; i--) {
		if ((fd = logset_fd(set, i, &size)) == -1)
			continue;
		if (logfollow_take(f, fd, size) == -1) {
			logfollow_free(f);
			return NULL;
		}
		break;
	}
	return f;
}

void
logfollow_free(struct logfollow *f)
{
	if (f == NULL)
		return;
	if (f->fd != -1)
		close(f->fd);
	free(f->r);
	free(f->cause);
	free(f->path);
	free(f->name);
	free(f->dir);
	free(f);
}

/* Every whole line read so far to cb. 0 at the end, -1 (cause shown). */
static int
logfollow_lines(struct logfollow *f, void (*cb)(json_t *, void *), void *arg)
{
	json_t	*obj;
	size_t	 len;
	int	 got;

	while ((got = logread_next(f->r, &len)) == 1) {
		if ((obj = logread_object(f->r->line, len)) == NULL)
			continue;
		cb(obj, arg);
		json_decref(obj);
	}
	if (got == -1)
		log_warnx("cannot read '%s' (followed): %s", f->path,
		    strerror(errno));
	return got;
}

/*
 * 1 when the name no longer holds the file read (the writer rotated it),
 * 0 when it does or is missing (moved, not yet replaced); a file cut
 * under the reader is read again from its start, saying so.
 */
static int
logfollow_moved(struct logfollow *f)
{
	struct stat	cur;

	if (lstat(f->path, &cur) == -1)
		return 0;
	if (cur.st_dev != f->dev || cur.st_ino != f->ino)
		return 1;
	if (lseek(f->fd, 0, SEEK_CUR) > cur.st_size) {
		log_warnx("'%s' was cut while followed: reading it again from "
		    "its start", f->path);
		(void)lseek(f->fd, 0, SEEK_SET);
		logread_init(f->r, f->fd, 1, -1);
	}
	return 0;
}

/* The index of the file dev/ino in set, or -1. */
static int
logfollow_find(const struct logset *set, dev_t dev, ino_t ino)
{
	struct stat	st;
	long long	size;
	int		i, fd;

	for (i = 0; i < logset_count(set); i++)
		if ((fd = logset_fd(set, i, &size)) != -1 &&
		    fstat(fd, &st) == 0 && st.st_dev == dev &&
		    st.st_ino == ino)
			return i;
	return -1;
}

/*
 * Read the files of set newer than the one followed (all when it is not
 * there), oldest first, to their ends, and follow the newest. 0 or -1.
 */
static int
logfollow_newer(struct logfollow *f, const struct logset *set,
    void (*cb)(json_t *, void *), void *arg)
{
	struct logread_stats	 st = { 0, 0 };
	char			*cause = NULL;
	long long		 size;
	int			 i, fd, k = -1, last = -1;

	if (f->fd != -1 && (k = logfollow_find(set, f->dev, f->ino)) == -1)
		log_warnx("warning: '%s' rotated faster than it was followed: "
		    "the file read was rotated away before its newer files "
		    "were found; events in files rotated away in between are "
		    "not shown", f->path);
	for (i = k + 1; i < logset_count(set); i++)
		if (logset_fd(set, i, &size) != -1)
			last = i;
	for (i = k + 1; i < last; i++) {
		if ((fd = logset_fd(set, i, &size)) == -1)
			continue;
		if (lseek(fd, 0, SEEK_SET) == -1 || logread_fd_each(f->r, fd,
		    -1, logset_name(set, i), cb, arg, &st, &cause) == -1) {
			log_warnx("%s", cause != NULL ? cause :
			    strerror(errno));
			free(cause);
			return -1;
		}
	}
	if (last == -1)
		return 0;	/* nothing newer yet */
	if (logfollow_take(f, logset_fd(set, last, &size), 0) == -1)
		return -1;
	return logfollow_lines(f, cb, arg) == -1 ? -1 : 0;
}

/* The writer rotated: the rest of the file read, then the newer ones. */
static int
logfollow_rotated(struct logfollow *f, void (*cb)(json_t *, void *),
    void *arg)
{
	struct logset	*set;
	char		*cause = NULL;
	int		 rc;

	if (f->fd != -1) {
		f->r->follow = 0;	/* it no longer grows: a cut last line too */
		if (logfollow_lines(f, cb, arg) == -1)
			return -1;
		f->r->follow = 1;
	}
	set = logset_new();
	if (logset_add_log(set, f->dir, f->name, &cause) == -1) {
		/* Its file is still held: try again at the next poll. */
		if (f->cause == NULL || strcmp(f->cause, cause) != 0)
			log_warnx("%s (following: trying again)", cause);
		free(f->cause);
		f->cause = cause;
		logset_free(set);
		return 0;
	}
	free(f->cause);
	f->cause = NULL;
	rc = logfollow_newer(f, set, cb, arg);
	logset_free(set);
	return rc;
}

int
logfollow_step(struct logfollow *f, void (*cb)(json_t *, void *), void *arg)
{
	if (f->fd == -1) {
		if (access(f->path, F_OK) == -1)
			return 0;	/* no file yet */
		return logfollow_rotated(f, cb, arg);
	}
	if (logfollow_lines(f, cb, arg) == -1)
		return -1;
	if (logfollow_moved(f))
		return logfollow_rotated(f, cb, arg);
	return 0;
}

int
logfollow_run(struct logfollow *f, void (*cb)(json_t *, void *), void *arg)
{
	struct timespec	pause = { 0, LOGREAD_POLL_NS };

	for (;;) {
		if (logfollow_step(f, cb, arg) == -1)
			return -1;
		fflush(stdout);
		nanosleep(&pause, NULL);
	}
}
