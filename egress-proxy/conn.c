/*
 * conn.c: the proxy's connection state machine.
 *
 *   HEAD ──CONNECT──> RESOLVE ─> CONNECT ─> 200 ─> HELLO ─> TUNNEL
 *     │                                     (SNI checked before a byte
 *     │                                      of the client goes upstream)
 *     └──GET http://…─> RESOLVE ─> CONNECT ─> HTTP (body + response) ─> HEAD
 *
 * Every request gets its own policy decision, taken under the policy that
 * was in force when its head arrived. Names are resolved once, every
 * address is checked, and the proxy connects to exactly those addresses.
 * Bytes move between two bufferevents with watermarks, so a slow reader
 * stops its peer instead of filling memory. All failures end in
 * conn_free(); functions that may free the connection return -1 after
 * doing so, and their callers return at once.
 */
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "addr.h"
#include "conn.h"
#include "dns.h"
#include "host.h"
#include "http.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "reason.h"
#include "sni.h"
#include "tunnel.h"
#include "util.h"

enum conn_state {
	CONN_HEAD,		/* reading a request head */
	CONN_RESOLVE,		/* DNS lookup in flight */
	CONN_CONNECT,		/* upstream connect in flight */
	CONN_HELLO,		/* CONNECT answered; reading the ClientHello */
	CONN_TUNNEL,		/* bytes flow both ways */
	CONN_HTTP,		/* request forwarded; body and response flow */
	CONN_FINISH		/* flushing the last bytes to the client */
};

static const char *const conn_state_names[] = {
	"head", "resolve", "connect", "hello", "tunnel", "http", "finish"
};

enum resp_state {
	RESP_HEAD,		/* waiting for a response head */
	RESP_BODY,
	RESP_DONE
};

struct conn {
	struct conn		*next;
	struct conn		*prev;
	struct proxy		*px;
	unsigned long long	 id;
	enum conn_state		 state;
	struct bufferevent	*client;
	struct bufferevent	*upstream;
	struct event		*timer;
	struct sockaddr_storage	 client_addr;
	char			 src[INET6_ADDRSTRLEN + 8];
	struct proxy_client	 who;
	uint64_t		 last_activity_us;
	int			 head_started;	/* first byte of a head seen */
	int			 keepalive_wait; /* idle between requests */

	/* The request being served. */
	struct proxy_policy	*pol;
	struct policy_match	 match;
	struct http_request	 req;
	int			 is_connect;
	struct host		 host;
	uint16_t		 port;
	char			 hostport[SG_HOST_MAX + 16];
	char			 method[32];
	int			 client_keep_alive;

	/* Resolution and connect. */
	struct dns_req		*dnsreq;
	struct sockaddr_storage	 addrs[DNS_ADDRS_MAX];
	size_t			 naddrs;
	size_t			 addr_next;
	char			 resolved[INET6_ADDRSTRLEN];

	/* The upstream kept between requests, and what it was opened for. */
	struct host		 up_host;
	uint16_t		 up_port;
	int			 up_private;	/* its address is not public */
	int			 up_reusable;

	/* Plain HTTP: request body and response. */
	enum http_body		 req_body;
	uint64_t		 req_remaining;
	struct http_chunked	 req_chunked;
	int			 req_done;
	enum resp_state		 resp_state;
	enum http_body		 resp_body;
	uint64_t		 resp_remaining;
	struct http_chunked	 resp_chunked;
	int			 resp_keep_alive;
	int			 close_after;	/* close the client after this */

	/* CONNECT: ClientHello check and half-closes. */
	struct sni_peek		*hello;
	size_t			 hello_fed;
	struct tunnel		*tun;		/* splice data path, or NULL */
	int			 tls_required;
	int			 client_eof;
	int			 upstream_eof;

	uint64_t		 started_us;
	unsigned long long	 bytes_up;
	unsigned long long	 bytes_down;
	/* --log-allowed: where the current request's counts started. */
	int			 allowed_open;
	uint64_t		 req_started_us;
	unsigned long long	 req_up0;
	unsigned long long	 req_down0;
};

static unsigned long long conn_ids;

static void	conn_set_state(struct conn *, enum conn_state);
static void	conn_free(struct conn *, const char *why);
static int	conn_finish(struct conn *);
static void	conn_arm(struct conn *, unsigned ms);
static void	conn_timer_cb(evutil_socket_t, short, void *);
static void	conn_client_read(struct bufferevent *, void *);
static void	conn_client_write(struct bufferevent *, void *);
static void	conn_client_event(struct bufferevent *, short, void *);
static void	conn_upstream_read(struct bufferevent *, void *);
static void	conn_upstream_write(struct bufferevent *, void *);
static void	conn_upstream_event(struct bufferevent *, short, void *);
static int	conn_head(struct conn *);
static int	conn_start_connect(struct conn *);
static int	conn_start_http(struct conn *);
static int	conn_decide(struct conn *);
static int	conn_block(struct conn *, enum sg_reason, const char *sni,
		    const char *addr);
static int	conn_reply_error(struct conn *, int status,
		    const char *proxy_error, const char *details);
static void	conn_dns_done(void *, int, const char *,
		    const struct sockaddr_storage *, size_t);
static int	conn_check_addrs(struct conn *);
static int	conn_connect_next(struct conn *);
static int	conn_connected(struct conn *);
static int	conn_hello(struct conn *);
static int	conn_move(struct conn *, struct bufferevent *from,
		    struct bufferevent *to, size_t max);
static int	conn_request_body(struct conn *);
static int	conn_response(struct conn *);
static int	conn_response_body(struct conn *);
static int	conn_request_complete(struct conn *);
static void	conn_drop_upstream(struct conn *);
static void	conn_reset_request(struct conn *);
static int	conn_send(struct conn *, char *buf, size_t len);
static void	conn_tunnel_shutdown(struct conn *);
static int	conn_block_malformed(struct conn *, int status,
		    const char *cause);
static int	conn_forward_head(struct conn *);
static int	conn_start_splice(struct conn *);
static void	conn_tunnel_done(void *, const char *);
static int	conn_next_request(struct conn *);
static int	conn_client_half_closed(struct conn *);
static int	conn_report_only(struct conn *, enum sg_reason);
static int	conn_report_mode(const struct policy *,
		    const struct proxy_client *);
