/* eventlog.c: the hash-chained JSON-lines log writer; see eventlog.h. */
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "eventlog.h"
#include "log.h"
#include "logverify.h"
#include "sglimits.h"
#include "util.h"

#define EVENTLOG_HEX		(LOGVERIFY_HASH_HEX + 1)
#define EVENTLOG_SYNC_US	1000000u	/* fdatasync at most 1 s late */
#define EVENTLOG_LOCK_TRIES	1024	/* renamed under us: reopen */
#define EVENTLOG_FIRST_SCAN	8192		/* first tail read */
#define EVENTLOG_END_FOREIGN	1	/* eventlog_scan_window() found */
#define EVENTLOG_END_TORN	2
#define EVENTLOG_VOUCH_SHIFT	16	/* rotations an anchor may lag */
#define EVENTLOG_CREATE_TRIES	4	/* a name taken again and again */
#define EVENTLOG_ASIDE_TRIES	8	/* random aside names taken in a row */
#define EVENTLOG_PLACE_TRIES	16	/* NAME appearing and going in turn */
#define EVENTLOG_FOREIGN_MAX	16	/* NAME.foreign.* one process makes */
#define EVENTLOG_LEFT_NOTES	4	/* files that left at a swap, noted */
#define EVENTLOG_RECOUNT_US	60000000u /* USR1's recount window, at most */
#define EVENTLOG_SETTLE_US	3000000u /* ... once the count held still */
#define EVENTLOG_WARN_US	1000000u	/* a warning a second at most */
#define EVENTLOG_SAY_MOVED	0	/* ... of each kind: the name swapped */
#define EVENTLOG_SAY_ASIDE	1	/* a foreign file moved aside */
#define EVENTLOG_SAY_FAILED	2	/* no new file could be put there */
#define EVENTLOG_SAY_KINDS	3
#define EVENTLOG_PREV_LEN	(sizeof(",\"prev\":\"") - 1)
#define EVENTLOG_DUMP_FLAGS	(JSON_COMPACT | JSON_PRESERVE_ORDER | \
				    JSON_ENSURE_ASCII)

static const char eventlog_zeros[EVENTLOG_HEX] =
    "0000000000000000000000000000000000000000000000000000000000000000";

/* A file's first log line: seq (0: none) and hash. */
struct eventlog_own {
	long long	seq;
	char		hash[EVENTLOG_HEX];
	/*
	 * The writer wrote it as the file's first line (or its anchor
	 * lists it so): first may move on to it.
	 */
	int		vouched;
};

struct eventlog {
	char			*dir;
	char			*name;
	char			*path;
	struct eventlog_opts	 opts;
	int			 fd;
	long long		 seq;	/* last event written or found */
	char			 prev[EVENTLOG_HEX];	/* its hash */
	/* The file state seq/prev were read from (shared mode). */
	int			 cache_valid;
	dev_t			 dev;
	ino_t			 ino;
	off_t			 size;
	unsigned long long	 written; /* bytes this process appended */
	int			 need_nl; /* a torn line ends the file */
	int			 dirty;	/* written since last sync */
	/*
	 * A rotation (the writer's, or one it found at its start with torn
	 * lines in name.1) is not yet durable in the folder: synced before
	 * the rotate line that declares what the older file holds.
	 */
	int			 dir_unsynced;
	uint64_t		 last_sync_us;
	int			 healthy;
	char			 error[256];
	struct eventlog_hook	 hook;
	int			 in_hook;	/* appending a hook line */
	int			 in_before;	/* in hook.before() */
	int			 hook_due;	/* one goes before the next event */
	int			 in_first;	/* writing a file's first hook line */
	int			 held;		/* shared: locked until released */
	int			 not_reg;	/* the path is not a regular file */
	int			 foreign;	/* not-log lines end the file */
	int			 no_end;	/* ...and no event before them */
	int			 torn;		/* ...or a torn line did */
	/*
	 * Torn lines after the last whole line this writer wrote or found
	 * (0 or 1 found at the end, one per cut line it could not take
	 * back): the log.outage or log.resume written next counts them.
	 */
	unsigned long long	 torn_lines;
	/* Their digest, in order (logverify_torn_hash(), atk20r20 F4). */
	char			 torn_hash[EVENTLOG_HEX];
	unsigned long long	 torn_left;	/* cut lines left, in all */
	/*
	 * Torn lines but no log line in the file: its first log line is
	 * still the rotate line, which declares only name.1's torn lines
	 * (eventlog_torn_head()).
	 */
	int			 torn_head;
	/*
	 * Its torn lines were put there (eventlog_head_planted()): the
	 * log.outage or log.resume, formatted before, counts what is left.
	 */
	int			 head_recount;
	unsigned long long	 head_declares;
	char			 head_hash[EVENTLOG_HEX];
	long long		 first;	/* first seq of the files it keeps */
	struct eventlog_own	 cur;	/* the current file's first line */
	/* own[i - 1]: the first line of name.i as the writer rotated it. */
	struct eventlog_own	*own;
	unsigned		 n_own;
	unsigned		 own_cap;
	int			 blocked; /* a file not its own in the way */
	uint64_t		 blocked_us;	/* when that was seen */
	/*
	 * The file it wrote left the name (moved out or replaced, found by
	 * eventlog_check_name(), or a reopen): the log.moved line that says
	 * so is due first in the new file.
	 */
	int			 left_due;
	dev_t			 left_dev;
	ino_t			 left_ino;
	long long		 left_seq;
	int			 in_left;	/* writing that line */
	/*
	 * The first lines of the last files the writer made and wrote that
	 * left the name at a swap (a tick, not SIGUSR1; atk36c F1): logrotate
	 * may have renamed one to name.1 before the tick, its SIGUSR1 coming
	 * later. Only a SIGUSR1's count (eventlog_find_first()) vouches for
	 * them; a tick never counts (atk35e F2).
	 */
	struct eventlog_own	 left_notes[EVENTLOG_LEFT_NOTES];
	unsigned		 n_left_notes;
	/*
	 * From the last SIGUSR1 (0: no window open), each tick counts the
	 * rotated files again as that signal did (eventlog_recount_tick()):
	 * logrotate deletes its oldest after its whole postrotate script,
	 * so a count at the signal still finds it. changed: the last tick
	 * whose count differed from the one before (0: none yet).
	 */
	uint64_t		 recount_from_us;
	uint64_t		 recount_changed_us;
	unsigned		 foreign_made;	/* NAME.foreign.* made */
	/* Warnings a folder writer can cause: one a second each kind. */
	uint64_t		 said_us[EVENTLOG_SAY_KINDS];
	unsigned long long	 unsaid[EVENTLOG_SAY_KINDS];
	/* Events not written while the log was unavailable (log.outage). */
	unsigned long long	 lost;
	unsigned long long	 lost_events;	/* the attempts they held */
	char			 lost_since[UTIL_TS_LEN]; /* the first lost */
	char			 lost_why[256];	/* why it failed */
	/* Outages in log.outage lines no checkpoint line follows yet. */
	unsigned long long	 told;
	unsigned long long	 told_events;
	char			 told_since[UTIL_TS_LEN];
	char			 told_why[256];
};

struct eventlog_found;

static int	eventlog_fail(struct eventlog *, const char *);
static int	eventlog_append_one(struct eventlog *, json_t *, int *);
static int	eventlog_before(struct eventlog *);
static void	eventlog_lost(struct eventlog *, unsigned long long);
static int	eventlog_put_outage(struct eventlog *);
static int	eventlog_open_fd(struct eventlog *);
static int	eventlog_create(struct eventlog *);
static int	eventlog_make_new(struct eventlog *, char *, size_t,
		    struct stat *);
