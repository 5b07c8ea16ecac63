/*
 * sandbox.h: what create decided about a sandbox (meta.json), the Docker
 * container spec every container of a sandbox gets, and tearing a sandbox
 * down.
 *
 * meta.json is written once by create (and again when the session
 * container id is known), atomically (temp file + rename), mode 0600.
 * Fields: id, created, source, image, image_id, container, runtime,
 * network, proxy, ca_cert, allow[], env[], cpus, memory, pids, disk,
 * tmp_size, timeout, ephemeral, uid (absent: SANDBOX_UID, a sandbox from
 * before uids of their own).
 *
 * The container spec (sandbox_spec) is the whole hardening contract:
 * the init's uid (below) as the container's user and group (each exec
 * names the sandbox's own uid), CapDrop ALL,
 * no-new-privileges, sandgate's allowlist seccomp profile
 * (seccomp_profile.h), AppArmor's docker-default where AppArmor is on,
 * read-only root, tmpfs /tmp (noexec,nosuid,nodev) and /home/sandbox,
 * /workspace bound read-write from work/, the probe bound read-only at
 * /.sandgate/probe and run as the container's init (`probe idle`, not
 * dumpable: the sandbox's user can neither trace nor write it), a
 * passwd and group naming the sandbox's uid, cpu/memory (no swap)/pids
 * limits, per-container ulimits (nofile, nproc, core 0), OomScoreAdj
 * SANDBOX_OOM_SCORE_ADJ, a private cgroup namespace, no container log
 * (LogConfig "none": nothing a sandbox writes reaches dockerd's disk), no
 * network (or sandgate-internal, sealed by netseal.h once started), no
 * other mounts, only the environment sandgate sets plus --env.
 *
 * Each sandbox runs as a uid of its own, claimed at create from
 * [SANDBOX_UID_BASE, SANDBOX_UID_BASE + SANDBOX_UID_COUNT): a range above
 * the host's accounts, systemd's dynamic users and container ranges
 * (which end at 0x6fffffff) and below 2^31; a uid that the host's passwd
 * or group names is skipped. The claim is a symlink named after the uid
 * in SANDBOX_UID_DIR ($SANDGATE_UID_DIR overrides) pointing at the
 * sandbox's folder, made with symlink(2), so two creates never share one,
 * whatever their state roots; discard removes it, gc removes claims whose
 * folder is gone. Per-uid kernel limits (RLIMIT_NPROC, inotify instances
 * and watches) are then per sandbox, and no host user can reach its
 * processes or files. Sandboxes created before this had uid 1000
 * (SANDBOX_UID); their meta.json has no "uid" and they keep it.
 *
 * The container's init (the idle probe, PID 1) runs as a uid no command
 * has (sandbox_init_uid): the sandbox's uid + SANDBOX_UID_COUNT, a range
 * of its own that create checks against the host's passwd and group too
 * (SANDBOX_INIT_UID_OLD for the uid-1000 sandboxes). kill(2),
 * rt_sigqueueinfo and prlimit(2) from a command then fail with EPERM: no
 * command can stop the init, lower its limits (RLIMIT_CPU 0 gets it
 * SIGKILLed by the kernel) or make the kernel drop a signal's siginfo by
 * filling the init's pending-signal count (G6a).
 */
#ifndef SG_SANDBOX_H
#define SG_SANDBOX_H

#include <jansson.h>

#include "state.h"

struct docker;

#define SANDBOX_UID		1000	/* sandboxes without a uid of their own */
#define SANDBOX_GID		1000
#define SANDBOX_UID_BASE	0x70000000UL	/* 1879048192 */
#define SANDBOX_UID_COUNT	65536UL
#define SANDBOX_UID_DIR		"/var/lib/sandgate-uids"
/* the init of a uid-1000 sandbox: above the inits' range, below 2^31 */
#define SANDBOX_INIT_UID_OLD	(SANDBOX_UID_BASE + 2 * SANDBOX_UID_COUNT)
#define SANDBOX_NOFILE		4096	/* RLIMIT_NOFILE per process */
#define SANDBOX_NPROC_SLACK	16	/* RLIMIT_NPROC above the pids limit */
#define SANDBOX_OOM_SCORE_ADJ	1000	/* the host's OOM killer's first pick */
/*
 * runc: the init's, written from the host at each start: the memory
 * cgroup's OOM killer never picks it (it would take the container and
 * every exec with it), whatever the commands hold in a memfd or tmpfs.
 * Lowering a score needs CAP_SYS_RESOURCE; a host that withholds it
 * from root gets SANDBOX_INIT_OOM_ADJ_NOCAP, the lowest value the kernel
 * lets it write there (guarantees.md, open items).
 */
