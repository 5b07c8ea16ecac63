/*
 * eventlog.h: the tamper-evident JSON-lines log writer: the proxy's
 * security-events.jsonl and the controller's runs.jsonl.
 *
 * Each event is one line, written with one write(2) on an O_APPEND fd:
 *
 *   {"ts":"<RFC 3339 UTC, microseconds>","seq":N,<fields in the caller's
 *    order>,"prev":"<64 hex>","hash":"<64 hex>"}
 *
 * Lines are compact JSON with every non-ASCII character and control
 * character escaped (\u escapes), so a line is printable ASCII. seq starts at
 * 1 and grows by one without gaps, across restarts and rotations. prev is
 * the hash of the line before (64 zeros for the first line ever). hash is
 * the SHA-256 of the line with its hash member removed, i.e. of the bytes
 * before ,"hash":" followed by "}" (logverify.h checks it; docs/audit.md
 * shows a third-party check).
 *
 * Durability: write(2) has returned before eventlog_append() returns, so
 * a process crash loses nothing; fdatasync(2) runs at most about a second
 * after an event (eventlog_tick() from a 1 s timer, and eventlog_append()
 * itself when the last sync is older than a second), so power loss can
 * lose up to a second of events.
 *
 * Torn lines: a write cut short (disk full) leaves part of a line, which
 * the writer takes back (ftruncate(2)): the line is lost, counted in the
 * next log.outage, and nothing of it stays. Where the file refuses that,
 * a line whole but for its newline is written, a shorter part stays as a
 * torn line (counted in the log.outage's "torn"), and so does one a crash
 * or kill leaves. The next successful write first ends it with a newline;
 * the chain continues from the last whole line and the verifier reports
 * the torn line.
 *
 * Failure: eventlog_append() returns -1 with errno set and the log is
 * "unavailable" (eventlog_healthy() == 0, eventlog_error() says why);
 * callers that gate traffic on the log fail closed. Every later append
 * retries, and the first one that succeeds makes the log healthy again.
 *
 * Not thread-safe: one struct eventlog per thread (the proxy has one
 * event loop). Several processes may share one file with opts.shared.
 */
#ifndef SG_EVENTLOG_H
#define SG_EVENTLOG_H

#include <sys/stat.h>

#include <jansson.h>

struct eventlog;

struct eventlog_opts {
	/*
	 * Rotate before a write would take the file past max_size bytes
	 * (a file always takes at least one line); 0 never rotates.
	 */
	unsigned long long	max_size;
	/* Rotated files kept: name.1 (newest) .. name.keep; at least 1. */
	unsigned		keep;
	/*
	 * Seconds: a rotated file younger than this is never deleted, even
	 * past keep (the folder grows instead), so a burst of events cannot
	 * rotate away the history an operator asked for. 0: keep decides.
	 */
	long long		keep_min_age;
	/*
	 * Several processes append to the file: each append takes
	 * flock(LOCK_EX), re-reads seq and prev from the file if another
	 * process wrote since, writes and unlocks. Without it the writer is
	 * the file's only writer and keeps seq and prev in memory.
	 */
	int			shared;
	/*
	 * Shared mode whose writers exclude each other on a lock outside
	 * the log's folder, held by the caller from open to close (the
	 * controller: its key's lock): no flock(2) on the file, which
	 * whoever writes the folder could hold or swap. The file is still
	 * the one at the name when locked; a file put in its place while
	 * held is not written to (the append fails, the event is lost).
	 */
	int			excluded;
	/*
	 * The writer has an anchor to continue from (checkpoint.h): a log
	 * with no event in its last SG_LOG_TAIL_SCAN bytes opens anyway,
	 * its end not found (eventlog_no_end()), instead of failing.
	 */
	int			no_end_ok;
};

