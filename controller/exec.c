/* exec.c: one command in a sandbox container, accounted for; see exec.h. */
#include <sys/inotify.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "docker.h"
#include "cgroup.h"
#include "evidence.h"
#include "exec.h"
#include "log.h"
#include "oomlog.h"
#include "ownmark.h"
#include "probe.h"
#include "procstat.h"
#include "rtpid.h"
#include "sandbox.h"
#include "sglimits.h"
#include "util.h"

#define EXEC_KILL_GRACE_US	(5ull * 1000 * 1000)	/* after a kill */
#define EXEC_REKILL_US		(250ull * 1000)	/* kills in the grace: runc */
#define EXEC_REKILL_INSIDE_US	(1000ull * 1000)	/* gVisor: a docker exec */
#define EXEC_OWN_MAX		1024	/* pids remembered per exec */
#define EXEC_OOM_PIDS		256	/* OOM kills looked at per exec */
#define EXEC_REAP_WAIT_MS	10000	/* for the reaper inside gVisor */
#define EXEC_SETTLE_ROUNDS	100	/* kill rounds after the first ... */
#define EXEC_SETTLE_MS		30	/* ... this far apart */
#define EXEC_GONE_MS		500	/* for the init after an exit 137 (128: gVisor) */
/*
 * The probe starts the command only once it was moved into its memory
 * cgroup: tick this often until then, for at most EXEC_JOIN_FAST_MS, so
 * an exec does not wait a whole DOCKER_TICK_MS for its start. While a
 * watch on runc's bundle (exec_join_watch) waits for the exec's pid
 * file, which wakes the stream's pump when it comes, the tick keeps only
 * the marker's fallback going and runs every EXEC_JOIN_WATCH_MS: ticking
 * every 2 ms there took CPU from runc, containerd and dockerd, which do
 * the exec's work meanwhile.
 */
#define EXEC_JOIN_TICK_MS	2
#define EXEC_JOIN_WATCH_MS	15
#define EXEC_JOIN_FAST_MS	2000
/*
 * With the runtime's pid files (rtpid.h), how long after the join was
 * seen exec inspect waits for runc's file before Docker is asked.
 */
#define EXEC_RTPID_WAIT_MS	100
#define EXEC_FREEZE_MS		200	/* for the kill's freeze to finish */
#define EXEC_DIED_WAIT_MS	3000	/* for Docker to record a memory kill */
#define EXEC_DIED_POLL_MS	100
#define EXEC_LIVE_HIGH		(256 * 1024)	/* held for a reader: pause */
#define EXEC_DRAIN_IDLE_MS	10000	/* a reader taking nothing at the end */

/* How the live copy is written without blocking (exec_live_open). */
enum exec_live_mode {
	EXEC_LIVE_PLAIN,	/* non-blocking fd of our own, or a file */
	EXEC_LIVE_SOCKET,	/* send(MSG_DONTWAIT) */
	EXEC_LIVE_POLL,		/* poll, then at most PIPE_BUF bytes */
};

/* One stream's sinks. */
struct exec_sink {
	struct exec_capture	cap;
	int			evfd;		/* evidence file or -1 */
	unsigned long long	evlen, evcap;
	const char		*evdir;		/* the evidence folder */
	unsigned long long	evmax;		/* its cap (--disk), 0: none */
	int			evcut;		/* bytes left out of evfd */
	int			livefd;		/* live copy, or -1 */
	int			liveown;	/* livefd is ours to close */
	enum exec_live_mode	livemode;
	unsigned char		*pend;		/* what the reader did not take */
	size_t			pendlen;
	size_t			pendcap;
	unsigned long long	dropped;	/* live bytes given up */
};

/* The container's init as sandgate started it (exec_init_read). */
struct exec_init {
	int			pid;
	unsigned long long	start;
	dev_t			dev;
	ino_t			ino;
	int			known;
};

/*
 * How long after it started another exec's `runc init` is spared by a
 * kill (exec_other_start): runc's take tens of ms; one older is taken.
 */
#define EXEC_START_SPARE_MS	2000

/* State of one exec while its output streams. */
struct exec_state {
	struct docker		*d;
	const char		*cid;
	int			 pid;
	const struct exec_opts	*o;
	struct exec_result	*res;
	struct cgroup		 cg;
	struct exec_init	 init;
	struct exec_sink	 sink[3];	/* [1] stdout, [2] stderr */
	uint64_t		 t0;
	uint64_t		 deadline;
	uint64_t		 grace;		/* 0 until a kill happened */
	uint64_t		 rekill_due;	/* the next kill in the grace */
	int			 died;		/* the container's init is gone */
	int			 kmsg;		/* oomlog_open(), or -1 */
	int			 own[EXEC_OWN_MAX]; /* runc: pids seen as
						   this run's (exec_own_sample) */
	size_t			 n_own;
	int			 own_full;	/* one was seen with own full */
	unsigned long long	 pids_limit;	/* the cgroup's pids.max, 0: none */
	unsigned long long	 pids_max_seen;	/* pids.events max, last read */
	char			 cmds[PATH_MAX]; /* cgroup_cmds_setup's, or "" */
	int			 moved;		/* the first process is in cmds */
	int			 released;	/* ...moved there by the move that
						   lets its command start */
	const char		*eid;		/* the exec's id (Docker's) */
	int			 join_pid;	/* its first process, 0: not known */
	char			 bundle[PATH_MAX]; /* runc's (rtpid.h), or "" */
	uint64_t		 join_seen;	/* when its marker was (µs) */
	uint64_t		 join_fast;	/* fast ticks until then (µs) */
	int			 join_watch;	/* exec_watch_fd, or -1 */
	int			 join_wd;	/* its watch of bundle, or -1 */
	uint64_t		 tick_due;	/* the next tick's time (µs) */
	int			 idled;		/* o->idle was called */
};

static volatile sig_atomic_t	exec_sig;

static void	exec_on_signal(int);
static int	exec_init_gone(const struct exec_state *, int);
static void	exec_died(struct exec_state *);
static size_t	exec_utf8_seq(const unsigned char *, size_t);
static int	exec_active_read(int, const char *, char *, size_t);
static int	exec_active_in(int, const char *, const char *);
static void	exec_where(int, char *, size_t);
static int	exec_active_name(const char *);
static int	exec_run_active(const char *marker);
static void	exec_init_read(int, struct exec_init *);
static int	exec_is_init(const struct exec_init *, int);
static int	exec_doomed(const struct cgroup *, const struct exec_init *, int,
		    const char *, int **, size_t *);
static int	exec_has_leftovers(const struct cgroup *,
		    const struct exec_init *, int, const char *);
static int	exec_parent_outside(int, int);
static int	exec_starts(const struct exec_state *);
static int	exec_other_start(const struct exec_init *, int,
		    const struct procstat *, const char *, int *);
static int	exec_mark_active(const struct exec_opts *, char *, size_t);
static void	exec_stop_leftovers(struct exec_state *);
static void	exec_user(const struct exec_opts *, char *, size_t);
static int	exec_kill_inside(struct exec_state *, char **);
static int	exec_kill_round(struct exec_state *, const int *, size_t,
		    size_t *, char **);
static int	exec_kill_settle(struct exec_state *, int *, char **);
static int	exec_freeze(struct exec_state *);
static int	exec_thaw(struct exec_state *, char **);
static int	exec_kill(struct exec_state *, char **);
static void	exec_live_open(struct exec_sink *, int);
static ssize_t	exec_live_write(struct exec_sink *, const unsigned char *,
		    size_t);
static void	exec_live_queue(struct exec_sink *, const unsigned char *,
		    size_t);
