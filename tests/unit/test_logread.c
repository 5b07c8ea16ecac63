/*
 * test_logread.c: the one log reader of audit and policy suggest: RFC
 * 3339 times (Z, +hh:mm, -hh:mm, fractions, bad offsets and fields),
 * durations, rotated files in order, the files of a log held open
 * across a writer's rotation (logset.h), and the line reader.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "logfollow.h"
#include "logread.h"
#include "logset.h"
#include "util.h"

#define T0	1769860800LL	/* 2026-01-31T12:00:00Z */
#define S	1000000LL

struct tcase {
	const char	*in;
	int64_t		 want;	/* microseconds */
};

static const struct tcase good[] = {
	{ "2026-01-31T12:00:00Z", T0 * S },
	{ "2026-01-31t12:00:00z", T0 * S },
	{ "2026-01-31 12:00:00Z", T0 * S },
	{ "2026-01-31T12:00:00", T0 * S },
	{ "2026-01-31T12:00Z", T0 * S },
	{ "2026-01-31", (T0 - 12 * 3600) * S },
	{ "2026-01-31T12:00:00+00:00", T0 * S },
	{ "2026-01-31T12:00:00-00:00", T0 * S },
	{ "2026-01-31T14:00:00+02:00", T0 * S },
	{ "2026-01-31T06:30:00-05:30", T0 * S },
	{ "2026-02-01T01:45:00+13:45", T0 * S },
	{ "2026-01-31T12:00+01:00", (T0 - 3600) * S },
	{ "2026-01-31T12:00:00.5Z", T0 * S + 500000 },
	{ "2026-01-31T12:00:00.000001Z", T0 * S + 1 },
	{ "2026-01-31T12:00:00.123456789Z", T0 * S + 123456 },
	{ "2026-01-31T12:00:00.25+01:00", (T0 - 3600) * S + 250000 },
	{ "2024-02-29T00:00:00Z", 1709164800LL * S },
	{ "1970-01-01T00:00:00Z", 0 },
};

static const char *const bad[] = {
	"", "yesterday", "2026-01-31T", "2026-1-31", "2026-01-31T1:00",
	"2026-01-31T12:00:00+2:00", "2026-01-31T12:00:00+02", "2026-01-31T"
	"12:00:00+0200", "2026-01-31T12:00:00+02:0", "2026-01-31T12:00:00"
	"+24:00", "2026-01-31T12:00:00+02:60", "2026-01-31T12:00:00+-1:00",
	"2026-01-31T12:00:00+02:00x", "2026-01-31T12:00:00Zx",
	"2026-01-31T12:00:00 +02:00", "2026-01-31T12:00:00.Z",
	"2026-01-31T12:00:00.+01:00", "2026-02-30", "2026-13-01",
	"2026-00-10", "2026-01-00", "2026-01-31T24:00", "2026-01-31T12:60",
	"2026-01-31T12:00:61Z", "2026-01-31T12:00:00UTC", "1969-12-31",
};

static void
test_parse_ts_good(void **state)
{
	size_t	i;
	int64_t	us;

	(void)state;
	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		us = -1;
		if (logread_parse_ts(good[i].in, &us) != 0)
			fail_msg("refused '%s'", good[i].in);
		if (us != good[i].want)
			fail_msg("'%s': %lld, want %lld", good[i].in,
			    (long long)us, (long long)good[i].want);
	}
}

static void
test_parse_ts_bad(void **state)
{
	size_t	i;
	int64_t	us;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (logread_parse_ts(bad[i], &us) != -1)
			fail_msg("accepted '%s'", bad[i]);
}

