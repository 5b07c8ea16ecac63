/* ctlconn.c: the control API's connections, capped and timed; ctlconn.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>

#include <sys/socket.h>

#include <openssl/ssl.h>

#include "ctltcp.h"
#include "ctlconn.h"
#include "log.h"
#include "util.h"

struct ctlconn {
	struct ctlconn			*next;
	struct proxy			*px;
	struct bufferevent		*bev;	/* a reference of ours */
	struct evhttp_connection	*evcon;	/* once evhttp made it */
	struct event			*start, *deadline;
	long				 body_max;
	char				 addr[64];
	int				 port;
	int				 stop;	/* the head reader is done */
	int				 head_lines;
	int				 head_auth;	/* has the field */
	int				 head_tok;	/* this head has it */
	int				 authed;	/* a head had the token */
	int				 head_body;	/* this head has a body */
	char				 target[128];	/* its request line */
	char				 line[CTLCONN_LINE_MAX];
	size_t				 len;
	int				 overlong;
	int				 started;	/* checked: counted */
	int				 tok_waiting;	/* its unread head has it */
};

static struct ctlconn	*ctlconn_list;
static size_t		 ctlconn_n;	/* started ones: ctlconn_start */

static void	ctlconn_release(struct ctlconn *);
static void	ctlconn_closed(struct evhttp_connection *, void *);
static void	ctlconn_start(evutil_socket_t, short, void *);
static void	ctlconn_expire(evutil_socket_t, short, void *);
static int	ctlconn_alive(struct ctlconn *);
static int	ctlconn_evict(struct ctlconn *);
static struct ctlconn *ctlconn_victim(struct ctlconn *);
static int	ctlconn_has_token(struct ctlconn *);
static const char *ctlconn_value(const char *, const char *);
static int	ctlconn_arriving(struct ctlconn *);
static size_t	*ctlconn_tally(const struct ctlconn *, const char **,
		    size_t *);
static void	ctlconn_read(struct evbuffer *, const struct evbuffer_cb_info *,
		    void *);
static void	ctlconn_feed(struct ctlconn *, const char *, size_t);
static void	ctlconn_line(struct ctlconn *);
static void	ctlconn_head_end(struct ctlconn *);

struct bufferevent *
ctlconn_new(struct event_base *base, SSL_CTX *tls, struct proxy *px,
    long body_max)
{
	struct bufferevent	*bev;
	struct ctlconn		*c;
	SSL			*ssl = NULL;

	if (tls != NULL && (ssl = SSL_new(tls)) == NULL)
		return NULL;
	bev = ssl != NULL ? bufferevent_openssl_socket_new(base, -1, ssl,
	    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE) :
	    bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (bev == NULL)
		return NULL;
	c = util_xcalloc(1, sizeof(*c));
	c->px = px;
	c->bev = bev;
	c->body_max = body_max;
	c->start = evtimer_new(base, ctlconn_start, c);
	c->deadline = evtimer_new(base, ctlconn_expire, c);
	if (c->start == NULL || c->deadline == NULL)
		fatalx("evtimer_new");
	/* Ours until evhttp lets go of it: ctlconn_alive() reads it. */
	bufferevent_incref(bev);
	evbuffer_add_cb(bufferevent_get_input(bev), ctlconn_read, c);
	c->next = ctlconn_list;
	ctlconn_list = c;
	/* evhttp sets the connection up once this returns: then look. */
	event_active(c->start, EV_TIMEOUT, 1);
	return bev;
}

static void
ctlconn_release(struct ctlconn *c)
{
	struct ctlconn	**pp;

	for (pp = &ctlconn_list; *pp != NULL; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			if (c->started)
				ctlconn_n--;
			break;
		}
	}
	if (c->evcon != NULL)
		evhttp_connection_set_closecb(c->evcon, NULL, NULL);
	evbuffer_remove_cb(bufferevent_get_input(c->bev), ctlconn_read, c);
	event_free(c->start);
	event_free(c->deadline);
	bufferevent_decref(c->bev);
	free(c);
}

static void
ctlconn_closed(struct evhttp_connection *evcon, void *arg)
{
	(void)evcon;
	ctlconn_release(arg);
}

