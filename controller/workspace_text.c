/*
 * workspace_text.c: write a diff for a reviewer (git's patch format,
 * control characters escaped) or a program (JSON), one delta at a time,
 * with the text diff computed in process (textdiff.c).
 *
 * The work side of a text delta is the staged copy of the bytes that
 * workspace_diff() hashed, so the text shown is the content the review
 * digest covers; the snapshot side is read from snapshot/ and checked
 * against the manifest's SHA-256.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "quote.h"
#include "risky.h"
#include "sglimits.h"
#include "textdiff.h"
#include "util.h"
#include "workspace.h"
#include "workspace_int.h"

/* One delta's text being written to a stream. */
struct text_out {
	FILE	*f;
	int	 raw;
	size_t	*escaped;
};

/* The two sides of a text delta, in memory. */
struct text_sides {
	char	*a, *b;
	size_t	 alen, blen;
};

static int	text_label(FILE *, const char *, const char *);
static int	text_hunk_cb(void *, size_t, size_t, size_t, size_t);
static int	text_line_cb(void *, char, const char *, size_t, int);
static int	text_load_snap(const char *, const struct workspace_delta *,
		    char **, size_t *, char **);
static int	text_load_stage(const struct workspace_diff *,
		    const struct workspace_delta *, char **, size_t *, char **);
static int	text_load(const char *, const struct workspace_diff *,
		    const struct workspace_delta *, struct text_sides *,
		    char **);
static int	text_header(FILE *, const struct workspace_delta *);
static int	text_write(FILE *, const struct workspace_delta *,
		    const struct text_sides *, int, size_t *);
static int	text_summary(FILE *, const struct workspace_diff *,
		    const struct workspace_delta *);
static int	text_other(FILE *, const struct workspace_delta *);
static int	text_write_delta(const char *, const struct workspace_diff *,
		    const struct workspace_delta *, int, FILE *,
		    struct workspace_write_stats *, char **);
static json_t	*text_json_bytes(const char *, size_t, const char *,
		    json_t *);
static json_t	*text_json_delta(const char *, const struct workspace_diff *,
		    const struct workspace_delta *,
		    struct workspace_write_stats *, char **);
static int	text_write_json(const char *, const struct workspace_diff *,
		    FILE *, struct workspace_write_stats *, char **);
static const char *text_change_word(const struct workspace_delta *);
static void	text_count_unshown(const struct workspace_delta *,
		    struct workspace_write_stats *);

/* "a/PATH" as git prints it: quoted as a whole when the path needs it. */
static int
text_label(FILE *f, const char *prefix, const char *path)
{
	char	*s;
	int	 rc;

	if (asprintf(&s, "%s%s", prefix, path) == -1)
		return -1;
	rc = quote_path(f, s, strlen(s));
	free(s);
	return rc;
}

static int
text_hunk_cb(void *arg, size_t a, size_t alen, size_t b, size_t blen)
{
	struct text_out	*t = arg;

	if (fprintf(t->f, "@@ -%zu", a) < 0 ||
	    (alen != 1 && fprintf(t->f, ",%zu", alen) < 0) ||
	    fprintf(t->f, " +%zu", b) < 0 ||
	    (blen != 1 && fprintf(t->f, ",%zu", blen) < 0) ||
	    fputs(" @@\n", t->f) == EOF)
		return -1;
	return 0;
}

static int
text_line_cb(void *arg, char op, const char *text, size_t len, int noeol)
{
	struct text_out	*t = arg;

	if (fputc(op, t->f) == EOF)
		return -1;
	if (t->raw) {
		if (fwrite(text, 1, len, t->f) != len)
			return -1;
	} else if (quote_line(t->f, text, len, op == ' ', t->escaped) == -1)
		return -1;
	if (fputc('\n', t->f) == EOF ||
	    (noeol && fputs("\\ No newline at end of file\n", t->f) == EOF))
		return -1;
	return 0;
}

/*
 * The snapshot's copy of the path, whole, if it has at most
 * SG_DIFF_FILE_MAX bytes (*buf NULL otherwise), checked against the
 * manifest's SHA-256.
 */
