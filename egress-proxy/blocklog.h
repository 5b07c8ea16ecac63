/*
 * blocklog.h: which blocked attempts get a full egress.blocked line in
 * the security-event log, and which are counted into a summary, so that
 * one sandbox cannot flood the log, rotate away the history of the
 * others, or crowd them out.
 *
 * An attempt is keyed by who made it (the identity: a sandbox id, or the
 * client address of an unregistered client), its destination (host and
 * port) and its reason. Per window (opts.window_s):
 *
 *   - each key gets opts.burst full lines, and each identity at most
 *     opts.budget full lines whatever its keys;
 *   - every later attempt of the key is counted, and when the key's window
 *     ends one egress.blocked_summary line carries the count and the
 *     times of the first and the last of them;
 *   - an identity holding BLOCKLOG_KEYS_PER_IDENT keys counts attempts to
 *     further destinations into one key per reason with no host;
 *     BLOCKLOG_KEYS_MAX keys in all, past which attempts are counted into
 *     a shared overflow key per reason with neither identity nor host;
 *     its summary (overflow set) names no client, since its attempts
 *     may be any client's, and under pressure its bytes are charged to
 *     the identities it counted, in proportion to their attempts.
 *
 * An attempt let through by a set in report mode (egress.would_block)
 * is keyed apart from the blocks (report set) and summarized as
 * egress.would_block_summary, under the same burst and budget.
 *
 * A stopped identity (blocklog_stop_top) gets no full line: all its
 * attempts, whatever their destination and reason, are counted into one
 * key (reason log_unavailable, no host), so it adds at most one summary
 * line per window; what its other keys had counted is folded into that
 * key when it is stopped (counts, sums, times and destinations kept).
 *
 * An allowed connection (reason SG_REASON_NONE) carries its bytes each
 * way: a summary of allowed ones carries their sums. One that moved
 * BLOCKLOG_LARGE_BYTES or more (a large transfer) gets a full line
 * whatever the burst and budget say, BLOCKLOG_LARGE_BURST of them per
 * identity and window (none when its identity is stopped), so which
 * connection's volume is only summed is not the sandbox's choice of
 * order; past those it takes the burst and budget as any other, and a
 * summary says how many large transfers it counted and the bytes of the
 * largest. A summary without a host says how many distinct destinations
 * it counted.
 *
 * So every attempt is either its own line or counted in exactly one
 * summary line, and one identity adds at most budget +
 * BLOCKLOG_LARGE_BURST + (its keys) lines per window, whatever it moves,
 * one once stopped. A summary not written yet (the log unavailable) is kept
 * and tried again. Counts still held when the process is killed (at most
 * one window's) are lost; blocklog_flush(all) writes them at exit.
 *
 * With opts.capacity (the bytes log rotation keeps) set, the span is
 * the last half to whole capacity written. An identity's first own lines
 * of a block or would-be block in it (blocklog_wrote, BLOCKLOG_LINE_BLOCK)
 * are its floor: BLOCKLOG_FLOOR_LINES of them, or more
 * while they hold less than capacity / BLOCKLOG_FLOOR_DIV bytes. Under
 * its floor an identity's blocks get full lines whatever the others
 * wrote, so a quiet sandbox's new blocks keep their host. Its other own
 * lines (allowed connections, revoked ones: BLOCKLOG_LINE_OTHER) are the
 * pool's from the first, so they never spend the floor of its blocks;
 * past the floor its blocks' lines are the pool's too: the pool (every identity's own lines past its floor in
 * the span) holds at most capacity / BLOCKLOG_FULL_DIV bytes, whatever
 * the number of identities and the order they came in; and each has a
 * share: capacity / BLOCKLOG_SHARE_DIV bytes of its lines (own and
 * summaries), whatever the number of identities. Past its floor, with
 * the pool full or past its share, while other identities' lines are in
 * the span too, it gets no full line: its blocks and would-be blocks
 * are counted into one aggregate each (no host, reason log_unavailable;
 * what it had counted per destination is moved into them at once), its
 * allowed connections into one with their bytes (its egress goes on);
 * so a flood, within the budget, however many clients share it, cannot
 * rotate the others' history away faster than their floors and
 * summaries do. An identity is kept while any of its lines are in the
 * span. A registered sandbox (blocklog_set_registered) is never
 * forgotten for another while it is registered: its place is in a part
 * of the table bounded by the registry. The others (client addresses)
 * share BLOCKLOG_IDENTS_MAX places: with that many, a new one takes the
 * place of an idle one with nothing pending and the most own lines in
 * the span (its keys counting nothing go with it; its floor lines go
 * into the pool), unless the pool is full or none is idle: then the new
 * one's attempts are counted into the shared overflow summaries. Those
 * clients are unregistered, so blocked; how many lines each had decides
 * nothing for a registered sandbox (counts an attacker could undercut
 * had a quiet sandbox forgotten first, atk15r13 F1, F2).
 *
 * While the log volume is under its reserve (from the first
 * blocklog_stop_top() until blocklog_resume_all()) the module also counts
 * the lines and bytes written for each identity, so that the identity
 * spending the reserve can be stopped (blocklog_stop_top).
 *
 * Pure: no I/O; times are passed in. Not thread-safe (the proxy's loop).
 */
