/* proxyctl.c: the proxy's control socket, from the controller; proxyctl.h. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <openssl/rand.h>

#include "auditkey.h"
#include "checkpoint.h"
#include "docker.h"
#include "execend.h"
#include "exectoken.h"
#include "log.h"
#include "pending.h"
#include "proxyctl.h"
#include "quote.h"
#include "repset.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"

#define PROXYCTL_RESPONSE_MAX	(16u * 1024 * 1024)
/* Seconds: to connect to a replica, a GET, a change, the socket. */
#define PROXYCTL_CONNECT_S	2
#define PROXYCTL_READ_S		5
#define PROXYCTL_CHANGE_S	10
#define PROXYCTL_SOCKET_S	30

struct proxyctl_buf {
	char	*p;
	size_t	 len;
	int	 toobig;
};

/*
 * The replicas of SANDGATE_PROXY_CONTROL, or the socket (url[0] ""):
 * url[0..n-1]; then up to url[total - 1] those that a sandbox or a kept
 * send names beyond them (proxyctl_target_index), "" the socket.
 */
struct proxyctl_reps {
	int	 parsed;
	size_t	 n, total;
	char	 url[PROXYCTL_TARGETS_MAX][PROXYCTL_URL_MAX];
	char	 error[PROXYCTL_URL_MAX + 96];
};

static struct proxyctl_reps	proxyctl_reps;

static size_t	proxyctl_write(char *, size_t, size_t, void *);
static void	proxyctl_replicas_parse(void);
static void	proxyctl_replicas_split(struct proxyctl_reps *);
static int	proxyctl_token(struct curl_slist **, char **);
static int	proxyctl_target(CURL *, size_t, const char *, char *, size_t,
		    struct curl_slist **, char **);
static int	proxyctl_raw(size_t, const char *method, const char *path,
		    const char *body, long *status, struct proxyctl_buf *,
		    char **cause);
static void	proxyctl_missed_add(char **, size_t, const char *, long);
static int	proxyctl_call_first(const char *, const char *, json_t *,
		    long *, json_t **, char **);
static void	proxyctl_call_n(const char *, const char *const *, size_t,
		    json_t *, struct proxyctl_ans *);
static const char *proxyctl_set_name(size_t);

/*
 * The replicas (as a set names them) that failed to answer in this
 * command, and how often: one whose answer timed out or took
 * PROXYCTL_SLOW_S or more to fail (closed unanswered just before its
 * timeout, or any answer that does not confirm: an HTTP error, not the
 * proxy's answer, atk1921m F2, F3), or whose answer failed
 * PROXYCTL_FAILS_MAX times in all, is stalled: each later send to it in
 * the command (its own as well as kept ones) is skipped and stays owed,
 * and a failed one is not tried again, so that it costs one slow failure
 * per command, not one per try of each send (atk1921j F6, atk1921k F2).
 * A name that did not resolve, or a connection that failed, counts too
 * once it took PROXYCTL_INSTANT_MS or more (a slow resolver's NXDOMAIN,
 * an unreachable host: atk1921n F3); only one refused at once costs
 * nothing to wait for and is not counted. Every replica named is kept
 * here, however many a command meets (kept sends name any number):
 * none goes uncounted (atk1921n F4: past 32 names, a slow one was never
 * stalled).
 */
#define PROXYCTL_SLOW_S		2
#define PROXYCTL_INSTANT_MS	200
#define PROXYCTL_FAILS_MAX	8
static struct proxyctl_failed {
	char	*name;
	int	 fails;
	int	 stalled;
} *proxyctl_failed;
static size_t	 proxyctl_nfailed, proxyctl_failed_cap;

/*
 * The failures of replica i in proxyctl_failed (added when new; *stalled
 * its mark).
 */
static int *
proxyctl_fails(size_t i, int **stalled)
{
	struct proxyctl_failed	*l;
	size_t			 k;

	for (k = 0; k < proxyctl_nfailed; k++)
		if (strcmp(proxyctl_failed[k].name, proxyctl_set_name(i)) == 0)
			break;
	if (k == proxyctl_nfailed) {
		if (k == proxyctl_failed_cap) {
			proxyctl_failed_cap = k ? 2 * k : 16;
			if ((l = realloc(proxyctl_failed, proxyctl_failed_cap *
			    sizeof(*l))) == NULL)
				fatalx("out of memory");
			proxyctl_failed = l;
		}
		proxyctl_failed[k].name = util_xstrdup(proxyctl_set_name(i));
		proxyctl_failed[k].fails = proxyctl_failed[k].stalled = 0;
		proxyctl_nfailed++;
	}
	*stalled = &proxyctl_failed[k].stalled;
	return &proxyctl_failed[k].fails;
}

static int
proxyctl_stalled_at(size_t i)
{
	size_t	k;

	for (k = 0; k < proxyctl_nfailed; k++)
		if (strcmp(proxyctl_failed[k].name, proxyctl_set_name(i)) == 0)
			return proxyctl_failed[k].stalled;
	return 0;
}

/* A failed answer of replica i (slow: it took PROXYCTL_SLOW_S or more). */
static void
proxyctl_fail(size_t i, int slow)
{
	int	*fails, *stalled;

	fails = proxyctl_fails(i, &stalled);
	if (slow || ++*fails >= PROXYCTL_FAILS_MAX)
		*stalled = 1;
}

const char *
proxyctl_socket_path(void)
{
	static char	path[4096];

	if (path[0] == '\0')
		snprintf(path, sizeof(path), "%s/proxy/run/control.sock",
		    state_root());
	return path;
}

/*
 * The local control socket as curl is given it: /proc/self/fd/N of an
 * O_PATH descriptor of proxyctl_socket_path() opened without following
 * a link, so the controller speaks to that socket or to none. The
 * proxy's uid owns the folder it is in and could make the name a link to
 * another unix socket on the host, which the controller, as root, would
 * then speak to (atk44a F5). Opened again for each request (a proxy
 * started again made a new socket); a name that cannot exist when there
 * is nothing there (curl then says it cannot connect); NULL with *cause
 * when what is there is no socket.
 */
