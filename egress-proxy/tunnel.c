/* tunnel.c: zero-copy tunnel data path with splice(2); see tunnel.h. */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tunnel.h"
#include "util.h"

/* One direction: from -> pipe -> to. */
struct tunnel_dir {
	struct tunnel		*t;
	int			 from;
	int			 to;
	int			 pipe[2];
	size_t			 inpipe;	/* bytes in the pipe */
	char			*pending;	/* bytes to write before the pipe */
	size_t			 npending;
	size_t			 pendoff;
	int			 eof;		/* from said EOF */
	int			 shut;		/* EOF passed on to `to` */
	struct event		*rev;		/* from readable */
	struct event		*wev;		/* to writable */
	unsigned long long	*bytes;
	unsigned long long	*total;
};

struct tunnel {
	struct tunnel_dir	 up;		/* client -> upstream */
	struct tunnel_dir	 down;		/* upstream -> client */
	uint64_t		*last_activity_us;
	tunnel_done_cb		 done;
	void			*arg;
	int			 finished;
};

static void	tunnel_read_cb(evutil_socket_t, short, void *);
static void	tunnel_write_cb(evutil_socket_t, short, void *);
static int	tunnel_flush(struct tunnel_dir *);
static void	tunnel_end(struct tunnel *, const char *);
static int	tunnel_dir_init(struct tunnel *, struct tunnel_dir *,
		    struct event_base *, int from, int to);
static int	tunnel_dir_pending(struct tunnel_dir *, const void *, size_t);
static void	tunnel_settle(struct tunnel_dir *);

/*
 * Empty pipes of closed tunnels, kept for the next ones: a tunnel per
 * request (connect-churn) would otherwise pay pipe2, fcntl and two closes
 * per direction.
 */
#define TUNNEL_POOL_MAX	32
static int	tunnel_pool[TUNNEL_POOL_MAX][2];
static size_t	tunnel_npool;

static int
tunnel_pipe_get(int p[2])
{
	if (tunnel_npool > 0) {
		tunnel_npool--;
		p[0] = tunnel_pool[tunnel_npool][0];
		p[1] = tunnel_pool[tunnel_npool][1];
		return 0;
	}
	if (pipe2(p, O_NONBLOCK | O_CLOEXEC) == -1)
		return -1;
	/* Room for the whole in-flight budget; best effort. */
	fcntl(p[1], F_SETPIPE_SZ, TUNNEL_PIPE_MAX);
	return 0;
}

/* Keep an empty pipe for reuse, else close it. */
static void
tunnel_pipe_put(int p[2], size_t inpipe)
{
	if (p[0] == -1)
		return;
	if (inpipe == 0 && tunnel_npool < TUNNEL_POOL_MAX) {
		tunnel_pool[tunnel_npool][0] = p[0];
		tunnel_pool[tunnel_npool][1] = p[1];
		tunnel_npool++;
	} else {
		close(p[0]);
		close(p[1]);
	}
	p[0] = p[1] = -1;
}

static int
tunnel_dir_init(struct tunnel *t, struct tunnel_dir *d,
    struct event_base *base, int from, int to)
{
	d->t = t;
	d->from = from;
	d->to = to;
	d->pipe[0] = d->pipe[1] = -1;	/* taken while bytes are in flight */
	d->rev = event_new(base, from, EV_READ | EV_PERSIST, tunnel_read_cb, d);
	d->wev = event_new(base, to, EV_WRITE | EV_PERSIST, tunnel_write_cb,
	    d);
	if (d->rev == NULL || d->wev == NULL)
		return -1;
	return 0;
}

/* Keep a copy of bytes to write before the pipe. 0 or -1. */
static int
tunnel_dir_pending(struct tunnel_dir *d, const void *p, size_t n)
{
	if (n == 0)
		return 0;
	if ((d->pending = malloc(n)) == NULL)
		return -1;
	memcpy(d->pending, p, n);
	d->npending = n;
	return 0;
}

struct tunnel *
tunnel_new(struct event_base *base, int client_fd, int upstream_fd,
    const void *up, size_t nup, const void *down, size_t ndown,
    const struct tunnel_stats *st, tunnel_done_cb done, void *arg)
{
	struct tunnel	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->up.pipe[0] = t->up.pipe[1] = t->down.pipe[0] = t->down.pipe[1] = -1;
	if (tunnel_dir_init(t, &t->up, base, client_fd, upstream_fd) == -1 ||
	    tunnel_dir_init(t, &t->down, base, upstream_fd, client_fd) == -1)
		goto fail;
	if (tunnel_dir_pending(&t->up, up, nup) == -1 ||
	    tunnel_dir_pending(&t->down, down, ndown) == -1)
		goto fail;
	t->up.bytes = st->bytes_up;
	t->up.total = st->total_up;
	t->down.bytes = st->bytes_down;
	t->down.total = st->total_down;
	t->last_activity_us = st->last_activity_us;
	t->done = done;
	t->arg = arg;
	/* Write the pending bytes first, then read both ways. */
	event_add(t->up.npending > 0 ? t->up.wev : t->up.rev, NULL);
	event_add(t->down.npending > 0 ? t->down.wev : t->down.rev, NULL);
	return t;
fail:
	/* The sockets stay with the caller. */
	t->up.from = t->up.to = t->down.from = t->down.to = -1;
	tunnel_free(t);
	return NULL;
}

