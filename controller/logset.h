/*
 * logset.h: the files of a log held open while they are read, for
 * `sandgate audit` (verify, list, summary, tail, export), `policy
 * suggest` and `policy pending`.
 *
 * A writer that rotates renames NAME.i to NAME.(i+1) ... NAME to NAME.1
 * while a reader goes through the files; a reader that opens the names
 * one after another then opens a name that holds the next-newer file by
 * then, and skips a file (a gap, reported as removed events). So every
 * file of the listing (logread_files()) is opened first: a rename does
 * not move an open file. A second listing then checks that every one of
 * the writer's names (NAME, NAME.1 .. NAME.m with at most one number
 * missing at a time, as in the middle of its renames; a name past a
 * wider gap is someone else's and no rotation) is still there and
 * holds the file opened under it (device and inode; a name that was
 * missing, the current file right after a rotation, still missing):
 * when one does not, a rotation came between the listing and the opens,
 * and the whole log is listed and opened again, at most LOGSET_TRIES
 * times, after which it fails saying so (the writer keeps rotating).
 * The names kept are those the files had when opened, and the files
 * are read up to the size they had then.
 */
#ifndef SG_LOGSET_H
#define SG_LOGSET_H

#include <jansson.h>

#include "logread.h"

#define LOGSET_TRIES		16	/* listings a rotation spoilt, at most */
#define LOGSET_BACKOFF_NS	5000000L /* 5 ms more after each such one */

struct logset;

struct logset	*logset_new(void);
void		 logset_free(struct logset *);

/*
 * Add the files of log dir/name, oldest first, opened (above). Returns
 * 0, or -1 with *cause (heap): no log there, a file that cannot be
 * opened, more files than may be held open, or a writer that rotated
 * during every try.
 */
int		 logset_add_log(struct logset *, const char *dir,
		    const char *name, char **cause);

/*
 * Add the files given (FILES of the command line), opened as they are:
 * a missing one is added unopened. 0, or -1 with *cause (heap).
 */
int		 logset_add_paths(struct logset *, char **paths, int n,
		    char **cause);

/*
 * n files the caller holds open besides the set's: the open-file limit
 * is raised for them too, or the listing fails saying so, before a file
 * is opened (a follower holds every file of the log while it lists the
 * log again).
 */
void		 logset_hold_besides(struct logset *, int n);

int		 logset_count(const struct logset *);
/* How many of the last files (the current one last) are the writer's run. */
int		 logset_writer_run(const struct logset *);
/* The name file i had when it was opened. */
const char	*logset_name(const struct logset *, int i);
/*
 * File i's fd (owned by the set) and the size it had when opened, or -1
 * when it was missing then (errno ENOENT).
 */
int		 logset_fd(const struct logset *, int i, long long *size);
/* logset_fd(), the fd then the caller's (the set holds it no longer). */
int		 logset_take(struct logset *, int i, long long *size);

/*
 * Call cb for every JSON object of files from .. from + n - 1, in order
 * (cb borrows it); a missing file is passed over, lines that are not
 * JSON objects are counted in st. 0, or -1 with *cause (heap).
 */
int		 logset_each(const struct logset *, int from, int n,
		    void (*cb)(json_t *, void *), void *arg,
		    struct logread_stats *st, char **cause);

/* logset_add_log() of one log, every object to cb, the set freed. */
int		 logset_read_log(const char *dir, const char *name,
		    void (*cb)(json_t *, void *), void *arg,
		    struct logread_stats *st, char **cause);

/*
 * For tests: fn(arg) runs after each listing, before its files are
 * opened (a rotation made there is one a reader can meet). NULL: none.
 */
void		 logset_test_hook(void (*fn)(void *), void *arg);

/*
 * For tests: fn(phase, arg) runs before the second listing (phase 1) and
 * after it, before it is compared (phase 2). NULL: none.
 */
void		 logset_test_phase_hook(void (*fn)(int, void *), void *arg);

#endif
