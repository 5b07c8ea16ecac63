/* state.c: state and log folders, sandbox ids and locks; see state.h. */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "log.h"
#include "state.h"
#include "util.h"

#define STATE_JSON_MAX	(1024LL * 1024 * 1024)	/* state_json_load */

static int	state_flock(const char *, int, int, uint64_t, int (*)(void));

/*
 * Why st lets a uid other than this one or root change what sandgate
 * keeps there: NULL when it does not. kind says what st is: STATE_ROOT
 * the root (a folder), STATE_ABOVE a folder above it (writable by others
 * only when sticky, as /tmp: they can neither rename nor replace what is
 * not theirs in it), STATE_INSIDE an entry of the root or of sandboxes/
 * (no link).
 */
enum { STATE_ROOT, STATE_ABOVE, STATE_INSIDE };

static const char *
state_why(const struct stat *st, int kind, char *buf, size_t size)
{
	if (kind == STATE_ROOT && !S_ISDIR(st->st_mode))
		return "is not a folder";
	if (kind == STATE_INSIDE && S_ISLNK(st->st_mode))
		return "is a link";
	if (st->st_uid != geteuid() && st->st_uid != 0) {
		snprintf(buf, size, "is owned by uid %ld",
		    (long)st->st_uid);
		return buf;
	}
	if ((st->st_mode & 022) != 0 && !S_ISLNK(st->st_mode) &&
	    (kind != STATE_ABOVE || (st->st_mode & S_ISVTX) == 0)) {
		snprintf(buf, size, "is writable by %s (mode %04o%s)",
		    (st->st_mode & 002) != 0 ? "anyone" : "its group",
		    (unsigned)(st->st_mode & 07777),
		    kind == STATE_ABOVE ? ", not sticky" : "");
		return buf;
	}
	return NULL;
}

