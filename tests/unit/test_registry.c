/*
 * test_registry.c: client address -> sandbox (registry.h). Lookups
 * find exactly what is registered, through re-registers, removals by
 * address and by sandbox, IPv4-mapped addresses and the table's growth;
 * a connection's entry outlives its removal; and a lookup costs one
 * chain, not the registry: with 4,000 addresses registered, lookups of
 * unregistered addresses look at about one entry each (the list walk
 * looked at all 4,000: 4,096 idle connections of one unregistered
 * client made each /register and /unregister walk 16 million entries,
 * 122 ms of a stalled loop, atk15r15 F1). Likewise a blocked request
 * notes itself in its own sandbox's running execs only, not after a look
 * at every running exec of every sandbox (460-1,250 us of proxy CPU per
 * blocked request with 4,000 execs running, atk15r15 F5).
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "execcred.h"
#include "proxy.h"
#include "registry.h"

#define NREG		4000	/* registered addresses */
#define NMISS		1000	/* lookups of unregistered addresses */
#define PER_LOOKUP	4	/* entries looked at per lookup, on average */

static void
reg(struct registry *r, const char *addr, const char *sbx, int extra)
{
	const char	*cause = NULL;

	assert_int_equal(registry_add(r, addr, sbx, "test", extra, &cause),
	    0);
}

/* The sandbox addr is registered as, or NULL. */
static const char *
who(struct registry *r, const char *addr)
{
	static char		 buf[128];
	struct sockaddr_storage	 ss;
	struct sockaddr_in	*s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)&ss;
	struct proxy_client	 pc;

	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &s4->sin_addr) == 1)
		s4->sin_family = AF_INET;
	else {
		assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr),
		    1);
		s6->sin6_family = AF_INET6;
	}
	memset(&pc, 0, sizeof(pc));
	if (registry_lookup(r, (struct sockaddr *)&ss, &pc) == -1)
		return NULL;
	snprintf(buf, sizeof(buf), "%s", pc.sandbox);
	registry_client_release(&pc);
	return buf;
}

static void
addr_of(char *buf, size_t size, const char *net, int i)
{
	snprintf(buf, size, "%s.%d.%d", net, i / 250, i % 250 + 1);
}

/* NREG addresses 10.1.x.y, as sandboxes sbx_0.. */
static void
fill_registry(struct registry *r)
{
	char	a[64], s[64];
	int	i;

	for (i = 0; i < NREG; i++) {
		addr_of(a, sizeof(a), "10.1", i);
		snprintf(s, sizeof(s), "sbx_%d", i);
		reg(r, a, s, 0);
	}
}

static void
test_lookups_follow_changes(void **state)
{
	struct registry	*r = registry_new();

	(void)state;
	assert_non_null(r);
	assert_null(who(r, "10.0.0.1"));
	reg(r, "10.0.0.1", "sbx_a", 0);
	reg(r, "10.0.0.2", "sbx_a", 1);
	reg(r, "fd00::5", "sbx_b", 0);
	assert_string_equal(who(r, "10.0.0.1"), "sbx_a");
	assert_string_equal(who(r, "10.0.0.2"), "sbx_a");
	assert_string_equal(who(r, "fd00::5"), "sbx_b");
	/* an IPv4-mapped address is registered as the IPv4 one */
	reg(r, "::ffff:10.0.0.7", "sbx_d", 1);
	assert_string_equal(who(r, "10.0.0.7"), "sbx_d");
	assert_int_equal(registry_remove_address(r, "10.0.0.7"), 1);
	/* another sandbox takes the address */
	reg(r, "10.0.0.2", "sbx_c", 0);
	assert_string_equal(who(r, "10.0.0.2"), "sbx_c");
	assert_int_equal(registry_count(r), 3);
	/* a session that moved leaves its old address */
	reg(r, "10.0.0.9", "sbx_a", 0);
	assert_null(who(r, "10.0.0.1"));
	assert_string_equal(who(r, "10.0.0.9"), "sbx_a");
	/* by address, then by sandbox */
	assert_int_equal(registry_remove_address(r, "10.0.0.9"), 1);
	assert_null(who(r, "10.0.0.9"));
	assert_int_equal(registry_remove_sandbox(r, "sbx_c"), 1);
	assert_null(who(r, "10.0.0.2"));
	assert_string_equal(who(r, "fd00::5"), "sbx_b");
	assert_int_equal(registry_count(r), 1);
	registry_free(r);
}

