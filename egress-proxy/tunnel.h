/*
 * tunnel.h: the one data path of a CONNECT tunnel, from the moment the
 * proxy answers "200 Connection established" until it closes.
 *
 * Each direction (client -> upstream is "up", upstream -> client "down")
 * is in one of two modes:
 *
 *   filtered  bytes are read into a small buffer of the tunnel and shown
 *             to the owner's filter, which says how many of them (from
 *             the front) may go on; nothing else moves. This is how the
 *             owner checks every ClientHello, the server's ServerHello, or
 *             each plain-HTTP request of a tunnel before a byte of it is
 *             forwarded.
 *   spliced   bytes move between the sockets through a pipe with
 *             splice(2), never copied into the proxy's memory.
 *
 * A direction that cannot write stops reading (back-pressure: at most one
 * pipe's worth, TUNNEL_PIPE_MAX, or one filter buffer, TUNNEL_FILTER_MAX,
 * is in flight); an EOF is passed on with shutdown(SHUT_WR) once its bytes
 * are delivered (half-close). A filtered direction that sees EOF drops the
 * bytes its filter has not cleared. There is no other relay path: when
 * the tunnel cannot be set up, the owner refuses the CONNECT.
 */
#ifndef SG_TUNNEL_H
#define SG_TUNNEL_H

#include <stddef.h>
#include <stdint.h>

#include <event2/event.h>

#include "sglimits.h"

#define TUNNEL_PIPE_MAX		(256 * 1024)	/* bytes in flight, spliced */
#define TUNNEL_FILTER_MIN	4096		/* first filter buffer */
/* A whole ClientHello (in records) or request head fits in a buffer. */
#define TUNNEL_FILTER_MAX	(SG_CLIENTHELLO_MAX + 1024)

struct tunnel;

enum tunnel_way {
	TUNNEL_UP,	/* client -> upstream */
	TUNNEL_DOWN	/* upstream -> client */
};

/* What a filter says about the bytes it was shown. */
enum tunnel_verdict {
	TUNNEL_MORE,	/* forward *ok bytes; show me the rest with more */
	TUNNEL_SPLICE,	/* forward everything, from now on without a look */
	TUNNEL_STOP	/* the owner ended or refused the tunnel: hands off */
};

/*
 * Called with the bytes of one direction that no earlier call cleared
 * (buf[0] is the first of them; len > 0). Sets *ok to how many leading
 * bytes may go on (at most len). It may call tunnel_splice() for the
 * other direction, and tunnel_refuse() or the owner's own free (then it
 * returns TUNNEL_STOP). A filter that keeps returning MORE with nothing
 * cleared stops its direction's reading once TUNNEL_FILTER_MAX bytes
 * wait: it must refuse what it cannot use.
 */
typedef enum tunnel_verdict (*tunnel_filter_cb)(void *arg, enum tunnel_way,
		    const unsigned char *buf, size_t len, size_t *ok);

/* Counters the tunnel updates for its owner (the connection). */
struct tunnel_stats {
	unsigned long long	*bytes_up;	/* client -> upstream */
	unsigned long long	*bytes_down;	/* upstream -> client */
	unsigned long long	*total_up;	/* process-wide counters */
	unsigned long long	*total_down;
	uint64_t		*last_activity_us;
};

/*
 * Called once when the tunnel is over (both directions ended, a refusal
 * was delivered, or an error); the owner then frees the tunnel. why is a
 * static phrase; error is 1 for a socket or resource error.
 */
typedef void	(*tunnel_done_cb)(void *arg, const char *why, int error);

/*
 * Take over two connected non-blocking sockets. down (ndown bytes) are
 * bytes owed to the client first (the "200 Connection established"); up
 * (nup bytes, at most TUNNEL_FILTER_MAX) are client bytes already read
 * (a pipelined ClientHello), shown to the filter from the event loop as
 * if just read. With a filter both directions start filtered, else both
 * spliced. Returns the tunnel, or NULL (sockets untouched, errno set)
 * when out of memory or when no pipe can be had for the splice data path.
 */
struct tunnel	*tunnel_new(struct event_base *, int client_fd, int upstream_fd,
		    const void *down, size_t ndown, const void *up, size_t nup,
		    const struct tunnel_stats *, tunnel_filter_cb,
		    tunnel_done_cb, void *arg);

/* Stop filtering one direction: what it holds and all later bytes go on. */
void		 tunnel_splice(struct tunnel *, enum tunnel_way);

/*
 * End the tunnel with last (n bytes: a TLS alert, a 403) as the last
 * bytes the client gets. The client is not read any more and what it sent
 * that no filter cleared is dropped. drain 0: whatever the upstream sent
 * that is not delivered yet is dropped and last goes out at once. drain
 * 1: the upstream's write side is shut once the cleared bytes are
 * delivered, its answers (to requests cleared before) are relayed until
 * it closes, then last follows. done runs once last is written (or the
 * client went away). Called from a filter, the refusal takes effect when
 * the filter returns (with TUNNEL_MORE), after the bytes it cleared.
 * Returns 0, or -1 when out of memory (done has not run; the owner frees
 * the tunnel).
 */
int		 tunnel_refuse(struct tunnel *, const void *last, size_t n,
		    int drain);

/* The socket a direction writes to (TUNNEL_DOWN: the client's). */
int		 tunnel_to_fd(const struct tunnel *, enum tunnel_way);

/* Close both sockets and pipes; accepts NULL. Never calls done. */
void		 tunnel_free(struct tunnel *);

/*
 * Pipes are taken from a small pool while bytes are in flight and given
 * back when a direction drains, so an idle tunnel holds only its two
 * sockets. Close the pooled pipes (when no connection is open).
 */
void		 tunnel_pool_release(void);

#endif
