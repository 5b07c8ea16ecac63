/* test_exec.c: bounded output capture, UTF-8 cleaning, the --json object. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sys/stat.h>

#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "exec.h"
#include "procstat.h"
#include "util.h"

static void
test_capture_under_cap(void **state)
{
	struct exec_capture	 c;
	unsigned long long	 cut;
	size_t			 len;
	char			*s;

	exec_capture_init(&c, 16);
	assert_int_equal(exec_capture_add(&c, (const unsigned char *)"hello ",
	    6), 0);
	assert_int_equal(exec_capture_add(&c, (const unsigned char *)"world!!!",
	    8), 0);
	s = exec_capture_text(&c, &len, &cut);
	assert_int_equal(cut, 0);
	assert_int_equal(len, 14);
	assert_string_equal(s, "hello world!!!");
	free(s);
	exec_capture_release(&c);
}

/* Exactly at the cap nothing is cut; one byte more cuts one byte. */
static void
test_capture_at_cap(void **state)
{
	struct exec_capture	 c;
	unsigned long long	 cut;
	size_t			 len;
	char			*s;

	exec_capture_init(&c, 10);
	exec_capture_add(&c, (const unsigned char *)"0123456789", 10);
	s = exec_capture_text(&c, &len, &cut);
	assert_int_equal(cut, 0);
	assert_string_equal(s, "0123456789");
	free(s);
	exec_capture_add(&c, (const unsigned char *)"A", 1);
	s = exec_capture_text(&c, &len, &cut);
	assert_int_equal(cut, 1);
	assert_string_equal(s, "01234\n[sandgate: 1 bytes cut]\n6789A");
	free(s);
	exec_capture_release(&c);
}

/* Fed in odd pieces, the head and the last bytes survive. */
static void
test_capture_flood(void **state)
{
	struct exec_capture	 c;
	unsigned long long	 cut;
	unsigned char		 buf[7];
	size_t			 len, i, j, total = 0;
	char			*s, want[64];

	exec_capture_init(&c, 20);
	for (i = 0; i < 1000; i++) {
		for (j = 0; j < sizeof(buf); j++)
			buf[j] = (unsigned char)('a' + (total + j) % 26);
		assert_int_equal(exec_capture_add(&c, buf, 1 + i % 7), 0);
		total += 1 + i % 7;
	}
	s = exec_capture_text(&c, &len, &cut);
	assert_int_equal(cut, total - 20);
	assert_memory_equal(s, "abcdefghij", 10);
	snprintf(want, sizeof(want), "\n[sandgate: %llu bytes cut]\n",
	    (unsigned long long)(total - 20));
	assert_memory_equal(s + 10, want, strlen(want));
	for (j = 0; j < 10; j++)
		assert_int_equal(s[10 + strlen(want) + j],
		    'a' + (total - 10 + j) % 26);
	assert_int_equal(len, 20 + strlen(want));
	free(s);
	exec_capture_release(&c);
}

/* A single write larger than the whole ring. */
static void
test_capture_big_write(void **state)
{
	struct exec_capture	 c;
	unsigned long long	 cut;
	size_t			 len;
	char			*s;
	unsigned char		 big[100];
	size_t			 i;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (unsigned char)('0' + i % 10);
	exec_capture_init(&c, 8);
	exec_capture_add(&c, big, sizeof(big));
	s = exec_capture_text(&c, &len, &cut);
	assert_int_equal(cut, 92);
	assert_string_equal(s, "0123\n[sandgate: 92 bytes cut]\n6789");
	free(s);
	exec_capture_release(&c);
}

static void
test_utf8_clean(void **state)
{
	static const struct {
		const char	*in;
		size_t		 len;
		const char	*want;
	} t[] = {
		{ "plain", 5, "plain" },
		{ "caf\xc3\xa9", 5, "caf\xc3\xa9" },
		{ "\xff", 1, "\xef\xbf\xbd" },
		{ "\xc3", 1, "\xef\xbf\xbd" },			/* cut */
		{ "\xc0\xaf", 2, "\xef\xbf\xbd\xef\xbf\xbd" },	/* overlong */
		{ "\xed\xa0\x80", 3,
		    "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" },	/* surrogate */
		{ "\xf0\x9f\x98\x80", 4, "\xf0\x9f\x98\x80" },
		{ "\xf4\x90\x80\x80", 4, "\xef\xbf\xbd\xef\xbf\xbd"
		    "\xef\xbf\xbd\xef\xbf\xbd" },		/* > U+10FFFF */
		{ "a\0b", 3, "a" },
	};
	size_t	i, olen;
	char	*s;
	json_t	*j;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		s = exec_utf8_clean(t[i].in, t[i].len, &olen);
		assert_non_null(s);
		assert_string_equal(s, t[i].want);
		/* jansson accepts every result */
		j = json_stringn(s, olen);
		assert_non_null(j);
		json_decref(j);
		free(s);
	}
}

