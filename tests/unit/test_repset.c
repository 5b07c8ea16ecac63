/*
 * test_repset.c: the proxy replicas a sandbox is registered with
 * (repset.h): recorded from the environment, nothing written when the
 * file holds them all already; an exec's credential recorded where it
 * goes (atk1921i F3); a file that cannot be read (a link, a FIFO, a
 * folder, empty, cut before its newline) told from one that is not
 * there, never overwritten, and a send made from it not confirmed
 * (atk1921i F8); no more than PROXYCTL_TARGETS_MAX names recorded
 * (atk1921i F10). The replica is a fake one of this test (a child that
 * answers 200 {} to every request on loopback).
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <netinet/in.h>

#include <arpa/inet.h>
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

#include "proxyctl.h"
#include "repset.h"
#include "state.h"
#include "util.h"

#define SBX	"sbx_4e95e7000000000000000001"
#define RUN	"run_4e95e7000000000000000001"

static char	root[64], url[64], file[256];
static pid_t	replica;

/* Answers one request on c: 200 {} whatever it asked. */
static void
fake_answer(int c)
{
	static const char	 ok[] = "HTTP/1.1 200 OK\r\nContent-Type: "
				    "application/json\r\nContent-Length: 2\r\n"
				    "Connection: close\r\n\r\n{}";
	char			 buf[8192], *end, *cl;
	size_t			 have = 0;
	ssize_t			 n;

	while (have < sizeof(buf) - 1 && (n = read(c, buf + have,
	    sizeof(buf) - 1 - have)) > 0) {
		buf[have += n] = '\0';
		if ((end = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		cl = strcasestr(buf, "content-length:");
		if (cl == NULL || have >= (size_t)(end + 4 - buf) +
		    strtoul(cl + 15, NULL, 10))
			break;
	}
	(void)write(c, ok, sizeof(ok) - 1);
	close(c);
}

/* The fake replica on loopback; its URL into url. */
static void
fake_start(void)
{
	struct sockaddr_in	sin;
	socklen_t		len = sizeof(sin);
	int			s, c;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM, 0);
	assert_true(s != -1);
	assert_int_equal(bind(s, (struct sockaddr *)&sin, sizeof(sin)), 0);
	assert_int_equal(listen(s, 16), 0);
	assert_int_equal(getsockname(s, (struct sockaddr *)&sin, &len), 0);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d",
	    ntohs(sin.sin_port));
	if ((replica = fork()) == 0) {
		while ((c = accept(s, NULL, NULL)) != -1)
			fake_answer(c);
		_exit(0);
	}
	close(s);
}

static int
setup(void **state)
{
	char	tok[128], dir[128];
	FILE	*f;

	(void)state;
	snprintf(root, sizeof(root), "/tmp/test_repset." UTIL_MKTEMP_SUFFIX);
	assert_non_null(mkdtemp(root));
	snprintf(tok, sizeof(tok), "%s/control.token", root);
	assert_non_null(f = fopen(tok, "w"));
	fprintf(f, "dGVzdC10b2tlbi10ZXN0LXRva2VuLXRlc3QtdG9rZW4tdGVzdA==\n");
	fclose(f);
	chmod(tok, 0600);
	fake_start();
	setenv("SANDGATE_STATE", root, 1);
	setenv("SANDGATE_PROXY_CONTROL", url, 1);
	setenv("SANDGATE_PROXY_CONTROL_TOKEN_FILE", tok, 1);
	snprintf(dir, sizeof(dir), "%s/sandboxes", root);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(dir, sizeof(dir), "%s/sandboxes/%s", root, SBX);
	assert_int_equal(mkdir(dir, 0700), 0);
	snprintf(file, sizeof(file), "%s/replicas", dir);
	return 0;
}

