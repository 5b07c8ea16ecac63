/*
 * exec.h: running one command in a sandbox container and accounting for
 * it: live output, bounded capture, evidence files, the wall-clock
 * timeout, SIGINT/SIGTERM, and the memory/pids/cpu counters of the
 * container's cgroup.
 *
 * Killing: on timeout or a signal, and when the command ends with
 * processes left behind, the container is paused (freezer, so nothing
 * forks meanwhile), then every process of its cgroup that carries
 * SANDGATE_RUN=<this run> in its environment, or no SANDGATE_RUN at all,
 * or the marker of a run not in progress, gets SIGKILL from the host;
 * then it is unpaused. Spared: the container's init only while it is
 * what sandgate started (the same pid and start time as when the exec
 * began, running the file mounted at PROBE_CONTAINER_PATH: the idle
 * probe, which is not dumpable, so no process of the sandbox can have
 * written its memory), and the processes of other runs in progress. A
 * run is in progress while <runs>/<run id>.active exists and names a
 * sandgate process that still runs ("PID START PIDNS BOOT UID", procstat.h);
 * gc removes markers whose owner is gone (exec_active_sweep). Needs
 * root (the host's /proc and cgroupfs).
 *
 * Live output never blocks the deadline: the copy to fds 1 and 2 is
 * written without blocking; what a slow reader has not taken is held (up
 * to 256 KiB per stream, then the exec's output stream is paused, which
 * holds the command back as a pipe would) while the timer keeps running.
 * After a kill nothing is held for the reader; after a normal end the
 * reader gets what is held while it takes any of it within 10 s.
 *
 * Memory: captured output is at most output_cap bytes per stream (head
 * and tail halves, the middle replaced by "[sandgate: N bytes cut]"),
 * evidence files at most SG_EVIDENCE_CAP_DEFAULT bytes per stream.
 */
#ifndef SG_EXEC_H
#define SG_EXEC_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

struct docker;

/* Bounded head+tail capture of one stream (pure; unit-tested). */
struct exec_capture {
	unsigned char		*head;
	size_t			 headlen;
	size_t			 headcap;	/* allocated */
	size_t			 half;		/* head keeps this much */
	unsigned char		*tail;		/* ring of cap - half bytes */
	size_t			 tailsize;
	size_t			 tailpos;	/* next write offset */
	size_t			 taillen;
	unsigned long long	 total;
};

void	exec_capture_init(struct exec_capture *, size_t cap);
/* 0, or -1 on ENOMEM (the capture keeps what it had). */
int	exec_capture_add(struct exec_capture *, const unsigned char *, size_t);
/*
 * The captured bytes, with "\n[sandgate: N bytes cut]\n" where bytes were
 * dropped; malloc'd, NUL-terminated, length in *len. *cut gets N.
 */
char	*exec_capture_text(const struct exec_capture *, size_t *len,
	    unsigned long long *cut);
void	exec_capture_release(struct exec_capture *);

/*
 * A copy of buf where every byte that is not part of valid UTF-8 (and
 * every overlong form or surrogate) becomes U+FFFD, so JSON can carry it.
 * malloc'd, NUL-terminated; length in *outlen. NULL on ENOMEM.
 */
char	*exec_utf8_clean(const char *buf, size_t len, size_t *outlen);

struct exec_opts {
	char *const	*argv;		/* NULL-terminated, argv[0] required */
	json_t		*env;		/* extra "K=V" (borrowed) or NULL */
	const char	*workdir;	/* NULL: /workspace */
	const char	*run_id;	/* "run_<hex>" */
	long long	 timeout;	/* seconds, > 0 */
	uint64_t	 waited_us;	/* spent waiting for the sandbox
					   before (an apply or a discard held
					   it): counts against timeout */
	int		 live;		/* copy output to fds 1 and 2 */
	size_t		 output_cap;	/* per stream */
	const char	*evidence_dir;	/* <sbxdir>/runs, NULL: none */
	/* all of evidence_dir at most (the sandbox's --disk); 0: no cap */
	unsigned long long evidence_max;
	int		 inside;	/* gVisor: the host sees only gVisor's
					   own processes, so the command starts
					   through sandgate-probe run and the
					   kill runs in the sandbox
					   (sandgate-probe reap) */
	long long	 nproc;		/* with inside: RLIMIT_NPROC (the pids
					   limit, counted by gVisor) */
	unsigned long	 uid;		/* user and group of the command
					   (the sandbox's); 0: SANDBOX_UID */
	unsigned long	 init_uid;	/* with inside: the reaper's user
					   and group, the init's, which no
					   command has (sandbox_init_uid) */
	void		(*idle)(void);	/* called once while the command
					   starts (runc's work), for work
					   that need not wait for its end;
					   NULL: none */
};

