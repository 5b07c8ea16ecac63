/* test_probe.c: probe_check() against good, tampered and garbage reports. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "probe.h"

/* What a correctly confined sandbox reports (cgroup v1, 128 MiB, 64, 1 cpu). */
static const char	good_v1[] =
    "{\"probe\":1,\"uid\":1000,\"gid\":1000,"
    "\"cap_eff\":\"0000000000000000\",\"cap_prm\":\"0000000000000000\","
    "\"cap_bnd\":\"0000000000000000\",\"cap_amb\":\"0000000000000000\","
    "\"no_new_privs\":1,\"seccomp\":2,\"init_mem\":\"EACCES\","
    "\"personality_rie\":\"EPERM\",\"root_ro\":true,"
    "\"root_write_fails\":true,\"tmp_mounted\":true,\"tmp_noexec\":true,"
    "\"tmp_nosuid\":true,\"cgroup\":\"v1\",\"memory_max\":134217728,"
    "\"memsw_max\":134217728,\"swap_max\":null,\"pids_max\":64,"
    "\"cpu_quota_us\":100000,\"cpu_period_us\":100000,\"net_ifaces\":[],"
    "\"docker_sock\":false}";

static const char	good_v2[] =
    "{\"probe\":1,\"uid\":1000,\"gid\":1000,"
    "\"cap_eff\":\"0\",\"cap_prm\":\"0\",\"cap_bnd\":\"0\",\"cap_amb\":\"0\","
    "\"no_new_privs\":1,\"seccomp\":2,\"init_mem\":\"EACCES\","
    "\"personality_rie\":\"EPERM\",\"root_ro\":true,"
    "\"root_write_fails\":true,\"tmp_mounted\":true,\"tmp_noexec\":true,"
    "\"tmp_nosuid\":true,\"cgroup\":\"v2\",\"memory_max\":134217728,"
    "\"memsw_max\":null,\"swap_max\":0,\"pids_max\":64,"
    "\"cpu_quota_us\":50000,\"cpu_period_us\":100000,\"net_ifaces\":[],"
    "\"docker_sock\":false}";

/* One tampered field: replace FROM by TO in good_v1, expect WORDS. */
struct tamper {
	const char	*from;
	const char	*to;
	const char	*words;
};