#define SANDBOX_INIT_OOM_ADJ	(-1000)
#define SANDBOX_INIT_OOM_ADJ_NOCAP 0
#define SANDBOX_HOME		"/home/sandbox"
#define SANDBOX_WORKDIR		"/workspace"
#define SANDBOX_PATH_ENV	"PATH=/usr/local/sbin:/usr/local/bin:" \
				    "/usr/sbin:/usr/bin:/sbin:/bin"
#define SANDBOX_DEFAULT_IMAGE	"sandgate/base"
#define SANDBOX_NET_INTERNAL	"sandgate-internal"
#define SANDBOX_CA_DIR		"/etc/sandgate/ca"	/* --ca-cert bundle */
#define SANDBOX_LABEL		"sandgate.sandbox"
#define SANDBOX_LABEL_SOURCE	"sandgate.source"
#define SANDBOX_LABEL_ROLE	"sandgate.role"	/* session|fresh|run */
#define SANDBOX_LABEL_STATE	"sandgate.state" /* state_root() */
/* Of a fresh container: its sandgate ("PID START PIDNS BOOT UID") */
#define SANDBOX_LABEL_OWNER	"sandgate.owner"
/* In the sandbox folder, touched just before each container create. */
#define SANDBOX_PENDING		"container.pending"
/* fresh.PID.START: a fresh container of that sandgate may be up. */
#define SANDBOX_FRESH_MARK	"fresh."

/* Defaults (docs/controller.md, "Defaults and limits"). */
#define SANDBOX_DEF_CPUS	1.0
#define SANDBOX_DEF_MEMORY	(1024ull * 1024 * 1024)
#define SANDBOX_DEF_PIDS	256
#define SANDBOX_DEF_DISK	(2048ull * 1024 * 1024)
#define SANDBOX_DEF_TMP		(256ull * 1024 * 1024)
#define SANDBOX_DEF_HOME	(256ull * 1024 * 1024)
#define SANDBOX_DEF_TIMEOUT	600

struct sandbox_meta {
	char			 id[STATE_ID_LEN + 1];
	char			*created;	/* RFC 3339 */
	char			*source;	/* absolute source path */
	char			*image;		/* as given */
	char			*image_id;	/* "sha256:..." */
	char			*container;	/* session container id */
	char			*runtime;	/* NULL: Docker's default */
	char			*network;	/* "none" | "proxy" (default) */
	char			*proxy;		/* "10.213.0.2:3128" when proxy */
	char			*ca_cert;	/* <sandbox>/ca/extra.crt or NULL */
	json_t			*allow;		/* array of set names */
	json_t			*env;		/* array of "K=V" */
	double			 cpus;
	unsigned long long	 memory;
	long long		 pids;
	unsigned long long	 disk;
	unsigned long long	 tmp_size;
	long long		 timeout;	/* seconds per command */
	int			 ephemeral;	/* a `sandgate run` sandbox */
	unsigned long		 uid;		/* user and group inside */
};

/* 1 when the sandbox runs under gVisor (--runtime runsc). */
int	sandbox_gvisor(const struct sandbox_meta *);
/* Lower the oom_score_adj of the container's init (host pid). */
int	sandbox_oom_init(pid_t, char **cause);
/*
 * The pids limit of the container's host cgroup: --pids, or under gVisor
 * ten times it plus 128, because there the cgroup counts gVisor's own
 * threads and helper processes (with the ptrace platform about 8.4 host
 * tasks per sandbox process, measured), and a gVisor kernel that cannot
 * make one dies with the whole sandbox.
 * gVisor then holds the sandbox's processes to --pids itself
 * (RLIMIT_NPROC, set by sandgate-probe run).
 */
