/* test_logfollow.c: the hash chain a follower judges gaps by (logchain). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "logfollow.h"
#include "logverify.h"

#define ZEROS	"00000000000000000000000000000000" \
		"00000000000000000000000000000000"

/* {"ts":..,"seq":seq,"event":event,"prev":prev,"hash":H} into out. */
static size_t
make_line(char *out, size_t size, long long seq, const char *event,
    const char *prev, char *hash)
{
	int	n;

	n = snprintf(out, size, "{\"ts\":\"2026-01-01T00:00:00.000000Z\","
	    "\"seq\":%lld,\"event\":\"%s\",\"prev\":\"%s\",\"hash\":\"%s\"}",
	    seq, event, prev, ZEROS);
	assert_true(n > 0 && (size_t)n < size);
	assert_int_equal(logverify_hash(out, (size_t)n, hash), 0);
	memcpy(out + n - 2 - 64, hash, 64);
	return (size_t)n;
}

/* Give line seq of a chain whose line before has hash prev. */
static enum logchain_verdict
give(struct logchain *c, long long seq, const char *event, const char *prev,
    char *hash, long long *last)
{
	char		line[512];
	long long	got;
	size_t		len = make_line(line, sizeof(line), seq, event, prev,
			    hash);

	return logchain_line(c, line, len, &got, last);
}

/* The writer's chain of n lines from genesis: h[i] the hash of seq i+1. */
static char (*writer(int n))[65]
{
	char		(*h)[65] = calloc((size_t)n, sizeof(*h));
	char		line[512];
	int		i;

	assert_non_null(h);
	for (i = 0; i < n; i++)
		make_line(line, sizeof(line), i + 1, "egress.blocked",
		    i == 0 ? ZEROS : h[i - 1], h[i]);
	return h;
}

/* Lines in order chain; a line after a lost one is a gap. */
static void
test_gap(void **state)
{
	struct logchain	*c = logchain_new();
	char		(*h)[65] = writer(6), x[65];
	long long	last;

	(void)state;
	assert_int_equal(give(c, 1, "egress.blocked", ZEROS, x, &last),
	    LOGCHAIN_OK);
	assert_int_equal(give(c, 2, "egress.blocked", h[0], x, &last),
	    LOGCHAIN_OK);
	/* seq 3 lost: 4's prev is the hash of 3, never given. */
	assert_int_equal(give(c, 4, "egress.blocked", h[2], x, &last),
	    LOGCHAIN_GAP);
	assert_int_equal(last, 2);
	assert_int_equal(give(c, 5, "egress.blocked", h[3], x, &last),
	    LOGCHAIN_OK);
	free(h);
	logchain_free(c);
}

/*
 * atk20r31 F1: planted lines of consecutive seq (no hash, or a chain of
 * their own from zeros) do not bridge a gap; seq 4 after them is one.
 */
static void
test_planted_bridge(void **state)
{
	struct logchain	*c = logchain_new();
	char		(*h)[65] = writer(6), prev[65], x[65], line[128];
	long long	seq, last;
	int		k, n;

	(void)state;
	give(c, 1, "egress.blocked", ZEROS, x, &last);
	give(c, 2, "egress.blocked", h[0], x, &last);
	for (k = 1; k <= 1000; k++) {
		n = snprintf(line, sizeof(line), "{\"event\":\"log.checkpoint\","
		    "\"seq\":%d}", k);
		assert_int_equal(logchain_line(c, line, (size_t)n, &seq, &last),
		    LOGCHAIN_NONE);
	}
	strcpy(prev, ZEROS);
	for (k = 1; k <= 1000; k++) {
		assert_int_equal(give(c, k, "log.checkpoint", prev, x, &last),
		    LOGCHAIN_OK);
		strcpy(prev, x);
	}
	assert_int_equal(give(c, 4, "egress.blocked", h[2], x, &last),
	    LOGCHAIN_GAP);
	assert_int_equal(last, 1000);
	free(h);
	logchain_free(c);
}

/*
 * A repeat (a copy read again from its start): replays, the chain left
 * as it was (atk37a F2); and back: no gap.
 */
static void
test_repeat(void **state)
{
	struct logchain	*c = logchain_new();
	char		(*h)[65] = writer(6), x[65];
	long long	last;
	int		k;

	(void)state;
	for (k = 1; k <= 3; k++)
		give(c, k, "egress.blocked", k == 1 ? ZEROS : h[k - 2], x,
		    &last);
	for (k = 1; k <= 2; k++)
		assert_int_equal(give(c, k, "egress.blocked", k == 1 ? ZEROS :
		    h[k - 2], x, &last), LOGCHAIN_REPLAY);
	assert_int_equal(give(c, 4, "egress.blocked", h[2], x, &last),
	    LOGCHAIN_OK);
	assert_int_equal(last, 3);
	free(h);
	logchain_free(c);
}

