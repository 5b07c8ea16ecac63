/*
 * sandgate-probe: a static helper bind-mounted into every sandbox.
 *
 *   sandgate-probe idle    PID 1 of every sandbox container, as a uid no
 *                          command has: makes itself
 *                          not dumpable (no process of the sandbox may
 *                          write its memory; under runc none may read its
 *                          environment or use its descriptors either,
 *                          gVisor lets them), reaps orphans, exits 0 on
 *                          SIGTERM or SIGINT from outside the container
 *                          (ignored from its own processes), sleeps
 *                          otherwise
 *   sandgate-probe check [--seal IP:PORT]
 *                          prints one JSON object with the controls the
 *                          process sees from inside (format: probe.h);
 *                          with --seal, also whether the network seal
 *                          refuses Docker's resolver and IP:PORT
 *   sandgate-probe run [--nproc N] -- CMD [ARG...]
 *                          set no_new_privs, install sandgate's seccomp
 *                          filter (seccomp_profile.h), with --nproc set
 *                          RLIMIT_NPROC to N, and exec CMD: how a command
 *                          starts under gVisor, which gives the
 *                          container's filter to its init only and whose
 *                          processes the host's pids cgroup cannot count
 *   sandgate-probe join NAME -- CMD [ARG...]
 *                          wait until the host moved this process into
 *                          the memory cgroup NAME (a child of the
 *                          container's), then exec CMD: how a command
 *                          starts under runc when sandgate made the
 *                          commands' cgroup (cgroup.h), so that none of
 *                          it is charged beside the init; looks again
 *                          at once on PROCSTAT_JOIN_WAKE (a hint the host
 *                          sends after the move); exits 126 when not
 *                          moved within JOIN_WAIT_MS
 *   sandgate-probe reap RUN [ACTIVE...]
 *                          as the init's uid with only CAP_KILL and
 *                          CAP_SYS_PTRACE (so no command can signal it),
 *                          SIGKILL every process of run RUN, and every
 *                          one with no SANDGATE_RUN marker, a marker that
 *                          can't be read or the marker of a run not in
 *                          ACTIVE (never itself, a process of its own uid,
 *                          nor PID 1 while it is
 *                          the idle probe sandgate started), in rounds
 *                          until none is left; exits with the number
 *                          killed (at most 100), or 101 when the last
 *                          round still found some. The controller's
 *                          kill under gVisor, whose processes the host
 *                          cannot see.
 *
 * Linked statically so that any image can run it; uses nothing from libc
 * that needs NSS or locale files. It formats its JSON by hand and reads
 * only small files, each into a fixed buffer.
 */
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <linux/capability.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <seccomp.h>

#include "../procstat.h"
#include "../seccomp_profile.h"

#define PROBE_FILE_MAX	4096	/* small proc/sys/cgroup files */
#define PROBE_OUT_MAX	8192	/* the whole JSON object */
#define PROBE_IFACES	64	/* interfaces reported */
#define PROBE_LINE_MAX	4096	/* one mountinfo or net/dev line */
#define PROBE_NET_WAIT	2000	/* ms for a connect or a DNS answer */
#define PROBE_DNS_IP	"127.0.0.11"	/* Docker's embedded resolver */
#define REAP_ROUNDS	50		/* kill rounds, 20 ms apart */
#define JOIN_WAIT_MS	30000		/* for the host to move us */
#define JOIN_POLL_MIN_US	200	/* first poll for the move, */
#define JOIN_POLL_MAX_US	2000	/* doubled up to this */

struct out {
	char	buf[PROBE_OUT_MAX];
	size_t	len;
	int	overflow;
};

struct mnt {
	int	found;
	int	ro;
	int	noexec;
	int	nosuid;
};

