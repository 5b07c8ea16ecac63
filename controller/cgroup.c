/* cgroup.c: a container's cgroups on the host; cgroup.h. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cgroup.h"
#include "log.h"
#include "util.h"

static void	cgroup_dir(const char *, const char *, const char *, char *,
		    size_t);
static void	cgroup_line(struct cgroup *, const char *, const char *);
static int	cgroup_find_at(const char *, struct cgroup *);
static int	cgroup_cmds_name(const struct cgroup *, char *, size_t);
static json_t	*cgroup_value(const char *, const char *, int);
static int	cgroup_cat_dir(char *, size_t, const char *);
static int	cgroup_set(const char *, const char *, unsigned long long);
static int	cgroup_cmds_limit(const char *, const char *, const char *,
		    unsigned long long);
static int	cgroup_cmds_dir(const char *, const char *, char *, size_t,
		    unsigned long long);

/* Read a small file into buf (NUL-terminated); bytes read or -1. */
int
cgroup_read_file(const char *path, char *buf, size_t size)
{
	ssize_t	n;
	size_t	got = 0;
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	while (got + 1 < size) {
		n = read(fd, buf + got, size - 1 - got);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	close(fd);
	buf[got] = '\0';
	return (int)got;
}

/* /sys/fs/cgroup/<hier>/<rel> into out. */
static void
cgroup_dir(const char *hier, const char *rel, const char *root, char *out,
    size_t size)
{
	snprintf(out, size, "%s%s%s%s", root, hier[0] ? "/" : "", hier, rel);
}

/*
 * Find the container's cgroup folders from /proc/<pid>/cgroup lines
 * "ID:controllers:/path" (v1) or "0::/path" (v2). 0 or -1.
 */
int
cgroup_find(int pid, struct cgroup *cg)
{
	char	path[64];

	snprintf(path, sizeof(path), "/proc/%d/cgroup", pid);
	return cgroup_find_at(path, cg);
}

/* cgroup_find of a /proc/.../cgroup file (path). */
static int
cgroup_find_at(const char *path, struct cgroup *cg)
{
	char	buf[CGROUP_FILE_MAX], *line, *next, *c1, *c2;

	memset(cg, 0, sizeof(*cg));
	if (cgroup_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((c1 = strchr(line, ':')) == NULL ||
		    (c2 = strchr(c1 + 1, ':')) == NULL)
			continue;
		*c2++ = '\0';
		c1++;
		cgroup_line(cg, c1, c2);
	}
	return cg->pids[0] != '\0' || cg->mem[0] != '\0' ? 0 : -1;
}

/* One "controllers" and "/path" pair of /proc/<pid>/cgroup. */
static void
cgroup_line(struct cgroup *cg, const char *ctrl, const char *rel)
{
	struct stat	st;

	if (*ctrl == '\0') {
		if (cg->pids[0] != '\0')
			return;		/* v1 hierarchies take precedence */
		cg->v2 = 1;
		cgroup_dir(stat("/sys/fs/cgroup/cgroup.controllers", &st) ==
		    0 ? "" : "unified", rel, "/sys/fs/cgroup", cg->pids,
		    sizeof(cg->pids));
		util_strlcpy(cg->mem, cg->pids, sizeof(cg->mem));
		util_strlcpy(cg->cpu, cg->pids, sizeof(cg->cpu));
		util_strlcpy(cg->cpuctl, cg->pids, sizeof(cg->cpuctl));
		util_strlcpy(cg->freezer, cg->pids, sizeof(cg->freezer));
		return;
	}
	if (cg->v2) {
		memset(cg, 0, sizeof(*cg));
		cg->v2 = 0;
	}
	if (strstr(ctrl, "memory") != NULL)
		cgroup_dir(ctrl, rel, "/sys/fs/cgroup", cg->mem,
		    sizeof(cg->mem));
	else if (strstr(ctrl, "pids") != NULL)
		cgroup_dir(ctrl, rel, "/sys/fs/cgroup", cg->pids,
		    sizeof(cg->pids));
	else if (strcmp(ctrl, "freezer") == 0)
		cgroup_dir(ctrl, rel, "/sys/fs/cgroup", cg->freezer,
		    sizeof(cg->freezer));
	if (strstr(ctrl, "cpuacct") != NULL)
		cgroup_dir(ctrl, rel, "/sys/fs/cgroup", cg->cpu,
		    sizeof(cg->cpu));
	if (strcmp(ctrl, "cpu") == 0 || strncmp(ctrl, "cpu,", 4) == 0)
		cgroup_dir(ctrl, rel, "/sys/fs/cgroup", cg->cpuctl,
		    sizeof(cg->cpuctl));
}

/*
 * Value of "KEY N" in dir/file, or the file's only number when key is
 * NULL. 0 or -1.
 */
int
cgroup_read_key(const char *dir, const char *file, const char *key,
    unsigned long long *out)
{
	char	path[PATH_MAX + 64], buf[CGROUP_FILE_MAX], *p;
	size_t	klen;

	if (dir[0] == '\0')
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (cgroup_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (key == NULL) {
		*out = strtoull(buf, NULL, 10);
		return 0;
	}
	klen = strlen(key);
	for (p = buf; p != NULL && *p != '\0'; p = strchr(p, '\n')) {
		if (*p == '\n')
			p++;
		if (strncmp(p, key, klen) == 0 && p[klen] == ' ') {
			*out = strtoull(p + klen + 1, NULL, 10);
			return 0;
		}
	}
	return -1;
}

void
cgroup_counters_read(const struct cgroup *cg, struct cgroup_counters *c)
{
	unsigned long long	usec;

	memset(c, 0, sizeof(*c));
	if (cg->v2) {
		cgroup_read_key(cg->mem, "memory.events", "oom_kill",
		    &c->oom_kill);
		cgroup_read_key(cg->pids, "pids.events", "max", &c->pids_max);
		if (cgroup_read_key(cg->cpu, "cpu.stat", "usage_usec",
		    &usec) == 0)
			c->cpu_ns = usec * 1000;
		return;
	}
	cgroup_read_key(cg->mem, "memory.oom_control", "oom_kill",
	    &c->oom_kill);
	cgroup_read_key(cg->pids, "pids.events", "max", &c->pids_max);
	cgroup_read_key(cg->cpu, "cpuacct.usage", NULL, &c->cpu_ns);
}

void
cgroup_write(const char *dir, const char *file, const char *value)
{
	char	path[PATH_MAX + 64];
	int	fd;

	if (dir[0] == '\0')
		return;
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return;
	if (write(fd, value, strlen(value)) == -1)
		(void)0;	/* a peak we cannot reset is only less exact */
	close(fd);
}

int
cgroup_frozen(const struct cgroup *cg)
{
	char	path[PATH_MAX + 64], buf[64];

	if (cg->freezer[0] == '\0')
		return -1;
	snprintf(path, sizeof(path), "%s/%s", cg->freezer, cg->v2 ?
	    "cgroup.freeze" : "freezer.state");
	if (cgroup_read_file(path, buf, sizeof(buf)) <= 0)
		return -1;
	if (cg->v2)
		return buf[0] == '1';
	return strncmp(buf, "THAWED", 6) != 0;
}

int
cgroup_freeze(const struct cgroup *cg, int on, int wait_ms)
{
	char			 path[PATH_MAX + 64], buf[64];
	const char		*val;
	unsigned long long	 frozen;
	int			 fd, done, waited;
	ssize_t			 n;

	if (cg->freezer[0] == '\0') {
		errno = ENOENT;
		return -1;
	}
	if (cg->v2)
		val = on ? "1" : "0";
	else
		val = on ? "FROZEN" : "THAWED";
	snprintf(path, sizeof(path), "%s/%s", cg->freezer, cg->v2 ?
	    "cgroup.freeze" : "freezer.state");
	for (waited = 0;; waited++) {
		/* v1: each write of FROZEN tries the tasks left again */
		if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
			return -1;
		n = write(fd, val, strlen(val));
		close(fd);
		if (n != (ssize_t)strlen(val))
			return -1;
		if (!on)
			return 0;
		if (cg->v2)
			done = cgroup_read_key(cg->freezer, "cgroup.events",
			    "frozen", &frozen) == 0 && frozen == 1;
		else
			done = cgroup_read_file(path, buf, sizeof(buf)) > 0 &&
			    strncmp(buf, "FROZEN", 6) == 0;
		if (done)
			return 0;
		if (waited >= wait_ms) {
			errno = ETIMEDOUT;
			return -1;
		}
		usleep(1000);
	}
}

/* Write the number v to dir/file. 0 or -1. */
static int
cgroup_set(const char *dir, const char *file, unsigned long long v)
{
	char	path[PATH_MAX + 64], buf[32];
	int	fd, len, rv;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	len = snprintf(buf, sizeof(buf), "%llu", v);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1)
		return -1;
	rv = write(fd, buf, (size_t)len) == len ? 0 : -1;
	close(fd);
	return rv;
}

/*
 * The child's file (memory.limit_in_bytes or memory.memsw.limit_in_bytes)
 * set to the parent's less less. 0, 1 when the parent has no such limit
 * (absent, or unlimited: v1 reads PAGE_COUNTER_MAX pages), or -1.
 */
static int
cgroup_cmds_limit(const char *parent, const char *child, const char *file,
    unsigned long long less)
{
	unsigned long long	lim;

	if (cgroup_read_key(parent, file, NULL, &lim) == -1 ||
	    lim >= (1ULL << 62))
		return 1;
	if (lim < 2 * less) {
		errno = ERANGE;		/* the parent's limit is too small */
		return -1;
	}
	return cgroup_set(child, file, lim - less);
}

/* parent/name made, its limits parent's less less, into out. 0 or -1. */
static int
cgroup_cmds_dir(const char *parent, const char *name, char *out,
    size_t size, unsigned long long less)
{
	int	n;

	n = snprintf(out, size, "%s/%s", parent, name);
	if (n < 0 || (size_t)n >= size ||
	    (mkdir(out, 0755) == -1 && errno != EEXIST))
		return -1;
	/* the memory limit first: memsw may never be below it */
	if (cgroup_cmds_limit(parent, out, "memory.limit_in_bytes",
	    less) != 0 || cgroup_cmds_limit(parent, out,
	    "memory.memsw.limit_in_bytes", less) == -1)
		return -1;
	return 0;
}

int
cgroup_cmds_setup(const struct cgroup *cg, const char *run_id, char *out,
    size_t size)
{
	char	all[PATH_MAX];

	out[0] = '\0';
	if (cg->v2 || cg->mem[0] == '\0' ||
	    cgroup_cmds_dir(cg->mem, CGROUP_CMDS, all, sizeof(all),
	    CGROUP_CMDS_RESERVE) == -1 ||
	    cgroup_cmds_dir(all, run_id, out, size, CGROUP_CMDS_SLACK) == -1) {
		out[0] = '\0';
		return -1;
	}
	return 0;
}

void
cgroup_cmds_remove(const char *dir)
{
	int	i;

	/* the killed may still be zombies for the init to reap: a while */
	for (i = 0; dir[0] != '\0' && i < 10; i++) {
		if (rmdir(dir) == 0 || errno != EBUSY)
			return;
		usleep(20 * 1000);
	}
}

/* The run of a memory cgroup path (cg->mem) into run: 1, or 0. */
static int
cgroup_cmds_name(const struct cgroup *cg, char *run, size_t size)
{
	const char	*p, *name = NULL;
	size_t		 len;

	if (cg->v2)
		return 0;
	for (p = cg->mem; (p = strstr(p, "/" CGROUP_CMDS "/")) != NULL; p++)
		name = p + sizeof(CGROUP_CMDS) + 1;
	if (name == NULL || (len = strcspn(name, "/")) == 0 || len >= size)
		return 0;
	memcpy(run, name, len);
	run[len] = '\0';
	return 1;
}

/*
 * The process's own file says no run: its leader may have exited while
 * a thread runs, and the kernel shows an exited task in the root
 * cgroups (atk46b F1, F2: a leader's pthread_exit made a command of a
 * run look like none's, so its forged marker, or none, decided). Any
 * thread in a run's memory cgroup makes it that run's: none of the
 * sandbox can move a thread (cgroupfs is the host's), and the host
 * moves whole processes (cgroup.procs).
 */
int
cgroup_cmds_run(int pid, char *run, size_t size)
{
	struct cgroup	 cg;
	struct dirent	*de;
	DIR		*d;
	char		 path[96];
	int		 rv = 0;

	if (cgroup_find(pid, &cg) == -1)
		return -1;
	if (cg.v2)
		return 0;
	if (cgroup_cmds_name(&cg, run, size) == 1)
		return 1;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	if ((d = opendir(path)) == NULL)
		return rv;
	while (rv == 0 && (de = readdir(d)) != NULL) {
		/* the leader's own entry too: a thread that exec'd took it */
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.16s/cgroup", pid,
		    de->d_name);
		if (cgroup_find_at(path, &cg) == 0)
			rv = cgroup_cmds_name(&cg, run, size);
	}
	closedir(d);
	return rv;
}

