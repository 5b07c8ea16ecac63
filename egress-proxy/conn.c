/*
 * conn.c: the proxy's connection state machine (see conn_int.h for the
 * states).
 *
 * Every request gets its own policy decision, taken under the policy that
 * was in force when its head arrived. Names are resolved once, every
 * address is checked, and the proxy connects to exactly those addresses.
 *
 * Lifecycle rules:
 *   - conn_set_state() is the one transition: it logs it, cancels what
 *     the old state had in flight (a DNS lookup), arms the new state's
 *     timer and sets whether the client is read.
 *   - No callback runs inside the call that started it (DNS results come
 *     from the loop), so a function never finds its connection freed by a
 *     callback it triggered. Functions that may free the connection
 *     return -1 after doing so, and their callers return at once.
 *   - Everything about one request lives in c->r and is reset by
 *     conn_req_reset() alone.
 *   - Back-pressure covers every byte the proxy queues for a client, its
 *     own 403s and errors included: a client whose output is over
 *     PROXY_HIGH_WATER is not read until it drains.
 *   - conn_free() is the one exit; its reason is counted in /metrics.
 *   - No socket outlives its connection holding bytes for a peer that does
 *     not take them (an orphan the kernel keeps for minutes, outside every
 *     per-client limit): a socket with bytes still in its kernel send
 *     queue is reset, unless the close is graceful (everything owed was
 *     handed to the kernel), when it is kept (struct conn_linger, counted
 *     as a connection of the client) until its peer has taken them, for
 *     at most CONN_FLUSH_TIMEOUT_MS.
 */
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "addr.h"
#include "conn_int.h"
#include "grants.h"
#include "log.h"
#include "registry.h"
#include "token.h"
#include "tunnel.h"
#include "uppool.h"
#include "util.h"

static const char *const conn_state_names[] = {
	"head", "resolve", "connect", "http", "tunnel", "finish"
};

static const char *const conn_close_names[CONN_CLOSE_MAX] = {
	[CONN_CLOSE_FINISHED] = "finished",
	[CONN_CLOSE_CLIENT_CLOSED] = "client_closed",
	[CONN_CLOSE_CLIENT_ERROR] = "client_error",
	[CONN_CLOSE_UPSTREAM_CLOSED] = "upstream_closed",
	[CONN_CLOSE_UPSTREAM_ERROR] = "upstream_error",
	[CONN_CLOSE_HEAD_TIMEOUT] = "head_timeout",
	[CONN_CLOSE_KEEPALIVE_TIMEOUT] = "keepalive_timeout",
	[CONN_CLOSE_HANDSHAKE_TIMEOUT] = "handshake_timeout",
	[CONN_CLOSE_IDLE_TIMEOUT] = "idle_timeout",
	[CONN_CLOSE_FLUSH_TIMEOUT] = "flush_timeout",
	[CONN_CLOSE_TUNNEL_CLOSED] = "tunnel_closed",
	[CONN_CLOSE_TUNNEL_ERROR] = "tunnel_error",
	[CONN_CLOSE_TUNNEL_REFUSED] = "tunnel_refused",
	[CONN_CLOSE_REVOKED] = "revoked",
	[CONN_CLOSE_DRAINING] = "draining",
	[CONN_CLOSE_OUT_OF_MEMORY] = "out_of_memory",
};

/* How long the client has to read the last answer before a close. */
#define CONN_FLUSH_TIMEOUT_MS	10000
/* How often a kept socket's send queue is looked at: doubling, up to. */
#define CONN_LINGER_FIRST_MS	10
#define CONN_LINGER_MAX_MS	1000

/*
 * A socket of a connection that closed gracefully with bytes still in
 * its kernel send queue (the end of an answer): kept, shut for writing
 * and counted in its client's slot, until the peer acknowledged them or
 * the flush timeout, counted from the last bytes the peer took, ends it
 * with a reset.
 */
struct conn_linger {
	struct conn_linger	*next;
	struct conn_linger	*prev;
	struct proxy		*px;
	struct client_slot	*slot;
	struct event		*timer;
	evutil_socket_t		 fd;
	size_t			 pool;		/* its share of sockbuf_pool */
	int			 queued;	/* at the last look */
	uint64_t		 deadline_us;
	unsigned		 wait_ms;
};
#define CONN_TERM_FLUSH_POLL_MS	10	/* conn_timer_finish, under TLS */

static unsigned long long conn_ids;
static struct conn_linger *conn_lingers;
static unsigned		conn_nlingers;

static void	conn_req_reset(struct conn *);
static void	conn_timer_cb(evutil_socket_t, short, void *);
static void	conn_timer_head(struct conn *);
static void	conn_client_read(struct bufferevent *, void *);
static void	conn_client_write(struct bufferevent *, void *);
static void	conn_client_event(struct bufferevent *, short, void *);
static int	conn_client_half_closed(struct conn *);
static int	conn_head(struct conn *);
static size_t	conn_client_pending(struct conn *);
static size_t	conn_bev_pending(struct bufferevent *);
static void	conn_timer_finish(struct conn *);
static int	conn_start_connect(struct conn *);
static int	conn_start_http(struct conn *);
static void	conn_attribute(struct conn *);
static void	conn_token_drop(struct conn *);
static int	conn_token_adopt(struct conn *);
static int	conn_token_run_live(const struct conn *);
static enum sg_reason conn_token(struct conn *, char *, size_t);
static enum sg_reason conn_token_gone(const struct conn *, char *, size_t);
static enum sg_reason conn_token_run_ended(const struct conn *, char *,
		    size_t);
static enum sg_reason conn_token_lapsed(const struct conn *, char *,
		    size_t);
static int	conn_token_revoke(struct conn *);
static void	conn_token_note(const struct conn *);
static const char *conn_run_live(const struct conn *, char *);
static enum sg_reason conn_policy(struct proxy *, const struct policy *,
		    struct conn *, const struct policy_query *,
		    struct policy_match *);
static void	conn_dns_done(void *, int, const char *,
		    const struct sockaddr_storage *, size_t);
static int	conn_resolved(struct conn *, const struct sockaddr_storage *,
		    size_t);
static int	conn_check_addrs(struct conn *);
static size_t	conn_sockbuf_take(struct proxy *, const struct client_slot *);
static evutil_socket_t conn_upstream_socket(int, size_t);
static int	conn_connect_failed(struct conn *, const char *details);
static int	conn_report_only(struct conn *, enum sg_reason);
static enum sg_reason conn_rules_gap(struct conn *, const char **cause);
static int	conn_header_name_eq(const char *, const char *);
static enum sg_reason conn_path_override(const struct policy_entry *,
		    const struct http_request *);
static int	conn_override_allowed(struct conn *, const char *value,
		    size_t len);
static int	conn_report_mode(const struct policy *,
		    const struct proxy_client *, enum sg_reason);
static void	conn_revoked(struct conn *, enum sg_reason);
static unsigned	conn_redecide(struct proxy *, struct conn *);
static void	conn_query(const struct conn *, struct policy_query *);
static void	conn_addr_normalize(const struct sockaddr *, int,
		    struct sockaddr_storage *);
static void	conn_budget_cb(struct evbuffer *,
		    const struct evbuffer_cb_info *, void *);
static void	conn_budget_add(struct conn *, size_t added, size_t deleted);
static void	conn_slot_resume(evutil_socket_t, short, void *);
static void	conn_sockets_end(struct conn *, int graceful, int *kept);
static int	conn_linger_start(struct conn *, evutil_socket_t, int *kept);
static void	conn_linger_cb(evutil_socket_t, short, void *);
static void	conn_linger_end(struct conn_linger *);
static int	conn_sock_queued(evutil_socket_t);
static void	conn_sock_reset(evutil_socket_t);

const char *
conn_close_name(enum conn_close why)
{
	if ((unsigned)why >= CONN_CLOSE_MAX)
		return "unknown";
	return conn_close_names[why];
}

/*
 * The one transition. Leaving RESOLVE cancels the lookup (a late answer
 * must not revive a finished request); entering a state arms its timer
 * and decides whether the client is read.
 */
void
conn_set_state(struct conn *c, enum conn_state s)
{
	const struct proxy_config	*cfg = &c->px->cfg;

	if (c->state != s)
		log_debug("conn %llu: %s -> %s", c->id,
		    conn_state_names[c->state], conn_state_names[s]);
	if (c->state == CONN_RESOLVE && s != CONN_RESOLVE) {
		dns_cancel(c->r.dnsreq);
		c->r.dnsreq = NULL;
	}
	c->state = s;
	switch (s) {
	case CONN_HEAD:
		conn_arm(c, c->keepalive_wait ? cfg->keepalive_timeout_ms :
		    cfg->head_timeout_ms);
		break;
	case CONN_RESOLVE:
		conn_arm(c, cfg->dns_timeout_ms + 1000);
		break;
	case CONN_CONNECT:
		conn_arm(c, cfg->connect_timeout_ms);
		break;
	case CONN_HTTP:
		conn_arm(c, cfg->idle_timeout_ms);
		break;
	case CONN_TUNNEL:
		c->tun_started_us = util_now_us();
		conn_arm(c, cfg->hello_timeout_ms);
		break;
	case CONN_FINISH:
		conn_drop_upstream(c);
		if (c->client != NULL)
			bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
		conn_arm(c, CONN_FLUSH_TIMEOUT_MS);
		break;
	}
	conn_client_reading(c);
}

/*
 * Read the client only when its state wants input and its output is not
 * over the high-water mark (also the proxy's own 403s and errors), nor
 * the upstream's while a request body flows.
 */
void
conn_client_reading(struct conn *c)
{
	int	want;

	if (c->client == NULL)
		return;
	want = !c->client_eof && !c->out_paused && !c->slot->over &&
	    (c->state == CONN_HEAD || (c->state == CONN_HTTP &&
	    !c->r.body_done && (c->upstream == NULL ||
	    evbuffer_get_length(bufferevent_get_output(c->upstream)) <
	    PROXY_HIGH_WATER)));
	/*
	 * This runs several times per request; enabling reading that is
	 * already on would add its event again for nothing (no timeouts are
	 * set on these bufferevents, so nothing else changes).
	 */
	if (want == ((bufferevent_get_enabled(c->client) & EV_READ) != 0))
		return;
	if (want)
		bufferevent_enable(c->client, EV_READ);
	else
		bufferevent_disable(c->client, EV_READ);
}

/* 1 when nothing more should be queued for the client for now. */
int
conn_client_full(struct conn *c)
{
	return c->slot->over ||
	    evbuffer_get_length(bufferevent_get_output(c->client)) >=
	    PROXY_HIGH_WATER;
}

int
conn_over_budget(const struct conn *c)
{
	return c->slot->over;
}

