/*
 * loadgen.c: a load generator for forward proxies on loopback.
 *
 * Modes (--mode):
 *   http           absolute-URI GETs through the proxy, keep-alive
 *   connect        one CONNECT tunnel per connection, keep-alive GETs in it
 *   connect-churn  a new connection and tunnel for every GET
 *   bulk           GETs of a large file through one tunnel per connection
 *   idle           --concurrency tunnels opened and held; proxy RSS/tunnel
 *   blocked        absolute-URI GETs the proxy refuses (403), keep-alive
 *   terminate      connect, with a TLS session (OpenSSL) inside each
 *                  tunnel: the GETs go through a proxy that terminates TLS
 *   terminate-churn connect-churn the same way: CONNECT, handshake, one
 *                  GET, close, for every request
 * Without --proxy, http, connect and bulk talk to the target directly.
 * The terminate modes name the upstream by --host (CONNECT target, SNI,
 * Host) and verify the certificate the proxy shows against --cafile,
 * with no session resumption: every connection is a full handshake.
 *
 * Every run prints one JSON object on one line to stdout. Latencies are
 * kept in a 1 us histogram up to 1 s (one overflow bucket past it). The
 * proxy's CPU time is its process CPU clock (clock_getcpuclockid: all
 * its threads, user and system, in nanoseconds), read when the run
 * starts and when its window ends; utime+stime of /proc/PID/stat (10 ms
 * ticks) only where that clock cannot be read.
 *
 * Limits: every run ends after --duration seconds or --requests
 * requests, and in any case after --max-seconds; a run gives up after
 * LG_MAX_ERRORS errors. Only addresses given on the command line are
 * contacted.
 */
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/ssl.h>

#define LG_HIST_MAX	1000000		/* us; one bucket per us below */
#define LG_HEAD_MAX	65536		/* response head bytes */
#define LG_MAX_ERRORS	100000
#define LG_MAX_CONNS	16384
#define LG_READ_MAX	(256 * 1024)	/* bytes per read(2) */

enum lg_mode {
	LG_HTTP,
	LG_CONNECT,
	LG_CHURN,
	LG_BULK,
	LG_IDLE,
	LG_BLOCKED
};

enum lg_state {
	LG_CONNECTING,
	LG_TUNNEL,		/* CONNECT sent, waiting for 200 */
	LG_HANDSHAKE,		/* terminate: TLS handshake in the tunnel */
	LG_READY,		/* between requests */
	LG_HEAD,		/* request sent, reading the response head */
	LG_BODY,		/* Content-Length body, or until close */
	LG_CHUNK_SIZE,
	LG_CHUNK_DATA,
	LG_CHUNK_CRLF,
	LG_TRAILER,
	LG_HELD			/* idle mode: tunnel open, nothing to do */
};

struct lg;

struct lg_conn {
	struct lg		*lg;
	struct bufferevent	*bev;
	enum lg_state		 state;
	uint64_t		 t_start;	/* us, request start */
	int64_t			 body_left;	/* -1: until close */
	int			 close_after;
	int			 status;
	int			 nreq;		/* requests sent on this conn */
	unsigned		 opens;		/* connections made in this slot */
	struct event		*raw;		/* bulk bodies: plain read(2) */
};

struct lg {
	struct event_base	*base;
	enum lg_mode		 mode;
	const char		*mode_name;
	int			 tls;		/* terminate modes */
	const char		*host;		/* --host: name of the target */
	const char		*cafile;
	SSL_CTX			*ssl_ctx;
	const char		*label;
	struct sockaddr_in	 proxy;
	int			 have_proxy;
	struct sockaddr_in	 target;
	char			 target_text[64];
	const char		*path;
	const char		*blocked_host;
	const char		*log_file;
	int			 concurrency;
	double			 duration;
	uint64_t		 max_requests;	/* 0: by duration */
	double			 max_seconds;
	double			 hold;
	long			 proxy_pid;
	struct lg_conn		*conns;
	char			 req[1024];	/* the request, pre-built */
	size_t			 reqlen;
	char			 tunnel_req[256];
	size_t			 tunnel_reqlen;

	/* counters */
	uint64_t		 t0, t_end;
	uint64_t		 issued, done, errors, bytes;
	uint64_t		 done_window, bytes_window;
	uint64_t		 established;
	uint64_t		 retries;	/* silent keep-alive closes */
	int			 stopping;	/* window over */
	int			 draining;	/* let in-flight finish */
	int			 live;		/* open connections */
	uint32_t		*hist;
	uint64_t		 overflow;
	long long		 cpu_start, cpu_end;	/* ns */
	struct event		*deadline_ev;
	struct event		*hard_ev;
};