static void
test_parse_time(void **state)
{
	int64_t	us;

	(void)state;
	assert_int_equal(logread_parse_time("2h", T0 * S + 7, &us), 0);
	assert_int_equal(us, (T0 - 7200) * S + 7);
	assert_int_equal(logread_parse_time("30m", T0 * S, &us), 0);
	assert_int_equal(us, (T0 - 1800) * S);
	/* never before the epoch */
	assert_int_equal(logread_parse_time("7d", 3600 * S, &us), 0);
	assert_int_equal(us, 0);
	assert_int_equal(logread_parse_time("2026-01-31T14:00:00+02:00", 0,
	    &us), 0);
	assert_int_equal(us, T0 * S);
	assert_int_equal(logread_parse_time("2 hours", T0 * S, &us), -1);
}

static char	dir[64];

/* Write (mode "w") or append ("a") text to dir/name. */
static void
save(const char *name, const char *text, const char *mode)
{
	char	 path[128];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, mode);
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
put(const char *name, const char *text)
{
	save(name, text, "w");
}

static int
setup_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test_logread." UTIL_MKTEMP_SUFFIX);
	return mkdtemp(dir) == NULL ? -1 : 0;
}

static int
teardown_dir(void **state)
{
	char	cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* name.10 is older than name.2: numbers, not text, order the files. */
static void
test_files_order(void **state)
{
	char	**files, *cause = NULL, want[128];
	int	  n;

	(void)state;
	put("ev.jsonl", "");
	put("ev.jsonl.1", "");
	put("ev.jsonl.2", "");
	put("ev.jsonl.10", "");
	put("ev.jsonl.0", "");
	put("ev.jsonl.x", "");
	put("ev.jsonl.3.gz", "");
	put("other.jsonl.4", "");
	/* atk20r21 I1: not the writer's numerals (NAME.01 was NAME.1 twice) */
	put("ev.jsonl.01", "");
	put("ev.jsonl.+2", "");
	put("ev.jsonl. 3", "");
	put("ev.jsonl.002", "");
	assert_int_equal(logread_files(dir, "ev.jsonl", &files, &n, &cause),
	    0);
	assert_int_equal(n, 4);
	snprintf(want, sizeof(want), "%s/ev.jsonl.10", dir);
	assert_string_equal(files[0], want);
	snprintf(want, sizeof(want), "%s/ev.jsonl.2", dir);
	assert_string_equal(files[1], want);
	snprintf(want, sizeof(want), "%s/ev.jsonl.1", dir);
	assert_string_equal(files[2], want);
	snprintf(want, sizeof(want), "%s/ev.jsonl", dir);
	assert_string_equal(files[3], want);
	logread_files_free(files, n);
	assert_null(cause);
}

static void
test_files_missing(void **state)
{
	char	**files = NULL, *cause = NULL, path[128];
	int	  n;

	(void)state;
	assert_int_equal(logread_files(dir, "none.jsonl", &files, &n, &cause),
	    -1);
	assert_non_null(strstr(cause, "no log at"));
	snprintf(path, sizeof(path), "%s/no-such-dir", dir);
	assert_int_equal(logread_files(path, "ev.jsonl", &files, &n, &cause),
	    -1);
	assert_non_null(strstr(cause, "cannot open"));
	free(cause);
	/* right after a rotation: only name.1, the current is listed */
	put("rot.jsonl.1", "");
	cause = NULL;
	assert_int_equal(logread_files(dir, "rot.jsonl", &files, &n, &cause),
	    0);
	assert_int_equal(n, 2);
	logread_files_free(files, n);
}

struct seen {
	char	text[512];
	int	n;
};

static void
collect(json_t *o, void *arg)
{
	struct seen	*s = arg;
	const char	*v = json_string_value(json_object_get(o, "v"));

	s->n++;
	strncat(s->text, v ? v : "?", sizeof(s->text) - strlen(s->text) - 1);
}

/* Rotated files oldest first; junk counted; a last line without \n. */
static void
test_each(void **state)
{
	struct logread_stats	  st = { 0, 0 };
	struct seen		  s;
	char			 *cause = NULL, *big;

	(void)state;
	memset(&s, 0, sizeof(s));
	big = util_xmalloc(SG_LOG_LINE_MAX + 64);
	memset(big, ' ', SG_LOG_LINE_MAX + 62);
	memcpy(big, "{\"v\":\"L\"}", 9);
	big[SG_LOG_LINE_MAX + 62] = '\n';
	big[SG_LOG_LINE_MAX + 63] = '\0';
	put("e.jsonl.2", "{\"v\":\"a\"}\nnot json\n[1]\n");
	put("e.jsonl.1", big);
	put("e.jsonl",
	    "{\"v\":\"b\"}\n\n{\"v\":\"c\",\"v\":\"d\"}\n{\"v\":\"e\"}");
	free(big);
	assert_int_equal(logset_read_log(dir, "e.jsonl", collect, &s, &st,
	    &cause), 0);
	assert_string_equal(s.text, "abe");
	/* not json, [1], the cut line, the empty one, the duplicate key */
	assert_int_equal(st.skipped, 5);
	assert_int_equal(st.files, 3);
	assert_null(cause);
}

/*
 * A writer's size rotation of log name with rotated files name.1 ..
 * name.n: name.i -> name.(i+1), name -> name.1, a new name holding text.
 */
static void
rotate(const char *name, int n, const char *text)
{
	char	from[128], to[128];
	int	i;

	for (i = n; i >= 1; i--) {
		snprintf(from, sizeof(from), "%s/%s.%d", dir, name, i);
		snprintf(to, sizeof(to), "%s/%s.%d", dir, name, i + 1);
		assert_int_equal(rename(from, to), 0);
	}
	snprintf(from, sizeof(from), "%s/%s", dir, name);
	snprintf(to, sizeof(to), "%s/%s.1", dir, name);
	assert_int_equal(rename(from, to), 0);
	put(name, text);
}

/* r.jsonl.2 (a b), r.jsonl.1 (c), r.jsonl (d): a, b ... in order. */
static void
put_rotated(void)
{
	put("r.jsonl.2", "{\"v\":\"a\"}\n{\"v\":\"b\"}\n");
	put("r.jsonl.1", "{\"v\":\"c\"}\n");
	put("r.jsonl", "{\"v\":\"d\"}\n");
}

/* Collects, and at the first event the writer rotates (once). */
static void
collect_rotating(json_t *o, void *arg)
{
	struct seen	*s = arg;

	if (s->n == 0)
		rotate("r.jsonl", 2, "{\"v\":\"e\"}\n");
	collect(o, arg);
}

/*
 * atk20r19 F3: a rotation while the files are read moves no file under
 * the reader: they were all opened first, so the events come as the
 * files held them then, none skipped (a reader that opened r.jsonl.1
 * only after it saw "a" read "d" there, then "e": "abde", a gap that
 * verify reported as removed events). Names stay those at open time.
 */
static void
test_rotation_while_reading(void **state)
{
	struct logread_stats	 st = { 0, 0 };
	struct logset		*set = logset_new();
	struct seen		 s;
	char			*cause = NULL, want[128];

	(void)state;
	memset(&s, 0, sizeof(s));
	put_rotated();
	assert_int_equal(logset_add_log(set, dir, "r.jsonl", &cause), 0);
	assert_int_equal(logset_count(set), 3);
	assert_int_equal(logset_each(set, 0, 3, collect_rotating, &s, &st,
	    &cause), 0);
	assert_string_equal(s.text, "abcd");
	snprintf(want, sizeof(want), "%s/r.jsonl.1", dir);
	assert_string_equal(logset_name(set, 1), want);
	logset_free(set);
	assert_null(cause);
}

/* How many listings the hook saw; it rotates at the first `rotations`. */
struct rot_hook {
	int	calls;
	int	rotations;
	int	files;		/* rotated files there now */
};

static void
rotate_hook(void *arg)
{
	struct rot_hook	*h = arg;
	char		 text[32];

	if (h->calls++ >= h->rotations)
		return;
	snprintf(text, sizeof(text), "{\"v\":\"%c\"}\n", 'e' + h->calls - 1);
	rotate("r.jsonl", h->files++, text);
}

/*
 * atk20r19 F3: rotations between the listing and the opens. Each row:
 * how many listings the writer rotates after, the files then read (in
 * order, none skipped), or the failure that says so when it rotates
 * after every one (never a log read with a file missing).
 */
static void
test_rotation_before_open(void **state)
{
	static const struct {
		int		 rotations;
		const char	*text;	/* NULL: fails */
		int		 files;
	} rows[] = {
		{ 0, "abcd", 3 },
		{ 1, "abcde", 4 },
		{ 3, "abcdefg", 6 },
		{ LOGSET_TRIES, NULL, 0 },
	};
	struct logread_stats	 st = { 0, 0 };
	struct logset		*set;
	struct rot_hook		 h;
	struct seen		 s;
	char			*cause = NULL, cmd[128];
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(cmd, sizeof(cmd), "rm -f '%s'/r.jsonl*", dir);
		assert_int_equal(system(cmd), 0);
		put_rotated();
		memset(&s, 0, sizeof(s));
		memset(&h, 0, sizeof(h));
		h.rotations = rows[i].rotations;
		h.files = 2;
		logset_test_hook(rotate_hook, &h);
		set = logset_new();
		if (rows[i].text == NULL) {
			assert_int_equal(logset_add_log(set, dir, "r.jsonl",
			    &cause), -1);
			assert_non_null(strstr(cause, "rotated it while its "
			    "files were being opened"));
			assert_int_equal(logset_count(set), 0);
			assert_int_equal(h.calls, LOGSET_TRIES);
			free(cause);
			cause = NULL;
		} else {
			assert_int_equal(logset_add_log(set, dir, "r.jsonl",
			    &cause), 0);
			assert_int_equal(logset_count(set), rows[i].files);
			assert_int_equal(logset_each(set, 0, logset_count(set),
			    collect, &s, &st, &cause), 0);
			assert_string_equal(s.text, rows[i].text);
			assert_int_equal(h.calls, rows[i].rotations + 1);
		}
		logset_free(set);
		logset_test_hook(NULL, NULL);
	}
	assert_null(cause);
}

