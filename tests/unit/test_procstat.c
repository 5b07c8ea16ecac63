/* test_procstat.c: /proc/PID/stat fields, whatever the command name holds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "procstat.h"
#include "sandbox.h"
#include "util.h"

/* Fields 3 to 22 after the name; start time 4242, ppid 7. */
#define TAIL	" S 7 1 1 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 4242 " \
		"1000 200 18446744073709551615"

static void
test_names(void **state)
{
	static const char *const lines[] = {
		"123 (sh)" TAIL,
		"123 (a b c)" TAIL,
		"123 (x) S 9 9 9) y)" TAIL,	/* a name that fakes fields */
		"123 ()" TAIL,
		"123 ())))" TAIL,
	};
	struct procstat	ps;
	size_t		i;

	for (i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		assert_int_equal(procstat_parse(lines[i], &ps), 0);
		assert_int_equal(ps.state, 'S');
		assert_int_equal(ps.ppid, 7);
		assert_true(ps.start == 4242);
		assert_int_equal(ps.threads, 1);
	}
}

/* A zombie is dead; a Z leader whose threads still run is not. */
static void
test_dead(void **state)
{
	static const char zombie[] = "9 (z) Z 7 1 1 0 -1 4194560 100 0 0 0 "
	    "1 2 0 0 20 0 1 0 4242";
	static const char leader[] = "9 (z) Z 7 1 1 0 -1 4194560 100 0 0 0 "
	    "1 2 0 0 20 0 3 0 4242";
	struct procstat	ps;

	assert_int_equal(procstat_parse(zombie, &ps), 0);
	assert_true(procstat_dead(&ps));
	assert_int_equal(procstat_parse(leader, &ps), 0);
	assert_int_equal(ps.threads, 3);
	assert_false(procstat_dead(&ps));
	assert_int_equal(procstat_parse("9 (s)" TAIL, &ps), 0);
	assert_false(procstat_dead(&ps));
}

static void
test_bad(void **state)
{
	/* every field present, but the start time is not a number */
	static const char bad_start[] = "123 (sh) S 7 1 1 0 -1 4194560 100 "
	    "0 0 0 1 2 0 0 20 0 1 0 x";
	static const char *const bad[] = {
		"", "123", "123 (sh", "123 (sh)", "123 (sh) ", "123 (sh)S 7",
		"123 (sh) S 7 1 1", bad_start,
	};
	struct procstat	ps;
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (procstat_parse(bad[i], &ps) != -1)
			fail_msg("accepted '%s'", bad[i]);
}

/* This process: parent and a start time that is set. */
static void
test_read_self(void **state)
{
	struct procstat	ps;

	assert_int_equal(procstat_read((int)getpid(), &ps), 0);
	assert_int_equal(ps.ppid, (int)getppid());
	assert_int_equal(ps.state, 'R');
	assert_int_equal(procstat_read(-1, &ps), -1);
	assert_int_equal(procstat_read(0x3fffffff, &ps), -1);
}

/* An owner text with pid, start, pid namespace and boot id. */
static void
owner_text(char *buf, size_t size, int pid, unsigned long long start,
    unsigned long long ns, const char *boot)
{
	snprintf(buf, size, "%d %llu %llu %s", pid, start, ns, boot);
}

/*
 * An owner is judged in its own pid namespace and boot only: another
 * namespace of this boot cannot be told about (alive, its container
 * kept), another boot is gone, and this namespace reads /proc.
 */
