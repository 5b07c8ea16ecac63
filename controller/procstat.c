/* procstat.c: fields of /proc/PID/stat; see procstat.h. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procstat.h"

#define PROCSTAT_MAX	1024	/* the line is far shorter */
#define PROCSTAT_ENV_MAX (256 * 1024)	/* an environment read */

int
procstat_parse(const char *text, struct procstat *ps)
{
	const char	*p;
	char		*end;
	int		 field;

	memset(ps, 0, sizeof(*ps));
	if ((p = strrchr(text, ')')) == NULL || p[1] != ' ' || p[2] == '\0')
		return -1;
	ps->state = p[2];
	/* p + 1 is the space before field 3; each space starts a field */
	for (field = 2; field < 22; field++) {
		if ((p = strchr(p + 1, ' ')) == NULL)
			return -1;
		if (field + 1 == 4)
			ps->ppid = (int)strtol(p + 1, NULL, 10);
		else if (field + 1 == 20)
			ps->threads = strtol(p + 1, NULL, 10);
	}
	if (p[1] < '0' || p[1] > '9')
		return -1;
	ps->start = strtoull(p + 1, &end, 10);
	return 0;
}

int
procstat_read(int pid, struct procstat *ps)
{
	char	path[64], buf[PROCSTAT_MAX];
	ssize_t	n;
	int	fd;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	return procstat_parse(buf, ps);
}

/*
 * This boot's id into boot (PROCSTAT_BOOT_LEN + 1 bytes) and the inode
 * of this process's pid namespace into *ns: 0, or -1 (no /proc).
 */
static int
procstat_here(char *boot, unsigned long long *ns)
{
	struct stat	st;
	ssize_t		n;
	int		fd;

	if (stat("/proc/self/ns/pid", &st) == -1 || (fd = open(
	    "/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, boot, PROCSTAT_BOOT_LEN);
	close(fd);
	if (n != PROCSTAT_BOOT_LEN)
		return -1;
	boot[n] = '\0';
	*ns = (unsigned long long)st.st_ino;
	return 0;
}

int
procstat_owner_self(char *buf, size_t size)
{
	struct procstat		ps;
	char			boot[PROCSTAT_BOOT_LEN + 1], line[PROCSTAT_MAX];
	unsigned long long	ns;
	ssize_t			r;
	int			fd, n;

	/* /proc/self, not /proc/PID: a /proc of another pid namespace
	 * (unshare -p without --mount-proc) numbers this process otherwise */
	if ((fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	r = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (r <= 0)
		return -1;
	line[r] = '\0';
	if (procstat_parse(line, &ps) == -1 || procstat_here(boot, &ns) == -1)
		return -1;
	n = snprintf(buf, size, "%d %llu %llu %s %u", (int)getpid(), ps.start,
	    ns, boot, (unsigned)getuid());
	return n > 0 && (size_t)n < size ? 0 : -1;
}

/*
 * Whether pid, which /proc does not show, still runs: /proc gives no
 * proof of absence. hidepid=invisible (or ptraceable) hides another
 * user's process, a non-dumpable one, one whose capabilities exceed
 * ours, with the ENOENT of a pid that is gone; hidepid=noaccess refuses
 * it (EACCES, EPERM); a /proc that is not this namespace's procfs lacks
 * it. kill(2) with signal 0 asks the kernel, in this pid namespace,
 * whatever /proc shows: ESRCH, gone. A process there whose start time
 * cannot be read is taken for the owner (alive), unless the owner's uid
 * (uid_known) is one of ours and the kernel says the process is not ours
 * to signal (EPERM: none of its real and saved uids is one of ours): the
 * owner's pid went to another user's process.
 */
static int
procstat_hidden_alive(int pid, int uid_known, unsigned uid)
{
	if (kill(pid, 0) == 0)
		return 1;
	if (errno == ESRCH)
		return 0;
	return !(errno == EPERM && uid_known && (uid == (unsigned)getuid() ||
	    uid == (unsigned)geteuid()));
}

/* An owner as procstat_owner_self wrote it, parsed. */
struct procstat_owner {
	int			pid;
	unsigned long long	start, ns;
	char			boot[PROCSTAT_BOOT_LEN + 1];
	int			uid_known;	/* an older one has none */
	unsigned		uid;
};

/*
 * Parse "PID START [PIDNS BOOT [UID]]" into o: how many of PID, START,
 * PIDNS and BOOT it has (2 or 4), or -1 when it is not of that form.
 */
static int
procstat_owner_parse(const char *text, struct procstat_owner *o)
{
	int	f, end = 0;

	memset(o, 0, sizeof(*o));
	if (text == NULL || (f = sscanf(text, "%d %llu %llu %36s%n", &o->pid,
	    &o->start, &o->ns, o->boot, &end)) < 2 || f == 3 || o->pid <= 0)
		return -1;
	if (f == 2)
		return 2;
	/* a boot id is 36 bytes, not the start of a longer word */
	if (strlen(o->boot) != PROCSTAT_BOOT_LEN || (text[end] != '\0' &&
	    text[end] != ' ' && text[end] != '\n'))
		return -1;
	o->uid_known = sscanf(text + end, " %u", &o->uid) == 1;
	return 4;
}

int
procstat_owner_alive(const char *text)
{
	struct procstat_owner	o;
	struct procstat		ps;
	char			here[PROCSTAT_BOOT_LEN + 1];
	unsigned long long	here_ns;
	int			f;

	if ((f = procstat_owner_parse(text, &o)) == -1)
		return 0;
	if (f == 4) {
		/* cannot tell (no /proc of ours): alive */
		if (procstat_here(here, &here_ns) == -1)
			return 1;
		/* a reboot ended every process of the last boot */
		if (strcmp(o.boot, here) != 0)
			return 0;
		/* another pid namespace: its pid means nothing in our /proc */
		if (o.ns != here_ns)
			return 1;
	}
	if (procstat_read(o.pid, &ps) == -1)
		return procstat_hidden_alive(o.pid, o.uid_known, o.uid);
	return ps.start == o.start && !procstat_dead(&ps);
}

int
procstat_dead(const struct procstat *ps)
{
	return ps->state == 'Z' && ps->threads <= 1;
}

/* The run marker in the environment file at path (procstat_run_marker). */
static int
procstat_env_marker(const char *path, char *out, size_t len)
{
	static char	 env[PROCSTAT_ENV_MAX];
	const char	*key = PROCSTAT_RUN_VAR "=";
	size_t		 got = 0, i, klen = strlen(key);
	ssize_t		 n;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while (got + 1 < sizeof(env) &&
	    (n = read(fd, env + got, sizeof(env) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	env[got] = '\0';
	for (i = 0; i < got; i += strlen(env + i) + 1) {
		if (strncmp(env + i, key, klen) != 0)
			continue;
		snprintf(out, len, "%s", env + i + klen);
		return 1;
	}
	return 0;
}

int
procstat_run_marker(int pid, char *out, size_t len)
{
	struct dirent	*de;
	DIR		*d;
	char		 path[320];	/* d_name is at most 255 bytes */
	int		 r;

	if (pid <= 0)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	if ((r = procstat_env_marker(path, out, len)) != -1)
		return r;
	/* the leader exited: any live thread shares its environment */
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if ((d = opendir(path)) == NULL)
		return -1;
	while (r == -1 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    strlen(de->d_name) > 16)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/environ", pid,
		    de->d_name);
		r = procstat_env_marker(path, out, len);
	}
	closedir(d);
	return r;
}