static int
text_load_snap(const char *sbxdir, const struct workspace_delta *d,
    char **buf, size_t *len, char **cause)
{
	char		 path[4096], sha[WORKSPACE_SHA256_HEX];
	EVP_MD_CTX	*h;
	struct stat	 st;
	ssize_t		 r;
	int		 root, fd;

	*buf = NULL;
	*len = 0;
	snprintf(path, sizeof(path), "%s/snapshot", sbxdir);
	root = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fd = root == -1 ? -1 : ws_open_beneath(root, d->path, O_RDONLY);
	if (root != -1)
		close(root);
	if (fd == -1 || fstat(fd, &st) == -1) {
		if (fd != -1)
			close(fd);
		return util_cause(cause, "cannot read the snapshot of '%s': %s",
		    d->path, strerror(errno));
	}
	if (st.st_size > SG_DIFF_FILE_MAX) {
		close(fd);
		return 0;
	}
	if ((*buf = malloc((size_t)st.st_size + 1)) == NULL) {
		close(fd);
		return util_cause(cause, "out of memory");
	}
	while (*len < (size_t)st.st_size && ((r = read(fd, *buf + *len,
	    (size_t)st.st_size - *len)) > 0 || (r == -1 && errno == EINTR)))
		*len += r > 0 ? (size_t)r : 0;
	close(fd);
	if ((h = ws_sha_new()) == NULL)
		return util_cause(cause, "out of memory");
	EVP_DigestUpdate(h, *buf, *len);
	ws_sha_hex(h, sha);
	if (strcmp(sha, d->sha256_before) != 0)
		return util_cause(cause, "the snapshot of '%s' does not match "
		    "its manifest entry", d->path);
	return 0;
}

/* The staged work side; *buf NULL when it was not staged (too large). */
static int
text_load_stage(const struct workspace_diff *df,
    const struct workspace_delta *d, char **buf, size_t *len, char **cause)
{
	size_t	off = 0;
	ssize_t	r;

	*buf = NULL;
	*len = 0;
	if (!d->staged)
		return 0;
	if ((*buf = malloc(d->stage_len + 1)) == NULL)
		return util_cause(cause, "out of memory");
	while (off < d->stage_len) {
		r = pread(df->stagefd, *buf + off, d->stage_len - off,
		    d->stage_off + (off_t)off);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0)
			return util_cause(cause,
			    "cannot read the staged copy of "
			    "'%s'", d->path);
		off += (size_t)r;
	}
	*len = off;
	return 0;
}

/*
 * Both sides of a text delta. 0 with both loaded, 1 when a side is over
 * the limits (nothing loaded), -1.
 */
static int
text_load(const char *sbxdir, const struct workspace_diff *df,
    const struct workspace_delta *d, struct text_sides *s, char **cause)
{
	memset(s, 0, sizeof(*s));
	if (d->show == WORKSPACE_SHOW_TOO_LARGE ||
	    d->show == WORKSPACE_SHOW_OVER_TOTAL)
		return 1;
	if (d->change != WORKSPACE_ADDED) {
		if (text_load_snap(sbxdir, d, &s->a, &s->alen, cause) == -1)
			return -1;
		if (s->a == NULL)
			return 1;
	}
	if (d->change != WORKSPACE_DELETED) {
		if (text_load_stage(df, d, &s->b, &s->blen, cause) == -1)
			return -1;
		if (s->b == NULL)
			return 1;
	}
	if (textdiff_lines(s->a, s->alen) > SG_DIFF_LINES_MAX ||
	    textdiff_lines(s->b, s->blen) > SG_DIFF_LINES_MAX)
		return 1;
	return 0;
}

/* "diff --git", the mode lines, as git writes them. */
static int
text_header(FILE *f, const struct workspace_delta *d)
{
	if (fputs("diff --git ", f) == EOF || text_label(f, "a/", d->path) ||
	    fputc(' ', f) == EOF || text_label(f, "b/", d->path) ||
	    fputc('\n', f) == EOF)
		return -1;
	if (d->change == WORKSPACE_ADDED)
		return fprintf(f, "new file mode 100%03o\n",
		    (unsigned)d->mode_after & 0777) < 0 ? -1 : 0;
	if (d->change == WORKSPACE_DELETED)
		return fprintf(f, "deleted file mode 100%03o\n",
		    (unsigned)d->mode_before & 0777) < 0 ? -1 : 0;
	if ((d->mode_before & 0777) != (d->mode_after & 0777))
		return fprintf(f, "old mode 100%03o\nnew mode 100%03o\n",
		    (unsigned)d->mode_before & 0777,
		    (unsigned)d->mode_after & 0777) < 0 ? -1 : 0;
	return 0;
}