static void
test_owner(void **state)
{
	char			self[PROCSTAT_OWNER_MAX], t[PROCSTAT_OWNER_MAX];
	char			boot[PROCSTAT_BOOT_LEN + 1];
	unsigned long long	start, ns;
	unsigned		uid;
	int			pid;

	assert_int_equal(procstat_owner_self(self, sizeof(self)), 0);
	assert_int_equal(sscanf(self, "%d %llu %llu %36s", &pid, &start, &ns,
	    boot), 4);
	assert_int_equal(pid, (int)getpid());
	assert_int_equal(strlen(boot), PROCSTAT_BOOT_LEN);
	/* and its uid last */
	assert_int_equal(sscanf(self, "%*d %*u %*u %*s %u", &uid), 1);
	assert_int_equal(uid, (unsigned)getuid());
	assert_int_equal(procstat_owner_alive(self), 1);
	/* a boot id is 36 bytes, not the start of a longer word */
	snprintf(t, sizeof(t), "%d %llu %llu %sf %u", pid, start, ns, boot,
	    uid);
	assert_int_equal(procstat_owner_alive(t), 0);
	/* a pid of another namespace, not one of ours: alive */
	owner_text(t, sizeof(t), 0x3fffffff, start, ns + 1, boot);
	assert_int_equal(procstat_owner_alive(t), 1);
	/* the same, in this namespace: gone */
	owner_text(t, sizeof(t), 0x3fffffff, start, ns, boot);
	assert_int_equal(procstat_owner_alive(t), 0);
	owner_text(t, sizeof(t), pid, start + 1, ns, boot);
	assert_int_equal(procstat_owner_alive(t), 0);
	/* this very process, named under another boot: gone */
	boot[0] = boot[0] == '0' ? '1' : '0';
	owner_text(t, sizeof(t), pid, start, ns, boot);
	assert_int_equal(procstat_owner_alive(t), 0);
	owner_text(t, sizeof(t), pid, start, ns + 1, boot);
	assert_int_equal(procstat_owner_alive(t), 0);
	/* an older sandgate's "PID START": read in this namespace */
	snprintf(t, sizeof(t), "%d %llu", pid, start);
	assert_int_equal(procstat_owner_alive(t), 1);
	snprintf(t, sizeof(t), "%d %llu %llu", pid, start, ns);
	assert_int_equal(procstat_owner_alive(t), 0);
	snprintf(t, sizeof(t), "%d %llu %llu 1234", pid, start, ns);
	assert_int_equal(procstat_owner_alive(t), 0);
}

#define HIDDEN_OWNER	65534	/* the owner's uid */
#define HIDDEN_JUDGE	65533	/* the judge's: another user */
#define HIDDEN_SKIP	77	/* hidden_main: no such /proc here */

/* Become uid (and its gid, no groups): 0, or -1. */
static int
hidden_become(unsigned uid)
{
	if (setgroups(0, NULL) == -1 || setresgid(uid, uid, uid) == -1 ||
	    setresuid(uid, uid, uid) == -1)
		return -1;
	return 0;
}

/* procstat_owner_alive(text) as the user judge, in a child: 0/1, -1. */
static int
hidden_judge(const char *text, unsigned judge)
{
	pid_t	pid;
	int	st;

	if ((pid = fork()) == 0)
		_exit(hidden_become(judge) == -1 ? 2 :
		    procstat_owner_alive(text));
	if (pid == -1 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) ||
	    WEXITSTATUS(st) > 1)
		return -1;
	return WEXITSTATUS(st);
}

/* A child of uid HIDDEN_OWNER that waits; -1 when it cannot start. */
static pid_t
hidden_owner(void)
{
	pid_t	pid;
	char	c;
	int	p[2];

	if (pipe(p) == -1)
		return -1;
	if ((pid = fork()) == 0) {
		close(p[0]);
		if (hidden_become(HIDDEN_OWNER) == 0)
			(void)write(p[1], "\n", 1);
		for (;;)
			pause();
	}
	close(p[1]);
	if (pid != -1 && read(p[0], &c, 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		pid = -1;
	}
	close(p[0]);
	return pid;
}

/*
 * The child of test_owner_hidden, in a mount namespace of its own whose
 * /proc hides other users' processes: each case's owner judged by
 * another user. 0 when all hold, HIDDEN_SKIP, or the case that failed.
 */
static int
hidden_main(void)
{
	static const struct {
		long		 uid;	/* the mark's; -1: none (older) */
		int		 live;	/* the owner runs */
		unsigned	 judge;
		int		 want;
	} cases[] = {
		/* another user's live owner, hidden: alive */
		{ HIDDEN_OWNER, 1, HIDDEN_JUDGE, 1 },
		/* an older sandgate's mark (no uid), the same */
		{ -1, 1, HIDDEN_JUDGE, 1 },
		/* a mark of the judge's uid, its pid another user's: gone */
		{ HIDDEN_JUDGE, 1, HIDDEN_JUDGE, 0 },
		/* the owner's own user sees it */
		{ HIDDEN_OWNER, 1, HIDDEN_OWNER, 1 },
		/* once it is gone, it is gone for the other user too */
		{ HIDDEN_OWNER, 0, HIDDEN_JUDGE, 0 },
		{ -1, 0, HIDDEN_JUDGE, 0 },
	};
	struct procstat		ps;
	char			self[PROCSTAT_OWNER_MAX], t[PROCSTAT_OWNER_MAX];
	char			boot[PROCSTAT_BOOT_LEN + 1];
	unsigned long long	start, ns;
	size_t			i, n;
	pid_t			owner;
	int			pid, rv = 0;

	/* hidepid=invisible: a kernel before 5.8 (which knows only
	 * hidepid=2, and shares it with the host's /proc) refuses it */
	if (unshare(CLONE_NEWNS) == -1 ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	    "hidepid=invisible") == -1)
		return HIDDEN_SKIP;
	if (procstat_owner_self(self, sizeof(self)) == -1 || sscanf(self,
	    "%d %llu %llu %36s", &pid, &start, &ns, boot) != 4 ||
	    (owner = hidden_owner()) == -1)
		return 100;
	if (procstat_read(owner, &ps) == -1)
		rv = 101;
	for (i = 0; rv == 0 && i < sizeof(cases) / sizeof(cases[0]); i++) {
		owner_text(t, sizeof(t), owner, ps.start, ns, boot);
		if (cases[i].uid >= 0 && (n = strlen(t)) < sizeof(t))
			snprintf(t + n, sizeof(t) - n, " %ld", cases[i].uid);
		if (!cases[i].live && kill(owner, SIGKILL) == 0)
			waitpid(owner, NULL, 0);
		if (hidden_judge(t, cases[i].judge) != cases[i].want)
			rv = 10 + (int)i;
	}
	if (kill(owner, SIGKILL) == 0)
		waitpid(owner, NULL, 0);
	return rv;
}