int
state_dir_private(const char *path)
{
	struct stat	st;
	char		buf[64];

	if (lstat(path, &st) == -1)
		return -1;
	if (state_why(&st, STATE_ROOT, buf, sizeof(buf)) != NULL) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/* "root", or "uid N or root": who may own what the root holds. */
static const char *
state_owner(void)
{
	static char	owner[40];

	if (owner[0] == '\0' && geteuid() == 0)
		snprintf(owner, sizeof(owner), "root");
	else if (owner[0] == '\0')
		snprintf(owner, sizeof(owner), "uid %ld or root",
		    (long)geteuid());
	return owner;
}

/*
 * Stop sandgate: path (what, e.g. "state folder") refused for dir, itself
 * (kind STATE_ROOT) or a folder above it (STATE_ABOVE), for why.
 */
static void
state_refuse(const char *what, const char *path, const char *dir, int kind,
    const char *why)
{
	if (kind == STATE_ROOT)
		fatalx("%s %s %s: another user could change what sandgate "
		    "keeps there; it must be a folder owned by %s that no one "
		    "else may write (one others could write is best moved "
		    "away whole: sandgate makes a new one)", what, path, why,
		    state_owner());
	fatalx("%s %s: the folder above it, %s, %s: another user could "
	    "replace it; every folder above must be owned by %s, and sticky "
	    "where others may write", what, path, dir, why, state_owner());
}

/*
 * Every folder or link on the way to path, as given, that is there: a
 * link this uid's or root's, a folder as the real path's are (the last
 * one as the folder itself, the others as folders above it). Run before
 * path is resolved and after: a folder of another uid on the way could
 * be swapped for a link of theirs to any folder while it resolves, and
 * the real path checked would be that folder's (atk44a F4, atk44c E5: a
 * link of another uid, or a folder of theirs raced with one, chose which
 * folder became the root). A link that this uid or root made is
 * followed: where it points is checked as the real path is.
 */
static void
state_given_check(const char *given, const char *what)
{
	struct stat	 st;
	char		 buf[PATH_MAX], why[64], *p, c;
	const char	*w;
	int		 kind;

	if (util_strlcpy(buf, given, sizeof(buf)) >= sizeof(buf))
		fatalx("%s %s: too long", what, given);
	for (p = buf + 1;; p++) {
		if (*p != '/' && *p != '\0')
			continue;
		c = *p;
		*p = '\0';
		if (lstat(buf, &st) == -1) {
			if (errno != ENOENT)
				fatal("%s %s: %s", what, given, buf);
			break;	/* the rest is made by this uid */
		}
		kind = c == '\0' || p[1] == '\0' ? STATE_ROOT : STATE_ABOVE;
		if (S_ISLNK(st.st_mode) && st.st_uid != geteuid() &&
		    st.st_uid != 0)
			fatalx("%s %s: the link %s on the way is owned by uid "
			    "%ld, who could point it elsewhere; links on the "
			    "way must be owned by %s", what, given, buf,
			    (long)st.st_uid, state_owner());
		if (S_ISDIR(st.st_mode) && (w = state_why(&st, kind, why,
		    sizeof(why))) != NULL)
			state_refuse(what, given, buf, kind, w);
		if (c == '\0')
			break;
		*p = c;
	}
}

/*
 * The entries of folder dir (and of dir/sub when sub is not NULL): this
 * uid's or root's, writable by no one else, and no link unless links is
 * set. A folder others could once write may hold what they planted
 * there, a link or a folder of theirs, which a chmod does not undo
 * (atk44a F1). A folder mounted there (a sandbox's work/, its disk,
 * mounted by root) is passed over. The root's check runs this on the
 * root, sandboxes/ and each sandbox's folder (atk44f: disk.img, work,
 * checked and lock planted as links there made root mount, unmount,
 * overwrite and lock what the planter chose); deeper entries are in
 * folders this check found only this uid or root may write, but one
 * once open and then fixed by a recursive chown and chmod may still hold
 * planted files, which is why the messages say to move such a folder
 * away whole (and what sandgate reads there that names a host path or a
 * URL is opened with state_open_private).
 */
void
state_entries_check(const char *dir, const char *sub, int links,
    const char *what)
{
	struct stat	 st;
	struct dirent	*e;
	DIR		*d;
	dev_t		 dev;
	char		 in[PATH_MAX], path[PATH_MAX], buf[64];
	const char	*why;

	if ((size_t)snprintf(in, sizeof(in), "%s%s%s", dir, sub ? "/" : "",
	    sub ? sub : "") >= sizeof(in))
		fatalx("%s %s: too long", what, dir);
	if ((d = opendir(in)) == NULL) {
		if (sub != NULL && errno == ENOENT)
			return;
		fatal("%s %s", what, in);
	}
	if (fstat(dirfd(d), &st) == -1)
		fatal("%s %s", what, in);
	dev = st.st_dev;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		if ((size_t)snprintf(path, sizeof(path), "%s/%s", in,
		    e->d_name) >= sizeof(path))
			fatalx("%s %s: %s/%s: too long", what, dir, in,
			    e->d_name);
		if (lstat(path, &st) == -1) {
			if (errno == ENOENT)	/* gone since the readdir */
				continue;
			fatal("%s %s: %s", what, dir, path);
		}
		/* a sandbox's work/, its disk mounted there by root: the
		   disk's root folder is the sandbox's (no uid can mount) */
		if (S_ISDIR(st.st_mode) && st.st_dev != dev)
			continue;
		if ((why = state_why(&st, links && S_ISLNK(st.st_mode) ?
		    STATE_ABOVE : STATE_INSIDE, buf, sizeof(buf))) != NULL)
			fatalx("%s %s: %s %s: another user could have put it "
			    "there; what it holds must be owned by %s, "
			    "writable by no one else%s (a folder others could "
			    "write is best moved away whole: sandgate makes a "
			    "new one)", what, dir, path, why, state_owner(),
			    links ? "" : ", and no link");
	}
	closedir(d);
}

