/* http.c: HTTP/1.x framing for the egress proxy; see http.h. */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "reason.h"
#include "sglimits.h"
#include "util.h"

/* Largest chunk size accepted: 2^59 - 1, so size << 4 never overflows. */
#define CHUNK_SIZE_MAX		((UINT64_C(1) << 59) - 1)

/* Every status a parse error carries. */
#define ST_BAD			400
#define ST_URI_LONG		414
#define ST_FIELDS_LARGE		431
#define ST_INTERNAL		500
#define ST_NOT_IMPL		501
#define ST_BAD_GATEWAY		502
#define ST_VERSION		505

/* Offsets into the buffer of the parts of a request line. */
struct reqline {
	size_t			mlen;		/* method: [0, mlen) */
	size_t			toff, tlen;	/* request-target */
	int			minor;
	enum http_target_form	form;
	size_t			aoff, alen;	/* authority, if any */
	size_t			poff, plen;	/* path and query, if any */
};

/* Offsets of the parts of a status line. */
struct statline {
	int	minor;
	int	status;
	size_t	roff, rlen;	/* reason phrase */
};

/*
 * One field line of a head, where it lies in the buffer being parsed:
 * the name, and the value trimmed of OWS (neither NUL-terminated).
 */
struct field {
	const char	*name;
	size_t		 nlen;
	const char	*value;
	size_t		 vlen;
};

/* The field lines of one head (fields_scan(), then fields_split()). */
struct fields {
	size_t		n;
	struct field	f[SG_HTTP_HEADERS_MAX];
};

/* What the fields of a head say about framing and the connection. */
struct framing {
	int64_t		content_length;
	int		chunked;
	int		te_seen;
	int		te_other;	/* a coding other than chunked */
	int		conn_close;
	int		conn_keep_alive;
	int		expect_continue;
	const struct field *host;
};

/* A request head checked in place: everything but the copies. */
struct reqhead {
	struct reqline			rl;
	struct fields			fl;
	struct framing			fr;
	struct http_request_view	v;
};

/* One piece of a start line the forwarded-head builder joins. */
struct part {
	const char	*p;
	size_t		 n;
};

/* Growable output string of the builders. */
struct obuf {
	char	*p;
	size_t	 len;
	size_t	 cap;
	int	 failed;
};

/* Chunked scanner states. */
enum {
	CH_SIZE0,	/* first hex digit of a chunk-size */
	CH_SIZE,	/* further hex digits */
	CH_SIZE_BWS,	/* whitespace after the size, before ';' */
	CH_EXT,		/* chunk extensions up to CR */
	CH_SIZE_LF,	/* LF ending the chunk-size line */
	CH_DATA,	/* chunk data */
	CH_DATA_CR,	/* CR after data */
	CH_DATA_LF,	/* LF after data */
	CH_TRAILER0,	/* start of a trailer field or of the final CRLF */
	CH_TNAME,	/* trailer field name */
	CH_TVALUE,	/* trailer field value up to CR */
	CH_TLF,		/* LF ending a trailer field */
	CH_FINAL_LF,	/* LF of the final CRLF */
	CH_DONE,
	CH_ERROR
};

static int	is_tchar(unsigned char);
static int	is_vchar(unsigned char);
static int	is_field_char(unsigned char);
static int	is_ows(unsigned char);
static int	ieq(const char *, size_t, const char *, size_t);
static int	fail(int *, const char **, int, const char *);
static int	line_find(const char *, size_t, size_t, size_t *);
static enum http_parse fields_scan(const char *, size_t, size_t, size_t *,
		    struct fields *, int *, const char **);
static int	version_scan(const char *, size_t, int, int *, int *,
		    const char **);
static int	reqline_scan(const char *, size_t, int, struct reqline *,
		    int *, const char **);
static int	target_classify(const char *, struct reqline *, int *,
		    const char **);
static int	absolute_split(const char *, struct reqline *, int *,
		    const char **);
static int	statline_scan(const char *, size_t, int, struct statline *,
		    const char **);
static int	fields_split(struct fields *, int *, const char **);
static int	field_split(struct field *, int *, const char **);
static int	field_value_ok(const char *, size_t);
static char	*fields_copy(const struct fields *, size_t,
		    struct http_header **, char **);
static int	list_next(const char **, const char *, const char **,
		    size_t *);
static int	framing_scan(const struct fields *, int, int,
		    struct framing *, int *, const char **);
static int	framing_field(const struct field *, int, struct framing *,
		    int *, const char **);
static int	content_length_parse(const char *, size_t, int64_t *);
static int	te_scan(const struct field *, struct framing *, int *,
		    const char **);
static int	connection_scan(const struct field *, struct framing *,
		    int *, const char **);
static enum http_body body_framing(int, int64_t);
static int	framing_keep_alive(int, const struct framing *);
static int	hop_by_hop(const struct http_header *, const size_t *,
		    size_t, const struct http_header *);
static char	*line_put(char **, const char *, size_t);
static void	reqline_copy(const char *, const struct reqline *, char *,
		    struct http_request *);
static enum http_parse request_line(const char *, size_t, struct reqline *,
		    size_t *, int *, const char **);
static enum http_parse request_scan(const char *, size_t, struct reqhead *,
		    int *, const char **);
static enum http_parse status_line(const char *, size_t, struct statline *,
		    size_t *, const char **);
static void	obuf_add(struct obuf *, const char *, size_t);
static void	obuf_str(struct obuf *, const char *);
static void	obuf_fmt(struct obuf *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	obuf_safe(struct obuf *, const char *, int);
static char	*obuf_finish(struct obuf *, size_t *);
static char	*head_forward(const struct part *, size_t, const char *,
		    const struct http_header *, size_t,
		    const struct http_header *, int, size_t *);
static char	*mem_put(char *, const void *, size_t);
static void	proxy_status_add(struct obuf *, const char *, const char *);
static int	chunked_size_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_bws_byte(struct http_chunked *, unsigned char,
		    const char **);
static int	chunked_trailer_byte(struct http_chunked *, unsigned char,
		    const char **);

/*
 * Byte classes of the grammar, one table lookup each (the parsers look
 * at every byte of a head):
 *   CT_TCHAR  tchar: "!#$%&'*+-.^_`|~" / DIGIT / ALPHA (RFC 9110 5.6.2)
 *   CT_VCHAR  VCHAR: 0x21..0x7e
 *   CT_FIELD  a byte of a field value: VCHAR, obs-text (0x80..0xff), SP,
 *             HTAB
 */
#define CT_TCHAR	0x01
#define CT_VCHAR	0x02
#define CT_FIELD	0x04
static const unsigned char http_ctype[256] = {
	/* 00 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0,
	/* 10 */ 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	/* 20 */ 4, 7, 6, 7, 7, 7, 7, 7, 6, 6, 7, 7, 6, 7, 7, 6,
	/* 30 */ 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 6, 6, 6,
	/* 40 */ 6, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	/* 50 */ 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 7, 7,
	/* 60 */ 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7,
	/* 70 */ 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 7, 6, 7, 6, 7, 0,
	/* 80 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* 90 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* a0 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* b0 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* c0 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* d0 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* e0 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
	/* f0 */ 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4,
};

static int
is_tchar(unsigned char c)
{
	return http_ctype[c] & CT_TCHAR;
}

static int
is_vchar(unsigned char c)
{
	return http_ctype[c] & CT_VCHAR;
}

static int
is_field_char(unsigned char c)
{
	return http_ctype[c] & CT_FIELD;
}

static int
is_ows(unsigned char c)
{
	return c == ' ' || c == '\t';
}

/*
 * Case-insensitive (ASCII) equality of a counted string with a lowercase
 * one: the names of fields and tokens the parser knows.
 */
static int
ieq(const char *s, size_t n, const char *lower, size_t ln)
{
	size_t	i;
	char	c;

	if (n != ln)
		return 0;
	for (i = 0; i < n; i++) {
		c = s[i];
		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (c != lower[i])
			return 0;
	}
	return 1;
}

/* ieq() with a string literal; the lengths are compared first. */
#define IEQ(s, n, lit)	((n) == sizeof(lit) - 1 && \
			    ieq((s), (n), (lit), sizeof(lit) - 1))