static void	 usage(void);
static uint64_t	 now_us(void);
static int	 parse_hostport(const char *, struct sockaddr_in *);
static long long proc_cpu_ns(long);
static long	 proc_cpu_ticks(long);
static long	 proc_rss_kib(long);
static long	 file_attempts(const char *);
static void	 build_requests(struct lg *);
static void	 conn_open(struct lg_conn *);
static void	 conn_close(struct lg_conn *, int);
static void	 conn_fail(struct lg_conn *);
static void	 conn_send(struct lg_conn *);
static void	 conn_done(struct lg_conn *);
static int	 conn_may_start(struct lg *);
static int	 head_parse(struct lg_conn *, struct evbuffer *, int *);
static int	 body_read(struct lg_conn *, struct evbuffer *);
static int	 chunk_read(struct lg_conn *, struct evbuffer *);
static void	 read_cb(struct bufferevent *, void *);
static int	 bulk_start(struct lg_conn *);
static void	 bulk_read_cb(evutil_socket_t, short, void *);
static void	 event_cb(struct bufferevent *, short, void *);
static void	 deadline_cb(evutil_socket_t, short, void *);
static void	 hard_cb(evutil_socket_t, short, void *);
static void	 window_end(struct lg *);
static void	 maybe_finish(struct lg *);
static uint64_t	 hist_pct(struct lg *, double);
static void	 report(struct lg *, long);
static void	 run_idle(struct lg *);
static double	 arg_num(const char *, double, double);
static void	 parse_args(struct lg *, int, char **);
static void	 raise_nofile(void);
static SSL_CTX	*tls_ctx(struct lg *);
static void	 tls_start(struct lg_conn *);

static void
usage(void)
{
	fprintf(stderr, "usage: loadgen --mode MODE --target HOST:PORT "
	    "[--proxy HOST:PORT] [--concurrency N]\n"
	    "\t[--duration S | --requests N] [--proxy-pid PID] "
	    "[--label NAME] [--path P]\n"
	    "\t[--blocked-host H] [--log-file F] [--hold S] "
	    "[--max-seconds S]\n"
	    "\t[--host NAME --cafile PEM] (terminate modes)\n"
	    "modes: http connect connect-churn bulk idle blocked terminate "
	    "terminate-churn\n");
	exit(2);
}

static uint64_t
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* "127.0.0.1:3128" into a sockaddr; IPv4 literals only. */
static int
parse_hostport(const char *s, struct sockaddr_in *sin)
{
	char		 host[64];
	const char	*colon;
	char		*end;
	unsigned long	 port;

	colon = strrchr(s, ':');
	if (colon == NULL || (size_t)(colon - s) >= sizeof(host))
		return -1;
	memcpy(host, s, colon - s);
	host[colon - s] = '\0';
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno != 0 || *end != '\0' || port == 0 || port > 65535)
		return -1;
	memset(sin, 0, sizeof(*sin));
	sin->sin_family = AF_INET;
	sin->sin_port = htons((uint16_t)port);
	if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
		return -1;
	return 0;
}

/*
 * CPU time of a process, all threads, user and system, in ns; -1 on
 * error. The process CPU clock counts every nanosecond run; the ticks of
 * /proc/PID/stat (the fallback) are 10 ms, 2-5 % of a 2 s run at c=1.
 */
static long long
proc_cpu_ns(long pid)
{
	clockid_t	 cid;
	struct timespec	 ts;
	long		 t;

	if (pid <= 0)
		return -1;
	if (clock_getcpuclockid((pid_t)pid, &cid) == 0 &&
	    clock_gettime(cid, &ts) == 0)
		return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
	t = proc_cpu_ticks(pid);
	if (t < 0)
		return -1;
	return (long long)t * (1000000000LL / sysconf(_SC_CLK_TCK));
}

/* utime+stime of a process, all threads, in clock ticks; -1 on error. */
static long
proc_cpu_ticks(long pid)
{
	char		 path[64], buf[2048], *p;
	FILE		*f;
	size_t		 n;
	unsigned long	 ut, st;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* comm may hold spaces; fields restart after the last ')'. */
	p = strrchr(buf, ')');
	if (p == NULL)
		return -1;
	/* after ") ": state(3) ... utime(14) stime(15) */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u "
	    "%lu %lu", &ut, &st) != 2)
		return -1;
	return (long)(ut + st);
}

/* VmRSS of a process in KiB; -1 on error. */
static long
proc_rss_kib(long pid)
{
	char	 path[64], line[256];
	FILE	*f;
	long	 kib = -1;

	snprintf(path, sizeof(path), "/proc/%ld/status", pid);
	f = fopen(path, "r");
	if (f == NULL)
		return -1;
	while (fgets(line, sizeof(line), f) != NULL) {
		if (strncmp(line, "VmRSS:", 6) == 0) {
			kib = strtol(line + 6, NULL, 10);
			break;
		}
	}
	fclose(f);
	return kib;
}

/*
 * Blocked attempts a security-event log holds: one per egress.blocked
 * line, `count` per egress.blocked_summary line (the proxy writes a burst
 * of full lines and counts the rest). 0 when the file does not exist.
 */
