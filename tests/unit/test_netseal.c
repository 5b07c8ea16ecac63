/* test_netseal.c: the firewall rules loaded into a sandbox's namespace. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "netseal.h"

/* Index of needle in hay; fails the test when absent. */
static size_t
at(const char *hay, const char *needle)
{
	const char	*p = strstr(hay, needle);

	if (p == NULL)
		fail_msg("missing rule '%s' in:\n%s", needle, hay);
	return (size_t)(p - hay);
}

static void
test_v4_rules(void **state)
{
	char	buf[NETSEAL_RULES_MAX];

	assert_int_equal(netseal_rules(4, "10.213.0.2:3128", buf,
	    sizeof(buf)), 0);
	/* Docker's resolver lives on lo: refused before lo is allowed. */
	assert_true(at(buf, "-A OUTPUT -d 127.0.0.11/32 -j REJECT") <
	    at(buf, "-A OUTPUT -o lo -j ACCEPT"));
	assert_true(at(buf, "-A OUTPUT -o lo -j ACCEPT") <
	    at(buf, "-A OUTPUT -d 10.213.0.2/32 -p tcp -m tcp --dport 3128 "
	    "-j ACCEPT"));
	/* Everything else refused, last; only the proxy's answers come in. */
	assert_true(at(buf, "--dport 3128 -j ACCEPT") <
	    at(buf, "-A OUTPUT -j REJECT --reject-with icmp-admin-prohibited"));
	at(buf, "-A INPUT -s 10.213.0.2/32 -p tcp -m tcp --sport 3128 "
	    "-j ACCEPT");
	assert_true(at(buf, "--sport 3128 -j ACCEPT") <
	    at(buf, "-A INPUT -j DROP"));
	assert_true(at(buf, "*filter\n") == 0);
	at(buf, "COMMIT\n");
	assert_null(strstr(buf, "*nat"));	/* Docker's own rules stay */
}

static void
test_v6_rules(void **state)
{
	char	buf[NETSEAL_RULES_MAX];

	assert_int_equal(netseal_rules(6, NULL, buf, sizeof(buf)), 0);
	assert_true(at(buf, "-A OUTPUT -o lo -j ACCEPT") <
	    at(buf, "-A OUTPUT -j REJECT"));
	assert_true(at(buf, "-A INPUT -i lo -j ACCEPT") <
	    at(buf, "-A INPUT -j DROP"));
	assert_null(strstr(buf, "--dport"));
}

static void
test_bad_proxy(void **state)
{
	static const char *const bad[] = {
		NULL, "", "10.0.0.1", "10.0.0.1:", "10.0.0.1:0",
		"10.0.0.1:65536", "10.0.0.1:3128x", "10.0.0.1: 80",
		"10.0.0.1:-1", "proxy:3128", "::1:3128", "[::1]:3128",
		"10.0.0.1 -j ACCEPT:3128", "10.0.0.256:3128",
		"10.0.0.1:3128\n-A OUTPUT -j ACCEPT",
	};
	char	buf[NETSEAL_RULES_MAX];
	size_t	i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (netseal_rules(4, bad[i], buf, sizeof(buf)) != -1)
			fail_msg("accepted '%s'", bad[i] ? bad[i] : "(null)");
	/* Too small a buffer is an error, not a truncated rule set. */
	assert_int_equal(netseal_rules(4, "10.0.0.1:3128", buf, 64), -1);
}

static void
test_probe_target(void **state)
{
	char	buf[64];

	assert_int_equal(netseal_probe_target("10.213.0.2:3128", buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "10.213.0.2:1");
	assert_int_equal(netseal_probe_target("10.213.0.2:1", buf,
	    sizeof(buf)), 0);
	assert_string_equal(buf, "10.213.0.2:2");
	assert_int_equal(netseal_probe_target("x:1", buf, sizeof(buf)), -1);
	assert_int_equal(netseal_probe_target("10.213.0.2:3128", buf, 8), -1);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_v4_rules),
		cmocka_unit_test(test_v6_rules),
		cmocka_unit_test(test_bad_proxy),
		cmocka_unit_test(test_probe_target),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