/*
 * atk20r21 F3, F2: a follower goes on from the set's own fd at the size
 * read ("e" appended after the history was opened is not lost), and a
 * step after several rotations reads every file rotated in between, in
 * order; "f" appended to the followed file just before it was rotated
 * is read too. Each row: rotations before the step (each new file holds
 * one event, "g" on), rotated files then deleted (past keep), the text
 * the step gives. A deletion of the file followed leaves a gap (said on
 * stderr), never a repeat.
 */
static void
test_follow(void **state)
{
	static const struct {
		int		 rotations;
		int		 deleted;	/* oldest rotated files gone */
		const char	*text;
	} rows[] = {
		{ 0, 0, "ef" },
		{ 1, 0, "efg" },
		{ 3, 0, "efghi" },
		{ 3, 2, "efghi" },	/* older files gone: not a gap */
		{ 3, 4, "efhi" },	/* the file followed and g's gone */
		{ 3, 5, "efi" },
	};
	struct logread_stats	 st = { 0, 0 };
	struct logfollow	*f;
	struct logset		*set;
	struct seen		 s;
	char			*cause = NULL, cmd[128], text[32], gone[128];
	size_t			 i;
	int			 k, files;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		snprintf(cmd, sizeof(cmd), "rm -f '%s'/r.jsonl*", dir);
		assert_int_equal(system(cmd), 0);
		put_rotated();
		set = logset_new();
		assert_int_equal(logset_add_log(set, dir, "r.jsonl", &cause),
		    0);
		memset(&s, 0, sizeof(s));
		assert_int_equal(logset_each(set, 0, logset_count(set),
		    collect, &s, &st, &cause), 0);
		save("r.jsonl", "{\"v\":\"e\"}\n", "a");
		assert_non_null(f = logfollow_new(set));
		logset_free(set);
		memset(&s, 0, sizeof(s));
		save("r.jsonl", "{\"v\":\"f\"}\n", "a");
		for (k = 0, files = 2; k < rows[i].rotations; k++) {
			snprintf(text, sizeof(text), "{\"v\":\"%c\"}\n",
			    'g' + k);
			rotate("r.jsonl", files++, text);
		}
		for (k = 0; k < rows[i].deleted; k++) {
			snprintf(gone, sizeof(gone), "%s/r.jsonl.%d", dir,
			    files - k);
			assert_int_equal(unlink(gone), 0);
		}
		assert_int_equal(logfollow_step(f, collect, &s), 0);
		assert_string_equal(s.text, rows[i].text);
		logfollow_free(f);
	}
	assert_null(cause);
}

