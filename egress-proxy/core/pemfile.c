/*
 * pemfile.c: files that appear whole or not at all, and the certificates
 * of a file another user writes; see pemfile.h.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>

#include "pemfile.h"
#include "util.h"

#define PEMFILE_TMP_TRIES	16
#define PEMFILE_TMP_MAX		4096

static int	pemfile_tmp_open(int, const char *, char *, size_t);
static char	*pemfile_read_fd(int, const char *, size_t, size_t *,
		    char **);
static char	*pemfile_certs(const char *, size_t, const char *, size_t *,
		    char **);

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

/*
 * The bytes of fd, a regular file with one name of at most max bytes;
 * NULL with *cause otherwise.
 */
static char *
pemfile_read_fd(int fd, const char *path, size_t max, size_t *len,
    char **cause)
{
	struct stat	 st;
	char		*buf;
	size_t		 got = 0;
	ssize_t		 n;

	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		util_xasprintf(cause, "\"%s\" is not a regular file", path);
		return NULL;
	}
	if (st.st_nlink != 1) {
		util_xasprintf(cause, "\"%s\" has %ju names (a hard link to "
		    "another file?)", path, (uintmax_t)st.st_nlink);
		return NULL;
	}
	if (st.st_size < 0 || (uintmax_t)st.st_size > max) {
		util_xasprintf(cause, "\"%s\" is larger than %zu bytes", path,
		    max);
		return NULL;
	}
	buf = util_xmalloc((size_t)st.st_size + 1);
	while (got < (size_t)st.st_size && (n = read(fd, buf + got,
	    (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	if (got != (size_t)st.st_size) {
		util_xasprintf(cause, "cannot read \"%s\"", path);
		free(buf);
		return NULL;
	}
	*len = got;
	return buf;
}

/*
 * Each PEM certificate of buf (len bytes), parsed and written again, as
 * PEM text (malloc'd); NULL with *cause when there is none or a PEM
 * block is broken.
 */
static char *
pemfile_certs(const char *buf, size_t len, const char *path, size_t *outlen,
    char **cause)
{
	BIO		*in, *out;
	X509		*x;
	BUF_MEM		*mem;
	char		*pem = NULL;
	unsigned long	 err;
	int		 n = 0, ok = 1;

	if ((in = BIO_new_mem_buf(buf, (int)len)) == NULL ||
	    (out = BIO_new(BIO_s_mem())) == NULL) {
		BIO_free(in);
		util_xasprintf(cause, "out of memory reading \"%s\"", path);
		return NULL;
	}
	while (ok && (x = PEM_read_bio_X509(in, NULL, NULL, NULL)) != NULL) {
		ok = PEM_write_bio_X509(out, x) == 1;
		X509_free(x);
		n++;
	}
	err = ERR_peek_last_error();
	ERR_clear_error();
	BIO_get_mem_ptr(out, &mem);
	if (!ok)
		util_xasprintf(cause, "out of memory reading \"%s\"", path);
	else if (ERR_GET_LIB(err) != ERR_LIB_PEM ||
	    ERR_GET_REASON(err) != PEM_R_NO_START_LINE)
		util_xasprintf(cause, "\"%s\" holds a broken PEM block", path);
	else if (n == 0)
		util_xasprintf(cause, "\"%s\" holds no PEM certificate", path);
	else {
		pem = util_xmalloc(mem->length + 1);
		memcpy(pem, mem->data, mem->length);
		pem[mem->length] = '\0';
		*outlen = mem->length;
	}
	BIO_free(in);
	BIO_free(out);
	return pem;
}

int
pemfile_read_certs(int dirfd, const char *name, const char *path,
    size_t max, char **pem, size_t *len, char **cause)
{
	char	*buf;
	size_t	 n = 0;
	int	 fd;

	*pem = NULL;
	*len = 0;
	/* O_NONBLOCK: a FIFO's open would wait for a writer. */
	if ((fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 1;
		util_xasprintf(cause, "cannot open \"%s\": %s", path,
		    errno == ELOOP ? "it is a symbolic link" :
		    strerror(errno));
		return -1;
	}
	buf = pemfile_read_fd(fd, path, max, &n, cause);
	close(fd);
	if (buf == NULL)
		return -1;
	*pem = pemfile_certs(buf, n, path, len, cause);
	free(buf);
	return *pem != NULL ? 0 : -1;
}
