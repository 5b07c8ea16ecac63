/*
 * proxy.h: the state of one sandgate-proxy process, shared by its
 * listeners and connections: configuration, the policy in force, the
 * security-event log, the resolver, counters and limits.
 *
 * Everything here runs on the one libevent loop thread.
 */
#ifndef SG_PROXY_H
#define SG_PROXY_H

#include <sys/socket.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <event2/event.h>
#include <openssl/ssl.h>

#include "conn.h"
#include "reason.h"

struct policy;
struct blocklog;
struct eventlog;
struct dns;
struct addr_set;
struct conn;
struct registry;
struct token_keys;
struct execcred;
struct grants;
struct registry_entry;
struct tlsca;
struct tlsterm;
struct uppool;
struct secretstore;

/* Defaults of every timeout and limit (docs/proxy.md explains each). */
#define PROXY_HEAD_TIMEOUT_MS		10000	/* whole request head */
#define PROXY_KEEPALIVE_TIMEOUT_MS	60000	/* idle client between requests */
#define PROXY_DNS_TIMEOUT_MS		5000
#define PROXY_CONNECT_TIMEOUT_MS	10000
#define PROXY_HELLO_TIMEOUT_MS		10000	/* ClientHello after 200 */
#define PROXY_IDLE_TIMEOUT_MS		300000	/* tunnel / response idle */
#define PROXY_MAX_CONNS			16384
#define PROXY_MAX_CONNS_PER_CLIENT	256
#define PROXY_HIGH_WATER		(256 * 1024)	/* back-pressure */
/*
 * What the proxy buffers for one client address over all its
 * connections (--max-buffer-per-client); past it none of them is read
 * until half of it has drained.
 */
#define PROXY_MAX_BUFFER_PER_CLIENT	(16ULL * 1024 * 1024)
/*
 * The kernel's buffers of every accepted and every upstream socket
 * (SO_RCVBUF, SO_SNDBUF; the kernel doubles them): without a cap they
 * grow to tcp_rmem and tcp_wmem (MiBs) for a client that does not read,
 * or on the upstream side of a tunnel whose client stopped reading. Not smaller: at 32
 * KiB a loopback segment (64 KiB) fills the buffer and every write waits
 * for a delayed ACK (bulk tunnels ran at 3 MiB/s instead of 400).
 */
#define PROXY_SOCKBUF			(128 * 1024)
/*
 * The download path (the accepted socket's SO_SNDBUF, the upstream's
 * SO_RCVBUF) may be larger, from one pool for the whole proxy. With both
 * at 128 KiB a fast download stops and restarts on every drain and each
 * splice(2) moves at most the upstream's window, half its buffer (1,029
 * splices per 64 MiB against 559 autotuned): 1.3-1.7x the CPU per GiB. A
 * client's only connection adds up to PROXY_SOCKBUF_MAX in all to each of
 * the two (what autotuning gives one fast download), its other
 * connections PROXY_SOCKBUF_MORE (a window that fills the 256 KiB pipe),
 * while the pool has room; a connection gives its share back when it
 * closes. So the proxy's kernel memory grows by at most twice the pool
 * (the kernel doubles) over the bound the 128 KiB caps give, however
 * many clients there are.
 */
#define PROXY_SOCKBUF_MAX		(4 * 1024 * 1024)
#define PROXY_SOCKBUF_MORE		(128 * 1024)
#define PROXY_SOCKBUF_POOL		(24 * 1024 * 1024)
#define PROXY_SOCKBUF_STEP		(16 * 1024)	/* less: not worth it */
/* Client-chosen fields (the method) are cut to this in log lines. */
#define PROXY_LOG_FIELD_CUT		64
#define PROXY_LOG_PATH_CUT		256	/* escaped, as logged */
#define PROXY_LOG_SPACE_MIN		(32 * 1024)	/* free bytes the log needs */
/*
 * Below this much free room in the log folder (an eighth of the volume,
 * within these bounds) the one client that wrote most of the log lately
 * is stopped, before the volume is full and every client must be.
 */
#define PROXY_LOG_RESERVE_MIN		(256 * 1024)
#define PROXY_LOG_RESERVE_MAX		(64ULL * 1024 * 1024)
/*
 * How often blocks look at the log folder's free room: every 10 ms, and
 * as soon as the lines written since the last look could have used the
 * room that was left above the reserve; under the reserve, after every
 * line (proxy_log_space_due), so that however fast a client writes, its
 * lines never carry the volume past the reserve unseen.
 */