static void
test_entry_outlives_removal(void **state)
{
	struct registry		*r = registry_new();
	struct sockaddr_in	 sa;
	struct proxy_client	 pc;

	(void)state;
	reg(r, "10.0.0.1", "sbx_a", 0);
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, "10.0.0.1", &sa.sin_addr);
	memset(&pc, 0, sizeof(pc));
	assert_int_equal(registry_lookup(r, (struct sockaddr *)&sa, &pc), 0);
	assert_int_equal(registry_remove_sandbox(r, "sbx_a"), 1);
	assert_null(who(r, "10.0.0.1"));
	assert_string_equal(pc.sandbox, "sbx_a");	/* still held */
	registry_client_release(&pc);
	registry_free(r);
}

static void
test_many_found_each_by_its_chain(void **state)
{
	struct registry		*r = registry_new();
	char			 a[64], s[64];
	unsigned long long	 before;
	int			 i;

	(void)state;
	fill_registry(r);
	assert_int_equal(registry_count(r), NREG);
	for (i = 0; i < NREG; i++) {
		addr_of(a, sizeof(a), "10.1", i);
		snprintf(s, sizeof(s), "sbx_%d", i);
		assert_string_equal(who(r, a), s);
	}
	before = registry_compared(r);
	for (i = 0; i < NMISS; i++) {
		addr_of(a, sizeof(a), "10.2", i);
		assert_null(who(r, a));
	}
	if (registry_compared(r) - before > (unsigned long long)NMISS *
	    PER_LOOKUP)
		fail_msg("%llu entries looked at for %d lookups in a registry "
		    "of %d", registry_compared(r) - before, NMISS, NREG);
	/* half removed: the rest still found, the removed not */
	for (i = 0; i < NREG; i += 2) {
		snprintf(s, sizeof(s), "sbx_%d", i);
		assert_int_equal(registry_remove_sandbox(r, s), 1);
	}
	for (i = 0; i < NREG; i++) {
		addr_of(a, sizeof(a), "10.1", i);
		if (i % 2 == 0)
			assert_null(who(r, a));
		else
			assert_non_null(who(r, a));
	}
	registry_free(r);
}

static void
exec_add(struct execcred *t, int i, const char *sbx, const char *run)
{
	const char	*cause = NULL;
	char		 tok[65];

	snprintf(tok, sizeof(tok), "%032x", i);
	assert_int_equal(execcred_add(t, tok, sbx, run, &cause), 0);
}

/* NREG execs of as many sandboxes, then 3 of sbx_f (run_f1..3). */
static void
fill_execs(struct execcred *t)
{
	char	s[64], r[64];
	int	i;

	for (i = 0; i < NREG; i++) {
		snprintf(s, sizeof(s), "sbx_%d", i);
		snprintf(r, sizeof(r), "run_%d", i);
		exec_add(t, i, s, r);
	}
	exec_add(t, NREG, "sbx_f", "run_f1");
	exec_add(t, NREG + 1, "sbx_f", "run_f2");
	exec_add(t, NREG + 2, "sbx_f", "run_f3");
}

/* How many blocks run of sbx has kept. */
static size_t
exec_blocks(struct execcred *t, const char *sbx, const char *run)
{
	json_t	*a;
	size_t	 n;
	int	 trunc = 0;

	if ((a = execcred_blocks_json(t, sbx, run, 0, 1, &trunc)) == NULL)
		return (size_t)-1;
	n = json_array_size(a);
	json_decref(a);
	return n;
}

