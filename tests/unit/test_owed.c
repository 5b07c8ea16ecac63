/*
 * test_owed.c: the sends the proxy still owes (owed.h): kept with their
 * subject and reason, sent again by owed_retry (forgotten when the send
 * is confirmed, kept with the new reason when not, left alone with
 * dry), only those of one subject when asked, dropped per subject, an
 * older one-line file taken as its own subject, other names ignored; the
 * replicas a send is owed to kept with it, given to the send and cut to
 * those that did not confirm it (atk1921h F3); a FIFO, a folder or too
 * long a subject said and counted, never waited on (atk1921h F6); a
 * send kept replaced whole, whatever was at its name (atk1921i F6, F11).
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include <dirent.h>
#include <signal.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "owed.h"
#include "state.h"
#include "util.h"

#define SA	"sbx_aaaaaaaaaaaaaaaaaaaaaaaa"
#define SB	"sbx_bbbbbbbbbbbbbbbbbbbbbbbb"
#define R1	"run_111111111111111111111111"
#define R2	"run_222222222222222222222222"
#define R3	"run_333333333333333333333333"

static char	root[64];
static int	fail_sends;	/* the fake replica refuses every send */
static char	sent[256];	/* the ids sent, in order met */
static char	seen[512];	/* what the callback got */
static char	sent_to[256];	/* the replicas the last send was owed to */
static char	down[64];	/* one replica of a set that is down */

/*
 * Refuses every send (fail_sends), or those owed to down: then only it
 * is left.
 */
static int
fake_send(const char *id, const char *subject, const char *to, char **left,
    char **why)
{
	(void)subject;
	strcat(sent, id);
	strcat(sent, " ");
	snprintf(sent_to, sizeof(sent_to), "%s", to ? to : "(env)");
	if (fail_sends) {
		*why = strdup("http://127.0.0.1:9 (unreachable)");
		return -1;
	}
	if (down[0] != '\0' && to != NULL && strstr(to, down) != NULL) {
		*left = strdup(down);
		*why = strdup("down (unreachable)");
		return -1;
	}
	return 0;
}

static const struct owed owed_t = { "owedtest", "run_", fake_send, NULL };

static void
cb(const char *id, const char *subject, const char *why, void *arg)
{
	(void)arg;
	snprintf(seen + strlen(seen), sizeof(seen) - strlen(seen),
	    "%s %s %s;", id, subject, why ? why : "done");
}

static int
kept(const char *id)
{
	char	path[4096];

	assert_int_equal(owed_path(&owed_t, path, sizeof(path), id), 0);
	return access(path, F_OK) == 0;
}

static char *
text_of(const char *id)
{
	static char	 buf[512];
	char		 path[4096];
	FILE		*f;
	size_t		 n;

	assert_int_equal(owed_path(&owed_t, path, sizeof(path), id), 0);
	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static int
reset(void **state)
{
	char	*cmd;

	(void)state;
	util_xasprintf(&cmd, "rm -rf '%s/owedtest'", root);
	assert_int_equal(system(cmd), 0);
	free(cmd);
	fail_sends = 0;
	sent[0] = seen[0] = sent_to[0] = down[0] = '\0';
	return 0;
}

static void
add(const char *id, const char *subject)
{
	char	*cause = NULL;

	assert_int_equal(owed_add(&owed_t, id, subject, NULL,
	    "r (unreachable)", &cause), 0);
	assert_null(cause);
}

/* Kept 0600 in a 0700 folder, two lines: subject, why. */
static void
test_add_keeps(void **state)
{
	struct stat	st;
	char		path[4096];

	(void)state;
	add(R1, SA);
	assert_string_equal(text_of(R1), SA "\nr (unreachable)\n");
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R1), 0);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	*strrchr(path, '/') = '\0';
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0700);
}

static const struct retry_case {
	const char	*name;
	const char	*subject;	/* owed_retry's filter */
	int		 dry, fail;
	int		 owed;		/* returned */
	const char	*sent;		/* ids sent (sorted not needed: one) */
	int		 r1, r3;	/* kept after */
	const char	*why1;		/* R1's file after */
} retry_cases[] = {
	{ "confirmed", SA, 0, 0, 0, R1 " ", 0, 1, NULL },
	{ "refused", SA, 0, 1, 1, R1 " ", 1, 1,
	    SA "\nhttp://127.0.0.1:9 (unreachable)\n" },
	{ "dry", SA, 1, 0, 1, "", 1, 1, SA "\nr (unreachable)\n" },
	{ "other subject", "sbx_cccccccccccccccccccccccc", 0, 0, 0, "", 1, 1,
	    SA "\nr (unreachable)\n" },
};

