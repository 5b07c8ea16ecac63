/* urlpath.c: request paths for `paths` rules; see urlpath.h. */
#include <string.h>
#include <strings.h>

#include "urlpath.h"
#include "util.h"

static int	urlpath_unreserved(unsigned char);
static int	urlpath_decode(const char *, const char *, unsigned char *);
static int	urlpath_utf8(const char *, const char *, size_t *,
		    unsigned long *);
static int	urlpath_lookalike(unsigned long);
static int	urlpath_dots(const char *, size_t);
static int	urlpath_dotlike(const char *, size_t);
static int	urlpath_segment(const char *, size_t, const char **);
static size_t	urlpath_hex(unsigned char, char *);
static size_t	urlpath_char(const char *, const char *, char *,
		    const char **);
static int	urlpath_fail(char *, size_t, const char **, const char *);
static int	urlpath_read(const char *, char *, size_t, int, const char **);

/* RFC 3986 2.3 unreserved, without ".": decoded where escaped. */
static int
urlpath_unreserved(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
	    (c >= '0' && c <= '9') || c == '-' || c == '_' || c == '~';
}

/* The byte of "%XX" at p (p < end); -1 when it is not one. */
static int
urlpath_decode(const char *p, const char *end, unsigned char *byte)
{
	int	hi, lo;

	if (end - p < 3 || p[0] != '%')
		return -1;
	hi = util_hexval((unsigned char)p[1]);
	lo = util_hexval((unsigned char)p[2]);
	if (hi < 0 || lo < 0)
		return -1;
	*byte = (unsigned char)(hi << 4 | lo);
	return 0;
}

/*
 * A run of escapes at p starting with a byte >= 0x80 must be one valid
 * UTF-8 sequence: *n is its length in bytes of text, *cpp its code
 * point. 0 or -1.
 */
