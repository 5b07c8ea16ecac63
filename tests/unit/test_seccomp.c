/*
 * test_seccomp.c: the seccomp profile every sandbox container gets
 * (cspec_seccomp_profile, from seccomp_profile.h) is an allowlist:
 * unknown syscalls refused, nothing sandgate refuses on the list, the
 * argument checks in place; and the copy deploy/kubernetes ships for the
 * nodes is that profile.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "cspec.h"
#include "sandbox.h"
#include "seccomp_profile.h"

/* 1 when some rule with action names name (and no argument condition). */
static int
allowed_plain(json_t *profile, const char *name)
{
	json_t	*r, *n;
	size_t	 i, j;

	json_array_foreach(json_object_get(profile, "syscalls"), i, r) {
		if (strcmp(json_string_value(json_object_get(r, "action")),
		    "SCMP_ACT_ALLOW") != 0 || json_object_get(r, "args") != NULL)
			continue;
		json_array_foreach(json_object_get(r, "names"), j, n)
			if (strcmp(json_string_value(n), name) == 0)
				return 1;
	}
	return 0;
}

/* The argument values personality(2) is allowed with. */
static int
persona_allowed(json_t *profile, json_int_t v)
{
	json_t	*r, *a;
	size_t	 i;

	json_array_foreach(json_object_get(profile, "syscalls"), i, r) {
		if (strcmp(json_string_value(json_array_get(json_object_get(r,
		    "names"), 0)), "personality") != 0)
			continue;
		a = json_array_get(json_object_get(r, "args"), 0);
		if (strcmp(json_string_value(json_object_get(a, "op")),
		    "SCMP_CMP_EQ") == 0 &&
		    json_integer_value(json_object_get(a, "value")) == v)
			return 1;
	}
	return 0;
}

static void
test_default_refuses(void **state)
{
	json_t	*p = cspec_seccomp_profile();

	(void)state;
	assert_non_null(p);
	assert_string_equal(json_string_value(json_object_get(p,
	    "defaultAction")), "SCMP_ACT_ERRNO");
	assert_int_equal(json_integer_value(json_object_get(p,
	    "defaultErrnoRet")), 1);
	/* the native ABI only: no 32-bit or x32 syscalls */
	assert_null(json_object_get(p, "architectures"));
	json_decref(p);
}

static void
test_refused_not_listed(void **state)
{
	static const char *const refused[] = { SG_SECCOMP_REFUSED_NAMES,
	    "unshare", "setns", "mount", "bpf", "keyctl", "add_key",
	    "userfaultfd", "kexec_load", "init_module", "perf_event_open",
	    "clone", "clone3", "socket", "personality", "kcmp",
	    "pidfd_getfd", "process_madvise", NULL };
	json_t	*p = cspec_seccomp_profile();
	size_t	 i;

	(void)state;
	for (i = 0; refused[i] != NULL; i++) {
		if (allowed_plain(p, refused[i]))
			fail_msg("'%s' allowed without condition", refused[i]);
	}
	/* what every program needs is there */
	assert_true(allowed_plain(p, "read"));
	assert_true(allowed_plain(p, "execve"));
	assert_true(allowed_plain(p, "openat"));
	json_decref(p);
}

static void
test_argument_rules(void **state)
{
	json_t	*p = cspec_seccomp_profile(), *r;
	size_t	 i;
	int	 clone_ok = 0, clone3 = 0, sock = 0;
	const char	*op;
	json_int_t	 v;

	(void)state;
	assert_true(persona_allowed(p, 0));
	assert_true(persona_allowed(p, 0xffffffff));
	assert_false(persona_allowed(p, SG_SECCOMP_READ_IMPLIES_EXEC));
	json_array_foreach(json_object_get(p, "syscalls"), i, r) {
		const char	*n = json_string_value(json_array_get(
				    json_object_get(r, "names"), 0));
		json_t		*a = json_array_get(json_object_get(r, "args"),
				    0);

		if (strcmp(n, "clone") == 0 && json_integer_value(
		    json_object_get(a, "value")) == SG_SECCOMP_CLONE_NS_MASK &&
		    json_integer_value(json_object_get(a, "valueTwo")) == 0)
			clone_ok = 1;
		if (strcmp(n, "clone3") == 0 && json_integer_value(
		    json_object_get(r, "errnoRet")) == 38)
			clone3 = 1;
		/* families compared on 64 bits: below 40, or 41 to 45 */
		if (strcmp(n, "socket") != 0)
			continue;
		op = json_string_value(json_object_get(a, "op"));
		v = json_integer_value(json_object_get(a, "value"));
		if (strcmp(op, "SCMP_CMP_LT") == 0 &&
		    v == SG_SECCOMP_SOCKET_REFUSED)
			sock++;
		else if (strcmp(op, "SCMP_CMP_EQ") == 0 &&
		    v > SG_SECCOMP_SOCKET_REFUSED && v < 46)
			sock++;
		else
			fail_msg("socket rule %s %lld", op, (long long)v);
	}
	assert_true(clone_ok);
	assert_true(clone3);
	assert_int_equal(sock, 6);
	json_decref(p);
}

/*
 * The profile deploy/kubernetes ships for the nodes (a kubelet Localhost
 * profile) is this one. With SANDGATE_SECCOMP_EXPORT=FILE the test first
 * writes the profile to FILE: that is how the shipped copy is made
 * (deploy/kubernetes/gen-configmaps.sh).
 */
static void
test_shipped_profile(void **state)
{
	const char	*out, *path;
	json_error_t	 err;
	json_t		*p, *shipped;

	(void)state;
	path = "../../deploy/kubernetes/seccomp/sandgate.json";
	p = cspec_seccomp_profile();
	assert_non_null(p);
	if ((out = getenv("SANDGATE_SECCOMP_EXPORT")) != NULL)
		assert_int_equal(json_dump_file(p, out, JSON_INDENT(1) |
		    JSON_SORT_KEYS), 0);
	if ((shipped = json_load_file(path, 0, &err)) == NULL)
		fail_msg("%s: %s (line %d)", path, err.text, err.line);
	if (!json_equal(p, shipped))
		fail_msg("%s is not cspec_seccomp_profile(): make it again "
		    "with deploy/kubernetes/gen-configmaps.sh", path);
	json_decref(shipped);
	json_decref(p);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_default_refuses),
		cmocka_unit_test(test_refused_not_listed),
		cmocka_unit_test(test_argument_rules),
		cmocka_unit_test(test_shipped_profile),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
