/* owed.c: the sends the proxy still owes, kept until confirmed (owed.h). */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "owed.h"
#include "proxyctl.h"
#include "state.h"
#include "util.h"

/* The line of a kept send naming the replicas it is still owed to. */
#define OWED_TO		"to "
/* The kind of the second id in the name of a send added unlocked. */
#define OWED_ADDED	"add"
/* A command's time for sending kept sends again (owed_spent). */
#define OWED_BUDGET_S		20
#define OWED_BUDGET_TEXT	"20 s"
#define OWED_TEXT_MAX	(PROXYCTL_TARGETS_MAX * PROXYCTL_URL_MAX + 1024)
#define OWED_TEXT_S	"17407"		/* OWED_TEXT_MAX - 1 */
/*
 * The most a kept file's line OWED_TO holds, in names and bytes: more
 * are kept in files of their own (owed_keep), so that its subject and
 * that line always fit in OWED_TEXT_MAX and are read whole (atk1921n F2).
 */
#define OWED_TO_NAMES	PROXYCTL_TARGETS_MAX
#define OWED_TO_BYTES	(PROXYCTL_TARGETS_MAX * PROXYCTL_URL_MAX)
_Static_assert(OWED_TEXT_MAX - 1 == 17407, "OWED_TEXT_S");
/* a subject (struct owed_kept), "\n", "to ", OWED_TO_BYTES and "\n" */
_Static_assert(255 + 1 + 3 + OWED_TO_BYTES + 1 < OWED_TEXT_MAX,
    "the line OWED_TO is read whole");

/* A kept send as read: its subject and the replicas it is owed to. */
struct owed_kept {
	char		 name[2 * STATE_ID_LEN + 2];	/* its file's */
	char		 subject[256];
	const char	*to;		/* in text, or NULL */
	char		 text[OWED_TEXT_MAX];
	dev_t		 dev;		/* of the file read */
	ino_t		 ino;
	int		 fd;		/* the file read, open; or -1 */
};

static struct owed_kept *
owed_kept_new(void)
{
	struct owed_kept	*k = util_xcalloc(1, sizeof(*k));

	k->fd = -1;
	return k;
}

static void
owed_kept_free(struct owed_kept *k)
{
	if (k->fd != -1)
		close(k->fd);
	free(k);
}

/*
 * The lock of every kept send (state_root()/owed.lock), held by this
 * process owed_depth times: a send read, sent again and then forgotten or
 * rewritten under it is never one a concurrent command rewrote meanwhile
 * (atk1921j F3). It is taken last (inside a sandbox's lock, never the
 * other way) and held across sends, each bounded by its timeout.
 */
static int	owed_fd = -1;
static int	owed_depth;

/*
 * The kept files (dev/inode) whose replicas this command read under the
 * lock it holds now (owed_to, or one read to send again): only those does
 * it remove or replace. One at an id's name it did not read (added by a
 * command without the lock while this one sent) names replicas this one
 * never sent to: it stays (atk1921m F1). Each is held open until the lock
 * is let go: a number alone is no identity, a freed inode's number is
 * given at once to the next file made (ext4), and a kept file rewritten
 * twice by another command (state_replace: a new file, renamed over)
 * came back at the number read, naming other replicas (atk1921n F1).
 * An inode held open is never freed, so its number is never reused.
 */
struct owed_seen {
	const struct owed	*o;
	dev_t			 dev;
	ino_t			 ino;
	int			 fd;	/* the file read, held open */
};
static struct owed_seen	*owed_seen_list;
static size_t		 owed_nseen, owed_seen_cap;

/* The record of kept files read let go (the lock is, or was, let go). */
static void
owed_seen_clear(void)
{
	while (owed_nseen > 0)
		close(owed_seen_list[--owed_nseen].fd);
}

static void
owed_seen_add(const struct owed *o, const struct owed_kept *k)
{
	struct owed_seen	*l;
	int			 fd;

	/*
	 * the very file read (its fd from owed_text), not one opened again
	 * by name; one that cannot be held is not recorded: it is then
	 * never removed nor replaced, and its new text goes beside it
	 */
	if (k->fd == -1)
		return;
	if ((fd = fcntl(k->fd, F_DUPFD_CLOEXEC, 0)) == -1) {
		log_warn("warning: %s/%s cannot be held open: it is kept as it "
		    "is, not removed nor rewritten", o->folder, k->name);
		return;
	}
	if (owed_nseen == owed_seen_cap) {
		owed_seen_cap = owed_seen_cap ? 2 * owed_seen_cap : 16;
		if ((l = realloc(owed_seen_list, owed_seen_cap *
		    sizeof(*l))) == NULL)
			fatalx("out of memory");
		owed_seen_list = l;
	}
	owed_seen_list[owed_nseen].o = o;
	owed_seen_list[owed_nseen].dev = k->dev;
	owed_seen_list[owed_nseen].ino = k->ino;
	owed_seen_list[owed_nseen].fd = fd;
	owed_nseen++;
}