static const struct tamper	tampers[] = {
	{ "\"cap_eff\":\"0000000000000000\"",
	    "\"cap_eff\":\"00000000a80425fb\"",
	    "effective capabilities not empty (CapEff 00000000a80425fb)" },
	{ "\"cap_prm\":\"0000000000000000\"",
	    "\"cap_prm\":\"0000000000000400\"",
	    "permitted capabilities not empty" },
	{ "\"cap_bnd\":\"0000000000000000\"",
	    "\"cap_bnd\":\"000001ffffffffff\"",
	    "bounding capabilities not empty" },
	{ "\"cap_amb\":\"0000000000000000\"", "\"cap_amb\":\"zz\"",
	    "ambient capabilities unreadable" },
	{ "\"cap_eff\":\"0000000000000000\"",
	    "\"cap_eff\":0",
	    "effective capabilities unreadable" },
	{ "\"uid\":1000", "\"uid\":0", "sandbox runs as root (uid 0)" },
	{ "\"uid\":1000", "\"uid\":\"1000\"", "user id unreadable" },
	{ "\"no_new_privs\":1", "\"no_new_privs\":0",
	    "no_new_privs not set (NoNewPrivs 0)" },
	{ "\"seccomp\":2", "\"seccomp\":0", "seccomp filter not active" },
	{ "\"init_mem\":\"EACCES\"", "\"init_mem\":\"opened\"",
	    "the container's init can be written from inside the sandbox "
	    "(/proc/1/mem: opened)" },
	{ "\"init_mem\":\"EACCES\"", "\"init_mem\":null",
	    "the container's init can be written from inside the sandbox "
	    "(/proc/1/mem: not checked)" },
	{ "\"personality_rie\":\"EPERM\"", "\"personality_rie\":\"allowed\"",
	    "seccomp profile allows personality(READ_IMPLIES_EXEC) (allowed)" },
	{ "\"root_ro\":true", "\"root_ro\":false",
	    "root filesystem not mounted read-only" },
	{ "\"root_ro\":true", "\"root_ro\":1",
	    "root filesystem not mounted read-only" },
	{ "\"root_write_fails\":true", "\"root_write_fails\":false",
	    "root filesystem accepted a write" },
	{ "\"tmp_mounted\":true", "\"tmp_mounted\":false",
	    "/tmp is not a separate mount" },
	{ "\"tmp_noexec\":true", "\"tmp_noexec\":false",
	    "/tmp not mounted noexec" },
	{ "\"tmp_nosuid\":true", "\"tmp_nosuid\":null",
	    "/tmp not mounted nosuid" },
	{ "\"memory_max\":134217728", "\"memory_max\":268435456",
	    "memory limit is 256 MiB, expected 128 MiB" },
	{ "\"memory_max\":134217728", "\"memory_max\":\"max\"",
	    "memory limit not set (unlimited), expected 128 MiB" },
	{ "\"memory_max\":134217728", "\"memory_max\":9223372036854771712",
	    "memory limit not set (unlimited)" },
	{ "\"memory_max\":134217728", "\"memory_max\":null",
	    "memory limit not visible" },
	{ "\"memsw_max\":134217728", "\"memsw_max\":268435456",
	    "swap allowed (memory+swap limit 256 MiB, memory limit 128 MiB)" },
	{ "\"memsw_max\":134217728", "\"memsw_max\":9223372036854771712",
	    "swap allowed (memory+swap limit unlimited" },
	{ "\"memsw_max\":134217728", "\"memsw_max\":\"max\"",
	    "swap allowed (memory+swap limit unlimited" },
	{ "\"swap_max\":null", "\"swap_max\":\"max\"", "swap allowed" },
	{ "\"pids_max\":64", "\"pids_max\":65",
	    "pids limit is 65, expected 64" },
	{ "\"pids_max\":64", "\"pids_max\":\"max\"", "pids limit not set" },
	{ "\"cpu_quota_us\":100000", "\"cpu_quota_us\":\"max\"",
	    "cpu limit not set" },
	{ "\"cpu_quota_us\":100000", "\"cpu_quota_us\":200000",
	    "cpu limit is 2.00 cpus" },
	{ "\"cpu_period_us\":100000", "\"cpu_period_us\":0",
	    "cpu limit not visible" },
	{ "\"net_ifaces\":[]", "\"net_ifaces\":[\"eth0\"]",
	    "network interface 'eth0' present" },
	{ "\"net_ifaces\":[]", "\"net_ifaces\":null",
	    "network interfaces not visible" },
	{ "\"docker_sock\":false", "\"docker_sock\":true",
	    "Docker socket reachable" },
	{ "\"docker_sock\":false", "\"docker_sock\":0",
	    "Docker socket reachable" },
	{ "\"probe\":1", "\"probe\":2", "not a version 1 report" },
	{ ",\"uid\":1000", ",\"uid\":1000,\"uid\":1000", "not valid JSON" },
};

static void	expect_strict(struct probe_expect *);
static char	*replace(const char *, const char *, const char *);

static void
expect_strict(struct probe_expect *e)
{
	probe_expect_init(e);
	e->memory_bytes = 128ull << 20;
	e->pids = 64;
	e->cpus = 1.0;
	e->locked_init = 1;
}

static char *
replace(const char *s, const char *from, const char *to)
{
	const char	*at = strstr(s, from);
	size_t		 pre, len;
	char		*out;

	assert_non_null(at);
	pre = (size_t)(at - s);
	len = strlen(s) - strlen(from) + strlen(to) + 1;
	out = malloc(len);
	assert_non_null(out);
	snprintf(out, len, "%.*s%s%s", (int)pre, s, to, at + strlen(from));
	return out;
}

