/*
 * pemfile.h: create a key or certificate file that appears whole or not
 * at all. What the writer puts into it goes first to a temporary name
 * beside it (random, O_EXCL), is flushed to disk, then linked into place:
 * an existing file is never replaced, a crash leaves at most the
 * temporary file, and the file has its mode and owner before it has its
 * name. Used for the checkpoint keys (checkpoint.c) and the sandgate CA
 * (tlsca.c). And read the certificates of a file someone else writes,
 * none of its other bytes (pemfile_read_certs).
 */
#ifndef SG_PEMFILE_H
#define SG_PEMFILE_H

#include <sys/types.h>

#include <stdio.h>

/* Write the PEM text to f; 1 on success, 0 on failure (OpenSSL's). */
typedef int	(*pemfile_writer)(FILE *f, void *arg);

/*
 * Create name in the folder dirfd (AT_FDCWD: name is a path); path names
 * the file in messages. Mode 0600 when secret, else 0644; owned by
 * uid:gid unless uid is (uid_t)-1. 0, 1 when name exists already (left
 * as it is), or -1 with *cause.
 */
int	pemfile_create(int dirfd, const char *name, const char *path,
	    int secret, uid_t uid, gid_t gid, pemfile_writer write,
	    void *arg, char **cause);

/*
 * Read the certificates of name in the folder dirfd (path names it in
 * messages), a file another user controls (the proxy's CA folder, which
 * the proxy writes): opened without following a link, it must be a
 * regular file with one name (no hard link to a file elsewhere) of at
 * most max bytes, and only the PEM certificates it holds are kept, each
 * parsed and written again: no other byte of the file (text between
 * blocks, a key, anything not PEM) is ever returned. 0 with the PEM text
 * in *pem (malloc'd, NUL-terminated) and its length in *len; 1 when name
 * does not exist; -1 with *cause naming what is wrong.
 */
int	pemfile_read_certs(int dirfd, const char *name, const char *path,
	    size_t max, char **pem, size_t *len, char **cause);

#endif
