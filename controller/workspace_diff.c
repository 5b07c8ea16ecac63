/*
 * workspace_diff.c: compare the working copy with the manifest, and the
 * unified text of one change from `git diff --no-index`.
 */
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "risky.h"
#include "sglimits.h"
#include "workspace.h"
#include "util.h"
#include "workspace_priv.h"

struct diff_ctx {
	const struct workspace_manifest	*m;
	struct workspace_diff		*out;
	size_t				 cap;
	unsigned char			*seen;		/* per manifest entry */
	char				**cause;
	int				 snapfd;
	unsigned char			*buf;
	char				 rel[4096];
	size_t				 rellen;
};

static int	 diff_dir(struct diff_ctx *, int);
static int	 diff_entry(struct diff_ctx *, int, const char *);
static int	 diff_file(struct diff_ctx *, int, const char *,
		    const struct stat *);
static struct workspace_delta *diff_add(struct diff_ctx *,
		    enum workspace_change, const char *);
static int	 diff_hash(struct diff_ctx *, int, const char *,
		    char *, int *);
static int	 diff_snap_binary(struct diff_ctx *, const char *);
static int	 diff_special(struct diff_ctx *, const char *, const char *);
static int	 diff_delta_cmp(const void *, const void *);
static int	 diff_unchanged_stat(const struct diff_ctx *,
		    const struct ws_entry *, const struct stat *);
static int	 text_copy(int, const char *, const char *, mode_t);
static int	 text_run_git(const char *, const char *, const char *,
		    char **, size_t *, char **);
static int	 text_rewrite(const char *, size_t, const struct
		    workspace_delta *, char **);
static void	 text_label(FILE *, const char *, const char *);
static json_t	*diff_json_delta(const char *, const struct workspace_delta *,
		    char **);
static int	 diff_write_json(const char *, const struct workspace_diff *,
		    FILE *, char **);
static int	 diff_deleted(struct diff_ctx *);

static struct workspace_delta *
diff_add(struct diff_ctx *c, enum workspace_change ch, const char *path)
{
	struct workspace_delta	*nv, *d;
	size_t			 ncap;

	if (c->out->n == c->cap) {
		ncap = c->cap ? c->cap * 2 : 32;
		if ((nv = reallocarray(c->out->v, ncap, sizeof(*nv))) == NULL)
			return NULL;
		c->out->v = nv;
		c->cap = ncap;
	}
	d = &c->out->v[c->out->n];
	memset(d, 0, sizeof(*d));
	if ((d->path = strdup(path)) == NULL)
		return NULL;
	d->change = ch;
	d->risky = risky_path(path, NULL);
	c->out->n++;
	return d;
}

/* Hash a work file opened from dfd; *bin from its first bytes. */
static int
diff_hash(struct diff_ctx *c, int dfd, const char *name, char *sha, int *bin)
{
	ssize_t	r;
	int	fd, rc;

	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1)
		return ws_cause(c->cause, "cannot open work file '%s': %s",
		    c->rel, strerror(errno));
	r = pread(fd, c->buf, 8000, 0);
	*bin = r > 0 && ws_is_binary(c->buf, (size_t)r);
	rc = ws_sha_fd(fd, sha, c->buf, WS_BUF_SIZE);
	if (rc == -1)
		ws_cause(c->cause, "cannot read work file '%s': %s", c->rel,
		    strerror(errno));
	close(fd);
	return rc;
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

static int
diff_file(struct diff_ctx *c, int dfd, const char *name,
    const struct stat *st)
{
	struct workspace_delta	*d;
	struct ws_entry		*e;
	char			 sha[WORKSPACE_SHA256_HEX];
	int			 bin = 0;

	e = ws_manifest_lookup(c->m, c->rel);
	if (e != NULL) {
		c->seen[e - c->m->v] = 1;
		if (diff_unchanged_stat(c, e, st))
			return 0;
	}
	if (diff_hash(c, dfd, name, sha, &bin) == -1)
		return -1;
	if (e != NULL && strcmp(sha, e->f.sha256) == 0 &&
	    (st->st_mode & 0777) == (e->f.mode & 0777))
		return 0;
	d = diff_add(c, e != NULL ? WORKSPACE_MODIFIED : WORKSPACE_ADDED,
	    c->rel);
	if (d == NULL)
		return ws_cause(c->cause, "out of memory");
	memcpy(d->sha256_after, sha, sizeof(sha));
	d->mode_after = st->st_mode & 07777;
	d->binary = bin;
	if (e != NULL) {
		memcpy(d->sha256_before, e->f.sha256, sizeof(sha));
		d->mode_before = e->f.mode;
		if (!bin)
			d->binary = diff_snap_binary(c, c->rel);
	}
	return 0;
}

