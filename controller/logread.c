/* logread.c: the one reader of the JSON-lines logs; logread.h. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eventlog.h"
#include "log.h"
#include "logread.h"
#include "util.h"

static const char *logread_digits(const char *, int, int *);
static const char *logread_clock(const char *, struct tm *, int64_t *);
static int	logread_offset(const char *, int64_t *);
static int	logread_numeral(const char *);
static int	logread_cmp_rot(const void *, const void *);
static int	logread_hole(struct logread *);

/* n decimal digits at s into *v; the byte after them, or NULL. */
static const char *
logread_digits(const char *s, int n, int *v)
{
	int	i;

	*v = 0;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return NULL;
		*v = *v * 10 + (s[i] - '0');
	}
	return s + n;
}

/* "hh:mm[:ss[.frac]]" into tm and *frac (microseconds); NULL if bad. */
static const char *
logread_clock(const char *p, struct tm *tm, int64_t *frac)
{
	int64_t	scale = 100000;

	if ((p = logread_digits(p, 2, &tm->tm_hour)) == NULL || *p != ':' ||
	    (p = logread_digits(p + 1, 2, &tm->tm_min)) == NULL)
		return NULL;
	if (tm->tm_hour > 23 || tm->tm_min > 59)
		return NULL;
	if (*p != ':')
		return p;
	if ((p = logread_digits(p + 1, 2, &tm->tm_sec)) == NULL ||
	    tm->tm_sec > 60)
		return NULL;
	if (*p != '.')
		return p;
	if (p[1] < '0' || p[1] > '9')
		return NULL;
	for (p++; *p >= '0' && *p <= '9'; p++) {
		*frac += (*p - '0') * scale;
		scale /= 10;
	}
	return p;
}

/* "Z", "+hh:mm", "-hh:mm" or nothing: the offset from UTC in us. */
static int
logread_offset(const char *p, int64_t *off)
{
	int	oh, om;

	*off = 0;
	if (*p == '\0')
		return 0;
	if (*p == 'Z' || *p == 'z')
		return p[1] == '\0' ? 0 : -1;
	if (*p != '+' && *p != '-')
		return -1;
	if (logread_digits(p + 1, 2, &oh) == NULL || p[3] != ':' ||
	    logread_digits(p + 4, 2, &om) == NULL || p[6] != '\0' ||
	    oh > 23 || om > 59)
		return -1;
	*off = (int64_t)(oh * 3600 + om * 60) * 1000000;
	if (*p == '-')
		*off = -*off;
	return 0;
}

int
logread_parse_ts(const char *s, int64_t *us)
{
	struct tm	 tm, back;
	const char	*p;
	int64_t		 frac = 0, off;
	time_t		 t;
	int		 y, mon;

	memset(&tm, 0, sizeof(tm));
	if ((p = logread_digits(s, 4, &y)) == NULL || *p != '-' ||
	    (p = logread_digits(p + 1, 2, &mon)) == NULL || *p != '-' ||
	    (p = logread_digits(p + 1, 2, &tm.tm_mday)) == NULL)
		return -1;
	if (mon < 1 || mon > 12 || tm.tm_mday < 1 || y < 1970)
		return -1;
	tm.tm_year = y - 1900;
	tm.tm_mon = mon - 1;
	if ((*p == 'T' || *p == 't' || *p == ' ') &&
	    (p = logread_clock(p + 1, &tm, &frac)) == NULL)
		return -1;
	if (logread_offset(p, &off) == -1)
		return -1;
	back = tm;
	if ((t = timegm(&back)) == (time_t)-1 || back.tm_mday != tm.tm_mday)
		return -1;	/* 2026-02-30 */
	*us = (int64_t)t * 1000000 + frac - off;
	return 0;
}

int64_t
logread_now(void)
{
	struct timespec	now;

	clock_gettime(CLOCK_REALTIME, &now);
	return (int64_t)now.tv_sec * 1000000 + now.tv_nsec / 1000;
}

