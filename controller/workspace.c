/*
 * workspace.c: the manifest (build, load, save, look up), path and name
 * rules and the helpers the other workspace_*.c files share; see
 * workspace.h.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "quote.h"
#include "state.h"
#include "util.h"
#include "workspace.h"
#include "workspace_int.h"

static int	 ws_entry_cmp(const void *, const void *);
static int	 ws_load_files(struct workspace_manifest *, json_t *,
		    char **);
static int	 ws_load_entry(struct workspace_manifest *, json_t *,
		    char **);
static json_t	*ws_dump(const struct workspace_manifest *);
static int	 ws_remove_tree(int dirfd, char **cause);
static int	 ws_remove_files(int, char[256]);
static int	 ws_delta_cmp(const void *, const void *);
static void	 ws_sha_zeros(EVP_MD_CTX *, off_t);
static int	 ws_copy_range(int, int, EVP_MD_CTX *, off_t, off_t,
		    unsigned char *, size_t, off_t *);

static const char *const ws_default_names[] = {
	".git", ".venv", "node_modules", "__pycache__",
};

long long
ws_ns(const struct timespec *ts)
{
	return (long long)ts->tv_sec * 1000000000LL + ts->tv_nsec;
}

int
ws_default_excluded(const char *base)
{
	size_t	i;

	for (i = 0; i < sizeof(ws_default_names) / sizeof(ws_default_names[0]);
	    i++) {
		if (strcmp(base, ws_default_names[i]) == 0)
			return 1;
	}
	return 0;
}

int
ws_pattern_excluded(char *const *pats, size_t npats, const char *relpath,
    const char *base)
{
	size_t	i;

	for (i = 0; i < npats; i++) {
		if (fnmatch(pats[i], relpath, 0) == 0 ||
		    fnmatch(pats[i], base, 0) == 0)
			return 1;
	}
	return 0;
}

/* Strict UTF-8 (quote_utf8_len): no overlongs, no surrogates, no NUL. */
int
ws_utf8_valid(const char *str)
{
	const unsigned char	*s = (const unsigned char *)str;
	size_t			 n = strlen(str), i = 0, l;
	uint32_t		 cp;

	while (i < n) {
		if ((l = quote_utf8_len(s + i, n - i, &cp)) == 0)
			return 0;
		i += l;
	}
	return 1;
}

int
workspace_path_valid(const char *p, const char **why)
{
	const char	*c, *e;
	size_t		 len;

	if (*p == '\0')
		return (*why = "empty path", -1);
	if (*p == '/')
		return (*why = "absolute path", -1);
	if (!ws_utf8_valid(p))
		return (*why = "path is not valid UTF-8", -1);
	for (c = p; ; c = e + 1) {
		e = strchr(c, '/');
		len = e != NULL ? (size_t)(e - c) : strlen(c);
		if (len == 0)
			return (*why = "empty path component", -1);
		if (len == 1 && c[0] == '.')
			return (*why = "'.' component", -1);
		if (len == 2 && c[0] == '.' && c[1] == '.')
			return (*why = "'..' component", -1);
		if (len > 255)
			return (*why = "path component too long", -1);
		if (e == NULL)
			break;
	}
	return 0;
}

int
workspace_is_secret_name(const char *relpath)
{
	static const char *const pats[] = {
		".env", ".env.*", "*.pem", "*.key", "id_rsa*", "id_ed25519*",
		"id_ecdsa*", "id_dsa*", ".netrc", ".pypirc", ".pgpass",
	};
	const char	*base, *c;
	size_t		 i;

	base = strrchr(relpath, '/');
	base = base != NULL ? base + 1 : relpath;
	for (i = 0; i < sizeof(pats) / sizeof(pats[0]); i++) {
		if (fnmatch(pats[i], base, 0) == 0)
			return 1;
	}
	/* anything inside a .aws folder, at any depth */
	for (c = relpath; (c = strstr(c, ".aws/")) != NULL; c++) {
		if (c == relpath || c[-1] == '/')
			return 1;
	}
	return 0;
}

int
ws_is_binary(const unsigned char *b, size_t n)
{
	return memchr(b, '\0', n < 8000 ? n : 8000) != NULL;
}

