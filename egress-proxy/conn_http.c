/*
 * conn_http.c: forwarding one plain-HTTP request (absolute-form, through
 * the proxy) and its response: the head the proxy rebuilds, the body as
 * framed and not a byte past it, 1xx heads, and the response as framed.
 * Bytes move between the two bufferevents with watermarks, so a slow
 * reader stops its peer instead of filling memory; that holds for the 1xx
 * heads the proxy forwards one by one too.
 */
#include <sys/socket.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "conn_int.h"
#include "urlpath.h"
#include "util.h"

static int	conn_http_copy(struct evbuffer *, struct evbuffer *, size_t);
static int	conn_http_move(struct conn *, struct bufferevent *from,
		    struct bufferevent *to, size_t max);
static int	conn_http_response_head(struct conn *, int *more);
static int	conn_http_response_body(struct conn *);
static int	conn_http_complete(struct conn *);
static int	conn_http_bodied(const struct conn_req *);
static int	conn_http_path(struct conn *);
static void	conn_http_send_head(struct conn *, const char *, size_t);
static void	conn_http_send_secret(struct conn *, char *, size_t);
static void	conn_http_wipe(const void *, size_t, void *);

/*
 * Copy n bytes from in to the end of out and drain them from in. The
 * bytes are copied, not the source's chains moved: every read of a
 * socket (or TLS record) makes a chain of its own, 1 KiB or more however
 * few bytes it found, so chains moved whole let a sender of 1-byte
 * segments or records make the watermark's 256 KiB into 256 MiB of heap.
 * Copied, they fill out's last chain before another is allocated, and
 * what out holds in memory follows the bytes the watermark and the
 * client's budget count. 0, or -1 when out of memory.
 */
static int
conn_http_copy(struct evbuffer *in, struct evbuffer *out, size_t n)
{
	struct evbuffer_iovec	 v[16];
	size_t			 done, take;
	int			 k, i;

	while (n > 0) {
		k = evbuffer_peek(in, (ev_ssize_t)n, NULL, v, 16);
		for (i = 0, done = 0; i < k && i < 16 && done < n; i++) {
			take = v[i].iov_len < n - done ? v[i].iov_len : n - done;
			if (evbuffer_add(out, v[i].iov_base, take) == -1)
				return -1;
			done += take;
		}
		if (done == 0 || evbuffer_drain(in, done) == -1)
			return -1;
		n -= done;
	}
	return 0;
}

/*
 * Move up to max bytes from one side's input to the other's output, and
 * stop reading the source while the destination is over the watermark.
 * 0, or -1 when freed.
 */
static int
conn_http_move(struct conn *c, struct bufferevent *from,
    struct bufferevent *to, size_t max)
{
	struct evbuffer	*in = bufferevent_get_input(from);
	struct evbuffer	*out = bufferevent_get_output(to);
	size_t		 n = evbuffer_get_length(in);

	if (n > max)
		n = max;
	if (n > 0) {
		if (conn_http_copy(in, out, n) == -1) {
			conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
			return -1;
		}
		if (from == c->client) {
			c->r.bytes_up += n;
			c->px->stats.bytes_up += n;
		} else {
			c->r.bytes_down += n;
			c->px->stats.bytes_down += n;
			c->r.replied = 1;
		}
	}
	if (evbuffer_get_length(out) >= PROXY_HIGH_WATER) {
		bufferevent_disable(from, EV_READ);
		bufferevent_setwatermark(to, EV_WRITE, PROXY_HIGH_WATER / 2, 0);
		if (to == c->client)
			c->out_paused = 1;
	} else if (to == c->client && conn_over_budget(c))
		bufferevent_disable(from, EV_READ);	/* conn_http_resume */
	return 0;
}

/*
 * An entry with paths was decided on the normalized path: that is the
 * path sent (the one the decision saw). 0, or -1 when freed.
 */
