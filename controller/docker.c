/* docker.c: Docker Engine API client over the unix socket; see docker.h. */
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "docker.h"
#include "log.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"

#define DOCKER_DEFAULT_SOCK	"/var/run/docker.sock"
#define DOCKER_CTL_TIMEOUT	300L	/* seconds, one JSON request */
#define DOCKER_LATE_MS		500L	/* one request past a deadline */

struct docker_buf {
	char	*data;
	size_t	 len;
	size_t	 cap;
	int	 overflow;
};

struct docker {
	CURLM			*multi;
	CURL			*ctl;
	CURL			*stream;
	struct curl_slist	*hdrs;
	char			 sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
	char			 ver[16];
	char			 apihdr[16];
	struct docker_buf	 resp;
	int			 ctl_done;
	CURLcode		 ctl_result;
	/* exec stream state */
	int			 stream_done;
	CURLcode		 stream_result;
	struct docker_demux	 demux;
	const struct docker_stream_cb *scb;
	struct docker_buf	 serr;		/* a non-2xx body */
	int			 sstop;
	int			 spaused;	/* held back by scb->ready */
	int			 swaitfd;	/* what it waits on, or -1 */
	/* docker_deadline(): control requests end by this time (µs), or 0 */
	uint64_t		 until;
	/* the freeze lock held between a pause and its unpause */
	int			 lockfd;
	char			 lockid[DOCKER_ID_MAX + 1];
	char			 lockpath[4096];
	/* docker_freeze(): the container it paused, the old handlers */
	char			 frozen[DOCKER_ID_MAX + 1];
	struct sigaction	 oldsa[3];
};

static volatile sig_atomic_t	docker_sig;
static const int		docker_sigs[3] = { SIGINT, SIGTERM, SIGHUP };

static int	docker_sock_path(char *, size_t, char **);
static void	docker_unreachable(struct docker *, CURLcode, char **);
static int	docker_negotiate(struct docker *, char **);
static long	docker_timeout_ms(const struct docker *);
static size_t	docker_write_cb(char *, size_t, size_t, void *);
static size_t	docker_header_cb(char *, size_t, size_t, void *);
static size_t	docker_stream_write_cb(char *, size_t, size_t, void *);
static void	docker_collect(struct docker *);
static int	docker_run_ctl(struct docker *);
static int	docker_buf_add(struct docker_buf *, const char *, size_t);
static void	docker_fail(char **, const char *, const char *, long,
		    json_t *);
static int	docker_simple(struct docker *, const char *, const char *,
		    json_t *, long, json_t **, char **);
static int	docker_created_id(json_t *, char **, char **);
static int	docker_stream_resume(struct docker *, struct curl_waitfd *);
static int	docker_stream_pump(struct docker *);
static size_t	docker_demux_header(struct docker_demux *,
		    const unsigned char *, size_t, int *);
static int	docker_lock(struct docker *, const char *, char **);
static void	docker_unlock(struct docker *);
static int	docker_pause_call(struct docker *, const char *, int,
		    char **);
static void	docker_on_signal(int);

/* The socket path from DOCKER_HOST ("unix:///path"), else the default. */
static int
docker_sock_path(char *buf, size_t size, char **cause)
{
	const char	*env = getenv("DOCKER_HOST");

	if (env == NULL || *env == '\0')
		env = "unix://" DOCKER_DEFAULT_SOCK;
	if (strncmp(env, "unix://", 7) != 0) {
		util_cause(cause, "DOCKER_HOST '%s' is not supported: only "
		    "unix:// sockets are", env);
		return -1;
	}
	if (env[7] != '/' || util_strlcpy(buf, env + 7, size) >= size) {
		util_cause(cause, "DOCKER_HOST '%s' is not a usable socket "
		    "path", env);
		return -1;
	}
	return 0;
}

struct docker *
docker_new(char **cause)
{
	struct docker	*d;
	CURL		*h[2];
	size_t		 i;

	d = util_xcalloc(1, sizeof(*d));
	d->lockfd = -1;
	if (docker_sock_path(d->sock, sizeof(d->sock), cause) == -1)
		goto fail;
	d->multi = curl_multi_init();
	d->ctl = curl_easy_init();
	d->stream = curl_easy_init();
	d->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
	/* no "Expect: 100-continue" round trip for bodies over 1 KiB */
	if (d->hdrs != NULL)
		d->hdrs = curl_slist_append(d->hdrs, "Expect:");
	if (d->multi == NULL || d->ctl == NULL || d->stream == NULL ||
	    d->hdrs == NULL) {
		util_cause(cause, "cannot initialise libcurl");
		goto fail;
	}
	h[0] = d->ctl;
	h[1] = d->stream;
	for (i = 0; i < 2; i++) {
		curl_easy_setopt(h[i], CURLOPT_UNIX_SOCKET_PATH, d->sock);
		curl_easy_setopt(h[i], CURLOPT_CONNECTTIMEOUT, 10L);
		curl_easy_setopt(h[i], CURLOPT_NOSIGNAL, 1L);
		curl_easy_setopt(h[i], CURLOPT_HTTPHEADER, d->hdrs);
	}
	curl_easy_setopt(d->ctl, CURLOPT_WRITEFUNCTION, docker_write_cb);
	curl_easy_setopt(d->ctl, CURLOPT_WRITEDATA, d);
	curl_easy_setopt(d->ctl, CURLOPT_HEADERFUNCTION, docker_header_cb);
	curl_easy_setopt(d->ctl, CURLOPT_HEADERDATA, d);
	curl_easy_setopt(d->stream, CURLOPT_WRITEFUNCTION,
	    docker_stream_write_cb);
	curl_easy_setopt(d->stream, CURLOPT_WRITEDATA, d);
	if (docker_negotiate(d, cause) == -1)
		goto fail;
	return d;
fail:
	docker_free(d);
	return NULL;
}