static const char *
proxyctl_socket_fd_path(char **cause)
{
	static int	 fd = -1;
	static char	 path[64];
	struct stat	 st;
	const char	*sock = proxyctl_socket_path();

	memset(&st, 0, sizeof(st));
	if (fd != -1)
		close(fd);
	if ((fd = open(sock, O_PATH | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		/*
		 * Nothing there: a name nobody can make, so that curl says
		 * it cannot connect. Not sock: a link put there after this
		 * open would be followed (atk44c E3).
		 */
		if (errno == ENOENT)
			return "/proc/self/fd/-1";
		util_cause(cause, "control socket %s: %s", sock,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISSOCK(st.st_mode)) {
		util_cause(cause, "control socket %s is %s; refusing to use "
		    "it", sock, S_ISLNK(st.st_mode) ? "a link (the proxy's "
		    "folder is its own: a link there is not followed)" :
		    "not a socket");
		close(fd);
		fd = -1;
		return NULL;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	return path;
}

static size_t
proxyctl_write(char *data, size_t size, size_t n, void *arg)
{
	struct proxyctl_buf	*b = arg;
	size_t			 len = size * n;
	char			*p;

	if (b->len + len > PROXYCTL_RESPONSE_MAX) {
		b->toobig = 1;
		return 0;
	}
	if ((p = realloc(b->p, b->len + len + 1)) == NULL)
		return 0;
	memcpy(p + b->len, data, len);
	b->p = p;
	b->len += len;
	b->p[b->len] = '\0';
	return len;
}

const char *
proxyctl_remote(void)
{
	const char	*url = getenv("SANDGATE_PROXY_CONTROL");

	return url != NULL && *url != '\0' ? url : NULL;
}

/*
 * SANDGATE_PROXY_CONTROL split at its commas (blanks around each URL
 * dropped) into proxyctl_reps; an empty, overlong or extra URL leaves
 * the error that every request then fails with.
 */
static void
proxyctl_replicas_parse(void)
{
	struct proxyctl_reps	*r = &proxyctl_reps;

	if (r->parsed)
		return;
	r->parsed = 1;
	proxyctl_replicas_split(r);
	r->total = r->n;
}

static void
proxyctl_replicas_split(struct proxyctl_reps *r)
{
	const char		*p = proxyctl_remote();
	size_t			 len, l;

	r->n = 1;
	if (p == NULL)
		return;
	for (r->n = 0;; p += len + 1) {
		p += strspn(p, " \t");
		len = strcspn(p, ",");
		for (l = len; l > 0 && (p[l - 1] == ' ' || p[l - 1] == '\t');)
			l--;
		if (l == 0 || l >= PROXYCTL_URL_MAX ||
		    r->n == PROXYCTL_REPLICAS_MAX) {
			snprintf(r->error, sizeof(r->error),
			    "SANDGATE_PROXY_CONTROL: %s (at most %d URLs of "
			    "at most %d bytes)", l == 0 ? "an empty URL" :
			    r->n == PROXYCTL_REPLICAS_MAX ? "too many URLs" :
			    "a URL too long", PROXYCTL_REPLICAS_MAX,
			    PROXYCTL_URL_MAX - 1);
			r->n = 1;
			return;
		}
		memcpy(r->url[r->n], p, l);
		r->url[r->n++][l] = '\0';
		if (p[len] == '\0')
			return;
	}
}

size_t
proxyctl_replicas(void)
{
	proxyctl_replicas_parse();
	return proxyctl_reps.n;
}

const char *
proxyctl_replica_name(size_t i)
{
	proxyctl_replicas_parse();
	if (i >= proxyctl_reps.total)
		return "?";
	return proxyctl_reps.url[i][0] == '\0' ? proxyctl_socket_path() :
	    proxyctl_reps.url[i];
}

/* Replica i over TCP (else the socket). */
static int
proxyctl_tcp(size_t i)
{
	proxyctl_replicas_parse();
	return i < proxyctl_reps.total && proxyctl_reps.url[i][0] != '\0';
}

/*
 * The token of SANDGATE_PROXY_CONTROL_TOKEN_FILE as an Authorization
 * header appended to *hdrs; 0, or -1 with *cause.
 */
static int
proxyctl_token(struct curl_slist **hdrs, char **cause)
{
	const char	*path = getenv("SANDGATE_PROXY_CONTROL_TOKEN_FILE");
	char		 tok[1100], line[1200];
	FILE		*f;
	size_t		 n;

	if (path == NULL || *path == '\0')
		return util_cause(cause, "SANDGATE_PROXY_CONTROL is set: "
		    "SANDGATE_PROXY_CONTROL_TOKEN_FILE must name its token");
	if ((f = fopen(path, "re")) == NULL)
		return util_cause(cause, "SANDGATE_PROXY_CONTROL_TOKEN_FILE "
		    "%s: %s", path, strerror(errno));
	n = fread(tok, 1, sizeof(tok) - 1, f);
	fclose(f);
	tok[n] = '\0';
	tok[strcspn(tok, "\r\n")] = '\0';
	snprintf(line, sizeof(line), "Authorization: Bearer %s", tok);
	explicit_bzero(tok, sizeof(tok));
	*hdrs = curl_slist_append(*hdrs, line);
	explicit_bzero(line, sizeof(line));
	return *hdrs == NULL ? util_cause(cause, "out of memory") : 0;
}

/*
 * Where a request goes: the unix socket, or the TCP API of
 * SANDGATE_PROXY_CONTROL (http:// or https://HOST:PORT, with the token
 * of SANDGATE_PROXY_CONTROL_TOKEN_FILE; https:// checked against the CA
 * bundle of SANDGATE_PROXY_CONTROL_CA, else the system's). 0, or -1 with
 * *cause.
 */
static int
proxyctl_target(CURL *h, size_t i, const char *path, char *url,
    size_t size, struct curl_slist **hdrs, char **cause)
{
	const char	*base, *sock;

	proxyctl_replicas_parse();
	if (proxyctl_reps.error[0] != '\0')
		return util_cause(cause, "%s", proxyctl_reps.error);
	base = proxyctl_reps.url[i < proxyctl_reps.total ? i : 0];
	if (base[0] == '\0') {
		if ((sock = proxyctl_socket_fd_path(cause)) == NULL)
			return -1;
		snprintf(url, size, "http://proxy%s", path);
		curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, sock);
	} else {
		if (strncmp(base, "http://", 7) != 0 &&
		    strncmp(base, "https://", 8) != 0)
			return util_cause(cause, "SANDGATE_PROXY_CONTROL \"%s\" "
			    "is not an http:// or https:// URL", base);
		if (proxyctl_token(hdrs, cause) == -1)
			return -1;
		snprintf(url, size, "%.*s%s", (int)strcspn(base + 8, "/") + 8,
		    base, path);
		curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
		if (getenv("SANDGATE_PROXY_CONTROL_CA") != NULL)
			curl_easy_setopt(h, CURLOPT_CAINFO,
			    getenv("SANDGATE_PROXY_CONTROL_CA"));
		curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
		/*
		 * straight to the replica: never through a proxy the
		 * environment names (http_proxy, all_proxy), which would
		 * get the control token (atk1921j F5)
		 */
		curl_easy_setopt(h, CURLOPT_PROXY, "");
	}
	curl_easy_setopt(h, CURLOPT_URL, url);
	return 0;
}

/* A request being made: its handle, headers and reply. */
struct proxyctl_req {
	CURL			*h;
	struct curl_slist	*hdrs;
	struct proxyctl_buf	 b;
	int			 again;	/* closed unanswered: send again */
	long			 took_ms;	/* set by proxyctl_req_end */
	struct timespec		 began;		/* by proxyctl_req_new */
};

/*
 * How often a request the replica closed unanswered is sent: its TCP
 * control API closes an unauthenticated connection at its cap, and
 * ours counts as one until its head is read (ctlconn.c), so a flood
 * can cut it before the request is seen. Every control request is one
 * a replica can take twice (a grant replaces the same one; a revoke
 * twice answers 404, which is shown, never taken for done).
 */
#define PROXYCTL_TRIES	4

/*
 * The transfer of h ended (rc) with no answer on a connection made, or
 * timed out before the request went out (a flood fills the listen
 * queue): send again.
 */
static int
proxyctl_unanswered(CURL *h, CURLcode rc)
{
	curl_off_t	pre = 0;

	if (rc == CURLE_OPERATION_TIMEDOUT)
		return curl_easy_getinfo(h, CURLINFO_PRETRANSFER_TIME_T,
		    &pre) == CURLE_OK && pre == 0;
	return rc == CURLE_GOT_NOTHING || rc == CURLE_SEND_ERROR ||
	    rc == CURLE_RECV_ERROR || rc == CURLE_SSL_CONNECT_ERROR;
}

/* Before try number try + 1: 50 ms, then 100, 200. */
static void
proxyctl_pause(int try)
{
	struct timespec	ts = { 0, 50000000L << (try - 1) };

	(void)nanosleep(&ts, NULL);
}

/*
 * A request to replica i set up in r (body borrowed until it ends),
 * with the timeouts of its kind: a replica over TCP gets
 * PROXYCTL_CONNECT_S to connect and PROXYCTL_READ_S (a GET) or
 * PROXYCTL_CHANGE_S in all, so that a dead one is not waited on for
 * long. 0, or -1 with *cause.
 */
static int
proxyctl_req_new(struct proxyctl_req *r, size_t i, const char *method,
    const char *path, const char *body, char **cause)
{
	char	url[512];
	int	get = strcmp(method, "GET") == 0;

	memset(r, 0, sizeof(*r));
	(void)clock_gettime(CLOCK_MONOTONIC, &r->began);
	if ((r->h = curl_easy_init()) == NULL)
		return util_cause(cause, "out of memory");
	if (proxyctl_target(r->h, i, path, url, sizeof(url), &r->hdrs,
	    cause) == -1) {
		curl_slist_free_all(r->hdrs);
		curl_easy_cleanup(r->h);
		r->h = NULL;
		return -1;
	}
	curl_easy_setopt(r->h, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(r->h, CURLOPT_WRITEFUNCTION, proxyctl_write);
	curl_easy_setopt(r->h, CURLOPT_WRITEDATA, &r->b);
	curl_easy_setopt(r->h, CURLOPT_NOSIGNAL, 1L);
	if (proxyctl_tcp(i)) {
		curl_easy_setopt(r->h, CURLOPT_CONNECTTIMEOUT,
		    (long)PROXYCTL_CONNECT_S);
		curl_easy_setopt(r->h, CURLOPT_TIMEOUT, get ?
		    (long)PROXYCTL_READ_S : (long)PROXYCTL_CHANGE_S);
	} else
		curl_easy_setopt(r->h, CURLOPT_TIMEOUT, (long)PROXYCTL_SOCKET_S);
	if (body != NULL) {
		r->hdrs = curl_slist_append(r->hdrs,
		    "Content-Type: application/json");
		curl_easy_setopt(r->h, CURLOPT_POSTFIELDS, body);
	}
	curl_easy_setopt(r->h, CURLOPT_HTTPHEADER, r->hdrs);
	return 0;
}

/*
 * The end of r's transfer (rc): *status, and the reply in r->b; 0, or
 * -1 with *cause naming replica i.
 */
static int
proxyctl_req_end(struct proxyctl_req *r, size_t i, CURLcode rc,
    long *status, char **cause)
{
	struct timespec	now;
	curl_off_t	took = 0;

	curl_easy_getinfo(r->h, CURLINFO_RESPONSE_CODE, status);
	(void)curl_easy_getinfo(r->h, CURLINFO_TOTAL_TIME_T, &took);
	r->took_ms = (long)(took / 1000);
	(void)clock_gettime(CLOCK_MONOTONIC, &now);
	if ((now.tv_sec - r->began.tv_sec) * 1000L + (now.tv_nsec -
	    r->began.tv_nsec) / 1000000L > r->took_ms)
		r->took_ms = (now.tv_sec - r->began.tv_sec) * 1000L +
		    (now.tv_nsec - r->began.tv_nsec) / 1000000L;
	/* not resolved, not connected: counted once it took time (F3) */
	if (rc != CURLE_OK && ((rc != CURLE_COULDNT_CONNECT &&
	    rc != CURLE_COULDNT_RESOLVE_HOST) ||
	    r->took_ms >= PROXYCTL_INSTANT_MS))
		proxyctl_fail(i, rc == CURLE_OPERATION_TIMEDOUT ||
		    r->took_ms >= PROXYCTL_SLOW_S * 1000L);
	/*
	 * one stalled is not tried again, but for a request a flood kept
	 * from going out at all (timed out before it was sent: as before)
	 */
	r->again = proxyctl_unanswered(r->h, rc) &&
	    (rc == CURLE_OPERATION_TIMEDOUT || !proxyctl_stalled_at(i));
	curl_slist_free_all(r->hdrs);
	curl_easy_cleanup(r->h);
	r->h = NULL;
	r->hdrs = NULL;
	if (rc != CURLE_OK) {
		util_cause(cause, "cannot reach the proxy's control %s %s "
		    "(%s); start it with `sandgate proxy start`",
		    proxyctl_tcp(i) ? "API" : "socket",
		    proxyctl_replica_name(i), curl_easy_strerror(rc));
		free(r->b.p);
		r->b.p = NULL;
		return -1;
	}
	return 0;
}

/* One HTTP request to replica i; the reply body into *b. */
static int
proxyctl_raw(size_t i, const char *method, const char *path,
    const char *body, long *status, struct proxyctl_buf *b, char **cause)
{
	struct proxyctl_req	r;
	int			rv, try;

	memset(b, 0, sizeof(*b));
	for (try = 1; ; try++) {
		if (proxyctl_req_new(&r, i, method, path, body, cause) == -1)
			return -1;
		rv = proxyctl_req_end(&r, i, curl_easy_perform(r.h), status,
		    cause);
		if (rv == 0 || !r.again || try == PROXYCTL_TRIES)
			break;
		free(*cause);
		*cause = NULL;
		proxyctl_pause(try);
	}
	*b = r.b;
	return rv;
}

/* The reply in b as JSON into *resp (may be NULL); b freed. */
static void
proxyctl_parse(struct proxyctl_buf *b, json_t **resp)
{
	json_error_t	err;

	if (resp != NULL)
		*resp = b->p ? json_loadb(b->p, b->len, 0, &err) : NULL;
	free(b->p);
	b->p = NULL;
}

int
proxyctl_call_at(size_t i, const char *method, const char *path,
    json_t *body, long *status, json_t **resp, char **cause)
{
	struct proxyctl_buf	 b;
	char			*text = NULL;
	int			 rc;

	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL) {
		*cause = util_xstrdup("out of memory");
		return -1;
	}
	rc = proxyctl_raw(i, method, path, text, status, &b, cause);
	free(text);
	if (rc == -1)
		return -1;
	proxyctl_parse(&b, resp);
	return 0;
}

/* Run the transfers of r[0..n-1] (h NULL: none) at once to their end. */
static void
proxyctl_multi(struct proxyctl_req *r, size_t n, struct proxyctl_ans *ans)
{
	CURLM		*m;
	CURLMsg		*msg;
	size_t		 i;
	int		 running = 0, left;

	if ((m = curl_multi_init()) == NULL)
		return;
	for (i = 0; i < n; i++)
		if (r[i].h != NULL)
			curl_multi_add_handle(m, r[i].h);
	do {
		if (curl_multi_perform(m, &running) != CURLM_OK ||
		    (running > 0 && curl_multi_poll(m, NULL, 0, 1000, NULL) !=
		    CURLM_OK))
			break;
	} while (running > 0);
	while ((msg = curl_multi_info_read(m, &left)) != NULL) {
		for (i = 0; i < n && r[i].h != msg->easy_handle; i++)
			;
		if (msg->msg != CURLMSG_DONE || i == n)
			continue;
		curl_multi_remove_handle(m, r[i].h);
		if (proxyctl_req_end(&r[i], i, msg->data.result,
		    &ans[i].status, &ans[i].cause) == 0)
			proxyctl_parse(&r[i].b, &ans[i].resp);
		ans[i].took_ms = r[i].took_ms;
	}
	for (i = 0; i < n; i++) {
		if (r[i].h == NULL)
			continue;
		curl_multi_remove_handle(m, r[i].h);
		(void)proxyctl_req_end(&r[i], i, CURLE_RECV_ERROR,
		    &ans[i].status, &ans[i].cause);
		ans[i].took_ms = r[i].took_ms;
	}
	curl_multi_cleanup(m);
}

void
proxyctl_call_each(const char *method, const char *const *paths,
    json_t *body, struct proxyctl_ans *ans)
{
	proxyctl_call_n(method, paths, proxyctl_replicas(), body, ans);
}

/* proxyctl_call_each() to replicas 0..n-1 of those known (paths[n]). */
static void
proxyctl_call_n(const char *method, const char *const *paths, size_t n,
    json_t *body, struct proxyctl_ans *ans)
{
	struct proxyctl_req	 r[PROXYCTL_TARGETS_MAX];
	char			*text = NULL;
	size_t			 i, again;
	int			 try;

	memset(ans, 0, n * sizeof(*ans));
	memset(r, 0, sizeof(r));
	if (body != NULL && (text = json_dumps(body, JSON_COMPACT)) == NULL)
		fatal("json_dumps");
	for (i = 0; i < n; i++)
		if (paths[i] == NULL)
			ans[i].cause = util_xstrdup("not asked");
	/* Those closed unanswered are sent again (PROXYCTL_TRIES). */
	for (try = 1, again = n; again > 0; try++) {
		for (i = 0, again = 0; i < n; i++) {
			if (paths[i] == NULL || (try > 1 && !r[i].again))
				continue;
			free(ans[i].cause);
			ans[i].cause = NULL;
			(void)proxyctl_req_new(&r[i], i, method, paths[i],
			    text, &ans[i].cause);
			again++;
		}
		if (try > 1 && again > 0)
			proxyctl_pause(try - 1);
		proxyctl_multi(r, n, ans);
		for (i = 0, again = 0; i < n && try < PROXYCTL_TRIES; i++)
			again += r[i].again;
	}
	free(text);
}

void
proxyctl_call_all(const char *method, const char *path, json_t *body,
    struct proxyctl_ans *ans)
{
	const char	*paths[PROXYCTL_REPLICAS_MAX];
	size_t		 i;

	for (i = 0; i < PROXYCTL_REPLICAS_MAX; i++)
		paths[i] = path;
	proxyctl_call_each(method, paths, body, ans);
}

void
proxyctl_ans_free(struct proxyctl_ans *ans, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++) {
		json_decref(ans[i].resp);
		free(ans[i].cause);
	}
	memset(ans, 0, n * sizeof(*ans));
}

/* "NAME (why)" appended to the list *missed (heap, "; " between). */
static void
proxyctl_missed_add(char **missed, size_t i, const char *cause,
    long status)
{
	char	*tmp;

	if (cause != NULL)
		util_xasprintf(&tmp, "%s%s%s (%s)", *missed ? *missed : "",
		    *missed ? "; " : "", proxyctl_replica_name(i), cause);
	else
		util_xasprintf(&tmp, "%s%s%s (HTTP %ld)", *missed ? *missed :
		    "", *missed ? "; " : "", proxyctl_replica_name(i), status);
	free(*missed);
	*missed = tmp;
}

int
proxyctl_call_fan(const char *method, const char *path, json_t *body,
    long *status, json_t **resp, char **missed, char **cause)
{
	struct proxyctl_ans	a[PROXYCTL_REPLICAS_MAX];
	size_t			i, n = proxyctl_replicas();
	int			first = 1;

	*missed = NULL;
	if (n == 1)
		return proxyctl_call_at(0, method, path, body, status, resp,
		    cause);
	proxyctl_call_all(method, path, body, a);
	for (i = 0; i < n; i++) {
		if (a[i].cause == NULL && first) {
			first = 0;
			*status = a[i].status;
			if (resp != NULL) {
				*resp = a[i].resp;
				a[i].resp = NULL;
			}
			continue;
		}
		if (a[i].cause != NULL || a[i].status != *status)
			proxyctl_missed_add(missed, i, a[i].cause,
			    a[i].status);
	}
	proxyctl_ans_free(a, n);
	if (!first)
		return 0;
	util_cause(cause, "no proxy replica answered: %s", *missed);
	free(*missed);
	*missed = NULL;
	return -1;
}

/*
 * The first replica that answers, in SANDGATE_PROXY_CONTROL's order
 * (all asked at once).
 */
static int
proxyctl_call_first(const char *method, const char *path, json_t *body,
    long *status, json_t **resp, char **cause)
{
	struct proxyctl_ans	 a[PROXYCTL_REPLICAS_MAX];
	char			*missed = NULL;
	size_t			 i, n = proxyctl_replicas();

	if (n == 1)
		return proxyctl_call_at(0, method, path, body, status, resp,
		    cause);
	proxyctl_call_all(method, path, body, a);
	for (i = 0; i < n && a[i].cause != NULL; i++)
		proxyctl_missed_add(&missed, i, a[i].cause, 0);
	if (i < n) {
		*status = a[i].status;
		if (resp != NULL) {
			*resp = a[i].resp;
			a[i].resp = NULL;
		}
	} else
		util_cause(cause, "no proxy replica answered: %s", missed);
	free(missed);
	proxyctl_ans_free(a, n);
	return i < n ? 0 : -1;
}

int
proxyctl_call(const char *method, const char *path, json_t *body,
    long *status, json_t **resp, char **cause)
{
	char	*missed = NULL;
	int	 rc;

	if (strcmp(method, "GET") == 0)
		return proxyctl_call_first(method, path, body, status, resp,
		    cause);
	rc = proxyctl_call_fan(method, path, body, status, resp, &missed,
	    cause);
	if (missed != NULL)
		log_warnx("warning: not every proxy replica took %s %s: %s",
		    method, path, missed);
	free(missed);
	return rc;
}

char *
proxyctl_metrics(char **cause)
{
	struct proxyctl_buf	b;
	long			status = 0;

	if (proxyctl_raw(0, "GET", "/metrics", NULL, &status, &b, cause) ==
	    -1)
		return NULL;
	if (status != 200 || b.p == NULL) {
		free(b.p);
		util_cause(cause, "the proxy answered %ld to /metrics",
		    status);
		return NULL;
	}
	return b.p;
}

int
proxyctl_address(struct docker *d, char *buf, size_t size, char **cause)
{
	char	*inner = NULL;

	if (docker_container_ip(d, PROXYCTL_CONTAINER, PROXYCTL_NET_INTERNAL,
	    buf, size, &inner) == 0)
		return 0;
	util_cause(cause, "the proxy is not running (%s); start it with "
	    "`sandgate proxy start`", inner);
	free(inner);
	return -1;
}

int
proxyctl_register(struct docker *d, const char *container,
    const char *sandbox, json_t *sets, int extra, char **cause)
{
	json_t	*body, *resp = NULL;
	char	 ip[64], *csv = NULL, *tmp, *err;
	size_t	 i;
	long	 status = 0;
	int	 rc;

	/* gVisor's containers get their address a moment after start. */
	for (i = 0; docker_container_ip(d, container, PROXYCTL_NET_INTERNAL,
	    ip, sizeof(ip), cause) == -1; i++) {
		if (i == 30)
			return -1;
		free(*cause);
		*cause = NULL;
		usleep(100000);
	}
	csv = util_xstrdup("");
	for (i = 0; i < json_array_size(sets); i++) {
		util_xasprintf(&tmp, "%s%s%s", csv, i ? "," : "",
		    json_string_value(json_array_get(sets, i)));
		free(csv);
		csv = tmp;
	}
	/* first: an unregister must reach every replica that may hold it */
	if (repset_record(sandbox, cause) == -1) {
		free(csv);
		return -1;
	}
	body = json_pack("{s:s, s:s, s:s, s:b}", "address", ip, "sandbox",
	    sandbox, "sets", csv, "extra", extra);
	free(csv);
	rc = proxyctl_call("POST", "/register", body, &status, &resp, cause);
	json_decref(body);
	if (rc == 0 && status != 200) {
		err = proxyctl_error_of(resp, "?");
		util_cause(cause, "the proxy refused to register %s: %s",
		    sandbox, err);
		free(err);
		rc = -1;
	}
	json_decref(resp);
	return rc;
}

char *
proxyctl_words(json_t *v, const char *none)
{
	const char	*s = json_string_value(v);
	char		 cut[PROXYCTL_ERROR_MAX + 1], *shown;

	/* a replica's words: escaped, cut (atk1921i F13, atk1921j F1) */
	snprintf(cut, sizeof(cut), "%s", s != NULL ? s : none);
	if ((shown = quote_text_dup(cut)) == NULL)
		shown = util_xstrdup(none);
	return shown;
}

char *
proxyctl_error_of(json_t *resp, const char *none)
{
	return proxyctl_words(json_object_get(resp, "error"), none);
}

/*
 * 1 when a (HTTP 200) is not the proxy's answer to a change: a JSON
 * object with "ok": true, an integer "removed" and an integer (a
 * boolean when bool) named field (egress-proxy/control.c). Anything
 * else answering 200 (a stand-in, a captive page) has confirmed
 * nothing (atk1921k F7).
 */
static int
proxyctl_not_ours(const struct proxyctl_ans *a, const char *field, int bool)
{
	json_t	*v = json_object_get(a->resp, field);

	return !json_is_object(a->resp) ||
	    !json_is_true(json_object_get(a->resp, "ok")) ||
	    !json_is_integer(json_object_get(a->resp, "removed")) ||
	    !(bool ? json_is_boolean(v) : json_is_integer(v));
}

static const char	proxyctl_not_ours_why[] = "HTTP 200, but not the "
			    "proxy's answer: not taken for confirmed";

/*
 * Why replica i's answer a to an /unregister does not confirm it, or
 * NULL when it does: unanswered, refused, or held but neither saved nor
 * kept apart (saved: false), which a restart of the replica would undo.
 */
static const char *
proxyctl_unreg_why(const struct proxyctl_ans *a, char *buf, size_t size)
{
	char	*err;

	if (a->cause != NULL)
		return a->cause;
	if (a->status != 200) {
		err = proxyctl_error_of(a->resp, "refused");
		snprintf(buf, size, "HTTP %ld: %s", a->status, err);
		free(err);
		return buf;
	}
	if (proxyctl_not_ours(a, "saved", 1))
		return proxyctl_not_ours_why;
	if (json_is_false(json_object_get(a->resp, "saved")))
		return "it holds the removal but could not save it nor keep "
		    "it apart: a restart would undo it";
	return NULL;
}

/* Replica i as a set names it: PROXYCTL_SET_SOCKET or its URL. */
static const char *
proxyctl_set_name(size_t i)
{
	return proxyctl_tcp(i) ? proxyctl_reps.url[i] : PROXYCTL_SET_SOCKET;
}

char *
proxyctl_set(void)
{
	char	*set = NULL, *tmp;
	size_t	 i, n = proxyctl_replicas();

	for (i = 0; i < n; i++) {
		util_xasprintf(&tmp, "%s%s%s", set ? set : "", set ? "," : "",
		    proxyctl_set_name(i));
		free(set);
		set = tmp;
	}
	return set;
}

/*
 * The replica named name[0..len-1] (PROXYCTL_SET_SOCKET or a URL) into
 * *i, added beyond those known when new. 0, or -1 when there is no room.
 */
static int
proxyctl_target_index(const char *name, size_t len, size_t *i)
{
	struct proxyctl_reps	*r = &proxyctl_reps;
	int			 sock = len == strlen(PROXYCTL_SET_SOCKET) &&
				    memcmp(name, PROXYCTL_SET_SOCKET, len) == 0;

	if (sock)
		len = 0;
	for (*i = 0; *i < r->total; (*i)++)
		if (strlen(r->url[*i]) == len &&
		    memcmp(r->url[*i], name, len) == 0)
			return 0;
	if (r->total == PROXYCTL_TARGETS_MAX || len >= PROXYCTL_URL_MAX)
		return -1;
	memcpy(r->url[r->total], name, len);
	r->url[r->total][len] = '\0';
	*i = r->total++;
	return 0;
}

/* NAME (the set's) appended to the list *left (heap, "," between). */
static void
proxyctl_left_add(char **left, const char *name)
{
	char	*tmp;

	util_xasprintf(&tmp, "%s%s%s", *left ? *left : "", *left ? "," : "",
	    name);
	free(*left);
	*left = tmp;
}

/*
 * paths[i] set to path for each replica to names (comma-separated; NULL:
 * none) and for those of the environment (unless to names some and the
 * environment names no URL: the socket is not added then). The slots
 * beyond the environment's are this send's alone (atk1921i F14); a name
 * past PROXYCTL_TARGETS_MAX is not sent to but added to *over (heap,
 * comma-separated), so the rest are (atk1921i F10).
 */
static void
proxyctl_targets(const char *to, const char *path, const char **paths,
    char **over)
{
	char	*name;
	size_t	 i, len;

	proxyctl_replicas_parse();
	proxyctl_reps.total = proxyctl_reps.n;
	*over = NULL;
	if (to != NULL && to[strspn(to, ",")] == '\0')
		to = NULL;		/* names none */
	if (to == NULL || proxyctl_remote() != NULL)
		for (i = 0; i < proxyctl_reps.n; i++)
			paths[i] = path;
	for (; to != NULL && *to != '\0'; to += len + (to[len] == ',')) {
		if ((len = strcspn(to, ",")) == 0)
			continue;
		if (proxyctl_target_index(to, len, &i) == 0) {
			paths[i] = path;
			continue;
		}
		util_xasprintf(&name, "%.*s", (int)len, to);
		proxyctl_left_add(over, name);
		free(name);
	}
}

/*
 * POST path with body (about value) sent to the replicas of to and of
 * the environment (proxyctl_targets, all at once), but not to the socket
 * when moot(value) says a stopped local proxy has nothing of it; 0 when
 * each one confirmed it (why() NULL), else -1 with *cause naming each
 * replica that did not and why, and *left (heap) those replicas.
 */
static int
proxyctl_confirm_all(const char *path, json_t *body, const char *value,
    const char *to, int (*moot)(const char *),
    const char *(*why)(const struct proxyctl_ans *, char *, size_t),
    char **left, char **cause)
{
	struct proxyctl_ans	 a[PROXYCTL_TARGETS_MAX];
	const char		*paths[PROXYCTL_TARGETS_MAX] = { NULL }, *w;
	char			*missed = NULL, buf[512];
	size_t			 i, n;

	proxyctl_targets(to, path, paths, left);
	if (*left != NULL)
		util_xasprintf(&missed, "%s (not sent: more than %d replicas "
		    "named)", *left, PROXYCTL_TARGETS_MAX);
	n = proxyctl_reps.total;
	for (i = 0; i < n; i++)
		if (paths[i] != NULL && !proxyctl_tcp(i) && moot != NULL &&
		    moot(value))
			paths[i] = NULL;
		else if (paths[i] != NULL && proxyctl_stalled_at(i)) {
			paths[i] = NULL;
			proxyctl_missed_add(&missed, i, "not sent: it did not "
			    "answer in time earlier in this command", 0);
			proxyctl_left_add(left, proxyctl_set_name(i));
		}
	proxyctl_call_n("POST", paths, n, body, a);
	for (i = 0; i < n; i++)
		if (paths[i] != NULL &&
		    (w = why(&a[i], buf, sizeof(buf))) != NULL) {
			/*
			 * an answer that does not confirm (an HTTP error,
			 * not ours, not saved) is a failed one, stalling the
			 * replica when it took PROXYCTL_SLOW_S or more
			 * (atk1921m F2, F3); one unanswered is counted by
			 * proxyctl_req_end
			 */
			if (a[i].cause == NULL)
				proxyctl_fail(i, a[i].took_ms >=
				    PROXYCTL_SLOW_S * 1000L);
			proxyctl_missed_add(&missed, i, w, 0);
			proxyctl_left_add(left, proxyctl_set_name(i));
		}
	proxyctl_ans_free(a, n);
	if (missed == NULL)
		return 0;
	util_cause(cause, "%s", missed);
	free(missed);
	return -1;
}

/*
 * A stopped local proxy (no socket) whose files name nothing of sandbox
 * has nothing to forget of it (atk1921g F1: one that names it has not
 * confirmed it).
 */
static int
proxyctl_socket_moot(const char *sandbox)
{
	return access(proxyctl_socket_path(), F_OK) == -1 &&
	    errno == ENOENT && proxyctl_local_registry(sandbox) == 0;
}

int
proxyctl_unregister(const char *sandbox, const char *to, char **left,
    char **cause)
{
	/* our clock: no token of it is issued after (atk1921h F7) */
	json_t	*body = json_pack("{s:s, s:I}", "sandbox", sandbox,
		    "issued_before", (json_int_t)time(NULL));
	int	 rc = proxyctl_confirm_all("/unregister", body, sandbox, to,
		    proxyctl_socket_moot, proxyctl_unreg_why, left, cause);

	json_decref(body);
	return rc;
}

int
proxyctl_unregister_container(struct docker *d, const char *container,
    const char *sandbox, const char *to, char **cause)
{
	json_t	*body;
	char	 ip[64], *left = NULL;
	int	 rc;

	if (docker_container_ip(d, container, PROXYCTL_NET_INTERNAL, ip,
	    sizeof(ip), cause) == -1)
		return -1;
	/* each replica must confirm, as for the sandbox (atk1921i F9) */
	body = json_pack("{s:s}", "address", ip);
	rc = proxyctl_confirm_all("/unregister", body, sandbox, to,
	    proxyctl_socket_moot, proxyctl_unreg_why, &left, cause);
	json_decref(body);
	free(left);
	return rc;
}

/* The block cursor in a GET /status answer. */
static long long
proxyctl_seq_of(json_t *resp)
{
	/* The proxy's block cursor; an older proxy only has log_seq. */
	return json_integer_value(json_object_get(resp, "blocks_seq") ?
	    json_object_get(resp, "blocks_seq") :
	    json_object_get(resp, "log_seq"));
}

/* The block cursor of replica i now; 0, or -1. */
static int
proxyctl_log_seq_at(size_t i, long long *seq)
{
	json_t	*resp = NULL;
	char	*cause = NULL;
	long	 status = 0;

	if (proxyctl_call_at(i, "GET", "/status", NULL, &status, &resp,
	    &cause) == -1 || status != 200) {
		free(cause);
		json_decref(resp);
		return -1;
	}
	*seq = proxyctl_seq_of(resp);
	json_decref(resp);
	return 0;
}

int
proxyctl_log_seq(long long *seq)
{
	return proxyctl_log_seq_at(0, seq);
}

static int
proxyctl_logs_out(void *arg, int stream, const unsigned char *p, size_t n)
{
	fwrite(p, 1, n, stream == 2 ? stderr : stdout);
	return 0;
}

static size_t
proxyctl_logs_write(char *data, size_t size, size_t n, void *arg)
{
	if (docker_demux_feed(arg, (const unsigned char *)data, size * n,
	    proxyctl_logs_out, NULL) == -1)
		return 0;
	return size * n;
}

int
proxyctl_container_logs(const char *api_version, int follow, char **cause)
{
	struct docker_demux	 dm;
	const char		*host = getenv("DOCKER_HOST");
	char			 url[256];
	CURL			*h;
	CURLcode		 rc;
	long			 status = 0;

	if (host == NULL || strncmp(host, "unix://", 7) != 0)
		host = "unix:///var/run/docker.sock";
	if ((h = curl_easy_init()) == NULL) {
		*cause = util_xstrdup("out of memory");
		return -1;
	}
	docker_demux_init(&dm);
	snprintf(url, sizeof(url), "http://docker/v%s/containers/%s/logs?"
	    "stdout=1&stderr=1&tail=200&follow=%d", api_version,
	    PROXYCTL_CONTAINER, follow);
	curl_easy_setopt(h, CURLOPT_UNIX_SOCKET_PATH, host + 7);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, proxyctl_logs_write);
	curl_easy_setopt(h, CURLOPT_WRITEDATA, &dm);
	rc = curl_easy_perform(h);
	curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup(h);
	if (rc != CURLE_OK || status != 200) {
		util_cause(cause, "cannot read the proxy's logs (%s, HTTP "
		    "%ld)", curl_easy_strerror(rc), status);
		return -1;
	}
	return 0;
}

/*
 * The sandbox token of an exec into x->token, signed with the token key
 * when the controller holds one (docs/proxy.md, "Exec credentials"). 0,
 * or -1 when there is no key or no token could be made (said on
 * stderr, but for a missing key): the exec then hands out its cred.
 */
static int
proxyctl_exec_token(struct proxyctl_exec *x, const char *sandbox,
    const char *run_id, json_t *sets, long long timeout)
{
	struct token	 t;
	EVP_PKEY	*key;
	json_t		*resp = NULL;
	char		 path[4096], gpath[128], *cause = NULL;
	const char	*why = NULL;
	long		 status = 0;
	int		 rc = -1;

	if (snprintf(path, sizeof(path), "%s/keys/%s", state_root(),
	    AUDITKEY_TOKEN_NAME) >= (int)sizeof(path) ||
	    access(path, F_OK) == -1)
		return -1;
	if ((key = checkpoint_key_load(path, &cause)) == NULL)
		goto out;
	snprintf(gpath, sizeof(gpath), "/grants?sandbox=%s", sandbox);
	if (proxyctl_call("GET", gpath, NULL, &status, &resp, &cause) == -1 ||
	    status != 200)
		why = "the proxy did not list the grants in force";
	else if (exectoken_fill(&t, sandbox, run_id, sets, json_object_get(
	    resp, "grants"), time(NULL), timeout, &why) == 0 &&
	    token_issue(key, &t, x->token, &why) == 0)
		rc = 0;
	EVP_PKEY_free(key);
out:
	if (rc == -1) {
		log_warnx("the exec's proxy URL carries its credential, not a "
		    "sandbox token: %s", cause ? cause : why);
		x->token[0] = '\0';
	}
	explicit_bzero(&t, sizeof(t));
	json_decref(resp);
	free(cause);
	return rc;
}

void
proxyctl_exec_begin(struct proxyctl_exec *x, const char *sandbox,
    const char *run_id, json_t *sets, long long timeout)
{
	struct proxyctl_ans	 a[PROXYCTL_REPLICAS_MAX];
	unsigned char	 rnd[16];
	json_t		*body;
	char		*cause = NULL;
	size_t		 i;
	long		 status = 0;

	memset(x, 0, sizeof(*x));
	proxyctl_call_all("GET", "/status", NULL, a);
	for (i = 0; i < proxyctl_replicas(); i++) {
		if (a[i].cause != NULL || a[i].status != 200)
			continue;
		x->seq[i] = proxyctl_seq_of(a[i].resp);
		x->known[i] = x->asked = 1;
	}
	proxyctl_ans_free(a, proxyctl_replicas());
	if (!x->asked || RAND_bytes(rnd, sizeof(rnd)) != 1)
		return;
	/* its end and unregister go where it goes (atk1921i F3) */
	if (repset_record(sandbox, &cause) == -1) {
		log_warnx("the exec's proxy URL carries no credential: %s",
		    cause);
		free(cause);
		return;
	}
	util_hex(rnd, sizeof(rnd), x->cred);
	body = json_pack("{s:s, s:s, s:s}", "token", x->cred, "sandbox",
	    sandbox, "run_id", run_id);
	/* An older proxy answers 404: the exec is the sandbox's alone. */
	x->cred_ok = proxyctl_call("POST", "/execs", body, &status, NULL,
	    &cause) == 0 && status == 200;
	json_decref(body);
	free(cause);
	if (!x->cred_ok)
		x->cred[0] = '\0';
	else if (proxyctl_exec_token(x, sandbox, run_id, sets, timeout) == -1)
		snprintf(x->token, sizeof(x->token), "%s", x->cred);
}

/*
 * Why replica a did not confirm a POST /execs/end (its cause, or the
 * status other than 200), or NULL when it did.
 */
static const char *
proxyctl_end_why(const struct proxyctl_ans *a, char *buf, size_t size)
{
	if (a->cause != NULL)
		return a->cause;
	if (a->status == 200)
		return proxyctl_not_ours(a, "closed", 0) ? proxyctl_not_ours_why :
		    NULL;
	snprintf(buf, size, "HTTP %ld", a->status);
	return buf;
}

int
proxyctl_exec_end(const char *run_id, const char *to, char **left,
    char **cause)
{
	json_t	*body = json_pack("{s:s}", "run_id", run_id);
	int	 rc = proxyctl_confirm_all("/execs/end", body, run_id, to, NULL,
		    proxyctl_end_why, left, cause);

	json_decref(body);
	return rc;
}

void
proxyctl_exec_gone(const char *run_id, void *arg)
{
	/* arg: the sandbox; an end not confirmed is kept (execend.h) */
	(void)execend_send(arg, run_id, "whose sandgate process is gone");
}

/*
 * The blocks after the exec's cursors from every replica, merged (all
 * asked at once; with run_id: that exec's and the unattributed ones);
 * NULL when none answered. With several replicas, x->replicas says
 * which answered, and one that did not is warned of and makes the list
 * truncated.
 */
static json_t *
proxyctl_exec_blocks(struct proxyctl_exec *x, const char *sandbox,
    const char *run_id)
{
	struct proxyctl_ans	 a[PROXYCTL_REPLICAS_MAX];
	char			 paths[PROXYCTL_REPLICAS_MAX][256];
	const char		*p[PROXYCTL_REPLICAS_MAX] = { NULL };
	struct pending_exec	 pe;
	json_t			*out = NULL;
	char			*missed = NULL;
	size_t			 i, n = proxyctl_replicas();
	int			 any = 0, ok;

	for (i = 0; i < n; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/blocks?sandbox=%s&"
		    "after=%lld%s%s", sandbox, x->seq[i], x->cred_ok ?
		    "&unattributed=1&run=" : "", x->cred_ok ? run_id : "");
		p[i] = x->known[i] ? paths[i] : NULL;
	}
	proxyctl_call_each("GET", p, NULL, a);
	/* a replica's records are checked as pending's (pending.h) */
	pending_exec_init(&pe, sandbox, x->cred_ok ? run_id : NULL);
	if (n > 1)
		x->replicas = json_array();
	for (i = 0; i < n; i++) {
		ok = a[i].cause == NULL && a[i].status == 200;
		any |= ok;
		if (ok && json_is_true(json_object_get(a[i].resp,
		    "truncated")))
			x->truncated = 1;
		if (ok)
			pending_exec_add(&pe, json_object_get(a[i].resp,
			    "blocks"));
		if (!ok && n > 1)
			proxyctl_missed_add(&missed, i, "no answer", 0);
		if (n > 1)
			json_array_append_new(x->replicas, json_pack("{s:s, "
			    "s:s}", "name", proxyctl_replica_name(i), "status",
			    ok ? "ok" : "no answer"));
	}
	proxyctl_ans_free(a, n);
	if (pe.truncated)
		x->truncated = 1;
	if (any)
		out = pending_exec_list(&pe);
	pending_exec_release(&pe);
	if (missed != NULL && any) {
		log_warnx("warning: network_blocked leaves out the proxy "
		    "replicas that did not answer: %s", missed);
		x->truncated = 1;
	}
	free(missed);
	return out;
}

json_t *
proxyctl_exec_finish(struct proxyctl_exec *x, const char *sandbox,
    const char *run_id)
{
	json_t	*blocks = NULL;

	if (x->asked)
		blocks = proxyctl_exec_blocks(x, sandbox, run_id);
	if (x->cred_ok) {
		x->end_owed = execend_send(sandbox, run_id, NULL) == -1;
		x->cred_ok = 0;
	}
	explicit_bzero(x->cred, sizeof(x->cred));
	explicit_bzero(x->token, sizeof(x->token));
	return blocks;
}
