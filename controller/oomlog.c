/* oomlog.c: memory cgroup OOM kills from the kernel's log; see oomlog.h. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "oomlog.h"

#define OOMLOG_KILLED	"Memory cgroup out of memory: Killed process "
#define OOMLOG_REC_MAX	8192	/* a /dev/kmsg record is at most this */

int
oomlog_parse(const char *rec, size_t len)
{
	const char	*semi, *p, *end = rec + len;
	size_t		 klen = sizeof(OOMLOG_KILLED) - 1;
	long		 pid = 0;

	if ((semi = memchr(rec, ';', len)) == NULL)
		return -1;
	p = semi + 1;
	if ((size_t)(end - p) < klen || memcmp(p, OOMLOG_KILLED, klen) != 0)
		return -1;
	for (p += klen; p < end && *p >= '0' && *p <= '9'; p++) {
		pid = pid * 10 + (*p - '0');
		if (pid > INT_MAX)
			return -1;
	}
	if (p == semi + 1 + klen || p >= end || *p != ' ' || pid == 0)
		return -1;
	return (int)pid;
}

int
oomlog_open(void)
{
	int	fd;

	if ((fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC)) == -1)
		return -1;
	if (lseek(fd, 0, SEEK_END) == -1) {
		close(fd);
		return -1;
	}
	return fd;
}

long
oomlog_read(int fd, int *pids, size_t max)
{
	char	rec[OOMLOG_REC_MAX];
	ssize_t	n;
	long	found = 0;
	int	i, pid;

	if (fd == -1)
		return -1;
	for (i = 0; i < OOMLOG_READ_MAX; i++) {
		n = read(fd, rec, sizeof(rec));
		if (n == -1 && errno == EPIPE)
			continue;	/* overwritten records: go on */
		if (n <= 0)
			break;
		if ((pid = oomlog_parse(rec, (size_t)n)) == -1)
			continue;
		if ((size_t)found < max)
			pids[found] = pid;
		found++;
	}
	return found;
}
