/*
 * pending.h: the destinations blocked so far, per sandbox, from the
 * proxy's security-event log: what a person reviews before granting one
 * (`sandgate pending`). One entry per sandbox, destination and reason,
 * with the attempts, the first and last time, and the runs that named
 * themselves (exec credentials). Log bytes are untrusted: an event
 * whose host the proxy could not have written is left out.
 */
#ifndef SG_PENDING_H
#define SG_PENDING_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sglimits.h"

#define PENDING_DESTS_MAX	16384	/* entries kept; more are counted */
#define PENDING_RUNS_MAX	8	/* run ids kept per entry */
/* Hash slots: twice the entries, so a probe stays short. */
#define PENDING_SLOTS		(2 * PENDING_DESTS_MAX)

struct pending_dest {
	char		 sandbox[65];
	char		 host[SG_HOST_MAX + 1];
	int		 port;
	char		 reason[32];
	long long	 attempts;
	int64_t		 first_us, last_us;
	char		 first[40], last[40];	/* as the log wrote them */
	char		 runs[PENDING_RUNS_MAX][65];
	int		 nruns;
	uint32_t	 hash;	/* of sandbox, host, port and reason */
};

struct pending {
	const char		*sandbox;	/* filter, or NULL */
	struct pending_dest	*v;
	size_t			 n, cap;
	/*
	 * Index + 1 into v of each entry, by hash (linear probing; 0:
	 * free): a log of millions of events or a replica's 16 MiB answer
	 * is counted in time linear in its size, not times the entries.
	 */
	uint32_t		*slots;
	size_t			 dropped;	/* past PENDING_DESTS_MAX */
	size_t			 share;		/* new entries per source */
	size_t			 src_new;	/* this source's new ones */
	size_t			 src_dropped;	/* this source's past share */
	int			 evict;		/* full: forget the stalest */
	size_t			 evicted;	/* entries forgotten so */
};

void	pending_init(struct pending *, const char *sandbox);
void	pending_release(struct pending *);

/*
 * Count one log event (egress.blocked or egress.blocked_summary with a
 * destination; others are passed over). Returns the entry it counted
 * into and sets *isnew when the entry is new, or NULL.
 */
struct pending_dest *pending_event(struct pending *, json_t *, int *isnew);

/*
 * Count one record of a proxy replica's GET /blocks (without sandbox:
 * each names its sandbox, with its attempts, first and last time, and
 * run_id), merged with what p holds (other replicas' records, or log
 * events) per sandbox, destination and reason: attempts summed
 * (saturating, never wrapping), first
 * the earliest, last the latest, run ids joined. Returns the entry, or
 * NULL when the record is none (pending_event's checks).
 */
struct pending_dest *pending_record(struct pending *, json_t *record);

/*
 * The records that follow come from another source (a replica), which
 * may add at most share new entries (0: no limit but
 * PENDING_DESTS_MAX), so that no replica crowds out the others'
 * blocks; what it adds past that is counted in src_dropped and dropped.
 */
void	pending_source(struct pending *, size_t share);

/*
 * From now on a full table forgets the entry whose last attempt is the
 * oldest to make room for a new one (counted in evicted), instead of
 * dropping the new one: what `pending --follow` needs, so that it never
 * goes silent however many destinations were blocked before. A
 * destination forgotten so is new again when it is blocked again.
 */
void	pending_evict(struct pending *);

/*
 * Read the log dir/security-events.jsonl and its rotated files. 0 or -1.
 * keep (may be NULL) gets the files read, still open, for a follower
 * (logfollow.h) to go on from where the read stopped.
 */
struct logset;
int	pending_read_log(struct pending *, const char *dir,
	    struct logset **keep, char **cause);

/* Sort by sandbox, then last attempt, newest last. */
void	pending_sort(struct pending *);

json_t	*pending_dest_json(const struct pending_dest *);
/* "DEST  REASON  N attempts  first .. last  [runs]" on one line. */
void	pending_dest_print(const struct pending_dest *);

/*
 * An exec's network_blocked from the /blocks answers of its replicas,
 * through pending_record's checks (the sandbox's id, a host, port and
 * reason the proxy could have written, saturating attempts): one entry
 * per destination, reason and run_id, the exec's own run (run) or none
 * (a request without credential); a record of another run is left out.
 * A record without sandbox is of the sandbox asked for (GET
 * /blocks?sandbox=ID names none).
 * With run NULL (the exec has no credential) every record counts as
 * none. Each replica adds at most PENDING_EXEC_SHARE entries to each
 * (what the proxy keeps per exec); past that, truncated is set. A
 * message is kept when it is printable and at most PENDING_MESSAGE_MAX
 * bytes, else made again from the reason.
 */
#define PENDING_EXEC_SHARE	64
#define PENDING_MESSAGE_MAX	512

struct pending_exec {
	const char	*run;
	struct pending	 own, none;	/* this run's; without credential */
	json_t		*msgs[2];	/* entry index -> message */
	int		 truncated;
};

void	pending_exec_init(struct pending_exec *, const char *sandbox,
	    const char *run);
/* One replica's records (GET /blocks "blocks"). */
void	pending_exec_add(struct pending_exec *, json_t *records);
/* The network_blocked array (new reference): own ones first. */
json_t	*pending_exec_list(struct pending_exec *);
void	pending_exec_release(struct pending_exec *);

#endif