/* A work entry that is not a regular file or has an odd name. */
static int
diff_special(struct diff_ctx *c, const char *path, const char *what)
{
	struct workspace_delta	*d;
	struct ws_entry		*e;

	e = ws_manifest_lookup(c->m, path);
	if (e != NULL)
		c->seen[e - c->m->v] = 1;
	d = diff_add(c, e != NULL ? WORKSPACE_MODIFIED : WORKSPACE_ADDED,
	    path);
	if (d == NULL)
		return ws_cause(c->cause, "out of memory");
	d->special = 1;
	d->special_what = what;
	if (e != NULL) {
		memcpy(d->sha256_before, e->f.sha256, WORKSPACE_SHA256_HEX);
		d->mode_before = e->f.mode;
	}
	return 0;
}

static int
diff_entry(struct diff_ctx *c, int dfd, const char *name)
{
	struct stat	st;
	size_t		old = c->rellen, n = strlen(name), i;
	int		rc = 0, sub;

	if (old + 1 + n >= sizeof(c->rel))
		return ws_cause(c->cause, "path too long under '%s'", c->rel);
	if (old > 0)
		c->rel[c->rellen++] = '/';
	memcpy(c->rel + c->rellen, name, n + 1);
	c->rellen += n;
	if (ws_default_excluded(name) || ws_pattern_excluded(c->m->excludes,
	    c->m->nexcludes, c->rel, name))
		goto out;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1) {
		if (errno != ENOENT)	/* removed while we looked: gone */
			rc = ws_cause(c->cause, "cannot stat work file "
			    "'%s': %s", c->rel, strerror(errno));
		goto out;
	}
	if (!ws_utf8_valid(c->rel)) {
		for (i = 0; i < c->rellen; i++)
			if ((unsigned char)c->rel[i] >= 0x80)
				c->rel[i] = '?';
		rc = diff_special(c, c->rel, "name that is not UTF-8");
	} else if (S_ISDIR(st.st_mode)) {
		sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (sub == -1)
			rc = diff_special(c, c->rel, "folder that cannot be "
			    "opened");
		else
			rc = diff_dir(c, sub);
	} else if (S_ISREG(st.st_mode))
		rc = diff_file(c, dfd, name, &st);
	else
		rc = diff_special(c, c->rel, S_ISLNK(st.st_mode) ? "symlink" :
		    S_ISFIFO(st.st_mode) ? "FIFO" : S_ISSOCK(st.st_mode) ?
		    "socket" : "device file");
out:
	c->rellen = old;
	c->rel[old] = '\0';
	return rc;
}

/* Walk one work folder; takes ownership of dfd. */
static int
diff_dir(struct diff_ctx *c, int dfd)
{
	struct dirent	*de;
	DIR		*dir;
	int		 rc = 0;

	if ((dir = fdopendir(dfd)) == NULL) {
		close(dfd);
		return ws_cause(c->cause, "cannot read work folder '%s': %s",
		    c->rel, strerror(errno));
	}
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		/* dirfd(dir) stays valid while the stream is open */
		rc = diff_entry(c, dirfd(dir), de->d_name);
	}
	closedir(dir);
	return rc;
}

static int
diff_delta_cmp(const void *a, const void *b)
{
	return strcmp(((const struct workspace_delta *)a)->path,
	    ((const struct workspace_delta *)b)->path);
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
			return ws_cause(c->cause, "out of memory");
		memcpy(d->sha256_before, e->f.sha256, WORKSPACE_SHA256_HEX);
		d->mode_before = e->f.mode;
		d->binary = diff_snap_binary(c, e->path);
	}
	return 0;
}

