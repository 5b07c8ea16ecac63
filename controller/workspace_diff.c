/*
 * workspace_diff.c: compare the working copy with the manifest (one walk,
 * every changed file read once), then keep the bytes of the changed text
 * files whose text the diff shows, for workspace_text.c to write later:
 * chosen first by the cost of their text (workspace_show.c), staged
 * after, so that no file's bytes decide whether another's text is shown.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "risky.h"
#include "sglimits.h"
#include "workspace.h"
#include "util.h"
#include "workspace_int.h"

struct diff_ctx {
	const struct workspace_manifest	*m;
	const struct workspace_diff_opts *o;
	struct workspace_diff		*out;
	size_t				 cap;
	size_t				 names;		/* bytes of paths */
	unsigned char			*seen;		/* per manifest entry */
	char				**cause;
	int				 snapfd;
	unsigned char			*buf;		/* WS_BUF_SIZE */
	char				*file;		/* SG_DIFF_FILE_MAX + 1 */
	off_t				 stage_end;
};

static int	 diff_walk(struct diff_ctx *, int);
static int	 diff_entry(struct diff_ctx *, struct workspace_walk *,
		    const struct workspace_walk_entry *);
static int	 diff_file(struct diff_ctx *,
		    const struct workspace_walk_entry *);
static int	 diff_read(struct diff_ctx *, int, const struct stat *,
		    char *, int *, size_t *);
static int	 diff_stage(struct diff_ctx *, int);
static int	 diff_stage_one(struct diff_ctx *, int,
		    struct workspace_delta *);
static int	 diff_stage_open(struct diff_ctx *, const char *);
static int	 diff_show_text(struct diff_ctx *, struct workspace_delta *,
		    size_t);
static struct workspace_delta *diff_add(struct diff_ctx *,
		    enum workspace_change, const char *);
static int	 diff_twins(struct diff_ctx *);
static int	 diff_snap_binary(struct diff_ctx *, const char *);
static int	 diff_special(struct diff_ctx *, const char *,
		    enum workspace_kind, const struct stat *);
static int	 diff_unchanged_stat(const struct diff_ctx *,
		    const struct ws_entry *, const struct stat *);
static int	 diff_deleted(struct diff_ctx *);

static const char *const diff_kind_what[] = {
	[WORKSPACE_FILE] = "file",
	[WORKSPACE_SYMLINK] = "symlink",
	[WORKSPACE_FIFO] = "FIFO",
	[WORKSPACE_SOCKET] = "socket",
	[WORKSPACE_DEVICE] = "device file",
	[WORKSPACE_BADNAME] = "name that is not valid UTF-8",
	[WORKSPACE_OVERSIZE] = "file larger than the sandbox's --disk",
};

static struct workspace_delta *
diff_add(struct diff_ctx *c, enum workspace_change ch, const char *path)
{
	struct workspace_delta	*nv, *d;
	size_t			 ncap, len = strlen(path) + 1;

	if (c->out->n >= SG_DIFF_PATHS_MAX ||
	    len > SG_DIFF_NAMES_MAX - c->names) {
		util_cause(c->cause, "the working copy changes more than %u "
		    "paths, or more than %u bytes of their names: sandgate "
		    "does not review that much (remove what need not be "
		    "reviewed, or discard the sandbox)", SG_DIFF_PATHS_MAX,
		    SG_DIFF_NAMES_MAX);
		errno = E2BIG;
		return NULL;
	}
	if (c->out->n == c->cap) {
		ncap = c->cap ? c->cap * 2 : 32;
		if ((nv = reallocarray(c->out->v, ncap, sizeof(*nv))) == NULL) {
			util_cause(c->cause, "out of memory");
			return NULL;
		}
		c->out->v = nv;
		c->cap = ncap;
	}
	d = &c->out->v[c->out->n];
	memset(d, 0, sizeof(*d));
	if ((d->path = strdup(path)) == NULL) {
		util_cause(c->cause, "out of memory");
		return NULL;
	}
	c->names += len;
	d->change = ch;
	d->kind = WORKSPACE_FILE;
	d->risky = risky_path(path, &d->risky_why);
	c->out->n++;
	return d;
}