static long
file_attempts(const char *path)
{
	FILE	*f;
	char	*line = NULL, *c;
	size_t	 cap = 0;
	long	 n = 0;

	f = fopen(path, "r");
	if (f == NULL)
		return 0;
	while (getline(&line, &cap, f) != -1) {
		if (strstr(line, "\"event\":\"egress.blocked_summary\"") !=
		    NULL && (c = strstr(line, "\"count\":")) != NULL)
			n += strtol(c + 8, NULL, 10);
		else if (strstr(line, "\"event\":\"egress.blocked\"") != NULL)
			n++;
	}
	free(line);
	fclose(f);
	return n;
}

static void
build_requests(struct lg *lg)
{
	int	 n;

	snprintf(lg->target_text, sizeof(lg->target_text), "%s:%u",
	    lg->host != NULL ? lg->host : inet_ntoa(lg->target.sin_addr),
	    ntohs(lg->target.sin_port));
	if (lg->mode == LG_BLOCKED)
		n = snprintf(lg->req, sizeof(lg->req),
		    "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n"
		    "User-Agent: sandgate-loadgen\r\n\r\n",
		    lg->blocked_host, lg->path, lg->blocked_host);
	else if (lg->mode == LG_HTTP && lg->have_proxy)
		n = snprintf(lg->req, sizeof(lg->req),
		    "GET http://%s%s HTTP/1.1\r\nHost: %s\r\n"
		    "User-Agent: sandgate-loadgen\r\n\r\n",
		    lg->target_text, lg->path, lg->target_text);
	else
		n = snprintf(lg->req, sizeof(lg->req),
		    "GET %s HTTP/1.1\r\nHost: %s\r\n"
		    "User-Agent: sandgate-loadgen\r\n%s\r\n", lg->path,
		    lg->target_text,
		    lg->mode == LG_CHURN ? "Connection: close\r\n" : "");
	lg->reqlen = (size_t)n;
	n = snprintf(lg->tunnel_req, sizeof(lg->tunnel_req),
	    "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", lg->target_text,
	    lg->target_text);
	lg->tunnel_reqlen = (size_t)n;
}

/* 1 when one more request may start. */
static int
conn_may_start(struct lg *lg)
{
	if (lg->stopping || lg->errors >= LG_MAX_ERRORS)
		return 0;
	if (lg->max_requests != 0 && lg->issued >= lg->max_requests)
		return 0;
	return 1;
}

static void
conn_open(struct lg_conn *c)
{
	struct lg		*lg = c->lg;
	struct sockaddr_in	*to;
	int			 one = 1;
	evutil_socket_t		 fd;

	to = lg->have_proxy ? &lg->proxy : &lg->target;
	c->bev = bufferevent_socket_new(lg->base, -1, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		lg->errors++;
		return;
	}
	bufferevent_setcb(c->bev, read_cb, NULL, event_cb, c);
	bufferevent_set_max_single_read(c->bev, LG_READ_MAX);
	c->state = LG_CONNECTING;
	c->nreq = 0;
	c->opens++;
	c->t_start = now_us();
	if (lg->mode == LG_CHURN)
		lg->issued++;
	if (bufferevent_socket_connect(c->bev, (struct sockaddr *)to,
	    sizeof(*to)) == -1) {
		bufferevent_free(c->bev);
		c->bev = NULL;
		lg->errors++;
		return;
	}
	fd = bufferevent_getfd(c->bev);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	lg->live++;
}

/* Close a connection; reopen it when reopen is set and there is work. */
static void
conn_close(struct lg_conn *c, int reopen)
{
	struct lg	*lg = c->lg;

	if (c->raw != NULL) {
		event_free(c->raw);
		c->raw = NULL;
	}
	if (c->bev != NULL) {
		bufferevent_free(c->bev);
		c->bev = NULL;
		lg->live--;
	}
	if (reopen && conn_may_start(lg) && lg->mode != LG_IDLE)
		conn_open(c);
	maybe_finish(lg);
}

static void
conn_fail(struct lg_conn *c)
{
	struct lg	*lg = c->lg;

	lg->errors++;
	if (lg->errors == 1 || lg->errors == LG_MAX_ERRORS)
		fprintf(stderr, "loadgen: %s: error in state %d (errors: "
		    "%" PRIu64 ")\n", lg->mode_name, c->state, lg->errors);
	conn_close(c, !lg->draining);
}

/* Send the next request on an open connection (or tunnel). */
static void
conn_send(struct lg_conn *c)
{
	struct lg	*lg = c->lg;

	if (lg->mode != LG_CHURN) {
		if (!conn_may_start(lg)) {
			conn_close(c, 0);
			return;
		}
		lg->issued++;
		c->t_start = now_us();
	}
	c->state = LG_HEAD;
	c->close_after = 0;
	c->nreq++;
	bufferevent_write(c->bev, lg->req, lg->reqlen);
}

