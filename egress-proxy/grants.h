/*
 * grants.h: the grants in force: a destination (host and port) one
 * sandbox may reach for a while, on top of its policy sets, given by a
 * person through `sandgate grant` (POST /grants on the control socket).
 * A grant may be limited to one exec (its run id). Floors still hold: the
 * proxy asks policy_grant_check() at every decision, so a deny entry or
 * a narrower `grants: under:` added later wins over a grant given before.
 * The table is saved next to the registry and survives a restart until
 * each grant expires.
 *
 * Clocks: granted and expires are wall-clock times, kept for the record
 * (the events, `sandgate grants`, grants.json) and to restore a grant
 * after a restart. What ends a grant in the running proxy is its
 * deadline on grants_clock(), a clock that only goes forward (setting
 * the wall clock back or forth does not move it), set when the grant is
 * given (clock now + its seconds) or restored (clock now + what was left
 * of it by the wall clock then).
 */
#ifndef SG_GRANTS_H
#define SG_GRANTS_H

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "execcred.h"
#include "sglimits.h"

#define GRANTS_MAX		4096
#define GRANTS_SECS_MAX		(7 * 24 * 60 * 60)	/* --for at most */
#define GRANTS_TEXT_MAX		512			/* rationale bytes */
/*
 * bytes of who gave it: a login name (32) and what the proxy adds, the
 * TCP control API's client address the longest (control_peer_by)
 */
#define GRANTS_BY_MAX		127

struct grant {
	struct grant	*next;
	char		 sandbox[65];
	char		 host[SG_HOST_MAX + 1];
	int		 port;
	char		 run[EXECCRED_RUN_MAX + 1];	/* "": every exec */
	char		 by[GRANTS_BY_MAX + 1];
	char		 rationale[GRANTS_TEXT_MAX + 1];
	time_t		 granted;	/* wall clock: the record */
	time_t		 expires;
	time_t		 deadline;	/* grants_clock(): what ends it */
	json_int_t	 generation;	/* of the grants.json read (below) */
};

/*
 * Each save of grants.json is numbered, one more than any before it,
 * in this lifetime or an earlier one (the proxy resumes above the
 * numbers its files hold): what tells a revoke kept apart whether
 * grants.json was saved before or after it, where the wall clock cannot
 * (grants_tombs). grants.json is {"generation": N, "grants": [...]},
 * written whole in one atomic save, so the number is kept by a save of
 * no grants too (a number in each grant was lost with the last grant,
 * and the next lifetime numbered from 1 again, atk36b F1). A bare array
 * (an older proxy's file) has no number: GRANTS_GEN_NONE, judged by the
 * time rule (grants_tombs_ends). At most GRANTS_GEN_MAX (2^53 - 1, exact
 * in any JSON reader): the proxy never saves above it (a save at the
 * bound fails, atk36b F2); a value that is not a whole number in
 * 0..GRANTS_GEN_MAX is damage. g->generation: the number of the
 * grants.json g was read from, GRANTS_GEN_NONE for a bare array.
 */
#define GRANTS_GEN_MAX		((json_int_t)9007199254740991LL)
#define GRANTS_GEN_NONE		((json_int_t)-1)

struct grants;

/*
 * The clock grant deadlines are on: seconds of CLOCK_BOOTTIME (never set
 * back, and it counts a suspend, unlike CLOCK_MONOTONIC).
 */
time_t		 grants_clock(void);
/* A wall-clock time as "2026-01-02T03:04:05Z" ("-" if it can't be). */
void		 grants_time(time_t, char *buf, size_t size);

struct grants	*grants_new(void);
void		 grants_free(struct grants *);	/* NULL ok */

/*
 * Validate and add a grant (a copy of g; one for the same sandbox, host,
 * port and run is replaced). Returns 0, or -1 with *cause static.
 */
int		 grants_add(struct grants *, const struct grant *g,
		    const char **cause);
/*
 * Remove the grants of sandbox for host:port (every run's), calling cb
 * with each before it goes. Returns how many.
 */
size_t		 grants_remove(struct grants *, const char *sandbox,
		    const char *host, int port,
		    void (*cb)(const struct grant *, void *), void *arg);
/*
 * Remove the grants whose deadline is at or before now (grants_clock()),
 * calling cb with each. How many.
 */
size_t		 grants_expire(struct grants *, time_t now,
		    void (*cb)(const struct grant *, void *), void *arg);
/*
 * The grant in force at now (grants_clock()) that lets sandbox (and run,
 * "" for none) reach host:port, or NULL.
 */
const struct grant *grants_match(const struct grants *, const char *sandbox,
		    const char *run, const char *host, int port, time_t now);

/* One grant as JSON (times as RFC 3339 UTC); a new reference. */
json_t		*grants_one_json(const struct grant *);
/* The grants (of sandbox, unless NULL), a new array. */
json_t		*grants_json(const struct grants *, const char *sandbox);
/* What grants.json holds: {"generation": N, "grants": grants_json()}. */
json_t		*grants_save_json(const struct grants *,
		    json_int_t generation);
