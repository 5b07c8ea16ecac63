/*
 * fuzz_quote.c: quote_path() and quote_text() on arbitrary bytes (a
 * file name or a line a sandbox wrote). What they print must be valid
 * UTF-8 without a control character (but the tab, and a CR at the end of
 * a text line), a C1 control or a bidi control, and a quoted name must
 * unquote to the bytes it came from. The same bytes as a path go through
 * the look-alike rules (risky.h): the key of valid UTF-8 is valid UTF-8.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistr.h>

#include "quote.h"
#include "risky.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static int	fz_safe(const unsigned char *, size_t, int);
static size_t	fz_unquote(const char *, size_t, unsigned char *);

/* Is s (n bytes) safe for a terminal? crlf: a CR may end it. */
static int
fz_safe(const unsigned char *s, size_t n, int crlf)
{
	uint32_t	cp;
	size_t		i = 0, l;

	while (i < n) {
		if ((l = quote_utf8_len(s + i, n - i, &cp)) == 0)
			return 0;
		if (quote_unsafe_cp(cp) && cp != '\t' &&
		    !(crlf && cp == '\r' && i + 1 == n))
			return 0;
		i += l;
	}
	return 1;
}

/* Undo git's C quoting of "..." (no quotes: as it is). */
static size_t
fz_unquote(const char *q, size_t n, unsigned char *out)
{
	static const char	 from[] = "abtnvfr\"\\";
	static const char	 to[] = "\a\b\t\n\v\f\r\"\\";
	const char		*p;
	size_t			 i, o = 0;

	if (n < 2 || q[0] != '"') {
		memcpy(out, q, n);
		return n;
	}
	for (i = 1; i + 1 < n; i++) {
		if (q[i] != '\\') {
			out[o++] = (unsigned char)q[i];
			continue;
		}
		i++;
		if ((p = strchr(from, q[i])) != NULL && q[i] != '\0')
			out[o++] = (unsigned char)to[p - from];
		else {
			out[o++] = (unsigned char)((q[i] - '0') * 64 +
			    (q[i + 1] - '0') * 8 + (q[i + 2] - '0'));
			i += 2;
		}
	}
	return o;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char	*back;
	char		*s = NULL;
	size_t		 n = 0, m;
	FILE		*f;

	if ((f = open_memstream(&s, &n)) == NULL)
		return 0;
	quote_path(f, (const char *)data, size);
	fclose(f);
	if (!fz_safe((unsigned char *)s, n, 0))
		abort();
	if ((back = malloc(n + 1)) == NULL)
		abort();
	m = fz_unquote(s, n, back);
	if (m != size || memcmp(back, data, size) != 0)
		abort();	/* two names could print the same */
	free(back);
	free(s);
	s = NULL;
	if ((f = open_memstream(&s, &n)) == NULL)
		return 0;
	quote_text(f, (const char *)data, size, NULL);
	fclose(f);
	if (!fz_safe((unsigned char *)s, n, 1))
		abort();
	free(s);
	if ((s = strndup((const char *)data, size)) == NULL)
		return 0;
	(void)risky_path(s, NULL);
	(void)risky_mixed_script(s);
	if ((back = (unsigned char *)risky_key_dup(s)) != NULL &&
	    u8_check(back, strlen((char *)back)) != NULL)
		abort();
	free(back);
	free(s);
	return 0;
}
