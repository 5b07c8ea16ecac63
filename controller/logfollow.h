/*
 * logfollow.h: following a log as its writer appends and rotates, for
 * `sandgate audit tail --follow` and `sandgate pending --follow`.
 *
 * The follower starts where a history read of a logset (logset.h)
 * stopped: the set's own fd of its newest file, at the size it was read
 * to, so nothing written while the history was read is lost (no second
 * open by name). When the name no longer holds the file it reads (the
 * writer rotated), it reads that file to its end, lists and opens the
 * log again (logset_add_log), finds its file there by device and inode
 * (NAME.k) and reads the newer files NAME.(k-1) .. NAME.1 before it
 * follows the new NAME: more than one rotation between two polls skips
 * nothing. When its file was rotated away (past the writer's keep)
 * before it could be found, it says so on stderr: the files in between
 * are gone. A listing that fails (a writer rotating during every try,
 * logset.h) is said once on stderr and tried again at the next poll:
 * the file read is still held.
 */
#ifndef SG_LOGFOLLOW_H
#define SG_LOGFOLLOW_H

#include <jansson.h>

#include "logset.h"

struct logfollow;

/*
 * A follower that goes on from the newest file of set, read up to the
 * size it had when opened (its fd is duplicated: the set may be freed).
 * The log is the name the set's last file had (its folder and base name).
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

#endif
