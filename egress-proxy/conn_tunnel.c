/*
 * conn_tunnel.c: a CONNECT tunnel, from the "200 Connection established"
 * to its close. The tunnel module (tunnel.h) is the one data path; this
 * file is its filter, which decides what the tunnel carries from the
 * client's first bytes:
 *
 *   0x16 (a TLS handshake record): every ClientHello is checked until the
 *        server's ServerHello (tlsseq.h), whatever the entry's tls says;
 *        then both ways are spliced.
 *   an HTTP request, on an entry with tls: optional: plain HTTP. Each
 *        request's head is read before a byte of it goes on: its Host
 *        (and an absolute-form target) must name the CONNECT host and
 *        port, and it must parse as http.h parses any request; its body
 *        goes on as framed. The answers are spliced back.
 *   anything else: refused (not_tls).
 *
 * A refusal inside the tunnel is one egress.blocked event and then a TLS
 * alert (TLS), or the answers to the requests already let through
 * followed by a 403 (plain HTTP).
 */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>

#include "conn_int.h"
#include "log.h"
#include "tlsseq.h"
#include "tunnel.h"
#include "util.h"

/* How long a refusal may take to reach the client. */
#define CONN_REFUSE_TIMEOUT_MS	10000

static enum tunnel_verdict conn_tunnel_filter(void *, enum tunnel_way,
		    const unsigned char *, size_t, size_t *);
static enum tunnel_verdict conn_tunnel_first(struct conn *,
		    const unsigned char *, size_t, size_t *);
static enum tunnel_verdict conn_tunnel_tls(struct conn *, enum tunnel_way,
		    const unsigned char *, size_t, size_t *);
static enum tunnel_verdict conn_tunnel_http(struct conn *,
		    const unsigned char *, size_t, size_t *);
static int	conn_tunnel_http_head(struct conn *, const unsigned char *,
		    size_t, size_t *);
static size_t	conn_tunnel_http_body(struct conn *, const unsigned char *,
		    size_t, int *);
static int	conn_tunnel_same_host(struct conn *, const char *, size_t);
static enum tunnel_verdict conn_tunnel_block(struct conn *, enum sg_reason,
		    const char *sni, int status, const char *cause);
static void	conn_tunnel_done(void *, const char *, int);
static int	conn_tunnel_head_timer(struct conn *, uint64_t);
static void	conn_tunnel_head_started(struct conn *);

/*
 * Hand both sockets to the tunnel, with the 200 owed to the client as its
 * first bytes, and client bytes read after the CONNECT head (a pipelined
 * ClientHello) as the first bytes its filter sees. When no tunnel can be
 * set up the CONNECT is refused with 503 and an event: there is no second
 * relay path.
 */