static void	out_printf(struct out *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	out_str(struct out *, const char *);
static int	read_small(const char *, char *, size_t);
static void	status_field(const char *, const char *, char *, size_t);
static int	has_opt(const char *, const char *);
static void	mount_lookup(const char *, struct mnt *);
static void	emit_status(struct out *);
static void	emit_isolation(struct out *);
static void	emit_mounts(struct out *);
static void	emit_limit(struct out *, const char *, const char *);
static void	emit_cpu_v2(struct out *);
static void	emit_cgroup(struct out *);
static void	name_copy(char [64], const char *);
static int	iface_list_proc(char [][64], int);
static int	iface_list_sys(char [][64], int);
static void	emit_net(struct out *);
static const char *errno_word(int);
static const char *seal_dns(void);
static const char *seal_connect(const char *);
static void	emit_seal(struct out *, const char *);
static int	probe_check_main(const char *);
static int	reap_caps(void);
static int	reap_own_uid(const char *);
static int	reap_spare(const char *, int, char **);
static int	reap_round(const char *, int, char **, int);
static int	reap_init_is_probe(void);
static int	probe_reap_main(int, char **);
static int	run_filter_rules(scmp_filter_ctx);
static int	probe_run_main(long, char **);
static int	join_in(const char *);
static long long join_now_us(void);
static int	probe_join_main(const char *, char **);
static void	idle_term(int, siginfo_t *, void *);
static void	idle_chld(int);
static void	probe_idle_main(void) __attribute__((noreturn));

/* Append to the output; past the buffer the output is marked broken. */
static void
out_printf(struct out *o, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	if (o->overflow)
		return;
	va_start(ap, fmt);
	n = vsnprintf(o->buf + o->len, sizeof(o->buf) - o->len, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(o->buf) - o->len) {
		o->overflow = 1;
		return;
	}
	o->len += (size_t)n;
}

/* A JSON string with everything outside printable ASCII escaped. */
static void
out_str(struct out *o, const char *s)
{
	const unsigned char	*p;

	out_printf(o, "\"");
	for (p = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p == '"' || *p == '\\')
			out_printf(o, "\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			out_printf(o, "\\u%04x", *p);
		else
			out_printf(o, "%c", *p);
	}
	out_printf(o, "\"");
}

/* Read a small file into buf, NUL-terminated; returns 0 or -1. */
static int
read_small(const char *path, char *buf, size_t size)
{
	ssize_t	n;
	size_t	len = 0;
	int	fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	while (len < size - 1) {
		n = read(fd, buf + len, size - 1 - len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	buf[len] = '\0';
	return 0;
}

/*
 * The value of the LAST "name:\tvalue" line of /proc/PID/status text, or
 * "". The first would do under Linux, which has each field once and
 * escapes the process name; gVisor prints the name (the comm, which the
 * process sets) unescaped and first, so "\nUid:1234" as a name forges
 * lines that come before the kernel's own (atk16r8 F1).
 */
static void
status_field(const char *status, const char *name, char *val, size_t size)
{
	const char	*p = status, *end, *last = NULL;
	size_t		 nlen = strlen(name), vlen;

	val[0] = '\0';
	for (; p != NULL && *p != '\0'; p = end ? end + 1 : NULL) {
		if (strncmp(p, name, nlen) == 0 && p[nlen] == ':')
			last = p + nlen + 1;
		end = strchr(p, '\n');
	}
	if (last == NULL)
		return;
	while (*last == '\t' || *last == ' ')
		last++;
	end = strchr(last, '\n');
	vlen = end ? (size_t)(end - last) : strlen(last);
	if (vlen >= size)
		vlen = size - 1;
	memcpy(val, last, vlen);
	val[vlen] = '\0';
}

/* 1 if the comma-separated list opts has the option opt. */
static int
has_opt(const char *opts, const char *opt)
{
	size_t		 olen = strlen(opt);
	const char	*p = opts;

	while (*p != '\0') {
		if (strncmp(p, opt, olen) == 0 &&
		    (p[olen] == ',' || p[olen] == '\0'))
			return 1;
		p = strchr(p, ',');
		if (p == NULL)
			break;
		p++;
	}
	return 0;
}

/*
 * Find the topmost mount on path in /proc/self/mountinfo. A line is
 * "id parent maj:min root mountpoint options [optional...] - fs src super";
 * the per-mount flags (ro, noexec, nosuid) are in the sixth field.
 */
static void
mount_lookup(const char *path, struct mnt *m)
{
	char	 line[PROBE_LINE_MAX], *f[6], *p;
	FILE	*fp;
	int	 i;

	memset(m, 0, sizeof(*m));
	fp = fopen("/proc/self/mountinfo", "re");
	if (fp == NULL)
		return;
	while (fgets(line, sizeof(line), fp) != NULL) {
		p = line;
		for (i = 0; i < 6; i++) {
			f[i] = strsep(&p, " \n");
			if (f[i] == NULL)
				break;
		}
		if (i < 6 || strcmp(f[4], path) != 0)
			continue;
		m->found = 1;
		m->ro = has_opt(f[5], "ro");
		m->noexec = has_opt(f[5], "noexec");
		m->nosuid = has_opt(f[5], "nosuid");
	}
	fclose(fp);
}

/* Identity, capabilities, no_new_privs and seccomp. */
static void
emit_status(struct out *o)
{
	static const char *const caps[][2] = {
		{ "cap_eff", "CapEff" }, { "cap_prm", "CapPrm" },
		{ "cap_bnd", "CapBnd" }, { "cap_amb", "CapAmb" },
	};
	char	status[PROBE_FILE_MAX * 2], val[64];
	size_t	i;

	out_printf(o, "\"uid\":%lu,\"gid\":%lu", (unsigned long)getuid(),
	    (unsigned long)getgid());
	if (read_small("/proc/self/status", status, sizeof(status)) == -1)
		status[0] = '\0';
	for (i = 0; i < sizeof(caps) / sizeof(caps[0]); i++) {
		status_field(status, caps[i][1], val, sizeof(val));
		out_printf(o, ",\"%s\":", caps[i][0]);
		if (val[0] == '\0')
			out_printf(o, "null");
		else
			out_str(o, val);
	}
	status_field(status, "NoNewPrivs", val, sizeof(val));
	out_printf(o, ",\"no_new_privs\":%s", val[0] ? val : "null");
	status_field(status, "Seccomp", val, sizeof(val));
	out_printf(o, ",\"seccomp\":%s", val[0] ? val : "null");
}

/* Whether / is read-only and unwritable, and how /tmp is mounted. */
static void
emit_mounts(struct out *o)
{
	struct mnt	 root, tmp;
	char		 path[64];
	int		 fd, fails;

	mount_lookup("/", &root);
	mount_lookup("/tmp", &tmp);
	snprintf(path, sizeof(path), "/.sandgate-probe-%ld", (long)getpid());
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	fails = fd == -1;
	if (fd != -1) {
		close(fd);
		unlink(path);
	}
	out_printf(o, ",\"root_ro\":%s,\"root_write_fails\":%s",
	    root.found && root.ro ? "true" : "false", fails ? "true" : "false");
	out_printf(o, ",\"tmp_mounted\":%s,\"tmp_noexec\":%s,"
	    "\"tmp_nosuid\":%s", tmp.found ? "true" : "false",
	    tmp.noexec ? "true" : "false", tmp.nosuid ? "true" : "false");
}

/* "key": the number, "max" or null read from a cgroup file. */
static void
emit_limit(struct out *o, const char *key, const char *path)
{
	char	 buf[128], *end;
	long long v;

	out_printf(o, ",\"%s\":", key);
	if (read_small(path, buf, sizeof(buf)) == -1) {
		out_printf(o, "null");
		return;
	}
	buf[strcspn(buf, " \n")] = '\0';
	if (strcmp(buf, "max") == 0) {
		out_printf(o, "\"max\"");
		return;
	}
	errno = 0;
	v = strtoll(buf, &end, 10);
	if (buf[0] == '\0' || *end != '\0' || errno != 0)
		out_printf(o, "null");
	else if (v < 0)
		out_printf(o, "\"max\"");	/* v1 cfs_quota_us -1 */
	else
		out_printf(o, "%lld", v);
}

/* cgroup v2 cpu.max: "QUOTA PERIOD" or "max PERIOD". */
static void
emit_cpu_v2(struct out *o)
{
	char		 buf[128], *sp, *end;
	long long	 q, per;

	if (read_small("/sys/fs/cgroup/cpu.max", buf, sizeof(buf)) == -1 ||
	    (sp = strchr(buf, ' ')) == NULL) {
		out_printf(o, ",\"cpu_quota_us\":null,\"cpu_period_us\":null");
		return;
	}
	*sp++ = '\0';
	per = strtoll(sp, &end, 10);
	if (end == sp || (*end != '\n' && *end != '\0') || per <= 0)
		per = -1;
	if (strcmp(buf, "max") == 0)
		out_printf(o, ",\"cpu_quota_us\":\"max\"");
	else {
		q = strtoll(buf, &end, 10);
		if (end == buf || *end != '\0' || q < 0)
			out_printf(o, ",\"cpu_quota_us\":null");
		else
			out_printf(o, ",\"cpu_quota_us\":%lld", q);
	}
	if (per == -1)
		out_printf(o, ",\"cpu_period_us\":null");
	else
		out_printf(o, ",\"cpu_period_us\":%lld", per);
}

/* The cgroup limits as visible from inside (v1 or v2). */
static void
emit_cgroup(struct out *o)
{
	struct stat	st;

	if (stat("/sys/fs/cgroup/memory/memory.limit_in_bytes", &st) == 0) {
		out_printf(o, ",\"cgroup\":\"v1\"");
		emit_limit(o, "memory_max",
		    "/sys/fs/cgroup/memory/memory.limit_in_bytes");
		emit_limit(o, "memsw_max",
		    "/sys/fs/cgroup/memory/memory.memsw.limit_in_bytes");
		out_printf(o, ",\"swap_max\":null");
		emit_limit(o, "pids_max", "/sys/fs/cgroup/pids/pids.max");
		emit_limit(o, "cpu_quota_us",
		    "/sys/fs/cgroup/cpu/cpu.cfs_quota_us");
		emit_limit(o, "cpu_period_us",
		    "/sys/fs/cgroup/cpu/cpu.cfs_period_us");
	} else if (stat("/sys/fs/cgroup/cgroup.controllers", &st) == 0) {
		out_printf(o, ",\"cgroup\":\"v2\"");
		emit_limit(o, "memory_max", "/sys/fs/cgroup/memory.max");
		out_printf(o, ",\"memsw_max\":null");
		emit_limit(o, "swap_max", "/sys/fs/cgroup/memory.swap.max");
		emit_limit(o, "pids_max", "/sys/fs/cgroup/pids.max");
		emit_cpu_v2(o);
	} else
		out_printf(o, ",\"cgroup\":\"none\",\"memory_max\":null,"
		    "\"memsw_max\":null,\"swap_max\":null,\"pids_max\":null,"
		    "\"cpu_quota_us\":null,\"cpu_period_us\":null");
}

/* Copy an interface name, cut to 63 bytes (the kernel allows 15). */
static void
name_copy(char dst[64], const char *src)
{
	size_t	len = strnlen(src, 63);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

/* Interfaces other than lo from /proc/net/dev ("  eth0: 123 ..."). */
static int
iface_list_proc(char names[][64], int max)
{
	char	 line[PROBE_LINE_MAX], *p, *colon;
	FILE	*fp;
	int	 n = 0;

	fp = fopen("/proc/net/dev", "re");
	if (fp == NULL)
		return -1;
	while (n < max && fgets(line, sizeof(line), fp) != NULL) {
		colon = strchr(line, ':');
		if (colon == NULL)
			continue;	/* the two header lines */
		*colon = '\0';
		for (p = line; *p == ' '; p++)
			;
		if (*p == '\0' || strcmp(p, "lo") == 0)
			continue;
		name_copy(names[n++], p);
	}
	fclose(fp);
	return n;
}

/* The same from /sys/class/net, when /proc/net is missing. */
static int
iface_list_sys(char names[][64], int max)
{
	struct dirent	*de;
	DIR		*d;
	int		 n = 0;

	d = opendir("/sys/class/net");
	if (d == NULL)
		return -1;
	while (n < max && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "lo") == 0)
			continue;
		name_copy(names[n++], de->d_name);
	}
	closedir(d);
	return n;
}

/*
 * 1 when the routing table has a default route (IPv4 /proc/net/route
 * destination 00000000, or IPv6 ::/0 in /proc/net/ipv6_route), 0 when it
 * has none, -1 when neither table can be read.
 */
static int
default_route(void)
{
	char	 line[PROBE_LINE_MAX], iface[64], dst[64];
	FILE	*fp;
	int	 found = 0, read_any = 0;

	if ((fp = fopen("/proc/net/route", "re")) != NULL) {
		read_any = 1;
		while (fgets(line, sizeof(line), fp) != NULL)
			if (sscanf(line, "%63s %63s", iface, dst) == 2 &&
			    strcmp(dst, "00000000") == 0)
				found = 1;
		fclose(fp);
	}
	if ((fp = fopen("/proc/net/ipv6_route", "re")) != NULL) {
		read_any = 1;
		while (fgets(line, sizeof(line), fp) != NULL)
			if (strncmp(line, "00000000000000000000000000000000 00 ",
			    36) == 0 && strstr(line, " lo\n") == NULL)
				found = 1;
		fclose(fp);
	}
	return read_any ? found : -1;
}

/* Network interfaces but lo, and whether a Docker socket is reachable. */
static void
emit_net(struct out *o)
{
	static char	names[PROBE_IFACES][64];
	struct stat	st;
	int		n, i;

	n = iface_list_proc(names, PROBE_IFACES);
	if (n == -1)
		n = iface_list_sys(names, PROBE_IFACES);
	out_printf(o, ",\"net_ifaces\":");
	if (n == -1)
		out_printf(o, "null");
	else {
		out_printf(o, "[");
		for (i = 0; i < n; i++) {
			if (i > 0)
				out_printf(o, ",");
			out_str(o, names[i]);
		}
		out_printf(o, "]");
	}
	n = default_route();
	out_printf(o, ",\"default_route\":%s", n == -1 ? "null" :
	    n ? "true" : "false");
	out_printf(o, ",\"docker_sock\":%s",
	    lstat("/var/run/docker.sock", &st) == 0 ||
	    lstat("/run/docker.sock", &st) == 0 ? "true" : "false");
}

/* A short name for the errnos a sealed network answers with. */
static const char *
errno_word(int e)
{
	switch (e) {
	case EPERM:		return "EPERM";
	case EACCES:		return "EACCES";
	case EHOSTUNREACH:	return "EHOSTUNREACH";
	case ENETUNREACH:	return "ENETUNREACH";
	case ECONNREFUSED:	return "ECONNREFUSED";
	case ETIMEDOUT:		return "ETIMEDOUT";
	default:		return "error";
	}
}

/*
 * Ask Docker's embedded resolver for a name over UDP: "answered", "silent"
 * (no answer in time) or the errno word of the refusal.
 */
static const char *
seal_dns(void)
{
	static const unsigned char query[] = {
		0x5a, 0x17, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00,
		0x00, 0x00, 7, 's', 'a', 'n', 'd', 'g', 'a', 't', 'e', 5, 'p',
		'r', 'o', 'b', 'e', 0, 0x00, 0x01, 0x00, 0x01,
	};
	struct sockaddr_in	 sin;
	struct pollfd		 pfd;
	unsigned char		 ans[512];
	const char		*res;
	int			 fd;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(53);
	inet_pton(AF_INET, PROBE_DNS_IP, &sin.sin_addr);
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return errno_word(errno);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    send(fd, query, sizeof(query), 0) == -1) {
		res = errno_word(errno);
		close(fd);
		return res;
	}
	pfd.fd = fd;
	pfd.events = POLLIN;
	if (poll(&pfd, 1, PROBE_NET_WAIT) <= 0)
		res = "silent";
	else if (recv(fd, ans, sizeof(ans), 0) == -1)
		res = errno_word(errno);
	else
		res = "answered";
	close(fd);
	return res;
}

/* Connect to IP:PORT over TCP: "connected", "silent" or the errno word. */
static const char *
seal_connect(const char *target)
{
	struct sockaddr_in	 sin;
	struct pollfd		 pfd;
	const char		*colon;
	char			 ip[INET_ADDRSTRLEN];
	socklen_t		 len = sizeof(int);
	int			 fd, err = 0;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	if ((colon = strrchr(target, ':')) == NULL ||
	    (size_t)(colon - target) >= sizeof(ip))
		return "bad target";
	memcpy(ip, target, (size_t)(colon - target));
	ip[colon - target] = '\0';
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		return "bad target";
	sin.sin_port = htons((unsigned short)atoi(colon + 1));
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return errno_word(errno);
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0) {
		close(fd);
		return "connected";
	}
	if (errno != EINPROGRESS) {
		err = errno;
		close(fd);
		return errno_word(err);
	}
	pfd.fd = fd;
	pfd.events = POLLOUT;
	if (poll(&pfd, 1, PROBE_NET_WAIT) <= 0) {
		close(fd);
		return "silent";
	}
	getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
	close(fd);
	return err == 0 ? "connected" : errno_word(err);
}