/* A response has been read in full. */
static void
conn_done(struct lg_conn *c)
{
	struct lg	*lg = c->lg;
	uint64_t	 dt;
	int		 ok;

	ok = lg->mode == LG_BLOCKED ? c->status == 403 : c->status == 200;
	if (!ok) {
		conn_fail(c);
		return;
	}
	dt = now_us() - c->t_start;
	lg->done++;
	if (!lg->stopping) {
		lg->done_window++;
		if (dt < LG_HIST_MAX)
			lg->hist[dt]++;
		else
			lg->overflow++;
	}
	if (lg->max_requests != 0 && lg->done >= lg->max_requests &&
	    !lg->stopping)
		window_end(lg);
	c->state = LG_READY;
	if (c->close_after || lg->mode == LG_CHURN) {
		conn_close(c, !lg->stopping);
		return;
	}
	if (lg->stopping) {
		conn_close(c, 0);
		return;
	}
	conn_send(c);
}

/*
 * Parse a buffered response head: status, Content-Length,
 * Transfer-Encoding: chunked (sets *chunked), Connection: close. Returns 1
 * when a head was taken, 0 when more bytes are needed, -1 on a bad head.
 */
static int
head_parse(struct lg_conn *c, struct evbuffer *in, int *chunked)
{
	struct evbuffer_ptr	 p;
	char			 head[LG_HEAD_MAX + 1], *line, *next, *v;
	size_t			 len;
	int			 minor, http10;

	*chunked = 0;
	p = evbuffer_search(in, "\r\n\r\n", 4, NULL);
	if (p.pos == -1)
		return evbuffer_get_length(in) > LG_HEAD_MAX ? -1 : 0;
	len = (size_t)p.pos + 4;
	if (len > LG_HEAD_MAX)
		return -1;
	evbuffer_remove(in, head, len);
	head[len] = '\0';
	if (sscanf(head, "HTTP/1.%d %d", &minor, &c->status) != 2)
		return -1;
	http10 = minor == 0;
	c->close_after = http10;
	c->body_left = -1;
	for (line = strstr(head, "\r\n") + 2; *line != '\r'; line = next) {
		next = strstr(line, "\r\n");
		*next = '\0';
		next += 2;
		v = strchr(line, ':');
		if (v == NULL)
			continue;
		*v++ = '\0';
		while (*v == ' ' || *v == '\t')
			v++;
		if (strcasecmp(line, "content-length") == 0)
			c->body_left = strtoll(v, NULL, 10);
		else if (strcasecmp(line, "transfer-encoding") == 0 &&
		    strcasestr(v, "chunked") != NULL)
			*chunked = 1;
		else if (strcasecmp(line, "connection") == 0 ||
		    strcasecmp(line, "proxy-connection") == 0) {
			if (strcasestr(v, "close") != NULL)
				c->close_after = 1;
			else if (strcasestr(v, "keep-alive") != NULL)
				c->close_after = 0;
		}
	}
	return 1;
}

/* Consume a Content-Length body. Returns 1 when complete. */
static int
body_read(struct lg_conn *c, struct evbuffer *in)
{
	struct lg	*lg = c->lg;
	size_t		 n;

	n = evbuffer_get_length(in);
	if (c->body_left >= 0 && (int64_t)n > c->body_left)
		n = (size_t)c->body_left;
	evbuffer_drain(in, n);
	lg->bytes += n;
	if (!lg->stopping)
		lg->bytes_window += n;
	if (c->body_left < 0)
		return 0;
	c->body_left -= (int64_t)n;
	return c->body_left == 0;
}

/* Consume a chunked body. Returns 1 when complete, -1 on error. */
static int
chunk_read(struct lg_conn *c, struct evbuffer *in)
{
	char	*line;
	size_t	 n;

	for (;;) {
		switch (c->state) {
		case LG_CHUNK_SIZE:
		case LG_CHUNK_CRLF:
		case LG_TRAILER:
			line = evbuffer_readln(in, &n, EVBUFFER_EOL_CRLF);
			if (line == NULL)
				return evbuffer_get_length(in) > 1024 ? -1 : 0;
			if (c->state == LG_CHUNK_SIZE) {
				c->body_left = strtoll(line, NULL, 16);
				c->state = c->body_left == 0 ? LG_TRAILER :
				    LG_CHUNK_DATA;
			} else if (c->state == LG_CHUNK_CRLF)
				c->state = LG_CHUNK_SIZE;
			else if (n == 0) {
				free(line);
				return 1;
			}
			free(line);
			break;
		case LG_CHUNK_DATA:
			if (body_read(c, in) == 0)
				return 0;
			c->state = LG_CHUNK_CRLF;
			break;
		default:
			return -1;
		}
	}
}