static void	exec_live_flush(struct exec_sink *, int);
static int	exec_ready(void *, int *);
static void	exec_live_drain(struct exec_state *);
static void	exec_begin(struct exec_state *, struct cgroup_counters *);
static void	exec_notice(json_t *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	exec_notices_blocked(json_t *, json_t *);

/*
 * The folder where each run in progress has a "<run id>.active" file (the
 * sandbox's runs/). A process marked with another run is spared by a kill
 * only while that run is in progress: a command can't shield a child by
 * writing some other marker into its environment.
 */
static const char	*exec_active_dir;
/*
 * Where this run executes: "init PID", its container's init (the second
 * line of each .active file). A process marked with a run that
 * goes on in another container (a --fresh exec's, or the session's seen
 * from a fresh one) is no run's of this container: it shields nothing.
 */
static char		 exec_active_where[48];
/*
 * The inotify descriptor of the bundle watches (exec_join_watch), made
 * once and kept for the process's life: closing one waits for the
 * kernel's fsnotify grace period (flush of its mark reaper; up to 14 ms
 * measured), which in the middle of an exec holds up its stream and its
 * record. A watch removed once the join was moved is freed in the
 * background, long before the process exits.
 */
static int		 exec_watch_fd = -1;
static int	exec_data(void *, int, const unsigned char *, size_t);
static int	exec_tick(void *);
static int	exec_wakefd(void *);
static int	exec_tick_next(const struct exec_state *);
static void	exec_join_watch(struct exec_state *);
static void	exec_join_unwatch(struct exec_state *);
static int	exec_join_woken(struct exec_state *);
static void	exec_stop(struct exec_state *, int);
static json_t	*exec_spec(const struct exec_opts *, int);
static void	exec_sink_open(struct exec_sink *, const struct exec_opts *,
		    int);
static void	exec_sinks_close(struct exec_state *);
static int	exec_conclude(struct exec_state *, const struct cgroup_counters *,
		    const char *, char **);
static void	exec_finish(struct exec_state *, const struct cgroup_counters *,
		    int);

void
exec_capture_init(struct exec_capture *c, size_t cap)
{
	memset(c, 0, sizeof(*c));
	c->half = cap / 2;
	c->tailsize = cap - c->half;
}

int
exec_capture_add(struct exec_capture *c, const unsigned char *p, size_t n)
{
	size_t	 take, ncap;
	void	*np;

	c->total += n;
	if (c->headlen < c->half) {
		take = n < c->half - c->headlen ? n : c->half - c->headlen;
		if (c->headlen + take > c->headcap) {
			ncap = c->headcap ? c->headcap : 4096;
			while (ncap < c->headlen + take)
				ncap *= 2;
			if (ncap > c->half)
				ncap = c->half;
			if ((np = realloc(c->head, ncap)) == NULL)
				return -1;
			c->head = np;
			c->headcap = ncap;
		}
		memcpy(c->head + c->headlen, p, take);
		c->headlen += take;
		p += take;
		n -= take;
	}
	if (n == 0 || c->tailsize == 0)
		return 0;
	if (c->tail == NULL && (c->tail = malloc(c->tailsize)) == NULL)
		return -1;
	if (n > c->tailsize) {		/* only the last tailsize bytes stay */
		p += n - c->tailsize;
		n = c->tailsize;
	}
	while (n > 0) {
		take = c->tailsize - c->tailpos;
		if (take > n)
			take = n;
		memcpy(c->tail + c->tailpos, p, take);
		c->tailpos = (c->tailpos + take) % c->tailsize;
		c->taillen = c->taillen + take > c->tailsize ? c->tailsize :
		    c->taillen + take;
		p += take;
		n -= take;
	}
	return 0;
}

char *
exec_capture_text(const struct exec_capture *c, size_t *len,
    unsigned long long *cut)
{
	char	 marker[64];
	size_t	 mlen = 0, start, first;
	char	*s;

	*cut = c->total - c->headlen - c->taillen;
	if (*cut > 0)
		mlen = (size_t)snprintf(marker, sizeof(marker),
		    "\n[sandgate: %llu bytes cut]\n", *cut);
	if ((s = malloc(c->headlen + mlen + c->taillen + 1)) == NULL)
		return NULL;
	if (c->headlen > 0)
		memcpy(s, c->head, c->headlen);
	memcpy(s + c->headlen, marker, mlen);
	/* the ring's oldest byte is at tailpos once it has wrapped */
	start = c->taillen == c->tailsize ? c->tailpos : 0;
	first = c->tailsize - start < c->taillen ? c->tailsize - start :
	    c->taillen;
	if (first > 0)
		memcpy(s + c->headlen + mlen, c->tail + start, first);
	if (c->taillen > first)
		memcpy(s + c->headlen + mlen + first, c->tail,
		    c->taillen - first);
	*len = c->headlen + mlen + c->taillen;
	s[*len] = '\0';
	return s;
}

void
exec_capture_release(struct exec_capture *c)
{
	free(c->head);
	free(c->tail);
	memset(c, 0, sizeof(*c));
}

/* Length of the valid UTF-8 sequence at p (RFC 3629 table), 0 if none. */
static size_t
exec_utf8_seq(const unsigned char *p, size_t n)
{
	size_t		need, i;
	unsigned	lo = 0x80, hi = 0xbf;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		need = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		need = 3;
		if (p[0] == 0xe0)
			lo = 0xa0;		/* overlong */
		else if (p[0] == 0xed)
			hi = 0x9f;		/* surrogates */
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		need = 4;
		if (p[0] == 0xf0)
			lo = 0x90;
		else if (p[0] == 0xf4)
			hi = 0x8f;		/* past U+10FFFF */
	} else
		return 0;
	if (n < need || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < need; i++) {
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	}
	return need;
}

