/* tunnel.c: the CONNECT data path, filtered or spliced; see tunnel.h. */
#include <sys/socket.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tunnel.h"
#include "util.h"

/*
 * One direction: from -> (filter buffer | pipe) -> to. buf holds bytes
 * read but not yet written: buf[0..ok) may go on (cleared), buf[ok..len)
 * wait for the filter. A spliced direction only ever has cleared bytes in
 * buf (those it held when it stopped filtering), written before the pipe.
 */
struct tunnel_dir {
	struct tunnel		*t;
	enum tunnel_way		 way;
	int			 from;
	int			 to;
	int			 pipe[2];
	size_t			 inpipe;	/* bytes in the pipe */
	unsigned char		*buf;
	size_t			 cap;
	size_t			 len;
	size_t			 ok;
	int			 filtered;
	int			 eof;		/* from said EOF, or no more reads */
	int			 shut;		/* EOF passed on to `to` */
	int			 last;		/* buf holds the refusal's bytes */
	int			 fresh;		/* bytes the filter has not seen */
	size_t			 owed;		/* the proxy's own bytes (the
						   200) at buf's head, unsent */
	struct event		*rev;		/* from readable */
	struct event		*wev;		/* to writable */
	int			 rev_on;	/* rev is registered */
	int			 wev_on;	/* wev is registered */
	unsigned long long	*bytes;
	unsigned long long	*total;
};

struct tunnel {
	struct tunnel_dir	 up;		/* client -> upstream */
	struct tunnel_dir	 down;		/* upstream -> client */
	uint64_t		*last_activity_us;
	tunnel_filter_cb	 filter;
	tunnel_done_cb		 done;
	void			*arg;
	int			 finished;
	int			 in_filter;
	/* A refusal: its last bytes, until they follow the upstream's. */
	unsigned char		*last;
	size_t			 nlast;
	int			 refusing;	/* asked, not yet carried out */
	int			 drain;
};

static void	tunnel_read_cb(evutil_socket_t, short, void *);
static void	tunnel_write_cb(evutil_socket_t, short, void *);
static int	tunnel_flush(struct tunnel_dir *);
static int	tunnel_write_buf(struct tunnel_dir *);
static void	tunnel_end(struct tunnel *, const char *, int);
static int	tunnel_dir_init(struct tunnel *, struct tunnel_dir *,
		    struct event_base *, enum tunnel_way, int from, int to);
static int	tunnel_dir_grow(struct tunnel_dir *);
static void	tunnel_settle(struct tunnel_dir *);
static void	tunnel_after_flush(struct tunnel_dir *, int);
static int	tunnel_read_filtered(struct tunnel_dir *);
static int	tunnel_read_spliced(struct tunnel_dir *);
static int	tunnel_judge(struct tunnel_dir *);
static void	tunnel_deliver_last(struct tunnel_dir *);
static void	tunnel_refusal(struct tunnel *);
static void	tunnel_ev(struct event *, int *, int);
static void	tunnel_rev(struct tunnel_dir *, int);
static void	tunnel_wev(struct tunnel_dir *, int);

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

/*
 * Register (on) or drop an event, only when that changes something (*reg
 * says whether it is registered): these run for every chunk a tunnel
 * moves, and an event_add() of an event already registered is work for
 * nothing.
 */
static void
tunnel_ev(struct event *ev, int *reg, int on)
{
	if (*reg == on)
		return;
	*reg = on;
	if (on)
		event_add(ev, NULL);
	else
		event_del(ev);
}

/* A direction's read event (from readable) on or off. */
static void
tunnel_rev(struct tunnel_dir *d, int on)
{
	tunnel_ev(d->rev, &d->rev_on, on);
}

/* A direction's write event (to writable) on or off. */
static void
tunnel_wev(struct tunnel_dir *d, int on)
{
	tunnel_ev(d->wev, &d->wev_on, on);
}