EVP_MD_CTX *
ws_sha_new(void)
{
	EVP_MD_CTX	*ctx;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return NULL;
	if (EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1) {
		EVP_MD_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* Finish and free the context. */
void
ws_sha_hex(EVP_MD_CTX *ctx, char out[WORKSPACE_SHA256_HEX])
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen = 0;

	EVP_DigestFinal_ex(ctx, md, &mdlen);
	EVP_MD_CTX_free(ctx);
	util_hex(md, 32, out);
}

int
ws_sha_fd(int fd, char out[WORKSPACE_SHA256_HEX], off_t max,
    unsigned char *buf, size_t bufsz)
{
	EVP_MD_CTX	*ctx;

	if ((ctx = ws_sha_new()) == NULL)
		return (errno = ENOMEM, -1);
	if (ws_sparse_copy(fd, -1, ctx, max, NULL, buf, bufsz, NULL) == -1) {
		EVP_MD_CTX_free(ctx);
		return -1;
	}
	ws_sha_hex(ctx, out);
	return 0;
}

/* Feed len zero bytes (a hole) to the hash. */
static void
ws_sha_zeros(EVP_MD_CTX *h, off_t len)
{
	static const unsigned char	zero[64 * 1024];
	size_t				n;

	while (len > 0) {
		n = len < (off_t)sizeof(zero) ? (size_t)len : sizeof(zero);
		EVP_DigestUpdate(h, zero, n);
		len -= (off_t)n;
	}
}

/* Copy (and hash) in[from, to) to out at the same offsets. */
static int
ws_copy_range(int in, int out, EVP_MD_CTX *h, off_t from, off_t to,
    unsigned char *buf, size_t bufsz, off_t *end)
{
	ssize_t	r;
	size_t	want;

	while (from < to) {
		want = to - from < (off_t)bufsz ? (size_t)(to - from) : bufsz;
		r = pread(in, buf, want, from);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1)
			return -1;
		if (r == 0)
			break;		/* shorter than it was: stop there */
		if (h != NULL)
			EVP_DigestUpdate(h, buf, (size_t)r);
		if (out != -1 && pwrite(out, buf, (size_t)r, from) != r)
			return (errno = errno ? errno : EIO, -1);
		from += r;
	}
	*end = from;
	return 0;
}

int
ws_sparse_copy(int in, int out, EVP_MD_CTX *h, off_t max, off_t *left,
    unsigned char *buf, size_t bufsz, off_t *size)
{
	struct stat	st;
	off_t		off = 0, data, hole, end;

	if (fstat(in, &st) == -1)
		return -1;
	if (st.st_size > max)
		return (errno = EFBIG, -1);
	while (off < st.st_size) {
		data = lseek(in, off, SEEK_DATA);
		if (data == -1 && errno == ENXIO)
			data = st.st_size;		/* a hole to the end */
		else if (data == -1)
			data = off;	/* no SEEK_DATA here: all data */
		if (data > st.st_size)
			data = st.st_size;
		hole = data < st.st_size ? lseek(in, data, SEEK_HOLE) : -1;
		if (hole == -1 || hole > st.st_size)
			hole = st.st_size;
		if (h != NULL)
			ws_sha_zeros(h, data - off);
		if (left != NULL && hole - data > *left)
			return (errno = EDQUOT, -1);
		if (left != NULL)
			*left -= hole - data;
		if (ws_copy_range(in, out, h, data, hole, buf, bufsz,
		    &end) == -1)
			return -1;
		off = end;
		if (end < hole)
			break;		/* truncated while read */
	}
	if (out != -1 && ftruncate(out, off) == -1)
		return -1;
	if (size != NULL)
		*size = off;
	return 0;
}