/*
 * An owner that /proc hides from the judge (hidepid=invisible: another
 * user's process reads as ENOENT, as a pid that is gone does) is alive
 * while kill(2) finds its pid: another user's gc removed a fresh
 * container in use. Needs root (a proc mount, other uids).
 */
static void
test_owner_hidden(void **state)
{
	pid_t	pid;
	int	st;

	(void)state;
	if (geteuid() != 0)
		skip();
	if ((pid = fork()) == 0)
		_exit(hidden_main());
	assert_true(pid > 0);
	assert_int_equal(waitpid(pid, &st, 0), pid);
	assert_true(WIFEXITED(st));
	if (WEXITSTATUS(st) == HIDDEN_SKIP)
		skip();
	/* 10 + the case that failed */
	assert_int_equal(WEXITSTATUS(st), 0);
}

/* Start sh with envp; return once it runs (it says so on a pipe). */
static pid_t
spawn_ready(char *const envp[])
{
	char *const			argv[] = { "sh", "-c", "echo; sleep 5",
					    NULL };
	posix_spawn_file_actions_t	fa;
	pid_t				pid;
	char				c;
	int				p[2];

	assert_int_equal(pipe(p), 0);
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, p[1], STDOUT_FILENO);
	posix_spawn_file_actions_addclose(&fa, p[0]);
	assert_int_equal(posix_spawn(&pid, "/bin/sh", &fa, NULL, argv, envp),
	    0);
	posix_spawn_file_actions_destroy(&fa);
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	return pid;
}

/* A process started with and without the marker; a long one is cut. */
static void
test_run_marker(void **state)
{
	char *const	 marked[] = { "A=1", "SANDGATE_RUN=run_0123abcd", "B=2",
			    NULL };
	char *const	 plain[] = { "A=1", "SANDGATE_RUNX=no", NULL };
	char		 mark[64], small[5];
	pid_t		 pid;

	pid = spawn_ready(marked);
	assert_int_equal(procstat_run_marker((int)pid, mark, sizeof(mark)), 1);
	assert_string_equal(mark, "run_0123abcd");
	assert_int_equal(procstat_run_marker((int)pid, small, sizeof(small)),
	    1);
	assert_string_equal(small, "run_");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	pid = spawn_ready(plain);
	assert_int_equal(procstat_run_marker((int)pid, mark, sizeof(mark)), 0);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	assert_int_equal(procstat_run_marker((int)pid, mark, sizeof(mark)),
	    -1);
}