static void
test_block_looks_at_its_sandbox_execs(void **state)
{
	struct execcred		*t = execcred_new();
	char			 host[64];
	unsigned long long	 before;
	int			 i;

	(void)state;
	fill_execs(t);
	before = execcred_visited(t);
	for (i = 0; i < NMISS; i++) {
		snprintf(host, sizeof(host), "h%d.invalid", i % 8);
		execcred_note_block(t, (unsigned long long)i + 1, "sbx_f",
		    NULL, host, 443, "not_allowlisted", "blocked");
	}
	if (execcred_visited(t) - before > (unsigned long long)NMISS * 3)
		fail_msg("%llu execs looked at for %d blocks of a sandbox "
		    "with 3 of %d running", execcred_visited(t) - before,
		    NMISS, NREG + 3);
	/* each of the sandbox's execs has them, no other exec any */
	assert_int_equal(exec_blocks(t, "sbx_f", "run_f1"), 8);
	assert_int_equal(exec_blocks(t, "sbx_f", "run_f3"), 8);
	assert_int_equal(exec_blocks(t, "sbx_7", "run_7"), 0);
	/* the middle one ends: the others still note blocks */
	assert_int_equal(execcred_remove(t, "run_f2"), 1);
	execcred_note_block(t, NMISS + 1, "sbx_f", "run_f3", "x.invalid",
	    443, "not_allowlisted", "blocked");
	assert_int_equal(exec_blocks(t, "sbx_f", "run_f3"), 9);
	assert_int_equal(exec_blocks(t, "sbx_f", "run_f1"), 8);
	assert_int_equal(execcred_remove_sandbox(t, "sbx_f"), 2);
	before = execcred_visited(t);
	execcred_note_block(t, NMISS + 2, "sbx_f", NULL, "y.invalid", 443,
	    "not_allowlisted", "blocked");
	assert_int_equal(execcred_visited(t), before);
	/* a sandbox's execs come back after all were gone */
	exec_add(t, NREG + 3, "sbx_f", "run_f4");
	execcred_note_block(t, NMISS + 3, "sbx_f", NULL, "z.invalid", 443,
	    "not_allowlisted", "blocked");
	assert_int_equal(exec_blocks(t, "sbx_f", "run_f4"), 1);
	execcred_free(t);
}

/* A credential from sandbox sbx_f with 3 execs among NREG others'. */
static void
test_credential_looks_at_its_sandbox_execs(void **state)
{
	struct execcred		*t = execcred_new();
	char			 tok[65], run[EXECCRED_RUN_MAX + 1];
	unsigned long long	 before;
	int			 i, trunc;
	json_t			*a;

	(void)state;
	fill_execs(t);
	before = execcred_visited(t);
	memset(tok, 'f', 64);
	tok[64] = '\0';
	for (i = 0; i < NMISS; i++)
		assert_null(execcred_run(t, tok, "sbx_f", run));
	for (i = 0; i < NMISS; i++) {
		assert_true(execcred_running(t, "sbx_f", "run_f2"));
		a = execcred_blocks_json(t, "sbx_f", "run_f1", 0, 1, &trunc);
		assert_non_null(a);
		json_decref(a);
	}
	if (execcred_visited(t) - before > (unsigned long long)NMISS * 3 *
	    PER_LOOKUP)
		fail_msg("%llu execs looked at for %d credentials and run "
		    "lookups of a sandbox with 3 of %d running",
		    execcred_visited(t) - before, NMISS, NREG + 3);
	snprintf(tok, sizeof(tok), "%032x", NREG + 1);
	assert_string_equal(execcred_run(t, tok, "sbx_f", run), "run_f2");
	snprintf(tok, sizeof(tok), "%032x", 7);	/* sbx_7's */
	assert_null(execcred_run(t, tok, "sbx_f", run));
	assert_string_equal(execcred_run(t, tok, "sbx_7", run), "run_7");
	assert_false(execcred_running(t, "sbx_f", "run_7"));
	assert_int_equal(execcred_remove(t, "run_f2"), 1);
	assert_false(execcred_running(t, "sbx_f", "run_f2"));
	assert_true(execcred_running(t, "sbx_f", "run_f3"));
	assert_int_equal(execcred_remove_sandbox(t, "sbx_f"), 2);
	assert_int_equal(execcred_count(t), NREG);
	execcred_free(t);
}

/*
 * atk15r16 F2: an address unregisters as it registers: "::ffff:a.b.c.d"
 * and "FD00::5" removed nothing (compared raw). F3: an address key
 * matched sandbox names, and a sandbox key addresses.
 */
static void
test_address_and_sandbox_keys(void **state)
{
	struct registry	*r = registry_new();

	(void)state;
	reg(r, "::ffff:127.0.16.5", "victim", 0);
	reg(r, "FD00::5", "v6", 0);
	assert_int_equal(registry_remove_address(r, "::ffff:127.0.16.5"), 1);
	assert_int_equal(registry_remove_address(r, "FD00::5"), 1);
	assert_null(who(r, "127.0.16.5"));
	assert_null(who(r, "fd00::5"));
	assert_int_equal(registry_count(r), 0);
	/* a sandbox named like an address keeps its own */
	reg(r, "127.0.16.7", "127.0.16.9", 0);
	reg(r, "127.0.16.9", "other", 0);
	assert_string_equal(who(r, "127.0.16.7"), "127.0.16.9");
	assert_int_equal(registry_remove_address(r, "127.0.16.9"), 1);
	assert_string_equal(who(r, "127.0.16.7"), "127.0.16.9");
	assert_int_equal(registry_remove_sandbox(r, "127.0.16.7"), 0);
	assert_int_equal(registry_remove_sandbox(r, "127.0.16.9"), 1);
	assert_int_equal(registry_count(r), 0);
	registry_free(r);
}