/*
 * The bytes one client address's connections hold are kept exact by a
 * callback on each of their buffers (client and upstream, input and
 * output). Past max_buffer_per_client none of them is read (from the
 * client, nor from an upstream whose bytes go to it); once under half,
 * the slot's resume event lets them all go on. Stopping and resuming
 * run from that event, never inside the buffer operation.
 */
static void
conn_budget_add(struct conn *c, size_t added, size_t deleted)
{
	struct client_slot	*cs = c->slot;
	unsigned long long	 max = c->px->cfg.max_buffer_per_client;

	cs->held += added;
	cs->held = cs->held > deleted ? cs->held - deleted : 0;
	if (!cs->over && cs->held > max) {
		cs->over = 1;
		c->px->stats.clients_over_budget++;
		event_active(cs->resume, 0, 0);
	} else if (cs->over && cs->held <= max / 2) {
		cs->over = 0;
		event_active(cs->resume, 0, 0);
	}
}

static void
conn_budget_cb(struct evbuffer *b, const struct evbuffer_cb_info *info,
    void *arg)
{
	if (info->n_added != 0 || info->n_deleted != 0)
		conn_budget_add(arg, info->n_added, info->n_deleted);
}

/* Count a new bufferevent's buffers against the client's budget. */
void
conn_bev_watch(struct conn *c, struct bufferevent *bev)
{
	evbuffer_add_cb(bufferevent_get_input(bev), conn_budget_cb, c);
	evbuffer_add_cb(bufferevent_get_output(bev), conn_budget_cb, c);
}

/* Stop counting a bufferevent's buffers, giving back what they held. */
void
conn_bev_unwatch(struct conn *c, struct bufferevent *bev)
{
	struct evbuffer	*b;
	int		 i;

	for (i = 0; i < 2; i++) {
		b = i == 0 ? bufferevent_get_input(bev) :
		    bufferevent_get_output(bev);
		/* Only what was counted (the callback may be missing). */
		if (evbuffer_remove_cb(b, conn_budget_cb, c) == 0)
			conn_budget_add(c, 0, evbuffer_get_length(b));
	}
}

/* Free a bufferevent (NULL is fine), giving back what it held. */
void
conn_bev_free(struct conn *c, struct bufferevent *bev)
{
	if (bev == NULL)
		return;
	conn_bev_unwatch(c, bev);
	bufferevent_free(bev);
}

/*
 * The client's budget was crossed: apply it to every connection of the
 * address. Under it again, each goes on where it stopped: its upstream
 * read again, its buffered pipelined heads parsed (deferred).
 */
static void
conn_slot_resume(evutil_socket_t fd, short what, void *arg)
{
	struct client_slot	*cs = arg;
	struct conn		*c;

	for (c = cs->conns; c != NULL; c = c->slot_next) {
		conn_client_reading(c);
		if (cs->over || c->out_paused || c->client == NULL)
			continue;
		if (c->state == CONN_HTTP)
			conn_http_resume(c);
		else if (c->read_wait && c->state == CONN_HEAD &&
		    evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
			bufferevent_trigger(c->client, EV_READ,
			    BEV_TRIG_IGNORE_WATERMARKS |
			    BEV_TRIG_DEFER_CALLBACKS);
		c->read_wait = 0;
	}
}

/* Forget the current request; the one place its state is reset. */
static void
conn_req_reset(struct conn *c)
{
	struct conn_req	*r = &c->r;

	dns_cancel(r->dnsreq);
	http_request_release(&r->req);
	proxy_policy_unref(r->pol);
	free(r->path);
	c->bytes_up += r->bytes_up;
	c->bytes_down += r->bytes_down;
	memset(r, 0, sizeof(*r));
	http_request_init(&r->req);
	/*
	 * Every request inside a terminated session goes to its CONNECT's
	 * host and port, named from the start: a head the parser refuses
	 * is logged with them too (atk18k F1).
	 */
	if (c->term) {
		r->host = c->term_host;
		r->port = c->term_port;
		host_format(&r->host, r->port, r->hostport,
		    sizeof(r->hostport));
	}
}

/* An IPv4 client on an IPv6 listener is the IPv4 address it maps. */
static void
conn_addr_normalize(const struct sockaddr *sa, int socklen,
    struct sockaddr_storage *out)
{
	const struct sockaddr_in6	*s6 = (const struct sockaddr_in6 *)sa;
	struct sockaddr_in		*s4 = (struct sockaddr_in *)out;

	memset(out, 0, sizeof(*out));
	if (sa->sa_family == AF_INET6 &&
	    IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr)) {
		s4->sin_family = AF_INET;
		s4->sin_port = s6->sin6_port;
		memcpy(&s4->sin_addr, &s6->sin6_addr.s6_addr[12], 4);
		return;
	}
	memcpy(out, sa, (size_t)socklen <= sizeof(*out) ? (size_t)socklen :
	    sizeof(*out));
}

void
conn_accept(struct proxy *px, evutil_socket_t fd, const struct sockaddr *sa,
    int socklen)
{
	struct sockaddr_storage	 ss;
	struct sockaddr		*cs = (struct sockaddr *)&ss;
	struct conn		*c;
	struct client_slot	*slot;
	enum proxy_refuse	 why = PROXY_REFUSE_CONNS;
	size_t			 extra;
	int			 one = 1;

	conn_addr_normalize(sa, socklen, &ss);
	if (px->draining) {
		evutil_closesocket(fd);
		return;
	}
	if (conn_count(px) >= px->cfg.max_conns ||
	    (slot = proxy_client_enter(px, cs, &why)) == NULL) {
		evutil_closesocket(fd);
		proxy_refused(px, why, cs);
		return;
	}
	/* The kernel's buffers count too: capped, not autotuned to MiBs. */
	extra = conn_sockbuf_take(px, slot);
	conn_sockbuf_cap(fd, 0, extra);
	if (slot->resume == NULL)
		slot->resume = event_new(px->base, -1, 0, conn_slot_resume,
		    slot);
	if ((c = calloc(1, sizeof(*c))) == NULL)
		goto fail;
	c->client = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(px->base, conn_timer_cb, c);
	if (c->client == NULL || c->timer == NULL || slot->resume == NULL) {
		/* Not counted as open yet: undo only what was done. */
		if (c->client != NULL)
			bufferevent_free(c->client);	/* closes fd */
		else
			evutil_closesocket(fd);
		if (c->timer != NULL)
			event_free(c->timer);
		free(c);
		px->sockbuf_pool -= 2 * extra;
		px->stats.conns_closed[CONN_CLOSE_OUT_OF_MEMORY]++;
		proxy_client_leave(px, slot);
		log_warnx("out of memory accepting a connection");
		return;
	}
	c->px = px;
	c->slot = slot;
	c->sockbuf_extra = extra;
	c->slot_next = slot->conns;
	if (slot->conns != NULL)
		slot->conns->slot_prev = c;
	slot->conns = c;
	conn_bev_watch(c, c->client);
	c->id = ++conn_ids;
	c->client_addr = ss;
	addr_to_string(cs, c->src, sizeof(c->src));
	snprintf(c->src + strlen(c->src), sizeof(c->src) - strlen(c->src),
	    ":%u", ntohs(cs->sa_family == AF_INET6 ?
	    ((const struct sockaddr_in6 *)cs)->sin6_port :
	    ((const struct sockaddr_in *)cs)->sin_port));
	http_request_init(&c->r.req);
	c->started_us = c->last_activity_us = util_now_us();
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	proxy_client_lookup(px, cs, &c->who);
	c->next = px->conns;
	if (px->conns != NULL)
		px->conns->prev = c;
	px->conns = c;
	px->stats.conns_open++;
	px->stats.conns_total++;
	conn_client_attach(c);
	conn_set_state(c, CONN_HEAD);
	return;
fail:
	px->sockbuf_pool -= 2 * extra;
	proxy_client_leave(px, slot);
	evutil_closesocket(fd);
}

/* The client's bufferevent (a new one, or its TLS filter) on our side. */
void
conn_client_attach(struct conn *c)
{
	bufferevent_setcb(c->client, conn_client_read, conn_client_write,
	    conn_client_event, c);
	bufferevent_setwatermark(c->client, EV_READ, 0, PROXY_HIGH_WATER);
	bufferevent_enable(c->client, EV_WRITE);
}

/* Free everything; the one exit of a connection. */
void
conn_free(struct conn *c, enum conn_close why, const char *detail)
{
	struct proxy	*px = c->px;
	int		 kept = 0;

	if (c->r.allowed_open)
		conn_log_allowed(c);
	px->stats.conns_closed[why]++;
	log_debug("conn %llu: close (%s%s%s) in %s, %s %s up %llu down %llu",
	    c->id, conn_close_name(why), detail ? ": " : "",
	    detail ? detail : "", conn_state_names[c->state], c->src,
	    c->r.hostport[0] ? c->r.hostport : "-",
	    c->bytes_up + c->r.bytes_up, c->bytes_down + c->r.bytes_down);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else if (px->conns == c)
		px->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	px->stats.conns_open--;
	/* A terminated session's idle upstream outlives it (uppool.h). */
	if (c->state == CONN_HEAD && !c->head_started)
		conn_term_park(c);
	/*
	 * Everything owed was handed to the kernel: the peer may take it.
	 * So too when a client shut its side between requests: the last
	 * answer's tail may still be in the kernel's send queue.
	 */
	conn_sockets_end(c, why == CONN_CLOSE_FINISHED ||
	    why == CONN_CLOSE_TUNNEL_CLOSED ||
	    why == CONN_CLOSE_TUNNEL_REFUSED ||
	    (why == CONN_CLOSE_CLIENT_CLOSED && c->state == CONN_HEAD), &kept);
	px->sockbuf_pool -= 2 * c->sockbuf_extra;	/* 0 if a kept one has it */
	conn_tunnel_release(c);
	conn_bev_free(c, c->client);
	c->client = NULL;
	conn_bev_free(c, c->upstream);
	c->upstream = NULL;
	free(c->up_key);
	if (c->slot_prev != NULL)
		c->slot_prev->slot_next = c->slot_next;
	else
		c->slot->conns = c->slot_next;
	if (c->slot_next != NULL)
		c->slot_next->slot_prev = c->slot_prev;
	if (!kept)		/* else a kept socket holds the slot */
		proxy_client_leave(px, c->slot);
	event_free(c->timer);
	conn_req_reset(c);
	conn_term_release(c);
	conn_token_drop(c);
	proxy_client_release(&c->who);
	free(c);
}

/* Bytes in the kernel send queue of fd (0 when unknown). */
static int
conn_sock_queued(evutil_socket_t fd)
{
	int	n = 0;

	if (ioctl(fd, SIOCOUTQ, &n) == -1)
		return 0;
	return n;
}

