/*
 * textdiff.h: a line diff of two byte buffers in unified form, in
 * process and with bounded memory, for `sandgate diff` and `export`.
 *
 * Lines end at '\n' (the newline is part of the line when compared, so
 * a last line without one differs from the same text with one). Lines
 * are compared byte for byte; nothing is normalised.
 *
 * The algorithm is Myers' O(ND) difference with linear space (the middle
 * snake, as in GNU diff's analyze.c and git's xdiff) and xdiff's cost
 * limit: when a split costs more than max(256, sqrt(lines)) steps the
 * best diagonal found so far is taken, so the result is always a correct
 * diff but not always the shortest. Memory is about 30 bytes per line of
 * both inputs; the caller bounds the line counts (textdiff_lines()).
 */
#ifndef SG_TEXTDIFF_H
#define SG_TEXTDIFF_H

#include <stddef.h>

/*
 * What textdiff_unified() hands out, in order. Line numbers are 1-based
 * as in "@@ -a,alen +b,blen @@" (a is the line before the hunk when
 * alen is 0). op is ' ' (context), '-' or '+'; text has no newline;
 * noeol is set when the line is the last of its side and has no
 * newline. A callback returning -1 stops the diff.
 */
struct textdiff_out {
	int	(*hunk)(void *arg, size_t a, size_t alen, size_t b,
		    size_t blen);
	int	(*line)(void *arg, char op, const char *text, size_t len,
		    int noeol);
	void	*arg;
};

/* Number of lines in buf (a last line without a newline counts). */
size_t	textdiff_lines(const char *buf, size_t len);

/*
 * Diff a (alen bytes) against b with `context` lines around each change
 * (hunks closer than 2 * context merge). Nothing is handed out when the
 * buffers are equal. Returns 0, or -1 with errno ENOMEM, or -1 when a
 * callback returned -1 (errno as the callback left it).
 */
int	textdiff_unified(const char *a, size_t alen, const char *b,
	    size_t blen, unsigned context, const struct textdiff_out *);

#endif