/* Header, labels and hunks of a text delta whose sides are loaded. */
static int
text_write(FILE *f, const struct workspace_delta *d,
    const struct text_sides *s, int raw, size_t *escaped)
{
	struct text_out		t = { f, raw, escaped };
	struct textdiff_out	cb = { text_hunk_cb, text_line_cb, &t };
	int			same;

	if (text_header(f, d) == -1)
		return -1;
	same = s->alen == s->blen && (s->alen == 0 ||
	    memcmp(s->a, s->b, s->alen) == 0);
	if (same)
		return 0;
	if (fputs("--- ", f) == EOF ||
	    (d->change == WORKSPACE_ADDED ? fputs("/dev/null", f) == EOF :
	    text_label(f, "a/", d->path) == -1) || fputs("\n+++ ", f) == EOF ||
	    (d->change == WORKSPACE_DELETED ? fputs("/dev/null", f) == EOF :
	    text_label(f, "b/", d->path) == -1) || fputc('\n', f) == EOF)
		return -1;
	return textdiff_unified(s->a != NULL ? s->a : "", s->alen,
	    s->b != NULL ? s->b : "", s->blen, 3, &cb);
}

static const char *
text_change_word(const struct workspace_delta *d)
{
	return d->change == WORKSPACE_ADDED ? "added" :
	    d->change == WORKSPACE_DELETED ? "deleted" : "changed";
}

/*
 * A text file whose text is not shown: its sizes and hashes, and the
 * true reason (its own size, or the diff's total reached by the smaller
 * ones), and what apply --review does with it.
 */
static int
text_summary(FILE *f, const struct workspace_diff *df,
    const struct workspace_delta *d)
{
	if (fputs("Text file ", f) == EOF ||
	    quote_path(f, d->path, strlen(d->path)) == -1 ||
	    fprintf(f, " %s: ", text_change_word(d)) < 0)
		return -1;
	if (d->show == WORKSPACE_SHOW_OVER_TOTAL) {
		if (fprintf(f, "not shown (%lld bytes before, %lld after): "
		    "the diff shows at most the sandbox's --disk (%lld bytes) "
		    "of text, smaller files first, and this file's text "
		    "(up to %lld bytes) did not fit after them", (long long)
		    d->size_before, (long long)d->size_after,
		    (long long)df->show_cap, (long long)d->show_cost) < 0)
			return -1;
	} else if (fprintf(f, "too large to show (%lld bytes before, %lld "
	    "after; the diff shows files of at most %u bytes and %u lines)",
	    (long long)d->size_before, (long long)d->size_after,
	    SG_DIFF_FILE_MAX, SG_DIFF_LINES_MAX) < 0)
		return -1;
	return fprintf(f, ": sha256 %s -> %s\n",
	    d->sha256_before[0] ? d->sha256_before : "none",
	    d->sha256_after[0] ? d->sha256_after : "none") < 0 ? -1 : 0;
}

/* Count a summarised text delta under its reason. */
static void
text_count_unshown(const struct workspace_delta *d,
    struct workspace_write_stats *ws)
{
	if (d->show == WORKSPACE_SHOW_OVER_TOTAL)
		ws->over_total++;
	else
		ws->too_large++;
}