/* Make the coming close of fd a reset: the kernel drops its queues. */
static void
conn_sock_reset(evutil_socket_t fd)
{
	struct linger	l = { 1, 0 };

	setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
}

/*
 * Before a connection's sockets are closed (by their bufferevents or the
 * tunnel): one whose kernel send queue is not empty is kept (graceful,
 * nothing left in the proxy's buffer) or reset, never orphaned. *kept is
 * set when a kept socket took over the connection's slot.
 */
static void
conn_sockets_end(struct conn *c, int graceful, int *kept)
{
	struct bufferevent	*bev;
	evutil_socket_t		 fd;
	size_t			 unsent;
	int			 i, queued;

	for (i = 0; i < 2; i++) {
		bev = i == 0 ? c->client : c->upstream;
		unsent = 0;
		if (bev != NULL) {
			fd = bufferevent_getfd(bev);
			unsent = conn_bev_pending(bev);
		} else if (c->tun != NULL)
			fd = tunnel_to_fd(c->tun, i == 0 ? TUNNEL_DOWN :
			    TUNNEL_UP);
		else
			continue;
		if (fd == -1 || (queued = conn_sock_queued(fd)) == 0)
			continue;
		if (graceful && unsent == 0 &&
		    conn_linger_start(c, fd, kept) == 0) {
			log_debug("conn %llu: %s socket kept until its %d "
			    "queued bytes are taken", c->id, i == 0 ?
			    "client" : "upstream", queued);
			continue;
		}
		log_debug("conn %llu: %s socket reset, %d bytes queued",
		    c->id, i == 0 ? "client" : "upstream", queued);
		conn_sock_reset(fd);
	}
}

/*
 * Keep a duplicate of fd, shut for writing, until its send queue is
 * empty. The first kept socket of a connection takes over its slot; a
 * second one needs a slot place of its own. 0, or -1 (reset it).
 */
static int
conn_linger_start(struct conn *c, evutil_socket_t fd, int *kept)
{
	struct proxy		*px = c->px;
	struct client_slot	*slot = c->slot;
	struct conn_linger	*l;
	struct timeval		 tv = { 0, CONN_LINGER_FIRST_MS * 1000 };
	enum proxy_refuse	 why;

	if (*kept && (slot = proxy_client_enter(px,
	    (const struct sockaddr *)&c->client_addr, &why)) == NULL)
		return -1;
	if ((l = calloc(1, sizeof(*l))) != NULL) {
		l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
		l->timer = evtimer_new(px->base, conn_linger_cb, l);
	}
	if (l == NULL || l->fd == -1 || l->timer == NULL) {
		if (l != NULL && l->fd != -1)
			close(l->fd);
		if (l != NULL && l->timer != NULL)
			event_free(l->timer);
		free(l);
		if (*kept)
			proxy_client_leave(px, slot);
		return -1;
	}
	shutdown(l->fd, SHUT_WR);
	l->px = px;
	l->slot = slot;
	if (!*kept) {	/* the first one kept holds the pool's share on */
		l->pool = 2 * c->sockbuf_extra;
		c->sockbuf_extra = 0;
	}
	l->deadline_us = util_now_us() + CONN_FLUSH_TIMEOUT_MS * 1000ULL;
	l->queued = conn_sock_queued(l->fd);
	l->wait_ms = CONN_LINGER_FIRST_MS;
	l->next = conn_lingers;
	if (conn_lingers != NULL)
		conn_lingers->prev = l;
	conn_lingers = l;
	conn_nlingers++;
	evtimer_add(l->timer, &tv);
	*kept = 1;
	return 0;
}

/* A kept socket: its peer took everything, or its time is up. */
static void
conn_linger_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn_linger	*l = arg;
	struct timeval		 tv;
	int			 queued;

	if ((queued = conn_sock_queued(l->fd)) > 0) {
		/* A peer that takes bytes has the flush timeout from then. */
		if (queued < l->queued)
			l->deadline_us = util_now_us() +
			    CONN_FLUSH_TIMEOUT_MS * 1000ULL;
		l->queued = queued;
		if (util_now_us() < l->deadline_us) {
			l->wait_ms = l->wait_ms * 2 > CONN_LINGER_MAX_MS ?
			    CONN_LINGER_MAX_MS : l->wait_ms * 2;
			tv.tv_sec = l->wait_ms / 1000;
			tv.tv_usec = (l->wait_ms % 1000) * 1000;
			evtimer_add(l->timer, &tv);
			return;
		}
		conn_sock_reset(l->fd);
	}
	conn_linger_end(l);
}

static void
conn_linger_end(struct conn_linger *l)
{
	if (l->prev != NULL)
		l->prev->next = l->next;
	else
		conn_lingers = l->next;
	if (l->next != NULL)
		l->next->prev = l->prev;
	conn_nlingers--;
	close(l->fd);
	event_free(l->timer);
	l->px->sockbuf_pool -= l->pool;
	proxy_client_leave(l->px, l->slot);
	free(l);
}

/*
 * Bytes queued for the client that the kernel has not taken yet. Under a
 * TLS filter (a terminated session) they sit in the socket bufferevent
 * below it, whose draining calls no callback of ours: a finishing
 * terminated session checks it from its timer (conn_timer_finish).
 */
static size_t
conn_client_pending(struct conn *c)
{
	return c->client == NULL ? 0 : conn_bev_pending(c->client);
}

/* Bytes bev and the bufferevent under it (a TLS filter's) have not sent. */
static size_t
conn_bev_pending(struct bufferevent *bev)
{
	struct bufferevent	*u;
	size_t			 n;

	n = evbuffer_get_length(bufferevent_get_output(bev));
	if ((u = bufferevent_get_underlying(bev)) != NULL)
		n += evbuffer_get_length(bufferevent_get_output(u));
	return n;
}

/*
 * Bytes owed to the client moved since the last look: into the kernel,
 * or out of its send queue to the client. A slow reader drains the
 * output only a little per idle period, too little to bring it under
 * the write watermark (conn_client_write), yet it is taking bytes.
 */
static int
conn_client_moved(struct conn *c)
{
	size_t	pending = conn_client_pending(c);
	int	queued, moved;

	queued = conn_sock_queued(bufferevent_getfd(c->client));
	moved = pending != c->seen_pending || queued != c->seen_queued;
	c->seen_pending = pending;
	c->seen_queued = queued;
	return moved;
}

/* Stop reading, flush what the client is owed, then free. */
int
conn_finish(struct conn *c)
{
	conn_set_state(c, CONN_FINISH);
	if (conn_client_pending(c) == 0) {
		conn_free(c, CONN_CLOSE_FINISHED, NULL);
		return -1;
	}
	c->finish_deadline_us = util_now_us() +
	    (uint64_t)CONN_FLUSH_TIMEOUT_MS * 1000;
	if (c->term)
		conn_arm(c, CONN_TERM_FLUSH_POLL_MS);
	return 0;
}

/* A finishing connection: freed once flushed or past its deadline. */
static void
conn_timer_finish(struct conn *c)
{
	if (c->term && conn_client_pending(c) > 0 &&
	    util_now_us() < c->finish_deadline_us) {
		conn_arm(c, CONN_TERM_FLUSH_POLL_MS);
		return;
	}
	conn_free(c, conn_client_pending(c) == 0 ? CONN_CLOSE_FINISHED :
	    CONN_CLOSE_FLUSH_TIMEOUT, NULL);
}

void
conn_arm(struct conn *c, unsigned ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(c->timer, &tv);
}

/* A request head that did not finish in time, or an idle client. */
static void
conn_timer_head(struct conn *c)
{
	if (c->head_started && evbuffer_get_length(
	    bufferevent_get_input(c->client)) > 0)
		conn_reply_error(c, 408, "http_request_error",
		    "request head not received in time");
	else
		conn_free(c, c->keepalive_wait ? CONN_CLOSE_KEEPALIVE_TIMEOUT :
		    CONN_CLOSE_HEAD_TIMEOUT, NULL);
}

/* A phase deadline passed. */
static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;
	uint64_t	 idle;

	switch (c->state) {
	case CONN_HEAD:
		conn_timer_head(c);
		return;
	case CONN_RESOLVE:
		conn_reply_error(c, 504, "dns_timeout", "name lookup timed out");
		return;
	case CONN_CONNECT:
		conn_reply_error(c, 504, "connection_timeout",
		    "upstream connect timed out");
		return;
	case CONN_TUNNEL:
		conn_tunnel_timer(c);
		return;
	case CONN_HTTP:
		if (conn_client_moved(c))
			c->last_activity_us = util_now_us();
		idle = (util_now_us() - c->last_activity_us) / 1000;
		if (idle < c->px->cfg.idle_timeout_ms) {
			conn_arm(c, c->px->cfg.idle_timeout_ms - (unsigned)idle);
			return;
		}
		if (c->r.resp == CONN_RESP_HEAD && c->r.body_done)
			conn_reply_error(c, 504, "http_response_timeout",
			    "upstream did not answer in time");
		else
			conn_free(c, CONN_CLOSE_IDLE_TIMEOUT, NULL);
		return;
	case CONN_FINISH:
		conn_timer_finish(c);
		return;
	}
}

static void
conn_client_read(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	c->last_activity_us = util_now_us();
	switch (c->state) {
	case CONN_HEAD:
		if (c->slot->over) {
			/* Over budget: parse it once under again. */
			c->read_wait = 1;
			conn_client_reading(c);
			return;
		}
		conn_head(c);
		return;
	case CONN_HTTP:
		if (!c->r.body_done)
			conn_http_body(c);
		else
			conn_client_reading(c);	/* pipelined: later */
		return;
	default:
		/* Nothing is read in this state; keep bytes for later. */
		conn_client_reading(c);
		return;
	}
}

/*
 * The client drained its output (to the low watermark): resume what its
 * fullness stopped. A client paused with pipelined heads buffered gets
 * them parsed from a deferred read callback.
 */
static void
conn_client_write(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;
	int		 paused = c->out_paused;

	/* Bytes the client took are activity: a slow reader is not idle. */
	c->last_activity_us = util_now_us();
	if (c->state == CONN_FINISH) {
		if (conn_client_pending(c) == 0)
			conn_free(c, CONN_CLOSE_FINISHED, NULL);
		return;
	}
	if (evbuffer_get_length(bufferevent_get_output(bev)) >=
	    PROXY_HIGH_WATER / 2)
		return;
	c->out_paused = 0;
	bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
	conn_client_reading(c);
	if (c->state == CONN_HTTP)
		conn_http_resume(c);
	else if (paused && c->state == CONN_HEAD &&
	    evbuffer_get_length(bufferevent_get_input(bev)) > 0) {
		if (c->slot->over)
			c->read_wait = 1;
		else
			bufferevent_trigger(bev, EV_READ,
			    BEV_TRIG_IGNORE_WATERMARKS |
			    BEV_TRIG_DEFER_CALLBACKS);
	}
}