int
conn_tunnel_start(struct conn *c)
{
	static const char	 ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
	struct tunnel_stats	 st;
	struct evbuffer		*in = bufferevent_get_input(c->client);
	size_t			 nin = evbuffer_get_length(in);
	unsigned char		*early = NULL;

	if (nin > 0 && (early = evbuffer_pullup(in, (ev_ssize_t)nin)) ==
	    NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	st.bytes_up = &c->r.bytes_up;
	st.bytes_down = &c->r.bytes_down;
	st.total_up = &c->px->stats.bytes_up;
	st.total_down = &c->px->stats.bytes_down;
	st.last_activity_us = &c->last_activity_us;
	c->tun = tunnel_new(c->px->base, bufferevent_getfd(c->client),
	    bufferevent_getfd(c->upstream), ok, sizeof(ok) - 1, early, nin,
	    &st, conn_tunnel_filter, conn_tunnel_done, c);
	if (c->tun == NULL) {
		log_warn("conn %llu: no tunnel to %s", c->id, c->r.hostport);
		c->px->stats.requests_allowed--;
		return conn_block(c, SG_REASON_PROXY_UNAVAILABLE, NULL, NULL);
	}
	c->r.replied = 1;
	c->tmode = CONN_TMODE_FIRST;
	/* The tunnel owns the sockets now. */
	bufferevent_setfd(c->client, -1);
	conn_bev_free(c, c->client);
	c->client = NULL;
	bufferevent_setfd(c->upstream, -1);
	conn_bev_free(c, c->upstream);
	c->upstream = NULL;
	conn_set_state(c, CONN_TUNNEL);
	return 0;
}

/* Free what the tunnel side of a connection holds (conn_free). */
void
conn_tunnel_release(struct conn *c)
{
	tunnel_free(c->tun);
	c->tun = NULL;
	tlsseq_free(c->tls);
	c->tls = NULL;
}

/*
 * The tunnel's deadline: a refusal that did not get out, a handshake (or
 * a first request) that did not come in time, or no byte for too long.
 */
void
conn_tunnel_timer(struct conn *c)
{
	const struct proxy_config	*cfg = &c->px->cfg;
	uint64_t			 now = util_now_us(), ms;

	if (c->refusing) {
		conn_free(c, CONN_CLOSE_TUNNEL_REFUSED, "refusal timed out");
		return;
	}
	if (c->tmode == CONN_TMODE_FIRST || c->tmode == CONN_TMODE_TLS) {
		ms = (now - c->tun_started_us) / 1000;
		if (ms >= cfg->hello_timeout_ms) {
			conn_free(c, CONN_CLOSE_HANDSHAKE_TIMEOUT, NULL);
			return;
		}
		conn_arm(c, cfg->hello_timeout_ms - (unsigned)ms);
		return;
	}
	if (c->tmode == CONN_TMODE_HTTP && c->thead_us != 0 &&
	    conn_tunnel_head_timer(c, now))
		return;
	ms = (now - c->last_activity_us) / 1000;
	if (ms >= cfg->idle_timeout_ms) {
		conn_free(c, CONN_CLOSE_IDLE_TIMEOUT, NULL);
		return;
	}
	ms = cfg->idle_timeout_ms - ms;
	if (c->tmode == CONN_TMODE_HTTP && c->thead_us != 0 &&
	    cfg->head_timeout_ms - (now - c->thead_us) / 1000 < ms)
		ms = cfg->head_timeout_ms - (now - c->thead_us) / 1000;
	conn_arm(c, (unsigned)ms);
}

/*
 * A plain-HTTP request head in the tunnel gets --head-timeout for the
 * whole head, as at top level: the idle timer restarts on every byte, so
 * a head trickled a line at a time would hold the slot (and the upstream
 * socket) for ever. Past it the client gets 408 and the tunnel closes
 * at once: the refusal does not drain (wait for the upstream to answer
 * what it was sent, then close), since an upstream that holds its socket
 * open would keep the slot CONN_REFUSE_TIMEOUT_MS more and the 408 from
 * the client. Answers still owed to a client that trickles a head are
 * lost with it. 1 when it did.
 */
static int
conn_tunnel_head_timer(struct conn *c, uint64_t now)
{
	char	*buf;
	size_t	 len;

	if ((now - c->thead_us) / 1000 < c->px->cfg.head_timeout_ms)
		return 0;
	c->thead_us = 0;
	buf = http_error_response(408, "http_request_error",
	    "request head not received in time", 0, &len);
	if (buf == NULL || tunnel_refuse(c->tun, buf, len, 0) == -1) {
		free(buf);
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return 1;
	}
	free(buf);
	c->refusing = 1;
	conn_arm(c, CONN_REFUSE_TIMEOUT_MS);
	return 1;
}

static void
conn_tunnel_done(void *arg, const char *why, int error)
{
	struct conn	*c = arg;

	conn_free(c, c->refusing ? CONN_CLOSE_TUNNEL_REFUSED : error ?
	    CONN_CLOSE_TUNNEL_ERROR : CONN_CLOSE_TUNNEL_CLOSED, why);
}

/*
 * Refuse inside the tunnel: one event, then a TLS alert (fatal
 * access_denied) at once, or for plain HTTP a response with status
 * (403, or the parser's status) after the answers already owed.
 */
static enum tunnel_verdict
conn_tunnel_block(struct conn *c, enum sg_reason r, const char *sni,
    int status, const char *cause)
{
	static const unsigned char alert[] = {
		0x15, 0x03, 0x03, 0x00, 0x02, 0x02, 0x31
	};
	struct proxy_event	 ev;
	char			 msg[1024], rule[512], *buf = NULL;
	size_t			 len = sizeof(alert);
	int			 http = c->tmode == CONN_TMODE_HTTP, rc;

	if (cause != NULL)
		snprintf(msg, sizeof(msg), SG_BLOCK_PREFIX "malformed request "
		    "(%s)", cause);
	else
		reason_message(msg, sizeof(msg), r, c->r.host.name, c->r.port,
		    sni, NULL);
	conn_run_refresh(c);
	conn_event(c, &ev, "egress.blocked", r, msg, rule, sizeof(rule));
	ev.sni = sni;
	ev.resolved = c->r.resolved;
	c->px->stats.requests_blocked[r]++;
	proxy_log_block(c->px, &ev);
	c->r.allowed_open = 0;
	if (http) {
		buf = http_block_response(status, msg, r, r ==
		    SG_REASON_MALFORMED_REQUEST ? "http_protocol_error" :
		    "http_request_denied", 0, &len);
		if (buf == NULL) {
			conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
			return TUNNEL_STOP;
		}
	}
	rc = tunnel_refuse(c->tun, http ? (const void *)buf : alert, len, http);
	free(buf);
	if (rc == -1) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return TUNNEL_STOP;
	}
	c->refusing = 1;
	conn_arm(c, CONN_REFUSE_TIMEOUT_MS);
	return TUNNEL_MORE;
}

