/*
 * test_cspec.c: the one hardened base of every container (cspec.h): the
 * merge (JSON in, JSON out), and the three real specs (a sandbox, doctor's
 * probe container, the proxy) each holding every control of the base,
 * the seccomp profile included, whatever the base comes to hold.
 */
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "auditkey.h"
#include "cspec.h"
#include "probe.h"
#include "proxyctl.h"
#include "sandbox.h"
#include "secretdir.h"
#include "state.h"

/* Every member of the base's HostConfig is in spec's, as it is. */
static void
assert_has_base(const char *what, json_t *spec)
{
	json_t		*base = cspec_base(), *bh, *sh, *v, *opt;
	const char	*key;
	size_t		 i, j;
	int		 found;

	assert_non_null(spec);
	bh = json_object_get(base, "HostConfig");
	sh = json_object_get(spec, "HostConfig");
	assert_non_null(sh);
	json_object_foreach(bh, key, v) {
		if (strcmp(key, "SecurityOpt") != 0) {
			if (!json_equal(v, json_object_get(sh, key)))
				fail_msg("%s: HostConfig.%s differs from the "
				    "base", what, key);
			continue;
		}
		json_array_foreach(v, i, opt) {
			found = 0;
			for (j = 0; j < json_array_size(json_object_get(sh,
			    key)); j++)
				found |= json_equal(opt, json_array_get(
				    json_object_get(sh, key), j));
			if (!found)
				fail_msg("%s: SecurityOpt lacks %.40s", what,
				    json_string_value(opt));
		}
	}
	json_decref(base);
}

static void
assert_cap_drop_all(json_t *host)
{
	json_t	*v = json_object_get(host, "CapDrop");

	assert_int_equal(json_array_size(v), 1);
	assert_string_equal(json_string_value(json_array_get(v, 0)), "ALL");
}

static void
test_base(void **state)
{
	json_t		*b = cspec_base(), *h, *opt;
	const char	*s;

	(void)state;
	assert_non_null(b);
	h = json_object_get(b, "HostConfig");
	assert_cap_drop_all(h);
	assert_true(json_is_true(json_object_get(h, "ReadonlyRootfs")));
	assert_true(json_is_false(json_object_get(h, "Privileged")));
	opt = json_object_get(h, "SecurityOpt");
	assert_string_equal(json_string_value(json_array_get(opt, 0)),
	    "no-new-privileges");
	s = json_string_value(json_array_get(opt, 1));
	assert_non_null(s);
	assert_int_equal(strncmp(s, "seccomp={", 9), 0);
	assert_non_null(strstr(s, "\"defaultAction\":\"SCMP_ACT_ERRNO\""));
	json_decref(b);
}

/* JSON in, JSON out: own wins, SecurityOpt adds, the rest is kept. */
static void
test_merge(void **state)
{
	json_t	*own, *h, *opt;

	(void)state;
	own = cspec_new(json_pack("{s:s, s:{s:b, s:[s], s:I}}", "Image", "x",
	    "HostConfig", "ReadonlyRootfs", 0, "SecurityOpt",
	    "apparmor=docker-default", "Memory", (json_int_t)1024));
	assert_non_null(own);
	assert_string_equal(json_string_value(json_object_get(own, "Image")),
	    "x");
	h = json_object_get(own, "HostConfig");
	assert_true(json_is_false(json_object_get(h, "ReadonlyRootfs")));
	assert_int_equal(json_integer_value(json_object_get(h, "Memory")),
	    1024);
	assert_cap_drop_all(h);
	opt = json_object_get(h, "SecurityOpt");
	assert_int_equal(json_array_size(opt), 3);
	assert_string_equal(json_string_value(json_array_get(opt, 0)),
	    "no-new-privileges");
	assert_string_equal(json_string_value(json_array_get(opt, 2)),
	    "apparmor=docker-default");
	json_decref(own);
	/* no HostConfig: the base's; not an object or NULL: NULL */
	own = cspec_new(json_pack("{s:s}", "Image", "y"));
	assert_has_base("no HostConfig", own);
	json_decref(own);
	assert_null(cspec_new(NULL));
}

