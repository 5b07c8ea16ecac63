/*
 * host.c: normalization of host names and authorities; see host.h.
 *
 * The order matters: raw bytes are screened first (control characters,
 * zone ids, userinfo), IPv6 is recognised by its brackets or colons, IDNs
 * go through UTS #46, and only then is the ASCII result lowercased,
 * stripped of its trailing dot and checked for an IPv4 spelling. UTS #46
 * maps fullwidth digits and ideographic full stops to ASCII ones, so the
 * IPv4 check has to see the converted name, not the input.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>

#include <idn2.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

/* Room for an IPv6 literal inside brackets, with slack for a bad one. */
#define HOST_V6_TEXT_MAX	64

static int	host_screen(const char *, size_t, const char **);
static int	host_parse_v6(const char *, size_t, struct host *,
		    const char **);
static int	host_utf8_valid(const unsigned char *, size_t);
static int	host_to_ascii(const char *, size_t, char *, size_t,
		    const char **);
static int	host_finish_ascii(char *, struct host *, const char **);
static int	host_ends_in_number(const char *, size_t);
static int	host_parse_v4_part(const char *, size_t, uint32_t *);
static int	host_parse_v4(const char *, size_t, struct in_addr *);
static int	host_check_labels(const char *, size_t, const char **);
static int	host_parse_port(const char *, size_t, uint16_t *,
		    const char **);
static char	*host_put_uint(char *, unsigned);
static void	host_v4_name(const struct in_addr *, char *);

/* Refuse bytes that never belong in a host, before any conversion. */
static int
host_screen(const char *in, size_t len, const char **cause)
{
	size_t		i;
	unsigned char	c;

	if (len == 0) {
		*cause = "empty host name";
		return -1;
	}
	if (len > SG_HOST_INPUT_MAX) {
		*cause = "host name too long";
		return -1;
	}
	for (i = 0; i < len; i++) {
		c = (unsigned char)in[i];
		if (c == '\0') {
			*cause = "host name has a NUL byte";
			return -1;
		}
		if (c <= ' ' || c == 0x7f) {
			*cause = "host name has a control or space character";
			return -1;
		}
		if (c == '%') {
			*cause = "host name has a zone id";
			return -1;
		}
		if (c == '@') {
			*cause = "host name has userinfo";
			return -1;
		}
	}
	return 0;
}

/* An IPv6 literal, bare or in brackets, printed back by inet_ntop. */
static int
host_parse_v6(const char *in, size_t len, struct host *out,
    const char **cause)
{
	char	text[HOST_V6_TEXT_MAX];
	int	bracketed = in[0] == '[';

	if (bracketed) {
		if (len < 2 || in[len - 1] != ']') {
			*cause = "unbalanced brackets in host name";
			return -1;
		}
		in++;
		len -= 2;
	}
	if (len == 0 || len >= sizeof(text)) {
		*cause = "invalid IPv6 address";
		return -1;
	}
	memcpy(text, in, len);
	text[len] = '\0';
	if (inet_pton(AF_INET6, text, &out->ip.v6) != 1) {
		*cause = bracketed ? "bracketed host is not an IPv6 address" :
		    "invalid IPv6 address";
		return -1;
	}
	if (inet_ntop(AF_INET6, &out->ip.v6, out->name,
	    sizeof(out->name)) == NULL) {
		*cause = "invalid IPv6 address";
		return -1;
	}
	out->type = HOST_IPV6;
	return 0;
}

/* Strict UTF-8: no overlongs, no surrogates, nothing past U+10FFFF. */
static int
host_utf8_valid(const unsigned char *s, size_t len)
{
	size_t		i = 0, n, k;
	uint32_t	cp, min;

	while (i < len) {
		if (s[i] < 0x80) {
			i++;
			continue;
		}
		if ((s[i] & 0xe0) == 0xc0) {
			n = 1, cp = s[i] & 0x1f, min = 0x80;
		} else if ((s[i] & 0xf0) == 0xe0) {
			n = 2, cp = s[i] & 0x0f, min = 0x800;
		} else if ((s[i] & 0xf8) == 0xf0) {
			n = 3, cp = s[i] & 0x07, min = 0x10000;
		} else
			return 0;
		if (len - i - 1 < n)
			return 0;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return 0;
			cp = (cp << 6) | (s[i + k] & 0x3f);
		}
		if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
			return 0;
		i += n + 1;
	}
	return 1;
}

