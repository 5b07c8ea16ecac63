/*
 * textdiff.c: Myers' linear-space line diff with a cost limit, written
 * out as unified hunks; see textdiff.h.
 *
 * Both inputs are split into lines and each line gets the number of its
 * class (equal lines, equal numbers), so the search compares integers.
 * The middle-snake search (tdiff_split) marks nothing itself: it returns
 * a point on an optimal (or, past the cost limit, a good) path, and the
 * ranges on both sides of it go on a work stack, so no recursion depth
 * depends on the input.
 */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textdiff.h"

#define TDIFF_COST_MIN	256

struct tdiff_side {
	const char	*buf;
	size_t		 len;
	size_t		 n;		/* lines */
	size_t		*off;		/* line i is off[i]..off[i + 1] */
	int32_t		*cls;		/* class of each line */
	unsigned char	*chg;		/* changed lines */
};

struct tdiff_range {
	long	xoff, xlim, yoff, ylim;
};

/* One class of equal lines: a line that stands for it. */
struct tdiff_class {
	const char	*p;
	size_t		 len;
	uint32_t	 hash;
};

struct tdiff {
	struct tdiff_side	 a, b;
	long			*fdv, *bdv;	/* storage */
	long			*fd, *bd;	/* indexed by diagonal */
	long			 maxcost;
	struct tdiff_range	*stack;
	size_t			 nstack, capstack;
};

static int	tdiff_side_init(struct tdiff_side *, const char *, size_t);
static int	tdiff_classify(struct tdiff *);
static int32_t	tdiff_class_of(struct tdiff_class *, size_t *, int32_t *,
		    size_t, const char *, size_t);
static uint32_t	tdiff_hash(const char *, size_t);
static long	tdiff_cost_limit(size_t);
struct tdiff_search;
static void	tdiff_split(struct tdiff *, const struct tdiff_range *,
		    long *, long *);
static int	tdiff_forward(struct tdiff *, const struct tdiff_range *,
		    struct tdiff_search *, long *, long *);
static int	tdiff_backward(struct tdiff *, const struct tdiff_range *,
		    struct tdiff_search *, long *, long *);
static int	tdiff_best(struct tdiff *, const struct tdiff_range *,
		    long, long, long, long, long *, long *);
static int	tdiff_push(struct tdiff *, long, long, long, long);
static int	tdiff_compare(struct tdiff *);
static int	tdiff_emit(const struct tdiff *, unsigned,
		    const struct textdiff_out *);
static int	tdiff_hunk(const struct tdiff *, size_t, size_t, size_t,
		    size_t, const struct textdiff_out *);
static int	tdiff_line(const struct tdiff_side *, size_t, char,
		    const struct textdiff_out *);
static void	tdiff_free(struct tdiff *);

size_t
textdiff_lines(const char *buf, size_t len)
{
	const char	*p = buf, *end = buf + len, *nl;
	size_t		 n = 0;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl != NULL ? nl + 1 : end;
		n++;
	}
	return n;
}

/* Line offsets of one side; the class array is filled later. */
static int
tdiff_side_init(struct tdiff_side *s, const char *buf, size_t len)
{
	const char	*p = buf, *end = buf + len, *nl;
	size_t		 i;

	s->buf = buf;
	s->len = len;
	s->n = textdiff_lines(buf, len);
	s->off = malloc((s->n + 1) * sizeof(*s->off));
	s->cls = malloc((s->n + 1) * sizeof(*s->cls));
	s->chg = calloc(s->n + 1, 1);
	if (s->off == NULL || s->cls == NULL || s->chg == NULL)
		return -1;
	for (i = 0; i < s->n; i++) {
		s->off[i] = (size_t)(p - buf);
		nl = memchr(p, '\n', (size_t)(end - p));
		p = nl != NULL ? nl + 1 : end;
	}
	s->off[s->n] = len;
	return 0;
}

static uint32_t
tdiff_hash(const char *p, size_t n)
{
	uint32_t	h = 2166136261u;	/* FNV-1a */
	size_t		i;

	for (i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 16777619u;
	}
	return h;
}

/*
 * The class of line p (len bytes) in the open-addressed table tab
 * (mask + 1 slots holding class + 1, 0 when free); a new class is added
 * to cl (*ncl of them so far).
 */
static int32_t
tdiff_class_of(struct tdiff_class *cl, size_t *ncl, int32_t *tab,
    size_t mask, const char *p, size_t len)
{
	uint32_t	h = tdiff_hash(p, len);
	size_t		i = h & mask;
	int32_t		c;

	while ((c = tab[i]) != 0) {
		c--;
		if (cl[c].hash == h && cl[c].len == len &&
		    memcmp(cl[c].p, p, len) == 0)
			return c;
		i = (i + 1) & mask;
	}
	c = (int32_t)*ncl;
	cl[c].p = p;
	cl[c].len = len;
	cl[c].hash = h;
	tab[i] = c + 1;
	(*ncl)++;
	return c;
}