/*
 * 1 when the file at path is one of o's read under this lock (held open:
 * the same inode, not a new one given its number).
 */
static int
owed_seen(const struct owed *o, const char *path)
{
	struct stat	st;
	size_t		i;

	if (lstat(path, &st) == -1)
		return 0;
	for (i = 0; i < owed_nseen; i++)
		if (owed_seen_list[i].o == o &&
		    owed_seen_list[i].dev == st.st_dev &&
		    owed_seen_list[i].ino == st.st_ino)
			return 1;
	return 0;
}

void
owed_lock(void)
{
	if (owed_depth++ > 0)
		return;
	owed_seen_clear();	/* what a lock held before read is moot */
	if ((owed_fd = state_lock_root("owed.lock", 1)) == -1)
		log_warn("warning: kept sends to the proxy not locked: "
		    "%s/owed.lock (they are sent, and kept as they are until "
		    "it can be taken)", state_root());
}

/*
 * 1 when the lock is held. Without it a kept send is never removed nor
 * rewritten (only added): a concurrent command's rewrite is then never
 * lost, the send stays owed and is sent again (atk1921k F1: a folder,
 * a symlink or another user's file at owed.lock made every command go
 * on unlocked and atk1921j F3's lost send came back).
 */
static int
owed_locked(void)
{
	static int	told;
	struct stat	held, at;
	char		path[4096];

	if (owed_fd == -1)
		return 0;
	/*
	 * the lock held must still be the file at its name: one swapped for
	 * a folder (or another file) meanwhile lets a command take no lock
	 * and add a send this one would then lose (atk1921l F4)
	 */
	if (fstat(owed_fd, &held) == 0 && (size_t)snprintf(path,
	    sizeof(path), "%s/owed.lock", state_root()) < sizeof(path) &&
	    lstat(path, &at) == 0 && held.st_nlink > 0 &&
	    held.st_dev == at.st_dev && held.st_ino == at.st_ino)
		return 1;
	if (!told++)
		log_warnx("warning: %s/owed.lock is no longer the lock this "
		    "command holds: kept sends to the proxy are only added "
		    "from now on, none removed nor rewritten", state_root());
	return 0;
}

void
owed_unlock(void)
{
	if (owed_depth > 0 && --owed_depth == 0) {
		owed_seen_clear();
		state_unlock(owed_fd);
		owed_fd = -1;
	}
}

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