static int	eventlog_place(struct eventlog *, const char *);
static void	eventlog_put_aside(struct eventlog *, const char *);
static void	eventlog_say(struct eventlog *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static int	eventlog_still_own(struct eventlog *, int);
static int	eventlog_replace(struct eventlog *, int);
static int	eventlog_check_name(struct eventlog *);
static int	eventlog_put_left(struct eventlog *);
static int	eventlog_put(struct eventlog *, json_t *);
static int	eventlog_first_line(struct eventlog *);
static int	eventlog_scan(int, off_t, struct logverify_line *, int *,
		    int *, off_t *);
static size_t	eventlog_collect(const char *, size_t, int,
		    struct eventlog_found *, size_t, size_t *, size_t *);
static size_t	eventlog_chain_end(struct eventlog_found *, size_t,
		    int *, int);
static int	eventlog_scan_window(int, off_t, off_t,
		    struct logverify_line *, int *, int *, off_t *);
static int	eventlog_torn_scan(int, off_t, off_t, unsigned long long *,
		    char *);
static int	eventlog_ends_torn(int, off_t);
static char	*eventlog_torn_before(char *, size_t);
static void	eventlog_torn_past_scan(const char *, int);
static int	eventlog_rotate_declares(const char *, const char *,
		    const char *,
		    const char *, unsigned long long *, char *);
static int	eventlog_cut_rotates(const char *, size_t, const char *,
		    size_t);
static void	eventlog_head_planted(struct eventlog *, const char *,
		    size_t);
static void	eventlog_recount(struct eventlog *, json_t *);
static void	eventlog_recount_tick(struct eventlog *);
static int	eventlog_rotated_tail(struct eventlog *,
		    struct logverify_line *, unsigned long long *, char *);
static int	eventlog_load_tail(struct eventlog *);
static int	eventlog_same_file(struct eventlog *);
static int	eventlog_lock(struct eventlog *);
static void	eventlog_unlock(struct eventlog *);
static int	eventlog_build(struct eventlog *, json_t *, char **,
		    size_t *, char *);
static int	eventlog_rotation_blocked(struct eventlog *, unsigned *);
static int	eventlog_rotate_files(struct eventlog *, unsigned);
static long long eventlog_first_of(const char *, struct eventlog_own *);
static int	eventlog_is_own(const char *, const struct eventlog_own *);
static int	eventlog_drop(struct eventlog *, unsigned);
static int	eventlog_names_past(const struct eventlog *, unsigned);
static void	eventlog_find_first(struct eventlog *,
		    const struct eventlog_own *);
static int	eventlog_left_noted(const struct eventlog *,
		    const struct eventlog_own *);
static void	eventlog_note_left(struct eventlog *,
		    const struct eventlog_own *);
static void	eventlog_clean_new(struct eventlog *);
static int	eventlog_noted(const struct eventlog_own *,
		    const struct eventlog_own *, unsigned,
		    const struct eventlog_own *);
static int	eventlog_close_gap(struct eventlog *, unsigned, long long);
static int	eventlog_own_push(struct eventlog *, const struct eventlog_own *,
		    int);
static int	eventlog_own_digest(const struct eventlog_own *,
		    const struct eventlog_own *, unsigned, char *);
static int	eventlog_rotate(struct eventlog *);
static int	eventlog_write(struct eventlog *, const char *, size_t);
static int	eventlog_sync(struct eventlog *);
static int	eventlog_sync_dir(struct eventlog *);
static size_t	eventlog_utf8_len(const unsigned char *);
static int	eventlog_set_str(json_t *, const char *, const char *);

/* Mark the log unavailable with "what \"path\": strerror"; keeps errno. */
static int
eventlog_fail(struct eventlog *log, const char *what)
{
	int	saved = errno;

	snprintf(log->error, sizeof(log->error), "%s \"%s\": %s", what,
	    log->path, strerror(saved));
	log->healthy = 0;
	errno = saved;
	return -1;
}

int
eventlog_open_file(const char *path, int flags, struct stat *st)
{
	int	fd, saved;

	fd = open(path, flags | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0640);
	if (fd == -1)
		return -1;
	if (fstat(fd, st) == -1)
		saved = errno;
	else if (!S_ISREG(st->st_mode))
		saved = EINVAL;
	else
		return fd;
	close(fd);
	errno = saved;
	return -1;
}

/*
 * Open the path for appending and note which file it is: at start (and
 * in shared mode) the file there, its first line noted as found (the
 * anchor says whether it is the writer's, eventlog_vouch()). A rotation
 * or a reopen puts a file the writer makes there (eventlog_create()).
 */
static int
eventlog_open_fd(struct eventlog *log)
{
	struct stat	st;

	log->fd = eventlog_open_file(log->path, O_RDWR | O_APPEND | O_CREAT,
	    &st);
	if (log->fd == -1) {
		log->not_reg = errno == ELOOP || errno == EINVAL;
		return -1;
	}
	log->not_reg = 0;
	log->dev = st.st_dev;
	log->ino = st.st_ino;
	log->size = st.st_size;
	/* seq and prev in memory were not read from this file. */
	log->cache_valid = 0;
	(void)eventlog_first_of(log->path, &log->cur);
	log->cur.vouched = 1;
	return 0;
}

/*
 * Say a warning a folder writer can cause as often as it likes (a file
 * swapped at the name, one moved aside): one line a second at most of
 * each kind, the ones not said counted in the next.
 */
static void
eventlog_say(struct eventlog *log, int kind, const char *fmt, ...)
{
	char		msg[1024];
	va_list		ap;
	uint64_t	now = util_now_us();

	if (log->said_us[kind] != 0 &&
	    now - log->said_us[kind] < EVENTLOG_WARN_US) {
		log->unsaid[kind]++;
		return;
	}
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (log->unsaid[kind] > 0)
		log_warnx("%s (%llu more such in the last second)", msg,
		    log->unsaid[kind]);
	else
		log_warnx("%s", msg);
	log->said_us[kind] = now;
	log->unsaid[kind] = 0;
}

/*
 * A new empty file under a private name in the folder (.NAME.new.R, R 16
 * random hex digits: nobody can take it ahead of the writer, and no
 * reader takes it for the log): O_EXCL, never a symlink or a file someone
 * else put there. Its name into tmp. The fd, or -1 with errno.
 */
static int
eventlog_make_new(struct eventlog *log, char *tmp, size_t size,
    struct stat *st)
{
	uint64_t	r;
	unsigned	i;
	int		fd, saved;

	for (i = 0; i < EVENTLOG_ASIDE_TRIES; i++) {
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			return -1;
		snprintf(tmp, size, "%s/.%s.new.%016llx", log->dir, log->name,
		    (unsigned long long)r);
		fd = open(tmp, O_RDWR | O_APPEND | O_CREAT | O_EXCL |
		    O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0640);
		if (fd == -1 && errno == EEXIST)
			continue;
		if (fd == -1)
			return -1;
		if (fstat(fd, st) == 0)
			return fd;
		saved = errno;
		(void)unlink(tmp);
		close(fd);
		errno = saved;
		return -1;
	}
	errno = EEXIST;
	return -1;
}

/*
 * 1 if st is what eventlog_make_new() leaves when the writer stops
 * before putting it at the name: a regular file with one link, nothing
 * in it, the writer's user's, no permission bit past the 0640 it creates
 * with (the umask may take some away).
 */
static int
eventlog_new_left(const struct stat *st)
{
	return S_ISREG(st->st_mode) && st->st_nlink == 1 &&
	    st->st_size == 0 && st->st_uid == geteuid() &&
	    (st->st_mode & 07777 & ~(mode_t)0640) == 0;
}

/*
 * Delete the file at name in the folder at dfd if it is a new file the
 * writer left (eventlog_new_left()), only as it was checked (atk36g F2):
 * opened without following a link, checked by its fd, and the name still
 * that file right before unlinkat(). A folder writer can still rename
 * another file onto the name in the microseconds between that look and
 * the unlink (no call unlinks by inode): the fd then still has its link,
 * which stderr says. Each deletion said on stderr.
 */
static void
eventlog_drop_new(struct eventlog *log, int dfd, const char *name)
{
	struct stat	st, now;
	int		fd;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
	    !eventlog_new_left(&st))
		return;	/* not opened: a FIFO or device never is */
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_NOCTTY | O_CLOEXEC);
	if (fd == -1)
		return;
	if (fstat(fd, &st) == 0 && eventlog_new_left(&st) &&
	    fstatat(dfd, name, &now, AT_SYMLINK_NOFOLLOW) == 0 &&
	    now.st_dev == st.st_dev && now.st_ino == st.st_ino &&
	    unlinkat(dfd, name, 0) == 0) {
		if (fstat(fd, &now) == 0 && now.st_nlink != 0)
			log_warnx("\"%s/%s\": deleted, but another file was "
			    "put at that name after the writer checked the "
			    "empty new file it left there (device %lu inode "
			    "%lu, kept)", log->dir, name,
			    (unsigned long)st.st_dev, (unsigned long)st.st_ino);
		else
			log_warnx("\"%s/%s\": an empty new file a writer "
			    "left (stopped before putting it at \"%s\"): "
			    "deleted", log->dir, name, log->name);
	}
	close(fd);
}

/*
 * The writer's new files left empty at their private name by a crash
 * between eventlog_make_new() and eventlog_place() (atk36c F4): deleted
 * at open, only the writer's own (eventlog_drop_new()), named exactly
 * .NAME.new.R: nothing of the log is lost with it. Anything else there
 * is left as it is.
 */
static void
eventlog_clean_new(struct eventlog *log)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 len = strlen(log->name);
	const char	*r;

	if ((d = opendir(log->dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] != '.' ||
		    strncmp(de->d_name + 1, log->name, len) != 0 ||
		    strncmp(de->d_name + 1 + len, ".new.", 5) != 0)
			continue;
		r = de->d_name + 1 + len + 5;
		if (strlen(r) != 16 || strspn(r, "0123456789abcdef") != 16)
			continue;
		eventlog_drop_new(log, dirfd(d), de->d_name);
	}
	closedir(d);
}

/*
 * Put the file at tmp at the path in one step: renameat2(2)
 * RENAME_NOREPLACE when the name is free, RENAME_EXCHANGE when a file is
 * there (it ends at tmp, then moved aside: eventlog_put_aside()). Never
 * a moment with a name for someone else to take: a folder writer linking
 * a file at the name again and again only makes the exchange take that
 * one. 0, or -1 with errno (tmp still the writer's file).
 */
static int
eventlog_place(struct eventlog *log, const char *tmp)
{
	unsigned	i;

	for (i = 0; i < EVENTLOG_PLACE_TRIES; i++) {
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, log->path,
		    RENAME_NOREPLACE) == 0)
			return 0;
		if (errno != EEXIST)
			return -1;
		if (renameat2(AT_FDCWD, tmp, AT_FDCWD, log->path,
		    RENAME_EXCHANGE) == 0) {
			eventlog_put_aside(log, tmp);
			return 0;
		}
		if (errno != ENOENT)
			return -1;
	}
	errno = EEXIST;
	return -1;
}

/*
 * The file that was at the path, now at the private name at (a file the
 * writer did not make): moved to name.foreign.SEQ.R (SEQ the writer's
 * last, R random), never over another file, while this process made
 * fewer than EVENTLOG_FOREIGN_MAX of those; past that an empty one (all
 * that a swap loop or logrotate's `create` leaves) is deleted, nothing of
 * the log in it, and one with content is left at its private name, so
 * that a folder writer cannot make the writer fill the folder. Said on
 * stderr, a line a second at most.
 */