void
docker_free(struct docker *d)
{
	if (d == NULL)
		return;
	if (d->frozen[0] != '\0')
		docker_thaw(d, NULL);
	docker_unlock(d);
	if (d->ctl != NULL)
		curl_easy_cleanup(d->ctl);
	if (d->stream != NULL)
		curl_easy_cleanup(d->stream);
	if (d->multi != NULL)
		curl_multi_cleanup(d->multi);
	curl_slist_free_all(d->hdrs);
	free(d->resp.data);
	free(d->serr.data);
	free(d);
}

const char *
docker_api_version(const struct docker *d)
{
	return d->ver;
}

/* The fixed "cannot reach Docker" text, with the connect errno. */
static void
docker_unreachable(struct docker *d, CURLcode rc, char **cause)
{
	long	oserr = 0;

	curl_easy_getinfo(d->ctl, CURLINFO_OS_ERRNO, &oserr);
	util_cause(cause, "cannot reach Docker at unix://%s (%s); start "
	    "dockerd or set DOCKER_HOST", d->sock,
	    oserr != 0 ? strerror((int)oserr) : curl_easy_strerror(rc));
}

/*
 * GET /_ping and read its Api-Version header (GET /version if missing),
 * then cap it to what this client speaks.
 */
static int
docker_negotiate(struct docker *d, char **cause)
{
	json_t	*v = NULL;
	long	 status;
	int	 minor = -1;
	CURLcode rc;

	curl_easy_setopt(d->ctl, CURLOPT_URL, "http://docker/_ping");
	curl_easy_setopt(d->ctl, CURLOPT_HTTPGET, 1L);
	rc = (CURLcode)docker_run_ctl(d);
	if (rc != CURLE_OK) {
		docker_unreachable(d, rc, cause);
		return -1;
	}
	curl_easy_getinfo(d->ctl, CURLINFO_RESPONSE_CODE, &status);
	if (d->apihdr[0] != '\0')
		minor = docker_parse_api_version(d->apihdr,
		    strlen(d->apihdr));
	if (minor == -1) {
		snprintf(d->ver, sizeof(d->ver), "1.%d", DOCKER_API_MIN_MINOR);
		if (docker_call(d, "GET", "/version", NULL, &status, &v,
		    cause) == -1)
			return -1;
		if (json_is_string(json_object_get(v, "ApiVersion")))
			minor = docker_parse_api_version(json_string_value(
			    json_object_get(v, "ApiVersion")), json_string_length(
			    json_object_get(v, "ApiVersion")));
		json_decref(v);
	}
	if (minor < DOCKER_API_MIN_MINOR) {
		util_cause(cause, "docker API version %s is too old (need "
		    "1.%d or later)", d->apihdr[0] ? d->apihdr : "unknown",
		    DOCKER_API_MIN_MINOR);
		return -1;
	}
	if (minor > DOCKER_API_MAX_MINOR)
		minor = DOCKER_API_MAX_MINOR;
	snprintf(d->ver, sizeof(d->ver), "1.%d", minor);
	return 0;
}