static void
conn_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn	*c = arg;

	if (c->term) {
		conn_term_client_done(c, what);
		if (what & BEV_EVENT_CONNECTED)
			return;
	}
	if ((what & BEV_EVENT_EOF) && conn_client_half_closed(c) == 0)
		return;
	conn_free(c, (what & BEV_EVENT_EOF) ? CONN_CLOSE_CLIENT_CLOSED :
	    CONN_CLOSE_CLIENT_ERROR, NULL);
}

/*
 * A client that shut its write side after its request still gets the
 * answer: finish the request (and flush what is queued), then close.
 * Returns 0 when the connection goes on, -1 when the caller should free.
 */
static int
conn_client_half_closed(struct conn *c)
{
	c->client_eof = 1;
	c->close_after = 1;
	conn_client_reading(c);
	switch (c->state) {
	case CONN_HTTP:
		return c->r.body_done ? 0 : -1;
	case CONN_RESOLVE:
	case CONN_CONNECT:
		return !c->r.is_connect &&
		    http_request_body(&c->r.req) == HTTP_BODY_NONE ? 0 : -1;
	case CONN_HEAD:
		if (conn_client_pending(c) > 0) {
			conn_finish(c);		/* frees it once flushed */
			return 0;
		}
		return -1;
	case CONN_FINISH:
		return conn_client_pending(c) > 0 ? 0 : -1;
	default:
		return -1;
	}
}

void
conn_upstream_read(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	c->last_activity_us = util_now_us();
	if (c->state == CONN_HTTP)
		conn_http_response(c);
	else if (c->state == CONN_HEAD)
		conn_drop_upstream(c);	/* a kept upstream sent bytes */
	else
		bufferevent_disable(bev, EV_READ);
}

/* The upstream drained below the watermark: resume the request body. */
void
conn_upstream_write(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	c->last_activity_us = util_now_us();	/* an upload moving */
	if (c->state == CONN_HTTP)
		conn_client_reading(c);
}

void
conn_upstream_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn	*c = arg;
	char		 details[128];

	if (what & BEV_EVENT_CONNECTED) {
		conn_connected(c);
		return;
	}
	switch (c->state) {
	case CONN_CONNECT:
		if (c->up_tls) {
			conn_term_upstream_failed(c);
			return;
		}
		snprintf(details, sizeof(details), "connect to %s%s%s:%u: %s",
		    strchr(c->r.resolved, ':') ? "[" : "", c->r.resolved,
		    strchr(c->r.resolved, ':') ? "]" : "", c->r.port,
		    evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()));
		conn_bev_free(c, c->upstream);
		c->upstream = NULL;
		conn_connect_failed(c, details);
		return;
	case CONN_HTTP:
		conn_http_upstream_event(c, what);
		return;
	case CONN_HEAD:
		conn_drop_upstream(c);	/* a kept upstream went away */
		return;
	default:
		conn_free(c, (what & BEV_EVENT_EOF) ?
		    CONN_CLOSE_UPSTREAM_CLOSED : CONN_CLOSE_UPSTREAM_ERROR,
		    NULL);
		return;
	}
}

/*
 * Queue bytes for the client (buf is freed; NULL means out of memory).
 * Past the high-water mark the client is not read until it drains.
 */
int
conn_send(struct conn *c, char *buf, size_t len)
{
	if (buf == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	bufferevent_write(c->client, buf, len);
	free(buf);
	c->r.replied = 1;
	c->r.bytes_down += len;
	c->px->stats.bytes_down += len;
	if (evbuffer_get_length(bufferevent_get_output(c->client)) >=
	    PROXY_HIGH_WATER && !c->out_paused) {
		c->out_paused = 1;
		bufferevent_setwatermark(c->client, EV_WRITE,
		    PROXY_HIGH_WATER / 2, 0);
		conn_client_reading(c);
	}
	return 0;
}

/*
 * Answer an error of the proxy itself and close. Once this request's
 * answer has started (a byte of it queued) or a tunnel runs, a status
 * line is no longer possible: the connection is closed.
 */
int
conn_reply_error(struct conn *c, int status, const char *proxy_error,
    const char *details)
{
	size_t	len;
	char	*buf;

	if (c->state == CONN_TUNNEL || c->client == NULL || c->r.replied) {
		conn_free(c, CONN_CLOSE_UPSTREAM_ERROR, details);
		return -1;
	}
	buf = http_error_response(status, proxy_error, details, 0, &len);
	if (conn_send(c, buf, len) == -1)
		return -1;
	return conn_finish(c);
}

/* Parse the next request head from what the client has sent. */
static int
conn_head(struct conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->client);
	size_t		 len = evbuffer_get_length(in);
	const char	*cause;
	unsigned char	*p;
	int		 status;

	if (len == 0)
		return 0;
	if (!c->head_started) {
		c->head_started = 1;
		/* A new connection's timer runs since accept: keep it. */
		if (c->keepalive_wait)
			conn_arm(c, c->px->cfg.head_timeout_ms);
		c->keepalive_wait = 0;
	}
	if (len > SG_HTTP_HEAD_MAX)
		len = SG_HTTP_HEAD_MAX;
	if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	http_request_release(&c->r.req);
	switch (http_request_parse((const char *)p, len, &c->r.req, &status,
	    &cause)) {
	case HTTP_PARSE_MORE:
		return 0;
	case HTTP_PARSE_ERROR:
		return conn_block_malformed(c, status, cause);
	case HTTP_PARSE_OK:
		break;
	}
	evbuffer_drain(in, c->r.req.head_len);
	c->head_started = 0;
	c->r.started_us = util_now_us();
	c->r.is_connect = c->r.req.form == HTTP_TARGET_AUTHORITY;
	c->r.keep_alive = c->r.req.keep_alive;
	if (c->term)
		return conn_term_request(c);
	return c->r.is_connect ? conn_start_connect(c) : conn_start_http(c);
}

/*
 * The fields every event about the current request shares; rule (when
 * not NULL) receives "file:line" of the entry that matched.
 */
void
conn_event(struct conn *c, struct proxy_event *ev, const char *event,
    enum sg_reason r, const char *msg, char *rule, size_t rulesize)
{
	memset(ev, 0, sizeof(*ev));
	ev->event = event;
	ev->client = &c->who;
	ev->run_id = c->r.run[0] != '\0' ? c->r.run : NULL;
	ev->src = c->src;
	ev->method = c->r.req.method;
	ev->host = c->r.host.name;
	ev->port = c->r.port;
	ev->reason = r;
	ev->message = msg;
	if (rule != NULL && c->r.match.file != NULL) {
		snprintf(rule, rulesize, "%s:%d", c->r.match.file,
		    c->r.match.line);
		ev->rule = rule;
	}
	ev->policy_digest = c->r.pol ? policy_digest(c->r.pol->policy) : NULL;
	ev->bytes_up = ev->bytes_down = ev->duration_ms = -1;
	if (c->term)
		ev->path = c->r.req.path;
}

/*
 * A request the parser refused: log it as a block and answer its status.
 * One refused after its decision (a trailer the entry's rules refuse) is
 * no longer allowed: it names that entry, and conn_free does not log it
 * as allowed too.
 */
int
conn_block_malformed(struct conn *c, int status, const char *cause)
{
	struct proxy_event	ev;
	char			msg[256], rule[512];

	snprintf(msg, sizeof(msg), SG_BLOCK_PREFIX "malformed request (%s)",
	    cause);
	conn_event(c, &ev, "egress.blocked", SG_REASON_MALFORMED_REQUEST, msg,
	    rule, sizeof(rule));
	if (c->term)
		ev.status = status;
	if (c->r.allowed_open) {
		c->r.allowed_open = 0;
		c->px->stats.requests_allowed--;
	}
	c->px->stats.requests_blocked[SG_REASON_MALFORMED_REQUEST]++;
	proxy_log_block(c->px, &ev);
	return conn_reply_error(c, status, "http_protocol_error", msg);
}

/* CONNECT host:port: check the target, then resolve it. */
static int
conn_start_connect(struct conn *c)
{
	const char	*cause;

	if (host_parse_authority(c->r.req.authority,
	    strlen(c->r.req.authority), 0, &c->r.host, &c->r.port,
	    &cause) == -1)
		return conn_block_malformed(c, 400, cause);
	host_format(&c->r.host, c->r.port, c->r.hostport,
	    sizeof(c->r.hostport));
	return conn_decide(c);
}

/* GET http://host/...: the absolute URI and Host must name one host. */
static int
conn_start_http(struct conn *c)
{
	struct http_request	*q = &c->r.req;
	struct host		 hh;
	uint16_t		 hport;
	const char		*cause;

	if (q->form != HTTP_TARGET_ABSOLUTE)
		return conn_block_malformed(c, 400,
		    "not a proxy request (absolute URI required)");
	/* Forwarded as sent: UTS #46 would check another name. */
	if (!host_is_ascii(q->authority, strlen(q->authority)) ||
	    (q->host != NULL && !host_is_ascii(q->host, strlen(q->host))))
		return conn_block_malformed(c, 400,
		    "host name is not ASCII (send its A-label form)");
	if (host_parse_authority(q->authority, strlen(q->authority), 80,
	    &c->r.host, &c->r.port, &cause) == -1)
		return conn_block_malformed(c, 400, cause);
	host_format(&c->r.host, c->r.port, c->r.hostport,
	    sizeof(c->r.hostport));
	/*
	 * A Host spelled byte for byte as the URI's authority (what clients
	 * send) names the same host: the parse is a function of the bytes.
	 */
	if (q->host != NULL && strcmp(q->host, q->authority) != 0 &&
	    (host_parse_authority(q->host,
	    strlen(q->host), 80, &hh, &hport, &cause) == -1 ||
	    !host_equal(&hh, &c->r.host) || hport != c->r.port))
		return conn_block(c, SG_REASON_HOST_MISMATCH, NULL, NULL);
	return conn_decide(c);
}

/* What the policy decides on for the current request (or tunnel). */
static void
conn_query(const struct conn *c, struct policy_query *q)
{
	memset(q, 0, sizeof(*q));
	q->host = &c->r.host;
	q->port = c->r.port;
	q->method = c->r.req.method;
	q->path = c->r.is_connect ? NULL : c->r.req.path;
	q->terminated = c->term;
	q->sets = c->who.sets;
	q->nsets = c->who.nsets;
	q->now = time(NULL);
}

/*
 * The exec a request comes from: the run whose credential it carries,
 * registered for the client's own sandbox. Anything else (no
 * credential, an ended exec's, another sandbox's) leaves it to the
 * sandbox alone. A request inside a terminated session is the
 * CONNECT's: clients send no Proxy-Authorization inside TLS, so the
 * CONNECT's credential is kept (tun_cred) and looked up again at each
 * request, which a finished exec's no longer passes.
 */