long long sandbox_host_pids(const struct sandbox_meta *);
/*
 * RLIMIT_NPROC of the container (its Ulimits): a bound per uid, which is
 * the sandbox's own, set SANDBOX_NPROC_SLACK above the pids cgroup's so
 * that the cgroup, which sandgate reports, stops a fork bomb first.
 */
long long sandbox_nproc(const struct sandbox_meta *);

/* Defaults, empty strings NULL, empty arrays. */
void	sandbox_meta_init(struct sandbox_meta *);
/*
 * The environment of one exec: with token (an exec credential,
 * proxyctl_exec_begin) and a proxy, the proxy variables again with it in
 * their URLs, then extra ("K=V", may be NULL). A new array.
 */
json_t	*sandbox_exec_env(const struct sandbox_meta *, const char *token,
	    json_t *extra);
struct exec_opts;
/*
 * Fill o (cleared first) for running argv in sandbox m under run id run:
 * its uid, pids bound and runtime, timeout seconds, output_cap bytes of
 * output kept. The caller adds what else its exec needs.
 */
void	sandbox_exec_opts(struct exec_opts *o, const struct sandbox_meta *m,
	    char *const *argv, const char *run, long long timeout,
	    size_t output_cap);
void	sandbox_meta_release(struct sandbox_meta *);
/* Setters that copy (NULL clears). */
void	sandbox_meta_set(char **field, const char *value);

/* Read/write <sandbox>/meta.json. 0 or -1 with *cause; load: ENOENT. */
int	sandbox_meta_load(const char *id, struct sandbox_meta *,
	    char **cause);
int	sandbox_meta_save(const struct sandbox_meta *, char **cause);
/* Parse a meta.json object (pure, for tests). 0 or -1. */
int	sandbox_meta_from_json(json_t *, struct sandbox_meta *);
json_t	*sandbox_meta_to_json(const struct sandbox_meta *);

/*
 * Claim a uid for the sandbox (into m->uid, see above) and write
 * <sandbox>/etc/passwd and etc/group naming it "sandbox" (mounted
 * read-only over the image's). The sandbox folder must exist. 0 or -1.
 */
int	sandbox_identity(struct sandbox_meta *, char **cause);
/* Remove the uid claims that point at the folder dir (discard). */
void	sandbox_uid_release(const char *dir);
/*
 * gc: remove the uid claims whose sandbox folder is gone (or with dry,
 * count them). The number, or -1 when the claims can't be read.
 */
int	sandbox_uid_sweep(int dry);
/* The uid of the container's init: one no command of any sandbox has. */
unsigned long	sandbox_init_uid(const struct sandbox_meta *);
/* "UID:GID" of the container's init into buf (the container's User). */
void	sandbox_init_user(const struct sandbox_meta *, char *buf, size_t size);

/* 1 when the host enforces AppArmor (the spec then names docker-default). */
int	sandbox_apparmor_on(void);


/* Host folders a container of the sandbox gets. */
struct sandbox_mounts {
	const char	*work;		/* -> /workspace rw; required */
	const char	*probe;		/* -> /.sandgate/probe ro; required */
	const char	*input;		/* -> /input ro; NULL: none */
	const char	*output;	/* -> /output rw; NULL: none */
};

/*
 * The POST /containers/create body for a container of the sandbox with
 * the given role label ("session", "fresh", "run"). New reference.
 */
json_t	*sandbox_spec(const struct sandbox_meta *,
	    const struct sandbox_mounts *, const char *role);

/*
 * Tear a sandbox down: remove every container labelled with its id,
 * unregister it from the proxy, unmount work/ and delete its folder.
 * Idempotent: a sandbox that is already gone (or half-created) is fine.
 * d may be NULL to skip Docker (only when Docker is known to hold
 * nothing). 0, -1 with *cause, or SANDBOX_UNREGISTER_OWED with *cause:
 * removed, but a proxy replica did not confirm its unregister, which is
 * kept to be sent again (unregpend.h).
 */
#define SANDBOX_UNREGISTER_OWED	1
int	sandbox_destroy(struct docker *, const char *id, char **cause);