/* The tunnel shows bytes of one way: what may go on? */
static enum tunnel_verdict
conn_tunnel_filter(void *arg, enum tunnel_way way, const unsigned char *buf,
    size_t len, size_t *ok)
{
	struct conn	*c = arg;

	*ok = 0;
	switch (c->tmode) {
	case CONN_TMODE_FIRST:
		if (way == TUNNEL_DOWN)
			return TUNNEL_MORE;	/* held until the client speaks */
		return conn_tunnel_first(c, buf, len, ok);
	case CONN_TMODE_TLS:
		return conn_tunnel_tls(c, way, buf, len, ok);
	case CONN_TMODE_HTTP:
		if (way == TUNNEL_DOWN)
			return TUNNEL_SPLICE;
		return conn_tunnel_http(c, buf, len, ok);
	case CONN_TMODE_SPLICED:
		break;
	}
	return TUNNEL_SPLICE;
}

/* The client's first bytes say what the tunnel carries. */
static enum tunnel_verdict
conn_tunnel_first(struct conn *c, const unsigned char *buf, size_t len,
    size_t *ok)
{
	if (buf[0] == 0x16) {
		if ((c->tls = tlsseq_new(c->px->sni_ctx, &c->r.host)) == NULL) {
			conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
			return TUNNEL_STOP;
		}
		c->tmode = CONN_TMODE_TLS;
		return conn_tunnel_tls(c, TUNNEL_UP, buf, len, ok);
	}
	if (!c->tls_required && buf[0] >= 'A' && buf[0] <= 'Z') {
		c->tmode = CONN_TMODE_HTTP;
		tunnel_splice(c->tun, TUNNEL_DOWN);
		conn_arm(c, c->px->cfg.idle_timeout_ms);
		return conn_tunnel_http(c, buf, len, ok);
	}
	return conn_tunnel_block(c, SG_REASON_NOT_TLS, NULL, 0, NULL);
}

/* TLS: each ClientHello, and the server's bytes up to its ServerHello. */
static enum tunnel_verdict
conn_tunnel_tls(struct conn *c, enum tunnel_way way, const unsigned char *buf,
    size_t len, size_t *ok)
{
	enum tlsseq_result	res;

	res = way == TUNNEL_UP ? tlsseq_client(c->tls, buf, len, ok) :
	    tlsseq_server(c->tls, buf, len, ok);
	switch (res) {
	case TLSSEQ_MORE:
		return TUNNEL_MORE;
	case TLSSEQ_DONE:
		log_debug("conn %llu: ServerHello after %u ClientHello(s), "
		    "%u retry request(s): splicing", c->id,
		    tlsseq_hellos(c->tls), tlsseq_retries(c->tls));
		c->tmode = CONN_TMODE_SPLICED;
		tunnel_splice(c->tun, TUNNEL_UP);
		conn_arm(c, c->px->cfg.idle_timeout_ms);
		return TUNNEL_SPLICE;
	case TLSSEQ_REFUSE:
		break;
	}
	*ok = 0;
	return conn_tunnel_block(c, tlsseq_reason(c->tls),
	    tlsseq_name(c->tls), 0, NULL);
}

/*
 * Plain HTTP in the tunnel: clear each request's head once it is checked,
 * then its body as framed. A request that fails is refused after the
 * ones before it are answered.
 */
static enum tunnel_verdict
conn_tunnel_http(struct conn *c, const unsigned char *buf, size_t len,
    size_t *ok)
{
	size_t	off = 0, n;
	int	body_ok = 1;

	while (off < len) {
		if (c->tbody != HTTP_BODY_NONE) {
			n = conn_tunnel_http_body(c, buf + off, len - off,
			    &body_ok);
			off += n;
			if (!body_ok) {
				*ok = off;
				return conn_tunnel_block(c,
				    SG_REASON_MALFORMED_REQUEST, NULL, 400,
				    "invalid chunked body");
			}
			if (c->tbody != HTTP_BODY_NONE)
				break;
			continue;
		}
		if (conn_tunnel_http_head(c, buf + off, len - off, &n) == -1) {
			*ok = off;
			return TUNNEL_MORE;	/* refused: the block is set */
		}
		if (n == 0) {		/* the head is not complete yet */
			conn_tunnel_head_started(c);
			break;
		}
		c->thead_us = 0;
		off += n;
	}
	*ok = off;
	return TUNNEL_MORE;
}