static void
conn_attribute(struct conn *c)
{
	c->r.run[0] = '\0';
	if (!c->term && http_proxy_credential(&c->r.req, c->tun_cred) == -1)
		c->tun_cred[0] = '\0';
	if (c->tun_cred[0] != '\0')
		(void)execcred_run(c->px->execs, c->tun_cred, c->who.sandbox,
		    c->r.run);
	else if (c->tok != NULL && c->tok->run[0] != '\0' &&
	    conn_token_run_live(c))
		snprintf(c->r.run, sizeof(c->r.run), "%s", c->tok->run);
}

/*
 * Whether the run a token names counts: only while that run is an exec
 * this proxy has running for the sandbox (POST /execs, which the
 * controller sends to every replica), so a token outlives no exec it
 * names. A client that took the token's identity was refused at the
 * request when it was not (conn_token); a tunnel it opened loses the
 * run here once the exec ends.
 */
static int
conn_token_run_live(const struct conn *c)
{
	return execcred_running(c->px->execs, c->tok->sandbox, c->tok->run);
}

/*
 * A token naming a run this proxy does not have running: refused
 * (SG_REASON_TOKEN_RUN_ENDED, the detail in why) for a client taking
 * the token's identity, whose request would get that run's grants.
 */
static enum sg_reason
conn_token_run_ended(const struct conn *c, char *why, size_t size)
{
	if (c->tok->run[0] == '\0' || conn_token_run_live(c))
		return SG_REASON_NONE;
	snprintf(why, size, "token of run %s of sandbox %s, which is not "
	    "running here", c->tok->run, c->tok->sandbox);
	return SG_REASON_TOKEN_RUN_ENDED;
}

/*
 * SG_REASON_TOKEN_SANDBOX_GONE for any token of a sandbox that was
 * unregistered (the controller removed it: its tokens must not bring it
 * back), else SG_REASON_NONE. No time is compared: "issued" is the
 * controller's clock and the removal time this replica's, which may be
 * any distance apart (atk1921g F3), and none is needed: the controller
 * issues no token for a removed sandbox (its ids are random and never
 * given again), and a /register of the sandbox forgets the removal.
 * The entry is kept from this token's "issued" on, so it lasts as long
 * as the token could (atk1921h F7).
 * Past REGISTRY_GONE_MAX removals the oldest are forgotten: a token of
 * a sandbox not registered here, issued before the latest forgotten
 * removal (the floor, with the skew), is refused too (fails closed);
 * so is one of a sandbox restored at a start whose removal files were
 * damaged, until it is registered again (registry_unsure_all).
 */
static enum sg_reason
conn_token_gone(const struct conn *c, char *why, size_t size)
{
	time_t	gone = registry_gone_at(c->px->registry, c->tok->sandbox);
	time_t	forgot = registry_gone_floor(c->px->registry);

	/*
	 * A sandbox restored from the registry file at a start whose
	 * removal files were damaged may be a removed one whose removal was
	 * in the damaged part (atk15r20 F1): the floor holds for it too
	 * until it is registered again.
	 */
	if (gone == 0 && forgot != 0 &&
	    (!registry_has_sandbox(c->px->registry, c->tok->sandbox) ||
	    registry_sandbox_unsure(c->px->registry, c->tok->sandbox)) &&
	    c->tok->issued <= (uint64_t)forgot + TOKEN_SKEW) {
		if (registry_has_sandbox(c->px->registry, c->tok->sandbox))
			snprintf(why, size, "token of sandbox %s, restored "
			    "while removals were not known, issued before the "
			    "removed-sandbox floor (%lld): a newer token or a "
			    "register passes", c->tok->sandbox,
			    (long long)forgot);
		else	/* either cause: the floor is kept, not why it rose */
			snprintf(why, size, "token of sandbox %s, not "
			    "registered, issued before the removed-sandbox "
			    "floor (%lld: removals past %d or unreadable, "
			    "see registry.removed_floor_raised): a newer "
			    "token passes", c->tok->sandbox,
			    (long long)forgot, REGISTRY_GONE_MAX);
		return SG_REASON_TOKEN_SANDBOX_GONE;
	}
	if (gone == 0)
		return SG_REASON_NONE;
	/* kept while this token could hold: its clock may be ahead (F7) */
	registry_gone_keep(c->px->registry, c->tok->sandbox,
	    (time_t)c->tok->issued);
	snprintf(why, size, "token of sandbox %s, unregistered since %lld",
	    c->tok->sandbox, (long long)gone);
	return SG_REASON_TOKEN_SANDBOX_GONE;
}

/*
 * Whether the token a connection came with (its CONNECT's, for a tunnel
 * or a terminated session) no longer holds: expired, or, for a client
 * that took its identity, naming a run that ended. The reason a new
 * connection with it would be refused, else SG_REASON_NONE.
 */
static enum sg_reason
conn_token_lapsed(const struct conn *c, char *why, size_t size)
{
	time_t	now = time(NULL);

	if (c->tok == NULL)
		return SG_REASON_NONE;
	if (now < 0 || (uint64_t)now >= c->tok->expires) {
		snprintf(why, size, "expired");
		return SG_REASON_TOKEN_EXPIRED;
	}
	return c->tok_adopted ? conn_token_run_ended(c, why, size) :
	    SG_REASON_NONE;
}

/* The soonest expiry of a token some connection's identity came from. */
static time_t	conn_tok_soonest;

static void
conn_token_note(const struct conn *c)
{
	time_t	t = (time_t)c->tok->expires;

	if (conn_tok_soonest == 0 || t < conn_tok_soonest)
		conn_tok_soonest = t;
}

/*
 * A connection acting as a token's sandbox whose token lapsed (expired,
 * its run ended) is closed with egress.revoked: 1, else 0.
 */
static int
conn_token_revoke(struct conn *c)
{
	char		why[256];
	enum sg_reason	r;

	if (!c->tok_adopted ||
	    (r = conn_token_lapsed(c, why, sizeof(why))) == SG_REASON_NONE)
		return 0;
	conn_revoked(c, r);
	return 1;
}

unsigned
conn_token_expire(struct proxy *px)
{
	struct conn	*c, *next;
	unsigned	 n = 0;

	if (conn_tok_soonest == 0 || time(NULL) < conn_tok_soonest)
		return 0;
	conn_tok_soonest = 0;
	for (c = px->conns; c != NULL; c = next) {
		next = c->next;
		if (conn_token_revoke(c))
			n++;
		else if (c->tok_adopted)
			conn_token_note(c);
	}
	return n;
}

/*
 * Forget the last request's token; a client that had taken its identity
 * is again what the registry says (nothing: it was unregistered).
 */
static void
conn_token_drop(struct conn *c)
{
	if (c->tok_adopted) {
		if (c->adopt_prev != NULL)
			c->adopt_prev->adopt_next = c->adopt_next;
		else
			c->px->adopted = c->adopt_next;
		if (c->adopt_next != NULL)
			c->adopt_next->adopt_prev = c->adopt_prev;
		c->adopt_next = c->adopt_prev = NULL;
		proxy_client_default(c->px, &c->who);
		policy_set_list_free(c->tok_sets);
		c->tok_sets = NULL;
		c->tok_nsets = 0;
		c->tok_adopted = 0;
	}
	free(c->tok);
	c->tok = NULL;
}

/* An unregistered client, for this request, is the token's sandbox. */
static int
conn_token_adopt(struct conn *c)
{
	const char	*cause;

	if (c->tok->sets[0] != '\0' && policy_set_list_parse(c->tok->sets,
	    &c->tok_sets, &c->tok_nsets, &cause) == -1)
		return -1;
	if (!c->tok_adopted) {
		c->adopt_prev = NULL;
		c->adopt_next = c->px->adopted;
		if (c->px->adopted != NULL)
			c->px->adopted->adopt_prev = c;
		c->px->adopted = c;
	}
	c->tok_adopted = 1;
	conn_token_note(c);
	c->who.sandbox = c->tok->sandbox;
	c->who.sets = (const char *const *)c->tok_sets;
	c->who.nsets = c->tok_nsets;
	c->who.sets_text = c->tok->sets;
	return 0;
}

/*
 * The sandbox token (token.h) of a request outside a terminated session,
 * when the proxy trusts token keys: it must verify, be unexpired and
 * name the sandbox the client's address is registered to; under
 * --token-any-source, an unregistered client becomes the token's sandbox
 * with its sets, if the run the token names (if any) is running here. A
 * password that is no token (an exec credential) is
 * left to conn_attribute. SG_REASON_NONE, or why the token is refused
 * with the detail in why.
 */
static enum sg_reason
conn_token(struct conn *c, char *why, size_t size)
{
	static const enum sg_reason	 rs[] = { SG_REASON_NONE,
	    SG_REASON_TOKEN_MALFORMED, SG_REASON_TOKEN_FORGED,
	    SG_REASON_TOKEN_EXPIRED };
	char				 pw[HTTP_PASSWORD_MAX + 1];
	const char			*what = NULL;
	enum token_status		 st;
	enum sg_reason			 r;
	long				 n;

	conn_token_drop(c);
	if (token_keys_count(c->px->tokens) == 0 || (n = http_proxy_password(
	    &c->r.req, pw, sizeof(pw))) < 0 || !token_looks_like(pw,
	    (size_t)n))
		return SG_REASON_NONE;
	if ((c->tok = calloc(1, sizeof(*c->tok))) == NULL) {
		snprintf(why, size, "out of memory");
		return SG_REASON_PROXY_UNAVAILABLE;
	}
	st = token_check(c->px->tokens, pw, (size_t)n, time(NULL), c->tok,
	    &what);
	if (st != TOKEN_OK) {
		snprintf(why, size, "%s", what);
		return rs[st];
	}
	if ((r = conn_token_gone(c, why, size)) != SG_REASON_NONE)
		return r;
	if (c->who.sandbox != NULL && strcmp(c->who.sandbox,
	    c->tok->sandbox) != 0) {
		snprintf(why, size, "token of sandbox %s, client of sandbox %s",
		    c->tok->sandbox, c->who.sandbox);
		return SG_REASON_TOKEN_OTHER_SANDBOX;
	}
	if (c->who.sandbox == NULL && !c->px->cfg.token_any_source) {
		snprintf(why, size, "token of sandbox %s, client registered to "
		    "no sandbox", c->tok->sandbox);
		return SG_REASON_TOKEN_OTHER_SANDBOX;
	}
	/*
	 * Taken as the token's sandbox, the request would get the grants of
	 * the run it names (sandgate grant --exec): not once that exec ended.
	 */
	if (c->who.sandbox == NULL &&
	    (r = conn_token_run_ended(c, why, size)) != SG_REASON_NONE)
		return r;
	if (c->who.sandbox == NULL && conn_token_adopt(c) == -1) {
		snprintf(why, size, "out of memory");
		return SG_REASON_PROXY_UNAVAILABLE;
	}
	return SG_REASON_NONE;
}

