/*
 * policybench.c: load time and match cost of the policy engine as the
 * number of entries grows.
 *
 *   policybench DIR N [CALLS]
 *
 * Writes DIR/bench.yaml with N entries (8 in 10 exact names, 1 in 10
 * "*.suffix" wildcards, 1 in 10 IPv4 /32 literals), loads DIR with
 * policy_load_dir() (timed, best of 3), then times CALLS policy_decide()
 * calls (default 1,000,000) on hits and on misses, cycling through 1,024
 * pre-normalized queries of each kind spread over the whole table (at
 * 100,000 entries each one misses the CPU caches), and on "hot" hits: 8
 * names spread the same way and asked again and again, as a sandbox asks
 * for its few registries. Each timing is the best of PB_ROUNDS rounds, so
 * that other load on the machine counts less. Prints one JSON line.
 *
 * Limits: N at most SG_POLICY_ENTRIES_MAX; the file must stay under
 * SG_POLICY_FILE_MAX bytes (about 70 bytes an entry). Writes only DIR.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "host.h"
#include "policy.h"
#include "reason.h"
#include "sglimits.h"

#define PB_QUERIES	1024
#define PB_HOT		8	/* distinct names of the hot set */
#define PB_ROUNDS	5

struct pb_query {
	struct host	host;
	uint16_t	port;
};

static uint64_t	now_ns(void);
static void	print_diags(const struct policy_diags *);
static void	entry_name(size_t, char *, size_t);
static int	write_policy(const char *, size_t);
static void	make_queries(size_t, int, size_t, struct pb_query *);
static double	time_decide(const struct policy *, const struct pb_query *,
		    size_t, long, enum sg_reason, long *);

static uint64_t
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The first few diagnostics, to stderr. */
static void
print_diags(const struct policy_diags *d)
{
	char	 buf[1024];
	size_t	 i;

	for (i = 0; i < d->n && i < 5; i++) {
		policy_diag_format(&d->v[i], buf, sizeof(buf));
		fprintf(stderr, "%s\n", buf);
	}
}

/* The host pattern of entry i. */
static void
entry_name(size_t i, char *buf, size_t size)
{
	switch (i % 10) {
	case 8:
		snprintf(buf, size, "\"*.w%zu.bench.test\"", i);
		break;
	case 9:
		/* 10.0.0.0/8 holds 16M addresses: enough for any N */
		snprintf(buf, size, "10.%zu.%zu.%zu", (i >> 16) & 255,
		    (i >> 8) & 255, i & 255);
		break;
	default:
		snprintf(buf, size, "h%zu.bench.test", i);
		break;
	}
}

static int
write_policy(const char *dir, size_t n)
{
	char	 path[4096], name[128];
	FILE	*f;
	size_t	 i;

	snprintf(path, sizeof(path), "%s/bench.yaml", dir);
	f = fopen(path, "w");
	if (f == NULL) {
		fprintf(stderr, "policybench: cannot write \"%s\": %s\n", path,
		    strerror(errno));
		return -1;
	}
	fprintf(f, "description: generated for the policy benchmark\n"
	    "owner: bench@example.invalid\nallow:\n");
	for (i = 0; i < n; i++) {
		entry_name(i, name, sizeof(name));
		fprintf(f, "  - host: %s\n    ports: [443]\n"
		    "    rationale: r\n", name);
	}
	return fclose(f) == 0 ? 0 : -1;
}

/* nq normalized hosts: existing entries (hit) or absent names. */
static void
make_queries(size_t n, int hit, size_t nq, struct pb_query *q)
{
	char		 name[128];
	const char	*cause;
	size_t		 i, k;

	for (k = 0; k < nq; k++) {
		i = (k * 2654435761u) % n;	/* spread over the entries */
		if (!hit)
			snprintf(name, sizeof(name), "miss%zu.other.test", k);
		else if (i % 10 == 8)
			snprintf(name, sizeof(name), "a.b.w%zu.bench.test", i);
		else if (i % 10 == 9)
			snprintf(name, sizeof(name), "10.%zu.%zu.%zu",
			    (i >> 16) & 255, (i >> 8) & 255, i & 255);
		else
			snprintf(name, sizeof(name), "h%zu.bench.test", i);
		if (host_normalize(name, strlen(name), &q[k].host,
		    &cause) == -1) {
			fprintf(stderr, "policybench: %s: %s\n", name, cause);
			exit(1);
		}
		q[k].port = 443;
	}
}