/*
 * evhttp still holds the connection: its callbacks on the bufferevent
 * are set until it frees it (they then go NULL; our reference keeps
 * the bufferevent to look at).
 */
static int
ctlconn_alive(struct ctlconn *c)
{
	bufferevent_event_cb	 ecb = NULL;
	void			*arg = NULL;

	bufferevent_getcb(c->bev, NULL, NULL, &ecb, &arg);
	if (ecb == NULL || arg == NULL) {
		c->evcon = NULL;	/* freed: never touched again */
		return 0;
	}
	c->evcon = arg;
	return 1;
}

/* Connections from addr now, c among them. */
static size_t
ctlconn_from(const char *addr)
{
	struct ctlconn	*c;
	size_t		 n = 0;

	for (c = ctlconn_list; c != NULL; c = c->next)
		if (strcmp(c->addr, addr) == 0)
			n++;
	return n;
}

/*
 * Whether c's client is sending: a request head (or a TLS handshake)
 * under way, or bytes waiting in the socket not read yet (a connection
 * accepted in the same batch as a flood is read after it).
 */
static int
ctlconn_arriving(struct ctlconn *c)
{
	SSL		*ssl;
	char		 b;
	evutil_socket_t	 fd;

	if (c->head_lines > 0 || c->len > 0)
		return 1;
	if ((ssl = bufferevent_openssl_get_ssl(c->bev)) != NULL &&
	    !SSL_in_before(ssl))
		return 1;
	fd = bufferevent_getfd(c->bev);
	return fd != -1 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1;
}

/*
 * The count of o's address in a tally of addresses (addrs and counts,
 * CTLCONN_MAX * 2 slots, open addressing), its slot taken if new.
 * Built once per eviction, so a flood costs O(connections).
 */
static size_t *
ctlconn_tally(const struct ctlconn *o, const char *addrs[], size_t *counts)
{
	size_t		 i;
	unsigned	 h = 2166136261u;
	const char	*p;

	for (p = o->addr; *p != '\0'; p++)
		h = (h ^ (unsigned char)*p) * 16777619u;
	for (i = h % (CTLCONN_MAX * 2); addrs[i] != NULL &&
	    strcmp(addrs[i], o->addr) != 0; i = (i + 1) % (CTLCONN_MAX * 2))
		;
	addrs[i] = o->addr;
	return &counts[i];
}

/*
 * Whether o's request carries the token already: the field was read
 * (head_tok), or, in plain HTTP, an Authorization line with the token
 * waits in the socket unread (the controller's connection accepted in
 * a batch with a flood is read after the flood's have started).
 */
static int
ctlconn_has_token(struct ctlconn *o)
{
	char		 buf[CTLCONN_PEEK_MAX + CTLCONN_LINE_MAX + 1];
	char		*p, *nl;
	const char	*v;
	ssize_t		 got;
	evutil_socket_t	 fd;

	if (o->head_tok || o->tok_waiting)
		return o->tok_waiting = 1;
	if (o->stop || o->overlong ||
	    bufferevent_openssl_get_ssl(o->bev) != NULL ||
	    (fd = bufferevent_getfd(o->bev)) == -1)
		return 0;
	memcpy(buf, o->line, o->len);	/* the line read in part */
	got = recv(fd, buf + o->len, CTLCONN_PEEK_MAX, MSG_PEEK | MSG_DONTWAIT);
	if (got <= 0)
		return 0;
	buf[o->len + got] = '\0';
	for (p = buf; (nl = strchr(p, '\n')) != NULL; p = nl + 1) {
		*nl = '\0';
		if (nl > p && nl[-1] == '\r')
			nl[-1] = '\0';
		if ((v = ctlconn_value(p, "Authorization:")) != NULL &&
		    ctltcp_authorized(v))
			return o->tok_waiting = 1;
	}
	return 0;
}

/*
 * The connection to close for c at the cap, among the unauthenticated
 * ones that have started: one whose client is not sending
 * (ctlconn_arriving) if any, then one of the address holding the most
 * unauthenticated connections, then the oldest (the list is newest
 * first). NULL when there is none.
 */