void
state_private_dir(char *path, size_t size, int mode, const char *what)
{
	struct stat	 st;
	char		 real[PATH_MAX], buf[64];
	const char	*dir, *why;
	int		 kind;

	state_given_check(path, what);
	if (state_mkdirs(path, mode) == -1 && errno != EACCES &&
	    errno != EROFS)
		fatal("%s %s", what, path);
	if (realpath(path, real) == NULL)
		fatal("%s %s", what, path);
	state_given_check(path, what);
	if (util_strlcpy(path, real, size) >= size)
		fatalx("%s %s: too long", what, real);
	for (kind = STATE_ROOT;; kind = STATE_ABOVE) {
		dir = real[0] != '\0' ? real : "/";
		if (lstat(dir, &st) == -1)
			fatal("%s %s: %s", what, path, dir);
		if (kind == STATE_ROOT && !S_ISDIR(st.st_mode))
			fatalx("%s %s is not a folder", what, path);
		if ((why = state_why(&st, kind, buf, sizeof(buf))) != NULL)
			state_refuse(what, path, dir, kind, why);
		if (real[0] == '\0')
			break;
		*strrchr(real, '/') = '\0';
	}
}

/*
 * The state root holds what sandgate acts on as its user: the host paths
 * apply writes to, the disk images it mounts, the probe each runc sandbox
 * runs as its init. Another uid able to change it could turn any of them
 * against this one, so it is used only when it is a private folder
 * (state_private_dir: made 0700 if missing, resolved, which every later
 * use goes through, a root that does not resolve refused: atk44a F2, a
 * link to another mount namespace's folder resolved to nothing and the
 * check was skipped) and what it holds, and each sandbox's folder, is
 * this uid's (state_entries_check). Anything else stops sandgate, naming
 * the folder (atk43g2 G2).
 */
static void
state_root_check(char *root, size_t size)
{
	struct dirent	*e;
	DIR		*d;
	char		 sub[PATH_MAX];

	state_private_dir(root, size, 0700, "state folder");
	state_entries_check(root, NULL, 0, "state folder");
	state_entries_check(root, "sandboxes", 0, "state folder");
	if ((size_t)snprintf(sub, sizeof(sub), "%s/sandboxes", root) >=
	    sizeof(sub))
		fatalx("state folder %s: too long", root);
	if ((d = opendir(sub)) == NULL) {
		if (errno == ENOENT)
			return;
		fatal("state folder %s", sub);
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		if ((size_t)snprintf(sub, sizeof(sub), "sandboxes/%s",
		    e->d_name) >= sizeof(sub))
			fatalx("state folder %s: too long", root);
		state_entries_check(root, sub, 0, "state folder");
	}
	closedir(d);
}

int
state_open_private(const char *path, char *why, size_t size)
{
	struct stat	 st;
	char		 buf[64];
	const char	*w;
	int		 fd, saved;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		saved = errno;
		snprintf(why, size, "%s", saved == ELOOP ?
		    "a link (not followed)" : strerror(saved));
		errno = saved;
		return -1;
	}
	w = fstat(fd, &st) == -1 ? strerror(errno) : !S_ISREG(st.st_mode) ?
	    "not a regular file" : state_why(&st, STATE_INSIDE, buf,
	    sizeof(buf));
	if (w == NULL && st.st_nlink != 1)
		w = "linked elsewhere too";
	if (w != NULL) {
		snprintf(why, size, "%s", w);
		close(fd);
		errno = EPERM;
		return -1;
	}
	return fd;
}