/* R1 of SA and R3 of SB kept; retry as the case says. */
static void
test_retry(void **state)
{
	const struct retry_case	*c;
	size_t			 i;

	for (i = 0; i < sizeof(retry_cases) / sizeof(retry_cases[0]); i++) {
		c = &retry_cases[i];
		reset(state);
		add(R1, SA);
		add(R3, SB);
		fail_sends = c->fail;
		assert_int_equal(owed_retry(&owed_t, c->subject, c->dry, cb,
		    NULL), c->owed);
		assert_string_equal(sent, c->sent);
		assert_int_equal(kept(R1), c->r1);
		assert_int_equal(kept(R3), c->r3);
		if (c->why1 != NULL)
			assert_string_equal(text_of(R1), c->why1);
		if (c->dry)
			assert_string_equal(seen, R1 " " SA
			    " not sent (--dry-run);");
	}
}

/* NULL: every subject; names not of the prefix and length ignored. */
static void
test_retry_all_ignores_others(void **state)
{
	char	path[4096];
	FILE	*f;

	(void)state;
	add(R1, SA);
	add(R3, SB);
	assert_int_equal(owed_path(&owed_t, path, sizeof(path),
	    "sbx_111111111111111111111111"), 0);
	assert_non_null(f = fopen(path, "w"));
	fputs(SA "\nx\n", f);
	fclose(f);
	assert_int_equal(owed_retry(&owed_t, NULL, 0, cb, NULL), 0);
	assert_int_equal(strlen(sent), 2 * (STATE_ID_LEN + 1));
	assert_false(kept(R1));
	assert_false(kept(R3));
	assert_int_equal(access(path, F_OK), 0);
}

/* An older file holds the reason alone: its subject is its name. */
static void
test_one_line_file(void **state)
{
	char	path[4096];
	FILE	*f;

	(void)state;
	add(R1, SA);
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R2), 0);
	assert_non_null(f = fopen(path, "w"));
	fputs("http://127.0.0.1:9 (unreachable)\n", f);
	fclose(f);
	assert_int_equal(owed_retry(&owed_t, R2, 0, cb, NULL), 0);
	assert_string_equal(sent, R2 " ");
	assert_string_equal(seen, R2 " " R2 " done;");
	assert_true(kept(R1));
}

/*
 * atk1921h F3: a kept send names the replicas it is owed to; a retry
 * sends it to them, and what stays owed is only the replicas that did
 * not confirm it (never cleared by other replicas' confirmation).
 */
static void
test_owed_to_replicas(void **state)
{
	char	*cause = NULL, *to;

	(void)state;
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://a,http://b",
	    "http://b (unreachable)", &cause), 0);
	assert_string_equal(text_of(R1),
	    SA "\nto http://a,http://b\nhttp://b (unreachable)\n");
	assert_non_null(to = owed_to(&owed_t, SA));
	assert_string_equal(to, "http://a,http://b");
	free(to);
	assert_null(owed_to(&owed_t, SB));
	snprintf(down, sizeof(down), "http://b");
	assert_int_equal(owed_retry(&owed_t, SA, 0, cb, NULL), 1);
	assert_string_equal(sent_to, "http://a,http://b");
	assert_string_equal(text_of(R1),
	    SA "\nto http://b\ndown (unreachable)\n");
	down[0] = '\0';
	assert_int_equal(owed_retry(&owed_t, SA, 0, cb, NULL), 0);
	assert_string_equal(sent_to, "http://b");
	assert_false(kept(R1));
	/* a two-line file (older) is owed to the environment's */
	add(R2, SA);
	assert_int_equal(owed_retry(&owed_t, SA, 0, cb, NULL), 0);
	assert_string_equal(sent_to, "(env)");
}

/*
 * atk1921h F6: a kept send that is a FIFO or a folder (or too long a
 * subject) is said and counted as owed, never waited on nor skipped
 * silently; the others are still sent.
 */
