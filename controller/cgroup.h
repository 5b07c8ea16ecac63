/*
 * cgroup.h: a container's cgroups on the host (v1 hierarchies or v2),
 * read from and written to cgroupfs: where they are, the counters an
 * exec reports (OOM kills, pids refused, CPU time), the processes in them
 * and the limits in force. Paths are the host's /sys/fs/cgroup.
 */
#ifndef SG_CGROUP_H
#define SG_CGROUP_H

#include <limits.h>
#include <stddef.h>

#include <jansson.h>

#define CGROUP_FILE_MAX		4096	/* a cgroup or /proc file we read */

/* The cgroup folders of one container (v1 hierarchies or v2). */
struct cgroup {
	char	mem[PATH_MAX];
	char	pids[PATH_MAX];
	char	cpu[PATH_MAX];		/* cpuacct (usage) */
	char	cpuctl[PATH_MAX];	/* cpu (CFS quota) */
	char	freezer[PATH_MAX];	/* v1 freezer, v2 the one folder */
	int	v2;
};

/*
 * runc, cgroup v1: every exec runs in a memory cgroup of its own,
 * CGROUP_CMDS/<run id>, under one for all commands, CGROUP_CMDS, a child
 * of the container's. CGROUP_CMDS's limit is the container's less
 * CGROUP_CMDS_RESERVE (kept for the init), an exec's is CGROUP_CMDS's less
 * CGROUP_CMDS_SLACK. A command's charge reaches its own exec's limit
 * first while the other execs hold less than the slack, and the kernel's
 * OOM killer then chooses among that exec's processes only; past that,
 * among the commands'. The init is never its pick, whatever
 * oom_score_adj a command gives itself (docs/guarantees.md, items 24 and
 * 25).
 */
#define CGROUP_CMDS		"sandgate-cmds"
#define CGROUP_CMDS_RESERVE	(4ULL << 20)
#define CGROUP_CMDS_SLACK	(4ULL << 20)

/* Counters sampled before and after. */
struct cgroup_counters {
	unsigned long long	oom_kill;
	unsigned long long	pids_max;
	unsigned long long	cpu_ns;
};

/* Read a small file into buf (NUL-terminated); bytes read or -1. */
int	cgroup_read_file(const char *path, char *buf, size_t size);

/*
 * The cgroup folders of process pid, from /proc/<pid>/cgroup. 0, or -1
 * when none is found.
 */
int	cgroup_find(int pid, struct cgroup *);

/* The v1 folders of container cid (full id) from its id alone. 0 or -1. */
int	cgroup_by_id(struct cgroup *, const char *cid);

/*
 * runsc's sandbox process may sit outside the cgroup its container's
 * limits are set on: prefer <hierarchy>/docker/<cid> when it exists (v1).
 */
void	cgroup_prefer_container(struct cgroup *, const char *cid);

/*
 * The value of "KEY N" in dir/file, or the file's only number when key
 * is NULL, into *out. 0, or -1 (no such folder, file or key).
 */
int	cgroup_read_key(const char *dir, const char *file, const char *key,
	    unsigned long long *out);

/* The counters now (a counter that cannot be read stays 0). */
void	cgroup_counters_read(const struct cgroup *, struct cgroup_counters *);

/*
 * Make the memory cgroup of run run_id (CGROUP_CMDS/<run_id>) of the
 * container, and CGROUP_CMDS if needed, and set their limits from the
 * container's; its folder into out. 0, or -1 when there is none to make
 * (cgroup v2, no memory limit, a limit too small for the reserve and the
 * slack, or cgroupfs refused): the command then runs in the container's
 * memory cgroup as before.
 */
int	cgroup_cmds_setup(const struct cgroup *, const char *run_id,
	    char *out, size_t size);

/* Move process pid into the folder made by cgroup_cmds_setup. 0 or -1. */
int	cgroup_cmds_move(const char *dir, int pid);

/*
 * Remove that folder once the run ended (its charges go to CGROUP_CMDS);
 * kept while a process is still in it.
 */
void	cgroup_cmds_remove(const char *dir);

/*
 * The run whose memory cgroup (CGROUP_CMDS/<run id>) process pid is in,
 * as the host sees it: what no process of the sandbox can change (it
 * cannot write the cgroupfs). A leader that exited shows the root
 * cgroups: its live threads then say. 1 with the run id in run, 0 when pid is
 * in none (cgroup v2, the container's own, a --memory too small for
 * one), -1 when /proc does not say.
 */
int	cgroup_cmds_run(int pid, char *run, size_t size);

/*
 * The freezer of the cgroup (v1 freezer.state, v2 cgroup.freeze), read
 * and written on cgroupfs, not through the runtime: no lock of dockerd,
 * containerd or runc is taken, so a freeze never waits behind an exec
 * that runc is starting (nor that exec behind it for longer than the
 * freeze lasts).
 *
 * cgroup_frozen: 1 when the cgroup is frozen or freezing (v1 FROZEN or
 * FREEZING, v2 cgroup.freeze 1), 0 when thawed, -1 when it has no
 * freezer that can be read.
 *
 * cgroup_freeze: freeze (on) or thaw the cgroup, and wait up to wait_ms
 * for the kernel to have done it (v1 freezer.state FROZEN, v2
 * cgroup.events "frozen 1"; a thaw is at once). 0, or -1 with errno
 * (ETIMEDOUT: the freeze did not finish in time, tasks in the kernel's
 * uninterruptible sleep hold it up; the cgroup is then left freezing,
 * for the caller to thaw).
 */
int	cgroup_frozen(const struct cgroup *);
int	cgroup_freeze(const struct cgroup *, int on, int wait_ms);

/* Write value to dir/file; a failure is ignored (best effort). */
void	cgroup_write(const char *dir, const char *file, const char *value);

/*
 * The pids in the cgroup (its cgroup.procs: the pids folder's, else the
 * memory one's) into *out (heap, *count of them). 0 or -1.
 */
int	cgroup_procs(const struct cgroup *, int **out, size_t *count);

/* The same for the one cgroup folder dir. 0 or -1. */
int	cgroup_dir_procs(const char *dir, int **out, size_t *count);

/*
 * The limits the host kernel enforces on the cgroup of process pid (a
 * container's init; cid, the full container id, finds the container's own
 * cgroup when the runtime keeps that process elsewhere), as a JSON object
 * with the probe's keys: memory_max, memsw_max, swap_max, pids_max,
 * cpu_quota_us, cpu_period_us (integers, "max", or null when a file is
 * absent). New reference, or NULL when the cgroup cannot be found.
 */
json_t	*cgroup_limits(int pid, const char *cid);

#endif
