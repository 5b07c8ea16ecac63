/*
 * workspace_apply.c: write one reviewed path from the working copy back
 * to the source tree, refusing anything that changed on the host since
 * create and never following a link on either side.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/rand.h>

#include "util.h"
#include "workspace.h"
#include "workspace_int.h"

#define APPLY_JOURNAL		"apply.pending"
#define APPLY_TMP_PREFIX	".sandgate-apply-"
#define APPLY_JOURNAL_MAX	(64 * 1024 * 1024)	/* bytes read back */

/* One apply's state: both sides of the path. */
struct apply {
	const char	*sbxdir, *rel, *base;
	struct ws_entry	*e;		/* manifest entry, NULL if none */
	int		 workdir;	/* folder holding the work file */
	int		 work;		/* the work file, -1 if deleted */
	struct stat	 wst;
	int		 hostroot;
	int		 hostdir;	/* -1: folders still to be created */
	int		 written;	/* the applied copy, for the snapshot */
	int		 on_host;	/* the host already holds the work file */
	uid_t		 owner;		/* owner for the host file (root) */
	gid_t		 group;
	char		 sha_work[WORKSPACE_SHA256_HEX];
	const struct workspace_apply_opts *o;
	unsigned char	 buf[64 * 1024];
	char		 **cause;
};

static enum workspace_apply_result apply_open_work(struct apply *);
static enum workspace_apply_result apply_open_host(struct apply *, int);
static enum workspace_apply_result apply_check_host(struct apply *);
static int	 apply_write(struct apply *, int, int, mode_t, const char *,
		    int *);
static int	 apply_tmpname(char *, size_t);
static int	 apply_journal(struct apply *, const char *);
static int	 apply_cleanup_one(int, const char *, const char *);
static int	 apply_copy(struct apply *, int, int);
static enum workspace_apply_result apply_expected(struct apply *,
		    enum workspace_apply_result);
static int	 apply_snapshot(struct apply *, int);
static int	 apply_mkdirs(struct apply *);
static int	 apply_record(struct apply *, struct workspace_manifest *);
static enum workspace_apply_result apply_do(struct apply *,
		    struct workspace_manifest *, const char *);