static void	conn_log_allowed(struct conn *);
static void	conn_event(struct conn *, struct proxy_event *,
		    const char *event, enum sg_reason, const char *msg,
		    char *rule, size_t rulesize);

/* Every transition goes through here, so a debug trace reads as a story. */
static void
conn_set_state(struct conn *c, enum conn_state s)
{
	log_debug("conn %llu: %s -> %s", c->id, conn_state_names[c->state],
	    conn_state_names[s]);
	c->state = s;
}

void
conn_accept(struct proxy *px, evutil_socket_t fd, const struct sockaddr *sa,
    int socklen)
{
	struct conn	*c;
	int		 one = 1;

	if (px->draining || conn_count(px) >= px->cfg.max_conns ||
	    proxy_client_enter(px, sa) == -1) {
		evutil_closesocket(fd);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		goto fail;
	c->px = px;
	c->id = ++conn_ids;
	memcpy(&c->client_addr, sa, (size_t)socklen <= sizeof(c->client_addr) ?
	    (size_t)socklen : sizeof(c->client_addr));
	addr_to_string(sa, c->src, sizeof(c->src));
	snprintf(c->src + strlen(c->src), sizeof(c->src) - strlen(c->src),
	    ":%u", ntohs(sa->sa_family == AF_INET6 ?
	    ((const struct sockaddr_in6 *)sa)->sin6_port :
	    ((const struct sockaddr_in *)sa)->sin_port));
	http_request_init(&c->req);
	c->started_us = c->last_activity_us = util_now_us();
	c->client = bufferevent_socket_new(px->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(px->base, conn_timer_cb, c);
	if (c->client == NULL || c->timer == NULL) {
		if (c->client == NULL)
			evutil_closesocket(fd);
		conn_free(c, "out of memory");
		return;
	}
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	proxy_client_lookup(px, sa, &c->who);
	c->next = px->conns;
	if (px->conns != NULL)
		px->conns->prev = c;
	px->conns = c;
	px->stats.conns_open++;
	px->stats.conns_total++;
	bufferevent_setcb(c->client, conn_client_read, conn_client_write,
	    conn_client_event, c);
	bufferevent_setwatermark(c->client, EV_READ, 0, PROXY_HIGH_WATER);
	bufferevent_enable(c->client, EV_READ | EV_WRITE);
	conn_arm(c, px->cfg.head_timeout_ms);
	return;
fail:
	proxy_client_leave(px, sa);
	evutil_closesocket(fd);
}

/* Free everything; the one exit of a connection. */
static void
conn_free(struct conn *c, const char *why)
{
	struct proxy	*px = c->px;

	if (c->allowed_open && c->state != CONN_HELLO)
		conn_log_allowed(c);
	log_debug("conn %llu: close (%s) %s %s up %llu down %llu", c->id,
	    conn_state_names[c->state], c->src,
	    c->hostport[0] ? c->hostport : "-", c->bytes_up, c->bytes_down);
	if (c->prev != NULL)
		c->prev->next = c->next;
	else if (px->conns == c)
		px->conns = c->next;
	if (c->next != NULL)
		c->next->prev = c->prev;
	if (c->client != NULL || c->timer != NULL) {
		px->stats.conns_open--;
		proxy_client_leave(px, (struct sockaddr *)&c->client_addr);
	}
	dns_cancel(c->dnsreq);
	if (c->client != NULL)
		bufferevent_free(c->client);
	if (c->upstream != NULL)
		bufferevent_free(c->upstream);
	if (c->timer != NULL)
		event_free(c->timer);
	sni_peek_free(c->hello);
	tunnel_free(c->tun);
	http_request_release(&c->req);
	proxy_policy_unref(c->pol);
	proxy_client_release(&c->who);
	(void)why;
	free(c);
}

/* Stop reading, flush what the client is owed, then free. */
static int
conn_finish(struct conn *c)
{
	conn_set_state(c, CONN_FINISH);
	conn_drop_upstream(c);
	bufferevent_disable(c->client, EV_READ);
	if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0) {
		conn_free(c, "finished");
		return -1;
	}
	bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
	conn_arm(c, 10000);
	return 0;
}

static void
conn_arm(struct conn *c, unsigned ms)
{
	struct timeval	tv = { ms / 1000, (ms % 1000) * 1000 };

	evtimer_add(c->timer, &tv);
}

/* A phase deadline passed. */
static void
conn_timer_cb(evutil_socket_t fd, short what, void *arg)
{
	struct conn	*c = arg;
	uint64_t	 idle;

	switch (c->state) {
	case CONN_HEAD:
		if (c->head_started && evbuffer_get_length(
		    bufferevent_get_input(c->client)) > 0)
			conn_reply_error(c, 408, "http_request_error",
			    "request head not received in time");
		else
			conn_free(c, "idle");
		return;
	case CONN_RESOLVE:
		conn_reply_error(c, 504, "dns_timeout", "name lookup timed out");
		return;
	case CONN_CONNECT:
		conn_reply_error(c, 504, "connection_timeout",
		    "upstream connect timed out");
		return;
	case CONN_HELLO:
		conn_free(c, "no ClientHello in time");
		return;
	case CONN_TUNNEL:
	case CONN_HTTP:
		idle = (util_now_us() - c->last_activity_us) / 1000;
		if (idle < c->px->cfg.idle_timeout_ms) {
			conn_arm(c, c->px->cfg.idle_timeout_ms - (unsigned)idle);
			return;
		}
		if (c->state == CONN_HTTP && c->resp_state == RESP_HEAD &&
		    c->req_done)
			conn_reply_error(c, 504, "http_response_timeout",
			    "upstream did not answer in time");
		else
			conn_free(c, "idle timeout");
		return;
	case CONN_FINISH:
		conn_free(c, "flush timeout");
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
		conn_head(c);
		return;
	case CONN_HELLO:
		conn_hello(c);
		return;
	case CONN_TUNNEL:
		conn_move(c, c->client, c->upstream, SIZE_MAX);
		return;
	case CONN_HTTP:
		if (!c->req_done)
			conn_request_body(c);
		else
			bufferevent_disable(bev, EV_READ);	/* pipelined */
		return;
	default:
		/* Nothing is read in this state; keep bytes for later. */
		bufferevent_disable(bev, EV_READ);
		return;
	}
}

/* The client drained below the watermark: resume the upstream. */
static void
conn_client_write(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	if (c->state == CONN_FINISH) {
		if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
			conn_free(c, "finished");
		return;
	}
	if (c->upstream != NULL && !c->upstream_eof &&
	    (c->state == CONN_TUNNEL || c->state == CONN_HTTP))
		bufferevent_enable(c->upstream, EV_READ);
	if (c->state == CONN_TUNNEL && c->upstream_eof &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		conn_tunnel_shutdown(c);
}

static void
conn_client_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn	*c = arg;

	if ((what & BEV_EVENT_EOF) && c->state == CONN_TUNNEL) {
		/* Half-close: flush to the upstream, then shut its write. */
		c->client_eof = 1;
		conn_move(c, c->client, c->upstream, SIZE_MAX);
		if (c->upstream != NULL && evbuffer_get_length(
		    bufferevent_get_output(c->upstream)) == 0)
			conn_tunnel_shutdown(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && conn_client_half_closed(c) == 0)
		return;
	conn_free(c, (what & BEV_EVENT_EOF) ? "client closed" : "client error");
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
	bufferevent_disable(c->client, EV_READ);
	switch (c->state) {
	case CONN_HTTP:
		return c->req_done ? 0 : -1;
	case CONN_RESOLVE:
	case CONN_CONNECT:
		return !c->is_connect &&
		    http_request_body(&c->req) == HTTP_BODY_NONE ? 0 : -1;
	case CONN_HEAD:
	case CONN_FINISH:
		if (evbuffer_get_length(bufferevent_get_output(c->client)) > 0) {
			if (c->state != CONN_FINISH)
				conn_finish(c);
			return 0;
		}
		return -1;
	default:
		return -1;
	}
}

static void
conn_upstream_read(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	c->last_activity_us = util_now_us();
	if (c->state == CONN_TUNNEL)
		conn_move(c, c->upstream, c->client, SIZE_MAX);
	else if (c->state == CONN_HTTP)
		conn_response(c);
	else if (c->state == CONN_HEAD) {
		/* An idle kept upstream sent bytes: it can't be reused. */
		conn_drop_upstream(c);
	} else
		bufferevent_disable(bev, EV_READ);
}

/* The upstream drained below the watermark: resume the client. */
static void
conn_upstream_write(struct bufferevent *bev, void *arg)
{
	struct conn	*c = arg;

	if (c->state == CONN_TUNNEL) {
		if (c->client_eof) {
			if (evbuffer_get_length(bufferevent_get_output(bev)) == 0)
				conn_tunnel_shutdown(c);
			return;
		}
		bufferevent_enable(c->client, EV_READ);
	} else if (c->state == CONN_HTTP && !c->req_done)
		bufferevent_enable(c->client, EV_READ);
}

static void
conn_upstream_event(struct bufferevent *bev, short what, void *arg)
{
	struct conn	*c = arg;
	char		 details[128];

	if (what & BEV_EVENT_CONNECTED) {
		conn_connected(c);
		return;
	}
	if (c->state == CONN_CONNECT) {
		snprintf(details, sizeof(details), "connect to %s%s%s:%u: %s",
		    strchr(c->resolved, ':') ? "[" : "", c->resolved,
		    strchr(c->resolved, ':') ? "]" : "", c->port,
		    evutil_socket_error_to_string(
		    EVUTIL_SOCKET_ERROR()));
		bufferevent_free(c->upstream);
		c->upstream = NULL;
		if (c->addr_next < c->naddrs) {
			conn_connect_next(c);
			return;
		}
		c->px->stats.upstream_errors++;
		conn_reply_error(c, 502, "connection_refused", details);
		return;
	}
	if (c->state == CONN_TUNNEL && (what & BEV_EVENT_EOF)) {
		c->upstream_eof = 1;
		conn_move(c, c->upstream, c->client, SIZE_MAX);
		if (evbuffer_get_length(bufferevent_get_output(c->client)) == 0)
			conn_tunnel_shutdown(c);
		return;
	}
	if (c->state == CONN_HTTP) {
		if ((what & BEV_EVENT_EOF) && c->resp_state == RESP_BODY &&
		    c->resp_body == HTTP_BODY_CLOSE) {
			conn_move(c, c->upstream, c->client, SIZE_MAX);
			c->close_after = 1;
			c->resp_state = RESP_DONE;
			conn_request_complete(c);
			return;
		}
		if (c->resp_state == RESP_HEAD &&
		    evbuffer_get_length(bufferevent_get_output(c->client)) == 0 &&
		    c->bytes_down == 0) {
			c->px->stats.upstream_errors++;
			conn_reply_error(c, 502, "connection_terminated",
			    "upstream closed before answering");
			return;
		}
		c->close_after = 1;
		conn_finish(c);
		return;
	}
	if (c->state == CONN_HEAD) {
		conn_drop_upstream(c);	/* a kept upstream went away */
		return;
	}
	conn_free(c, "upstream closed");
}

/*
 * Both sides of a tunnel have said EOF and their bytes are delivered:
 * pass each EOF on with shutdown(2), and close once both are done.
 */
static void
conn_tunnel_shutdown(struct conn *c)
{
	if (c->client_eof && c->upstream != NULL)
		shutdown(bufferevent_getfd(c->upstream), SHUT_WR);
	if (c->upstream_eof)
		shutdown(bufferevent_getfd(c->client), SHUT_WR);
	if (c->client_eof && c->upstream_eof)
		conn_free(c, "tunnel closed");
}

/*
 * Move up to max bytes from one side's input to the other's output, and
 * stop reading the source while the destination is over the watermark.
 */
static int
conn_move(struct conn *c, struct bufferevent *from, struct bufferevent *to,
    size_t max)
{
	struct evbuffer	*in = bufferevent_get_input(from);
	struct evbuffer	*out;
	size_t		 n;

	if (to == NULL)
		return 0;
	out = bufferevent_get_output(to);
	n = evbuffer_get_length(in);
	if (n > max)
		n = max;
	if (n > 0) {
		evbuffer_remove_buffer(in, out, n);
		if (from == c->client) {
			c->bytes_up += n;
			c->px->stats.bytes_up += n;
		} else {
			c->bytes_down += n;
			c->px->stats.bytes_down += n;
		}
	}
	if (evbuffer_get_length(out) >= PROXY_HIGH_WATER) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, PROXY_HIGH_WATER / 2, 0);
	}
	return 0;
}

