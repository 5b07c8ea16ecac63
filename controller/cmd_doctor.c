/*
 * cmd_doctor.c: `sandgate doctor`: checks that this host can run sandboxes
 * with every control in force, one line per check, and says what to do
 * about each failure. Exit 0 when every required check passes, else 1.
 *
 * `--check-probe-json FILE` instead judges a saved sandgate-probe report
 * against the given limits (what create does after starting a container);
 * tests and admins use it to see which control a container lacks.
 */
#include <sys/ioctl.h>
#include <sys/stat.h>

#include <linux/loop.h>

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "disk.h"
#include "docker.h"
#include "log.h"
#include "netseal.h"
#include "probe.h"
#include "sandbox.h"
#include "state.h"
#include "util.h"

#define DOCTOR_IMAGE	"sandgate/base"
#define DOCTOR_PROXY	"sandgate-proxy"
#define DOCTOR_DISK	(16ull << 20)	/* size of the test disk */
/* the test containers' limits, as set and as the probe must see them */

enum doctor_level { DOCTOR_OK, DOCTOR_WARN, DOCTOR_FAIL };

struct doctor {
	struct docker	*docker;
	const char	*image;		/* DOCTOR_IMAGE unless --image */
	int		 failed;	/* required checks that failed */
	int		 have_image;
};

/* Output captured from the probe exec. */
struct doctor_buf {
	char	data[PROBE_OUTPUT_MAX + 1];
	size_t	len;
	int	overflow;
};

static void	doctor_line(struct doctor *, enum doctor_level, const char *,
		    const char *, ...) __attribute__((format(printf, 4, 5)));
static void	doctor_docker(struct doctor *);
static void	doctor_info(struct doctor *);
static void	doctor_image(struct doctor *);
static void	doctor_proxy(struct doctor *);
static void	doctor_state(struct doctor *);
static int	doctor_read_line(const char *, char *, size_t);
static void	doctor_kernel(struct doctor *);
static void	doctor_loop(struct doctor *);
static void	doctor_tool(struct doctor *, const char *, const char *,
		    const char *);
static void	doctor_mkfs(struct doctor *);
static unsigned long long doctor_used(const char *);
static long long doctor_fill(const char *);
static int	doctor_disk_cycle(const char *, char *, size_t);
static void	doctor_disk(struct doctor *);
static int	doctor_collect(void *, int, const unsigned char *, size_t);
static void	doctor_expect(struct probe_expect *);
static int	doctor_container(struct doctor *, const char *, const char *,
		    char **, char **);
static int	doctor_probe_exec(struct doctor *, const char *, const char *,
		    struct doctor_buf *, char **);
static void	doctor_remove(struct doctor *, char *);
static int	doctor_only_unsealed(const char *,
		    const struct probe_expect *);
static void	doctor_seal(struct doctor *);
static void	doctor_limits(struct doctor *);
static int	doctor_check_json(const char *, const struct probe_expect *);
static int	doctor_expect_opt(int, const char *, struct probe_expect *);
static int	cmd_doctor_exec(struct cmd_args *);