static int
conn_http_path(struct conn *c)
{
	struct conn_req	*r = &c->r;
	const char	*cause;
	size_t		 n;

	if (r->match.entry == NULL || r->match.entry->paths == NULL)
		return 0;
	n = strlen(r->req.path) + 1;
	if ((r->path = malloc(n)) == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	/* Only a prefix holding "%2F" let a path with one pass. */
	if (urlpath_normalize(r->req.path, r->path, n, &cause) == -1 &&
	    urlpath_normalize_slash(r->req.path, r->path, n, &cause) == -1) {
		/* The decision passed on this very path: cannot happen. */
		free(r->path);
		r->path = NULL;
		conn_free(c, CONN_CLOSE_CLIENT_ERROR, cause);
		return -1;
	}
	return 0;
}

/*
 * The request head goes upstream. With nothing queued before it (the
 * usual case) it is written at once: queued, it would cost the upstream's
 * write event armed, an epoll_wait to find the socket writable and the
 * event disarmed again, per request. What the socket does not take, or
 * all of it after an error (which the bufferevent then meets and reports
 * as it would have), is queued as before.
 */
static void
conn_http_send_head(struct conn *c, const char *head, size_t len)
{
	ssize_t	n = 0;

	if (!c->up_tls &&
	    evbuffer_get_length(bufferevent_get_output(c->upstream)) == 0 &&
	    (n = send(bufferevent_getfd(c->upstream), head, len,
	    MSG_NOSIGNAL | MSG_DONTWAIT)) < 0)
		n = 0;
	if ((size_t)n < len)
		bufferevent_write(c->upstream, head + n, len - (size_t)n);
}

/* An evbuffer reference's cleanup: wipe and free the head it held. */
static void
conn_http_wipe(const void *data, size_t len, void *arg)
{
	(void)arg;
	OPENSSL_cleanse((void *)(uintptr_t)data, len);
	free((void *)(uintptr_t)data);
}

/*
 * A head that carries a credential goes upstream (always TLS) by
 * reference, not copied into libevent's chains: the TLS filter encrypts
 * from the head itself, which is wiped and freed once drained (or when
 * the connection is freed). Takes head over. OpenSSL's own record
 * buffer is not wiped (docs/policy.md, "What is wiped").
 */
static void
conn_http_send_secret(struct conn *c, char *head, size_t len)
{
	if (evbuffer_add_reference(bufferevent_get_output(c->upstream), head,
	    len, conn_http_wipe, NULL) == 0)
		return;
	bufferevent_write(c->upstream, head, len);
	conn_http_wipe(head, len, NULL);
}

/* Send the request head upstream and start the body and response. */
int
conn_http_start(struct conn *c)
{
	struct conn_req		*r = &c->r;
	struct http_header	 set;
	char			*head, *orig = NULL;
	size_t			 len;

	if (conn_http_path(c) == -1)
		return -1;
	if (r->path != NULL) {
		orig = r->req.path;
		r->req.path = r->path;
	}
	/* A terminated entry's credential replaces what the client sent. */
	memset(&set, 0, sizeof(set));
	if (c->term)
		(void)conn_term_credential(c, &set);
	head = http_request_forward_set(&r->req, 0, set.name != NULL ? &set :
	    NULL, &len);
	if (orig != NULL)
		r->req.path = orig;
	if (head == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	r->bytes_up += len;	/* the head is what the client sent up too */
	c->px->stats.bytes_up += len;
	if (set.name != NULL)
		conn_http_send_secret(c, head, len);
	else {
		conn_http_send_head(c, head, len);
		free(head);
	}
	r->body = http_request_body(&r->req);
	r->body_left = r->req.content_length > 0 ?
	    (uint64_t)r->req.content_length : 0;
	http_chunked_init(&r->body_chunked);
	/*
	 * Trailer fields are refused where header names are checked: a
	 * gateway that merges them into the header fields (Tomcat, for
	 * names it is told to) would read an override, an Authorization
	 * beside the credential, a '_' name, none of them checked.
	 */
	r->body_chunked.no_trailers = conn_entry_ruled(r->match.entry);
	r->body_done = r->body == HTTP_BODY_NONE ||
	    (r->body == HTTP_BODY_LENGTH && r->body_left == 0);
	r->resp = CONN_RESP_HEAD;
	c->close_after = !r->keep_alive || c->client_eof;
	conn_set_state(c, CONN_HTTP);
	/*
	 * Writing is enabled from the start (libevent's default for a
	 * socket bufferevent, never turned off here): the write event is
	 * armed whenever bytes are queued. Enabling it again would arm it
	 * now, with nothing to write.
	 */
	bufferevent_enable(c->upstream, EV_READ);
	if (!r->body_done)
		return conn_http_body(c);
	return 0;
}

/* Forward the request body, as framed, and no byte past it. */
int
conn_http_body(struct conn *c)
{
	struct conn_req	*r = &c->r;
	struct evbuffer	*in = bufferevent_get_input(c->client);
	size_t		 len = evbuffer_get_length(in), n;
	const char	*cause;
	unsigned char	*p;

	if (len == 0 || r->body_done)
		return 0;
	if (r->body == HTTP_BODY_LENGTH) {
		n = len < r->body_left ? len : (size_t)r->body_left;
		r->body_left -= n;
		r->body_done = r->body_left == 0;
	} else {
		if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
			conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
			return -1;
		}
		switch (http_chunked_scan(&r->body_chunked, (const char *)p,
		    len, &n, &cause)) {
		case HTTP_PARSE_MORE:
			break;
		case HTTP_PARSE_OK:
			r->body_done = 1;
			break;
		case HTTP_PARSE_ERROR:
			if (cause == http_trailer_refused)
				return conn_block_malformed(c, 400, "a trailer "
				    "field is refused on an entry with "
				    "methods, paths or a credential");
			c->close_after = 1;
			return conn_finish(c);
		}
	}
	if (conn_http_move(c, c->client, c->upstream, n) == -1)
		return -1;
	if (r->body_done) {
		conn_client_reading(c);
		if (r->resp == CONN_RESP_DONE)
			return conn_http_complete(c);
	}
	return 0;
}

/*
 * One response head from the upstream: a 1xx is forwarded on its own
 * (and *more says another head follows), the final one starts the body.
 * Returns 0, or -1 when the connection was freed.
 */
static int
conn_http_response_head(struct conn *c, int *more)
{
	struct conn_req		*r = &c->r;
	struct evbuffer		*in = bufferevent_get_input(c->upstream);
	struct http_response	 resp;
	const char		*cause;
	unsigned char		*p;
	size_t			 len = evbuffer_get_length(in), hlen;
	char			*head;
	int			 status, flags;

	*more = 0;
	if (len > SG_HTTP_HEAD_MAX)
		len = SG_HTTP_HEAD_MAX;
	if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
		conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
		return -1;
	}
	http_response_init(&resp);
	switch (http_response_parse((const char *)p, len, &resp, &status,
	    &cause)) {
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
		*more = 1;
		/* RFC 9110 15.2: never to an HTTP/1.0 client. */
		if (r->req.version_minor == 0) {
			http_response_release(&resp);
			return 0;
		}
		head = http_response_forward(&resp, 0, &hlen);
		http_response_release(&resp);
		return conn_send(c, head, hlen);
	}
	r->status = resp.status;
	r->resp_body = http_response_body(&resp, r->req.method);
	r->resp_keep_alive = resp.keep_alive &&
	    r->resp_body != HTTP_BODY_CLOSE;
	r->resp_left = resp.content_length > 0 ?
	    (uint64_t)resp.content_length : 0;
	http_chunked_init(&r->resp_chunked);
	if (r->resp_body == HTTP_BODY_CLOSE)
		c->close_after = 1;
	flags = c->close_after ? HTTP_FWD_CLOSE :
	    r->req.version_minor == 0 ? HTTP_FWD_KEEP_ALIVE : 0;
	head = http_response_forward(&resp, flags, &hlen);
	http_response_release(&resp);
	if (conn_send(c, head, hlen) == -1)
		return -1;
	r->resp = CONN_RESP_BODY;
	if (r->resp_body == HTTP_BODY_NONE ||
	    (r->resp_body == HTTP_BODY_LENGTH && r->resp_left == 0))
		r->resp = CONN_RESP_DONE;
	return 0;
}