int
cgroup_cmds_move(const char *dir, int pid)
{
	return cgroup_set(dir, "cgroup.procs", (unsigned long long)pid);
}

int
cgroup_procs(const struct cgroup *cg, int **out, size_t *count)
{
	return cgroup_dir_procs(cg->pids[0] ? cg->pids : cg->mem, out, count);
}

int
cgroup_dir_procs(const char *dir, int **out, size_t *count)
{
	char	path[PATH_MAX + 64], *p, *end;
	char	*buf;
	size_t	 n = 0, cap = 64;
	int	*v;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	buf = util_xmalloc(1024 * 1024);
	if (cgroup_read_file(path, buf, 1024 * 1024) < 0) {
		free(buf);
		return -1;
	}
	v = util_xcalloc(cap, sizeof(*v));
	for (p = buf; *p != '\0'; p = end) {
		long	pid = strtol(p, &end, 10);

		if (end == p)
			break;
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		if (v == NULL)
			fatal("realloc");
		if (pid > 0 && pid <= INT_MAX)
			v[n++] = (int)pid;
	}
	free(buf);
	*out = v;
	*count = n;
	return 0;
}

/* A cgroup file's value as JSON: an integer, "max", or null if absent. */
static json_t *
cgroup_value(const char *dir, const char *file, int field)
{
	char	path[PATH_MAX + 64], buf[CGROUP_FILE_MAX], *p = buf;
	int	i;

	if (dir[0] == '\0')
		return json_null();
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (cgroup_read_file(path, buf, sizeof(buf)) <= 0)
		return json_null();
	for (i = 0; i < field && p != NULL; i++)
		if ((p = strchr(p, ' ')) != NULL)
			p++;
	if (p == NULL)
		return json_null();
	if (strncmp(p, "max", 3) == 0 || strncmp(p, "-1", 2) == 0)
		return json_string("max");
	return json_integer((json_int_t)strtoll(p, NULL, 10));
}