static void
eventlog_put_aside(struct eventlog *log, const char *at)
{
	char		to[4096];
	struct stat	st;
	uint64_t	r;
	unsigned	i;

	for (i = 0; log->foreign_made < EVENTLOG_FOREIGN_MAX &&
	    i < EVENTLOG_ASIDE_TRIES; i++) {
		if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
			break;
		snprintf(to, sizeof(to), "%s.foreign.%lld.%016llx", log->path,
		    log->seq, (unsigned long long)r);
		if (renameat2(AT_FDCWD, at, AT_FDCWD, to,
		    RENAME_NOREPLACE) == 0) {
			log->foreign_made++;
			eventlog_say(log, EVENTLOG_SAY_ASIDE, "not writing "
			    "to \"%s\": the writer did not create that file; "
			    "moved to \"%s\", writing in a new one",
			    log->path, to);
			return;
		}
		if (errno != EEXIST)
			break;
	}
	if (lstat(at, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
	    unlink(at) == 0) {
		eventlog_say(log, EVENTLOG_SAY_ASIDE, "not writing to \"%s\": "
		    "the writer did not create that file (empty, deleted: %u "
		    "files moved aside already); writing in a new one",
		    log->path, log->foreign_made);
		return;
	}
	eventlog_say(log, EVENTLOG_SAY_ASIDE, "not writing to \"%s\": the "
	    "writer did not create that file; left at \"%s\", writing in a "
	    "new one", log->path, at);
}

/*
 * Make a new file and put it at the path (eventlog_make_new(),
 * eventlog_place()): its first line will be the writer's own. The fd it
 * had is left as it is (the caller closes it once this worked). 0, or -1
 * with errno, nothing changed.
 */
static int
eventlog_create(struct eventlog *log)
{
	struct stat	st;
	char		tmp[4096];
	int		fd, saved;

	if ((fd = eventlog_make_new(log, tmp, sizeof(tmp), &st)) == -1)
		return -1;
	if (eventlog_place(log, tmp) == -1) {
		saved = errno;
		(void)unlink(tmp);
		close(fd);
		errno = saved;
		return -1;
	}
	log->fd = fd;
	log->not_reg = 0;
	log->dev = st.st_dev;
	log->ino = st.st_ino;
	log->size = st.st_size;
	log->cache_valid = 0;
	memset(&log->cur, 0, sizeof(log->cur));
	return 0;
}

/* One log line found by the tail scan, and where it ends in the window. */
struct eventlog_found {
	struct logverify_line	l;
	size_t			end;
	int			mismatch;
	int			linked;	/* reached from the first run */
};

/*
 * The index of the line the log ends with among the n log lines found,
 * in file order: the last line of the last run of consecutive seqs that
 * is linked to the first run (the window's start): the first run is,
 * and a later run is when its first line follows a linked line before
 * it by seq and hash. A run that follows none of them (planted: the
 * writer never makes a seq jump), or only a line that is itself
 * planted, is passed over. strict: neither is a run that ends within
 * SG_LOG_SEQ_ROOM of the bound (no writer gets there: planted, whatever
 * precedes or splits it), and n is returned when no run is linked.
 * *skipped says whether a run was passed over.
 */
static size_t
eventlog_chain_end(struct eventlog_found *f, size_t n, int *skipped,
    int strict)
{
	size_t	b, j, end, e = strict ? n : 0;
	int	linked;

	for (b = 0; b < n; b = end) {
		for (end = b + 1; end < n &&
		    f[end - 1].l.seq + 1 == f[end].l.seq; end++)
			;
		if (strict && f[end - 1].l.seq > SG_LOG_SEQ_MAX -
		    SG_LOG_SEQ_ROOM) {
			for (j = b; j < end; j++)
				f[j].linked = 0;
			continue;
		}
		linked = b == 0;
		for (j = b; !linked && j > 0; j--)
			linked = f[j - 1].linked &&
			    f[j - 1].l.seq + 1 == f[b].l.seq &&
			    strcmp(f[j - 1].l.hash, f[b].l.prev) == 0;
		for (j = b; j < end; j++)
			f[j].linked = linked;
		if (linked)
			e = end - 1;
	}
	*skipped = e != n - 1;
	return e;
}

/*
 * The log lines among the whole lines of buf[0, len), oldest first, into
 * f (at most cap); a first line cut by the window's start (cut) is not
 * whole. *last_foreign: where the last line that is neither a log line,
 * torn nor empty ends (0: none); *last_torn: where the last torn line
 * ends (0: none). Returns how many were found.
 */
static size_t
eventlog_collect(const char *buf, size_t len, int cut,
    struct eventlog_found *f, size_t cap, size_t *last_foreign,
    size_t *last_torn)
{
	const char		*start = buf, *end;
	enum logverify_status	 st;
	size_t			 n = 0;

	*last_foreign = *last_torn = 0;
	if (cut) {
		while (start < buf + len && *start != '\n')
			start++;
		if (start < buf + len)
			start++;
	}
	for (; start < buf + len && n < cap; start = end + 1) {
		if ((end = memchr(start, '\n', (size_t)(buf + len - start))) ==
		    NULL)
			end = buf + len;
		st = logverify_line(start, (size_t)(end - start), &f[n].l);
		if (st == LOGVERIFY_NOT_LOG && end > start)
			*last_foreign = (size_t)(end - buf) + 1;
		if (st == LOGVERIFY_TORN)
			*last_torn = (size_t)(end - buf) + 1;
		if (st != LOGVERIFY_OK && st != LOGVERIFY_HASH_MISMATCH)
			continue;
		f[n].mismatch = st == LOGVERIFY_HASH_MISMATCH;
		f[n++].end = (size_t)(end - buf) + 1;
	}
	return n;
}

/*
 * Find the line the log ends with in bytes [size - window, size) of fd
 * (eventlog_chain_end() over its log lines), skipping torn lines and
 * lines that are not ours; *foreign says whether a line that is neither
 * torn nor empty follows it: a line that is not ours, or a log line the
 * writer does not continue from (EVENTLOG_END_FOREIGN), and whether a
 * torn line does, with its newline or not (EVENTLOG_END_TORN). A line whose hash does not verify still
 * counts (the chain continues from what it claims, and the verifier
 * reports the edit). *near says whether every run the window shows ends
 * within SG_LOG_SEQ_ROOM of the bound (then the end is taken from them
 * as before): a larger window may show the writer's own end before
 * them. *end: where the line found ends in the file (the window's start
 * when none is, the file's end when that start cut a line). Returns 1
 * found, 0 none, -1 read error.
 */
static int
eventlog_scan_window(int fd, off_t size, off_t window,
    struct logverify_line *out, int *foreign, int *near, off_t *end)
{
	struct eventlog_found	*f = NULL;
	char			*buf;
	off_t			 off = size - window;
	size_t			 n, cap, e, last_foreign, last_torn;
	ssize_t			 got;
	int			 skipped, rc = -1;

	*near = 0;
	/* A log line holds two hashes: at most window / 128 of them. */
	cap = (size_t)window / (2 * LOGVERIFY_HASH_HEX) + 1;
	if ((buf = malloc((size_t)window)) == NULL ||
	    (f = calloc(cap, sizeof(*f))) == NULL)
		goto out;
	got = pread(fd, buf, (size_t)window, off);
	if (got != window) {
		if (got >= 0)
			errno = EIO;
		goto out;
	}
	n = eventlog_collect(buf, (size_t)window, off > 0, f, cap,
	    &last_foreign, &last_torn);
	rc = 0;
	*end = off > 0 ? size : 0;
	if (n == 0) {
		*foreign = (last_foreign > 0 ? EVENTLOG_END_FOREIGN : 0) |
		    (last_torn > 0 ? EVENTLOG_END_TORN : 0);
		goto out;
	}
	/* Only runs near the bound: a larger window, or take them. */
	if ((e = eventlog_chain_end(f, n, &skipped, 1)) == n) {
		*near = off > 0;
		e = eventlog_chain_end(f, n, &skipped, 0);
	}
	*out = f[e].l;
	*end = off + (off_t)f[e].end;
	*foreign = (skipped || last_foreign > f[e].end ?
	    EVENTLOG_END_FOREIGN : 0) |
	    (last_torn > f[e].end ? EVENTLOG_END_TORN : 0);
	rc = 1;
	if (*near)
		goto out;	/* a larger window is read: said there */
	if (skipped)
		log_warnx("the log line with seq %lld after seq %lld does not "
		    "follow the chain: continuing from seq %lld; 'sandgate "
		    "audit verify' reports it", f[e + 1].l.seq, f[e].l.seq,
		    f[e].l.seq);
	if (f[e].mismatch)
		log_warnx("last event in the log does not verify "
		    "(seq %lld); 'sandgate audit verify' reports it",
		    out->seq);
out:
	free(f);
	free(buf);
	return rc;
}

/*
 * Find the line the log ends with in a file of size bytes: first in its
 * last few KiB, then in its last SG_LOG_TAIL_SCAN bytes when there is
 * none there or its run may be planted. *all says whether the whole file
 * was searched. Returns as eventlog_scan_window().
 */
static int
eventlog_scan(int fd, off_t size, struct logverify_line *out, int *all,
    int *foreign, off_t *end)
{
	off_t	window = size < EVENTLOG_FIRST_SCAN ? size :
	    EVENTLOG_FIRST_SCAN;
	int	r, near;

	*all = 1;
	*foreign = 0;
	*end = 0;
	if (size == 0)
		return 0;
	r = eventlog_scan_window(fd, size, window, out, foreign, &near, end);
	if ((r != 0 && !near) || r == -1 || window == size) {
		*all = window == size;
		return r;
	}
	window = size < SG_LOG_TAIL_SCAN ? size : SG_LOG_TAIL_SCAN;
	*all = window == size;
	*foreign = 0;
	return eventlog_scan_window(fd, size, window, out, foreign, &near,
	    end);
}

/*
 * The torn lines in bytes [from, size) of fd (after the log's last
 * event, which is at most SG_LOG_TAIL_SCAN back): *n more, their digest
 * chained into hex in order (logverify_torn_hash()), so that a start
 * accounts for each torn line with its bytes (atk20r20 F3, F4). 0, or -1.
 */
static int
eventlog_torn_scan(int fd, off_t from, off_t size, unsigned long long *n,
    char *hex)
{
	struct logverify_line	 l;
	char			*buf, *p, *e;
	size_t			 len;
	ssize_t			 got;
	int			 rc = -1;

	if (size <= from)
		return 0;
	len = (size_t)(size - from);
	if ((buf = malloc(len)) == NULL)
		return -1;
	if ((got = pread(fd, buf, len, from)) != (ssize_t)len) {
		if (got >= 0)
			errno = EIO;
		goto out;
	}
	for (p = buf; p < buf + len; p = e + 1) {
		if ((e = memchr(p, '\n', (size_t)(buf + len - p))) == NULL)
			e = buf + len;
		if (logverify_line(p, (size_t)(e - p), &l) != LOGVERIFY_TORN)
			continue;
		if (logverify_torn_hash(hex, p, (size_t)(e - p)) == -1) {
			errno = ENOMEM;
			goto out;
		}
		(*n)++;
	}
	rc = 0;
out:
	free(buf);
	return rc;
}

/* 1 if a non-empty file does not end in a newline, 0 if it does, -1. */
static int
eventlog_ends_torn(int fd, off_t size)
{
	char	c;

	if (size == 0)
		return 0;
	if (pread(fd, &c, 1, size - 1) != 1)
		return -1;
	return c != '\n';
}

/*
 * 1 if the file's bytes up to end (where its last event ends) are one
 * line, a rotate checkpoint (checkpoint.h's CHECKPOINT_EVENT), after
 * nothing but torn lines (those of a start killed inside its rotate
 * line, eventlog_torn_head()): a file started by a writer killed before
 * the log.outage or log.resume that counts the torn lines before it.
 * *n and hex are then what that signed line declares ("torn",
 * "torn_hash"; none without them), never what the older files hold now:
 * a line put at the end of name.1 after the rotate line is not the
 * writer's to count (atk20r24 F3), and the declared lines stay counted
 * once their file is rotated again or deleted (atk20r24 F1); then the
 * torn lines of this file before it, chained after them, as verify --key
 * does (atk20r24 F2). 0 else, *n and hex untouched.
 */
static int
eventlog_only_rotate(const char *path, int fd, off_t end,
    unsigned long long *n, char *hex)
{
	char		*buf, *line;
	int		 rc = 0;

	if (end > SG_LOG_TAIL_SCAN)
		eventlog_torn_past_scan(path, fd);
	if (end <= 0 || end > SG_LOG_TAIL_SCAN || (buf = malloc((size_t)end)) ==
	    NULL)
		return 0;
	if (pread(fd, buf, (size_t)end, 0) == (ssize_t)end &&
	    buf[end - 1] == '\n' && (line = eventlog_torn_before(buf,
	    (size_t)end - 1)) != NULL)
		rc = eventlog_rotate_declares(path, buf, line, buf + end - 1,
		    n, hex);
	free(buf);
	return rc;
}

/*
 * A file whose last event ends past SG_LOG_TAIL_SCAN: if the bytes a
 * start reads of it hold only torn lines, more of them come before its
 * first log line than the cut rotate lines of a crash loop make (one a
 * start, a few hundred bytes each): put there, not counted, so verify
 * --key fails them (atk20r30 F2). Said on stderr.
 */
static void
eventlog_torn_past_scan(const char *path, int fd)
{
	char	*buf, *e;

	if ((buf = malloc(SG_LOG_TAIL_SCAN)) == NULL)
		return;
	if (pread(fd, buf, SG_LOG_TAIL_SCAN, 0) == SG_LOG_TAIL_SCAN &&
	    (e = memrchr(buf, '\n', SG_LOG_TAIL_SCAN)) != NULL &&
	    eventlog_torn_before(buf, (size_t)(e + 1 - buf)) != NULL)
		log_warnx("\"%s\" begins with more than %d bytes of torn "
		    "lines: put in the log, not counted", path,
		    SG_LOG_TAIL_SCAN);
	free(buf);
}

/*
 * The last line of buf (len bytes, no final newline) if every line
 * before it is a torn line, else NULL.
 */
static char *
eventlog_torn_before(char *buf, size_t len)
{
	struct logverify_line	 l;
	char			*p, *e;

	for (p = buf; (e = memchr(p, '\n', (size_t)(buf + len - p))) != NULL;
	    p = e + 1)
		if (logverify_line(p, (size_t)(e - p), &l) != LOGVERIFY_TORN)
			return NULL;
	return p;
}

/*
 * 1 if line (to end) is a rotate checkpoint: *n and hex what it declares,
 * then the torn lines in buf before it chained after them. 0 else.
 */
static int
eventlog_rotate_declares(const char *path, const char *buf, const char *line,
    const char *end, unsigned long long *n, char *hex)
{
	const char	*ev, *reason, *h, *p, *e;
	json_t		*obj, *tn;
	int		 rc;

	if ((obj = json_loadb(line, (size_t)(end - line), 0, NULL)) == NULL)
		return 0;
	ev = json_string_value(json_object_get(obj, "event"));
	reason = json_string_value(json_object_get(obj, "reason"));
	rc = ev != NULL && reason != NULL &&
	    strcmp(ev, "log.checkpoint") == 0 && strcmp(reason, "rotate") == 0;
	if (rc) {	/* its declaration, not what NAME.1 holds now */
		tn = json_object_get(obj, "torn");
		h = json_string_value(json_object_get(obj, "torn_hash"));
		*n = json_is_integer(tn) && json_integer_value(tn) > 0 &&
		    h != NULL ? (unsigned long long)json_integer_value(tn) : 0;
		util_strlcpy(hex, *n > 0 ? h : "", EVENTLOG_HEX);
		if (eventlog_cut_rotates(buf, (size_t)(line - buf), line,
		    (size_t)(end - line)))
			for (p = buf; p < line; p = e + 1, (*n)++) {
				e = memchr(p, '\n', (size_t)(line - p));
				if (logverify_torn_hash(hex, p,
				    (size_t)(e - p)) == -1)
					hex[0] = '\0';	/* fails verify: seen */
			}
		else	/* atk20r30 F3 */
			log_warnx("\"%s\": torn line(s) before its rotate line "
			    "that are not it cut short: lines put in the log, "
			    "not counted", path);
	}
	json_decref(obj);
	return rc;
}

/*
 * 1 if every torn line in torn (tlen bytes, lines ended by newlines but
 * maybe the last) is the rotate line line (llen bytes, no newline) as a
 * start killed inside it left it (logverify_cut_rotate()): the only torn
 * lines a writer leaves before a rotate line in its file. Anything else
 * was put in the log (atk20r28 F1): not counted, so verify --key fails.
 */
static int
eventlog_cut_rotates(const char *torn, size_t tlen, const char *line,
    size_t llen)
{
	const char	*p, *e, *end = torn + tlen;

	for (p = torn; p < end; p = e + 1) {
		if ((e = memchr(p, '\n', (size_t)(end - p))) == NULL)
			e = end;
		if (!logverify_cut_rotate(p, (size_t)(e - p), line, llen))
			return 0;
	}
	return 1;
}

/*
 * The last event of name.1, for a current file with none, and the torn
 * lines after it (*n, hex: eventlog_torn_scan(); a rotation while the
 * writer was down keeps them its own, atk20r20 F2), chained onto what
 * its rotate line declares when that is its only line
 * (eventlog_only_rotate()). 1, 0 or -1.
 * A name.1 that is a symlink, FIFO or device is not read: the chain then
 * starts again, which the signer's anchor shows (checkpoint.h).
 */
static int
eventlog_rotated_tail(struct eventlog *log, struct logverify_line *out,
    unsigned long long *n, char *hex)
{
	char			 path[4096];
	struct stat		 st;
	off_t			 end;
	unsigned long long	 was;
	int			 fd, r, all, foreign;

	if ((size_t)snprintf(path, sizeof(path), "%s.1", log->path) >=
	    sizeof(path))
		return 0;
	if ((fd = eventlog_open_file(path, O_RDONLY, &st)) == -1) {
		if (errno == ELOOP || errno == EINVAL)
			log_warnx("not reading \"%s\": not a regular file", path);
		return errno == ENOENT || errno == ELOOP || errno == EINVAL ?
		    0 : -1;
	}
	r = eventlog_scan(fd, st.st_size, out, &all, &foreign, &end);
	log->foreign |= (foreign & EVENTLOG_END_FOREIGN) != 0;
	if (r == 1)	/* its rotate line: also past the first window */
		(void)eventlog_only_rotate(path, fd, end, n, hex);
	was = *n;
	if (r != -1 && (r == 1 || all) &&
	    eventlog_torn_scan(fd, end, st.st_size, n, hex) == -1)
		r = -1;
	/*
	 * Torn lines there, which the next file's rotate line declares: on
	 * disk before that line is (atk20r24 F1), like a rotation's own.
	 */
	if (r != -1 && *n > was) {
		if (fdatasync(fd) == -1 && errno != EINVAL)
			r = -1;
		log->dir_unsynced = 1;
	}
	close(fd);
	return r;
}

/*
 * The torn lines found after the log's last event (n of them, their
 * digest hex): the writer's to account for in the log.outage or
 * log.resume it writes next, unless it counts cut lines of its own.
 */
static void
eventlog_torn_found(struct eventlog *log, unsigned long long n,
    const char *hex)
{
	if (n > 0)
		log->torn = 1;
	if (n == 0 || log->torn_lines > 0)
		return;
	log->torn_lines = n;
	util_strlcpy(log->torn_hash, hex, sizeof(log->torn_hash));
}

/*
 * The current file holds torn lines and no log line while name.1 holds
 * the chain: a start killed inside the rotate line it began the file
 * with (atk20r24 F2). The file still starts its part of the chain with a
 * signed rotate line, after those torn lines, declaring only the n torn
 * lines (digest hex) at the end of name.1, the file before it; the
 * log.outage or log.resume after it counts them and this file's own.
 */
static void
eventlog_torn_head(struct eventlog *log, unsigned long long n,
    const char *hex)
{
	log->torn_head = 1;
	log->head_declares = n;
	util_strlcpy(log->head_hash, n > 0 ? hex : "", sizeof(log->head_hash));
}

/*
 * Read seq and prev from the end of the open file (or of name.1 when the
 * file has no event yet; else keep what is in memory; name.1's torn lines
 * too when its only event is the rotate line, F3), ending a torn
 * last line with a newline first, and the torn lines after that end
 * (every one, with its bytes: atk20r20 F2, F3). Returns 0, or -1 with
 * errno.
 */
static int
eventlog_load_tail(struct eventlog *log)
{
	struct logverify_line	l;
	struct stat		st;
	unsigned long long	tn = 0, dn;
	char			th[EVENTLOG_HEX] = "", dh[EVENTLOG_HEX];
	off_t			end;
	int			r, all, torn, found;

	if (fstat(log->fd, &st) == -1)
		return -1;
	log->dev = st.st_dev;
	log->ino = st.st_ino;
	log->size = st.st_size;
	log->need_nl = 0;
	if ((torn = eventlog_ends_torn(log->fd, log->size)) == -1)
		return -1;
	if (torn) {
		if (write(log->fd, "\n", 1) != 1)
			return -1;
		log->size++;
	}
	r = eventlog_scan(log->fd, log->size, &l, &all, &found, &end);
	log->foreign = (found & EVENTLOG_END_FOREIGN) != 0;
	/*
	 * A torn line after the end, with its newline or not (atk20r17 F6);
	 * a whole line that only lacked its newline is not one (atk20r19 F1).
	 * name.1's come first: verify reads it first.
	 */
	log->torn = (found & EVENTLOG_END_TORN) != 0;
	if (r == 0 && all && (r = eventlog_rotated_tail(log, &l, &tn,
	    th)) == -1)
		return -1;
	/*
	 * This file's own rotate line, also when the torn lines before it
	 * pass the first window the scan read (atk20r30 F2).
	 */
	if (r == 1 && end > 0)
		(void)eventlog_only_rotate(log->path, log->fd, end, &tn, th);
	dn = tn;
	util_strlcpy(dh, th, sizeof(dh));
	if (eventlog_torn_scan(log->fd, end, log->size, &tn, th) == -1)
		return -1;
	eventlog_torn_found(log, tn, th);
	if (r == 1 && all && end == 0 && tn > dn)
		eventlog_torn_head(log, dn, dh);
	if (r == 0 && !all && log->opts.no_end_ok) {
		log->no_end = log->foreign = 1;
		log->cache_valid = 1;
		return 0;
	}
	if (r == 0 && !all) {
		errno = EILSEQ;
		return -1;
	}
	if (r == 1) {
		log->seq = l.seq;
		memcpy(log->prev, l.hash, sizeof(log->prev));
	}
	log->cache_valid = 1;
	return 0;
}

/*
 * The path still names the open file. 0, or -1 with errno ESTALE (another
 * file put at the name) or stat's.
 */
static int
eventlog_same_file(struct eventlog *log)
{
	struct stat	st, cur;

	if (fstat(log->fd, &st) == -1 || stat(log->path, &cur) == -1)
		return -1;
	if (cur.st_dev == st.st_dev && cur.st_ino == st.st_ino)
		return 0;
	errno = ESTALE;
	return -1;
}

/*
 * Shared mode: lock the file the path names now (another process may
 * have rotated it) and re-read seq and prev if it changed since we last
 * wrote. Returns 0 locked, or -1 with errno (unlocked).
 */
static int
eventlog_lock(struct eventlog *log)
{
	struct stat	st, cur;
	int		i;

	/*
	 * Held (eventlog_hold()): no one else wrote, nothing to re-read; but
	 * only to the file the name gave when it was taken.
	 */
	if (log->held && log->fd != -1)
		return eventlog_same_file(log);
	for (i = 0; i < EVENTLOG_LOCK_TRIES; i++) {
		if (log->fd == -1 && eventlog_open_fd(log) == -1)
			return -1;
		while (!log->opts.excluded && flock(log->fd, LOCK_EX) == -1) {
			if (errno != EINTR)
				return -1;
		}
		if (fstat(log->fd, &st) == -1) {
			eventlog_unlock(log);
			return -1;
		}
		if (stat(log->path, &cur) == 0 && cur.st_dev == st.st_dev &&
		    cur.st_ino == st.st_ino)
			break;
		/* Renamed away: closing drops the lock; open the new one. */
		close(log->fd);
		log->fd = -1;
		log->cache_valid = 0;
	}
	if (i == EVENTLOG_LOCK_TRIES) {
		errno = EAGAIN;
		return -1;
	}
	if (log->cache_valid && st.st_dev == log->dev &&
	    st.st_ino == log->ino && st.st_size == log->size)
		return 0;
	if (eventlog_load_tail(log) == -1) {
		eventlog_unlock(log);
		return -1;
	}
	return 0;
}

static void
eventlog_unlock(struct eventlog *log)
{
	int	saved = errno;

	if (log->fd != -1 && !log->held && !log->opts.excluded)
		(void)flock(log->fd, LOCK_UN);
	errno = saved;
}

/*
 * Make the line for the next event into *line (caller frees): optional
 * newline ending a torn line, then
 *   {"ts":"..","seq":N,<fields>,"prev":".."}      (what the hash covers)
 * with its final "}" replaced by ,"hash":".."} and a newline. The hash hex
 * goes to hash[65]. Returns 0, or -1 with errno.
 */
static int
eventlog_build(struct eventlog *log, json_t *fields, char **line,
    size_t *len, char *hash)
{
	struct timespec	 now;
	char		 ts[UTIL_TS_LEN], head[96], *dump, *buf, *p;
	unsigned char	 md[32];
	size_t		 hlen, flen, clen, nl = log->need_nl ? 1 : 0;
	json_t		*own = NULL;

	clock_gettime(CLOCK_REALTIME, &now);
	util_rfc3339(&now, ts);
	/* A hook line's fields depend on the seq, ts and prev it gets. */
	if (fields == NULL && (fields = own = log->hook.fields(log->hook.arg,
	    log->seq + 1, ts, log->prev)) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	if (json_object_get(fields, "ts") || json_object_get(fields, "seq") ||
	    json_object_get(fields, "prev") ||
	    json_object_get(fields, "hash")) {
		json_decref(own);
		errno = EINVAL;
		return -1;
	}
	if (log->seq >= SG_LOG_SEQ_MAX) {
		json_decref(own);
		errno = EOVERFLOW;
		return -1;
	}
	hlen = (size_t)snprintf(head, sizeof(head), "{\"ts\":\"%s\","
	    "\"seq\":%lld", ts, log->seq + 1);
	dump = json_dumps(fields, EVENTLOG_DUMP_FLAGS);
	json_decref(own);
	if (dump == NULL) {
		errno = ENOMEM;
		return -1;
	}
	flen = strlen(dump) - 2;	/* the members, without the braces */
	clen = hlen + (flen ? 1 + flen : 0) + EVENTLOG_PREV_LEN +
	    LOGVERIFY_HASH_HEX + 2;
	*len = nl + clen - 1 + LOGVERIFY_SUFFIX_LEN + 1;
	if (*len - nl - 1 > SG_LOG_LINE_MAX) {
		free(dump);
		errno = EINVAL;
		return -1;
	}
	if ((buf = malloc(*len + 1)) == NULL) {
		free(dump);
		errno = ENOMEM;
		return -1;
	}
	p = buf + nl;
	buf[0] = '\n';
	snprintf(p, clen + 1, "%s%s%.*s,\"prev\":\"%s\"}", head,
	    flen ? "," : "", (int)flen, dump + 1, log->prev);
	free(dump);
	/* The hash covers the line as it is without its hash member. */
	if (EVP_Digest(p, clen, md, NULL, EVP_sha256(), NULL) != 1) {
		free(buf);
		errno = ENOMEM;
		return -1;
	}
	util_hex(md, sizeof(md), hash);
	snprintf(p + clen - 1, LOGVERIFY_SUFFIX_LEN + 2, ",\"hash\":\"%s\"}\n",
	    hash);
	*line = buf;
	return 0;
}

/*
 * Note o as the first line of name.1 (front) or of the oldest file yet
 * (not front). 0, or -1 with errno.
 */
static int
eventlog_own_push(struct eventlog *log, const struct eventlog_own *o,
    int front)
{
	struct eventlog_own	*n;
	unsigned		 cap;

	if (log->n_own == log->own_cap) {
		cap = log->own_cap == 0 ? 16 : log->own_cap * 2;
		if (cap > SG_LOG_ROTATED_MAX)
			cap = SG_LOG_ROTATED_MAX;
		if (cap == log->own_cap ||
		    (n = reallocarray(log->own, cap, sizeof(*n))) == NULL) {
			errno = ENOSPC;
			return -1;
		}
		log->own = n;
		log->own_cap = cap;
	}
	if (front) {
		memmove(log->own + 1, log->own, log->n_own * sizeof(*o));
		log->own[0] = *o;
	} else
		log->own[log->n_own] = *o;
	log->n_own++;
	return 0;
}

/*
 * The seq of the first log line of the file at path, or 0; its seq and
 * hash into *o when o is not NULL.
 */
static long long
eventlog_first_of(const char *path, struct eventlog_own *o)
{
	struct logverify_line	 l;
	struct stat		 st;
	char			*buf, *nl = NULL;
	ssize_t			 n = 0;
	long long		 seq = 0;
	int			 fd;

	if (o != NULL)
		memset(o, 0, sizeof(*o));
	if ((fd = eventlog_open_file(path, O_RDONLY, &st)) == -1)
		return 0;
	/* A line is short: its first KiB first, all it may hold if not. */
	if ((buf = malloc(SG_LOG_LINE_MAX + 1)) != NULL &&
	    (n = pread(fd, buf, EVENTLOG_FIRST_SCAN, 0)) > 0 &&
	    (nl = memchr(buf, '\n', (size_t)n)) == NULL &&
	    n == EVENTLOG_FIRST_SCAN &&
	    (n = pread(fd, buf, SG_LOG_LINE_MAX + 1, 0)) > 0)
		nl = memchr(buf, '\n', (size_t)n);
	if (nl != NULL &&
	    logverify_line(buf, (size_t)(nl - buf), &l) == LOGVERIFY_OK) {
		seq = l.seq;
		if (o != NULL) {
			o->seq = l.seq;
			memcpy(o->hash, l.hash, sizeof(o->hash));
		}
	}
	free(buf);
	close(fd);
	return seq;
}

/* 1 if the file at path starts with the line o names, else 0. */
static int
eventlog_is_own(const char *path, const struct eventlog_own *o)
{
	struct eventlog_own	f;

	return eventlog_first_of(path, &f) > 0 && f.seq == o->seq &&
	    strcmp(f.hash, o->hash) == 0;
}

/* 1 if o is a first line the writer vouched for: was or one of own. */
static int
eventlog_noted(const struct eventlog_own *was, const struct eventlog_own *own,
    unsigned n, const struct eventlog_own *o)
{
	const struct eventlog_own	*e;
	unsigned			 i;

	for (i = 0; i <= n; i++) {
		e = i < n ? &own[i] : was;
		if (e->vouched && e->seq == o->seq &&
		    strcmp(e->hash, o->hash) == 0)
			return 1;
	}
	return 0;
}

/* 1 if o is the first line of a file that left the name at a swap. */
static int
eventlog_left_noted(const struct eventlog *log, const struct eventlog_own *o)
{
	unsigned	i;

	for (i = 0; i < log->n_left_notes; i++)
		if (log->left_notes[i].seq == o->seq &&
		    strcmp(log->left_notes[i].hash, o->hash) == 0)
			return 1;
	return 0;
}

/*
 * A rotation cut short (a crash between name.i -> name.(i+1) and
 * name -> name.1) leaves a gap at name.i: name.(i+1) ... move down one
 * name, which undoes it, when name.(i+1) starts with a log line below
 * bound. Said on stderr. 1 done, 0 not a gap.
 */
static int
eventlog_close_gap(struct eventlog *log, unsigned i, long long bound)
{
	struct eventlog_own	o;
	struct stat		st;
	char			from[4096], to[4096];
	unsigned		j;

	snprintf(to, sizeof(to), "%s.%u", log->path, i);
	snprintf(from, sizeof(from), "%s.%u", log->path, i + 1);
	if (lstat(to, &st) == 0 || errno != ENOENT ||
	    eventlog_first_of(from, &o) == 0 || o.seq >= bound)
		return 0;
	for (j = i + 1; j <= SG_LOG_ROTATED_MAX; j++) {
		snprintf(from, sizeof(from), "%s.%u", log->path, j);
		snprintf(to, sizeof(to), "%s.%u", log->path, j - 1);
		if (renameat2(AT_FDCWD, from, AT_FDCWD, to,
		    RENAME_NOREPLACE) == -1)
			break;
	}
	log_warnx("\"%s.%u\" was missing (a rotation cut short): moved "
	    "\"%s.%u\" ... \"%s.%u\" down one name", log->path, i,
	    log->path, i + 1, log->path, j - 1);
	return 1;
}

/*
 * 1 if the folder holds a rotated name past name.n (name.j, j > n, in
 * decimal digits only: not name.j.gz nor a name moved aside), which a
 * count that stopped at name.(n+1) left out; 0 if not, or unreadable.
 */
static int
eventlog_names_past(const struct eventlog *log, unsigned n)
{
	struct dirent	*de;
	DIR		*d;
	size_t		 len = strlen(log->name);
	const char	*v;
	long long	 j;
	int		 found = 0;

	if ((d = opendir(log->dir)) == NULL)
		return 0;
	while (!found && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, log->name, len) != 0 ||
		    de->d_name[len] != '.')
			continue;
		v = de->d_name + len + 1;
		if (*v < '1' || *v > '9' || strspn(v, "0123456789") !=
		    strlen(v) || strlen(v) > 9)
			continue;
		j = strtoll(v, NULL, 10);
		found = j > (long long)n;
	}
	closedir(d);
	return found;
}