/*
 * Bytes from the upstream while serving a plain-HTTP request. While the
 * client's output is full (an upstream sending 1xx heads to a client that
 * does not read) the upstream is not read: conn_http_resume() goes on.
 */
int
conn_http_response(struct conn *c)
{
	struct conn_req	*r = &c->r;
	int		 more = 1;

	while (r->resp == CONN_RESP_HEAD && more) {
		if (conn_client_full(c)) {
			bufferevent_disable(c->upstream, EV_READ);
			return 0;
		}
		if (evbuffer_get_length(bufferevent_get_input(c->upstream)) ==
		    0)
			return 0;
		if (conn_http_response_head(c, &more) == -1)
			return -1;
	}
	if (r->resp == CONN_RESP_BODY && conn_http_response_body(c) == -1)
		return -1;
	if (r->resp == CONN_RESP_DONE) {
		if (!r->body_done) {
			/* Answered before the body was sent: don't reuse. */
			c->close_after = 1;
			return conn_finish(c);
		}
		return conn_http_complete(c);
	}
	return 0;
}

static int
conn_http_response_body(struct conn *c)
{
	struct conn_req	*r = &c->r;
	struct evbuffer	*in = bufferevent_get_input(c->upstream);
	size_t		 len = evbuffer_get_length(in), n = len;
	const char	*cause;
	unsigned char	*p;

	if (len == 0)
		return 0;
	if (r->resp_body == HTTP_BODY_LENGTH) {
		n = len < r->resp_left ? len : (size_t)r->resp_left;
		r->resp_left -= n;
		if (r->resp_left == 0)
			r->resp = CONN_RESP_DONE;
	} else if (r->resp_body == HTTP_BODY_CHUNKED) {
		if ((p = evbuffer_pullup(in, (ev_ssize_t)len)) == NULL) {
			conn_free(c, CONN_CLOSE_OUT_OF_MEMORY, NULL);
			return -1;
		}
		switch (http_chunked_scan(&r->resp_chunked, (const char *)p,
		    len, &n, &cause)) {
		case HTTP_PARSE_MORE:
			break;
		case HTTP_PARSE_OK:
			r->resp = CONN_RESP_DONE;
			break;
		case HTTP_PARSE_ERROR:
			c->close_after = 1;
			return conn_finish(c);
		}
	}
	return conn_http_move(c, c->upstream, c->client, n);
}