static const struct option cmd_doctor_options[] = {
	{ "check-probe-json", required_argument, NULL, 'j' },
	{ "expect-memory", required_argument, NULL, 'm' },
	{ "expect-pids", required_argument, NULL, 'p' },
	{ "expect-cpus", required_argument, NULL, 'c' },
	{ "allow-network", no_argument, NULL, 'n' },
	{ "no-tmp", no_argument, NULL, 't' },
	{ "no-seccomp", no_argument, NULL, 's' },
	{ "writable-root", no_argument, NULL, 'w' },
	{ "image", required_argument, NULL, 'i' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_doctor = {
	.name = "doctor",
	.usage = "[--image NAME] |\n"
	    "    [--check-probe-json FILE [--expect-memory SIZE] "
	    "[--expect-pids N]\n    [--expect-cpus N] [--allow-network] "
	    "[--no-tmp] [--no-seccomp]\n    [--writable-root]]",
	.summary = "check that this host can run sandboxes with every "
	    "control in force",
	.options = cmd_doctor_options,
	.args_max = 0,
	.exec = cmd_doctor_exec,
};

static void
doctor_line(struct doctor *dr, enum doctor_level lvl, const char *what,
    const char *fmt, ...)
{
	static const char *const tags[] = { "OK  ", "WARN", "FAIL" };
	va_list	ap;

	printf("%s  %-8s ", tags[lvl], what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	putchar('\n');
	if (lvl == DOCTOR_FAIL)
		dr->failed++;
}

static void
doctor_docker(struct doctor *dr)
{
	char	*cause = NULL;

	dr->docker = docker_new(&cause);
	if (dr->docker == NULL) {
		doctor_line(dr, DOCTOR_FAIL, "docker", "%s", cause);
		free(cause);
		return;
	}
	doctor_line(dr, DOCTOR_OK, "docker", "reachable, API %s",
	    docker_api_version(dr->docker));
}

/* What the daemon says about cgroups and runtimes (GET /info). */
static void
doctor_info(struct doctor *dr)
{
	static const char *const need[] = {
		"MemoryLimit", "SwapLimit", "PidsLimit", "CpuCfsQuota",
	};
	json_t	*info = NULL, *rt;
	char	*cause = NULL;
	long	 status = 0;
	size_t	 i;

	if (docker_call(dr->docker, "GET", "/info", NULL, &status, &info,
	    &cause) == -1 || status != 200 || !json_is_object(info)) {
		doctor_line(dr, DOCTOR_FAIL, "cgroups", "cannot read docker "
		    "info: %s", cause ? cause : "bad answer");
		goto out;
	}
	for (i = 0; i < sizeof(need) / sizeof(need[0]); i++) {
		if (!json_is_true(json_object_get(info, need[i]))) {
			doctor_line(dr, DOCTOR_FAIL, "cgroups", "daemon "
			    "reports %s unsupported; enable the cgroup "
			    "controller (swapaccount=1 for SwapLimit)",
			    need[i]);
			goto runtimes;
		}
	}
	doctor_line(dr, DOCTOR_OK, "cgroups", "memory, swap, pids and cpu "
	    "limits supported (cgroup %s)", json_string_value(
	    json_object_get(info, "CgroupVersion")) ?: "?");
runtimes:
	rt = json_object_get(json_object_get(info, "Runtimes"), "runsc");
	if (json_is_object(rt))
		doctor_line(dr, DOCTOR_OK, "runsc", "gVisor registered as "
		    "runtime 'runsc'");
	else
		doctor_line(dr, DOCTOR_WARN, "runsc", "gVisor not registered: "
		    "install runsc and run 'runsc install' for a stronger "
		    "kernel boundary (optional)");
out:
	json_decref(info);
	free(cause);
}

static void
doctor_image(struct doctor *dr)
{
	char	*id = NULL, *cause = NULL;

	if (docker_image_id(dr->docker, dr->image, &id, &cause) == 0) {
		doctor_line(dr, DOCTOR_OK, "image", "%s present (%.19s)",
		    dr->image, id);
		dr->have_image = 1;
	} else if (errno == ENOENT)
		doctor_line(dr, DOCTOR_FAIL, "image", "%s missing; build or "
		    "load it before creating sandboxes", dr->image);
	else
		doctor_line(dr, DOCTOR_FAIL, "image", "%s", cause);
	free(id);
	free(cause);
}

static void
doctor_proxy(struct doctor *dr)
{
	struct docker_cinfo	 ci;
	char			*cause = NULL;

	if (docker_container_inspect(dr->docker, DOCTOR_PROXY, &ci,
	    &cause) == -1)
		doctor_line(dr, DOCTOR_WARN, "proxy", "container "
		    DOCTOR_PROXY " not found; sandboxes will have no network "
		    "until it runs");
	else if (!ci.running)
		doctor_line(dr, DOCTOR_WARN, "proxy", "container "
		    DOCTOR_PROXY " is %s; start it", ci.status);
	else
		doctor_line(dr, DOCTOR_OK, "proxy", DOCTOR_PROXY " running");
	free(cause);
}

/* The first line of a small /proc or /sys file into buf; 0 or -1. */
static int
doctor_read_line(const char *path, char *buf, size_t size)
{
	ssize_t	n;
	int	fd;

	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	return 0;
}

/*
 * The kernel's own guards around sandboxes, reported (none is required:
 * seccomp, capabilities and namespaces hold without them): AppArmor and
 * docker-default, Yama's ptrace_scope, and user namespaces.
 */
static void
doctor_kernel(struct doctor *dr)
{
	char	buf[4096], max[64], unpriv[64];
	int	fd, loaded = 0;
	ssize_t	n;

	if (!sandbox_apparmor_on())
		doctor_line(dr, DOCTOR_WARN, "apparmor", "not enforced by this "
		    "kernel: sandboxes get no AppArmor profile (seccomp, no "
		    "capabilities and namespaces still hold)");
	else {
		fd = open("/sys/kernel/security/apparmor/profiles", O_RDONLY |
		    O_CLOEXEC);
		while (fd != -1 && (n = read(fd, buf, sizeof(buf) - 1)) > 0) {
			buf[n] = '\0';
			loaded |= strstr(buf, "docker-default") != NULL;
		}
		if (fd != -1)
			close(fd);
		doctor_line(dr, loaded ? DOCTOR_OK : DOCTOR_FAIL, "apparmor",
		    loaded ? "enforced; sandboxes run under docker-default" :
		    "enforced, but docker-default is not loaded (dockerd "
		    "loads it when it starts): sandboxes would not start");
	}
	if (doctor_read_line("/proc/sys/kernel/yama/ptrace_scope", buf,
	    sizeof(buf)) == -1)
		doctor_line(dr, DOCTOR_WARN, "yama", "not in this kernel: "
		    "ptrace inside a sandbox is refused by seccomp alone");
	else
		doctor_line(dr, DOCTOR_OK, "yama", "ptrace_scope %s (seccomp "
		    "refuses ptrace in sandboxes anyway)", buf);
	if (doctor_read_line("/proc/sys/user/max_user_namespaces", max,
	    sizeof(max)) == -1)
		snprintf(max, sizeof(max), "?");
	if (doctor_read_line("/proc/sys/kernel/unprivileged_userns_clone",
	    unpriv, sizeof(unpriv)) == -1)
		snprintf(unpriv, sizeof(unpriv), "not limited");
	doctor_line(dr, DOCTOR_OK, "userns", "user namespaces: at most %s, "
	    "unprivileged ones %s; sandboxes can make none (seccomp refuses "
	    "unshare and clone's namespace flags) and each runs as a uid of "
	    "its own", max, strcmp(unpriv, "0") == 0 ? "off" : unpriv);
}

/* The state root exists (or can be made) and takes a new file. */
static void
doctor_state(struct doctor *dr)
{
	char	path[4096];
	int	fd;

	if (state_mkdirs(state_root(), 0700) == -1 ||
	    snprintf(path, sizeof(path), "%s/.doctor-" UTIL_MKTEMP_SUFFIX, state_root()) >=
	    (int)sizeof(path) || (fd = mkstemp(path)) == -1) {
		doctor_line(dr, DOCTOR_FAIL, "state", "'%s' not writable (%s); "
		    "fix its owner or set SANDGATE_STATE", state_root(),
		    strerror(errno));
		return;
	}
	close(fd);
	unlink(path);
	doctor_line(dr, DOCTOR_OK, "state", "'%s' writable", state_root());
}

static void
doctor_loop(struct doctor *dr)
{
	int	ctl, n;

	ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
	if (ctl == -1) {
		doctor_line(dr, DOCTOR_FAIL, "loop", "cannot open "
		    "/dev/loop-control (%s); run as root with the loop module "
		    "loaded (modprobe loop)", strerror(errno));
		return;
	}
	n = ioctl(ctl, LOOP_CTL_GET_FREE);
	close(ctl);
	if (n < 0)
		doctor_line(dr, DOCTOR_FAIL, "loop", "no free loop device "
		    "(%s); raise max_loop or detach unused ones (losetup -D)",
		    strerror(errno));
	else
		doctor_line(dr, DOCTOR_OK, "loop", "loop devices available "
		    "(next free: loop%d)", n);
}

/* A system tool the controller runs (sysrun.h), in /usr/sbin or /sbin. */
static void
doctor_tool(struct doctor *dr, const char *what, const char *tool,
    const char *why)
{
	static const char *const dirs[] = { "/usr/sbin", "/sbin" };
	char	path[128];
	size_t	i;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dirs[i], tool);
		if (access(path, X_OK) == 0) {
			doctor_line(dr, DOCTOR_OK, what, "%s present", path);
			return;
		}
	}
	doctor_line(dr, DOCTOR_FAIL, what, "%s not found; %s", tool, why);
}

static void
doctor_mkfs(struct doctor *dr)
{
	doctor_tool(dr, "mkfs", "mkfs.ext4", "install e2fsprogs (the "
	    "workspace's size-limited disk)");
	doctor_tool(dr, "seal", "iptables-restore", "install iptables (the "
	    "network seal of --network proxy sandboxes)");
	doctor_tool(dr, "seal6", "ip6tables-restore", "install iptables (the "
	    "network seal of --network proxy sandboxes)");
}

/*
 * Bytes the host's filesystem gave the file at path (its blocks, not its
 * size: an image is sparse until written). What a full disk image took
 * from the host, whatever else writes there meanwhile; 0 when unknown.
 */
static unsigned long long
doctor_used(const char *path)
{
	struct stat	st;

	if (stat(path, &st) == -1)
		return 0;
	return (unsigned long long)st.st_blocks * 512;
}

/* Write a file in dir until the disk is full; bytes written or -1. */
static long long
doctor_fill(const char *dir)
{
	static char	 block[65536];
	char		 path[4200];
	long long	 total = 0;
	ssize_t		 n;
	int		 fd;

	if ((size_t)snprintf(path, sizeof(path), "%s/fill", dir) >=
	    sizeof(path))
		return -1;
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1)
		return -1;
	memset(block, 'x', sizeof(block));
	while ((n = write(fd, block, sizeof(block))) > 0)
		total += n;
	if (n == -1 && errno != ENOSPC)
		total = -1;
	if (fsync(fd) == -1 && errno != ENOSPC)
		total = -1;
	close(fd);
	return total;
}

