/*
 * probe.h: the fail-closed check of a sandbox's controls from the inside.
 *
 * The static binary sandgate-probe (controller/probe/sandgate-probe.c) is
 * bind-mounted read-only into every sandbox at PROBE_CONTAINER_PATH. It
 * has two modes:
 *   sandgate-probe idle    every sandbox container's PID 1: not dumpable,
 *                          reaps orphans, exits 0 on SIGTERM/SIGINT,
 *                          otherwise sleeps
 *   sandgate-probe check   prints one JSON object (below) describing what
 *                          the process sees from inside, exit 0
 *
 * After creating a container the controller runs `check` in it and hands
 * the output to probe_check(); any control that does not hold refuses the
 * sandbox. The output comes from inside the sandbox, so it is untrusted:
 * probe_check() does no I/O, accepts any bytes and fails closed (garbage,
 * a missing field or a wrong type is a failure, never a pass).
 *
 * The JSON object ("probe": 1 is the format version). Integers are JSON
 * integers; a limit that is set to unlimited is the string "max"; a value
 * the probe could not read is null.
 *   "probe": 1,
 *   "uid": N, "gid": N,
 *   "cap_eff", "cap_prm", "cap_bnd", "cap_amb": "hex" (from /proc/self/status)
 *   "no_new_privs": N, "seccomp": N (0 off, 1 strict, 2 filter),
 *   "root_ro": bool        / is mounted read-only (mountinfo options)
 *   "root_write_fails": bool  creating a file in / failed
 *   "tmp_mounted": bool, "tmp_noexec": bool, "tmp_nosuid": bool
 *   "cgroup": "v1" | "v2" | "none"
 *   "memory_max": N|"max"|null, "memsw_max": N|"max"|null (v1 mem+swap),
 *   "swap_max": N|"max"|null (v2 swap alone),
 *   "pids_max": N|"max"|null,
 *   "cpu_quota_us": N|"max"|null, "cpu_period_us": N|null,
 *   "net_ifaces": ["eth0", ...]  (interfaces other than lo; at most 64)
 *   "docker_sock": bool    /var/run/docker.sock or /run/docker.sock exists
 *   "init_mem": W          opening /proc/1/mem for writing: "opened",
 *                          "self" (the probe is PID 1) or the errno word
 *   "personality_rie": W   personality(READ_IMPLIES_EXEC): "allowed" or
 *                          the errno word
 *   "seal": {"dns": W, "neighbour": W}   only with `check --seal IP:PORT`:
 *                          what a UDP query to Docker's resolver and a TCP
 *                          connect to IP:PORT got, W one of "answered",
 *                          "connected", "silent", "EPERM", "EACCES",
 *                          "EHOSTUNREACH", "ENETUNREACH", "ECONNREFUSED",
 *                          "ETIMEDOUT", "error" (netseal.h)
 */
#ifndef SG_PROBE_H
#define SG_PROBE_H

#include <stddef.h>

#include <jansson.h>

/* Where the probe is bind-mounted inside every sandbox container. */
#define PROBE_CONTAINER_PATH	"/.sandgate/probe"
/* Most bytes of `check` output the controller reads; more is a failure. */
#define PROBE_OUTPUT_MAX	(64 * 1024)

/*
 * What a sandbox must show. A zero limit is not checked; every flag set to
 * 1 is checked. probe_expect_init() gives the strict defaults (every flag
 * on, no limits): callers then fill in the limits they asked Docker for.
 * Always checked, whatever the flags: CapEff, CapPrm and CapAmb all zero,
 * NoNewPrivs 1, uid != 0, no Docker socket.
 */