static void
test_format_size(void **state)
{
	char	buf[32];

	exec_format_size(1ULL << 30, buf, sizeof(buf));
	assert_string_equal(buf, "1 GiB");
	exec_format_size(64ULL << 20, buf, sizeof(buf));
	assert_string_equal(buf, "64 MiB");
	exec_format_size(1536ULL << 10, buf, sizeof(buf));
	assert_string_equal(buf, "1536 KiB");
	exec_format_size(1000, buf, sizeof(buf));
	assert_string_equal(buf, "1000 bytes");
}

static void
test_result_json(void **state)
{
	struct exec_result	 r;
	json_t			*o;

	memset(&r, 0, sizeof(r));
	r.exit_code = 124;
	r.timed_out = 1;
	r.out = strdup("o\xff");
	r.outlen = 2;
	r.duration_ms = 2001;
	r.peak_pids = 3;
	o = exec_result_json(&r, "run_x");
	assert_non_null(o);
	assert_int_equal(json_integer_value(json_object_get(o, "exit_code")),
	    124);
	assert_string_equal(json_string_value(json_object_get(o, "stdout")),
	    "o\xef\xbf\xbd");
	assert_string_equal(json_string_value(json_object_get(o, "stderr")),
	    "");
	assert_true(json_is_true(json_object_get(o, "timed_out")));
	assert_true(json_is_false(json_object_get(o, "oom_killed")));
	assert_true(json_is_false(json_object_get(o, "pids_limit_hit")));
	assert_true(json_is_false(json_object_get(o, "output_truncated")));
	assert_true(json_is_array(json_object_get(o, "network_blocked")));
	assert_int_equal(json_integer_value(json_object_get(o,
	    "duration_ms")), 2001);
	assert_string_equal(json_string_value(json_object_get(o, "run_id")),
	    "run_x");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o,
	    "usage"), "peak_pids")), 3);
	json_decref(o);
	exec_result_release(&r);
}

/* The notice list joined into one string (caller frees). */
static char *
notices_text(const struct exec_result *r)
{
	json_t	*a = exec_notices(r, 30, 64ULL << 20, 256);
	char	*s = json_dumps(a, 0);

	json_decref(a);
	return s;
}

/*
 * The container-stop notice names gVisor only under gVisor: under runc
 * the memory limit's OOM killer took the init.
 */
static void
test_notice_died_runtime(void **state)
{
	struct exec_result	 r;
	char			*s;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.container_died = 1;
	r.oom_killed = 1;
	s = notices_text(&r);
	assert_null(strstr(s, "gVisor"));
	assert_non_null(strstr(s, "OOM killer took its init"));
	free(s);
	r.gvisor = 1;
	s = notices_text(&r);
	assert_non_null(strstr(s, "gVisor ends the whole sandbox at its "
	    "memory limit"));
	free(s);
	r.oom_killed = 0;
	r.pids_limit_hit = 1;
	s = notices_text(&r);
	assert_non_null(strstr(s, "host process limit"));
	free(s);
	r.gvisor = 0;
	s = notices_text(&r);
	assert_null(strstr(s, "gVisor"));
	free(s);
	/* stopped from outside after a normal end: nothing else set
	 * container_died (atk16r7 F6) */
	memset(&r, 0, sizeof(r));
	r.gvisor = r.sandbox_killed = 1;
	s = notices_text(&r);
	assert_non_null(strstr(s, "container stopped under the command"));
	assert_non_null(strstr(s, "stopped the whole sandbox from outside"));
	free(s);
}

/*
 * A sandbox stopped from outside after a normal end (the reaper of the
 * leftovers did not finish, atk16r7 F6): the result says the container
 * stopped, though nothing else set container_died, and the cleanup is
 * not clean.
 */
static void
test_sandbox_killed_said(void **state)
{
	struct exec_result	 r;
	json_t			*o;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.sandbox_killed = 1;
	o = exec_result_json(&r, "run_k");
	assert_non_null(o);
	assert_true(json_is_true(json_object_get(o, "container_stopped")));
	assert_true(json_is_true(json_object_get(o, "sandbox_killed")));
	json_decref(o);
	assert_non_null(exec_cleanup(&r));
	r.sandbox_killed = 0;
	assert_null(exec_cleanup(&r));
	o = exec_result_json(&r, "run_k");
	assert_true(json_is_false(json_object_get(o, "container_stopped")));
	assert_null(json_object_get(o, "sandbox_killed"));
	json_decref(o);
	exec_result_release(&r);
}