/*
 * The exec the request is attributed to while its credential is still
 * registered, else "": a tunnel (or a request in flight) outlives its
 * exec, an exec's grant does not (conn_revoke at /execs/end).
 */
static const char *
conn_run_live(const struct conn *c, char *run)
{
	run[0] = '\0';
	if (c->r.run[0] != '\0' && c->tun_cred[0] != '\0')
		(void)execcred_run(c->px->execs, c->tun_cred, c->who.sandbox,
		    run);
	else if (c->r.run[0] != '\0' && c->tok != NULL &&
	    conn_token_run_live(c))
		snprintf(run, EXECCRED_RUN_MAX + 1, "%s", c->tok->run);
	return run;
}

void
conn_run_refresh(struct conn *c)
{
	char	run[EXECCRED_RUN_MAX + 1];

	if (c->r.run[0] != '\0' && conn_run_live(c, run)[0] == '\0')
		c->r.run[0] = '\0';
}

/*
 * The policy's decision, or a grant (sandgate grant) of the client's
 * sandbox, and exec when the grant names one, for what the policy
 * refuses. Floors hold over grants: a deny entry has decided already,
 * and a grant counts only while the policy in force allows it
 * (policy_grant_check: a later deny entry or a narrower grants list
 * ends it), never for a host a tls: terminate entry names, on any port
 * (plain HTTP to it would pass the entry's methods, paths and
 * verification), and never inside a terminated session: its entry
 * decides alone (policy_grant_check_query). A granted request is matched as a
 * name with the default TLS rule for its port, and reaches a private
 * address only where the admins said so (grants: allow_private: true).
 */
static enum sg_reason
conn_policy(struct proxy *px, const struct policy *p, struct conn *c,
    const struct policy_query *q, struct policy_match *m)
{
	enum sg_reason	 r;
	char		 why[512], run[EXECCRED_RUN_MAX + 1];

	r = policy_decide(p, q, m);
	if (r == SG_REASON_NONE || r == SG_REASON_DENIED ||
	    q->host->type != HOST_DNS || grants_match(px->grants,
	    c->who.sandbox, conn_run_live(c, run), q->host->name, q->port,
	    grants_clock()) == NULL || policy_grant_check_query(p, q, m, why,
	    sizeof(why)) == -1)
		return r;
	if (q->path != NULL && q->port == 443)
		return SG_REASON_NOT_TLS;	/* required on 443 */
	memset(m, 0, sizeof(*m));
	m->set = "grant";
	m->tls = q->port == 443 ? POLICY_TLS_REQUIRED : POLICY_TLS_OPTIONAL;
	m->allow_private = policy_grants_allow_private(p);
	return SG_REASON_NONE;
}

int
conn_entry_ruled(const struct policy_entry *e)
{
	return e != NULL && (e->methods != NULL || e->paths != NULL ||
	    e->cred_header != NULL);
}

/*
 * What an entry's methods and paths decide on is the request line; two
 * ways a request that passes them asks the upstream for something else
 * (docs/proxy.md, "What it checks"). A body on a method whose content
 * has no meaning (GET, HEAD, DELETE, OPTIONS, TRACE: RFC 9110 9.3) is
 * refused on an entry with methods or paths, with a 400 naming why
 * (*cause): a server that does not read it takes its bytes for the next
 * request on the connection, a method and path nobody decided. A
 * method-override header (X-HTTP-Method-Override, X-HTTP-Method,
 * X-Method-Override), which frameworks obey, must name a method the
 * policy allows on this path too: method_not_allowed otherwise, with
 * '_' read as '-'. A header name with '_' is refused (400) on an entry
 * with methods, paths or a credential: CGI and WSGI gateways turn '-'
 * into '_' (X_HTTP_METHOD_OVERRIDE and X-HTTP-Method-Override are one
 * variable to the application), so such a name is any header at all.
 * Trailer fields, which no check here sees, are refused on such an entry
 * as the body is forwarded (conn_http_start).
 */
static enum sg_reason
conn_rules_gap(struct conn *c, const char **cause)
{
	static const char *const bodiless[] = { "GET", "HEAD", "DELETE",
	    "OPTIONS", "TRACE", NULL };
	static const char *const overrides[] = { "X-HTTP-Method-Override",
	    "X-HTTP-Method", "X-Method-Override", NULL };
	const struct policy_entry	*e = c->r.match.entry;
	const struct http_request	*q = &c->r.req;
	const struct http_header	*h;
	size_t				 i, j;

	if (e == NULL)
		return SG_REASON_NONE;	/* a grant or report mode */
	for (i = 0; i < q->nheaders && conn_entry_ruled(e); i++)
		if (strchr(q->headers[i].name, '_') != NULL) {
			*cause = "a header name with '_' is refused on an "
			    "entry with methods, paths or a credential: "
			    "gateways read it as the name with '-'";
			return SG_REASON_MALFORMED_REQUEST;
		}
	for (i = 0; bodiless[i] != NULL && (e->methods != NULL ||
	    e->paths != NULL) && http_request_body(q) != HTTP_BODY_NONE; i++)
		if (strcasecmp(q->method, bodiless[i]) == 0) {
			*cause = "a body on this method is refused on an "
			    "entry with methods or paths: the upstream could "
			    "read it as another request";
			return SG_REASON_MALFORMED_REQUEST;
		}
	for (i = 0; i < q->nheaders; i++) {
		h = &q->headers[i];
		for (j = 0; overrides[j] != NULL; j++)
			if (conn_header_name_eq(h->name, overrides[j]) &&
			    !conn_override_allowed(c, h->value, h->value_len))
				return SG_REASON_METHOD_NOT_ALLOWED;
	}
	return conn_path_override(e, q);
}

/*
 * On an entry with paths, a header that names another path is refused
 * (path_not_allowed), as a method override is: X-Original-URL and
 * X-Rewrite-URL, which frameworks (Symfony before CVE-2018-14773, Zend
 * Framework 1) and IIS URL Rewrite take as the request's path, and
 * WebDAV's Destination, the path a MOVE or COPY writes to.
 */
static enum sg_reason
conn_path_override(const struct policy_entry *e,
    const struct http_request *q)
{
	static const char *const names[] = { "X-Original-URL",
	    "X-Rewrite-URL", "Destination", NULL };
	size_t	i, j;

	for (i = 0; e->paths != NULL && i < q->nheaders; i++)
		for (j = 0; names[j] != NULL; j++)
			if (conn_header_name_eq(q->headers[i].name, names[j]))
				return SG_REASON_PATH_NOT_ALLOWED;
	return SG_REASON_NONE;
}

/* 1 when two header names are one to a gateway: any case, '_' as '-'. */
static int
conn_header_name_eq(const char *a, const char *b)
{
	for (; *a != '\0' && *b != '\0'; a++, b++)
		if (tolower((unsigned char)(*a == '_' ? '-' : *a)) !=
		    tolower((unsigned char)(*b == '_' ? '-' : *b)))
			return 0;
	return *a == *b;
}

/*
 * 1 when the policy allows the method an override header names (as the
 * frameworks read it: upper case) on the request's host, port and path.
 */
static int
conn_override_allowed(struct conn *c, const char *value, size_t len)
{
	struct policy_query	q;
	struct policy_match	m;
	char			method[32];
	size_t			i;

	if (len >= sizeof(method))
		return 0;
	for (i = 0; i < len; i++)
		method[i] = (char)toupper((unsigned char)value[i]);
	method[len] = '\0';
	conn_query(c, &q);
	q.method = method;
	return policy_decide(c->r.pol->policy, &q, &m) == SG_REASON_NONE;
}