struct probe_expect {
	unsigned long long	memory_bytes;	/* memory limit (= mem+swap) */
	long			pids;		/* pids limit */
	double			cpus;		/* quota / period, within 1% */
	int			readonly_root;	/* / read-only, write fails */
	int			tmp_noexec;	/* /tmp a noexec,nosuid mount */
	int			network_none;	/* no interface but lo */
	int			proxy_only;	/* exactly one interface: the
						   internal network (the
						   controller checks that
						   network is internal) */
	int			seccomp_filter;	/* Seccomp 2 (runsc: installed
						   by sandgate-probe run), and
						   personality(READ_IMPLIES_
						   EXEC) refused */
	int			locked_init;	/* /proc/1/mem can't be opened
						   for writing (the idle probe
						   is PID 1, not dumpable);
						   off by default */
	int			sealed;		/* "seal": both refused by the
						   local firewall (EPERM,
						   EACCES, EHOSTUNREACH,
						   ENETUNREACH) */
	/*
	 * runsc: gVisor's /proc lacks CapAmb and NoNewPrivs and hides the
	 * cgroup files, so those are not required inside; the limits are
	 * then checked from the host (probe_check_limits).
	 */
	int			gvisor;
};

void	probe_expect_init(struct probe_expect *);

/*
 * Host path of the sandgate-probe binary: the one next to
 * /proc/self/exe, else ../libexec/sandgate/sandgate-probe relative to it;
 * $SANDGATE_PROBE overrides both. Static storage; NULL if none exists.
 */
const char	*probe_path(void);

/*
 * The probe as sandboxes mount it: probe_path()'s, copied into
 * state_root()/probe as an executable the sandbox user may not read
 * (0711), so the processes it starts are not dumpable until they execute
 * a command; under gVisor (gvisor 1), whose loader must read it,
 * probe_path()'s own. Static storage; NULL with *cause set.
 */
const char	*probe_mount_path(int gvisor, char **cause);

/* Where gVisor sandboxes find the statx library and the preload file. */
#define PROBE_STATX_CONTAINER_PATH	"/.sandgate/statx.so"
#define PROBE_PRELOAD_CONTAINER_PATH	"/etc/ld.so.preload"

/*
 * gVisor sandboxes only: the host paths of sandgate-statx.so (beside
 * probe_path()'s binary; controller/probe/sandgate-statx.c says why) and
 * of a file naming PROBE_STATX_CONTAINER_PATH, state_root()/probe/
 * ld.so.preload, written when missing or different. 0 with both set
 * (static storage); -1 when the library is not there or the file cannot
 * be written, or the library is not readable by all (the sandbox's uid
 * is not its owner's, and ld.so would complain in every process): the
 * sandbox is then made without them (coreutils' statx
 * fails with EINVAL inside, as under gVisor alone).
 */
int		 probe_statx_paths(const char **lib, const char **preload);

/*
 * Compare the probe's JSON output (a NUL-terminated string of at most
 * PROBE_OUTPUT_MAX bytes; longer is a failure) with what is expected.
 * Returns 0 when every control holds; -1 with *failed set to a malloc'd
 * sentence naming the first control that does not, in an admin's words
 * (e.g. "effective capabilities not empty (CapEff 00000000a80425fb)").
 * The caller frees *failed. Checks run in this order: capabilities,
 * uid, no_new_privs, seccomp, the init not writable, personality,
 * root, /tmp, memory and swap, pids, cpus,
 * network, network seal, Docker socket.
 */
int	probe_check(const char *json, const struct probe_expect *,
	    char **failed);

/*
 * Check limits given as JSON with the probe's keys (memory_max,
 * memsw_max, swap_max, pids_max, cpu_quota_us, cpu_period_us), as read
 * inside by the probe or outside from the host's cgroupfs
 * (cgroup_limits). Same contract as probe_check.
 */
int	probe_check_limits(json_t *limits, const struct probe_expect *,
	    char **failed);

/* The limits of doctor's test container (probe_check_spec). */
#define PROBE_CHECK_MEMORY	(64ull << 20)
#define PROBE_CHECK_PIDS	32
#define PROBE_CHECK_NANOCPUS	500000000LL

/*
 * The spec of doctor's test container: image, running the probe at path
 * probe (bind-mounted read-only) as its idle init, on network net (NULL:
 * none), derived from the base of cspec.h. A new reference, or NULL.
 */
json_t	*probe_check_spec(const char *image, const char *probe,
	    const char *net);

#endif
