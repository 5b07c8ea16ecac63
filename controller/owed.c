/* owed.c: the sends the proxy still owes, kept until confirmed (owed.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "owed.h"
#include "state.h"
#include "util.h"

static int
owed_dir(const struct owed *o, char *buf, size_t size)
{
	int	n = snprintf(buf, size, "%s/%s", state_root(), o->folder);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int
owed_path(const struct owed *o, char *buf, size_t size, const char *id)
{
	int	n = snprintf(buf, size, "%s/%s/%s", state_root(), o->folder,
	    id);

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* 1 when name is one of o's ids: its prefix, then hex to STATE_ID_LEN. */
static int
owed_valid(const struct owed *o, const char *name)
{
	size_t	i, p = strlen(o->prefix);

	if (strncmp(name, o->prefix, p) != 0 || strlen(name) != STATE_ID_LEN)
		return 0;
	for (i = p; i < STATE_ID_LEN; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		    (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return 1;
}

int
owed_add(const struct owed *o, const char *id, const char *subject,
    const char *why, char **cause)
{
	char	dir[4096], path[4096];
	int	fd, bad;

	if (owed_dir(o, dir, sizeof(dir)) == -1 ||
	    owed_path(o, path, sizeof(path), id) == -1)
		return util_cause(cause, "state path too long");
	if (state_mkdirs(dir, 0700) == -1 || (fd = open(path, O_WRONLY |
	    O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return util_cause(cause, "cannot keep it in %s: %s", path,
		    strerror(errno));
	bad = dprintf(fd, "%s\n%s\n", subject, why) < 0 || fsync(fd) == -1;
	if (close(fd) == -1 || bad)
		return util_cause(cause, "cannot keep it in %s: %s", path,
		    strerror(errno));
	return 0;
}

void
owed_done(const struct owed *o, const char *id)
{
	char	path[4096];

	if (owed_path(o, path, sizeof(path), id) == 0 &&
	    unlink(path) == -1 && errno != ENOENT)
		log_warn("cannot remove %s", path);
}

/*
 * The subject of the kept send id into buf (its first line when more
 * follows it, else id itself). 0, or -1 when it cannot be read.
 */
static int
owed_subject(const struct owed *o, const char *id, char *buf, size_t size)
{
	char	path[4096], text[512], *nl;
	ssize_t	n;
	int	fd;

	if (owed_path(o, path, sizeof(path), id) == -1 || (fd = open(path,
	    O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	if (n < 0)
		return -1;
	text[n] = '\0';
	/* a long reason may be cut here: anything after line 1 makes two */
	if ((nl = strchr(text, '\n')) == NULL || nl[1] == '\0')
		n = snprintf(buf, size, "%s", id);
	else {
		*nl = '\0';
		n = snprintf(buf, size, "%s", text);
	}
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/* id's kept send (about subject) sent again: 0 done, or -1 with *why. */
static int
owed_one(const struct owed *o, const char *id, const char *subject,
    char **why)
{
	char	*c2 = NULL;

	if (o->send(id, subject, why) == -1) {
		if (owed_add(o, id, subject, *why, &c2) == -1) {
			log_warnx("warning: %s", c2);
			free(c2);
		}
		return -1;
	}
	owed_done(o, id);
	if (o->confirmed != NULL)
		o->confirmed(id, subject);
	return 0;
}

/*
 * fn for each kept send of o (about subject, unless NULL); the number
 * fn returned 1 for.
 */
static int
owed_each(const struct owed *o, const char *subject,
    int (*fn)(const struct owed *, const char *, const char *, void *),
    void *arg)
{
	struct dirent	*de;
	DIR		*dp;
	char		 dir[4096], subj[256];
	int		 n = 0;

	if (owed_dir(o, dir, sizeof(dir)) == -1 ||
	    (dp = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(dp)) != NULL) {
		if (!owed_valid(o, de->d_name) || owed_subject(o, de->d_name,
		    subj, sizeof(subj)) == -1 || (subject != NULL &&
		    strcmp(subj, subject) != 0))
			continue;
		n += fn(o, de->d_name, subj, arg);
	}
	closedir(dp);
	return n;
}

struct owed_retry_arg {
	int	 dry;
	owed_cb	 cb;
	void	*arg;
};

static int
owed_retry_one(const struct owed *o, const char *id, const char *subject,
    void *arg)
{
	struct owed_retry_arg	*ra = arg;
	char			*why = NULL;
	int			 owed = 1;

	if (ra->dry)
		ra->cb(id, subject, "not sent (--dry-run)", ra->arg);
	else if (owed_one(o, id, subject, &why) == -1)
		ra->cb(id, subject, why, ra->arg);
	else {
		ra->cb(id, subject, NULL, ra->arg);
		owed = 0;
	}
	free(why);
	return owed;
}

int
owed_retry(const struct owed *o, const char *subject, int dry, owed_cb cb,
    void *arg)
{
	struct owed_retry_arg	ra = { dry, cb, arg };

	return owed_each(o, subject, owed_retry_one, &ra);
}

static int
owed_drop_one(const struct owed *o, const char *id, const char *subject,
    void *arg)
{
	(void)subject;
	(void)arg;
	owed_done(o, id);
	return 1;
}

void
owed_drop(const struct owed *o, const char *subject)
{
	(void)owed_each(o, subject, owed_drop_one, NULL);
}