static void	read_hooked_counted(void (*)(void *), int *, const char *, int,
		    int);

/*
 * r.jsonl's files read with hook after each listing: the text read, the
 * listings the hook saw and the files kept, as want_*.
 */
static void
read_hooked(void (*hook)(void *), const char *want, int want_calls,
    int want_files)
{
	int	calls = 0;

	read_hooked_counted(hook, &calls, want, want_calls, want_files);
}

/* read_hooked() with the hook's counter given (shared with another hook). */
static void
read_hooked_counted(void (*hook)(void *), int *calls, const char *want,
    int want_calls, int want_files)
{
	struct logread_stats	 st = { 0, 0 };
	struct logset		*set = logset_new();
	struct seen		 s;
	char			*cause = NULL;

	memset(&s, 0, sizeof(s));
	logset_test_hook(hook, calls);
	if (logset_add_log(set, dir, "r.jsonl", &cause) == -1)
		fail_msg("%s", cause);
	logset_test_hook(NULL, NULL);
	assert_int_equal(*calls, want_calls);
	assert_int_equal(logset_count(set), want_files);
	assert_int_equal(logset_each(set, 0, logset_count(set), collect, &s,
	    &st, &cause), 0);
	assert_string_equal(s.text, want);
	logset_free(set);
	assert_null(cause);
}