static void
read_cb(struct bufferevent *bev, void *arg)
{
	struct lg_conn	*c = arg;
	struct evbuffer	*in = bufferevent_get_input(bev);
	int		 r, chunked;

	for (;;) {
		switch (c->state) {
		case LG_TUNNEL:
			r = head_parse(c, in, &chunked);
			if (r <= 0) {
				if (r < 0)
					conn_fail(c);
				return;
			}
			if (c->status != 200) {
				conn_fail(c);
				return;
			}
			c->lg->established++;
			if (c->lg->mode == LG_IDLE) {
				c->state = LG_HELD;
				return;
			}
			if (c->lg->tls) {
				tls_start(c);
				return;
			}
			conn_send(c);
			if (c->bev == NULL)
				return;
			break;
		case LG_HEAD:
			r = head_parse(c, in, &chunked);
			if (r <= 0) {
				if (r < 0)
					conn_fail(c);
				return;
			}
			c->state = chunked ? LG_CHUNK_SIZE : LG_BODY;
			break;
		case LG_BODY:
			if (body_read(c, in) == 0) {
				if (c->lg->mode == LG_BULK && bulk_start(c) == -1)
					conn_fail(c);
				return;
			}
			conn_done(c);
			if (c->bev == NULL || c->state != LG_HEAD ||
			    evbuffer_get_length(bufferevent_get_input(
			    c->bev)) == 0)
				return;
			in = bufferevent_get_input(c->bev);
			break;
		case LG_CHUNK_SIZE:
		case LG_CHUNK_DATA:
		case LG_CHUNK_CRLF:
		case LG_TRAILER:
			r = chunk_read(c, in);
			if (r < 0)
				conn_fail(c);
			if (r <= 0)
				return;
			conn_done(c);
			if (c->bev == NULL || c->state != LG_HEAD)
				return;
			in = bufferevent_get_input(c->bev);
			break;
		default:
			/* unexpected bytes: drop them */
			evbuffer_drain(in, evbuffer_get_length(in));
			return;
		}
	}
}

/*
 * A large body: libevent 2.1 reads sockets at most 4 KiB at a time, so
 * bulk bodies are read with read(2) into one big buffer instead, keeping
 * the load generator's own cost per byte low.
 */
static int
bulk_start(struct lg_conn *c)
{
	if (c->body_left <= 0)
		return 0;
	bufferevent_disable(c->bev, EV_READ);
	if (c->raw == NULL)
		c->raw = event_new(c->lg->base, bufferevent_getfd(c->bev),
		    EV_READ | EV_PERSIST, bulk_read_cb, c);
	if (c->raw == NULL)
		return -1;
	return event_add(c->raw, NULL);
}

static void
bulk_read_cb(evutil_socket_t fd, short what, void *arg)
{
	static char	 buf[LG_READ_MAX];
	struct lg_conn	*c = arg;
	struct lg	*lg = c->lg;
	ssize_t		 n;
	size_t		 want;

	(void)what;
	want = sizeof(buf);
	if ((int64_t)want > c->body_left)
		want = (size_t)c->body_left;
	n = read(fd, buf, want);
	if (n == -1 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		conn_fail(c);
		return;
	}
	lg->bytes += (uint64_t)n;
	if (!lg->stopping)
		lg->bytes_window += (uint64_t)n;
	c->body_left -= n;
	if (c->body_left > 0)
		return;
	event_del(c->raw);
	bufferevent_enable(c->bev, EV_READ);
	conn_done(c);
}

static void
event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct lg_conn	*c = arg;
	struct lg	*lg = c->lg;
	unsigned	 opens = c->opens;

	(void)bev;
	/*
	 * A TLS filter may report the close before the bytes that came with
	 * it: read those first. A response they complete closes this
	 * connection (and may open the next one in this slot).
	 */
	if ((what & BEV_EVENT_EOF) && c->bev != NULL &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) > 0) {
		read_cb(c->bev, c);
		if (c->opens != opens || c->bev == NULL)
			return;
	}
	if ((what & BEV_EVENT_CONNECTED) && c->state == LG_HANDSHAKE) {
		conn_send(c);
		return;
	}
	if (what & BEV_EVENT_CONNECTED) {
		if (lg->have_proxy && lg->mode != LG_HTTP &&
		    lg->mode != LG_BLOCKED) {
			c->state = LG_TUNNEL;
			bufferevent_write(c->bev, lg->tunnel_req,
			    lg->tunnel_reqlen);
		} else
			conn_send(c);
		return;
	}
	/* EOF ends a body that runs until close. */
	if ((what & BEV_EVENT_EOF) && c->state == LG_BODY &&
	    c->body_left < 0) {
		c->close_after = 1;
		conn_done(c);
		return;
	}
	/* A kept-alive connection closed between requests: reconnect. */
	if ((what & BEV_EVENT_EOF) && c->state == LG_READY) {
		conn_close(c, 1);
		return;
	}
	/*
	 * A reused connection closed before any byte of the answer: the
	 * server dropped keep-alive without saying so (HTTP clients retry
	 * such a request on a new connection, RFC 9112 section 9.3.1).
	 */
	if ((what & BEV_EVENT_EOF) && c->state == LG_HEAD && c->nreq > 1 &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0 &&
	    !lg->stopping) {
		lg->issued--;
		lg->retries++;
		conn_close(c, 1);
		return;
	}
	if (lg->stopping && !lg->draining) {
		conn_close(c, 0);
		return;
	}
	conn_fail(c);
}

static void
window_end(struct lg *lg)
{
	if (lg->stopping)
		return;
	lg->stopping = 1;
	lg->t_end = now_us();
	lg->cpu_end = proc_cpu_ns(lg->proxy_pid);
}

