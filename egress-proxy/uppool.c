/* uppool.c: idle upstream TLS connections kept for reuse; see uppool.h. */
#include <sys/socket.h>

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/ssl.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include "log.h"
#include "uppool.h"
#include "util.h"

/* One kept connection, on the pool's list (newest first). */
struct uppool_conn {
	struct uppool_conn	*next;
	struct uppool_conn	*prev;
	struct uppool		*pool;
	char			*key;
	struct bufferevent	*bev;
	struct event		*timer;		/* UPPOOL_IDLE_MS */
};

struct uppool {
	struct event_base	*base;
	struct uppool_conn	*head;
	struct uppool_conn	*tail;
	size_t			 n;
};

static void	uppool_drop(struct uppool_conn *, const char *why);
static void	uppool_unlink(struct uppool_conn *);
static int	uppool_clean(struct bufferevent *);
static void	uppool_read_cb(struct bufferevent *, void *);
static void	uppool_event_cb(struct bufferevent *, short, void *);
static void	uppool_timer_cb(evutil_socket_t, short, void *);

struct uppool *
uppool_new(struct event_base *base)
{
	struct uppool	*p = util_xcalloc(1, sizeof(*p));

	p->base = base;
	return p;
}

void
uppool_free(struct uppool *p)
{
	if (p == NULL)
		return;
	uppool_flush(p);
	free(p);
}

void
uppool_flush(struct uppool *p)
{
	while (p->head != NULL)
		uppool_drop(p->head, "flushed");
}

size_t
uppool_count(const struct uppool *p)
{
	return p->n;
}

static void
uppool_unlink(struct uppool_conn *pc)
{
	struct uppool	*p = pc->pool;

	if (pc->prev != NULL)
		pc->prev->next = pc->next;
	else
		p->head = pc->next;
	if (pc->next != NULL)
		pc->next->prev = pc->prev;
	else
		p->tail = pc->prev;
	p->n--;
}

/* Free a kept connection: its socket closes. */
static void
uppool_drop(struct uppool_conn *pc, const char *why)
{
	log_debug("upstream pool: %s dropped (%s)", pc->key, why);
	uppool_unlink(pc);
	event_free(pc->timer);
	bufferevent_free(pc->bev);
	free(pc->key);
	free(pc);
}

/*
 * Nothing pending on a TLS filter either way: not in its buffers nor its
 * socket bufferevent's, not inside its TLS state, nothing from the peer
 * in the socket (a byte, or its close), and no TLS shutdown seen.
 */
static int
uppool_clean(struct bufferevent *bev)
{
	struct bufferevent	*under = bufferevent_get_underlying(bev);
	SSL			*ssl = bufferevent_openssl_get_ssl(bev);
	evutil_socket_t		 fd;
	char			 b;

	if (under == NULL || ssl == NULL ||
	    evbuffer_get_length(bufferevent_get_input(bev)) != 0 ||
	    evbuffer_get_length(bufferevent_get_output(bev)) != 0 ||
	    evbuffer_get_length(bufferevent_get_input(under)) != 0 ||
	    evbuffer_get_length(bufferevent_get_output(under)) != 0 ||
	    SSL_pending(ssl) != 0 || SSL_get_shutdown(ssl) != 0)
		return 0;
	if ((fd = bufferevent_getfd(under)) == -1)
		return 0;
	return recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == -1 &&
	    (errno == EAGAIN || errno == EWOULDBLOCK);
}

void
uppool_put(struct uppool *p, const char *key, struct bufferevent *bev)
{
	struct uppool_conn	*pc, *c, *old = NULL;
	struct timeval		 tv = { UPPOOL_IDLE_MS / 1000,
				    (UPPOOL_IDLE_MS % 1000) * 1000 };
	size_t			 same = 0;

	bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
	pc = util_xcalloc(1, sizeof(*pc));
	if (!uppool_clean(bev) || (pc->timer = evtimer_new(p->base,
	    uppool_timer_cb, pc)) == NULL) {
		bufferevent_free(bev);
		free(pc);
		return;
	}
	for (c = p->head; c != NULL; c = c->next)
		if (strcmp(c->key, key) == 0) {
			same++;
			old = c;
		}
	if (same >= UPPOOL_PER_KEY)
		uppool_drop(old, "over the per-key bound");
	else if (p->n >= UPPOOL_MAX)
		uppool_drop(p->tail, "over the pool's bound");
	pc->pool = p;
	pc->bev = bev;
	pc->key = util_xstrdup(key);
	evtimer_add(pc->timer, &tv);
	pc->next = p->head;
	if (p->head != NULL)
		p->head->prev = pc;
	else
		p->tail = pc;
	p->head = pc;
	p->n++;
	/* Watched while kept: any byte or close from the upstream drops it. */
	bufferevent_setcb(bev, uppool_read_cb, NULL, uppool_event_cb, pc);
	bufferevent_disable(bev, EV_WRITE);
	bufferevent_enable(bev, EV_READ);
}

struct bufferevent *
uppool_take(struct uppool *p, const char *key)
{
	struct uppool_conn	*pc, *next;
	struct bufferevent	*bev;

	for (pc = p->head; pc != NULL; pc = next) {
		next = pc->next;
		if (strcmp(pc->key, key) != 0)
			continue;
		if (!uppool_clean(pc->bev)) {
			uppool_drop(pc, "not clean");
			continue;
		}
		bev = pc->bev;
		uppool_unlink(pc);
		event_free(pc->timer);
		free(pc->key);
		free(pc);
		bufferevent_setcb(bev, NULL, NULL, NULL, NULL);
		bufferevent_disable(bev, EV_READ | EV_WRITE);
		return bev;
	}
	return NULL;
}

static void
uppool_read_cb(struct bufferevent *bev, void *arg)
{
	uppool_drop(arg, "the upstream sent bytes");
}

static void
uppool_event_cb(struct bufferevent *bev, short what, void *arg)
{
	uppool_drop(arg, (what & BEV_EVENT_EOF) ? "the upstream closed" :
	    "error");
}

static void
uppool_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	uppool_drop(arg, "idle");
}