/*
 * 1 when an authority a client wrote ("Host: ...", or an absolute URI's;
 * len bytes at a) names the CONNECT host and port: spelled as the CONNECT
 * target or as its normalized form it does at once, else after
 * normalization (a missing port is the CONNECT port).
 */
static int
conn_tunnel_same_host(struct conn *c, const char *a, size_t len)
{
	struct host	 h;
	uint16_t	 port;
	const char	*cause;

	if (!host_is_ascii(a, len))		/* the upstream gets it raw */
		return 0;
	if ((len == strlen(c->r.req.authority) &&
	    strncasecmp(a, c->r.req.authority, len) == 0) ||
	    (len == strlen(c->r.hostport) &&
	    strncasecmp(a, c->r.hostport, len) == 0))
		return 1;
	return host_parse_authority(a, len, c->r.port, &h, &port,
	    &cause) == 0 && host_equal(&h, &c->r.host) && port == c->r.port;
}

/* A plain-HTTP head is pending: its deadline runs from its first byte. */
static void
conn_tunnel_head_started(struct conn *c)
{
	const struct proxy_config	*cfg = &c->px->cfg;

	if (c->thead_us != 0)
		return;
	c->thead_us = util_now_us();
	conn_arm(c, cfg->head_timeout_ms < cfg->idle_timeout_ms ?
	    cfg->head_timeout_ms : cfg->idle_timeout_ms);
}

/*
 * One request head at buf: *used is its length once it is complete and
 * passed (0 while incomplete). Returns -1 when it was refused. The head
 * is checked where it lies (http_request_scan(): every rule of
 * http_request_parse(), nothing copied), since its bytes go on as sent.
 */
static int
conn_tunnel_http_head(struct conn *c, const unsigned char *buf, size_t len,
    size_t *used)
{
	struct http_request_view	 req;
	const char			*cause;
	int				 status, bad;

	*used = 0;
	switch (http_request_scan((const char *)buf, len, &req, &status,
	    &cause)) {
	case HTTP_PARSE_MORE:
		return 0;
	case HTTP_PARSE_ERROR:
		conn_tunnel_block(c, SG_REASON_MALFORMED_REQUEST, NULL, status,
		    cause);
		return -1;
	case HTTP_PARSE_OK:
		break;
	}
	/* The Host (required), and an absolute URI, name the CONNECT host. */
	bad = req.host == NULL || req.form == HTTP_TARGET_AUTHORITY ||
	    !conn_tunnel_same_host(c, req.host, req.host_len) ||
	    (req.form == HTTP_TARGET_ABSOLUTE &&
	    !conn_tunnel_same_host(c, req.authority, req.authority_len));
	if (bad) {
		conn_tunnel_block(c, SG_REASON_HOST_MISMATCH, NULL, 403, NULL);
		return -1;
	}
	c->tbody = http_request_view_body(&req);
	c->tbody_left = req.content_length > 0 ?
	    (uint64_t)req.content_length : 0;
	http_chunked_init(&c->tbody_chunked);
	*used = req.head_len;
	return 0;
}

/* Body bytes at buf that belong to the request; *okp 0 on a bad chunk. */
static size_t
conn_tunnel_http_body(struct conn *c, const unsigned char *buf, size_t len,
    int *okp)
{
	const char	*cause;
	size_t		 n = 0;

	*okp = 1;
	if (c->tbody == HTTP_BODY_LENGTH) {
		n = len < c->tbody_left ? len : (size_t)c->tbody_left;
		c->tbody_left -= n;
		if (c->tbody_left == 0)
			c->tbody = HTTP_BODY_NONE;
		return n;
	}
	switch (http_chunked_scan(&c->tbody_chunked, (const char *)buf, len,
	    &n, &cause)) {
	case HTTP_PARSE_MORE:
		break;
	case HTTP_PARSE_OK:
		c->tbody = HTTP_BODY_NONE;
		break;
	case HTTP_PARSE_ERROR:
		*okp = 0;
		return 0;
	}
	return n;
}

/*
 * After a reload the tunnel's host and port are still allowed by entry
 * m; is what the tunnel does still allowed? An entry that lost
 * allow_private while the tunnel goes to a private address, or that now
 * requires TLS of a tunnel carrying plain HTTP, revokes it.
 */
enum sg_reason
conn_tunnel_recheck(struct conn *c, const struct policy_match *m)
{
	if (c->up_private && !m->allow_private)
		return SG_REASON_PRIVATE_ADDRESS;
	if (m->tls == POLICY_TLS_REQUIRED) {
		if (c->tmode == CONN_TMODE_HTTP)
			return SG_REASON_NOT_TLS;
		c->tls_required = 1;
	}
	return SG_REASON_NONE;
}