static void *
zleader_thread(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/* The child of test_zleader: the main thread exits, one thread stays. */
static int
zleader_main(void)
{
	pthread_t	t;

	if (pthread_create(&t, NULL, zleader_thread, NULL) != 0)
		return 1;
	if (write(STDOUT_FILENO, "\n", 1) != 1)
		return 1;
	syscall(SYS_exit, 0);
	return 1;
}

/*
 * A process whose main thread exited while a thread runs: its environ
 * can't be read (ESRCH), its marker still is (through the thread), and
 * it is not dead.
 */
static void
test_zleader(void **state)
{
	char *const	 envp[] = { "SANDGATE_RUN=run_00ddba11", NULL };
	char *const	 argv[] = { "test_procstat", "zleader", NULL };
	struct timespec	 ts = { 0, 20 * 1000 * 1000 };
	struct procstat	 ps;
	char		 mark[64], c;
	pid_t		 pid;
	int		 p[2], i;

	assert_int_equal(pipe(p), 0);
	if ((pid = fork()) == 0) {
		dup2(p[1], STDOUT_FILENO);
		execve("/proc/self/exe", argv, envp);
		_exit(127);
	}
	close(p[1]);
	assert_int_equal(read(p[0], &c, 1), 1);
	close(p[0]);
	for (i = 0; i < 100; i++) {
		assert_int_equal(procstat_read((int)pid, &ps), 0);
		if (ps.state == 'Z')
			break;
		nanosleep(&ts, NULL);
	}
	assert_int_equal(ps.state, 'Z');
	assert_true(ps.threads > 1);
	assert_false(procstat_dead(&ps));
	assert_int_equal(procstat_run_marker((int)pid, mark, sizeof(mark)), 1);
	assert_string_equal(mark, "run_00ddba11");
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/*
 * An exec --fresh's mark names its owner whole: on a host up for long
 * (here a time namespace's boot time 10^8 s, so a start time of 11
 * digits) "PID START PIDNS BOOT" is over 63 bytes, and a mark made in a
 * 64-byte buffer failed every exec --fresh. Needs root (CLONE_NEWTIME)
 * and CAP_SYS_TIME (the offset): skipped without them.
 */
static void
test_fresh_mark_long_owner(void **state)
{
	char		 tmpl[] = "/tmp/sgtest-mark." UTIL_MKTEMP_SUFFIX, path[4096];
	char		*cause = NULL;
	struct dirent	*de;
	DIR		*dir;
	pid_t		 pid, w;
	int		 st, fd, found = 0;

	(void)state;
	if (geteuid() != 0 || unshare(CLONE_NEWTIME) == -1)
		skip();
	/* the offset applies to the children of the unsharing process; it
	 * needs CAP_SYS_TIME, which a container's root may lack */
	fd = open("/proc/self/timens_offsets", O_WRONLY);
	assert_true(fd != -1);
	if (write(fd, "boottime 100000000 0", 20) != 20) {
		assert_int_equal(errno, EPERM);
		close(fd);
		skip();
	}
	close(fd);
	assert_non_null(mkdtemp(tmpl));
	setenv("SANDGATE_STATE", tmpl, 1);
	snprintf(path, sizeof(path), "%s/sandboxes", tmpl);
	assert_int_equal(mkdir(path, 0700), 0);
	snprintf(path, sizeof(path), "%s/sandboxes/sbx_mark", tmpl);
	assert_int_equal(mkdir(path, 0700), 0);
	if ((pid = fork()) == 0)
		_exit(sandbox_fresh_mark("sbx_mark", 0, &cause) == 0 ? 0 : 1);
	assert_true(pid > 0);
	do
		w = waitpid(pid, &st, 0);
	while (w == -1);
	assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	assert_non_null(dir = opendir(path));
	while ((de = readdir(dir)) != NULL)
		if (strncmp(de->d_name, SANDBOX_FRESH_MARK,
		    strlen(SANDBOX_FRESH_MARK)) == 0) {
			found = strlen(de->d_name) > 64;
			unlinkat(dirfd(dir), de->d_name, 0);
		}
	closedir(dir);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/sandboxes", tmpl);
	rmdir(path);
	rmdir(tmpl);
	assert_true(found);
}

int
main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_bad),
		cmocka_unit_test(test_read_self),
		cmocka_unit_test(test_owner),
		cmocka_unit_test(test_owner_hidden),
		cmocka_unit_test(test_run_marker),
		cmocka_unit_test(test_dead),
		cmocka_unit_test(test_zleader),
		cmocka_unit_test(test_fresh_mark_long_owner),
	};

	if (argc == 2 && strcmp(argv[1], "zleader") == 0)
		return zleader_main();

	return cmocka_run_group_tests(tests, NULL, NULL);
}