#ifndef SG_BLOCKLOG_H
#define SG_BLOCKLOG_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "reason.h"

#define BLOCKLOG_BURST_DEFAULT		5
#define BLOCKLOG_BUDGET_DEFAULT		50
#define BLOCKLOG_WINDOW_DEFAULT		10	/* seconds */
#define BLOCKLOG_KEYS_PER_IDENT		64
#define BLOCKLOG_KEYS_MAX		8192
#define BLOCKLOG_IDENTS_MAX		16384
#define BLOCKLOG_STOP_MIN		64	/* lines, to be stopped */
#define BLOCKLOG_LARGE_BYTES		(1ULL << 20)	/* own line, allowed */
#define BLOCKLOG_LARGE_BURST		5	/* of those, per window */
#define BLOCKLOG_DESTS_TOLD		128	/* told apart per summary */
#define BLOCKLOG_STOP_SHARE		4	/* 1/4 of the room, to be stopped */
#define BLOCKLOG_SHARE_DIV		8	/* 1/8 of the kept log, each */
#define BLOCKLOG_FULL_DIV		4	/* 1/4 of it, the pool */
#define BLOCKLOG_FLOOR_LINES		2	/* own lines in the span, each */
#define BLOCKLOG_FLOOR_DIV		65536	/* or 1/(4 x IDENTS_MAX) of it */

struct blocklog_opts {
	unsigned	burst;		/* full lines per key per window */
	unsigned	budget;		/* full lines per identity per window */
	unsigned	window_s;
	/*
	 * The bytes log rotation keeps (the size of a file times the files
	 * kept, the current one with them); 0: no share. See below.
	 */
	unsigned long long capacity;
};

/*
 * One blocked attempt (or an allowed connection's line, reason
 * SG_REASON_NONE: the same budget), or (for the emit callback) one
 * summary. Strings
 * are borrowed for the call. sets is NULL-terminated (or NULL).
 */
struct blocklog_event {
	const char		*identity;	/* never NULL */
	const char		*sandbox;
	const char		*src;
	const char		*method;
	const char		*host;
	int			 port;
	enum sg_reason		 reason;	/* NONE: an allowed one */
	const char		*message;
	const char *const	*sets;
	const char		*rule;
	const char		*policy_digest;
	int			 report;	/* would_block, not a block */
	/*
	 * A summary with no host: the distinct destinations (host and
	 * port) it counted, up to BLOCKLOG_DESTS_TOLD; dests_more when
	 * there were more.
	 */
	unsigned		 dests;
	int			 dests_more;
	/* An allowed connection's bytes; for a summary, their sums. */
	unsigned long long	 bytes_up;
	unsigned long long	 bytes_down;
	/* Summaries: the large transfers counted, and the largest's bytes. */
	unsigned long long	 large;
	unsigned long long	 largest;
	/* Summaries only: attempts counted, and when the first and last. */
	unsigned long long	 count;
	/*
	 * Summaries only: how many of count an earlier try of this summary
	 * held when it could not be written (its emit returned -1), so
	 * already counted lost then: not to count again (atk20r22 F6).
	 */
	unsigned long long	 told;
	struct timespec		 first;
	struct timespec		 last;
	/*
	 * Summaries only: the shared overflow key of a reason (the key
	 * table full), counting attempts of any client; it carries no
	 * sandbox, src, method, sets or rule.
	 */
	int			 overflow;
};

/*
 * Write one summary line: the bytes written (0 or more), or -1 to keep
 * its count for a later try.
 */
typedef int	(*blocklog_emit_cb)(void *arg, const struct blocklog_event *);

struct blocklog;

/* NULL when out of memory. Zero options take the defaults. */
struct blocklog	*blocklog_new(const struct blocklog_opts *, blocklog_emit_cb,
		    void *arg);
void		 blocklog_free(struct blocklog *);	/* NULL ok */

/*
 * Whether an identity is a sandbox the registry holds now: 1 when it is.
 * Asked when an identity is first seen and by blocklog_reclass. A
 * registered sandbox's identity lives in a part of the table of its own,
 * bounded by the registry, and is never forgotten for another identity
 * while it is registered; only the others (client addresses, and
 * sandboxes no longer registered) share the BLOCKLOG_IDENTS_MAX places
 * of the rest, and a new one of them may be refused a place (its
 * attempts counted into the overflow summaries). Likewise its keys are
 * not held to BLOCKLOG_KEYS_MAX (the others' are; a registered one's to
 * BLOCKLOG_KEYS_PER_IDENT): a sandbox's counted attempts always go to
 * summaries that name it. No callback: every
 * identity is of the rest.
 */