static int
tdiff_classify(struct tdiff *t)
{
	struct tdiff_class	*cl;
	struct tdiff_side	*s;
	int32_t			*tab;
	size_t			 total = t->a.n + t->b.n, size = 16, ncl = 0;
	size_t			 i, k;

	while (size < 2 * total)
		size <<= 1;
	cl = malloc((total + 1) * sizeof(*cl));
	tab = calloc(size, sizeof(*tab));
	if (cl == NULL || tab == NULL) {
		free(cl);
		free(tab);
		return -1;
	}
	for (k = 0; k < 2; k++) {
		s = k == 0 ? &t->a : &t->b;
		for (i = 0; i < s->n; i++)
			s->cls[i] = tdiff_class_of(cl, &ncl, tab, size - 1,
			    s->buf + s->off[i], s->off[i + 1] - s->off[i]);
	}
	free(cl);
	free(tab);
	return 0;
}

/* xdiff's limit: max(256, about the square root of the diagonals). */
static long
tdiff_cost_limit(size_t ndiags)
{
	long	c = 1;

	while ((size_t)c * (size_t)c < ndiags)
		c <<= 1;
	return c < TDIFF_COST_MIN ? TDIFF_COST_MIN : c;
}

static int
tdiff_push(struct tdiff *t, long xoff, long xlim, long yoff, long ylim)
{
	struct tdiff_range	*nv;
	size_t			 ncap;

	if (t->nstack == t->capstack) {
		ncap = t->capstack ? t->capstack * 2 : 64;
		if ((nv = realloc(t->stack, ncap * sizeof(*nv))) == NULL)
			return -1;
		t->stack = nv;
		t->capstack = ncap;
	}
	t->stack[t->nstack].xoff = xoff;
	t->stack[t->nstack].xlim = xlim;
	t->stack[t->nstack].yoff = yoff;
	t->stack[t->nstack].ylim = ylim;
	t->nstack++;
	return 0;
}

/*
 * Past the cost limit: the furthest forward point or the furthest
 * backward point, whichever covers more of the range. Returns 0 with the
 * point, -1 if neither moved off the range's corners.
 */
static int
tdiff_best(struct tdiff *t, const struct tdiff_range *r, long fmin,
    long fmax, long bmin, long bmax, long *xmid, long *ymid)
{
	long	d, x, y, fxy = -1, fx = 0, bxy = -1, bx = 0;

	for (d = fmax; d >= fmin; d -= 2) {
		x = t->fd[d] < r->xlim ? t->fd[d] : r->xlim;
		y = x - d;
		if (y > r->ylim) {
			x = r->ylim + d;
			y = r->ylim;
		}
		if (x + y > fxy) {
			fxy = x + y;
			fx = x;
		}
	}
	for (d = bmax; d >= bmin; d -= 2) {
		x = t->bd[d] > r->xoff ? t->bd[d] : r->xoff;
		y = x - d;
		if (y < r->yoff) {
			x = r->yoff + d;
			y = r->yoff;
		}
		if (bxy == -1 || x + y < bxy) {
			bxy = x + y;
			bx = x;
		}
	}
	if ((r->xlim + r->ylim) - bxy < fxy - (r->xoff + r->yoff)) {
		*xmid = fx;
		*ymid = fxy - fx;
	} else {
		*xmid = bx;
		*ymid = bxy - bx;
	}
	if ((*xmid == r->xoff && *ymid == r->yoff) ||
	    (*xmid == r->xlim && *ymid == r->ylim))
		return -1;
	return 0;
}

/* The bounds of one middle-snake search (tdiff_split). */
struct tdiff_search {
	long	dmin, dmax;		/* diagonals of the range */
	long	fmin, fmax, bmin, bmax;	/* diagonals reached so far */
	int	odd;			/* the two ends differ in parity */
};

/*
 * One edit step forward on every diagonal reached; 1 with the meeting
 * point when the forward and backward paths meet, else 0.
 */
static int
tdiff_forward(struct tdiff *t, const struct tdiff_range *r,
    struct tdiff_search *s, long *xmid, long *ymid)
{
	const int32_t	*xv = t->a.cls, *yv = t->b.cls;
	long		*fd = t->fd, d, x, y, lo, hi;

