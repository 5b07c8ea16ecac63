/*
 * docker.h: a small Docker Engine API client over the unix socket.
 *
 * One struct docker per process holds one libcurl multi handle and two
 * easy handles: "ctl" for JSON requests and "stream" for exec output, so a
 * control request (pause, unpause) can run while an exec streams, and
 * keep-alive connections are reused. The socket is $DOCKER_HOST
 * (unix:///path only), else /var/run/docker.sock. docker_new() pings the
 * daemon and picks the API version: the daemon's, capped to
 * [DOCKER_API_MIN, DOCKER_API_MAX]; every path is sent as "/v<ver>/...".
 *
 * Errors: functions return 0 or -1 and set *cause to a heap string the
 * caller frees ("docker: no such container ..."; cause may be NULL when
 * the caller does not care why); a 404 on removal counts as success. Responses are capped at SG_DOCKER_RESPONSE_MAX bytes.
 *
 * The pure parts (the stream demultiplexer and the JSON extractors) do no
 * I/O; tests and the fuzzer drive them directly.
 */
#ifndef SG_DOCKER_H
#define SG_DOCKER_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define DOCKER_API_MIN_MINOR	41	/* 1.41: Docker 20.10 */
#define DOCKER_API_MAX_MINOR	45
#define DOCKER_TICK_MS		50	/* stream tick interval */
#define DOCKER_ID_MAX		64	/* full container/exec id, hex */

struct docker;

/*
 * Connect and negotiate. NULL on failure with *cause set; when the socket
 * can't be reached the text is exactly "cannot reach Docker at
 * unix:///PATH (STRERROR); start dockerd or set DOCKER_HOST".
 */
struct docker	*docker_new(char **cause);
void		 docker_free(struct docker *);
/* "1.41": the version in use. */
const char	*docker_api_version(const struct docker *);

/*
 * One JSON request: METHOD /v<ver>PATH with body (may be NULL; borrowed).
 * *status gets the HTTP status; *resp (may be NULL to discard) a new
 * reference to the parsed body, or NULL when it is empty or not JSON.
 * Returns -1 only for transport failures; HTTP errors are the caller's.
 */
int	docker_call(struct docker *, const char *method, const char *path,
	    json_t *body, long *status, json_t **resp, char **cause);

/* What create/exec callers need from GET /containers/{id}/json. */
struct docker_cinfo {
	char	id[DOCKER_ID_MAX + 1];
	char	image[80];		/* "sha256:..." */
	int	running;
	int	paused;
	pid_t	pid;			/* host pid of the init, 0 if none */
	int	oom_killed;		/* State.OOMKilled: the last stop */
	char	status[32];		/* "running", "exited", ... */
};

/* What GET /exec/{id}/json reports. */
struct docker_einfo {
	int	running;
	int	exit_code;		/* -1 while running */
	pid_t	pid;
};

/* Extractors over parsed responses: 0 or -1 (missing/mistyped field). */
int	docker_parse_cinfo(json_t *, struct docker_cinfo *);
int	docker_parse_einfo(json_t *, struct docker_einfo *);
/* Api-Version "1.NN" -> minor NN; -1 unless it is "1." and 1..3 digits. */
int	docker_parse_api_version(const char *s, size_t len);
/* The message of a Docker error body {"message": "..."}, or "". */
const char *docker_error_message(json_t *);

/* Containers. ids are names or ids; create returns the new id (heap). */
int	docker_container_create(struct docker *, const char *name,
	    json_t *spec, char **id, char **cause);
int	docker_container_start(struct docker *, const char *id, char **cause);
int	docker_container_inspect(struct docker *, const char *id,
	    struct docker_cinfo *, char **cause);	/* ENOENT: 404 */
int	docker_container_remove(struct docker *, const char *id,
	    char **cause);				/* force, volumes */
/*
 * Pause (freezer) or unpause container id (its full id). A pause takes
 * the container's freeze lock (<state root>/freeze/<id>, flock) and
 * holds it until this process unpauses the container (or exits), so
 * pauses and unpauses by different sandgate processes never interleave:
 * one waits for the other's unpause. An unpause without a pause first
 * (a container found paused) takes the lock for its call. Docker's 409
 * (already paused, not paused, not running) counts as success, and so
 * does any other refusal (Docker 20.10's 500) when an inspect then finds
 * the container running and paused (or not) as asked. One
 * container at a time per struct docker.
 */
int	docker_container_pause(struct docker *, const char *id, int pause,
	    char **cause);
/*
 * The same freeze lock of container id without a pause, for a freeze
 * that sandgate makes on the container's freezer cgroup itself (an
 * exec's kill, exec.c): it waits for another sandgate process's pause
 * or freeze to end, and keeps the next one out until the unlock. -1
 * with *cause when this struct docker holds a lock already.
 */
int	docker_container_lock(struct docker *, const char *id, char **cause);
void	docker_container_unlock(struct docker *);
/*
 * Freeze container id for a critical section (diff reading the working
 * copy, apply copying it out): pause it as above, with SIGINT, SIGTERM
 * and SIGHUP caught meanwhile (docker_freeze_signal() says which came,
 * 0 if none), until docker_thaw() unpauses it and restores the signal
 * handlers. A container that does not exist needs no freeze (0). A
 * SIGKILL leaves the container paused: the next exec, diff or apply
 * unpauses it. 0 or -1 with *cause.
 */
