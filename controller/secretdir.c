/* secretdir.c: the folder of the credentials' values; see secretdir.h. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "policy.h"
#include "proxyctl.h"
#include "secretdir.h"
#include "state.h"
#include "util.h"

static uid_t	secretdir_owner(void);
static int	secretdir_open(int create, char **cause);
static int	secretdir_write(int dfd, const char *name, const char *value,
		    size_t len, char **cause);
static int	secretdir_cmp(const void *, const void *);

/* The proxy reads the folder: its uid owns it when we are root. */
static uid_t
secretdir_owner(void)
{
	return geteuid() == 0 ? PROXYCTL_UID : geteuid();
}

int
secretdir_path(char *buf, size_t size)
{
	int	n = snprintf(buf, size, "%s/proxy/secrets", state_root());

	return n < 0 || (size_t)n >= size ? -1 : 0;
}

/*
 * Open the folder (made when create and missing). It must be a folder,
 * not a link, owned by the proxy's uid and closed to everyone else.
 * The descriptor, or -1 with *cause (errno ENOENT when it is missing).
 */
static int
secretdir_open(int create, char **cause)
{
	struct stat	st;
	char		path[4096], parent[4096];
	uid_t		owner = secretdir_owner();
	int		fd, saved;

	if (secretdir_path(path, sizeof(path)) == -1 ||
	    snprintf(parent, sizeof(parent), "%s/proxy", state_root()) >=
	    (int)sizeof(parent))
		return util_cause(cause, "the state folder's path is too long");
	if (create) {
		state_mkdirs(parent, 0755);
		if (mkdir(path, 0700) == 0 &&
		    chown(path, owner, owner) == -1) {
			util_cause(cause, "cannot give %s to uid %u: %s", path,
			    (unsigned)owner, strerror(errno));
			rmdir(path);
			return -1;
		}
	}
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1) {
		saved = errno;
		util_cause(cause, "cannot open %s: %s", path, strerror(saved));
		errno = saved;
		return -1;
	}
	if (fstat(fd, &st) == -1 || st.st_uid != owner ||
	    (st.st_mode & 077) != 0) {
		close(fd);
		return util_cause(cause, "%s must be a folder of uid %u that "
		    "no one else can read (mode 0700)", path, (unsigned)owner);
	}
	return fd;
}

/* Write one value into a new file and put it in place of name. */
static int
secretdir_write(int dfd, const char *name, const char *value, size_t len,
    char **cause)
{
	char	tmp[128];
	uid_t	owner = secretdir_owner();
	int	fd, rc = -1;

	snprintf(tmp, sizeof(tmp), ".%s.%ld.tmp", name, (long)getpid());
	(void)unlinkat(dfd, tmp, 0);
	fd = openat(dfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1)
		return util_cause(cause, "cannot create a file for secret "
		    "\"%s\": %s", name, strerror(errno));
	if (fchown(fd, owner, owner) == -1 || fchmod(fd, 0600) == -1 ||
	    write(fd, value, len) != (ssize_t)len || fsync(fd) == -1) {
		util_cause(cause, "cannot write secret \"%s\": %s", name,
		    strerror(errno));
		goto out;
	}
	if (renameat(dfd, tmp, dfd, name) == -1) {
		util_cause(cause, "cannot set secret \"%s\": %s", name,
		    strerror(errno));
		goto out;
	}
	(void)fsync(dfd);
	rc = 0;
out:
	close(fd);
	if (rc == -1)
		(void)unlinkat(dfd, tmp, 0);
	return rc;
}

int
secretdir_set(const char *name, const char *value, size_t len,
    char **cause)
{
	int	dfd, rc;

	if (!policy_set_name_valid(name))
		return util_cause(cause, "\"%s\" is not a secret name (a-z, "
		    "0-9, '_' and '-', at most %d)", name,
		    SG_POLICY_SET_NAME_MAX);
	if (!policy_secret_value_valid(value, len))
		return util_cause(cause, "the value of \"%s\" must be 1 to %d "
		    "bytes with no control character but tab (it becomes a "
		    "header value)", name, SG_SECRET_VALUE_MAX);
	if ((dfd = secretdir_open(1, cause)) == -1)
		return -1;
	rc = secretdir_write(dfd, name, value, len, cause);
	close(dfd);
	return rc;
}

static int
secretdir_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int
secretdir_list(FILE *out, char **cause)
{
	struct dirent	 *de;
	DIR		 *d;
	char		**names = NULL;
	size_t		  n = 0, i;
	int		  dfd;

	if ((dfd = secretdir_open(0, cause)) == -1) {
		if (errno != ENOENT)
			return -1;
		free(*cause);	/* no folder: no secret set */
		*cause = NULL;
		return 0;
	}
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return util_cause(cause, "cannot list the secrets: %s",
		    strerror(errno));
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || !policy_set_name_valid(de->d_name))
			continue;
		if (n % 64 == 0) {
			names = realloc(names, (n + 64) * sizeof(*names));
			if (names == NULL)
				fatalx("out of memory");
		}
		names[n++] = util_xstrdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), secretdir_cmp);
	for (i = 0; i < n; i++) {
		fprintf(out, "%s\n", names[i]);
		free(names[i]);
	}
	free(names);
	return 0;
}

int
secretdir_rm(const char *name, char **cause)
{
	int	dfd, rc = 0;

	if (!policy_set_name_valid(name))
		return util_cause(cause, "\"%s\" is not a secret name", name);
	if ((dfd = secretdir_open(0, cause)) == -1) {
		if (errno != ENOENT)
			return -1;
		free(*cause);
		*cause = NULL;
		return 1;
	}
	if (unlinkat(dfd, name, 0) == -1) {
		if (errno == ENOENT)
			rc = 1;
		else
			rc = util_cause(cause, "cannot remove secret \"%s\": %s",
			    name, strerror(errno));
	}
	close(dfd);
	return rc;
}

int
secretdir_prepare(char **cause)
{
	int	dfd;

	if ((dfd = secretdir_open(1, cause)) == -1)
		return -1;
	close(dfd);
	return 0;
}
