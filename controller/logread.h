/*
 * logread.h: reading the JSON-lines logs the proxy and the controller
 * write (eventlog.h), for `sandgate audit` and `sandgate policy suggest`.
 *
 * A log is the current file and its rotated files, read oldest first:
 * NAME.N ... NAME.1, NAME. Log bytes are untrusted: a file is read only
 * if it is a regular file (opened without blocking, and not through a
 * symlink: a log folder may belong to another uid), up to the size it had
 * when opened, with a bounded line reader.
 */
#ifndef SG_LOGREAD_H
#define SG_LOGREAD_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "sglimits.h"

#define LOGREAD_FILES_MAX	100000	/* rotated files looked at */

/*
 * A bounded line reader over an fd: a line is cut at SG_LOG_LINE_MAX, and
 * no more than `left` bytes are read. Embedded (logread_init), about
 * 80 KiB: allocate it rather than put it on the stack.
 */
struct logread {
	int		 fd;
	int		 follow;	/* keep a partial last line for later */
	long long	 left;		/* bytes still to read; -1: no end */
	long long	 work;		/* bytes read() may still give, when
					   following (logfollow.h: a bound
					   per poll); -1: no bound */
	char		 blk[16384];
	size_t		 off, end;
	char		 line[SG_LOG_LINE_MAX + 2];
	size_t		 n;		/* bytes of the current line kept */
	int		 partial;	/* some bytes of a line were consumed */
	long long	 taken;		/* bytes of the current line consumed */
	long long	 consumed;	/* bytes of the lines returned */
};

/* What logread_fd_each() met besides events. */
struct logread_stats {
	size_t	skipped;	/* lines that are not a JSON object */
	int	files;		/* files read (a missing one is not) */
};

/*
 * An RFC 3339 time, or its date-only form:
 * YYYY-MM-DD[(T|t| )hh:mm[:ss[.frac]]][Z|z|+hh:mm|-hh:mm]; no offset means
 * UTC. Into microseconds since the epoch. Returns 0, or -1 for anything
 * else (a bad field, a day the month lacks, an offset past 23:59, trailing
 * bytes).
 */
int	logread_parse_ts(const char *s, int64_t *us);

/*
 * A duration ("2h": that long before now_us, never before the epoch) or
 * an RFC 3339 time (logread_parse_ts). 0 or -1.
 */
int	logread_parse_time(const char *s, int64_t now_us, int64_t *us);

/* The real-time clock in microseconds since the epoch. */
int64_t	logread_now(void);

/*
 * The files of log dir/name, oldest first: name.N .. name.1, name (the
 * current file may be missing right after a rotation), as listed now: a
 * writer may rotate them before they are opened (logset.h opens them). *out is a heap
 * array of *nout heap strings (logread_files_free). Returns 0, or -1
 * with *cause (heap) when dir cannot be read or holds no file of the log.
 */
int	logread_files(const char *dir, const char *name, char ***out,
	    int *nout, char **cause);
void	logread_files_free(char **, int);

/*
 * Open a log file to read it: a regular file, never a FIFO or device,
 * never through a symlink. Returns the fd and its size, or -1 with errno
 * set and *cause (heap) saying why; ENOENT sets no cause.
 */
int	logread_open(const char *path, long long *size, char **cause);

/* logread_open(), the cause on stderr; -1 with errno kept. */
int	logread_open_warn(const char *path, long long *size);

/*
 * Read fd: follow keeps a partial last line; left: -1 for no end. No
 * bound on work (r->work -1): a follower sets one after this.
 */
void	logread_init(struct logread *, int fd, int follow, long long left);

/*
 * The next line (without its newline) into r->line, NUL-terminated;
 * *len is its length, or SG_LOG_LINE_MAX + 1 for a longer line. At end of
 * file a last line without newline is returned, except when following,
 * where it is kept until the rest arrives (and when r->work runs out).
 * The part of a line past SG_LOG_LINE_MAX is not kept, and its holes
 * (SEEK_DATA) are skipped, not read: a sparse file of zeros costs no
 * reading. Returns 1, 0 (end) or -1 (errno set).
 */
int	logread_next(struct logread *, size_t *len);

/*
 * A line as a JSON object (duplicate keys refused); NULL if it is not one
 * or is longer than SG_LOG_LINE_MAX. The caller owns the result.
 */
json_t	*logread_object(const char *line, size_t len);

/*
 * Call cb for every JSON object of the file open at fd, read from where
 * it is up to size bytes (cb borrows it; name for messages); lines that
 * are not JSON objects are counted in st. Returns 0, or -1 with *cause
 * (heap) when it cannot be read. To read a log's files: logset.h.
 */
int	logread_fd_each(struct logread *, int fd, long long size,
	    const char *name, void (*cb)(json_t *, void *), void *arg,
	    struct logread_stats *st, char **cause);

/* How often a follower (logfollow.h) looks for more. */
#define LOGREAD_POLL_NS	200000000L	/* 5 polls a second */

#endif