static int
diff_snap_binary(struct diff_ctx *c, const char *path)
{
	ssize_t	r;
	int	fd;

	if ((fd = ws_open_beneath(c->snapfd, path, O_RDONLY)) == -1)
		return 0;
	r = pread(fd, c->buf, 8000, 0);
	close(fd);
	return r > 0 && ws_is_binary(c->buf, (size_t)r);
}

/*
 * Provably unchanged without reading: same inode, size, mtime and ctime
 * as recorded at create, and a ctime before the end of create (a later
 * write, even one that restores mtime, moves ctime past it).
 */
static int
diff_unchanged_stat(const struct diff_ctx *c, const struct ws_entry *e,
    const struct stat *st)
{
	return e->stat_ok && st->st_ino == e->wino &&
	    st->st_size == e->f.size && ws_ns(&st->st_mtim) == e->wmtime &&
	    ws_ns(&st->st_ctim) == e->wctime && e->wctime < c->m->cutoff;
}

/*
 * Read a work file once: a small one whole into c->file (*len bytes,
 * hashed from there), a larger one hashed as it streams past. *bin from
 * its first bytes.
 */
static int
diff_read(struct diff_ctx *c, int fd, const struct stat *st, char *sha,
    int *bin, size_t *len)
{
	EVP_MD_CTX	*h;
	ssize_t		 r;
	size_t		 n = 0;

	*len = (size_t)-1;
	if (st->st_size > SG_DIFF_FILE_MAX) {
		r = pread(fd, c->buf, 8000, 0);
		*bin = r > 0 && ws_is_binary(c->buf, (size_t)r);
		return ws_sha_fd(fd, sha, c->o->size_max, c->buf, WS_BUF_SIZE);
	}
	while (n <= SG_DIFF_FILE_MAX) {
		r = read(fd, c->file + n, SG_DIFF_FILE_MAX + 1 - n);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > SG_DIFF_FILE_MAX) {
		/* it grew while read: hash it again as a large one */
		r = pread(fd, c->buf, 8000, 0);
		*bin = r > 0 && ws_is_binary(c->buf, (size_t)r);
		return ws_sha_fd(fd, sha, c->o->size_max, c->buf, WS_BUF_SIZE);
	}
	if ((h = ws_sha_new()) == NULL)
		return (errno = ENOMEM, -1);
	EVP_DigestUpdate(h, c->file, n);
	ws_sha_hex(h, sha);
	*bin = n > 0 && ws_is_binary((unsigned char *)c->file, n);
	*len = n;
	return 0;
}

/* The staging file: unlinked, in the sandbox folder (never /tmp). */
static int
diff_stage_open(struct diff_ctx *c, const char *sbxdir)
{
	if ((c->out->stagefd = workspace_tmpfile(sbxdir, c->cause)) == -1)
		return -1;
	return 0;
}

/* Chosen work sides in order of their SHA-256, then path. */
static int
diff_stage_cmp(const void *x, const void *y)
{
	const struct workspace_delta *a = *(const struct workspace_delta *const *)x;
	const struct workspace_delta *b = *(const struct workspace_delta *const *)y;
	int	r;

	if ((r = strcmp(a->sha256_after, b->sha256_after)) != 0)
		return r;
	return strcmp(a->path, b->path);
}

/*
 * Stage d's work side: read it again (beneath work/, wfd), check it is
 * the file the walk hashed, and append its bytes to the staging file.
 */
static int
diff_stage_one(struct diff_ctx *c, int wfd, struct workspace_delta *d)
{
	struct stat	 st;
	char		 sha[WORKSPACE_SHA256_HEX];
	size_t		 len = (size_t)-1, off = 0;
	ssize_t		 w;
	int		 bin, fd, r = -1;

	if ((fd = ws_open_beneath(wfd, d->path, O_RDONLY | O_NONBLOCK)) != -1 &&
	    fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_size <= SG_DIFF_FILE_MAX)
		r = diff_read(c, fd, &st, sha, &bin, &len);
	if (fd != -1)
		close(fd);
	if (r == -1 || len == (size_t)-1 || (off_t)len != d->size_after ||
	    strcmp(sha, d->sha256_after) != 0)
		return util_cause(c->cause, "work file '%s' changed while the "
		    "diff read it", d->path);
	while (off < len) {
		w = pwrite(c->out->stagefd, c->file + off, len - off,
		    c->stage_end + (off_t)off);
		if (w == -1 && errno == EINTR)
			continue;
		if (w <= 0)
			return util_cause(c->cause, "cannot stage '%s' for the "
			    "diff: %s", d->path, strerror(errno ? errno : EIO));
		off += (size_t)w;
	}
	d->staged = 1;
	d->stage_off = c->stage_end;
	d->stage_len = len;
	c->stage_end += (off_t)len;
	return 0;
}