/* The policy decision for the current request, then DNS. */
int
conn_decide(struct conn *c)
{
	struct policy_query	q;
	struct sockaddr_storage	ss;
	enum sg_reason		r;
	char			why[256];
	const char		*cause;

	proxy_policy_unref(c->r.pol);
	c->r.pol = proxy_policy_ref(c->px);
	c->r.gen = c->px->upstream_gen;
	/*
	 * Inside a terminated session the client sends no token: the
	 * CONNECT's is checked again, as a new connection's would be.
	 */
	r = c->term ? conn_token_lapsed(c, why, sizeof(why)) :
	    conn_token(c, why, sizeof(why));
	if (r != SG_REASON_NONE)
		return conn_block(c, r, NULL, why);
	conn_attribute(c);
	conn_query(c, &q);
	r = conn_policy(c->px, c->r.pol->policy, c, &q, &c->r.match);
	if (r != SG_REASON_NONE && !conn_report_mode(c->r.pol->policy,
	    &c->who, r))
		return conn_block(c, r, NULL, NULL);
	/* A stopped client writes no egress.would_block line either. */
	if (!proxy_log_healthy(c->px, &c->who, c->src))
		return conn_block(c, SG_REASON_LOG_UNAVAILABLE, NULL, NULL);
	if (r != SG_REASON_NONE && !conn_report_only(c, r))
		return conn_block(c, r, NULL, NULL);
	c->tls_required = c->r.match.tls == POLICY_TLS_REQUIRED;
	if (!c->r.is_connect && (r = conn_rules_gap(c, &cause)) ==
	    SG_REASON_MALFORMED_REQUEST)
		return conn_block_malformed(c, 400, cause);
	if (!c->r.is_connect && r != SG_REASON_NONE)
		return conn_block(c, r, NULL, NULL);
	if (c->r.is_connect && c->r.match.tls == POLICY_TLS_TERMINATE)
		return conn_term_start(c);
	if (c->term && conn_term_credential(c, NULL) == -1)
		return conn_block(c, SG_REASON_CREDENTIAL_MISSING, NULL,
		    c->r.match.entry->cred_secret);
	/*
	 * Reuse the kept upstream for the same destination and rules; in a
	 * terminated session only one this request's own entry verified
	 * and carries its credential over, opened since the last change.
	 */
	if (!c->r.is_connect && c->upstream != NULL && c->up_reusable &&
	    host_equal(&c->up_host, &c->r.host) && c->up_port == c->r.port &&
	    (!c->up_private || c->r.match.allow_private) &&
	    (!c->term || conn_term_fits(c)))
		return conn_connected(c);
	conn_drop_upstream(c);
	conn_set_state(c, CONN_RESOLVE);
	if (c->r.host.type != HOST_DNS) {
		memset(&ss, 0, sizeof(ss));
		if (c->r.host.type == HOST_IPV4) {
			((struct sockaddr_in *)&ss)->sin_family = AF_INET;
			((struct sockaddr_in *)&ss)->sin_addr = c->r.host.ip.v4;
		} else {
			((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
			((struct sockaddr_in6 *)&ss)->sin6_addr =
			    c->r.host.ip.v6;
		}
		return conn_resolved(c, &ss, 1);
	}
	c->r.dnsreq = dns_lookup(c->px->dns, c->r.host.name, conn_dns_done, c);
	if (c->r.dnsreq == NULL)
		return conn_reply_error(c, 503, "proxy_internal_error",
		    "out of memory");
	return 0;
}

/*
 * --log-allowed: one egress.allowed event per plain-HTTP request and per
 * tunnel, with the bytes each way and how long it took.
 */
void
conn_log_allowed(struct conn *c)
{
	struct proxy_event	ev;
	char			rule[512];

	if (!c->r.allowed_open)
		return;
	c->r.allowed_open = 0;
	if (!c->px->cfg.log_allowed)
		return;
	conn_event(c, &ev, "egress.allowed", SG_REASON_NONE, NULL, rule,
	    sizeof(rule));
	ev.resolved = c->r.resolved;
	if (c->term)
		ev.status = c->r.status;
	ev.bytes_up = (long long)c->r.bytes_up;
	ev.bytes_down = (long long)c->r.bytes_down;
	ev.duration_ms = (long long)((util_now_us() - c->r.started_us) /
	    1000);
	/* One line per connection: under the client's budget, as blocks. */
	proxy_log_block(c->px, &ev);
}

/*
 * A set in force is in report mode (staging): a would-be block is logged
 * as egress.would_block (under the block log's burst and budget, and
 * not for a stopped client) and let through, so an admin can run a task
 * once and see what it needs. Returns 1 when the request goes on.
 */
static int
conn_report_only(struct conn *c, enum sg_reason r)
{
	struct proxy_event	ev;
	char			msg[1024];
	int			priv;

	if (!conn_report_mode(c->r.pol->policy, &c->who, r))
		return 0;
	reason_message(msg, sizeof(msg), r, c->r.host.name, c->r.port, NULL,
	    NULL);
	conn_event(c, &ev, "egress.would_block", r, msg, NULL, 0);
	/* A line, or counted into a summary, as blocks are (blocklog.h). */
	if (proxy_log_block(c->px, &ev) == -1)
		return 0;	/* unlogged traffic never passes */
	/*
	 * A nearest entry names this very host (only its port, method or
	 * path missed), so its allow_private still says whether the host
	 * may sit on a private address: an internal mirror can be tried out
	 * in report mode. Without one the address checks stay strict.
	 */
	priv = c->r.match.entry != NULL && c->r.match.allow_private;
	memset(&c->r.match, 0, sizeof(c->r.match));
	c->r.match.tls = POLICY_TLS_OPTIONAL;
	c->r.match.allow_private = priv;
	return 1;
}

/*
 * 1 when one of the client's sets is in report mode in policy p, so a
 * block for reason r is let through; a deny entry is a floor report mode
 * never lifts.
 */
static int
conn_report_mode(const struct policy *p, const struct proxy_client *who,
    enum sg_reason r)
{
	size_t	i;

	if (r == SG_REASON_DENIED)
		return 0;
	for (i = 0; i < who->nsets; i++)
		if (policy_set_is_report(p, who->sets[i]))
			return 1;
	return 0;
}

/*
 * Refuse the current request before any tunnel: one security event,
 * then the 403 (503 when no tunnel can be set up). Plain-HTTP requests
 * without a body keep the client connection for the next request.
 */
int
conn_block(struct conn *c, enum sg_reason r, const char *sni,
    const char *addr)
{
	struct proxy_event	 ev;
	char			 msg[1024], rule[512];
	const char		*perr;
	char			*buf;
	size_t			 len;
	int			 keep, status = 403;

	reason_message(msg, sizeof(msg), r, c->r.host.name, c->r.port, sni,
	    addr);
	conn_event(c, &ev, "egress.blocked", r, msg, rule, sizeof(rule));
	ev.sni = sni;
	ev.resolved = reason_is_token(r) ? NULL : addr;	/* a detail */
	c->r.allowed_open = 0;
	perr = r == SG_REASON_PRIVATE_ADDRESS ? "destination_ip_prohibited" :
	    "http_request_denied";
	if (r == SG_REASON_PROXY_UNAVAILABLE ||
	    r == SG_REASON_TERMINATION_UNAVAILABLE ||
	    r == SG_REASON_CREDENTIAL_MISSING) {
		status = 503;
		perr = "proxy_internal_error";
	} else if (r == SG_REASON_UPSTREAM_UNREACHABLE) {
		status = 502;
		perr = "connection_refused";
		ev.resolved = c->r.resolved[0] ? c->r.resolved : NULL;
	} else if (reason_is_upstream_tls(r)) {
		status = 502;
		perr = r == SG_REASON_UPSTREAM_TLS ? "tls_protocol_error" :
		    "tls_certificate_error";
		ev.resolved = c->r.resolved;
	}
	if (c->term)
		ev.status = status;
	c->px->stats.requests_blocked[r]++;
	proxy_log_block(c->px, &ev);
	keep = !c->r.is_connect && c->r.keep_alive && !c->close_after &&
	    http_request_body(&c->r.req) == HTTP_BODY_NONE;
	buf = http_block_response(status, msg, r, perr, keep, &len);
	if (conn_send(c, buf, len) == -1)
		return -1;
	if (!keep)
		return conn_finish(c);
	return conn_next_request(c);
}

/*
 * Wait for the next request on a kept-alive connection. A pipelined head
 * already buffered is parsed from a deferred read callback, not from
 * here, so a long pipeline never recurses; while the client's output is
 * full, not until it drains.
 */
int
conn_next_request(struct conn *c)
{
	if (c->client_eof)
		return conn_finish(c);
	conn_req_reset(c);
	c->head_started = 0;
	c->keepalive_wait = 1;
	conn_set_state(c, CONN_HEAD);
	if (c->out_paused ||
	    evbuffer_get_length(bufferevent_get_input(c->client)) == 0)
		return 0;
	if (c->slot->over)
		c->read_wait = 1;	/* conn_slot_resume() goes on */
	else
		bufferevent_trigger(c->client, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	return 0;
}

/*
 * A name's addresses arrived from the loop. The lookup was cancelled if
 * the request moved on (a timeout answered 504), so a late answer never
 * gets here; the state check is a second guard.
 */
static void
conn_dns_done(void *arg, int err, const char *errstr,
    const struct sockaddr_storage *addrs, size_t n)
{
	struct conn	*c = arg;
	char		 details[SG_HOST_MAX + 64];

	c->r.dnsreq = NULL;
	if (c->state != CONN_RESOLVE)
		return;
	if (err != 0) {
		snprintf(details, sizeof(details), "cannot resolve %s: %s",
		    c->r.host.name, errstr);
		c->px->stats.upstream_errors++;
		if (c->term) {
			conn_block(c, SG_REASON_UPSTREAM_UNREACHABLE, NULL,
			    details);
			return;
		}
		conn_reply_error(c, 502, "dns_error", details);
		return;
	}
	conn_resolved(c, addrs, n);
}

/*
 * The addresses of the destination: every one must be public, unless the
 * entry allows private ones; the proxy's own listeners never pass.
 */
static int
conn_resolved(struct conn *c, const struct sockaddr_storage *addrs,
    size_t n)
{
	memcpy(c->addrs, addrs, n * sizeof(*addrs));
	c->r.naddrs = n;
	c->r.addr_next = 0;
	if (conn_check_addrs(c) == -1)
		return -1;
	if (c->term && conn_term_reuse(c))
		return conn_connected(c);
	conn_set_state(c, CONN_CONNECT);
	return conn_connect_next(c);
}

static int
conn_check_addrs(struct conn *c)
{
	struct sockaddr	*sa;
	enum addr_class	 cls;
	char		 a[INET6_ADDRSTRLEN];
	size_t		 i;

	c->up_private = 0;
	for (i = 0; i < c->r.naddrs; i++) {
		sa = (struct sockaddr *)&c->addrs[i];
		cls = addr_classify(sa);
		if (proxy_is_self(c->px, sa, c->r.port))
			cls = ADDR_SELF;
		if (cls == ADDR_PUBLIC)
			continue;
		c->up_private = 1;
		if (cls != ADDR_SELF && c->r.match.allow_private)
			continue;
		addr_to_string(sa, a, sizeof(a));
		conn_block(c, SG_REASON_PRIVATE_ADDRESS, NULL, a);
		return -1;
	}
	return 0;
}

/* The last address failed: 502 (or 503 when out of sockets). */
static int
conn_connect_failed(struct conn *c, const char *details)
{
	if (c->r.addr_next < c->r.naddrs)
		return conn_connect_next(c);
	c->px->stats.upstream_errors++;
	if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS)
		return conn_reply_error(c, 503, "proxy_internal_error",
		    "the proxy is out of sockets; try again later");
	if (c->term)
		return conn_block(c, SG_REASON_UPSTREAM_UNREACHABLE, NULL,
		    details);
	return conn_reply_error(c, 502, "connection_refused", details);
}

/*
 * What a new connection adds to its download path's two buffers (see
 * PROXY_SOCKBUF_POOL): a client's only connection up to 4 MiB in all,
 * each of its others 128 KiB more, from the proxy's pool while it has room.
 */
static size_t
conn_sockbuf_take(struct proxy *px, const struct client_slot *slot)
{
	size_t	room = PROXY_SOCKBUF_POOL - px->sockbuf_pool;
	size_t	extra = slot->n <= 1 ? PROXY_SOCKBUF_MAX - PROXY_SOCKBUF :
		    PROXY_SOCKBUF_MORE;

	if (extra > room / 2)
		extra = room / 2;
	if (extra < PROXY_SOCKBUF_STEP)
		return 0;
	px->sockbuf_pool += 2 * extra;
	return extra;
}

/*
 * Cap a socket's kernel buffers (before connect(2) for an upstream,
 * which also turns the kernel's autotuning off): left alone, a stalled
 * download lets a receive queue grow to tcp_rmem's maximum and a send
 * queue to tcp_wmem's (MiBs per socket, outside any budget). rcv_extra
 * and snd_extra are the connection's share of the pool.
 */
void
conn_sockbuf_cap(evutil_socket_t fd, size_t rcv_extra, size_t snd_extra)
{
	int	rcv = PROXY_SOCKBUF + (int)rcv_extra;
	int	snd = PROXY_SOCKBUF + (int)snd_extra;

	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, sizeof(rcv));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, sizeof(snd));
}

/* A non-blocking upstream socket, its buffers capped. */
static evutil_socket_t
conn_upstream_socket(int family, size_t rcv_extra)
{
	evutil_socket_t	fd;

	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return -1;
	conn_sockbuf_cap(fd, rcv_extra, 0);
	return fd;
}