/*
 * Open (create, mode 0640) dir/filename for appending; dir is created
 * (mode 0750) if missing, its parents are not. The file must be a regular
 * file, never reached through a symlink (O_NOFOLLOW; a FIFO or device is
 * refused without blocking). seq and prev continue from the last complete
 * line of the file, or of filename.1 when the file has no event yet (a
 * filename.1 that is not a regular file is not read). opts may be NULL
 * (no rotation, not shared). The files it continues in after a rotation
 * or a reopen it makes itself (O_EXCL): a file someone else put at the
 * name (a symlink or FIFO included) is moved aside to
 * filename.foreign.SEQ.R (R random: no name can be taken ahead of it),
 * never written to, and stderr says so. One
 * missing name among the rotated files (a rotation cut short by a
 * crash) is closed at open by moving the files after it down one name.
 * Returns NULL with *cause set (caller frees) if the file cannot be opened
 * or its last event cannot be found in its last SG_LOG_TAIL_SCAN bytes.
 */
struct eventlog	*eventlog_open(const char *dir, const char *filename,
		    const struct eventlog_opts *opts, char **cause);

/*
 * Open a log file (or one of its rotations) with flags, O_CREAT's mode
 * 0640: never through a symlink (O_NOFOLLOW), never blocking on a FIFO
 * (O_NONBLOCK), and only a regular file. How the writers and every reader
 * of the logs open them. Returns the fd with *st filled, or -1 with errno
 * (ELOOP: a symlink; EINVAL: not a regular file).
 */
int		 eventlog_open_file(const char *path, int flags,
		    struct stat *st);

/*
 * Append one event. fields is a JSON object, borrowed (not stolen), whose
 * members follow ts and seq in their insertion order; it must not use the
 * keys ts, seq, prev or hash. Returns 0, or -1 with errno set (EINVAL:
 * fields not an object, a reserved key, or a line longer than
 * SG_LOG_LINE_MAX; else the write, lock, rotation or sync error) and the
 * log marked unavailable until an append succeeds. A failed fdatasync
 * also returns -1, after the event was written. Events not written
 * for another reason than EINVAL are counted; the first line written
 * after them is a log.outage event: lost (how many), since (when the
 * first failed, RFC 3339 UTC) and cause (the error then).
 */
int		 eventlog_append(struct eventlog *, json_t *fields);
/*
 * eventlog_append() of a line an earlier try of which could not be
 * written (a summary retried with its count grown): of the attempts it
 * holds, told were counted lost then, and are not again if it fails
 * (log.outage's lost_events, atk20r22 F6). eventlog_append() is told 0.
 */
int		 eventlog_append_told(struct eventlog *, json_t *fields,
		    unsigned long long told);

/*
 * The outage no checkpoint covers yet: how many events were lost (0:
 * none) and not written, or told in log.outage lines that no hook line
 * (checkpoint) follows yet; since when and why, the earliest's (*since,
 * *cause: valid until the next append). The signer keeps it in its
 * anchor, outside the log folder, so that neither a restart during an
 * outage nor a cut of the log's unsigned tail after it forgets it.
 */
unsigned long long eventlog_outage(const struct eventlog *,
		    const char **since, const char **cause);

/*
 * How many attempts that outage's lost lines held (a summary line holds
 * many; at least eventlog_outage()): log.outage's "lost_events".
 */
unsigned long long eventlog_outage_events(const struct eventlog *);

/* 1 if all of that outage is in log.outage lines (a checkpoint is due). */
int		 eventlog_outage_told(const struct eventlog *);

/*
 * An outage a former run of the writer recorded (its anchor) and never
 * wrote: added to the count, since becomes its since; the first line
 * written next is the log.outage line.
 */
void		 eventlog_add_outage(struct eventlog *, unsigned long long lost,
		    unsigned long long events, const char *since,
		    const char *cause);

/*
 * Append a hook line that is due, then fdatasync(2) if anything was
 * written since the last sync; for a 1 s timer and before exit. Returns
 * 0, or -1 (log marked unavailable).
 */
int		 eventlog_tick(struct eventlog *);

/*
 * Reopen the file by name (after logrotate moved it, on SIGUSR1): in a
 * file the writer makes (as after a rotation), or in the file it had if
 * that is still at the name. The chain continues from the last hash in
 * memory, so the new file's first line has prev = the old file's last
 * hash. Returns 0, or -1 with errno (log unavailable; the next append
 * retries the open).
 */
int		 eventlog_reopen(struct eventlog *);

/*
 * Shared mode: take the lock now (re-reading seq and prev if another
 * process wrote since) and keep it across appends until
 * eventlog_release(), so that nobody who respects the lock writes in
 * between and seq and prev are never re-read meanwhile. A no-op without
 * opts.shared. Returns 0, or -1 (log marked unavailable).
 */
