/* script.c: run the shipped scripts; see script.h. */
#include <sys/wait.h>

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "script.h"
#include "util.h"

#define SCRIPT_ARGS_MAX	32

const char *
script_data_dir(void)
{
	const char	*d = getenv("SANDGATE_DATA_DIR");

	return d && *d ? d : SANDGATE_DEFAULT_DATA_DIR;
}

const char *
script_bin_dir(void)
{
	static char	dir[PATH_MAX];
	ssize_t		n;
	char		*slash;

	if (dir[0] != '\0')
		return dir;
	if ((n = readlink("/proc/self/exe", dir, sizeof(dir) - 1)) == -1) {
		util_strlcpy(dir, ".", sizeof(dir));
		return dir;
	}
	dir[n] = '\0';
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	return dir;
}

int
script_run(const char *relpath, char *const args[], char **cause)
{
	char	 script[PATH_MAX], *argv[SCRIPT_ARGS_MAX + 3];
	size_t	 i;
	pid_t	 pid;
	int	 st;

	snprintf(script, sizeof(script), "%s/%s", script_data_dir(), relpath);
	if (access(script, R_OK) == -1) {
		util_cause(cause, "%s: %s (set SANDGATE_DATA_DIR to the "
		    "folder holding images/)", script, strerror(errno));
		return -1;
	}
	argv[0] = (char *)"bash";
	argv[1] = script;
	for (i = 0; args != NULL && args[i] != NULL && i < SCRIPT_ARGS_MAX; i++)
		argv[i + 2] = args[i];
	argv[i + 2] = NULL;
	fflush(NULL);
	if ((pid = fork()) == -1) {
		util_cause(cause, "fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		dup2(STDERR_FILENO, STDOUT_FILENO);
		execvp("bash", argv);
		_exit(127);
	}
	while (waitpid(pid, &st, 0) == -1)
		if (errno != EINTR) {
			util_cause(cause, "waitpid: %s", strerror(errno));
			return -1;
		}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
		util_cause(cause, "%s failed (exit %d)", script,
		    WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
		return -1;
	}
	return 0;
}