int
ws_open_parent(int rootfd, const char *relpath, const char **base)
{
	char		 comp[256];
	const char	*c, *e;
	int		 fd, nfd;

	if ((fd = dup(rootfd)) == -1)
		return -1;
	for (c = relpath; (e = strchr(c, '/')) != NULL; c = e + 1) {
		if ((size_t)(e - c) >= sizeof(comp)) {
			close(fd);
			return (errno = ENAMETOOLONG, -1);
		}
		memcpy(comp, c, (size_t)(e - c));
		comp[e - c] = '\0';
		nfd = openat(fd, comp,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(fd);
		if (nfd == -1)
			return -1;
		fd = nfd;
	}
	*base = c;
	return fd;
}

int
ws_open_beneath(int rootfd, const char *relpath, int flags)
{
	const char	*base;
	int		 dfd, fd, saved;

	if ((dfd = ws_open_parent(rootfd, relpath, &base)) == -1)
		return -1;
	fd = openat(dfd, base, flags | O_NOFOLLOW | O_CLOEXEC);
	saved = errno;
	close(dfd);
	errno = saved;
	return fd;
}

struct workspace_manifest *
ws_manifest_new(const struct workspace_opts *o)
{
	struct workspace_manifest	*m;
	size_t				 i;

	if ((m = calloc(1, sizeof(*m))) == NULL)
		return NULL;
	if (o == NULL)
		return m;
	m->exclude_secrets = o->exclude_secrets;
	if (o->nexcludes == 0)
		return m;
	if ((m->excludes = calloc(o->nexcludes, sizeof(char *))) == NULL)
		goto fail;
	for (i = 0; i < o->nexcludes; i++) {
		if ((m->excludes[i] = strdup(o->excludes[i])) == NULL)
			goto fail;
		m->nexcludes++;
	}
	return m;
fail:
	workspace_manifest_free(m);
	return NULL;
}

struct ws_entry *
ws_manifest_add(struct workspace_manifest *m, const char *path)
{
	struct ws_entry	*nv, *e;
	size_t		 ncap;

	if (m->n == m->cap) {
		ncap = m->cap ? m->cap * 2 : 256;
		if ((nv = reallocarray(m->v, ncap, sizeof(*nv))) == NULL)
			return NULL;
		m->v = nv;
		m->cap = ncap;
	}
	e = &m->v[m->n];
	memset(e, 0, sizeof(*e));
	if ((e->path = strdup(path)) == NULL)
		return NULL;
	e->f.path = e->path;
	m->n++;
	return e;
}

static int
ws_entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct ws_entry *)a)->path,
	    ((const struct ws_entry *)b)->path);
}

void
ws_manifest_sort(struct workspace_manifest *m)
{
	size_t	i;

	if (m->n > 0)
		qsort(m->v, m->n, sizeof(*m->v), ws_entry_cmp);
	for (i = 0; i < m->n; i++)
		m->v[i].f.path = m->v[i].path;
}

struct ws_entry *
ws_manifest_lookup(const struct workspace_manifest *m, const char *path)
{
	struct ws_entry	key;

	if (m->n == 0)
		return NULL;
	key.path = (char *)(uintptr_t)path;
	return bsearch(&key, m->v, m->n, sizeof(*m->v), ws_entry_cmp);
}

int
ws_manifest_remove(struct workspace_manifest *m, const char *path)
{
	struct ws_entry	*e;
	size_t		 i;

	if ((e = ws_manifest_lookup(m, path)) == NULL)
		return -1;
	i = (size_t)(e - m->v);
	free(e->path);
	memmove(e, e + 1, (m->n - i - 1) * sizeof(*e));
	m->n--;
	for (; i < m->n; i++)
		m->v[i].f.path = m->v[i].path;
	return 0;
}

void
workspace_manifest_free(struct workspace_manifest *m)
{
	size_t	i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n; i++)
		free(m->v[i].path);
	free(m->v);
	for (i = 0; i < m->nexcludes; i++)
		free(m->excludes[i]);
	free(m->excludes);
	free(m);
}

size_t
workspace_manifest_count(const struct workspace_manifest *m)
{
	return m->n;
}

const struct workspace_file *
workspace_manifest_at(const struct workspace_manifest *m, size_t i)
{
	return i < m->n ? &m->v[i].f : NULL;
}

const struct workspace_file *
workspace_manifest_find(const struct workspace_manifest *m,
    const char *relpath)
{
	struct ws_entry	*e = ws_manifest_lookup(m, relpath);

	return e != NULL ? &e->f : NULL;
}

int
workspace_manifest_excluded(const struct workspace_manifest *m,
    const char *relpath, int isdir)
{
	const char	*c, *e;
	char		*pre;
	size_t		 len;
	int		 out = 0;

	/* a path is out if it or any folder above it is out */
	(void)isdir;
	if ((pre = strdup(relpath)) == NULL)
		return 1;	/* out of memory: leave it out */
	for (c = relpath; ; c = e + 1) {
		e = strchr(c, '/');
		len = e != NULL ? (size_t)(e - relpath) : strlen(relpath);
		pre[len] = '\0';
		if (ws_default_excluded(pre + (c - relpath)) ||
		    ws_pattern_excluded(m->excludes, m->nexcludes, pre,
		    pre + (c - relpath))) {
			out = 1;
			break;
		}
		if (e == NULL)
			break;
		pre[len] = '/';
	}
	free(pre);
	return out;
}

