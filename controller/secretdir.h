/*
 * secretdir.h: the folder of the values of the credentials that
 * tls: terminate entries name (policy.md, "TLS termination"):
 * state_root()/proxy/secrets, the proxy's alone (mode 0700, owned by the
 * proxy's uid when sandgate runs as root, else by the caller), one file
 * per secret named as the secret (mode 0600, the value without a
 * newline). `sandgate proxy start` mounts it read-only into the proxy's
 * container alone, at SECRETDIR_MOUNT (--secrets-dir); no sandbox ever
 * mounts it, and no command prints a value.
 */
#ifndef SG_SECRETDIR_H
#define SG_SECRETDIR_H

#include <stddef.h>
#include <stdio.h>

#define SECRETDIR_MOUNT	"/etc/sandgate/secrets"

/* The folder's path into buf; -1 if it does not fit. */
int	secretdir_path(char *buf, size_t size);

/*
 * Set secret name to len bytes of value (made when missing, replaced
 * atomically otherwise). 0, or -1 with *cause (a bad name or value, a
 * folder that is not the proxy's alone, an I/O error).
 */
int	secretdir_set(const char *name, const char *value, size_t len,
	    char **cause);

/* Make the folder when missing and check it (proxy start). 0 or -1. */
int	secretdir_prepare(char **cause);

/* Print the names of the secrets set, one a line, sorted. 0 or -1. */
int	secretdir_list(FILE *out, char **cause);

/* Remove secret name: 0, 1 when it was not set, -1 with *cause. */
int	secretdir_rm(const char *name, char **cause);

#endif