/* Queue bytes for the client (buf is freed). */
static int
conn_send(struct conn *c, char *buf, size_t len)
{
	if (buf == NULL) {
		conn_free(c, "out of memory");
		return -1;
	}
	bufferevent_write(c->client, buf, len);
	free(buf);
	return 0;
}

/* Answer an error of the proxy itself and close. */
static int
conn_reply_error(struct conn *c, int status, const char *proxy_error,
    const char *details)
{
	size_t	len;
	char	*buf;

	if (c->state == CONN_HELLO || c->state == CONN_TUNNEL ||
	    c->bytes_down > 0) {
		conn_free(c, details);	/* too late for a status line */
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
		conn_free(c, "out of memory");
		return -1;
	}
	http_request_release(&c->req);
	switch (http_request_parse((const char *)p, len, &c->req, &status,
	    &cause)) {
	case HTTP_PARSE_MORE:
		return 0;
	case HTTP_PARSE_ERROR:
		return conn_block_malformed(c, status, cause);
	case HTTP_PARSE_OK:
		break;
	}
	evbuffer_drain(in, c->req.head_len);
	c->head_started = 0;
	bufferevent_disable(c->client, EV_READ);
	util_strlcpy(c->method, c->req.method, sizeof(c->method));
	c->is_connect = c->req.form == HTTP_TARGET_AUTHORITY;
	c->client_keep_alive = c->req.keep_alive;
	return c->is_connect ? conn_start_connect(c) : conn_start_http(c);
}

