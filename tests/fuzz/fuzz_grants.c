/*
 * fuzz_grants.c: arbitrary bytes as grants.json, read as the proxy reads
 * it at start (grants_load_text). Every grant it takes must be one
 * grants_add() accepts, given before "now", ending within GRANTS_SECS_MAX
 * of it on the wall clock and on the expiry clock; what it lists must
 * load again whole into another table; expiry at the latest deadline
 * must empty the table.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <jansson.h>

#include "grants.h"

#define FZ_NOW		((time_t)1796137200)	/* 2026-12-01T15:00:00Z */
#define FZ_CLOCK	((time_t)1000)		/* grants_clock() then */

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static size_t	fz_taken;

/* Each grant taken holds the rules the reader promises. */
static void
fz_check(const struct grant *g, const char *cause, void *arg)
{
	(void)arg;
	if (cause != NULL) {
		if (cause[0] == '\0')
			__builtin_trap();
		return;
	}
	fz_taken++;
	if (g->granted > FZ_NOW || g->expires <= g->granted ||
	    g->expires - g->granted > GRANTS_SECS_MAX ||
	    g->deadline < FZ_CLOCK ||
	    g->deadline - FZ_CLOCK > GRANTS_SECS_MAX ||
	    g->port < 1 || g->port > 65535 || g->sandbox[0] == '\0' ||
	    g->rationale[0] == '\0' || g->by[0] == '\0')
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct grants	*t, *u;
	json_t		*a;	/* what t lists */
	char		 err[256];
	long		 n;
	size_t		 listed;

	if ((t = grants_new()) == NULL || (u = grants_new()) == NULL)
		__builtin_trap();
	fz_taken = 0;
	n = grants_load_text(t, (const char *)data, size, FZ_NOW, FZ_CLOCK,
	    fz_check, NULL, err, sizeof(err));
	if (n == -1 ? err[0] == '\0' : (size_t)n != fz_taken)
		__builtin_trap();
	/* Entries for the same destination replace each other. */
	a = grants_json(t, NULL);
	listed = json_array_size(a);
	if (a == NULL || (n >= 0 ? listed > (size_t)n : listed != 0))
		__builtin_trap();
	if (grants_load_json(u, a, FZ_NOW, FZ_CLOCK, NULL, NULL) != listed)
		__builtin_trap();
	json_decref(a);
	if (grants_expire(t, FZ_CLOCK + GRANTS_SECS_MAX, NULL, NULL) !=
	    listed || json_array_size(a = grants_json(t, NULL)) != 0)
		__builtin_trap();
	json_decref(a);
	grants_free(t);
	grants_free(u);
	return 0;
}