static long	b64_decode(const char *, size_t, unsigned char *, size_t);

/* Set the error outputs; always returns -1. */
static int
fail(int *status, const char **cause, int st, const char *why)
{
	if (status != NULL)
		*status = st;
	*cause = why;
	return -1;
}

/*
 * Find the LF ending the line that starts at off, looking in [off, lim).
 * Returns 1 with *eol at the CR before it, 0 when there is none yet, -1
 * for a bare LF (not preceded by CR on the same line).
 */
static int
line_find(const char *buf, size_t off, size_t lim, size_t *eol)
{
	const char	*lf;
	size_t		 pos;

	if (off >= lim)
		return 0;
	lf = memchr(buf + off, '\n', lim - off);
	if (lf == NULL)
		return 0;
	pos = (size_t)(lf - buf);
	if (pos == off || buf[pos - 1] != '\r')
		return -1;
	*eol = pos - 1;
	return 1;
}

/*
 * Walk the field lines from off to the empty line ending the head, within
 * the first SG_HTTP_HEAD_MAX bytes. Counts the fields and refuses bare LF
 * and too many fields before the head is complete. Each line found is
 * noted in fl (name = the line, nlen = its length without CRLF) for
 * fields_split().
 */
static enum http_parse
fields_scan(const char *buf, size_t len, size_t off, size_t *head_len,
    struct fields *fl, int *status, const char **cause)
{
	size_t	lim = len < SG_HTTP_HEAD_MAX ? len : SG_HTTP_HEAD_MAX;
	size_t	eol, n = 0;
	int	r;

	for (;;) {
		r = line_find(buf, off, lim, &eol);
		if (r < 0) {
			fail(status, cause, ST_BAD, "bare lf in head");
			return HTTP_PARSE_ERROR;
		}
		if (r == 0) {
			if (len >= SG_HTTP_HEAD_MAX) {
				fail(status, cause, ST_FIELDS_LARGE,
				    "head too large");
				return HTTP_PARSE_ERROR;
			}
			return HTTP_PARSE_MORE;
		}
		if (eol == off)
			break;
		if (n == SG_HTTP_HEADERS_MAX) {
			fail(status, cause, ST_FIELDS_LARGE,
			    "too many header fields");
			return HTTP_PARSE_ERROR;
		}
		fl->f[n].name = buf + off;
		fl->f[n].nlen = eol - off;
		n++;
		off = eol + 2;
	}
	*head_len = eol + 2;
	fl->n = n;
	return HTTP_PARSE_OK;
}

/*
 * HTTP-version = "HTTP" "/" DIGIT "." DIGIT (case-sensitive). p holds n
 * bytes of it; with complete == 0 a valid prefix is enough. Returns 0
 * (minor set when complete), or -1: 400 for bad syntax, 505 for a
 * well-formed version other than 1.0 and 1.1.
 */
static int
version_scan(const char *p, size_t n, int complete, int *minor,
    int *status, const char **cause)
{
	static const char	pat[] = "HTTP/d.d";
	size_t			i;

	/* What nearly every head says, decided at once. */
	if (n == 8 && memcmp(p, "HTTP/1.", 7) == 0 &&
	    (p[7] == '0' || p[7] == '1')) {
		*minor = p[7] - '0';
		return 0;
	}
	if (n > 8 || (complete && n < 8))
		return fail(status, cause, ST_BAD, "invalid http version");
	for (i = 0; i < n; i++) {
		if (pat[i] == 'd' ? (p[i] < '0' || p[i] > '9') :
		    p[i] != pat[i])
			return fail(status, cause, ST_BAD,
			    "invalid http version");
	}
	if (n < 8)
		return 0;
	if (p[5] != '1' || (p[7] != '0' && p[7] != '1'))
		return fail(status, cause, ST_VERSION,
		    "http version not supported");
	*minor = p[7] - '0';
	return 0;
}

/*
 * request-line = method SP request-target SP HTTP-version
 * method = token; request-target = 1*VCHAR (checked further by
 * target_classify()); exactly one SP between the parts. p holds the n
 * bytes of the line without CRLF; with complete == 0 it is what has
 * arrived so far and a valid prefix is enough.
 */
static int
reqline_scan(const char *p, size_t n, int complete, struct reqline *rl,
    int *status, const char **cause)
{
	size_t	i = 0;

	while (i < n && is_tchar((unsigned char)p[i]))
		i++;
	if (i == n)
		return complete ? fail(status, cause, ST_BAD,
		    "invalid request line") : 0;
	if (p[i] != ' ' || i == 0)
		return fail(status, cause, ST_BAD, "invalid method");
	rl->mlen = i++;
	rl->toff = i;
	while (i < n && is_vchar((unsigned char)p[i]))
		i++;
	if (i == n)
		return complete ? fail(status, cause, ST_BAD,
		    "invalid request line") : 0;
	if (p[i] != ' ' || i == rl->toff)
		return fail(status, cause, ST_BAD, "invalid request-target");
	rl->tlen = i - rl->toff;
	if (target_classify(p, rl, status, cause) == -1)
		return -1;
	i++;
	return version_scan(p + i, n - i, complete, &rl->minor, status,
	    cause);
}

/*
 * Decide the form of the request-target (RFC 9112 section 3.2): CONNECT
 * takes authority-form and only that; '*' only with OPTIONS; '/' starts
 * origin-form; otherwise it must be an absolute "http://" URI.
 */
static int
target_classify(const char *p, struct reqline *rl, int *status,
    const char **cause)
{
	const char	*t = p + rl->toff;
	size_t		 tlen = rl->tlen;
	int		 connect;

	connect = rl->mlen == 7 && memcmp(p, "CONNECT", 7) == 0;
	if (memchr(t, '#', tlen) != NULL)
		return fail(status, cause, ST_BAD,
		    "fragment in request-target");
	if (connect) {
		if (t[0] == '/' || t[0] == '*' || memchr(t, '/', tlen) ||
		    memchr(t, '?', tlen))
			return fail(status, cause, ST_BAD,
			    "connect needs authority-form");
		rl->form = HTTP_TARGET_AUTHORITY;
		rl->aoff = rl->toff;
		rl->alen = tlen;
		return 0;
	}
	if (tlen == 1 && t[0] == '*') {
		if (rl->mlen != 7 || memcmp(p, "OPTIONS", 7) != 0)
			return fail(status, cause, ST_BAD,
			    "asterisk-form needs options");
		rl->form = HTTP_TARGET_ASTERISK;
		rl->poff = rl->toff;
		rl->plen = 1;
		return 0;
	}
	if (t[0] == '/') {
		rl->form = HTTP_TARGET_ORIGIN;
		rl->poff = rl->toff;
		rl->plen = tlen;
		return 0;
	}
	return absolute_split(p, rl, status, cause);
}