/*
 * The fields every event about the current request shares; rule (when
 * not NULL) receives "file:line" of the entry that matched.
 */
static void
conn_event(struct conn *c, struct proxy_event *ev, const char *event,
    enum sg_reason r, const char *msg, char *rule, size_t rulesize)
{
	memset(ev, 0, sizeof(*ev));
	ev->event = event;
	ev->client = &c->who;
	ev->src = c->src;
	ev->method = c->method[0] != '\0' ? c->method : NULL;
	ev->host = c->host.name;
	ev->port = c->port;
	ev->reason = r;
	ev->message = msg;
	if (rule != NULL && c->match.file != NULL) {
		snprintf(rule, rulesize, "%s:%d", c->match.file,
		    c->match.line);
		ev->rule = rule;
	}
	ev->policy_digest = c->pol ? policy_digest(c->pol->policy) : NULL;
	ev->bytes_up = ev->bytes_down = ev->duration_ms = -1;
}

/* A request the parser refused: log it as a block and answer its status. */
static int
conn_block_malformed(struct conn *c, int status, const char *cause)
{
	struct proxy_event	ev;
	char			msg[256];

	snprintf(msg, sizeof(msg), SG_BLOCK_PREFIX "malformed request (%s)",
	    cause);
	conn_event(c, &ev, "egress.blocked", SG_REASON_MALFORMED_REQUEST, msg,
	    NULL, 0);
	c->px->stats.requests_blocked[SG_REASON_MALFORMED_REQUEST]++;
	proxy_log_event(c->px, &ev);
	return conn_reply_error(c, status, "http_protocol_error", msg);
}

/* CONNECT host:port: check the target, then resolve it. */
static int
conn_start_connect(struct conn *c)
{
	const char	*cause;

	if (host_parse_authority(c->req.authority, strlen(c->req.authority), 0,
	    &c->host, &c->port, &cause) == -1)
		return conn_block_malformed(c, 400, cause);
	host_format(&c->host, c->port, c->hostport, sizeof(c->hostport));
	return conn_decide(c);
}

/* GET http://host/...: the absolute URI and Host must name one host. */
static int
conn_start_http(struct conn *c)
{
	struct host	 hh;
	uint16_t	 hport;
	const char	*cause;

	if (c->req.form != HTTP_TARGET_ABSOLUTE)
		return conn_block_malformed(c, 400,
		    "not a proxy request (absolute URI required)");
	if (host_parse_authority(c->req.authority, strlen(c->req.authority),
	    80, &c->host, &c->port, &cause) == -1)
		return conn_block_malformed(c, 400, cause);
	host_format(&c->host, c->port, c->hostport, sizeof(c->hostport));
	if (c->req.host != NULL && (host_parse_authority(c->req.host,
	    strlen(c->req.host), 80, &hh, &hport, &cause) == -1 ||
	    !host_equal(&hh, &c->host) || hport != c->port))
		return conn_block(c, SG_REASON_HOST_MISMATCH, NULL, NULL);
	return conn_decide(c);
}