/*
 * What the writer keeps, from the files there when it opens (or
 * reopens) the log: the current file's first line, and name.1 ... name.N
 * as its rotated files while each one starts with a log line whose seq
 * is below that of the file after it. A file that does not (planted,
 * empty, a copy of a later line) ends the list: it is never moved,
 * deleted or read for first; at open one gap (a rotation cut short) is
 * closed first. first: the oldest one's first seq. was: on a reopen the
 * note of the file the writer had; then only the first lines it noted
 * before (was, own) are vouched for, at open all are, until the anchor
 * says (eventlog_vouch()). On a reopen first moves only to the oldest
 * note vouched for (a file the writer made), and stays where it was
 * when there is none, or when rotated names exist past where the count
 * stopped (a file missing or planted among them): a planted name.1, or
 * one of its files removed before logrotate runs, never sets it.
 */
static void
eventlog_find_first(struct eventlog *log, const struct eventlog_own *was)
{
	struct eventlog_own	o, *old = log->own;
	unsigned		n_old = log->n_own;
	char			p[4096];
	long long		bound, first = 0, before = log->first;
	int			gap = was == NULL;

	bound = log->cur.seq > 0 ? log->cur.seq : LLONG_MAX;
	log->own = NULL;
	log->n_own = log->own_cap = 0;
	while (log->n_own < SG_LOG_ROTATED_MAX) {
		snprintf(p, sizeof(p), "%s.%u", log->path, log->n_own + 1);
		if (eventlog_first_of(p, &o) == 0 && gap &&
		    eventlog_close_gap(log, log->n_own + 1, bound)) {
			gap = 0;
			(void)eventlog_first_of(p, &o);
		}
		if (o.seq == 0 || o.seq >= bound)
			break;
		o.vouched = was == NULL || eventlog_noted(was, old, n_old, &o) ||
		    eventlog_left_noted(log, &o);
		if (eventlog_own_push(log, &o, 0) == -1)
			break;
		if (o.vouched)
			first = o.seq;
		bound = o.seq;
	}
	free(old);
	log->n_left_notes = 0;	/* those found are in own now */
	if (was == NULL)
		log->first = log->n_own > 0 ? log->own[log->n_own - 1].seq :
		    log->cur.seq;
	else if (first > 0 && !eventlog_names_past(log, log->n_own + 1))
		log->first = first;
	else if (log->first == 0 && log->cur.vouched)
		log->first = log->cur.seq;
	/* A checkpoint soon, which the anchor then follows (atk36c F1). */
	if (was != NULL && log->first != before)
		log->hook_due = log->hook.fields != NULL;
}

