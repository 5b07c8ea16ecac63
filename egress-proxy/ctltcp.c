/* ctltcp.c: the control API over TCP, and /healthz, /readyz; ctltcp.h. */
#include <sys/socket.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/ssl.h>

#include "control.h"
#include "ctlconn.h"
#include "ctltcp.h"
#include "eventlog.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "util.h"

static struct evhttp	*ctltcp_http;
static struct evconnlistener *ctltcp_listener;
static struct event	*ctltcp_resume;		/* re-enables it */
static unsigned		 ctltcp_accepted;	/* since it was enabled */
static char		 ctltcp_tok[CTLTCP_TOKEN_MAX + 1];
static SSL_CTX		*ctltcp_tls;
static time_t		 ctltcp_win;		/* refusals' window start */
static unsigned		 ctltcp_win_n;		/* lines in it */
static unsigned long long ctltcp_counted;	/* refusals past them */
static time_t		 ctltcp_counted_since;

static void	ctltcp_summary(struct proxy *, time_t);

static struct bufferevent *ctltcp_bev(struct event_base *, void *);
static void	ctltcp_resume_cb(evutil_socket_t, short, void *);
static int	ctltcp_tls_load(const char *, const char *, char **);

static void	ctltcp_route(struct evhttp_request *, void *);
static void	ctltcp_refuse(struct proxy *, struct evhttp_request *,
		    const char *);
static void	ctltcp_text(struct evhttp_request *, int, const char *);
static int	ctltcp_token_check(const char *, char **);

/* The token's form: see ctltcp_token_read. */
static int
ctltcp_token_check(const char *tok, char **cause)
{
	unsigned char	seen[256];
	size_t		i, len = strlen(tok), kinds = 0;

	if (len < CTLTCP_TOKEN_MIN || len > CTLTCP_TOKEN_MAX)
		return util_cause(cause, "the token must be %d to %d "
		    "characters (32 random bytes or more: `openssl rand "
		    "-base64 48`)", CTLTCP_TOKEN_MIN, CTLTCP_TOKEN_MAX);
	memset(seen, 0, sizeof(seen));
	for (i = 0; i < len; i++) {
		if (tok[i] <= ' ' || tok[i] > '~')
			return util_cause(cause, "the token has a space or a "
			    "character that is not printable ASCII");
		kinds += !seen[(unsigned char)tok[i]];
		seen[(unsigned char)tok[i]] = 1;
	}
	if (kinds < 10)
		return util_cause(cause, "the token uses fewer than 10 "
		    "different characters: it is not random");
	return 0;
}

int
ctltcp_token_read(const char *path, char *tok, size_t size, char **cause)
{
	struct stat	st;
	ssize_t		n;
	int		fd, rc = -1;

	*cause = NULL;
	/* Followed: a Kubernetes Secret volume's files are links to ..data. */
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return util_cause(cause, "%s", strerror(errno));
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		util_cause(cause, "not a regular file");
		goto out;
	}
	/* Group read is let be: Kubernetes adds it under fsGroup. */
	if (st.st_mode & (S_IRWXO | S_IWGRP | S_IXGRP)) {
		util_cause(cause, "readable or writable by others (mode %03o; "
		    "chmod 600)", (unsigned)(st.st_mode & 0777));
		goto out;
	}
	if ((n = read(fd, tok, size - 1)) == -1) {
		util_cause(cause, "%s", strerror(errno));
		goto out;
	}
	tok[n] = '\0';
	if ((size_t)n == size - 1) {
		util_cause(cause, "longer than %d characters", CTLTCP_TOKEN_MAX);
		goto out;
	}
	if (n > 0 && tok[n - 1] == '\n')
		tok[--n] = '\0';
	rc = ctltcp_token_check(tok, cause);
out:
	close(fd);
	if (rc == -1)
		explicit_bzero(tok, size);
	return rc;
}

int
ctltcp_token_ok(const char *hdr, const char *tok)
{
	unsigned char	a[EVP_MAX_MD_SIZE], b[EVP_MAX_MD_SIZE];
	unsigned int	alen = 0, blen = 0;
	size_t		len;

	if (hdr == NULL || strncasecmp(hdr, "Bearer ", 7) != 0)
		return 0;
	hdr += 7;
	len = strlen(hdr);
	/* Digests of both: the compare takes the same time at any length. */
	if (EVP_Digest(hdr, len, a, &alen, EVP_sha256(), NULL) != 1 ||
	    EVP_Digest(tok, strlen(tok), b, &blen, EVP_sha256(), NULL) != 1 ||
	    alen != blen)
		return 0;
	return CRYPTO_memcmp(a, b, alen) == 0 && tok[0] != '\0';
}

static void
ctltcp_text(struct evhttp_request *req, int code, const char *text)
{
	struct evbuffer	*buf = evbuffer_new();

	if (buf != NULL)
		evbuffer_add(buf, text, strlen(text));
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", code == 200 && text[0] != '{' ? "text/plain" :
	    "application/json");
	evhttp_send_reply(req, code, code == 200 ? "OK" : "Error", buf);
	if (buf != NULL)
		evbuffer_free(buf);
}

