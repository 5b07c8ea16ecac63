/* test_runrec.c: the fields of a run record (runrec_fields). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "exec.h"
#include "runrec.h"
#include "sandbox.h"

static void
meta_init(struct sandbox_meta *m)
{
	memset(m, 0, sizeof(*m));
	strcpy(m->id, "sbx_0123456789abcdef01234567");
	m->image = "sandgate/base";
	m->image_id = "sha256:abc";
	m->cpus = 1.5;
	m->memory = 1ULL << 30;
	m->pids = 256;
	m->disk = 2ULL << 30;
	m->tmp_size = 64ULL << 20;
}

static json_t *
flag(json_t *o, const char *name)
{
	return json_object_get(json_object_get(o, "flags"), name);
}

/* A command that ran: its result and limits, every flag as it was. */
static void
test_ran(void **state)
{
	struct sandbox_meta	 m;
	struct exec_result	 x;
	struct runrec		 r;
	char			*argv[] = { "sh", "-c", "echo hi", NULL };
	json_t			*o;

	(void)state;
	meta_init(&m);
	memset(&x, 0, sizeof(x));
	x.exit_code = 137;
	x.cmd_exit = 137;
	x.oom_killed = 1;
	x.container_died = 1;
	x.duration_ms = 420;
	x.start.tv_sec = 1700000000;
	x.end.tv_sec = 1700000001;
	memset(&r, 0, sizeof(r));
	r.kind = "exec";
	r.run_id = "run_x";
	r.meta = &m;
	r.argv = argv;
	r.timeout = 600;
	r.res = &x;
	o = runrec_fields(&r);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "event")),
	    "run.exec");
	assert_string_equal(json_string_value(json_object_get(o, "command")),
	    "sh -c echo hi");
	assert_int_equal(json_array_size(json_object_get(o, "argv")), 3);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")),
	    137);
	assert_int_equal(json_integer_value(json_object_get(o, "duration_ms")),
	    420);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o,
	    "limits"), "pids")), 256);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o,
	    "limits"), "timeout")), 600);
	assert_true(json_is_string(json_object_get(o, "start")));
	assert_true(json_is_true(flag(o, "oom_killed")));
	assert_true(json_is_true(flag(o, "container_stopped")));
	assert_true(json_is_false(flag(o, "timed_out")));
	assert_true(json_is_false(flag(o, "pids_limit_hit")));
	assert_string_equal(json_string_value(json_object_get(o, "cleanup")),
	    "ok");
	json_decref(o);
}

/* A command that never ran: exit 125, no times, every flag false. */
static void
test_never_ran(void **state)
{
	struct sandbox_meta	 m;
	struct runrec		 r;
	char			*argv[] = { "true", NULL };
	json_t			*o;

	(void)state;
	meta_init(&m);
	memset(&r, 0, sizeof(r));
	r.kind = "run";
	r.run_id = "run_y";
	r.meta = &m;
	r.argv = argv;
	r.cleanup = "failed: container remove";
	o = runrec_fields(&r);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "event")),
	    "run.run");
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")),
	    125);
	assert_true(json_is_null(json_object_get(o, "start")));
	assert_true(json_is_null(json_object_get(o, "cmd_exit")));
	assert_true(json_is_false(flag(o, "container_stopped")));
	assert_string_equal(json_string_value(json_object_get(o, "cleanup")),
	    "failed: container remove");
	json_decref(o);
}

/* A long argv is cut at the log's field limit, never overflowing. */
static void
test_long_command(void **state)
{
	struct sandbox_meta	 m;
	struct runrec		 r;
	char			*big, *argv[3];
	json_t			*o;

	(void)state;
	meta_init(&m);
	big = malloc(100000);
	assert_non_null(big);
	memset(big, 'a', 99999);
	big[99999] = '\0';
	argv[0] = "echo";
	argv[1] = big;
	argv[2] = NULL;
	memset(&r, 0, sizeof(r));
	r.kind = "exec";
	r.run_id = "run_z";
	r.meta = &m;
	r.argv = argv;
	o = runrec_fields(&r);
	assert_non_null(o);
	assert_true(strlen(json_string_value(json_object_get(o, "command"))) <
	    99999);
	json_decref(o);
	free(big);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ran),
		cmocka_unit_test(test_never_ran),
		cmocka_unit_test(test_long_command),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
