/*
 * secret.h: the values of the credentials that tls: terminate entries
 * name (credentials: {header, secret}), read from a folder only the
 * proxy's uid can read (`sandgate secret set NAME` writes it), never
 * from a policy file.
 *
 * One file per secret: its name is the secret's name (a-z, 0-9, '_',
 * '-', at most 64), a regular file owned by the proxy's uid, mode 0600,
 * at most SECRET_VALUE_MAX bytes; the value is the file without one
 * trailing newline, checked by policy_secret_value_valid() (it becomes a
 * header value). Values live in memory the proxy keeps
 * out of core dumps (MADV_DONTDUMP, and the proxy is not dumpable) and
 * are wiped (OPENSSL_cleanse) when replaced or freed. Nothing of this
 * module logs or returns a value except secret_get().
 */
#ifndef SG_SECRET_H
#define SG_SECRET_H

#include <stddef.h>

#include "sglimits.h"

#define SECRET_VALUE_MAX	SG_SECRET_VALUE_MAX
#define SECRET_COUNT_MAX	1024

struct secretstore;

struct secretstore *secret_store_new(void);
void		 secret_store_free(struct secretstore *);	/* NULL ok */

/*
 * Read every secret of dir, replacing what the store held (old values
 * wiped). A file that breaks the rules above is left out with a warning
 * in *warnings (malloc'd lines, or NULL). Returns the number loaded, or
 * -1 with *cause when dir cannot be read (the store is then unchanged).
 */
int		 secret_store_load(struct secretstore *, const char *dir,
		    char **warnings, char **cause);

/* The value of name (NUL-terminated, owned by the store) or NULL. */
const char	*secret_get(const struct secretstore *, const char *name);

#endif