/*
 * Stage the work side of each text delta ws_show_choose() chose to show,
 * once per content (names of the same bytes share one copy): each is
 * charged at least its bytes, so the staged total is within --disk.
 */
static int
diff_stage(struct diff_ctx *c, int wfd)
{
	struct workspace_delta	**v, *d;
	size_t			  i, n = 0;
	int			  rc = 0;

	if ((v = calloc(c->out->n + 1, sizeof(*v))) == NULL)
		return util_cause(c->cause, "out of memory");
	for (i = 0; i < c->out->n; i++)
		if (c->out->v[i].show == WORKSPACE_SHOW_TEXT &&
		    c->out->v[i].change != WORKSPACE_DELETED)
			v[n++] = &c->out->v[i];
	qsort(v, n, sizeof(*v), diff_stage_cmp);
	for (i = 0; i < n && rc == 0; i++) {
		d = v[i];
		if (i > 0 && strcmp(v[i - 1]->sha256_after,
		    d->sha256_after) == 0) {
			d->staged = 1;
			d->stage_off = v[i - 1]->stage_off;
			d->stage_len = v[i - 1]->stage_len;
			continue;
		}
		rc = diff_stage_one(c, wfd, d);
	}
	free(v);
	return rc;
}

/*
 * A text delta of a staged diff: too large to show by its own size, or
 * its cost (both sides) for ws_show_choose(); diff_stage() keeps the work
 * side of the chosen ones. len: the work side's bytes in c->file
 * ((size_t)-1: over the limit).
 */
static int
diff_show_text(struct diff_ctx *c, struct workspace_delta *d, size_t len)
{
	struct ws_show_cost	a, b;
	int			r;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	d->show = WORKSPACE_SHOW_TOO_LARGE;
	if (d->change != WORKSPACE_ADDED) {
		r = ws_show_snap_cost(c->snapfd, d->path, &a, c->buf,
		    WS_BUF_SIZE);
		if (r == -1)
			return util_cause(c->cause, "cannot read the snapshot "
			    "of '%s': %s", d->path, strerror(errno));
		if (r == 1)
			return 0;
	}
	if (d->change != WORKSPACE_DELETED) {
		if (len == (size_t)-1)
			return 0;
		ws_show_cost_add(&b, (const unsigned char *)c->file, len);
	}
	ws_show_set(d, &a, &b);
	return 0;
}

static int
diff_file(struct diff_ctx *c, const struct workspace_walk_entry *we)
{
	struct workspace_delta	*d;
	struct ws_entry		*e;
	struct stat		 st;
	char			 sha[WORKSPACE_SHA256_HEX];
	size_t			 len;
	int			 bin = 0, fd, rc = -1;

	e = ws_manifest_lookup(c->m, we->path);
	if (e != NULL) {
		c->seen[e - c->m->v] = 1;
		if (diff_unchanged_stat(c, e, &we->st))
			return 0;
	}
	if (we->st.st_size > c->o->size_max)
		return diff_special(c, we->path, WORKSPACE_OVERSIZE, &we->st);
	fd = openat(we->dirfd, we->name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC);
	if (fd == -1 || fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_ino != we->st.st_ino) {
		if (fd != -1)
			close(fd);
		return util_cause(c->cause, "cannot open work file '%s': %s",
		    we->path, fd == -1 ? strerror(errno) : "it was replaced");
	}
	if (diff_read(c, fd, &st, sha, &bin, &len) == -1) {
		util_cause(c->cause, "cannot read work file '%s': %s", we->path,
		    errno == EFBIG ? "it grew past the sandbox's --disk" :
		    strerror(errno));
		goto out;
	}
	rc = 0;
	if (e != NULL && strcmp(sha, e->f.sha256) == 0 &&
	    (st.st_mode & 0777) == (e->f.mode & 0777))
		goto out;
	d = diff_add(c, e != NULL ? WORKSPACE_MODIFIED : WORKSPACE_ADDED,
	    we->path);
	if (d == NULL) {
		rc = -1;
		goto out;
	}
	memcpy(d->sha256_after, sha, sizeof(sha));
	d->mode_after = st.st_mode & 07777;
	d->size_after = len != (size_t)-1 ? (off_t)len : st.st_size;
	d->binary = bin;
	if (e != NULL) {
		memcpy(d->sha256_before, e->f.sha256, sizeof(sha));
		d->mode_before = e->f.mode;
		d->size_before = e->f.size;
		if (!bin)
			d->binary = diff_snap_binary(c, we->path);
	}
	if (c->o->stage && !d->binary)
		rc = diff_show_text(c, d, len);
out:
	close(fd);
	return rc;
}

