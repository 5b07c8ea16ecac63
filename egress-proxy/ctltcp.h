/*
 * ctltcp.h: the control API over TCP, beside the unix socket (control.h),
 * for a controller on another host (a proxy tier of several replicas).
 *
 * The same routes as the socket, each behind a bearer token
 * ("Authorization: Bearer TOKEN", compared in constant time with the
 * token of --control-token-file). A request without it, or with another
 * token, is answered 401 and logged as a control.unauthorized event:
 * the first CTLTCP_REFUSED_BURST of a window of CTLTCP_REFUSED_WINDOW_S,
 * the rest counted into one control.unauthorized_summary line when the
 * window ends (ctltcp_tick), so a flood of them cannot fill the log.
 * Two routes need no token and say nothing about sandboxes or policy:
 *
 *   GET /healthz   200 "ok": the event loop answers
 *   GET /readyz    200 or 503 {"ready","policy","log","resolver"}: a
 *                  policy is in force, the log folder takes lines, the
 *                  resolver is set up
 *
 * Requests are bounded as on the socket: CTLTCP_HEADERS_MAX bytes of
 * header, the socket's body ceiling; and by ctlconn.h: CTLTCP_TIMEOUT_S
 * in all for each request (and the TLS handshake) to arrive, a cap on
 * connections, and no body read from a request without the token. The
 * listener rests a turn of the event loop (shared with the data plane)
 * after every CTLTCP_ACCEPT_BURST accepts.
 */
#ifndef SG_CTLTCP_H
#define SG_CTLTCP_H

#include <stddef.h>

struct evhttp_request;
struct proxy;

#define CTLTCP_TOKEN_MIN	43	/* 32 random bytes in base64 */
#define CTLTCP_TOKEN_MAX	1024
#define CTLTCP_HEADERS_MAX	8192
#define CTLTCP_TIMEOUT_S	10
#define CTLTCP_BACKLOG		4096	/* listen(): SYNs queue, not drop */
#define CTLTCP_ACCEPT_BURST	16	/* accepts per turn of the loop */
#define CTLTCP_REFUSED_BURST	20	/* control.unauthorized lines ... */
#define CTLTCP_REFUSED_WINDOW_S	10	/* ... per window; the rest counted */

/*
 * Read the token of path into tok (size > CTLTCP_TOKEN_MAX): a regular
 * file (a link is followed) no one but its owner and group may read, and
 * only its owner write, one line of CTLTCP_TOKEN_MIN to
 * CTLTCP_TOKEN_MAX printable characters without spaces, of at least 10
 * different ones (a trailing newline is dropped). 0, or -1 with *cause
 * (malloc'd).
 */
int	ctltcp_token_read(const char *path, char *tok, size_t size,
	    char **cause);

/*
 * 1 when the Authorization header value hdr (NULL: none) carries the
 * bearer token tok, in time that depends only on the lengths.
 */
int	ctltcp_token_ok(const char *hdr, const char *tok);
/* ctltcp_token_ok() with the token of --control-token-file. */
int	ctltcp_authorized(const char *hdr);
/*
 * Log a refused request or connection of addr:port (path, why) as a
 * control.unauthorized event, within the window's burst (the rest are
 * counted into the window's summary).
 */
void	ctltcp_refused(struct proxy *, const char *addr, int port,
	    const char *path, const char *why);

/*
 * Serve the control API on spec ("ADDR:PORT", "[IPv6]:PORT"), requests
 * with the token of tokfile. The unix socket (control_listen) must be up:
 * the routes and the registry are its. 0, or -1 with *cause (malloc'd).
 */
int	ctltcp_listen(struct proxy *, const char *spec, const char *tokfile,
	    char **cause);
void	ctltcp_close(void);

/* Every second: the summary of a window that ended (NULL-safe to call). */
void	ctltcp_tick(struct proxy *);

/*
 * GET /healthz and /readyz, on either listener: 1 when req was one of
 * them (and is answered), else 0.
 */
int	ctltcp_health(struct proxy *, struct evhttp_request *);

#endif
