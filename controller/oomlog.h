/*
 * oomlog.h: which processes the memory cgroup's OOM killer took, from the
 * kernel's log (/dev/kmsg), so that an exec reports a memory kill only
 * when one of its own processes was killed, not when another exec of the
 * sandbox hit the limit (the memory cgroup's oom_kill counter is the
 * whole container's). Records carry a command name the sandbox chose;
 * the parser reads only the pid that comes before it and is fuzzed
 * (tests/fuzz/fuzz_oomlog.c).
 */
#ifndef SG_OOMLOG_H
#define SG_OOMLOG_H

#include <stddef.h>

/* Records read per oomlog_read() at most: a flood never holds sandgate. */
#define OOMLOG_READ_MAX	8192

/*
 * The pid of a /dev/kmsg record ("PRI,SEQ,TS,FLAGS;TEXT") that tells of
 * a memory cgroup OOM kill ("Memory cgroup out of memory: Killed process
 * PID (COMM) ..."), or -1 for any other record. rec needs no NUL.
 */
int	oomlog_parse(const char *rec, size_t len);

/* /dev/kmsg opened at its end (non-blocking), or -1 (not root...). */
int	oomlog_open(void);

/*
 * The pids of the memory cgroup OOM kills logged since oomlog_open or
 * the last call, into pids (max of them; the rest are counted in the
 * return value but not stored). -1 when fd is -1.
 */
long	oomlog_read(int fd, int *pids, size_t max);

#endif
