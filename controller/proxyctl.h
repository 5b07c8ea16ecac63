/*
 * proxyctl.h: the controller's side of the proxy: where its files live,
 * talking to its control socket (HTTP+JSON over a unix socket, see
 * docs/proxy.md), and the Docker networks and container that
 * `sandgate proxy start` sets up.
 *
 * Layout under state_root()/proxy/: run/control.sock (the socket; run/ is
 * mounted read-write into the proxy container and never into a sandbox),
 * config.json (how the running proxy was started).
 */
#ifndef SG_PROXYCTL_H
#define SG_PROXYCTL_H

#include <jansson.h>

#include "token.h"

struct docker;

#define PROXYCTL_TOKEN_PUB	"/etc/sandgate/token.pub"	/* --token-key */
#define PROXYCTL_CONTAINER	"sandgate-proxy"
#define PROXYCTL_IMAGE		"sandgate/proxy:latest"
#define PROXYCTL_NET_INTERNAL	"sandgate-internal"
#define PROXYCTL_NET_EGRESS	"sandgate-egress"
#define PROXYCTL_SUBNET		"10.213.0.0/24"
#define PROXYCTL_PORT		3128
/* --log-keep-min-age of the proxy that `sandgate proxy start` runs. */
#define PROXYCTL_LOG_KEEP_MIN_AGE	"7d"
#define PROXYCTL_UID		65532
/* The sandgate CA: state_root()/proxy/ca/, mounted into the proxy only. */
#define PROXYCTL_CA_MOUNT	"/etc/sandgate/ca"
#define PROXYCTL_CA_CERT	"ca.crt"
#define PROXYCTL_CA_KEY		"ca.key"

#define PROXYCTL_REPLICAS_MAX	16	/* URLs in SANDGATE_PROXY_CONTROL */
#define PROXYCTL_URL_MAX	512
/*
 * Replicas one send can go to: those of the environment and those a
 * sandbox was registered with (repset.h) or a kept send is owed to.
 */
#define PROXYCTL_TARGETS_MAX	(2 * PROXYCTL_REPLICAS_MAX)
/* The control socket as a replica set names it (else a URL). */
#define PROXYCTL_SET_SOCKET	"socket"

/*
 * SANDGATE_PROXY_CONTROL (http:// or https://HOST:PORT), when set: the
 * proxy's TCP control API, used instead of the socket by every call here
 * with the bearer token of SANDGATE_PROXY_CONTROL_TOKEN_FILE (https://
 * checked against SANDGATE_PROXY_CONTROL_CA, else the system's CAs).
 * Several URLs, comma-separated, name the replicas of one proxy tier
 * (one token file and CA for all). NULL when unset.
 */
const char	*proxyctl_remote(void);

/*
 * How many replicas the controller talks to: the URLs of
 * SANDGATE_PROXY_CONTROL (at most PROXYCTL_REPLICAS_MAX), or 1 (the one
 * URL, or the control socket).
 */
size_t		 proxyctl_replicas(void);

/*
 * The "error" a replica answered with (none when it gave none) as
 * shown: cut to PROXYCTL_ERROR_MAX bytes and escaped (quote.h), so its
 * bytes never reach a terminal or a kept file raw. Heap.
 */
#define PROXYCTL_ERROR_MAX	256
char		*proxyctl_error_of(json_t *resp, const char *none);

/*
 * Any other string of a replica's answer (v; none when it is not a
 * string) as shown, as proxyctl_error_of() does (atk1921j F1). Heap.
 */
char		*proxyctl_words(json_t *v, const char *none);
/* Replica i as named in SANDGATE_PROXY_CONTROL, or the socket's path. */
const char	*proxyctl_replica_name(size_t i);

/*
 * The replicas of the environment as a set: their names (each URL of
 * SANDGATE_PROXY_CONTROL, or PROXYCTL_SET_SOCKET), comma-separated
 * (heap). A sandbox keeps the set it was registered with (repset.h).
 */
char		*proxyctl_set(void);

/* state_root()/proxy/run/control.sock (static storage). */
const char	*proxyctl_socket_path(void);

/*
 * Whether the local proxy's folder (beside proxyctl_socket_path) holds a
 * registry or grants file its next start would load that names sandbox
 * id: 1, or 1 when such a file cannot be read; 0 when none names it (on
 * a host where no proxy ever ran, or for a sandbox never registered,
 * such as one of --network none). With the socket missing, a stopped
 * proxy that names it (1) has not confirmed an unregister; 0 has
 * nothing to forget.
 */
int		 proxyctl_local_registry(const char *id);

/*
 * The sandgate CA's certificate on the host (state_root()/proxy/ca/ca.crt)
 * when `proxy start` has made one. The proxy's container writes that
 * folder, so it is read as pemfile_read_certs() reads (no link followed,
 * a regular file with one name of at most PROXYCTL_CA_CERT_MAX bytes)
 * and only its certificates, parsed and written again, are returned: a
 * compromised proxy cannot have root copy another host file (or the CA
 * key) into a sandbox. 0 with the PEM text in *pem (malloc'd), 1 when
 * there is none, -1 with *cause.
 */