/* The line of a binary or special delta. */
static int
text_other(FILE *f, const struct workspace_delta *d)
{
	if (d->special) {
		if (fputs("Special file ", f) == EOF ||
		    quote_path(f, d->path, strlen(d->path)) == -1)
			return -1;
		return fprintf(f, " in the working copy: %s (never applied)\n",
		    d->special_what) < 0 ? -1 : 0;
	}
	if (fputs("Binary file ", f) == EOF ||
	    quote_path(f, d->path, strlen(d->path)) == -1)
		return -1;
	if (fprintf(f, " %s: sha256 %s -> %s", text_change_word(d),
	    d->sha256_before[0] ? d->sha256_before : "none",
	    d->sha256_after[0] ? d->sha256_after : "none") < 0)
		return -1;
	if (d->change == WORKSPACE_MODIFIED &&
	    (d->mode_before & 0777) != (d->mode_after & 0777) &&
	    fprintf(f, " (mode %04o -> %04o)", (unsigned)d->mode_before & 0777,
	    (unsigned)d->mode_after & 0777) < 0)
		return -1;
	return fputc('\n', f) == EOF ? -1 : 0;
}

int
workspace_delta_text(const char *sbxdir, const struct workspace_diff *df,
    const struct workspace_delta *d, int raw, char **text, size_t *len,
    size_t *escaped, char **cause)
{
	struct text_sides	s;
	FILE			*f;
	int			 r, rc;

	*text = NULL;
	*len = 0;
	if (d->binary || d->special)
		return WORKSPACE_TEXT_NONE;
	if ((r = text_load(sbxdir, df, d, &s, cause)) == -1) {
		rc = -1;
		goto out;
	}
	if (r == 1) {
		rc = WORKSPACE_TEXT_TOO_LARGE;
		goto out;
	}
	if ((f = open_memstream(text, len)) == NULL) {
		rc = util_cause(cause, "out of memory");
		goto out;
	}
	r = text_write(f, d, &s, raw, escaped);
	if (fclose(f) != 0 || r == -1) {
		free(*text);
		*text = NULL;
		rc = util_cause(cause, "out of memory");
		goto out;
	}
	rc = WORKSPACE_TEXT_SHOWN;
out:
	free(s.a);
	free(s.b);
	return rc;
}

/* One delta of the patch, straight to out. */
static int
text_write_delta(const char *sbxdir, const struct workspace_diff *df,
    const struct workspace_delta *d, int flags, FILE *out,
    struct workspace_write_stats *ws, char **cause)
{
	struct text_sides	s;
	int			r;

	if (d->binary || d->special)
		return text_other(out, d);
	if ((r = text_load(sbxdir, df, d, &s, cause)) == 0)
		r = text_write(out, d, &s, (flags & WORKSPACE_WRITE_RAW) != 0,
		    &ws->escaped);
	else if (r == 1) {
		text_count_unshown(d, ws);
		r = text_summary(out, df, d);
	}
	free(s.a);
	free(s.b);
	return r;
}

/*
 * name: the bytes as a JSON string when they are valid UTF-8; otherwise
 * alt (a quoted form, or JSON null when alt is NULL) and the bytes in
 * base64 under b64key. o gets both; returns o or NULL.
 */
static json_t *
text_json_bytes(const char *p, size_t len, const char *key, json_t *o)
{
	char	*b64, b64key[64];
	json_t	*v;
	int	 n;

	if ((v = json_stringn(p, len)) != NULL)
		return json_object_set_new(o, key, v) == 0 ? o : NULL;
	snprintf(b64key, sizeof(b64key), "%s_base64", key);
	if ((b64 = malloc(4 * ((len + 2) / 3) + 1)) == NULL)
		return NULL;
	n = EVP_EncodeBlock((unsigned char *)b64, (const unsigned char *)p,
	    (int)len);
	v = json_stringn(b64, (size_t)n);
	free(b64);
	if (v == NULL || json_object_set_new(o, b64key, v) == -1)
		return NULL;
	if (strcmp(key, "path") == 0) {
		char	*q = quote_path_dup(p);

		v = q != NULL ? json_string(q) : NULL;
		free(q);
	} else
		v = json_null();
	return v != NULL && json_object_set_new(o, key, v) == 0 ? o : NULL;
}