/*
 * Create, mount and fill a DOCTOR_DISK image under tmp; the quota holds
 * when the write stops with ENOSPC, the host lost at most the image's
 * size and no loop device is left after unmounting. 0, or -1 with msg.
 */
static int
doctor_disk_cycle(const char *tmp, char *msg, size_t size)
{
	struct disk_mount_info	*m;
	unsigned long long	 used;
	char			 img[4200], mnt[4200], *cause = NULL;
	long long		 wrote;
	size_t			 n;
	int			 rc = -1;

	if ((size_t)snprintf(img, sizeof(img), "%s/disk.img", tmp) >=
	    sizeof(img) || (size_t)snprintf(mnt, sizeof(mnt), "%s/work",
	    tmp) >= sizeof(mnt)) {
		snprintf(msg, size, "state root path too long");
		return -1;
	}
	if (mkdir(mnt, 0700) == -1 ||
	    disk_image_create(img, DOCTOR_DISK, getuid(), getgid(),
	    &cause) == -1 || disk_mount(img, mnt, &cause) == -1) {
		snprintf(msg, size, "%s", cause ? cause : strerror(errno));
		goto out;
	}
	wrote = doctor_fill(mnt);
	if (disk_umount(mnt, &cause) == -1) {
		snprintf(msg, size, "%s", cause);
		goto out;
	}
	if (wrote < 0 || (unsigned long long)wrote > DOCTOR_DISK)
		snprintf(msg, size, "a %llu MiB disk took %lld bytes without "
		    "ENOSPC", DOCTOR_DISK >> 20, wrote);
	else if ((used = doctor_used(img)) > DOCTOR_DISK)
		snprintf(msg, size, "the host lost %llu MiB for a %llu MiB "
		    "disk", used >> 20, DOCTOR_DISK >> 20);
	else if (disk_list_mounts(tmp, &m, &n, &cause) == -1 || n > 0) {
		disk_mounts_free(m, n);
		snprintf(msg, size, "loop device still attached after unmount");
	} else {
		snprintf(msg, size, "a %llu MiB disk stopped writes at %lld "
		    "KiB with ENOSPC and released its loop device",
		    DOCTOR_DISK >> 20, wrote >> 10);
		rc = 0;
	}
out:
	disk_umount(mnt, NULL);
	unlink(img);
	rmdir(mnt);
	free(cause);
	return rc;
}