/*
 * id unregistered from the proxy replicas it was registered with
 * (repset.h), those its kept exec ends are owed to and those of the
 * environment: 0, or 1 with *cause when one did not confirm it
 * (unreachable, refused, not saved, or its URL or token unknown here),
 * which is then kept for those replicas (unregpend.h) and written as a
 * sandbox.unregister_pending run record. The ends of its exec
 * credentials still kept (execend.h) are dropped once it is confirmed:
 * the unregister ends every credential of it. The socket of a stopped
 * local proxy whose files name nothing of it is not asked (atk1921g F1).
 */
int	sandbox_unregister(const char *id, char **cause);

/*
 * The address of the fresh container cid of sandbox id forgotten by
 * every proxy replica the sandbox is registered with (repset.h) and of
 * the environment: 0, or -1 (said) when one did not confirm it: the
 * container is then to be left to the next sweep (atk1921i F9).
 */
int	sandbox_fresh_unregister(struct docker *, const char *id,
	    const char *cid);

/*
 * Remove the sandbox's fresh containers (exec --fresh) whose owner, the
 * sandgate that made them (SANDBOX_LABEL_OWNER), is gone: SIGKILLed
 * mid-exec, it removed nothing. Each one's address is unregistered from
 * the proxy first; one the proxy did not forget (unreachable, or a
 * stopped local proxy whose files name the sandbox) is said and left to
 * the next sweep (atk1921h F5). SANDBOX_SWEEP_DRY: only counted. SANDBOX_SWEEP_MARKED
 * (every exec): Docker is asked only when the sandbox folder holds a
 * fresh mark (sandbox_fresh_mark), and the marks of owners that are gone
 * are removed once their containers are; gc asks Docker every time. A
 * container without the label (an older sandgate's) is left alone. The
 * number removed (or that would be), or -1 with *cause when Docker
 * cannot list them.
 */
#define SANDBOX_SWEEP_DRY	0x1
#define SANDBOX_SWEEP_MARKED	0x2
int	sandbox_fresh_sweep(struct docker *, const char *id, int flags,
	    char **cause);

/*
 * The fresh mark of this process in sandbox id's folder: made before its
 * fresh container is created, removed once the container is (the
 * remove), so that a sandgate killed in between leaves it for the next
 * exec's sweep. Held locked by this process until then (ownmark.h): a
 * judge in any namespace sees that its owner runs. 0, or -1 with *cause.
 */
int	sandbox_fresh_mark(const char *id, int remove, char **cause);

/* rm -rf that never follows symlinks or crosses mounts. 0 or -1. */
int	sandbox_rmtree(const char *path);

/*
 * Make sure the session container runs and work/ is mounted (after a
 * host reboot): mounts disk.img again, unpauses or starts the container
 * if needed and leaves its state in *ci. 0 or -1 with *cause.
 */
struct docker_cinfo;
int	sandbox_ensure_running(struct docker *, const struct sandbox_meta *,
	    struct docker_cinfo *ci, char **cause);

/*
 * Connect to Docker for a command: on failure print "sandgate: CAUSE" to
 * stderr and return NULL (the caller exits SG_EXIT_ERROR).
 */
struct docker	*sandbox_docker(void);

/*
 * Apply one option shared by create and run, by its long name ("cpus",
 * "memory", "pids", "disk", "tmp-size", "timeout", "runtime", "env",
 * "image", "network", "allow"). Returns 1 if applied, 0 if the name is
 * not one of these, -1 with *cause for a bad value.
 */
int	sandbox_opt(struct sandbox_meta *, const char *name, const char *value,
	    char **cause);

/*
 * Resolve the image (errno ENOENT: missing, with a cause naming it and
 * --image) and the network mode; fills meta->image_id. 0 or -1.
 */
int	sandbox_resolve(struct docker *, struct sandbox_meta *, char **cause);

/*
 * Create and start one container of the sandbox, then fail closed: run
 * the probe in it and check every control (probe.h). On any failure the
 * container is removed and -1 returned with *cause ("sandbox refused:
 * ..." when a control does not hold; *refused set to 1 then). On success
 * *cid is its id (heap) and *pid its init's host pid.
 */
int	sandbox_container_up(struct docker *, const struct sandbox_meta *,
	    const struct sandbox_mounts *, const char *role, char **cid,
	    int *pid, char **cause);

#endif
