/*
 * sysrun.h: running a system tool (mkfs.ext4, iptables-restore) from the
 * controller, optionally inside a container's network namespace, with its
 * stderr kept for the error message.
 */
#ifndef SG_SYSRUN_H
#define SG_SYSRUN_H

#include <stddef.h>

#define SYSRUN_ERR_MAX	512	/* bytes of the tool's stderr kept */

struct sysrun {
	const char *const	*paths;	/* tried in order: "/usr/sbin/x", "x" */
	char *const		*argv;	/* argv[0] included, NULL-terminated */
	const char		*input;	/* written to its stdin (< 4 KiB), or NULL */
	int			 netns;	/* pid whose network namespace the tool
					   joins first, or 0 */
	char			*output; /* its stdout, NUL-terminated, or NULL
					   (then stdout is /dev/null) */
	size_t			 outlen; /* size of output */
	int			 outcut; /* set: stdout was longer (cut) */
	/* set by sysrun_start for sysrun_finish */
	int			 pid, infd, outfd, errfd;
};

/*
 * Run it and wait. 0 when it exits 0; -1 otherwise with *cause naming the
 * tool, how it ended and the first line of its stderr. With output set,
 * its stdout is read into output (outcut set when it did not fit).
 */
int	sysrun(struct sysrun *, char **cause);

/*
 * sysrun in two halves, so that tools can run at the same time: start
 * (0, or -1 with *cause and nothing left open), then finish, which must
 * follow every start that returned 0 (feeds input, reads the output,
 * waits; its result is sysrun's).
 */
int	sysrun_start(struct sysrun *, char **cause);
int	sysrun_finish(struct sysrun *, char **cause);

#endif