struct exec_result {
	int			 exit_code;	/* what sandgate exits with */
	int			 cmd_exit;	/* the command's, -1 unknown */
	int			 timed_out;
	int			 oom_killed;
	int			 pids_limit_hit;
	int			 output_truncated;
	int			 evidence_cut;	/* the evidence copy is cut too */
	int			 signal;	/* SIGINT/SIGTERM that stopped it */
	int			 gvisor;	/* ran under runsc (exec_opts inside) */
	int			 killed;	/* processes killed */
	int			 kill_failed;	/* the kill could not finish */
	int			 sandbox_killed; /* gVisor: stopped from outside */
	const char		*unstarted;	/* why the command never
						   started (static); NULL: it
						   was started */
	int			 container_died; /* the container stopped under
						    the command */
	unsigned long long	 live_dropped;	/* live output a reader did not
						   take in time (still in the
						   capture and evidence) */
	unsigned long long	 duration_ms;
	unsigned long long	 cpu_ms;
	unsigned long long	 peak_memory;
	unsigned long long	 peak_pids;
	char			*out;		/* captured stdout (text) */
	size_t			 outlen;
	char			*err;
	size_t			 errlen;
	struct timespec		 start, end;	/* wall clock */
	/*
	 * What the proxy blocked for this sandbox during the command:
	 * [{"destination","reason","message","attempts"}], or NULL when the
	 * sandbox has no network or the proxy could not be asked.
	 */
	json_t			*network_blocked;
	int			 network_blocked_truncated; /* not all kept */
	/*
	 * With several proxy replicas (SANDGATE_PROXY_CONTROL): which were
	 * asked for the blocks, [{"name","status"}] ("replicas" in the
	 * JSON); NULL with one proxy.
	 */
	json_t			*network_replicas;
	int			 network_end_owed; /* execend.h */
};

/* SIGINT/SIGTERM set a flag exec_run() acts on; SIGPIPE is ignored. */
void	exec_signals_install(void);
/* The signal caught so far, or 0. */
int	exec_signal_pending(void);

/*
 * Run opts->argv in container cid (running, init pid `pid`) as user
 * 1000:1000 and fill *res. Returns 0 when the command ran (whatever its
 * exit), -1 with *cause when it could not be started or followed.
 */
int	exec_run(struct docker *, const char *cid, int pid,
	    const struct exec_opts *, struct exec_result *, char **cause);
void	exec_result_release(struct exec_result *);

/*
 * gc and exec: remove the .active markers in the folder runs whose owner
 * is gone (with dry, only count them), calling gone (unless NULL) with
 * each one's run id, removed or not. The number, or -1 when runs can't
 * be read.
 */
int	exec_active_sweep(const char *runs, int dry,
	    void (*gone)(const char *run_id, void *arg), void *arg);

/*
 * The runs in progress in the folder runs (a live .active marker) that
 * execute in the container where ("init PID", its init's host pid, the
 * marker's second line), but self: a JSON array of run ids, all of them (the
 * probe's reap spares exactly these; atk16r7 F1, F4). NULL when out of
 * memory.
 */
json_t	*exec_active_runs(const char *runs, const char *where,
	    const char *self);

/*
 * Print the limit lines to stderr ("sandgate: command timed out after
 * 30 s (--timeout)", "sandgate: command killed: memory limit 1 GiB
 * exceeded", "sandgate: process limit 256 reached").
 */
void	exec_report(const struct exec_result *, long long timeout,
	    unsigned long long memory, long long pids);
/*
 * The same lines as a JSON array of strings (without "sandgate: "), for
 * --json's "notices": there they come from sandgate, not from the
 * command's output, which can print anything. New reference.
 */
json_t	*exec_notices(const struct exec_result *, long long timeout,
	    unsigned long long memory, long long pids);
/* exec's --json object, docs/agents.md (new reference). */
json_t	*exec_result_json(const struct exec_result *, const char *run_id);
/* 1 when the container stopped under the command or sandgate stopped the
 * whole sandbox (sandbox_killed): the record's container_stopped. */
int	 exec_stopped(const struct exec_result *);
/* What the end left undone, for the run record's cleanup: "processes may
 * remain", the sandbox stopped from outside, or NULL (nothing). */
const char *exec_cleanup(const struct exec_result *);
/* "1 GiB", "64 MiB", "1536 KiB", "100 bytes" into buf. */
void	exec_format_size(unsigned long long, char *buf, size_t size);

#endif