int		 eventlog_hold(struct eventlog *);
void		 eventlog_release(struct eventlog *);

/*
 * A hook that adds lines of its own to the chain (checkpoint.h). After
 * each event appended with eventlog_append(), due(arg) is asked; when it
 * returns 1, one hook line is appended before the next event, or by the
 * next eventlog_tick() if none comes first (so eventlog_seq() after an
 * append is still that event's). A hook line's fields come from
 * fields(arg, seq, ts, prev): the seq, ts and prev that line gets (a new
 * object, or NULL on failure). written(arg, seq, hash), if set, is told
 * of every hook line once it is in the file. rotated(arg), if set, is
 * called before the first line of a file that continues the chain (after
 * a rotation, a reopen, or an open that found the file empty and the
 * chain in filename.1): a hook line is then written first, so every file
 * but the first starts with one. before(arg), if set, is called before
 * each event (not a hook line) is written, and may append lines of its
 * own; when it returns -1 the event is not written and is counted lost
 * (eventlog_outage()), as when its write fails. put(arg), if set, is
 * called before any line (event, hook line, log.outage) goes into the
 * file; when it returns -1 (errno set) the line is not written, as when
 * its write fails. eventlog_set_hook() with NULL removes the hook.
 */
struct eventlog_hook {
	int	 (*due)(void *arg);
	int	 (*before)(void *arg);
	json_t	*(*fields)(void *arg, long long seq, const char *ts,
		    const char *prev);
	void	 (*written)(void *arg, long long seq, const char *hash);
	void	 (*rotated)(void *arg);
	int	 (*put)(void *arg);
	void	*arg;
};
void		 eventlog_set_hook(struct eventlog *,
		    const struct eventlog_hook *);

/* Append one hook line now. Returns as eventlog_append(). */
int		 eventlog_append_hook(struct eventlog *);

/* Sync and close; accepts NULL. */
void		 eventlog_close(struct eventlog *);

/* 1 while the last operation succeeded, 0 once one failed. */
int		 eventlog_healthy(const struct eventlog *);
/* Why the log is unavailable ("" while healthy); owned by the log. */
const char	*eventlog_error(const struct eventlog *);
/* seq of the last event written or found at open (0 for a new log). */
long long	 eventlog_seq(const struct eventlog *);
/* Bytes appended since it was opened, across rotations (free-space use). */
unsigned long long eventlog_written(const struct eventlog *);
/* Its hash (64 hex; 64 zeros for a new log); owned by the log. */
const char	*eventlog_hash(const struct eventlog *);
/*
 * 1 if, when the end of the log was last read, lines that are neither log
 * lines nor torn ones (checkpoint.h: a log.resume is due) followed its
 * last event: the writer never leaves such lines, so it continues from
 * that event and the verifier breaks the chain there.
 */
int		 eventlog_foreign(const struct eventlog *);
/*
 * 1 if, when the end of the log was last read, a torn line followed its
 * last event: the file ended in one, or one with its newline came after
 * that event (a writer that goes on after its torn line writes a
 * log.outage line first, so that is not the writer's own end).
 */
int		 eventlog_torn(const struct eventlog *);
/*
 * 1 if the file ends in a torn line now: a short write left it (the
 * volume full), and no line has ended it since.
 */
int		 eventlog_torn_now(const struct eventlog *);
/*
 * How many torn lines a log.resume written next follows: 0 or 1 found at
 * the end of the log when it was read, more only when cut lines could not
 * be taken back (eventlog_write()); 0 while events are lost (the
 * log.outage line that goes first counts them in its "torn").
 */
unsigned long long eventlog_torn_lines(const struct eventlog *);
/*
 * Their digest (logverify_torn_hash(): the bytes of each, in order; ""
 * for none), for the "torn_hash" of that line (atk20r20 F4).
 */
const char	*eventlog_torn_hash(const struct eventlog *);
/*
 * The torn lines after the last whole line, events lost or not, and
 * their digest (*hash): what the anchor's torn=N:H keeps of a writer
 * that stops after them (checkpoint.h).
 */