json_t *
state_json_load(const char *path, size_t flags, json_error_t *err)
{
	struct stat	 st;
	json_t		*o = NULL;
	char		*buf = NULL;
	size_t		 len = 0;
	ssize_t		 n;
	int		 fd, saved;

	memset(err, 0, sizeof(*err));
	if ((fd = state_open_private(path, err->text,
	    sizeof(err->text))) == -1)
		return NULL;
	/* read whole, then parsed: json_loadfd reads a byte a call */
	if (fstat(fd, &st) == -1 || st.st_size > STATE_JSON_MAX) {
		saved = st.st_size > STATE_JSON_MAX ? EFBIG : errno;
		snprintf(err->text, sizeof(err->text), "%s", strerror(saved));
		close(fd);
		errno = saved;
		return NULL;
	}
	buf = util_xmalloc((size_t)st.st_size + 1);
	while (len <= (size_t)st.st_size && (n = read(fd, buf + len,
	    (size_t)st.st_size + 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1)
			break;
		len += (size_t)n;
	}
	saved = errno;
	if (n == -1 || len > (size_t)st.st_size)
		snprintf(err->text, sizeof(err->text), "%s", n == -1 ?
		    strerror(saved) : "grew while read");
	else
		o = json_loadb(buf, len, flags, err);
	saved = errno;
	free(buf);
	close(fd);
	errno = saved;
	return o;
}

const char *
state_root(void)
{
	static char	 root[4096];
	const char	*env, *home;

	if (root[0] != '\0')
		return root;
	if ((env = getenv("SANDGATE_STATE")) != NULL && *env != '\0')
		util_strlcpy(root, env, sizeof(root));
	else if (geteuid() == 0)
		util_strlcpy(root, "/var/lib/sandgate", sizeof(root));
	else if ((env = getenv("XDG_STATE_HOME")) != NULL && *env != '\0')
		snprintf(root, sizeof(root), "%s/sandgate", env);
	else {
		home = getenv("HOME");
		snprintf(root, sizeof(root), "%s/.local/state/sandgate",
		    home ? home : "/tmp");
	}
	state_root_check(root, sizeof(root));
	return root;
}

const char *
state_log_dir(void)
{
	const char	*env = getenv("SANDGATE_LOG_DIR");

	return env && *env ? env : SANDGATE_DEFAULT_LOG_DIR;
}

const char *
state_record_dir(void)
{
	static char	 dir[4096];
	const char	*env = getenv("SANDGATE_RECORD_DIR");

	if (env != NULL && *env != '\0')
		return env;
	if (dir[0] == '\0' && (size_t)snprintf(dir, sizeof(dir),
	    "%s/records", state_root()) >= sizeof(dir))
		fatalx("state folder %s: too long", state_root());
	return dir;
}

int
state_open_in(const char *dir, const char *name, int flags, int mode)
{
	int	dfd, fd, saved;

	if (strchr(name, '/') != NULL) {
		errno = EINVAL;
		return -1;
	}
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
	saved = errno;
	close(dfd);
	errno = saved;
	return fd;
}

const char *
state_policy_dir(void)
{
	const char	*env = getenv("SANDGATE_POLICY_DIR");

	return env && *env ? env : SANDGATE_DEFAULT_POLICY_DIR;
}

int
state_path(char *buf, size_t size, const char *id, const char *sub)
{
	int	n;

	if (sub != NULL)
		n = snprintf(buf, size, "%s/sandboxes/%s/%s", state_root(), id,
		    sub);
	else
		n = snprintf(buf, size, "%s/sandboxes/%s", state_root(), id);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

void
state_new_id(char *id, const char *prefix)
{
	unsigned char	rnd[12];
	char		hex[25];

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		fatalx("cannot get random bytes for an id");
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(id, STATE_ID_LEN + 1, "%s_%s", prefix ? prefix : "sbx", hex);
}

int
state_valid_id(const char *id)
{
	size_t	i;

	if (strncmp(id, "sbx_", 4) != 0 || strlen(id) != STATE_ID_LEN)
		return -1;
	for (i = 4; i < STATE_ID_LEN; i++) {
		if (!((id[i] >= '0' && id[i] <= '9') ||
		    (id[i] >= 'a' && id[i] <= 'f')))
			return -1;
	}
	return 0;
}

/*
 * Open path (with flags) and flock it, waiting as util_flock_wait does;
 * the fd, or -1 with errno.
 */
static int
state_flock(const char *path, int flags, int exclusive, uint64_t until_us,
    int (*stop)(void))
{
	int	fd, saved;

	if ((fd = open(path, O_RDWR | O_CLOEXEC | flags, 0600)) == -1)
		return -1;
	if (util_flock_wait(fd, exclusive ? LOCK_EX : LOCK_SH, until_us,
	    stop) == -1) {
		saved = errno;
		close(fd);
		errno = saved;
		return -1;
	}
	return fd;
}

int
state_lock(const char *id, int exclusive)
{
	return state_lock_wait(id, exclusive, 0, NULL);
}

int
state_lock_wait(const char *id, int exclusive, uint64_t until_us,
    int (*stop)(void))
{
	char	path[4096];

	if (state_path(path, sizeof(path), id, "lock") == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	return state_flock(path, 0, exclusive, until_us, stop);
}

int
state_lock_new(const char *id)
{
	char	path[4096];

	if (state_path(path, sizeof(path), id, "lock") == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	/* The fd stays open: the lock lasts as long as we do. */
	return state_flock(path, O_CREAT | O_NOFOLLOW, 1, 0, NULL) == -1 ?
	    -1 : 0;
}

int
state_gate(int exclusive)
{
	return state_lock_root("create.lock", exclusive);
}

int
state_lock_root(const char *name, int exclusive)
{
	char	path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", state_root(),
	    name) >= sizeof(path)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (state_mkdirs(state_root(), 0700) == -1)
		return -1;
	return state_flock(path, O_CREAT | O_NOFOLLOW, exclusive, 0, NULL);
}

int
state_make_locked(const char *id)
{
	char	path[4096];
	int	gate, rv = -1, saved;

	if (state_path(path, sizeof(path), id, NULL) == -1) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((gate = state_gate(0)) == -1)
		return -1;
	if (state_mkdirs(path, 0700) == 0 && state_lock_new(id) == 0)
		rv = 0;
	saved = errno;
	state_unlock(gate);
	errno = saved;
	return rv;
}

void
state_unlock(int fd)
{
	if (fd != -1)
		close(fd);
}

int
state_mkdirs(const char *path, int mode)
{
	char	buf[4096], *p;

	if (util_strlcpy(buf, path, sizeof(buf)) >= sizeof(buf)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) == -1 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(buf, mode) == -1 && errno != EEXIST)
		return -1;
	return 0;
}

/*
 * path made to hold text whole (mode) from a hidden file beside it:
 * renamed over it (replace), or linked to it, which fails with EEXIST
 * when something is there (new: nothing there is ever replaced).
 */
static int
state_put(const char *path, const char *text, int mode, int replace)
{
	char		 tmp[4200];
	const char	*base = strrchr(path, '/');
	size_t		 len = strlen(text);
	int		 fd, bad, saved;

	base = base != NULL ? base + 1 : path;
	if (snprintf(tmp, sizeof(tmp), "%.*s.%s.tmp.%ld", (int)(base - path),
	    path, base, (long)getpid()) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	(void)unlink(tmp);	/* one a killed run of this pid left */
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1)
		return -1;
	errno = ENOSPC;		/* a short write says nothing */
	bad = write(fd, text, len) != (ssize_t)len || fsync(fd) == -1;
	saved = errno;
	if (close(fd) == -1 && !bad) {
		bad = 1;
		saved = errno;
	}
	if (!bad && (replace ? rename(tmp, path) : link(tmp, path)) == -1) {
		bad = 1;
		saved = errno;
	}
	if (bad || !replace) {
		(void)unlink(tmp);
		errno = saved;
		if (bad)
			return -1;
	}
	return util_sync_dir(path);
}

int
state_replace(const char *path, const char *text, int mode)
{
	return state_put(path, text, mode, 1);
}

int
state_create(const char *path, const char *text, int mode)
{
	return state_put(path, text, mode, 0);
}
