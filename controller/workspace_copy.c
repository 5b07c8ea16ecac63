/*
 * workspace_copy.c: workspace_create(): copy a source tree into the
 * read-only snapshot and the working copy, hashing as it goes.
 *
 * Small files are read once: each chunk is hashed and written to both
 * copies. Larger ones are cloned (FICLONE) or copied sparse-aware
 * (holes stay holes) into the snapshot, which is then hashed, so the
 * manifest always describes the bytes the snapshot holds even if the
 * source changes during the copy.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/fs.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "quote.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"
#include "workspace.h"
#include "workspace_int.h"

struct copy_ctx {
	const struct workspace_opts	*o;
	struct workspace_manifest	*m;
	char				**cause;
	FILE				*warnf;
	struct stat			 state_st;	/* state_root() */
	struct stat			 sbx_st;	/* the sandbox folder */
	int				 have_state, have_sbx;
	char				 rel[4096];	/* current path */
	size_t				 rellen;
	size_t				 depth;		/* folders open */
	unsigned char			*buf;
};

/* The three descriptors of one folder level. */
struct copy_dirs {
	int	src, snap, work;
};

static int	 copy_dir(struct copy_ctx *, struct copy_dirs *);
static int	 copy_entry(struct copy_ctx *, struct copy_dirs *,
		    const char *);
static int	 copy_subdir(struct copy_ctx *, struct copy_dirs *,
		    const char *, const struct stat *);
static int	 copy_file(struct copy_ctx *, struct copy_dirs *,
		    const char *, const struct stat *);
static int	 copy_small(struct copy_ctx *, int, int, int, EVP_MD_CTX *,
		    off_t *);
static int	 copy_big(struct copy_ctx *, int, int, int,
		    char[WORKSPACE_SHA256_HEX]);
static int	 copy_fd_range(struct copy_ctx *, int, int);
static int	 copy_finish_work(struct copy_ctx *, int, mode_t,
		    const struct stat *, struct ws_entry *);
static int	 copy_skip(struct copy_ctx *, const char *,
		    const struct stat *);
static void	 copy_secret_check(struct copy_ctx *, int *skip);
static const char *copy_type_name(mode_t);
static int	 copy_push(struct copy_ctx *, const char *, size_t *);
static int	 copy_roots(struct copy_ctx *, const char *, const char *,
		    struct copy_dirs *);
static int	 copy_tree_entry(int, const struct workspace_walk_entry *,
		    off_t, off_t *, unsigned char *, char **);
static void	 copy_warn_budget(FILE *, const struct workspace_walk_entry *);

static const char *
copy_type_name(mode_t m)
{
	if (S_ISLNK(m))
		return "symlink";
	if (S_ISFIFO(m))
		return "FIFO";
	if (S_ISSOCK(m))
		return "socket";
	if (S_ISCHR(m))
		return "character device";
	if (S_ISBLK(m))
		return "block device";
	return "special file";
}

/* Append "/name" to ctx->rel; *old gets the length to restore. */
static int
copy_push(struct copy_ctx *c, const char *name, size_t *old)
{
	size_t	n = strlen(name), need = c->rellen + (c->rellen ? 1 : 0) + n;

	if (need >= sizeof(c->rel))
		return util_cause(c->cause, "path too long under '%s'", c->rel);
	*old = c->rellen;
	if (c->rellen > 0)
		c->rel[c->rellen++] = '/';
	memcpy(c->rel + c->rellen, name, n + 1);
	c->rellen = need;
	return 0;
}

/* Is this entry left out (excluded folder, pattern, the state folder)? */
static int
copy_skip(struct copy_ctx *c, const char *name, const struct stat *st)
{
	if (ws_default_excluded(name))
		return 1;
	if (ws_pattern_excluded(c->m->excludes, c->m->nexcludes, c->rel, name))
		return 1;
	if (S_ISDIR(st->st_mode) && c->have_state &&
	    st->st_dev == c->state_st.st_dev && st->st_ino == c->state_st.st_ino)
		return 1;
	if (S_ISDIR(st->st_mode) && c->have_sbx &&
	    st->st_dev == c->sbx_st.st_dev && st->st_ino == c->sbx_st.st_ino)
		return 1;
	return 0;
}