static void
test_odd_files(void **state)
{
	static const char *const kinds[] = { "fifo", "dir", "long" };
	char	path[4096];
	FILE	*f;
	size_t	i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		reset(state);
		add(R1, SA);
		assert_int_equal(owed_path(&owed_t, path, sizeof(path), R2), 0);
		if (strcmp(kinds[i], "fifo") == 0)
			assert_int_equal(mkfifo(path, 0600), 0);
		else if (strcmp(kinds[i], "dir") == 0)
			assert_int_equal(mkdir(path, 0700), 0);
		else {
			assert_non_null(f = fopen(path, "w"));
			fprintf(f, "sbx_%0300d\nwhy\n", 0);
			fclose(f);
		}
		assert_int_equal(owed_retry(&owed_t, NULL, 0, cb, NULL), 1);
		assert_string_equal(sent, R1 " ");
		assert_int_equal(access(path, F_OK), 0);
		owed_drop(&owed_t, SA);
	}
}

/* The number of files in the folder of owed_t whose name starts id. */
static int
files_of(const char *id)
{
	struct dirent	*de;
	char		 dir[4096];
	DIR		*dp;
	int		 n = 0;

	snprintf(dir, sizeof(dir), "%s/owedtest", root);
	assert_non_null(dp = opendir(dir));
	while ((de = readdir(dp)) != NULL)
		n += strncmp(de->d_name, id, strlen(id)) == 0;
	closedir(dp);
	return n;
}

/*
 * atk1921i F11, F6: a FIFO at a kept send's name is not opened (the
 * command hung on it), a symlink there is not followed: since atk1921m F1
 * neither is replaced (this command did not read them), the send is kept
 * beside them; and owed_add replaces a kept file it read whole: a write
 * cut short (RLIMIT_FSIZE, as a full volume or a kill would) leaves the
 * send kept before, not a torn one naming no replica (a later command
 * with fewer replicas then confirmed and dropped it).
 */
static void
test_add_replaces_whole(void **state)
{
	struct rlimit	 rl, was;
	char		 path[4096], *cause = NULL, target[4200], buf[512];
	FILE		*f;
	size_t		 n;

	(void)state;
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R1), 0);
	add(R2, SA);			/* the folder made */
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://r1", "why",
	    &cause), 0);
	assert_int_equal(files_of(R1), 2);	/* beside it, not opened */
	assert_int_equal(unlink(path), 0);
	snprintf(target, sizeof(target), "%s.target", root);
	assert_int_equal(symlink(target, path), 0);
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://r1", "why",
	    &cause), 0);
	assert_int_equal(access(target, F_OK), -1);	/* not followed */
	assert_int_equal(files_of(R1), 3);
	reset(NULL);
	/* a write cut short: the send kept before (and read) stays whole */
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://r1", "why",
	    &cause), 0);
	owed_lock();
	free(owed_to(&owed_t, SA));
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_IGN);
	rl = was;
	rl.rlim_cur = 8;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://r1,http://r2",
	    "a longer reason", &cause), -1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	owed_unlock();
	free(cause);
	assert_int_equal(files_of(R1), 1);
	assert_non_null(f = fopen(path, "r"));
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	assert_string_equal(buf, SA "\nto http://r1\nwhy\n");
}

/*
 * owed_drop forgets a subject's sends unsent, the others stay; it and
 * owed_done forget only those whose replicas this command read (owed_to)
 * under the lock it holds: one not read stays (atk1921m F1).
 */
static void
test_drop(void **state)
{
	(void)state;
	add(R1, SA);
	add(R2, SA);
	add(R3, SB);
	owed_drop(&owed_t, SA);		/* not read: they stay (atk1921m F1) */
	assert_true(kept(R1));
	owed_done(&owed_t, R3);
	assert_true(kept(R3));
	owed_lock();
	free(owed_to(&owed_t, SA));
	free(owed_to(&owed_t, SB));
	owed_drop(&owed_t, SA);
	assert_string_equal(sent, "");
	assert_false(kept(R1));
	assert_false(kept(R2));
	assert_true(kept(R3));
	owed_done(&owed_t, R3);
	owed_done(&owed_t, R3);		/* none kept is fine */
	assert_false(kept(R3));
	owed_unlock();
}

/*
 * Without the lock (a folder at owed.lock) a send is only added: a
 * second one of the same id beside the first, which stays as it was;
 * both are sent again, neither removed nor rewritten (atk1921l F4).
 */