/*
 * Delete name.i, the oldest rotated file the writer keeps and past keep,
 * if it still starts with the line the writer noted for it: then first
 * moves on to the first seq noted for name.(i-1), the file it keeps
 * next. A file there that does not (put in its place by someone else) is
 * left and first stays: the events the writer kept there are missing,
 * which its anchor then shows. 0, or -1 with errno.
 */
static int
eventlog_drop(struct eventlog *log, unsigned i)
{
	char	p[4096];

	snprintf(p, sizeof(p), "%s.%u", log->path, i);
	if (eventlog_is_own(p, &log->own[i - 1])) {
		if (unlink(p) == -1 && errno != ENOENT)
			return -1;
		if (log->own[i - 2].vouched && log->own[i - 2].seq > log->first)
			log->first = log->own[i - 2].seq;
	}
	log->n_own = i - 1;
	return 0;
}

/*
 * Whether the rotation is in the way of a file that is not the log's:
 * a name.(N+1), where the oldest rotated file the writer keeps would
 * move (planted, or one it left), or as many rotated files as it may
 * keep. Then the file grows on instead, said once on stderr and looked
 * at again at most once a second, so what a writer of the folder plants
 * there can neither be taken for the log, nor make the writer delete any
 * of it, nor cost it more than one lstat(2) a second. *top: N.
 */
static int
eventlog_rotation_blocked(struct eventlog *log, unsigned *top)
{
	char		p[4096];
	struct stat	st;
	uint64_t	now = util_now_us();

	if (log->blocked && now - log->blocked_us < EVENTLOG_SYNC_US)
		return 1;
	*top = log->n_own;
	snprintf(p, sizeof(p), "%s.%u", log->path, *top + 1);
	if (*top < SG_LOG_ROTATED_MAX && lstat(p, &st) == -1) {
		log->blocked = 0;
		return 0;
	}
	if (!log->blocked)
		log_warnx("not rotating \"%s\": \"%s\" is not one of its "
		    "rotated files; the log grows past its size until that "
		    "file is moved away", log->path, p);
	log->blocked = 1;
	log->blocked_us = now;
	return 1;
}

/*
 * name.top -> name.(top+1) ... name -> name.1 (top: the rotated files the
 * writer keeps; name.(top+1) is free), then the files past keep are
 * deleted, oldest first (eventlog_drop()), but none younger than
 * keep_min_age: that many seconds of history stay whatever the volume
 * of events.
 */
static int
eventlog_rotate_files(struct eventlog *log, unsigned top)
{
	char		from[4096], to[4096];
	struct stat	st;
	unsigned	i;
	time_t		now = time(NULL);

	for (i = top; i >= 1; i--) {
		snprintf(from, sizeof(from), "%s.%u", log->path, i);
		snprintf(to, sizeof(to), "%s.%u", log->path, i + 1);
		if (rename(from, to) == -1 && errno != ENOENT)
			return -1;
	}
	if (eventlog_own_push(log, &log->cur, 1) == -1)
		return -1;
	snprintf(to, sizeof(to), "%s.1", log->path);
	if (rename(log->path, to) == -1) {
		memmove(log->own, log->own + 1, --log->n_own *
		    sizeof(*log->own));
		return -1;
	}
	memset(&log->cur, 0, sizeof(log->cur));
	log->cur.vouched = 1;
	for (i = log->n_own; i > log->opts.keep; i--) {
		snprintf(from, sizeof(from), "%s.%u", log->path, i);
		if (log->opts.keep_min_age > 0 && stat(from, &st) == 0 &&
		    (long long)(now - st.st_mtime) < log->opts.keep_min_age)
			break;
		if (eventlog_drop(log, i) == -1)
			return -1;
	}
	return 0;
}

/*
 * Size rotation: sync the full file, rename it away and continue in a
 * new one (or write on in it while the rotation is blocked). Shared mode
 * re-takes the lock on the new file (and re-reads the chain, which
 * another process may have continued meanwhile).
 */
static int
eventlog_rotate(struct eventlog *log)
{
	unsigned	top;
	int		held;

	/* Not its file at the name (swapped since the last tick): no
	   rotation of a file it did not make, a new one instead. */
	if (!log->opts.shared && !eventlog_still_own(log, 0))
		return eventlog_check_name(log);
	if (eventlog_rotation_blocked(log, &top))
		return 0;
	/*
	 * Always: the file may end with torn lines a killed writer left (or
	 * this start's newline after them), bytes this process never marked
	 * dirty; the new file's rotate line declares them, so they are on
	 * disk first (atk20r24 F1). EINVAL: a file that cannot sync.
	 */
	if (fdatasync(log->fd) == -1 && errno != EINVAL)
		return -1;
	log->dirty = 0;
	if (eventlog_rotate_files(log, top) == -1)
		return -1;
	log->dir_unsynced = 1;	/* eventlog_first_line() */
	if (log->opts.shared) {
		close(log->fd);		/* drops the lock */
		log->fd = -1;
		log->need_nl = 0;
		return eventlog_lock(log);
	}
	held = log->fd;
	if (eventlog_create(log) == -1) {
		/* Nothing lost: on in the file rotated; the tick tries again. */
		eventlog_say(log, EVENTLOG_SAY_FAILED, "cannot put a new file "
		    "at \"%s\" after its rotation (%s): writing on in the "
		    "file rotated",
		    log->path, strerror(errno));
		return 0;
	}
	close(held);
	log->need_nl = 0;
	return 0;
}