/* "seal": what Docker's resolver and a neighbour's port answer. */
static void
emit_seal(struct out *o, const char *target)
{
	out_printf(o, ",\"seal\":{\"dns\":");
	out_str(o, seal_dns());
	out_printf(o, ",\"neighbour\":");
	out_str(o, seal_connect(target));
	out_printf(o, "}");
}

/*
 * Whether the container's init can be written from here (/proc/1/mem
 * opened for writing: "opened", else the errno word; "self" when this is
 * PID 1), and whether seccomp lets personality(READ_IMPLIES_EXEC) through
 * ("allowed", else the errno word).
 */
static void
emit_isolation(struct out *o)
{
	const char	*w;
	int		 fd, prev;

	if (getpid() == 1)
		w = "self";
	else if ((fd = open("/proc/1/mem", O_RDWR | O_CLOEXEC)) == -1)
		w = errno_word(errno);
	else {
		close(fd);
		w = "opened";
	}
	out_printf(o, ",\"init_mem\":");
	out_str(o, w);
	if ((prev = personality(SG_SECCOMP_READ_IMPLIES_EXEC)) == -1)
		w = errno_word(errno);
	else {
		personality((unsigned long)prev);
		w = "allowed";
	}
	out_printf(o, ",\"personality_rie\":");
	out_str(o, w);
}