int
docker_parse_api_version(const char *s, size_t len)
{
	size_t	i;
	int	v = 0;

	if (len < 3 || len > 5 || s[0] != '1' || s[1] != '.')
		return -1;
	for (i = 2; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v;
}

static int
docker_buf_add(struct docker_buf *b, const char *p, size_t n)
{
	size_t	 ncap;
	char	*nd;

	if (n > SG_DOCKER_RESPONSE_MAX - b->len) {
		b->overflow = 1;
		return -1;
	}
	if (b->len + n + 1 > b->cap) {
		ncap = b->cap ? b->cap : 4096;
		while (ncap < b->len + n + 1)
			ncap *= 2;
		if ((nd = realloc(b->data, ncap)) == NULL)
			return -1;
		b->data = nd;
		b->cap = ncap;
	}
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

static size_t
docker_write_cb(char *p, size_t sz, size_t n, void *arg)
{
	struct docker	*d = arg;

	if (docker_buf_add(&d->resp, p, sz * n) == -1)
		return 0;
	return sz * n;
}

/* Keep the Api-Version header (of /_ping; every answer carries it). */
static size_t
docker_header_cb(char *p, size_t sz, size_t n, void *arg)
{
	struct docker	*d = arg;
	size_t		 len = sz * n, i = 12, j;

	if (len > 12 && strncasecmp(p, "Api-Version:", 12) == 0) {
		while (i < len && (p[i] == ' ' || p[i] == '\t'))
			i++;
		for (j = 0; i < len && j + 1 < sizeof(d->apihdr) &&
		    p[i] != '\r' && p[i] != '\n'; i++, j++)
			d->apihdr[j] = p[i];
		d->apihdr[j] = '\0';
	}
	return len;
}

/* Read finished transfers off the multi into the done flags. */
static void
docker_collect(struct docker *d)
{
	CURLMsg	*m;
	int	 left;

	while ((m = curl_multi_info_read(d->multi, &left)) != NULL) {
		if (m->msg != CURLMSG_DONE)
			continue;
		if (m->easy_handle == d->ctl) {
			d->ctl_done = 1;
			d->ctl_result = m->data.result;
		} else if (m->easy_handle == d->stream) {
			d->stream_done = 1;
			d->stream_result = m->data.result;
		}
	}
}

/*
 * Run the prepared ctl transfer to its end on the shared multi (which
 * also moves a running exec stream along). Returns the CURLcode.
 */
static int
docker_run_ctl(struct docker *d)
{
	int	running;

	free(d->resp.data);
	memset(&d->resp, 0, sizeof(d->resp));
	d->ctl_done = 0;
	curl_easy_setopt(d->ctl, CURLOPT_TIMEOUT_MS, docker_timeout_ms(d));
	if (curl_multi_add_handle(d->multi, d->ctl) != CURLM_OK)
		return CURLE_FAILED_INIT;
	for (;;) {
		curl_multi_perform(d->multi, &running);
		docker_collect(d);
		if (d->ctl_done)
			break;
		curl_multi_poll(d->multi, NULL, 0, 1000, NULL);
	}
	curl_multi_remove_handle(d->multi, d->ctl);
	return d->ctl_result;
}

void
docker_deadline(struct docker *d, uint64_t until_us)
{
	d->until = until_us;
}

uint64_t
docker_deadline_within(struct docker *d, uint64_t ms)
{
	uint64_t	saved = d->until, until = util_now_us() + ms * 1000;

	if (saved == 0 || until < saved)
		d->until = until;
	return saved;
}

/* What one control request may take: to the deadline, if one is set. */
static long
docker_timeout_ms(const struct docker *d)
{
	uint64_t	now = util_now_us();

	if (d->until == 0)
		return DOCKER_CTL_TIMEOUT * 1000L;
	if (d->until < now + DOCKER_LATE_MS * 1000)
		return DOCKER_LATE_MS;
	return (long)((d->until - now) / 1000);
}

int
docker_call(struct docker *d, const char *method, const char *path,
    json_t *body, long *status, json_t **resp, char **cause)
{
	char		 url[2048], *payload = NULL;
	json_error_t	 jerr;
	CURLcode	 rc;

	if (resp != NULL)
		*resp = NULL;
	if ((size_t)snprintf(url, sizeof(url), "http://docker/v%s%s", d->ver,
	    path) >= sizeof(url)) {
		util_cause(cause, "docker: request path too long");
		return -1;
	}
	curl_easy_setopt(d->ctl, CURLOPT_URL, url);
	curl_easy_setopt(d->ctl, CURLOPT_CUSTOMREQUEST, method);
	if (body != NULL)
		payload = json_dumps(body, JSON_COMPACT);
	else if (strcmp(method, "POST") == 0)
		payload = strdup("");
	if (payload != NULL) {
		curl_easy_setopt(d->ctl, CURLOPT_POSTFIELDS, payload);
	} else {
		curl_easy_setopt(d->ctl, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(d->ctl, CURLOPT_CUSTOMREQUEST, method);
	}
	rc = (CURLcode)docker_run_ctl(d);
	curl_easy_setopt(d->ctl, CURLOPT_POSTFIELDS, NULL);
	free(payload);
	if (rc != CURLE_OK) {
		if (rc == CURLE_COULDNT_CONNECT)
			docker_unreachable(d, rc, cause);
		else
			util_cause(cause, "docker: %s %s: %s%s", method,
			    path, curl_easy_strerror(rc), d->resp.overflow ?
			    " (response too large)" : "");
		return -1;
	}
	curl_easy_getinfo(d->ctl, CURLINFO_RESPONSE_CODE, status);
	if (resp != NULL && d->resp.len > 0)
		*resp = json_loadb(d->resp.data, d->resp.len, 0, &jerr);
	return 0;
}

const char *
docker_error_message(json_t *j)
{
	json_t	*m = json_object_get(j, "message");

	return json_is_string(m) ? json_string_value(m) : "";
}

/* "docker: METHOD PATH: 404 message" into *cause. */
static void
docker_fail(char **cause, const char *method, const char *path,
    long status, json_t *resp)
{
	util_cause(cause, "docker: %s %s: %ld %s", method, path, status,
	    docker_error_message(resp));
}

/*
 * One call that must answer one of the 2xx codes or `ok` (0: none).
 * errno ENOENT when Docker answered 404.
 */
static int
docker_simple(struct docker *d, const char *method, const char *path,
    json_t *body, long ok, json_t **resp, char **cause)
{
	json_t	*r = NULL;
	long	 status = 0;

	if (docker_call(d, method, path, body, &status, &r, cause) == -1) {
		errno = EIO;
		return -1;
	}
	if ((status >= 200 && status < 300) || (ok != 0 && status == ok)) {
		if (resp != NULL)
			*resp = r;
		else
			json_decref(r);
		return 0;
	}
	docker_fail(cause, method, path, status, r);
	json_decref(r);
	errno = status == 404 ? ENOENT : EIO;
	return -1;
}

static int
docker_created_id(json_t *r, char **id, char **cause)
{
	json_t	*v = json_object_get(r, "Id");

	if (!json_is_string(v) || json_string_length(v) > DOCKER_ID_MAX) {
		util_cause(cause, "docker: create answered without an id");
		return -1;
	}
	*id = util_xstrdup(json_string_value(v));
	return 0;
}

int
docker_container_create(struct docker *d, const char *name, json_t *spec,
    char **id, char **cause)
{
	char	 path[256];
	json_t	*r = NULL;
	int	 rv;

	snprintf(path, sizeof(path), "/containers/create%s%s",
	    name ? "?name=" : "", name ? name : "");
	if (docker_simple(d, "POST", path, spec, 0, &r, cause) == -1)
		return -1;
	rv = docker_created_id(r, id, cause);
	json_decref(r);
	return rv;
}

int
docker_container_start(struct docker *d, const char *id, char **cause)
{
	char	path[256];

	snprintf(path, sizeof(path), "/containers/%s/start", id);
	return docker_simple(d, "POST", path, NULL, 304, NULL, cause);
}

int
docker_container_inspect(struct docker *d, const char *id,
    struct docker_cinfo *ci, char **cause)
{
	char	 path[256];
	json_t	*r = NULL;
	int	 rv = 0;

	snprintf(path, sizeof(path), "/containers/%s/json", id);
	if (docker_simple(d, "GET", path, NULL, 0, &r, cause) == -1)
		return -1;
	if (docker_parse_cinfo(r, ci) == -1) {
		util_cause(cause, "docker: unexpected inspect answer for "
		    "container '%s'", id);
		rv = -1;
	}
	json_decref(r);
	return rv;
}

int
docker_container_remove(struct docker *d, const char *id, char **cause)
{
	char	path[256];

	snprintf(path, sizeof(path), "/containers/%s?force=1&v=1", id);
	return docker_simple(d, "DELETE", path, NULL, 404, NULL, cause);
}

/* A freeze's wait for the lock ends at the signals it catches. */
static int
docker_lock_stop(void)
{
	return docker_sig != 0;
}

/*
 * The container's freeze lock: <state root>/freeze/<id>, flock'ed, so a
 * pause and its unpause by one sandgate process are never interleaved
 * with another's (a diff's freeze and an exec's kill). The file is
 * removed on release; a waiter that got the lock on a removed file
 * tries again. A freeze (docker_freeze: a diff's, an apply's) waiting
 * for it stops at SIGINT, SIGTERM or SIGHUP, errno EINTR: its handlers
 * caught them and the wait went on while another held the lock.
 */
static int
docker_lock(struct docker *d, const char *id, char **cause)
{
	struct stat	a, b;
	char		dir[4096];
	int		fd, rv;

	snprintf(dir, sizeof(dir), "%s/freeze", state_root());
	if (strlen(id) > DOCKER_ID_MAX || strchr(id, '/') != NULL ||
	    (size_t)snprintf(d->lockpath, sizeof(d->lockpath), "%s/%s", dir,
	    id) >= sizeof(d->lockpath)) {
		util_cause(cause, "docker: bad container id '%.80s'", id);
		return -1;
	}
	if (state_mkdirs(dir, 0700) == -1) {
		util_cause(cause, "cannot create '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	for (;;) {
		fd = open(d->lockpath, O_RDWR | O_CREAT | O_NOFOLLOW |
		    O_CLOEXEC, 0600);
		if (fd == -1) {
			util_cause(cause, "cannot open '%s': %s", d->lockpath,
			    strerror(errno));
			return -1;
		}
		if (d->frozen[0] != '\0')
			rv = util_flock_wait(fd, LOCK_EX, 0, docker_lock_stop);
		else
			while ((rv = flock(fd, LOCK_EX)) == -1 &&
			    errno == EINTR)
				;
		if (rv == -1) {
			rv = errno;
			if (rv == EINTR)
				util_cause(cause, "interrupted while waiting "
				    "for the container's freeze lock (another "
				    "sandgate command holds it)");
			else
				util_cause(cause, "cannot lock '%s': %s",
				    d->lockpath, strerror(rv));
			close(fd);
			errno = rv;
			return -1;
		}
		if (fstat(fd, &a) == 0 && stat(d->lockpath, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			break;
		close(fd);	/* released and removed meanwhile */
	}
	d->lockfd = fd;
	util_strlcpy(d->lockid, id, sizeof(d->lockid));
	return 0;
}

static void
docker_unlock(struct docker *d)
{
	if (d->lockfd == -1)
		return;
	unlink(d->lockpath);
	close(d->lockfd);
	d->lockfd = -1;
	d->lockid[0] = '\0';
}

/*
 * POST pause or unpause; Docker's 409 for "already paused" or "not
 * paused" is success (a sandgate killed while it held a freeze leaves
 * its container paused; whoever comes next takes it over).
 */
static int
docker_pause_call(struct docker *d, const char *id, int pause, char **cause)
{
	struct docker_cinfo	 ci;
	json_t			*r = NULL;
	char			 path[256];
	long			 status = 0;

	snprintf(path, sizeof(path), "/containers/%s/%s", id,
	    pause ? "pause" : "unpause");
	if (docker_call(d, "POST", path, NULL, &status, &r, cause) == -1)
		return -1;
	/*
	 * Docker 20.10 answers 500, not 409, to a pause of a paused or an
	 * unpause of a running container (an exec that found the container
	 * paused by a diff, and waited for its thaw): what counts is that
	 * the container is now as asked.
	 */
	if ((status >= 200 && status < 300) || status == 409 ||
	    (status != 404 && docker_container_inspect(d, id, &ci,
	    NULL) == 0 && ci.running && ci.paused == (pause != 0))) {
		json_decref(r);
		return 0;
	}
	docker_fail(cause, "POST", path, status, r);
	json_decref(r);
	errno = status == 404 ? ENOENT : EIO;
	return -1;
}

int
docker_container_pause(struct docker *d, const char *id, int pause,
    char **cause)
{
	int	held = d->lockfd != -1 && strcmp(d->lockid, id) == 0, rv;

	if (!held && d->lockfd != -1) {
		util_cause(cause, "docker: container %.12s is frozen by this "
		    "process; cannot pause %.12s too", d->lockid, id);
		return -1;
	}
	if (pause && held)
		return 0;	/* paused already, by us */
	if (!held && docker_lock(d, id, cause) == -1)
		return -1;
	rv = docker_pause_call(d, id, pause, cause);
	/* the lock stays with a pause until its unpause */
	if (!pause || rv == -1)
		docker_unlock(d);
	return rv;
}

int
docker_container_lock(struct docker *d, const char *id, char **cause)
{
	if (d->lockfd != -1) {
		util_cause(cause, "docker: container %.12s is frozen by this "
		    "process; cannot lock %.12s too", d->lockid, id);
		return -1;
	}
	return docker_lock(d, id, cause);
}

void
docker_container_unlock(struct docker *d)
{
	docker_unlock(d);
}

static void
docker_on_signal(int sig)
{
	docker_sig = sig;
}

int
docker_freeze(struct docker *d, const char *id, char **cause)
{
	struct sigaction	sa;
	size_t			i;

	if (d->frozen[0] != '\0') {
		util_cause(cause, "docker: already freezing container %.12s",
		    d->frozen);
		return -1;
	}
	docker_sig = 0;
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = docker_on_signal;
	sa.sa_flags = SA_RESTART;
	for (i = 0; i < 3; i++)
		sigaction(docker_sigs[i], &sa, &d->oldsa[i]);
	util_strlcpy(d->frozen, id, sizeof(d->frozen));
	if (docker_container_pause(d, id, 1, cause) == -1) {
		if (errno != ENOENT) {
			docker_thaw(d, NULL);
			return -1;
		}
		/* no such container: nothing runs that could write */
		if (cause != NULL) {
			free(*cause);
			*cause = NULL;
		}
	}
	return 0;
}

int
docker_thaw(struct docker *d, char **cause)
{
	size_t	i;
	int	rv = 0;

	if (d->frozen[0] == '\0')
		return 0;
	if (d->lockfd != -1 && strcmp(d->lockid, d->frozen) == 0)
		rv = docker_container_pause(d, d->frozen, 0, cause);
	d->frozen[0] = '\0';
	for (i = 0; i < 3; i++)
		sigaction(docker_sigs[i], &d->oldsa[i], NULL);
	return rv;
}

int
docker_freeze_signal(void)
{
	return docker_sig;
}

int
docker_container_list(struct docker *d, const char *key, const char *value,
    json_t **list, char **cause)
{
	char	 filt[512], path[1024], *esc;
	json_t	*r = NULL;

	snprintf(filt, sizeof(filt), "{\"label\":[\"%s%s%s\"]}", key,
	    value ? "=" : "", value ? value : "");
	if ((esc = curl_easy_escape(d->ctl, filt, 0)) == NULL) {
		util_cause(cause, "docker: cannot encode a filter");
		return -1;
	}
	snprintf(path, sizeof(path), "/containers/json?all=1&filters=%s",
	    esc);
	curl_free(esc);
	if (docker_simple(d, "GET", path, NULL, 0, &r, cause) == -1)
		return -1;
	if (!json_is_array(r)) {
		json_decref(r);
		util_cause(cause, "docker: container list is not an array");
		return -1;
	}
	*list = r;
	return 0;
}

int
docker_image_id(struct docker *d, const char *name, char **id, char **cause)
{
	char	 path[1024], *esc;
	json_t	*r = NULL;
	int	 rv = 0;

	if ((esc = curl_easy_escape(d->ctl, name, 0)) == NULL) {
		util_cause(cause, "docker: cannot encode image name");
		return -1;
	}
	snprintf(path, sizeof(path), "/images/%s/json", esc);
	curl_free(esc);
	if (docker_simple(d, "GET", path, NULL, 0, &r, cause) == -1)
		return -1;
	if (!json_is_string(json_object_get(r, "Id"))) {
		util_cause(cause, "docker: image '%s' has no id", name);
		rv = -1;
	} else
		*id = util_xstrdup(json_string_value(json_object_get(r, "Id")));
	json_decref(r);
	return rv;
}

int
docker_network_exists(struct docker *d, const char *name, char **cause)
{
	char	 path[512];

	snprintf(path, sizeof(path), "/networks/%s", name);
	if (docker_simple(d, "GET", path, NULL, 0, NULL, cause) == 0)
		return 1;
	if (errno != ENOENT)
		return -1;
	if (cause != NULL) {
		free(*cause);
		*cause = NULL;
	}
	return 0;
}

int
docker_network_create(struct docker *d, const char *name, int internal,
    const char *subnet, const char *label, const char *value, char **cause)
{
	json_t	*spec;
	int	 rv;

	spec = json_pack("{s:s, s:s, s:b, s:{s:s}}", "Name", name, "Driver",
	    "bridge", "Internal", internal, "Labels", label, value);
	if (spec == NULL) {
		util_cause(cause, "docker: cannot build the network spec");
		return -1;
	}
	/* no route to the host either: not even the bridge has an address */
	if (internal)
		json_object_set_new(spec, "Options", json_pack("{s:s}",
		    "com.docker.network.bridge.inhibit_ipv4", "true"));
	if (subnet != NULL)
		json_object_set_new(spec, "IPAM", json_pack("{s:[{s:s}]}",
		    "Config", "Subnet", subnet));
	rv = docker_simple(d, "POST", "/networks/create", spec, 409, NULL,
	    cause);
	json_decref(spec);
	return rv;
}

int
docker_network_remove(struct docker *d, const char *name, char **cause)
{
	char	path[512];

	snprintf(path, sizeof(path), "/networks/%s", name);
	return docker_simple(d, "DELETE", path, NULL, 404, NULL, cause);
}

int
docker_container_ip(struct docker *d, const char *container,
    const char *network, char *buf, size_t size, char **cause)
{
	json_t		*resp = NULL;
	const char	*ip;
	char		 path[256];
	long		 status = 0;

	snprintf(path, sizeof(path), "/containers/%s/json", container);
	if (docker_call(d, "GET", path, NULL, &status, &resp, cause) == -1)
		return -1;
	ip = json_string_value(json_object_get(json_object_get(json_object_get(
	    json_object_get(resp, "NetworkSettings"), "Networks"), network),
	    "IPAddress"));
	if (status != 200 || ip == NULL || *ip == '\0') {
		util_cause(cause, "container %s has no address on %s%s",
		    container, network, status == 404 ?
		    " (it does not exist)" : "");
		json_decref(resp);
		return -1;
	}
	util_strlcpy(buf, ip, size);
	json_decref(resp);
	return 0;
}

int
docker_exec_create(struct docker *d, const char *cid, json_t *spec,
    char **id, char **cause)
{
	char	 path[256];
	json_t	*r = NULL;
	int	 rv;

	snprintf(path, sizeof(path), "/containers/%s/exec", cid);
	if (docker_simple(d, "POST", path, spec, 0, &r, cause) == -1)
		return -1;
	rv = docker_created_id(r, id, cause);
	json_decref(r);
	return rv;
}

int
docker_exec_start_detached(struct docker *d, const char *id, long timeout_ms,
    char **cause)
{
	char		 path[256];
	json_t		*body;
	uint64_t	 saved;
	int		 rv;

	snprintf(path, sizeof(path), "/exec/%s/start", id);
	body = json_pack("{s:b, s:b}", "Detach", 1, "Tty", 0);
	/* the start waits for the runtime, which may hang (gVisor at its
	 * host process limit): bounded by the caller */
	saved = docker_deadline_within(d, (uint64_t)timeout_ms);
	rv = docker_simple(d, "POST", path, body, 0, NULL, cause);
	docker_deadline(d, saved);
	json_decref(body);
	return rv;
}

int
docker_exec_inspect(struct docker *d, const char *id,
    struct docker_einfo *ei, char **cause)
{
	char	 path[256];
	json_t	*r = NULL;
	int	 rv = 0;

	snprintf(path, sizeof(path), "/exec/%s/json", id);
	if (docker_simple(d, "GET", path, NULL, 0, &r, cause) == -1)
		return -1;
	if (docker_parse_einfo(r, ei) == -1) {
		util_cause(cause, "docker: unexpected exec inspect answer");
		rv = -1;
	}
	json_decref(r);
	return rv;
}

int
docker_parse_cinfo(json_t *r, struct docker_cinfo *ci)
{
	json_t	*id = json_object_get(r, "Id");
	json_t	*img = json_object_get(r, "Image");
	json_t	*st = json_object_get(r, "State");
	json_t	*pid, *status;

	memset(ci, 0, sizeof(*ci));
	if (!json_is_string(id) || !json_is_object(st))
		return -1;
	pid = json_object_get(st, "Pid");
	status = json_object_get(st, "Status");
	if (!json_is_integer(pid) || json_integer_value(pid) < 0 ||
	    json_integer_value(pid) > 0x3fffffff || !json_is_string(status))
		return -1;
	util_strlcpy(ci->id, json_string_value(id), sizeof(ci->id));
	if (json_is_string(img))
		util_strlcpy(ci->image, json_string_value(img),
		    sizeof(ci->image));
	util_strlcpy(ci->status, json_string_value(status),
	    sizeof(ci->status));
	ci->running = json_is_true(json_object_get(st, "Running"));
	ci->paused = json_is_true(json_object_get(st, "Paused"));
	ci->oom_killed = json_is_true(json_object_get(st, "OOMKilled"));
	ci->pid = (pid_t)json_integer_value(pid);
	return 0;
}

int
docker_parse_einfo(json_t *r, struct docker_einfo *ei)
{
	json_t	*running = json_object_get(r, "Running");
	json_t	*code = json_object_get(r, "ExitCode");
	json_t	*pid = json_object_get(r, "Pid");

	memset(ei, 0, sizeof(*ei));
	if (!json_is_boolean(running))
		return -1;
	ei->running = json_is_true(running);
	ei->exit_code = -1;
	if (json_is_integer(code) && json_integer_value(code) >= 0 &&
	    json_integer_value(code) <= 255)
		ei->exit_code = (int)json_integer_value(code);
	else if (!json_is_null(code) && code != NULL)
		return -1;
	if (json_is_integer(pid) && json_integer_value(pid) > 0 &&
	    json_integer_value(pid) <= 0x3fffffff)
		ei->pid = (pid_t)json_integer_value(pid);
	return 0;
}

/* libcurl delivers the attach stream here: demultiplex into cb->data. */
static size_t
docker_stream_write_cb(char *p, size_t sz, size_t n, void *arg)
{
	struct docker	*d = arg;
	long		 status = 0;

	curl_easy_getinfo(d->stream, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200 && status != 101) {
		if (docker_buf_add(&d->serr, p, sz * n) == -1)
			return 0;
		return sz * n;
	}
	/* the consumer holds back: curl keeps this piece until resumed */
	if (d->scb->ready != NULL && d->scb->ready(d->scb->arg,
	    &d->swaitfd) == 0) {
		d->spaused = 1;
		return CURL_WRITEFUNC_PAUSE;
	}
	if (docker_demux_feed(&d->demux, (const unsigned char *)p, sz * n,
	    d->scb->data, d->scb->arg) == -1) {
		d->sstop = 1;
		return 0;
	}
	return sz * n;
}

/*
 * A paused stream goes on once the consumer is ready again; until then
 * the pump also wakes when the descriptor it waits on can be written.
 */
static int
docker_stream_resume(struct docker *d, struct curl_waitfd *wfd)
{
	if (!d->spaused)
		return 0;
	if (d->scb->ready(d->scb->arg, &d->swaitfd) == 1) {
		d->spaused = 0;
		curl_easy_pause(d->stream, CURLPAUSE_CONT);
		return 0;
	}
	if (d->swaitfd == -1)
		return 0;
	wfd->fd = d->swaitfd;
	wfd->events = CURL_WAIT_POLLOUT;
	wfd->revents = 0;
	return 1;
}

/* Drive the multi until the stream ends or a callback stops it. */
static int
docker_stream_pump(struct docker *d)
{
	struct curl_waitfd	wfd[2];
	uint64_t		next = util_now_us(), now;
	int			running, nw, rc, wake;

	for (;;) {
		nw = docker_stream_resume(d, &wfd[0]);
		curl_multi_perform(d->multi, &running);
		docker_collect(d);
		if (d->stream_done || d->sstop)
			break;
		now = util_now_us();
		if (now >= next) {
			rc = d->scb->tick != NULL ? d->scb->tick(d->scb->arg) :
			    0;
			if (rc == -1) {
				d->sstop = 1;
				break;
			}
			if (rc <= 0 || rc > DOCKER_TICK_MS)
				rc = DOCKER_TICK_MS;
			next = now + (uint64_t)rc * 1000;
			continue;	/* the tick may have run transfers */
		}
		wake = -1;
		if (d->scb->wakefd != NULL &&
		    (wfd[nw].fd = d->scb->wakefd(d->scb->arg)) != -1) {
			wfd[nw].events = CURL_WAIT_POLLIN;
			wfd[nw].revents = 0;
			wake = nw++;
		}
		curl_multi_poll(d->multi, nw ? wfd : NULL, (unsigned)nw,
		    (int)((next - now) / 1000) + 1, NULL);
		if (wake != -1 && (wfd[wake].revents & CURL_WAIT_POLLIN))
			next = 0;	/* tick now: what it waits for came */
	}
	return d->stream_done && !d->sstop ? 0 : 1;
}

int
docker_exec_start(struct docker *d, const char *id,
    const struct docker_stream_cb *cb, char **cause)
{
	static const char	 body[] = "{\"Detach\":false,\"Tty\":false}";
	char			 url[512];
	long			 status = 0;
	int			 rv;

	snprintf(url, sizeof(url), "http://docker/v%s/exec/%s/start", d->ver,
	    id);
	curl_easy_setopt(d->stream, CURLOPT_URL, url);
	curl_easy_setopt(d->stream, CURLOPT_POSTFIELDS, body);
	docker_demux_init(&d->demux);
	free(d->serr.data);
	memset(&d->serr, 0, sizeof(d->serr));
	d->scb = cb;
	d->sstop = 0;
	d->spaused = 0;
	d->swaitfd = -1;
	d->stream_done = 0;
	if (curl_multi_add_handle(d->multi, d->stream) != CURLM_OK) {
		util_cause(cause, "docker: cannot start a transfer");
		return -1;
	}
	rv = docker_stream_pump(d);
	curl_multi_remove_handle(d->multi, d->stream);
	curl_easy_getinfo(d->stream, CURLINFO_RESPONSE_CODE, &status);
	if (status != 200 && status != 101 && status != 0) {
		util_cause(cause, "docker: exec start: %ld %.*s", status,
		    (int)(d->serr.len > 200 ? 200 : d->serr.len),
		    d->serr.data ? d->serr.data : "");
		return -1;
	}
	if (rv == 1 && d->demux.bad) {
		util_cause(cause, "docker: malformed exec output stream");
		return -1;
	}
	if (rv == 0 && d->stream_result != CURLE_OK &&
	    d->stream_result != CURLE_PARTIAL_FILE) {
		util_cause(cause, "docker: exec stream: %s",
		    curl_easy_strerror(d->stream_result));
		return -1;
	}
	return rv;
}

void
docker_demux_init(struct docker_demux *dm)
{
	memset(dm, 0, sizeof(*dm));
}

int
docker_demux_at_boundary(const struct docker_demux *dm)
{
	return !dm->bad && dm->hdrlen == 0 && dm->left == 0;
}

/*
 * Consume header bytes; on a complete header validate it (*bad set when
 * it is malformed) and load the payload length. Returns bytes used.
 */
static size_t
docker_demux_header(struct docker_demux *dm, const unsigned char *p,
    size_t n, int *bad)
{
	size_t	take = sizeof(dm->hdr) - dm->hdrlen;

	if (take > n)
		take = n;
	memcpy(dm->hdr + dm->hdrlen, p, take);
	dm->hdrlen += take;
	*bad = 0;
	if (dm->hdrlen < sizeof(dm->hdr))
		return take;
	if (dm->hdr[0] > 2 || dm->hdr[1] != 0 || dm->hdr[2] != 0 ||
	    dm->hdr[3] != 0) {
		*bad = 1;
		return take;
	}
	dm->stream = dm->hdr[0] == 2 ? 2 : 1;
	dm->left = (uint32_t)dm->hdr[4] << 24 | (uint32_t)dm->hdr[5] << 16 |
	    (uint32_t)dm->hdr[6] << 8 | (uint32_t)dm->hdr[7];
	dm->hdrlen = 0;
	return take;
}

int
docker_demux_feed(struct docker_demux *dm, const unsigned char *p, size_t n,
    docker_demux_out out, void *arg)
{
	size_t	used, take;
	int	bad;

	if (dm->bad)
		return -1;
	while (n > 0) {
		if (dm->left == 0) {
			used = docker_demux_header(dm, p, n, &bad);
			if (bad) {
				dm->bad = 1;
				return -1;
			}
			p += used;
			n -= used;
			continue;
		}
		take = n < dm->left ? n : dm->left;
		if (out(arg, dm->stream, p, take) == -1)
			return -1;
		dm->left -= (uint32_t)take;
		p += take;
		n -= take;
	}
	return 0;
}