static struct ctlconn *
ctlconn_victim(struct ctlconn *c)
{
	const char	*addrs[CTLCONN_MAX * 2] = { NULL };
	size_t		 counts[CTLCONN_MAX * 2] = { 0 };
	struct ctlconn	*o, *old = NULL;
	size_t		 best = 0, rank;

	for (o = ctlconn_list; o != NULL; o = o->next)
		if (o != c && !o->authed && o->evcon != NULL)
			(*ctlconn_tally(o, addrs, counts))++;
	for (o = ctlconn_list; o != NULL; o = o->next) {
		if (o == c || o->authed || o->tok_waiting || o->evcon == NULL)
			continue;
		/* later (older) ones win ties: >= */
		rank = (ctlconn_arriving(o) ? 0 : CTLCONN_MAX * 4) +
		    *ctlconn_tally(o, addrs, counts);
		if (rank >= best) {
			best = rank;
			old = o;
		}
	}
	return old;
}

/*
 * At the cap, an unauthenticated connection is closed to make room for
 * c, which may be the controller's: idle clients re-opening as they are
 * cut would otherwise hold every slot. A flood evicts its own
 * (ctlconn_victim), and never a connection whose request carries the
 * token, read or waiting (ctlconn_has_token). 0, or -1 when every other
 * one has the token (c is then refused).
 */
static int
ctlconn_evict(struct ctlconn *c)
{
	struct ctlconn	*old;

	while ((old = ctlconn_victim(c)) != NULL && ctlconn_has_token(old))
		;	/* marked tok_waiting: the next one */
	if (old == NULL)
		return -1;
	if (ctlconn_alive(old))
		evhttp_connection_free(old->evcon);	/* ctlconn_closed */
	else
		ctlconn_release(old);
	return 0;
}

/* Just after the accept: the caps, then the first deadline. */
static void
ctlconn_start(evutil_socket_t fd, short what, void *arg)
{
	struct ctlconn	*c = arg;
	struct timeval	 tv = { CTLTCP_TIMEOUT_S, 0 };
	char		*addr = NULL;
	ev_uint16_t	 port = 0;

	(void)fd;
	(void)what;
	if (!ctlconn_alive(c)) {
		ctlconn_release(c);
		return;
	}
	evhttp_connection_set_closecb(c->evcon, ctlconn_closed, c);
	evhttp_connection_get_peer(c->evcon, &addr, &port);
	snprintf(c->addr, sizeof(c->addr), "%s", addr ? addr : "?");
	c->port = port;
	if (ctlconn_from(c->addr) > CTLCONN_PER_ADDR) {
		ctltcp_refused(c->px, c->addr, c->port, "",
		    "too many connections from this address");
		evhttp_connection_free(c->evcon);	/* ctlconn_closed */
		return;
	}
	/* Counted once checked: a batch's others have not started yet. */
	c->started = 1;
	ctlconn_n++;
	if (ctlconn_n > CTLCONN_MAX && ctlconn_evict(c) == 0)
		log_debug("control API: at %d connections, the oldest that "
		    "sent no token was closed for %s:%d", CTLCONN_MAX,
		    c->addr, c->port);
	if (ctlconn_n > CTLCONN_MAX) {
		ctltcp_refused(c->px, c->addr, c->port, "",
		    "too many connections");
		evhttp_connection_free(c->evcon);	/* ctlconn_closed */
		return;
	}
	evtimer_add(c->deadline, &tv);
}

/* The deadline passed with a request (or the handshake) unfinished. */
static void
ctlconn_expire(evutil_socket_t fd, short what, void *arg)
{
	struct ctlconn	*c = arg;

	(void)fd;
	(void)what;
	if (!ctlconn_alive(c)) {
		ctlconn_release(c);
		return;
	}
	log_debug("control API: %s:%d cut off after %d s", c->addr, c->port,
	    CTLTCP_TIMEOUT_S);
	evhttp_connection_free(c->evcon);	/* ctlconn_closed */
}

void
ctlconn_request_done(struct evhttp_request *req)
{
	struct evhttp_connection	*evcon;
	struct ctlconn			*c;
	struct timeval			 tv = { CTLTCP_TIMEOUT_S, 0 };

	evcon = evhttp_request_get_connection(req);
	for (c = ctlconn_list; c != NULL; c = c->next) {
		if (c->evcon == evcon && evcon != NULL) {
			evtimer_add(c->deadline, &tv);
			return;
		}
	}
}