int
logread_parse_time(const char *s, int64_t now_us, int64_t *us)
{
	long long	secs;

	if (util_parse_duration(s, &secs) == 0) {
		if (secs > now_us / 1000000)
			secs = now_us / 1000000;
		*us = now_us - (int64_t)secs * 1000000;
		return 0;
	}
	return logread_parse_ts(s, us);
}

/*
 * 1 if s is a number as the writer names its rotated files: decimal
 * digits, no leading zero, no sign or space (NAME.01 is not NAME.1).
 */
static int
logread_numeral(const char *s)
{
	return s[0] >= '1' && s[0] <= '9' && s[strspn(s, "0123456789")] ==
	    '\0';
}

/* Compare rotation numbers for qsort: highest (oldest) first. */
static int
logread_cmp_rot(const void *x, const void *y)
{
	long long	a = *(const long long *)x, b = *(const long long *)y;

	return a < b ? 1 : a > b ? -1 : 0;
}

int
logread_files(const char *dir, const char *name, char ***out, int *nout,
    char **cause)
{
	DIR		*d;
	struct dirent	*de;
	long long	*rot = NULL, num;
	size_t		 nrot = 0, len = strlen(name), i;
	const char	*errstr;
	char		**files;
	struct stat	 st;

	if ((d = opendir(dir)) == NULL)
		return util_cause(cause, "cannot open '%s': %s", dir,
		    strerror(errno));
	while ((de = readdir(d)) != NULL && nrot < LOGREAD_FILES_MAX) {
		if (strncmp(de->d_name, name, len) != 0 ||
		    de->d_name[len] != '.' ||
		    !logread_numeral(de->d_name + len + 1) ||
		    util_strtonum(de->d_name + len + 1, 1, 1000000, &num,
		    &errstr) == -1)
			continue;
		rot = realloc(rot, (nrot + 1) * sizeof(*rot));
		if (rot == NULL)
			fatal("realloc");
		rot[nrot++] = num;
	}
	closedir(d);
	if (nrot > 0)
		qsort(rot, nrot, sizeof(*rot), logread_cmp_rot);
	files = util_xcalloc(nrot + 2, sizeof(*files));
	for (i = 0; i < nrot; i++)
		util_xasprintf(&files[i], "%s/%s.%lld", dir, name, rot[i]);
	util_xasprintf(&files[nrot], "%s/%s", dir, name);
	free(rot);
	*out = files;
	*nout = (int)nrot + 1;
	if (lstat(files[nrot], &st) == -1 && nrot == 0) {
		util_cause(cause, "no log at '%s'", files[nrot]);
		logread_files_free(files, *nout);
		return -1;
	}
	return 0;
}

void
logread_files_free(char **files, int n)
{
	int	i;

	if (files == NULL)
		return;
	for (i = 0; i < n; i++)
		free(files[i]);
	free(files);
}

int
logread_open(const char *path, long long *size, char **cause)
{
	struct stat	st;
	int		fd, saved;

	if ((fd = eventlog_open_file(path, O_RDONLY, &st)) == -1) {
		saved = errno;
		if (saved == EINVAL)
			util_cause(cause, "'%s' is not a regular file: not "
			    "reading it", path);
		else if (saved != ENOENT)
			util_cause(cause, "cannot open '%s': %s", path,
			    saved == ELOOP ? "it is a symlink" :
			    strerror(saved));
		errno = saved;
		return -1;
	}
	*size = (long long)st.st_size;
	return fd;
}

void
logread_init(struct logread *r, int fd, int follow, long long left)
{
	r->fd = fd;
	r->follow = follow;
	r->left = left;
	r->work = -1;
	r->off = r->end = r->n = 0;
	r->partial = 0;
	r->taken = r->consumed = 0;
}

/*
 * In the part of a line past SG_LOG_LINE_MAX (not kept), at the end of
 * the bytes read: skip the hole the file has from here on, if any (its
 * zeros hold no newline), within r->left; counted as taken. 0, or -1
 * (errno set).
 */