/*
 * Add the grants of an array made by grants_json() (g->generation:
 * GRANTS_GEN_NONE), those given before now (wall clock) and ending at
 * most GRANTS_SECS_MAX after it, each with its deadline at clock
 * (grants_clock()) plus what is left of it (an expired one: clock, so
 * the next expiry check ends it); cb (unless NULL) is called with each
 * entry and NULL when it was added, or why it was refused. How many were
 * added.
 */
size_t		 grants_load_json(struct grants *, json_t *, time_t now,
		    time_t clock, void (*cb)(const struct grant *,
		    const char *cause, void *), void *arg);
/*
 * grants.json's text (what the proxy reads at start): parsed, then its
 * grants as grants_load_json() does, each with the file's generation
 * (GRANTS_GEN_NONE: a bare array). A damaged "generation" refuses each
 * grant (cb names it): a revoke kept apart could not be weighed against
 * it. -1 with err (a line, column and cause) when it is neither an
 * array nor {"generation", "grants": array}; else how many were added.
 */
long		 grants_load_text(struct grants *, const char *text,
		    size_t len, time_t now, time_t clock,
		    void (*cb)(const struct grant *, const char *cause,
		    void *), void *arg, char *err, size_t errsize);
/*
 * The save number grants.json's text holds, as far as it can be read: a
 * file that is no JSON but starts as the proxy writes it,
 * {"generation":N, still gives N (the counter must not go below a
 * number once saved, atk36b F1). 0 when none can be read.
 */
json_int_t	 grants_text_generation(const char *text, size_t len);
/*
 * Remove the grants pick(g, key) says (grants a floor loaded later no
 * longer allows, say), calling cb with each. How many.
 */
size_t		 grants_drop(struct grants *,
		    int (*pick)(const struct grant *, const void *),
		    const void *key, void (*cb)(const struct grant *, void *),
		    void *arg);

/*
 * Revokes not yet in grants.json (its file could not be written): each
 * appended, fsynced, to a file of its own (one line each) that a restart
 * reads after grants.json, so an answered revoke is never undone, and
 * that is emptied at the next good save of grants.json.
 * grants_tomb_line: the line (a new string, with a newline before it, so
 * the torn end of a crash never runs into the next line), "after" the
 * generation of the newest save of grants.json tried so far (the
 * revoke's own, which failed): any save numbered above it was made
 * after the grants were removed, so holds the revoke.
 * grants_tombs: the revokes of such files read once, at start, into a
 * table by destination (sandbox, host and port), so a grant restored is
 * one look-up (one walk of the file per grant made a start of 300
 * grants and an 8 MiB file take 99 s, atk35a F2).
 * grants_tombs_add: the revokes of a text (that file's) added; NULL, or
 * what is wrong in it (a NUL, a non-blank last line with no newline, a
 * line that is not a revoke grants_tomb_line writes, a key twice, an
 * "after" that is no generation, out of memory): a damaged line may be
 * the revoke of any grant, so the table is then not usable (atk15r21
 * F3: the grant it revoked was restored).
 * grants_tombs_ends: 1 when a revoke added ends g (same sandbox, host
 * and port), read from grants.json: g->generation at or below the
 * line's "after" (the save g came from was made before the revoke; a
 * grants.json saved after it, whose emptying of the revokes file did
 * not happen, holds a grant given again since, not ended). No clock
 * takes part, so a wall clock stepped back or forth between saves,
 * grants and revokes changes nothing (atk35d F1: a grant re-given after
 * a step back, then revoked while saves failed, came back). A line
 * without "after" (an older proxy's) ends g given at or before its
 * "granted" (the newest grant it removed) or, without that, its
 * "revoked" time. g from a grants.json with no number (GRANTS_GEN_NONE:
 * an older proxy wrote it, after a roll back, say) is judged by that time
 * rule against every line, "after" or not, as the older proxy did: its
 * own grant given again after a line of this version was written is kept
 * (atk36b F3: it was ended as "stays revoked").
 * grants_tombs_after: the highest "after" added (0: none), so saves
 * after a restart are numbered above every revoke still in the file.
 */
struct grants_tombs;

char		*grants_tomb_line(const struct grant *g, time_t revoked,
		    json_int_t after);
struct grants_tombs *grants_tombs_new(void);
void		 grants_tombs_free(struct grants_tombs *);	/* NULL ok */
const char	*grants_tombs_add(struct grants_tombs *, const char *text,
		    size_t len);
int		 grants_tombs_ends(const struct grants_tombs *,
		    const struct grant *g);
/* How many destinations have a revoke. */
size_t		 grants_tombs_count(const struct grants_tombs *);
json_int_t	 grants_tombs_after(const struct grants_tombs *);

#endif