static int
probe_check_main(const char *seal)
{
	static struct out	o;

	out_printf(&o, "{\"probe\":1,");
	emit_status(&o);
	emit_isolation(&o);
	emit_mounts(&o);
	emit_cgroup(&o);
	emit_net(&o);
	if (seal != NULL)
		emit_seal(&o, seal);
	out_printf(&o, "}\n");
	if (o.overflow) {
		fputs("sandgate-probe: output too large\n", stderr);
		return 1;
	}
	if (fwrite(o.buf, 1, o.len, stdout) != o.len || fflush(stdout) != 0)
		return 1;
	return 0;
}

/*
 * 1 when PID 1 is the idle probe sandgate started: its command line is
 * exactly PROBE_CONTAINER_PATH " idle". PID 1 is not dumpable, so no
 * other process can have changed its memory (the probe's check at create
 * shows /proc/1/mem refused), and /proc/1/exe is not readable by the
 * sandbox's user for the same reason; the command line is.
 */
static int
reap_init_is_probe(void)
{
	static const char	want[] = "/.sandgate/probe\0idle\0";
	char			buf[sizeof(want) + 1];
	ssize_t			n;
	int			fd;

	if ((fd = open("/proc/1/cmdline", O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf));
	close(fd);
	return n == (ssize_t)sizeof(want) - 1 &&
	    memcmp(buf, want, sizeof(want) - 1) == 0;
}

/*
 * The reaper runs as the init's uid, which no command has, from a
 * privileged exec (the only way Docker's exec API gives an exec
 * capabilities; gVisor hands them to the process it starts even for a
 * uid other than 0): it keeps CAP_KILL (to signal the command's
 * processes) and CAP_SYS_PTRACE (to read their markers) and drops every
 * other one, can't be dumped and gains nothing on exec. 0, or -1 when
 * CAP_KILL is not there: a reaper that can kill nothing must not say
 * that nothing was left.
 */
static int
reap_caps(void)
{
	struct __user_cap_header_struct	h;
	struct __user_cap_data_struct	d[2];
	uint32_t			keep = (1u << CAP_KILL) |
					    (1u << CAP_SYS_PTRACE);

	memset(&h, 0, sizeof(h));
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	d[0].effective = d[0].permitted = keep;
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1 ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    syscall(SYS_capset, &h, d) == -1)
		return -1;
	memset(d, 0, sizeof(d));
	if (syscall(SYS_capget, &h, d) == -1)
		return -1;
	if ((d[0].effective & keep) != keep) {
		errno = EPERM;
		return -1;
	}
	return 0;
}