/*
 * An exec whose command never started (an apply or a discard held the
 * sandbox for its whole --timeout): `not_started` and a notice say so,
 * so a harness can tell it from a command that ran and timed out
 * (atk43f F3: the two objects were the same).
 */
static void
test_not_started_said(void **state)
{
	struct exec_result	 r;
	json_t			*o;
	char			*s;

	(void)state;
	memset(&r, 0, sizeof(r));
	r.timed_out = 1;
	r.exit_code = 124;
	o = exec_result_json(&r, "run_n");
	assert_null(json_object_get(o, "not_started"));
	json_decref(o);
	s = notices_text(&r);
	assert_null(strstr(s, "nothing ran"));
	free(s);
	r.unstarted = "an apply or a discard held the sandbox all that time";
	o = exec_result_json(&r, "run_n");
	assert_true(json_is_true(json_object_get(o, "not_started")));
	assert_true(json_is_true(json_object_get(o, "timed_out")));
	json_decref(o);
	s = notices_text(&r);
	assert_non_null(strstr(s, "timed out"));
	assert_non_null(strstr(s, "an apply or a discard held the sandbox all "
	    "that time; nothing ran"));
	free(s);
	exec_result_release(&r);
}

/* Write a marker file dir/name holding text. */
static void
marker(const char *dir, const char *name, const char *text)
{
	char	 path[512];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	assert_non_null(f = fopen(path, "w"));
	fputs(text, f);
	fclose(f);
}

static int
exists(const char *dir, const char *name)
{
	char		path[512];
	struct stat	st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

static char	gone_names[256];

/* exec_active_sweep()'s gone: note the run id in arg. */
static void
gone_note(const char *run_id, void *arg)
{
	char	*names = arg;

	strncat(names, run_id, sizeof(gone_names) - strlen(names) - 2);
	strcat(names, " ");
}

/* The names of gone_note() in order (readdir's order is the folder's). */
static const char *
gone_sorted(char *names)
{
	char	 copy[sizeof(gone_names)], *w[8], *p, *save = NULL;
	size_t	 n = 0, i, j;

	memcpy(copy, names, sizeof(copy));
	for (p = strtok_r(copy, " ", &save); p != NULL && n < 8;
	    p = strtok_r(NULL, " ", &save))
		w[n++] = p;
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(w[j - 1], w[j]) > 0; j--) {
			p = w[j];
			w[j] = w[j - 1];
			w[j - 1] = p;
		}
	names[0] = '\0';
	for (i = 0; i < n; i++) {
		strcat(names, w[i]);
		strcat(names, " ");
	}
	return names;
}

/*
 * The runs the probe's reap spares: every live run of the same container
 * (70 of them, past the old cap of 64: atk16r7 F4), not this one, not a
 * dead one, and none that runs in another container, a --fresh exec's
 * (atk16r7 F1), nor a marker that names no container.
 */
static void
test_active_runs(void **state)
{
	struct procstat	ps;
	char		dir[32], live[96], text[200], name[64], path[600];
	json_t		*a;
	size_t		i;
	int		seen[80];

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sg-test-runs-" UTIL_MKTEMP_SUFFIX);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(procstat_read((int)getpid(), &ps), 0);
	snprintf(live, sizeof(live), "%d %llu\n", (int)getpid(), ps.start);
	for (i = 0; i < 75; i++) {
		snprintf(name, sizeof(name), "run_%024zu.active", i);
		snprintf(text, sizeof(text), "%s%s\n", i == 70 ? "2147483646 1\n" :
		    live, i < 71 ? "init 100" : i < 73 ? "init 200" : "");
		marker(dir, name, text);
	}
	a = exec_active_runs(dir, "init 100", "run_000000000000000000000003");
	assert_non_null(a);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < json_array_size(a); i++)
		seen[atoi(json_string_value(json_array_get(a, i)) + 4)]++;
	assert_int_equal(json_array_size(a), 69);
	for (i = 0; i < 75; i++)
		assert_int_equal(seen[i], i < 70 && i != 3);
	json_decref(a);
	a = exec_active_runs(dir, "init 200", "run_000000000000000000000003");
	assert_int_equal(json_array_size(a), 2);
	json_decref(a);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

/*
 * A run marker shields only while its owner runs: ours (this process,
 * its start time) stays; a dead pid, a recycled pid (wrong start time),
 * garbage and a link are stale; other names are left alone.
 */