	if (s->fmin > s->dmin)
		fd[--s->fmin - 1] = -1;
	else
		s->fmin++;
	if (s->fmax < s->dmax)
		fd[++s->fmax + 1] = -1;
	else
		s->fmax--;
	for (d = s->fmax; d >= s->fmin; d -= 2) {
		lo = fd[d - 1];
		hi = fd[d + 1];
		x = lo >= hi ? lo + 1 : hi;
		y = x - d;
		while (x < r->xlim && y < r->ylim && xv[x] == yv[y]) {
			x++;
			y++;
		}
		fd[d] = x;
		if (s->odd && s->bmin <= d && d <= s->bmax && t->bd[d] <= x) {
			*xmid = x;
			*ymid = y;
			return 1;
		}
	}
	return 0;
}

/* The same step backward from the range's end. */
static int
tdiff_backward(struct tdiff *t, const struct tdiff_range *r,
    struct tdiff_search *s, long *xmid, long *ymid)
{
	const int32_t	*xv = t->a.cls, *yv = t->b.cls;
	long		*bd = t->bd, d, x, y, lo, hi;

	if (s->bmin > s->dmin)
		bd[--s->bmin - 1] = LONG_MAX;
	else
		s->bmin++;
	if (s->bmax < s->dmax)
		bd[++s->bmax + 1] = LONG_MAX;
	else
		s->bmax--;
	for (d = s->bmax; d >= s->bmin; d -= 2) {
		lo = bd[d - 1];
		hi = bd[d + 1];
		x = lo < hi ? lo : hi - 1;
		y = x - d;
		while (x > r->xoff && y > r->yoff && xv[x - 1] == yv[y - 1]) {
			x--;
			y--;
		}
		bd[d] = x;
		if (!s->odd && s->fmin <= d && d <= s->fmax && x <= t->fd[d]) {
			*xmid = x;
			*ymid = y;
			return 1;
		}
	}
	return 0;
}

/*
 * A point (xmid, ymid) on a shortest edit path through the range (whose
 * first and last lines differ), by searching forward from its start and
 * backward from its end until the two meet; past the cost limit the best
 * point found so far. xmid == -1 when no useful point was found (the
 * caller then marks the whole range changed).
 */
static void
tdiff_split(struct tdiff *t, const struct tdiff_range *r, long *xmid,
    long *ymid)
{
	struct tdiff_search	s;
	long			fmid = r->xoff - r->yoff;
	long			bmid = r->xlim - r->ylim, c;

	s.dmin = r->xoff - r->ylim;
	s.dmax = r->xlim - r->yoff;
	s.fmin = s.fmax = fmid;
	s.bmin = s.bmax = bmid;
	s.odd = ((fmid - bmid) & 1) != 0;
	t->fd[fmid] = r->xoff;
	t->bd[bmid] = r->xlim;
	for (c = 1;; c++) {
		if (tdiff_forward(t, r, &s, xmid, ymid) ||
		    tdiff_backward(t, r, &s, xmid, ymid))
			return;
		if (c >= t->maxcost) {
			if (tdiff_best(t, r, s.fmin, s.fmax, s.bmin, s.bmax,
			    xmid, ymid) == -1)
				*xmid = -1;
			return;
		}
	}
}

/* Mark every changed line: ranges off a work stack until it is empty. */
static int
tdiff_compare(struct tdiff *t)
{
	const int32_t		*xv = t->a.cls, *yv = t->b.cls;
	struct tdiff_range	 r;
	long			 xmid, ymid;

	if (tdiff_push(t, 0, (long)t->a.n, 0, (long)t->b.n) == -1)
		return -1;
	while (t->nstack > 0) {
		r = t->stack[--t->nstack];
		while (r.xoff < r.xlim && r.yoff < r.ylim &&
		    xv[r.xoff] == yv[r.yoff]) {
			r.xoff++;
			r.yoff++;
		}
		while (r.xlim > r.xoff && r.ylim > r.yoff &&
		    xv[r.xlim - 1] == yv[r.ylim - 1]) {
			r.xlim--;
			r.ylim--;
		}
		if (r.xoff == r.xlim || r.yoff == r.ylim) {
			memset(t->a.chg + r.xoff, 1, (size_t)(r.xlim - r.xoff));
			memset(t->b.chg + r.yoff, 1, (size_t)(r.ylim - r.yoff));
			continue;
		}
		tdiff_split(t, &r, &xmid, &ymid);
		if (xmid == -1) {
			memset(t->a.chg + r.xoff, 1, (size_t)(r.xlim - r.xoff));
			memset(t->b.chg + r.yoff, 1, (size_t)(r.ylim - r.yoff));
			continue;
		}
		if (tdiff_push(t, r.xoff, xmid, r.yoff, ymid) == -1 ||
		    tdiff_push(t, xmid, r.xlim, ymid, r.ylim) == -1)
			return -1;
	}
	return 0;
}

