/*
 * conn_int.h: what the files of the connection module (conn.c: the life
 * of a connection, its requests' decisions, DNS and connect; conn_http.c:
 * forwarding a plain-HTTP request and its response; conn_tunnel.c: a
 * CONNECT tunnel and its checks) share with each other and with nothing
 * else. The public contract is conn.h.
 */
#ifndef SG_CONN_INT_H
#define SG_CONN_INT_H

#include <sys/socket.h>
#include <netinet/in.h>

#include <stdint.h>

#include <event2/bufferevent.h>

#include "conn.h"
#include "dns.h"
#include "execcred.h"
#include "host.h"
#include "http.h"
#include "policy.h"
#include "proxy.h"
#include "reason.h"
#include "tlsterm.h"

/*
 *   HEAD ──CONNECT──> RESOLVE ─> CONNECT ─> TUNNEL (200, then every
 *     │                                      ClientHello or request checked)
 *     ├──CONNECT to a tls: terminate entry─> 200, TLS ─> HEAD (each request
 *     │                                      inside decided as plain HTTP)
 *     └──GET http://…─> RESOLVE ─> CONNECT ─> HTTP ─> HEAD (keep-alive)
 *   any ─> FINISH (flush what the client is owed, then close)
 */
enum conn_state {
	CONN_HEAD,		/* reading a request head */
	CONN_RESOLVE,		/* DNS lookup in flight */
	CONN_CONNECT,		/* upstream connect in flight */
	CONN_HTTP,		/* request forwarded; body and response flow */
	CONN_TUNNEL,		/* the tunnel module owns both sockets */
	CONN_FINISH		/* flushing the last bytes to the client */
};

enum conn_resp {
	CONN_RESP_HEAD,		/* waiting for a response head */
	CONN_RESP_BODY,
	CONN_RESP_DONE
};

/* What a tunnel carries, as its first bytes told. */
enum conn_tmode {
	CONN_TMODE_FIRST,	/* nothing read from the client yet */
	CONN_TMODE_TLS,		/* checking ClientHellos until ServerHello */
	CONN_TMODE_HTTP,	/* plain HTTP: each request's Host checked */
	CONN_TMODE_SPLICED	/* TLS past the ServerHello: no more looks */
};

/*
 * The request being served: everything here is reset in one place,
 * conn_req_reset(), between requests of a kept-alive connection.
 */
struct conn_req {
	struct proxy_policy	*pol;
	struct policy_match	 match;
	unsigned long long	 gen;	/* px->upstream_gen when decided */
	struct http_request	 req;
	int			 is_connect;
	struct host		 host;
	uint16_t		 port;
	char			 hostport[SG_HOST_MAX + 16];
	int			 keep_alive;	/* the client may send more */
	char			*path;		/* normalized path (paths) */
	/* The exec whose credential the request carried; "" when none. */
	char			 run[EXECCRED_RUN_MAX + 1];

	/* Resolution and connect (the addresses are in conn.addrs). */
	struct dns_req		*dnsreq;
	size_t			 naddrs;
	size_t			 addr_next;
	char			 resolved[INET6_ADDRSTRLEN];

	/* Plain HTTP: request body and response. */
	enum http_body		 body;
	uint64_t		 body_left;
	struct http_chunked	 body_chunked;
	int			 body_done;
	enum conn_resp		 resp;
	enum http_body		 resp_body;
	uint64_t		 resp_left;
	struct http_chunked	 resp_chunked;
	int			 resp_keep_alive;
	int			 status;	/* the final response's */

	/* This request's accounting. */
	uint64_t		 started_us;
	unsigned long long	 bytes_up;
	unsigned long long	 bytes_down;
	int			 replied;	/* a byte of its answer queued */
	int			 allowed_open;	/* egress.allowed owed */
	int			 counted;	/* in requests_allowed */
	/*
	 * Terminated: the upstream came from the pool (uppool.h); once it
	 * failed before any answer the request went on a new one (retried).
	 */
	int			 up_pooled;
	int			 retried;
};

struct token;

struct conn {
	struct conn		*next;
	struct conn		*prev;
	struct proxy		*px;
	unsigned long long	 id;
	enum conn_state		 state;
	struct bufferevent	*client;
	struct bufferevent	*upstream;
	struct event		*timer;
	struct sockaddr_storage	 client_addr;	/* IPv4-mapped made IPv4 */
	char			 src[INET6_ADDRSTRLEN + 8];
	struct proxy_client	 who;
	struct client_slot	*slot;		/* its address's, with budget */
	size_t			 sockbuf_extra;	/* from the pool, each way */
	struct conn		*slot_next;	/* the slot's connections */
	struct conn		*slot_prev;
	struct conn		*adopt_next;	/* px->adopted: acting from */
	struct conn		*adopt_prev;	/* a token (tok_adopted) */
	uint64_t		 started_us;
	uint64_t		 last_activity_us;
	size_t			 seen_pending;	/* conn_client_moved */
	int			 seen_queued;
	int			 head_started;	/* first byte of a head seen */
	int			 keepalive_wait; /* idle between requests */
	int			 close_after;	/* close after this request */
	int			 client_eof;
	int			 out_paused;	/* reading stopped: output full */
	int			 read_wait;	/* input left unparsed: paused */

