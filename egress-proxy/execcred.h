/*
 * execcred.h: the proxy credentials of running execs. The controller
 * registers one per `sandgate exec` (POST /execs on the control socket)
 * and removes it when the exec ends; a request carrying it (as the
 * password of Proxy-Authorization, http_proxy_credential()) from an
 * address of the same sandbox is attributed to that exec's run id. A
 * credential is not an access right: without one (or with a wrong one)
 * a request is decided the same and attributed to its sandbox only.
 */
#ifndef SG_EXECCRED_H
#define SG_EXECCRED_H

#include <stddef.h>

#include <jansson.h>

#include "namecount.h"

#define EXECCRED_MAX		4096	/* running execs at once */
#define EXECCRED_RUN_MAX	64	/* bytes of a run id */
#define EXECCRED_BLOCKS		64	/* distinct blocks kept per exec */
/* of which blocks no credential named, so an exec's own keep room */
#define EXECCRED_BLOCKS_UNATTRIBUTED	32

struct execcred;

struct execcred	*execcred_new(void);
void		 execcred_free(struct execcred *);	/* NULL ok */

/*
 * Register token (32-64 lowercase hex digits) for run_id of sandbox.
 * A token registered already is refused. Returns 0, or -1 with *cause
 * static.
 */
int		 execcred_add(struct execcred *, const char *token,
		    const char *sandbox, const char *run_id,
		    const char **cause);
/* Remove the credentials of a run id; how many. */
size_t		 execcred_remove(struct execcred *, const char *run_id);
/* Remove every credential of a sandbox (unregistered); how many. */
size_t		 execcred_remove_sandbox(struct execcred *, const char *);
size_t		 execcred_count(const struct execcred *);
/*
 * Entries looked at so far by execcred_note_block, execcred_run and the
 * lookups by run id: the sandbox's or the run's own (a test hook).
 */
unsigned long long execcred_visited(const struct execcred *);

/*
 * The run id token stands for, when it was registered for sandbox;
 * NULL otherwise (unknown, ended, or another sandbox's). Copied into
 * run[EXECCRED_RUN_MAX + 1].
 */
const char	*execcred_run(const struct execcred *, const char *token,
		    const char *sandbox, char *run);

/*
 * A block of sandbox (serial: proxy.block_serial of the attempt; host
 * and message escaped already): kept with the exec run_id names, or,
 * when run_id is NULL or "" (no credential), with every exec of the
 * sandbox. Each exec keeps its own set of at most EXECCRED_BLOCKS
 * distinct destinations (host, port, reason, attributed or not), each
 * with its attempts, at most EXECCRED_BLOCKS_UNATTRIBUTED of them named by
 * no credential (a concurrent command's without one cannot take the
 * room of the exec's own); past that its set is marked truncated. The
 * set goes with the credential (execcred_remove).
 */
void		 execcred_note_block(struct execcred *, unsigned long long serial,
		    const char *sandbox, const char *run_id, const char *host,
		    int port, const char *reason, const char *message);
/*
 * The blocks kept for run_id of sandbox whose last attempt is after
 * serial after, in the order first blocked, as GET /blocks lists them (with
 * unattributed: also those no credential named); *truncated says
 * whether some were not kept. NULL when run_id is not a running exec of
 * sandbox. A new reference.
 */
json_t		*execcred_blocks_json(const struct execcred *,
		    const char *sandbox, const char *run_id,
		    unsigned long long after, int unattributed, int *truncated);

/*
 * 1 when run_id (NULL: any, in constant time) is a running (registered)
 * exec of sandbox.
 */
int		 execcred_running(const struct execcred *, const char *sandbox,
		    const char *run_id);
/*
 * fn(arg, sandbox) for each sandbox whose first exec started or last
 * ended since the last call (namecount_changed).
 */
void		 execcred_changed(struct execcred *, namecount_fn, void *arg);

/* [{"sandbox":..,"run_id":..}...], a new reference; no tokens. */
json_t		*execcred_json(const struct execcred *);

#endif