/*
 * Copy the name into buf as ASCII: plain ASCII is copied as is, anything
 * else must be UTF-8 and goes through UTS #46 to A-labels.
 */
static int
host_to_ascii(const char *in, size_t len, char *buf, size_t size,
    const char **cause)
{
	char	 utf8[SG_HOST_INPUT_MAX + 1];
	char	*ace = NULL;
	size_t	 i, acelen;
	int	 ascii = 1;

	for (i = 0; i < len; i++)
		if ((unsigned char)in[i] >= 0x80)
			ascii = 0;
	if (ascii) {
		if (len >= size) {
			*cause = "host name too long";
			return -1;
		}
		memcpy(buf, in, len);
		buf[len] = '\0';
		return 0;
	}
	if (!host_utf8_valid((const unsigned char *)in, len)) {
		*cause = "host name is not valid UTF-8";
		return -1;
	}
	memcpy(utf8, in, len);
	utf8[len] = '\0';
	if (idn2_to_ascii_8z(utf8, &ace,
	    IDN2_NONTRANSITIONAL | IDN2_NFC_INPUT) != IDN2_OK) {
		*cause = "invalid international host name";
		return -1;
	}
	acelen = strlen(ace);
	if (acelen >= size) {
		idn2_free(ace);
		*cause = "host name too long";
		return -1;
	}
	memcpy(buf, ace, acelen + 1);
	idn2_free(ace);
	return 0;
}

/*
 * WHATWG URL's "ends in a number": the last label is all digits, or "0x"
 * and hex digits. Such a name is an IPv4 address or nothing.
 */
static int
host_ends_in_number(const char *s, size_t len)
{
	const char	*dot, *last;
	size_t		 n, i;

	dot = memrchr(s, '.', len);
	last = dot == NULL ? s : dot + 1;
	n = len - (size_t)(last - s);
	if (n == 0)
		return 0;
	if (n >= 2 && last[0] == '0' && last[1] == 'x') {
		for (i = 2; i < n; i++)
			if (strchr("0123456789abcdef", last[i]) == NULL)
				return 0;
		return 1;
	}
	for (i = 0; i < n; i++)
		if (last[i] < '0' || last[i] > '9')
			return 0;
	return 1;
}

/*
 * One inet_aton(3) part: "0x" hex, leading "0" octal, else decimal. Fails
 * on an empty part, a bad digit or a value over 32 bits. A bare "0x" is
 * refused as glibc's inet_aton (and so getaddrinfo) refuses it, although
 * WHATWG URL reads it as 0: being neither a name nor an address is safe.
 */
static int
host_parse_v4_part(const char *s, size_t len, uint32_t *out)
{
	uint64_t	v = 0;
	unsigned	base = 10, d;
	size_t		i = 0;
	char		c;

	if (len == 0)
		return -1;
	if (len >= 2 && s[0] == '0' && s[1] == 'x') {
		base = 16;
		i = 2;
		if (len == 2)
			return -1;
	} else if (len >= 2 && s[0] == '0') {
		base = 8;
		i = 1;
	}
	for (; i < len; i++) {
		c = s[i];
		if (c >= '0' && c <= '9')
			d = (unsigned)(c - '0');
		else if (c >= 'a' && c <= 'f')
			d = (unsigned)(c - 'a') + 10;
		else
			return -1;
		if (d >= base)
			return -1;
		v = v * base + d;
		if (v > UINT32_MAX)
			return -1;
	}
	*out = (uint32_t)v;
	return 0;
}

