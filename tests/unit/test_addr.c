/* test_addr.c: address classification, CIDR prefixes, sets (addr.h). */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <sys/socket.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <string.h>

#include "addr.h"

struct class_row {
	const char	*addr;
	enum addr_class	 want;
};

/* A row per special-purpose range, every embedding of the bad ones. */
static const struct class_row class_rows[] = {
	/* IPv4 public */
	{ "8.8.8.8", ADDR_PUBLIC },
	{ "1.1.1.1", ADDR_PUBLIC },
	{ "93.184.215.14", ADDR_PUBLIC },
	{ "11.0.0.1", ADDR_PUBLIC },
	{ "100.63.255.255", ADDR_PUBLIC },
	{ "100.128.0.0", ADDR_PUBLIC },
	{ "172.15.255.255", ADDR_PUBLIC },
	{ "172.32.0.0", ADDR_PUBLIC },
	{ "192.0.1.1", ADDR_PUBLIC },
	{ "192.167.255.255", ADDR_PUBLIC },
	{ "198.17.255.255", ADDR_PUBLIC },
	{ "198.20.0.0", ADDR_PUBLIC },
	{ "223.255.255.255", ADDR_PUBLIC },
	{ "168.63.129.15", ADDR_PUBLIC },
	/* IPv4 special-purpose registry */
	{ "0.0.0.0", ADDR_THIS_NETWORK },
	{ "0.255.255.255", ADDR_THIS_NETWORK },
	{ "10.0.0.0", ADDR_PRIVATE },
	{ "10.255.255.255", ADDR_PRIVATE },
	{ "100.64.0.0", ADDR_SHARED },
	{ "100.127.255.255", ADDR_SHARED },
	{ "127.0.0.1", ADDR_LOOPBACK },
	{ "127.255.255.254", ADDR_LOOPBACK },
	{ "169.254.0.1", ADDR_LINK_LOCAL },
	{ "169.254.255.255", ADDR_LINK_LOCAL },
	{ "172.16.0.0", ADDR_PRIVATE },
	{ "172.31.255.255", ADDR_PRIVATE },
	{ "192.0.0.8", ADDR_RESERVED },
	{ "192.0.0.9", ADDR_RESERVED },
	{ "192.0.0.170", ADDR_RESERVED },
	{ "192.0.2.1", ADDR_RESERVED },
	{ "192.31.196.1", ADDR_RESERVED },
	{ "192.52.193.1", ADDR_RESERVED },
	{ "192.88.99.1", ADDR_RESERVED },
	{ "192.168.0.1", ADDR_PRIVATE },
	{ "192.168.255.255", ADDR_PRIVATE },
	{ "192.175.48.1", ADDR_RESERVED },
	{ "198.18.0.1", ADDR_RESERVED },
	{ "198.19.255.255", ADDR_RESERVED },
	{ "198.51.100.1", ADDR_RESERVED },
	{ "203.0.113.1", ADDR_RESERVED },
	{ "224.0.0.1", ADDR_MULTICAST },
	{ "239.255.255.255", ADDR_MULTICAST },
	{ "240.0.0.1", ADDR_RESERVED },
	{ "255.255.255.254", ADDR_RESERVED },
	{ "255.255.255.255", ADDR_BROADCAST },
	/* cloud metadata wins over link-local, shared and public */
	{ "169.254.169.254", ADDR_METADATA },
	{ "169.254.170.2", ADDR_METADATA },
	{ "100.100.100.200", ADDR_METADATA },
	{ "168.63.129.16", ADDR_METADATA },
	{ "fd00:ec2::254", ADDR_METADATA },
	{ "fd00:ec2::253", ADDR_PRIVATE },
	/* IPv6 public */
	{ "2606:4700::1", ADDR_PUBLIC },
	{ "2001:4860:4860::8888", ADDR_PUBLIC },
	{ "2a00:1450:4001::1", ADDR_PUBLIC },
	{ "2001:200::1", ADDR_PUBLIC },
	{ "2a03:2880::1", ADDR_PUBLIC },
	/* IPv6 special-purpose registry */
	{ "::", ADDR_THIS_NETWORK },
	{ "::1", ADDR_LOOPBACK },
	{ "100::1", ADDR_RESERVED },
	{ "100:0:0:1::1", ADDR_RESERVED },
	{ "100:0:0:2::1", ADDR_RESERVED },
	{ "2001:1::1", ADDR_RESERVED },
	{ "2001:2::1", ADDR_RESERVED },
	{ "2001:3::1", ADDR_RESERVED },
	{ "2001:4:112::1", ADDR_RESERVED },
	{ "2001:20::1", ADDR_RESERVED },
	{ "2001:1ff:ffff::1", ADDR_RESERVED },
	{ "2001:db8::1", ADDR_RESERVED },
	{ "2620:4f:8000::1", ADDR_RESERVED },
	{ "3fff::1", ADDR_RESERVED },
	{ "5f00::1", ADDR_RESERVED },
	{ "fc00::1", ADDR_PRIVATE },
	{ "fdff:ffff::1", ADDR_PRIVATE },
	{ "fe80::1", ADDR_LINK_LOCAL },
	{ "febf::1", ADDR_LINK_LOCAL },
	{ "fec0::1", ADDR_PRIVATE },
	{ "ff02::1", ADDR_MULTICAST },
	{ "ff0e::1", ADDR_MULTICAST },
	{ "4000::1", ADDR_RESERVED },
	{ "1000::1", ADDR_RESERVED },
	{ "e000::1", ADDR_RESERVED },
	{ "::ffff:0:7f00:1", ADDR_RESERVED },		/* SIIT, in ::/8 */
	/* 127.0.0.1 in every embedding */
	{ "::ffff:127.0.0.1", ADDR_LOOPBACK },
	{ "::127.0.0.1", ADDR_LOOPBACK },
	{ "64:ff9b::127.0.0.1", ADDR_LOOPBACK },
	{ "64:ff9b:1::127.0.0.1", ADDR_LOOPBACK },
	{ "64:ff9b:1:ffff::7f00:1", ADDR_LOOPBACK },
	{ "2002:7f00:1::", ADDR_LOOPBACK },
	{ "2002:7f00:1:1234::1", ADDR_LOOPBACK },
	/* Teredo: the server, then the client (inverted) */
	{ "2001:0:7f00:1::", ADDR_LOOPBACK },
	{ "2001:0:808:808::80ff:fffe", ADDR_LOOPBACK },
	/* 169.254.169.254 in every embedding */
	{ "::ffff:169.254.169.254", ADDR_METADATA },
	{ "::169.254.169.254", ADDR_METADATA },
	{ "64:ff9b::169.254.169.254", ADDR_METADATA },
	{ "64:ff9b:1::a9fe:a9fe", ADDR_METADATA },
	{ "2002:a9fe:a9fe::", ADDR_METADATA },
	{ "2001:0:a9fe:a9fe::", ADDR_METADATA },
	{ "2001:0:808:808::5601:5601", ADDR_METADATA },
	/* other embedded classes */
	{ "::ffff:10.0.0.1", ADDR_PRIVATE },
	{ "::ffff:0.0.0.0", ADDR_THIS_NETWORK },
	{ "::ffff:255.255.255.255", ADDR_BROADCAST },
	{ "::ffff:100.64.0.1", ADDR_SHARED },
	{ "::ffff:168.63.129.16", ADDR_METADATA },
	{ "64:ff9b::192.168.1.1", ADDR_PRIVATE },
	{ "2002:c0a8:101::", ADDR_PRIVATE },
	{ "::2", ADDR_THIS_NETWORK },
	/* embedded public: only mapped and NAT64 stay public */
	{ "::ffff:8.8.8.8", ADDR_PUBLIC },
	{ "64:ff9b::8.8.8.8", ADDR_PUBLIC },
	{ "::8.8.8.8", ADDR_RESERVED },
	{ "64:ff9b:1::8.8.8.8", ADDR_PRIVATE },
	{ "2002:808:808::1", ADDR_RESERVED },
	{ "2001:0:808:808::f7f7:f7f7", ADDR_RESERVED },
	{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", ADDR_RESERVED },
};

/* Build a sockaddr from text; returns its family. */
static int
make_sa(const char *s, struct sockaddr_storage *ss)
{
	struct sockaddr_in	*sin = (struct sockaddr_in *)ss;
	struct sockaddr_in6	*sin6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, s, &sin->sin_addr) == 1) {
		sin->sin_family = AF_INET;
		return AF_INET;
	}
	if (inet_pton(AF_INET6, s, &sin6->sin6_addr) == 1) {
		sin6->sin6_family = AF_INET6;
		return AF_INET6;
	}
	fail_msg("bad test address \"%s\"", s);
	return -1;
}