/* Open the work side; a missing file (or folder) means deleted. */
static enum workspace_apply_result
apply_open_work(struct apply *a)
{
	char	path[4096];
	int	root;

	snprintf(path, sizeof(path), "%s/work", a->sbxdir);
	if ((root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		util_cause(a->cause, "cannot open '%s': %s", path,
		    strerror(errno));
		return WORKSPACE_APPLY_FAILED;
	}
	a->workdir = ws_open_parent(root, a->rel, &a->base);
	close(root);
	if (a->workdir == -1) {
		if (errno == ENOENT)
			return WORKSPACE_APPLY_DELETED;
		util_cause(a->cause,
		    "a folder above it in the working copy is a "
		    "symlink or not a folder (never followed)");
		return WORKSPACE_APPLY_REFUSED;
	}
	if (fstatat(a->workdir, a->base, &a->wst, AT_SYMLINK_NOFOLLOW) == -1)
		return errno == ENOENT ? WORKSPACE_APPLY_DELETED : WORKSPACE_APPLY_FAILED;
	if (!S_ISREG(a->wst.st_mode)) {
		util_cause(a->cause, "it is a %s in the working copy (only "
		    "regular files are applied)", S_ISLNK(a->wst.st_mode) ?
		    "symlink" : S_ISDIR(a->wst.st_mode) ? "folder" :
		    "special file");
		return WORKSPACE_APPLY_REFUSED;
	}
	a->work = openat(a->workdir, a->base, O_RDONLY | O_NOFOLLOW |
	    O_NONBLOCK | O_CLOEXEC);
	if (a->work == -1 || fstat(a->work, &a->wst) == -1 ||
	    !S_ISREG(a->wst.st_mode)) {
		util_cause(a->cause, "cannot read work file: %s",
		    strerror(errno));
		return WORKSPACE_APPLY_FAILED;
	}
	if (ws_sha_fd(a->work, a->sha_work, a->o->size_max, a->buf,
	    sizeof(a->buf)) == -1) {
		if (errno != EFBIG) {
			util_cause(a->cause, "cannot read work file: %s",
			    strerror(errno));
			return WORKSPACE_APPLY_FAILED;
		}
		util_cause(a->cause, "it is larger than the sandbox's --disk "
		    "(%lld bytes, holes counted)", (long long)a->wst.st_size);
		return WORKSPACE_APPLY_REFUSED;
	}
	return WORKSPACE_APPLY_APPLIED;
}

/*
 * With a review: the work side must be what the review showed (deleted,
 * or these bytes with this mode); r is what apply_open_work() found.
 */
static enum workspace_apply_result
apply_expected(struct apply *a, enum workspace_apply_result r)
{
	const struct workspace_delta	*x = a->o->expect;

	if (x == NULL)
		return r;
	if (x->change == WORKSPACE_DELETED ? r == WORKSPACE_APPLY_DELETED :
	    r == WORKSPACE_APPLY_APPLIED && x->kind == WORKSPACE_FILE &&
	    strcmp(a->sha_work, x->sha256_after) == 0 &&
	    (a->wst.st_mode & 07777) == (x->mode_after & 07777))
		return r;
	util_cause(a->cause, "changed since the review");
	return WORKSPACE_APPLY_REFUSED;
}

int
workspace_budget_take(off_t *left, const struct stat *st)
{
	off_t	cost = (off_t)st->st_blocks * 512;

	if (cost > *left)
		return -1;
	*left -= cost;
	return 0;
}

mode_t
workspace_apply_mode(mode_t m)
{
	return m & 0755;	/* no setuid, setgid, sticky, group/other write */
}

/* Open the host folder holding the path; ENOENT leaves hostdir -1. */
static enum workspace_apply_result
apply_open_host(struct apply *a, int src_missing_ok)
{
	const char	*base;

	a->hostdir = ws_open_parent(a->hostroot, a->rel, &base);
	if (a->hostdir != -1)
		return WORKSPACE_APPLY_APPLIED;
	if (errno == ENOENT && src_missing_ok)
		return WORKSPACE_APPLY_APPLIED;
	if (errno == ELOOP || errno == ENOTDIR) {
		util_cause(a->cause,
		    "a folder above it on the host is a symlink "
		    "or not a folder (never followed)");
		return WORKSPACE_APPLY_REFUSED;
	}
	util_cause(a->cause, "cannot open its host folder: %s",
	    strerror(errno));
	return errno == ENOENT ? WORKSPACE_APPLY_REFUSED : WORKSPACE_APPLY_FAILED;
}

/* The host file must be what the snapshot holds (or absent if none). */
static enum workspace_apply_result
apply_check_host(struct apply *a)
{
	char		sha[WORKSPACE_SHA256_HEX];
	struct stat	st;
	int		fd;

	/* a new file belongs to the owner of the source root */
	if (fstat(a->hostroot, &st) == 0) {
		a->owner = st.st_uid;
		a->group = st.st_gid;
	}
	if (a->hostdir == -1 || fstatat(a->hostdir, a->base, &st,
	    AT_SYMLINK_NOFOLLOW) == -1) {
		if (a->hostdir != -1 && errno != ENOENT)
			return WORKSPACE_APPLY_FAILED;
		if (a->e == NULL)
			return WORKSPACE_APPLY_APPLIED;
		util_cause(a->cause,
		    "deleted on the host since the sandbox was "
		    "created");
		return WORKSPACE_APPLY_REFUSED;
	}
	if (!S_ISREG(st.st_mode)) {
		util_cause(a->cause, "the host path is not a regular file");
		return WORKSPACE_APPLY_REFUSED;
	}
	a->owner = st.st_uid;
	a->group = st.st_gid;
	fd = openat(a->hostdir, a->base, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd == -1 || ws_sha_fd(fd, sha, WS_NO_LIMIT, a->buf,
	    sizeof(a->buf)) == -1) {
		util_cause(a->cause, "cannot read host file: %s",
		    strerror(errno));
		if (fd != -1)
			close(fd);
		return WORKSPACE_APPLY_FAILED;
	}
	close(fd);
	if ((a->e == NULL || strcmp(sha, a->e->f.sha256) != 0) &&
	    a->work != -1 && strcmp(sha, a->sha_work) == 0 &&
	    (st.st_mode & 07777) == workspace_apply_mode(a->wst.st_mode)) {
		/* an earlier apply wrote it, then was killed before saving */
		a->on_host = 1;
		return WORKSPACE_APPLY_APPLIED;
	}
	if (a->e == NULL) {
		util_cause(a->cause,
		    "created on the host since the sandbox was "
		    "created");
		return WORKSPACE_APPLY_REFUSED;
	}
	if (strcmp(sha, a->e->f.sha256) != 0) {
		util_cause(a->cause,
		    "changed on the host since the sandbox was "
		    "created");
		return WORKSPACE_APPLY_REFUSED;
	}
	/* its mode too (the owner may have made it private meanwhile) */
	if ((st.st_mode & 0777) != (a->e->f.mode & 0777) &&
	    (st.st_mode & 0777) != workspace_apply_mode(a->e->f.mode & 0777)) {
		util_cause(a->cause, "its mode changed on the host since the "
		    "sandbox was created (%04o, was %04o)",
		    (unsigned)(st.st_mode & 0777),
		    (unsigned)(a->e->f.mode & 0777));
		return WORKSPACE_APPLY_REFUSED;
	}
	return WORKSPACE_APPLY_APPLIED;
}

static int
apply_tmpname(char *buf, size_t size)
{
	unsigned char	rnd[8];
	char		hex[17];

	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		return -1;
	util_hex(rnd, sizeof(rnd), hex);
	snprintf(buf, size, APPLY_TMP_PREFIX "%s", hex);
	return 0;
}

/* Append "tmp\0rel\0" to the journal, durably, before tmp exists. */
static int
apply_journal(struct apply *a, const char *tmp)
{
	char	path[4096], *rec;
	size_t	tl = strlen(tmp), rl = strlen(a->rel);
	int	fd, rc = -1;

	if ((rec = malloc(tl + rl + 2)) == NULL)
		return -1;
	memcpy(rec, tmp, tl + 1);
	memcpy(rec + tl + 1, a->rel, rl + 1);
	snprintf(path, sizeof(path), "%s/" APPLY_JOURNAL, a->sbxdir);
	fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd != -1) {
		if (write(fd, rec, tl + rl + 2) == (ssize_t)(tl + rl + 2) &&
		    fsync(fd) == 0)
			rc = 0;
		close(fd);
	}
	free(rec);
	return rc;
}

