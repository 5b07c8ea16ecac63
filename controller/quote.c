/* quote.c: terminal-safe names and text; see quote.h. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unictype.h>

#include "quote.h"
#include "risky.h"

static size_t	quote_unsafe_len(const unsigned char *, size_t, int);
static int	quote_c_escape(FILE *, unsigned char);

size_t
quote_utf8_len(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t	c, min;
	size_t		len, i;

	if (n == 0)
		return 0;
	if (s[0] < 0x80) {
		*cp = s[0];
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2; c = s[0] & 0x1f; min = 0x80;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3; c = s[0] & 0x0f; min = 0x800;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4; c = s[0] & 0x07; min = 0x10000;
	} else
		return 0;
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Characters that show nothing, or move what follows (see quote.h). */
static const uint32_t quote_invisible[][2] = {
	{ 0x00ad, 0x00ad },	/* soft hyphen */
	{ 0x034f, 0x034f },	/* combining grapheme joiner */
	{ 0x061c, 0x061c },	/* Arabic letter mark (bidi) */
	{ 0x115f, 0x1160 },	/* Hangul fillers */
	{ 0x180e, 0x180e },	/* Mongolian vowel separator */
	{ 0x200b, 0x200f },	/* zero-width space, (non-)joiner, LRM, RLM */
	{ 0x2028, 0x202e },	/* line, paragraph separators; embeddings */
	{ 0x2060, 0x206f },	/* word joiner, invisible operators, isolates */
	{ 0x3164, 0x3164 },	/* Hangul filler */
	{ 0xfe00, 0xfe0f },	/* variation selectors */
	{ 0xfeff, 0xfeff },	/* zero-width no-break space (BOM) */
	{ 0xffa0, 0xffa0 },	/* halfwidth Hangul filler */
	{ 0xfff9, 0xfffb },	/* interlinear annotation */
	{ 0xe0000, 0xe0fff },	/* tags, variation selectors supplement */
};

int
quote_unsafe_cp(uint32_t cp)
{
	size_t	i;

	if (cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f))
		return 1;
	for (i = 0; i < sizeof(quote_invisible) / sizeof(quote_invisible[0]);
	    i++) {
		if (cp >= quote_invisible[i][0] && cp <= quote_invisible[i][1])
			return 1;
	}
	return 0;
}

/*
 * By Unicode property (libunistring): white space and space separators
 * other than U+0020 (U+00A0, U+2000-U+200A, U+3000, ...), default-
 * ignorable code points and format characters (they render as nothing:
 * U+17B4, U+180B, U+1D173, the Egyptian format controls U+13430-...),
 * and U+2800 BRAILLE PATTERN BLANK, a symbol that renders as a blank
 * cell.
 */
int
quote_blank_cp(uint32_t cp)
{
	if (cp == ' ')
		return 0;
	return cp == 0x2800 || uc_is_property_white_space(cp) ||
	    uc_is_general_category(cp, UC_SPACE_SEPARATOR) ||
	    uc_is_general_category(cp, UC_FORMAT) ||
	    uc_is_property_default_ignorable_code_point(cp);
}

/*
 * How many bytes at s form one unsafe unit (a control, a bidi character,
 * a character that renders blank or as nothing, or a single byte that is
 * not valid UTF-8; in a name, also a character drawn like '/' or '.':
 * risky_lookalike_cp); 0 if s starts a safe character.
 */
static size_t
quote_unsafe_len(const unsigned char *s, size_t n, int name)
{
	uint32_t	cp = 0;
	size_t		len;

	if ((len = quote_utf8_len(s, n, &cp)) == 0)
		return 1;
	if (quote_unsafe_cp(cp) || quote_blank_cp(cp))
		return len;
	return name && risky_lookalike_cp(cp) != 0 ? len : 0;
}

int
quote_path_needed(const char *name, size_t len)
{
	const unsigned char	*s = (const unsigned char *)name;
	uint32_t		 cp;
	size_t			 i = 0, l;

	while (i < len) {
		if (s[i] == '"' || s[i] == '\\' ||
		    quote_unsafe_len(s + i, len - i, 1) > 0)
			return 1;
		/* a name (or a folder in it) that ends in a space */
		if (s[i] == ' ' && (i + 1 == len || s[i + 1] == '/'))
			return 1;
		l = quote_utf8_len(s + i, len - i, &cp);
		i += l > 0 ? l : 1;
	}
	return 0;
}