/* The workspace quota works end to end (needs root for the mount). */
static void
doctor_disk(struct doctor *dr)
{
	char	tmp[4200], msg[512];

	if (geteuid() != 0) {
		doctor_line(dr, DOCTOR_FAIL, "disk", "workspace quotas need "
		    "loop mounts; run sandgate as root");
		return;
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s/.doctor-disk-" UTIL_MKTEMP_SUFFIX,
	    state_root()) >= sizeof(tmp) || mkdtemp(tmp) == NULL) {
		doctor_line(dr, DOCTOR_FAIL, "disk", "cannot make a test "
		    "folder in '%s'", state_root());
		return;
	}
	if (doctor_disk_cycle(tmp, msg, sizeof(msg)) == -1)
		doctor_line(dr, DOCTOR_FAIL, "disk", "quota not enforced: %s",
		    msg);
	else
		doctor_line(dr, DOCTOR_OK, "disk", "%s", msg);
	rmdir(tmp);
}

static int
doctor_collect(void *arg, int stream, const unsigned char *p, size_t len)
{
	struct doctor_buf	*b = arg;

	if (stream != 1)
		return 0;
	if (len > PROBE_OUTPUT_MAX - b->len) {
		b->overflow = 1;
		return -1;
	}
	memcpy(b->data + b->len, p, len);
	b->len += len;
	return 0;
}

