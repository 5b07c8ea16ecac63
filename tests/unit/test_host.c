/* test_host.c: host name and authority normalization (host.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

#include "host.h"

/* A row: input (len 0 means strlen), and the expected outcome. */
struct norm_row {
	const char	*in;
	size_t		 len;
	int		 ok;
	enum host_type	 type;
	const char	*want;	/* canonical name, or cause substring */
};

#define OK(i, t, w)	{ i, 0, 1, t, w }
#define BAD(i, c)	{ i, 0, 0, HOST_DNS, c }
#define BADN(i, n, c)	{ i, n, 0, HOST_DNS, c }

static const struct norm_row norm_rows[] = {
	/* case, trailing dot */
	OK("example.com", HOST_DNS, "example.com"),
	OK("EXAMPLE.Com", HOST_DNS, "example.com"),
	OK("example.com.", HOST_DNS, "example.com"),
	OK("Example.COM.", HOST_DNS, "example.com"),
	OK("localhost", HOST_DNS, "localhost"),
	OK("a", HOST_DNS, "a"),
	OK("_dmarc.example.com", HOST_DNS, "_dmarc.example.com"),
	OK("a-b.c-d.example", HOST_DNS, "a-b.c-d.example"),
	OK("1e100.net", HOST_DNS, "1e100.net"),
	OK("127.0.0.1.nip.example", HOST_DNS, "127.0.0.1.nip.example"),
	OK("0x7f.example", HOST_DNS, "0x7f.example"),
	OK("ff", HOST_DNS, "ff"),
	OK("xn--bcher-kva.example", HOST_DNS, "xn--bcher-kva.example"),
	OK("XN--BCHER-KVA.EXAMPLE", HOST_DNS, "xn--bcher-kva.example"),
	BAD("example.com..", "empty label"),
	BAD("a..b", "empty label"),
	BAD(".a", "empty label"),
	BAD(".", "empty host name"),
	BAD("", "empty host name"),
	BAD("-a.example", "hyphen"),
	BAD("a-.example", "hyphen"),
	BAD("a.-b", "hyphen"),
	BAD("a/b.example", "invalid character"),
	BAD("a\\b.example", "invalid character"),
	BAD("a?b", "invalid character"),
	BAD("a#b", "invalid character"),
	BAD("a*.example", "invalid character"),
	BAD("a,b", "invalid character"),
	/* IDN */
	OK("bücher.example", HOST_DNS, "xn--bcher-kva.example"),
	OK("BÜCHER.example", HOST_DNS, "xn--bcher-kva.example"),
	OK("bücher.example.", HOST_DNS, "xn--bcher-kva.example"),
	OK("faß.de", HOST_DNS, "xn--fa-hia.de"),
	OK("ｅｘａｍｐｌｅ.com", HOST_DNS, "example.com"),
	/* a soft hyphen, which UTS #46 drops */
	OK("exa\xc2\xadmple.com", HOST_DNS, "example.com"),
	OK("bücher。example", HOST_DNS, "xn--bcher-kva.example"),
	BAD("b\xc3", "UTF-8"),
	BAD("b\xff.example", "UTF-8"),
	BAD("\xc0\xaf.example", "UTF-8"),		/* overlong '/' */
	BAD("\xed\xa0\x80.example", "UTF-8"),		/* surrogate */
	BAD("ü:80", "IPv6"),
	BAD("ü：80", "international"),
	BAD("ü／x.example", ""),
	BAD("-ü.example", ""),
	/* IPv4 in every inet_aton spelling */
	OK("127.0.0.1", HOST_IPV4, "127.0.0.1"),
	OK("127.0.0.1.", HOST_IPV4, "127.0.0.1"),
	OK("127.1", HOST_IPV4, "127.0.0.1"),
	OK("127.0.1", HOST_IPV4, "127.0.0.1"),
	OK("2130706433", HOST_IPV4, "127.0.0.1"),
	OK("0x7f.0.0.1", HOST_IPV4, "127.0.0.1"),
	OK("0X7F.0.0.1", HOST_IPV4, "127.0.0.1"),
	OK("0177.0.0.1", HOST_IPV4, "127.0.0.1"),
	OK("0x7f000001", HOST_IPV4, "127.0.0.1"),
	OK("017700000001", HOST_IPV4, "127.0.0.1"),
	OK("0x7f.1", HOST_IPV4, "127.0.0.1"),
	OK("0x7f.0x00.0x0001", HOST_IPV4, "127.0.0.1"),
	OK("00000000000000127.0.0.1", HOST_IPV4, "87.0.0.1"),
	OK("0000000000000000177.0.0.1", HOST_IPV4, "127.0.0.1"),
	OK("169.254.43518", HOST_IPV4, "169.254.169.254"),
	OK("0xa9fea9fe", HOST_IPV4, "169.254.169.254"),
	OK("2852039166", HOST_IPV4, "169.254.169.254"),
	OK("0", HOST_IPV4, "0.0.0.0"),
	OK("0x0", HOST_IPV4, "0.0.0.0"),
	OK("4294967295", HOST_IPV4, "255.255.255.255"),
	OK("8.8.8.8", HOST_IPV4, "8.8.8.8"),
	OK("１２７。０。０。１", HOST_IPV4, "127.0.0.1"),
	OK("１２７.1", HOST_IPV4, "127.0.0.1"),
	BAD("4294967296", "IPv4"),
	BAD("0x", "IPv4"),			/* fuzz: inet_aton refuses */
	BAD("0x.1", "IPv4"),
	BAD("1.0x", "IPv4"),
	BAD("1.2.3.999", "IPv4"),
	BAD("1.2.3.256", "IPv4"),
	BAD("256.1.1.1", "IPv4"),
	BAD("1.2.65536", "IPv4"),
	BAD("1.16777216", "IPv4"),
	BAD("0x7g.1", "IPv4"),
	BAD("08.0.0.1", "IPv4"),
	BAD("1.2.3.4.5", "IPv4"),
	BAD("1..2.3", "IPv4"),
	BAD("example.123", "IPv4"),
	BAD("example.0x1f", "IPv4"),
	BAD("0x100000000", "IPv4"),
	BAD("99999999999999999999999", "IPv4"),
	BAD("0xffffffffffffffffffff1", "IPv4"),
	/* IPv6 */
	OK("[::1]", HOST_IPV6, "::1"),
	OK("::1", HOST_IPV6, "::1"),
	OK("[2001:DB8:0:0:0:0:0:1]", HOST_IPV6, "2001:db8::1"),
	OK("2001:0db8::0001", HOST_IPV6, "2001:db8::1"),
	OK("[::ffff:127.0.0.1]", HOST_IPV6, "::ffff:127.0.0.1"),
	OK("[::FFFF:7f00:1]", HOST_IPV6, "::ffff:127.0.0.1"),
	BAD("[example.com]", "not an IPv6"),
	BAD("[127.0.0.1]", "not an IPv6"),
	BAD("[::1", "brackets"),
	BAD("[]", "IPv6"),
	BAD("[::1]:443", "brackets"),
	BAD("example.com:443", "IPv6"),
	BAD("::1::2", "IPv6"),
	BAD("[fe80::1%eth0]", "zone id"),
	BAD("fe80::1%25eth0", "zone id"),
	BAD("[fe80::1%25eth0]", "zone id"),
	/* userinfo, controls */
	BAD("user@example.com", "userinfo"),
	BAD("user:pw@example.com", "userinfo"),
	BAD("@example.com", "userinfo"),
	BAD("example.com\r\nX: y", "control"),
	BAD("example.com\n", "control"),
	BAD("exa mple.com", "control"),
	BAD(" example.com", "control"),
	BAD("example.com\t", "control"),
	BAD("example\x7f.com", "control"),
	BADN("example.com\0.evil.test", 23, "NUL"),
	BADN("\0", 1, "NUL"),
	BAD("%65xample.com", "zone id"),
};