/* The policy decision for the current request, then DNS. */
static int
conn_decide(struct conn *c)
{
	struct policy_query	q;
	enum sg_reason		r;

	proxy_policy_unref(c->pol);
	c->pol = proxy_policy_ref(c->px);
	memset(&q, 0, sizeof(q));
	q.host = &c->host;
	q.port = c->port;
	q.method = c->method;
	q.path = c->is_connect ? NULL : c->req.path;
	q.sets = c->who.sets;
	q.nsets = c->who.nsets;
	q.now = time(NULL);
	r = policy_decide(c->pol->policy, &q, &c->match);
	if (r != SG_REASON_NONE && !conn_report_only(c, r))
		return conn_block(c, r, NULL, NULL);
	if (!proxy_log_healthy(c->px))
		return conn_block(c, SG_REASON_LOG_UNAVAILABLE, NULL, NULL);
	c->tls_required = c->match.tls == POLICY_TLS_REQUIRED;
	/* Reuse the kept upstream for the same destination and rules. */
	if (!c->is_connect && c->upstream != NULL && c->up_reusable &&
	    host_equal(&c->up_host, &c->host) && c->up_port == c->port &&
	    (!c->up_private || c->match.allow_private))
		return conn_connected(c);
	conn_drop_upstream(c);
	conn_set_state(c, CONN_RESOLVE);
	conn_arm(c, c->px->cfg.dns_timeout_ms + 1000);
	if (c->host.type != HOST_DNS) {
		struct sockaddr_storage	ss;

		memset(&ss, 0, sizeof(ss));
		if (c->host.type == HOST_IPV4) {
			((struct sockaddr_in *)&ss)->sin_family = AF_INET;
			((struct sockaddr_in *)&ss)->sin_addr = c->host.ip.v4;
		} else {
			((struct sockaddr_in6 *)&ss)->sin6_family = AF_INET6;
			((struct sockaddr_in6 *)&ss)->sin6_addr = c->host.ip.v6;
		}
		conn_dns_done(c, 0, NULL, &ss, 1);
		return 0;
	}
	c->dnsreq = dns_lookup(c->px->dns, c->host.name, conn_dns_done, c);
	return 0;
}

/*
 * --log-allowed: one egress.allowed event per plain-HTTP request and per
 * tunnel, with the bytes each way and how long it took.
 */
static void
conn_log_allowed(struct conn *c)
{
	struct proxy_event	ev;
	char			rule[512];

	if (!c->allowed_open)
		return;
	c->allowed_open = 0;
	if (!c->px->cfg.log_allowed)
		return;
	conn_event(c, &ev, "egress.allowed", SG_REASON_NONE, NULL, rule,
	    sizeof(rule));
	ev.resolved = c->resolved;
	ev.bytes_up = (long long)(c->bytes_up - c->req_up0);
	ev.bytes_down = (long long)(c->bytes_down - c->req_down0);
	ev.duration_ms = (long long)((util_now_us() - c->req_started_us) /
	    1000);
	proxy_log_event(c->px, &ev);
}

/*
 * A set in force is in report mode (staging): a would-be block is logged
 * as egress.would_block and let through, so an admin can run a task once
 * and see what it needs. Returns 1 when the request goes on.
 */
static int
conn_report_only(struct conn *c, enum sg_reason r)
{
	struct proxy_event	ev;
	char			msg[1024];
	int			priv;

	if (!conn_report_mode(c->pol->policy, &c->who))
		return 0;
	reason_message(msg, sizeof(msg), r, c->host.name, c->port, NULL, NULL);
	conn_event(c, &ev, "egress.would_block", r, msg, NULL, 0);
	if (proxy_log_event(c->px, &ev) == -1)
		return 0;	/* unlogged traffic never passes */
	/*
	 * A nearest entry names this very host (only its port, method or
	 * path missed), so its allow_private still says whether the host
	 * may sit on a private address: an internal mirror can be tried out
	 * in report mode. Without one the address checks stay strict.
	 */
	priv = c->match.entry != NULL && c->match.allow_private;
	memset(&c->match, 0, sizeof(c->match));
	c->match.tls = POLICY_TLS_OPTIONAL;
	c->match.allow_private = priv;
	return 1;
}

/* 1 when one of the client's sets is in report mode in policy p. */
static int
conn_report_mode(const struct policy *p, const struct proxy_client *who)
{
	size_t	i;

	for (i = 0; i < who->nsets; i++)
		if (policy_set_is_report(p, who->sets[i]))
			return 1;
	return 0;
}

/*
 * Refuse the current request: one security event, then the 403 (or a TLS
 * alert once the tunnel has been answered). Plain-HTTP requests without a
 * body keep the client connection for the next request.
 */
static int
conn_block(struct conn *c, enum sg_reason r, const char *sni,
    const char *addr)
{
	static const unsigned char alert[] = {	/* fatal access_denied */
		0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31
	};
	struct proxy_event	 ev;
	char			 msg[1024], rule[512];
	const char		*perr;
	char			*buf;
	size_t			 len;
	int			 keep;

	reason_message(msg, sizeof(msg), r, c->host.name, c->port, sni, addr);
	conn_event(c, &ev, "egress.blocked", r, msg, rule, sizeof(rule));
	ev.sni = sni;
	ev.resolved = addr;
	c->px->stats.requests_blocked[r]++;
	proxy_log_event(c->px, &ev);
	c->allowed_open = 0;
	if (c->state == CONN_HELLO || c->state == CONN_TUNNEL) {
		bufferevent_write(c->client, alert, sizeof(alert));
		return conn_finish(c);
	}
	perr = r == SG_REASON_PRIVATE_ADDRESS ? "destination_ip_prohibited" :
	    "http_request_denied";
	keep = !c->is_connect && c->client_keep_alive &&
	    http_request_body(&c->req) == HTTP_BODY_NONE;
	buf = http_block_response(403, msg, r, perr, keep, &len);
	if (conn_send(c, buf, len) == -1)
		return -1;
	if (!keep)
		return conn_finish(c);
	return conn_next_request(c);
}

/*
 * The addresses of the destination: every one must be public, unless the
 * entry allows private ones; the proxy's own listeners never pass.
 */
static void
conn_dns_done(void *arg, int err, const char *errstr,
    const struct sockaddr_storage *addrs, size_t n)
{
	struct conn	*c = arg;
	char		 details[SG_HOST_MAX + 64];

	c->dnsreq = NULL;
	if (err != 0) {
		snprintf(details, sizeof(details), "cannot resolve %s: %s",
		    c->host.name, errstr);
		c->px->stats.upstream_errors++;
		conn_reply_error(c, 502, "dns_error", details);
		return;
	}
	memcpy(c->addrs, addrs, n * sizeof(*addrs));
	c->naddrs = n;
	c->addr_next = 0;
	if (conn_check_addrs(c) == -1)
		return;
	conn_set_state(c, CONN_CONNECT);
	conn_connect_next(c);
}