static void
test_classify_table(void **state)
{
	struct sockaddr_storage	ss;
	enum addr_class		got;
	size_t			i;

	(void)state;
	for (i = 0; i < sizeof(class_rows) / sizeof(class_rows[0]); i++) {
		make_sa(class_rows[i].addr, &ss);
		got = addr_classify((struct sockaddr *)&ss);
		if (got != class_rows[i].want)
			fail_msg("%s: got %s, want %s", class_rows[i].addr,
			    addr_class_name(got),
			    addr_class_name(class_rows[i].want));
	}
}

/* Every IPv4 address classifies the same as each faithful embedding. */
static void
test_embeddings_agree(void **state)
{
	struct in6_addr	v6;
	struct in_addr	v4;
	enum addr_class	c4;
	uint32_t	x, i;

	(void)state;
	/* Walk the space in steps that land in every /16. */
	for (x = 0, i = 0; i < 70000; i++, x += 61379) {
		v4.s_addr = htonl(x);
		c4 = addr_classify_v4(&v4);
		memset(&v6, 0, sizeof(v6));
		v6.s6_addr[10] = v6.s6_addr[11] = 0xff;
		memcpy(&v6.s6_addr[12], &v4, 4);
		assert_int_equal(addr_classify_v6(&v6), c4);
		memset(&v6, 0, sizeof(v6));
		v6.s6_addr[1] = 0x64, v6.s6_addr[2] = 0xff;
		v6.s6_addr[3] = 0x9b;
		memcpy(&v6.s6_addr[12], &v4, 4);
		assert_int_equal(addr_classify_v6(&v6), c4);
		/* 6to4 is never public, and never laxer than its IPv4. */
		memset(&v6, 0, sizeof(v6));
		v6.s6_addr[0] = 0x20, v6.s6_addr[1] = 0x02;
		memcpy(&v6.s6_addr[2], &v4, 4);
		assert_int_not_equal(addr_classify_v6(&v6), ADDR_PUBLIC);
		if (c4 != ADDR_PUBLIC)
			assert_int_equal(addr_classify_v6(&v6), c4);
	}
}