static void
tunnel_dir_free(struct tunnel_dir *d)
{
	if (d->rev != NULL)
		event_free(d->rev);
	if (d->wev != NULL)
		event_free(d->wev);
	tunnel_pipe_put(d->pipe, d->inpipe);
	free(d->pending);
	d->rev = d->wev = NULL;
	d->pending = NULL;
}

void
tunnel_free(struct tunnel *t)
{
	if (t == NULL)
		return;
	tunnel_dir_free(&t->up);
	tunnel_dir_free(&t->down);
	if (t->up.from != -1)
		close(t->up.from);
	if (t->up.to != -1)
		close(t->up.to);
	free(t);
}

/* Tell the owner once; it frees the tunnel. */
static void
tunnel_end(struct tunnel *t, const char *why)
{
	if (t->finished)
		return;
	t->finished = 1;
	event_del(t->up.rev);
	event_del(t->up.wev);
	event_del(t->down.rev);
	event_del(t->down.wev);
	t->done(t->arg, why);
}

/*
 * Move what waits (pending bytes, then the pipe) to `to`. Returns 1 when
 * everything went, 0 when `to` is full (wait for EV_WRITE), -1 on error.
 */
static int
tunnel_flush(struct tunnel_dir *d)
{
	ssize_t	n;

	while (d->pendoff < d->npending) {
		n = write(d->to, d->pending + d->pendoff,
		    d->npending - d->pendoff);
		if (n == -1)
			return errno == EAGAIN ? 0 : -1;
		d->pendoff += (size_t)n;
		*d->bytes += (unsigned long long)n;
		*d->total += (unsigned long long)n;
	}
	while (d->inpipe > 0) {
		n = splice(d->pipe[0], NULL, d->to, NULL, d->inpipe,
		    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n == -1)
			return errno == EAGAIN ? 0 : -1;
		if (n == 0)
			return -1;
		d->inpipe -= (size_t)n;
		*d->bytes += (unsigned long long)n;
		*d->total += (unsigned long long)n;
	}
	return 1;
}

/* After a flush: pass an EOF on, or end when both ways are done. */
static void
tunnel_settle(struct tunnel_dir *d)
{
	struct tunnel	*t = d->t;

	/* An idle direction holds no pipe: idle tunnels cost two fds. */
	if (d->inpipe == 0)
		tunnel_pipe_put(d->pipe, 0);

	if (d->eof && !d->shut && d->inpipe == 0 && d->pendoff >= d->npending) {
		shutdown(d->to, SHUT_WR);
		d->shut = 1;
	}
	if (t->up.shut && t->down.shut)
		tunnel_end(t, "tunnel closed");
}

/* `from` is readable: splice into the pipe, then on to `to`. */
static void
tunnel_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel_dir	*d = arg;
	ssize_t			 n;
	int			 rc;

	*d->t->last_activity_us = util_now_us();
	if (d->pipe[0] == -1 && tunnel_pipe_get(d->pipe) == -1) {
		tunnel_end(d->t, "out of pipes");
		return;
	}
	n = splice(d->from, NULL, d->pipe[1], NULL, TUNNEL_PIPE_MAX - d->inpipe,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n == -1) {
		if (errno == EAGAIN)
			return;
		tunnel_end(d->t, "tunnel error");
		return;
	}
	if (n == 0) {
		d->eof = 1;
		event_del(d->rev);
	} else
		d->inpipe += (size_t)n;
	if ((rc = tunnel_flush(d)) == -1) {
		tunnel_end(d->t, "tunnel write error");
		return;
	}
	if (rc == 0) {
		/* Back-pressure: wait until `to` drains. */
		event_del(d->rev);
		event_add(d->wev, NULL);
		return;
	}
	tunnel_settle(d);
}

/* `to` is writable again: flush, then read from `from` again. */
static void
tunnel_write_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel_dir	*d = arg;
	int			 rc;

	if ((rc = tunnel_flush(d)) == -1) {
		tunnel_end(d->t, "tunnel write error");
		return;
	}
	if (rc == 0)
		return;
	event_del(d->wev);
	if (!d->eof)
		event_add(d->rev, NULL);
	tunnel_settle(d);
}

void
tunnel_pool_release(void)
{
	while (tunnel_npool > 0) {
		tunnel_npool--;
		close(tunnel_pool[tunnel_npool][0]);
		close(tunnel_pool[tunnel_npool][1]);
	}
}