static void
test_active_sweep(void **state)
{
	struct procstat	ps;
	char		dir[32], mine[96], path[600];
	const char	*live = "run_000000000000000000000001.active";
	const char	*dead = "run_000000000000000000000002.active";
	const char	*reused = "run_000000000000000000000003.active";
	const char	*junk = "run_000000000000000000000004.active";
	const char	*link = "run_000000000000000000000005.active";

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sg-test-runs-" UTIL_MKTEMP_SUFFIX);
	assert_non_null(mkdtemp(dir));
	assert_int_equal(procstat_read((int)getpid(), &ps), 0);
	snprintf(mine, sizeof(mine), "%d %llu\n", (int)getpid(), ps.start);
	marker(dir, live, mine);
	marker(dir, dead, "2147483646 1\n");
	snprintf(mine, sizeof(mine), "%d %llu\n", (int)getpid(), ps.start + 1);
	marker(dir, reused, mine);
	marker(dir, junk, "not a marker");
	snprintf(path, sizeof(path), "%s/%s", dir, live);
	snprintf(mine, sizeof(mine), "%s/%s", dir, link);
	assert_int_equal(symlink(path, mine), 0);
	marker(dir, "run_x.stdout", "output");
	assert_int_equal(exec_active_sweep(dir, 1, NULL, NULL), 4);
	assert_true(exists(dir, dead));
	gone_names[0] = '\0';
	assert_int_equal(exec_active_sweep(dir, 0, gone_note, gone_names), 4);
	/* each gone run is named to the caller (its credential ends) */
	assert_string_equal(gone_sorted(gone_names),
	    "run_000000000000000000000002 run_000000000000000000000003 "
	    "run_000000000000000000000004 run_000000000000000000000005 ");
	assert_true(exists(dir, live));
	assert_false(exists(dir, dead));
	assert_false(exists(dir, reused));
	assert_false(exists(dir, junk));
	assert_false(exists(dir, link));
	assert_true(exists(dir, "run_x.stdout"));
	assert_int_equal(exec_active_sweep(dir, 0, NULL, NULL), 0);
	snprintf(path, sizeof(path), "rm -rf %s", dir);
	assert_int_equal(system(path), 0);
}

/*
 * The block report prints what the proxy says the sandbox tried, which
 * holds text the sandbox chose (an SNI): it must reach the terminal as
 * printable ASCII, so no escape sequence or forged "sandgate:" line gets
 * through (issue 15, finding 11).
 */
static void
test_report_blocked_escaped(void **state)
{
	struct exec_result	 r;
	char			 out[4096];
	FILE			*f;
	size_t			 n, i;
	int			 saved;

	memset(&r, 0, sizeof(r));
	r.network_blocked = json_pack("[{s:s, s:s, s:s, s:i}]",
	    "destination", "pypi.org:443", "reason", "sni_mismatch",
	    "message", "network blocked by policy: TLS SNI x\x1b]0;owned\x07"
	    "\x1b[2K\r\nsandgate: all good.test does not match CONNECT host "
	    "pypi.org", "attempts", 2);
	assert_non_null(r.network_blocked);
	f = tmpfile();
	assert_non_null(f);
	fflush(stderr);
	saved = dup(2);
	dup2(fileno(f), 2);
	exec_report(&r, 30, 1ULL << 30, 256);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	fclose(f);
	out[n] = '\0';
	assert_true(n > 0);
	/* One line, ending in the one newline; nothing else unprintable. */
	for (i = 0; i + 1 < n; i++)
		assert_true(out[i] >= 0x20 && out[i] < 0x7f);
	assert_int_equal(out[n - 1], '\n');
	assert_non_null(strstr(out, "x\\x1b]0;owned\\x07\\x1b[2K\\x0d\\x0a"
	    "sandgate: all good.test"));
	assert_non_null(strstr(out, "(2 attempts)"));
	json_decref(r.network_blocked);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_capture_under_cap),
		cmocka_unit_test(test_capture_at_cap),
		cmocka_unit_test(test_capture_flood),
		cmocka_unit_test(test_capture_big_write),
		cmocka_unit_test(test_utf8_clean),
		cmocka_unit_test(test_format_size),
		cmocka_unit_test(test_result_json),
		cmocka_unit_test(test_notice_died_runtime),
		cmocka_unit_test(test_sandbox_killed_said),
		cmocka_unit_test(test_not_started_said),
		cmocka_unit_test(test_active_sweep),
		cmocka_unit_test(test_active_runs),
		cmocka_unit_test(test_report_blocked_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