static void
test_class_names(void **state)
{
	int	c;

	(void)state;
	for (c = 0; c < ADDR_CLASS_MAX; c++) {
		assert_non_null(addr_class_name((enum addr_class)c));
		assert_string_not_equal(addr_class_name((enum addr_class)c),
		    "unknown");
	}
	assert_string_equal(addr_class_name(ADDR_PUBLIC), "public");
	assert_string_equal(addr_class_name(ADDR_PRIVATE), "private");
	assert_string_equal(addr_class_name(ADDR_CLASS_MAX), "unknown");
}

static void
test_classify_other_family(void **state)
{
	struct sockaddr	sa;

	(void)state;
	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	assert_int_equal(addr_classify(&sa), ADDR_RESERVED);
	assert_int_equal(addr_classify(NULL), ADDR_RESERVED);
}

static void
test_to_string(void **state)
{
	struct sockaddr_storage	ss;
	char			buf[INET6_ADDRSTRLEN];
	char			small[4];

	(void)state;
	make_sa("192.0.2.7", &ss);
	assert_string_equal(addr_to_string((struct sockaddr *)&ss, buf,
	    sizeof(buf)), "192.0.2.7");
	make_sa("2001:DB8:0::1", &ss);
	assert_string_equal(addr_to_string((struct sockaddr *)&ss, buf,
	    sizeof(buf)), "2001:db8::1");
	assert_string_equal(addr_to_string((struct sockaddr *)&ss, small,
	    sizeof(small)), "?");
	ss.ss_family = AF_UNIX;
	assert_string_equal(addr_to_string((struct sockaddr *)&ss, buf,
	    sizeof(buf)), "?");
}

struct cidr_row {
	const char	*in;
	int		 ok;
	int		 family;
	unsigned	 prefix;
};