static void
test_normalize_table(void **state)
{
	struct host	 h;
	const char	*cause;
	size_t		 i, len;
	int		 rc;

	(void)state;
	for (i = 0; i < sizeof(norm_rows) / sizeof(norm_rows[0]); i++) {
		const struct norm_row *r = &norm_rows[i];

		len = r->len ? r->len : strlen(r->in);
		cause = NULL;
		rc = host_normalize(r->in, len, &h, &cause);
		if (r->ok) {
			if (rc != 0)
				fail_msg("row %zu \"%s\": %s", i, r->in, cause);
			assert_int_equal(h.type, r->type);
			assert_string_equal(h.name, r->want);
		} else {
			if (rc != -1)
				fail_msg("row %zu \"%s\" accepted as \"%s\"",
				    i, r->in, h.name);
			assert_non_null(cause);
			if (strstr(cause, r->want) == NULL)
				fail_msg("row %zu: cause \"%s\" lacks \"%s\"",
				    i, cause, r->want);
		}
	}
}

/* Fill buf with labels of label_len letters up to total characters. */
static void
make_name(char *buf, size_t total, size_t label_len)
{
	size_t	i;

	for (i = 0; i < total; i++)
		buf[i] = (i % (label_len + 1) == label_len) ? '.' : 'a';
	buf[total] = '\0';
}