/*
 * Take back the part of a line a short write of n bytes left at the end
 * of the file (at its start: size - n), keeping nl, the newline that
 * ended a torn line before it: the line is then only lost, nothing of it
 * in the file (atk20r19 F1). Only when the file is as this writer left
 * it (no one appended after). 0, or -1 (it stays: a torn line).
 */
static int
eventlog_take_back(struct eventlog *log, size_t n, size_t nl)
{
	struct stat	st;

	if (fstat(log->fd, &st) == -1 || st.st_size != log->size ||
	    ftruncate(log->fd, log->size - (off_t)(n - nl)) == -1)
		return -1;
	log->size -= (off_t)(n - nl);
	log->written -= (unsigned long long)(n - nl);
	return 0;
}

/*
 * One write(2) of the whole line. What a short write leaves decides
 * (atk20r19 F1): part of the line is taken back (nothing of it stays,
 * the line is lost); where it cannot be (a file that refuses truncation)
 * a line whole but for its final newline is written (the next write's
 * leading newline ends it), a shorter part is a torn line. 0 written, or
 * -1 with errno (the line lost).
 */
static int
eventlog_write(struct eventlog *log, const char *line, size_t len)
{
	size_t	nl = log->need_nl ? 1 : 0;
	ssize_t	n;

	n = write(log->fd, line, len);
	if (n > 0) {
		log->size += n;
		log->written += (unsigned long long)n;
		log->dirty = 1;
	}
	if (n == (ssize_t)len) {
		log->need_nl = 0;
		return 0;
	}
	log->cache_valid = 0;
	if (n < 0)
		return -1;
	if ((size_t)n >= nl)
		log->need_nl = 0;	/* the torn line before it ended */
	if ((size_t)n > nl && eventlog_take_back(log, (size_t)n, nl) == -1) {
		log->need_nl = 1;
		if ((size_t)n == len - 1)
			return 0;	/* whole but its newline */
		/* Its own bytes only: anything before them fails verify. */
		if (logverify_torn_hash(log->torn_hash, line + nl,
		    (size_t)n - nl) == -1)
			log->torn_hash[0] = '\0';
		log->torn_lines++;
		log->torn_left++;
	}
	errno = ENOSPC;
	return -1;
}

static int
eventlog_sync(struct eventlog *log)
{
	if (fdatasync(log->fd) == -1 && errno != EINVAL)
		return eventlog_fail(log, "cannot sync");
	log->dirty = 0;
	log->last_sync_us = util_now_us();
	return 0;
}

/*
 * fsync(2) the log's folder: the renames of a rotation and the new file
 * are on disk, so a power loss cannot keep the new file's rotate line
 * and lose the older file it declares torn lines of, or its name.
 * EINVAL: a folder that cannot sync. 0, or -1 with errno.
 */
static int
eventlog_sync_dir(struct eventlog *log)
{
	int	fd, rc, saved;

	fd = open(log->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd == -1)
		return -1;
	rc = fsync(fd) == -1 && errno != EINVAL ? -1 : 0;
	saved = errno;
	close(fd);
	errno = saved;
	if (rc == 0)
		log->dir_unsynced = 0;
	return rc;
}

struct eventlog *
eventlog_open(const char *dir, const char *filename,
    const struct eventlog_opts *opts, char **cause)
{
	struct eventlog	*log;
	int		 rc;

	if ((log = calloc(1, sizeof(*log))) == NULL) {
		util_xasprintf(cause, "out of memory");
		return NULL;
	}
	log->fd = -1;
	if ((log->dir = strdup(dir)) == NULL ||
	    (log->name = strdup(filename)) == NULL ||
	    asprintf(&log->path, "%s/%s", dir, filename) == -1) {
		log->path = NULL;
		util_xasprintf(cause, "out of memory");
		goto fail;
	}
	if (opts != NULL)
		log->opts = *opts;
	if (log->opts.keep == 0)
		log->opts.keep = 1;
	memcpy(log->prev, eventlog_zeros, sizeof(log->prev));
	log->healthy = 1;
	log->last_sync_us = util_now_us();
	if (mkdir(dir, 0750) == -1 && errno != EEXIST) {
		util_xasprintf(cause, "cannot create \"%s\": %s", dir,
		    strerror(errno));
		goto fail;
	}
	if (log->opts.shared) {
		if ((rc = eventlog_lock(log)) == 0)
			eventlog_unlock(log);
	} else {
		eventlog_clean_new(log);
		if ((rc = eventlog_open_fd(log)) == 0)
			rc = eventlog_load_tail(log);
	}
	if (rc == 0)
		eventlog_find_first(log, NULL);
	if (rc == -1) {
		if (errno == EILSEQ)
			util_xasprintf(cause, "no event found in the last %d "
			    "bytes of \"%s\"", SG_LOG_TAIL_SCAN, log->path);
		else if (log->not_reg)
			util_xasprintf(cause, "\"%s\" is not a regular file (a "
			    "symlink, FIFO or device): not writing to it",
			    log->path);
		else
			util_xasprintf(cause, "cannot open \"%s\": %s",
			    log->path, strerror(errno));
		goto fail;
	}
	return log;
fail:
	eventlog_close(log);
	return NULL;
}

/*
 * The first line of a file that continues a chain (after a rotation, a
 * reopen, or a start with an empty file while name.1 holds the chain) is
 * a hook line that the hook's rotated() prepares: a signed rotation
 * checkpoint (checkpoint.h), so that every file starts with one.
 */
static int
eventlog_first_line(struct eventlog *log)
{
	int	rc;

	if (log->hook.rotated == NULL || log->in_first ||
	    (log->size > 0 && !log->torn_head) || log->seq == 0)
		return 0;
	/* The renames and the new file, before the line that says so. */
	if (log->dir_unsynced && eventlog_sync_dir(log) == -1)
		return eventlog_fail(log, "cannot sync the folder of");
	log->hook.rotated(log->hook.arg);
	log->in_first = 1;
	rc = eventlog_put(log, NULL);
	log->in_first = 0;
	if (rc == 0)
		log->torn_head = 0;
	return rc;
}

/*
 * The rotate line (line, len bytes) a start writes after the torn lines
 * its file begins with (eventlog_torn_head()): those are its to count
 * only if each is this line as a start killed inside it left it; else
 * they were put there (atk20r28 F1) and only what name.1 declares is
 * counted, so verify --key fails naming them. Said on stderr.
 */
static void
eventlog_head_planted(struct eventlog *log, const char *line, size_t len)
{
	char	*buf;
	int	 ok;

	if (log->size <= 0 || log->size > SG_LOG_TAIL_SCAN ||
	    (buf = malloc((size_t)log->size)) == NULL)
		return;
	ok = pread(log->fd, buf, (size_t)log->size, 0) != log->size ||
	    eventlog_cut_rotates(buf, (size_t)log->size, line,
	    len > 0 && line[len - 1] == '\n' ? len - 1 : len);
	free(buf);
	if (ok)
		return;
	log_warnx("\"%s\" begins with torn line(s) that are not its rotate "
	    "line cut short: lines put in the log, not counted", log->path);
	log->torn_lines = log->head_declares;
	util_strlcpy(log->torn_hash, log->head_hash, sizeof(log->torn_hash));
	log->head_recount = 1;
}

/*
 * The log.outage or log.resume (fields) that a start's rotate line came
 * before, formatted with the torn lines counted then: the count that
 * eventlog_head_planted() left instead.
 */
static void
eventlog_recount(struct eventlog *log, json_t *fields)
{
	if (json_object_get(fields, "torn") == NULL ||
	    json_object_get(fields, "torn_hash") == NULL)
		return;
	log->head_recount = 0;
	/* Out of memory: the older count stays, which verify --key fails. */
	(void)json_object_set_new(fields, "torn",
	    json_integer((json_int_t)log->torn_lines));
	(void)json_object_set_new(fields, "torn_hash",
	    json_string(log->torn_lines > 0 ? log->torn_hash : ""));
}

/*
 * Build and write the line of fields (NULL: a hook line) and move the
 * chain on, rotating first when the line would take the file past its
 * size. The caller holds the lock. 0, or -1 (log marked unavailable).
 */
static int
eventlog_put(struct eventlog *log, json_t *fields)
{
	char	*line = NULL, hash[EVENTLOG_HEX];
	size_t	 len;
	off_t	 at;
	int	 rc = -1;

	if (log->hook.put != NULL && !log->in_first &&
	    log->hook.put(log->hook.arg) == -1)
		return eventlog_fail(log, "cannot reopen the anchor for");
	if (eventlog_first_line(log) == -1)
		return -1;
	if (log->head_recount && fields != NULL)
		eventlog_recount(log, fields);
	if (eventlog_build(log, fields, &line, &len, hash) == -1)
		return eventlog_fail(log, "cannot format an event for");
	/*
	 * A file with a torn head takes its rotate line whatever its size:
	 * rotated away first, its torn lines would end a file whose rotate
	 * line no longer follows them in the same file (eventlog_torn_head()).
	 */
	if (log->opts.max_size > 0 && log->size > 0 && !log->torn_head &&
	    (unsigned long long)log->size + len > log->opts.max_size) {
		free(line);
		line = NULL;
		if (eventlog_rotate(log) == -1) {
			eventlog_fail(log, "cannot rotate");
			goto out;
		}
		if (eventlog_first_line(log) == -1 ||
		    eventlog_put_left(log) == -1)
			goto out;
		if (eventlog_build(log, fields, &line, &len, hash) == -1) {
			eventlog_fail(log, "cannot format an event for");
			goto out;
		}
	}
	if (log->in_first && log->torn_head)
		eventlog_head_planted(log, line, len);
	at = log->size;
	if (eventlog_write(log, line, len) == -1) {
		eventlog_fail(log, "cannot write");
		goto out;
	}
	log->seq++;
	if (log->first == 0)
		log->first = log->seq;	/* the first line of a new log */
	memcpy(log->prev, hash, sizeof(log->prev));
	if (log->cur.seq == 0) {	/* the first it writes in this file */
		log->cur.vouched = at == 0;	/* and the file's first line */
		log->cur.seq = log->seq;
		memcpy(log->cur.hash, hash, sizeof(log->cur.hash));
	}
	log->healthy = 1;
	log->error[0] = '\0';
	/* Torn lines before it are its to count; a new file's first aside. */
	if (!log->in_first) {
		log->torn_lines = 0;
		log->torn_hash[0] = '\0';
	}
	if (fields == NULL)
		log->told = log->told_events = 0; /* a checkpoint covers them */
	if (fields == NULL && log->hook.written != NULL)
		log->hook.written(log->hook.arg, log->seq, log->prev);
	rc = 0;
out:
	free(line);
	return rc;
}

/*
 * An event that could not be written: counted, with when the first of
 * them failed and why, for the log.outage line (eventlog_put_outage()).
 */
static void
eventlog_lost(struct eventlog *log, unsigned long long events)
{
	struct timespec	now;

	log->lost_events += events;
	if (log->lost++ > 0)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	util_rfc3339(&now, log->lost_since);
	snprintf(log->lost_why, sizeof(log->lost_why), "%s", log->error);
}

/*
 * Before the first line written after an outage: a log.outage line
 * saying how many events were not written (lost), how many torn lines
 * (cut, with no whole line after them) precede it (torn: verify --key
 * takes no more, atk20r19 F5) with their digest (torn_hash: verify
 * --key takes only those bytes, atk20r20 F4), how many attempts the
 * lost lines held (lost_events: a summary line counts many), from when (since: its own ts is when the
 * log came back) and why (cause). 0, or -1.
 */
