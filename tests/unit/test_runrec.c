/*
 * test_runrec.c: the fields of a run record (runrec_fields), and how the
 * controller writes them to runs.jsonl against whoever else writes the
 * records folder (runrec_event).
 */
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "exec.h"
#include "runrec.h"
#include "sandbox.h"
#include "util.h"

struct state {
	char	root[64];
	char	runs[192];
	char	anchor[192];
};

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

/* A record of kind for run_id, of m's sandbox, running argv. */
static void
rec_init(struct runrec *r, const char *kind, const char *run_id,
    struct sandbox_meta *m, char **argv)
{
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->run_id = run_id;
	r->meta = m;
	r->argv = argv;
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
	rec_init(&r, "exec", "run_x", &m, argv);
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

/*
 * What the end left undone is the record's cleanup when the caller has
 * nothing else to say, and a sandbox stopped from outside is a container
 * stop (atk16r7 F6: "container_stopped": false, "cleanup": "ok" before).
 */
static void
test_cleanup_from_result(void **state)
{
	static const struct {
		int		 sandbox_killed, kill_failed;
		const char	*given, *cleanup;
		int		 stopped;
	} t[] = {
		{ 0, 0, NULL, "ok", 0 },
		{ 1, 0, NULL, "sandbox stopped from outside", 1 },
		{ 1, 1, NULL, "processes may remain", 1 },
		{ 0, 1, NULL, "processes may remain", 0 },
		{ 1, 0, "failed: container remove", "failed: container remove",
		  1 },
	};
	struct sandbox_meta	 m;
	struct exec_result	 x;
	struct runrec		 r;
	char			*argv[] = { "true", NULL };
	json_t			*o;
	size_t			 i;

	(void)state;
	meta_init(&m);
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&x, 0, sizeof(x));
		x.gvisor = 1;
		x.sandbox_killed = t[i].sandbox_killed;
		x.kill_failed = t[i].kill_failed;
		rec_init(&r, "exec", "run_k", &m, argv);
		r.res = &x;
		r.cleanup = t[i].given;
		o = runrec_fields(&r);
		assert_non_null(o);
		assert_non_null(strstr(json_string_value(json_object_get(o,
		    "cleanup")), t[i].cleanup));
		assert_int_equal(json_is_true(flag(o, "container_stopped")),
		    t[i].stopped);
		assert_int_equal(json_is_true(flag(o, "sandbox_killed")),
		    t[i].sandbox_killed);
		json_decref(o);
	}
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
	rec_init(&r, "run", "run_y", &m, argv);
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
	assert_true(json_is_false(flag(o, "not_started")));
	assert_string_equal(json_string_value(json_object_get(o, "cleanup")),
	    "failed: container remove");
	json_decref(o);
}

/*
 * A command that never started though sandgate gave a result (the
 * sandbox's lock held all its --timeout): flags.not_started.
 */
static void
test_not_started(void **state)
{
	struct sandbox_meta	 m;
	struct runrec		 r;
	struct exec_result	 x;
	char			*argv[] = { "true", NULL };
	json_t			*o;

	(void)state;
	meta_init(&m);
	memset(&x, 0, sizeof(x));
	x.timed_out = 1;
	x.exit_code = 124;
	x.cmd_exit = -1;
	x.unstarted = "an apply or a discard held the sandbox all that time";
	rec_init(&r, "exec", "run_n", &m, argv);
	r.res = &x;
	o = runrec_fields(&r);
	assert_non_null(o);
	assert_true(json_is_true(flag(o, "not_started")));
	assert_true(json_is_true(flag(o, "timed_out")));
	json_decref(o);
	x.unstarted = NULL;
	o = runrec_fields(&r);
	assert_true(json_is_false(flag(o, "not_started")));
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
	rec_init(&r, "exec", "run_z", &m, argv);
	o = runrec_fields(&r);
	assert_non_null(o);
	assert_true(strlen(json_string_value(json_object_get(o, "command"))) <
	    99999);
	json_decref(o);
	free(big);
}

/* A state folder of its own: keys/ (the key folder), records/. */
static int
state_setup(void **state)
{
	struct state	*t = calloc(1, sizeof(*t));
	char		 dir[96];

	if (t == NULL)
		return -1;
	snprintf(t->root, sizeof(t->root), "/tmp/sg-runrec-"
	    UTIL_MKTEMP_SUFFIX);
	if (mkdtemp(t->root) == NULL)
		return -1;
	snprintf(dir, sizeof(dir), "%s/records", t->root);
	snprintf(t->runs, sizeof(t->runs), "%s/runs.jsonl", dir);
	snprintf(t->anchor, sizeof(t->anchor), "%s/keys/runs.key.anchor",
	    t->root);
	setenv("SANDGATE_STATE", t->root, 1);
	setenv("SANDGATE_RECORD_DIR", dir, 1);
	*state = t;
	return 0;
}