/* A work entry that is not a regular file we read, or has an odd name. */
static int
diff_special(struct diff_ctx *c, const char *path, enum workspace_kind kind,
    const struct stat *st)
{
	struct workspace_delta	*d;
	struct ws_entry		*e;

	e = ws_manifest_lookup(c->m, path);
	if (e != NULL)
		c->seen[e - c->m->v] = 1;
	d = diff_add(c, e != NULL ? WORKSPACE_MODIFIED : WORKSPACE_ADDED,
	    path);
	if (d == NULL)
		return -1;
	d->special = 1;
	d->kind = kind;
	d->special_what = diff_kind_what[kind];
	d->binary = 1;
	if (kind == WORKSPACE_OVERSIZE) {
		d->mode_after = st->st_mode & 07777;
		d->size_after = st->st_size;
	}
	if (e != NULL) {
		memcpy(d->sha256_before, e->f.sha256, WORKSPACE_SHA256_HEX);
		d->mode_before = e->f.mode;
		d->size_before = e->f.size;
	}
	return 0;
}

static int
diff_entry(struct diff_ctx *c, struct workspace_walk *w,
    const struct workspace_walk_entry *e)
{
	mode_t	m = e->st.st_mode;

	if (ws_default_excluded(e->name) || ws_pattern_excluded(
	    c->m->excludes, c->m->nexcludes, e->path, e->name)) {
		workspace_walk_prune(w);
		return 0;
	}
	if (!ws_utf8_valid(e->path)) {
		workspace_walk_prune(w);
		/* a folder's own entry stands for everything below it */
		return diff_special(c, e->path, WORKSPACE_BADNAME, &e->st);
	}
	if (S_ISDIR(m))
		return 0;
	if (S_ISREG(m))
		return diff_file(c, e);
	return diff_special(c, e->path, S_ISLNK(m) ? WORKSPACE_SYMLINK :
	    S_ISFIFO(m) ? WORKSPACE_FIFO : S_ISSOCK(m) ? WORKSPACE_SOCKET :
	    WORKSPACE_DEVICE, &e->st);
}

/* Walk work/ (wfd, not owned). */
static int
diff_walk(struct diff_ctx *c, int wfd)
{
	struct workspace_walk		*w;
	struct workspace_walk_entry	 e;
	int				 r;

	if ((w = workspace_walk_new(wfd, c->cause)) == NULL)
		return -1;
	while ((r = workspace_walk_next(w, &e, c->cause)) == 1) {
		if (c->o->interrupted != NULL && c->o->interrupted()) {
			r = util_cause(c->cause, "interrupted");
			break;
		}
		if ((r = diff_entry(c, w, &e)) == -1)
			break;
	}
	workspace_walk_free(w);
	return r;
}

/* Manifest entries the walk did not meet are deleted. */
static int
diff_deleted(struct diff_ctx *c)
{
	struct workspace_delta	*d;
	const struct ws_entry	*e;
	size_t			 i;

	for (i = 0; i < c->m->n; i++) {
		if (c->seen[i])
			continue;
		e = &c->m->v[i];
		if ((d = diff_add(c, WORKSPACE_DELETED, e->path)) == NULL)
			return -1;
		memcpy(d->sha256_before, e->f.sha256, WORKSPACE_SHA256_HEX);
		d->mode_before = e->f.mode;
		d->size_before = e->f.size;
		d->binary = diff_snap_binary(c, e->path);
		if (c->o->stage && !d->binary &&
		    diff_show_text(c, d, 0) == -1)
			return -1;
	}
	return 0;
}

