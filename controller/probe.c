/*
 * probe.c: find the sandgate-probe binary and judge its report; see
 * probe.h. The report is untrusted: every field is type-checked and a
 * missing or malformed one fails the check.
 */
#include <sys/stat.h>

#include <fcntl.h>

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cspec.h"
#include "probe.h"
#include "state.h"
#include "util.h"

#define PROBE_NAME	"sandgate-probe"
/* cgroup v1 reports "no limit" as a huge page-aligned number, not "max". */
#define PROBE_UNLIMITED	(1ull << 60)

static int	 probe_exists(const char *);
static int	 probe_dir(const char *);
static void	 probe_fmt_bytes(unsigned long long, char *, size_t);
static int	 probe_caps(json_t *, const struct probe_expect *, char **);
static int	 probe_privs(json_t *, const struct probe_expect *, char **);
static int	 probe_mounts(json_t *, const struct probe_expect *, char **);
static int	 probe_unlimited(json_t *);
static int	 probe_memory(json_t *, unsigned long long, char **);
static int	 probe_swap(json_t *, unsigned long long, char **);
static int	 probe_pids(json_t *, long, char **);
static int	 probe_cpus(json_t *, double, char **);
static int	 probe_refused(const char *);
static int	 probe_seal(json_t *, char **);
static int	 probe_denied(json_t *, const char *);
static int	 probe_isolation(json_t *, const struct probe_expect *,
		    char **);
static int	 probe_net(json_t *, const struct probe_expect *, char **);

void
probe_expect_init(struct probe_expect *e)
{
	memset(e, 0, sizeof(*e));
	e->readonly_root = 1;
	e->tmp_noexec = 1;
	e->network_none = 1;
	e->seccomp_filter = 1;
}

static int
probe_exists(const char *path)
{
	struct stat	st;

	return stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
	    access(path, X_OK) == 0;
}