#define PROXY_SPACE_CHECK_US		10000
/* Room for a client's identity: a sandbox id or "addr:" and an address. */
#define PROXY_IDENT_MAX			80

struct proxy_config {
	char		**listen;		/* "ADDR:PORT" */
	size_t		  nlisten;
	const char	 *policy_dir;
	const char	 *log_dir;
	const char	 *sets;			/* default sets, "a,b" */
	const char	 *resolver;
	const char	 *hosts;
	const char	 *control_socket;
	const char	 *control_listen;	/* ctltcp.h */
	const char	 *control_token;	/* its token file */
	const char	 *control_tls_cert;	/* its TLS server side */
	const char	 *control_tls_key;
	int		  policy_watch;		/* polwatch.h */
	const char	 *ca_cert;		/* tls: terminate */
	const char	 *ca_key;
	int		  ca_create;		/* make it when missing */
	const char	 *secrets_dir;		/* credentials' values */
	int		  verbose;
	int		  log_allowed;
	unsigned long long log_max_size;
	unsigned	  log_keep;
	long long	  log_keep_min_age;	/* seconds; eventlog.h */
	unsigned	  head_timeout_ms;
	unsigned	  keepalive_timeout_ms;
	unsigned	  dns_timeout_ms;
	unsigned	  connect_timeout_ms;
	unsigned	  hello_timeout_ms;
	unsigned	  idle_timeout_ms;
	unsigned	  max_conns;
	unsigned	  max_conns_per_client;
	unsigned long long max_buffer_per_client;
	unsigned	  block_burst;		/* blocklog.h */
	unsigned	  block_budget;
	unsigned	  block_window_s;
	char		**token_keys;		/* --token-key PUB files */
	size_t		  ntoken_keys;
	int		  token_any_source;	/* a token from any address */
	const char	 *instance;		/* --instance NAME, or NULL */
};

/* A loaded policy shared by the connections that started under it. */
struct proxy_policy {
	struct policy	*policy;
	unsigned	 refs;
};

/* Who a client is: the sandbox registered for its address, if any. */
struct proxy_client {
	const char		*sandbox;	/* NULL when unregistered */
	const char *const	*sets;
	size_t			 nsets;
	const char		*sets_text;	/* "a,b" for the log */
	struct registry_entry	*ref;		/* held while in use */
};

/*
 * One client address: its open connections (at most
 * max_conns_per_client) and the bytes the proxy holds for all of them
 * (their input and output buffers, and a plain-HTTP request's upstream
 * buffers) against max_buffer_per_client. proxy.c keeps the table,
 * conn.c the list and the budget (conn.h).
 */
struct client_slot {
	unsigned char		 key[17];	/* family byte + address */
	unsigned		 n;		/* open connections */
	unsigned long long	 held;		/* bytes held for them */
	int			 over;		/* over budget: none is read */
	struct conn		*conns;		/* its connections */
	struct event		*resume;	/* under half: read again */
};

/* Why a new connection was refused; counted per reason in /metrics. */
enum proxy_refuse {
	PROXY_REFUSE_CONNS,		/* --max-conns open */
	PROXY_REFUSE_CLIENT_CONNS,	/* --max-conns-per-client open */
	PROXY_REFUSE_CLIENTS,		/* no place for the address */
	PROXY_REFUSE_MEMORY,
	PROXY_REFUSE_MAX
};

#define PROXY_REFUSED_SRCS	8	/* addresses counted per reason */

/* Refusals of one address for one reason since the last line. */
struct proxy_refused_src {
	char			 addr[INET6_ADDRSTRLEN];
	unsigned long long	 n;
};

/*
 * Connections refused (proxy_refused) since the last proxy.conn_refused
 * line written (a line that could not be written leaves them owed to the
 * next, atk15r15 F3): per reason, and per address for the first
 * PROXY_REFUSED_SRCS addresses of each reason (the rest counted as
 * others), so a line names who was refused how often, not a flood's
 * count under the last address (atk15r15 F4); and the last's reason.
 */
struct proxy_refusals {
	uint64_t		 last_us;	/* that line; 0: none yet */
	unsigned long long	 n[PROXY_REFUSE_MAX];
	struct proxy_refused_src src[PROXY_REFUSE_MAX][PROXY_REFUSED_SRCS];
	unsigned long long	 others[PROXY_REFUSE_MAX];
	enum proxy_refuse	 why;
	struct event		*timer;		/* the line after the second */
};