struct workspace_diff *
workspace_diff(const char *sbxdir, const struct workspace_manifest *m,
    const struct workspace_diff_opts *o, char **cause)
{
	struct diff_ctx	 c;
	char		 path[4096];
	int		 wfd = -1, rc = -1, saved;

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.o = o;
	c.cause = cause;
	c.snapfd = -1;
	c.out = calloc(1, sizeof(*c.out));
	c.seen = calloc(m->n + 1, 1);
	c.buf = malloc(WS_BUF_SIZE);
	c.file = malloc(SG_DIFF_FILE_MAX + 1);
	if (c.out == NULL || c.seen == NULL || c.buf == NULL ||
	    c.file == NULL) {
		util_cause(cause, "out of memory");
		goto out;
	}
	c.out->stagefd = -1;
	if (o->stage && diff_stage_open(&c, sbxdir) == -1)
		goto out;
	snprintf(path, sizeof(path), "%s/snapshot", sbxdir);
	c.snapfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/work", sbxdir);
	wfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c.snapfd == -1 || wfd == -1) {
		util_cause(cause, "cannot open snapshot or work folder in "
		    "'%s': %s", sbxdir, strerror(errno));
		goto out;
	}
	if (diff_walk(&c, wfd) == -1 || diff_deleted(&c) == -1 ||
	    diff_twins(&c) == -1)
		goto out;
	if (o->stage && ws_show_choose(c.out, o->size_max) == -1) {
		util_cause(cause, "out of memory");
		goto out;
	}
	if (o->stage && diff_stage(&c, wfd) == -1)
		goto out;
	workspace_diff_sort(c.out);
	workspace_review_digest(c.out, c.out->review);
	rc = 0;
out:
	saved = errno;
	if (c.snapfd != -1)
		close(c.snapfd);
	if (wfd != -1)
		close(wfd);
	free(c.seen);
	free(c.buf);
	free(c.file);
	if (rc == -1) {
		workspace_diff_free(c.out);
		errno = saved;
		return NULL;
	}
	return c.out;
}

/*
 * Folders compared per path: the first ones only, so that a chain of
 * folders thousands deep costs the review linear, not quadratic, time and
 * memory (each folder is a copy of the path up to it). The whole path is
 * always compared.
 */
#define TWIN_FOLDERS_MAX	64
/*
 * Bytes of folder and path copies (and their keys) the table may hold:
 * 64 prefixes of long paths cost quadratic memory (263 MB for 240 paths
 * of 16 KB). Past it the check stops and every changed path not already
 * risky is marked risky, "not checked".
 */
#define TWIN_BYTES_MAX		(4u * 1024 * 1024)

/* One folder or file path of the snapshot or the diff, and its key. */
struct twin {
	char	*key;		/* risky_key_dup */
	char	*path;		/* the bytes */
};

static int
twin_cmp(const void *a, const void *b)
{
	const struct twin	*x = a, *y = b;
	int			 c;

	if ((c = strcmp(x->key, y->key)) != 0)
		return c;
	return strcmp(x->path, y->path);
}

/*
 * Add path and each of its folders to t (all that are valid UTF-8); a
 * folder that prev (the path added before) has too is there already.
 * Each copy and its key counted in *held: 1 (nothing more added) past
 * TWIN_BYTES_MAX. 0, or -1 when memory is short.
 */
static int
twin_add(struct twin *t, size_t *n, const char *path, const char *prev,
    size_t *held)
{
	const char	*p = path;
	size_t		 len, k = 0;

	for (;;) {
		p = ++k > TWIN_FOLDERS_MAX ? NULL : strchr(p, '/');
		len = p != NULL ? (size_t)(p - path) : strlen(path);
		if (p == NULL || prev == NULL || strncmp(prev, path, len + 1)
		    != 0) {
			if ((*held += 2 * (len + 1)) > TWIN_BYTES_MAX)
				return 1;
			if ((t[*n].path = strndup(path, len)) == NULL)
				return -1;
			if ((t[*n].key = risky_key_dup(t[*n].path)) == NULL)
				free(t[*n].path);	/* not UTF-8 */
			else
				(*n)++;
		}
		if (p == NULL)
			return 0;
		p++;
	}
}

