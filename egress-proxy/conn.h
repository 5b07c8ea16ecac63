/*
 * conn.h: one client connection of the proxy, from accept to close: its
 * requests (plain HTTP forwarded one by one, or one CONNECT tunnel), the
 * upstream connection it drives, and the one state machine of
 * conn.c (conn_int.h has the rest of the module).
 */
#ifndef SG_CONN_H
#define SG_CONN_H

#include <sys/socket.h>

#include <event2/util.h>

struct proxy;

/* Why a connection was closed; counted per reason in /metrics. */
enum conn_close {
	CONN_CLOSE_FINISHED,		/* its last answer was delivered */
	CONN_CLOSE_CLIENT_CLOSED,
	CONN_CLOSE_CLIENT_ERROR,
	CONN_CLOSE_UPSTREAM_CLOSED,
	CONN_CLOSE_UPSTREAM_ERROR,
	CONN_CLOSE_HEAD_TIMEOUT,	/* no whole request head in time */
	CONN_CLOSE_KEEPALIVE_TIMEOUT,	/* idle between requests */
	CONN_CLOSE_HANDSHAKE_TIMEOUT,	/* no TLS handshake (or request) */
	CONN_CLOSE_IDLE_TIMEOUT,	/* tunnel or response idle */
	CONN_CLOSE_FLUSH_TIMEOUT,	/* the client did not read its answer */
	CONN_CLOSE_TUNNEL_CLOSED,
	CONN_CLOSE_TUNNEL_ERROR,
	CONN_CLOSE_TUNNEL_REFUSED,	/* a check inside the tunnel failed */
	CONN_CLOSE_REVOKED,		/* reload or registry change */
	CONN_CLOSE_DRAINING,		/* SIGTERM */
	CONN_CLOSE_OUT_OF_MEMORY,
	CONN_CLOSE_MAX
};

/* "finished", "client_closed", ...: the label in /metrics. */
const char	*conn_close_name(enum conn_close);

/*
 * Take over an accepted socket. An IPv4 client seen on an IPv6 listener
 * (::ffff:a.b.c.d) is taken as the IPv4 address. On failure (out of
 * memory, limits) the socket is closed. Never fails loudly: the proxy
 * keeps serving.
 */
void	conn_accept(struct proxy *, evutil_socket_t, const struct sockaddr *,
	    int socklen);

/* SIGTERM: close connections that are between requests. */
void	conn_drain_idle(struct proxy *);

/*
 * After a policy reload: close tunnels the new policy no longer allows
 * (their host or port, an entry that lost allow_private while the tunnel
 * goes to a private address, or that now requires TLS of a tunnel
 * carrying plain HTTP), logging egress.revoked. Returns how many were
 * closed.
 */
unsigned conn_revoke(struct proxy *);

/*
 * Close, logging egress.revoked with reason token_expired, every
 * connection acting as a token's sandbox (--token-any-source) whose
 * token expired: a tunnel or terminated session lasts no longer than
 * the token it was opened with. Cheap while no such token is due; called
 * every second. Returns how many were closed.
 */
unsigned conn_token_expire(struct proxy *);

/*
 * After the registry changed: close every connection whose client
 * address now belongs to another sandbox (or to none), and, when gone
 * names the sandbox unregistered, every one acting as that sandbox from
 * a token (--token-any-source), tunnels and kept-alive connections
 * alike, logging egress.revoked with reason identity_changed. Returns
 * how many were closed.
 */
unsigned conn_revoke_identity(struct proxy *, const char *gone);

/*
 * Close every idle upstream TLS connection of terminated sessions, in
 * the pool (uppool.h) or kept by a session between its requests, and
 * bump px->upstream_gen so that one busy with a request now is closed
 * once it is done, never kept nor parked. Called by conn_revoke(),
 * conn_revoke_identity() and a secret reload.
 */
void	conn_upstreams_flush(struct proxy *);

/* Number of open connections, and of sockets kept to finish a close. */
unsigned conn_count(const struct proxy *);

#endif
