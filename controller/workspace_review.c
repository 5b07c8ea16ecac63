/*
 * workspace_review.c: the review digest of a diff, the saved reviews
 * (<sbxdir>/reviews/DIGEST.review) and the check apply makes against them.
 *
 * The digest is SHA-256 over this text, one line per delta in path
 * order, after the line "sandgate-review 2":
 *
 *   CHANGE KIND MODE_BEFORE SHA_BEFORE MODE_AFTER SHA_AFTER SIZE SHOWN LEN:PATH
 *
 * CHANGE is A, M or D; KIND one of file, symlink, fifo, socket, device,
 * badname, oversize; modes are 4 octal digits, SHA-256 64 hex digits,
 * "-" where a side has none; SIZE the work side's size in bytes; SHOWN
 * whether the diff showed the text: "t" shown, "L" too large to show,
 * "T" not shown as the diff's total was reached, "-" no text; PATH
 * the raw name, LEN its length in bytes, so no name can stand for
 * another. A saved review is the same text with each path in base64
 * instead of LEN:PATH, written and read one line at a time (memory in
 * proportion to the number of changes, not their size); its content must
 * hash to its name when it is loaded.
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

#include <openssl/evp.h>

#include "sglimits.h"
#include "util.h"
#include "workspace.h"
#include "workspace_int.h"

#define REVIEW_DIR	"reviews"
#define REVIEW_HEAD	"sandgate-review 2\n"
/* enum workspace_show as SHOWN */
#define REVIEW_SHOWS	"-tLT"

struct workspace_review {
	struct workspace_diff	d;	/* the reviewed deltas */
};

/* A review file's name, age and size, for review_prune(). */
struct review_file {
	char		name[80];
	long long	mt;
	off_t		size;
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

static int	review_fields(const struct workspace_delta *, char *, size_t);
static void	review_line(EVP_MD_CTX *, const struct workspace_delta *);
static int	review_write_line(FILE *, const struct workspace_delta *);
static int	review_prune(int, const char *);
static void	review_drop_oldest(int, struct review_file *, size_t *,
		    const char *, off_t *);
static int	review_read(FILE *, struct workspace_diff *);
static int	review_parse_line(char *, struct workspace_delta *);
static int	review_sha(const char *, char *);
static int	review_mode(const char *, mode_t *);
static int	review_valid_digest(const char *);

/* One delta's line of the digest text. */
static void
review_line(EVP_MD_CTX *h, const struct workspace_delta *d)
{
	char	line[512];
	int	n;

	n = review_fields(d, line, sizeof(line));
	n += snprintf(line + n, sizeof(line) - (size_t)n, " %zu:",
	    strlen(d->path));
	EVP_DigestUpdate(h, line, (size_t)n);
	EVP_DigestUpdate(h, d->path, strlen(d->path));
	EVP_DigestUpdate(h, "\n", 1);
}

void
workspace_review_digest(const struct workspace_diff *df,
    char out[WORKSPACE_SHA256_HEX])
{
	EVP_MD_CTX	*h;
	size_t		 i;

	out[0] = '\0';
	if ((h = ws_sha_new()) == NULL)
		return;
	EVP_DigestUpdate(h, REVIEW_HEAD, sizeof(REVIEW_HEAD) - 1);
	for (i = 0; i < df->n; i++)
		review_line(h, &df->v[i]);
	ws_sha_hex(h, out);
}

/* The fields of a delta's line but the path: "A file - - 0644 SHA 12 t". */
static int
review_fields(const struct workspace_delta *d, char *buf, size_t size)
{
	char	mb[8] = "-", ma[8] = "-";

	if (d->change != WORKSPACE_ADDED)
		snprintf(mb, sizeof(mb), "%04o", (unsigned)d->mode_before &
		    07777);
	if (d->change != WORKSPACE_DELETED &&
	    (d->kind == WORKSPACE_FILE || d->kind == WORKSPACE_OVERSIZE))
		snprintf(ma, sizeof(ma), "%04o", (unsigned)d->mode_after &
		    07777);
	return snprintf(buf, size, "%c %s %s %s %s %s %lld %c",
	    "AMD"[d->change], review_kinds[d->kind], mb,
	    d->sha256_before[0] ? d->sha256_before : "-", ma,
	    d->sha256_after[0] ? d->sha256_after : "-",
	    (long long)d->size_after, REVIEW_SHOWS[d->show]);
}

/* One line of the saved review: the fields, the path in base64. */
static int
review_write_line(FILE *f, const struct workspace_delta *d)
{
	char	line[512], *b64;
	size_t	len = strlen(d->path);
	int	rc;

	review_fields(d, line, sizeof(line));
	if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return -1;
	EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)d->path,
	    (int)len);
	rc = fprintf(f, "%s %s\n", line, b64) < 0 ? -1 : 0;
	free(b64);
	return rc;
}