static void
test_good_reports_pass(void **state)
{
	struct probe_expect	 e;
	char			*failed = (char *)1;

	expect_strict(&e);
	assert_int_equal(probe_check(good_v1, &e, &failed), 0);
	assert_null(failed);
	e.cpus = 0.5;
	assert_int_equal(probe_check(good_v2, &e, &failed), 0);
	assert_null(failed);
}

static void
test_each_tamper_fails_with_words(void **state)
{
	struct probe_expect	 e;
	char			*json, *failed;
	size_t			 i;

	expect_strict(&e);
	for (i = 0; i < sizeof(tampers) / sizeof(tampers[0]); i++) {
		json = replace(good_v1, tampers[i].from, tampers[i].to);
		failed = NULL;
		if (probe_check(json, &e, &failed) != -1 || failed == NULL ||
		    strstr(failed, tampers[i].words) == NULL)
			fail_msg("tamper %zu (%s): got '%s'", i, tampers[i].to,
			    failed ? failed : "(pass)");
		free(failed);
		failed = NULL;
		free(json);
	}
}

/* Flags turn checks off; unset limits are not checked. */
static void
test_relaxed_expectations(void **state)
{
	struct probe_expect	 e;
	char			*json, *json2, *failed = NULL;

	probe_expect_init(&e);
	json = replace(good_v1, "\"net_ifaces\":[]",
	    "\"net_ifaces\":[\"eth0\"]");
	json2 = replace(json, "\"seccomp\":2", "\"seccomp\":0");
	assert_int_equal(probe_check(json2, &e, &failed), -1);
	free(failed);
	failed = NULL;
	e.network_none = 0;
	e.seccomp_filter = 0;
	assert_int_equal(probe_check(json2, &e, &failed), 0);
	free(json);
	free(json2);
	json = replace(good_v1, "\"pids_max\":64", "\"pids_max\":\"max\"");
	assert_int_equal(probe_check(json, &e, &failed), 0);
	free(json);
	/* Capabilities and no_new_privs are checked whatever the flags. */
	memset(&e, 0, sizeof(e));
	json = replace(good_v1, "\"no_new_privs\":1", "\"no_new_privs\":0");
	assert_int_equal(probe_check(json, &e, &failed), -1);
	free(failed);
	failed = NULL;
	free(json);
}

static void
test_garbage_fails_closed(void **state)
{
	static const char *const bad[] = {
		"", " ", "null", "[]", "1", "\"x\"", "{", "{}", "{\"probe\":1}",
		"{\"probe\":\"1\"}", "{\"probe\":1,\"uid\":1000}",
		"\xff\xfe{}", "{\"probe\":1}{\"probe\":1}",
	};
	struct probe_expect	 e;
	char			*failed, *big;
	size_t			 i;

	expect_strict(&e);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		failed = NULL;
		assert_int_equal(probe_check(bad[i], &e, &failed), -1);
		assert_non_null(failed);
		free(failed);
		failed = NULL;
	}
	big = malloc(PROBE_OUTPUT_MAX + 2);
	assert_non_null(big);
	memset(big, ' ', PROBE_OUTPUT_MAX + 1);
	big[PROBE_OUTPUT_MAX + 1] = '\0';
	assert_int_equal(probe_check(big, &e, &failed), -1);
	assert_string_equal(failed, "probe output too large");
	free(failed);
	failed = NULL;
	free(big);
}

static void
test_expect_init_is_strict(void **state)
{
	struct probe_expect	e;

	memset(&e, 0xff, sizeof(e));
	probe_expect_init(&e);
	assert_int_equal(e.readonly_root, 1);
	assert_int_equal(e.tmp_noexec, 1);
	assert_int_equal(e.network_none, 1);
	assert_int_equal(e.seccomp_filter, 1);
	assert_true(e.memory_bytes == 0 && e.pids == 0 && e.cpus == 0);
}