static int
tdiff_line(const struct tdiff_side *s, size_t i, char op,
    const struct textdiff_out *out)
{
	const char	*p = s->buf + s->off[i];
	size_t		 len = s->off[i + 1] - s->off[i];
	int		 noeol = 1;

	if (len > 0 && p[len - 1] == '\n') {
		len--;
		noeol = 0;
	}
	return out->line(out->arg, op, p, len, noeol);
}

/*
 * One hunk: lines a0..a1 of a and b0..b1 of b (the same context lines
 * at both ends), changed lines as marked.
 */
static int
tdiff_hunk(const struct tdiff *t, size_t a0, size_t a1, size_t b0,
    size_t b1, const struct textdiff_out *out)
{
	size_t	i = a0, j = b0;

	if (out->hunk(out->arg, a1 > a0 ? a0 + 1 : a0, a1 - a0,
	    b1 > b0 ? b0 + 1 : b0, b1 - b0) == -1)
		return -1;
	while (i < a1 || j < b1) {
		if (i < a1 && t->a.chg[i]) {
			if (tdiff_line(&t->a, i++, '-', out) == -1)
				return -1;
		} else if (j < b1 && t->b.chg[j]) {
			if (tdiff_line(&t->b, j++, '+', out) == -1)
				return -1;
		} else {
			if (i >= a1 || j >= b1)
				break;	/* unreachable: both sides match here */
			if (tdiff_line(&t->a, i, ' ', out) == -1)
				return -1;
			i++;
			j++;
		}
	}
	return 0;
}

/*
 * Walk both sides in step; a change is a run of marked lines on either
 * side. Changes closer than 2 * context share a hunk.
 */
static int
tdiff_emit(const struct tdiff *t, unsigned context,
    const struct textdiff_out *out)
{
	size_t	i = 0, j = 0, ci, cj, ei, ej, ha = 0, hb = 0, ea = 0, eb = 0;
	int	open = 0;

	for (;;) {
		while (i < t->a.n && j < t->b.n && !t->a.chg[i] &&
		    !t->b.chg[j]) {
			i++;
			j++;
		}
		if (i >= t->a.n && j >= t->b.n)
			break;
		/* a change starts at (i, j) and ends at (ei, ej) */
		ei = i;
		ej = j;
		while (ei < t->a.n && t->a.chg[ei])
			ei++;
		while (ej < t->b.n && t->b.chg[ej])
			ej++;
		ci = i > context ? i - context : 0;
		cj = j - (i - ci);
		if (open && ci > ea) {
			if (tdiff_hunk(t, ha, ea, hb, eb, out) == -1)
				return -1;
			open = 0;
		}
		if (!open) {
			ha = ci < ea ? ea : ci;
			hb = cj + (ha - ci);
			open = 1;
		}
		ea = ei + context < t->a.n ? ei + context : t->a.n;
		eb = ej + (ea - ei);
		i = ei;
		j = ej;
	}
	if (open && tdiff_hunk(t, ha, ea, hb, eb, out) == -1)
		return -1;
	return 0;
}

static void
tdiff_free(struct tdiff *t)
{
	free(t->a.off);
	free(t->a.cls);
	free(t->a.chg);
	free(t->b.off);
	free(t->b.cls);
	free(t->b.chg);
	free(t->fdv);
	free(t->bdv);
	free(t->stack);
}

int
textdiff_unified(const char *a, size_t alen, const char *b, size_t blen,
    unsigned context, const struct textdiff_out *out)
{
	struct tdiff	t;
	size_t		ndiags;
	int		rc = -1;

	memset(&t, 0, sizeof(t));
	if (tdiff_side_init(&t.a, a, alen) == -1 ||
	    tdiff_side_init(&t.b, b, blen) == -1 || tdiff_classify(&t) == -1)
		goto nomem;
	ndiags = t.a.n + t.b.n + 3;
	t.fdv = malloc(ndiags * sizeof(*t.fdv));
	t.bdv = malloc(ndiags * sizeof(*t.bdv));
	if (t.fdv == NULL || t.bdv == NULL)
		goto nomem;
	/* diagonals run from -(b lines) - 1 to (a lines) + 1 */
	t.fd = t.fdv + t.b.n + 1;
	t.bd = t.bdv + t.b.n + 1;
	t.maxcost = tdiff_cost_limit(ndiags);
	if (tdiff_compare(&t) == -1)
		goto nomem;
	rc = tdiff_emit(&t, context, out);
	goto out;
nomem:
	errno = ENOMEM;
out:
	tdiff_free(&t);
	return rc;
}