static int
tunnel_dir_init(struct tunnel *t, struct tunnel_dir *d,
    struct event_base *base, enum tunnel_way way, int from, int to)
{
	d->t = t;
	d->way = way;
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

/* Room for more bytes in a filtered direction: 0, or -1 at the ceiling. */
static int
tunnel_dir_grow(struct tunnel_dir *d)
{
	unsigned char	*nb;
	size_t		 ncap;

	if (d->len < d->cap)
		return 0;
	if (d->cap >= TUNNEL_FILTER_MAX)
		return -1;
	ncap = d->cap == 0 ? TUNNEL_FILTER_MIN : d->cap * 2;
	if (ncap > TUNNEL_FILTER_MAX)
		ncap = TUNNEL_FILTER_MAX;
	if ((nb = realloc(d->buf, ncap)) == NULL)
		return -1;
	d->buf = nb;
	d->cap = ncap;
	return 0;
}

struct tunnel *
tunnel_new(struct event_base *base, int client_fd, int upstream_fd,
    const void *down, size_t ndown, const void *up, size_t nup,
    const struct tunnel_stats *st, tunnel_filter_cb filter,
    tunnel_done_cb done, void *arg)
{
	struct tunnel	*t;
	int		 p[2];

	/* Splicing needs a pipe: make sure one can be had, or refuse now. */
	if (tunnel_pipe_get(p) == -1)
		return NULL;
	tunnel_pipe_put(p, 0);
	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	t->up.pipe[0] = t->up.pipe[1] = t->down.pipe[0] = t->down.pipe[1] = -1;
	if (tunnel_dir_init(t, &t->up, base, TUNNEL_UP, client_fd,
	    upstream_fd) == -1 || tunnel_dir_init(t, &t->down, base,
	    TUNNEL_DOWN, upstream_fd, client_fd) == -1)
		goto fail;
	if (ndown > 0) {
		if ((t->down.buf = malloc(ndown)) == NULL)
			goto fail;
		memcpy(t->down.buf, down, ndown);
		t->down.cap = t->down.len = t->down.ok = ndown;
		t->down.owed = ndown;
	}
	if (nup > 0) {
		if (nup > TUNNEL_FILTER_MAX ||
		    (t->up.buf = malloc(TUNNEL_FILTER_MAX)) == NULL)
			goto fail;
		memcpy(t->up.buf, up, nup);
		t->up.cap = TUNNEL_FILTER_MAX;
		t->up.len = nup;
		t->up.fresh = 1;
	}
	t->up.bytes = st->bytes_up;
	t->up.total = st->total_up;
	t->down.bytes = st->bytes_down;
	t->down.total = st->total_down;
	t->last_activity_us = st->last_activity_us;
	t->filter = filter;
	t->up.filtered = t->down.filtered = filter != NULL;
	t->done = done;
	t->arg = arg;
	if (filter == NULL)
		t->up.ok = t->up.len;
	/* Owed bytes first; the upstream is read once they are out. */
	tunnel_rev(&t->up, 1);
	if (t->down.ok > 0)
		tunnel_wev(&t->down, 1);
	else
		tunnel_rev(&t->down, 1);
	/* Early client bytes are judged from the loop, not from here. */
	if (t->up.fresh)
		event_active(t->up.rev, EV_READ, 0);
	return t;
fail:
	/* The sockets stay with the caller. */
	t->up.from = t->up.to = t->down.from = t->down.to = -1;
	tunnel_free(t);
	errno = ENOMEM;
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
	free(d->buf);
	d->rev = d->wev = NULL;
	d->buf = NULL;
	d->cap = d->len = d->ok = 0;
}

int
tunnel_to_fd(const struct tunnel *t, enum tunnel_way way)
{
	return way == TUNNEL_UP ? t->up.to : t->down.to;
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
	free(t->last);
	free(t);
}

/* Tell the owner once; it frees the tunnel. */
static void
tunnel_end(struct tunnel *t, const char *why, int error)
{
	if (t->finished)
		return;
	t->finished = 1;
	tunnel_rev(&t->up, 0);
	tunnel_wev(&t->up, 0);
	tunnel_rev(&t->down, 0);
	tunnel_wev(&t->down, 0);
	t->done(t->arg, why, error);
}

/* Write cleared buffered bytes. 1 all out, 0 `to` is full, -1 error. */
static int
tunnel_write_buf(struct tunnel_dir *d)
{
	ssize_t	n;

	while (d->ok > 0) {
		n = write(d->to, d->buf, d->ok);
		if (n == -1)
			return errno == EAGAIN || errno == EINTR ? 0 : -1;
		memmove(d->buf, d->buf + n, d->len - (size_t)n);
		d->len -= (size_t)n;
		d->ok -= (size_t)n;
		d->owed -= d->owed < (size_t)n ? d->owed : (size_t)n;
		if (!d->last) {
			*d->bytes += (unsigned long long)n;
			*d->total += (unsigned long long)n;
		}
	}
	/* A spliced direction keeps no buffer once it is empty. */
	if (!d->filtered && d->len == 0) {
		free(d->buf);
		d->buf = NULL;
		d->cap = 0;
	}
	return 1;
}

/*
 * Move what waits (cleared bytes, then the pipe) to `to`. Returns 1 when
 * everything went, 0 when `to` is full (wait for EV_WRITE), -1 on error.
 */
static int
tunnel_flush(struct tunnel_dir *d)
{
	ssize_t	n;
	int	rc;

	if ((rc = tunnel_write_buf(d)) != 1)
		return rc;
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

/* The refusal's last bytes follow what the upstream sent; then the end. */
static void
tunnel_deliver_last(struct tunnel_dir *d)
{
	struct tunnel	*t = d->t;
	unsigned char	*both;

	/*
	 * The proxy's own bytes not sent yet (the 200 of a CONNECT whose
	 * ClientHello came in the same send) go first: the client reads
	 * the 200, then the refusal.
	 */
	if (d->owed > 0 && t->nlast > 0 &&
	    (both = malloc(d->owed + t->nlast)) != NULL) {
		memcpy(both, d->buf, d->owed);
		memcpy(both + d->owed, t->last, t->nlast);
		free(t->last);
		t->last = both;
		t->nlast += d->owed;
	}
	d->owed = 0;
	free(d->buf);
	d->buf = t->last;
	d->cap = d->len = d->ok = t->nlast;
	t->last = NULL;
	t->nlast = 0;
	d->last = 1;
	d->filtered = 0;
	tunnel_rev(d, 0);
	tunnel_wev(d, 1);
}

/* After a flush: pass an EOF on, or end when both ways are done. */
static void
tunnel_settle(struct tunnel_dir *d)
{
	struct tunnel	*t = d->t;
	int		 flushed = d->len == 0 && d->inpipe == 0;

	/* An idle direction holds no pipe: idle tunnels cost two fds. */
	if (d->inpipe == 0)
		tunnel_pipe_put(d->pipe, 0);
	if (d->last) {
		if (flushed)
			tunnel_end(t, "refused", 0);
		return;
	}
	if (d->eof && !d->shut && flushed) {
		if (d->way == TUNNEL_DOWN && t->refusing) {
			tunnel_deliver_last(d);
			return;
		}
		shutdown(d->to, SHUT_WR);
		d->shut = 1;
	}
	if (t->up.shut && t->down.shut)
		tunnel_end(t, "tunnel closed", 0);
}

/*
 * Show the filter what it has not seen. Returns 0, or -1 when the filter
 * stopped (the tunnel may be gone: touch nothing).
 */
static int
tunnel_judge(struct tunnel_dir *d)
{
	struct tunnel		*t = d->t;
	enum tunnel_verdict	 v;
	size_t			 ok = 0;

	d->fresh = 0;
	if (!d->filtered || d->len <= d->ok)
		return 0;
	t->in_filter = 1;
	v = t->filter(t->arg, d->way, d->buf + d->ok, d->len - d->ok, &ok);
	if (v == TUNNEL_STOP)
		return -1;
	t->in_filter = 0;
	if (ok > d->len - d->ok)
		ok = d->len - d->ok;
	d->ok += ok;
	if (v == TUNNEL_SPLICE && !t->refusing) {
		d->filtered = 0;
		d->ok = d->len;
	}
	if (t->refusing)
		tunnel_refusal(t);
	return 0;
}

/* Read a filtered direction into its buffer. 1 read, 0 wait, -1 ended. */
static int
tunnel_read_filtered(struct tunnel_dir *d)
{
	ssize_t	n;

	if (tunnel_dir_grow(d) == -1) {
		/* Full of bytes the filter will not clear yet: wait. */
		tunnel_rev(d, 0);
		return 0;
	}
	n = read(d->from, d->buf + d->len, d->cap - d->len);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR) {
			/* Bytes handed over at start are judged now. */
			if (d->fresh)
				return tunnel_judge(d) == -1 ? -1 : 1;
			return 0;
		}
		tunnel_end(d->t, "tunnel error", 1);
		return -1;
	}
	if (n == 0) {
		d->eof = 1;
		d->len = d->ok;		/* what no filter cleared stays here */
		tunnel_rev(d, 0);
		return 1;
	}
	d->len += (size_t)n;
	return tunnel_judge(d) == -1 ? -1 : 1;
}