/* What the probe must see in a test container of probe_check_spec(). */
static void
doctor_expect(struct probe_expect *e)
{
	probe_expect_init(e);
	e->memory_bytes = PROBE_CHECK_MEMORY;
	e->pids = PROBE_CHECK_PIDS;
	e->cpus = PROBE_CHECK_NANOCPUS / 1e9;
}

/* Create and start a test container on net (NULL: none); *cid is set. */
static int
doctor_container(struct doctor *dr, const char *probe, const char *net,
    char **cid, char **cause)
{
	json_t	*spec;
	int	 rc;

	*cid = NULL;
	if ((spec = probe_check_spec(dr->image, probe, net)) == NULL) {
		util_cause(cause, "cannot build the container spec");
		return -1;
	}
	rc = docker_container_create(dr->docker, NULL, spec, cid, cause);
	json_decref(spec);
	if (rc == -1)
		return -1;
	return docker_container_start(dr->docker, *cid, cause);
}

/* Run `probe check [--seal TARGET]` in container cid; output into b. */
static int
doctor_probe_exec(struct doctor *dr, const char *cid, const char *seal,
    struct doctor_buf *b, char **cause)
{
	struct docker_stream_cb	 cb = { doctor_collect, NULL, b, NULL,
				    NULL };
	json_t			*espec;
	char			*eid = NULL;
	int			 rc = -1;

	memset(b, 0, sizeof(*b));
	espec = seal == NULL ? json_pack("{s:b, s:b, s:[s, s]}",
	    "AttachStdout", 1, "AttachStderr", 1, "Cmd", PROBE_CONTAINER_PATH,
	    "check") : json_pack("{s:b, s:b, s:[s, s, s, s]}", "AttachStdout",
	    1, "AttachStderr", 1, "Cmd", PROBE_CONTAINER_PATH, "check",
	    "--seal", seal);
	if (espec == NULL)
		util_cause(cause, "cannot build the exec spec");
	else if (docker_exec_create(dr->docker, cid, espec, &eid,
	    cause) == 0 && docker_exec_start(dr->docker, eid, &cb,
	    cause) == 0 && !b->overflow) {
		b->data[b->len] = '\0';
		rc = 0;
	}
	free(eid);
	json_decref(espec);
	return rc;
}

static void
doctor_remove(struct doctor *dr, char *cid)
{
	char	*ignore = NULL;

	if (cid != NULL)
		docker_container_remove(dr->docker, cid, &ignore);
	free(ignore);
	free(cid);
}