/* The window is over: drain (blocked mode) or close everything. */
static void
deadline_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg	*lg = arg;
	int		 i;

	(void)fd;
	(void)what;
	window_end(lg);
	if (lg->mode == LG_BLOCKED) {
		lg->draining = 1;
		maybe_finish(lg);
		return;
	}
	for (i = 0; i < lg->concurrency; i++)
		if (lg->conns[i].bev != NULL)
			conn_close(&lg->conns[i], 0);
	event_base_loopexit(lg->base, NULL);
}

static void
hard_cb(evutil_socket_t fd, short what, void *arg)
{
	struct lg	*lg = arg;

	(void)fd;
	(void)what;
	fprintf(stderr, "loadgen: hard time limit reached\n");
	window_end(lg);
	event_base_loopexit(lg->base, NULL);
}

static void
maybe_finish(struct lg *lg)
{
	if (lg->live == 0 && (lg->stopping || !conn_may_start(lg))) {
		window_end(lg);
		event_base_loopexit(lg->base, NULL);
	}
}

static uint64_t
hist_pct(struct lg *lg, double pct)
{
	uint64_t	 want, seen = 0;
	uint32_t	 i;

	if (lg->done_window == 0)
		return 0;
	want = (uint64_t)(pct / 100.0 * (double)lg->done_window);
	if (want == 0)
		want = 1;
	for (i = 0; i < LG_HIST_MAX; i++) {
		seen += lg->hist[i];
		if (seen >= want)
			return i;
	}
	return LG_HIST_MAX;
}

/* The one output line; log_lines < 0 when no log was watched. */
static void
report(struct lg *lg, long log_lines)
{
	double	 secs, cpu_us = -1, per;

	secs = (double)(lg->t_end - lg->t0) / 1e6;
	if (lg->cpu_start >= 0 && lg->cpu_end >= 0)
		cpu_us = (double)(lg->cpu_end - lg->cpu_start) / 1e3;
	printf("{\"mode\":\"%s\",\"proxy\":\"%s\",\"concurrency\":%d,"
	    "\"requests\":%" PRIu64 ",\"seconds\":%.3f,\"rps\":%.1f,",
	    lg->mode_name, lg->label, lg->concurrency, lg->done_window, secs,
	    (double)lg->done_window / secs);
	if (lg->done_window > 0)
		printf("\"p50_us\":%" PRIu64 ",\"p99_us\":%" PRIu64 ",",
		    hist_pct(lg, 50), hist_pct(lg, 99));
	else
		printf("\"p50_us\":null,\"p99_us\":null,");
	printf("\"errors\":%" PRIu64 ",\"retries\":%" PRIu64, lg->errors,
	    lg->retries);
	if (cpu_us >= 0) {
		printf(",\"proxy_cpu_s\":%.3f", cpu_us / 1e6);
		if (lg->done_window > 0 && lg->mode != LG_BULK) {
			per = cpu_us / (double)lg->done_window;
			printf(",\"proxy_cpu_us_per_req\":%.2f", per);
		}
	}
	if (lg->mode == LG_BULK) {
		printf(",\"bytes\":%" PRIu64 ",\"mib_s\":%.1f",
		    lg->bytes_window,
		    (double)lg->bytes_window / 1048576.0 / secs);
		if (cpu_us >= 0 && lg->bytes_window > 0)
			printf(",\"proxy_cpu_ms_per_gib\":%.1f", cpu_us /
			    1000.0 / ((double)lg->bytes_window /
			    1073741824.0));
	}
	if (lg->mode == LG_BLOCKED)
		printf(",\"requests_total\":%" PRIu64, lg->done);
	if (log_lines >= 0)
		printf(",\"log_attempts\":%ld,\"lines_eq_requests\":%s",
		    log_lines, (uint64_t)log_lines == lg->done ? "true" :
		    "false");
	printf("}\n");
	fflush(stdout);
}

/* Open --concurrency tunnels, hold them, report the proxy's RSS growth. */
static void
run_idle(struct lg *lg)
{
	struct timeval	 tv;
	long		 rss0, rss1;
	uint64_t	 t;
	int		 i;

	rss0 = proc_rss_kib(lg->proxy_pid);
	lg->t0 = now_us();
	for (i = 0; i < lg->concurrency; i++)
		conn_open(&lg->conns[i]);
	/* run the loop in slices until every tunnel is up or time is out */
	t = now_us();
	while ((int)lg->established + (int)lg->errors < lg->concurrency &&
	    now_us() - t < (uint64_t)(lg->max_seconds * 1e6)) {
		tv.tv_sec = 0;
		tv.tv_usec = 50000;
		event_base_loopexit(lg->base, &tv);
		event_base_dispatch(lg->base);
	}
	tv.tv_sec = (time_t)lg->hold;
	tv.tv_usec = (suseconds_t)((lg->hold - (double)tv.tv_sec) * 1e6);
	event_base_loopexit(lg->base, &tv);
	event_base_dispatch(lg->base);
	rss1 = proc_rss_kib(lg->proxy_pid);
	printf("{\"mode\":\"idle\",\"proxy\":\"%s\",\"concurrency\":%d,"
	    "\"tunnels\":%" PRIu64 ",\"errors\":%" PRIu64 ",\"rss_before_kib\""
	    ":%ld,\"rss_after_kib\":%ld,\"rss_per_tunnel_bytes\":%.0f}\n",
	    lg->label, lg->concurrency, lg->established, lg->errors, rss0,
	    rss1, lg->established ? (double)(rss1 - rss0) * 1024.0 /
	    (double)lg->established : 0.0);
	for (i = 0; i < lg->concurrency; i++)
		conn_close(&lg->conns[i], 0);
}