static void
test_unlocked_only_adds(void **state)
{
	char	lock[4096], *cause = NULL, *to;

	(void)state;
	add(R1, SA);
	snprintf(lock, sizeof(lock), "%s/owed.lock", root);
	(void)unlink(lock);		/* the file an earlier test locked */
	assert_int_equal(mkdir(lock, 0700), 0);
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://r2", "why",
	    &cause), 0);
	assert_string_equal(text_of(R1), SA "\nr (unreachable)\n");
	assert_int_equal(files_of(R1), 2);
	assert_non_null(to = owed_to(&owed_t, SA));
	assert_non_null(strstr(to, "http://r2"));
	free(to);
	assert_int_equal(owed_retry(&owed_t, SA, 0, cb, NULL), 0);
	assert_string_equal(sent, R1 " " R1 " ");
	assert_int_equal(files_of(R1), 2);
	assert_int_equal(owed_done(&owed_t, R1), 0);
	owed_drop(&owed_t, SA);
	assert_int_equal(files_of(R1), 2);
	assert_int_equal(rmdir(lock), 0);
	assert_int_equal(owed_retry(&owed_t, SA, 0, cb, NULL), 0);
	assert_int_equal(files_of(R1), 0);
}

/* One that cannot be read is not removed by owed_done (atk1921k F5). */
static void
test_done_keeps_unread(void **state)
{
	char	 path[4096], subject[400];
	FILE	*f;

	(void)state;
	add(R1, SA);
	memset(subject, 's', sizeof(subject) - 1);
	subject[sizeof(subject) - 1] = '\0';
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R1), 0);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, "%s\nwhy\n", subject);
	fclose(f);
	assert_int_equal(owed_done(&owed_t, R1), -1);
	assert_true(kept(R1));
}

/*
 * atk1921m F1: a locked command read whom id is owed to (nothing kept),
 * and while it sent, one without the lock kept id at its name for another
 * replica. The locked one's send, kept after, goes beside it, and its
 * confirmation removes nothing: the other replica's send is never lost.
 * Likewise one added after a kept send was read and before it is rewritten.
 */
static void
test_locked_keeps_what_it_did_not_read(void **state)
{
	char	path[4096], *cause = NULL;
	FILE	*f;

	(void)state;
	add(R2, SA);			/* the folder made */
	owed_lock();
	free(owed_to(&owed_t, SA));	/* R1: none kept */
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R1), 0);
	assert_non_null(f = fopen(path, "w"));	/* the unlocked command's */
	fprintf(f, SA "\nto http://other\nwhy\n");
	fclose(f);
	assert_int_equal(owed_add(&owed_t, R1, SA, "http://mine", "why",
	    &cause), 0);
	assert_string_equal(text_of(R1), SA "\nto http://other\nwhy\n");
	assert_int_equal(files_of(R1), 2);
	assert_int_equal(owed_done(&owed_t, R1), 0);
	assert_string_equal(text_of(R1), SA "\nto http://other\nwhy\n");
	owed_unlock();
	/* a locked retry rewrites only the file it read */
	reset(NULL);
	fail_sends = 1;
	add(R1, SA);
	assert_int_equal(owed_retry(&owed_t, SA, 0, cb, NULL), 1);
	assert_int_equal(files_of(R1), 1);
	assert_non_null(strstr(text_of(R1), "127.0.0.1:9"));
}

/* text written into a new file at path; its inode number. */
static ino_t
make_file(const char *path, const char *text)
{
	struct stat	 st;
	FILE		*f;

	assert_non_null(f = fopen(path, "wx"));
	fputs(text, f);
	assert_int_equal(fstat(fileno(f), &st), 0);
	fclose(f);
	return st.st_ino;
}

/*
 * 1 when the file system of the state root gives a freed inode's number
 * to the next file made (ext4 does at once): else the case below cannot
 * be made.
 */
static int
inodes_reused(void)
{
	char	path[4096];
	ino_t	ino;
	int	tries, reused = 0;

	snprintf(path, sizeof(path), "%s/probe", root);
	ino = make_file(path, "x");
	for (tries = 0; tries < 64 && !reused; tries++) {
		assert_int_equal(unlink(path), 0);
		reused = make_file(path, "x") == ino;
	}
	assert_int_equal(unlink(path), 0);
	return reused;
}

