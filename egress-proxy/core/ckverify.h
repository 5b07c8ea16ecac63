/*
 * ckverify.h: checks the signed checkpoints of a log (checkpoint.h) on top
 * of its hash chain (logverify.h), with public keys the caller trusts.
 *
 * Pure apart from the keys: the caller loads them, feeds every line of
 * the log in order (rotated files oldest first, as logverify.h says) and
 * gives the current time to ckverify_finish(). The bytes are untrusted;
 * the fuzzer drives ckverify_feed() directly.
 *
 * A checkpoint is good when its members are well formed and its signature
 * verifies with a trusted key: one given with ckverify_add_key(), or one
 * that a good checkpoint (reason key) introduced. A key that introduced
 * another is retired: a checkpoint it signs later is not good (except one
 * that introduces the same key again, written by a writer that restarted
 * in the middle of a rotation; it counts as neither good nor bad). A
 * checkpoint signed by a key that is not trusted is counted and otherwise
 * read as an event: only a later good checkpoint vouches for it.
 *
 * A good checkpoint vouches for every line before it. With keys given,
 * the log is trusted up to its last good checkpoint, and the events after
 * it only while its writer may still be running: it promised a checkpoint
 * every every_secs seconds and after every_events events, so a log whose
 * last good checkpoint is older than twice that, or is followed by more
 * events, or is a close followed by anything, lost lines or was rewritten
 * after it. A checkpoint that is not good stops the check, as does a break
 * in the chain; the first event no longer trusted is the one after the
 * last good checkpoint (or the first of the log when there is none).
 *
 * With keys given, also:
 * - a log with no event fails, as does one with no good checkpoint;
 * - a chain that does not start at the first event ever (prev all zeros)
 *   must start with a good checkpoint of reason rotate, the line a writer
 *   puts first in every new file: older files were rotated away, not
 *   lines cut from a file;
 * - every key given with ckverify_add_key() must sign at least one good
 *   checkpoint: a log that should hold a key's checkpoints and does not
 *   was cut or rewritten before that key took over (a retired key's
 *   thief could otherwise sign a rewrite the older key still vouches for);
 * - a log.resume line (checkpoint.h) is judged: the writer's anchored
 *   checkpoint must be in the log as it wrote it (one of the last
 *   CKVERIFY_RING good checkpoints), the log must not have ended before
 *   it, and nothing may follow an anchored close (unless the anchor said
 *   the writer had reopened it: anchor_reopened, checkpoint.h), nor a
 *   good close between the anchored checkpoint and the last line the
 *   writer found (a writer whose anchor write failed never closes:
 *   checkpoint.h); only a writer that stopped without closing leaves
 *   lines after its anchor (a note);
 * - with ckverify_set_anchor(), the writer's anchor (the last checkpoint
 *   it wrote) must be in the log with its hash: a log cut at an older
 *   checkpoint, or at an old close, is found;
 * - a log.resume with anchor_seq 0 (its writer had no anchor yet) fails
 *   when lines no good checkpoint signed precede it: the key never saw
 *   them;
 * - a torn line that names an event (not the writer's own checkpoint or
 *   log.resume lines) must be followed by a log.outage or log.resume
 *   line (a rotate checkpoint may come between): a writer whose write was
 *   cut counts the event lost and says so before its next line, and one
 *   that starts after a torn line does too; anything else was put in;
 * - with the anchor, a torn line after the close it names, when the
 *   anchor says its writer had not gone on past that close, fails.
 */
#ifndef SG_CKVERIFY_H
#define SG_CKVERIFY_H

#include <stddef.h>
#include <stdint.h>

#include <openssl/evp.h>

#include "checkpoint.h"
#include "logverify.h"
#include "util.h"

#define CKVERIFY_KEYS_MAX	64
#define CKVERIFY_WHAT_MAX	640
#define CKVERIFY_RING		256	/* good checkpoints kept for resumes */

/* What ckverify_finish() found. */
enum ckverify_result {
	CKVERIFY_OK = 0,	/* chain intact, and anchored when keys given */
	CKVERIFY_CHAIN_BROKEN,	/* see chain.break_file, break_line, what */
	CKVERIFY_UNTRUSTED	/* see the untrusted_* and fail_* members */
};

/* A trusted key. */
struct ckverify_key {
	EVP_PKEY	*pkey;
	char		 id[CHECKPOINT_KEY_B64 + 1];
	int		 introduced;	/* by a checkpoint, not given */
	char		 next[CHECKPOINT_KEY_B64 + 1];	/* "" until retired */
	long long	 handover_seq;
	size_t		 signs;		/* good checkpoints it signed */
};

/* A place in the log. */
struct ckverify_at {
	long long	seq;
	char		file[LOGVERIFY_FILE_MAX];
	size_t		line;		/* 0: not in the log */
};

/* A good checkpoint: its seq and hash, and the line after it. */
struct ckverify_mark {
	long long		seq;
	char			hash[LOGVERIFY_HASH_HEX + 1];
	struct ckverify_at	next;	/* seq 0: none yet */
};

/*
 * State across lines and files. Treat as opaque but for the results
 * documented here; initialise with ckverify_init(), free the key
 * references with ckverify_release().
 */
