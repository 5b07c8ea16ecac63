/*
 * exectoken.h: the signed sandbox token (token.h) that `sandgate exec`
 * and `sandgate run` put into their proxy URL when the controller holds
 * the token key (docs/proxy.md, "Exec credentials"). Pure: no proxy, no
 * clock, no key; proxyctl.c signs what exectoken_fill() composes.
 */
#ifndef SG_EXECTOKEN_H
#define SG_EXECTOKEN_H

#include <time.h>

#include <jansson.h>

#include "token.h"

/* Seconds a token outlives its exec's --timeout. */
#define EXECTOKEN_MARGIN	300

/*
 * The grants digest (token.h, "grants") of the grants in force for run
 * of sandbox: grants is GET /grants's "grants" array (borrowed); the
 * grants of sandbox given to every exec or to run count. Each as the
 * line "HOST PORT RUN EXPIRES\n" (RUN "-" for every exec), the lines
 * sorted bytewise and joined; the first 16 bytes of their SHA-256 into
 * d, or zeros when none counts. 0, or -1 when hashing fails.
 */
int	exectoken_grants_digest(json_t *grants, const char *sandbox,
	    const char *run, unsigned char *d);

/*
 * Compose the token of an exec: sandbox, run, the sets in force (a JSON
 * array of names, borrowed, may be NULL), the grants digest of grants
 * (may be NULL: none), issued at now and expiring timeout +
 * EXECTOKEN_MARGIN seconds later, at most TOKEN_TTL_MAX. 0, or -1 with
 * *cause static (an id or the sets out of the token's bounds).
 */
int	exectoken_fill(struct token *t, const char *sandbox, const char *run,
	    json_t *sets, json_t *grants, time_t now, long long timeout,
	    const char **cause);

#endif
