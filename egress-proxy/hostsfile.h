/*
 * hostsfile.h: a static name map in /etc/hosts format ("ADDR NAME
 * [ALIAS...]", '#' comments), used by --hosts instead of DNS for tests and
 * air-gapped sites. Names are normalized with host_normalize(), so lookups
 * match the proxy's own normalized names. Pure but for hostsfile_load().
 */
#ifndef SG_HOSTSFILE_H
#define SG_HOSTSFILE_H

#include <sys/socket.h>

#include <stddef.h>

#define HOSTSFILE_ADDRS_MAX	16	/* addresses kept per name */

struct hostsfile;

/*
 * Parse len bytes of hosts-file text; file names the source in errors.
 * Returns the map, or NULL with *cause (malloc'd, "FILE:LINE: ...") on a
 * malformed line.
 */
struct hostsfile	*hostsfile_parse(const char *text, size_t len,
			    const char *file, char **cause);
/* Read and parse a file (at most 16 MiB). */
struct hostsfile	*hostsfile_load(const char *path, char **cause);
void			 hostsfile_free(struct hostsfile *);	/* NULL ok */

/*
 * The addresses of a normalized name, in file order, into out[0..max-1]
 * (port 0). Returns how many (0 when the name is not in the map).
 */
size_t			 hostsfile_lookup(const struct hostsfile *,
			    const char *name, struct sockaddr_storage *out,
			    size_t max);

#endif
