/*
 * procstat.h: what sandgate reads of another process in /proc: a few
 * fields of /proc/PID/stat and the run marker of /proc/PID/environ,
 * shared by the controller (the host's view of a container) and
 * sandgate-probe (the view from inside). The command name (field 2) is set by the
 * process itself and may hold spaces and parentheses, so the fields are
 * counted from the last ')'. The parser is pure and fuzzed
 * (tests/fuzz/fuzz_procstat.c).
 */
#ifndef SG_PROCSTAT_H
#define SG_PROCSTAT_H

#include <signal.h>
#include <stddef.h>

struct procstat {
	char			state;	/* field 3: R, S, Z, ... */
	int			ppid;	/* field 4 */
	long			threads; /* field 20: live threads + a Z leader */
	unsigned long long	start;	/* field 22: start time, clock ticks */
};

/* Parse the text of /proc/PID/stat (NUL-terminated). 0, or -1. */
int	procstat_parse(const char *text, struct procstat *);
/* Read and parse /proc/<pid>/stat. 0, or -1 (gone, unreadable). */
int	procstat_read(int pid, struct procstat *);

/*
 * A process's identity as an owner: "PID START PIDNS BOOT UID", START its
 * start time (field 22), so a recycled pid is no owner, PIDNS the inode
 * of its pid namespace (/proc/self/ns/pid), so PID is read only where it
 * means that process, BOOT the boot id
 * (/proc/sys/kernel/random/boot_id), so no owner outlives a reboot, and
 * UID its real uid. procstat_owner_self() writes this process's into buf
 * (0, or -1; size PROCSTAT_OWNER_MAX is enough). procstat_owner_alive()
 * is 1 when text names a process that still runs, or one it cannot tell
 * about: such an owner's container is kept. That is an owner in another
 * pid namespace of this boot, or a pid that kill(2) finds but /proc does
 * not show (hidepid: another user's process, a non-dumpable one; a /proc
 * that is not this namespace's procfs), whose start time cannot be read.
 * 0 when the owner is gone: another boot; in this namespace its pid gone
 * (kill(2): ESRCH), reused (another start time), or held by a process
 * that is not of the owner's uid when that uid is ours (kill(2): EPERM);
 * or text is not of that form. "PID START PIDNS BOOT" (an older
 * sandgate's, no UID) is read the same way, "PID START" alone in this
 * namespace.
 * A mark held locked by its owner (ownmark.h) is judged alive before
 * any of this is asked.
 */
#define PROCSTAT_BOOT_LEN	36	/* a boot id: a UUID */
#define PROCSTAT_OWNER_MAX	128
int	procstat_owner_self(char *buf, size_t size);
int	procstat_owner_alive(const char *text);

/* The variable every exec of a run carries: SANDGATE_RUN=<run id>. */
#define PROCSTAT_RUN_VAR	"SANDGATE_RUN"

/*
 * The signal sandgate sends an exec's waiting `sandgate-probe join` once
 * it moved it into its memory cgroup, so the probe looks at once instead
 * of at its next poll. A hint only: a process of the sandbox (the same
 * uid) can send it too, so the probe checks its cgroup on every wake.
 * Its default action is to be ignored, so one that comes before the
 * probe blocked it, or after it started the command, does nothing
 * (programs that catch it, Go's runtime, expect spurious ones).
 */
#define PROCSTAT_JOIN_WAKE	SIGURG

/*
 * 1 when the process is dead for good: a zombie with no live thread. A
 * leader that exited while other threads run also shows state Z; it is
 * alive (threads > 1) and a kill of its pid takes the whole group.
 */
int	procstat_dead(const struct procstat *);

/*
 * The run marker of pid's initial environment into out (cut to len - 1
 * bytes, so a longer forged one never equals a run id): 1 found, 0 none,
 * -1 unreadable (gone, or not ours to read). When the leader has exited
 * (its environ gives ESRCH), the environment is read through a live
 * thread, /proc/PID/task/TID/environ.
 */
int	procstat_run_marker(int pid, char *out, size_t len);

#endif