/* v1 cgroupfs paths of a container from its id alone. 0 or -1. */
int
cgroup_by_id(struct cgroup *cg, const char *cid)
{
	static const char *const cpu[] = { "cpu", "cpu,cpuacct" };
	size_t	i;

	memset(cg, 0, sizeof(*cg));
	snprintf(cg->mem, sizeof(cg->mem), "/sys/fs/cgroup/memory/docker/%s",
	    cid);
	snprintf(cg->pids, sizeof(cg->pids), "/sys/fs/cgroup/pids/docker/%s",
	    cid);
	for (i = 0; i < sizeof(cpu) / sizeof(cpu[0]); i++) {
		snprintf(cg->cpuctl, sizeof(cg->cpuctl),
		    "/sys/fs/cgroup/%s/docker/%s", cpu[i], cid);
		if (access(cg->cpuctl, F_OK) == 0)
			break;
	}
	return access(cg->mem, F_OK) == 0 ? 0 : -1;
}

/* Append "/docker/<cid>" to dir; 0, or -1 when it does not fit. */
static int
cgroup_cat_dir(char *dir, size_t size, const char *cid)
{
	size_t	len = strlen(dir);
	int	n;

	n = snprintf(dir + len, size - len, "/docker/%s", cid);
	return n < 0 || (size_t)n >= size - len ? -1 : 0;
}