/* Connect to the next resolved address. */
int
conn_connect_next(struct conn *c)
{
	struct sockaddr	*sa = (struct sockaddr *)&c->addrs[c->r.addr_next++];
	socklen_t	 len = sa->sa_family == AF_INET6 ?
			    sizeof(struct sockaddr_in6) :
			    sizeof(struct sockaddr_in);
	evutil_socket_t	 fd;

	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(c->r.port);
	else
		((struct sockaddr_in *)sa)->sin_port = htons(c->r.port);
	addr_to_string(sa, c->r.resolved, sizeof(c->r.resolved));
	if ((fd = conn_upstream_socket(sa->sa_family,
	    c->sockbuf_extra)) == -1)
		return conn_connect_failed(c, "cannot open a socket");
	c->upstream = bufferevent_socket_new(c->px->base, fd,
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->upstream == NULL) {
		evutil_closesocket(fd);
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	conn_bev_watch(c, c->upstream);
	bufferevent_setcb(c->upstream, conn_upstream_read, conn_upstream_write,
	    conn_upstream_event, c);
	bufferevent_setwatermark(c->upstream, EV_READ, 0, PROXY_HIGH_WATER);
	conn_arm(c, c->px->cfg.connect_timeout_ms);
	if (bufferevent_socket_connect(c->upstream, sa, (int)len) == -1) {
		/* Immediate failure: the event callback has not run. */
		conn_bev_free(c, c->upstream);
		c->upstream = NULL;
		return conn_connect_failed(c, "cannot connect upstream");
	}
	return 0;
}

/* The upstream is connected (or reused): start forwarding. */
int
conn_connected(struct conn *c)
{
	int	one = 1;

	if (c->state == CONN_CONNECT && !c->up_tls) {	/* a new socket */
		setsockopt(bufferevent_getfd(c->upstream), IPPROTO_TCP,
		    TCP_NODELAY, &one, sizeof(one));
		if (c->term)
			return conn_term_upstream(c);
	}
	c->up_host = c->r.host;
	c->up_port = c->r.port;
	c->up_reusable = 0;
	if (!c->r.counted)	/* once, a retried request too */
		c->px->stats.requests_allowed++;
	c->r.counted = 1;
	c->r.allowed_open = 1;
	if (c->r.is_connect)
		return conn_tunnel_start(c);
	return conn_http_start(c);
}

void
conn_drop_upstream(struct conn *c)
{
	evutil_socket_t	fd;

	/* Request bytes the upstream did not take are not wanted now. */
	if (c->upstream != NULL && (fd = bufferevent_getfd(c->upstream)) !=
	    -1 && conn_sock_queued(fd) > 0) {
		log_debug("conn %llu: upstream socket reset, %d bytes queued",
		    c->id, conn_sock_queued(fd));
		conn_sock_reset(fd);
	}
	conn_bev_free(c, c->upstream);
	c->upstream = NULL;
	c->up_reusable = 0;
	c->up_tls = 0;
	free(c->up_key);
	c->up_key = NULL;
}

/*
 * Close every idle upstream TLS connection, kept by the pool or by a
 * terminated session between its requests: after a reload, a grant's
 * revoke or expiry, an exec's end, a registry or secret change, none is
 * used again (docs/proxy.md, "Upstream connection reuse"). One busy with
 * a request now finishes it and is then closed: the new generation is
 * not its own (conn_term_current), so it is neither kept nor parked.
 */
void
conn_upstreams_flush(struct proxy *px)
{
	struct conn	*c;

	px->upstream_gen++;
	if (px->uppool != NULL)
		uppool_flush(px->uppool);
	for (c = px->conns; c != NULL; c = c->next)
		if (c->term && c->state == CONN_HEAD && c->upstream != NULL)
			conn_drop_upstream(c);
}

void
conn_drain_idle(struct proxy *px)
{
	struct conn	*c, *next;

	for (c = px->conns; c != NULL; c = next) {
		next = c->next;
		if (c->state == CONN_HEAD && !c->head_started)
			conn_free(c, CONN_CLOSE_DRAINING, NULL);
	}
	conn_upstreams_flush(px);
}

/* Log egress.revoked for the current request (or tunnel) and close. */
static void
conn_revoked(struct conn *c, enum sg_reason r)
{
	struct proxy_event	 ev;
	char			 msg[1024];

	reason_message(msg, sizeof(msg), r, c->r.host.name, c->r.port, NULL,
	    NULL);
	conn_event(c, &ev, "egress.revoked", r, msg, NULL, 0);
	ev.resolved = c->r.resolved;
	ev.policy_digest = policy_digest(c->px->policy->policy);
	ev.bytes_up = (long long)c->r.bytes_up;
	ev.bytes_down = (long long)c->r.bytes_down;
	ev.duration_ms = (long long)((util_now_us() - c->r.started_us) /
	    1000);
	proxy_log_event(c->px, &ev);
	c->r.allowed_open = 0;
	conn_free(c, CONN_CLOSE_REVOKED, reason_code(r));
}

/*
 * A request still resolving or connecting when the policy changed is
 * decided again under the new one, as if its head came now: refused
 * (403, egress.blocked) when it no longer passes, else it goes on with
 * the new entry's rules (tls, allow_private, paths). Returns 1 when
 * refused. A client with a set in report mode goes on as it was.
 */
static unsigned
conn_redecide(struct proxy *px, struct conn *c)
{
	struct policy_query	q;
	struct policy_match	m;
	enum sg_reason		r;

	conn_query(c, &q);
	r = conn_policy(px, px->policy->policy, c, &q, &m);
	/* In CONNECT, the addresses were checked under the old entry. */
	if (r == SG_REASON_NONE && c->state == CONN_CONNECT &&
	    c->up_private && !m.allow_private)
		r = SG_REASON_PRIVATE_ADDRESS;
	/* The match points into its policy: both change together. */
	proxy_policy_unref(c->r.pol);
	c->r.pol = proxy_policy_ref(px);
	c->r.match = m;
	c->r.gen = px->upstream_gen;
	/*
	 * Refused now: blocked, or in report mode let through as a fresh
	 * request would be, logged as would_block with the entry's match
	 * (its ca_file, its credential) cleared (conn_report_only).
	 */
	if (r != SG_REASON_NONE && !conn_report_only(c, r)) {
		conn_drop_upstream(c);	/* a connect in flight ends here */
		conn_block(c, r, NULL, NULL);
		return 1;
	}
	c->tls_required = c->r.match.tls == POLICY_TLS_REQUIRED;
	/*
	 * An upstream TLS handshake in flight verifies under the old
	 * entry's ca_file: connect again under what is in force now.
	 */
	if (c->state == CONN_CONNECT && c->up_tls) {
		conn_drop_upstream(c);
		c->r.addr_next = 0;
		conn_connect_next(c);
	}
	return 0;
}

unsigned
conn_revoke(struct proxy *px)
{
	struct policy_query	 q;
	struct policy_match	 m;
	struct conn		*c, *next;
	unsigned		 n = 0;
	enum sg_reason		 r;

	conn_upstreams_flush(px);
	for (c = px->conns; c != NULL; c = next) {
		next = c->next;
		if (conn_token_revoke(c)) {
			n++;
			continue;
		}
		if (c->state == CONN_RESOLVE || c->state == CONN_CONNECT) {
			n += conn_redecide(px, c);
			continue;
		}
		/*
		 * Forwarded requests (an upload or answer still streaming)
		 * and tunnels: closed when the new policy refuses them.
		 */
		if ((c->state != CONN_TUNNEL && c->state != CONN_HTTP) ||
		    c->refusing)
			continue;
		conn_query(c, &q);
		r = conn_policy(px, px->policy->policy, c, &q, &m);
		if (r == SG_REASON_NONE && c->state == CONN_TUNNEL)
			r = conn_tunnel_recheck(c, &m);
		else if (r == SG_REASON_NONE && c->up_private &&
		    !m.allow_private)
			r = SG_REASON_PRIVATE_ADDRESS;
		/*
		 * A client with a set in report mode would be let through
		 * again (conn_report_only), so its tunnels stay open.
		 */
		if (r == SG_REASON_NONE ||
		    conn_report_mode(px->policy->policy, &c->who, r))
			continue;
		conn_revoked(c, r);
		n++;
	}
	return n;
}

/*
 * Close c when its address now means another registry entry (or none),
 * or it acts from a token of gone (NULL: none); 1 when closed.
 */
static int
conn_revoke_if_changed(struct conn *c, const char *gone)
{
	struct proxy_client	now;
	int			same;

	proxy_client_lookup(c->px, (struct sockaddr *)&c->client_addr, &now);
	same = now.ref == c->who.ref;
	proxy_client_release(&now);
	/* An identity taken from a token ends with its sandbox. */
	if (same && c->tok_adopted && gone != NULL)
		same = strcmp(c->tok->sandbox, gone) != 0;
	if (same)
		return 0;
	conn_revoked(c, SG_REASON_IDENTITY_CHANGED);
	return 1;
}

struct conn_revoke_at {
	struct proxy	*px;
	unsigned	 n;
};

/* The connections of one address the registry changed (its slot's). */
static void
conn_revoke_addr(void *arg, const char *addr)
{
	struct conn_revoke_at	*at = arg;
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)&ss;
	struct client_slot	*cs;
	struct conn		*c, *next;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else if (inet_pton(AF_INET6, addr, &s6->sin6_addr) == 1)
		s6->sin6_family = AF_INET6;
	else
		return;
	if ((cs = proxy_client_slot(at->px, (struct sockaddr *)&ss)) == NULL)
		return;
	for (c = cs->conns; c != NULL; c = next) {
		next = c->slot_next;
		at->n += (unsigned)conn_revoke_if_changed(c, NULL);
	}
}

/*
 * Only the connections of the addresses the change touched
 * (registry_addr_changed, each address's slot) and, with gone, those
 * acting from a token: a change of one sandbox visited every open
 * connection of every client (atk15r16 F5).
 */
unsigned
conn_revoke_identity(struct proxy *px, const char *gone)
{
	struct conn_revoke_at	 at = { px, 0 };
	struct conn		*c, *next;

	conn_upstreams_flush(px);
	registry_addr_changed(px->registry, conn_revoke_addr, &at);
	for (c = px->adopted; gone != NULL && c != NULL; c = next) {
		next = c->adopt_next;
		at.n += (unsigned)conn_revoke_if_changed(c, gone);
	}
	return at.n;
}

unsigned
conn_count(const struct proxy *px)
{
	/* Kept sockets count: they hold kernel memory and a slot place. */
	return (unsigned)px->stats.conns_open + conn_nlingers;
}
