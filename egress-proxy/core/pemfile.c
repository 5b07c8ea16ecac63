/* pemfile.c: files that appear whole or not at all; see pemfile.h. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pemfile.h"
#include "util.h"

#define PEMFILE_TMP_TRIES	16
#define PEMFILE_TMP_MAX		4096

static int	pemfile_tmp_open(int, const char *, char *, size_t);

/* Open "NAME.tmp" + 8 random hex digits, new, in dirfd; its name in tmp. */
static int
pemfile_tmp_open(int dirfd, const char *base, char *tmp, size_t size)
{
	unsigned char	rnd[4];
	char		hex[9];
	int		i, fd = -1;

	for (i = 0; i < PEMFILE_TMP_TRIES && fd == -1; i++) {
		if (getentropy(rnd, sizeof(rnd)) == -1)
			return -1;
		util_hex(rnd, sizeof(rnd), hex);
		if ((size_t)snprintf(tmp, size, "%s.tmp%s", base, hex) >=
		    size) {
			errno = ENAMETOOLONG;
			return -1;
		}
		fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd == -1 && errno != EEXIST)
			return -1;
	}
	return fd;
}

int
pemfile_create(int dirfd, const char *name, const char *path, int secret,
    uid_t uid, gid_t gid, pemfile_writer write, void *arg, char **cause)
{
	char	 tmp[PEMFILE_TMP_MAX];
	FILE	*f = NULL;
	int	 fd, rc = -1;

	if ((fd = pemfile_tmp_open(dirfd, name, tmp, sizeof(tmp))) == -1) {
		util_xasprintf(cause, "cannot create a file beside \"%s\": %s",
		    path, strerror(errno));
		return -1;
	}
	if (fchmod(fd, secret ? 0600 : 0644) == -1 ||
	    (uid != (uid_t)-1 && fchown(fd, uid, gid) == -1) ||
	    (f = fdopen(fd, "w")) == NULL) {
		util_xasprintf(cause, "cannot prepare a file beside \"%s\": %s",
		    path, strerror(errno));
		close(fd);
		goto out;
	}
	if (!write(f, arg) || fflush(f) != 0 || fsync(fileno(f)) == -1) {
		util_xasprintf(cause, "cannot write a file beside \"%s\"", path);
		goto out;
	}
	if (linkat(dirfd, tmp, dirfd, name, 0) == -1) {
		if (errno == EEXIST)
			rc = 1;
		else
			util_xasprintf(cause, "cannot create \"%s\": %s", path,
			    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (f != NULL)
		fclose(f);
	(void)unlinkat(dirfd, tmp, 0);
	return rc;
}
