/*
 * fuzz_urlpath.c: urlpath_normalize() on arbitrary bytes (cut at the
 * first NUL). Invariants: a result fits the input's length, is printable
 * ASCII, starts with '/', holds no ';', '\' or dot segment, no segment
 * of only dots and spaces or with a dot and an escape outside ASCII or a
 * ':' (raw or "%3A"), no "::$", no escape of '.', '/', '\', ';' or '%' or
 * of a Unicode lookalike of '.', '/' or '\' in its path part, and
 * normalizes to itself; a refusal leaves the output empty and says why.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "urlpath.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	check_path(const char *, size_t);
static void	check_slash(const char *, char *, char *, size_t);
static int	dots_segment(const char *, size_t);

/*
 * 1 when a segment is only dots and "%20", with a dot, or has a dot and
 * an escape of a byte outside ASCII or a colon (raw or "%3A").
 */
static int
dots_segment(const char *s, size_t n)
{
	size_t	i = 0;
	int	dots = 0, other = 0, high = 0;

	for (;;) {
		if (i == n || s[i] == '/') {
			if (dots && (!other || high))
				return 1;
			if (i == n)
				return 0;
			dots = other = high = 0;
			i++;
		} else if (s[i] == '.') {
			dots = 1;
			i++;
		} else if (n - i >= 3 && strncmp(s + i, "%20", 3) == 0)
			i += 3;
		else {
			if (s[i] == '%' && n - i >= 3 && (strchr(
			    "89ABCDEFabcdef", s[i + 1]) != NULL ||
			    strncasecmp(s + i, "%3A", 3) == 0))
				high = 1;
			if (s[i] == ':')
				high = 1;
			other = 1;
			i++;
		}
	}
}

/* The path part of a normalized result holds nothing ambiguous. */
static void
check_path(const char *s, size_t n)
{
	static const char *const bad[] = {
		"%2e", "%2f", "%5c", "%3b", "%25", "/./", "/../",
		/* lookalikes of '.', '/', '\' (urlpath.c) */
		"%E2%80%A4", "%E2%80%A5", "%E2%80%A6", "%E2%84%80",
		"%E2%84%81", "%E2%84%85", "%E2%84%86", "%E2%88%95",
		"%E2%88%96", "%EF%B8%99", "%EF%B8%B0", "%EF%B9%92",
		"%EF%B9%A8", "%EF%BC%8E", "%EF%BC%8F", "%EF%BC%BC",
		"%C2%A5", "%E2%82%A9", "%E2%81%84", "%E2%A7%B8", "%E3%80%82",
		"%EF%BD%A1", "%EF%BD%A5", "::$", ".:", ":.", ".%3A", "%3A."
	};
	char	seg[8];
	size_t	i, j;

	for (i = 0; i < n; i++) {
		if (s[i] == ';' || s[i] == '\\')
			abort();
		for (j = 0; j < sizeof(bad) / sizeof(bad[0]); j++)
			if (n - i >= strlen(bad[j]) &&
			    strncasecmp(s + i, bad[j], strlen(bad[j])) == 0)
				abort();
	}
	if (dots_segment(s, n))
		abort();
	for (j = 0; j < 2; j++) {
		snprintf(seg, sizeof(seg), j ? "/.." : "/.");
		if (n >= strlen(seg) && strncmp(s + n - strlen(seg), seg,
		    strlen(seg)) == 0)
			abort();
	}
}

/*
 * urlpath_normalize_slash: a result normalizes to itself, and read as a
 * server that decodes "%2F" reads it ("/" for each), holds nothing
 * ambiguous either.
 */
static void
check_slash(const char *in, char *out, char *again, size_t len)
{
	const char	*cause = NULL, *q;
	size_t		 i, o, n;

	if (urlpath_normalize_slash(in, out, len + 1, &cause) == -1) {
		if (cause == NULL || out[0] != '\0')
			abort();
		return;
	}
	if (urlpath_normalize_slash(out, again, len + 1, &cause) != 0 ||
	    strcmp(out, again) != 0)
		abort();
	q = strchr(out, '?');
	n = q != NULL ? (size_t)(q - out) : strlen(out);
	for (i = o = 0; i < n; o++) {
		if (n - i >= 3 && strncmp(out + i, "%2F", 3) == 0) {
			again[o] = '/';
			i += 3;
		} else
			again[o] = out[i++];
	}
	check_path(again, o);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char		*in, *out, *again;
	const char	*cause = NULL, *q;
	size_t		 len, i;

	if ((in = malloc(size + 1)) == NULL)
		return 0;
	memcpy(in, data, size);
	in[size] = '\0';
	len = strlen(in);
	out = malloc(len + 1);
	again = malloc(len + 1);
	if (out == NULL || again == NULL)
		abort();
	if (urlpath_normalize(in, out, len + 1, &cause) == 0) {
		if (strlen(out) > len || out[0] != '/')
			abort();
		for (i = 0; out[i] != '\0'; i++)
			if ((unsigned char)out[i] < 0x20 ||
			    (unsigned char)out[i] > 0x7e)
				abort();
		q = strchr(out, '?');
		check_path(out, q != NULL ? (size_t)(q - out) : strlen(out));
		if (urlpath_normalize(out, again, len + 1, &cause) != 0 ||
		    strcmp(out, again) != 0)
			abort();
	} else if (cause == NULL || out[0] != '\0')
		abort();
	check_slash(in, out, again, len);
	free(in);
	free(out);
	free(again);
	return 0;
}
