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
	unsigned long long		 seen;	/* its last progress: a tick */
};

/* How far a connection's client has got, least first: ctlconn_stage. */
enum ctlconn_stage {
	CTLCONN_IDLE,		/* nothing read, nothing waiting */
	CTLCONN_STALLED,	/* a head or handshake begun, nothing waiting */
	CTLCONN_SENDING		/* bytes waiting in its socket unread */
};

static struct ctlconn	*ctlconn_list;
static size_t		 ctlconn_n;	/* started ones: ctlconn_start */
static unsigned long long ctlconn_ticks;	/* progress, in order */

static void	ctlconn_release(struct ctlconn *);
static void	ctlconn_closed(struct evhttp_connection *, void *);
static void	ctlconn_start(evutil_socket_t, short, void *);
static void	ctlconn_expire(evutil_socket_t, short, void *);
static int	ctlconn_alive(struct ctlconn *);
static int	ctlconn_evict(struct ctlconn *, const char *);
static struct ctlconn *ctlconn_victim(struct ctlconn *, const char *, int);
static int	ctlconn_worse(const struct ctlconn *, int, size_t,
		    const struct ctlconn *, int, size_t);
static void	ctlconn_refuse(struct ctlconn *, const char *);
static int	ctlconn_has_token(struct ctlconn *);
static const char *ctlconn_value(const char *, const char *);
static enum ctlconn_stage ctlconn_stage(struct ctlconn *);
static void	ctlconn_tls_step(const SSL *, int, int);
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
	if (ssl != NULL) {
		SSL_set_app_data(ssl, c);
		SSL_set_info_callback(ssl, ctlconn_tls_step);
	}
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
	SSL		 *ssl;

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
	if ((ssl = bufferevent_openssl_get_ssl(c->bev)) != NULL) {
		SSL_set_info_callback(ssl, NULL);
		SSL_set_app_data(ssl, NULL);
	}
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

/*
 * The unauthenticated connections from addr now, c (being checked) among
 * them: those with the token are the controller's and not capped by
 * address.
 */
static size_t
ctlconn_from(const char *addr)
{
	struct ctlconn	*c;
	size_t		 n = 0;

	for (c = ctlconn_list; c != NULL; c = c->next)
		if (!c->authed && !c->tok_waiting && strcmp(c->addr, addr) == 0)
			n++;
	return n;
}

/*
 * How far c's client has got: bytes waiting in the socket not read yet
 * (a connection accepted in the same batch as a flood is read after it;
 * for TLS, its ClientHello or its Finished in flight), or a request head
 * or TLS handshake begun (a ClientHello taken) and the client silent, or
 * nothing at all.
 */
static enum ctlconn_stage
ctlconn_stage(struct ctlconn *c)
{
	SSL		*ssl;
	char		 b;
	evutil_socket_t	 fd;

	fd = bufferevent_getfd(c->bev);
	if (fd != -1 && recv(fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) == 1)
		return CTLCONN_SENDING;
	if (c->head_lines > 0 || c->len > 0)
		return CTLCONN_STALLED;
	if ((ssl = bufferevent_openssl_get_ssl(c->bev)) != NULL &&
	    SSL_get_state(ssl) != TLS_ST_BEFORE)
		return CTLCONN_STALLED;
	return CTLCONN_IDLE;
}

