/*
 * test_ownmark.c: an owner mark held locked by its owner tells a live
 * owner from a gone one where /proc cannot (atk1921f F1): an owner in
 * another time namespace (/proc's start times shift by the reader's
 * boottime offset), and a judge in the owner's pid namespace whose /proc
 * is the parent's (/proc/PID there is another process). Each such case
 * also asserts that the /proc judgment alone (procstat_owner_alive, all
 * there was before) takes the live owner for gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ownmark.h"
#include "procstat.h"
#include "util.h"

#define MARK		"fresh.mark"
#define SKIP_CODE	77	/* the namespace cannot be made here */

enum where {
	AT_HERE,	/* the test's namespaces */
	AT_TIMENS,	/* a time namespace, boottime 1000 s ahead */
	AT_PIDNS,	/* a pid namespace of its own, /proc the parent's */
};

/* The owner's running: where it runs, its pid here, its name. */
struct owner {
	pid_t	mid;	/* the process that made the namespace */
	pid_t	pid;	/* the owner, as this namespace numbers it */
	char	text[PROCSTAT_OWNER_MAX];
};

/* Make the namespace that this process's children enter: 0, or -1. */
static int
owner_enter(enum where w)
{
	int	fd, ok;

	if (w == AT_PIDNS)
		return unshare(CLONE_NEWPID);
	if (w != AT_TIMENS || unshare(CLONE_NEWTIME) == -1 ||
	    (fd = open("/proc/self/timens_offsets", O_WRONLY)) == -1)
		return w == AT_HERE ? 0 : -1;
	/* the offset needs CAP_SYS_TIME, which a container's root may lack */
	ok = write(fd, "boottime 1000 0", 15) == 15;
	close(fd);
	return ok ? 0 : -1;
}

/* The owner: its mark made and held in dfd, its name on fd; waits. */
static void
owner_main(int dfd, int fd)
{
	char	text[PROCSTAT_OWNER_MAX];

	if (procstat_owner_self(text, sizeof(text)) == -1 ||
	    ownmark_make(dfd, MARK, text) == -1)
		_exit(1);
	(void)write(fd, text, strlen(text));
	close(fd);
	for (;;)
		pause();
}

/* The middle process: the namespace, then the owner; "PID TEXT" on fd. */
static void
owner_mid(enum where w, int dfd, int fd)
{
	char	text[PROCSTAT_OWNER_MAX], out[PROCSTAT_OWNER_MAX + 16];
	ssize_t	n;
	pid_t	pid;
	int	q[2];

	if (owner_enter(w) == -1)
		_exit(SKIP_CODE);
	if (pipe(q) == -1 || (pid = fork()) == -1)
		_exit(1);
	if (pid == 0) {
		close(q[0]);
		owner_main(dfd, q[1]);
	}
	close(q[1]);
	if ((n = read(q[0], text, sizeof(text) - 1)) <= 0)
		_exit(1);
	text[n] = '\0';
	n = snprintf(out, sizeof(out), "%d %s", (int)pid, text);
	(void)write(fd, out, (size_t)n);
	close(fd);
	waitpid(pid, NULL, 0);
	_exit(0);
}

/* Start an owner at w with its mark in dfd: 0, or SKIP_CODE, or -1. */
static int
owner_start(enum where w, int dfd, struct owner *o)
{
	char	buf[PROCSTAT_OWNER_MAX + 16];
	ssize_t	n;
	int	p[2], st, at = 0;

	memset(o, 0, sizeof(*o));
	if (pipe(p) == -1 || (o->mid = fork()) == -1)
		return -1;
	if (o->mid == 0) {
		close(p[0]);
		owner_mid(w, dfd, p[1]);
	}
	close(p[1]);
	n = read(p[0], buf, sizeof(buf) - 1);
	close(p[0]);
	if (n <= 0) {
		waitpid(o->mid, &st, 0);
		return WIFEXITED(st) && WEXITSTATUS(st) == SKIP_CODE ?
		    SKIP_CODE : -1;
	}
	buf[n] = '\0';
	if (sscanf(buf, "%d %n", &o->pid, &at) != 1 || at == 0)
		return -1;
	snprintf(o->text, sizeof(o->text), "%s", buf + at);
	return 0;
}

static void
owner_stop(struct owner *o)
{
	if (o->pid > 0 && kill(o->pid, SIGKILL) == 0)
		o->pid = 0;
	if (o->mid > 0)
		waitpid(o->mid, NULL, 0);
	o->mid = 0;
}

/*
 * Judge o's mark in dfd, in o's pid namespace when inns: bit 0 the
 * judgment (ownmark_alive), bit 1 the /proc judgment alone; -1.
 */