/*
 * atk15r16 F6: the unregistered sandboxes are bounded (the oldest past
 * REGISTRY_GONE_MAX forgotten, its time the floor that still refuses
 * tokens issued before it), and marked changed only when they change:
 * a register or an unregister by address leaves them unwritten.
 */
static void
test_gone_bounded_and_written_when_changed(void **state)
{
	struct registry	*r = registry_new();
	time_t		 t0 = time(NULL) - 3600;
	char		 s[64];
	json_t		*o;
	int		 i;

	(void)state;
	for (i = 0; i < REGISTRY_GONE_MAX + 100; i++) {
		snprintf(s, sizeof(s), "gone_%d", i);
		registry_gone_set(r, s, t0 + i);
	}
	o = registry_gone_json(r);
	assert_int_equal(json_object_size(o), REGISTRY_GONE_MAX);
	json_decref(o);
	assert_int_equal(registry_gone_at(r, "gone_99"), 0);
	assert_int_equal(registry_gone_at(r, "gone_100"), t0 + 100);
	assert_int_equal(registry_gone_floor(r), t0 + 99);
	assert_true(registry_gone_dirty(r));
	registry_gone_saved(r);
	reg(r, "10.0.0.1", "sbx_a", 0);
	assert_int_equal(registry_remove_address(r, "10.0.0.1"), 1);
	registry_gone_clear(r, "never_gone");
	assert_false(registry_gone_dirty(r));
	registry_gone_clear(r, "gone_100");
	assert_true(registry_gone_dirty(r));
	assert_int_equal(registry_gone_at(r, "gone_100"), 0);
	registry_free(r);
}

static time_t	fake_wall, fake_boot;

static void
fake_clock(time_t *wall, time_t *boot)
{
	*wall = fake_wall;
	*boot = fake_boot;
}

/*
 * atk1921j F2: this replica's wall clock ahead for a moment (40 days,
 * then right again) forgets no removal, at a removal or at a load; one
 * forgotten by age (the boot clock went on as well) raises the floor to
 * its time, and the floor stays: its token is refused all the same.
 */
static void
test_gone_not_forgotten_by_a_clock_jump(void **state)
{
	struct registry	*r = registry_new(), *r2 = registry_new();
	time_t		 t0 = 1800000000, ahead = 40 * 86400;
	json_t		*o;

	(void)state;
	registry_set_clock(r, fake_clock);
	registry_set_clock(r2, fake_clock);
	fake_wall = t0;
	fake_boot = 1000;
	registry_gone_set(r, "sbx_x", t0);
	fake_wall = t0 + ahead;		/* wall jumps, boot does not */
	fake_boot = 1010;
	registry_gone_set(r, "sbx_y", t0 + 10);
	assert_int_equal(registry_gone_at(r, "sbx_x"), t0);
	assert_true(registry_gone_seen(r) <= t0 + 10);
	/* a restart on the clock ahead: loaded, nothing forgotten */
	o = registry_gone_json(r);
	registry_gone_load(r2, o, registry_gone_floor(r),
	    registry_gone_seen(r));
	json_decref(o);
	fake_boot = 5;			/* booted again */
	registry_gone_set(r2, "sbx_z", t0 + 20);
	assert_int_equal(registry_gone_at(r2, "sbx_x"), t0);
	assert_int_equal(registry_gone_at(r2, "sbx_y"), t0 + 10);
	/* time that really passed: forgotten, the floor raised, kept */
	fake_wall = t0 + ahead + 60;
	fake_boot = 5 + ahead;
	registry_gone_set(r, "sbx_w", t0 + ahead);
	assert_int_equal(registry_gone_at(r, "sbx_x"), 0);
	assert_int_equal(registry_gone_floor(r), t0 + 10);
	fake_wall += 2 * ahead;
	fake_boot += 2 * ahead;
	registry_gone_set(r, "sbx_v", fake_wall);
	assert_true(registry_gone_floor(r) >= t0 + 10);
	registry_free(r);
	registry_free(r2);
}

