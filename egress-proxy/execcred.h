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

#define EXECCRED_MAX		4096	/* running execs at once */
#define EXECCRED_RUN_MAX	64	/* bytes of a run id */

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
 * The run id token stands for, when it was registered for sandbox;
 * NULL otherwise (unknown, ended, or another sandbox's). Copied into
 * run[EXECCRED_RUN_MAX + 1].
 */
const char	*execcred_run(const struct execcred *, const char *token,
		    const char *sandbox, char *run);

/* [{"sandbox":..,"run_id":..}...], a new reference; no tokens. */
json_t		*execcred_json(const struct execcred *);

#endif