/* At each listing someone else puts r.jsonl.(9000 + i), removing the last. */
static void
plant_hook(void *arg)
{
	int	*calls = arg;
	char	 name[32], path[128];

	snprintf(name, sizeof(name), "r.jsonl.%d", 9000 + *calls);
	put(name, "");
	snprintf(path, sizeof(path), "%s/r.jsonl.%d", dir, 9000 + *calls - 1);
	assert_int_equal(unlink(path), 0);
	(*calls)++;
}

/*
 * atk20r21 F4: names that are not the writer's (past a gap in its
 * numbers), put and taken away by someone else at every listing, are no
 * rotation: the files held open are read (and the chain judges them; a
 * name listed but gone when opened is left out)
 * rather than a failure after LOGSET_TRIES that blamed the writer and
 * said the log was not known to be damaged.
 */
static void
test_planted_names(void **state)
{
	char	cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/r.jsonl*", dir);
	assert_int_equal(system(cmd), 0);
	put_rotated();
	put("r.jsonl.8999", "");
	/* r.jsonl.8999, listed, was gone when opened: not a file of the log */
	read_hooked(plant_hook, "abcd", 1, 3);
}

/*
 * The oldest of the writer's names moved back and forth by someone else
 * at the first try: gone when opened (.2 -> .3), listed again (.3 -> .2),
 * gone when checked (.2 -> .3).
 */
static void	move(const char *, const char *);

static void
toggle_hook(void *arg)
{
	int	*calls = arg;

	if ((*calls)++ == 0)
		move("r.jsonl.2", "r.jsonl.3");
}

static void
toggle_phase_hook(int phase, void *arg)
{
	int	*calls = arg;

	if (*calls == 1 && phase == 1)
		move("r.jsonl.3", "r.jsonl.2");
	if (*calls == 1 && phase == 2)
		move("r.jsonl.2", "r.jsonl.3");
}