struct workspace_diff *
workspace_diff(const char *sbxdir, const struct workspace_manifest *m,
    char **cause)
{
	struct diff_ctx	 c;
	char		 path[4096];
	int		 wfd = -1, rc = -1;

	memset(&c, 0, sizeof(c));
	c.m = m;
	c.cause = cause;
	c.snapfd = -1;
	c.out = calloc(1, sizeof(*c.out));
	c.seen = calloc(m->n + 1, 1);
	c.buf = malloc(WS_BUF_SIZE);
	if (c.out == NULL || c.seen == NULL || c.buf == NULL) {
		ws_cause(cause, "out of memory");
		goto out;
	}
	snprintf(path, sizeof(path), "%s/snapshot", sbxdir);
	c.snapfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	snprintf(path, sizeof(path), "%s/work", sbxdir);
	wfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (c.snapfd == -1 || wfd == -1) {
		ws_cause(cause, "cannot open snapshot or work folder in "
		    "'%s': %s", sbxdir, strerror(errno));
		goto out;
	}
	if (diff_dir(&c, wfd) == -1 || diff_deleted(&c) == -1)
		goto out;
	if (c.out->n > 1)
		qsort(c.out->v, c.out->n, sizeof(*c.out->v), diff_delta_cmp);
	rc = 0;
out:
	if (c.snapfd != -1)
		close(c.snapfd);
	free(c.seen);
	free(c.buf);
	if (rc == -1) {
		workspace_diff_free(c.out);
		return NULL;
	}
	return c.out;
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
	free(d);
}