static int
teardown(void **state)
{
	char	cmd[128];

	(void)state;
	kill(replica, SIGTERM);
	waitpid(replica, NULL, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", root);
	return system(cmd) == 0 ? 0 : -1;
}

static void
put(const char *text)
{
	FILE	*f;

	unlink(file);
	assert_non_null(f = fopen(file, "w"));
	fputs(text, f);
	fclose(f);
}

static char *
got(void)
{
	static char	buf[4096];
	ssize_t		n;
	int		fd = open(file, O_RDONLY | O_CLOEXEC);

	assert_true(fd != -1);
	assert_true((n = read(fd, buf, sizeof(buf) - 1)) >= 0);
	close(fd);
	buf[n] = '\0';
	return buf;
}

static void
test_absent_is_none_recorded(void **state)
{
	char	*bad = (char *)"x";

	(void)state;
	unlink(file);
	assert_null(repset_load(SBX, &bad));
	assert_null(bad);
}

static void
test_record_writes_once(void **state)
{
	char		 want[128];
	struct stat	 a, b;

	(void)state;
	put("socket\n");
	assert_int_equal(repset_record(SBX, NULL), 0);
	snprintf(want, sizeof(want), "socket,%s\n", url);
	assert_string_equal(got(), want);
	assert_int_equal(stat(file, &a), 0);
	/* unchanged: not written again (each exec asks) */
	assert_int_equal(repset_record(SBX, NULL), 0);
	assert_int_equal(stat(file, &b), 0);
	assert_int_equal(a.st_ino, b.st_ino);
	assert_string_equal(got(), want);
}

/* atk1921i F3: the exec's credential goes where its end will. */
static void
test_exec_begin_records(void **state)
{
	struct proxyctl_exec	 x;
	char			 want[128];

	(void)state;
	put("socket\n");
	proxyctl_exec_begin(&x, SBX, RUN, NULL, 60);
	assert_true(x.cred_ok);
	snprintf(want, sizeof(want), "socket,%s\n", url);
	assert_string_equal(got(), want);
	json_decref(x.replicas);
}

/* What is at the name, made by kind. */
static void
plant(const char *kind)
{
	char	real[300];

	unlink(file);
	rmdir(file);
	if (strcmp(kind, "symlink") == 0) {
		snprintf(real, sizeof(real), "%s.real", file);
		put("socket\n");
		assert_int_equal(rename(file, real), 0);
		assert_int_equal(symlink("replicas.real", file), 0);
	} else if (strcmp(kind, "fifo") == 0)
		assert_int_equal(mkfifo(file, 0600), 0);
	else if (strcmp(kind, "dir") == 0)
		assert_int_equal(mkdir(file, 0700), 0);
	else if (strcmp(kind, "empty") == 0)
		put("");
	else
		put("socket,http://127.0.0.1:1");
}

/* atk1921i F8: unreadable is not "none": said, never overwritten. */
static void
test_unreadable_is_not_none(void **state)
{
	static const char	*kinds[] = { "symlink", "fifo", "dir", "empty",
				    "cut" };
	struct stat		 a, b;
	char			*bad, *cause = NULL, *left, *why;
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		plant(kinds[i]);
		assert_int_equal(lstat(file, &a), 0);
		assert_null(repset_load(SBX, &bad));
		assert_non_null(bad);
		assert_non_null(strstr(bad, "cannot be read"));
		assert_int_equal(repset_record(SBX, &cause), -1);
		assert_non_null(strstr(cause, "not recorded again"));
		free(cause);
		cause = NULL;
		assert_int_equal(lstat(file, &b), 0);
		assert_int_equal(a.st_ino, b.st_ino);
		/* a send made without it is not confirmed */
		left = NULL;
		why = NULL;
		assert_int_equal(repset_unknown(bad, 0, &left, &why), -1);
		assert_string_equal(left, url);
		assert_non_null(strstr(why, "cannot be read"));
		free(left);
		free(why);
	}
	unlink(file);
	rmdir(file);
	assert_int_equal(repset_unknown(NULL, 0, &left, &why), 0);
}

/* atk1921i F10: no more names than a send can reach. */
static void
test_no_more_than_the_cap(void **state)
{
	char	*set = util_xstrdup(""), *tmp, *line, *cause = NULL;
	int	 i;

	(void)state;
	for (i = 0; i < PROXYCTL_TARGETS_MAX - 1; i++) {
		util_xasprintf(&tmp, "%s%shttp://127.0.0.2:%d", set,
		    i ? "," : "", 1000 + i);
		free(set);
		set = tmp;
	}
	util_xasprintf(&line, "%s,http://127.0.0.3:1\n", set);
	put(line);
	assert_int_equal(repset_record(SBX, &cause), -1);
	assert_non_null(strstr(cause, "more than"));
	free(cause);
	assert_string_equal(got(), line);
	free(line);
	util_xasprintf(&line, "%s\n", set);
	put(line);
	assert_int_equal(repset_record(SBX, NULL), 0);
	free(line);
	util_xasprintf(&line, "%s,%s\n", set, url);
	assert_string_equal(got(), line);
	free(line);
	free(set);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_absent_is_none_recorded),
		cmocka_unit_test(test_record_writes_once),
		cmocka_unit_test(test_exec_begin_records),
		cmocka_unit_test(test_unreadable_is_not_none),
		cmocka_unit_test(test_no_more_than_the_cap),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
