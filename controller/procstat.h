/*
 * procstat.h: the few fields sandgate reads from /proc/PID/stat, shared
 * by the controller (the host's view of a container) and sandgate-probe
 * (the view from inside). The command name (field 2) is set by the
 * process itself and may hold spaces and parentheses, so the fields are
 * counted from the last ')'. The parser is pure and fuzzed
 * (tests/fuzz/fuzz_procstat.c).
 */
#ifndef SG_PROCSTAT_H
#define SG_PROCSTAT_H

struct procstat {
	char			state;	/* field 3: R, S, Z, ... */
	int			ppid;	/* field 4 */
	unsigned long long	start;	/* field 22: start time, clock ticks */
};

/* Parse the text of /proc/PID/stat (NUL-terminated). 0, or -1. */
int	procstat_parse(const char *text, struct procstat *);
/* Read and parse /proc/<pid>/stat. 0, or -1 (gone, unreadable). */
int	procstat_read(int pid, struct procstat *);

#endif