/* The number of '/'-separated parts of path. */
static size_t
twin_depth(const char *path)
{
	size_t	n = 1;

	while ((path = strchr(path, '/')) != NULL && n <= TWIN_FOLDERS_MAX) {
		path++;
		n++;
	}
	return n;
}

/*
 * The reason when path or one of its folders has the key of another
 * folder or path of t (sorted), else NULL: RISKY_WHY_TWIN when their NFC
 * forms are equal, RISKY_WHY_ALIKE when only the keys are.
 */
static const char *
twin_find(const struct twin *t, size_t n, const char *path)
{
	struct twin	 me;
	const char	*why = NULL, *p = path;
	char		*nfc, *other;
	size_t		 lo, hi, mid, len, k = 0;

	for (; why == NULL; p++) {
		p = ++k > TWIN_FOLDERS_MAX ? NULL : strchr(p, '/');
		len = p != NULL ? (size_t)(p - path) : strlen(path);
		if ((me.path = strndup(path, len)) == NULL)
			return NULL;
		if ((me.key = risky_key_dup(me.path)) != NULL) {
			for (lo = 0, hi = n; lo < hi; ) {
				mid = lo + (hi - lo) / 2;
				if (strcmp(t[mid].key, me.key) < 0)
					lo = mid + 1;
				else
					hi = mid;
			}
			for (; why == NULL && lo < n &&
			    strcmp(t[lo].key, me.key) == 0; lo++) {
				if (strcmp(t[lo].path, me.path) == 0)
					continue;
				nfc = risky_nfc_dup(me.path);
				other = risky_nfc_dup(t[lo].path);
				why = nfc != NULL && other != NULL &&
				    strcmp(nfc, other) == 0 ? RISKY_WHY_TWIN :
				    RISKY_WHY_ALIKE;
				free(nfc);
				free(other);
			}
		}
		free(me.key);
		free(me.path);
		if (p == NULL)
			break;
	}
	return why;
}

/*
 * Names that look alike: every changed path one of whose folders, or
 * itself, has the look-alike key (risky_key_dup: NFKC, case folded, slash
 * and dot look-alikes as '/' and '.') of another folder or path of the
 * diff or of the snapshot (the host at create), compared folder by
 * folder, is risky. A sorted table of every folder and path, and a
 * binary search for each part of each changed path.
 */
static int
diff_twins(struct diff_ctx *c)
{
	struct workspace_diff	*d = c->out;
	struct twin		*t = NULL;
	const char		*prev = NULL, *path, *why;
	size_t			 n = 0, cap = 0, i, held = 0;
	int			 rv = -1, full = 0;

	if (d->n == 0)
		return 0;
	for (i = 0; i < c->m->n + d->n; i++)
		cap += twin_depth(i < c->m->n ? c->m->v[i].path :
		    d->v[i - c->m->n].path);
	if ((t = calloc(cap, sizeof(*t))) == NULL)
		goto out;
	for (i = 0; i < c->m->n + d->n; i++) {
		path = i < c->m->n ? c->m->v[i].path : d->v[i - c->m->n].path;
		if ((full = twin_add(t, &n, path, prev, &held)) == -1)
			goto out;
		if (full)
			break;
		prev = path;
	}
	qsort(t, n, sizeof(*t), twin_cmp);
	for (i = 0; i < d->n; i++) {
		if (d->v[i].risky)
			continue;
		if (full) {
			d->v[i].risky = 1;
			d->v[i].risky_why = "not checked for look-alike names: "
			    "the paths hold more than 4 MiB of folder names";
		} else if ((why = twin_find(t, n, d->v[i].path)) != NULL) {
			d->v[i].risky = 1;
			d->v[i].risky_why = why;
		}
	}
	rv = 0;
out:
	if (rv == -1)
		(void)util_cause(c->cause, "out of memory");
	for (i = 0; t != NULL && i < n; i++) {
		free(t[i].key);
		free(t[i].path);
	}
	free(t);
	return rv;
}

void
workspace_diff_free(struct workspace_diff *d)
{
	size_t	i;

	if (d == NULL)
		return;
	for (i = 0; i < d->n; i++)
		free(d->v[i].path);
	free(d->v);
	if (d->stagefd != -1)
		close(d->stagefd);
	free(d);
}