/*
 * absolute-form: "http://" authority [ path-abempty ] [ "?" query ]; the
 * scheme is case-insensitive. Any other scheme (or none) is refused.
 */
static int
absolute_split(const char *p, struct reqline *rl, int *status,
    const char **cause)
{
	const char	*t = p + rl->toff;
	size_t		 tlen = rl->tlen, i;

	for (i = 0; i < tlen && t[i] != ':' && t[i] != '/'; i++)
		;
	if (i == tlen || t[i] != ':')
		return fail(status, cause, ST_BAD, "invalid request-target");
	if (tlen < i + 3 || t[i + 1] != '/' || t[i + 2] != '/')
		return fail(status, cause, ST_BAD,
		    "authority-form needs connect");
	if (i != 4 || strncasecmp(t, "http", 4) != 0)
		return fail(status, cause, ST_BAD, "unsupported uri scheme");
	for (i = 7; i < tlen && t[i] != '/' && t[i] != '?'; i++)
		;
	if (i == 7)
		return fail(status, cause, ST_BAD, "empty authority");
	rl->form = HTTP_TARGET_ABSOLUTE;
	rl->aoff = rl->toff + 7;
	rl->alen = i - 7;
	rl->poff = rl->toff + i;
	rl->plen = tlen - i;
	return 0;
}

/*
 * status-line = HTTP-version SP status-code SP [ reason-phrase ]
 * status-code = 3DIGIT; reason-phrase = *( HTAB / SP / VCHAR / obs-text ).
 * Lenient: "HTTP/1.1 200" without the second SP is accepted.
 */
static int
statline_scan(const char *p, size_t n, int complete, struct statline *sl,
    const char **cause)
{
	size_t	i, vn = n < 8 ? n : 8;

	if (version_scan(p, vn, complete || n > 8, &sl->minor, NULL,
	    cause) == -1)
		return -1;
	if (n <= 8)
		return complete ? fail(NULL, cause, 0,
		    "invalid status line") : 0;
	if (p[8] != ' ')
		return fail(NULL, cause, 0, "invalid status line");
	sl->status = 0;
	for (i = 9; i < n && i < 12; i++) {
		if (p[i] < '0' || p[i] > '9')
			return fail(NULL, cause, 0, "invalid status code");
		sl->status = sl->status * 10 + (p[i] - '0');
	}
	if (i < 12)
		return complete ? fail(NULL, cause, 0,
		    "invalid status code") : 0;
	if (sl->status < 100)
		return fail(NULL, cause, 0, "invalid status code");
	if (n > 12 && p[12] != ' ')
		return fail(NULL, cause, 0, "invalid status code");
	sl->roff = n > 12 ? 13 : 12;
	sl->rlen = n - sl->roff;
	for (i = sl->roff; i < n; i++) {
		if (!is_field_char((unsigned char)p[i]))
			return fail(NULL, cause, 0, "invalid reason phrase");
	}
	return 0;
}

/*
 * Check each field line fields_scan() found and split it into name and
 * value, in place.
 */
static int
fields_split(struct fields *fl, int *status, const char **cause)
{
	size_t	i;

	for (i = 0; i < fl->n; i++) {
		if (field_split(&fl->f[i], status, cause) == -1)
			return -1;
	}
	return 0;
}

/*
 * field-line = field-name ":" OWS field-value OWS. The name is a token
 * with no whitespace before ':'; a line starting with SP or HTAB is
 * obs-fold. f holds the whole line (without CRLF) on entry, the name and
 * the trimmed value on return.
 */
static int
field_split(struct field *f, int *status, const char **cause)
{
	const char	*line = f->name;
	size_t		 n = f->nlen, i = 0, v, e;

	if (n > 0 && is_ows((unsigned char)line[0]))
		return fail(status, cause, ST_BAD, "obsolete line folding");
	while (i < n && is_tchar((unsigned char)line[i]))
		i++;
	if (i == 0 || i == n || line[i] != ':')
		return fail(status, cause, ST_BAD, "invalid field name");
	if (!field_value_ok(line + i + 1, n - i - 1))
		return fail(status, cause, ST_BAD,
		    "control character in field value");
	for (v = i + 1; v < n && is_ows((unsigned char)line[v]); v++)
		;
	for (e = n; e > v && is_ows((unsigned char)line[e - 1]); e--)
		;
	f->nlen = i;
	f->value = line + v;
	f->vlen = e - v;
	return 0;
}

/*
 * 1 when each of the n bytes at p may be in a field value. Eight bytes
 * at a time: a word without a byte below 0x20 and without 0x7f holds
 * none that is_field_char() refuses (the two tests are exact, see "Bit
 * Twiddling Hacks", hasless() and haszero()); a word that has one (often
 * just an HTAB) is looked at byte by byte.
 */
static int
field_value_ok(const char *p, size_t n)
{
	const uint64_t	ones = UINT64_C(0x0101010101010101);
	const uint64_t	highs = UINT64_C(0x8080808080808080);
	uint64_t	w, d;
	size_t		i = 0, k;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		d = w ^ (ones * 0x7f);
		if ((((w - ones * 0x20) & ~w) | ((d - ones) & ~d)) & highs) {
			for (k = 0; k < 8; k++)
				if (!is_field_char((unsigned char)p[i + k]))
					return 0;
		}
	}
	for (; i < n; i++)
		if (!is_field_char((unsigned char)p[i]))
			return 0;
	return 1;
}

/*
 * Copy the fields into one allocation: the array of n headers, each name
 * and value NUL-terminated, then extra bytes for the caller at *tail.
 * Returns the allocation (free it alone), or NULL when out of memory.
 */
static char *
fields_copy(const struct fields *fl, size_t extra,
    struct http_header **hdrsp, char **tail)
{
	struct http_header	*h;
	const struct field	*f;
	size_t			 i, size = fl->n * sizeof(*h) + extra;
	char			*store, *p;

	for (i = 0; i < fl->n; i++)
		size += fl->f[i].nlen + fl->f[i].vlen + 2;
	if ((store = malloc(size > 0 ? size : 1)) == NULL)
		return NULL;
	h = (struct http_header *)(void *)store;
	p = store + fl->n * sizeof(*h);
	for (i = 0; i < fl->n; i++) {
		f = &fl->f[i];
		h[i].name_len = f->nlen;
		h[i].value_len = f->vlen;
		h[i].name = line_put(&p, f->name, f->nlen);
		h[i].value = line_put(&p, f->value, f->vlen);
	}
	*hdrsp = h;
	*tail = p;
	return store;
}

/*
 * Next element of a comma-separated list (RFC 9110 section 5.6.1) in
 * [*cur, end) with OWS trimmed. Returns 1 with *elem and *elen set
 * (possibly empty), 0 at the end.
 */
static int
list_next(const char **cur, const char *end, const char **elem,
    size_t *elen)
{
	const char	*p = *cur, *e;

	if (p == NULL)
		return 0;
	while (p < end && is_ows((unsigned char)*p))
		p++;
	e = p < end ? memchr(p, ',', (size_t)(end - p)) : NULL;
	*cur = e != NULL ? e + 1 : NULL;
	if (e == NULL)
		e = end;
	while (e > p && is_ows((unsigned char)e[-1]))
		e--;
	*elem = p;
	*elen = (size_t)(e - p);
	return 1;
}