static void
note_addr(void *arg, const char *addr)
{
	char	*seen = arg;
	size_t	 len = strlen(seen);

	snprintf(seen + len, 256 - len, "%s%s", len ? " " : "", addr);
}

/*
 * atk15r16 F5: a change names the addresses it touched, so the proxy
 * re-checks their connections only (it visited every open connection of
 * every client per /register and /unregister).
 */
static void
test_change_names_the_addresses_it_touched(void **state)
{
	struct registry	*r = registry_new();
	char		 seen[256] = "";

	(void)state;
	fill_registry(r);
	registry_addr_changed(r, NULL, NULL);
	reg(r, "10.1.0.1", "sbx_0", 0);		/* as it is: nothing */
	registry_addr_changed(r, note_addr, seen);
	assert_string_equal(seen, "");
	reg(r, "10.9.0.1", "sbx_5", 0);		/* sbx_5 moves */
	registry_addr_changed(r, note_addr, seen);
	assert_string_equal(seen, "10.9.0.1 10.1.0.6");
	seen[0] = '\0';
	assert_int_equal(registry_remove_address(r, "10.1.0.9"), 1);
	registry_addr_changed(r, note_addr, seen);
	assert_string_equal(seen, "10.1.0.9");
	registry_free(r);
}

/* The compact text of the saved entries, as the registry file has it. */
static size_t
saved_text(struct registry *r)
{
	size_t	 unsure, n;
	json_t	*arr = registry_json_saved(r, &unsure);
	char	*text = json_dumps(arr, JSON_COMPACT);

	/* "[a,b]": each entry and a comma, less one, and the brackets */
	n = strlen(text) - 2 + (json_array_size(arr) > 0);
	free(text);
	json_decref(arr);
	return n;
}

/*
 * atk36f F2: registry_text is the saved entries' text as it changes, and
 * registry_add_within refuses what would take it past the limit, never
 * what takes no more room (registered again as it is, a session moved
 * to another address); removals are kept only for token ids, whose text
 * a marks write keeps room for.
 */
static void
test_text_bounded(void **state)
{
	struct registry	*r = registry_new();
	const char	*cause = NULL;
	size_t		 max;

	(void)state;
	reg(r, "10.0.0.1", "sb_a", 0);
	reg(r, "10.0.0.2", "sb_b", 0);
	reg(r, "10.0.0.3", "sb_b", 1);
	assert_int_equal(registry_text(r), saved_text(r));
	max = registry_text(r);
	assert_int_equal(registry_add_within(r, "10.0.0.4", "sb_c", "test",
	    0, max, &cause), -1);
	assert_ptr_equal(cause, registry_full);
	assert_null(who(r, "10.0.0.4"));
	/* the same again, and the session moved: no more room taken */
	assert_int_equal(registry_add_within(r, "10.0.0.1", "sb_a", "test",
	    0, max, &cause), 0);
	assert_int_equal(registry_add_within(r, "10.0.0.9", "sb_a", "test",
	    0, max, &cause), 0);
	assert_string_equal(who(r, "10.0.0.9"), "sb_a");
	assert_null(who(r, "10.0.0.1"));
	assert_int_equal(registry_text(r), saved_text(r));
	/* an unregister makes room */
	assert_int_equal(registry_remove_sandbox(r, "sb_b"), 2);
	assert_int_equal(registry_text(r), saved_text(r));
	assert_int_equal(registry_add_within(r, "10.0.0.4", "sb_c", "test",
	    0, max, &cause), 0);
	assert_int_equal(registry_text(r), saved_text(r));
	/* a name no token carries is not kept as a removal */
	registry_gone_set(r, "sb d\n", 100);
	registry_gone_set(r, "sb_d", 100);
	assert_int_equal(registry_gone_count(r), 1);
	registry_free(r);
}

/*
 * atk37b F1: a registry over the limit already (an older proxy's file,
 * loaded with no bound) let every registration pass (max - text wrapped).
 * Nothing that grows it is taken; what takes no more room still is.
 */