static int
eventlog_put_outage(struct eventlog *log)
{
	json_t	*f;
	int	 rc;

	f = json_pack("{s:s, s:I, s:I, s:s, s:I, s:s, s:s}", "event",
	    "log.outage", "lost", (json_int_t)log->lost, "torn",
	    (json_int_t)log->torn_lines, "torn_hash", log->torn_hash,
	    "lost_events", (json_int_t)(log->lost_events > log->lost ?
	    log->lost_events : log->lost), "since", log->lost_since, "cause",
	    log->lost_why);
	if (f == NULL) {
		errno = ENOMEM;
		return eventlog_fail(log, "cannot format an event for");
	}
	rc = eventlog_put(log, f);
	json_decref(f);
	if (rc == -1)
		return -1;
	if (log->told == 0) {
		util_strlcpy(log->told_since, log->lost_since,
		    sizeof(log->told_since));
		util_strlcpy(log->told_why, log->lost_why,
		    sizeof(log->told_why));
	}
	log->told += log->lost;
	log->told_events += log->lost_events > log->lost ? log->lost_events :
	    log->lost;
	log->lost = log->lost_events = 0;
	return 0;
}

unsigned long long
eventlog_outage(const struct eventlog *log, const char **since,
    const char **cause)
{
	*since = log->told > 0 ? log->told_since : log->lost_since;
	*cause = log->told > 0 ? log->told_why : log->lost_why;
	return log->told + log->lost;
}

unsigned long long
eventlog_outage_events(const struct eventlog *log)
{
	unsigned long long	lost = log->lost_events > log->lost ?
	    log->lost_events : log->lost;

	return log->told_events + lost;
}

int
eventlog_outage_told(const struct eventlog *log)
{
	return log->told > 0 && log->lost == 0;
}

void
eventlog_add_outage(struct eventlog *log, unsigned long long lost,
    unsigned long long events, const char *since, const char *cause)
{
	if (lost == 0)
		return;
	log->lost_events += events > lost ? events : lost;
	if (log->lost == 0)
		snprintf(log->lost_why, sizeof(log->lost_why), "%s", cause);
	/* The earlier outage (a former run's) starts it. */
	util_strlcpy(log->lost_since, since, sizeof(log->lost_since));
	log->lost += lost;
}

/*
 * How many attempts an event stands for: a summary line's "count" or
 * "attempts", else 1 (a hook line: 1).
 */
static unsigned long long
eventlog_attempts(json_t *fields)
{
	json_t	*n = json_object_get(fields, "count");

	if (!json_is_integer(n))
		n = json_object_get(fields, "attempts");
	if (!json_is_integer(n) || json_integer_value(n) < 1)
		return 1;
	return (unsigned long long)json_integer_value(n);
}

int
eventlog_append(struct eventlog *log, json_t *fields)
{
	return eventlog_append_told(log, fields, 0);
}

int
eventlog_append_told(struct eventlog *log, json_t *fields,
    unsigned long long told)
{
	unsigned long long	left, n;
	int			rc, put = 0;

	if (fields == NULL ? !log->in_hook : !json_is_object(fields)) {
		errno = EINVAL;
		return eventlog_fail(log, "invalid event for");
	}
	left = log->torn_left;
	rc = eventlog_append_one(log, fields, &put);
	/*
	 * A hook line (a checkpoint) is counted lost too when it left part
	 * of itself (a torn line): every torn line is then followed by a
	 * log.outage counting it, which verify --key asks of a torn line
	 * (atk20r18 F1, F4).
	 */
	if (!put && errno != EINVAL && (fields != NULL ||
	    log->torn_left > left)) {
		n = eventlog_attempts(fields);
		eventlog_lost(log, n > told ? n - told : 0);
	}
	return rc;
}

/*
 * The hook's before() for an event: -1 refuses it, the log unavailable
 * (the failed write's error kept, else its own). Lines before() appends
 * are not asked again.
 */
static int
eventlog_before(struct eventlog *log)
{
	int	rc, saved;

	if (log->hook.before == NULL || log->in_before)
		return 0;
	log->in_before = 1;
	rc = log->hook.before(log->hook.arg);
	saved = errno;
	log->in_before = 0;
	if (rc == 0)
		return 0;
	errno = saved == 0 || saved == EINVAL ? EIO : saved;
	if (!log->healthy)
		return -1;
	return eventlog_fail(log, "the hook line due before the next event "
	    "was not written to");
}

/* eventlog_append() of an event or hook line; *put: it was written. */
static int
eventlog_append_one(struct eventlog *log, json_t *fields, int *put)
{
	int	rc = -1;

	/*
	 * What the hook wants before an event first (an open it writes and
	 * anchors takes the place of a hook line due), then a hook line due
	 * after the last event.
	 */
	if (fields != NULL && eventlog_before(log) == -1)
		return -1;
	if (log->hook_due && !log->in_hook)
		(void)eventlog_append_hook(log);
	if (log->opts.shared) {
		if (eventlog_lock(log) == -1)
			return eventlog_fail(log, errno == ESTALE ? "another "
			    "file was put, while held, at" : "cannot lock");
	} else if (log->fd == -1 && eventlog_open_fd(log) == -1)
		return eventlog_fail(log, "cannot open");
	if (log->left_due && eventlog_put_left(log) == -1)
		goto out;
	if (log->lost > 0 && eventlog_put_outage(log) == -1)
		goto out;
	if (eventlog_put(log, fields) == -1)
		goto out;
	*put = 1;
	rc = 0;
	if (util_now_us() - log->last_sync_us >= EVENTLOG_SYNC_US)
		rc = eventlog_sync(log);
	if (!log->in_hook && log->hook.due != NULL &&
	    log->hook.due(log->hook.arg))
		log->hook_due = 1;
out:
	if (log->opts.shared)
		eventlog_unlock(log);
	return rc;
}

int
eventlog_hold(struct eventlog *log)
{
	if (!log->opts.shared || log->held)
		return 0;
	if (eventlog_lock(log) == -1)
		return eventlog_fail(log, "cannot lock");
	log->held = 1;
	return 0;
}

void
eventlog_release(struct eventlog *log)
{
	if (!log->held)
		return;
	log->held = 0;
	eventlog_unlock(log);
}

void
eventlog_set_hook(struct eventlog *log, const struct eventlog_hook *hook)
{
	if (hook != NULL)
		log->hook = *hook;
	else
		memset(&log->hook, 0, sizeof(log->hook));
}

int
eventlog_append_hook(struct eventlog *log)
{
	int	rc;

	if (log->hook.fields == NULL || log->in_hook) {
		errno = EINVAL;
		return -1;
	}
	log->in_hook = 1;
	rc = eventlog_append(log, NULL);
	log->in_hook = 0;
	if (rc == 0)
		log->hook_due = 0;
	return rc;
}

int
eventlog_tick(struct eventlog *log)
{
	/* A file moved out after the last event: said within a tick. */
	if (!log->opts.shared && log->fd != -1 && !log->in_hook &&
	    (eventlog_check_name(log) == -1 || (log->left_due &&
	    eventlog_before(log) == 0 && eventlog_put_left(log) == -1)))
		return -1;
	eventlog_recount_tick(log);
	if (log->hook_due)
		(void)eventlog_append_hook(log);
	if (!log->dirty || log->fd == -1)
		return 0;
	return eventlog_sync(log);
}

/*
 * After a SIGUSR1 (atk36g F1), the rotated files counted again at each
 * tick as the signal did, while its window is open. logrotate deletes
 * its oldest file only once its whole postrotate script ended: the
 * signal may come first, then reloads of other services, a compression,
 * for any time, which no fixed guess covers. So the window stays open
 * until the count (how many files, the oldest's first seq, first) has
 * changed and then held still for EVENTLOG_SETTLE_US (the deletion
 * seen), or EVENTLOG_RECOUNT_US after the signal when it never changes
 * (nothing deleted: fewer files than logrotate keeps, or compressed
 * ones, which are not counted). A longer window gives a folder writer
 * nothing: deleting the oldest file just before the signal has the same
 * effect. Costs a count a tick, only inside the window.
 */
static void
eventlog_recount_tick(struct eventlog *log)
{
	uint64_t	now;
	unsigned	n = log->n_own;
	long long	oldest = n > 0 ? log->own[n - 1].seq : 0;
	long long	first = log->first;

	if (log->recount_from_us == 0)
		return;
	now = util_now_us();
	eventlog_find_first(log, &log->cur);
	if (log->n_own != n || log->first != first ||
	    (n > 0 && log->own[n - 1].seq != oldest))
		log->recount_changed_us = now;
	if (now - log->recount_from_us >= EVENTLOG_RECOUNT_US ||
	    (log->recount_changed_us != 0 &&
	    now - log->recount_changed_us >= EVENTLOG_SETTLE_US))
		log->recount_from_us = 0;
}

/*
 * 1 if the path names the file the writer writes (nlink1: and it has no
 * other name, which a rotation by a hard link gives it), else 0.
 */
static int
eventlog_still_own(struct eventlog *log, int nlink1)
{
	struct stat	st;

	return lstat(log->path, &st) == 0 && st.st_dev == log->dev &&
	    st.st_ino == log->ino && (!nlink1 || st.st_nlink == 1);
}

/*
 * The file the writer writes is not at the path (or has to be left, on
 * SIGUSR1): a new file is put there (eventlog_create(): never a moment
 * without a file of its own to write to), then the old fd closed; until
 * that works, the writer goes on in the fd it holds, said on stderr, so
 * no event is lost. The log.moved line is due first in the new file.
 * Only SIGUSR1 (usr1) recounts the rotated files and may move first
 * (eventlog_find_first(): files another tool rotated are its to delete);
 * a folder writer's swap changes neither, the file that left being the
 * writer's current one, never one of its rotated files (atk35e F2): its
 * first line is only noted for the next SIGUSR1 (eventlog_note_left()).
 * log.moved's last_seq is the last line written in the file that left,
 * set once the new file is in place (atk36c F2).
 * 0, or -1 (log marked unavailable: no fd to write on in).
 */
static int
eventlog_replace(struct eventlog *log, int usr1)
{
	struct eventlog_own	was = log->cur;
	dev_t			held_dev = log->dev;
	ino_t			held_ino = log->ino;
	int			held = log->fd;

	if (held != -1 && !log->left_due) {
		log->left_due = 1;
		log->left_dev = log->dev;
		log->left_ino = log->ino;
		log->left_seq = log->seq;
	}
	if (held != -1) {
		(void)fdatasync(held);
		log->dirty = 0;
	}
	if (eventlog_create(log) == -1) {
		if (held == -1)
			return eventlog_fail(log, "cannot reopen");
		eventlog_say(log, EVENTLOG_SAY_FAILED, "cannot put a new file "
		    "at \"%s\" (%s): writing on in the file it had, which "
		    "left that name",
		    log->path, strerror(errno));
		return 0;
	}
	if (held != -1) {
		close(held);
		/* What it wrote there until now (atk36c F2). */
		if (log->left_dev == held_dev && log->left_ino == held_ino)
			log->left_seq = log->seq;
	}
	log->dir_unsynced = 1;
	log->need_nl = 0;
	if (usr1)
		eventlog_find_first(log, &was);
	else
		eventlog_note_left(log, &was);
	return 0;
}

/*
 * Keep the note of the file that left at a swap (its first line, when the
 * writer wrote it there) for the next SIGUSR1's count; the oldest note
 * goes when there are EVENTLOG_LEFT_NOTES.
 */
static void
eventlog_note_left(struct eventlog *log, const struct eventlog_own *was)
{
	if (was->seq <= 0 || !was->vouched)
		return;
	if (log->n_left_notes == EVENTLOG_LEFT_NOTES) {
		memmove(log->left_notes, log->left_notes + 1,
		    (EVENTLOG_LEFT_NOTES - 1) * sizeof(*was));
		log->n_left_notes--;
	}
	log->left_notes[log->n_left_notes++] = *was;
}

