/*
 * conn.h: one client connection of the proxy, from accept to close: its
 * requests (plain HTTP forwarded one by one, or one CONNECT tunnel), the
 * upstream connection it drives, and the one state machine in conn.c.
 */
#ifndef SG_CONN_H
#define SG_CONN_H

#include <sys/socket.h>

#include <event2/util.h>

struct proxy;

/*
 * Take over an accepted socket. On failure (out of memory, limits) the
 * socket is closed. Never fails loudly: the proxy keeps serving.
 */
void	conn_accept(struct proxy *, evutil_socket_t, const struct sockaddr *,
	    int socklen);

/* SIGTERM: close connections that are between requests. */
void	conn_drain_idle(struct proxy *);

/*
 * After a policy reload: close tunnels whose destination the new policy
 * no longer allows, logging egress.revoked. Returns how many were closed.
 */
unsigned conn_revoke(struct proxy *);

/* Number of open connections. */
unsigned conn_count(const struct proxy *);

#endif
