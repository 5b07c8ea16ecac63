/* rtpid.c: the pids the container runtime recorded; see rtpid.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"
#include "rtpid.h"

#define RTPID_TEXT_MAX	32	/* a pid, a newline: far shorter */
#define RTPID_NAME_MAX	128	/* Docker's exec ids are 64 hex digits */

/* The decimal pid text holds, or 0. */
static int
rtpid_parse(const char *text)
{
	long	v = 0;
	size_t	i;

	for (i = 0; text[i] >= '0' && text[i] <= '9'; i++) {
		v = v * 10 + (text[i] - '0');
		if (v > INT_MAX)
			return 0;
	}
	if (i == 0 || (text[i] != '\0' && strcmp(text + i, "\n") != 0))
		return 0;
	return (int)v;
}

/* The pid in dir/<name>.pid, or 0. */
static int
rtpid_file(const char *dir, const char *name)
{
	char	path[PATH_MAX], buf[RTPID_TEXT_MAX];
	ssize_t	r;
	int	fd;

	if (snprintf(path, sizeof(path), "%s/%s.pid", dir, name) >=
	    (int)sizeof(path))
		return 0;
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1)
		return 0;
	do {
		r = read(fd, buf, sizeof(buf) - 1);
	} while (r == -1 && errno == EINTR);
	close(fd);
	if (r <= 0)
		return 0;
	buf[r] = '\0';
	return rtpid_parse(buf);
}

int
rtpid_read(const char *dir, const char *name)
{
	size_t	i, n;

	n = strlen(name);
	if (n == 0 || n > RTPID_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++)
		if (strchr("0123456789abcdef", name[i]) == NULL)
			return 0;
	return rtpid_file(dir, name);
}

int
rtpid_bundle(int init_pid, char *out, size_t len)
{
	struct procstat	ps;
	char		link[64];
	ssize_t		n;

	if (len == 0 || procstat_read(init_pid, &ps) == -1 || ps.ppid <= 1)
		return -1;
	snprintf(link, sizeof(link), "/proc/%d/cwd", ps.ppid);
	if ((n = readlink(link, out, len - 1)) <= 0 || (size_t)n >= len - 1)
		return -1;
	out[n] = '\0';
	/* a parent that is no runc shim has no init.pid naming the init */
	if (out[0] != '/' || rtpid_file(out, "init") != init_pid) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}