/* Warn about (or, with exclude_secrets, skip) a likely secret. */
static void
copy_secret_check(struct copy_ctx *c, int *skip)
{
	*skip = 0;
	if (!workspace_is_secret_name(c->rel))
		return;
	if (c->o->exclude_secrets) {
		fprintf(c->warnf, "sandgate: warning: leaving out likely "
		    "secret '%s'\n", c->rel);
		*skip = 1;
	} else
		fprintf(c->warnf, "sandgate: warning: copying likely secret "
		    "'%s' (use --exclude-secrets to leave it out)\n", c->rel);
}

static int
copy_entry(struct copy_ctx *c, struct copy_dirs *d, const char *name)
{
	struct stat	st;
	size_t		old = 0;
	int		rc = 0, skip;

	if (copy_push(c, name, &old) == -1)
		return -1;
	if (fstatat(d->src, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		rc = util_cause(c->cause, "cannot stat '%s': %s", c->rel,
		    strerror(errno));
		goto out;
	}
	if (copy_skip(c, name, &st))
		goto out;
	if (!ws_utf8_valid(c->rel)) {
		rc = util_cause(c->cause, "refusing to copy a file whose name "
		    "is not valid UTF-8 in folder '%.*s'", (int)old, c->rel);
		goto out;
	}
	if (S_ISLNK(st.st_mode)) {
		rc = util_cause(c->cause, "refusing to copy symlink '%s' "
		    "(symlinks are never copied)", c->rel);
		goto out;
	}
	if (S_ISDIR(st.st_mode))
		rc = copy_subdir(c, d, name, &st);
	else if (S_ISREG(st.st_mode)) {
		copy_secret_check(c, &skip);
		if (!skip)
			rc = copy_file(c, d, name, &st);
	} else
		rc = util_cause(c->cause, "refusing to copy %s '%s' (only "
		    "regular files and folders are copied)",
		    copy_type_name(st.st_mode), c->rel);
out:
	c->rellen = old;
	c->rel[old] = '\0';
	return rc;
}

static int
copy_subdir(struct copy_ctx *c, struct copy_dirs *d, const char *name,
    const struct stat *st)
{
	struct copy_dirs	sub = { -1, -1, -1 };
	struct timespec		ts[2];
	int			rc = -1;

	if (c->o->exclude_secrets && workspace_is_secret_name(c->rel)) {
		fprintf(c->warnf, "sandgate: warning: leaving out likely "
		    "secret folder '%s'\n", c->rel);
		return 0;
	}
	/* four descriptors a level: stay well inside 1,024 open files */
	if (c->depth >= SG_COPY_DEPTH_MAX)
		return util_cause(c->cause,
		    "refusing to copy folder '%s': folders "
		    "nest deeper than %d levels there", c->rel,
		    SG_COPY_DEPTH_MAX);
	sub.src = openat(d->src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (sub.src == -1) {
		util_cause(c->cause, "cannot open '%s': %s", c->rel,
		    errno == ELOOP ? "it became a symlink" : strerror(errno));
		goto out;
	}
	if (mkdirat(d->snap, name, 0700) == -1 ||
	    mkdirat(d->work, name, 0700) == -1 ||
	    (sub.snap = openat(d->snap, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    (sub.work = openat(d->work, name, O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1) {
		util_cause(c->cause, "cannot create folder '%s': %s", c->rel,
		    strerror(errno));
		goto out;
	}
	c->depth++;
	rc = copy_dir(c, &sub);
	c->depth--;
	if (rc == -1)
		goto out;
	rc = -1;
	ts[0] = st->st_atim;
	ts[1] = st->st_mtim;
	if (fchmod(sub.snap, 0555) == -1 ||
	    ((c->o->uid != (uid_t)-1 || c->o->gid != (gid_t)-1) &&
	    fchown(sub.work, c->o->uid, c->o->gid) == -1) ||
	    fchmod(sub.work, st->st_mode & 01777) == -1 ||
	    futimens(sub.work, ts) == -1) {
		util_cause(c->cause, "cannot set owner or mode of '%s': %s",
		    c->rel, strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (sub.src != -1)
		close(sub.src);
	if (sub.snap != -1)
		close(sub.snap);
	if (sub.work != -1)
		close(sub.work);
	return rc;
}

/* Walk one folder; d->src is read through its own duplicate. */
static int
copy_dir(struct copy_ctx *c, struct copy_dirs *d)
{
	struct dirent	*de;
	DIR		*dir;
	int		 fd, rc = 0;

	if ((fd = dup(d->src)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return util_cause(c->cause, "cannot read folder '%s': %s",
		    c->rellen ? c->rel : ".", strerror(errno));
	}
	for (;;) {
		errno = 0;	/* copy_entry may leave errno set */
		if (rc != 0 || (de = readdir(dir)) == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		rc = copy_entry(c, d, de->d_name);
	}
	if (rc == 0 && errno != 0)
		rc = util_cause(c->cause, "cannot read folder '%s': %s",
		    c->rellen ? c->rel : ".", strerror(errno));
	closedir(dir);
	return rc;
}

/* Read to EOF, hashing and writing every chunk to both copies. */
static int
copy_small(struct copy_ctx *c, int in, int snap, int work, EVP_MD_CTX *h,
    off_t *total)
{
	ssize_t	r;

	*total = 0;
	for (;;) {
		r = read(in, c->buf, WS_BUF_SIZE);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0)
			return 0;
		EVP_DigestUpdate(h, c->buf, (size_t)r);
		if (write(snap, c->buf, (size_t)r) != r ||
		    write(work, c->buf, (size_t)r) != r)
			return (errno = errno ? errno : EIO, -1);
		*total += r;
	}
}

/* Clone, or copy sparse-aware, in to out from offset 0; 0 or -1 (errno). */
static int
copy_fd_range(struct copy_ctx *c, int in, int out)
{
	if (ioctl(out, FICLONE, in) == 0)
		return 0;
	return ws_sparse_copy(in, out, NULL, WS_NO_LIMIT, NULL, c->buf,
	    WS_BUF_SIZE, NULL);
}

/* Large file: snapshot by clone/copy, hash the snapshot, then work. */
static int
copy_big(struct copy_ctx *c, int in, int snap, int work,
    char sha[WORKSPACE_SHA256_HEX])
{
	if (copy_fd_range(c, in, snap) == -1 ||
	    ws_sha_fd(snap, sha, WS_NO_LIMIT, c->buf, WS_BUF_SIZE) == -1 ||
	    copy_fd_range(c, snap, work) == -1)
		return -1;
	return 0;
}

/* Owner, mode and times of the work file; records its stat. */
static int
copy_finish_work(struct copy_ctx *c, int work, mode_t mode,
    const struct stat *src, struct ws_entry *e)
{
	struct timespec	ts[2] = { src->st_atim, src->st_mtim };
	struct stat	st;

	if ((c->o->uid != (uid_t)-1 || c->o->gid != (gid_t)-1) &&
	    fchown(work, c->o->uid, c->o->gid) == -1)
		return -1;
	if (fchmod(work, mode & 0777) == -1 || futimens(work, ts) == -1 ||
	    fstat(work, &st) == -1)
		return -1;
	e->wino = st.st_ino;
	e->wmtime = ws_ns(&st.st_mtim);
	e->wctime = ws_ns(&st.st_ctim);
	e->stat_ok = 1;
	return 0;
}

static int
copy_file(struct copy_ctx *c, struct copy_dirs *d, const char *name,
    const struct stat *st0)
{
	struct timespec	 ts[2] = { st0->st_atim, st0->st_mtim };
	struct ws_entry	*e = NULL;
	struct stat	 st;
	EVP_MD_CTX	*h = NULL;
	off_t		 total;
	int		 in, snap = -1, work = -1, rc = -1;

	in = openat(d->src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (in == -1 || fstat(in, &st) == -1 || !S_ISREG(st.st_mode)) {
		util_cause(c->cause, "cannot open '%s': %s", c->rel,
		    in == -1 ? strerror(errno) : "it is no longer a file");
		goto out;
	}
	snap = openat(d->snap, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0444);
	work = openat(d->work, name, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (snap == -1 || work == -1 ||
	    (e = ws_manifest_add(c->m, c->rel)) == NULL)
		goto fail;
	if (st.st_size <= WS_SMALL_FILE) {
		if ((h = ws_sha_new()) == NULL ||
		    copy_small(c, in, snap, work, h, &total) == -1)
			goto fail;
		ws_sha_hex(h, e->f.sha256);
		h = NULL;
	} else {
		close(snap);
		snap = openat(d->snap, name, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
		if (snap == -1 || copy_big(c, in, snap, work, e->f.sha256) == -1)
			goto fail;
		total = lseek(snap, 0, SEEK_END);
	}
	e->f.mode = st.st_mode & 07777;
	e->f.size = total;
	if (futimens(snap, ts) == -1 ||
	    copy_finish_work(c, work, e->f.mode, &st, e) == -1)
		goto fail;
	rc = 0;
	goto out;
fail:
	util_cause(c->cause, "cannot copy '%s': %s", c->rel, strerror(errno));
out:
	EVP_MD_CTX_free(h);
	if (in != -1)
		close(in);
	if (snap != -1)
		close(snap);
	if (work != -1)
		close(work);
	return rc;
}

/* Open the source root and create/open snapshot/ and work/. */
static int
copy_roots(struct copy_ctx *c, const char *src, const char *sbxdir,
    struct copy_dirs *d)
{
	int	sbx, n;

	if ((d->src = open(src, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return util_cause(c->cause,
		    "cannot open source folder '%s': %s",
		    src, strerror(errno));
	if ((sbx = open(sbxdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return util_cause(c->cause, "cannot open '%s': %s", sbxdir,
		    strerror(errno));
	if (mkdirat(sbx, "snapshot", 0700) == -1 ||
	    (mkdirat(sbx, "work", 0700) == -1 && errno != EEXIST) ||
	    (d->snap = openat(sbx, "snapshot", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    (d->work = openat(sbx, "work", O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1) {
		n = errno;
		close(sbx);
		return util_cause(c->cause, "cannot create snapshot and work "
		    "folders in '%s': %s", sbxdir, strerror(n));
	}
	close(sbx);
	return 0;
}

/* work/ may be a fresh mount point: allow only lost+found in it. */
static int	copy_work_empty(int, char **);

static int
copy_work_empty(int workfd, char **cause)
{
	struct dirent	*de;
	DIR		*dir;
	int		 fd, rc = 0;

	if ((fd = dup(workfd)) == -1 || (dir = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return util_cause(cause, "cannot read work folder: %s",
		    strerror(errno));
	}
	while ((de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") != 0 &&
		    strcmp(de->d_name, "..") != 0 &&
		    strcmp(de->d_name, "lost+found") != 0) {
			rc = util_cause(cause, "work folder is not empty");
			break;
		}
	}
	closedir(dir);
	return rc;
}

int
workspace_create(const char *src, const char *sbxdir,
    const struct workspace_opts *o, char **cause)
{
	struct copy_dirs	 d = { -1, -1, -1 };
	struct copy_ctx		 c;
	struct stat		 st;
	int			 rc = -1;

	memset(&c, 0, sizeof(c));
	c.o = o;
	c.cause = cause;
	c.warnf = o->warnf != NULL ? o->warnf : stderr;
	c.have_state = stat(state_root(), &c.state_st) == 0;
	c.have_sbx = stat(sbxdir, &c.sbx_st) == 0;
	if ((c.m = ws_manifest_new(o)) == NULL ||
	    (c.buf = malloc(WS_BUF_SIZE)) == NULL) {
		util_cause(cause, "out of memory");
		goto out;
	}
	if (copy_roots(&c, src, sbxdir, &d) == -1 ||
	    copy_work_empty(d.work, cause) == -1 || copy_dir(&c, &d) == -1)
		goto out;
	if (fstat(d.src, &st) == -1 || fchmod(d.snap, 0555) == -1 ||
	    ((o->uid != (uid_t)-1 || o->gid != (gid_t)-1) &&
	    fchown(d.work, o->uid, o->gid) == -1) ||
	    fchmod(d.work, st.st_mode & 01777) == -1) {
		util_cause(cause, "cannot set mode of '%s': %s", sbxdir,
		    strerror(errno));
		goto out;
	}
	/*
	 * The last chmod stamped work/ with the current (coarse) time: any
	 * write from now on gives a file a ctime at or past it, so recorded
	 * ctimes before it prove a file untouched (see workspace_diff()).
	 */
	if (fstat(d.work, &st) == -1) {
		util_cause(cause, "cannot stat work folder: %s",
		    strerror(errno));
		goto out;
	}
	c.m->cutoff = ws_ns(&st.st_ctim);
	ws_manifest_sort(c.m);
	rc = workspace_manifest_save(c.m, sbxdir, cause);
out:
	if (d.src != -1)
		close(d.src);
	if (d.snap != -1)
		close(d.snap);
	if (d.work != -1)
		close(d.work);
	free(c.buf);
	workspace_manifest_free(c.m);
	return rc;
}

/*
 * One entry of workspace_copy_tree(): a folder or a regular file. A file
 * gives back the blocks charged to *left when it was walked and is charged
 * with the data it actually copies; past *left its partial copy is removed
 * and 1 returned. 0, 1, or -1 with *cause.
 */
static int
copy_tree_entry(int dstfd, const struct workspace_walk_entry *e,
    off_t size_max, off_t *left, unsigned char *buf, char **cause)
{
	const char	*base;
	struct stat	 st;
	int		 dir, in = -1, out = -1, rc = -1;

	if ((dir = ws_open_parent(dstfd, e->path, &base)) == -1)
		return util_cause(cause, "cannot open the folder of '%s': %s",
		    e->path, strerror(errno));
	if (S_ISDIR(e->st.st_mode)) {
		if (mkdirat(dir, base, 0755) == -1)
			util_cause(cause, "cannot create '%s': %s", e->path,
			    strerror(errno));
		else
			rc = 0;
		goto out;
	}
	in = openat(e->dirfd, e->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (in == -1 || fstat(in, &st) == -1 || st.st_ino != e->st.st_ino ||
	    !S_ISREG(st.st_mode)) {
		util_cause(cause, "cannot open '%s': %s", e->path, in == -1 ?
		    strerror(errno) : "it was replaced");
		goto out;
	}
	out = openat(dir, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	*left += (off_t)e->st.st_blocks * 512;
	if (out != -1 && ws_sparse_copy(in, out, NULL, size_max, left, buf,
	    WS_BUF_SIZE, NULL) == 0)
		rc = 0;
	else if (out != -1 && errno == EDQUOT) {
		unlinkat(dir, base, 0);
		rc = 1;
	} else
		util_cause(cause, "cannot copy '%s' out: %s", e->path,
		    errno == EFBIG ? "it grew past the sandbox's --disk" :
		    strerror(errno));
out:
	if (in != -1)
		close(in);
	if (out != -1)
		close(out);
	close(dir);
	return rc;
}

/* The warning for a file past what one copy out may write. */
static void
copy_warn_budget(FILE *warnf, const struct workspace_walk_entry *e)
{
	fputs("sandgate: warning: not copying ", warnf);
	quote_path(warnf, e->path, e->pathlen);
	fputs(" (the sandbox's --disk has been copied out: a hard-linked "
	    "file is copied once per name, a file by the data it holds when "
	    "it is copied)\n", warnf);
}

int
workspace_copy_tree(int srcfd, int dstfd, off_t size_max, FILE *warnf,
    char **cause)
{
	struct workspace_walk		*w;
	struct workspace_walk_entry	 e;
	unsigned char			*buf;
	off_t				 left = size_max;
	int				 r;

	if ((buf = malloc(WS_BUF_SIZE)) == NULL)
		return util_cause(cause, "out of memory");
	if ((w = workspace_walk_new(srcfd, cause)) == NULL) {
		free(buf);
		return -1;
	}
	while ((r = workspace_walk_next(w, &e, cause)) == 1) {
		if (S_ISREG(e.st.st_mode) && e.st.st_size > size_max) {
			fputs("sandgate: warning: not copying ", warnf);
			quote_path(warnf, e.path, e.pathlen);
			fprintf(warnf, " (%lld bytes, holes counted, is more "
			    "than the sandbox's --disk)\n",
			    (long long)e.st.st_size);
		} else if (S_ISREG(e.st.st_mode) &&
		    workspace_budget_take(&left, &e.st) == -1) {
			copy_warn_budget(warnf, &e);
		} else if (S_ISREG(e.st.st_mode) || S_ISDIR(e.st.st_mode)) {
			if ((r = copy_tree_entry(dstfd, &e, size_max, &left,
			    buf, cause)) == -1)
				break;
			if (r == 1)
				copy_warn_budget(warnf, &e);
		} else {
			fputs("sandgate: warning: not copying special file ",
			    warnf);
			quote_path(warnf, e.path, e.pathlen);
			fputc('\n', warnf);
		}
	}
	workspace_walk_free(w);
	free(buf);
	return r;
}