/*
 * runsc's sandbox process may sit outside the cgroup its container's
 * limits are set on: prefer <hierarchy>/docker/<cid> when it exists.
 */
void
cgroup_prefer_container(struct cgroup *cg, const char *cid)
{
	char	 dir[PATH_MAX];
	char	*dirs[] = { cg->mem, cg->pids, cg->cpuctl };
	char	*slash;
	size_t	 i;

	if (cid == NULL || cg->v2)
		return;
	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		if (dirs[i][0] == '\0' || strstr(dirs[i], cid) != NULL)
			continue;
		/* "/sys/fs/cgroup/<hier>/..." -> "/sys/fs/cgroup/<hier>" */
		util_strlcpy(dir, dirs[i], sizeof(dir));
		if ((slash = strchr(dir + strlen("/sys/fs/cgroup/"), '/')) !=
		    NULL)
			*slash = '\0';
		if (cgroup_cat_dir(dir, sizeof(dir), cid) == 0 &&
		    access(dir, F_OK) == 0)
			util_strlcpy(dirs[i], dir, PATH_MAX);
	}
}

json_t *
cgroup_limits(int pid, const char *cid)
{
	struct cgroup	cg;

	if (cgroup_find(pid, &cg) == -1) {
		/* The process may be gone (runsc re-executes): by the id. */
		if (cid == NULL || cgroup_by_id(&cg, cid) == -1)
			return NULL;
	}
	cgroup_prefer_container(&cg, cid);
	if (cg.v2)
		return json_pack("{s:o, s:n, s:o, s:o, s:o, s:o}",
		    "memory_max", cgroup_value(cg.mem, "memory.max", 0),
		    "memsw_max",
		    "swap_max", cgroup_value(cg.mem, "memory.swap.max", 0),
		    "pids_max", cgroup_value(cg.pids, "pids.max", 0),
		    "cpu_quota_us", cgroup_value(cg.cpuctl, "cpu.max", 0),
		    "cpu_period_us", cgroup_value(cg.cpuctl, "cpu.max", 1));
	return json_pack("{s:o, s:o, s:n, s:o, s:o, s:o}",
	    "memory_max", cgroup_value(cg.mem, "memory.limit_in_bytes", 0),
	    "memsw_max", cgroup_value(cg.mem, "memory.memsw.limit_in_bytes",
	    0), "swap_max",
	    "pids_max", cgroup_value(cg.pids, "pids.max", 0),
	    "cpu_quota_us", cgroup_value(cg.cpuctl, "cpu.cfs_quota_us", 0),
	    "cpu_period_us", cgroup_value(cg.cpuctl, "cpu.cfs_period_us", 0));
}