/* Splice from `from` into the pipe. 1 read, 0 wait, -1 ended. */
static int
tunnel_read_spliced(struct tunnel_dir *d)
{
	ssize_t	n;

	if (d->pipe[0] == -1 && tunnel_pipe_get(d->pipe) == -1) {
		tunnel_end(d->t, "out of pipes", 1);
		return -1;
	}
	n = splice(d->from, NULL, d->pipe[1], NULL, TUNNEL_PIPE_MAX - d->inpipe,
	    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
	if (n == -1) {
		if (errno == EAGAIN)
			return 0;
		tunnel_end(d->t, "tunnel error", 1);
		return -1;
	}
	if (n == 0) {
		d->eof = 1;
		tunnel_rev(d, 0);
	} else
		d->inpipe += (size_t)n;
	return 1;
}

/* Flush, then either wait for `to` to drain or settle. */
static void
tunnel_after_flush(struct tunnel_dir *d, int from_write)
{
	int	rc;

	if ((rc = tunnel_flush(d)) == -1) {
		if (d->last)
			tunnel_end(d->t, "refused", 0);	/* client went away */
		else
			tunnel_end(d->t, "tunnel write error", 1);
		return;
	}
	if (rc == 0) {
		/* Back-pressure: wait until `to` drains. */
		tunnel_rev(d, 0);
		tunnel_wev(d, 1);
		return;
	}
	if (from_write)
		tunnel_wev(d, 0);
	if (!d->eof && !d->last)
		tunnel_rev(d, 1);
	tunnel_settle(d);
}

/* `from` is readable: read (filter or pipe), then on to `to`. */
static void
tunnel_read_cb(evutil_socket_t fd, short what, void *arg)
{
	struct tunnel_dir	*d = arg;
	int			 rc;

	*d->t->last_activity_us = util_now_us();
	if (d->filtered)
		rc = tunnel_read_filtered(d);
	else
		rc = tunnel_read_spliced(d);
	if (rc == -1)
		return;
	if (rc == 0 && d->ok == 0)
		return;
	tunnel_after_flush(d, 0);
}

/* `to` is writable again: flush, then read from `from` again. */
static void
tunnel_write_cb(evutil_socket_t fd, short what, void *arg)
{
	tunnel_after_flush(arg, 1);
}

void
tunnel_splice(struct tunnel *t, enum tunnel_way way)
{
	struct tunnel_dir	*d = way == TUNNEL_UP ? &t->up : &t->down;

	if (!d->filtered)
		return;
	d->filtered = 0;
	d->ok = d->len;
	if (d->ok > 0)
		tunnel_wev(d, 1);
	else if (!d->eof)
		tunnel_rev(d, 1);
}

int
tunnel_refuse(struct tunnel *t, const void *last, size_t n, int drain)
{
	unsigned char	*copy = NULL;

	if (n > 0 && (copy = malloc(n)) == NULL)
		return -1;
	if (n > 0)
		memcpy(copy, last, n);
	free(t->last);
	t->last = copy;
	t->nlast = n;
	t->drain = drain;
	t->refusing = 1;
	if (!t->in_filter)
		tunnel_refusal(t);
	return 0;
}

/* Carry out a refusal (after the filter that asked for it returned). */
static void
tunnel_refusal(struct tunnel *t)
{
	/* The client is heard no more; what no filter cleared is dropped. */
	tunnel_rev(&t->up, 0);
	t->up.eof = 1;
	t->up.len = t->up.ok;
	t->up.filtered = t->down.filtered = 0;
	if (!t->drain) {
		t->up.len = t->up.ok = 0;
		tunnel_wev(&t->up, 0);
		tunnel_pipe_put(t->up.pipe, t->up.inpipe);
		t->up.inpipe = 0;
		tunnel_pipe_put(t->down.pipe, t->down.inpipe);
		t->down.inpipe = 0;
		tunnel_deliver_last(&t->down);
		return;
	}
	/* Drain: deliver what was cleared, then shut the upstream's input. */
	t->down.ok = t->down.len;
	tunnel_wev(&t->up, 1);
	if (!t->down.eof)
		tunnel_rev(&t->down, 1);
	else
		tunnel_wev(&t->down, 1);
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
