/*
 * grants.h: the grants in force: a destination (host and port) one
 * sandbox may reach for a while, on top of its policy sets, given by a
 * person through `sandgate grant` (POST /grants on the control socket).
 * A grant may be limited to one exec (its run id). Floors still hold: the
 * proxy asks policy_grant_check() at every decision, so a deny entry or
 * a narrower `grants: under:` added later wins over a grant given before.
 * The table is saved next to the registry and survives a restart until
 * each grant expires.
 */
#ifndef SG_GRANTS_H
#define SG_GRANTS_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "execcred.h"
#include "sglimits.h"

#define GRANTS_MAX		4096
#define GRANTS_SECS_MAX		(7 * 24 * 60 * 60)	/* --for at most */
#define GRANTS_TEXT_MAX		512			/* rationale bytes */

struct grant {
	struct grant	*next;
	char		 sandbox[65];
	char		 host[SG_HOST_MAX + 1];
	int		 port;
	char		 run[EXECCRED_RUN_MAX + 1];	/* "": every exec */
	char		 by[65];
	char		 rationale[GRANTS_TEXT_MAX + 1];
	time_t		 granted;
	time_t		 expires;
};

struct grants;

struct grants	*grants_new(void);
void		 grants_free(struct grants *);	/* NULL ok */

/*
 * Validate and add a grant (a copy of g; one for the same sandbox, host,
 * port and run is replaced). Returns 0, or -1 with *cause static.
 */
int		 grants_add(struct grants *, const struct grant *g,
		    const char **cause);
/*
 * Remove the grants of sandbox for host:port (every run's), calling cb
 * with each before it goes. Returns how many.
 */
size_t		 grants_remove(struct grants *, const char *sandbox,
		    const char *host, int port,
		    void (*cb)(const struct grant *, void *), void *arg);
/* Remove the grants expired at now, calling cb with each. How many. */
size_t		 grants_expire(struct grants *, time_t now,
		    void (*cb)(const struct grant *, void *), void *arg);
/*
 * The grant in force at now that lets sandbox (and run, "" for none)
 * reach host:port, or NULL.
 */
const struct grant *grants_match(const struct grants *, const char *sandbox,
		    const char *run, const char *host, int port, time_t now);

/* One grant as JSON (times as RFC 3339 UTC); a new reference. */
json_t		*grants_one_json(const struct grant *);
/* The grants (of sandbox, unless NULL), a new array. */
json_t		*grants_json(const struct grants *, const char *sandbox);
/*
 * Add the grants of an array made by grants_json(), those given before
 * now and ending at most GRANTS_SECS_MAX after it; cb (unless NULL) is
 * called with each entry and NULL when it was added, or why it was
 * refused. How many were added.
 */
size_t		 grants_load_json(struct grants *, json_t *, time_t now,
		    void (*cb)(const struct grant *, const char *cause,
		    void *), void *arg);
/*
 * Remove the grants pick(g, key) says (grants a floor loaded later no
 * longer allows, say), calling cb with each. How many.
 */
size_t		 grants_drop(struct grants *,
		    int (*pick)(const struct grant *, const void *),
		    const void *key, void (*cb)(const struct grant *, void *),
		    void *arg);

#endif