/* One "files" element: path, sha256, mode (octal string), size, work. */
static int
ws_load_entry(struct workspace_manifest *m, json_t *o, char **cause)
{
	struct ws_entry	*e;
	json_t		*w;
	const char	*path, *sha, *mode, *why;
	json_int_t	 size;
	char		*end;
	long		 mv;

	if (json_unpack(o, "{s:s, s:s, s:s, s:I}", "path", &path, "sha256",
	    &sha, "mode", &mode, "size", &size) == -1 ||
	    strlen(sha) != 64 || size < 0)
		return util_cause(cause, "malformed manifest entry");
	if (workspace_path_valid(path, &why) == -1)
		return util_cause(cause, "manifest path '%s': %s", path, why);
	errno = 0;
	mv = strtol(mode, &end, 8);
	if (errno != 0 || *end != '\0' || mv < 0 || mv > 07777)
		return util_cause(cause, "manifest mode '%s' malformed", mode);
	if ((e = ws_manifest_add(m, path)) == NULL)
		return util_cause(cause, "out of memory");
	memcpy(e->f.sha256, sha, WORKSPACE_SHA256_HEX);
	e->f.mode = (mode_t)mv;
	e->f.size = (off_t)size;
	w = json_object_get(o, "work");
	if (json_is_array(w) && json_array_size(w) == 3) {
		e->wino = (ino_t)json_integer_value(json_array_get(w, 0));
		e->wmtime = json_integer_value(json_array_get(w, 1));
		e->wctime = json_integer_value(json_array_get(w, 2));
		e->stat_ok = 1;
	}
	return 0;
}

static int
ws_load_files(struct workspace_manifest *m, json_t *root, char **cause)
{
	json_t	*files, *ex, *v;
	size_t	 i;

	files = json_object_get(root, "files");
	ex = json_object_get(root, "excludes");
	if (!json_is_array(files) || (ex != NULL && !json_is_array(ex)))
		return util_cause(cause, "manifest has no files array");
	if (ex != NULL && json_array_size(ex) > 0) {
		m->excludes = calloc(json_array_size(ex), sizeof(char *));
		if (m->excludes == NULL)
			return util_cause(cause, "out of memory");
		json_array_foreach(ex, i, v) {
			if (!json_is_string(v))
				return util_cause(cause, "malformed exclude");
			m->excludes[i] = strdup(json_string_value(v));
			if (m->excludes[i] == NULL)
				return util_cause(cause, "out of memory");
			m->nexcludes++;
		}
	}
	m->exclude_secrets = json_is_true(json_object_get(root,
	    "exclude_secrets"));
	m->cutoff = json_integer_value(json_object_get(root, "cutoff_ns"));
	json_array_foreach(files, i, v) {
		if (ws_load_entry(m, v, cause) == -1)
			return -1;
	}
	ws_manifest_sort(m);
	return 0;
}