/*
 * 1 when the process's real uid is the reaper's own: the init's uid,
 * which no command has, so the init or another exec's reaper.
 */
static int
reap_own_uid(const char *pid)
{
	char	path[64], status[PROBE_FILE_MAX], uid[64];

	snprintf(path, sizeof(path), "/proc/%s/status", pid);
	if (read_small(path, status, sizeof(status)) == -1)
		return 0;
	status_field(status, "Uid", uid, sizeof(uid));
	return uid[0] != '\0' && strtoul(uid, NULL, 10) ==
	    (unsigned long)getuid();
}

/*
 * 1 when a process must be spared: it has the reaper's uid (the init,
 * another reaper), it carries the marker of a run listed in active (not
 * this one), or it is gone or dead (a zombie with no live thread; a
 * leader that exited while a thread runs is alive). A process whose
 * marker can't be read is not spared.
 */
static int
reap_spare(const char *pid, int nactive, char **active)
{
	struct procstat	 ps;
	char		 mark[64];
	int		 k, r;

	if (procstat_read(atoi(pid), &ps) == -1 || procstat_dead(&ps) ||
	    reap_own_uid(pid))
		return 1;
	r = procstat_run_marker(atoi(pid), mark, sizeof(mark));
	for (k = 0; r == 1 && k < nactive; k++)
		if (strcmp(mark, active[k]) == 0)
			return 1;
	return 0;	/* this run's, nobody's, unreadable, or not in progress */
}