/*
 * The client side of a terminated tunnel: TLS 1.2 or 1.3, the peer
 * verified against --cafile and for --host, ALPN http/1.1, no session
 * kept (a client resumes only a session it was handed back).
 */
static SSL_CTX *
tls_ctx(struct lg *lg)
{
	static const unsigned char	 alpn[] = "\x08http/1.1";
	SSL_CTX				*ctx;

	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL)
		return NULL;
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_OFF);
	if (SSL_CTX_load_verify_locations(ctx, lg->cafile, NULL) != 1 ||
	    SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0) {
		SSL_CTX_free(ctx);
		return NULL;
	}
	return ctx;
}

/* The tunnel is up: run a TLS client over it (an OpenSSL filter). */
static void
tls_start(struct lg_conn *c)
{
	struct lg		*lg = c->lg;
	struct bufferevent	*f;
	SSL			*ssl;

	ssl = SSL_new(lg->ssl_ctx);
	if (ssl == NULL || SSL_set_tlsext_host_name(ssl, lg->host) != 1 ||
	    SSL_set1_host(ssl, lg->host) != 1) {
		SSL_free(ssl);
		conn_fail(c);
		return;
	}
	f = bufferevent_openssl_filter_new(lg->base, c->bev, ssl,
	    BUFFEREVENT_SSL_CONNECTING, BEV_OPT_CLOSE_ON_FREE);
	if (f == NULL) {
		SSL_free(ssl);
		conn_fail(c);
		return;
	}
	/* the filter owns the socket's bufferevent from here on */
	c->bev = f;
	c->state = LG_HANDSHAKE;
	bufferevent_openssl_set_allow_dirty_shutdown(f, 1);
	bufferevent_setcb(f, read_cb, NULL, event_cb, c);
	bufferevent_enable(f, EV_READ | EV_WRITE);
}

static const struct {
	const char	*name;
	enum lg_mode	 mode;
	int		 tls;
} lg_modes[] = {
	{ "http", LG_HTTP, 0 }, { "connect", LG_CONNECT, 0 },
	{ "connect-churn", LG_CHURN, 0 }, { "bulk", LG_BULK, 0 },
	{ "idle", LG_IDLE, 0 }, { "blocked", LG_BLOCKED, 0 },
	{ "terminate", LG_CONNECT, 1 }, { "terminate-churn", LG_CHURN, 1 }
};

static double
arg_num(const char *s, double lo, double hi)
{
	char	*end;
	double	 v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || *end != '\0' || v < lo || v > hi) {
		fprintf(stderr, "loadgen: bad number \"%s\"\n", s);
		exit(2);
	}
	return v;
}

static void
parse_args(struct lg *lg, int argc, char **argv)
{
	const char	*opt, *val;
	size_t		 i;
	int		 k, found;

	for (k = 1; k < argc; k += 2) {
		opt = argv[k];
		if (k + 1 >= argc)
			usage();
		val = argv[k + 1];
		if (strcmp(opt, "--mode") == 0) {
			found = 0;
			for (i = 0; i < sizeof(lg_modes) / sizeof(lg_modes[0]);
			    i++)
				if (strcmp(val, lg_modes[i].name) == 0) {
					lg->mode = lg_modes[i].mode;
					lg->mode_name = lg_modes[i].name;
					lg->tls = lg_modes[i].tls;
					found = 1;
				}
			if (!found)
				usage();
		} else if (strcmp(opt, "--proxy") == 0) {
			if (parse_hostport(val, &lg->proxy) == -1)
				usage();
			lg->have_proxy = 1;
		} else if (strcmp(opt, "--target") == 0) {
			if (parse_hostport(val, &lg->target) == -1)
				usage();
		} else if (strcmp(opt, "--concurrency") == 0)
			lg->concurrency = (int)arg_num(val, 1, LG_MAX_CONNS);
		else if (strcmp(opt, "--duration") == 0)
			lg->duration = arg_num(val, 0.1, 3600);
		else if (strcmp(opt, "--requests") == 0)
			lg->max_requests = (uint64_t)arg_num(val, 1, 1e9);
		else if (strcmp(opt, "--max-seconds") == 0)
			lg->max_seconds = arg_num(val, 1, 3600);
		else if (strcmp(opt, "--hold") == 0)
			lg->hold = arg_num(val, 0, 600);
		else if (strcmp(opt, "--proxy-pid") == 0)
			lg->proxy_pid = (long)arg_num(val, 1, INT_MAX);
		else if (strcmp(opt, "--label") == 0)
			lg->label = val;
		else if (strcmp(opt, "--path") == 0)
			lg->path = val;
		else if (strcmp(opt, "--blocked-host") == 0)
			lg->blocked_host = val;
		else if (strcmp(opt, "--log-file") == 0)
			lg->log_file = val;
		else if (strcmp(opt, "--host") == 0)
			lg->host = val;
		else if (strcmp(opt, "--cafile") == 0)
			lg->cafile = val;
		else
			usage();
	}
	if (lg->mode_name == NULL || lg->target.sin_family != AF_INET)
		usage();
	if (!lg->have_proxy && (lg->mode == LG_CHURN || lg->mode == LG_IDLE ||
	    lg->mode == LG_BLOCKED)) {
		fprintf(stderr, "loadgen: mode %s needs --proxy\n",
		    lg->mode_name);
		exit(2);
	}
	if (lg->tls && (!lg->have_proxy || lg->host == NULL ||
	    lg->cafile == NULL)) {
		fprintf(stderr, "loadgen: mode %s needs --proxy, --host and "
		    "--cafile\n", lg->mode_name);
		exit(2);
	}
	if (lg->host != NULL && strlen(lg->host) > 40) {
		fprintf(stderr, "loadgen: --host \"%s\" is too long\n",
		    lg->host);
		exit(2);
	}
}