unsigned long long eventlog_torn_left(const struct eventlog *,
		    const char **hash);
/*
 * Take n torn lines of digest hash as the ones after the end (what the
 * writer's anchor says it left there, not what is found: atk20r20 F5).
 */
void		 eventlog_torn_set(struct eventlog *, unsigned long long n,
		    const char *hash);
/*
 * The first seq of the files the writer keeps (0: not known): of the
 * oldest rotated file when the log was opened or reopened (SIGUSR1: the
 * files another rotated are theirs to delete), then moved on only when
 * the writer itself deletes a file past opts.keep that still starts
 * with the line it noted for it, to the first seq it noted for the file
 * it keeps next, if that note is vouched for: a line the writer wrote
 * as the first line of a file it made, or one its anchor lists
 * (eventlog_vouch(); on a reopen, one it noted before). Rotated files are name.1 .. name.N as the writer
 * rotated them (at open: while each starts with a log line whose seq is
 * below that of the file after it); another file at name.(N+1) stops
 * rotation (the file grows on). The signer writes it into its anchor
 * (checkpoint.h), so files deleted by anyone else show.
 */
long long	 eventlog_first(const struct eventlog *);
/*
 * The rotated files the writer keeps (*n) and the SHA-256 hex (hex[65])
 * of their first lines' seq and hash, the current file's first: what
 * its anchor carries (checkpoint.h). 0, or -1 (no memory).
 */
int		 eventlog_files(const struct eventlog *, unsigned *n, char *hex);
/*
 * At start, what the previous anchor said of them: the files counted at
 * open are the writer's when their first lines match (as listed, or,
 * unless the anchor is a close (closed), up to a few rotations later:
 * those past them are not its own, and the files made after the anchor,
 * which it does not list, are not vouched for); if they do not, first
 * moves on to none of them when the writer deletes one, only to files
 * it makes from now on.
 */
void		 eventlog_vouch(struct eventlog *, unsigned n, const char *hex,
		    int closed);
/*
 * 1 if, at open, no event was found in the last SG_LOG_TAIL_SCAN bytes
 * (opts.no_end_ok): seq 0 so far, the lines there foreign; the writer
 * continues from its anchor (eventlog_continue_from()).
 */
int		 eventlog_no_end(const struct eventlog *);
/*
 * At start, continue the chain from seq and hash (the writer's last
 * anchored checkpoint) instead of the end found in the file, which is
 * then foreign (eventlog_foreign()): lines planted near the seq bound.
 */
void		 eventlog_continue_from(struct eventlog *, long long seq,
		    const char *hash);
/* The files kept start at seq (if earlier): what the anchor said. */
void		 eventlog_keep_from(struct eventlog *, long long seq);
/* The file's path; owned by the log. */
const char	*eventlog_path(const struct eventlog *);

/*
 * A JSON string from an untrusted C string, safe to log: bytes that are
 * not valid UTF-8 become the four characters \xNN, and a string whose
 * escaped JSON form would pass SG_LOG_FIELD_MAX is cut and ends in "...".
 * NULL gives JSON null. Returns a new reference, or NULL on ENOMEM.
 */
json_t		*eventlog_str(const char *);

/* A security event's fields (docs/audit.md); NULL strings become null. */
struct eventlog_sec {
	const char		*event;		/* "egress.blocked", ... */
	const char		*sandbox;	/* sandbox id */
	const char		*run_id;	/* exec; NULL: left out */
	const char		*src;		/* client address */
	const char		*method;	/* "CONNECT", "GET", ... */
	const char		*host;		/* as requested */
	int			 port;		/* <= 0: null */
	const char		*sni;
	const char		*resolved;	/* address checked */
	const char		*reason;	/* reason_code() */
	const char		*message;	/* what the client saw */
	const char *const	*policy_sets;	/* NULL-terminated */
	const char		*rule;		/* "file:line" */
	const char		*policy_digest;	/* of the policy in force */
};

/*
 * The fields of a security event in docs/audit.md's order, every member
 * present (null when unset), strings made safe with eventlog_str().
 * Returns a new object to pass to eventlog_append() and then decref, or
 * NULL on ENOMEM.
 */
json_t		*eventlog_security_fields(const struct eventlog_sec *);

#endif
