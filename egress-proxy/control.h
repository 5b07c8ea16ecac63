/*
 * control.h: the proxy's local control socket: plain HTTP with JSON
 * bodies on a unix socket in a folder the controller mounts.
 *
 *   GET  /status                  health, policy digest, sandboxes, counters
 *   GET  /metrics                 Prometheus text exposition
 *   POST /register                {"address","sandbox","sets":"a,b"}
 *   POST /unregister              {"sandbox"} or {"address"}
 *   POST /reload                  200 {"digest"} or 422 {"errors":[...]}
 *   GET  /healthz, /readyz        liveness and readiness (ctltcp.h)
 *   GET  /blocks?sandbox=ID&after=N[&run=RUN[&unattributed=1]]
 *                                 the blocks of a sandbox after cursor N
 *                                 (blocks_seq of /status), or of one
 *                                 running exec (its own set, execcred.h):
 *                                 what the agent is told after an exec;
 *                                 "truncated" when some were not kept
 *
 * The socket is created mode 0660: whoever can open it controls the proxy,
 * so its folder must not be reachable from any sandbox.
 */
#ifndef SG_CONTROL_H
#define SG_CONTROL_H

struct evhttp;
struct evhttp_request;
struct proxy;

/* Listen on path (an existing socket file is replaced). 0 or -1. */
int	control_listen(struct proxy *, const char *path, char **cause);
void	control_close(struct proxy *);

/* 1 once control_listen succeeded (until control_close). */
int	control_serving(void);

/*
 * The bounds of every control listener: body, header bytes, the time a
 * request may take to arrive, GET and POST only.
 */
/* The largest request body a control listener reads. */
#define CONTROL_BODY_MAX	(64 * 1024)

void	control_bounds(struct evhttp *);

/*
 * Serve one request (arg: the proxy). The unix socket's handler; the TCP
 * API (ctltcp.h) calls it once the request's token is checked.
 */
void	control_route(struct evhttp_request *, void *arg);

/*
 * Remember a block (serial: proxy.block_serial of this attempt) for GET
 * /blocks, in the sandbox's own bounded ring (one sandbox's blocks never
 * push out another's) and in the set of the exec it is attributed to, or
 * of every running exec of the sandbox when none (execcred_note_block):
 * one exec's blocks never push out another's. Host and message are kept
 * escaped (printable
 * ASCII). Blocks of unregistered clients are not kept. run_id (NULL:
 * none) is the exec whose credential the request carried: GET
 * /blocks?run=RUN lists only that exec's.
 */
void	control_note_block(struct proxy *, unsigned long long serial,
	    const char *sandbox, const char *run_id, const char *host,
	    int port, const char *reason, const char *message);

/*
 * Every second: remove the grants that expired, each with a
 * grant.expired event, and close the connections only they allowed.
 */
void	control_grants_tick(struct proxy *);

/*
 * After the policy changed (a reload, or the grants loaded at start):
 * end the grants its floors no longer allow (a deny entry, a narrower
 * grants: under:), each with a grant.ended event naming the rule. The
 * caller closes the connections they allowed (conn_revoke).
 */
void	control_grants_floor(struct proxy *);

#endif