/*
 * atk20r23 F2: a writer's rotated file missing when opened, listed again
 * and gone again when checked is a listing spoilt by a move, tried
 * again: never a set holding a name it could not open (a broken chain
 * then read as exit 125, "cannot open"). The second try reads every
 * file, r.jsonl.3 included.
 */
static void
test_oldest_moved_back_and_forth(void **state)
{
	char	cmd[128];
	int	calls = 0;

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/r.jsonl*", dir);
	assert_int_equal(system(cmd), 0);
	put_rotated();
	logset_test_phase_hook(toggle_phase_hook, &calls);
	read_hooked_counted(toggle_hook, &calls, "abcd", 2, 3);
	logset_test_phase_hook(NULL, NULL);
}

/* Rename dir/from to dir/to. */
static void
move(const char *from, const char *to)
{
	char	a[128], b[128];

	snprintf(a, sizeof(a), "%s/%s", dir, from);
	snprintf(b, sizeof(b), "%s/%s", dir, to);
	assert_int_equal(rename(a, b), 0);
}

/*
 * After the first listing, the writer ends the rotation it was in the
 * middle of (r.jsonl -> .1, a new r.jsonl "e") and goes halfway through
 * the next (.3 -> .4, .2 -> .3, .1 -> .2): r.jsonl.1 is missing again.
 */
static void
half_rotation_hook(void *arg)
{
	int	*calls = arg;

	if ((*calls)++ > 0)
		return;
	move("r.jsonl", "r.jsonl.1");
	put("r.jsonl", "{\"v\":\"e\"}\n");
	move("r.jsonl.3", "r.jsonl.4");
	move("r.jsonl.2", "r.jsonl.3");
	move("r.jsonl.1", "r.jsonl.2");
}

/*
 * A listing in the middle of the writer's rotation lacks one number
 * (r.jsonl.1 between two renames): the names past it are the writer's
 * still, and their move is a rotation (the log is listed again), not
 * someone else's names to pass over (a set without "ab").
 */
static void
test_listed_mid_rotation(void **state)
{
	char	cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -f '%s'/r.jsonl*", dir);
	assert_int_equal(system(cmd), 0);
	put("r.jsonl.3", "{\"v\":\"a\"}\n{\"v\":\"b\"}\n");
	put("r.jsonl.2", "{\"v\":\"c\"}\n");
	put("r.jsonl", "{\"v\":\"d\"}\n");
	read_hooked(half_rotation_hook, "abcde", 2, 4);
}

static void
test_open_refuses(void **state)
{
	char		path[128], link[128], *cause = NULL;
	long long	size;

	(void)state;
	snprintf(path, sizeof(path), "%s/fifo", dir);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(logread_open(path, &size, &cause), -1);
	assert_non_null(strstr(cause, "not a regular file"));
	put("target", "{}\n");
	snprintf(path, sizeof(path), "%s/target", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	assert_int_equal(symlink(path, link), 0);
	assert_int_equal(logread_open(link, &size, &cause), -1);
	assert_non_null(strstr(cause, "symlink"));
	free(cause);
	cause = NULL;
	snprintf(path, sizeof(path), "%s/absent", dir);
	assert_int_equal(logread_open(path, &size, &cause), -1);
	assert_null(cause);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse_ts_good),
		cmocka_unit_test(test_parse_ts_bad),
		cmocka_unit_test(test_parse_time),
		cmocka_unit_test(test_files_order),
		cmocka_unit_test(test_files_missing),
		cmocka_unit_test(test_each),
		cmocka_unit_test(test_rotation_while_reading),
		cmocka_unit_test(test_rotation_before_open),
		cmocka_unit_test(test_planted_names),
		cmocka_unit_test(test_oldest_moved_back_and_forth),
		cmocka_unit_test(test_listed_mid_rotation),
		cmocka_unit_test(test_follow),
		cmocka_unit_test(test_open_refuses),
	};

	return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
