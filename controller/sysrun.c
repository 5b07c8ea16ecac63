/* sysrun.c: run a system tool and keep its stderr; see sysrun.h. */
#include <sys/types.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "sysrun.h"
#include "util.h"

static void	sysrun_child(const struct sysrun *, int, int, int)
		    __attribute__((noreturn));
static void	sysrun_collect(struct sysrun *, int);

/* In the child: join the namespace, wire stdin/stdout/stderr, exec. */
static void
sysrun_child(const struct sysrun *r, int infd, int outfd, int errfd)
{
	char	ns[64];
	size_t	i;
	int	fd;

	if (r->netns > 0) {
		snprintf(ns, sizeof(ns), "/proc/%d/ns/net", r->netns);
		if ((fd = open(ns, O_RDONLY | O_CLOEXEC)) == -1 ||
		    setns(fd, CLONE_NEWNET) == -1) {
			dprintf(errfd, "cannot enter %s: %s", ns,
			    strerror(errno));
			_exit(126);
		}
		close(fd);
	}
	fd = open("/dev/null", O_RDWR);
	if (infd == -1)
		infd = fd;
	if (infd != -1)
		dup2(infd, STDIN_FILENO);
	if (outfd == -1)
		outfd = fd;
	if (outfd != -1)
		dup2(outfd, STDOUT_FILENO);
	dup2(errfd, STDERR_FILENO);
	for (i = 0; r->paths[i] != NULL; i++)
		execvp(r->paths[i], r->argv);
	dprintf(errfd, "cannot run %s: %s", r->argv[0], strerror(errno));
	_exit(127);
}

/* Write all of s to fd; the tool may exit without reading (EPIPE). */
static void
sysrun_feed(int fd, const char *s)
{
	size_t	len = strlen(s);
	ssize_t	n;

	while (len > 0) {
		n = write(fd, s, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		s += n;
		len -= (size_t)n;
	}
}

/* Read the tool's stdout from fd to its end; what does not fit is cut. */
static void
sysrun_collect(struct sysrun *r, int fd)
{
	char	sink[4096];
	size_t	len = 0;
	ssize_t	n;

	r->outcut = 0;
	for (;;) {
		if (len + 1 < r->outlen)
			n = read(fd, r->output + len, r->outlen - 1 - len);
		else
			n = read(fd, sink, sizeof(sink));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (len + 1 < r->outlen)
			len += (size_t)n;
		else
			r->outcut = 1;
	}
	r->output[len] = '\0';
	close(fd);
}

int
sysrun_start(struct sysrun *r, char **cause)
{
	int	efd[2], ifd[2] = { -1, -1 }, ofd[2] = { -1, -1 };

	r->pid = -1;
	if (r->output != NULL && r->outlen == 0)
		r->output = NULL;
	if (pipe2(efd, O_CLOEXEC) == -1) {
		util_cause(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((r->input != NULL && pipe2(ifd, O_CLOEXEC) == -1) ||
	    (r->output != NULL && pipe2(ofd, O_CLOEXEC) == -1)) {
		util_cause(cause, "pipe: %s", strerror(errno));
		goto fail;
	}
	fflush(NULL);
	if ((r->pid = fork()) == -1) {
		util_cause(cause, "fork: %s", strerror(errno));
		goto fail;
	}
	if (r->pid == 0)
		sysrun_child(r, ifd[0], ofd[1], efd[1]);
	close(efd[1]);
	if (ofd[1] != -1)
		close(ofd[1]);
	if (ifd[0] != -1)
		close(ifd[0]);
	r->errfd = efd[0];
	r->infd = ifd[1];
	r->outfd = ofd[0];
	return 0;
fail:
	close(efd[0]);
	close(efd[1]);
	if (ifd[0] != -1) {
		close(ifd[0]);
		close(ifd[1]);
	}
	if (ofd[0] != -1) {
		close(ofd[0]);
		close(ofd[1]);
	}
	return -1;
}

int
sysrun_finish(struct sysrun *r, char **cause)
{
	struct sigaction	 ign, old;
	char			 err[SYSRUN_ERR_MAX];
	size_t			 len = 0;
	ssize_t			 n;
	int			 status;

	if (r->infd != -1) {
		memset(&ign, 0, sizeof(ign));
		ign.sa_handler = SIG_IGN;
		sigaction(SIGPIPE, &ign, &old);
		sysrun_feed(r->infd, r->input);
		close(r->infd);
		sigaction(SIGPIPE, &old, NULL);
	}
	/* stdout first, to its end: the tool's stderr is short */
	if (r->outfd != -1)
		sysrun_collect(r, r->outfd);
	while ((n = read(r->errfd, err + len, sizeof(err) - 1 - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1 || (len += (size_t)n) == sizeof(err) - 1)
			break;
	}
	err[len] = '\0';
	close(r->errfd);
	while (waitpid(r->pid, &status, 0) == -1)
		if (errno != EINTR) {
			util_cause(cause, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	err[strcspn(err, "\n")] = '\0';
	util_cause(cause, "%s %s %d: %s", r->argv[0],
	    WIFEXITED(status) ? "exited" : "killed by signal",
	    WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status),
	    err[0] ? err : "no message");
	return -1;
}

int
sysrun(struct sysrun *r, char **cause)
{
	if (sysrun_start(r, cause) == -1)
		return -1;
	return sysrun_finish(r, cause);
}