/*
 * Remove the oldest of v[0..*n) but keep (never removed, and then the
 * next oldest) and drop it from v and its size from *total.
 */
static void
review_drop_oldest(int dfd, struct review_file *v, size_t *n,
    const char *keep, off_t *total)
{
	size_t	i, old = *n;

	for (i = 0; i < *n; i++)
		if (strncmp(v[i].name, keep, 64) != 0 &&
		    (old == *n || v[i].mt < v[old].mt))
			old = i;
	if (old == *n)
		return;
	unlinkat(dfd, v[old].name, 0);
	*total -= v[old].size;
	v[old] = v[--*n];
}

/*
 * Keep the newest SG_REVIEWS_KEPT reviews in the folder dfd, and at most
 * SG_REVIEWS_BYTES_MAX of them but keep.
 */
static int
review_prune(int dfd, const char *keep)
{
	struct review_file	 v[SG_REVIEWS_KEPT + 8];
	struct dirent		*de;
	struct stat		 st;
	size_t			 n = 0;
	off_t			 total = 0;
	DIR			*d;
	int			 fd;

	if ((fd = dup(dfd)) == -1 || (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (strlen(de->d_name) != 71 ||
		    strcmp(de->d_name + 64, ".review") != 0 ||
		    fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		if (n == sizeof(v) / sizeof(v[0]))
			review_drop_oldest(dfd, v, &n, keep, &total);
		memcpy(v[n].name, de->d_name, 72);	/* 71 bytes and NUL */
		v[n].size = st.st_size;
		total += st.st_size;
		v[n++].mt = ws_ns(&st.st_mtim);
	}
	closedir(d);
	while (n > 1 && (n > SG_REVIEWS_KEPT ||
	    total > (off_t)SG_REVIEWS_BYTES_MAX))
		review_drop_oldest(dfd, v, &n, keep, &total);
	return 0;
}

int
workspace_review_save(const char *sbxdir, const struct workspace_diff *df,
    char **cause)
{
	char	 path[4096], tmp[128], name[80];
	size_t	 i;
	FILE	*f = NULL;
	int	 dfd = -1, fd, rc = -1;

	snprintf(path, sizeof(path), "%s/" REVIEW_DIR, sbxdir);
	if ((mkdir(path, 0700) == -1 && errno != EEXIST) ||
	    (dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return util_cause(cause, "cannot create '%s': %s", path,
		    strerror(errno));
	snprintf(name, sizeof(name), "%s.review", df->review);
	snprintf(tmp, sizeof(tmp), ".%s.%ld", name, (long)getpid());
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1 || (f = fdopen(fd, "w")) == NULL) {
		if (fd != -1)
			close(fd);
		goto fail;
	}
	fprintf(f, "%s", REVIEW_HEAD);
	for (i = 0; i < df->n; i++)
		if (review_write_line(f, &df->v[i]) == -1)
			goto fail;
	if (fflush(f) != 0 || ferror(f) || fsync(fileno(f)) == -1 ||
	    renameat(dfd, tmp, dfd, name) == -1)
		goto fail;
	review_prune(dfd, df->review);
	rc = 0;
	goto out;
fail:
	util_cause(cause, "cannot save the review in '%s': %s", path,
	    strerror(errno ? errno : EIO));
	unlinkat(dfd, tmp, 0);
out:
	if (f != NULL)
		fclose(f);
	close(dfd);
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

/* "-" (none) or 64 lowercase hex digits into out. */
static int
review_sha(const char *s, char *out)
{
	if (strcmp(s, "-") == 0) {
		out[0] = '\0';
		return 0;
	}
	if (!review_valid_digest(s))
		return -1;
	memcpy(out, s, strlen(s) + 1);
	return 0;
}

static int
review_mode(const char *s, mode_t *m)
{
	char	*end;
	long	 v;

	if (strcmp(s, "-") == 0) {
		*m = 0;
		return 0;
	}
	errno = 0;
	v = strtol(s, &end, 8);
	if (errno != 0 || *end != '\0' || end == s || v < 0 || v > 07777)
		return -1;
	*m = (mode_t)v;
	return 0;
}

/* One saved line (no newline) into d. 0 or -1. */
static int
review_parse_line(char *line, struct workspace_delta *d)
{
	char	*f[9], *p = line, *end;
	size_t	 n, len, k;
	long long size;
	int	 got;

	/* nine fields, one space between each, none empty */
	for (n = 0; n < 9; n++) {
		f[n] = p;
		p = strchr(p, ' ');
		if ((n < 8) != (p != NULL) || (p != NULL ? p : f[n] +
		    strlen(f[n])) == f[n])
			return -1;
		if (p != NULL)
			*p++ = '\0';
	}
	if (strlen(f[0]) != 1 || strchr("AMD", f[0][0]) == NULL)
		return -1;
	d->change = (enum workspace_change)(strchr("AMD", f[0][0]) - "AMD");
	for (k = 0; k < REVIEW_NKINDS && strcmp(f[1], review_kinds[k]); k++)
		;
	if (k == REVIEW_NKINDS)
		return -1;
	d->kind = (enum workspace_kind)k;
	d->special = d->kind != WORKSPACE_FILE;
	if (strlen(f[7]) != 1 || strchr(REVIEW_SHOWS, f[7][0]) == NULL)
		return -1;
	d->show = (enum workspace_show)(strchr(REVIEW_SHOWS, f[7][0]) -
	    REVIEW_SHOWS);
	errno = 0;
	size = strtoll(f[6], &end, 10);
	len = strlen(f[8]);
	if (errno != 0 || *end != '\0' || size < 0 || len == 0 ||
	    len % 4 != 0 || review_mode(f[2], &d->mode_before) == -1 ||
	    review_mode(f[4], &d->mode_after) == -1 ||
	    review_sha(f[3], d->sha256_before) == -1 ||
	    review_sha(f[5], d->sha256_after) == -1 ||
	    (d->path = malloc(len)) == NULL)
		return -1;
	d->size_after = (off_t)size;
	got = EVP_DecodeBlock((unsigned char *)d->path,
	    (const unsigned char *)f[8], (int)len);
	if (got < 0)
		return -1;
	got -= (f[8][len - 1] == '=') + (f[8][len - 2] == '=');
	d->path[got] = '\0';
	return strlen(d->path) == (size_t)got ? 0 : -1;
}

/* Every line after the head into df (sorted by path). 0 or -1. */
static int
review_read(FILE *in, struct workspace_diff *df)
{
	struct workspace_delta	*nv;
	char			*line = NULL;
	size_t			 cap = 0, vcap = 0;
	ssize_t			 n;
	int			 rc = -1;

	if ((n = getline(&line, &cap, in)) == -1 ||
	    strcmp(line, REVIEW_HEAD) != 0)
		goto out;
	while ((n = getline(&line, &cap, in)) > 0) {
		if (line[n - 1] != '\n')
			goto out;	/* cut short */
		line[n - 1] = '\0';
		if (df->n == vcap) {
			vcap = vcap ? vcap * 2 : 64;
			if ((nv = reallocarray(df->v, vcap, sizeof(*nv))) ==
			    NULL)
				goto out;
			df->v = nv;
		}
		memset(&df->v[df->n], 0, sizeof(*df->v));
		df->n++;
		if (review_parse_line(line, &df->v[df->n - 1]) == -1)
			goto out;
	}
	workspace_diff_sort(df);
	rc = ferror(in) ? -1 : 0;
out:
	free(line);
	return rc;
}

struct workspace_review *
workspace_review_load(const char *sbxdir, const char *digest, char **cause)
{
	struct workspace_review	*r;
	char			 path[4096];
	FILE			*in;
	int			 fd;

	if (!review_valid_digest(digest)) {
		util_cause(cause, "'%.80s' is not a review digest (64 hex "
		    "digits from sandgate diff)", digest);
		errno = EINVAL;
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/" REVIEW_DIR "/%s.review", sbxdir,
	    digest);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1 ||
	    (in = fdopen(fd, "r")) == NULL) {
		if (errno == ENOENT)
			util_cause(cause,
			    "no review %s in this sandbox (it comes "
			    "from sandgate diff; only the newest %d are kept)",
			    digest, SG_REVIEWS_KEPT);
		else
			util_cause(cause, "cannot read '%s': %s", path,
			    strerror(errno));
		if (fd != -1)
			close(fd);
		return NULL;
	}
	if ((r = calloc(1, sizeof(*r))) == NULL) {
		fclose(in);
		util_cause(cause, "out of memory");
		return NULL;
	}
	r->d.stagefd = -1;
	if (review_read(in, &r->d) == 0)
		workspace_review_digest(&r->d, r->d.review);
	fclose(in);
	if (strcmp(r->d.review, digest) != 0) {
		workspace_review_free(r);
		util_cause(cause,
		    "review '%s' is damaged (its content does not "
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
