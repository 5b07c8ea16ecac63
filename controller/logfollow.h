/*
 * logfollow.h: following a log as its writer appends and rotates, for
 * `sandgate audit tail --follow` and `sandgate pending --follow`.
 *
 * The follower starts where a history read of a logset (logset.h)
 * stopped: it holds every file of the set (duplicated fds), each at the
 * size it was read to, so nothing written while the history was read is
 * lost (no second open by name). It knows the files it read only by
 * device and inode, and how far (the start of the next whole line); it
 * never goes by what a line says (seq, hash: anyone who can write into
 * the log folder can copy those). When the name no longer holds the
 * file it follows (a rotation), it lists and opens the log again
 * (logset_add_log): every listed file it holds goes on from its offset,
 * every other is read from its start, oldest first, and the newest is
 * followed. So any number of rotations between two polls skips nothing,
 * and logrotate's `create` (the file renamed to NAME.1, an empty NAME
 * the follower takes, moved aside by the proxy when it reopens) repeats
 * nothing. Every file held is read on as it grows (a writer not yet
 * told to reopen writes into NAME.1; a folder writer may rename the
 * writer's file anywhere). A file held that leaves the listing is read
 * to its end and still held (the last 64; one let go is said on stderr
 * when it held events); when the
 * file followed left and none of the files read is listed, the files
 * rotated in between may be gone: said on stderr; when it left out of
 * turn (moved away or deleted, not rotated) holding events, that is
 * said too. The file followed cut shorter than read, or whose bytes
 * before the offset are no longer those read (cut and grown back,
 * copytruncate) is read again from its start and
 * the log listed again: the copy, a file never read, is read whole
 * (events repeated, never hidden). A listing that fails (a writer
 * rotating during every try, logset.h; a name that is no regular file;
 * the fd limit) is said once on stderr, with that newer files may not be
 * shown, and tried again: the files held are still read.
 *
 * What a line says decides nothing read or skipped; it only warns. Events
 * a file took out of the folder before it was read are told by the hash
 * chain (struct logchain below): a line given whose prev is the hash of
 * no line given is said on stderr. The name missing for some polls (the
 * writer's new file moved out) is said, and the log listed again. Once
 * the file followed left the name out of turn (moved away, deleted or
 * replaced, not rotated), a name that holds no line of the writer's (one
 * whose hash is its own) for 2 s is said, again every 2 s while it lasts
 * with the count of swaps seen, and its end too (a swap loop: every file
 * the writer puts there moved out before it is read, atk35e F3); an idle
 * log, logrotate's `create` and copytruncate are not said.
 */
#ifndef SG_LOGFOLLOW_H
#define SG_LOGFOLLOW_H

#include <stddef.h>

#include <jansson.h>

#include "logset.h"

struct logfollow;

/*
 * A follower that goes on from the newest file of set, each file read up
 * to the size it had when opened (their fds are duplicated: the set may
 * be freed; the follower holds as many files as the log has). The log
 * is the name the set's last file had (its folder and base name). NULL
 * when a file cannot be held (said on stderr).
 */
struct logfollow	*logfollow_new(const struct logset *set);
void			 logfollow_free(struct logfollow *);

/*
 * Call cb for every JSON object appended since the last step (cb borrows
 * it), across rotations (above). 0, or -1 with the cause on stderr.
 */
int			 logfollow_step(struct logfollow *,
			    void (*cb)(json_t *, void *), void *arg);

/*
 * logfollow_step() every LOGREAD_POLL_NS, stdout flushed after each,
 * until killed; returns -1 when the log cannot be read.
 */
int			 logfollow_run(struct logfollow *,
			    void (*cb)(json_t *, void *), void *arg);

/*
 * The hash chain of the lines given, to tell events never seen (atk20r31
 * F1). Only a line whose hash is its own (logverify_line()) counts, so a
 * planted line moves it only by being a whole log line. A line after a
 * lost stretch has prev = the hash of the last line lost: no line given
 * carries that hash unless it is that very line (shown). A line whose
 * prev is the hash of the last line given, of an older one (a repeat, a
 * copy read again), or all zeros (a chain's start) is no gap.
 *
 * The hashes given are remembered in two generations of at most
 * LOGCHAIN_KEEP each (128 bits of each hash, 16 bytes; at most 16 MiB):
 * when the newer is full the older is forgotten, so the last
 * LOGCHAIN_KEEP lines given at least are known. A line whose prev is the
 * hash of a line forgotten is said as a gap (a warning, never silence).
 * The slot of a hash is keyed by a per-process secret (SipHash) and a
 * lookup looks at a bounded number of slots; one that finds none counts
 * the hash as not known (a gap said, atk35b F2).
 */
#define LOGCHAIN_KEEP	(1 << 18)

struct logchain;

struct logchain	*logchain_new(void);
void		 logchain_free(struct logchain *);

/*
 * A line given (len bytes, no newline). LOGCHAIN_GAP when it verifies and
 * follows no line given (lines before it were not seen; *last is the seq
 * of the line given last), LOGCHAIN_OK when it verifies and chains, or is
 * the first; LOGCHAIN_REPLAY when its own hash was given before (a copy of
 * a line given: the chain is left as it was); LOGCHAIN_NONE when it does
 * not verify (not counted).
 */
enum logchain_verdict {
	LOGCHAIN_NONE = 0,
	LOGCHAIN_OK,
	LOGCHAIN_GAP,
	LOGCHAIN_REPLAY
};

/* 1 when the line given last went on from a line given, or was the first
   (not a chain of its own begun from zeros after the start). */
int		 logchain_continued(const struct logchain *);
enum logchain_verdict logchain_line(struct logchain *, const char *line,
		    size_t len, long long *seq, long long *last);

/*
 * 1 when hashes were forgotten (LOGCHAIN_KEEP reached, or one found no
 * slot within the probes a lookup may take).
 */
int		 logchain_forgot(const struct logchain *);

/*
 * The most slots one lookup or insert looked at (the set's slots are
 * keyed by a per-process secret and a lookup looks at 64 at most:
 * lines ground to collide cannot make each lookup walk long runs).
 */
unsigned	 logchain_probes(const struct logchain *);

#endif
