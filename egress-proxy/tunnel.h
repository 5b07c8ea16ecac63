/*
 * tunnel.h: the data path of an open CONNECT tunnel, once its ClientHello
 * has been checked: bytes move between the two sockets through a pipe per
 * direction with splice(2), so they are never copied into the proxy's
 * memory. A direction that cannot write stops reading (back-pressure: at
 * most one pipe's worth, TUNNEL_PIPE_MAX, is in flight); an EOF is passed
 * on with shutdown(SHUT_WR) once its bytes are delivered (half-close).
 */
#ifndef SG_TUNNEL_H
#define SG_TUNNEL_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#define TUNNEL_PIPE_MAX	(256 * 1024)	/* bytes in flight per direction */

struct tunnel;

/* Counters the tunnel updates for its owner (the connection). */
struct tunnel_stats {
	unsigned long long	*bytes_up;	/* client -> upstream */
	unsigned long long	*bytes_down;	/* upstream -> client */
	unsigned long long	*total_up;	/* process-wide counters */
	unsigned long long	*total_down;
	uint64_t		*last_activity_us;
};

/*
 * Called once when the tunnel is over (both directions ended, or an
 * error); the owner then frees the tunnel. why is a static phrase.
 */
typedef void	(*tunnel_done_cb)(void *arg, const char *why);

/*
 * Take over two connected non-blocking sockets. up (nup bytes, may be
 * NULL) are client bytes already read (the ClientHello): they are written
 * upstream first; down (ndown bytes) are bytes still owed to the client
 * (the "200 Connection established"), written to it first. Returns the
 * tunnel, or NULL (sockets untouched) when out of memory or pipes.
 */
struct tunnel	*tunnel_new(struct event_base *, int client_fd, int upstream_fd,
		    const void *up, size_t nup, const void *down, size_t ndown,
		    const struct tunnel_stats *, tunnel_done_cb, void *arg);

/* Close both sockets and pipes; accepts NULL. Never calls done. */
void		 tunnel_free(struct tunnel *);

/*
 * Pipes are taken from a small pool while bytes are in flight and given
 * back when a direction drains, so an idle tunnel holds only its two
 * sockets. Close the pooled pipes (when no connection is open).
 */
void		 tunnel_pool_release(void);

#endif