static void
raise_nofile(void)
{
	struct rlimit	 rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

int
main(int argc, char **argv)
{
	struct lg	 lg;
	struct timeval	 tv;
	long		 lines0 = 0, lines1;
	int		 i;

	memset(&lg, 0, sizeof(lg));
	lg.concurrency = 1;
	lg.duration = 5;
	lg.max_seconds = 120;
	lg.hold = 2;
	lg.label = "direct";
	lg.path = NULL;
	lg.blocked_host = "127.0.0.2";
	lg.cpu_start = lg.cpu_end = -1;
	parse_args(&lg, argc, argv);
	if (lg.path == NULL)
		lg.path = lg.mode == LG_BULK ? "/big" : "/small";
	raise_nofile();
	build_requests(&lg);
	lg.base = event_base_new();
	lg.conns = calloc((size_t)lg.concurrency, sizeof(*lg.conns));
	lg.hist = calloc(LG_HIST_MAX, sizeof(*lg.hist));
	if (lg.base == NULL || lg.conns == NULL || lg.hist == NULL) {
		fprintf(stderr, "loadgen: out of memory\n");
		return 1;
	}
	for (i = 0; i < lg.concurrency; i++)
		lg.conns[i].lg = &lg;
	if (lg.tls && (lg.ssl_ctx = tls_ctx(&lg)) == NULL) {
		fprintf(stderr, "loadgen: cannot make a TLS context with "
		    "CA file %s\n", lg.cafile);
		return 1;
	}
	if (lg.mode == LG_IDLE) {
		run_idle(&lg);
		return lg.errors == 0 ? 0 : 1;
	}
	if (lg.log_file != NULL)
		lines0 = file_attempts(lg.log_file);
	lg.cpu_start = proc_cpu_ns(lg.proxy_pid);
	lg.t0 = now_us();
	if (lg.max_requests == 0) {
		tv.tv_sec = (time_t)lg.duration;
		tv.tv_usec = (suseconds_t)((lg.duration -
		    (double)tv.tv_sec) * 1e6);
		lg.deadline_ev = evtimer_new(lg.base, deadline_cb, &lg);
		evtimer_add(lg.deadline_ev, &tv);
	}
	tv.tv_sec = (time_t)lg.max_seconds;
	tv.tv_usec = 0;
	lg.hard_ev = evtimer_new(lg.base, hard_cb, &lg);
	evtimer_add(lg.hard_ev, &tv);
	for (i = 0; i < lg.concurrency && conn_may_start(&lg); i++)
		conn_open(&lg.conns[i]);
	event_base_dispatch(lg.base);
	window_end(&lg);
	lines1 = -1;
	if (lg.log_file != NULL) {
		/*
		 * Full lines are written at once; summaries when their window
		 * ends (bench/run gives the proxy a 1 s one): wait up to 5 s.
		 */
		for (i = 0; i < 25; i++) {
			lines1 = file_attempts(lg.log_file) - lines0;
			if ((uint64_t)lines1 >= lg.done)
				break;
			usleep(200000);
		}
	}
	report(&lg, lines1);
	for (i = 0; i < lg.concurrency; i++)
		if (lg.conns[i].bev != NULL)
			bufferevent_free(lg.conns[i].bev);
	if (lg.deadline_ev != NULL)
		event_free(lg.deadline_ev);
	event_free(lg.hard_ev);
	event_base_free(lg.base);
	SSL_CTX_free(lg.ssl_ctx);
	free(lg.conns);
	free(lg.hist);
	return 0;
}