static int
conn_check_addrs(struct conn *c)
{
	struct sockaddr	*sa;
	enum addr_class	 cls;
	char		 a[INET6_ADDRSTRLEN];
	size_t		 i;

	c->up_private = 0;
	for (i = 0; i < c->naddrs; i++) {
		sa = (struct sockaddr *)&c->addrs[i];
		cls = addr_classify(sa);
		if (proxy_is_self(c->px, sa, c->port))
			cls = ADDR_SELF;
		if (cls == ADDR_PUBLIC)
			continue;
		c->up_private = 1;
		if (cls != ADDR_SELF && c->match.allow_private)
			continue;
		addr_to_string(sa, a, sizeof(a));
		conn_block(c, SG_REASON_PRIVATE_ADDRESS, NULL, a);
		return -1;
	}
	return 0;
}

/* Connect to the next resolved address. */
static int
conn_connect_next(struct conn *c)
{
	struct sockaddr	*sa = (struct sockaddr *)&c->addrs[c->addr_next++];
	socklen_t	 len = sa->sa_family == AF_INET6 ?
			    sizeof(struct sockaddr_in6) :
			    sizeof(struct sockaddr_in);

	if (sa->sa_family == AF_INET6)
		((struct sockaddr_in6 *)sa)->sin6_port = htons(c->port);
	else
		((struct sockaddr_in *)sa)->sin_port = htons(c->port);
	addr_to_string(sa, c->resolved, sizeof(c->resolved));
	c->upstream = bufferevent_socket_new(c->px->base, -1,
	    BEV_OPT_CLOSE_ON_FREE);
	if (c->upstream == NULL) {
		conn_free(c, "out of memory");
		return -1;
	}
	bufferevent_setcb(c->upstream, conn_upstream_read, conn_upstream_write,
	    conn_upstream_event, c);
	bufferevent_setwatermark(c->upstream, EV_READ, 0, PROXY_HIGH_WATER);
	conn_arm(c, c->px->cfg.connect_timeout_ms);
	if (bufferevent_socket_connect(c->upstream, sa, (int)len) == -1) {
		/* Immediate failure: the event callback has not run. */
		bufferevent_free(c->upstream);
		c->upstream = NULL;
		if (c->addr_next < c->naddrs)
			return conn_connect_next(c);
		c->px->stats.upstream_errors++;
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS)
			return conn_reply_error(c, 503, "proxy_internal_error",
			    "the proxy is out of sockets; try again later");
		return conn_reply_error(c, 502, "connection_refused",
		    "cannot connect upstream");
	}
	return 0;
}

/* The upstream is connected (or reused): start forwarding. */
static int
conn_connected(struct conn *c)
{
	static const char	 ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	int			 one = 1;

	if (c->state == CONN_CONNECT)	/* a new socket, not a kept one */
		setsockopt(bufferevent_getfd(c->upstream), IPPROTO_TCP,
		    TCP_NODELAY, &one, sizeof(one));
	c->up_host = c->host;
	c->up_port = c->port;
	c->up_reusable = 0;
	c->px->stats.requests_allowed++;
	c->allowed_open = 1;
	c->req_started_us = util_now_us();
	c->req_up0 = c->bytes_up;
	c->req_down0 = c->bytes_down;
	bufferevent_enable(c->upstream, EV_READ | EV_WRITE);
	if (c->is_connect) {
		bufferevent_write(c->client, ok, sizeof(ok) - 1);
		bufferevent_disable(c->upstream, EV_READ);
		if ((c->hello = sni_peek_new(c->px->sni_ctx)) == NULL) {
			conn_free(c, "out of memory");
			return -1;
		}
		conn_set_state(c, CONN_HELLO);
		conn_arm(c, c->px->cfg.hello_timeout_ms);
		bufferevent_enable(c->client, EV_READ);
		return conn_hello(c);
	}
	return conn_forward_head(c);
}

/*
 * Feed the client's new bytes to the ClientHello peek. Nothing goes
 * upstream until SNI is known and names the CONNECT host; the bytes stay
 * in the client's input buffer meanwhile and are forwarded as they are.
 */
static int
conn_hello(struct conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->client);
	size_t		 len = evbuffer_get_length(in);
	const char	*name;
	struct host	 sni;
	const char	*cause;
	unsigned char	*p;
	enum sni_result	 r;

	if (!c->tls_required) {
		conn_set_state(c, CONN_TUNNEL);
		goto tunnel;
	}
	if (len <= c->hello_fed)
		return 0;
	if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
		conn_free(c, "out of memory");
		return -1;
	}
	r = sni_peek_feed(c->hello, p + c->hello_fed, len - c->hello_fed);
	c->hello_fed = len;
	switch (r) {
	case SNI_MORE:
		return 0;
	case SNI_NOT_TLS:
		return conn_block(c, SG_REASON_NOT_TLS, NULL, NULL);
	case SNI_ERROR:
		return conn_block(c, SG_REASON_SNI_MISSING, NULL, NULL);
	case SNI_DONE:
		break;
	}
	if (sni_peek_ech(c->hello))
		return conn_block(c, SG_REASON_ECH, sni_peek_name(c->hello),
		    NULL);
	if ((name = sni_peek_name(c->hello)) == NULL) {
		if (c->host.type != HOST_DNS)
			goto ok;	/* clients send no SNI for IPs */
		return conn_block(c, SG_REASON_SNI_MISSING, NULL, NULL);
	}
	if (host_normalize(name, strlen(name), &sni, &cause) == -1 ||
	    !host_equal(&sni, &c->host))
		return conn_block(c, SG_REASON_SNI_MISMATCH, name, NULL);
ok:
	conn_set_state(c, CONN_TUNNEL);
tunnel:
	sni_peek_free(c->hello);
	c->hello = NULL;
	evtimer_del(c->timer);
	conn_arm(c, c->px->cfg.idle_timeout_ms);
	if (conn_start_splice(c) == 0)
		return 0;
	bufferevent_enable(c->upstream, EV_READ);
	bufferevent_enable(c->client, EV_READ);
	return conn_move(c, c->client, c->upstream, SIZE_MAX);
}