struct proxy_stats {
	unsigned long long	conns_open;
	unsigned long long	conns_total;
	unsigned long long	clients_over_budget;	/* times stopped */
	unsigned long long	requests_allowed;
	unsigned long long	requests_blocked[SG_REASON_MAX];
	unsigned long long	upstream_errors;
	unsigned long long	upstream_reused;	/* from the pool */
	unsigned long long	bytes_up;
	unsigned long long	bytes_down;
	unsigned long long	log_failures;
	unsigned long long	conns_closed[CONN_CLOSE_MAX];
	unsigned long long	conns_refused[PROXY_REFUSE_MAX];
};

struct proxy {
	struct event_base	*base;
	struct proxy_config	 cfg;
	struct proxy_policy	*policy;	/* in force for new requests */
	char			**default_sets;
	size_t			 ndefault_sets;
	struct eventlog		*seclog;
	struct dns		*dns;
	SSL_CTX			*sni_ctx;
	struct tlsca		*ca;		/* NULL: no termination */
	struct tlsterm		*term;
	struct uppool		*uppool;	/* idle upstream TLS (uppool.h) */
	/*
	 * Bumped at every reload, secret load, revoke and registry change
	 * (conn_upstreams_flush): an upstream TLS connection opened before
	 * is never used again, idle or busy at the change.
	 */
	unsigned long long	 upstream_gen;
	struct secretstore	*secrets;	/* NULL: no --secrets-dir */
	struct addr_set		*self;		/* the proxy's own addresses */
	uint16_t		*ports;		/* listening ports */
	size_t			 nports;
	struct proxy_stats	 stats;
	size_t			 sockbuf_pool;	/* extra taken, see above */
	struct conn		*conns;		/* every open connection */
	struct conn		*adopted;	/* of them, acting from a token */
	int			 draining;	/* SIGTERM: no new work */
	int			 log_space_ok;	/* see proxy_log_check_space */
	int			 log_anchor_ok;	/* checkpoint_anchored() */
	time_t			 drain_deadline;
	time_t			 started;
	time_t			 policy_loaded;
	uint64_t		 policy_load_us;
	struct client_slot	**slots;	/* per client address */
	size_t			 nslots;	/* addresses with a slot */
	size_t			 slots_cap;	/* places (a power of 2) */
	struct proxy_refusals	 refused;	/* proxy_refused's lines */
	struct registry		*registry;	/* address -> sandbox, sets */
	struct execcred		*execs;		/* credential -> run id */
	struct token_keys	*tokens;	/* --token-key; none: no tokens */
	struct grants		*grants;	/* sandgate grant */
	struct blocklog		*blocks;	/* full lines or summaries */
	unsigned long long	 block_serial;	/* every block attempt */
	int			 log_pressure;	/* log folder nearly full */
	uint64_t		 space_checked_us;
	/* At that check: eventlog_written(), and room above the reserve. */
	unsigned long long	 space_written;
	unsigned long long	 space_room;
};

extern struct proxy *proxy_g;

/*
 * A replica's start line (--instance): {"event":"proxy.started",
 * "instance":NAME,"policy_digest":D,"token_keys":N,
 * "token_any_source":B}. 0, or -1 (said).
 */
int	proxy_log_started(struct proxy *);

/* Load or reload --secrets-dir (secret.h). 0, or -1 (said). */
int	proxy_secrets_load(struct proxy *);

struct policy_diags;

/*
 * Load and validate the policy folder, printing every diagnostic to
 * stderr. Returns the policy, or NULL when it has errors.
 */
struct policy	*proxy_load_policy(const char *dir, struct policy_diags *);

/*
 * Reload: load, validate, then swap. On errors the old policy stays in
 * force, a policy.rejected event is logged and *errors (malloc'd JSON
 * array of "file:line:col: message") says why; returns -1. On success
 * logs policy.reloaded, closes tunnels the new policy no longer allows
 * (egress.revoked) and returns 0 with *errors NULL.
 */
int		 proxy_reload(struct proxy *, char **errors);

/* Take and drop a reference to the policy in force. */
struct proxy_policy	*proxy_policy_ref(struct proxy *);
void			 proxy_policy_unref(struct proxy_policy *);

/* The sets and sandbox of a client address. */
void	proxy_client_lookup(struct proxy *, const struct sockaddr *,
	    struct proxy_client *);