struct workspace_manifest *
workspace_manifest_load(const char *sbxdir, char **cause)
{
	struct workspace_manifest	*m = NULL;
	json_error_t			 jerr;
	json_t				*root;
	char				 path[4096];

	if ((size_t)snprintf(path, sizeof(path), "%s/manifest.json",
	    sbxdir) >= sizeof(path)) {
		util_cause(cause, "sandbox folder name too long");
		return NULL;
	}
	if ((root = state_json_load(path, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		util_cause(cause, "cannot read '%s': %s", path, jerr.text);
		return NULL;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL) {
		util_cause(cause, "out of memory");
		goto out;
	}
	if (ws_load_files(m, root, cause) == -1) {
		workspace_manifest_free(m);
		m = NULL;
	}
out:
	json_decref(root);
	return m;
}

/* The manifest as a JSON tree; NULL on failure (a name not UTF-8). */
static json_t *
ws_dump(const struct workspace_manifest *m)
{
	const struct ws_entry	*e;
	json_t			*root, *files, *ex, *o;
	char			 mode[8];
	size_t			 i;

	root = json_pack("{s:i, s:[], s:b, s:I, s:[]}", "version", 1,
	    "excludes", "exclude_secrets", m->exclude_secrets, "cutoff_ns",
	    (json_int_t)m->cutoff, "files");
	if (root == NULL)
		return NULL;
	ex = json_object_get(root, "excludes");
	files = json_object_get(root, "files");
	for (i = 0; i < m->nexcludes; i++) {
		if (json_array_append_new(ex, json_string(m->excludes[i])))
			goto fail;
	}
	for (i = 0; i < m->n; i++) {
		e = &m->v[i];
		snprintf(mode, sizeof(mode), "%04o", (unsigned)e->f.mode);
		o = json_pack("{s:s, s:s, s:s, s:I}", "path", e->path,
		    "sha256", e->f.sha256, "mode", mode, "size",
		    (json_int_t)e->f.size);
		if (o == NULL || (e->stat_ok && json_object_set_new(o, "work",
		    json_pack("[I, I, I]", (json_int_t)e->wino,
		    (json_int_t)e->wmtime, (json_int_t)e->wctime)) == -1) ||
		    json_array_append_new(files, o) == -1)
			goto fail;
	}
	return root;
fail:
	json_decref(root);
	return NULL;
}

int
workspace_manifest_save(const struct workspace_manifest *m,
    const char *sbxdir, char **cause)
{
	char	 path[4096], tmp[4096], *text = NULL;
	size_t	 len;
	json_t	*root;
	int	 fd = -1, rc = -1;

	if ((size_t)snprintf(path, sizeof(path), "%s/manifest.json",
	    sbxdir) >= sizeof(path) || (size_t)snprintf(tmp, sizeof(tmp),
	    "%s/.manifest.json.tmp", sbxdir) >= sizeof(tmp))
		return util_cause(cause, "sandbox folder name too long");
	if ((root = ws_dump(m)) == NULL)
		return util_cause(cause, "cannot encode the manifest");
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
	    0644);
	if (fd == -1) {
		util_cause(cause, "cannot create '%s': %s", tmp,
		    strerror(errno));
		goto out;
	}
	/* one buffer and one write: json_dumpfd writes token by token */
	if ((text = json_dumps(root, JSON_COMPACT)) == NULL) {
		util_cause(cause, "cannot encode the manifest");
		goto out;
	}
	len = strlen(text);
	text[len] = '\n';	/* replaces the NUL; len + 1 bytes written */
	if (write(fd, text, len + 1) != (ssize_t)(len + 1) || fsync(fd) == -1 ||
	    rename(tmp, path) == -1) {
		util_cause(cause, "cannot write '%s': %s", path,
		    strerror(errno));
		unlink(tmp);
		goto out;
	}
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	free(text);
	json_decref(root);
	return rc;
}

/* One folder on the way down in ws_remove_tree(): its name, its inode. */
struct ws_rm_level {
	char	name[256];
	dev_t	dev;
	ino_t	ino;
};

/*
 * Unlink every entry of the folder fd that is not a folder, making it
 * writable first; the name of a remaining subfolder goes to sub ("" if
 * none). 0 or -1 (errno).
 */
static int
ws_remove_files(int fd, char sub[256])
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	int		 dfd, rc = 0;

	sub[0] = '\0';
	fchmod(fd, 0700);
	if ((dfd = dup(fd)) == -1 || (d = fdopendir(dfd)) == NULL) {
		if (dfd != -1)
			close(dfd);
		return -1;
	}
	rewinddir(d);
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		if (fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    S_ISDIR(st.st_mode)) {
			if (sub[0] == '\0')
				util_strlcpy(sub, de->d_name, 256);
		} else if (unlinkat(fd, de->d_name, 0) == -1 &&
		    errno != ENOENT)
			rc = -1;
	}
	closedir(d);
	return rc;
}

/*
 * Empty the folder dirfd (closed here) at any depth with two descriptors
 * open: go down into the first subfolder left until one is empty, remove
 * it from its parent (reached by "..", checked to be the folder the walk
 * came from), and look again. Never follows a link.
 */
static int
ws_remove_tree(int dirfd, char **cause)
{
	struct ws_rm_level	*v = NULL, *nv;
	struct stat		 st;
	char			 sub[256];
	size_t			 n = 0, cap = 0;
	int			 cur = dirfd, up, rc = -1;

	for (;;) {
		if (ws_remove_files(cur, sub) == -1)
			goto fail;
		if (sub[0] != '\0') {
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				if ((nv = reallocarray(v, cap,
				    sizeof(*v))) == NULL)
					goto fail;
				v = nv;
			}
			if (fstat(cur, &st) == -1)
				goto fail;
			util_strlcpy(v[n].name, sub, sizeof(v[n].name));
			v[n].dev = st.st_dev;
			v[n].ino = st.st_ino;
			up = openat(cur, sub, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			    O_CLOEXEC);
			if (up == -1)
				goto fail;
			close(cur);
			cur = up;
			n++;
			continue;
		}
		if (n == 0)
			break;
		n--;
		up = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (up == -1 || fstat(up, &st) == -1 ||
		    st.st_dev != v[n].dev || st.st_ino != v[n].ino) {
			if (up != -1)
				close(up);
			errno = ESTALE;		/* moved while removed */
			goto fail;
		}
		close(cur);
		cur = up;
		if (unlinkat(cur, v[n].name, AT_REMOVEDIR) == -1)
			goto fail;
	}
	rc = 0;
	goto out;