/* 1 when name[0..STATE_ID_LEN-1] is prefix, then hex digits. */
static int
owed_valid_id(const char *prefix, const char *name)
{
	size_t	i, p = strlen(prefix);

	if (strncmp(name, prefix, p) != 0 || strlen(name) < STATE_ID_LEN)
		return 0;
	for (i = p; i < STATE_ID_LEN; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		    (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * 1 when name is a kept send of o: one of o's ids, or (added without
 * the lock, owed_add) an id, "." and OWED_ADDED's kind of id.
 */
static int
owed_valid(const struct owed *o, const char *name)
{
	if (!owed_valid_id(o->prefix, name))
		return 0;
	if (name[STATE_ID_LEN] == '\0')
		return 1;
	return name[STATE_ID_LEN] == '.' &&
	    owed_valid_id(OWED_ADDED "_", name + STATE_ID_LEN + 1) &&
	    strlen(name) == 2 * STATE_ID_LEN + 1;
}

/* The text of a kept send: subject, the replicas (if named), why. */
static char *
owed_format(const char *subject, const char *to, const char *why)
{
	char	*text;

	if (to != NULL)
		util_xasprintf(&text, "%s\n" OWED_TO "%s\n%s\n", subject, to,
		    why);
	else
		util_xasprintf(&text, "%s\n%s\n", subject, why);
	return text;
}

/*
 * text kept in a new file of its own: at id when nothing is there, else
 * at "id.add_<hex>" (path: the one made). Without the lock (or with one
 * no longer at its name) a kept send is only ever added, never replaced:
 * a replace could undo a locked command's rewrite, or be undone by its
 * removal once it confirmed what it read (atk1921l F4).
 */
static int
owed_create(const struct owed *o, const char *id, const char *text,
    char *path, size_t size)
{
	char	added[STATE_ID_LEN + 1], name[2 * STATE_ID_LEN + 2];
	int	tries;

	if (state_create(path, text, 0600) == 0)
		return 0;
	if (errno != EEXIST)
		return -1;
	for (tries = 0; tries < 8; tries++) {
		state_new_id(added, OWED_ADDED);
		(void)snprintf(name, sizeof(name), "%s.%s", id, added);
		if (owed_path(o, path, size, name) == -1)
			return -1;
		if (state_create(path, text, 0600) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
	}
	return -1;
}

/*
 * text kept for id (path: the file written): in place of the file name
 * when it is one this command read under the lock (replaced whole: a
 * kill mid-write leaves the send kept before, not one naming no replica,
 * atk1921i F6; a FIFO there is replaced, never opened, F11); else in a
 * new file of its own (owed_create): whatever else is at name (added
 * by a command without the lock meanwhile, atk1921m F1) stays.
 */
static int
owed_put(const struct owed *o, const char *id, const char *name,
    const char *text, char *path, size_t size)
{
	if (owed_path(o, path, size, name) == 0 && owed_locked() &&
	    owed_seen(o, path))
		return state_replace(path, text, 0600);
	if (owed_path(o, path, size, id) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return owed_create(o, id, text, path, size);
}

/*
 * The length of the first part of the names to (comma-separated) that
 * one kept file holds: OWED_TO_NAMES names and OWED_TO_BYTES at most, or
 * its first name alone (one read whole from a kept file, so it fits).
 */
static size_t
owed_to_part(const char *to)
{
	size_t	len = strcspn(to, ","), name, names = 1;

	while (to[len] != '\0') {	/* at a comma */
		name = strcspn(to + len + 1, ",");
		if (names == OWED_TO_NAMES || len + 1 + name > OWED_TO_BYTES)
			break;
		len += 1 + name;
		names++;
	}
	return len;
}

/*
 * The send of subject (why) kept for id, owed to the replicas of to
 * (NULL: the environment's), at name when it is one this command read
 * (owed_put; path: the file written). More names than one file holds
 * (OWED_TO_NAMES, OWED_TO_BYTES) go on in files of their own beside it:
 * a line too long to be read whole would lose them (atk1921n F2).
 */
static int
owed_keep(const struct owed *o, const char *id, const char *name,
    const char *subject, const char *to, const char *why, char *path,
    size_t size)
{
	char	*part = NULL, *text, other[4096];
	size_t	 len;
	int	 rc, first = 1;

	do {
		if (to != NULL) {
			len = owed_to_part(to);
			util_xasprintf(&part, "%.*s", (int)len, to);
			to += len;
			to += strspn(to, ",");
			if (*to == '\0')
				to = NULL;
		}
		text = owed_format(subject, part, why);
		if (first)
			rc = owed_put(o, id, name, text, path, size);
		else if ((rc = owed_path(o, other, sizeof(other), id)) == 0 &&
		    (rc = owed_create(o, id, text, other, sizeof(other))) == -1)
			(void)snprintf(path, size, "%s", other);
		free(text);
		free(part);
		part = NULL;
		first = 0;
	} while (rc == 0 && to != NULL);
	return rc;
}

int
owed_add(const struct owed *o, const char *id, const char *subject,
    const char *to, const char *why, char **cause)
{
	char	dir[4096], path[4096];
	int	rc;

	if (owed_dir(o, dir, sizeof(dir)) == -1 ||
	    owed_path(o, path, sizeof(path), id) == -1)
		return util_cause(cause, "state path too long");
	if (state_mkdirs(dir, 0700) == -1)
		return util_cause(cause, "cannot keep it in %s: %s", dir,
		    strerror(errno));
	owed_lock();
	rc = owed_keep(o, id, id, subject, to, why, path, sizeof(path));
	owed_unlock();
	if (rc == -1)
		return util_cause(cause, "cannot keep it in %s: %s", path,
		    strerror(errno));
	return 0;
}

/*
 * The text of the kept send in the file name (at most size - 1 bytes)
 * into k->text, *cut when there was more, k->fd left open on it (see
 * owed_seen): a regular file only, opened without waiting (a FIFO put
 * there would hang every command that looks, atk1921h F6). 0, 1 when
 * there is none (forgotten since the folder was listed), or -1 with
 * *cause.
 */
static int
owed_text(const struct owed *o, const char *name, struct owed_kept *k,
    int *cut, char **cause)
{
	struct stat	st;
	char		path[4096], more, why[128];
	ssize_t		n;
	int		fd;

	if (owed_path(o, path, sizeof(path), name) == -1)
		return util_cause(cause, "state path too long");
	/* this uid's alone: a send kept names where the token goes */
	if ((fd = state_open_private(path, why, sizeof(why))) == -1)
		return errno == ENOENT ? 1 : util_cause(cause, "%s: %s",
		    path, why);
	if (fstat(fd, &st) == -1) {
		close(fd);
		return util_cause(cause, "%s: %s", path, strerror(errno));
	}
	if ((n = read(fd, k->text, sizeof(k->text) - 1)) < 0) {
		close(fd);
		return util_cause(cause, "%s: %s", path, strerror(errno));
	}
	k->text[n] = '\0';
	*cut = (size_t)n == sizeof(k->text) - 1 && read(fd, &more, 1) != 0;
	k->dev = st.st_dev;
	k->ino = st.st_ino;
	k->fd = fd;
	return 0;
}

/*
 * The kept send in the file name read into k: its subject (its first
 * line when more follows it, else its id) and the replicas it is owed to
 * (the line OWED_TO names them, else NULL: those of the environment). 0,
 * 1 when it is gone, or -1 with *cause when it cannot be read: also when
 * it is longer than k->text and its subject or its line OWED_TO is cut
 * (never taken as a file naming no replica: those it names would be
 * lost, atk1921n F2; only its reason, last, may be cut).
 */
static int
owed_read(const struct owed *o, const char *name, struct owed_kept *k,
    char **cause)
{
	char	*nl, *to;
	int	 n, cut;

	(void)snprintf(k->name, sizeof(k->name), "%s", name);
	if ((n = owed_text(o, name, k, &cut, cause)) != 0)
		return n;
	k->to = NULL;
	nl = strchr(k->text, '\n');
	if ((cut && nl == NULL) || (nl != NULL && strncmp(nl + 1, OWED_TO,
	    strlen(OWED_TO)) == 0 && strchr(nl + 1, '\n') == NULL))
		return util_cause(cause, "%s/%s: %s: whom it is owed to is not "
		    "known", o->folder, name, cut ? "longer than " OWED_TEXT_S
		    " bytes" : "its replicas' line is cut");
	/* a long reason may be cut here: anything after line 1 makes two */
	if ((nl = strchr(k->text, '\n')) == NULL || nl[1] == '\0')
		n = snprintf(k->subject, sizeof(k->subject), "%.*s",
		    STATE_ID_LEN, name);
	else {
		*nl = '\0';
		n = snprintf(k->subject, sizeof(k->subject), "%s", k->text);
		to = nl + 1;
		if (strncmp(to, OWED_TO, strlen(OWED_TO)) == 0 &&
		    (nl = strchr(to, '\n')) != NULL) {
			*nl = '\0';
			k->to = to + strlen(OWED_TO);
		}
	}
	if (n < 0 || (size_t)n >= sizeof(k->subject))
		return util_cause(cause, "%s/%s: its subject is too long",
		    o->folder, name);
	return 0;
}

/*
 * The file of the kept send k removed, when the lock is held and it is
 * one whose replicas this command read under it (owed_seen): 0, or 1
 * when it is left.
 */
static int
owed_forget(const struct owed *o, const struct owed_kept *k)
{
	char	path[4096];

	if (!owed_locked() || owed_path(o, path, sizeof(path), k->name) == -1 ||
	    !owed_seen(o, path))
		return 1;
	if (unlink(path) == -1 && errno != ENOENT)
		log_warn("cannot remove %s", path);
	return 0;
}

int
owed_done(const struct owed *o, const char *id)
{
	struct owed_kept	*k = owed_kept_new();
	char			*cause = NULL;
	int			 rc;

	owed_lock();
	/* one that cannot be read is never removed unread (atk1921k F5) */
	if ((rc = owed_read(o, id, k, &cause)) == -1) {
		log_warnx("warning: a kept send to the proxy cannot be read, "
		    "left as it is: %s", cause);
		free(cause);
	} else if (rc == 0 && owed_locked() && owed_forget(o, k) == 1)
		log_warnx("warning: %s/%s was kept by another command after "
		    "this one read whom it is owed to: left as it is, sent "
		    "again by `sandgate gc`", o->folder, k->name);
	owed_unlock();
	owed_kept_free(k);
	return rc == -1 ? -1 : 0;
}

/*
 * The kept send k sent again: 0 done (forgotten), or -1 with *why (only
 * the replicas that did not confirm it stay owed, when the lock is held;
 * else it stays as it is).
 */
static int
owed_one(const struct owed *o, const char *id, const struct owed_kept *k,
    char **why)
{
	char	*left = NULL, path[4096];

	owed_seen_add(o, k);	/* sent to its replicas: it may be rewritten */
	if (o->send(id, k->subject, k->to, &left, why) == -1) {
		if (owed_locked() && owed_keep(o, id, k->name, k->subject,
		    left ? left : k->to, *why, path, sizeof(path)) == -1)
			log_warn("warning: cannot rewrite %s/%s (%s)",
			    o->folder, k->name, path);
		free(left);
		return -1;
	}
	owed_forget(o, k);
	if (o->confirmed != NULL)
		o->confirmed(id, k->subject);
	return 0;
}

typedef int	(*owed_fn)(const struct owed *, const char *,
		    const struct owed_kept *, void *);

/*
 * fn for the kept send in the file name of o (its id: name up to
 * STATE_ID_LEN; about subject, unless NULL), read and
 * acted on under the lock (atk1921j F3): what fn returned, 0 when it is
 * gone or another subject's, 1 when it cannot be read (said, left
 * alone: atk1921h F6) unless it is another subject's.
 */
static int
owed_each_one(const struct owed *o, const char *name, const char *subject,
    owed_fn fn, void *arg)
{
	struct owed_kept	*k = owed_kept_new();
	char			*cause = NULL, id[STATE_ID_LEN + 1];
	int			 n = 0, rc;

	(void)snprintf(id, sizeof(id), "%s", name);
	owed_lock();
	if ((rc = owed_read(o, name, k, &cause)) == -1) {
		log_warnx("warning: a kept send to the proxy cannot be read, "
		    "left as it is: %s", cause);
		free(cause);
		n = subject == NULL || strcmp(subject, id) == 0;
	} else if (rc == 0 && (subject == NULL ||
	    strcmp(k->subject, subject) == 0))
		n = fn(o, id, k, arg);
	owed_unlock();
	owed_kept_free(k);
	return n;
}

/*
 * fn for each kept send of o (about subject, unless NULL); the number
 * fn returned 1 for, and of those that cannot be read.
 */
static int
owed_each(const struct owed *o, const char *subject, owed_fn fn, void *arg)
{
	struct dirent	*de;
	DIR		*dp;
	char		 dir[4096];
	int		 n = 0;

	if (owed_dir(o, dir, sizeof(dir)) == -1 ||
	    (dp = opendir(dir)) == NULL)
		return 0;
	while ((de = readdir(dp)) != NULL)
		if (owed_valid(o, de->d_name))
			n += owed_each_one(o, de->d_name, subject, fn, arg);
	closedir(dp);
	return n;
}

/*
 * 1 once this command has spent OWED_BUDGET_S sending kept sends again:
 * the rest stay kept, said, not sent (atk1921k F2: a replica that closed
 * each request unanswered just before its timeout held every command,
 * and owed.lock, for ~38 s a kept send). Counted from its first retry.
 */
static int
owed_spent(void)
{
	static struct timespec	began;
	struct timespec		now;

	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	if (began.tv_sec == 0 && began.tv_nsec == 0)
		began = now;
	return now.tv_sec - began.tv_sec >= OWED_BUDGET_S;
}

struct owed_retry_arg {
	int	 dry;
	owed_cb	 cb;
	void	*arg;
};

static int
owed_retry_one(const struct owed *o, const char *id,
    const struct owed_kept *k, void *arg)
{
	const char		*subject = k->subject;
	struct owed_retry_arg	*ra = arg;
	char			*why = NULL;
	int			 owed = 1;

	if (ra->dry)
		ra->cb(id, subject, "not sent (--dry-run)", ra->arg);
	else if (owed_spent())
		ra->cb(id, subject, "not sent: this command's time for "
		    "sending kept sends again (" OWED_BUDGET_TEXT ") is spent",
		    ra->arg);
	else if (owed_one(o, id, k, &why) == -1)
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
owed_drop_one(const struct owed *o, const char *id,
    const struct owed_kept *k, void *arg)
{
	(void)id;
	(void)arg;
	owed_forget(o, k);
	return 1;
}

void
owed_drop(const struct owed *o, const char *subject)
{
	(void)owed_each(o, subject, owed_drop_one, NULL);
}

/* owed_to()'s fn: k's replicas (those of the environment: "") added. */
static int
owed_to_one(const struct owed *o, const char *id, const struct owed_kept *k,
    void *arg)
{
	char	**to = arg, *tmp;

	(void)id;
	owed_seen_add(o, k);
	util_xasprintf(&tmp, "%s%s%s", *to ? *to : "", *to ? "," : "",
	    k->to ? k->to : "");
	free(*to);
	*to = tmp;
	return 1;
}

char *
owed_to(const struct owed *o, const char *subject)
{
	char	*to = NULL;

	(void)owed_each(o, subject, owed_to_one, &to);
	return to;
}
