/*
 * ctlconn.h: the connections of the control API over TCP (ctltcp.h),
 * kept so that unauthenticated clients cannot hold the proxy's memory
 * or sockets:
 *
 * - at most CTLCONN_MAX open at once, and CTLCONN_PER_ADDR without
 *   the token from one address; at either cap a new connection takes
 *   the place of an unauthenticated one (of its address, at that cap),
 *   the least far along (nothing sent, then a head or TLS handshake
 *   begun and stalled longest), never one whose request carries the
 *   token, nor one whose bytes wait unread for a newcomer showing no
 *   token; with none to close, the new one is closed at once (past its
 *   address's cap, one carrying the token is let in);
 * - each request (from the accept, or from the end of the previous
 *   request on the connection, so the TLS handshake too) has
 *   CTLTCP_TIMEOUT_S in all to arrive: a deadline, not an idle timeout
 *   that every byte restarts;
 * - each request head is read as it arrives: one without the bearer
 *   token that announces a body is refused (413, control.unauthorized)
 *   before any of its body is read. Once a head carries the token, the
 *   connection is the controller's and takes bodies up to the ceiling.
 */
#ifndef SG_CTLCONN_H
#define SG_CTLCONN_H

#include <openssl/ssl.h>

#include "ctltcp.h"

struct bufferevent;
struct event_base;
struct evhttp_request;
struct proxy;

#define CTLCONN_MAX		128
#define CTLCONN_PER_ADDR	32
#define CTLCONN_LINE_MAX	(CTLTCP_TOKEN_MAX + 64)	/* a head line kept */
#define CTLCONN_PEEK_MAX	4096	/* unread head looked at, eviction */

/*
 * The bufferevent of a new connection (evhttp_set_bevcb), TLS with tls
 * (else NULL), tracked from here on. body_max: the body ceiling once a
 * head has the token.
 */
struct bufferevent *ctlconn_new(struct event_base *, SSL_CTX *tls,
	    struct proxy *, long body_max);

/* A request of the connection arrived whole: its deadline starts again. */
void	ctlconn_request_done(struct evhttp_request *);

#endif
