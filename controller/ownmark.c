/* ownmark.c: owner marks, held locked by their owner; see ownmark.h. */
#include <sys/file.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "ownmark.h"
#include "procstat.h"

#define OWNMARK_NAME_MAX	256

int
ownmark_make(int dirfd, const char *name, const char *text)
{
	char	tmp[OWNMARK_NAME_MAX + 8];
	size_t	len = text != NULL ? strlen(text) : 0;
	int	fd, err;

	if (strchr(name, '/') != NULL || snprintf(tmp, sizeof(tmp), ".new.%s",
	    name) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if ((fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC |
	    O_NOFOLLOW | O_CLOEXEC, 0600)) == -1)
		return -1;
	if ((flock(fd, LOCK_EX | LOCK_NB) == -1 && errno != ENOLCK) ||
	    (len > 0 && write(fd, text, len) != (ssize_t)len) ||
	    renameat(dirfd, tmp, dirfd, name) == -1) {
		err = errno;
		(void)unlinkat(dirfd, tmp, 0);
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

int
ownmark_held(int fd)
{
	if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
		(void)flock(fd, LOCK_UN);
		return 0;
	}
	return errno == EWOULDBLOCK ? 1 : -1;
}

int
ownmark_alive(int dirfd, const char *name, const char *text)
{
	int	fd, held = -1;

	/* O_NONBLOCK: a fifo put in the mark's place opens at once */
	if ((fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) != -1) {
		held = ownmark_held(fd);
		close(fd);
	}
	return held == 1 || procstat_owner_alive(text);
}
