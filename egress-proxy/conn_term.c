/*
 * conn_term.c: a terminated session (an entry with tls: terminate). The
 * CONNECT is answered 200, the client's TLS is ended with a certificate
 * the sandgate CA mints for the CONNECT host (tlsca.h) after its
 * ClientHello named that host (tlsterm.h), and the connection goes back
 * to reading request heads, now through TLS. Each request inside is an
 * origin-form HTTP/1.1 request whose Host must name the CONNECT host; it
 * is decided, forwarded and answered by the same code as a plain-HTTP
 * request (conn.c, conn_http.c), over an upstream connection this file
 * wraps in the proxy's own verified TLS.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>

#include "addr.h"
#include "conn_int.h"
#include "log.h"
#include "secret.h"
#include "tlsca.h"
#include "tlsterm.h"
#include "uppool.h"
#include "util.h"

/* What a TLS filter may leave in its socket's output, encrypted. */
#define CONN_TERM_UNDER_HIGH	(64 * 1024)

static struct bufferevent *conn_term_wrap(struct conn *,
		    struct bufferevent *, SSL *, enum bufferevent_ssl_state);
static char	*conn_term_key(const struct conn *, const char *addr);
static void	 conn_term_attach(struct conn *, struct bufferevent *);
static void	 conn_term_stamp(struct conn *, char *key, const char *addr);
static void	 conn_term_refused(struct conn *, enum sg_reason,
		    const char *);

/*
 * Put a TLS filter over bev (which it then owns): bev's buffers leave the
 * client's budget and the filter's join it. NULL when out of memory (bev
 * and ssl are then freed).
 */
static struct bufferevent *
conn_term_wrap(struct conn *c, struct bufferevent *bev, SSL *ssl,
    enum bufferevent_ssl_state st)
{
	struct bufferevent	*tls;

	conn_bev_unwatch(c, bev);
	/*
	 * The filter encrypts into bev's output only while that is under
	 * its write high watermark; past it what is owed stays in the
	 * filter's output, which the budget and the back-pressure see.
	 * Without one a peer that stops reading let the other side fill
	 * bev's output without bound.
	 */
	bufferevent_setwatermark(bev, EV_WRITE, 0, CONN_TERM_UNDER_HIGH);
	tls = bufferevent_openssl_filter_new(c->px->base, bev, ssl, st,
	    BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS);
	if (tls == NULL) {
		SSL_free(ssl);
		bufferevent_free(bev);
		return NULL;
	}
	/* A peer that closes without close_notify has still closed. */
	bufferevent_openssl_set_allow_dirty_shutdown(tls, 1);
	conn_bev_watch(c, tls);
	return tls;
}

/*
 * The CONNECT matched a tls: terminate entry: answer 200 and take the
 * client's TLS. 0, or -1 when the connection was freed.
 */