char *
exec_utf8_clean(const char *buf, size_t len, size_t *outlen)
{
	const unsigned char	*p = (const unsigned char *)buf;
	char			*s;
	size_t			 i = 0, o = 0, k;

	if (len > (SIZE_MAX - 1) / 3 || (s = malloc(len * 3 + 1)) == NULL)
		return NULL;
	while (i < len) {
		k = exec_utf8_seq(p + i, len - i);
		if (k == 0) {
			memcpy(s + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
			continue;
		}
		memcpy(s + o, p + i, k);
		o += k;
		i += k;
	}
	s[o] = '\0';
	*outlen = o;
	return s;
}

static void
exec_on_signal(int sig)
{
	exec_sig = sig;
}

void
exec_signals_install(void)
{
	struct sigaction	sa;

	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = exec_on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sa.sa_handler = SIG_IGN;
	sigaction(SIGPIPE, &sa, NULL);
}

int
exec_signal_pending(void)
{
	return exec_sig;
}

/*
 * 1 when the owner of the marker file name (in the folder dirfd) still
 * runs: the sandgate process that made it holds it locked (ownmark.h),
 * or the owner it names on its first line ("PID START PIDNS BOOT UID")
 * runs (procstat_owner_alive). where (unless NULL) gets its second line,
 * the container the run executes in ("" when there is none).
 */
static int
exec_active_read(int dirfd, const char *name, char *where, size_t wsize)
{
	char			 buf[PROCSTAT_OWNER_MAX + 64], *nl;
	ssize_t			 n;
	int			 fd, held;

	if (where != NULL)
		where[0] = '\0';
	if ((fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	held = ownmark_held(fd);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	if ((nl = strchr(buf, '\n')) != NULL) {
		if (where != NULL)
			snprintf(where, wsize, "%.*s", (int)strcspn(nl + 1,
			    "\n"), nl + 1);
		nl[1] = '\0';
	}
	if (held == 1)
		return 1;
	return n > 0 && procstat_owner_alive(buf);
}

/* 1 when the marker file name in dirfd is live and its run is in where. */
static int
exec_active_in(int dirfd, const char *name, const char *where)
{
	char	here[sizeof(exec_active_where)];

	return exec_active_read(dirfd, name, here, sizeof(here)) &&
	    here[0] != '\0' && strcmp(here, where) == 0;
}

/* 1 when name is "<run id>.active" (run ids: run_ and 24 hex digits). */
static int
exec_active_name(const char *name)
{
	size_t	i;

	if (strncmp(name, "run_", 4) != 0 || strlen(name) != STATE_ID_LEN + 7 ||
	    strcmp(name + STATE_ID_LEN, ".active") != 0)
		return 0;
	for (i = 4; i < STATE_ID_LEN; i++)
		if (!((name[i] >= '0' && name[i] <= '9') ||
		    (name[i] >= 'a' && name[i] <= 'f')))
			return 0;
	return 1;
}

/*
 * 1 when marker names a run of this sandbox that is still going on in
 * this run's container: its .active file exists, the sandgate process
 * that wrote it still runs, and it names the same container.
 */
static int
exec_run_active(const char *marker)
{
	char	name[STATE_ID_LEN + 8];
	int	dfd, rv;

	if (exec_active_dir == NULL || strlen(marker) != STATE_ID_LEN)
		return 0;
	snprintf(name, sizeof(name), "%s.active", marker);
	if (!exec_active_name(name) || (dfd = open(exec_active_dir,
	    O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1)
		return 0;
	rv = exec_active_in(dfd, name, exec_active_where);
	close(dfd);
	return rv;
}

int
exec_active_sweep(const char *runs, int dry,
    void (*gone)(const char *, void *), void *arg)
{
	struct dirent	*de;
	DIR		*d;
	char		 run[STATE_ID_LEN + 1];
	int		 fd, n = 0;

	if ((fd = open(runs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (!exec_active_name(de->d_name) ||
		    exec_active_read(fd, de->d_name, NULL, 0))
			continue;
		if (dry || unlinkat(fd, de->d_name, 0) == 0)
			n++;
		if (gone != NULL) {
			memcpy(run, de->d_name, STATE_ID_LEN);
			run[STATE_ID_LEN] = '\0';
			gone(run, arg);
		}
	}
	closedir(d);
	return n;
}

json_t *
exec_active_runs(const char *runs, const char *where, const char *self)
{
	struct dirent	*de;
	DIR		*d;
	json_t		*a;
	char		 run[STATE_ID_LEN + 1];
	int		 fd;

	if ((a = json_array()) == NULL)
		return NULL;
	if ((fd = open(runs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1)
		return a;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return a;
	}
	while ((de = readdir(d)) != NULL) {
		if (!exec_active_name(de->d_name))
			continue;
		memcpy(run, de->d_name, STATE_ID_LEN);
		run[STATE_ID_LEN] = '\0';
		if (strcmp(run, self) != 0 &&
		    exec_active_in(fd, de->d_name, where))
			json_array_append_new(a, json_string(run));
	}
	closedir(d);
	return a;
}

/*
 * The container a run is in, as its init's host pid (Docker's
 * State.Pid, the same for every sandgate that asks while it runs; two
 * containers that run at once never share it).
 */
static void
exec_where(int pid, char *buf, size_t size)
{
	snprintf(buf, size, "init %d", pid);
}

/*
 * What sandgate started as the container's init: its pid, its start
 * time, and the file mounted at PROBE_CONTAINER_PATH inside (the idle
 * probe), by device and inode. known is 0 when it could not be read.
 */
static void
exec_init_read(int pid, struct exec_init *in)
{
	struct procstat	ps;
	struct stat	st;
	char		path[PATH_MAX];

	memset(in, 0, sizeof(*in));
	in->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/root%s", pid,
	    PROBE_CONTAINER_PATH);
	if (procstat_read(pid, &ps) == -1 || stat(path, &st) == -1)
		return;
	in->start = ps.start;
	in->dev = st.st_dev;
	in->ino = st.st_ino;
	in->known = 1;
}

/*
 * 1 when pid is the init sandgate started: the same pid and start time
 * as when the exec began, running the idle probe's file. Never judged by
 * a process's place in the tree: anything else is the command's.
 */
static int
exec_is_init(const struct exec_init *in, int pid)
{
	struct procstat	ps;
	struct stat	st;
	char		path[64];

	if (!in->known || pid != in->pid)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return procstat_read(pid, &ps) == 0 && ps.start == in->start &&
	    stat(path, &st) == 0 && st.st_dev == in->dev &&
	    st.st_ino == in->ino;
}

/*
 * 1 when pid is the runtime's start of another run's exec (runc with
 * run cgroups, starts set): in no run's memory cgroup, with no marker,
 * its parent outside the container's pid namespace, while another run
 * of the container is in progress (*others: -1 not yet asked), started
 * less than EXEC_START_SPARE_MS ago (ps: its /proc/PID/stat), not a
 * leader that exited.
 * That is `runc init` before it runs the other exec's join (atk44g F1:
 * the first kill of a stop took it, and that exec failed with 137). No
 * process of the sandbox is all of that: every command runs in its
 * run's memory cgroup, which it cannot leave (the join starts it only
 * once moved there), and an orphan goes to the container's init, inside.
 * The age bounds what an exec with no run cgroup (its command's first
 * process, once unmarked) could be spared as. A start of this run's own
 * exec spared so is harmless: its join is killed unmoved when seen, and
 * one never moved starts nothing (item 35).
 */
static int
exec_other_start(const struct exec_init *init, int pid,
    const struct procstat *ps, const char *run_id, int *others)
{
	unsigned long long	 start = ps->start;
	struct timespec	 ts;
	char		 mark[64];
	json_t		*act;
	long		 hz = sysconf(_SC_CLK_TCK);

	/* a leader that exited (its threads run on) is no start */
	if (ps->state == 'Z' || hz <= 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &ts) == -1 ||
	    (unsigned long long)ts.tv_sec * hz + (unsigned long long)
	    ts.tv_nsec / (1000000000 / hz) > start + (unsigned long long)hz *
	    EXEC_START_SPARE_MS / 1000 ||
	    cgroup_cmds_run(pid, mark, sizeof(mark)) != 0 ||
	    procstat_run_marker(pid, mark, sizeof(mark)) != 0 ||
	    init->pid <= 0 || !exec_parent_outside(init->pid, pid))
		return 0;
	if (*others == -1) {
		act = exec_active_dir != NULL ? exec_active_runs(
		    exec_active_dir, exec_active_where, run_id) : NULL;
		*others = act != NULL && json_array_size(act) > 0;
		json_decref(act);
	}
	return *others;
}

/*
 * The processes a kill of run_id takes, into *out (malloc'd): every live
 * one that is not proven spared. Spared are only the init that sandgate
 * started (exec_is_init), a process of another run that is in
 * progress: by the memory cgroup it is in where runs have one (runc,
 * cgroup v1), whatever marker it carries, else by its marker; and with
 * starts (runc with run cgroups) the runtime's start of another run's
 * exec (exec_other_start). The run's own, the other unmarked ones, those
 * marked with a run that is not in progress (a forged or stale marker
 * shields nothing) and those whose marker can't be read are taken. A
 * zombie with no live thread is dead already (procstat_dead); a leader
 * that exited while a thread runs is not. -1 on error.
 */
static int
exec_doomed(const struct cgroup *cg, const struct exec_init *init,
    int starts, const char *run_id, int **out, size_t *count)
{
	struct procstat	 ps;
	char		 mark[64];
	int		*procs = NULL, r, others = -1;
	size_t		 n = 0, i;

	if (cgroup_procs(cg, &procs, &n) == -1)
		return -1;
	*count = 0;
	for (i = 0; i < n; i++) {
		if (procstat_read(procs[i], &ps) == -1 || procstat_dead(&ps) ||
		    exec_is_init(init, procs[i]))
			continue;
		/*
		 * Whose it is: the run whose memory cgroup holds it (runc:
		 * the host moved its exec's first process there, and none
		 * of the sandbox can move itself out), else the marker it
		 * carries, which any process of the sandbox may forge.
		 */
		if ((r = cgroup_cmds_run(procs[i], mark, sizeof(mark))) != 1)
			r = procstat_run_marker(procs[i], mark, sizeof(mark));
		if (r == 1 && strcmp(mark, run_id) != 0 &&
		    exec_run_active(mark))
			continue;
		if (r != 1 && starts && exec_other_start(init, procs[i], &ps,
		    run_id, &others))
			continue;
		procs[(*count)++] = procs[i];
	}
	*out = procs;
	return 0;
}

/* 1 when a kill of run_id would take a process (without pausing). */
static int
exec_has_leftovers(const struct cgroup *cg, const struct exec_init *init,
    int starts, const char *run_id)
{
	int	*procs = NULL;
	size_t	 n = 0;

	if (cg->pids[0] == '\0' || exec_doomed(cg, init, starts, run_id,
	    &procs, &n) == -1)
		return 0;
	free(procs);
	return n > 0;
}

/* "UID:GID" of the command's user. */
static void
exec_user(const struct exec_opts *o, char *buf, size_t size)
{
	unsigned long	uid = o->uid != 0 ? o->uid : SANDBOX_UID;

	snprintf(buf, size, "%lu:%lu", uid, uid);
}

/*
 * The kill from inside the sandbox: `sandgate-probe reap RUN ACTIVE...`
 * (every other run in progress in this container, exec_active_runs: no
 * cap, as a run left out would have its commands killed, atk16r7 F4)
 * as a detached exec, started and waited for within EXEC_REAP_WAIT_MS
 * (its exit status is the count). It runs as the init's uid, which no
 * command has, so that no command can kill it (atk16r7 F6), and
 * privileged, the only way Docker's exec API gives one exec a
 * capability: gVisor gives the reaper every capability inside its
 * kernel, of which it keeps CAP_KILL and CAP_SYS_PTRACE only. A container that stops meanwhile
 * (gVisor ends its sandbox when its host process limit is full) leaves
 * nothing to kill: 0, and exec_run records the stop.
 */
static int
exec_kill_inside(struct exec_state *st, char **cause)
{
	struct docker_einfo	 ei;
	json_t			*cmd, *spec, *act;
	char			*eid = NULL, user[48];
	const char		*run_id = st->o->run_id;
	uint64_t		 end = util_now_us() + EXEC_REAP_WAIT_MS * 1000ull;
	uint64_t		 saved;
	int			 rv = -1;

	memset(&ei, 0, sizeof(ei));
	cmd = json_pack("[s,s,s]", PROBE_CONTAINER_PATH, "reap", run_id);
	if (exec_active_dir != NULL && (act = exec_active_runs(exec_active_dir,
	    exec_active_where, run_id)) != NULL) {
		json_array_extend(cmd, act);
		json_decref(act);
	}
	snprintf(user, sizeof(user), "%lu:%lu", st->o->init_uid,
	    st->o->init_uid);
	saved = docker_deadline_within(st->d, EXEC_REAP_WAIT_MS);
	spec = json_pack("{s:b, s:b, s:b, s:b, s:o, s:s, s:b}", "AttachStdin",
	    0, "AttachStdout", 0, "AttachStderr", 0, "Tty", 0, "Cmd", cmd,
	    "User", user, "Privileged", 1);
	if (docker_exec_create(st->d, st->cid, spec, &eid, cause) == -1 ||
	    docker_exec_start_detached(st->d, eid, EXEC_REAP_WAIT_MS,
	    cause) == -1)
		goto out;
	while (util_now_us() < end) {
		if (kill(st->pid, 0) == -1 && errno == ESRCH) {
			rv = 0;		/* the container stopped */
			goto out;
		}
		if (docker_exec_inspect(st->d, eid, &ei, cause) == -1) {
			if (errno != ENOENT)
				goto out;
			/* gVisor forgets an exec soon after it ends */
			free(*cause);
			*cause = NULL;
			rv = 0;
			goto out;
		}
		if (!ei.running)
			break;
		usleep(20 * 1000);
	}
	if (ei.running || ei.exit_code < 0 || ei.exit_code > 100)
		util_cause(cause, "the kill inside the sandbox %s",
		    ei.running ? "did not finish" : "failed");
	else
		rv = ei.exit_code;
out:
	docker_deadline(st->d, saved);
	json_decref(spec);
	free(eid);
	return rv;
}

/*
 * gVisor, when the kill inside could not finish (its runtime may hang
 * with the host process limit full, and dockerd's answers with it): the
 * wall-clock bound is kept from outside, by SIGKILL to every host
 * process of the container's cgroup, which ends the whole sandbox as its
 * memory limit would. 0 when its init is gone, -1 otherwise. On every
 * path that calls it (timeout, signal, leftovers after a normal end) the
 * result then says so: sandbox_killed, and container_died once the init
 * is gone (atk16r7 F6).
 */
static int
exec_kill_sandbox(struct exec_state *st)
{
	int	*procs = NULL;
	size_t	 n = 0, i;

	if (cgroup_procs(&st->cg, &procs, &n) == -1)
		return -1;
	for (i = 0; i < n; i++)
		(void)kill(procs[i], SIGKILL);
	free(procs);
	st->res->sandbox_killed = 1;
	if (!exec_init_gone(st, EXEC_GONE_MS))
		return -1;
	st->res->container_died = 1;
	return 0;
}

/*
 * 1 when the run's commands are in its own memory cgroup (runc, cgroup
 * v1), so a kill may spare another exec's start (exec_other_start).
 */
static int
exec_starts(const struct exec_state *st)
{
	return !st->o->inside && st->cmds[0] != '\0';
}

/*
 * SIGKILL to what exec_doomed lists now; pids in seen (n_seen of them)
 * were counted before. The number of new processes signalled, or -1.
 */
static int
exec_kill_round(struct exec_state *st, const int *seen, size_t n_seen,
    size_t *left, char **cause)
{
	int	*procs = NULL, killed = 0;
	size_t	 n = 0, i, k;

	if (exec_doomed(&st->cg, &st->init, exec_starts(st), st->o->run_id,
	    &procs, &n) == -1) {
		util_cause(cause, "cannot read the container's processes: "
		    "%s", strerror(errno));
		return -1;
	}
	for (i = 0; i < n; i++) {
		if (kill(procs[i], SIGKILL) != 0)
			continue;
		for (k = 0; k < n_seen && seen[k] != procs[i]; k++)
			;
		if (k == n_seen)
			killed++;
	}
	*left = n;
	free(procs);
	return killed;
}

/*
 * After the kill, until nothing that exec_doomed lists is left (the
 * killed die, what forked meanwhile is killed again): 0, or -1 with a
 * cause naming how many still run. *killed grows by the new ones.
 */
static int
exec_kill_settle(struct exec_state *st, int *killed, char **cause)
{
	int	*first = NULL, n = 0;
	size_t	 nfirst = 0, left = 0;
	int	 round;

	if (exec_doomed(&st->cg, &st->init, exec_starts(st), st->o->run_id,
	    &first, &nfirst) == -1)
		nfirst = 0;
	for (round = 0; round < EXEC_SETTLE_ROUNDS; round++) {
		if ((n = exec_kill_round(st, first, nfirst, &left, cause)) ==
		    -1)
			break;
		*killed += n;
		if (left == 0)
			break;
		usleep(EXEC_SETTLE_MS * 1000);
	}
	free(first);
	if (n == -1)
		return -1;
	if (left > 0) {
		util_cause(cause, "%zu of the command's processes still "
		    "run after %d kill rounds", left, EXEC_SETTLE_ROUNDS);
		return -1;
	}
	return 0;
}

/*
 * Freeze the container for the kill, on its freezer cgroup (cgroup.h),
 * under its freeze lock (docker_container_lock: one freeze at a time,
 * a diff's pause included). Not with Docker's pause (atk38b F1): a
 * freeze that lands while runc starts an exec of the container (this
 * exec stopped in its first milliseconds, or another exec starting as
 * this one times out) catches that exec's `runc init` inside the
 * container's cgroups; runc exec then waits for it, dockerd's unpause
 * waited behind that exec (about 300 s, then failed), and the container
 * stayed paused with every later exec hung. The freezer's own thaw
 * waits for nothing: the caught `runc init` goes on (or dies, when the
 * kill took it), and dockerd never learns of the freeze, which lasts one
 * kill round. A sandgate killed in between leaves the container frozen
 * behind Docker's back: the next exec finds and thaws it
 * (sandbox_ensure_running). 1 when frozen (lock held), 0 when the kill
 * must go without the freeze (lock released).
 */
static int
exec_freeze(struct exec_state *st)
{
	char	*why = NULL;

	if (docker_container_lock(st->d, st->cid, &why) == -1) {
		log_warnx("cannot freeze the container for the kill (%s): "
		    "killing without the freeze", why);
		free(why);
		return 0;
	}
	if (cgroup_freeze(&st->cg, 1, EXEC_FREEZE_MS) == 0)
		return 1;
	log_warn("cannot freeze the container for the kill (freezer "
	    "cgroup '%s'): killing without the freeze", st->cg.freezer);
	(void)cgroup_freeze(&st->cg, 0, 0);	/* a freeze left half-way */
	docker_container_unlock(st->d);
	return 0;
}

/* Thaw what exec_freeze froze and release the lock. 0, or -1 (cause). */
static int
exec_thaw(struct exec_state *st, char **cause)
{
	int	rv = 0;

	if (cgroup_freeze(&st->cg, 0, 0) == -1) {
		if (cause != NULL)
			util_cause(cause, "cannot thaw the container after the "
			    "kill (freezer cgroup '%s'): %s", st->cg.freezer,
			    strerror(errno));
		rv = -1;
	}
	docker_container_unlock(st->d);
	return rv;
}

/*
 * Kill the run's processes (exec.h): from the host (freeze, SIGKILL,
 * thaw, then SIGKILL rounds until none is left), or from inside under
 * gVisor. When the freeze is refused (tasks in uninterruptible sleep
 * keep the freezer from finishing within EXEC_FREEZE_MS), the rounds run
 * without it. The number killed, or -1 when something of the run may
 * still be running.
 */
static int
exec_kill(struct exec_state *st, char **cause)
{
	int	 killed = 0, frozen, n;
	size_t	 left;

	if (st->o->inside) {
		if ((n = exec_kill_inside(st, cause)) == -1 &&
		    exec_kill_sandbox(st) == 0) {
			free(*cause);
			*cause = NULL;
			n = 0;
		}
		return n;
	}
	if (st->cg.pids[0] == '\0' && st->cg.mem[0] == '\0') {
		util_cause(cause, "cannot find the cgroup of container "
		    "init %d", st->pid);
		return -1;
	}
	frozen = exec_freeze(st);
	n = exec_kill_round(st, NULL, 0, &left, cause);
	if (frozen && exec_thaw(st, n == -1 ? NULL : cause) == -1 && n != -1)
		return -1;
	if (n == -1)
		return -1;
	killed = n;
	if (exec_kill_settle(st, &killed, cause) == -1)
		return -1;
	return killed;
}

/*
 * join: runc, the run's memory cgroup was made (cgroup.h): the probe
 * starts the command once exec_join_move moved it there, so nothing of
 * the command runs in the container's memory cgroup beside the init.
 */
static json_t *
exec_spec(const struct exec_opts *o, int join)
{
	json_t	*cmd, *env, *v;
	char	*s, user[48];
	size_t	 i;

	cmd = json_array();
	if (join) {
		json_array_append_new(cmd, json_string(PROBE_CONTAINER_PATH));
		json_array_append_new(cmd, json_string("join"));
		json_array_append_new(cmd, json_string(o->run_id));
		json_array_append_new(cmd, json_string("--"));
	}
	/* gVisor gives the container's seccomp filter to its init only */
	if (o->inside) {
		json_array_append_new(cmd, json_string(PROBE_CONTAINER_PATH));
		json_array_append_new(cmd, json_string("run"));
		if (o->nproc > 0) {
			util_xasprintf(&s, "%lld", o->nproc);
			json_array_append_new(cmd, json_string("--nproc"));
			json_array_append_new(cmd, json_string(s));
			free(s);
		}
		json_array_append_new(cmd, json_string("--"));
	}
	for (i = 0; o->argv[i] != NULL; i++)
		json_array_append_new(cmd, json_string(o->argv[i]));
	env = json_array();
	util_xasprintf(&s, PROCSTAT_RUN_VAR "=%s", o->run_id);
	json_array_append_new(env, json_string(s));
	free(s);
	if (o->env != NULL) {
		json_array_foreach(o->env, i, v)
			json_array_append(env, v);
	}
	exec_user(o, user, sizeof(user));
	return json_pack("{s:b, s:b, s:b, s:b, s:o, s:o, s:s, s:s, s:b}",
	    "AttachStdin", 0, "AttachStdout", 1, "AttachStderr", 1,
	    "Tty", 0, "Cmd", cmd, "Env", env,
	    "WorkingDir", o->workdir ? o->workdir : SANDBOX_WORKDIR,
	    "User", user, "Privileged", 0);
}

/*
 * The live copy of a stream never blocks sandgate (the deadline must
 * fire whatever the reader does): a pipe, FIFO or terminal is opened
 * again non-blocking (a description of our own, so the caller's stays as
 * it was), a socket is written with MSG_DONTWAIT, a regular file as is.
 */
static void
exec_live_open(struct exec_sink *s, int stream)
{
	struct stat	st;
	char		path[64];
	int		fd;

	s->livefd = stream;
	s->livemode = EXEC_LIVE_PLAIN;
	if (fstat(stream, &st) == -1) {
		s->livefd = -1;
		return;
	}
	if (S_ISREG(st.st_mode))
		return;
	if (S_ISSOCK(st.st_mode)) {
		s->livemode = EXEC_LIVE_SOCKET;
		return;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", stream);
	fd = open(path, O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd != -1) {
		s->livefd = fd;
		s->liveown = 1;
	} else
		s->livemode = EXEC_LIVE_POLL;
}

/* Write what the reader takes now: bytes written, or -1 (reader gone). */
static ssize_t
exec_live_write(struct exec_sink *s, const unsigned char *p, size_t n)
{
	struct pollfd	pfd;
	ssize_t		w;

	if (s->livemode == EXEC_LIVE_POLL) {
		pfd.fd = s->livefd;
		pfd.events = POLLOUT;
		if (poll(&pfd, 1, 0) != 1)
			return 0;
		if (n > PIPE_BUF)
			n = PIPE_BUF;
	}
	do {
		if (s->livemode == EXEC_LIVE_SOCKET)
			w = send(s->livefd, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
		else
			w = write(s->livefd, p, n);
	} while (w == -1 && errno == EINTR);
	if (w == -1 && (errno == EAGAIN || errno == EWOULDBLOCK))
		return 0;
	return w < 0 ? -1 : w;
}

/* Queue what the reader did not take (bounded: exec_ready pauses). */
static void
exec_live_queue(struct exec_sink *s, const unsigned char *p, size_t n)
{
	size_t	 ncap;
	void	*np;

	if (s->pendlen + n > s->pendcap) {
		ncap = s->pendcap ? s->pendcap : 65536;
		while (ncap < s->pendlen + n)
			ncap *= 2;
		if ((np = realloc(s->pend, ncap)) == NULL) {
			s->dropped += n;
			return;
		}
		s->pend = np;
		s->pendcap = ncap;
	}
	memcpy(s->pend + s->pendlen, p, n);
	s->pendlen += n;
}

/* Hand queued output to the reader; drop it once the run was killed. */
static void
exec_live_flush(struct exec_sink *s, int dropping)
{
	ssize_t	w;

	if (s->livefd == -1 || s->pendlen == 0)
		return;
	w = exec_live_write(s, s->pend, s->pendlen);
	if (w < 0) {
		s->livefd = -1;
		s->pendlen = 0;
		return;
	}
	memmove(s->pend, s->pend + w, s->pendlen - (size_t)w);
	s->pendlen -= (size_t)w;
	if (dropping) {
		s->dropped += s->pendlen;
		s->pendlen = 0;
	}
}

/*
 * The stream's back-pressure: 1 when more output may come, 0 when a
 * reader holds more than EXEC_LIVE_HIGH bytes back (the stream is paused;
 * *fd is the descriptor to wait on). Once the run is killed nothing is
 * held back for a reader.
 */
static int
exec_ready(void *arg, int *fd)
{
	struct exec_state	*st = arg;
	int			 i;

	for (i = 1; i <= 2; i++) {
		exec_live_flush(&st->sink[i], st->grace != 0);
		if (st->sink[i].pendlen >= EXEC_LIVE_HIGH) {
			*fd = st->sink[i].livefd;
			return 0;
		}
	}
	return 1;
}

/*
 * After the command: what a slow reader still has to take, waiting while
 * it makes progress (at most EXEC_DRAIN_IDLE_MS without any), dropping
 * it at once when the run was killed.
 */
static void
exec_live_drain(struct exec_state *st)
{
	struct exec_sink	*s;
	struct pollfd		 pfd;
	size_t			 before;
	int			 i, idle;

	for (i = 1; i <= 2; i++) {
		s = &st->sink[i];
		for (idle = 0; s->livefd != -1 && s->pendlen > 0 &&
		    idle < EXEC_DRAIN_IDLE_MS && st->grace == 0;) {
			pfd.fd = s->livefd;
			pfd.events = POLLOUT;
			if (poll(&pfd, 1, 100) == 0)
				idle += 100;
			before = s->pendlen;
			exec_live_flush(s, 0);
			if (s->pendlen < before)
				idle = 0;
		}
		s->dropped += s->pendlen;
		s->pendlen = 0;
		st->res->live_dropped += s->dropped;
	}
}

static void
exec_sink_open(struct exec_sink *s, const struct exec_opts *o, int stream)
{
	char	path[PATH_MAX];
	int	dfd;

	exec_capture_init(&s->cap, o->output_cap);
	s->evfd = -1;
	s->livefd = -1;
	if (o->live)
		exec_live_open(s, stream);
	if (o->evidence_dir == NULL)
		return;
	snprintf(path, sizeof(path), "%s.%s", o->run_id,
	    stream == 1 ? "stdout" : "stderr");
	s->evcap = evidence_stream_cap(o->evidence_dir, o->evidence_max);
	s->evdir = o->evidence_dir;
	s->evmax = o->evidence_max;
	if ((dfd = open(o->evidence_dir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) != -1) {
		s->evfd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_CLOEXEC, 0600);
		close(dfd);
	}
	if (s->evfd == -1)
		log_warn("cannot keep evidence in '%s/%s'", o->evidence_dir,
		    path);
}

/*
 * The evidence folder is shared by the sandbox's concurrent execs: each
 * 64 KiB a stream keeps, look again at the room left in the folder, and
 * keep no more than it (*ev cut, and the stream's cap with it); K streams
 * written at once can pass the cap by at most K x 64 KiB.
 */
static void
exec_evidence_room(struct exec_sink *s, size_t *ev)
{
	unsigned long long	room;

	if (s->evmax == 0 || (s->evlen != 0 &&
	    (s->evlen >> 16) == ((s->evlen + *ev) >> 16)))
		return;
	room = evidence_room(s->evdir, s->evmax);
	if (*ev > room) {
		*ev = (size_t)room;
		s->evcap = s->evlen + room;
	}
}

/* Output from the container: live copy, capture, evidence. */
static int
exec_data(void *arg, int stream, const unsigned char *p, size_t n)
{
	struct exec_state	*st = arg;
	struct exec_sink	*s = &st->sink[stream == 2 ? 2 : 1];
	size_t			 ev;
	ssize_t			 w = 0;

	if (s->livefd != -1) {
		if (s->pendlen == 0 && (w = exec_live_write(s, p, n)) < 0)
			s->livefd = -1;		/* reader went away */
		else if ((size_t)w < n && st->grace != 0)
			s->dropped += n - (size_t)w;
		else if ((size_t)w < n)
			exec_live_queue(s, p + w, n - (size_t)w);
	}
	if (exec_capture_add(&s->cap, p, n) == -1)
		log_warnx("cannot capture output: out of memory");
	if (s->evfd != -1 && s->evlen < s->evcap) {
		ev = s->evcap - s->evlen < n ? (size_t)(s->evcap - s->evlen) :
		    n;
		exec_evidence_room(s, &ev);
		s->evcut |= ev < n;
		if (write(s->evfd, p, ev) != (ssize_t)ev) {
			close(s->evfd);
			s->evfd = -1;
		}
		s->evlen += ev;
	} else if (n > 0)
		s->evcut = 1;
	st->res->evidence_cut |= s->evcut;
	return 0;
}

/*
 * <runs>/<run id>.active exists while the run goes on (exec_run_active)
 * and names its owner, this process (procstat_owner_self), which holds
 * it locked (ownmark_make; a marker is never seen unlocked or without
 * its owner, which another exec's sweep would take for a dead run and
 * end its proxy credential): a marker whose owner died (sandgate killed)
 * shields nothing and gc removes it. The descriptor that holds it, or
 * -1 (path "") when there is none.
 */
static int
exec_mark_active(const struct exec_opts *o, char *path, size_t size)
{
	char		 own[PROCSTAT_OWNER_MAX + sizeof(exec_active_where) + 2];
	int		 fd, dfd, len;

	path[0] = '\0';
	if (o->evidence_dir == NULL ||
	    procstat_owner_self(own, sizeof(own) - 1) == -1)
		return -1;
	exec_active_dir = o->evidence_dir;
	len = (int)strlen(own);
	snprintf(own + len, sizeof(own) - (size_t)len, "\n%s\n",
	    exec_active_where);
	snprintf(path, size, "%s.active", o->run_id);
	if ((dfd = open(o->evidence_dir, O_RDONLY | O_DIRECTORY |
	    O_CLOEXEC)) == -1) {
		path[0] = '\0';
		return -1;
	}
	fd = ownmark_make(dfd, path, own);
	close(dfd);
	if (fd == -1) {
		path[0] = '\0';
		return -1;
	}
	snprintf(path, size, "%s/%s.active", o->evidence_dir, o->run_id);
	return fd;
}

/*
 * After a normal end: kill what the command left running. A container
 * that stopped meanwhile (gVisor's sandbox when the leftovers fill its
 * host process limit during the reap: the kill inside then finds it gone
 * and returns 0) is recorded as the timeout path does (atk16r8 F2).
 */
static void
exec_stop_leftovers(struct exec_state *st)
{
	char	*cause = NULL;
	int	 n;

	n = exec_kill(st, &cause);
	if (!st->res->container_died && exec_init_gone(st, 0)) {
		exec_died(st);
		st->res->kill_failed = 0;
		free(cause);
		return;
	}
	if (n == -1) {
		log_warnx("cannot stop the command's leftover processes: %s",
		    cause);
		st->res->kill_failed = 1;
		free(cause);
	} else
		st->res->killed += n;
}

/* Kill the run's processes for a timeout (sig 0) or a signal. */
static void
exec_stop(struct exec_state *st, int sig)
{
	char	*cause = NULL;
	int	 n;

	if (sig == 0)
		st->res->timed_out = 1;
	else
		st->res->signal = sig;
	n = exec_kill(st, &cause);
	if (n == -1) {
		log_warnx("cannot stop the command: %s", cause);
		st->res->kill_failed = 1;
		free(cause);
	} else
		st->res->killed += n;
	st->grace = util_now_us() + EXEC_KILL_GRACE_US;
	st->rekill_due = util_now_us() + EXEC_REKILL_US;
	/* what is left to ask Docker after the grace is bounded too */
	docker_deadline(st->d, st->grace +
	    (EXEC_DIED_WAIT_MS + EXEC_GONE_MS) * 1000ull);
}

/*
 * A command that runc started after exec_stop's kill (SIGTERM a few
 * milliseconds into the exec, or --timeout run out while the exec waited
 * for a lock and runc not done yet) was never killed: it ran on to its
 * end, past sandgate's exit (atk44d X1). With a join (runc, a memory
 * cgroup of the run's own) a late one is killed instead of moved, and
 * its command never starts (exec_join_move). Otherwise (gVisor, runc
 * without a join) the kill is repeated through the grace, every
 * EXEC_REKILL_US (EXEC_REKILL_INSIDE_US under gVisor, where a kill is a
 * docker exec). A failure here is not one more warning: the first
 * kill's is said.
 */
static void
exec_stop_again(struct exec_state *st)
{
	char		*cause = NULL;
	uint64_t	 now = util_now_us();
	int		 n;

	/* runc with a join: a late one is killed unmoved (exec_join_move) */
	if (now < st->rekill_due || (!st->o->inside && st->cmds[0] != '\0'))
		return;
	st->rekill_due = now + (st->o->inside ? EXEC_REKILL_INSIDE_US :
	    EXEC_REKILL_US);
	if ((n = exec_kill(st, &cause)) > 0)
		st->res->killed += n;
	free(cause);
}

/* 1 when pid is in the exec's own set. */
static int
exec_own_has(const struct exec_state *st, int pid)
{
	size_t	i;

	for (i = 0; i < st->n_own; i++)
		if (st->own[i] == pid)
			return 1;
	return 0;
}

static void
exec_own_add(struct exec_state *st, int pid)
{
	if (pid <= 0 || exec_own_has(st, pid))
		return;
	if (st->n_own < EXEC_OWN_MAX)
		st->own[st->n_own++] = pid;
	else
		st->own_full = 1;
}

/* 1 when pid's parent is outside the pid namespace of the init (initpid). */
static int
exec_parent_outside(int initpid, int pid)
{
	struct procstat	ps;
	struct stat	a, b;
	char		path[64];

	if (procstat_read(pid, &ps) == -1 || ps.ppid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", ps.ppid);
	if (stat(path, &a) == -1)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", initpid);
	if (stat(path, &b) == -1)
		return 0;
	return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

/*
 * The pid of the process Docker started for this exec, from the runtime's
 * own record (rtpid.h), else 0: the same pid exec inspect reports, about
 * 10 ms sooner. The command waits in its join until the move, so that
 * wait was most of what the run's memory cgroup added to an exec's time
 * (docs/benchmarks.md). Its parent is still the runtime's (runc, then the
 * shim), outside the container: no process of the sandbox took the pid.
 */
static int
exec_join_rtpid(const struct exec_state *st)
{
	int	pid;

	if (st->bundle[0] == '\0' || st->eid == NULL ||
	    (pid = rtpid_read(st->bundle, st->eid)) == 0)
		return 0;
	return exec_parent_outside(st->pid, pid) ? pid : 0;
}

/*
 * runc: move the process Docker started for this exec (the runtime's pid
 * file, exec_join_rtpid, or exec inspect's Pid: the host pid of
 * `sandgate-probe join`) into the run's memory cgroup, once it runs the
 * probe with this run's marker, and no other. A marker names no process:
 * any process of the sandbox writes its own environment (in place, as
 * /proc shows it) and reads the runs of the other execs' joins in /proc,
 * so it can carry another exec's marker (attack row 1h). The join never
 * ends before it is moved (it waits up to 30 s), so the pid is still its
 * own, unless the sandbox's code killed it: then its exec ends without its
 * command. Docker is asked only with ask set (a process with this run's
 * marker was seen) when the runtime's file did not say, with a bundle
 * once it did not for EXEC_RTPID_WAIT_MS: runc may write it just after
 * the process started.
 *
 * Once moved, the join gets PROCSTAT_JOIN_WAKE, so it starts the command
 * now rather than at its next poll. The signal goes through a pidfd
 * opened before the marker was read: to the process that was checked
 * and moved, never to one that took its pid since. It only wakes the
 * probe, which execs once it sees itself in the cgroup (a process of the
 * sandbox can send the same signal: sandgate-probe.c, probe_join_main);
 * without a pidfd the probe's own poll finds the move.
 */
static void
exec_join_move(struct exec_state *st, int ask)
{
	struct docker_einfo	 ei;
	char			 mark[64], *cause = NULL;
	int			 pidfd;

	if (st->join_pid == 0)
		st->join_pid = exec_join_rtpid(st);
	if (st->join_pid == 0) {
		if (!ask)
			return;
		if (st->join_seen == 0)
			st->join_seen = util_now_us();
		if (st->bundle[0] != '\0' && util_now_us() - st->join_seen <
		    EXEC_RTPID_WAIT_MS * 1000ULL)
			return;
		if (docker_exec_inspect(st->d, st->eid, &ei, &cause) == -1) {
			free(cause);
			return;
		}
		if (ei.pid <= 0 || ei.exit_code != -1)
			return;		/* not started yet, or over */
		st->join_pid = ei.pid;
	}
	pidfd = pidfd_open(st->join_pid, 0);
	if (procstat_run_marker(st->join_pid, mark, sizeof(mark)) == 1 &&
	    strcmp(mark, st->o->run_id) == 0 && st->grace != 0) {
		/*
		 * Seen only after the exec was stopped (a timeout or a
		 * signal before runc started it): never moved, so its
		 * command never starts (the join gives up unmoved), and
		 * killed, this process alone (atk44d X1, atk44e F1: moved
		 * and woken in the grace, the command ran until the next
		 * kill, and kills repeated over the whole container broke
		 * other execs starting meanwhile).
		 */
		if (pidfd != -1)
			pidfd_send_signal(pidfd, SIGKILL, NULL, 0);
		st->moved = 1;		/* nothing more to move */
		st->res->killed++;
	} else if (procstat_run_marker(st->join_pid, mark, sizeof(mark)) ==
	    1 && strcmp(mark, st->o->run_id) == 0 &&
	    cgroup_cmds_move(st->cmds, st->join_pid) == 0) {
		st->moved = 1;
		st->released = 1;
		if (pidfd != -1)
			pidfd_send_signal(pidfd, PROCSTAT_JOIN_WAKE, NULL, 0);
	}
	if (pidfd != -1)
		close(pidfd);
	if (st->moved)
		exec_join_unwatch(st);
}

/*
 * runc: watch the bundle for the exec's pid file (exec_join_rtpid), so
 * that the stream's pump wakes the tick when runc renames it in (about
 * 40 ms after the exec's start) and the join is moved at once, instead
 * of a tick every EXEC_JOIN_TICK_MS reading the folder for it. The
 * watch only says when to look: the pid is read and checked as before
 * (its parent outside the container, the run's marker). Only root may
 * watch the bundle; without a watch the fast ticks find the file.
 */
static void
exec_join_watch(struct exec_state *st)
{
	if (st->bundle[0] == '\0' || st->cmds[0] == '\0')
		return;
	if (exec_watch_fd == -1 && (exec_watch_fd = inotify_init1(IN_NONBLOCK |
	    IN_CLOEXEC)) == -1)
		return;
	st->join_watch = exec_watch_fd;
	exec_join_woken(st);		/* an earlier exec's leftovers */
	if ((st->join_wd = inotify_add_watch(st->join_watch, st->bundle,
	    IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE | IN_ONLYDIR |
	    IN_DONT_FOLLOW)) == -1)
		st->join_watch = -1;
}

/* The bundle's watch is no longer needed: removed (not the descriptor). */
static void
exec_join_unwatch(struct exec_state *st)
{
	if (st->join_wd == -1)
		return;
	inotify_rm_watch(st->join_watch, st->join_wd);
	st->join_wd = -1;
}

/*
 * Read the watch empty: 1 when one of its events names this exec's pid
 * file ("<exec id>.pid"), or the queue overflowed; 0 for the other
 * files of the bundle (other execs', runc's log) and an earlier watch's.
 */
static int
exec_join_woken(struct exec_state *st)
{
	char				 buf[4096]
				    __attribute__((aligned(__alignof__(
				    struct inotify_event))));
	const struct inotify_event	*ev;
	char				 want[NAME_MAX + 1];
	ssize_t				 n, off;
	int				 ours = 0;

	snprintf(want, sizeof(want), "%s.pid", st->eid ? st->eid : "");
	while ((n = read(st->join_watch, buf, sizeof(buf))) > 0) {
		for (off = 0; off < n; off += (ssize_t)sizeof(*ev) + ev->len) {
			ev = (const struct inotify_event *)(buf + off);
			if ((ev->mask & IN_Q_OVERFLOW) || (ev->wd ==
			    st->join_wd && ev->len > 0 &&
			    strcmp(ev->name, want) == 0))
				ours = 1;
		}
	}
	return ours;
}

/* The stream pump's wake (docker_stream_cb): the bundle's watch. */
static int
exec_wakefd(void *arg)
{
	const struct exec_state	*st = arg;

	return st->join_wd != -1 ? st->join_watch : -1;
}

/*
 * The processes that may be this exec's now: those of the run's memory
 * cgroup once its join was moved there (exactly the join's descendants),
 * else the container's.
 */
static int
exec_own_procs(const struct exec_state *st, int **procs, size_t *n)
{
	if (st->cmds[0] != '\0' && st->moved)
		return cgroup_dir_procs(st->cmds, procs, n);
	if (st->cg.pids[0] == '\0')
		return -1;
	return cgroup_procs(&st->cg, procs, n);
}

/*
 * runc: remember every process of this exec, so that an OOM kill the
 * kernel logs can be told to be this exec's: with a memory cgroup of the
 * run's own, every process in it, else every process of the container
 * marked with this run. Until the join was moved into that cgroup, a
 * process seen with this run's marker says it started: move it then
 * (exec_join_move).
 */
static void
exec_own_sample(struct exec_state *st)
{
	char	 mark[64];
	int	*procs = NULL, own, move, cgown, seen = 0;
	size_t	 n = 0, i;

	own = !st->o->inside && st->kmsg != -1;
	move = st->cmds[0] != '\0' && !st->moved;
	if (move && st->bundle[0] != '\0') {
		exec_join_move(st, 0);
		move = !st->moved;
	}
	cgown = st->cmds[0] != '\0' && st->moved;
	if ((!own && !move) || exec_own_procs(st, &procs, &n) == -1)
		return;
	for (i = 0; i < n; i++) {
		if (exec_own_has(st, procs[i]))
			continue;
		if (cgown) {
			exec_own_add(st, procs[i]);
			continue;
		}
		if (procstat_run_marker(procs[i], mark, sizeof(mark)) != 1 ||
		    strcmp(mark, st->o->run_id) != 0)
			continue;
		seen = 1;
		if (own && !move)
			exec_own_add(st, procs[i]);
	}
	free(procs);
	if (move && seen)
		exec_join_move(st, 1);
}

/*
 * Whether the memory limit took one of this exec's processes. Under
 * gVisor (one host process for the whole sandbox), without the kernel's
 * log, or when the exec had more processes than it remembers, the
 * container's counter decides, as before.
 */
static int
exec_own_oom(struct exec_state *st, const struct cgroup_counters *before,
    const struct cgroup_counters *after)
{
	int	pids[EXEC_OOM_PIDS];
	long	n, i;

	if (after->oom_kill <= before->oom_kill)
		return 0;
	if (st->o->inside || st->kmsg == -1 || st->own_full)
		return 1;
	if ((n = oomlog_read(st->kmsg, pids, EXEC_OOM_PIDS)) > EXEC_OOM_PIDS)
		return 1;
	for (i = 0; i < n; i++)
		if (exec_own_has(st, pids[i]))
			return 1;
	return 0;
}

/*
 * Every DOCKER_TICK_MS (more often while the command waits to be moved
 * into its memory cgroup: exec_tick_next), and when the bundle's watch
 * wakes the pump: deadline, signals, pids sampling. A wake for another
 * file of the bundle only empties the watch.
 */
static int
exec_tick(void *arg)
{
	struct exec_state	*st = arg;
	unsigned long long	 cur;
	uint64_t		 now = util_now_us();
	int			 next;

	/*
	 * The first tick comes as the start is asked: Docker, containerd
	 * and runc take tens of milliseconds before the command runs.
	 */
	if (st->o->idle != NULL && !st->idled) {
		st->idled = 1;
		st->o->idle();
	}
	/* the pump's own clock runs a little ahead of tick_due: 1 ms slack */
	if (st->join_wd != -1 && !exec_join_woken(st) &&
	    now + 1000 < st->tick_due)
		return (int)((st->tick_due - now) / 1000);
	st->tick_due = now + exec_tick_next(st) * 1000ULL;
	exec_own_sample(st);

	if (cgroup_read_key(st->cg.pids, "pids.current", NULL, &cur) == 0 &&
	    cur > st->res->peak_pids)
		st->res->peak_pids = cur;
	/* kept: the cgroup goes with a container that dies under the command */
	if (cgroup_read_key(st->cg.pids, "pids.events", "max", &cur) == 0)
		st->pids_max_seen = cur;
	if (st->grace != 0) {
		if (now > st->grace)
			st->rekill_due = 0;	/* one more as it ends */
		exec_stop_again(st);
		return now > st->grace ? -1 : 0;
	}
	/*
	 * The whole container stopped under the command (gVisor ends its
	 * sandbox when the memory cgroup's OOM killer takes its kernel, or
	 * when the pids cgroup refuses it a host task): nothing will end the
	 * stream, so end it here.
	 */
	if (kill(st->pid, 0) == -1 && errno == ESRCH) {
		st->died = 1;
		return -1;
	}
	if (exec_sig != 0)
		exec_stop(st, exec_sig);
	else if (now >= st->deadline)
		exec_stop(st, 0);
	next = exec_tick_next(st);
	st->tick_due = now + (uint64_t)next * 1000ULL;
	return next;
}

/*
 * Milliseconds to the next tick: until the join was moved (for at most
 * EXEC_JOIN_FAST_MS), EXEC_JOIN_TICK_MS, or EXEC_JOIN_WATCH_MS while the
 * bundle's watch waits for runc's pid file; then DOCKER_TICK_MS. Once
 * the pid is known the fast ticks come back: the move waits for the
 * probe's execve (the run's marker), just after runc wrote the file.
 */
static int
exec_tick_next(const struct exec_state *st)
{
	if (st->cmds[0] == '\0' || st->moved ||
	    util_now_us() >= st->join_fast)
		return DOCKER_TICK_MS;
	if (st->join_wd != -1 && st->join_pid == 0)
		return EXEC_JOIN_WATCH_MS;
	return EXEC_JOIN_TICK_MS;
}

static void
exec_sinks_close(struct exec_state *st)
{
	int	i;

	for (i = 1; i <= 2; i++) {
		if (st->sink[i].evfd != -1)
			close(st->sink[i].evfd);
		st->sink[i].evfd = -1;
		if (st->sink[i].liveown && st->sink[i].livefd != -1)
			close(st->sink[i].livefd);
		st->sink[i].livefd = -1;
		free(st->sink[i].pend);
		st->sink[i].pend = NULL;
		exec_capture_release(&st->sink[i].cap);
	}
}

/*
 * 1 when the container's init is gone or going (exited, a zombie, or its
 * pid now another process's), waiting up to wait_ms for it: a command
 * that ended by SIGKILL may have gone with its container.
 */
static int
exec_init_gone(const struct exec_state *st, int wait_ms)
{
	struct procstat	ps;
	int		waited;

	for (waited = 0;; waited += 50) {
		if (procstat_read(st->pid, &ps) == -1 || ps.state == 'Z' ||
		    (st->init.known && ps.start != st->init.start))
			return 1;
		if (waited >= wait_ms)
			return 0;
		usleep(50 * 1000);
	}
}

/*
 * The container died under the command: why, from Docker. Docker learns
 * of a memory kill (containerd's OOM event) apart from the exit, and may
 * record it after the command's end reached sandgate, on a loaded host
 * above all: asked again for EXEC_DIED_WAIT_MS until it says so.
 */
static void
exec_died(struct exec_state *st)
{
	struct docker_cinfo	 ci;
	char			*cause = NULL;
	uint64_t		 saved;
	int			 waited;

	st->res->container_died = 1;
	saved = docker_deadline_within(st->d, EXEC_DIED_WAIT_MS +
	    EXEC_GONE_MS);
	for (waited = 0;; waited += EXEC_DIED_POLL_MS) {
		if (docker_container_inspect(st->d, st->cid, &ci, &cause) ==
		    -1) {
			free(cause);
			break;
		}
		if (ci.oom_killed) {
			st->res->oom_killed = 1;
			break;
		}
		if (waited >= EXEC_DIED_WAIT_MS)
			break;
		usleep(EXEC_DIED_POLL_MS * 1000);
	}
	docker_deadline(st->d, saved);
}

/* Collect texts and counters and decide sandgate's exit code. */
static void
exec_finish(struct exec_state *st, const struct cgroup_counters *before,
    int cmd_exit)
{
	struct exec_result	*r = st->res;
	struct cgroup_counters	 after;
	unsigned long long	 cut1 = 0, cut2 = 0, peak, own;

	cgroup_counters_read(&st->cg, &after);
	/* v1 counts a kill in the victim's own memory cgroup only */
	if (st->cmds[0] != '\0' && cgroup_read_key(st->cmds,
	    "memory.oom_control", "oom_kill", &own) == 0)
		after.oom_kill += own;
	if (st->pids_max_seen > after.pids_max)
		after.pids_max = st->pids_max_seen;
	r->cmd_exit = cmd_exit;
	r->oom_killed |= exec_own_oom(st, before, &after);
	/*
	 * A container that died with its cgroup full: gVisor's kernel stops
	 * when it cannot get a host task (its own tasks grow with process
	 * churn), often before pids.events is read.
	 */
	r->pids_limit_hit = after.pids_max > before->pids_max ||
	    (st->died && st->pids_limit > 0 && r->peak_pids >= st->pids_limit);
	r->cpu_ms = after.cpu_ns > before->cpu_ns ?
	    (after.cpu_ns - before->cpu_ns) / 1000000 : 0;
	if (cgroup_read_key(st->cg.mem, st->cg.v2 ? "memory.peak" :
	    "memory.max_usage_in_bytes", NULL, &peak) == 0)
		r->peak_memory = peak;
	r->out = exec_capture_text(&st->sink[1].cap, &r->outlen, &cut1);
	r->err = exec_capture_text(&st->sink[2].cap, &r->errlen, &cut2);
	r->output_truncated = cut1 > 0 || cut2 > 0;
	r->duration_ms = (util_now_us() - st->t0) / 1000;
	clock_gettime(CLOCK_REALTIME, &r->end);
	if (r->signal != 0)
		r->exit_code = 128 + r->signal;
	else if (r->timed_out)
		r->exit_code = 124;
	else if (r->oom_killed)
		r->exit_code = 137;
	else
		r->exit_code = cmd_exit >= 0 ? cmd_exit : 125;
}

/* Set up the state of one exec: cgroup, counters, sinks, the init. */
static void
exec_begin(struct exec_state *st, struct cgroup_counters *before)
{
	uint64_t	budget;

	if (cgroup_find(st->pid, &st->cg) == -1)
		log_warnx("cannot find the cgroup of container init %d; "
		    "limits are not reported", st->pid);
	exec_init_read(st->pid, &st->init);
	cgroup_counters_read(&st->cg, before);
	st->pids_max_seen = before->pids_max;
	if (cgroup_read_key(st->cg.pids, "pids.max", NULL, &st->pids_limit) ==
	    -1)
		st->pids_limit = 0;	/* "max" reads as 0 too */
	if (!st->cg.v2)
		cgroup_write(st->cg.mem, "memory.max_usage_in_bytes", "0");
	if (!st->o->inside &&
	    cgroup_cmds_setup(&st->cg, st->o->run_id, st->cmds,
	    sizeof(st->cmds)) == 0 && rtpid_bundle(st->pid, st->bundle,
	    sizeof(st->bundle)) == -1)
		st->bundle[0] = '\0';
	/*
	 * Where runs have memory cgroups of their own (cgroup v1), a run
	 * without one is told: its command shares the container's limit,
	 * and its processes are told apart from the other runs' by their
	 * markers alone (exec_doomed).
	 */
	if (!st->o->inside && !st->cg.v2 && st->cg.mem[0] != '\0' &&
	    st->cmds[0] == '\0')
		log_warnx("cannot make this run's memory cgroup under %s/%s "
		    "(%s): the command runs in the container's", st->cg.mem,
		    CGROUP_CMDS, strerror(errno));
	exec_join_watch(st);
	st->join_fast = util_now_us() + EXEC_JOIN_FAST_MS * 1000ULL;
	exec_sink_open(&st->sink[1], st->o, 1);
	exec_sink_open(&st->sink[2], st->o, 2);
	clock_gettime(CLOCK_REALTIME, &st->res->start);
	st->t0 = util_now_us();
	budget = (uint64_t)st->o->timeout * 1000000;
	/* a wait for the sandbox's lock before counts against it */
	st->deadline = st->t0 + budget - (st->o->waited_us < budget ?
	    st->o->waited_us : budget);
}

/*
 * After the exec's stream ended: what became of the command (exit code,
 * killed with the container, leftovers stopped) into st->res. 0, or -1
 * with *cause when Docker could not say.
 */
static int
exec_conclude(struct exec_state *st, const struct cgroup_counters *before,
    const char *eid, char **cause)
{
	const struct exec_opts	*o = st->o;
	struct exec_result	*res = st->res;
	struct docker_einfo	 ei;

	memset(&ei, 0, sizeof(ei));
	/*
	 * Stopped before its join was moved (runc with a memory cgroup of
	 * the run's own): the join starts the command only once moved, and
	 * after the stop it is killed instead (exec_join_move), so the
	 * command never ran, and the result says so (not_started), as for
	 * an exec that never had the lock: a harness may run it again.
	 */
	if ((res->timed_out || res->signal != 0) && !o->inside &&
	    st->cmds[0] != '\0' && !st->released)
		res->unstarted = "the exec was stopped before runc started its "
		    "command";
	if (st->died) {
		exec_died(st);
		exec_finish(st, before, 137);
		return 0;
	}
	if (docker_exec_inspect(st->d, eid, &ei, cause) == -1) {
		/* gVisor forgets an exec whose process was killed. */
		if (!res->timed_out && res->signal == 0)
			return -1;
		free(*cause);
		*cause = NULL;
		ei.running = 0;
		ei.exit_code = 137;
	}
	/*
	 * killed with the container (its init gone): the record says so.
	 * gVisor's `runsc exec` may end with 128 instead ("waiting on PID
	 * N in sandbox: ...") when its sandbox is killed under it, before
	 * the tick sees the init gone.
	 */
	if (!ei.running && (ei.exit_code == 137 || (o->inside &&
	    ei.exit_code == 128)) && !res->timed_out && res->signal == 0 &&
	    exec_init_gone(st, EXEC_GONE_MS)) {
		exec_died(st);
		exec_finish(st, before, 137);
		return 0;
	}
	/*
	 * Stopped by sandgate (timeout, signal): the container may have gone
	 * meanwhile (gVisor's sandbox during the kill); then nothing of the
	 * command is left, and the record says the container stopped.
	 */
	if ((res->timed_out || res->signal != 0) &&
	    exec_init_gone(st, res->kill_failed ? EXEC_GONE_MS : 0)) {
		exec_died(st);
		res->kill_failed = 0;
	}
	/*
	 * Nothing of a command outlives it: background children it left
	 * (a fork bomb's, a daemon's) are killed like a timed-out run's.
	 */
	if (!res->timed_out && res->signal == 0 && (o->inside ||
	    exec_has_leftovers(&st->cg, &st->init, exec_starts(st),
	    o->run_id)))
		exec_stop_leftovers(st);
	exec_own_add(st, ei.pid);
	exec_finish(st, before, ei.running ? -1 : ei.exit_code);
	return 0;
}

int
exec_run(struct docker *d, const char *cid, int pid,
    const struct exec_opts *o, struct exec_result *res, char **cause)
{
	struct exec_state	 st;
	struct cgroup_counters	 before;
	struct docker_stream_cb	 cb = { exec_data, exec_tick, NULL,
				    exec_ready, exec_wakefd };
	json_t			*spec;
	char			*eid = NULL, active[PATH_MAX];
	int			 rv = -1, held = -1;

	active[0] = '\0';
	memset(res, 0, sizeof(*res));
	memset(&st, 0, sizeof(st));
	res->gvisor = o->inside;
	st.d = d;
	st.cid = cid;
	st.pid = pid;
	st.o = o;
	st.res = res;
	st.join_watch = st.join_wd = -1;
	cb.arg = &st;
	st.kmsg = o->inside ? -1 : oomlog_open();
	exec_begin(&st, &before);
	spec = exec_spec(o, st.cmds[0] != '\0');
	exec_where(pid, exec_active_where, sizeof(exec_active_where));
	held = exec_mark_active(o, active, sizeof(active));
	if (docker_exec_create(d, cid, spec, &eid, cause) == -1)
		goto out;
	st.eid = eid;
	if (docker_exec_start(d, eid, &cb, cause) == -1 ||
	    exec_conclude(&st, &before, eid, cause) == -1)
		goto out;
	rv = 0;
out:
	docker_deadline(d, 0);
	if (st.kmsg != -1)
		close(st.kmsg);
	exec_join_unwatch(&st);
	cgroup_cmds_remove(st.cmds);
	if (active[0] != '\0')
		unlink(active);
	if (held != -1)
		close(held);
	exec_live_drain(&st);
	json_decref(spec);
	free(eid);
	exec_sinks_close(&st);
	return rv;
}

void
exec_result_release(struct exec_result *r)
{
	free(r->out);
	free(r->err);
	json_decref(r->network_blocked);
	json_decref(r->network_replicas);
	r->out = r->err = NULL;
	r->network_blocked = r->network_replicas = NULL;
}

void
exec_format_size(unsigned long long v, char *buf, size_t size)
{
	static const char	*const units[] = { "GiB", "MiB", "KiB" };
	static const unsigned	 shifts[] = { 30, 20, 10 };
	size_t			 i;

	for (i = 0; i < 3; i++) {
		if (v >= (1ULL << shifts[i]) &&
		    (v & ((1ULL << shifts[i]) - 1)) == 0) {
			snprintf(buf, size, "%llu %s", v >> shifts[i],
			    units[i]);
			return;
		}
	}
	snprintf(buf, size, "%llu bytes", v);
}

/* Append one notice (printf-style) to the array. */
static void
exec_notice(json_t *a, const char *fmt, ...)
{
	va_list	 ap;
	char	*s;

	va_start(ap, fmt);
	if (vasprintf(&s, fmt, ap) == -1)
		s = NULL;
	va_end(ap);
	if (s != NULL)
		json_array_append_new(a, json_string(s));
	free(s);
}

/*
 * One notice per blocked destination: many tools swallow the proxy's
 * 403, so the agent is told here whatever the tool printed.
 */
static void
exec_notices_blocked(json_t *a, json_t *blocked)
{
	json_t		*b;
	const char	*msg;
	json_int_t	 n;
	size_t		 i;
	char		 safe[1024];

	json_array_foreach(blocked, i, b) {
		msg = json_string_value(json_object_get(b, "message"));
		n = json_integer_value(json_object_get(b, "attempts"));
		/* The message names what the sandbox sent: escape it. */
		util_safe(msg ? msg : "network blocked by policy", safe,
		    sizeof(safe));
		exec_notice(a, "%s (%lld attempt%s)", safe, (long long)n,
		    n == 1 ? "" : "s");
	}
}

int
exec_stopped(const struct exec_result *r)
{
	return r->container_died || r->sandbox_killed;
}

const char *
exec_cleanup(const struct exec_result *r)
{
	if (r->kill_failed)
		return "processes may remain";
	if (r->sandbox_killed)
		return "sandbox stopped from outside (gVisor: the kill inside "
		    "it did not finish)";
	return NULL;
}

/* Why the container stopped, as far as sandgate can tell, by runtime. */
static const char *
exec_died_why(const struct exec_result *r)
{
	if (r->sandbox_killed)
		return " (gVisor: the kill inside it did not finish, so sandgate "
		    "stopped the whole sandbox from outside)";
	if (r->gvisor && r->oom_killed)
		return " (gVisor ends the whole sandbox at its memory limit)";
	if (r->gvisor && r->pids_limit_hit)
		return " (gVisor ends the whole sandbox when its host process "
		    "limit is full)";
	if (r->oom_killed)
		return " (the memory limit's OOM killer took its init)";
	return "";
}

json_t *
exec_notices(const struct exec_result *r, long long timeout,
    unsigned long long memory, long long pids)
{
	json_t	*a = json_array();
	char	 sz[64];

	if (r->timed_out)
		exec_notice(a, "command timed out after %lld s (--timeout)",
		    timeout);
	if (r->unstarted != NULL)
		exec_notice(a, "%s; nothing ran", r->unstarted);
	if (r->oom_killed) {
		exec_format_size(memory, sz, sizeof(sz));
		exec_notice(a, "command killed: memory limit %s exceeded", sz);
	}
	if (r->pids_limit_hit)
		exec_notice(a, "process limit %lld reached", pids);
	if (exec_stopped(r))
		exec_notice(a, "the sandbox's container stopped under the "
		    "command%s; the next exec starts it again",
		    exec_died_why(r));
	if (r->output_truncated)
		exec_notice(a, "output longer than the %u MiB capture cap per "
		    "stream: the result keeps its head and tail; %s",
		    SG_OUTPUT_CAP_DEFAULT >> 20, r->evidence_cut ? "the "
		    "sandbox's evidence keeps only its first part too (its "
		    "cap, at most the sandbox's --disk for all execs)" :
		    "the whole "
		    "output is in the sandbox's evidence (sandgate export)");
	if (r->live_dropped > 0)
		exec_notice(a, "%llu bytes of output were not copied here: the "
		    "reader did not take them in time (they are in the "
		    "sandbox's evidence)", r->live_dropped);
	exec_notices_blocked(a, r->network_blocked);
	if (r->network_blocked_truncated)
		exec_notice(a, "more destinations were blocked than the proxy "
		    "keeps per exec: the list is incomplete (the security log "
		    "has them all)");
	if (r->kill_failed)
		exec_notice(a, "warning: processes of the command may still "
		    "run in the sandbox");
	return a;
}

void
exec_report(const struct exec_result *r, long long timeout,
    unsigned long long memory, long long pids)
{
	json_t	*a = exec_notices(r, timeout, memory, pids), *v;
	size_t	 i;

	json_array_foreach(a, i, v)
		log_warnx("%s", json_string_value(v));
	json_decref(a);
}

/* A shared empty array for "nothing blocked" (s:O takes a reference). */
static json_t *
exec_empty_array(void)
{
	static json_t	*empty;

	if (empty == NULL)
		empty = json_array();
	return empty;
}

json_t *
exec_result_json(const struct exec_result *r, const char *run_id)
{
	char	*out, *err;
	size_t	 olen = 0, elen = 0;
	json_t	*o;

	out = exec_utf8_clean(r->out ? r->out : "", r->out ? r->outlen : 0,
	    &olen);
	err = exec_utf8_clean(r->err ? r->err : "", r->err ? r->errlen : 0,
	    &elen);
	if (out == NULL || err == NULL)
		fatal("malloc");
	o = json_pack("{s:i, s:s%, s:s%, s:I, s:b, s:b, s:b, s:b, s:b, s:O, "
	    "s:b, s:s, s:{s:I, s:I, s:I}}",
	    "exit_code", r->exit_code, "stdout", out, olen, "stderr", err,
	    elen, "duration_ms", (json_int_t)r->duration_ms,
	    "timed_out", r->timed_out, "oom_killed", r->oom_killed,
	    "pids_limit_hit", r->pids_limit_hit,
	    "container_stopped", exec_stopped(r),
	    "output_truncated", r->output_truncated,
	    "network_blocked", r->network_blocked ? r->network_blocked :
	    exec_empty_array(), "network_blocked_truncated",
	    r->network_blocked_truncated, "run_id", run_id, "usage",
	    "cpu_ms", (json_int_t)r->cpu_ms,
	    "peak_memory_bytes", (json_int_t)r->peak_memory,
	    "peak_pids", (json_int_t)r->peak_pids);
	if (o != NULL && r->sandbox_killed)
		json_object_set_new(o, "sandbox_killed", json_true());
	if (o != NULL && r->unstarted != NULL)
		json_object_set_new(o, "not_started", json_true());
	if (o != NULL && r->network_replicas != NULL)
		json_object_set(o, "replicas", r->network_replicas);
	if (o != NULL && r->network_end_owed)
		json_object_set_new(o, "network_credential_end_owed",
		    json_true());
	free(out);
	free(err);
	return o;
}


