/*
 * test_regpart.c: the block log's registered part follows the registry
 * and the running execs (proxy_log_blocks_registry), and a change costs
 * what it touched: with 1,000 registered sandboxes each /register,
 * /unregister, /execs and /execs/end asks "registered?" only of the
 * sandboxes it registered or unregistered, not of every one (it asked
 * ~2 x the registry each time, ~0.2 s of a stalled loop per call at 4,000
 * sandboxes, atk15r14 F1), and a registered sandbox keeps its place
 * through the changes of others.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "blocklog.h"
#include "execcred.h"
#include "proxy.h"
#include "registry.h"

#define NSBX		1000	/* registered, each with an identity */
#define CHURN		50	/* rounds of the changes below */
#define ASKS_MAX	4	/* "registered?" per change, at most */

static struct proxy	px;
static unsigned long	asks;

/* The proxy's question (registry or a running exec), counted. */
static int
registered(void *arg, const char *identity)
{
	struct proxy	*p = arg;

	asks++;
	return registry_has_sandbox(p->registry, identity) ||
	    execcred_running(p->execs, identity, NULL);
}

static void
sbx_name(char *buf, size_t size, const char *prefix, int i)
{
	snprintf(buf, size, "%s%d", prefix, i);
}

static void
reg(const char *addr, const char *sbx, const char *sets)
{
	const char	*cause = NULL;

	assert_int_equal(registry_add(px.registry, addr, sbx, sets, 0,
	    &cause), 0);
}

/* A blocked attempt of identity: it gets its place in the table. */
static void
seen(const char *identity)
{
	struct blocklog_event	ev;
	struct timespec		now = { 1000, 0 };

	memset(&ev, 0, sizeof(ev));
	ev.identity = ev.sandbox = identity;
	ev.host = "b.invalid";
	ev.port = 443;
	ev.reason = SG_REASON_NOT_ALLOWLISTED;
	ev.message = "network blocked by policy: x";
	(void)blocklog_note(px.blocks, &ev, 1000000, &now);
	assert_int_not_equal(blocklog_registered(px.blocks, identity), -1);
}

static int
setup(void **state)
{
	char	addr[32], sbx[32];
	int	i;

	(void)state;
	memset(&px, 0, sizeof(px));
	px.registry = registry_new();
	px.execs = execcred_new();
	assert_non_null(px.registry);
	assert_non_null(px.execs);
	assert_int_equal(proxy_log_blocks_init(&px), 0);
	blocklog_set_registered(px.blocks, registered, &px);
	for (i = 0; i < NSBX; i++) {
		snprintf(addr, sizeof(addr), "10.1.%d.%d", i / 250, i % 250 + 1);
		sbx_name(sbx, sizeof(sbx), "sbx_r", i);
		reg(addr, sbx, "test");
	}
	proxy_log_blocks_registry(&px);
	for (i = 0; i < NSBX; i++) {
		sbx_name(sbx, sizeof(sbx), "sbx_r", i);
		seen(sbx);
	}
	seen("sbx_gone");	/* seen, never registered */
	return 0;
}

static int
teardown(void **state)
{
	(void)state;
	blocklog_free(px.blocks);
	registry_free(px.registry);
	execcred_free(px.execs);
	return 0;
}

/* One change of the registry or the execs, as the control API makes. */
struct change {
	const char	*what;
	const char	*addr;		/* register addr as sbx (sets) */
	const char	*sbx;
	const char	*sets;
	const char	*unregister;	/* sandbox or address */
	const char	*exec_run;	/* an exec of sbx starts */
	const char	*end_run;	/* an exec ends */
	const char	*check;		/* then this identity is in */
	int		 part;		/* 1: the registered part, 0: not */
};

static const struct change changes[] = {
	{ "a new sandbox registered", "10.9.0.1", "sbx_new", "test",
	    NULL, NULL, NULL, "sbx_r0", 1 },
	{ "it is seen", NULL, NULL, NULL, NULL, NULL, NULL, NULL, 0 },
	{ "and unregistered", NULL, NULL, NULL, "sbx_new", NULL, NULL,
	    "sbx_new", 0 },
	{ "sbx_r1's address taken", "10.1.0.2", "sbx_other", "test",
	    NULL, NULL, NULL, "sbx_r1", 0 },
	{ "an exec of sbx_r1 starts", NULL, "sbx_r1", NULL, NULL, "run1",
	    NULL, "sbx_r1", 1 },
	{ "it ends", NULL, NULL, NULL, NULL, NULL, "run1", "sbx_r1", 0 },
	{ "sbx_r1 registered again", "10.1.0.2", "sbx_r1", "test", NULL,
	    NULL, NULL, "sbx_r1", 1 },
	{ "sbx_r0 registered again, other sets", "10.1.0.1", "sbx_r0",
	    "test,extra", NULL, NULL, NULL, "sbx_r0", 1 },
	{ "and back", "10.1.0.1", "sbx_r0", "test", NULL, NULL, NULL,
	    "sbx_r0", 1 },
	{ "an exec of a sandbox never registered", NULL, "sbx_gone", NULL,
	    NULL, "run2", NULL, "sbx_gone", 1 },
	{ "it ends", NULL, NULL, NULL, NULL, NULL, "run2", "sbx_gone", 0 },
	{ "sbx_r2 unregistered by address", NULL, NULL, NULL, "10.1.0.3",
	    NULL, NULL, "sbx_r2", 0 },
	{ "and registered again", "10.1.0.3", "sbx_r2", "test", NULL, NULL,
	    NULL, "sbx_r2", 1 },
};

static void
apply(const struct change *c)
{
	const char	*cause = NULL;
	char		 tok[65];

	if (c->exec_run != NULL) {
		memset(tok, 'a', 64);
		tok[64] = '\0';
		assert_int_equal(execcred_add(px.execs, tok, c->sbx,
		    c->exec_run, &cause), 0);
	} else if (c->addr != NULL)
		reg(c->addr, c->sbx, c->sets);
	if (c->unregister != NULL) {
		assert_int_not_equal(registry_remove_sandbox(px.registry,
		    c->unregister) + registry_remove_address(px.registry,
		    c->unregister), 0);
		execcred_remove_sandbox(px.execs, c->unregister);
	}
	if (c->end_run != NULL)
		assert_int_equal(execcred_remove(px.execs, c->end_run), 1);
	if (c->addr == NULL && c->unregister == NULL && c->exec_run == NULL &&
	    c->end_run == NULL)
		seen("sbx_new");
}

static void
test_changes_ask_what_changed(void **state)
{
	const struct change	*c;
	unsigned long		 before;
	size_t			 i;
	int			 round;

	(void)state;
	for (round = 0; round < CHURN; round++) {
		for (i = 0; i < sizeof(changes) / sizeof(changes[0]); i++) {
			c = &changes[i];
			apply(c);
			before = asks;
			proxy_log_blocks_registry(&px);
			if (asks - before > ASKS_MAX)
				fail_msg("%s: %lu sandboxes asked about with %d "
				    "registered", c->what, asks - before, NSBX);
			if (c->check != NULL && blocklog_registered(px.blocks,
			    c->check) != c->part)
				fail_msg("round %d, %s: %s is %sin the "
				    "registered part", round, c->what,
				    c->check, c->part ? "not " : "");
		}
	}
	/* Every other sandbox kept its place through the churn. */
	for (i = 3; i < NSBX; i++) {
		char	sbx[32];

		sbx_name(sbx, sizeof(sbx), "sbx_r", (int)i);
		assert_int_equal(blocklog_registered(px.blocks, sbx), 1);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_changes_ask_what_changed,
		    setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
