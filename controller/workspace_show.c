/*
 * workspace_show.c: which text deltas a diff shows (issue 16, atk16u F1,
 * F3).
 *
 * What a diff shows is bounded by the sandbox's --disk, counted as it is
 * written: each delta is charged an upper bound of the bytes its text
 * takes in the patch or in the JSON (a control byte is 4 bytes as \xHH, 6
 * as \u00HH; a backslash 4, \x5c; each line adds its mark, newline and share of the hunk
 * headers), each name of a hard-linked file charged again. The deltas are
 * shown smallest first: a delta no larger than --disk divided by the
 * number of text deltas is always shown, whatever the others hold, and a
 * delta that is not shown is so because of its own size, told as such.
 * A text that is not valid UTF-8 is charged as the JSON carries it, in
 * base64: 4 bytes for each 3 of its unescaped patch (atk16v F3).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sglimits.h"
#include "workspace.h"
#include "workspace_int.h"

/* Per delta: the header (4 quoted paths, modes, the JSON's fields). */
#define SHOW_DELTA_BYTES	512
#define SHOW_PATH_WEIGHT	24	/* 4 copies, each byte up to 6 */
/* Per line: mark, newline (2 in JSON), an eighth of a 34-byte hunk head */
#define SHOW_LINE_BYTES		8
/* The same unescaped (1 + 1 + 34 / 8), as the JSON's base64 encodes it */
#define SHOW_LINE_RAW		7

/* The most bytes one content byte takes in the patch or the JSON. */
static unsigned
show_weight(unsigned char ch)
{
	if (ch == '\n')
		return SHOW_LINE_BYTES;
	if (ch < 0x20 || ch == 0x7f)
		return 6;		/* \u00HH */
	if (ch >= 0x80 || ch == '\\')
		return 4;		/* \xHH; a backslash as \x5c */
	return ch == '"' ? 2 : 1;
}

/*
 * One more byte of a side's UTF-8 check, as the JSON's encoder checks it
 * (no overlong form, surrogate or code point past U+10FFFF): a text that
 * is not valid UTF-8 goes out in base64 (workspace_text.c).
 */
static void
show_utf8(struct ws_show_cost *c, unsigned char ch)
{
	static const struct { unsigned char first, last, need, lo, hi; } t[] = {
		{ 0xc2, 0xdf, 1, 0x80, 0xbf }, { 0xe0, 0xe0, 2, 0xa0, 0xbf },
		{ 0xe1, 0xec, 2, 0x80, 0xbf }, { 0xed, 0xed, 2, 0x80, 0x9f },
		{ 0xee, 0xef, 2, 0x80, 0xbf }, { 0xf0, 0xf0, 3, 0x90, 0xbf },
		{ 0xf1, 0xf3, 3, 0x80, 0xbf }, { 0xf4, 0xf4, 3, 0x80, 0x8f },
	};
	size_t	i;

	if (c->need > 0) {
		if (ch >= c->lo && ch <= c->hi) {
			c->need--;
			c->lo = 0x80;
			c->hi = 0xbf;
			return;
		}
		c->bad = 1;
		c->need = 0;
	}
	if (ch < 0x80)
		return;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (ch >= t[i].first && ch <= t[i].last) {
			c->need = t[i].need;
			c->lo = t[i].lo;
			c->hi = t[i].hi;
			return;
		}
	c->bad = 1;
}

void
ws_show_cost_add(struct ws_show_cost *c, const unsigned char *p, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		c->bytes += show_weight(p[i]);
		c->raw += p[i] == '\n' ? SHOW_LINE_RAW : 1;
		c->lines += p[i] == '\n';
		c->last = p[i];
		if (!c->bad)
			show_utf8(c, p[i]);
	}
	c->size += (off_t)len;
}

/* Lines as textdiff_lines() counts them (a last one without newline). */
static size_t
show_lines(const struct ws_show_cost *c)
{
	return c->lines + (c->size > 0 && c->last != '\n');
}

int
ws_show_snap_cost(int snapfd, const char *path, struct ws_show_cost *c,
    unsigned char *buf, size_t bufsz)
{
	ssize_t	r;
	int	fd;

	if ((fd = ws_open_beneath(snapfd, path, O_RDONLY)) == -1)
		return -1;
	while ((r = read(fd, buf, bufsz)) != 0) {
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1 || c->size + r > SG_DIFF_FILE_MAX)
			break;
		ws_show_cost_add(c, buf, (size_t)r);
	}
	close(fd);
	return r == 0 ? 0 : 1;
}

/*
 * The most bytes the lines of sides a and b take: escaped, and for a text
 * that is not valid UTF-8 (a side with a bad or cut-off sequence), as the
 * JSON's base64 of the unescaped text (4 bytes per 3) when that is more.
 */
static off_t
show_text_bytes(const struct ws_show_cost *a, const struct ws_show_cost *b)
{
	off_t	esc, raw;

	esc = a->bytes + b->bytes + 2 * SHOW_LINE_BYTES;
	if (!a->bad && !b->bad && a->need == 0 && b->need == 0)
		return esc;
	raw = a->raw + b->raw + 2 * SHOW_LINE_RAW;
	return esc > (4 * raw + 2) / 3 ? esc : (4 * raw + 2) / 3;
}

void
ws_show_set(struct workspace_delta *d, const struct ws_show_cost *a,
    const struct ws_show_cost *b)
{
	if (show_lines(a) > SG_DIFF_LINES_MAX ||
	    show_lines(b) > SG_DIFF_LINES_MAX) {
		d->show = WORKSPACE_SHOW_TOO_LARGE;
		return;
	}
	d->show = WORKSPACE_SHOW_TEXT;
	d->show_cost = SHOW_DELTA_BYTES + (off_t)(SHOW_PATH_WEIGHT *
	    strlen(d->path)) + show_text_bytes(a, b);
}

static int
show_cmp(const void *x, const void *y)
{
	const struct workspace_delta *a = *(const struct workspace_delta *const *)x;
	const struct workspace_delta *b = *(const struct workspace_delta *const *)y;

	if (a->show_cost != b->show_cost)
		return a->show_cost < b->show_cost ? -1 : 1;
	return strcmp(a->path, b->path);
}

int
ws_show_choose(struct workspace_diff *df, off_t cap)
{
	struct workspace_delta	**v;
	size_t			  i, n = 0;
	off_t			  used = 0;

	df->show_cap = cap;
	if ((v = calloc(df->n + 1, sizeof(*v))) == NULL)
		return -1;
	for (i = 0; i < df->n; i++)
		if (df->v[i].show == WORKSPACE_SHOW_TEXT)
			v[n++] = &df->v[i];
	qsort(v, n, sizeof(*v), show_cmp);
	for (i = 0; i < n; i++) {
		if (v[i]->show_cost > cap - used) {
			v[i]->show = WORKSPACE_SHOW_OVER_TOTAL;
			continue;
		}
		used += v[i]->show_cost;
	}
	free(v);
	return 0;
}