int
ctltcp_health(struct proxy *px, struct evhttp_request *req)
{
	const char	*path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(
			    req));
	char		 body[128];
	int		 pol, logok, dns;

	if (path == NULL || evhttp_request_get_command(req) != EVHTTP_REQ_GET)
		return 0;
	if (strcmp(path, "/healthz") == 0) {
		/* Answered from the loop: the loop runs. */
		ctltcp_text(req, 200, "ok\n");
		return 1;
	}
	if (strcmp(path, "/readyz") != 0)
		return 0;
	pol = px->policy != NULL && px->policy->policy != NULL;
	logok = px->seclog != NULL && proxy_log_healthy(px, NULL, NULL);
	dns = px->dns != NULL;
	snprintf(body, sizeof(body), "{\"ready\":%s,\"policy\":%s,\"log\":%s,"
	    "\"resolver\":%s}\n", pol && logok && dns && !px->draining ?
	    "true" : "false", pol ? "true" : "false", logok ? "true" :
	    "false", dns ? "true" : "false");
	ctltcp_text(req, pol && logok && dns && !px->draining ? 200 : 503,
	    body);
	return 1;
}

/*
 * The window of refusals ended (CTLTCP_REFUSED_WINDOW_S from its start):
 * the refusals counted past its CTLTCP_REFUSED_BURST lines go into one
 * control.unauthorized_summary line, and a new window starts.
 */
static void
ctltcp_summary(struct proxy *px, time_t now)
{
	json_t	*f;

	if (now - ctltcp_win < CTLTCP_REFUSED_WINDOW_S)
		return;
	if (ctltcp_counted > 0) {
		f = json_pack("{s:s, s:I, s:I, s:s}", "event",
		    "control.unauthorized_summary", "count",
		    (json_int_t)ctltcp_counted, "since",
		    (json_int_t)ctltcp_counted_since, "policy_digest",
		    policy_digest(px->policy->policy));
		if (f == NULL || eventlog_append(px->seclog, f) == -1)
			log_warnx("control.unauthorized_summary of %llu not "
			    "logged: %s", ctltcp_counted, f == NULL ?
			    "out of memory" : eventlog_error(px->seclog));
		json_decref(f);
		log_warnx("control API: %llu more requests refused",
		    ctltcp_counted);
	}
	ctltcp_counted = 0;
	ctltcp_win = now;
	ctltcp_win_n = 0;
}

void
ctltcp_tick(struct proxy *px)
{
	if (ctltcp_http != NULL)
		ctltcp_summary(px, time(NULL));
}

int
ctltcp_authorized(const char *hdr)
{
	return ctltcp_token_ok(hdr, ctltcp_tok);
}

void
ctltcp_refused(struct proxy *px, const char *addr, int port,
    const char *path, const char *why)
{
	json_t	*f;

	ctltcp_summary(px, time(NULL));
	if (ctltcp_win_n >= CTLTCP_REFUSED_BURST) {
		if (ctltcp_counted++ == 0)
			ctltcp_counted_since = time(NULL);
		return;
	}
	ctltcp_win_n++;
	f = json_pack("{s:s, s:o, s:i, s:o, s:s, s:s}", "event",
	    "control.unauthorized", "client", eventlog_str(addr), "client_port",
	    port, "path", eventlog_str(path), "reason", why, "policy_digest",
	    policy_digest(px->policy->policy));
	if (f == NULL || eventlog_append(px->seclog, f) == -1)
		log_warnx("control.unauthorized not logged: %s", f == NULL ?
		    "out of memory" : eventlog_error(px->seclog));
	json_decref(f);
	log_warnx("control API: refused a request from %s: %s", addr, why);
}

/* 401, and ctltcp_refused(). */
static void
ctltcp_refuse(struct proxy *px, struct evhttp_request *req, const char *why)
{
	struct evhttp_connection	*evc = evhttp_request_get_connection(req);
	const char			*uri = evhttp_request_get_uri(req);
	char				*addr = NULL;
	ev_uint16_t			 port = 0;

	if (evc != NULL)
		evhttp_connection_get_peer(evc, &addr, &port);
	ctltcp_refused(px, addr ? addr : "?", port, uri ? uri : "", why);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "WWW-Authenticate", "Bearer");
	ctltcp_text(req, 401, "{\"error\":\"unauthorized\"}\n");
}

static void
ctltcp_route(struct evhttp_request *req, void *arg)
{
	struct proxy	*px = arg;
	const char	*auth;
	int		 authed;

	auth = evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization");
	authed = auth != NULL && ctltcp_token_ok(auth, ctltcp_tok);
	/*
	 * Only a request with the token buys its connection another
	 * deadline; any other gets one answer and the connection ends, so
	 * that clients without it cannot hold the API's slots by asking
	 * /healthz (or being refused) within each deadline.
	 */
	if (authed)
		ctlconn_request_done(req);
	else
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Connection", "close");
	if (ctltcp_health(px, req))
		return;
	if (!authed)
		ctltcp_refuse(px, req, auth == NULL ? "no bearer token" :
		    "wrong bearer token");
	else
		control_route(req, px);
}