static void
test_sandbox(void **state)
{
	struct sandbox_meta	 m;
	struct sandbox_mounts	 mt = { "/work", "/probe", NULL, NULL };
	json_t			*spec;

	(void)state;
	sandbox_meta_init(&m);
	snprintf(m.id, sizeof(m.id), "sbx_test");
	sandbox_meta_set(&m.image, "debian:12");
	sandbox_meta_set(&m.network, "none");
	m.tmp_size = 1 << 20;
	m.cpus = 1;
	m.memory = 1 << 28;
	m.pids = 64;
	spec = sandbox_spec(&m, &mt, "session");
	assert_has_base("sandbox", spec);
	/* its own controls stay */
	assert_true(json_is_false(json_object_get(json_object_get(spec,
	    "HostConfig"), "Init")));
	json_decref(spec);
	sandbox_meta_release(&m);
}

/* doctor's container: "every control a sandbox gets", seccomp too. */
static void
test_doctor(void **state)
{
	json_t	*spec = probe_check_spec("debian:12", "/probe", NULL);

	(void)state;
	assert_has_base("doctor", spec);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(
	    spec, "HostConfig"), "PidsLimit")), PROBE_CHECK_PIDS);
	json_decref(spec);
}

static void
test_proxy(void **state)
{
	struct proxyctl_opts	 o = { "/etc/sandgate/policy.d",
				    "/var/log/sandgate", "sandgate-egress",
				    PROXYCTL_SUBNET, NULL, NULL, NULL, 0 };
	json_t			*spec = proxyctl_spec(&o, "10.213.0.2");

	(void)state;
	assert_has_base("proxy", spec);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
	    json_object_get(spec, "HostConfig"), "RestartPolicy"), "Name")),
	    "unless-stopped");
	json_decref(spec);
}

/* Whether the JSON array a holds the string s. */
static int
array_has(json_t *a, const char *s)
{
	size_t	 i;
	json_t	*v;

	json_array_foreach(a, i, v)
		if (json_is_string(v) && strcmp(json_string_value(v), s) == 0)
			return 1;
	return 0;
}

/* Every folder the proxy is given is mounted, and named by its flag. */
static void
test_proxy_mounts(void **state)
{
	struct proxyctl_opts	 o = { "/p/policy.d", "/p/logs",
				    "sandgate-egress", PROXYCTL_SUBNET,
				    "/p/hosts", "10.0.0.53:53", "base,npm", 1 };
	json_t			*spec = proxyctl_spec(&o, "10.213.0.2");
	json_t			*cmd = json_object_get(spec, "Cmd");
	json_t			*binds = json_object_get(json_object_get(spec,
				    "HostConfig"), "Binds");
	char			 b[PATH_MAX + 64];

	(void)state;
	assert_true(array_has(binds, "/p/policy.d:/etc/sandgate/policy.d:ro"));
	assert_true(array_has(binds, "/p/logs:/var/log/sandgate:rw"));
	assert_true(array_has(binds, "/p/hosts:/etc/sandgate/hosts:ro"));
	snprintf(b, sizeof(b), "%s/proxy/secrets:" SECRETDIR_MOUNT ":ro",
	    state_root());
	assert_true(array_has(binds, b));
	snprintf(b, sizeof(b), "%s/proxy/keys:" AUDITKEY_PROXY_MOUNT ":rw",
	    state_root());
	assert_true(array_has(binds, b));
	snprintf(b, sizeof(b), "%s/keys/token.key.pub:" PROXYCTL_TOKEN_PUB
	    ":ro", state_root());
	assert_true(array_has(binds, b));
	assert_true(array_has(cmd, "--token-key"));
	assert_int_equal(json_array_size(binds), 8);
	assert_true(array_has(cmd, "10.213.0.2:3128"));
	assert_true(array_has(cmd, "--ca-create"));
	assert_true(array_has(cmd, "/etc/sandgate/hosts"));
	assert_true(array_has(cmd, "10.0.0.53:53"));
	assert_true(array_has(cmd, "base,npm"));
	assert_true(array_has(cmd, "--log-allowed"));
	assert_true(array_has(cmd, PROXYCTL_LOG_KEEP_MIN_AGE));
	json_decref(spec);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_base),
		cmocka_unit_test(test_merge),
		cmocka_unit_test(test_sandbox),
		cmocka_unit_test(test_doctor),
		cmocka_unit_test(test_proxy),
		cmocka_unit_test(test_proxy_mounts),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