/*
 * atk1921n F1: a locked command read R1 (owed_to); meanwhile another
 * rewrote it (a new file, the old one freed) naming other replicas, and
 * the new file was given the old one's inode number. The first one's
 * confirmation must not remove it: the file read is held open, so its
 * number is never given to another while this command may act on it.
 */
static void
test_seen_is_the_file_read(void **state)
{
	struct stat	 st;
	char		 path[4096];
	const char	*other = SA "\nto http://other\nwhy\n";
	int		 tries, same = 0;

	(void)state;
	if (!inodes_reused())
		skip();
	add(R1, SA);
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R1), 0);
	owed_lock();
	free(owed_to(&owed_t, SA));		/* R1 read */
	assert_int_equal(stat(path, &st), 0);
	for (tries = 0; tries < 64 && !same; tries++) {
		assert_int_equal(unlink(path), 0);	/* rewritten */
		same = make_file(path, other) == st.st_ino;
	}
	assert_int_equal(owed_done(&owed_t, R1), 0);
	assert_true(kept(R1));
	assert_string_equal(text_of(R1), other);
	assert_false(same);		/* its number was never free */
	owed_unlock();
}

/*
 * n names of replicas (http://127.0.0.1:PORT/ and a path of 470 bytes,
 * 494 bytes each) from port first on, comma-separated (heap).
 */
static char *
long_names(int first, int n)
{
	char	*to = NULL, *tmp, pad[471];
	int	 i;

	memset(pad, 'p', sizeof(pad) - 1);
	pad[sizeof(pad) - 1] = '\0';
	for (i = 0; i < n; i++) {
		util_xasprintf(&tmp, "%s%shttp://127.0.0.1:%d/%s", to ? to :
		    "", to ? "," : "", first + i, pad);
		free(to);
		to = tmp;
	}
	return to;
}

/*
 * atk1921n F2: a kept file whose line of replicas is longer than what is
 * read of it is not taken as one naming none (the environment's): it is
 * not sent, nor removed, and counted as owed. And none is written so:
 * 48 names are kept in two files, each read whole, naming all 48.
 */
static void
test_long_to_line(void **state)
{
	char	 path[4096], *to, *got, *cause = NULL, *name;
	FILE	*f;
	int	 i;

	(void)state;
	to = long_names(21001, 48);
	add(R2, SA);			/* the folder made */
	assert_int_equal(owed_path(&owed_t, path, sizeof(path), R1), 0);
	assert_non_null(f = fopen(path, "w"));
	fprintf(f, SA "\nto %s\nwhy\n", to);
	fclose(f);
	assert_int_equal(owed_retry(&owed_t, NULL, 0, cb, NULL), 1);
	assert_null(strstr(sent, R1));	/* not sent to the environment's */
	assert_true(kept(R1));
	assert_int_equal(owed_done(&owed_t, R1), -1);
	assert_true(kept(R1));
	reset(NULL);

	assert_int_equal(owed_add(&owed_t, R1, SA, to, "why", &cause), 0);
	assert_int_equal(files_of(R1), 2);
	assert_non_null(got = owed_to(&owed_t, SA));
	for (i = 0; i < 48; i++) {
		name = long_names(21001 + i, 1);
		assert_non_null(strstr(got, name));
		free(name);
	}
	free(got);
	free(to);
}

static int
group_setup(void **state)
{
	(void)state;
	snprintf(root, sizeof(root), "/tmp/sg-owed-" UTIL_MKTEMP_SUFFIX);
	if (mkdtemp(root) == NULL)
		return -1;
	setenv("SANDGATE_STATE", root, 1);
	return 0;
}

static int
group_teardown(void **state)
{
	char	*cmd;

	(void)state;
	util_xasprintf(&cmd, "rm -rf '%s'", root);
	if (system(cmd) != 0)
		fprintf(stderr, "cannot remove %s\n", root);
	free(cmd);
	return 0;
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup(f, reset)
	const struct CMUnitTest tests[] = {
		T(test_add_keeps),
		T(test_retry),
		T(test_retry_all_ignores_others),
		T(test_one_line_file),
		T(test_drop),
		T(test_owed_to_replicas),
		T(test_odd_files),
		T(test_add_replaces_whole),
		T(test_unlocked_only_adds),
		T(test_done_keeps_unread),
		T(test_locked_keeps_what_it_did_not_read),
		T(test_seen_is_the_file_read),
		T(test_long_to_line),
	};
#undef T
	return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