/*
 * Every connection of the API, TLS or not, kept by ctlconn.h. After
 * CTLTCP_ACCEPT_BURST accepts the listener rests for a turn of the event
 * loop (libevent accepts until the queue is empty otherwise), so that a
 * flood on the port leaves the data plane's ready sockets their turn.
 */
static struct bufferevent *
ctltcp_bev(struct event_base *base, void *arg)
{
	static const struct timeval	now = { 0, 0 };

	if (++ctltcp_accepted >= CTLTCP_ACCEPT_BURST &&
	    ctltcp_resume != NULL) {
		evconnlistener_disable(ctltcp_listener);
		evtimer_add(ctltcp_resume, &now);
	}
	return ctlconn_new(base, ctltcp_tls, arg, CONTROL_BODY_MAX);
}

/* A turn of the loop went by: accept again. */
static void
ctltcp_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	ctltcp_accepted = 0;
	evconnlistener_enable(ctltcp_listener);
}

/* The server side of --control-tls-cert/--control-tls-key. */
static int
ctltcp_tls_load(const char *cert, const char *key, char **cause)
{
	char	err[256];

	if ((ctltcp_tls = SSL_CTX_new(TLS_server_method())) == NULL)
		return util_cause(cause, "cannot make a TLS context");
	SSL_CTX_set_min_proto_version(ctltcp_tls, TLS1_2_VERSION);
	if (SSL_CTX_use_certificate_chain_file(ctltcp_tls, cert) != 1 ||
	    SSL_CTX_use_PrivateKey_file(ctltcp_tls, key, SSL_FILETYPE_PEM) !=
	    1 || SSL_CTX_check_private_key(ctltcp_tls) != 1) {
		ERR_error_string_n(ERR_get_error(), err, sizeof(err));
		SSL_CTX_free(ctltcp_tls);
		ctltcp_tls = NULL;
		return util_cause(cause, "--control-tls-cert %s, "
		    "--control-tls-key %s: %s", cert, key, err);
	}
	return 0;
}

int
ctltcp_listen(struct proxy *px, const char *spec, const char *tokfile,
    char **cause)
{
	struct sockaddr_storage	 ss;
	struct evconnlistener	*l;
	int			 len = sizeof(ss);

	*cause = NULL;
	if (tokfile == NULL)
		return util_cause(cause, "--control-listen needs "
		    "--control-token-file: the API is never served without "
		    "authentication");
	if (!control_serving())
		return util_cause(cause, "--control-listen needs "
		    "--control-socket (the registry and grants are kept "
		    "beside it)");
	if ((px->cfg.control_tls_cert == NULL) !=
	    (px->cfg.control_tls_key == NULL))
		return util_cause(cause, "--control-tls-cert and "
		    "--control-tls-key go together");
	if (px->cfg.control_tls_cert != NULL && ctltcp_tls_load(
	    px->cfg.control_tls_cert, px->cfg.control_tls_key, cause) == -1)
		return -1;
	if (ctltcp_token_read(tokfile, ctltcp_tok, sizeof(ctltcp_tok),
	    cause) == -1)
		return util_cause(cause, "--control-token-file %s: %s",
		    tokfile, *cause);
	memset(&ss, 0, sizeof(ss));
	if (evutil_parse_sockaddr_port(spec, (struct sockaddr *)&ss, &len) ==
	    -1)
		return util_cause(cause, "invalid --control-listen \"%s\" (use "
		    "ADDR:PORT or [IPv6]:PORT)", spec);
	l = evconnlistener_new_bind(px->base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_EXEC,
	    CTLTCP_BACKLOG, (struct sockaddr *)&ss, len);
	if (l == NULL)
		return util_cause(cause, "cannot listen on %s: %s", spec,
		    strerror(errno));
	if ((ctltcp_http = evhttp_new(px->base)) == NULL ||
	    evhttp_bind_listener(ctltcp_http, l) == NULL)
		return util_cause(cause, "cannot start the HTTP server");
	control_bounds(ctltcp_http);
	ctltcp_listener = l;
	if ((ctltcp_resume = evtimer_new(px->base, ctltcp_resume_cb, NULL)) ==
	    NULL)
		return util_cause(cause, "cannot make the listener's timer");
	evhttp_set_bevcb(ctltcp_http, ctltcp_bev, px);
	evhttp_set_gencb(ctltcp_http, ctltcp_route, px);
	fprintf(stderr, "sandgate-proxy: control API on %s (%s)\n", spec,
	    ctltcp_tls != NULL ? "https" : "http");
	return 0;
}

void
ctltcp_close(void)
{
	if (ctltcp_resume != NULL)
		event_free(ctltcp_resume);
	ctltcp_resume = NULL;
	if (ctltcp_http != NULL)
		evhttp_free(ctltcp_http);	/* and its listener */
	ctltcp_http = NULL;
	ctltcp_listener = NULL;
	SSL_CTX_free(ctltcp_tls);
	ctltcp_tls = NULL;
	explicit_bzero(ctltcp_tok, sizeof(ctltcp_tok));
}
