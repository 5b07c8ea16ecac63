/*
 * workspace_review.c: the review digest of a diff, the saved reviews
 * (<sbxdir>/reviews/DIGEST.json) and the check apply makes against them.
 *
 * The digest is SHA-256 over this text, one line per delta in path
 * order, after the line "sandgate-review 1":
 *
 *   CHANGE KIND MODE_BEFORE SHA_BEFORE MODE_AFTER SHA_AFTER SIZE LEN:PATH
 *
 * CHANGE is A, M or D; KIND one of file, symlink, fifo, socket, device,
 * badname, oversize; modes are 4 octal digits, SHA-256 64 hex digits,
 * "-" where a side has none; SIZE the work side's size in bytes; PATH
 * the raw name, LEN its length in bytes, so no name can stand for
 * another. A saved review holds the same fields (the path in base64),
 * and its content must hash to its name when it is loaded.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "sglimits.h"
#include "workspace.h"
#include "workspace_priv.h"

#define REVIEW_DIR	"reviews"

struct workspace_review {
	struct workspace_diff	d;	/* the reviewed deltas */
};

/* A review file's name and age, for review_prune(). */
struct review_file {
	char		name[80];
	long long	mt;
};

static const char *const review_kinds[] = {
	[WORKSPACE_FILE] = "file",
	[WORKSPACE_SYMLINK] = "symlink",
	[WORKSPACE_FIFO] = "fifo",
	[WORKSPACE_SOCKET] = "socket",
	[WORKSPACE_DEVICE] = "device",
	[WORKSPACE_BADNAME] = "badname",
	[WORKSPACE_OVERSIZE] = "oversize",
};
#define REVIEW_NKINDS	(sizeof(review_kinds) / sizeof(review_kinds[0]))

static void	review_line(EVP_MD_CTX *, const struct workspace_delta *);
static json_t	*review_dump(const struct workspace_diff *);
static int	review_prune(int, const char *);
static void	review_drop_oldest(int, struct review_file *, size_t *,
		    const char *);
static int	review_parse(json_t *, struct workspace_diff *);
static int	review_parse_one(json_t *, struct workspace_delta *);
static int	review_sha(const char *, char *);
static int	review_mode(const char *, mode_t *);
static int	review_valid_digest(const char *);

/* One delta's line of the digest text. */
static void
review_line(EVP_MD_CTX *h, const struct workspace_delta *d)
{
	char	mb[8] = "-", ma[8] = "-", line[512];
	int	n;

	if (d->change != WORKSPACE_ADDED)
		snprintf(mb, sizeof(mb), "%04o", (unsigned)d->mode_before &
		    07777);
	if (d->change != WORKSPACE_DELETED &&
	    (d->kind == WORKSPACE_FILE || d->kind == WORKSPACE_OVERSIZE))
		snprintf(ma, sizeof(ma), "%04o", (unsigned)d->mode_after &
		    07777);
	n = snprintf(line, sizeof(line), "%c %s %s %s %s %s %lld %zu:",
	    "AMD"[d->change], review_kinds[d->kind], mb,
	    d->sha256_before[0] ? d->sha256_before : "-", ma,
	    d->sha256_after[0] ? d->sha256_after : "-",
	    (long long)d->size_after, strlen(d->path));
	EVP_DigestUpdate(h, line, (size_t)n);
	EVP_DigestUpdate(h, d->path, strlen(d->path));
	EVP_DigestUpdate(h, "\n", 1);
}

void
workspace_review_digest(const struct workspace_diff *df,
    char out[WORKSPACE_SHA256_HEX])
{
	static const char	 head[] = "sandgate-review 1\n";
	EVP_MD_CTX		*h;
	size_t			 i;

	out[0] = '\0';
	if ((h = ws_sha_new()) == NULL)
		return;
	EVP_DigestUpdate(h, head, sizeof(head) - 1);
	for (i = 0; i < df->n; i++)
		review_line(h, &df->v[i]);
	ws_sha_hex(h, out);
}

/* The saved form: the digest's fields, the path in base64. */
static json_t *
review_dump(const struct workspace_diff *df)
{
	const struct workspace_delta	*d;
	json_t				*root, *arr, *o;
	char				*b64, mb[8], ma[8];
	size_t				 i, len;

	root = json_pack("{s:i, s:s, s:[]}", "version", 1, "review",
	    df->review, "deltas");
	if (root == NULL)
		return NULL;
	arr = json_object_get(root, "deltas");
	for (i = 0; i < df->n; i++) {
		d = &df->v[i];
		len = strlen(d->path);
		if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
			goto fail;
		EVP_EncodeBlock((unsigned char *)b64,
		    (const unsigned char *)d->path, (int)len);
		snprintf(mb, sizeof(mb), "%04o", (unsigned)d->mode_before);
		snprintf(ma, sizeof(ma), "%04o", (unsigned)d->mode_after);
		o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I}",
		    "change", (const char[]){ "AMD"[d->change], '\0' },
		    "kind", review_kinds[d->kind], "path_base64", b64,
		    "mode_before", mb, "sha256_before", d->sha256_before,
		    "mode_after", ma, "sha256_after", d->sha256_after,
		    "size_after", (json_int_t)d->size_after);
		free(b64);
		if (o == NULL || json_array_append_new(arr, o) == -1)
			goto fail;
	}
	return root;