/* The identity of an address no sandbox registered: the --sets. */
void	proxy_client_default(struct proxy *, struct proxy_client *);

/* Drop the reference proxy_client_lookup() took. */
void	proxy_client_release(struct proxy_client *);

/* 1 when sa (with its port) is one of the proxy's own listeners. */
int	proxy_is_self(struct proxy *, const struct sockaddr *, uint16_t port);

/*
 * Per-client-address slots, a place for every connection --max-conns
 * admits. proxy_client_enter counts one more connection of sa and
 * returns its slot, or NULL with *why: the address already has
 * max_conns_per_client connections, no place is left (kept sockets
 * hold places too), or out of memory.
 * proxy_client_leave counts one less and frees the slot with its last
 * connection.
 */
struct client_slot *proxy_client_enter(struct proxy *,
		    const struct sockaddr *, enum proxy_refuse *why);
/*
 * A new connection refused (why): counted, said at most once a second,
 * every refusal in some line (proxy.conn_refused).
 */
void	proxy_refused(struct proxy *, enum proxy_refuse why,
	    const struct sockaddr *);
/* At exit: the refusals not said yet are said; the timer goes. */
void	proxy_refused_flush(struct proxy *);
/* "connections", "client_connections", ...: the label in /metrics. */
const char *proxy_refuse_name(enum proxy_refuse);
void	proxy_client_leave(struct proxy *, struct client_slot *);
/* The slot of an address with connections open, or NULL. */
struct client_slot *proxy_client_slot(struct proxy *, const struct sockaddr *);

/*
 * Who a client is for the block log: its sandbox id, else "addr:" and its
 * address (src without the port). Returns buf.
 */
char	*proxy_identity(const struct proxy_client *, const char *src,
	    char *buf, size_t size);

/* One security event (a block, or an allowed connection when logging). */
struct proxy_event {
	const char		*event;		/* "egress.blocked" ... */
	const struct proxy_client *client;
	const char		*run_id;	/* the exec's, or NULL */
	const char		*src;		/* "10.0.0.2:41234" */
	const char		*method;
	const char		*host;
	int			 port;
	const char		*sni;
	const char		*resolved;
	enum sg_reason		 reason;
	const char		*message;
	const char		*rule;		/* "file:line" or NULL */
	const char		*policy_digest;
	const char		*path;		/* terminated requests only */
	int			 status;	/* their answer's; 0: none */
	long long		 bytes_up;	/* -1: not set */
	long long		 bytes_down;
	long long		 duration_ms;
};

/*
 * Append one event to the security-event log. Returns 0, or -1 when the
 * log cannot be written (the proxy then fails closed).
 */
int	proxy_log_event(struct proxy *, const struct proxy_event *);
/*
 * An egress.blocked, egress.would_block or egress.allowed event: written
 * in full, or counted into a summary under the client's budget
 * (blocklog.h); a block is counted for GET /blocks too. Returns 0, or -1 when a full line could not be written
 * (the attempt is then counted into a summary, written once the log can
 * be, or at exit).
 */
int	proxy_log_block(struct proxy *, const struct proxy_event *);
/* Set up the block log (blocklog.h) from the configuration. 0 or -1. */
int	proxy_log_blocks_init(struct proxy *);
/* The registry changed: the block log's registered part follows it. */
void	proxy_log_blocks_registry(struct proxy *);
/* Write the block summaries that are due (all of them with all set). */
void	proxy_log_flush_blocks(struct proxy *, int all);
/*
 * 1 when the security-event log can take this client's events (else
 * refuse its egress): the last write succeeded, the log folder has room,
 * and the client is not the one stopped for filling it (who may be NULL:
 * the log as a whole).
 */
int	proxy_log_healthy(struct proxy *, const struct proxy_client *who,
	    const char *src);
/*
 * Check the log folder's free space and read-only flag (every second, and
 * as PROXY_SPACE_CHECK_US says), so that a full disk refuses egress before
 * an event is lost to it. Below the reserve (PROXY_LOG_RESERVE_*) the
 * client spending it is stopped (its egress refused, its blocks only
 * counted): one that, since the volume went under the reserve, wrote a
 * quarter of the room then left above PROXY_LOG_SPACE_MIN
 * (blocklog_stop_top); below PROXY_LOG_SPACE_MIN
 * every client is.
 */
void	proxy_log_check_space(struct proxy *);

#endif