static void
test_lengths(void **state)
{
	char		 buf[SG_HOST_INPUT_MAX + 16];
	struct host	 h;
	const char	*cause;

	(void)state;
	make_name(buf, 63, 63);
	assert_int_equal(host_normalize(buf, 63, &h, &cause), 0);
	make_name(buf, 64, 64);
	assert_int_equal(host_normalize(buf, 64, &h, &cause), -1);
	assert_non_null(strstr(cause, "label too long"));
	/* 253 characters: four 63-char labels minus one letter. */
	make_name(buf, 253, 63);
	assert_int_equal(host_normalize(buf, 253, &h, &cause), 0);
	assert_int_equal(strlen(h.name), 253);
	/* The same with a trailing dot is still 253 once stripped. */
	buf[253] = '.';
	assert_int_equal(host_normalize(buf, 254, &h, &cause), 0);
	make_name(buf, 254, 62);
	assert_int_equal(host_normalize(buf, 254, &h, &cause), -1);
	assert_non_null(strstr(cause, "too long"));
	make_name(buf, SG_HOST_INPUT_MAX + 1, 10);
	assert_int_equal(host_normalize(buf, SG_HOST_INPUT_MAX + 1, &h,
	    &cause), -1);
	assert_non_null(strstr(cause, "too long"));
}

/* Every accepted output normalizes to itself. */
static void
test_idempotent(void **state)
{
	struct host	 a, b;
	const char	*cause;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(norm_rows) / sizeof(norm_rows[0]); i++) {
		const struct norm_row *r = &norm_rows[i];

		if (!r->ok)
			continue;
		assert_int_equal(host_normalize(r->in, strlen(r->in), &a,
		    &cause), 0);
		assert_int_equal(host_normalize(a.name, strlen(a.name), &b,
		    &cause), 0);
		assert_true(host_equal(&a, &b));
		assert_int_equal(memcmp(&a.ip, &b.ip, sizeof(a.ip)), 0);
	}
}

static void
test_ip_bytes(void **state)
{
	struct host	 h;
	const char	*cause;
	struct in6_addr	 v6;

	(void)state;
	assert_int_equal(host_normalize("0x7f.1", 6, &h, &cause), 0);
	assert_int_equal(ntohl(h.ip.v4.s_addr), 0x7f000001);
	assert_int_equal(host_normalize("[::1]", 5, &h, &cause), 0);
	inet_pton(AF_INET6, "::1", &v6);
	assert_memory_equal(&h.ip.v6, &v6, sizeof(v6));
}

struct auth_row {
	const char	*in;
	uint16_t	 dflt;
	int		 ok;
	const char	*want;	/* host_format() output or cause */
};

static const struct auth_row auth_rows[] = {
	{ "example.com:443", 0, 1, "example.com:443" },
	{ "Example.COM.:8443", 0, 1, "example.com:8443" },
	{ "example.com", 80, 1, "example.com:80" },
	{ "example.com", 0, 0, "missing port" },
	{ "example.com:", 80, 0, "empty port" },
	{ "example.com:0", 80, 0, "out of range" },
	{ "example.com:65535", 80, 1, "example.com:65535" },
	{ "example.com:65536", 80, 0, "out of range" },
	{ "example.com:00443", 80, 1, "example.com:443" },
	{ "example.com:000443", 80, 0, "invalid port" },
	{ "example.com:+443", 80, 0, "invalid port" },
	{ "example.com:-1", 80, 0, "invalid port" },
	{ "example.com:44 3", 80, 0, "invalid port" },
	{ "example.com:443:443", 80, 0, "brackets" },
	{ "[::1]:443", 0, 1, "[::1]:443" },
	{ "[::1]", 443, 1, "[::1]:443" },
	{ "[::1]", 0, 0, "missing port" },
	{ "[::1]:", 443, 0, "empty port" },
	{ "[::1]x", 443, 0, "junk" },
	{ "[::1]443", 443, 0, "junk" },
	{ "[::1", 443, 0, "brackets" },
	{ "::1", 443, 0, "brackets" },
	{ "::1:443", 443, 0, "brackets" },
	{ "[example.com]:443", 443, 0, "not an IPv6" },
	{ "[fe80::1%25eth0]:443", 443, 0, "zone id" },
	{ "user@example.com:443", 0, 0, "userinfo" },
	{ "user:pw@example.com:443", 0, 0, "userinfo" },
	{ "example.com@evil.test:443", 0, 0, "userinfo" },
	{ "127.1:80", 0, 1, "127.0.0.1:80" },
	{ "2130706433:80", 0, 1, "127.0.0.1:80" },
	{ "bücher.example:443", 0, 1, "xn--bcher-kva.example:443" },
	{ ":443", 0, 0, "empty host name" },
	{ "", 443, 0, "empty host name" },
	{ "exa mple.com:443", 0, 0, "control" },
	{ "example.com:443\r\n", 0, 0, "invalid port" },
};