/* A proxy sandbox must show the network seal refusing both targets. */
static void
test_seal(void **state)
{
	static const struct { const char *seal; const char *words; } cases[] = {
		{ NULL, "network seal was not checked" },
		{ "\"seal\":1", "network seal was not checked" },
		{ "\"seal\":{\"dns\":\"answered\",\"neighbour\":\"EHOSTUNREACH\"}",
		    "resolver at 127.0.0.11 is reachable (answered)" },
		{ "\"seal\":{\"dns\":\"silent\",\"neighbour\":\"EHOSTUNREACH\"}",
		    "resolver at 127.0.0.11 is reachable (silent)" },
		{ "\"seal\":{\"neighbour\":\"EHOSTUNREACH\"}",
		    "resolver at 127.0.0.11 is reachable (?)" },
		{ "\"seal\":{\"dns\":\"EPERM\",\"neighbour\":\"ECONNREFUSED\"}",
		    "reachable on sandgate-internal (ECONNREFUSED)" },
		{ "\"seal\":{\"dns\":\"EPERM\",\"neighbour\":\"connected\"}",
		    "reachable on sandgate-internal (connected)" },
		{ "\"seal\":{\"dns\":\"EPERM\",\"neighbour\":\"silent\"}",
		    "reachable on sandgate-internal (silent)" },
		{ "\"seal\":{\"dns\":\"EPERM\",\"neighbour\":\"EHOSTUNREACH\"}",
		    NULL },
		{ "\"seal\":{\"dns\":\"EHOSTUNREACH\",\"neighbour\":\"EPERM\"}",
		    NULL },
	};
	struct probe_expect	 e;
	char			*base, *json, *failed, tail[256];
	size_t			 i;

	expect_strict(&e);
	e.network_none = 0;
	e.proxy_only = 1;
	e.sealed = 1;
	base = replace(good_v1, "\"net_ifaces\":[]",
	    "\"net_ifaces\":[\"eth0\"]");
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(tail, sizeof(tail), "\"docker_sock\":false%s%s",
		    cases[i].seal ? "," : "", cases[i].seal ? cases[i].seal : "");
		json = replace(base, "\"docker_sock\":false", tail);
		failed = NULL;
		if (cases[i].words == NULL) {
			if (probe_check(json, &e, &failed) != 0)
				fail_msg("seal %zu: refused: %s", i, failed);
		} else if (probe_check(json, &e, &failed) != -1 ||
		    failed == NULL || strstr(failed, cases[i].words) == NULL)
			fail_msg("seal %zu: got '%s'", i,
			    failed ? failed : "(pass)");
		free(failed);
		failed = NULL;
		free(json);
	}
	/* Not asked for (network none): not checked. */
	e.sealed = 0;
	assert_int_equal(probe_check(base, &e, &failed), 0);
	free(base);
}

/* $SANDGATE_PROBE wins when it names an executable file. */
static void
test_probe_path_env(void **state)
{
	setenv("SANDGATE_PROBE", "/bin/sh", 1);
	assert_string_equal(probe_path(), "/bin/sh");
	setenv("SANDGATE_PROBE", "/nonexistent/sandgate-probe", 1);
	assert_null(probe_path());
	setenv("SANDGATE_PROBE", "/etc", 1);
	assert_null(probe_path());
	unsetenv("SANDGATE_PROBE");
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_good_reports_pass),
		cmocka_unit_test(test_each_tamper_fails_with_words),
		cmocka_unit_test(test_relaxed_expectations),
		cmocka_unit_test(test_garbage_fails_closed),
		cmocka_unit_test(test_expect_init_is_strict),
		cmocka_unit_test(test_seal),
		cmocka_unit_test(test_probe_path_env),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