static const struct cidr_row cidr_rows[] = {
	{ "10.0.0.0/8", 1, AF_INET, 8 },
	{ "192.0.2.7", 1, AF_INET, 32 },
	{ "192.0.2.7/32", 1, AF_INET, 32 },
	{ "0.0.0.0/0", 1, AF_INET, 0 },
	{ "2001:db8::/32", 1, AF_INET6, 32 },
	{ "[2001:db8::1]", 1, AF_INET6, 128 },
	{ "[2001:db8::]/32", 1, AF_INET6, 32 },
	{ "::/0", 1, AF_INET6, 0 },
	{ "::ffff:10.0.0.0/104", 1, AF_INET6, 104 },
	{ "10.0.0.1/8", 0, 0, 0 },
	{ "2001:db8::1/32", 0, 0, 0 },
	{ "10.0.0.0/33", 0, 0, 0 },
	{ "2001:db8::/129", 0, 0, 0 },
	{ "10.0.0.0/", 0, 0, 0 },
	{ "10.0.0.0/08", 0, 0, 0 },
	{ "10.0.0.0/+8", 0, 0, 0 },
	{ "10.0.0.0/8/8", 0, 0, 0 },
	{ "10.0.0.0/8 ", 0, 0, 0 },
	{ "10.1", 0, 0, 0 },
	{ "010.0.0.0/8", 0, 0, 0 },
	{ "[10.0.0.0]/8", 0, 0, 0 },
	{ "[2001:db8::1", 0, 0, 0 },
	{ "[2001:db8::1]x", 0, 0, 0 },
	{ "fe80::1%eth0", 0, 0, 0 },
	{ "example.com/8", 0, 0, 0 },
	{ "", 0, 0, 0 },
	{ "/8", 0, 0, 0 },
};

static void
test_cidr_parse(void **state)
{
	struct addr_cidr	 c;
	const char		*cause;
	size_t			 i;
	int			 rc;

	(void)state;
	for (i = 0; i < sizeof(cidr_rows) / sizeof(cidr_rows[0]); i++) {
		cause = NULL;
		rc = addr_cidr_parse(cidr_rows[i].in, &c, &cause);
		if (!cidr_rows[i].ok) {
			if (rc != -1)
				fail_msg("\"%s\" accepted", cidr_rows[i].in);
			assert_non_null(cause);
			continue;
		}
		if (rc != 0)
			fail_msg("\"%s\": %s", cidr_rows[i].in, cause);
		assert_int_equal(c.family, cidr_rows[i].family);
		assert_int_equal(c.prefix, cidr_rows[i].prefix);
	}
}