/* Remove one journalled temp file if it is still there. 1, 0 or -1. */
static int
apply_cleanup_one(int hostroot, const char *tmp, const char *rel)
{
	struct stat	 st;
	const char	*base, *why;
	int		 dir, rc = 0;

	if (strncmp(tmp, APPLY_TMP_PREFIX, strlen(APPLY_TMP_PREFIX)) != 0 ||
	    strchr(tmp, '/') != NULL || workspace_path_valid(rel, &why) == -1)
		return 0;	/* not ours: never touched */
	if ((dir = ws_open_parent(hostroot, rel, &base)) == -1)
		return errno == ENOENT ? 0 : -1;
	if (fstatat(dir, tmp, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode))
		rc = unlinkat(dir, tmp, 0) == 0 ? 1 : -1;
	close(dir);
	return rc;
}

int
workspace_apply_cleanup(const char *sbxdir, const char *src, int *removed,
    char **cause)
{
	char	 path[4096], *buf = NULL, *p, *end, *tmp, *rel, *msrc = NULL;
	size_t	 len = 0, cap = 0;
	ssize_t	 n;
	int	 fd, root, r, rc = -1;

	*removed = 0;
	snprintf(path, sizeof(path), "%s/" APPLY_JOURNAL, sbxdir);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 0;
		util_cause(cause, "cannot read '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	if (src == NULL && (src = msrc = workspace_meta_source(sbxdir,
	    cause)) == NULL) {
		close(fd);
		return -1;
	}
	for (;;) {
		if (len == cap) {
			cap = cap ? cap * 2 : 65536;
			if (cap > APPLY_JOURNAL_MAX ||
			    (p = realloc(buf, cap + 1)) == NULL)
				break;
			buf = p;
		}
		if ((n = read(fd, buf + len, cap - len)) <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	if (buf == NULL || n != 0) {
		util_cause(cause, "cannot read '%s'", path);
		goto out;
	}
	buf[len] = '\0';
	if ((root = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		if (errno != ENOENT) {
			util_cause(cause, "cannot open source folder '%s': %s",
			    src, strerror(errno));
			goto out;
		}
	} else {
		/* Whole records only: a record cut by a kill is skipped. */
		for (p = buf, end = buf + len; p < end; p = rel + strlen(rel) + 1) {
			tmp = p;
			rel = tmp + strlen(tmp) + 1;
			if (rel >= end || rel + strlen(rel) >= end)
				break;
			if ((r = apply_cleanup_one(root, tmp, rel)) == 1)
				(*removed)++;
			else if (r == -1) {
				util_cause(cause, "cannot remove '%s' beside "
				    "'%s' in '%s': %s", tmp, rel, src,
				    strerror(errno));
				close(root);
				goto out;
			}
		}
		close(root);
	}
	if (unlink(path) == -1 && errno != ENOENT) {
		util_cause(cause, "cannot remove '%s': %s", path,
		    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	free(buf);
	free(msrc);
	return rc;
}

/*
 * Copy in to the new file out, sparse-aware, and check that the bytes
 * written are the ones apply hashed when it opened the work file (and
 * that the review showed): a file changed in between is refused. A copy
 * of the work file gives back the blocks charged when it was opened and
 * is charged with the data it actually copies (a writer left running
 * can fill a sparse file's holes in between, its content unchanged).
 */
static int
apply_copy(struct apply *a, int in, int out)
{
	char		 sha[WORKSPACE_SHA256_HEX];
	EVP_MD_CTX	*h;
	off_t		*left = NULL;

	if (in == a->work && a->o->budget != NULL) {
		left = a->o->budget;
		*left += (off_t)a->wst.st_blocks * 512;
	}
	if ((h = ws_sha_new()) == NULL)
		return (errno = ENOMEM, -1);
	if (ws_sparse_copy(in, out, h, a->o->size_max, left, a->buf,
	    sizeof(a->buf), NULL) == -1) {
		EVP_MD_CTX_free(h);
		return -1;
	}
	ws_sha_hex(h, sha);
	if (strcmp(sha, a->sha_work) != 0)
		return (errno = ESTALE, -1);
	return 0;
}

/*
 * Atomically replace dir/name with a copy of in: temp file in the same
 * folder, owner (when root), mode, fsync, renameat, fsync of the folder.
 * With keep, *keep gets the new file's fd (the caller closes it).
 * errno ESTALE: in did not hold the expected bytes (nothing renamed).
 */
static int
apply_write(struct apply *a, int dir, int in, mode_t mode, const char *name,
    int *keep)
{
	char	tmp[64];
	int	fd, rc = -1, saved;

	if (apply_tmpname(tmp, sizeof(tmp)) == -1 ||
	    (keep != NULL && apply_journal(a, tmp) == -1))
		return -1;
	fd = openat(dir, tmp, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1)
		return -1;
	if (apply_copy(a, in, fd) == 0 &&
	    (keep == NULL || geteuid() != 0 ||
	    fchown(fd, a->owner, a->group) == 0) &&
	    fchmod(fd, mode) == 0 && fsync(fd) == 0 &&
	    renameat(dir, tmp, dir, name) == 0) {
		fsync(dir);
		rc = 0;
	} else {
		saved = errno;
		unlinkat(dir, tmp, 0);
		errno = saved;
	}
	if (rc == 0 && keep != NULL)
		*keep = fd;
	else
		close(fd);
	return rc;
}

/* Create the missing host folders of the path (real folders only). */
static int
apply_mkdirs(struct apply *a)
{
	char		 comp[256];
	const char	*c, *e;
	int		 fd, nfd;

	if ((fd = dup(a->hostroot)) == -1)
		return -1;
	for (c = a->rel; (e = strchr(c, '/')) != NULL; c = e + 1) {
		memcpy(comp, c, (size_t)(e - c));
		comp[e - c] = '\0';
		if (mkdirat(fd, comp, 0755) == 0) {
			if (geteuid() == 0)
				fchownat(fd, comp, a->owner, a->group,
				    AT_SYMLINK_NOFOLLOW);
		} else if (errno != EEXIST)
			break;
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(fd);
		if ((fd = nfd) == -1)
			return -1;
	}
	if (e != NULL) {
		close(fd);
		return -1;
	}
	a->hostdir = fd;
	return 0;
}

/* Bring snapshot/<rel> in line with what was applied (write or delete). */
static int
apply_snapshot(struct apply *a, int deleted)
{
	char		 path[4096];
	const char	*c, *e;
	int		 root, fd, nfd, rc = -1;

	snprintf(path, sizeof(path), "%s/snapshot", a->sbxdir);
	if ((root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return -1;
	fd = root;
	for (c = a->rel; (e = strchr(c, '/')) != NULL; c = e + 1) {
		char comp[256];

		memcpy(comp, c, (size_t)(e - c));
		comp[e - c] = '\0';
		if (deleted == 0 && fchmod(fd, 0755) == 0 &&
		    mkdirat(fd, comp, 0555) == -1 && errno != EEXIST) {
			fchmod(fd, 0555);
			goto out;
		}
		if (deleted == 0)
			fchmod(fd, 0555);
		nfd = openat(fd, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		close(fd);
		if ((fd = nfd) == -1)
			return -1;
	}
	/* read-only folder: open it up for the change, then close it again */
	fchmod(fd, 0755);
	if (deleted)
		rc = unlinkat(fd, a->base, 0) == -1 && errno != ENOENT ? -1 : 0;
	else
		rc = apply_write(a, fd, a->written, 0444, a->base, NULL);
	fchmod(fd, 0555);
out:
	close(fd);
	return rc;
}

/* Record the applied file in the manifest (stat check off: rehash). */
static int
apply_record(struct apply *a, struct workspace_manifest *m)
{
	struct ws_entry	*e = a->e;
	struct stat	 st;

	if (e == NULL) {
		if ((e = ws_manifest_add(m, a->rel)) == NULL)
			return -1;
		ws_manifest_sort(m);
		e = ws_manifest_lookup(m, a->rel);
	}
	memcpy(e->f.sha256, a->sha_work, WORKSPACE_SHA256_HEX);
	e->f.mode = a->wst.st_mode & 0777;
	if (fstat(a->written, &st) == -1)
		return -1;
	e->f.size = st.st_size;
	e->stat_ok = 0;
	return 0;
}

static enum workspace_apply_result
apply_do(struct apply *a, struct workspace_manifest *m, const char *src)
{
	enum workspace_apply_result	r, hr;

	if ((r = apply_open_work(a)) == WORKSPACE_APPLY_REFUSED ||
	    r == WORKSPACE_APPLY_FAILED)
		return r;
	if (r == WORKSPACE_APPLY_DELETED && a->e == NULL) {
		util_cause(a->cause, "no such file in the working copy or the "
		    "snapshot");
		return WORKSPACE_APPLY_REFUSED;
	}
	if (r == WORKSPACE_APPLY_APPLIED && a->e != NULL &&
	    strcmp(a->sha_work, a->e->f.sha256) == 0 &&
	    (a->wst.st_mode & 0777) == (a->e->f.mode & 0777))
		return WORKSPACE_APPLY_UNCHANGED;
	if ((r = apply_expected(a, r)) == WORKSPACE_APPLY_REFUSED)
		return r;
	if ((a->hostroot = open(src, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		util_cause(a->cause, "cannot open source folder '%s': %s", src,
		    strerror(errno));
		return WORKSPACE_APPLY_FAILED;
	}
	if ((hr = apply_open_host(a, r == WORKSPACE_APPLY_APPLIED)) !=
	    WORKSPACE_APPLY_APPLIED || (hr = apply_check_host(a)) !=
	    WORKSPACE_APPLY_APPLIED)
		return hr;
	if (r == WORKSPACE_APPLY_APPLIED && !a->on_host &&
	    a->o->budget != NULL &&
	    workspace_budget_take(a->o->budget, &a->wst) == -1) {
		util_cause(a->cause, "this apply has written the sandbox's "
		    "--disk to the host: a hard-linked file is copied once "
		    "per name");
		return WORKSPACE_APPLY_REFUSED;
	}
	if (a->o->dry_run)
		return r;
	if (r == WORKSPACE_APPLY_DELETED) {
		if (unlinkat(a->hostdir, a->base, 0) == -1 ||
		    fsync(a->hostdir) == -1 || apply_snapshot(a, 1) == -1)
			goto fail;
		ws_manifest_remove(m, a->rel);
		return r;
	}
	if (a->on_host) {
		if ((a->written = openat(a->hostdir, a->base, O_RDONLY |
		    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
		    apply_snapshot(a, 0) == -1 || apply_record(a, m) == -1)
			goto fail;
		return r;
	}
	if ((a->hostdir == -1 && apply_mkdirs(a) == -1) ||
	    apply_write(a, a->hostdir, a->work,
	    workspace_apply_mode(a->wst.st_mode), a->base, &a->written) == -1)
		goto fail;
	if (apply_snapshot(a, 0) == -1 || apply_record(a, m) == -1)
		goto fail;
	return r;
fail:
	if (errno == ESTALE) {
		util_cause(a->cause, "it changed in the working copy while it "
		    "was applied (host untouched)");
		return WORKSPACE_APPLY_REFUSED;
	}
	if (errno == EDQUOT) {
		util_cause(a->cause, "this apply has written the sandbox's "
		    "--disk to the host (host untouched)");
		return WORKSPACE_APPLY_REFUSED;
	}
	util_cause(a->cause, "cannot write: %s", errno == EFBIG ?
	    "it grew past the sandbox's --disk" : strerror(errno));
	return WORKSPACE_APPLY_FAILED;
}

enum workspace_apply_result
workspace_apply_path(const char *sbxdir, const char *src,
    struct workspace_manifest *m, const char *relpath,
    const struct workspace_apply_opts *o, char **cause)
{
	enum workspace_apply_result	 r;
	struct apply			*a;
	const char			*why;

	if (workspace_path_valid(relpath, &why) == -1) {
		util_cause(cause, "%s", why);
		return WORKSPACE_APPLY_REFUSED;
	}
	if (workspace_manifest_excluded(m, relpath, 0)) {
		util_cause(cause, "excluded from the sandbox");
		return WORKSPACE_APPLY_REFUSED;
	}
	if ((a = calloc(1, sizeof(*a))) == NULL) {
		util_cause(cause, "out of memory");
		return WORKSPACE_APPLY_FAILED;
	}
	a->sbxdir = sbxdir;
	a->rel = relpath;
	a->cause = cause;
	a->o = o;
	a->workdir = a->work = a->hostroot = a->hostdir = a->written = -1;
	a->e = ws_manifest_lookup(m, relpath);
	a->base = strrchr(relpath, '/') ? strrchr(relpath, '/') + 1 : relpath;
	r = apply_do(a, m, src);
	if (a->workdir != -1)
		close(a->workdir);
	if (a->work != -1)
		close(a->work);
	if (a->hostroot != -1)
		close(a->hostroot);
	if (a->hostdir != -1)
		close(a->hostdir);
	if (a->written != -1)
		close(a->written);
	free(a);
	return r;
}