	/* The upstream kept between requests, and what it was opened for. */
	struct host		 up_host;
	uint16_t		 up_port;
	int			 up_private;	/* its address is not public */
	int			 up_reusable;
	char			*up_key;	/* terminated: its pool key */
	unsigned long long	 up_gen;	/* px->upstream_gen at opening */
	char			 up_addr[INET6_ADDRSTRLEN];

	/* Bytes of the requests before the current one. */
	unsigned long long	 bytes_up;
	unsigned long long	 bytes_down;

	struct conn_req		 r;
	/* The current request's addresses (r.naddrs of them). */
	struct sockaddr_storage	 addrs[DNS_ADDRS_MAX];

	/* CONNECT: the tunnel and what it carries. */
	struct tunnel		*tun;
	struct tlsseq		*tls;
	enum conn_tmode		 tmode;
	int			 tls_required;
	int			 refusing;	/* a refusal is being delivered */
	uint64_t		 tun_started_us;
	/* When the plain-HTTP head pending in the tunnel began (0: none). */
	uint64_t		 thead_us;
	/* A plain-HTTP request body inside the tunnel. */
	enum http_body		 tbody;
	uint64_t		 tbody_left;
	struct http_chunked	 tbody_chunked;

	/*
	 * A terminated session (tls: terminate, conn_term.c): the client
	 * bufferevent is a TLS filter and every request inside names
	 * term_host:term_port; the upstream is TLS too (up_tls).
	 */
	int			 term;
	int			 term_ready;	/* client handshake done */
	int			 up_tls;	/* upstream is a TLS filter */
	struct host		 term_host;
	uint16_t		 term_port;
	/*
	 * The CONNECT's exec credential (conn_attribute): the requests
	 * inside a terminated session carry none, they are the CONNECT's.
	 */
	char			 tun_cred[HTTP_CREDENTIAL_MAX + 1];
	/*
	 * The sandbox token the last request outside a terminated session
	 * carried, checked (conn_token); NULL when none. Under
	 * --token-any-source an unregistered client takes its sandbox and
	 * sets (tok_adopted, tok_sets) for that request.
	 */
	struct token		*tok;
	char			**tok_sets;
	size_t			 tok_nsets;
	int			 tok_adopted;
	struct tlsterm_hello	 term_hello;
	uint64_t		 finish_deadline_us;	/* CONN_FINISH */
};

/* conn.c */
void	conn_set_state(struct conn *, enum conn_state);
void	conn_free(struct conn *, enum conn_close, const char *detail);
int	conn_finish(struct conn *);
void	conn_arm(struct conn *, unsigned ms);
void	conn_client_reading(struct conn *);
int	conn_client_full(struct conn *);
int	conn_over_budget(const struct conn *);
void	conn_bev_watch(struct conn *, struct bufferevent *);
void	conn_bev_unwatch(struct conn *, struct bufferevent *);
void	conn_bev_free(struct conn *, struct bufferevent *);
void	conn_client_attach(struct conn *);
int	conn_decide(struct conn *);
int	conn_block_malformed(struct conn *, int status, const char *cause);
/*
 * 1 when e (NULL: none) decides on more than host and port: methods,
 * paths or a credential. Header names with '_' and trailer fields are
 * refused on such an entry.
 */
int	conn_entry_ruled(const struct policy_entry *);
int	conn_send(struct conn *, char *buf, size_t len);
int	conn_reply_error(struct conn *, int status, const char *proxy_error,
	    const char *details);
int	conn_block(struct conn *, enum sg_reason, const char *sni,
	    const char *addr);
int	conn_next_request(struct conn *);
void	conn_drop_upstream(struct conn *);
int	conn_connect_next(struct conn *);
int	conn_connected(struct conn *);
void	conn_sockbuf_cap(evutil_socket_t, size_t rcv_extra, size_t snd_extra);
void	conn_log_allowed(struct conn *);
/*
 * Forget the request's run when its exec has ended since (a request made
 * now inside a tunnel an ended exec opened is the sandbox's alone).
 */
void	conn_run_refresh(struct conn *);
void	conn_event(struct conn *, struct proxy_event *, const char *event,
	    enum sg_reason, const char *msg, char *rule, size_t rulesize);
void	conn_upstream_read(struct bufferevent *, void *);
void	conn_upstream_write(struct bufferevent *, void *);
void	conn_upstream_event(struct bufferevent *, short, void *);

/* conn_http.c */
int	conn_http_start(struct conn *);
int	conn_http_body(struct conn *);
int	conn_http_response(struct conn *);
void	conn_http_upstream_event(struct conn *, short what);
void	conn_http_resume(struct conn *);

/* conn_term.c */
int	conn_term_start(struct conn *);
void	conn_term_client_done(struct conn *, short what);
int	conn_term_request(struct conn *);
int	conn_term_upstream(struct conn *);
int	conn_term_upstream_failed(struct conn *);
void	conn_term_release(struct conn *);
int	conn_term_credential(struct conn *, struct http_header *);
int	conn_term_reuse(struct conn *);
int	conn_term_fits(const struct conn *);
int	conn_term_current(const struct conn *);
void	conn_term_park(struct conn *);
int	conn_term_retry(struct conn *);

/* conn_tunnel.c */
int	conn_tunnel_start(struct conn *);
void	conn_tunnel_timer(struct conn *);
void	conn_tunnel_release(struct conn *);
enum sg_reason conn_tunnel_recheck(struct conn *, const struct policy_match *);

#endif