/*
 * Not shared: the path still names the file the writer writes; else (a
 * folder writer moved it out, or renamed another file onto the name:
 * atk35b F1) a new file is put there (eventlog_replace()), whose first
 * line, log.moved, has for prev the hash of the last line written in the
 * file that left: whoever follows the folder sees the gap at once.
 * Looked at once a tick and at a rotation, not at each line: at most one
 * new file a second, whatever a folder writer does, and nothing per
 * event; the lines of up to a second go to the file that left, none is
 * lost. 0, or -1 (log marked unavailable).
 */
static int
eventlog_check_name(struct eventlog *log)
{
	if (log->opts.shared || log->fd == -1 || eventlog_still_own(log, 0))
		return 0;
	eventlog_say(log, EVENTLOG_SAY_MOVED, "\"%s\" is no longer the file "
	    "the writer writes (moved away or replaced; device %lu inode "
	    "%lu, its last line seq %lld): writing in a new one, which says "
	    "so (log.moved)",
	    log->path, (unsigned long)log->dev, (unsigned long)log->ino,
	    log->seq);
	return eventlog_replace(log, 0);
}

/*
 * The log.moved line, first in the file made after the one written left
 * the name (after its rotate line, when signed): which file left and the
 * last seq written there. Not while the writer still writes that file
 * (no new one could be put at the name). The next checkpoint signs it.
 * 0, or -1 (log marked unavailable).
 */
static int
eventlog_put_left(struct eventlog *log)
{
	json_t	*f;
	char	 file[64];
	int	 rc;

	if (!log->left_due || log->in_left || (log->dev == log->left_dev &&
	    log->ino == log->left_ino))
		return 0;
	snprintf(file, sizeof(file), "%lu:%lu", (unsigned long)log->left_dev,
	    (unsigned long)log->left_ino);
	f = json_pack("{s:s, s:s, s:I}", "event", "log.moved", "file", file,
	    "last_seq", (json_int_t)log->left_seq);
	if (f == NULL) {
		errno = ENOMEM;
		return eventlog_fail(log, "cannot format an event for");
	}
	log->in_left = 1;
	rc = eventlog_put(log, f);
	log->in_left = 0;
	json_decref(f);
	if (rc == 0) {
		log->left_due = 0;
		log->hook_due = log->hook.fields != NULL;
	}
	return rc;
}

int
eventlog_reopen(struct eventlog *log)
{
	struct eventlog_own	was = log->cur;
	struct stat		st;
	int			torn;

	/*
	 * Always, as eventlog_rotate() does: the file may end with torn
	 * lines this process did not write (never marked dirty) that the new
	 * file's rotate line declares; and the rename and the new file are in
	 * the folder before that line (eventlog_first_line(), atk20r28 F3).
	 */
	if (log->fd != -1) {
		(void)fdatasync(log->fd);
		log->dirty = 0;
	}
	log->dir_unsynced = 1;
	log->cache_valid = 0;
	if (log->opts.shared) {
		if (log->fd != -1)
			close(log->fd);
		log->fd = -1;
		return 0;	/* the next append locks and re-reads */
	}
	log->recount_from_us = util_now_us();
	log->recount_changed_us = 0;
	if (log->fd == -1 || !eventlog_still_own(log, 1) ||
	    fstat(log->fd, &st) == -1)
		return eventlog_replace(log, 1);
	/* Its own file, nobody moved it: kept, as it is now. */
	log->size = st.st_size;
	/* Rotated by others: their choice; vouched only as it noted them. */
	eventlog_find_first(log, &was);
	if ((torn = eventlog_ends_torn(log->fd, log->size)) == -1)
		return eventlog_fail(log, "cannot read");
	log->need_nl = torn;
	return 0;
}

void
eventlog_close(struct eventlog *log)
{
	if (log == NULL)
		return;
	if (log->fd != -1) {
		if (log->dirty)
			(void)fdatasync(log->fd);
		close(log->fd);
	}
	free(log->dir);
	free(log->name);
	free(log->path);
	free(log->own);
	free(log);
}

int
eventlog_healthy(const struct eventlog *log)
{
	return log->healthy;
}

const char *
eventlog_error(const struct eventlog *log)
{
	return log->error;
}

long long
eventlog_seq(const struct eventlog *log)
{
	return log->seq;
}

unsigned long long
eventlog_written(const struct eventlog *log)
{
	return log->written;
}

const char *
eventlog_hash(const struct eventlog *log)
{
	return log->prev;
}

long long
eventlog_first(const struct eventlog *log)
{
	return log->first;
}

/*
 * SHA-256 hex (into hex[65]) of the current file's first line c and
 * those of the rotated files o[0 .. n): "seq hash\n" each, "seq hash ?\n"
 * for one not vouched for: an anchor that lists such a note never
 * matches the files there at the next start (eventlog_vouch()). 0, or -1.
 */
static int
eventlog_own_digest(const struct eventlog_own *c, const struct eventlog_own *o,
    unsigned n, char *hex)
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen;
	EVP_MD_CTX	*ctx;
	const struct eventlog_own *e;
	char		 one[EVENTLOG_HEX + 32];
	unsigned	 i;
	int		 ok, len;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
	for (i = 0; ok && i <= n; i++) {
		e = i == 0 ? c : &o[i - 1];
		len = snprintf(one, sizeof(one), "%lld %s%s\n", e->seq,
		    e->hash, e->vouched ? "" : " ?");
		ok = EVP_DigestUpdate(ctx, one, (size_t)len) == 1;
	}
	ok = ok && EVP_DigestFinal_ex(ctx, md, &mdlen) == 1;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -1;
	util_hex(md, mdlen, hex);
	return 0;
}

int
eventlog_files(const struct eventlog *log, unsigned *n, char *hex)
{
	*n = log->n_own;
	return eventlog_own_digest(&log->cur, log->own, log->n_own, hex);
}

void
eventlog_vouch(struct eventlog *log, unsigned n, const char *hex,
    int closed)
{
	char		d[EVENTLOG_HEX];
	unsigned	k, i, shift = closed ? 0 : EVENTLOG_VOUCH_SHIFT;

	/* As the anchor lists them, or k rotations later. */
	for (k = 0; k <= shift && k + n <= log->n_own; k++) {
		if (eventlog_own_digest(k == 0 ? &log->cur : &log->own[k - 1],
		    log->own + k, n, d) == 0 && strcmp(d, hex) == 0)
			break;
	}
	if (k > shift || k + n > log->n_own) {
		/* None of them is the writer's for sure. */
		log->cur.vouched = 0;
		for (i = 0; i < log->n_own; i++)
			log->own[i].vouched = 0;
		return;
	}
	log->n_own = k + n;	/* more are not its own */
	/* Files made after its anchor: it lists none of them. */
	if (k > 0)
		log->cur.vouched = 0;
	for (i = 0; i + 1 < k; i++)
		log->own[i].vouched = 0;
	log->first = log->n_own > 0 ? log->own[log->n_own - 1].seq :
	    log->cur.seq;
}

void
eventlog_continue_from(struct eventlog *log, long long seq, const char *hash)
{
	log->seq = seq;
	util_strlcpy(log->prev, hash, sizeof(log->prev));
	log->foreign = 1;
}

void
eventlog_keep_from(struct eventlog *log, long long seq)
{
	if (log->first == 0 || seq < log->first)
		log->first = seq;
}

int
eventlog_no_end(const struct eventlog *log)
{
	return log->no_end;
}

int
eventlog_foreign(const struct eventlog *log)
{
	return log->foreign;
}

int
eventlog_torn(const struct eventlog *log)
{
	return log->torn;
}

int
eventlog_torn_now(const struct eventlog *log)
{
	return log->need_nl;
}

unsigned long long
eventlog_torn_lines(const struct eventlog *log)
{
	return log->lost > 0 ? 0 : log->torn_lines;
}

const char *
eventlog_torn_hash(const struct eventlog *log)
{
	return log->lost > 0 ? "" : log->torn_hash;
}

unsigned long long
eventlog_torn_left(const struct eventlog *log, const char **hash)
{
	if (log->torn_head) {	/* name.1's: the file before the line */
		*hash = log->head_hash;
		return log->head_hash[0] != '\0' ? log->head_declares : 0;
	}
	*hash = log->torn_hash;
	return log->torn_hash[0] != '\0' ? log->torn_lines : 0;
}

void
eventlog_torn_set(struct eventlog *log, unsigned long long n,
    const char *hash)
{
	log->torn_lines = n;
	log->torn = n > 0;
	util_strlcpy(log->torn_hash, hash, sizeof(log->torn_hash));
}

const char *
eventlog_path(const struct eventlog *log)
{
	return log->path;
}

/*
 * Length of the valid UTF-8 sequence at p (1 to 4), or 0 if p does not
 * start one (overlong forms, surrogates and code points past U+10FFFF are
 * invalid, as in jansson). p is NUL-terminated.
 */
static size_t
eventlog_utf8_len(const unsigned char *p)
{
	size_t		n, i;
	uint32_t	cp;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		n = 2;
		cp = p[0] & 0x1f;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		n = 3;
		cp = p[0] & 0x0f;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		n = 4;
		cp = p[0] & 0x07;
	} else
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if ((n == 3 && cp < 0x800) || (n == 4 && cp < 0x10000) ||
	    (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return 0;
	return n;
}

json_t *
eventlog_str(const char *s)
{
	static const char	 hexd[] = "0123456789abcdef";
	const unsigned char	*p = (const unsigned char *)s;
	char			*out;
	size_t			 o = 0, cost = 0, n, c;
	json_t			*j;

	if (s == NULL)
		return json_null();
	/* Output bytes never pass the escaped cost counted below. */
	if ((out = malloc(SG_LOG_FIELD_MAX + 4)) == NULL)
		return NULL;
	for (; *p != '\0'; p += n) {
		n = eventlog_utf8_len(p);
		if (n == 0)
			c = 5;		/* \xNN, its backslash escaped */
		else if (n == 1)
			c = *p < 0x20 ? 6 : (*p == '"' || *p == '\\') ? 2 : 1;
		else
			c = n == 4 ? 12 : 6;
		if (cost + c > SG_LOG_FIELD_MAX - 3) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		cost += c;
		if (n == 0) {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hexd[*p >> 4];
			out[o++] = hexd[*p & 0xf];
			n = 1;
		} else {
			memcpy(out + o, p, n);
			o += n;
		}
	}
	j = json_stringn(out, o);
	free(out);
	return j;
}

/* Add a sanitized string (or null) member; -1 on ENOMEM. */
static int
eventlog_set_str(json_t *obj, const char *key, const char *s)
{
	return json_object_set_new(obj, key, eventlog_str(s));
}

json_t *
eventlog_security_fields(const struct eventlog_sec *e)
{
	json_t	*obj, *sets;
	size_t	 i;
	int	 bad = 0;

	if ((obj = json_object()) == NULL)
		return NULL;
	bad |= eventlog_set_str(obj, "event", e->event);
	bad |= eventlog_set_str(obj, "sandbox", e->sandbox);
	/* Only with an exec's credential: older lines keep their shape. */
	if (e->run_id != NULL)
		bad |= eventlog_set_str(obj, "run_id", e->run_id);
	bad |= eventlog_set_str(obj, "src", e->src);
	bad |= eventlog_set_str(obj, "method", e->method);
	bad |= eventlog_set_str(obj, "host", e->host);
	bad |= json_object_set_new(obj, "port", e->port > 0 ?
	    json_integer(e->port) : json_null());
	bad |= eventlog_set_str(obj, "sni", e->sni);
	bad |= eventlog_set_str(obj, "resolved", e->resolved);
	bad |= eventlog_set_str(obj, "reason", e->reason);
	bad |= eventlog_set_str(obj, "message", e->message);
	if (e->policy_sets == NULL)
		sets = json_null();
	else if ((sets = json_array()) != NULL) {
		for (i = 0; e->policy_sets[i] != NULL; i++)
			bad |= json_array_append_new(sets,
			    eventlog_str(e->policy_sets[i]));
	}
	bad |= json_object_set_new(obj, "policy_sets", sets);
	bad |= eventlog_set_str(obj, "rule", e->rule);
	bad |= eventlog_set_str(obj, "policy_digest", e->policy_digest);
	if (bad) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}
