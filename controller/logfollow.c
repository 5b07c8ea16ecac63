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
	long long	 seq;		/* the last event printed; -1: none */
	int		 again;		/* reading lines already printed */
	int		 gap;		/* say so if the next seq is not seq+1 */
	long long	 skipped;	/* the last seq passed over; -1: none */
	char		 hash[72];	/* the hash of seq's event */
};

/* The caller's callback, behind logfollow_emit(). */
struct logfollow_out {
	struct logfollow	*f;
	void			(*cb)(json_t *, void *);
	void			*arg;
};

static int	logfollow_take(struct logfollow *, int, long long);
static void	logfollow_emit(json_t *, void *);
static void	logfollow_mark(struct logfollow *, json_t *);
static long long logfollow_last_seq(int, long long, char *, size_t);
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

/*
 * The seq of the last whole event of the file open at fd, size bytes
 * long (read at its end, not moving fd's offset), or -1; its hash into
 * hash.
 */
static long long
logfollow_last_seq(int fd, long long size, char *hash, size_t hashlen)
{
	size_t		 want = 2 * (SG_LOG_LINE_MAX + 2), got, i, end;
	long long	 seq = -1;
	ssize_t		 n;
	json_t		*obj, *v;
	char		*buf;

	if (size <= 0)
		return -1;
	if ((long long)want > size)
		want = (size_t)size;
	buf = util_xmalloc(want);
	if ((n = pread(fd, buf, want, (off_t)(size - (long long)want))) <= 0) {
		free(buf);
		return -1;
	}
	got = (size_t)n;
	for (end = got; end > 0 && seq == -1; end = i) {
		for (i = end - 1; i > 0 && buf[i - 1] != '\n'; i--)
			;
		if (end - i < 2 || buf[end - 1] != '\n' ||
		    (i == 0 && (long long)want < size) ||	/* cut */
		    (obj = logread_object(buf + i, end - i - 1)) == NULL)
			continue;
		if (json_is_integer(v = json_object_get(obj, "seq"))) {
			seq = (long long)json_integer_value(v);
			v = json_object_get(obj, "hash");
			snprintf(hash, hashlen, "%s", json_is_string(v) ?
			    json_string_value(v) : "");
		}
		json_decref(obj);
	}
	free(buf);
	return seq;
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
	f->seq = -1;
	f->skipped = -1;
	for (i = logset_count(set) - 1; i >= 0; i--) {
		if ((fd = logset_fd(set, i, &size)) == -1)
			continue;
		if (f->fd == -1 && logfollow_take(f, fd, size) == -1) {
			logfollow_free(f);
			return NULL;
		}
		if ((f->seq = logfollow_last_seq(fd, size, f->hash,
		    sizeof(f->hash))) != -1 ||
		    size > 0)
			break;	/* an empty file: its seq is in the one before */
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

/* obj is the last event printed: its seq and hash. */
static void
logfollow_mark(struct logfollow *f, json_t *obj)
{
	json_t	*v = json_object_get(obj, "seq");
	json_t	*h = json_object_get(obj, "hash");

	if (!json_is_integer(v))
		return;
	f->seq = (long long)json_integer_value(v);
	snprintf(f->hash, sizeof(f->hash), "%s", json_is_string(h) ?
	    json_string_value(h) : "");
}

/*
 * One event to the caller. Files read again (the one followed left the
 * listing: moved aside by its writer, renamed, rotated away; or it was
 * cut) hold events printed already: those up to the last seq printed are
 * passed over. The next event printed tells whether they were: one that
 * follows the last printed (its prev is that event's hash) says so; one
 * that does not is another chain (the log was started again: what was
 * passed over is said), and a seq past the next one says that events in
 * files rotated away were not shown.
 */
static void
logfollow_emit(json_t *obj, void *arg)
{
	struct logfollow_out	*o = arg;
	struct logfollow	*f = o->f;
	const char		*h, *prev;
	long long		 seq;

	if (!json_is_integer(json_object_get(obj, "seq")) || f->seq == -1)
		goto print;
	seq = (long long)json_integer_value(json_object_get(obj, "seq"));
	h = json_string_value(json_object_get(obj, "hash"));
	prev = json_string_value(json_object_get(obj, "prev"));
	if (f->again && seq < f->seq) {
		f->skipped = seq;
		return;
	}
	if (f->again && seq == f->seq &&
	    (h == NULL || strcmp(h, f->hash) == 0)) {
		f->skipped = -1;	/* the last printed: the rest is new */
		return;
	}
	if (prev != NULL && strcmp(prev, f->hash) != 0 && f->skipped != -1)
		log_warnx("warning: '%s' holds another chain (the log was "
		    "started again): its events before seq %lld are not "
		    "shown", f->path, seq);
	else if (prev != NULL && strcmp(prev, f->hash) != 0 && seq <= f->seq)
		log_warnx("warning: '%s' holds another chain from seq %lld on "
		    "(the log was started again)", f->path, seq);
	else if (f->gap && seq > f->seq + 1)
		log_warnx("warning: '%s' rotated faster than it was followed: "
		    "events %lld to %lld were in files rotated away before "
		    "they could be read: not shown", f->path, f->seq + 1,
		    seq - 1);
print:
	f->again = f->gap = 0;
	f->skipped = -1;
	logfollow_mark(f, obj);
	o->cb(obj, o->arg);
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
	else
		f->again = 0;	/* at its end: the next event decides */
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
		f->again = 1;
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
 * there, passing over the events printed already), oldest first, to their
 * ends, and follow the newest. 0 or -1.
 */
static int
logfollow_newer(struct logfollow *f, const struct logset *set,
    void (*cb)(json_t *, void *), void *arg)
{
	struct logread_stats	 st = { 0, 0 };
	char			*cause = NULL;
	long long		 size;
	int			 i, fd, k = -1, last = -1;

	if (f->fd != -1 && (k = logfollow_find(set, f->dev, f->ino)) == -1) {
		f->again = f->gap = 1;
		if (f->seq == -1)	/* lines without seqs: cannot tell */
			log_warnx("warning: '%s' rotated faster than it was "
			    "followed: the file read left the listing before "
			    "its newer files were found; its newer files are "
			    "read from the oldest kept", f->path);
	}
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
	if (last == -1) {
		f->again = 0;
		return 0;	/* nothing newer yet */
	}
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
	struct logfollow_out	 out = { f, cb, arg };

	cb = logfollow_emit;
	arg = &out;
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