/* One pass over /proc; the number of processes signalled. */
static int
reap_round(const char *run, int nactive, char **active, int init)
{
	struct dirent	*de;
	DIR		*d;
	char		 self[32];
	int		 n = 0;

	(void)run;	/* its processes are neither spared nor unmarked */
	snprintf(self, sizeof(self), "%d", (int)getpid());
	if ((d = opendir("/proc")) == NULL)
		return -1;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9' ||
		    strspn(de->d_name, "0123456789") != strlen(de->d_name) ||
		    (init && strcmp(de->d_name, "1") == 0) ||
		    strcmp(de->d_name, self) == 0 ||
		    reap_spare(de->d_name, nactive, active))
			continue;
		if (kill(atoi(de->d_name), SIGKILL) == 0)
			n++;
	}
	closedir(d);
	return n;
}

static int
probe_reap_main(int argc, char **argv)
{
	struct timespec	ts = { 0, 20 * 1000 * 1000 };
	int		round, n, total = 0, init = reap_init_is_probe();

	if (reap_caps() == -1) {
		fprintf(stderr, "sandgate-probe: reap: cannot keep CAP_KILL "
		    "(%s): not run as a privileged exec\n", strerror(errno));
		return 125;
	}
	for (round = 0; round < REAP_ROUNDS; round++) {
		if ((n = reap_round(argv[0], argc - 1, argv + 1, init)) == -1) {
			fputs("sandgate-probe: cannot read /proc\n", stderr);
			return 125;
		}
		if (n == 0)
			break;
		total += n;
		nanosleep(&ts, NULL);
	}
	printf("%d\n", total);
	if (n != 0) {
		fputs("sandgate-probe: processes still run after every kill "
		    "round\n", stderr);
		return 101;
	}
	return total > 100 ? 100 : total;
}