static int
state_teardown(void **state)
{
	struct state	*t = *state;
	char		*cmd;

	util_xasprintf(&cmd, "rm -rf '%s'", t->root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", t->root);
	free(cmd);
	free(t);
	return 0;
}

/*
 * runrec_event() in a child that SIGALRM ends if it waits on something
 * (a hang guard, not a timing check): its return, or -2 if it hung.
 */
static int
event_in_child(const char *detail)
{
	char	*cause = NULL;
	pid_t	 pid;
	int	 status;

	pid = fork();
	assert_true(pid != -1);
	if (pid == 0) {
		alarm(60);
		_exit(runrec_event("sandbox.test", "sbx_t", detail, &cause) ==
		    0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFEXITED(status))
		return -2;
	return WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* How many lines of path contain what. */
static int
count_in(const char *path, const char *what)
{
	char	 line[8192];
	FILE	*f;
	int	 n = 0;

	if ((f = fopen(path, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL)
		if (strstr(line, what) != NULL)
			n++;
	fclose(f);
	return n;
}

/*
 * atk20r16 F2/F4: whoever writes the records folder holds a lock on
 * runs.jsonl (or on a file put at its name). The controller's writers do
 * not wait on it: they exclude each other on the key's lock, outside the
 * folder, and the record is written and signed.
 */
static void
test_folder_lock_no_wait(void **state)
{
	struct state	*t = *state;
	int		 fd;

	assert_int_equal(event_in_child("first"), 0);
	fd = open(t->runs, O_RDONLY);
	assert_true(fd != -1);
	assert_int_equal(flock(fd, LOCK_EX), 0);
	assert_int_equal(event_in_child("while locked"), 0);
	close(fd);
	assert_int_equal(count_in(t->runs, "while locked"), 1);
	assert_int_equal(count_in(t->runs, "\"reason\":\"close\""), 2);
}

/* How an attacker who writes the records folder keeps a record out. */
enum spoil { SPOIL_FIFO, SPOIL_SYMLINK, SPOIL_JUNK };

/* Spoil runs.jsonl; its original is kept at aside (not for junk). */
static void
spoil(const struct state *t, enum spoil how, const char *aside)
{
	char	 junk[4096];
	FILE	*f;
	int	 i;

	if (how != SPOIL_JUNK)
		assert_int_equal(rename(t->runs, aside), 0);
	if (how == SPOIL_FIFO)
		assert_int_equal(mkfifo(t->runs, 0600), 0);
	else if (how == SPOIL_SYMLINK)
		assert_int_equal(symlink(aside, t->runs), 0);
	else {
		memset(junk, 'x', sizeof(junk));
		assert_non_null(f = fopen(t->runs, "a"));
		for (i = 0; i < 75; i++)
			assert_int_equal(fwrite(junk, 1, sizeof(junk), f),
			    sizeof(junk));
		fclose(f);
	}
}

/*
 * atk20r16 F1: runs.jsonl made a FIFO, a symlink, or 300 KB of junk: the
 * exec's record cannot be written, and is counted lost in the anchor
 * (outside the folder); once the original is back, the next record is
 * preceded by the log.outage line that says so.
 */
static void
test_unwritable_counted(void **state)
{
	static const enum spoil	 hows[] = { SPOIL_FIFO, SPOIL_SYMLINK,
				    SPOIL_JUNK };
	struct state		*t = *state;
	struct stat		 st;
	char			 aside[256];
	size_t			 i;

	snprintf(aside, sizeof(aside), "%s.held", t->runs);
	for (i = 0; i < sizeof(hows) / sizeof(hows[0]); i++) {
		assert_int_equal(event_in_child("before"), 0);
		assert_int_equal(stat(t->runs, &st), 0);
		spoil(t, hows[i], aside);
		assert_int_equal(event_in_child("kept out"), -1);
		assert_int_equal(count_in(t->anchor, " lost=1 "), 1);
		if (hows[i] == SPOIL_JUNK)
			assert_int_equal(truncate(t->runs, st.st_size), 0);
		else {
			assert_int_equal(unlink(t->runs), 0);
			assert_int_equal(rename(aside, t->runs), 0);
		}
		assert_int_equal(event_in_child("after"), 0);
		assert_int_equal(count_in(t->anchor, " lost="), 0);
		assert_int_equal(count_in(t->runs, "\"log.outage\""),
		    (int)i + 1);
	}
}

/*
 * atk20r17 F4: a run-record key the writer refuses (mode 0640): the
 * record does not go in unsigned after the anchored close, where the
 * records folder's writer could cut it, but is counted lost in the
 * anchor; once the key is fixed, the next record follows a log.outage.
 */
static void
test_key_refused_counted(void **state)
{
	struct state	*t = *state;
	char		 key[160];

	snprintf(key, sizeof(key), "%s/keys/runs.key", t->root);
	assert_int_equal(event_in_child("before"), 0);
	assert_int_equal(chmod(key, 0640), 0);
	assert_int_equal(event_in_child("unsigned"), -1);
	assert_int_equal(count_in(t->runs, "unsigned"), 0);
	assert_int_equal(count_in(t->anchor, " lost=1 "), 1);
	assert_int_equal(chmod(key, 0600), 0);
	assert_int_equal(event_in_child("after"), 0);
	assert_int_equal(count_in(t->anchor, " lost="), 0);
	assert_int_equal(count_in(t->runs, "\"log.outage\""), 1);
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, state_setup, state_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_ran),
		cmocka_unit_test(test_cleanup_from_result),
		cmocka_unit_test(test_never_ran),
		cmocka_unit_test(test_not_started),
		cmocka_unit_test(test_long_command),
		T(test_folder_lock_no_wait),
		T(test_key_refused_counted),
		T(test_unwritable_counted),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