#define PROXYCTL_CA_CERT_MAX	(64 * 1024)
int	proxyctl_ca_cert(char **pem, size_t *len, char **cause);

/*
 * Rotation: remove the CA (key and certificate) so that the next start
 * of the proxy makes a new one. 0, 1 when there was none, -1 with *cause.
 */
int	proxyctl_ca_remove(char **cause);

/*
 * One request to the proxy. body may be NULL (borrowed). *status gets
 * the HTTP status and *resp (may be NULL) the parsed JSON reply. Returns
 * 0, or -1 when the proxy cannot be reached (*cause says why). A GET
 * goes to every replica at once and takes the first that answers (in
 * SANDGATE_PROXY_CONTROL's order); anything else to every replica
 * (proxyctl_call_fan), with a warning on stderr naming those that did
 * not take it.
 */
int	proxyctl_call(const char *method, const char *path, json_t *body,
	    long *status, json_t **resp, char **cause);
/* One request to replica i only. */
int	proxyctl_call_at(size_t i, const char *method, const char *path,
	    json_t *body, long *status, json_t **resp, char **cause);
/*
 * One request to every replica: *status and *resp are the first
 * answering replica's; *missed (heap, NULL when none) lists the others
 * that did not answer or answered another status, as "NAME (why); ...".
 * -1 with *cause when no replica answered.
 */
int	proxyctl_call_fan(const char *method, const char *path, json_t *body,
	    long *status, json_t **resp, char **missed, char **cause);

/*
 * The answer of one replica to proxyctl_call_each(): cause NULL when it
 * answered (status, and resp its JSON or NULL), else why not.
 */
struct proxyctl_ans {
	long	 status;
	json_t	*resp;
	char	*cause;
	long	 took_ms;	/* its last try's, from start to end */
};

/*
 * One request to every replica at once (paths[i] to replica i; NULL:
 * not asked), into ans[proxyctl_replicas()]. Over TCP a replica gets 2 s
 * to connect and 5 s (a GET) or 10 s (a change) in all, so a dead
 * replica costs one such wait per call, not one per replica.
 */
void	proxyctl_call_each(const char *method, const char *const *paths,
	    json_t *body, struct proxyctl_ans *ans);
/* proxyctl_call_each() with one path for every replica. */
void	proxyctl_call_all(const char *method, const char *path,
	    json_t *body, struct proxyctl_ans *ans);
void	proxyctl_ans_free(struct proxyctl_ans *, size_t n);

/* GET /metrics as text (heap) or NULL with *cause. */
char	*proxyctl_metrics(char **cause);

/*
 * The proxy's address on sandgate-internal ("10.213.0.2"), read from the
 * running proxy container, into buf. 0 or -1 with *cause ("the proxy is
 * not running; start it with `sandgate proxy start`").
 */
int	proxyctl_address(struct docker *, char *buf, size_t size,
	    char **cause);

/*
 * Register a sandbox's container with the proxy: looks up the container's
 * address on sandgate-internal and posts it with the sets; with extra
 * (an `exec --fresh` container) beside the sandbox's other addresses,
 * else in their place. 0 or -1.
 */
int	proxyctl_register(struct docker *, const char *container,
	    const char *sandbox, json_t *sets, int extra, char **cause);
/*
 * Forget a sandbox (every address) on each replica of the set to (NULL:
 * none; repset.h) and of the environment (atk1921h F3: it can add
 * replicas, not remove them). 0 once each answered that it holds and
 * saved (or kept apart) the removal; else -1 with *cause naming each
 * replica that did not and why, and *left (heap) the set of those. The
 * socket of a stopped local proxy whose files name nothing of the
 * sandbox is not asked: it has nothing to forget. At most
 * PROXYCTL_TARGETS_MAX replicas are asked (the environment's first): a
 * name past them is not, and is in *left (atk1921i F10).
 */
int	proxyctl_unregister(const char *sandbox, const char *to, char **left,
	    char **cause);
/*
 * Forget one container's address (an `exec --fresh` one of sandbox, at
 * its end) on the replicas of to (as proxyctl_unregister) and of the
 * environment: 0 when each one confirmed it, else -1 with *cause naming
 * those that did not (atk1921i F9).
 */
int	proxyctl_unregister_container(struct docker *, const char *container,
	    const char *sandbox, const char *to, char **cause);

/* The block cursor of the proxy (replica 0) now; 0, or -1. */
int	proxyctl_log_seq(long long *seq);