typedef int	(*blocklog_registered_cb)(void *arg, const char *identity);
void		 blocklog_set_registered(struct blocklog *,
		    blocklog_registered_cb, void *arg);
/*
 * The registry changed: ask again for identity (a sandbox registered or
 * unregistered), or with NULL for every identity of the registered part.
 */
void		 blocklog_reclass(struct blocklog *, const char *identity);
/*
 * Which part of the table identity is in: 1 the registered part, 0 the
 * rest, -1 not in the table.
 */
int		 blocklog_registered(const struct blocklog *,
		    const char *identity);

/*
 * An attempt at now_us (monotonic) and now (wall clock, for summaries).
 * Returns 1 when it gets a full line (the caller writes it and then calls
 * blocklog_wrote), 0 when it was counted into a summary. A key whose
 * window ended is summarized (emit) first.
 */
int		 blocklog_note(struct blocklog *, const struct blocklog_event *,
		    uint64_t now_us, const struct timespec *now);

/*
 * The full line blocklog_note granted could not be written: count the
 * attempt into its key's summary instead (written once the log can be).
 */
void		 blocklog_unwritten(struct blocklog *,
		    const struct blocklog_event *, const struct timespec *now);

/* What a line written for an identity was (blocklog_wrote). */
enum blocklog_line {
	BLOCKLOG_LINE_BLOCK = 0,	/* a block or would-be block: floor */
	BLOCKLOG_LINE_SUMMARY,		/* a summary, or bytes of no line */
	BLOCKLOG_LINE_OTHER		/* allowed, revoked: the pool's */
};

/*
 * A line of bytes bytes was written for identity: counted in its share
 * of the kept log (with opts.capacity) and under pressure
 * (blocklog_stop_top). kind BLOCKLOG_LINE_SUMMARY: a summary (one
 * replayed from a kept file; blocklog's own are counted as they are
 * emitted), or bytes of no line of the identity's own: counted in its
 * share, not in its floor nor the pool. BLOCKLOG_LINE_OTHER: an own line
 * that is not a block, in the pool and never in the floor (two allowed
 * connections spent the floor of a sandbox's blocks, atk15r12 F2).
 */
void		 blocklog_wrote(struct blocklog *, const char *identity,
		    size_t bytes, uint64_t now_us, enum blocklog_line kind);

/*
 * Emit the summaries of keys whose window ended (every summary with all
 * set), and forget idle keys and identities (an identity only once none
 * of its lines are in the span its share counts). For a 1 s timer and
 * exit.
 */
void		 blocklog_flush(struct blocklog *, uint64_t now_us, int all);

/*
 * The log volume is under its reserve, with room bytes left above the
 * floor: stop the identity that is spending the reserve, if one is. The
 * first call starts the count (the pressure), and keeps the room of that
 * look: from then until blocklog_resume_all() every line written, and
 * its bytes, is counted to its identity, and nothing ages (the reserve a
 * client spent does not come back by its waiting). Each later call is a
 * look: a fall in room since the previous look is charged to the
 * identities that wrote since it, in proportion to the bytes each wrote
 * then and to each at most those (what the fall does not cover waits
 * for the next look); a rise takes back from every charge in proportion
 * to it, and nets out what was written since the previous look. So a
 * charge is what of the reserve an identity's lines still hold. Stopped:
 * the identity charged the most, when its charge is at least a
 * BLOCKLOG_STOP_SHARE-th of the room the first look saw, in at least
 * BLOCKLOG_STOP_MIN lines. So nobody is stopped for the lines it wrote
 * before the volume went under the reserve, for what something other
 * than the log put on the volume (beyond its own lines of the same
 * interval), for lines whose room rotation gave back (a volume held
 * steady loses nothing), or for a few lines written while the reserve is
 * spent by nobody in particular. One identity is stopped a call. Returns
 * its name (owned by the module), or NULL. Stopped identities stay
 * stopped until blocklog_resume_all(), which also ends the count.
 */
const char	*blocklog_stop_top(struct blocklog *, unsigned long long room);
/* 1 when identity is stopped. */
int		 blocklog_stopped(const struct blocklog *, const char *identity);
void		 blocklog_resume_all(struct blocklog *);

/* Attempts counted into summaries so far, and summary lines written. */
unsigned long long blocklog_counted(const struct blocklog *);
unsigned long long blocklog_summaries(const struct blocklog *);

/*
 * Table entries compared by lookups so far (identities and keys): each
 * lookup's walk is bounded whatever names the clients choose.
 */
unsigned long long blocklog_probes(const struct blocklog *);

#endif