/*
 * 1 when the request carried a body (Content-Length above 0, or
 * chunked). The proxy frames it by the request; the upstream may not:
 * one that answers without reading it (an early 4xx, a handler that
 * never reads) reads its bytes as the next request, one the sandbox
 * wrote and nobody decided, which may wait for a body of its own: the
 * next head the proxy sends, a credential in it. So an upstream
 * connection that carried a body is used for nothing else: closed after
 * its answer, never kept for the session nor pooled (docs/proxy.md,
 * "Upstream connection reuse").
 */
static int
conn_http_bodied(const struct conn_req *r)
{
	return r->body != HTTP_BODY_NONE && !(r->body == HTTP_BODY_LENGTH &&
	    r->req.content_length <= 0);
}

/* Request and response are both done: next request, or close. */
static int
conn_http_complete(struct conn *c)
{
	conn_log_allowed(c);
	c->up_reusable = c->r.resp_keep_alive && !conn_http_bodied(&c->r) &&
	    evbuffer_get_length(bufferevent_get_input(c->upstream)) == 0 &&
	    (!c->term || conn_term_current(c));
	if (c->close_after) {
		/* The client is done; its upstream need not be (uppool.h). */
		conn_term_park(c);
		return conn_finish(c);
	}
	if (!c->up_reusable)
		conn_drop_upstream(c);
	return conn_next_request(c);
}

/* The client drained: read the upstream again, and what it left. */
void
conn_http_resume(struct conn *c)
{
	if (c->upstream == NULL)
		return;
	bufferevent_enable(c->upstream, EV_READ);
	if (evbuffer_get_length(bufferevent_get_input(c->upstream)) > 0)
		bufferevent_trigger(c->upstream, EV_READ,
		    BEV_TRIG_IGNORE_WATERMARKS | BEV_TRIG_DEFER_CALLBACKS);
}

/* The upstream closed or failed while a request was being served. */
void
conn_http_upstream_event(struct conn *c, short what)
{
	struct conn_req	*r = &c->r;

	if ((what & BEV_EVENT_EOF) && r->resp == CONN_RESP_BODY &&
	    r->resp_body == HTTP_BODY_CLOSE) {
		if (conn_http_move(c, c->upstream, c->client, SIZE_MAX) == -1)
			return;
		c->close_after = 1;
		r->resp = CONN_RESP_DONE;
		conn_http_complete(c);
		return;
	}
	if (r->resp == CONN_RESP_HEAD && !r->replied) {
		/* A kept connection the upstream had closed meanwhile. */
		if (r->up_pooled && conn_term_retry(c) == 0)
			return;
		c->px->stats.upstream_errors++;
		conn_reply_error(c, 502, "connection_terminated",
		    "upstream closed before answering");
		return;
	}
	c->close_after = 1;
	conn_finish(c);
}