/* The real thing: limits seen from inside a container Docker made. */
static void
doctor_limits(struct doctor *dr)
{
	static struct doctor_buf	 b;
	struct probe_expect		 e;
	const char			*probe;
	char				*cause = NULL, *failed = NULL;
	char				*cid = NULL;

	if ((probe = probe_path()) == NULL) {
		doctor_line(dr, DOCTOR_FAIL, "probe", "sandgate-probe not "
		    "found next to sandgate or in ../libexec/sandgate; "
		    "reinstall");
		return;
	}
	if (!dr->have_image) {
		doctor_line(dr, DOCTOR_FAIL, "limits", "not checked: needs the "
		    "%s image", dr->image);
		return;
	}
	memset(&b, 0, sizeof(b));
	doctor_expect(&e);
	if (doctor_container(dr, probe, NULL, &cid, &cause) == -1 ||
	    doctor_probe_exec(dr, cid, NULL, &b, &cause) == -1)
		doctor_line(dr, DOCTOR_FAIL, "limits", "cannot run the probe "
		    "in a test container: %s",
		    cause ? cause : "output too large");
	else if (probe_check(b.data, &e, &failed) == -1)
		doctor_line(dr, DOCTOR_FAIL, "limits", "a test container lacks "
		    "a control: %s", failed);
	else
		doctor_line(dr, DOCTOR_OK, "limits", "memory, swap, pids, cpu, "
		    "capabilities, read-only root and network apply inside a "
		    "test container");
	doctor_remove(dr, cid);
	free(cause);
	free(failed);
}

/* 1 when the report fails the seal check and nothing else. */
static int
doctor_only_unsealed(const char *report, const struct probe_expect *e)
{
	struct probe_expect	 noseal = *e;
	char			*failed = NULL;
	int			 rc;

	rc = probe_check(report, e, &failed) == -1 &&
	    strstr(failed, "network seal not in force") != NULL;
	free(failed);
	noseal.sealed = 0;
	failed = NULL;
	rc = rc && probe_check(report, &noseal, &failed) == 0;
	free(failed);
	return rc;
}

/*
 * The network seal (netseal.h), as create loads it, on a throw-away
 * internal network: one test container stands in for the proxy, the probe
 * in a second one must see that container's other port and Docker's
 * resolver answer before the seal and both refused after it, so the check
 * is shown to tell the two apart on this host.
 */
static void
doctor_seal(struct doctor *dr)
{
	static struct doctor_buf	 b;
	struct probe_expect		 e;
	struct docker_cinfo		 ci;
	const char			*probe;
	char				 net[64], ip[64], proxy[96], target[96];
	char				*nb = NULL, *sb = NULL, *cause = NULL;
	char				*failed = NULL;

	if ((probe = probe_path()) == NULL || !dr->have_image)
		return;		/* doctor_limits said why */
	snprintf(net, sizeof(net), "sandgate-doctor-%ld", (long)getpid());
	if (docker_network_create(dr->docker, net, 1, NULL, "sandgate.doctor",
	    "1", &cause) == -1) {
		doctor_line(dr, DOCTOR_FAIL, "sealed", "cannot create the test "
		    "network %s: %s", net, cause);
		free(cause);
		return;
	}
	doctor_expect(&e);
	e.network_none = 0;
	e.proxy_only = 1;
	e.sealed = 1;
	if (doctor_container(dr, probe, net, &nb, &cause) == -1 ||
	    doctor_container(dr, probe, net, &sb, &cause) == -1 ||
	    docker_container_ip(dr->docker, nb, net, ip, sizeof(ip),
	    &cause) == -1 ||
	    docker_container_inspect(dr->docker, sb, &ci, &cause) == -1)
		doctor_line(dr, DOCTOR_FAIL, "sealed", "cannot start the test "
		    "containers: %s", cause);
	else if (snprintf(proxy, sizeof(proxy), "%s:3128", ip) < 0 ||
	    netseal_probe_target(proxy, target, sizeof(target)) == -1 ||
	    doctor_probe_exec(dr, sb, target, &b, &cause) == -1)
		doctor_line(dr, DOCTOR_FAIL, "sealed", "cannot run the probe: %s",
		    cause ? cause : "bad address or output too large");
	else if (!doctor_only_unsealed(b.data, &e))
		doctor_line(dr, DOCTOR_FAIL, "sealed", "without the seal, the "
		    "probe's check did not fail on the seal alone: it cannot "
		    "tell on this host");
	else if (netseal_apply(ci.pid, proxy, &cause) == -1)
		doctor_line(dr, DOCTOR_FAIL, "sealed", "%s", cause);
	else if (doctor_probe_exec(dr, sb, target, &b, &cause) == -1)
		doctor_line(dr, DOCTOR_FAIL, "sealed", "cannot run the probe: %s",
		    cause ? cause : "output too large");
	else if (probe_check(b.data, &e, &failed) == -1)
		doctor_line(dr, DOCTOR_FAIL, "sealed", "not in force after "
		    "loading it: %s", failed);
	else
		doctor_line(dr, DOCTOR_OK, "sealed", "a test container's "
		    "namespace: a neighbour's port and Docker's resolver "
		    "answer without the seal and are refused with it");
	doctor_remove(dr, sb);
	doctor_remove(dr, nb);
	free(cause);
	cause = NULL;
	if (docker_network_remove(dr->docker, net, &cause) == -1)
		log_warnx("cannot remove the test network %s: "
		    "%s", net, cause);
	free(cause);
	free(failed);
}