/* Copy an open file to a new file path with the given mode. */
static int
text_copy(int in, const char *to, const char *unused, mode_t mode)
{
	unsigned char	b[64 * 1024];
	ssize_t		r;
	off_t		off = 0;
	int		out, rc = 0;

	(void)unused;
	out = open(to, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (out == -1)
		return -1;
	while ((r = pread(in, b, sizeof(b), off)) > 0) {
		if (write(out, b, (size_t)r) != r) {
			rc = -1;
			break;
		}
		off += r;
	}
	if (r == -1 || fchmod(out, mode & 0777) == -1)
		rc = -1;
	close(out);
	return rc;
}

/*
 * Run git diff --no-index in dir on a and b (either may be /dev/null) with
 * no user or system configuration, so no external diff driver runs.
 * Output is capped at SG_DIFF_TEXT_MAX.
 */
static int
text_run_git(const char *dir, const char *a, const char *b, char **out,
    size_t *outlen, char **cause)
{
	char	*buf = NULL;
	size_t	 len = 0;
	ssize_t	 r;
	pid_t	 pid;
	int	 p[2], st;

	if (pipe2(p, O_CLOEXEC) == -1)
		return ws_cause(cause, "pipe: %s", strerror(errno));
	if ((pid = fork()) == -1) {
		close(p[0]);
		close(p[1]);
		return ws_cause(cause, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		if (dup2(p[1], STDOUT_FILENO) == -1 || chdir(dir) == -1)
			_exit(127);
		setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
		setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
		execlp("git", "git", "-c", "core.quotePath=false", "diff",
		    "--no-index", "--no-color", "--no-ext-diff", "--no-textconv",
		    "--", a, b, (char *)NULL);
		_exit(127);
	}
	close(p[1]);
	if ((buf = malloc(SG_DIFF_TEXT_MAX + 1)) != NULL) {
		while (len < SG_DIFF_TEXT_MAX && ((r = read(p[0], buf + len,
		    SG_DIFF_TEXT_MAX - len)) > 0 || (r == -1 && errno == EINTR)))
			len += r > 0 ? (size_t)r : 0;
		buf[len] = '\0';
	}
	close(p[0]);
	while (waitpid(pid, &st, 0) == -1 && errno == EINTR)
		;
	if (buf == NULL)
		return ws_cause(cause, "out of memory");
	if (len < SG_DIFF_TEXT_MAX && (!WIFEXITED(st) ||
	    WEXITSTATUS(st) > 1)) {
		free(buf);
		return ws_cause(cause, "git diff failed (is git installed?)");
	}
	*out = buf;
	*outlen = len;
	return 0;
}

/* "a/PATH" as git prints it: C-quoted if it holds control characters. */
static void
text_label(FILE *f, const char *prefix, const char *path)
{
	const unsigned char	*s;

	if (strpbrk(path, "\"\\") == NULL) {
		for (s = (const unsigned char *)path; *s >= 0x20 && *s != 0x7f;
		    s++)
			;
		if (*s == '\0') {
			fprintf(f, "%s%s", prefix, path);
			return;
		}
	}
	fprintf(f, "\"%s", prefix);
	for (s = (const unsigned char *)path; *s != '\0'; s++) {
		if (*s == '\n')
			fputs("\\n", f);
		else if (*s == '\t')
			fputs("\\t", f);
		else if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if (*s < 0x20 || *s == 0x7f)
			fprintf(f, "\\%03o", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* Replace git's header labels (temp names) with the relative path. */
static int
text_rewrite(const char *in, size_t len, const struct workspace_delta *d,
    char **out)
{
	const char	*p = in, *e, *end = in + len;
	size_t		 olen;
	FILE		*f;
	int		 body = 0;

	if ((f = open_memstream(out, &olen)) == NULL)
		return -1;
	for (; p < end; p = e) {
		e = memchr(p, '\n', (size_t)(end - p));
		e = e != NULL ? e + 1 : end;
		if (!body && strncmp(p, "@@", 2) == 0)
			body = 1;
		if (!body && strncmp(p, "diff --git ", 11) == 0) {
			fputs("diff --git ", f);
			text_label(f, "a/", d->path);
			fputc(' ', f);
			text_label(f, "b/", d->path);
			fputc('\n', f);
		} else if (!body && (strncmp(p, "--- ", 4) == 0 ||
		    strncmp(p, "+++ ", 4) == 0)) {
			fwrite(p, 1, 4, f);
			if (strncmp(p + 4, "/dev/null", 9) == 0)
				fputs("/dev/null", f);
			else
				text_label(f, p[0] == '-' ? "a/" : "b/",
				    d->path);
			fputc('\n', f);
		} else
			fwrite(p, 1, (size_t)(e - p), f);
	}
	return fclose(f) == 0 ? 0 : -1;
}

int
workspace_delta_text(const char *sbxdir, const struct workspace_delta *d,
    char **text, char **cause)
{
	char	 tmp[] = "/tmp/sandgate-diff-" UTIL_MKTEMP_SUFFIX;
	char	 a[64], b[64], dir[4096];
	char	*raw = NULL;
	size_t	 rawlen = 0;
	int	 rc = -1, root, fd;

	*text = NULL;
	if (d->binary || d->special)
		return (*text = strdup("")) == NULL ? -1 : 0;
	if (mkdtemp(tmp) == NULL)
		return ws_cause(cause, "mkdtemp: %s", strerror(errno));
	snprintf(a, sizeof(a), "%s/a", tmp);
	snprintf(b, sizeof(b), "%s/b", tmp);
	/* copies opened without following links, so git sees only them */
	if (d->change != WORKSPACE_ADDED) {
		snprintf(dir, sizeof(dir), "%s/snapshot", sbxdir);
		root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		fd = root == -1 ? -1 : ws_open_beneath(root, d->path, O_RDONLY);
		if (root != -1)
			close(root);
		if (fd == -1 || text_copy(fd, a, NULL, d->mode_before) == -1) {
			if (fd != -1)
				close(fd);
			ws_cause(cause, "cannot read snapshot of '%s'", d->path);
			goto out;
		}
		close(fd);
	}
	if (d->change != WORKSPACE_DELETED) {
		snprintf(dir, sizeof(dir), "%s/work", sbxdir);
		root = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		fd = root == -1 ? -1 : ws_open_beneath(root, d->path,
		    O_RDONLY | O_NONBLOCK);
		if (root != -1)
			close(root);
		if (fd == -1 || text_copy(fd, b, NULL, d->mode_after) == -1) {
			if (fd != -1)
				close(fd);
			ws_cause(cause, "cannot read work file '%s'", d->path);
			goto out;
		}
		close(fd);
	}
	if (text_run_git(tmp, d->change == WORKSPACE_ADDED ? "/dev/null" : "a",
	    d->change == WORKSPACE_DELETED ? "/dev/null" : "b", &raw, &rawlen,
	    cause) == -1)
		goto out;
	if (text_rewrite(raw, rawlen, d, text) == -1) {
		ws_cause(cause, "out of memory");
		goto out;
	}
	rc = 0;
out:
	free(raw);
	unlink(a);
	unlink(b);
	rmdir(tmp);
	return rc;
}

/* One delta as a JSON object (text diff included). */
static json_t *
diff_json_delta(const char *sbxdir, const struct workspace_delta *d,
    char **cause)
{
	const char	*why = NULL;
	char		*text = NULL, mb[8], ma[8];
	json_t		*o;

	if (workspace_delta_text(sbxdir, d, &text, cause) == -1)
		return NULL;
	risky_path(d->path, &why);
	snprintf(mb, sizeof(mb), "%04o", (unsigned)d->mode_before);
	snprintf(ma, sizeof(ma), "%04o", (unsigned)d->mode_after);
	o = json_pack("{s:s, s:b, s:s?, s:b, s:b, s:s?, s:s?, s:s?, s:s?, "
	    "s:s?, s:s}", "path", d->path, "risky", d->risky, "risky_reason",
	    d->risky ? why : NULL, "binary", d->binary, "special", d->special,
	    "type", d->special ? d->special_what : NULL,
	    "sha256_before", d->sha256_before[0] ? d->sha256_before : NULL,
	    "sha256_after", d->sha256_after[0] ? d->sha256_after : NULL,
	    "mode_before", d->change != WORKSPACE_ADDED ? mb : NULL,
	    "mode_after", d->change != WORKSPACE_DELETED && !d->special ?
	    ma : NULL, "diff", text);
	free(text);
	if (o == NULL)
		ws_cause(cause, "cannot encode the diff of '%s'", d->path);
	return o;
}

static int
diff_write_json(const char *sbxdir, const struct workspace_diff *df,
    FILE *out, char **cause)
{
	static const char *const keys[] = { "added", "modified", "deleted" };
	json_t	*root, *o;
	size_t	 i;
	int	 rc = -1;

	root = json_pack("{s:[], s:[], s:[]}", "added", "modified",
	    "deleted");
	if (root == NULL)
		return ws_cause(cause, "out of memory");
	for (i = 0; i < df->n; i++) {
		if ((o = diff_json_delta(sbxdir, &df->v[i], cause)) == NULL)
			goto out;
		json_array_append_new(json_object_get(root,
		    keys[df->v[i].change]), o);
	}
	if (json_dumpf(root, out, JSON_INDENT(2)) == -1) {
		ws_cause(cause, "cannot write the diff");
		goto out;
	}
	fputc('\n', out);
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int
workspace_diff_write(const char *sbxdir, const struct workspace_diff *df,
    int json, FILE *out, char **cause)
{
	const struct workspace_delta	*d;
	char				*text;
	size_t				 i;

	if (json)
		return diff_write_json(sbxdir, df, out, cause);
	for (i = 0; i < df->n; i++) {
		d = &df->v[i];
		if (d->special) {
			fputs("Special file ", out);
			text_label(out, "", d->path);
			fprintf(out, " in the working copy: %s (never "
			    "applied)\n", d->special_what);
			continue;
		}
		if (d->binary) {
			fputs("Binary file ", out);
			text_label(out, "", d->path);
			fprintf(out, " %s: sha256 %s -> %s\n",
			    d->change == WORKSPACE_ADDED ? "added" :
			    d->change == WORKSPACE_DELETED ? "deleted" :
			    "changed", d->sha256_before[0] ? d->sha256_before :
			    "none", d->sha256_after[0] ? d->sha256_after :
			    "none");
			continue;
		}
		if (workspace_delta_text(sbxdir, d, &text, cause) == -1)
			return -1;
		fputs(text, out);
		free(text);
	}
	return ferror(out) ? ws_cause(cause, "cannot write the diff") : 0;
}