static void
test_cidr_contains(void **state)
{
	struct addr_cidr	 c;
	struct sockaddr_storage	 ss;
	const char		*cause;

	(void)state;
	assert_int_equal(addr_cidr_parse("10.0.0.0/8", &c, &cause), 0);
	make_sa("10.255.0.1", &ss);
	assert_true(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	make_sa("11.0.0.1", &ss);
	assert_false(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	make_sa("::ffff:10.0.0.1", &ss);
	assert_false(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	assert_int_equal(addr_cidr_parse("172.16.0.0/12", &c, &cause), 0);
	make_sa("172.31.255.255", &ss);
	assert_true(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	make_sa("172.32.0.0", &ss);
	assert_false(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	assert_int_equal(addr_cidr_parse("2001:db8::/33", &c, &cause), 0);
	make_sa("2001:db8:7fff::1", &ss);
	assert_true(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	make_sa("2001:db8:8000::1", &ss);
	assert_false(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	make_sa("10.0.0.1", &ss);
	assert_false(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	assert_int_equal(addr_cidr_parse("0.0.0.0/0", &c, &cause), 0);
	make_sa("255.1.2.3", &ss);
	assert_true(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	assert_int_equal(addr_cidr_parse("192.0.2.7", &c, &cause), 0);
	make_sa("192.0.2.7", &ss);
	assert_true(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	make_sa("192.0.2.6", &ss);
	assert_false(addr_cidr_contains(&c, (struct sockaddr *)&ss));
	assert_false(addr_cidr_contains(&c, NULL));
}

static void
test_cidr_covers(void **state)
{
	static const struct {
		const char	*a, *b;
		int		 want;
	} rows[] = {
		{ "10.0.0.0/8", "10.1.0.0/16", 1 },
		{ "10.0.0.0/8", "10.0.0.0/8", 1 },
		{ "10.0.0.0/8", "10.0.0.5", 1 },
		{ "10.1.0.0/16", "10.0.0.0/8", 0 },
		{ "10.0.0.0/8", "11.0.0.0/16", 0 },
		{ "0.0.0.0/0", "203.0.113.0/24", 1 },
		{ "0.0.0.0/0", "::/0", 0 },
		{ "2001:db8::/32", "2001:db8:1::/48", 1 },
		{ "2001:db8::/33", "2001:db8:8000::/48", 0 },
		{ "::/0", "10.0.0.0/8", 0 },
	};
	struct addr_cidr	 a, b;
	const char		*cause;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		assert_int_equal(addr_cidr_parse(rows[i].a, &a, &cause), 0);
		assert_int_equal(addr_cidr_parse(rows[i].b, &b, &cause), 0);
		if (addr_cidr_covers(&a, &b) != rows[i].want)
			fail_msg("covers(%s, %s) != %d", rows[i].a, rows[i].b,
			    rows[i].want);
	}
}

static void
test_set(void **state)
{
	struct addr_set		*s;
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*sin = (struct sockaddr_in *)&ss;
	char			 buf[32];
	int			 i;

	(void)state;
	addr_set_free(NULL);
	s = addr_set_new();
	assert_non_null(s);
	make_sa("10.0.0.5", &ss);
	assert_false(addr_set_contains(s, (struct sockaddr *)&ss));
	sin->sin_port = htons(3128);
	assert_int_equal(addr_set_add(s, (struct sockaddr *)&ss), 0);
	sin->sin_port = htons(1);
	assert_true(addr_set_contains(s, (struct sockaddr *)&ss));
	/* The mapped form of an IPv4 member is a member. */
	make_sa("::ffff:10.0.0.5", &ss);
	assert_true(addr_set_contains(s, (struct sockaddr *)&ss));
	make_sa("10.0.0.6", &ss);
	assert_false(addr_set_contains(s, (struct sockaddr *)&ss));
	make_sa("2001:db8::5", &ss);
	assert_int_equal(addr_set_add(s, (struct sockaddr *)&ss), 0);
	assert_true(addr_set_contains(s, (struct sockaddr *)&ss));
	make_sa("2001:db8::6", &ss);
	assert_false(addr_set_contains(s, (struct sockaddr *)&ss));
	/* Growth past the first allocation, and duplicates. */
	for (i = 0; i < 300; i++) {
		snprintf(buf, sizeof(buf), "192.0.2.%d", i % 256);
		make_sa(buf, &ss);
		assert_int_equal(addr_set_add(s, (struct sockaddr *)&ss), 0);
	}
	make_sa("192.0.2.200", &ss);
	assert_true(addr_set_contains(s, (struct sockaddr *)&ss));
	ss.ss_family = AF_UNIX;
	assert_int_equal(addr_set_add(s, (struct sockaddr *)&ss), -1);
	assert_false(addr_set_contains(s, (struct sockaddr *)&ss));
	addr_set_free(s);
}

static void
test_set_load_local(void **state)
{
	struct addr_set		*s;
	struct sockaddr_storage	 ss;

	(void)state;
	s = addr_set_new();
	assert_non_null(s);
	assert_int_equal(addr_set_load_local(s), 0);
	/* Every Linux network namespace has a loopback interface. */
	make_sa("127.0.0.1", &ss);
	assert_true(addr_set_contains(s, (struct sockaddr *)&ss));
	make_sa("192.0.2.1", &ss);
	assert_false(addr_set_contains(s, (struct sockaddr *)&ss));
	addr_set_free(s);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_classify_table),
		cmocka_unit_test(test_embeddings_agree),
		cmocka_unit_test(test_class_names),
		cmocka_unit_test(test_classify_other_family),
		cmocka_unit_test(test_to_string),
		cmocka_unit_test(test_cidr_parse),
		cmocka_unit_test(test_cidr_contains),
		cmocka_unit_test(test_cidr_covers),
		cmocka_unit_test(test_set),
		cmocka_unit_test(test_set_load_local),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
