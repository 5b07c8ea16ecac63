/*
 * textdiff_check.h: the test oracle for textdiff_unified(): apply the
 * hunks it hands out to a, checking every context and removed line
 * against a and every hunk's counts, and compare the result with b.
 * Header-only; included by tests/unit/test_textdiff.c and
 * tests/fuzz/fuzz_textdiff.c.
 */
#ifndef SG_TEXTDIFF_CHECK_H
#define SG_TEXTDIFF_CHECK_H

#include <stdlib.h>
#include <string.h>

#include "textdiff.h"

struct tdcheck {
	const char	*a;
	size_t		 alen, pos;	/* byte offset of the next a line */
	size_t		 line;		/* its number, 0-based */
	char		*out;
	size_t		 outlen, outcap;
	size_t		 ha, hb;	/* lines a hunk still expects */
	size_t		 hunks;
	int		 bad;
};

/* Length of the a line at c->pos (with its newline). */
static size_t
tdcheck_alen(const struct tdcheck *c)
{
	const char	*nl = memchr(c->a + c->pos, '\n', c->alen - c->pos);

	return nl != NULL ? (size_t)(nl - (c->a + c->pos)) + 1 :
	    c->alen - c->pos;
}

static void
tdcheck_emit(struct tdcheck *c, const char *p, size_t n)
{
	if (n > c->outcap - c->outlen) {
		c->bad = 1;
		return;
	}
	memcpy(c->out + c->outlen, p, n);
	c->outlen += n;
}

/* Copy a's lines up to line number `to` (0-based) unchanged. */
static void
tdcheck_copy(struct tdcheck *c, size_t to)
{
	size_t	n;

	if (to < c->line)
		c->bad = 1;	/* hunks out of order or overlapping */
	while (c->line < to && c->pos < c->alen) {
		n = tdcheck_alen(c);
		tdcheck_emit(c, c->a + c->pos, n);
		c->pos += n;
		c->line++;
	}
	if (c->line != to && to != (size_t)-1)
		c->bad = 1;
}

static int
tdcheck_hunk(void *arg, size_t a, size_t alen, size_t b, size_t blen)
{
	struct tdcheck	*c = arg;

	(void)b;
	if (c->ha != 0 || c->hb != 0)
		c->bad = 1;		/* the last hunk was short */
	tdcheck_copy(c, alen > 0 ? a - 1 : a);
	c->ha = alen;
	c->hb = blen;
	c->hunks++;
	return 0;
}

static int
tdcheck_line(void *arg, char op, const char *text, size_t len, int noeol)
{
	struct tdcheck	*c = arg;
	size_t		 n;

	if (op == ' ' || op == '-') {
		n = c->pos < c->alen ? tdcheck_alen(c) : 0;
		if (c->ha == 0 || n != len + !noeol ||
		    memcmp(c->a + c->pos, text, len) != 0 ||
		    (!noeol && c->a[c->pos + len] != '\n'))
			c->bad = 1;
		if (op == ' ')
			tdcheck_emit(c, c->a + c->pos, n);
		c->pos += n;
		c->line++;
		if (c->ha > 0)
			c->ha--;
		if (op == ' ' && c->hb > 0)
			c->hb--;
		else if (op == ' ')
			c->bad = 1;
		return 0;
	}
	if (op != '+' || c->hb == 0)
		c->bad = 1;
	if (c->hb > 0)
		c->hb--;
	tdcheck_emit(c, text, len);
	if (!noeol)
		tdcheck_emit(c, "\n", 1);
	return 0;
}

/*
 * Diff a against b and check the result: 0 when the hunks turn a into
 * b exactly, 1 when they do not (or a count is off), -1 on ENOMEM.
 * *hunks (may be NULL) gets the number of hunks.
 */
static int
tdcheck_run(const char *a, size_t alen, const char *b, size_t blen,
    unsigned context, size_t *hunks)
{
	struct tdcheck		c;
	struct textdiff_out	cb = { tdcheck_hunk, tdcheck_line, &c };
	int			rc;

	memset(&c, 0, sizeof(c));
	c.a = a;
	c.alen = alen;
	c.outcap = alen + blen + 1;
	if ((c.out = malloc(c.outcap)) == NULL)
		return -1;
	if (textdiff_unified(a, alen, b, blen, context, &cb) == -1) {
		free(c.out);
		return -1;
	}
	if (c.ha != 0 || c.hb != 0)
		c.bad = 1;
	tdcheck_copy(&c, (size_t)-1);	/* the rest of a */
	rc = c.bad || c.ha != 0 || c.hb != 0 || c.outlen != blen ||
	    memcmp(c.out, b, blen) != 0;
	if (hunks != NULL)
		*hunks = c.hunks;
	free(c.out);
	return rc;
}

#endif