struct ckverify {
	struct logverify	 chain;
	struct ckverify_key	 keys[CKVERIFY_KEYS_MAX];
	size_t			 nkeys;
	/* Counts. */
	size_t			 checkpoints;	/* lines with event log.checkpoint */
	size_t			 good;		/* good ones */
	size_t			 foreign;	/* signed by keys not trusted */
	size_t			 reintroduced;	/* neither good nor bad */
	size_t			 restarts;	/* open after a writer that did not close */
	struct ckverify_at	 restart;	/* the first such open */
	long long		 restart_from;	/* ...and the events it signed late */
	size_t			 stops;		/* open right after one not close */
	long long		 stop_at;	/* the first such checkpoint's seq */
	char			 stop_reason[8];	/* ...and its reason */
	size_t			 resumes;	/* log.resume lines (all) */
	size_t			 crashes;	/* ...of a writer that had not closed */
	struct ckverify_at	 crash;		/* the first of those */
	/* ...whose anchored checkpoint was rotated away since: the first's */
	size_t			 resumes_gone;
	long long		 resume_gone_seq;
	/* The last good checkpoint. */
	int			 have_good;
	struct ckverify_at	 good_at;
	char			 good_ts[UTIL_TS_LEN];
	int64_t			 good_us;
	char			 good_reason[8];
	char			 good_key[CHECKPOINT_KEY_B64 + 1];
	unsigned long long	 every_events;
	unsigned long long	 every_secs;
	long long		 last_close;	/* seq of the last good close */
	int			 close_resumed;	/* the line after it: a
						   log.resume naming it */
	long long		 close_signed;	/* the first good checkpoint
						   after it (0: none) */
	int			 closed;	/* it is a close, or a key
						   checkpoint right after one */
	/* Events after it (since the start while there is none). */
	size_t			 after;
	struct ckverify_at	 after_at;	/* the first of them */
	struct ckverify_at	 first_at;	/* the first event of the log */
	/* The last good checkpoints, for log.resume lines. */
	struct ckverify_mark	 ring[CKVERIFY_RING];
	size_t			 nring;		/* added in all */
	/* log.outage lines: events their writer could not write. */
	size_t			 outages;
	unsigned long long	 lost;
	struct ckverify_at	 outage_at;	/* the first of them */
	/*
	 * A torn line that names an event other than the writer's own
	 * checkpoint or log.resume lines, not yet followed by a log line:
	 * a writer whose event is cut says so in a log.outage line first.
	 */
	int			 torn_event;
	struct ckverify_at	 torn_at;
	/* Their digest (logverify_torn_hash()), for a "torn_hash". */
	char			 torn_hash[LOGVERIFY_HASH_HEX + 1];
	/*
	 * Those read before the current file (ckverify_file()): what a
	 * rotate line there declares of the file before it; torn lines in
	 * its own file before it are the log.outage's or log.resume's after
	 * it to count (atk20r24 F2).
	 */
	int			 torn_prior;
	char			 torn_prior_hash[LOGVERIFY_HASH_HEX + 1];
	/*
	 * The bytes of the torn lines read before the chain's first event,
	 * each ended by a newline: a rotate line the chain starts at chains
	 * them onto the torn lines it declares (its file before is gone).
	 */
	char			*head_torn;
	size_t			 head_len;
	int			 head_lost;	/* out of memory */
	/*
	 * The bytes of the torn lines read in the current file since its
	 * last log line, each ended by a newline: before a rotate line, each
	 * must be that line cut short (atk20r28 F1).
	 */
	char			*file_torn;
	size_t			 file_len;
	int			 file_lost;	/* out of memory */
	/* The writer's anchor, if given, and whether the log holds it. */
	int			 have_anchor;
	struct checkpoint_anchor anchor;
	int			 anchor_seen;
	int			 tail_seen;	/* its tail=: 1 as written, -1 not */
	/* The verdict when not trusted. */
	int			 failed;
	struct ckverify_at	 fail_at;	/* the line that showed it */
	struct ckverify_at	 untrusted;	/* the first event not trusted */
	char			 what[CKVERIFY_WHAT_MAX];
};

void		 ckverify_init(struct ckverify *);

/*
 * Trust pkey (an Ed25519 public key; a reference is taken). Returns 0, or
 * -1 when it is not Ed25519 or CKVERIFY_KEYS_MAX keys are trusted.
 */
int		 ckverify_add_key(struct ckverify *, EVP_PKEY *pkey);

/*
 * Check the log against its writer's anchor (checkpoint.h): the line
 * a->seq must be in the log with hash a->hash. Only with keys.
 */
void		 ckverify_set_anchor(struct ckverify *,
		    const struct checkpoint_anchor *a);

/* Start the next file, as logverify_file(). */
void		 ckverify_file(struct ckverify *, const char *name);

/*
 * Feed the next line (without its newline). Returns 0, or -1 once the
 * chain is broken or a checkpoint is not good (this or an earlier line);
 * after a checkpoint that is not good, feed the rest anyway: the chain
 * check goes on to the end.
 */
int		 ckverify_feed(struct ckverify *, const char *line,
		    size_t len);

/* Feed a whole buffer split at '\n', as logverify_buf(). */
int		 ckverify_buf(struct ckverify *, const char *buf, size_t len);

/*
 * Finish after the last line; now_us is the time (microseconds since the
 * epoch) against which a live writer's last checkpoint is judged.
 */
enum ckverify_result ckverify_finish(struct ckverify *, int64_t now_us);

/* Parse the ts the writer puts on a line into microseconds; 0 or -1. */
int		 ckverify_parse_ts(const char *ts, int64_t *us);

/* Drop the key references; the state may be initialised again. */
void		 ckverify_release(struct ckverify *);

#endif