int	docker_freeze(struct docker *, const char *id, char **cause);
int	docker_thaw(struct docker *, char **cause);
int	docker_freeze_signal(void);
/*
 * Containers (all states) with label KEY=VALUE: a new array reference of
 * the list entries (each has "Id", "State", "Labels", ...).
 */
int	docker_container_list(struct docker *, const char *key,
	    const char *value, json_t **list, char **cause);

/* Image id ("sha256:...") of NAME into *id (heap); errno ENOENT if none. */
int	docker_image_id(struct docker *, const char *name, char **id,
	    char **cause);
/* 1 if a network NAME exists, 0 if not, -1 on error. */
int	docker_network_exists(struct docker *, const char *name,
	    char **cause);
/*
 * Create bridge network NAME labelled label=value; internal ones also get
 * inhibit_ipv4 (no address of the host on them); subnet NULL: Docker's
 * choice. 0 when created or already there, -1.
 */
int	docker_network_create(struct docker *, const char *name,
	    int internal, const char *subnet, const char *label,
	    const char *value, char **cause);
/* Remove network NAME; 0 also when it is gone already. */
int	docker_network_remove(struct docker *, const char *name,
	    char **cause);
/* The IPv4 address of container on network into buf. 0, or -1. */
int	docker_container_ip(struct docker *, const char *container,
	    const char *network, char *buf, size_t size, char **cause);

/*
 * Control requests from now on end by until_us (util_now_us()'s clock),
 * each still given DOCKER_LATE_MS when it is past; 0: each request gets
 * the default bound (300 s). A wall-clock bound on a caller's Docker
 * work: the runtime may hang (gVisor at its host process limit), and
 * dockerd's answers with it.
 */
void		docker_deadline(struct docker *, uint64_t until_us);
/* The deadline brought within ms from now (kept when sooner); returns
 * the one before, for docker_deadline() to restore. */
uint64_t	docker_deadline_within(struct docker *, uint64_t ms);

/* Exec: create (spec as in POST /containers/{id}/exec), inspect. */
int	docker_exec_create(struct docker *, const char *cid, json_t *spec,
	    char **id, char **cause);
int	docker_exec_inspect(struct docker *, const char *id,
	    struct docker_einfo *, char **cause);
/* Start exec ID detached (on the control handle: callable from a tick),
 * giving up after timeout_ms. */
int	docker_exec_start_detached(struct docker *, const char *id,
	    long timeout_ms, char **cause);

/*
 * Stream callbacks for docker_exec_start(). data gets demultiplexed
 * output (stream 1 stdout, 2 stderr; stdin frames count as stdout); tick
 * runs at least every DOCKER_TICK_MS, sooner when it returned a number of
 * milliseconds above 0 (the time to its next call). Only tick may call
 * docker_call()
 * and the other requests (never docker_exec_start); data runs inside
 * libcurl and must not. Returning -1 from either ends the stream early;
 * docker_exec_start then returns 1. ready (may be NULL) is asked before
 * each piece of output: 0 holds the stream back (curl keeps the piece;
 * *fd names a descriptor whose writability is worth waiting for, or -1)
 * until a later call returns 1; ticks go on meanwhile. wakefd (may be
 * NULL) is asked before each wait: a descriptor (or -1) whose
 * readability runs tick at once, not at its time; tick must read it
 * empty, or the pump spins.
 */
struct docker_stream_cb {
	int	(*data)(void *arg, int stream, const unsigned char *,
		    size_t);
	int	(*tick)(void *arg);
	void	*arg;
	int	(*ready)(void *arg, int *fd);
	int	(*wakefd)(void *arg);
};

/*
 * Start exec ID attached and pump its output through cb until it ends.
 * Returns 0 at a clean end, 1 when a callback stopped it, -1 on error.
 */
int	docker_exec_start(struct docker *, const char *id,
	    const struct docker_stream_cb *, char **cause);

/*
 * The attach stream demultiplexer, incremental: frames may be split
 * anywhere across calls. Each frame is an 8-byte header
 *   [0] stream type: 0 stdin, 1 stdout, 2 stderr
 *   [1..3] zero
 *   [4..7] payload length, big-endian uint32
 * followed by the payload. out() gets every payload piece as it arrives
 * (stdin pieces as stream 1); returning -1 from it stops the feed.
 */
struct docker_demux {
	unsigned char	hdr[8];
	size_t		hdrlen;		/* header bytes seen of the frame */
	uint32_t	left;		/* payload bytes still to come */
	int		stream;
	int		bad;		/* set once a header was invalid */
};

typedef int (*docker_demux_out)(void *arg, int stream,
    const unsigned char *, size_t);

void	docker_demux_init(struct docker_demux *);
/* 0, or -1 on a malformed header (sticky) or when out() returned -1. */
int	docker_demux_feed(struct docker_demux *, const unsigned char *,
	    size_t, docker_demux_out out, void *arg);
/* 1 if the stream could end here (between frames), else 0. */
int	docker_demux_at_boundary(const struct docker_demux *);

#endif