/*
 * Work out framing, Host and connection handling from the fields, and
 * refuse every ambiguous combination. request selects the rules that
 * differ between requests and responses.
 */
static int
framing_scan(const struct fields *fl, int request, int minor,
    struct framing *fr, int *status, const char **cause)
{
	const struct field	*f;
	size_t			 i;

	memset(fr, 0, sizeof(*fr));
	fr->content_length = -1;
	for (i = 0; i < fl->n; i++) {
		if (framing_field(&fl->f[i], request, fr, status, cause) == -1)
			return -1;
	}
	if (fr->te_seen && fr->content_length >= 0)
		return fail(status, cause, ST_BAD,
		    "both content-length and transfer-encoding");
	if (fr->te_seen && minor == 0)
		return fail(status, cause, ST_BAD,
		    "transfer-encoding in http/1.0");
	if (request && minor == 1 && fr->host == NULL)
		return fail(status, cause, ST_BAD, "missing host header");
	for (i = 0; i < fl->n; i++) {
		f = &fl->f[i];
		if (IEQ(f->name, f->nlen, "connection") &&
		    connection_scan(f, fr, status, cause) == -1)
			return -1;
	}
	if (request && fr->te_seen && !fr->chunked)
		return fail(status, cause, ST_BAD,
		    "transfer-encoding chunked not last");
	if (request && fr->te_other)
		return fail(status, cause, ST_NOT_IMPL,
		    "unsupported transfer-coding");
	return 0;
}

/* Handle one field for framing_scan(). */
static int
framing_field(const struct field *f, int request, struct framing *fr,
    int *status, const char **cause)
{
	int64_t	cl;

	if (IEQ(f->name, f->nlen, "content-length")) {
		if (content_length_parse(f->value, f->vlen, &cl) == -1)
			return fail(status, cause, ST_BAD,
			    "invalid content-length");
		/* A response may repeat the very same value. */
		if (fr->content_length >= 0 &&
		    (request || cl != fr->content_length))
			return fail(status, cause, ST_BAD,
			    "duplicate content-length");
		fr->content_length = cl;
	} else if (IEQ(f->name, f->nlen, "transfer-encoding")) {
		if (te_scan(f, fr, status, cause) == -1)
			return -1;
	} else if (request && IEQ(f->name, f->nlen, "host")) {
		if (fr->host != NULL)
			return fail(status, cause, ST_BAD,
			    "duplicate host header");
		fr->host = f;
	} else if (request && IEQ(f->name, f->nlen, "expect")) {
		if (IEQ(f->value, f->vlen, "100-continue"))
			fr->expect_continue = 1;
	}
	return 0;
}

