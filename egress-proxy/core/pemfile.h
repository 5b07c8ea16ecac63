/*
 * pemfile.h: create a key or certificate file that appears whole or not
 * at all. What the writer puts into it goes first to a temporary name
 * beside it (random, O_EXCL), is flushed to disk, then linked into place:
 * an existing file is never replaced, a crash leaves at most the
 * temporary file, and the file has its mode and owner before it has its
 * name. Used for the checkpoint keys (checkpoint.c) and the sandgate CA
 * (tlsca.c).
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

#endif