/*
 * Every inet_aton(3) spelling: "a.b.c.d", "a.b.c" (c is 16 bits),
 * "a.b" (b is 24 bits) and "a" (32 bits). The string is lowercase
 * and has no trailing dot.
 */
static int
host_parse_v4(const char *s, size_t len, struct in_addr *out)
{
	uint32_t	 part[4], v;
	size_t		 n = 0, plen;
	const char	*p = s, *end = s + len, *dot;
	int		 i;

	while (p <= end) {
		if (n == 4)
			return -1;
		dot = memchr(p, '.', (size_t)(end - p));
		plen = dot == NULL ? (size_t)(end - p) : (size_t)(dot - p);
		if (host_parse_v4_part(p, plen, &part[n]) == -1)
			return -1;
		n++;
		if (dot == NULL)
			break;
		p = dot + 1;
	}
	for (i = 0; i < (int)n - 1; i++)
		if (part[i] > 0xff)
			return -1;
	/* The last part fills the bits the others left. */
	if (n < 4 && part[n - 1] > (UINT32_MAX >> (8 * (n - 1))))
		return -1;
	if (n == 4 && part[3] > 0xff)
		return -1;
	v = part[n - 1];
	for (i = 0; i < (int)n - 1; i++)
		v |= part[i] << (24 - 8 * i);
	out->s_addr = htonl(v);
	return 0;
}

/* LDH labels (plus '_'), 1..SG_LABEL_MAX each, no hyphen at either end. */
static int
host_check_labels(const char *s, size_t len, const char **cause)
{
	size_t	i, start = 0;
	char	c;

	for (i = 0; i <= len; i++) {
		c = i < len ? s[i] : '.';
		if (c == '.') {
			if (i == start) {
				*cause = "host name has an empty label";
				return -1;
			}
			if (i - start > SG_LABEL_MAX) {
				*cause = "host name label too long";
				return -1;
			}
			if (s[start] == '-' || s[i - 1] == '-') {
				*cause = "host name label starts or ends "
				    "with a hyphen";
				return -1;
			}
			start = i + 1;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '_')) {
			*cause = "host name has an invalid character";
			return -1;
		}
	}
	return 0;
}

/*
 * The common end of both paths: lowercase, strip one trailing dot, then
 * either an IPv4 address or a DNS name with valid labels.
 */
static int
host_finish_ascii(char *s, struct host *out, const char **cause)
{
	size_t	len = strlen(s), i;

	for (i = 0; i < len; i++)
		if (s[i] >= 'A' && s[i] <= 'Z')
			s[i] = (char)(s[i] - 'A' + 'a');
	if (len > 0 && s[len - 1] == '.')
		s[--len] = '\0';
	if (len == 0) {
		*cause = "empty host name";
		return -1;
	}
	if (host_ends_in_number(s, len)) {
		if (host_parse_v4(s, len, &out->ip.v4) == -1) {
			*cause = "host name looks like an invalid IPv4 address";
			return -1;
		}
		host_v4_name(&out->ip.v4, out->name);
		out->type = HOST_IPV4;
		return 0;
	}
	if (len > SG_HOST_MAX) {
		*cause = "host name too long";
		return -1;
	}
	if (host_check_labels(s, len, cause) == -1)
		return -1;
	memcpy(out->name, s, len + 1);
	out->type = HOST_DNS;
	return 0;
}

int
host_normalize(const char *in, size_t len, struct host *out,
    const char **cause)
{
	char	buf[SG_HOST_INPUT_MAX + 1];

	memset(out, 0, sizeof(*out));
	if (host_screen(in, len, cause) == -1)
		return -1;
	if (in[0] == '[' || memchr(in, ':', len) != NULL)
		return host_parse_v6(in, len, out, cause);
	if (host_to_ascii(in, len, buf, sizeof(buf), cause) == -1)
		return -1;
	return host_finish_ascii(buf, out, cause);
}