/* A step of a TLS handshake (SSL_set_info_callback): progress. */
static void
ctlconn_tls_step(const SSL *ssl, int where, int ret)
{
	struct ctlconn	*c = SSL_get_app_data(ssl);

	(void)ret;
	if (c != NULL && (where & (SSL_CB_ACCEPT_LOOP | SSL_CB_HANDSHAKE_DONE)))
		c->seen = ++ctlconn_ticks;
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
 * Whether o (its stage, its address's count) is to be closed before the
 * best so far: the least far along (ctlconn_stage), then of the address
 * holding the most unauthenticated connections, then the one stalled
 * longest (its last progress the earliest).
 */
static int
ctlconn_worse(const struct ctlconn *o, int stage, size_t count,
    const struct ctlconn *best, int best_stage, size_t best_count)
{
	if (best == NULL || stage != best_stage)
		return best == NULL || stage < best_stage;
	if (count != best_count)
		return count > best_count;
	return o->seen < best->seen;
}

/*
 * The connection to close for c at a cap (of addr's connections, or all
 * with addr NULL), among the unauthenticated ones that have started and
 * have no token waiting: ctlconn_worse. One whose bytes wait unread is
 * taken only for a c whose own request carries the token (c_tok): it and
 * c are alike unread, and closing the older for the newer would let a
 * batch of a flood accepted after the controller's TLS connection (its
 * ClientHello not read, no token to see) close it. NULL when there is
 * none.
 */
static struct ctlconn *
ctlconn_victim(struct ctlconn *c, const char *addr, int c_tok)
{
	const char	*addrs[CTLCONN_MAX * 2] = { NULL };
	size_t		 counts[CTLCONN_MAX * 2] = { 0 };
	struct ctlconn	*o, *best = NULL;
	size_t		 n, best_n = 0;
	int		 stage, best_stage = 0;

	for (o = ctlconn_list; o != NULL; o = o->next)
		if (o != c && !o->authed && o->evcon != NULL)
			(*ctlconn_tally(o, addrs, counts))++;
	for (o = ctlconn_list; o != NULL; o = o->next) {
		if (o == c || o->authed || o->tok_waiting || o->evcon == NULL ||
		    (addr != NULL && strcmp(o->addr, addr) != 0))
			continue;
		stage = ctlconn_stage(o);
		if (stage == CTLCONN_SENDING && !c_tok)
			continue;
		n = *ctlconn_tally(o, addrs, counts);
		if (ctlconn_worse(o, stage, n, best, best_stage, best_n)) {
			best = o;
			best_stage = stage;
			best_n = n;
		}
	}
	return best;
}

/*
 * At a cap (addr's, or the overall one with addr NULL), an
 * unauthenticated connection is closed to make room for c, which may be
 * the controller's: idle clients re-opening as they are cut would
 * otherwise hold every slot. A flood evicts its own (ctlconn_victim),
 * and never a connection whose request carries the token, read or
 * waiting (ctlconn_has_token). 0, or -1 when there is none to close (c
 * is then refused; at addr's cap, a c carrying the token is let in all
 * the same: the overall cap still holds).
 */
static int
ctlconn_evict(struct ctlconn *c, const char *addr)
{
	struct ctlconn	*old;
	int		 c_tok = ctlconn_has_token(c);

	while ((old = ctlconn_victim(c, addr, c_tok)) != NULL &&
	    ctlconn_has_token(old))
		;	/* marked tok_waiting: the next one */
	if (old == NULL)
		return addr != NULL && c_tok ? 0 : -1;
	log_debug("control API: at the cap%s, %s:%d (%s) closed for %s:%d",
	    addr != NULL ? " of its address" : "", old->addr, old->port,
	    ctlconn_stage(old) == CTLCONN_IDLE ? "idle" : "stalled",
	    c->addr, c->port);
	if (ctlconn_alive(old))
		evhttp_connection_free(old->evcon);	/* ctlconn_closed */
	else
		ctlconn_release(old);
	return 0;
}

/* c is refused (why), and closed. */
static void
ctlconn_refuse(struct ctlconn *c, const char *why)
{
	ctltcp_refused(c->px, c->addr, c->port, "", why);
	evhttp_connection_free(c->evcon);	/* ctlconn_closed */
}

/*
 * Just after the accept: the caps, then the first deadline. The cap of
 * an address counts its unauthenticated connections only, and at it
 * one of them is closed for the new one as at the overall cap, so that
 * clients sharing the controller's address (a NAT, a node, loopback)
 * cannot lock it out.
 */
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
	c->seen = ++ctlconn_ticks;
	if (ctlconn_from(c->addr) > CTLCONN_PER_ADDR &&
	    ctlconn_evict(c, c->addr) == -1) {
		ctlconn_refuse(c, "too many connections from this address");
		return;
	}
	/* Counted once checked: a batch's others have not started yet. */
	c->started = 1;
	ctlconn_n++;
	if (ctlconn_n > CTLCONN_MAX && ctlconn_evict(c, NULL) == -1) {
		ctlconn_refuse(c, "too many connections");
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

	if (info->n_added > 0)
		c->seen = ++ctlconn_ticks;
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