/* The allowlist of seccomp_profile.h into ctx (default: EPERM). */
static int
run_filter_rules(scmp_filter_ctx ctx)
{
	static const char *const allow[] = { SG_SECCOMP_ALLOW_NAMES };
	static const unsigned long personas[] = { SG_SECCOMP_PERSONAS };
	static const unsigned long families[] = { SG_SECCOMP_SOCKET_ABOVE };
	size_t	i;
	int	nr, rc = 0;

	for (i = 0; i < sizeof(allow) / sizeof(allow[0]) && rc == 0; i++) {
		/* names this architecture lacks have nothing to allow */
		if ((nr = seccomp_syscall_resolve_name(allow[i])) ==
		    __NR_SCMP_ERROR || nr < 0)
			continue;
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	}
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
		    SCMP_A0(SCMP_CMP_MASKED_EQ, SG_SECCOMP_CLONE_NS_MASK, 0));
	if (rc == 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_LT, SG_SECCOMP_SOCKET_REFUSED, 0));
	for (i = 0; i < sizeof(families) / sizeof(families[0]) && rc == 0;
	    i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 1,
		    SCMP_A0(SCMP_CMP_EQ, families[i], 0));
	for (i = 0; i < sizeof(personas) / sizeof(personas[0]) && rc == 0;
	    i++)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(personality),
		    1, SCMP_A0(SCMP_CMP_EQ, personas[i], 0));
	if (rc == 0 && (nr = seccomp_syscall_resolve_name("clone3")) >= 0)
		rc = seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0);
	return rc;
}

/* Exec argv; on failure the shell's status: 127 not found, else 126. */
static int
run_exec(char **argv)
{
	execvp(argv[0], argv);
	fprintf(stderr, "sandgate-probe: %s: %s\n", argv[0], strerror(errno));
	return errno == ENOENT ? 127 : 126;
}

/* no_new_privs, the filter of seccomp_profile.h, nproc, then exec argv. */
static int
probe_run_main(long nproc, char **argv)
{
	struct rlimit	rl;
	scmp_filter_ctx	ctx;
	int		rc;

	rl.rlim_cur = rl.rlim_max = (rlim_t)nproc;
	if (nproc > 0 && setrlimit(RLIMIT_NPROC, &rl) == -1) {
		fprintf(stderr, "sandgate-probe: cannot limit processes to "
		    "%ld: %s\n", nproc, strerror(errno));
		return 126;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1 ||
	    (ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM))) == NULL) {
		fputs("sandgate-probe: cannot set up the seccomp filter\n",
		    stderr);
		return 126;
	}
	rc = run_filter_rules(ctx);
	if (rc == 0)
		rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc != 0) {
		fprintf(stderr, "sandgate-probe: cannot load the seccomp "
		    "filter: %s\n", strerror(-rc));
		return 126;
	}
	return run_exec(argv);
}

/* 1 when /proc/self/cgroup puts us in a memory cgroup ".../name". */
static int
join_in(const char *name)
{
	char	 buf[PROBE_FILE_MAX], *line, *next, *ctl, *path;
	size_t	 plen, nlen = strlen(name);

	if (read_small("/proc/self/cgroup", buf, sizeof(buf)) == -1)
		return 0;
	for (line = buf; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if ((ctl = strchr(line, ':')) == NULL ||
		    (path = strchr(++ctl, ':')) == NULL)
			continue;
		*path++ = '\0';
		if (strcmp(ctl, "memory") != 0)
			continue;
		plen = strlen(path);
		return plen > nlen && path[plen - nlen - 1] == '/' &&
		    strcmp(path + plen - nlen, name) == 0;
	}
	return 0;
}

/* The monotonic clock in microseconds. */
static long long
join_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/*
 * Wait to be moved into the memory cgroup name, then exec argv. Not
 * dumpable while it waits: it runs as the sandbox user in the
 * container's own memory cgroup, beside the init, and a payload another
 * exec wrote through /proc/PID/mem would fill that cgroup (atk16s F3).
 * The execve of the command makes it dumpable again, as any command.
 *
 * sandgate sends PROCSTAT_JOIN_WAKE right after the move, so the wait
 * ends then rather than at the next poll. The signal is blocked and
 * taken with sigtimedwait(2), the poll's interval its timeout: a process
 * of the sandbox runs as the same uid and can send it too, so a wake
 * only makes the probe look again. It execs only once /proc/self/cgroup
 * shows the move, a spoofed wake cannot kill it (blocked, and ignored by
 * default before it is blocked), and the 30 s limit runs on the
 * monotonic clock, so a flood of wakes does not end the wait sooner.
 * The mask is put back before execve (a blocked mask is inherited
 * across it), after a pending wake was taken, so the command starts as
 * it would without the join.
 */
static int
probe_join_main(const char *name, char **argv)
{
	struct timespec	ts = { 0, 0 };
	sigset_t	wake, saved;
	long		poll_us = JOIN_POLL_MIN_US;
	long long	end;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		return 126;
	sigemptyset(&wake);
	sigaddset(&wake, PROCSTAT_JOIN_WAKE);
	if (sigprocmask(SIG_BLOCK, &wake, &saved) == -1)
		return 126;
	end = join_now_us() + JOIN_WAIT_MS * 1000LL;
	/*
	 * The host moves us about a millisecond after we start: short
	 * polls first, so the command does not wait a whole 2 ms poll for
	 * it when no wake comes, then longer ones while the host is slow.
	 */
	while (!join_in(name)) {
		if (join_now_us() >= end) {
			fprintf(stderr, "sandgate-probe: not moved into the "
			    "commands' memory cgroup '%s' within %d ms\n",
			    name, JOIN_WAIT_MS);
			return 126;
		}
		ts.tv_nsec = poll_us * 1000L;
		sigtimedwait(&wake, NULL, &ts);
		if (poll_us < JOIN_POLL_MAX_US)
			poll_us = poll_us * 2 > JOIN_POLL_MAX_US ?
			    JOIN_POLL_MAX_US : poll_us * 2;
	}
	ts.tv_nsec = 0;
	sigtimedwait(&wake, NULL, &ts);
	if (sigprocmask(SIG_SETMASK, &saved, NULL) == -1)
		return 126;
	return run_exec(argv);
}