static void
test_text_over_the_limit_grows_no_more(void **state)
{
	struct registry	*r = registry_new();
	const char	*cause = NULL;
	size_t		 max;

	(void)state;
	reg(r, "10.0.0.1", "sb_a", 0);
	reg(r, "10.0.0.2", "sb_b", 0);
	max = registry_text(r) / 2;
	assert_int_equal(registry_add_within(r, "10.0.0.4", "sb_c", "test",
	    0, max, &cause), -1);
	assert_ptr_equal(cause, registry_full);
	assert_int_equal(registry_add_within(r, "10.0.0.5", "sb_a", "test",
	    1, max, &cause), -1);
	assert_null(who(r, "10.0.0.4"));
	assert_null(who(r, "10.0.0.5"));
	/* registered as it is, or moved to an address as long: taken */
	assert_int_equal(registry_add_within(r, "10.0.0.1", "sb_a", "test",
	    0, max, &cause), 0);
	assert_int_equal(registry_add_within(r, "10.0.0.9", "sb_a", "test",
	    0, max, &cause), 0);
	assert_string_equal(who(r, "10.0.0.9"), "sb_a");
	assert_int_equal(registry_text(r), saved_text(r));
	registry_free(r);
}

/*
 * atk37b F2: a session moving to a longer address was refused at the
 * bound. A move (the sandbox's session, its sets as they are) may take
 * the text past max by REGISTRY_MOVE_ROOM in all; more sets, a new
 * sandbox or an extra address may not.
 */
static void
test_a_move_may_pass_the_limit_within_its_room(void **state)
{
	struct registry	*r = registry_new();
	const char	*cause = NULL;
	char		 addr[32], sbx[32];
	size_t		 max, i;

	(void)state;
	/* more than REGISTRY_MOVE_ROOM, for a limit below it */
	for (i = 0; registry_text(r) <= REGISTRY_MOVE_ROOM; i++) {
		snprintf(addr, sizeof(addr), "10.1.%zu.%zu", i / 250, i % 250);
		snprintf(sbx, sizeof(sbx), "sb_fill%zu", i);
		reg(r, addr, sbx, 0);
	}
	reg(r, "10.0.0.1", "sb_a", 0);
	reg(r, "10.0.0.2", "sb_b", 0);
	max = registry_text(r);
	assert_int_equal(registry_add_within(r,
	    "fd00:1234:5678:9abc:def0:1234:5678:9abc", "sb_a", "test", 0, max,
	    &cause), 0);
	assert_string_equal(who(r, "fd00:1234:5678:9abc:def0:1234:5678:9abc"),
	    "sb_a");
	assert_null(who(r, "10.0.0.1"));
	assert_true(registry_text(r) > max);
	assert_int_equal(registry_text(r), saved_text(r));
	/* not a move: more sets, an extra address, a new sandbox */
	assert_int_equal(registry_add_within(r, "10.0.0.3", "sb_b",
	    "test,more", 0, max, &cause), -1);
	assert_ptr_equal(cause, registry_full);
	assert_int_equal(registry_add_within(r, "10.0.0.4", "sb_b", "test",
	    1, max, &cause), -1);
	assert_int_equal(registry_add_within(r, "10.0.0.5", "sb_c", "test",
	    0, max, &cause), -1);
	/* the room is bounded: past max and REGISTRY_MOVE_ROOM, refused */
	assert_int_equal(registry_add_within(r,
	    "fd00:1234:5678:9abc:def0:1234:5678:9abd", "sb_b", "test", 0,
	    registry_text(r) - REGISTRY_MOVE_ROOM, &cause), -1);
	assert_ptr_equal(cause, registry_full);
	assert_int_equal(registry_add_within(r,
	    "fd00:1234:5678:9abc:def0:1234:5678:9abd", "sb_b", "test", 0,
	    registry_text(r) - REGISTRY_MOVE_ROOM + 32, &cause), 0);
	registry_free(r);
}

int
main(void)
{
	const struct CMUnitTest	tests[] = {
		cmocka_unit_test(test_lookups_follow_changes),
		cmocka_unit_test(test_entry_outlives_removal),
		cmocka_unit_test(test_many_found_each_by_its_chain),
		cmocka_unit_test(test_block_looks_at_its_sandbox_execs),
		cmocka_unit_test(test_credential_looks_at_its_sandbox_execs),
		cmocka_unit_test(test_address_and_sandbox_keys),
		cmocka_unit_test(test_gone_bounded_and_written_when_changed),
		cmocka_unit_test(test_gone_not_forgotten_by_a_clock_jump),
		cmocka_unit_test(test_change_names_the_addresses_it_touched),
		cmocka_unit_test(test_text_bounded),
		cmocka_unit_test(test_text_over_the_limit_grows_no_more),
		cmocka_unit_test(test_a_move_may_pass_the_limit_within_its_room),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
