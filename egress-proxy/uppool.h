/*
 * uppool.h: upstream TLS connections of terminated sessions, kept idle
 * for the next terminated request with the same key (docs/proxy.md,
 * "Upstream connection reuse", has the trust review).
 *
 * The caller (conn_term.c) builds the key: the sandbox, the client
 * address, the policy and entry the connection was allowed under, the
 * host, port and address it goes to, the entry's ca_file and the
 * credential the entry sets. A connection is put here only at a clean
 * response boundary of a verified TLS connection; here it is watched:
 * a byte from the upstream, its close or an error drops it, and so does
 * UPPOOL_IDLE_MS without use. At most UPPOOL_PER_KEY connections a key
 * and UPPOOL_MAX in all (the oldest goes): a key's bound is the
 * concurrency one sandbox gets served from the pool (a client opening 64
 * tunnels at once parks up to 64 connections between its handshakes),
 * and is a quarter of what it may hold open live
 * (--max-conns-per-client), so the pool lets it hold nothing it could
 * not hold anyway. uppool_take() hands out a
 * connection only when nothing is pending on it either way, in its TLS
 * state, its buffers or its socket.
 */
#ifndef SG_UPPOOL_H
#define SG_UPPOOL_H

#include <stddef.h>

#include <event2/bufferevent.h>
#include <event2/event.h>

/*
 * Below the keep-alive timeout of common upstream servers (gunicorn's 2
 * s is among the shortest; Apache httpd's and Node's 5 s, nginx's 75 s),
 * so a connection is seldom handed out just as its server closes it;
 * conn_http.c retries a request that met such a close before any answer.
 */
#define UPPOOL_IDLE_MS		1500
#define UPPOOL_PER_KEY		64
#define UPPOOL_MAX		256

struct uppool;

struct uppool	*uppool_new(struct event_base *);
void		 uppool_free(struct uppool *);		/* NULL ok */

/*
 * Keep bev (a TLS filter bufferevent the caller no longer watches or
 * calls back into) under key. bev is the pool's from now on: freed at
 * once when something is pending on it, or when out of memory.
 */
void		 uppool_put(struct uppool *, const char *key,
		    struct bufferevent *bev);

/*
 * The newest clean connection kept under key (its callbacks cleared,
 * reading and writing disabled), or NULL. Connections under key found
 * unclean on the way are freed.
 */
struct bufferevent *uppool_take(struct uppool *, const char *key);

/* Free every kept connection (a reload, a revoke, a secret change). */
void		 uppool_flush(struct uppool *);

/* Connections kept now. */
size_t		 uppool_count(const struct uppool *);

#endif