/*
 * SIGTERM or SIGINT from outside the container ends the idle probe, and
 * with it the container: docker stop's kill(2) (runc), or gVisor's own
 * delivery (runsc), arrives with si_code SI_USER and si_pid 0 (the sender
 * is not in this pid namespace); SI_KERNEL is the kernel's. A process of
 * the sandbox can't forge either: its kill(2) carries its pid here, and
 * rt_sigqueueinfo(2), rt_tgsigqueueinfo(2) and pidfd_send_signal(2) to
 * another process refuse si_code >= 0 (EPERM), so what they send has a
 * negative si_code (SI_QUEUE, ...), whatever si_pid it claims. F_SETSIG
 * (fcntl) signals carry a POLL_* code. All those are ignored.
 *
 * The siginfo alone can't tell: when the receiver's uid is out of
 * pending-signal room (RLIMIT_SIGPENDING), the kernel queues the signal
 * without its info and hands over SI_USER with si_pid 0. What keeps a
 * command from stopping the container under the other execs is the
 * uid: sandgate starts this process as a uid no command has
 * (sandbox.h), so their kill(2), sigqueue and prlimit(2) on it all fail
 * with EPERM and its pending-signal count is its own.
 */
static void
idle_term(int sig, siginfo_t *si, void *ctx)
{
	(void)sig;
	(void)ctx;
	if (si == NULL || (si->si_pid == 0 && (si->si_code == SI_USER ||
	    si->si_code == SI_KERNEL)))
		_exit(0);
}

/* Reap every exited child: exec'd processes that outlive their parent
 * are re-parented to us, and zombies would count against pids.max. */
static void
idle_chld(int sig)
{
	int	saved = errno;

	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	errno = saved;
}

static void
probe_idle_main(void)
{
	struct sigaction	sa;
	sigset_t		all, wait_mask;

	/*
	 * Not dumpable: /proc/1/mem, environ, fd/ and ptrace of this
	 * process need CAP_SYS_PTRACE, which no sandbox process has.
	 */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		_exit(126);
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	memset(&sa, 0, sizeof(sa));
	sigfillset(&sa.sa_mask);
	sa.sa_sigaction = idle_term;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = idle_chld;
	sa.sa_flags = SA_RESTART | SA_NOCLDSTOP;
	sigaction(SIGCHLD, &sa, NULL);
	/* Sleep with only these three deliverable; the rest stay blocked. */
	sigfillset(&wait_mask);
	sigdelset(&wait_mask, SIGTERM);
	sigdelset(&wait_mask, SIGINT);
	sigdelset(&wait_mask, SIGCHLD);
	for (;;)
		sigsuspend(&wait_mask);
}

int
main(int argc, char **argv)
{
	if (argc == 2 && strcmp(argv[1], "check") == 0)
		return probe_check_main(NULL);
	if (argc == 4 && strcmp(argv[1], "check") == 0 &&
	    strcmp(argv[2], "--seal") == 0)
		return probe_check_main(argv[3]);
	if (argc == 2 && strcmp(argv[1], "idle") == 0)
		probe_idle_main();
	if (argc >= 3 && strcmp(argv[1], "reap") == 0)
		return probe_reap_main(argc - 2, argv + 2);
	if (argc >= 5 && strcmp(argv[1], "join") == 0 &&
	    strcmp(argv[3], "--") == 0)
		return probe_join_main(argv[2], argv + 4);
	if (argc >= 4 && strcmp(argv[1], "run") == 0 &&
	    strcmp(argv[2], "--") == 0)
		return probe_run_main(0, argv + 3);
	if (argc >= 6 && strcmp(argv[1], "run") == 0 &&
	    strcmp(argv[2], "--nproc") == 0 && atol(argv[3]) > 0 &&
	    strcmp(argv[4], "--") == 0)
		return probe_run_main(atol(argv[3]), argv + 5);
	fputs("usage: sandgate-probe check [--seal IP:PORT] | idle | "
	    "run [--nproc N] -- CMD [ARG...] | join NAME -- CMD [ARG...] | "
	    "reap RUN [ACTIVE...]\n", stderr);
	return 2;
}