static int
judge(const struct owner *o, int dfd, int inns)
{
	char	path[64];
	pid_t	pid;
	int	st, fd;

	if ((pid = fork()) == 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)o->pid);
		if (inns && ((fd = open(path, O_RDONLY)) == -1 ||
		    setns(fd, CLONE_NEWPID) == -1))
			_exit(10);
		/* a pid namespace is entered by the children */
		if (inns && (pid = fork()) != 0) {
			if (pid == -1 || waitpid(pid, &st, 0) != pid ||
			    !WIFEXITED(st))
				_exit(11);
			_exit(WEXITSTATUS(st));
		}
		_exit(ownmark_alive(dfd, MARK, o->text) |
		    procstat_owner_alive(o->text) << 1);
	}
	if (pid == -1 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) > 3)
		return -1;
	return WEXITSTATUS(st);
}

/*
 * Each case: where the owner runs, whether the judge is in its pid
 * namespace, whether the owner still runs when judged, and what the
 * judge says (the lock), and what /proc alone says.
 */
static void
test_judged(void **state)
{
	static const struct {
		const char	*what;
		enum where	 where;
		int		 inns, live, want, proc;
	} cases[] = {
		{ "a live owner", AT_HERE, 0, 1, 1, 1 },
		{ "a gone owner", AT_HERE, 0, 0, 0, 0 },
		{ "a live owner in a time namespace", AT_TIMENS, 0, 1, 1, 0 },
		{ "a gone owner in a time namespace", AT_TIMENS, 0, 0, 0, 0 },
		{ "a live owner, judged in its pid namespace whose /proc is "
		    "the parent's", AT_PIDNS, 1, 1, 1, 0 },
	};
	char		tmpl[] = "/tmp/sgtest-ownmark." UTIL_MKTEMP_SUFFIX;
	struct owner	o;
	size_t		i;
	int		dfd, rv, got, failed = 0;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	assert_true((dfd = open(tmpl, O_RDONLY | O_DIRECTORY)) != -1);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		if ((rv = owner_start(cases[i].where, dfd, &o)) == SKIP_CODE) {
			print_message("skipped (no such namespace here): %s\n",
			    cases[i].what);
			continue;
		}
		if (rv == -1)
			fail_msg("%s: the owner did not start", cases[i].what);
		if (!cases[i].live)
			owner_stop(&o);
		got = judge(&o, dfd, cases[i].inns);
		owner_stop(&o);
		unlinkat(dfd, MARK, 0);
		if (got != (cases[i].want | cases[i].proc << 1)) {
			print_error("%s: judged %d, /proc alone %d; want %d, "
			    "%d\n", cases[i].what, got & 1, got >> 1,
			    cases[i].want, cases[i].proc);
			failed++;
		}
	}
	close(dfd);
	rmdir(tmpl);
	assert_int_equal(failed, 0);
}

/*
 * An older sandgate's mark, which no lock holds, is judged by its name;
 * a mark's lock passes to no command the owner runs (close-on-exec).
 */
static void
test_unheld(void **state)
{
	char	tmpl[] = "/tmp/sgtest-ownmark." UTIL_MKTEMP_SUFFIX;
	char	self[PROCSTAT_OWNER_MAX], gone[PROCSTAT_OWNER_MAX];
	int	dfd, fd;

	(void)state;
	assert_non_null(mkdtemp(tmpl));
	assert_true((dfd = open(tmpl, O_RDONLY | O_DIRECTORY)) != -1);
	assert_int_equal(procstat_owner_self(self, sizeof(self)), 0);
	/* a pid that cannot be: gone */
	snprintf(gone, sizeof(gone), "%d%s", 0x3fffffff, strchr(self, ' '));
	assert_true((fd = openat(dfd, MARK, O_WRONLY | O_CREAT, 0600)) != -1);
	close(fd);
	assert_int_equal(ownmark_alive(dfd, MARK, self), 1);
	assert_int_equal(ownmark_alive(dfd, MARK, gone), 0);
	/* no mark at all: the same */
	assert_int_equal(ownmark_alive(dfd, "none", self), 1);
	assert_int_equal(ownmark_alive(dfd, "none", gone), 0);
	/* held (by this process, through another open): alive */
	assert_true((fd = ownmark_make(dfd, MARK, gone)) != -1);
	assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	assert_int_equal(ownmark_alive(dfd, MARK, gone), 1);
	/* the judge's look leaves no lock behind */
	assert_int_equal(ownmark_alive(dfd, MARK, gone), 1);
	close(fd);
	assert_int_equal(ownmark_alive(dfd, MARK, gone), 0);
	assert_int_equal(ownmark_make(dfd, "a/b", self), -1);
	unlinkat(dfd, MARK, 0);
	close(dfd);
	rmdir(tmpl);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_judged),
		cmocka_unit_test(test_unheld),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