int
conn_term_start(struct conn *c)
{
	static const char	 ok[] =
	    "HTTP/1.1 200 Connection established\r\n\r\n";
	const char		*why;
	SSL			*ssl;

	if (c->px->ca == NULL || c->px->term == NULL)
		return conn_block(c, SG_REASON_TERMINATION_UNAVAILABLE, NULL, NULL);
	c->term_host = c->r.host;
	c->term_port = c->r.port;
	c->term_hello.expected = &c->term_host;
	if ((ssl = tlsterm_accept_ssl(c->px->term, &c->term_hello)) == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	if (tlsca_use(c->px->ca, ssl, c->term_host.name, time(NULL),
	    &why) == -1) {
		SSL_free(ssl);
		log_warnx("conn %llu: no certificate for %s: %s", c->id,
		    c->term_host.name, why);
		return conn_block(c, SG_REASON_TERMINATION_UNAVAILABLE, NULL, NULL);
	}
	if (conn_send(c, util_xstrdup(ok), sizeof(ok) - 1) == -1) {
		SSL_free(ssl);
		return -1;
	}
	if ((c->client = conn_term_wrap(c, c->client, ssl,
	    BUFFEREVENT_SSL_ACCEPTING)) == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	c->term = 1;
	conn_client_attach(c);
	if (conn_next_request(c) == -1)
		return -1;
	/*
	 * The handshake runs under the hello timeout and the first request
	 * under the head timeout (conn_term_client_done()), never the
	 * keep-alive wait of a session that has had a request.
	 */
	if (c->state == CONN_HEAD && !c->head_started) {
		c->keepalive_wait = 0;
		conn_arm(c, c->px->cfg.hello_timeout_ms);
	}
	return 0;
}

/*
 * The client's handshake ended: count it, or on failure log why: a
 * ClientHello naming another host is a block like a spliced tunnel's,
 * and a handshake OpenSSL refused (plain HTTP in the tunnel, a client
 * that does not trust the sandgate CA and says so with an alert) is
 * client_tls_failed with OpenSSL's words, so the agent and the log learn
 * why its request never came. A client that just left says nothing.
 */
void
conn_term_client_done(struct conn *c, short what)
{
	char		 detail[256];
	const char	*words;
	unsigned long	 err;

	if (what & BEV_EVENT_CONNECTED) {
		c->term_ready = 1;
		if (c->state == CONN_HEAD && !c->head_started &&
		    !c->keepalive_wait)
			conn_arm(c, c->px->cfg.head_timeout_ms);
		return;
	}
	if (c->term_ready)
		return;
	if (c->term_hello.reason != SG_REASON_NONE) {
		conn_term_refused(c, c->term_hello.reason, NULL);
		return;
	}
	if ((err = bufferevent_get_openssl_error(c->client)) == 0)
		return;
	words = ERR_reason_error_string(err);
	snprintf(detail, sizeof(detail), "%s", words != NULL ? words :
	    "TLS error");
	ERR_clear_error();
	conn_term_refused(c, SG_REASON_CLIENT_TLS, detail);
}

/* Log and count a terminated session refused before its first request. */
static void
conn_term_refused(struct conn *c, enum sg_reason r, const char *detail)
{
	char	msg[1024];
	char	rule[512];
	struct proxy_event ev;

	reason_message(msg, sizeof(msg), r, c->term_host.name, c->term_port,
	    c->term_hello.name, detail);
	conn_event(c, &ev, "egress.blocked", r, msg, rule, sizeof(rule));
	ev.method = "CONNECT";
	ev.sni = c->term_hello.name;
	c->px->stats.requests_blocked[r]++;
	proxy_log_block(c->px, &ev);
}

/*
 * A request head inside the session: origin-form, and a Host naming the
 * CONNECT host (its port may be left out when it is the CONNECT port),
 * then the policy's decision on its method and path. 0, or -1 when freed.
 */
int
conn_term_request(struct conn *c)
{
	struct http_request	*q = &c->r.req;
	struct host		 hh;
	uint16_t		 hport;
	const char		*cause;

	c->r.is_connect = 0;	/* r.host and r.port: conn_req_reset() */
	if (q->form != HTTP_TARGET_ORIGIN)
		return conn_block_malformed(c, 400, "a request inside a "
		    "terminated session must be origin-form (\"/path\")");
	if (q->host == NULL)
		return conn_block_malformed(c, 400, "no Host field");
	if (!host_is_ascii(q->host, strlen(q->host)) ||
	    host_parse_authority(q->host, strlen(q->host), c->term_port,
	    &hh, &hport, &cause) == -1 || !host_equal(&hh, &c->term_host) ||
	    hport != c->term_port)
		return conn_block(c, SG_REASON_HOST_MISMATCH, NULL, NULL);
	return conn_decide(c);
}

/*
 * A new upstream socket is connected: start the proxy's own TLS to it,
 * verified against the system store and the entry's ca_file. 0, or -1
 * when freed.
 */
int
conn_term_upstream(struct conn *c)
{
	const struct policy_entry	*e = c->r.match.entry;
	const char			*why;
	SSL				*ssl;

	ssl = tlsterm_connect_ssl(c->px->term, &c->r.host, c->r.port,
	    e != NULL ? e->ca : NULL, &why);
	if (ssl == NULL) {
		conn_drop_upstream(c);
		return conn_block(c, SG_REASON_UPSTREAM_TLS, NULL, why);
	}
	if ((c->upstream = conn_term_wrap(c, c->upstream, ssl,
	    BUFFEREVENT_SSL_CONNECTING)) == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	conn_term_attach(c, c->upstream);
	conn_term_stamp(c, conn_term_key(c, c->r.resolved), c->r.resolved);
	return 0;
}

/*
 * The upstream now held is the current request's, opened or taken under
 * key (malloc'd, taken over) at addr, for the generation its request
 * was decided in: one opened after a change for a request decided
 * before it (under the old entry's ca_file and credential) is not
 * current, so it is never kept.
 */
static void
conn_term_stamp(struct conn *c, char *key, const char *addr)
{
	free(c->up_key);
	c->up_key = key;
	c->up_gen = c->r.gen;
	snprintf(c->up_addr, sizeof(c->up_addr), "%s", addr);
}

/* Make a verified upstream TLS filter the connection's. */
static void
conn_term_attach(struct conn *c, struct bufferevent *bev)
{
	c->upstream = bev;
	c->up_tls = 1;
	bufferevent_setcb(bev, conn_upstream_read, conn_upstream_write,
	    conn_upstream_event, c);
	bufferevent_setwatermark(bev, EV_READ, 0, PROXY_HIGH_WATER);
	bufferevent_enable(bev, EV_READ | EV_WRITE);
}

/*
 * The pool key (uppool.h) of the current request's upstream at addr:
 * whose it is (sandbox, client address), what allowed it (the upstream
 * generation, which a reload, a secret load, a revoke and a registry
 * change each bump, and the entry by its set, line and column: never an
 * address, which a later policy's allocation may reuse), where it goes
 * (host, port, address), how it was verified (the entry's ca_file; the
 * rest of tlsterm.h's checks are the same for every connection) and the
 * credential the entry sets (header and secret name). See
 * docs/proxy.md, "Upstream connection reuse". malloc'd.
 */
static char *
conn_term_key(const struct conn *c, const char *addr)
{
	const struct policy_entry	*e = c->r.match.entry;
	char				 client[INET6_ADDRSTRLEN];
	char				*key;

	addr_to_string((const struct sockaddr *)&c->client_addr, client,
	    sizeof(client));
	util_xasprintf(&key, "sandbox=%s client=%s gen=%llu entry=%s:%d:%d "
	    "up=%s:%u addr=%s ca_file=%s cred=%s:%s",
	    c->who.sandbox != NULL ? c->who.sandbox : "-", client,
	    c->r.gen, e != NULL ? e->set->name : "-",
	    e != NULL ? e->line : 0, e != NULL ? e->col : 0,
	    c->r.host.name, c->r.port, addr,
	    e != NULL && e->ca_file != NULL ? e->ca_file : "-",
	    e != NULL && e->cred_header != NULL ? e->cred_header : "-",
	    e != NULL && e->cred_secret != NULL ? e->cred_secret : "-");
	return key;
}

/*
 * 1 when the session's upstream was opened in the current generation:
 * no reload, secret load, revoke or registry change since, even one
 * that came while a request was in flight on it.
 */
int
conn_term_current(const struct conn *c)
{
	return c->up_key != NULL && c->up_gen == c->px->upstream_gen;
}

/*
 * 1 when the session's kept upstream may carry the current request: it
 * is current and its key is the one this request would open or take a
 * connection under at its address, so the request's own entry (its
 * ca_file, its credential) verified it, not an earlier request's.
 */
int
conn_term_fits(const struct conn *c)
{
	char	*key;
	int	 same;

	if (!conn_term_current(c))
		return 0;
	key = conn_term_key(c, c->up_addr);
	same = strcmp(key, c->up_key) == 0;
	free(key);
	return same;
}

/*
 * The request's addresses passed their checks: take a kept upstream
 * connection to one of them, for this request's key, instead of
 * connecting. 1 when one was taken (c->upstream set), else 0.
 */
int
conn_term_reuse(struct conn *c)
{
	struct bufferevent	*bev = NULL;
	char			 a[INET6_ADDRSTRLEN];
	char			*key = NULL;
	size_t			 i;

	if (c->px->uppool == NULL)
		return 0;
	for (i = 0; i < c->r.naddrs && bev == NULL; i++) {
		free(key);
		addr_to_string((struct sockaddr *)&c->addrs[i], a, sizeof(a));
		key = conn_term_key(c, a);
		bev = uppool_take(c->px->uppool, key);
	}
	if (bev == NULL) {
		free(key);
		return 0;
	}
	snprintf(c->r.resolved, sizeof(c->r.resolved), "%s", a);
	c->r.addr_next = i;
	c->r.up_pooled = 1;
	conn_sockbuf_cap(bufferevent_getfd(bufferevent_get_underlying(bev)),
	    c->sockbuf_extra, 0);
	conn_bev_watch(c, bev);
	conn_term_attach(c, bev);
	conn_term_stamp(c, key, a);
	c->px->stats.upstream_reused++;
	log_debug("conn %llu: upstream %s reused", c->id, key);
	return 1;
}

/*
 * The request is done with its upstream, which answered in full and
 * keeps the connection open, and the session has no next request for it
 * (or is ending): the pool keeps it for the next terminated request with
 * the same key, unless it was opened in an earlier generation (a change
 * came while it was busy). Nothing happens to any other upstream.
 */
void
conn_term_park(struct conn *c)
{
	struct bufferevent	*bev = c->upstream;

	if (!c->term || !c->up_tls || !c->up_reusable || bev == NULL ||
	    !conn_term_current(c) || c->px->uppool == NULL ||
	    c->px->draining)
		return;
	conn_bev_unwatch(c, bev);
	conn_sockbuf_cap(bufferevent_getfd(bufferevent_get_underlying(bev)),
	    0, 0);
	c->upstream = NULL;
	c->up_tls = 0;
	c->up_reusable = 0;
	uppool_put(c->px->uppool, c->up_key, bev);
	free(c->up_key);
	c->up_key = NULL;
}

/*
 * The upstream taken from the pool closed or failed before a byte of the
 * answer: a server may close an idle connection just as a request goes
 * out on it. A request without a body whose method is safe to repeat
 * (GET, HEAD, OPTIONS: RFC 9110 9.2.2) goes again, once, on a new
 * connection to the same addresses, the client none the wiser. Not
 * after a change (reload, secret load, revoke, registry change) since
 * the request was decided: it would connect verified under the entry
 * it was decided by and carry its head as then built, so it is answered
 * 502 instead. 0 when it did (the connection may have been freed
 * since), -1 when the request cannot go again.
 */
int
conn_term_retry(struct conn *c)
{
	struct conn_req	*r = &c->r;
	const char	*m = r->req.method;

	if (!r->up_pooled || r->retried || r->body != HTTP_BODY_NONE ||
	    m == NULL || (strcmp(m, "GET") != 0 && strcmp(m, "HEAD") != 0 &&
	    strcmp(m, "OPTIONS") != 0))
		return -1;
	if (r->gen != c->px->upstream_gen) {
		log_debug("conn %llu: kept upstream %s closed before "
		    "answering; not again, decided before a change", c->id,
		    r->resolved);
		return -1;
	}
	log_debug("conn %llu: kept upstream %s closed before answering; "
	    "again on a new connection", c->id, r->resolved);
	conn_drop_upstream(c);
	r->up_pooled = 0;
	r->retried = 1;
	r->bytes_up = 0;
	r->addr_next = 0;
	conn_set_state(c, CONN_CONNECT);
	conn_connect_next(c);
	return 0;
}

/*
 * The upstream's TLS handshake failed: the reason (self-signed,
 * untrusted, expired, another name, other) and OpenSSL's words go into
 * the event and the 502 the client gets. 0, or -1 when freed.
 */
int
conn_term_upstream_failed(struct conn *c)
{
	char		 detail[256];
	enum sg_reason	 r;

	r = tlsterm_failure(bufferevent_openssl_get_ssl(c->upstream),
	    bufferevent_get_openssl_error(c->upstream), detail,
	    sizeof(detail));
	ERR_clear_error();
	conn_drop_upstream(c);
	c->px->stats.upstream_errors++;
	return conn_block(c, r, NULL, detail);
}

/*
 * The header the current request's entry sets from a secret, into set
 * when not NULL (pointing into the policy and the store: use it before
 * either changes). 0 when there is one or none is asked for (set->name
 * is then NULL), -1 when the entry names a secret the proxy does not
 * hold.
 */
int
conn_term_credential(struct conn *c, struct http_header *set)
{
	const struct policy_entry	*e = c->r.match.entry;
	const char			*v;

	if (set != NULL)
		memset(set, 0, sizeof(*set));
	if (e == NULL || e->cred_header == NULL)
		return 0;
	if ((v = secret_get(c->px->secrets, e->cred_secret)) == NULL)
		return -1;
	if (set != NULL) {
		set->name = (char *)e->cred_header;
		set->name_len = strlen(e->cred_header);
		set->value = (char *)v;
		set->value_len = strlen(v);
	}
	return 0;
}

/* Free what a terminated session holds besides its bufferevents. */
void
conn_term_release(struct conn *c)
{
	tlsterm_hello_release(&c->term_hello);
}