static int
logread_hole(struct logread *r)
{
	off_t	here, data;

	if ((here = lseek(r->fd, 0, SEEK_CUR)) == -1)
		return errno == ESPIPE ? 0 : -1;
	if ((data = lseek(r->fd, here, SEEK_DATA)) == -1) {
		if (errno != ENXIO) {
			/* No hole support here: read on. */
			return lseek(r->fd, here, SEEK_SET) == -1 ? -1 : 0;
		}
		/* No data up to the end: all of it a hole. */
		if ((data = lseek(r->fd, 0, SEEK_END)) == -1)
			return -1;
	}
	if (r->left >= 0 && data - here > r->left)
		data = here + (off_t)r->left;
	if (data != here && lseek(r->fd, data, SEEK_SET) == -1)
		return -1;
	if (r->left > 0)
		r->left -= (long long)(data - here);
	r->taken += (long long)(data - here);
	return 0;
}

int
logread_next(struct logread *r, size_t *len)
{
	const char	*p, *nl;
	size_t		 take, room, want;
	ssize_t		 k;

	for (;;) {
		if (r->off == r->end) {
			if (r->n > SG_LOG_LINE_MAX && logread_hole(r) == -1)
				return -1;
			want = sizeof(r->blk);
			if (r->left >= 0 && r->left < (long long)want)
				want = (size_t)r->left;
			if (r->work >= 0 && r->work < (long long)want)
				want = (size_t)r->work;
			k = want == 0 ? 0 : read(r->fd, r->blk, want);
			if (k == -1 && errno == EINTR)
				continue;
			if (k == -1)
				return -1;
			if (r->left > 0)
				r->left -= k;
			if (r->work > 0)
				r->work -= k;
			if (k == 0 && (!r->partial || r->follow))
				return 0;
			if (k == 0)
				break;
			r->off = 0;
			r->end = (size_t)k;
		}
		r->partial = 1;
		p = r->blk + r->off;
		nl = memchr(p, '\n', r->end - r->off);
		take = nl ? (size_t)(nl - p) : r->end - r->off;
		room = SG_LOG_LINE_MAX + 1 - r->n;
		memcpy(r->line + r->n, p, take < room ? take : room);
		r->n += take < room ? take : room;
		r->off += take + (nl ? 1 : 0);
		r->taken += (long long)(take + (nl ? 1 : 0));
		if (nl)
			break;
	}
	r->line[r->n] = '\0';
	*len = r->n;
	r->n = 0;
	r->partial = 0;
	r->consumed += r->taken;
	r->taken = 0;
	return 1;
}

json_t *
logread_object(const char *line, size_t len)
{
	json_t		*obj;
	json_error_t	 err;

	if (len > SG_LOG_LINE_MAX)
		return NULL;
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (obj != NULL && !json_is_object(obj)) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

int
logread_fd_each(struct logread *r, int fd, long long size, const char *name,
    void (*cb)(json_t *, void *), void *arg, struct logread_stats *st,
    char **cause)
{
	json_t		*obj;
	size_t		 len;
	int		 got;

	logread_init(r, fd, 0, size);
	while ((got = logread_next(r, &len)) == 1) {
		if ((obj = logread_object(r->line, len)) == NULL) {
			st->skipped++;
			continue;
		}
		cb(obj, arg);
		json_decref(obj);
	}
	st->files++;
	if (got == -1)
		return util_cause(cause, "cannot read '%s': %s", name,
		    strerror(errno));
	return 0;
}

int
logread_open_warn(const char *path, long long *size)
{
	char	*cause = NULL;
	int	 fd, saved;

	if ((fd = logread_open(path, size, &cause)) == -1) {
		saved = errno;
		if (cause != NULL)
			log_warnx("%s", cause);
		free(cause);
		errno = saved;
	}
	return fd;
}