/*
 * Hand both sockets to the splice data path (tunnel.c): the bytes of the
 * tunnel then never pass through the proxy's memory. The ClientHello the
 * check read is written upstream first. Returns -1 (the bufferevents carry
 * on) when a side still has buffered output or splice can't be set up.
 */
static int
conn_start_splice(struct conn *c)
{
	struct tunnel_stats	 st;
	struct evbuffer		*in = bufferevent_get_input(c->client);
	size_t			 len = evbuffer_get_length(in);
	unsigned char		*pending = NULL;

	struct evbuffer		*owed = bufferevent_get_output(c->client);
	size_t			 nowed = evbuffer_get_length(owed);
	unsigned char		*down = NULL;

	/* The upstream has said nothing yet (its reading was off). */
	if (evbuffer_get_length(bufferevent_get_output(c->upstream)) != 0 ||
	    evbuffer_get_length(bufferevent_get_input(c->upstream)) != 0)
		return -1;
	if ((len > 0 && (pending = evbuffer_pullup(in, (ev_ssize_t)len)) ==
	    NULL) || (nowed > 0 && (down = evbuffer_pullup(owed,
	    (ev_ssize_t)nowed)) == NULL))
		return -1;
	st.bytes_up = &c->bytes_up;
	st.bytes_down = &c->bytes_down;
	st.total_up = &c->px->stats.bytes_up;
	st.total_down = &c->px->stats.bytes_down;
	st.last_activity_us = &c->last_activity_us;
	c->tun = tunnel_new(c->px->base, bufferevent_getfd(c->client),
	    bufferevent_getfd(c->upstream), pending, len, down, nowed, &st,
	    conn_tunnel_done, c);
	if (c->tun == NULL) {
		log_warn("conn %llu: no splice tunnel", c->id);
		return -1;
	}
	/* The tunnel owns the sockets now. */
	bufferevent_setfd(c->client, -1);
	bufferevent_free(c->client);
	c->client = NULL;
	bufferevent_setfd(c->upstream, -1);
	bufferevent_free(c->upstream);
	c->upstream = NULL;
	return 0;
}

static void
conn_tunnel_done(void *arg, const char *why)
{
	conn_free(arg, why);
}

/* Send the request head upstream and start the body and response. */
static int
conn_forward_head(struct conn *c)
{
	char	*head;
	size_t	 len;

	head = http_request_forward(&c->req, 0, &len);
	if (head == NULL) {
		conn_free(c, "out of memory");
		return -1;
	}
	bufferevent_write(c->upstream, head, len);
	free(head);
	c->req_body = http_request_body(&c->req);
	c->req_remaining = c->req.content_length > 0 ?
	    (uint64_t)c->req.content_length : 0;
	http_chunked_init(&c->req_chunked);
	c->req_done = c->req_body == HTTP_BODY_NONE ||
	    (c->req_body == HTTP_BODY_LENGTH && c->req_remaining == 0);
	c->resp_state = RESP_HEAD;
	c->close_after = !c->client_keep_alive || c->client_eof;
	conn_set_state(c, CONN_HTTP);
	conn_arm(c, c->px->cfg.idle_timeout_ms);
	bufferevent_enable(c->upstream, EV_READ);
	if (!c->req_done) {
		bufferevent_enable(c->client, EV_READ);
		return conn_request_body(c);
	}
	return 0;
}

/* Forward the request body, as framed, and no byte past it. */
static int
conn_request_body(struct conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->client);
	size_t		 len = evbuffer_get_length(in), n;
	const char	*cause;
	unsigned char	*p;

	if (len == 0 || c->req_done)
		return 0;
	if (c->req_body == HTTP_BODY_LENGTH) {
		n = len < c->req_remaining ? len : (size_t)c->req_remaining;
		c->req_remaining -= n;
		c->req_done = c->req_remaining == 0;
	} else {
		p = evbuffer_pullup(in, (ev_ssize_t)len);
		if (p == NULL) {
			conn_free(c, "out of memory");
			return -1;
		}
		switch (http_chunked_scan(&c->req_chunked, (const char *)p,
		    len, &n, &cause)) {
		case HTTP_PARSE_MORE:
			break;
		case HTTP_PARSE_OK:
			c->req_done = 1;
			break;
		case HTTP_PARSE_ERROR:
			c->close_after = 1;
			return conn_finish(c);
		}
	}
	conn_move(c, c->client, c->upstream, n);
	if (c->req_done) {
		bufferevent_disable(c->client, EV_READ);
		if (c->resp_state == RESP_DONE)
			return conn_request_complete(c);
	}
	return 0;
}

/* Bytes from the upstream while serving a plain-HTTP request. */
static int
conn_response(struct conn *c)
{
	struct evbuffer		*in = bufferevent_get_input(c->upstream);
	struct http_response	 resp;
	const char		*cause;
	unsigned char		*p;
	size_t			 len, hlen;
	char			*head;
	int			 status, flags;

	while (c->resp_state == RESP_HEAD) {
		len = evbuffer_get_length(in);
		if (len == 0)
			return 0;
		if (len > SG_HTTP_HEAD_MAX)
			len = SG_HTTP_HEAD_MAX;
		if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
			conn_free(c, "out of memory");
			return -1;
		}
		http_response_init(&resp);
		switch (http_response_parse((const char *)p, len, &resp,
		    &status, &cause)) {
		case HTTP_PARSE_MORE:
			return 0;
		case HTTP_PARSE_ERROR:
			c->px->stats.upstream_errors++;
			return conn_reply_error(c, 502, "http_response_incomplete",
			    cause);
		case HTTP_PARSE_OK:
			break;
		}
		evbuffer_drain(in, resp.head_len);
		if (resp.status >= 100 && resp.status < 200) {
			/* RFC 9110 15.2: never to an HTTP/1.0 client. */
			if (c->req.version_minor == 0) {
				http_response_release(&resp);
				continue;
			}
			head = http_response_forward(&resp, 0, &hlen);
			http_response_release(&resp);
			if (conn_send(c, head, hlen) == -1)
				return -1;
			continue;
		}
		c->resp_body = http_response_body(&resp, c->method);
		c->resp_keep_alive = resp.keep_alive &&
		    c->resp_body != HTTP_BODY_CLOSE;
		c->resp_remaining = resp.content_length > 0 ?
		    (uint64_t)resp.content_length : 0;
		http_chunked_init(&c->resp_chunked);
		if (c->resp_body == HTTP_BODY_CLOSE)
			c->close_after = 1;
		flags = c->close_after ? HTTP_FWD_CLOSE :
		    c->req.version_minor == 0 ? HTTP_FWD_KEEP_ALIVE : 0;
		head = http_response_forward(&resp, flags, &hlen);
		http_response_release(&resp);
		if (conn_send(c, head, hlen) == -1)
			return -1;
		c->bytes_down += hlen;
		c->resp_state = RESP_BODY;
		if (c->resp_body == HTTP_BODY_NONE ||
		    (c->resp_body == HTTP_BODY_LENGTH && c->resp_remaining == 0))
			c->resp_state = RESP_DONE;
	}
	if (c->resp_state == RESP_BODY && conn_response_body(c) == -1)
		return -1;
	if (c->resp_state == RESP_DONE) {
		if (!c->req_done) {
			/* Answered before the body was sent: don't reuse. */
			c->close_after = 1;
			return conn_finish(c);
		}
		return conn_request_complete(c);
	}
	return 0;
}