static void
test_authority_table(void **state)
{
	struct host	 h;
	const char	*cause;
	char		 buf[SG_HOST_MAX + 16];
	uint16_t	 port;
	size_t		 i;
	int		 rc;

	(void)state;
	for (i = 0; i < sizeof(auth_rows) / sizeof(auth_rows[0]); i++) {
		const struct auth_row *r = &auth_rows[i];

		cause = NULL;
		port = 0;
		rc = host_parse_authority(r->in, strlen(r->in), r->dflt, &h,
		    &port, &cause);
		if (r->ok) {
			if (rc != 0)
				fail_msg("row %zu \"%s\": %s", i, r->in, cause);
			host_format(&h, port, buf, sizeof(buf));
			assert_string_equal(buf, r->want);
		} else {
			if (rc != -1)
				fail_msg("row %zu \"%s\" accepted", i, r->in);
			if (strstr(cause, r->want) == NULL)
				fail_msg("row %zu: cause \"%s\" lacks \"%s\"",
				    i, cause, r->want);
		}
	}
}

static void
test_authority_nul(void **state)
{
	struct host	 h;
	const char	*cause;
	uint16_t	 port;

	(void)state;
	assert_int_equal(host_parse_authority("a.test\0:443", 11, 0, &h,
	    &port, &cause), -1);
	assert_int_equal(host_parse_authority("a.test:4\0", 9, 0, &h, &port,
	    &cause), -1);
}

static void
test_equal_format(void **state)
{
	struct host	 a, b, c;
	const char	*cause;
	char		 small[8];

	(void)state;
	assert_int_equal(host_normalize("bücher.example", strlen(
	    "bücher.example"), &a, &cause), 0);
	assert_int_equal(host_normalize("XN--BCHER-KVA.example.", 22, &b,
	    &cause), 0);
	assert_true(host_equal(&a, &b));
	assert_int_equal(host_normalize("other.example", 13, &c, &cause), 0);
	assert_false(host_equal(&a, &c));
	/* A name and an address never compare equal, even as text. */
	assert_int_equal(host_normalize("127.1", 5, &a, &cause), 0);
	memcpy(&b, &a, sizeof(b));
	b.type = HOST_DNS;
	assert_false(host_equal(&a, &b));
	/* host_format truncates but reports the full length. */
	assert_int_equal(host_format(&c, 443, small, sizeof(small)), 17);
	assert_string_equal(small, "other.e");
}

/*
 * Dotted quads and host_format() are written without printf: the same
 * text as inet_ntop() and snprintf("%s:%u") give, for addresses with
 * every digit count in each octet, every port length, and every
 * truncation size.
 */
static void
test_format_as_printf(void **state)
{
	static const unsigned char	oct[] = { 0, 1, 9, 10, 99, 100, 199,
					    200, 255 };
	static const uint16_t		ports[] = { 1, 9, 10, 80, 443, 8080,
					    10000, 65535 };
	struct host			h;
	struct in_addr			a;
	unsigned char			*b = (unsigned char *)&a.s_addr;
	const char			*cause;
	char				in[32], want[64], got[64], ntop[32];
	size_t				i, j, k, size;
	int				n;

	(void)state;
	for (i = 0; i < sizeof(oct); i++) {
		for (j = 0; j < sizeof(oct); j++) {
			b[0] = oct[i];
			b[1] = oct[j];
			b[2] = oct[(i + j) % sizeof(oct)];
			b[3] = oct[(i * 3 + j) % sizeof(oct)];
			inet_ntop(AF_INET, &a, ntop, sizeof(ntop));
			snprintf(in, sizeof(in), "%u.%u.%u.%u", b[0], b[1],
			    b[2], b[3]);
			assert_int_equal(host_normalize(in, strlen(in), &h,
			    &cause), 0);
			assert_int_equal(h.type, HOST_IPV4);
			assert_string_equal(h.name, ntop);
			k = (i + j) % (sizeof(ports) / sizeof(ports[0]));
			for (size = 0; size <= 24; size++) {
				n = snprintf(want, size, "%s:%u", ntop,
				    (unsigned)ports[k]);
				memset(got, 'x', sizeof(got));
				assert_int_equal(host_format(&h, ports[k],
				    size ? got : NULL, size), n);
				if (size > 0)
					assert_string_equal(got, want);
			}
		}
	}
	assert_int_equal(host_normalize("[2001:DB8::1]", 13, &h, &cause), 0);
	assert_int_equal(host_format(&h, 443, got, sizeof(got)), 17);
	assert_string_equal(got, "[2001:db8::1]:443");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_normalize_table),
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_idempotent),
		cmocka_unit_test(test_ip_bytes),
		cmocka_unit_test(test_authority_table),
		cmocka_unit_test(test_authority_nul),
		cmocka_unit_test(test_equal_format),
		cmocka_unit_test(test_format_as_printf),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