fail:
	json_decref(root);
	return NULL;
}

/* Remove the oldest of v[0..*n) (never keep) and drop it from v. */
static void
review_drop_oldest(int dfd, struct review_file *v, size_t *n,
    const char *keep)
{
	size_t	i, old = 0;

	for (i = 1; i < *n; i++)
		if (v[i].mt < v[old].mt)
			old = i;
	if (strncmp(v[old].name, keep, 64) != 0)
		unlinkat(dfd, v[old].name, 0);
	v[old] = v[--*n];
}

/* Keep the newest SG_REVIEWS_KEPT reviews in the folder dfd. */
static int
review_prune(int dfd, const char *keep)
{
	struct review_file	 v[SG_REVIEWS_KEPT + 8];
	struct dirent		*de;
	struct stat		 st;
	size_t			 n = 0;
	DIR			*d;
	int			 fd;

	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 69 ||
		    strcmp(de->d_name + 64, ".json") != 0 ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (n == sizeof(v) / sizeof(v[0]))
			review_drop_oldest(dfd, v, &n, keep);
		memcpy(v[n].name, de->d_name, 70);	/* 69 bytes and NUL */
		v[n++].mt = ws_ns(&st.st_mtim);
	}
	closedir(d);
	while (n > SG_REVIEWS_KEPT)
		review_drop_oldest(dfd, v, &n, keep);
	return 0;
}

int
workspace_review_save(const char *sbxdir, const struct workspace_diff *df,
    char **cause)
{
	char	 path[4096], tmp[128], name[80], *text = NULL;
	json_t	*root;
	size_t	 len;
	int	 dfd = -1, fd = -1, rc = -1;

	snprintf(path, sizeof(path), "%s/" REVIEW_DIR, sbxdir);
	if ((mkdir(path, 0700) == -1 && errno != EEXIST) ||
	    (dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return ws_cause(cause, "cannot create '%s': %s", path,
		    strerror(errno));
	if ((root = review_dump(df)) == NULL ||
	    (text = json_dumps(root, JSON_COMPACT)) == NULL) {
		ws_cause(cause, "cannot encode the review");
		goto out;
	}
	snprintf(name, sizeof(name), "%s.json", df->review);
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	len = strlen(text);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1 || write(fd, text, len) != (ssize_t)len ||
	    fsync(fd) == -1 || renameat(dfd, tmp, dfd, name) == -1) {
		ws_cause(cause, "cannot save the review in '%s': %s", path,
		    strerror(errno));
		unlinkat(dfd, tmp, 0);
		goto out;
	}
	review_prune(dfd, df->review);
	rc = 0;
out:
	if (fd != -1)
		close(fd);
	close(dfd);
	free(text);
	json_decref(root);
	return rc;
}

static int
review_valid_digest(const char *s)
{
	size_t	i;

	for (i = 0; i < 64; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' &&
		    s[i] <= 'f')))
			return 0;
	return s[64] == '\0';
}