static int
conn_response_body(struct conn *c)
{
	struct evbuffer	*in = bufferevent_get_input(c->upstream);
	size_t		 len = evbuffer_get_length(in), n = len;
	const char	*cause;
	unsigned char	*p;

	if (len == 0)
		return 0;
	if (c->resp_body == HTTP_BODY_LENGTH) {
		n = len < c->resp_remaining ? len : (size_t)c->resp_remaining;
		c->resp_remaining -= n;
		if (c->resp_remaining == 0)
			c->resp_state = RESP_DONE;
	} else if (c->resp_body == HTTP_BODY_CHUNKED) {
		if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
			conn_free(c, "out of memory");
			return -1;
		}
		switch (http_chunked_scan(&c->resp_chunked, (const char *)p,
		    len, &n, &cause)) {
		case HTTP_PARSE_MORE:
			break;
		case HTTP_PARSE_OK:
			c->resp_state = RESP_DONE;
			break;
		case HTTP_PARSE_ERROR:
			c->close_after = 1;
			return conn_finish(c);
		}
	}
	conn_move(c, c->upstream, c->client, n);
	return 0;
}

/* Request and response are both done: next request, or close. */
static int
conn_request_complete(struct conn *c)
{
	conn_log_allowed(c);
	if (c->close_after)
		return conn_finish(c);
	c->up_reusable = c->resp_keep_alive &&
	    evbuffer_get_length(bufferevent_get_input(c->upstream)) == 0;
	if (!c->up_reusable)
		conn_drop_upstream(c);
	return conn_next_request(c);
}

/*
 * Wait for the next request on a kept-alive connection. A pipelined head
 * already buffered is parsed from a deferred read callback, not from
 * here, so a long pipeline never recurses.
 */
static int
conn_next_request(struct conn *c)
{
	if (c->client_eof)
		return conn_finish(c);
	conn_reset_request(c);
	if (evbuffer_get_length(bufferevent_get_input(c->client)) > 0)
		bufferevent_trigger(c->client, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
	return 0;
}

/* Forget the current request and wait for the next head. */
static void
conn_reset_request(struct conn *c)
{
	http_request_release(&c->req);
	proxy_policy_unref(c->pol);
	c->pol = NULL;
	memset(&c->match, 0, sizeof(c->match));
	c->hostport[0] = '\0';
	c->host.name[0] = '\0';
	c->method[0] = '\0';
	c->port = 0;
	c->head_started = 0;
	conn_set_state(c, CONN_HEAD);
	conn_arm(c, c->px->cfg.keepalive_timeout_ms);
	c->keepalive_wait = 1;
	if (!c->client_eof)
		bufferevent_enable(c->client, EV_READ);
	bufferevent_setwatermark(c->client, EV_WRITE, 0, 0);
}

static void
conn_drop_upstream(struct conn *c)
{
	if (c->upstream != NULL) {
		bufferevent_free(c->upstream);
		c->upstream = NULL;
	}
	c->up_reusable = 0;
}

void
conn_drain_idle(struct proxy *px)
{
	struct conn	*c, *next;

	for (c = px->conns; c != NULL; c = next) {
		next = c->next;
		if (c->state == CONN_HEAD && !c->head_started)
			conn_free(c, "draining");
	}
}

unsigned
conn_revoke(struct proxy *px)
{
	struct policy_query	 q;
	struct proxy_event	 ev;
	struct conn		*c, *next;
	char			 msg[1024];
	unsigned		 n = 0;
	enum sg_reason		 r;

	for (c = px->conns; c != NULL; c = next) {
		next = c->next;
		if (c->state != CONN_TUNNEL && c->state != CONN_HELLO)
			continue;
		memset(&q, 0, sizeof(q));
		q.host = &c->host;
		q.port = c->port;
		q.method = c->method;
		q.sets = c->who.sets;
		q.nsets = c->who.nsets;
		q.now = time(NULL);
		r = policy_decide(px->policy->policy, &q, NULL);
		/*
		 * A client with a set in report mode would be let through
		 * again (conn_report_only), so its tunnels stay open.
		 */
		if (r == SG_REASON_NONE ||
		    conn_report_mode(px->policy->policy, &c->who))
			continue;
		reason_message(msg, sizeof(msg), r, c->host.name, c->port,
		    NULL, NULL);
		conn_event(c, &ev, "egress.revoked", r, msg, NULL, 0);
		ev.resolved = c->resolved;
		ev.policy_digest = policy_digest(px->policy->policy);
		ev.bytes_up = (long long)c->bytes_up;
		ev.bytes_down = (long long)c->bytes_down;
		ev.duration_ms = (long long)((util_now_us() - c->started_us) /
		    1000);
		proxy_log_event(px, &ev);
		conn_free(c, "revoked by policy reload");
		n++;
	}
	return n;
}

unsigned
conn_count(const struct proxy *px)
{
	return (unsigned)px->stats.conns_open;
}