/*
 * Bytes arrived (decrypted, for TLS) and evhttp has not parsed them
 * yet: the head reader sees them first, so that the body ceiling of a
 * request is set by the time evhttp reads its head.
 */
static void
ctlconn_read(struct evbuffer *buf, const struct evbuffer_cb_info *info,
    void *arg)
{
	struct ctlconn		*c = arg;
	struct evbuffer_ptr	 pos;
	char			 chunk[512];
	size_t			 left, n;
	ev_ssize_t		 got;

	if (info->n_added == 0 || c->stop || evbuffer_ptr_set(buf, &pos,
	    evbuffer_get_length(buf) - info->n_added, EVBUFFER_PTR_SET) == -1)
		return;
	for (left = info->n_added; left > 0 && !c->stop; left -= n) {
		n = left < sizeof(chunk) ? left : sizeof(chunk);
		got = evbuffer_copyout_from(buf, &pos, chunk, n);
		if (got != (ev_ssize_t)n)
			return;
		if (left > n)
			evbuffer_ptr_set(buf, &pos, n, EVBUFFER_PTR_ADD);
		ctlconn_feed(c, chunk, n);
	}
}

static void
ctlconn_feed(struct ctlconn *c, const char *p, size_t n)
{
	size_t	i;

	for (i = 0; i < n && !c->stop; i++) {
		if (p[i] == '\n') {
			if (c->len > 0 && c->line[c->len - 1] == '\r')
				c->len--;
			c->line[c->len] = '\0';
			ctlconn_line(c);
			c->len = 0;
			c->overlong = 0;
		} else if (c->len < sizeof(c->line) - 1)
			c->line[c->len++] = p[i];
		else
			c->overlong = 1;
	}
}

/* One line of a head: the request line, a field, or its end. */
static void
ctlconn_line(struct ctlconn *c)
{
	const char	*v;

	if (c->head_lines == 0) {
		if (c->len == 0)
			return;		/* a blank line before a request */
		util_strlcpy(c->target, c->line, sizeof(c->target));
		c->head_lines = 1;
		return;
	}
	if (c->len == 0) {
		ctlconn_head_end(c);
		return;
	}
	c->head_lines++;
	if (c->overlong)
		return;
	if ((v = ctlconn_value(c->line, "Authorization:")) != NULL) {
		c->head_auth = 1;
		c->head_tok = ctltcp_authorized(v);
	} else if (ctlconn_value(c->line, "Transfer-Encoding:") != NULL ||
	    ((v = ctlconn_value(c->line, "Content-Length:")) != NULL &&
	    strspn(v, "0") != strlen(v)))
		c->head_body = 1;
}

/* The value of a head line that is the field name ("Name:"), or NULL. */
static const char *
ctlconn_value(const char *line, const char *name)
{
	size_t	n = strlen(name);

	if (strncasecmp(line, name, n) != 0)
		return NULL;
	for (line += n; *line == ' ' || *line == '\t'; line++)
		;
	return line;
}

/*
 * A head is complete and evhttp reads it next: with the token the
 * connection takes bodies (and the reader stops: the connection is the
 * controller's); without, none, and one that announces a body is
 * refused by evhttp (413) before any of it is read.
 */
static void
ctlconn_head_end(struct ctlconn *c)
{
	char	path[sizeof(c->target)];

	if (!ctlconn_alive(c)) {
		c->stop = 1;
		return;
	}
	if (c->head_tok) {
		c->authed = 1;
		evhttp_connection_set_max_body_size(c->evcon, c->body_max);
		c->stop = 1;
		return;
	}
	evhttp_connection_set_max_body_size(c->evcon, 0);
	if (c->head_body) {
		/* "METHOD PATH VERSION": the path, as ctltcp_refuse logs. */
		snprintf(path, sizeof(path), "%s", strchr(c->target, ' ') ?
		    strchr(c->target, ' ') + 1 : c->target);
		path[strcspn(path, " ")] = '\0';
		ctltcp_refused(c->px, c->addr, c->port, path, c->head_auth ?
		    "wrong bearer token" : "no bearer token");
		c->stop = 1;
	}
	c->head_lines = c->head_auth = c->head_tok = c->head_body = 0;
}