/* "" or 64 lowercase hex digits into out. */
static int
review_sha(const char *s, char *out)
{
	if (*s != '\0' && !review_valid_digest(s))
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int
review_mode(const char *s, mode_t *m)
{
	char	*end;
	long	 v;

	errno = 0;
	v = strtol(s, &end, 8);
	if (errno != 0 || *end != '\0' || end == s || v < 0 || v > 07777)
		return -1;
	*m = (mode_t)v;
	return 0;
}

static int
review_parse_one(json_t *o, struct workspace_delta *d)
{
	const char	*ch, *kind, *b64, *mb, *sb, *ma, *sa;
	json_int_t	 size;
	size_t		 len, k;
	int		 n;

	if (json_unpack(o, "{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I}",
	    "change", &ch, "kind", &kind, "path_base64", &b64,
	    "mode_before", &mb, "sha256_before", &sb, "mode_after", &ma,
	    "sha256_after", &sa, "size_after", &size) == -1 ||
	    strlen(ch) != 1 || strchr("AMD", ch[0]) == NULL)
		return -1;
	d->change = (enum workspace_change)(strchr("AMD", ch[0]) - "AMD");
	for (k = 0; k < REVIEW_NKINDS && strcmp(kind, review_kinds[k]); k++)
		;
	if (k == REVIEW_NKINDS)
		return -1;
	d->kind = (enum workspace_kind)k;
	d->special = d->kind != WORKSPACE_FILE;
	len = strlen(b64);
	if (len == 0 || len % 4 != 0 || (d->path = malloc(len)) == NULL)
		return -1;
	n = EVP_DecodeBlock((unsigned char *)d->path,
	    (const unsigned char *)b64, (int)len);
	if (n < 0)
		return -1;
	n -= (b64[len - 1] == '=') + (b64[len - 2] == '=');
	d->path[n] = '\0';
	if (strlen(d->path) != (size_t)n || review_mode(mb, &d->mode_before) ||
	    review_mode(ma, &d->mode_after) ||
	    review_sha(sb, d->sha256_before) ||
	    review_sha(sa, d->sha256_after) || size < 0)
		return -1;
	d->size_after = (off_t)size;
	return 0;
}

static int
review_parse(json_t *root, struct workspace_diff *df)
{
	json_t	*arr = json_object_get(root, "deltas");
	size_t	 i;

	if (!json_is_array(arr) ||
	    json_integer_value(json_object_get(root, "version")) != 1)
		return -1;
	df->v = calloc(json_array_size(arr) + 1, sizeof(*df->v));
	if (df->v == NULL)
		return -1;
	for (i = 0; i < json_array_size(arr); i++) {
		df->n++;
		if (review_parse_one(json_array_get(arr, i), &df->v[i]) == -1)
			return -1;
	}
	workspace_diff_sort(df);
	return 0;
}

struct workspace_review *
workspace_review_load(const char *sbxdir, const char *digest, char **cause)
{
	struct workspace_review	*r;
	json_error_t		 jerr;
	json_t			*root;
	char			 path[4096];

	if (!review_valid_digest(digest)) {
		ws_cause(cause, "'%.80s' is not a review digest (64 hex "
		    "digits from sandgate diff)", digest);
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/" REVIEW_DIR "/%s.json", sbxdir,
	    digest);
	if ((root = json_load_file(path, JSON_REJECT_DUPLICATES,
	    &jerr)) == NULL) {
		if (access(path, F_OK) == -1 && errno == ENOENT) {
			ws_cause(cause, "no review %s in this sandbox (it comes "
			    "from sandgate diff; only the newest %d are kept)",
			    digest, SG_REVIEWS_KEPT);
			errno = ENOENT;
		} else {
			ws_cause(cause, "cannot read '%s': %s", path,
			    jerr.text);
			errno = EIO;
		}
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		json_decref(root);
		ws_cause(cause, "out of memory");
		return NULL;
	}
	r->d.stagefd = -1;
	if (review_parse(root, &r->d) == 0)
		workspace_review_digest(&r->d, r->d.review);
	json_decref(root);
	if (strcmp(r->d.review, digest) != 0) {
		workspace_review_free(r);
		ws_cause(cause, "review '%s' is damaged (its content does not "
		    "hash to its name)", path);
		errno = EIO;
		return NULL;
	}
	return r;
}

void
workspace_review_free(struct workspace_review *r)
{
	size_t	i;

	if (r == NULL)
		return;
	for (i = 0; i < r->d.n; i++)
		free(r->d.v[i].path);
	free(r->d.v);
	free(r);
}

size_t
workspace_review_count(const struct workspace_review *r)
{
	return r->d.n;
}

const struct workspace_delta *
workspace_review_at(const struct workspace_review *r, size_t i)
{
	return i < r->d.n ? &r->d.v[i] : NULL;
}

const struct workspace_delta *
workspace_review_find(const struct workspace_review *r, const char *path)
{
	return workspace_diff_find(&r->d, path);
}

int
workspace_review_matches(const struct workspace_delta *rv,
    const struct workspace_delta *now, const struct workspace_file *e,
    const char **why)
{
	*why = "changed since the review";
	if (now == NULL) {
		/* unchanged now: right only if it was applied as reviewed */
		if (rv->change == WORKSPACE_DELETED)
			return e == NULL;
		return rv->kind == WORKSPACE_FILE && e != NULL &&
		    strcmp(e->sha256, rv->sha256_after) == 0 &&
		    (e->mode & 0777) == (rv->mode_after & 0777);
	}
	if (now->change != rv->change || now->kind != rv->kind ||
	    strcmp(now->sha256_before, rv->sha256_before) != 0)
		return 0;
	if (rv->change == WORKSPACE_DELETED)
		return 1;
	return strcmp(now->sha256_after, rv->sha256_after) == 0 &&
	    (now->mode_after & 07777) == (rv->mode_after & 07777) &&
	    now->size_after == rv->size_after;
}
