/*
 * zforge MODE OUT: an exec's first process (no shell before it) that the
 * kill must take while another exec of the sandbox is in progress. It
 * rewrites its own SANDGATE_RUN marker in place (the environment
 * /proc/PID/environ shows is this process's memory): MODE "erase" blanks
 * it, its name too, to X's, "forge" writes the marker of another run it finds in
 * /proc/PID/environ of a process of the sandbox user. Then it starts a
 * thread that appends a line to OUT every 0.1 s for 60 s and ends its
 * main thread (the exit system call, which ends that thread only): the
 * leader shows Z, and the kernel shows it in the root cgroups, while the
 * thread stays in its run's memory cgroup (atk46b F1: with the marker
 * erased, such a leader looked like the runtime's start of another exec
 * and was spared; F2: with another run's marker, it looked like that
 * run's). Prints "marker erase" or "marker forge VALUE" first.
 */
#include <sys/syscall.h>

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define KEY	"SANDGATE_RUN="

extern char	**environ;

static const char	*out;

/* Another run's marker of the same length as own, into buf; 0, or -1. */
static int
other_run(const char *own, char *buf, size_t size)
{
	char		 path[300], env[65536];
	struct dirent	*de;
	DIR		*d;
	ssize_t		 n;
	size_t		 len = strlen(own), at;
	int		 fd, found = -1;

	if ((d = opendir("/proc")) == NULL)
		return -1;
	while (found == -1 && (de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/environ", de->d_name);
		if ((fd = open(path, O_RDONLY)) == -1)
			continue;
		n = read(fd, env, sizeof(env) - 1);
		close(fd);
		if (n <= 0)
			continue;
		env[n] = '\0';
		for (at = 0; at < (size_t)n; at += strlen(env + at) + 1) {
			if (strncmp(env + at, KEY, strlen(KEY)) != 0)
				continue;
			if (strlen(env + at + strlen(KEY)) == len &&
			    strcmp(env + at + strlen(KEY), own) != 0 &&
			    len < size) {
				memcpy(buf, env + at + strlen(KEY), len + 1);
				found = 0;
			}
			break;
		}
	}
	closedir(d);
	return found;
}

static void *
beat(void *arg)
{
	FILE	*f;
	int	 i;

	(void)arg;
	for (i = 0; i < 600; i++) {
		if ((f = fopen(out, "a")) != NULL) {
			fprintf(f, "%d %ld\n", i, (long)time(NULL));
			fclose(f);
		}
		usleep(100 * 1000);
	}
	return NULL;
}

int
main(int argc, char **argv)
{
	pthread_t	 t;
	char		*val = NULL, other[128];
	int		 i;

	if (argc != 3)
		return 2;
	out = argv[2];
	for (i = 0; environ[i] != NULL; i++)
		if (strncmp(environ[i], KEY, strlen(KEY)) == 0)
			val = environ[i] + strlen(KEY);
	if (val == NULL) {
		printf("marker none\n");
		return 1;
	}
	if (strcmp(argv[1], "forge") == 0) {
		if (other_run(val, other, sizeof(other)) == -1) {
			printf("marker forge none-found\n");
			return 1;
		}
		memcpy(val, other, strlen(other));
		printf("marker forge %s\n", val);
	} else {
		/* the key too: no SANDGATE_RUN at all */
		memset(val - strlen(KEY), 'X', strlen(KEY) + strlen(val));
		printf("marker erase\n");
	}
	fflush(stdout);
	if (pthread_create(&t, NULL, beat, NULL) != 0)
		return 1;
	usleep(200 * 1000);
	syscall(SYS_exit, 0);
	return 0;
}