/*
 * atk20r31 F5: a line of seq past the writer's largest (INT64_MAX here)
 * is not counted (no overflow), even with a hash of its own.
 */
static void
test_seq_max(void **state)
{
	struct logchain	*c = logchain_new();
	char		(*h)[65] = writer(3), x[65];
	long long	last;

	(void)state;
	give(c, 1, "egress.blocked", ZEROS, x, &last);
	assert_int_equal(give(c, 9223372036854775807LL, "log.checkpoint",
	    ZEROS, x, &last), LOGCHAIN_NONE);
	assert_int_equal(give(c, 2, "egress.blocked", h[0], x, &last),
	    LOGCHAIN_OK);
	free(h);
	logchain_free(c);
}

/*
 * The bound: past 2 * LOGCHAIN_KEEP lines the oldest hashes are
 * forgotten; a line following one of them is a gap (said), never
 * silence. The last LOGCHAIN_KEEP are still known.
 */
static void
test_bound(void **state)
{
	struct logchain	*c = logchain_new();
	char		first[65], prev[65], x[65], line[512];
	char		(*kept)[65] = calloc(2, sizeof(*kept));
	long long	last, seq;
	int		k, n = 2 * LOGCHAIN_KEEP + 1;

	(void)state;
	strcpy(prev, ZEROS);
	for (k = 1; k <= n; k++) {
		make_line(line, sizeof(line), k, "egress.blocked", prev, x);
		assert_int_not_equal(logchain_line(c, line, strlen(line), &seq,
		    &last), LOGCHAIN_GAP);
		if (k == 1)
			strcpy(first, x);
		if (k == n - LOGCHAIN_KEEP + 1)
			strcpy(kept[0], x);
		strcpy(prev, x);
	}
	assert_true(logchain_forgot(c));
	assert_int_equal(give(c, 2, "egress.blocked", first, x, &last),
	    LOGCHAIN_GAP);
	/* Another line than the one given after it (that is a replay). */
	assert_int_equal(give(c, n - LOGCHAIN_KEEP + 2, "egress.allowed",
	    kept[0], x, &last), LOGCHAIN_OK);
	free(kept);
	logchain_free(c);
}

/* The slot the set used before atk35b F2: (lo ^ hi) of the hash's first
 * 128 bits, masked. */
static unsigned long long
unkeyed_home(const char *hex)
{
	unsigned long long	hi = 0, lo = 0;
	int			i, d;

	for (i = 0; i < 32; i++) {
		d = hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10;
		if (i < 16)
			hi = hi << 4 | (unsigned)d;
		else
			lo = lo << 4 | (unsigned)d;
	}
	return hi ^ lo;
}

/*
 * atk35b F2: lines ground so that their hashes all share the first 32
 * slots of a 4096-slot set under an unkeyed slot, then a line whose prev
 * (never given) starts there too. Each lookup walked the whole run
 * (~COLLIDE probes); with the keyed slot and the probe bound no lookup
 * or insert looks at more than 64, and the unknown prev is still a gap.
 */
#define COLLIDE	1500
static void
test_collide(void **state)
{
	struct logchain	*c = logchain_new();
	char		line[512], ev[64], x[65], probe[65];
	long long	seq, last;
	unsigned	nonce = 0;
	int		k = 0;
	size_t		len;

	(void)state;
	while (k < COLLIDE) {
		snprintf(ev, sizeof(ev), "log.checkpoint.%u", nonce++);
		len = make_line(line, sizeof(line), 1, ev, ZEROS, x);
		if ((unkeyed_home(x) & 4095) >= 32)
			continue;
		assert_int_equal(logchain_line(c, line, len, &seq, &last),
		    LOGCHAIN_OK);
		k++;
	}
	/* A prev never given, its unkeyed slot in the run. */
	do {
		snprintf(ev, sizeof(ev), "egress.blocked.%u", nonce++);
		make_line(line, sizeof(line), 1, ev, ZEROS, probe);
	} while ((unkeyed_home(probe) & 4095) >= 32);
	assert_int_equal(give(c, 5, "egress.blocked", probe, x, &last),
	    LOGCHAIN_GAP);
	assert_in_range(logchain_probes(c), 1, 64);
	logchain_free(c);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_gap),
		cmocka_unit_test(test_planted_bridge),
		cmocka_unit_test(test_repeat),
		cmocka_unit_test(test_seq_max),
		cmocka_unit_test(test_bound),
		cmocka_unit_test(test_collide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