/*
 * One exec's attribution. begin takes the block cursor and registers a
 * new credential for run_id with the proxy (cred, 32 hex digits, never
 * handed out when a token is); token is what goes into the exec's proxy
 * URL: with the token key (state_root()/keys/token.key) a sandbox token
 * signed with it (exectoken.h: the sandbox, run_id, the sets in force,
 * the grants digest, expiring timeout + EXECTOKEN_MARGIN s from now),
 * else cred; "" when the proxy could not take the credential, or when
 * the replicas it would go to cannot be recorded as the sandbox's
 * first (repset_record: its end and unregister go to them, atk1921i
 * F3). finish
 * reads the blocks after the cursor (with a credential: the run's own
 * and those no credential named, each with its run_id or null) and ends
 * the credential, so neither cred nor token names the run any more
 * (when a replica did not confirm that, the end is kept and sent again,
 * execend.h, and end_owed is set). finish returns NULL when the proxy could not be asked, and sets
 * truncated when the proxy kept only some of the blocks.
 *
 * With several replicas, each has its own cursor; finish asks every
 * replica, merges their blocks per destination and run (attempts
 * summed), returns NULL only when none answered, and sets replicas
 * ([{"name","status"}], the caller's) and truncated (and warns) when
 * one did not answer.
 */
struct proxyctl_exec {
	long long	 seq[PROXYCTL_REPLICAS_MAX];	/* per replica */
	unsigned char	 known[PROXYCTL_REPLICAS_MAX];	/* seq[i] is */
	int		 asked;		/* some seq is known */
	int		 cred_ok;	/* a credential is registered */
	int		 truncated;	/* the blocks read are not all */
	int		 end_owed;	/* a replica did not take the end */
	char		 cred[33];
	char		 token[TOKEN_TEXT_MAX + 1];
	json_t		*replicas;	/* exec_result's network_replicas */
};

void	proxyctl_exec_begin(struct proxyctl_exec *, const char *sandbox,
	    const char *run_id, json_t *sets, long long timeout);
json_t	*proxyctl_exec_finish(struct proxyctl_exec *, const char *sandbox,
	    const char *run_id);
/*
 * End the proxy credential of run_id: what proxyctl_exec_finish() does
 * at an exec's end, for a run whose sandgate process died before it
 * could (gc, or the sandbox's next exec, found its marker ownerless),
 * and for an end kept owed (execend.h), to the replicas of to and of
 * the environment (as proxyctl_unregister). 0 when each answered 200 (an
 * unknown run id is: nothing to end), or -1 with *cause naming each
 * replica that did not and *left (heap) the set of those.
 */
int	proxyctl_exec_end(const char *run_id, const char *to, char **left,
	    char **cause);
/*
 * exec_active_sweep()'s gone (arg: the sandbox): execend_send(), which
 * warns of and keeps an end a replica did not confirm.
 */
void	proxyctl_exec_gone(const char *run_id, void *arg);

/*
 * Copy the proxy container's output (its stderr: start-up, reloads,
 * warnings) to stdout/stderr; follow keeps streaming. 0 or -1.
 */
int	proxyctl_container_logs(const char *api_version, int follow,
	    char **cause);

/* How `sandgate proxy start` runs the proxy: absolute, existing paths. */
struct proxyctl_opts {
	const char	*policy_dir;
	const char	*log_dir;
	const char	*egress;	/* existing network, or NULL */
	const char	*subnet;	/* of sandgate-internal */
	const char	*hosts;		/* a hosts file, or NULL */
	const char	*resolver;	/* IP:PORT, or NULL */
	const char	*sets;		/* --sets, or NULL */
	int		 log_allowed;
};

enum proxyctl_started {
	PROXYCTL_START_FAILED = -1,
	PROXYCTL_STARTED,		/* a new container */
	PROXYCTL_RUNNING		/* the same spec ran already: kept */
};

/*
 * The proxy's address on sandgate-internal for subnet: its .2, into buf.
 * 0, or -1 unless subnet is an IPv4 CIDR of /29 or larger.
 */
int	proxyctl_subnet_ip(const char *subnet, char *buf, size_t size);

/*
 * The proxy container's spec (derived from cspec_new(), cspec.h) for
 * o, listening on ip. The caller owns it.
 */
json_t	*proxyctl_spec(const struct proxyctl_opts *o, const char *ip);

/*
 * Start the proxy: its image (built from the sandgate-proxy beside the
 * controller), the networks (sandgate-internal: internal, the host
 * unreachable; o->egress or sandgate-egress, created when missing, named
 * on stdout), the folders it writes (handed to PROXYCTL_UID), then the
 * container, unless one with the same spec runs already; either way it
 * returns once the control socket answers. o->egress is set to the
 * network used. PROXYCTL_START_FAILED comes with *cause.
 */
enum proxyctl_started proxyctl_start(struct docker *,
	    struct proxyctl_opts *o, char **cause);

/*
 * Stop the proxy with SIGTERM (docker stop) so that it drains and signs
 * its close checkpoint (docker kills it after PROXYCTL_STOP_SECS). 0
 * (also when none runs), or -1 with *cause.
 */
int	proxyctl_stop_signed(struct docker *, char **cause);

/* proxyctl_stop_signed(), then the container removed. 0 or -1. */
int	proxyctl_stop(struct docker *, char **cause);

#endif