/* Content-Length = 1*DIGIT, at most INT64_MAX. Returns 0 or -1. */
static int
content_length_parse(const char *s, size_t n, int64_t *out)
{
	int64_t	v = 0;
	size_t	i;

	if (n == 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v > (INT64_MAX - (s[i] - '0')) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/*
 * One Transfer-Encoding field; several fields form one list. chunked
 * after chunked, or anything after chunked, is refused here; the rest
 * (chunked missing, other codings) is judged by framing_scan() once every
 * field is seen. fr->chunked says whether the list so far ends in chunked.
 */
static int
te_scan(const struct field *f, struct framing *fr, int *status,
    const char **cause)
{
	const char	*cur = f->value, *end = f->value + f->vlen, *e;
	size_t		 elen;

	while (list_next(&cur, end, &e, &elen)) {
		if (elen == 0)
			return fail(status, cause, ST_BAD,
			    "invalid transfer-encoding");
		if (fr->chunked)
			return fail(status, cause, ST_BAD,
			    IEQ(e, elen, "chunked") ?
			    "transfer-encoding chunked twice" :
			    "transfer-encoding chunked not last");
		if (IEQ(e, elen, "chunked"))
			fr->chunked = 1;
		else
			fr->te_other = 1;
		fr->te_seen = 1;
	}
	if (!fr->te_seen)
		return fail(status, cause, ST_BAD, "invalid transfer-encoding");
	return 0;
}

/*
 * Connection = #connection-option (tokens). Notes close and keep-alive,
 * and refuses naming a framing field or Host, which would strip it from
 * the forwarded head.
 */
static int
connection_scan(const struct field *f, struct framing *fr, int *status,
    const char **cause)
{
	const char	*cur = f->value, *end = f->value + f->vlen, *e;
	size_t		 elen, i;

	while (list_next(&cur, end, &e, &elen)) {
		if (elen == 0)
			continue;
		for (i = 0; i < elen; i++) {
			if (!is_tchar((unsigned char)e[i]))
				return fail(status, cause, ST_BAD,
				    "invalid connection header");
		}
		if (IEQ(e, elen, "close"))
			fr->conn_close = 1;
		else if (IEQ(e, elen, "keep-alive"))
			fr->conn_keep_alive = 1;
		else if (IEQ(e, elen, "content-length") ||
		    IEQ(e, elen, "transfer-encoding") ||
		    IEQ(e, elen, "host"))
			return fail(status, cause, ST_BAD,
			    "connection header names a framing field");
	}
	return 0;
}

void
http_request_init(struct http_request *req)
{
	memset(req, 0, sizeof(*req));
	req->content_length = -1;
}

void
http_request_release(struct http_request *req)
{
	if (req == NULL)
		return;
	free(req->store);
	http_request_init(req);
}

/* Copy n bytes to *p as a C string and move *p past it; returns it. */
static char *
line_put(char **p, const char *s, size_t n)
{
	char	*d = *p;

	memcpy(d, s, n);
	d[n] = '\0';
	*p += n + 1;
	return d;
}

/* The bytes reqline_copy() needs. */
#define REQLINE_SIZE(rl)	((rl)->mlen + (rl)->tlen + (rl)->alen + \
				    (rl)->plen + 5)

/*
 * Copy the request line's parts into req, at p (REQLINE_SIZE bytes of the
 * request's one allocation).
 */
static void
reqline_copy(const char *buf, const struct reqline *rl, char *p,
    struct http_request *req)
{
	const char	*path = buf + rl->poff;
	int		 auth = rl->form == HTTP_TARGET_ABSOLUTE ||
			    rl->form == HTTP_TARGET_AUTHORITY;

	req->method = line_put(&p, buf, rl->mlen);
	req->target = line_put(&p, buf + rl->toff, rl->tlen);
	req->form = rl->form;
	req->version_minor = rl->minor;
	if (auth)
		req->authority = line_put(&p, buf + rl->aoff, rl->alen);
	if (rl->form == HTTP_TARGET_AUTHORITY)
		return;
	if (rl->plen == 0 || path[0] == '?') {
		/* "http://h" -> "/", "http://h?q" -> "/?q" */
		req->path = p;
		p[0] = '/';
		memcpy(p + 1, path, rl->plen);
		p[rl->plen + 1] = '\0';
	} else
		req->path = line_put(&p, path, rl->plen);
}

/*
 * Check the request line: complete (eol found) or the prefix buffered so
 * far. Returns HTTP_PARSE_OK once the line is complete and valid.
 */
static enum http_parse
request_line(const char *buf, size_t len, struct reqline *rl, size_t *eolp,
    int *status, const char **cause)
{
	size_t	lim = len < SG_HTTP_LINE_MAX + 2 ? len : SG_HTTP_LINE_MAX + 2;
	size_t	n;
	int	r;

	r = line_find(buf, 0, lim, eolp);
	if (r < 0) {
		fail(status, cause, ST_BAD, len > 0 && buf[0] == '\n' ?
		    "empty line before request line" : "bare lf in head");
		return HTTP_PARSE_ERROR;
	}
	if (r == 0) {
		n = lim;
		if (n > 0 && buf[n - 1] == '\r')
			n--;
		if (reqline_scan(buf, n, 0, rl, status, cause) == -1)
			return HTTP_PARSE_ERROR;
		if (lim < SG_HTTP_LINE_MAX + 2)
			return HTTP_PARSE_MORE;
		fail(status, cause, ST_URI_LONG, "request line too long");
		return HTTP_PARSE_ERROR;
	}
	if (*eolp == 0) {
		fail(status, cause, ST_BAD, "empty line before request line");
		return HTTP_PARSE_ERROR;
	}
	if (reqline_scan(buf, *eolp, 1, rl, status, cause) == -1)
		return HTTP_PARSE_ERROR;
	if (*eolp > SG_HTTP_LINE_MAX) {
		fail(status, cause, ST_URI_LONG, "request line too long");
		return HTTP_PARSE_ERROR;
	}
	return HTTP_PARSE_OK;
}

/* Whether the connection stays open after this message. */
static int
framing_keep_alive(int minor, const struct framing *fr)
{
	return minor == 1 ? !fr->conn_close :
	    fr->conn_keep_alive && !fr->conn_close;
}

/*
 * Every check of a request head, on the bytes where they lie: the request
 * line, the field lines, the framing. Nothing is copied; h->v says what
 * was found (empty unless the result is OK).
 */
static enum http_parse
request_scan(const char *buf, size_t len, struct reqhead *h, int *status,
    const char **cause)
{
	struct http_request_view	*v = &h->v;
	size_t				 eol, head_len;
	enum http_parse			 r;

	*status = 0;
	*cause = NULL;
	memset(&h->rl, 0, sizeof(h->rl));
	memset(v, 0, sizeof(*v));
	v->content_length = -1;
	h->fl.n = 0;
	if (len == 0)
		return HTTP_PARSE_MORE;
	r = request_line(buf, len, &h->rl, &eol, status, cause);
	if (r != HTTP_PARSE_OK)
		return r;
	r = fields_scan(buf, len, eol + 2, &head_len, &h->fl, status, cause);
	if (r != HTTP_PARSE_OK)
		return r;
	if (fields_split(&h->fl, status, cause) == -1 ||
	    framing_scan(&h->fl, 1, h->rl.minor, &h->fr, status, cause) == -1)
		return HTTP_PARSE_ERROR;
	v->form = h->rl.form;
	v->version_minor = h->rl.minor;
	if (h->rl.form == HTTP_TARGET_ABSOLUTE ||
	    h->rl.form == HTTP_TARGET_AUTHORITY) {
		v->authority = buf + h->rl.aoff;
		v->authority_len = h->rl.alen;
	}
	if (h->fr.host != NULL) {
		v->host = h->fr.host->value;
		v->host_len = h->fr.host->vlen;
	}
	v->content_length = h->fr.content_length;
	v->chunked = h->fr.chunked;
	v->keep_alive = framing_keep_alive(h->rl.minor, &h->fr);
	v->expect_100_continue = h->rl.minor == 1 && h->fr.expect_continue;
	v->head_len = head_len;
	return HTTP_PARSE_OK;
}

enum http_parse
http_request_scan(const char *buf, size_t len, struct http_request_view *v,
    int *status, const char **cause)
{
	struct reqhead	h;
	enum http_parse	r;

	r = request_scan(buf, len, &h, status, cause);
	*v = h.v;
	return r;
}

enum http_parse
http_request_parse(const char *buf, size_t len, struct http_request *req,
    int *status, const char **cause)
{
	struct reqhead	h;
	enum http_parse	r;
	char		*tail;

	http_request_init(req);
	if ((r = request_scan(buf, len, &h, status, cause)) != HTTP_PARSE_OK)
		return r;
	req->store = fields_copy(&h.fl, REQLINE_SIZE(&h.rl), &req->headers,
	    &tail);
	if (req->store == NULL) {
		fail(status, cause, ST_INTERNAL, "out of memory");
		return HTTP_PARSE_ERROR;
	}
	req->nheaders = h.fl.n;
	reqline_copy(buf, &h.rl, tail, req);
	if (h.fr.host != NULL)
		req->host = req->headers[h.fr.host - h.fl.f].value;
	req->content_length = h.v.content_length;
	req->chunked = h.v.chunked;
	req->keep_alive = h.v.keep_alive;
	req->expect_100_continue = h.v.expect_100_continue;
	req->head_len = h.v.head_len;
	return HTTP_PARSE_OK;
}

/* Body framing from a head's chunked flag and Content-Length. */
static enum http_body
body_framing(int chunked, int64_t content_length)
{
	if (chunked)
		return HTTP_BODY_CHUNKED;
	if (content_length > 0)
		return HTTP_BODY_LENGTH;
	return HTTP_BODY_NONE;
}

enum http_body
http_request_body(const struct http_request *req)
{
	return body_framing(req->chunked, req->content_length);
}

enum http_body
http_request_view_body(const struct http_request_view *v)
{
	return body_framing(v->chunked, v->content_length);
}

void
http_response_init(struct http_response *resp)
{
	memset(resp, 0, sizeof(*resp));
	resp->content_length = -1;
}

void
http_response_release(struct http_response *resp)
{
	if (resp == NULL)
		return;
	free(resp->store);
	http_response_init(resp);
}

/* Check the status line, complete or the prefix buffered so far. */
static enum http_parse
status_line(const char *buf, size_t len, struct statline *sl, size_t *eolp,
    const char **cause)
{
	size_t	lim = len < SG_HTTP_LINE_MAX + 2 ? len : SG_HTTP_LINE_MAX + 2;
	size_t	n;
	int	r;

	r = line_find(buf, 0, lim, eolp);
	if (r < 0) {
		*cause = "bare lf in head";
		return HTTP_PARSE_ERROR;
	}
	if (r == 0) {
		n = lim;
		if (n > 0 && buf[n - 1] == '\r')
			n--;
		if (statline_scan(buf, n, 0, sl, cause) == -1)
			return HTTP_PARSE_ERROR;
		if (lim < SG_HTTP_LINE_MAX + 2)
			return HTTP_PARSE_MORE;
		*cause = "status line too long";
		return HTTP_PARSE_ERROR;
	}
	if (statline_scan(buf, *eolp, 1, sl, cause) == -1)
		return HTTP_PARSE_ERROR;
	if (*eolp > SG_HTTP_LINE_MAX) {
		*cause = "status line too long";
		return HTTP_PARSE_ERROR;
	}
	if (sl->status == 101) {
		*cause = "unexpected switching protocols";
		return HTTP_PARSE_ERROR;
	}
	return HTTP_PARSE_OK;
}

enum http_parse
http_response_parse(const char *buf, size_t len, struct http_response *resp,
    int *status, const char **cause)
{
	struct statline	sl;
	struct framing	fr;
	struct fields	fl;
	size_t		eol, head_len;
	enum http_parse	r;
	char		*tail;

	http_response_init(resp);
	*status = 0;
	*cause = NULL;
	memset(&sl, 0, sizeof(sl));
	fl.n = 0;
	if (len == 0)
		return HTTP_PARSE_MORE;
	r = status_line(buf, len, &sl, &eol, cause);
	if (r == HTTP_PARSE_OK)
		r = fields_scan(buf, len, eol + 2, &head_len, &fl, NULL,
		    cause);
	if (r != HTTP_PARSE_OK)
		goto out;
	r = HTTP_PARSE_ERROR;
	if (fields_split(&fl, NULL, cause) == -1 ||
	    framing_scan(&fl, 0, sl.minor, &fr, NULL, cause) == -1)
		goto out;
	resp->store = fields_copy(&fl, sl.rlen + 1, &resp->headers, &tail);
	if (resp->store == NULL) {
		*cause = "out of memory";
		goto out;
	}
	resp->nheaders = fl.n;
	resp->reason = line_put(&tail, buf + sl.roff, sl.rlen);
	resp->reason_len = sl.rlen;
	resp->version_minor = sl.minor;
	resp->status = sl.status;
	resp->content_length = fr.content_length;
	resp->chunked = fr.chunked;
	resp->keep_alive = framing_keep_alive(sl.minor, &fr);
	resp->head_len = head_len;
	return HTTP_PARSE_OK;
out:
	if (r == HTTP_PARSE_ERROR) {
		*status = ST_BAD_GATEWAY;
		http_response_release(resp);
	}
	return r;
}

enum http_body
http_response_body(const struct http_response *resp, const char *req_method)
{
	if (req_method != NULL && strcmp(req_method, "HEAD") == 0)
		return HTTP_BODY_NONE;
	if (resp->status < 200 || resp->status == 204 || resp->status == 304)
		return HTTP_BODY_NONE;
	if (req_method != NULL && strcmp(req_method, "CONNECT") == 0 &&
	    resp->status < 300)
		return HTTP_BODY_NONE;
	if (resp->chunked)
		return HTTP_BODY_CHUNKED;
	if (resp->content_length >= 0)
		return HTTP_BODY_LENGTH;
	return HTTP_BODY_CLOSE;
}

/* Append n bytes; on allocation failure mark the buffer failed. */
static void
obuf_add(struct obuf *b, const char *p, size_t n)
{
	size_t	 cap;
	char	*np;

	if (b->failed)
		return;
	if (b->len + n + 1 > b->cap) {
		cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		np = realloc(b->p, cap);
		if (np == NULL) {
			b->failed = 1;
			return;
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
obuf_str(struct obuf *b, const char *s)
{
	obuf_add(b, s, strlen(s));
}

static void
obuf_fmt(struct obuf *b, const char *fmt, ...)
{
	char	tmp[128];
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(tmp)) {
		b->failed = 1;
		return;
	}
	obuf_add(b, tmp, (size_t)n);
}

/*
 * Append s with control bytes replaced by '?'; with quoted, also escape
 * '"' and '\' for an RFC 9110 quoted-string.
 */
static void
obuf_safe(struct obuf *b, const char *s, int quoted)
{
	char	c;

	for (; *s != '\0'; s++) {
		c = *s;
		if ((unsigned char)c < 0x20 || c == 0x7f)
			c = '?';
		if (quoted && (c == '"' || c == '\\'))
			obuf_add(b, "\\", 1);
		obuf_add(b, &c, 1);
	}
}

/* Return the built string, or NULL (and free it) if anything failed. */
static char *
obuf_finish(struct obuf *b, size_t *lenp)
{
	if (b->failed || b->p == NULL) {
		free(b->p);
		return NULL;
	}
	if (lenp != NULL)
		*lenp = b->len;
	return b->p;
}

/*
 * Hop-by-hop: the fields RFC 9110 section 7.6.1 lists, every Proxy-*
 * field, and every field the Connection fields name (h[conn[0..nconn)]).
 */
static int
hop_by_hop(const struct http_header *h, const size_t *conn, size_t nconn,
    const struct http_header *f)
{
	const char	*name = f->name, *cur, *end, *e;
	size_t		 nlen = f->name_len, i, elen;

	if (IEQ(name, nlen, "connection") || IEQ(name, nlen, "keep-alive") ||
	    IEQ(name, nlen, "te") || IEQ(name, nlen, "trailer") ||
	    IEQ(name, nlen, "upgrade"))
		return 1;
	if (nlen >= 6 && IEQ(name, 6, "proxy-"))
		return 1;
	for (i = 0; i < nconn; i++) {
		cur = h[conn[i]].value;
		end = cur + h[conn[i]].value_len;
		while (list_next(&cur, end, &e, &elen)) {
			if (elen == nlen && strncasecmp(e, name, nlen) == 0)
				return 1;
		}
	}
	return 0;
}

/*
 * A forwarded head, built in one allocation of its exact size:
 *   the start line (nparts parts) "\r\n"
 *   ["Host: " host "\r\n"]	(host not NULL)
 *   the end-to-end fields of h, each "name: value\r\n", but those named
 *   as set is
 *   [set's "name: value\r\n"]	(set not NULL)
 *   ["Connection: close\r\n" or "Connection: keep-alive\r\n"] (flags)
 *   "\r\n"
 */
static char *
head_forward(const struct part *parts, size_t nparts, const char *host,
    const struct http_header *h, size_t n, const struct http_header *set,
    int flags, size_t *lenp)
{
	static const char	close_f[] = "Connection: close\r\n";
	static const char	keep_f[] = "Connection: keep-alive\r\n";
	const char		*conn = NULL;
	size_t			 i, size = 2 + 2 + 1, hlen = 0, clen = 0;
	unsigned char		 drop[SG_HTTP_HEADERS_MAX];
	size_t			 cf[SG_HTTP_HEADERS_MAX], ncf = 0;
	char			*out, *p;

	if (n > SG_HTTP_HEADERS_MAX)
		return NULL;
	if (flags & HTTP_FWD_CLOSE)
		conn = close_f, clen = sizeof(close_f) - 1;
	else if (flags & HTTP_FWD_KEEP_ALIVE)
		conn = keep_f, clen = sizeof(keep_f) - 1;
	size += clen;
	for (i = 0; i < nparts; i++)
		size += parts[i].n;
	if (host != NULL) {
		hlen = strlen(host);
		size += 6 + hlen + 2;
	}
	/* The Connection fields, found once (the list each field is held to). */
	for (i = 0; i < n; i++)
		if (IEQ(h[i].name, h[i].name_len, "connection"))
			cf[ncf++] = i;
	for (i = 0; i < n; i++) {
		drop[i] = (unsigned char)(hop_by_hop(h, cf, ncf, &h[i]) ||
		    (set != NULL && h[i].name_len == set->name_len &&
		    strncasecmp(h[i].name, set->name, set->name_len) == 0));
		if (!drop[i])
			size += h[i].name_len + 2 + h[i].value_len + 2;
	}
	if (set != NULL)
		size += set->name_len + 2 + set->value_len + 2;
	if ((out = malloc(size)) == NULL)
		return NULL;
	p = out;
	for (i = 0; i < nparts; i++)
		p = mem_put(p, parts[i].p, parts[i].n);
	p = mem_put(p, "\r\n", 2);
	if (host != NULL) {
		p = mem_put(p, "Host: ", 6);
		p = mem_put(p, host, hlen);
		p = mem_put(p, "\r\n", 2);
	}
	for (i = 0; i < n; i++) {
		if (drop[i])
			continue;
		p = mem_put(p, h[i].name, h[i].name_len);
		p = mem_put(p, ": ", 2);
		p = mem_put(p, h[i].value, h[i].value_len);
		p = mem_put(p, "\r\n", 2);
	}
	if (set != NULL) {
		p = mem_put(p, set->name, set->name_len);
		p = mem_put(p, ": ", 2);
		p = mem_put(p, set->value, set->value_len);
		p = mem_put(p, "\r\n", 2);
	}
	p = mem_put(p, conn, clen);
	p = mem_put(p, "\r\n", 2);
	*p = '\0';
	if (lenp != NULL)
		*lenp = (size_t)(p - out);
	return out;
}

/* Copy n bytes to p; returns the end. */
static char *
mem_put(char *p, const void *s, size_t n)
{
	if (n > 0)
		memcpy(p, s, n);
	return p + n;
}

char *
http_request_forward(const struct http_request *req, int flags,
    size_t *lenp)
{
	return http_request_forward_set(req, flags, NULL, lenp);
}

char *
http_request_forward_set(const struct http_request *req, int flags,
    const struct http_header *set, size_t *lenp)
{
	struct part	parts[4];
	char		ver[32];

	if (req->method == NULL || req->path == NULL)
		return NULL;
	parts[0].p = req->method;
	parts[0].n = strlen(req->method);
	parts[1].p = " ";
	parts[1].n = 1;
	parts[2].p = req->path;
	parts[2].n = strlen(req->path);
	if (req->version_minor == 0 || req->version_minor == 1)
		parts[3].p = req->version_minor == 0 ? " HTTP/1.0" :
		    " HTTP/1.1";
	else {
		snprintf(ver, sizeof(ver), " HTTP/1.%d", req->version_minor);
		parts[3].p = ver;
	}
	parts[3].n = strlen(parts[3].p);
	return head_forward(parts, 4, req->host == NULL ? req->authority :
	    NULL, req->headers, req->nheaders, set, flags, lenp);
}

char *
http_response_forward(const struct http_response *resp, int flags,
    size_t *lenp)
{
	struct part	parts[4];
	char		code[16];

	if (resp->status >= 100 && resp->status <= 999) {
		code[0] = (char)('0' + resp->status / 100);
		code[1] = (char)('0' + resp->status / 10 % 10);
		code[2] = (char)('0' + resp->status % 10);
		code[3] = '\0';
	} else
		snprintf(code, sizeof(code), "%03d", resp->status);
	parts[0].p = "HTTP/1.1 ";
	parts[0].n = 9;
	parts[1].p = code;
	parts[1].n = strlen(code);
	parts[2].p = " ";
	parts[2].n = 1;
	parts[3].p = resp->reason != NULL ? resp->reason : "";
	parts[3].n = strlen(parts[3].p);
	return head_forward(parts, 4, NULL, resp->headers, resp->nheaders,
	    NULL, flags, lenp);
}

const char http_trailer_refused[] = "a trailer field, where trailers are "
    "refused";

void
http_chunked_init(struct http_chunked *ch)
{
	memset(ch, 0, sizeof(*ch));
	ch->state = CH_SIZE0;
}

/*
 * One byte of a chunk-size line:
 *   chunk-size [ chunk-ext ] CRLF
 *   chunk-ext = *( BWS ";" BWS ext-name [ BWS "=" BWS ext-val ] )
 * Extensions are checked for allowed bytes only; they are forwarded
 * verbatim and ignored.
 */
static int
chunked_size_byte(struct http_chunked *ch, unsigned char c,
    const char **cause)
{
	int	d;

	if (++ch->line_len > SG_HTTP_CHUNK_LINE_MAX)
		return fail(NULL, cause, 0, "chunk size line too long");
	switch (ch->state) {
	case CH_SIZE0:
	case CH_SIZE:
		d = util_hexval(c);
		if (d >= 0) {
			if (ch->remaining > (CHUNK_SIZE_MAX >> 4))
				return fail(NULL, cause, 0,
				    "chunk size too large");
			ch->remaining = (ch->remaining << 4) | (uint64_t)d;
			ch->state = CH_SIZE;
			return 0;
		}
		if (ch->state == CH_SIZE0)
			return fail(NULL, cause, 0, "invalid chunk size");
		return chunked_bws_byte(ch, c, cause);
	case CH_SIZE_BWS:
		return chunked_bws_byte(ch, c, cause);
	case CH_EXT:
		if (c == '\r')
			ch->state = CH_SIZE_LF;
		else if (!is_field_char(c))
			return fail(NULL, cause, 0, "invalid chunk extension");
		return 0;
	default:	/* CH_SIZE_LF */
		if (c != '\n')
			return fail(NULL, cause, 0,
			    "bare cr in chunk size line");
		ch->line_len = 0;
		ch->state = ch->remaining == 0 ? CH_TRAILER0 : CH_DATA;
		return 0;
	}
}

/* After the chunk-size digits: BWS, then ';' and extensions, or CR. */
static int
chunked_bws_byte(struct http_chunked *ch, unsigned char c,
    const char **cause)
{
	if (c == ';')
		ch->state = CH_EXT;
	else if (c == '\r')
		ch->state = CH_SIZE_LF;
	else if (is_ows(c))
		ch->state = CH_SIZE_BWS;
	else
		return fail(NULL, cause, 0, "invalid chunk size");
	return 0;
}

/*
 * One byte of the trailer section: *( field-line CRLF ) CRLF. Returns 1
 * when the final CRLF is complete, 0 to go on, -1 on error.
 */
static int
chunked_trailer_byte(struct http_chunked *ch, unsigned char c,
    const char **cause)
{
	if (++ch->trailer_len > SG_HTTP_HEAD_MAX)
		return fail(NULL, cause, 0, "trailer section too large");
	switch (ch->state) {
	case CH_TRAILER0:
		if (c == '\r')
			ch->state = CH_FINAL_LF;
		else if (ch->no_trailers)
			return fail(NULL, cause, 0, http_trailer_refused);
		else if (is_tchar(c))
			ch->state = CH_TNAME;
		else
			return fail(NULL, cause, 0, "invalid trailer field");
		return 0;
	case CH_TNAME:
		if (c == ':')
			ch->state = CH_TVALUE;
		else if (!is_tchar(c))
			return fail(NULL, cause, 0, "invalid trailer field");
		return 0;
	case CH_TVALUE:
		if (c == '\r')
			ch->state = CH_TLF;
		else if (!is_field_char(c))
			return fail(NULL, cause, 0, "invalid trailer field");
		return 0;
	case CH_TLF:
		if (c != '\n')
			return fail(NULL, cause, 0, "bare cr in trailer");
		ch->state = CH_TRAILER0;
		return 0;
	default:	/* CH_FINAL_LF */
		if (c != '\n')
			return fail(NULL, cause, 0, "bare cr after trailers");
		ch->state = CH_DONE;
		return 1;
	}
}

enum http_parse
http_chunked_scan(struct http_chunked *ch, const char *buf, size_t len,
    size_t *consumed, const char **cause)
{
	size_t		i = 0, skip;
	unsigned char	c;
	int		r;

	*consumed = 0;
	*cause = NULL;
	if (ch->state == CH_DONE)
		return HTTP_PARSE_OK;
	while (i < len && ch->state != CH_ERROR) {
		if (ch->state == CH_DATA) {
			skip = len - i;
			if ((uint64_t)skip > ch->remaining)
				skip = (size_t)ch->remaining;
			ch->remaining -= skip;
			i += skip;
			if (ch->remaining == 0)
				ch->state = CH_DATA_CR;
			continue;
		}
		c = (unsigned char)buf[i++];
		r = 0;
		if (ch->state == CH_DATA_CR || ch->state == CH_DATA_LF) {
			if (c != (ch->state == CH_DATA_CR ? '\r' : '\n'))
				r = fail(NULL, cause, 0,
				    "missing crlf after chunk data");
			ch->state = ch->state == CH_DATA_CR ? CH_DATA_LF :
			    CH_SIZE0;
		} else if (ch->state <= CH_SIZE_LF)
			r = chunked_size_byte(ch, c, cause);
		else
			r = chunked_trailer_byte(ch, c, cause);
		if (r == -1)
			ch->state = CH_ERROR;
		else if (r == 1) {
			*consumed = i;
			return HTTP_PARSE_OK;
		}
	}
	if (ch->state == CH_ERROR) {
		if (*cause == NULL)
			*cause = "invalid chunked body";
		return HTTP_PARSE_ERROR;
	}
	*consumed = len;
	return HTTP_PARSE_MORE;
}

const char *
http_status_phrase(int status)
{
	switch (status) {
	case 200: return "OK";
	case 400: return "Bad Request";
	case 403: return "Forbidden";
	case 405: return "Method Not Allowed";
	case 407: return "Proxy Authentication Required";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 414: return "URI Too Long";
	case 417: return "Expectation Failed";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 501: return "Not " "Implemented";	/* RFC 9110 */
	case 502: return "Bad Gateway";
	case 503: return "Service Unavailable";
	case 504: return "Gateway Timeout";
	case 505: return "HTTP Version Not Supported";
	default: return "Unknown";
	}
}

/* Proxy-Status: sandgate; error=E[; details="D"] (RFC 9209). */
static void
proxy_status_add(struct obuf *b, const char *error, const char *details)
{
	obuf_str(b, "Proxy-Status: sandgate; error=");
	obuf_safe(b, error, 0);
	if (details != NULL) {
		obuf_str(b, "; details=\"");
		obuf_safe(b, details, 1);
		obuf_add(b, "\"", 1);
	}
	obuf_add(b, "\r\n", 2);
}

char *
http_block_response(int status, const char *message, enum sg_reason reason,
    const char *proxy_error, int keep_alive, size_t *lenp)
{
	struct obuf	b = { NULL, 0, 0, 0 };
	struct obuf	body = { NULL, 0, 0, 0 };

	if (status < 100 || status > 999)
		return NULL;
	obuf_safe(&body, message, 0);
	obuf_str(&body, "\n" SG_BLOCK_ADVICE "\n");
	if (body.failed) {
		free(body.p);
		return NULL;
	}
	obuf_fmt(&b, "HTTP/1.1 %d ", status);
	obuf_safe(&b, message, 0);
	obuf_str(&b, "\r\nContent-Type: text/plain; charset=utf-8\r\n");
	obuf_fmt(&b, "Content-Length: %zu\r\n", body.len);
	proxy_status_add(&b, proxy_error, message);
	obuf_fmt(&b, "X-Sandgate-Reason: %s\r\n", reason_code(reason));
	obuf_str(&b, keep_alive ? "Connection: keep-alive\r\n\r\n" :
	    "Connection: close\r\n\r\n");
	obuf_add(&b, body.p, body.len);
	free(body.p);
	return obuf_finish(&b, lenp);
}

char *
http_error_response(int status, const char *proxy_error,
    const char *details, int keep_alive, size_t *lenp)
{
	struct obuf	b = { NULL, 0, 0, 0 };
	struct obuf	body = { NULL, 0, 0, 0 };
	const char	*phrase = http_status_phrase(status);

	if (status < 100 || status > 999)
		return NULL;
	obuf_str(&body, "sandgate: ");
	obuf_safe(&body, details != NULL ? details : phrase, 0);
	obuf_add(&body, "\n", 1);
	obuf_fmt(&b, "HTTP/1.1 %d %s\r\n", status, phrase);
	obuf_str(&b, "Content-Type: text/plain; charset=utf-8\r\n");
	obuf_fmt(&b, "Content-Length: %zu\r\n", body.len);
	proxy_status_add(&b, proxy_error, details);
	obuf_str(&b, keep_alive ? "Connection: keep-alive\r\n\r\n" :
	    "Connection: close\r\n\r\n");
	if (body.failed)
		b.failed = 1;
	else
		obuf_add(&b, body.p, body.len);
	free(body.p);
	return obuf_finish(&b, lenp);
}

/* Standard base64 with padding into out[size]; length or -1. */
static long
b64_decode(const char *s, size_t n, unsigned char *out, size_t size)
{
	static const char	 alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				    "abcdefghijklmnopqrstuvwxyz0123456789+/";
	const char		*c;
	unsigned long		 acc = 0;
	size_t			 i, len = 0, pad = 0;

	if (n == 0 || n % 4 != 0)
		return -1;
	for (i = 0; i < n; i++) {
		if (s[i] == '=' && i >= n - 2) {
			pad++;
			acc <<= 6;
		} else if (pad == 0 && s[i] != '\0' &&
		    (c = strchr(alpha, s[i])) != NULL)
			acc = acc << 6 | (unsigned long)(c - alpha);
		else
			return -1;
		if (i % 4 != 3)
			continue;
		if (len + 3 > size)
			return -1;
		out[len++] = (unsigned char)(acc >> 16);
		out[len++] = (unsigned char)(acc >> 8);
		out[len++] = (unsigned char)acc;
		acc = 0;
	}
	return (long)(len - pad);
}

long
http_proxy_password(const struct http_request *req, char *out, size_t size)
{
	const struct http_header	*h = NULL;
	unsigned char			 dec[HTTP_PASSWORD_MAX + 256];
	const unsigned char		*pw;
	size_t				 i, n = 0;
	long				 len;

	out[0] = '\0';
	for (i = 0; i < req->nheaders; i++) {
		if (ieq(req->headers[i].name, req->headers[i].name_len,
		    "proxy-authorization", 19)) {
			h = &req->headers[i];
			n++;
		}
	}
	if (n != 1 || h->value_len < 7 || !ieq(h->value, 6, "basic ", 6))
		return -1;
	len = b64_decode(h->value + 6, h->value_len - 6, dec, sizeof(dec));
	if (len <= 0)
		return -1;
	pw = memchr(dec, ':', (size_t)len);
	if (pw == NULL)
		return -1;
	pw++;
	n = (size_t)len - (size_t)(pw - dec);
	if (n == 0 || n >= size || memchr(pw, '\0', n) != NULL)
		return -1;
	memcpy(out, pw, n);
	out[n] = '\0';
	return (long)n;
}

int
http_proxy_credential(const struct http_request *req, char *out)
{
	char	pw[HTTP_PASSWORD_MAX + 1];
	long	n;
	size_t	i;

	out[0] = '\0';
	n = http_proxy_password(req, pw, sizeof(pw));
	if (n < 32 || n > HTTP_CREDENTIAL_MAX)
		return -1;
	for (i = 0; i < (size_t)n; i++) {
		if (!isdigit((unsigned char)pw[i]) &&
		    (pw[i] < 'a' || pw[i] > 'f'))
			return -1;
	}
	memcpy(out, pw, (size_t)n + 1);
	return 0;
}
