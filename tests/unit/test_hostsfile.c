/* test_hostsfile.c: the --hosts static name map. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "hostsfile.h"

static const char	*text =
    "# test map\n"
    "127.0.0.1 allowed.test Other.Test.  # case and trailing dot\n"
    "\n"
    "::1 allowed.test\n"
    "10.0.0.5\tpypi.sandgate.test\n";

static void
test_lookup(void **state)
{
	struct sockaddr_storage	 out[4];
	struct hostsfile	*hf;
	char			*cause = NULL, a[64];

	hf = hostsfile_parse(text, strlen(text), "hosts", &cause);
	assert_non_null(hf);
	assert_int_equal(hostsfile_lookup(hf, "allowed.test", out, 4), 2);
	assert_int_equal(out[0].ss_family, AF_INET);	/* file order */
	assert_int_equal(out[1].ss_family, AF_INET6);
	assert_int_equal(hostsfile_lookup(hf, "other.test", out, 4), 1);
	inet_ntop(AF_INET, &((struct sockaddr_in *)&out[0])->sin_addr, a,
	    sizeof(a));
	assert_string_equal(a, "127.0.0.1");
	assert_int_equal(hostsfile_lookup(hf, "pypi.sandgate.test", out, 4), 1);
	assert_int_equal(hostsfile_lookup(hf, "missing.test", out, 4), 0);
	assert_int_equal(hostsfile_lookup(hf, "allowed.test", out, 1), 1);
	hostsfile_free(hf);
}

/* A file of nothing, or of comments only: an empty map (UBSan-clean). */
static void
test_empty(void **state)
{
	static const char *const texts[] = { "", "# none\n\n" };
	struct sockaddr_storage	 out[1];
	struct hostsfile	*hf;
	char			*cause = NULL;
	size_t			 i;

	for (i = 0; i < 2; i++) {
		hf = hostsfile_parse(texts[i], strlen(texts[i]), "hosts",
		    &cause);
		assert_non_null(hf);
		assert_int_equal(hostsfile_lookup(hf, "a.test", out, 1), 0);
		hostsfile_free(hf);
	}
}

static void
test_errors(void **state)
{
	static const struct {
		const char	*text;
		const char	*want;
	} t[] = {
		{ "127.0.0.1 ok.test\nnot-an-ip name.test\n",
		  "hosts:2: invalid address" },
		{ "127.0.0.1\n", "hosts:1: address without a name" },
		{ "127.0.0.1 bad%zone.test\n", "hosts:1: " },
	};
	struct hostsfile	*hf;
	char			*cause;
	size_t			 i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		cause = NULL;
		hf = hostsfile_parse(t[i].text, strlen(t[i].text), "hosts",
		    &cause);
		assert_null(hf);
		assert_non_null(cause);
		assert_memory_equal(cause, t[i].want, strlen(t[i].want));
		free(cause);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lookup),
		cmocka_unit_test(test_errors),
		cmocka_unit_test(test_empty),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