/* 1..65535, digits only (at most five, so leading zeros stay bounded). */
static int
host_parse_port(const char *s, size_t len, uint16_t *port,
    const char **cause)
{
	uint32_t	v = 0;
	size_t		i;

	if (len == 0) {
		*cause = "empty port";
		return -1;
	}
	if (len > 5) {
		*cause = "invalid port";
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9') {
			*cause = "invalid port";
			return -1;
		}
		v = v * 10 + (uint32_t)(s[i] - '0');
	}
	if (v == 0 || v > 65535) {
		*cause = "port out of range";
		return -1;
	}
	*port = (uint16_t)v;
	return 0;
}

/*
 * authority = host [ ":" port ]; host = "[" IPv6 "]" / name / IPv4
 * A bare name may hold no ':' at all, so "::1" and "a:b:c" are refused.
 */
int
host_parse_authority(const char *in, size_t len, uint16_t default_port,
    struct host *out, uint16_t *port, const char **cause)
{
	const char	*colon, *close;
	size_t		 hostlen;

	memset(out, 0, sizeof(*out));
	if (len == 0) {
		*cause = "empty host name";
		return -1;
	}
	if (memchr(in, '@', len) != NULL) {
		*cause = "host name has userinfo";
		return -1;
	}
	if (in[0] == '[') {
		close = memchr(in, ']', len);
		if (close == NULL) {
			*cause = "unbalanced brackets in host name";
			return -1;
		}
		hostlen = (size_t)(close - in) + 1;
		colon = hostlen < len ? in + hostlen : NULL;
		if (colon != NULL && *colon != ':') {
			*cause = "junk after bracketed address";
			return -1;
		}
	} else {
		colon = memchr(in, ':', len);
		hostlen = colon == NULL ? len : (size_t)(colon - in);
		if (colon != NULL && memchr(colon + 1, ':',
		    len - hostlen - 1) != NULL) {
			*cause = "IPv6 address must be in brackets";
			return -1;
		}
	}
	if (colon != NULL) {
		if (host_parse_port(colon + 1, len - hostlen - 1, port,
		    cause) == -1)
			return -1;
	} else if (default_port == 0) {
		*cause = "missing port";
		return -1;
	} else
		*port = default_port;
	return host_normalize(in, hostlen, out, cause);
}

int
host_equal(const struct host *a, const struct host *b)
{
	return a->type == b->type && strcmp(a->name, b->name) == 0;
}

/*
 * "[name]:port" for IPv6, "name:port" otherwise, as snprintf would write
 * it (cut to size, the full length returned), without its format
 * parsing: this runs for every request.
 */
int
host_format(const struct host *h, uint16_t port, char *buf, size_t size)
{
	char	out[SG_HOST_MAX + 10], *p = out;
	size_t	n = strlen(h->name), len;

	if (h->type == HOST_IPV6)
		*p++ = '[';
	memcpy(p, h->name, n);
	p += n;
	if (h->type == HOST_IPV6)
		*p++ = ']';
	*p++ = ':';
	p = host_put_uint(p, port);
	len = (size_t)(p - out);
	if (size > 0) {
		n = len < size - 1 ? len : size - 1;
		memcpy(buf, out, n);
		buf[n] = '\0';
	}
	return (int)len;
}

/* The decimal digits of v at p; returns the end. */
static char *
host_put_uint(char *p, unsigned v)
{
	char	d[10];
	size_t	n = 0;

	do {
		d[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	while (n > 0)
		*p++ = d[--n];
	return p;
}

/*
 * The dotted quad of a (network order) into name, as inet_ntop(AF_INET)
 * writes it: four decimal numbers without leading zeros.
 */
static void
host_v4_name(const struct in_addr *a, char *name)
{
	const unsigned char	*b = (const unsigned char *)&a->s_addr;
	char			*p = name;
	int			 i;

	for (i = 0; i < 4; i++) {
		if (i > 0)
			*p++ = '.';
		p = host_put_uint(p, b[i]);
	}
	*p = '\0';
}