/* One byte as git writes it inside quotes. */
static int
quote_c_escape(FILE *f, unsigned char c)
{
	static const char	 from[] = "\a\b\t\n\v\f\r\"\\";
	static const char	 to[] = "abtnvfr\"\\";
	const char		*p;

	if (c != '\0' && (p = strchr(from, c)) != NULL)
		return fprintf(f, "\\%c", to[p - from]) < 0 ? -1 : 0;
	return fprintf(f, "\\%03o", c) < 0 ? -1 : 0;
}

int
quote_path(FILE *f, const char *name, size_t len)
{
	const unsigned char	*s = (const unsigned char *)name;
	size_t			 i = 0, u, k;
	uint32_t		 cp;

	if (!quote_path_needed(name, len))
		return fwrite(name, 1, len, f) == len ? 0 : -1;
	if (fputc('"', f) == EOF)
		return -1;
	while (i < len) {
		if (s[i] == '"' || s[i] == '\\')
			u = 1;
		else
			u = quote_unsafe_len(s + i, len - i, 1);
		if (u > 0) {
			for (k = 0; k < u; k++)
				if (quote_c_escape(f, s[i + k]) == -1)
					return -1;
			i += u;
			continue;
		}
		u = quote_utf8_len(s + i, len - i, &cp);
		if (fwrite(s + i, 1, u, f) != u)
			return -1;
		i += u;
	}
	return fputc('"', f) == EOF ? -1 : 0;
}

char *
quote_path_dup(const char *name)
{
	char	*out = NULL;
	size_t	 len = 0;
	FILE	*f;

	if ((f = open_memstream(&out, &len)) == NULL)
		return NULL;
	if (quote_path(f, name, strlen(name)) == -1) {
		fclose(f);
		free(out);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/*
 * How many bytes at s to show as \xHH in text: an unsafe unit, and a
 * backslash before 'x' (so every \x shown starts an escape); a tab, and
 * a CR that ends the line when keep_cr, are shown as they are.
 */
static size_t
quote_text_unsafe(const unsigned char *s, size_t n, int keep_cr)
{
	size_t	u;

	if (s[0] == '\\')
		return n > 1 && s[1] == 'x';
	u = quote_unsafe_len(s, n, 0);
	if (u == 1 && (s[0] == '\t' || (s[0] == '\r' && n == 1 && keep_cr)))
		return 0;
	return u;
}

int
quote_line(FILE *f, const char *line, size_t len, int keep_cr,
    size_t *escaped)
{
	const unsigned char	*s = (const unsigned char *)line;
	size_t			 i = 0, start = 0, u, k;
	uint32_t		 cp;

	while (i < len) {
		if ((u = quote_text_unsafe(s + i, len - i, keep_cr)) == 0) {
			k = quote_utf8_len(s + i, len - i, &cp);
			i += k > 0 ? k : 1;
			continue;
		}
		if (fwrite(s + start, 1, i - start, f) != i - start)
			return -1;
		for (k = 0; k < u; k++)
			if (fprintf(f, "\\x%02x", s[i + k]) < 0)
				return -1;
		if (escaped != NULL)
			*escaped += u;
		i += u;
		start = i;
	}
	return fwrite(s + start, 1, len - start, f) == len - start ? 0 : -1;
}

int
quote_text(FILE *f, const char *line, size_t len, size_t *escaped)
{
	return quote_line(f, line, len, 1, escaped);
}

char *
quote_text_dup(const char *msg)
{
	FILE	*f;
	char	*buf = NULL;
	size_t	 len = 0;

	if ((f = open_memstream(&buf, &len)) == NULL)
		return NULL;
	if (quote_line(f, msg, strlen(msg), 0, NULL) == -1) {
		fclose(f);
		free(buf);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(buf);
		return NULL;
	}
	return buf;
}
