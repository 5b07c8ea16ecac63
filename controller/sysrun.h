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
};

/*
 * Run it and wait. 0 when it exits 0; -1 otherwise with *cause naming the
 * tool, how it ended and the first line of its stderr.
 */
int	sysrun(const struct sysrun *, char **cause);

#endif