/* One delta as a JSON object (its text diff included). */
static json_t *
text_json_delta(const char *sbxdir, const struct workspace_diff *df,
    const struct workspace_delta *d, struct workspace_write_stats *ws,
    char **cause)
{
	char		*text = NULL, mb[8], ma[8];
	size_t		 len = 0;
	json_t		*o;
	int		 r;

	r = workspace_delta_text(sbxdir, df, d, 1, &text, &len, NULL, cause);
	if (r == -1)
		return NULL;
	if (r == WORKSPACE_TEXT_TOO_LARGE)
		text_count_unshown(d, ws);
	snprintf(mb, sizeof(mb), "%04o", (unsigned)d->mode_before);
	snprintf(ma, sizeof(ma), "%04o", (unsigned)d->mode_after);
	o = json_pack("{s:b, s:s?, s:b, s:b, s:s?, s:s?, s:s?, s:s?, s:s?, "
	    "s:I, s:I, s:b, s:b}", "risky", d->risky, "risky_reason",
	    d->risky ? d->risky_why : NULL, "binary", d->binary, "special",
	    d->special,
	    "type", d->special ? d->special_what : NULL,
	    "sha256_before", d->sha256_before[0] ? d->sha256_before : NULL,
	    "sha256_after", d->sha256_after[0] ? d->sha256_after : NULL,
	    "mode_before", d->change != WORKSPACE_ADDED ? mb : NULL,
	    "mode_after", d->change != WORKSPACE_DELETED &&
	    (!d->special || d->kind == WORKSPACE_OVERSIZE) ? ma : NULL,
	    "size_before", (json_int_t)d->size_before,
	    "size_after", (json_int_t)d->size_after,
	    "too_large", r == WORKSPACE_TEXT_TOO_LARGE &&
	    d->show != WORKSPACE_SHOW_OVER_TOTAL,
	    "over_total", d->show == WORKSPACE_SHOW_OVER_TOTAL);
	if (o == NULL ||
	    text_json_bytes(d->path, strlen(d->path), "path", o) == NULL ||
	    (r == WORKSPACE_TEXT_SHOWN ?
	    text_json_bytes(text, len, "diff", o) == NULL :
	    json_object_set_new(o, "diff", r == WORKSPACE_TEXT_NONE ?
	    json_string("") : json_null()) == -1)) {
		json_decref(o);
		o = NULL;
		util_cause(cause, "cannot encode the diff of '%s'", d->path);
	}
	free(text);
	return o;
}

/* The JSON object, streamed: one delta in memory at a time. */
static int
text_write_json(const char *sbxdir, const struct workspace_diff *df,
    FILE *out, struct workspace_write_stats *ws, char **cause)
{
	static const char *const keys[] = { "added", "modified", "deleted" };
	json_t	*o;
	size_t	 i, k, n;

	fprintf(out, "{\n  \"review\": \"%s\",\n", df->review);
	for (k = 0; k < 3; k++) {
		fprintf(out, "  \"%s\": [", keys[k]);
		for (i = 0, n = 0; i < df->n; i++) {
			if (df->v[i].change != (enum workspace_change)k)
				continue;
			o = text_json_delta(sbxdir, df, &df->v[i], ws, cause);
			if (o == NULL)
				return -1;
			fputs(n++ ? ",\n    " : "\n    ", out);
			if (json_dumpf(o, out, JSON_COMPACT | JSON_SORT_KEYS) ==
			    -1) {
				json_decref(o);
				return util_cause(cause,
				    "cannot write the diff");
			}
			json_decref(o);
		}
		fprintf(out, "%s]%s\n", n ? "\n  " : "", k < 2 ? "," : "");
	}
	fputs("}\n", out);
	return ferror(out) ? util_cause(cause, "cannot write the diff") : 0;
}

int
workspace_diff_write(const char *sbxdir, const struct workspace_diff *df,
    int flags, FILE *out, struct workspace_write_stats *ws, char **cause)
{
	size_t	i;

	memset(ws, 0, sizeof(*ws));
	if (flags & WORKSPACE_WRITE_JSON)
		return text_write_json(sbxdir, df, out, ws, cause);
	for (i = 0; i < df->n; i++) {
		if (text_write_delta(sbxdir, df, &df->v[i], flags, out, ws,
		    cause) == -1) {
			if (cause != NULL && *cause == NULL)
				util_cause(cause, "cannot write the diff");
			return -1;
		}
	}
	if (df->n > 0)		/* nothing to review, nothing printed */
		fprintf(out, "review %s\n", df->review);
	return ferror(out) ? util_cause(cause, "cannot write the diff") : 0;
}