const char *
probe_path(void)
{
	static char	 path[PATH_MAX];
	char		 self[PATH_MAX], *slash;
	const char	*env;
	ssize_t		 n;
	int		 len;

	if ((env = getenv("SANDGATE_PROBE")) != NULL && *env != '\0') {
		if (util_strlcpy(path, env, sizeof(path)) >= sizeof(path))
			return NULL;
		return probe_exists(path) ? path : NULL;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return NULL;
	self[n] = '\0';
	if ((slash = strrchr(self, '/')) == NULL)
		return NULL;
	*slash = '\0';
	len = snprintf(path, sizeof(path), "%s/" PROBE_NAME, self);
	if (len > 0 && (size_t)len < sizeof(path) && probe_exists(path))
		return path;
	len = snprintf(path, sizeof(path), "%s/../libexec/sandgate/"
	    PROBE_NAME, self);
	if (len > 0 && (size_t)len < sizeof(path) && probe_exists(path))
		return path;
	return NULL;
}

/*
 * Copy the file src into the new file fd: its mode, 0711, or 0755 for a
 * script (#!: its interpreter must read it; only a stand-in probe of the
 * tests is one); -1 on failure.
 */
static int
probe_copy(const char *src, int fd)
{
	char	 buf[65536];
	ssize_t	 n, w = 0;
	size_t	 off;
	int	 in, mode = 0711;

	if ((in = open(src, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	if ((n = pread(in, buf, 2, 0)) == 2 && buf[0] == '#' && buf[1] == '!')
		mode = 0755;
	while (w >= 0 && (n = read(in, buf, sizeof(buf))) > 0)
		for (off = 0; w >= 0 && off < (size_t)n; off += (size_t)w)
			if ((w = write(fd, buf + off, (size_t)n - off)) <= 0)
				w = -1;
	close(in);
	return n == 0 && w >= 0 ? mode : -1;
}

/*
 * dir (state_root()/probe), made 0755 when missing: 0 when it is a
 * folder of this uid (or root) that no other may write
 * (state_dir_private), else -1 with errno (EPERM for a folder another
 * could change: what it holds is what sandboxes bind, atk43g2 G1).
 */
static int
probe_dir(const char *dir)
{
	if (mkdir(dir, 0755) == -1 && errno != EEXIST)
		return -1;
	return state_dir_private(dir);
}

/*
 * The probe as sandboxes mount it: a copy in state_root()/probe, this
 * uid's, mode 0711, named by the original's inode, size and time. A
 * process that executes a file it may not read is not dumpable from its
 * first instruction (execve(2)), so no process of the sandbox user can
 * write the memory of a `sandgate-probe join` that waits beside the
 * init, not even in the moment before the join's own prctl (atk16s F3).
 * The command the join executes is dumpable as any. (A script stays
 * readable, 0755: probe_copy. Under gVisor, whose loader reads the file,
 * the original is mounted: no join runs there.)
 */
const char *
probe_mount_path(int gvisor, char **cause)
{
	static char	 path[PATH_MAX];
	char		 dir[PATH_MAX], tmp[PATH_MAX + 16];
	const char	*src;
	struct stat	 st, cp;
	int		 fd, mode;

	if ((src = probe_path()) == NULL || stat(src, &st) == -1) {
		util_cause(cause, "cannot find the sandgate-probe binary "
		    "(set SANDGATE_PROBE)");
		return NULL;
	}
	/* gVisor's loader reads what it executes, as the process's user;
	 * no join waits there (one host process for the whole sandbox) */
	if (gvisor)
		return src;
	snprintf(dir, sizeof(dir), "%s/probe", state_root());
	if (snprintf(path, sizeof(path), "%s/" PROBE_NAME "-%llx-%llx-%lld.%09ld",
	    dir, (unsigned long long)st.st_ino, (unsigned long long)st.st_size,
	    (long long)st.st_mtim.tv_sec, st.st_mtim.tv_nsec) >=
	    (int)sizeof(path)) {
		util_cause(cause, "%s: path too long", dir);
		return NULL;
	}
	if (probe_dir(dir) == -1) {
		util_cause(cause, "%s: %s", dir, errno == EPERM ? "not a "
		    "folder of this user that only it may write (the probe "
		    "sandboxes run is copied there)" : strerror(errno));
		return NULL;
	}
	if (lstat(path, &cp) == 0 && S_ISREG(cp.st_mode) &&
	    cp.st_uid == geteuid() && ((cp.st_mode & 07777) == 0711 ||
	    (cp.st_mode & 07777) == 0755) && cp.st_size == st.st_size)
		return path;
	snprintf(tmp, sizeof(tmp), "%s.%ld", path, (long)getpid());
	(void)unlink(tmp);
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0700)) == -1 || (mode = probe_copy(src, fd)) == -1 ||
	    fchmod(fd, (mode_t)mode) == -1 || close(fd) == -1 ||
	    rename(tmp, path) == -1) {
		util_cause(cause, "cannot copy the sandgate-probe binary to "
		    "%s: %s", path, strerror(errno));
		unlink(tmp);
		return NULL;
	}
	return path;
}

int
probe_statx_paths(const char **lib, const char **preload)
{
	static char		 libp[PATH_MAX], filep[PATH_MAX];
	static const char	 want[] = PROBE_STATX_CONTAINER_PATH "\n";
	char			 dir[PATH_MAX], have[sizeof(want)];
	const char		*probe, *slash;
	struct stat		 st;
	ssize_t			 n = -1;
	int			 fd;

	/* readable by all, or ld.so would complain in every process */
	if ((probe = probe_path()) == NULL ||
	    (slash = strrchr(probe, '/')) == NULL ||
	    snprintf(libp, sizeof(libp), "%.*s/sandgate-statx.so",
	    (int)(slash - probe), probe) >= (int)sizeof(libp) ||
	    stat(libp, &st) == -1 || !S_ISREG(st.st_mode) ||
	    (st.st_mode & S_IROTH) == 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s/probe", state_root());
	if (snprintf(filep, sizeof(filep), "%s/ld.so.preload", dir) >=
	    (int)sizeof(filep))
		return -1;
	if (probe_dir(dir) == -1)	/* only this uid may change it */
		return -1;
	/*
	 * Used as it is only when it is this uid's regular file, 0644, of
	 * the content: a file another could write would change what every
	 * gVisor sandbox loads, even those running (atk43g F1); a FIFO
	 * would hang the open (F2). Anything else is replaced.
	 */
	if (lstat(filep, &st) == 0 && S_ISREG(st.st_mode) &&
	    st.st_uid == geteuid() && (st.st_mode & 07777) == 0644 &&
	    st.st_size == (off_t)sizeof(want) - 1 && (fd = open(filep,
	    O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)) != -1) {
		n = read(fd, have, sizeof(have));
		close(fd);
	}
	/* 0644 whatever the umask: the sandbox's uid reads it */
	if ((n != (ssize_t)sizeof(want) - 1 ||
	    memcmp(have, want, sizeof(want) - 1) != 0) &&
	    (state_replace(filep, want, 0644) == -1 ||
	    chmod(filep, 0644) == -1))
		return -1;
	*lib = libp;
	*preload = filep;
	return 0;
}

/* "128 MiB" when the value is a whole number of MiB, else bytes. */
static void
probe_fmt_bytes(unsigned long long v, char *buf, size_t size)
{
	if (v >= 1024 * 1024 && v % (1024 * 1024) == 0)
		snprintf(buf, size, "%llu MiB", v / (1024 * 1024));
	else
		snprintf(buf, size, "%llu bytes", v);
}

/* A capability mask field: 1-16 hex digits, all zero. */
static int
probe_caps(json_t *root, const struct probe_expect *e, char **failed)
{
	static const char *const caps[][3] = {
		{ "cap_eff", "effective", "CapEff" },
		{ "cap_prm", "permitted", "CapPrm" },
		{ "cap_amb", "ambient", "CapAmb" },
		{ "cap_bnd", "bounding", "CapBnd" },
	};
	const char	*s;
	size_t		 i, j, len;
	int		 zero;

	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		s = json_string_value(json_object_get(root, caps[i][0]));
		/* gVisor's /proc has no CapAmb line; its sentry has none. */
		if (s == NULL && e->gvisor && strcmp(caps[i][0], "cap_amb") == 0)
			continue;
		len = s ? strlen(s) : 0;
		if (len == 0 || len > 16 || strspn(s, "0123456789abcdefABCDEF")
		    != len)
			return util_cause(failed, "%s capabilities unreadable "
			    "inside the sandbox", caps[i][1]);
		for (j = 0, zero = 1; j < len; j++)
			zero &= s[j] == '0';
		if (!zero)
			return util_cause(failed, "%s capabilities not empty "
			    "(%s %s)", caps[i][1], caps[i][2], s);
	}
	return 0;
}

/* Non-root, no_new_privs, seccomp. */
static int
probe_privs(json_t *root, const struct probe_expect *e, char **failed)
{
	json_t	*v;

	v = json_object_get(root, "uid");
	if (!json_is_integer(v))
		return util_cause(failed, "user id unreadable inside the "
		    "sandbox");
	if (json_integer_value(v) == 0)
		return util_cause(failed, "sandbox runs as root (uid 0)");
	v = json_object_get(root, "no_new_privs");
	/* gVisor reports no NoNewPrivs line; runsc sets it on its sentry. */
	if (e->gvisor && json_is_null(v))
		;
	else if (!json_is_integer(v) || json_integer_value(v) != 1)
		return util_cause(failed, "no_new_privs not set (NoNewPrivs "
		    "%lld)", json_is_integer(v) ?
		    (long long)json_integer_value(v) : -1LL);
	v = json_object_get(root, "seccomp");
	if (e->seccomp_filter && (!json_is_integer(v) ||
	    json_integer_value(v) != 2))
		return util_cause(failed, "seccomp filter not active (Seccomp "
		    "%lld)", json_is_integer(v) ?
		    (long long)json_integer_value(v) : -1LL);
	return 0;
}

/* A refusal of the kernel: EPERM or EACCES. */
static int
probe_denied(json_t *root, const char *key)
{
	const char	*w = json_string_value(json_object_get(root, key));

	return w != NULL && (strcmp(w, "EPERM") == 0 ||
	    strcmp(w, "EACCES") == 0);
}

/* The init not writable from inside; seccomp's allowlist in force. */
static int
probe_isolation(json_t *root, const struct probe_expect *e, char **failed)
{
	const char	*w;

	if (e->locked_init && !probe_denied(root, "init_mem")) {
		w = json_string_value(json_object_get(root, "init_mem"));
		return util_cause(failed, "the container's init can be written "
		    "from inside the sandbox (/proc/1/mem: %.32s)",
		    w ? w : "not checked");
	}
	if (e->seccomp_filter && !probe_denied(root, "personality_rie")) {
		w = json_string_value(json_object_get(root,
		    "personality_rie"));
		return util_cause(failed, "seccomp profile allows "
		    "personality(READ_IMPLIES_EXEC) (%.32s)",
		    w ? w : "not checked");
	}
	return 0;
}

/* Read-only root, unwritable root, /tmp noexec,nosuid. */
static int
probe_mounts(json_t *root, const struct probe_expect *e, char **failed)
{
	if (e->readonly_root) {
		if (!json_is_true(json_object_get(root, "root_ro")))
			return util_cause(failed, "root filesystem not mounted "
			    "read-only");
		if (!json_is_true(json_object_get(root, "root_write_fails")))
			return util_cause(failed, "root filesystem accepted a "
			    "write");
	}
	if (e->tmp_noexec) {
		if (!json_is_true(json_object_get(root, "tmp_mounted")))
			return util_cause(failed, "/tmp is not a separate "
			    "mount (expected a noexec tmpfs)");
		if (!json_is_true(json_object_get(root, "tmp_noexec")))
			return util_cause(failed, "/tmp not mounted noexec");
		if (!json_is_true(json_object_get(root, "tmp_nosuid")))
			return util_cause(failed, "/tmp not mounted nosuid");
	}
	return 0;
}

/* "max", or a v1 number that means the same. */
static int
probe_unlimited(json_t *v)
{
	if (json_is_string(v))
		return strcmp(json_string_value(v), "max") == 0;
	return json_is_integer(v) &&
	    (unsigned long long)json_integer_value(v) >= PROBE_UNLIMITED;
}

/* memory_max must equal the expected limit. */
static int
probe_memory(json_t *root, unsigned long long want, char **failed)
{
	json_t	*v = json_object_get(root, "memory_max");
	char	 a[64], b[64];

	probe_fmt_bytes(want, b, sizeof(b));
	if (probe_unlimited(v))
		return util_cause(failed, "memory limit not set (unlimited), "
		    "expected %s", b);
	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return util_cause(failed, "memory limit not visible inside the "
		    "sandbox, expected %s", b);
	if ((unsigned long long)json_integer_value(v) != want) {
		probe_fmt_bytes((unsigned long long)json_integer_value(v), a,
		    sizeof(a));
		return util_cause(failed, "memory limit is %s, expected %s",
		    a, b);
	}
	return probe_swap(root, want, failed);
}

/*
 * No swap: v1 memory+swap equal to memory (when swap accounting is on),
 * v2 swap.max 0 (when the file exists).
 */
static int
probe_swap(json_t *root, unsigned long long want, char **failed)
{
	json_t	*sw = json_object_get(root, "memsw_max");
	json_t	*v2 = json_object_get(root, "swap_max");
	char	 a[64], b[64];

	if (json_is_string(sw) || (json_is_integer(sw) &&
	    (unsigned long long)json_integer_value(sw) != want)) {
		if (probe_unlimited(sw) || json_is_string(sw))
			snprintf(a, sizeof(a), "unlimited");
		else
			probe_fmt_bytes((unsigned long long)
			    json_integer_value(sw), a, sizeof(a));
		probe_fmt_bytes(want, b, sizeof(b));
		return util_cause(failed, "swap allowed (memory+swap limit "
		    "%s, memory limit %s)", a, b);
	}
	if (!json_is_null(sw) && !json_is_integer(sw))
		return util_cause(failed, "memory+swap limit unreadable");
	if (json_is_string(v2) || (json_is_integer(v2) &&
	    json_integer_value(v2) != 0))
		return util_cause(failed, "swap allowed (memory.swap.max %s)",
		    json_is_string(v2) ? "max" : "not 0");
	if (!json_is_null(v2) && !json_is_integer(v2))
		return util_cause(failed, "swap limit unreadable");
	return 0;
}

static int
probe_pids(json_t *root, long want, char **failed)
{
	json_t	*v = json_object_get(root, "pids_max");

	if (probe_unlimited(v))
		return util_cause(failed, "pids limit not set (unlimited), "
		    "expected %ld", want);
	if (!json_is_integer(v))
		return util_cause(failed, "pids limit not visible inside the "
		    "sandbox, expected %ld", want);
	if (json_integer_value(v) != want)
		return util_cause(failed, "pids limit is %lld, expected %ld",
		    (long long)json_integer_value(v), want);
	return 0;
}

/* quota / period must be within 1% of the expected cpus. */
static int
probe_cpus(json_t *root, double want, char **failed)
{
	json_t	*q = json_object_get(root, "cpu_quota_us");
	json_t	*p = json_object_get(root, "cpu_period_us");
	double	 got;

	if (json_is_string(q) && strcmp(json_string_value(q), "max") == 0)
		return util_cause(failed, "cpu limit not set (no CFS quota), "
		    "expected %.2f cpus", want);
	if (!json_is_integer(q) || !json_is_integer(p) ||
	    json_integer_value(q) <= 0 || json_integer_value(p) <= 0)
		return util_cause(failed, "cpu limit not visible inside the "
		    "sandbox, expected %.2f cpus", want);
	got = (double)json_integer_value(q) / (double)json_integer_value(p);
	if (fabs(got - want) > want * 0.01)
		return util_cause(failed, "cpu limit is %.2f cpus (quota %lld "
		    "us per %lld us), expected %.2f", got,
		    (long long)json_integer_value(q),
		    (long long)json_integer_value(p), want);
	return 0;
}

/* One answer of the seal check: a refusal of the local firewall. */
static int
probe_refused(const char *w)
{
	return w != NULL && (strcmp(w, "EPERM") == 0 ||
	    strcmp(w, "EACCES") == 0 || strcmp(w, "EHOSTUNREACH") == 0 ||
	    strcmp(w, "ENETUNREACH") == 0);
}

/* The network seal (netseal.h) refuses Docker's resolver and neighbours. */
static int
probe_seal(json_t *seal, char **failed)
{
	const char	*dns, *nb;

	if (!json_is_object(seal))
		return util_cause(failed, "the network seal was not checked "
		    "inside the sandbox");
	dns = json_string_value(json_object_get(seal, "dns"));
	nb = json_string_value(json_object_get(seal, "neighbour"));
	if (!probe_refused(dns))
		return util_cause(failed, "network seal not in force: Docker's "
		    "resolver at 127.0.0.11 is reachable (%.32s)",
		    dns ? dns : "?");
	if (!probe_refused(nb))
		return util_cause(failed, "network seal not in force: a port "
		    "other than the proxy's is reachable on sandgate-internal "
		    "(%.32s)", nb ? nb : "?");
	return 0;
}

/* Only lo when network_none; the seal when sealed; never a Docker socket. */
static int
probe_net(json_t *root, const struct probe_expect *e, char **failed)
{
	json_t		*ifs = json_object_get(root, "net_ifaces");
	json_t		*first;
	const char	*name;

	if (e->network_none) {
		if (!json_is_array(ifs))
			return util_cause(failed, "network interfaces not "
			    "visible inside the sandbox");
		if (json_array_size(ifs) > 0) {
			first = json_array_get(ifs, 0);
			name = json_is_string(first) ?
			    json_string_value(first) : "?";
			return util_cause(failed, "network interface '%.32s' "
			    "present (expected none but lo)", name);
		}
	}
	if (e->proxy_only) {
		if (!json_is_array(ifs) || json_array_size(ifs) != 1)
			return util_cause(failed,
			    "expected exactly one network "
			    "interface (sandgate-internal) inside the sandbox");
	}
	if (e->sealed && probe_seal(json_object_get(root, "seal"), failed) == -1)
		return -1;
	if (!json_is_false(json_object_get(root, "docker_sock")))
		return util_cause(failed, "Docker socket reachable inside the "
		    "sandbox");
	return 0;
}

int
probe_check(const char *json, const struct probe_expect *e, char **failed)
{
	json_error_t	 err;
	json_t		*root;
	json_t		*ver;
	size_t		 len;
	int		 rc = -1;

	*failed = NULL;
	len = strnlen(json, PROBE_OUTPUT_MAX + 1);
	if (len > PROBE_OUTPUT_MAX)
		return util_cause(failed, "probe output too large");
	root = json_loadb(json, len, JSON_REJECT_DUPLICATES, &err);
	if (root == NULL)
		return util_cause(failed, "probe output is not valid JSON "
		    "(%.80s)", err.text);
	ver = json_object_get(root, "probe");
	if (!json_is_object(root) || !json_is_integer(ver) ||
	    json_integer_value(ver) != 1) {
		util_cause(failed, "probe output is not a version 1 report");
		goto out;
	}
	if (probe_caps(root, e, failed) == -1 ||
	    probe_privs(root, e, failed) == -1 ||
	    probe_isolation(root, e, failed) == -1 ||
	    probe_mounts(root, e, failed) == -1 ||
	    (!e->gvisor && probe_check_limits(root, e, failed) == -1) ||
	    probe_net(root, e, failed) == -1)
		goto out;
	rc = 0;
out:
	json_decref(root);
	return rc;
}

int
probe_check_limits(json_t *limits, const struct probe_expect *e,
    char **failed)
{
	*failed = NULL;
	if ((e->memory_bytes > 0 &&
	    probe_memory(limits, e->memory_bytes, failed) == -1) ||
	    (e->pids > 0 && probe_pids(limits, e->pids, failed) == -1) ||
	    (e->cpus > 0 && probe_cpus(limits, e->cpus, failed) == -1))
		return -1;
	return 0;
}

/*
 * A throw-away container with every control a sandbox gets (the base of
 * cspec.h, seccomp profile included), small limits; on network net (NULL:
 * none).
 */
json_t *
probe_check_spec(const char *image, const char *probe, const char *net)
{
	char	bind[4200];

	snprintf(bind, sizeof(bind), "%s:" PROBE_CONTAINER_PATH ":ro", probe);
	return cspec_new(json_pack("{s:s, s:[s], s:[s], s:s, s:b, s:{s:s},"
	    " s:{s:[s], s:I, s:I, s:I, s:I, s:s, s:{s:s}}}",
	    "Image", image, "Entrypoint", PROBE_CONTAINER_PATH,
	    "Cmd", "idle", "User", "65534:65534",
	    "NetworkDisabled", net == NULL, "Labels", "sandgate.doctor", "1",
	    "HostConfig", "Binds", bind,
	    "Memory", (json_int_t)PROBE_CHECK_MEMORY,
	    "MemorySwap", (json_int_t)PROBE_CHECK_MEMORY,
	    "PidsLimit", (json_int_t)PROBE_CHECK_PIDS,
	    "NanoCpus", (json_int_t)PROBE_CHECK_NANOCPUS,
	    "NetworkMode", net ? net : "none", "Tmpfs", "/tmp",
	    "rw,noexec,nosuid,size=16m"));
}