static int
urlpath_utf8(const char *p, const char *end, size_t *n, unsigned long *cpp)
{
	unsigned char	b[4];
	size_t		len, i;
	unsigned long	cp;

	if (urlpath_decode(p, end, &b[0]) == -1)
		return -1;
	if (b[0] >= 0xc2 && b[0] <= 0xdf)
		len = 2;
	else if (b[0] >= 0xe0 && b[0] <= 0xef)
		len = 3;
	else if (b[0] >= 0xf0 && b[0] <= 0xf4)
		len = 4;
	else
		return -1;	/* continuation byte, or overlong 0xc0/0xc1 */
	cp = b[0] & (0x7f >> len);
	for (i = 1; i < len; i++) {
		if (urlpath_decode(p + 3 * i, end, &b[i]) == -1 ||
		    (b[i] & 0xc0) != 0x80)
			return -1;
		cp = cp << 6 | (b[i] & 0x3f);
	}
	if ((len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return -1;
	*n = 3 * len;
	*cpp = cp;
	return 0;
}

/*
 * 1 for a code point a server may fold to '.', '/' or '\': those whose
 * NFKC form is only dots (U+2024 one dot leader, U+2025, U+2026, U+FE19,
 * U+FE30, U+FE52 small full stop, U+FF0E fullwidth full stop) or holds a
 * slash or backslash (U+2100, U+2101, U+2105, U+2106 "a/c" and the like,
 * U+FE68, U+FF0F, U+FF3C), and the slashes Windows' best-fit mapping
 * folds (U+2215 division slash, U+2216 set minus, and U+00A5 yen and
 * U+20A9 won sign, '\' in the Japanese and Korean code pages), and the
 * confusables of '/' and '.' (UTS #39: U+2044 fraction slash, U+29F8 big
 * solidus, U+3002 ideographic full stop, U+FF61 and U+FF65 halfwidth
 * ones). "%EF%BC%8E%EF%BC%8E" is ".." to a Java or .NET stack that
 * applies NFKC, not to us. Lookalikes next to a '.' that a normalizer
 * removes (soft hyphen, zero-width space) are urlpath_dotlike's.
 */
static int
urlpath_lookalike(unsigned long cp)
{
	static const unsigned long	like[] = {
		0x00a5, 0x2024, 0x2025, 0x2026, 0x2044, 0x20a9, 0x2100,
		0x2101, 0x2105, 0x2106, 0x2215, 0x2216, 0x29f8, 0x3002,
		0xfe19, 0xfe30, 0xfe52, 0xfe68, 0xff0e, 0xff0f, 0xff3c,
		0xff61, 0xff65
	};
	size_t				i;

	for (i = 0; i < sizeof(like) / sizeof(like[0]); i++)
		if (like[i] == cp)
			return 1;
	return 0;
}

/*
 * 1 for a normalized segment of dots and spaces ("%20", or '+', which a
 * server that form-decodes its path reads as one) with a dot: Windows
 * trims trailing dots and spaces from a segment, so "..%20", "..+" and
 * "..." are ".." there.
 */
static int
urlpath_dots(const char *seg, size_t len)
{
	size_t	i = 0;
	int	dots = 0;

	while (i < len) {
		if (seg[i] == '.') {
			dots = 1;
			i++;
		} else if (len - i >= 3 && strncmp(seg + i, "%20", 3) == 0)
			i += 3;
		else if (seg[i] == '+')
			i++;
		else
			return 0;
	}
	return dots;
}

/*
 * 1 for a normalized segment with "::$", or with a '.' and an escaped
 * byte >= 0x80, a ':' (raw or "%3A") or an escaped '?' or '#' ("%3F",
 * "%23": a server that decodes, then cuts the path there, reads "..%3F"
 * as ".."): a normalizer that drops a
 * default-ignorable or combining code point (".%C2%AD.", ".%E2%80%8B."),
 * trims a no-break space ("..%C2%A0") or a best-fit mapping no list
 * foresees makes a dot segment of it, as Windows does of an NTFS stream
 * suffix ("..::$INDEX_ALLOCATION", "..:$I30:$INDEX_ALLOCATION"), also
 * behind a server that decodes "%3A" first. Names with a dot are ASCII
 * and colon-free in what `paths` serves (packages, repositories, files).
 */
static int
urlpath_dotlike(const char *seg, size_t len)
{
	size_t	i;
	int	dot = 0, odd = 0;

	for (i = 0; i < len; i++) {
		if (seg[i] == '.')
			dot = 1;
		else if (seg[i] == ':' && len - i >= 3 &&
		    strncmp(seg + i, "::$", 3) == 0)
			return 1;
		else if (seg[i] == ':')
			odd = 1;
		else if (seg[i] == '%' && len - i >= 3 &&
		    (util_hexval((unsigned char)seg[i + 1]) >= 8 ||
		    strncasecmp(seg + i, "%3A", 3) == 0 ||
		    strncasecmp(seg + i, "%3F", 3) == 0 ||
		    strncmp(seg + i, "%23", 3) == 0))
			odd = 1;
	}
	return dot && odd;
}

/* A segment (between slashes) of the normalized path. 0 or -1. */
static int
urlpath_segment(const char *seg, size_t len, const char **cause)
{
	if ((len == 1 && seg[0] == '.') ||
	    (len == 2 && seg[0] == '.' && seg[1] == '.')) {
		*cause = "dot segment in path";
		return -1;
	}
	if (urlpath_dots(seg, len)) {
		*cause = "path segment of only dots and spaces";
		return -1;
	}
	if (urlpath_dotlike(seg, len)) {
		*cause = "path segment with '.' and an escape outside ASCII, "
		    "a ':' (an NTFS stream) or an escaped '?' or '#'";
		return -1;
	}
	return 0;
}

/* "%XX" for b at out, hex in upper case: 3 bytes. */
static size_t
urlpath_hex(unsigned char b, char *out)
{
	static const char	hexd[] = "0123456789ABCDEF";

	out[0] = '%';
	out[1] = hexd[b >> 4];
	out[2] = hexd[b & 0xf];
	return 3;
}

/*
 * The escapes of one UTF-8 character at p, copied to out in upper case:
 * their length, or 0 (*cause set) for invalid UTF-8 or a lookalike.
 */
static size_t
urlpath_char(const char *p, const char *end, char *out, const char **cause)
{
	unsigned long	cp;
	unsigned char	b = 0;	/* each escape was decoded by urlpath_utf8 */
	size_t		n, i;

	if (urlpath_utf8(p, end, &n, &cp) == -1) {
		*cause = "overlong or invalid UTF-8 in path";
		return 0;
	}
	if (urlpath_lookalike(cp)) {
		*cause = "Unicode lookalike of '.', '/' or '\\' in path";
		return 0;
	}
	for (i = 0; i < n; i += 3) {
		urlpath_decode(p + i, end, &b);
		urlpath_hex(b, out + i);
	}
	return n;
}

static int
urlpath_fail(char *out, size_t size, const char **cause, const char *why)
{
	if (size > 0)
		out[0] = '\0';
	*cause = why;
	return -1;
}

int
urlpath_normalize(const char *in, char *out, size_t size,
    const char **cause)
{
	return urlpath_read(in, out, size, 0, cause);
}

int
urlpath_normalize_slash(const char *in, char *out, size_t size,
    const char **cause)
{
	return urlpath_read(in, out, size, 1, cause);
}

/*
 * urlpath_normalize, or with slash set urlpath_normalize_slash: "%2F"
 * is kept (as data) and still ends a segment for the segment checks, so
 * a server that decodes it before routing reads no dot segment either.
 */
static int
urlpath_read(const char *in, char *out, size_t size, int slash,
    const char **cause)
{
	const char		*p = in, *end, *q;
	size_t			 o = 0, seg = 0, n;
	unsigned char		 b;

	q = strchr(in, '?');
	end = q != NULL ? q : in + strlen(in);
	if (size < strlen(in) + 1)
		return urlpath_fail(out, size, cause, "path too long");
	if (*p != '/')
		return urlpath_fail(out, size, cause, "path does not start "
		    "with /");
	while (p < end) {
		b = (unsigned char)*p;
		if (b == '/') {
			if (urlpath_segment(out + seg, o - seg, cause) == -1)
				return urlpath_fail(out, size, cause, *cause);
			out[o++] = '/';
			seg = o;
			p++;
			continue;
		}
		if (b == ';')
			return urlpath_fail(out, size, cause, "';' in path");
		if (b == '\\')
			return urlpath_fail(out, size, cause, "backslash in "
			    "path");
		if (b < 0x21 || b > 0x7e)
			return urlpath_fail(out, size, cause, "byte outside "
			    "ASCII in path");
		if (b != '%') {
			out[o++] = (char)b;
			p++;
			continue;
		}
		if (urlpath_decode(p, end, &b) == -1)
			return urlpath_fail(out, size, cause, "invalid "
			    "percent-encoding in path");
		if (b == '/' && slash) {
			if (urlpath_segment(out + seg, o - seg, cause) == -1)
				return urlpath_fail(out, size, cause, *cause);
			o += urlpath_hex(b, out + o);
			seg = o;
			p += 3;
			continue;
		}
		if (b == '.' || b == '/' || b == '\\' || b == ';' ||
		    b == '%')
			return urlpath_fail(out, size, cause, "percent-encoded "
			    "'.', '/', '\\', ';' or '%' in path");
		if (b < 0x20 || b == 0x7f)
			return urlpath_fail(out, size, cause, "percent-encoded "
			    "control character in path");
		if (b >= 0x80) {
			if ((n = urlpath_char(p, end, out + o, cause)) == 0)
				return urlpath_fail(out, size, cause, *cause);
			p += n;
			o += n;
			continue;
		}
		if (urlpath_unreserved(b))
			out[o++] = (char)b;
		else
			o += urlpath_hex(b, out + o);
		p += 3;
	}
	if (urlpath_segment(out + seg, o - seg, cause) == -1)
		return urlpath_fail(out, size, cause, *cause);
	/* The query, as it was (a request line holds nothing else). */
	for (n = 0; end[n] != '\0'; n++)
		if ((unsigned char)end[n] < 0x21 || (unsigned char)end[n] > 0x7e)
			return urlpath_fail(out, size, cause, "byte outside "
			    "ASCII in query");
	memcpy(out + o, end, n + 1);
	return 0;
}

int
urlpath_match(const char *path, const char *prefix)
{
	if (strchr(prefix, '?') != NULL)
		return strcmp(path, prefix) == 0;
	return strncmp(path, prefix, strlen(prefix)) == 0;
}