/* Judge a saved probe report; 0 when every control holds, else 1. */
static int
doctor_check_json(const char *file, const struct probe_expect *e)
{
	static char	 buf[PROBE_OUTPUT_MAX + 2];
	FILE		*fp;
	size_t		 n;
	char		*failed = NULL;
	int		 rc;

	fp = strcmp(file, "-") == 0 ? stdin : fopen(file, "re");
	if (fp == NULL) {
		log_warnx("cannot open '%s': %s", file,
		    strerror(errno));
		return SG_EXIT_ERROR;
	}
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	buf[n] = '\0';
	if (fp != stdin)
		fclose(fp);
	if (memchr(buf, '\0', n) != NULL)
		buf[0] = '\0';	/* embedded NUL: garbage, fail below */
	rc = probe_check(buf, e, &failed);
	if (rc == 0)
		printf("OK    probe: every control holds\n");
	else
		printf("FAIL  probe: %s\n", failed);
	free(failed);
	return rc == 0 ? SG_EXIT_OK : SG_EXIT_FAIL;
}

/* Parse the --expect-* options into e; -1 on a bad value. */
static int
doctor_expect_opt(int opt, const char *arg, struct probe_expect *e)
{
	const char	*errstr;
	long long	 n;
	char		*end;

	switch (opt) {
	case 'm':
		return util_parse_size(arg, &e->memory_bytes);
	case 'p':
		if (util_strtonum(arg, 1, 4194304, &n, &errstr) == -1)
			return -1;
		e->pids = (long)n;
		return 0;
	case 'c':
		errno = 0;
		e->cpus = strtod(arg, &end);
		return errno != 0 || end == arg || *end != '\0' ||
		    !(e->cpus > 0 && e->cpus <= 4096) ? -1 : 0;
	case 'n':
		e->network_none = 0;
		return 0;
	case 't':
		e->tmp_noexec = 0;
		return 0;
	case 's':
		e->seccomp_filter = 0;
		return 0;
	case 'w':
		e->readonly_root = 0;
		return 0;
	}
	return -1;
}

static int
cmd_doctor_exec(struct cmd_args *args)
{
	const struct cmd_opt	*o;
	struct probe_expect	 e;
	struct doctor		 dr;
	const char		*json = NULL, *image = DOCTOR_IMAGE;

	probe_expect_init(&e);
	while ((o = cmd_args_next(args)) != NULL) {
		if (o->ch == 'j')
			json = o->arg;
		else if (o->ch == 'i')
			image = o->arg;
		else if (doctor_expect_opt(o->ch, o->arg, &e) == -1)
			return cmd_usage_error(&cmd_doctor, "--%s: bad value "
			    "'%s'", o->name, o->arg);
	}
	if (json != NULL)
		return doctor_check_json(json, &e);
	memset(&dr, 0, sizeof(dr));
	dr.image = image;
	doctor_docker(&dr);
	if (dr.docker != NULL) {
		doctor_info(&dr);
		doctor_image(&dr);
		doctor_proxy(&dr);
	}
	doctor_kernel(&dr);
	doctor_state(&dr);
	doctor_loop(&dr);
	doctor_mkfs(&dr);
	doctor_disk(&dr);
	if (dr.docker != NULL) {
		doctor_limits(&dr);
		doctor_seal(&dr);
	}
	docker_free(dr.docker);
	printf("%s\n", dr.failed ? "some required checks failed" :
	    "all required checks passed");
	return dr.failed ? SG_EXIT_FAIL : SG_EXIT_OK;
}