fail:
	util_cause(cause, "cannot remove: %s", strerror(errno));
out:
	close(cur);
	free(v);
	return rc;
}

int
workspace_remove(const char *sbxdir, char **cause)
{
	static const char *const subs[] = { "snapshot", "work" };
	char	path[4096];
	size_t	i;
	int	fd, rc = 0;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", sbxdir, subs[i]);
		fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (fd == -1) {
			if (errno == ENOENT)
				continue;
			return util_cause(cause, "cannot open '%s': %s", path,
			    strerror(errno));
		}
		if (ws_remove_tree(fd, cause) == -1)
			rc = -1;
		if (i == 0 && rmdir(path) == -1 && rc == 0)
			rc = util_cause(cause, "cannot remove '%s': %s", path,
			    strerror(errno));
	}
	return rc;
}

char *
workspace_meta_source(const char *sbxdir, char **cause)
{
	json_error_t	 jerr;
	json_t		*root, *v;
	char		 path[4096], *src = NULL;

	snprintf(path, sizeof(path), "%s/meta.json", sbxdir);
	if ((root = state_json_load(path, 0, &jerr)) == NULL) {
		util_cause(cause, "cannot read '%s': %s", path, jerr.text);
		return NULL;
	}
	v = json_object_get(root, "source");
	if (!json_is_string(v) || json_string_value(v)[0] != '/')
		util_cause(cause, "'%s' has no absolute \"source\"", path);
	else if ((src = strdup(json_string_value(v))) == NULL)
		util_cause(cause, "out of memory");
	json_decref(root);
	return src;
}

int
workspace_meta_limits(const char *sbxdir, char **container,
    unsigned long long *disk, char **cause)
{
	json_error_t	 jerr;
	json_t		*root, *v;
	char		 path[4096];

	*container = NULL;
	*disk = 0;
	snprintf(path, sizeof(path), "%s/meta.json", sbxdir);
	if ((root = state_json_load(path, 0, &jerr)) == NULL)
		return util_cause(cause, "cannot read '%s': %s", path,
		    jerr.text);
	v = json_object_get(root, "container");
	if (json_is_string(v) && json_string_length(v) > 0 &&
	    (*container = strdup(json_string_value(v))) == NULL) {
		json_decref(root);
		return util_cause(cause, "out of memory");
	}
	v = json_object_get(root, "disk");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		*disk = (unsigned long long)json_integer_value(v);
	json_decref(root);
	return 0;
}

static int
ws_delta_cmp(const void *a, const void *b)
{
	return strcmp(((const struct workspace_delta *)a)->path,
	    ((const struct workspace_delta *)b)->path);
}

const struct workspace_delta *
workspace_diff_find(const struct workspace_diff *df, const char *path)
{
	struct workspace_delta	key;

	if (df->n == 0)
		return NULL;
	memset(&key, 0, sizeof(key));
	key.path = (char *)(uintptr_t)path;
	return bsearch(&key, df->v, df->n, sizeof(*df->v), ws_delta_cmp);
}

void
workspace_diff_sort(struct workspace_diff *df)
{
	if (df->n > 1)
		qsort(df->v, df->n, sizeof(*df->v), ws_delta_cmp);
}

int
workspace_tmpfile(const char *dir, char **cause)
{
	char	path[4096];
	int	fd;

	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd == -1 && (errno == EOPNOTSUPP || errno == EISDIR ||
	    errno == EINVAL)) {
		/* no O_TMPFILE here: a name, unlinked at once */
		snprintf(path, sizeof(path), "%s/.sandgate-tmp-%ld", dir,
		    (long)getpid());
		fd = open(path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd != -1)
			unlink(path);
	}
	if (fd == -1)
		return util_cause(cause, "cannot create a temporary file in "
		    "'%s': %s", dir, strerror(errno));
	return fd;
}