/* ns per policy_decide call; *wrong counts unexpected answers. */
static double
time_decide(const struct policy *pol, const struct pb_query *q, size_t nq,
    long calls, enum sg_reason want_miss, long *wrong)
{
	struct policy_query	 pq;
	struct policy_match	 m;
	enum sg_reason		 r;
	uint64_t		 t0;
	long			 i;

	memset(&pq, 0, sizeof(pq));
	pq.all_sets = 1;
	pq.now = time(NULL);
	*wrong = 0;
	t0 = now_ns();
	for (i = 0; i < calls; i++) {
		pq.host = &q[(size_t)i % nq].host;
		pq.port = q[(size_t)i % nq].port;
		r = policy_decide(pol, &pq, &m);
		if (want_miss == SG_REASON_NONE ? r != SG_REASON_NONE :
		    r == SG_REASON_NONE)
			(*wrong)++;
	}
	return (double)(now_ns() - t0) / (double)calls;
}

int
main(int argc, char **argv)
{
	static struct pb_query	 hits[PB_QUERIES], misses[PB_QUERIES];
	static struct pb_query	 hot[PB_HOT];
	struct policy_diags	 diags;
	struct policy		*pol = NULL;
	uint64_t		 t0, best = UINT64_MAX;
	double			 hit_ns, miss_ns, hot_ns, t;
	long			 calls = 1000000, whit, wmiss, w;
	char			*end;
	size_t			 n;
	int			 run;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: policybench DIR N [CALLS]\n");
		return 2;
	}
	n = strtoul(argv[2], &end, 10);
	if (*end != '\0' || n == 0 || n > SG_POLICY_ENTRIES_MAX)
		return 2;
	if (argc == 4)
		calls = strtol(argv[3], &end, 10);
	if (calls <= 0 || write_policy(argv[1], n) == -1)
		return 1;
	for (run = 0; run < 3; run++) {
		policy_free(pol);
		policy_diags_init(&diags);
		t0 = now_ns();
		pol = policy_load_dir(argv[1], time(NULL), &diags);
		if (now_ns() - t0 < best)
			best = now_ns() - t0;
		if (pol == NULL) {
			fprintf(stderr, "policybench: load failed, %zu "
			    "errors\n", diags.nerrors);
			print_diags(&diags);
			policy_diags_release(&diags);
			return 1;
		}
		policy_diags_release(&diags);
	}
	make_queries(n, 1, PB_QUERIES, hits);
	make_queries(n, 0, PB_QUERIES, misses);
	make_queries(n, 1, PB_HOT, hot);
	hit_ns = miss_ns = hot_ns = 1e18;
	whit = wmiss = 0;
	for (run = 0; run < PB_ROUNDS; run++) {
		t = time_decide(pol, hits, PB_QUERIES, calls, SG_REASON_NONE,
		    &w);
		hit_ns = t < hit_ns ? t : hit_ns;
		whit += w;
		t = time_decide(pol, hot, PB_HOT, calls, SG_REASON_NONE, &w);
		hot_ns = t < hot_ns ? t : hot_ns;
		whit += w;
		t = time_decide(pol, misses, PB_QUERIES, calls,
		    SG_REASON_NOT_ALLOWLISTED, &w);
		miss_ns = t < miss_ns ? t : miss_ns;
		wmiss += w;
	}
	printf("{\"entries\":%zu,\"load_ms\":%.1f,\"calls\":%ld,"
	    "\"hit_ns\":%.1f,\"hot_ns\":%.1f,\"miss_ns\":%.1f,"
	    "\"wrong\":%ld}\n", n, (double)best / 1e6, calls, hit_ns, hot_ns,
	    miss_ns, whit + wmiss);
	policy_free(pol);
	return whit + wmiss == 0 ? 0 : 1;
}
