/* logfollow.c: following a log across its writer's rotations; logfollow.h. */
#include <sys/stat.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "logfollow.h"
#include "logread.h"
#include "logset.h"
#include "logverify.h"
#include "siphash.h"
#include "util.h"

/*
 * Files held that left the listing, kept and read as they grow, at most:
 * a writer may still write a file moved or renamed out of the log.
 */
#define LOGFOLLOW_GONE	64

/*
 * Bytes read from one file in one call, at most: a file of the log that
 * is huge (or sparse: a hole reads as zeros) is read on at the next poll,
 * so that the others, the file followed first, are read meanwhile.
 */
#define LOGFOLLOW_WORK	(64LL * 1024 * 1024)

/*
 * Polls with NAME missing and the file followed at NAME.1 before it is
 * said (the writer's new file moved out right after its rotation): not
 * at the first, as a writer renames NAME to NAME.1 just before it makes
 * its new NAME. Any NAME missing is said after LOGFOLLOW_MISSING polls.
 */
#define LOGFOLLOW_MISSING_ROTATED	2
#define LOGFOLLOW_MISSING		10

/*
 * How long NAME may hold no line of the writer's, once the file followed
 * left it out of turn, before that is said (a swap loop: every file the
 * writer puts at NAME moved out before it is read), and how often it is
 * said again while it lasts. The proxy puts a file of its own at NAME, its
 * first line (log.moved) written at once, within a tick (1 s) of finding
 * another file there; logrotate's `create` file is the one that leaves,
 * and the proxy's is at NAME then. Twice the tick: a tick late under
 * load is not a swap, and a loop is said within 2 s of its start.
 */
#define LOGFOLLOW_DRY_MS	2000LL

/* Bytes before the history's end searched for its last log line. */
#define LOGFOLLOW_SEED	(4 * SG_LOG_LINE_MAX)

/* 128 bits of a hash given. */
struct logchain_key {
	unsigned long long	hi, lo;
};

/*
 * A set of keys: open addressing, half full at most; {0, 0}: empty.
 * Linear probing from a keyed slot, at most LOGCHAIN_PROBES slots a
 * lookup (LOGCHAIN_FULL: none found within them).
 */
#define LOGCHAIN_PROBES	64
#define LOGCHAIN_FULL	((size_t)-1)

struct logchain_gen {
	struct logchain_key	*slot;
	size_t			 n, cap;
};

struct logchain {
	int			started;	/* a line was given */
	int			continued;	/* see logchain_continued() */
	long long		seq;		/* the last one's */
	char			hash[LOGVERIFY_HASH_HEX + 1];
	struct logchain_gen	gen[2];		/* [0] the newer */
	int			forgot;		/* gen[1] was let go once */
	int			capped;		/* a probe run was cut short */
	unsigned		probes_max;	/* the longest probe run */
};

/* A file of the log held, and how far its lines were given. */
struct logfollow_file {
	int		 fd;
	dev_t		 dev;
	ino_t		 ino;
	long long	 off;		/* where the next line starts */
	char		*name;		/* its name when last listed */
	int		 gone;		/* it left the listing */
	char		 tail[4096];	/* the bytes just before off, as read */
	int		 ntail;
	int		 skip;		/* off is inside a line longer than
					   SG_LOG_LINE_MAX: its rest is skipped */
	int		 damaged;	/* such a line was said */
	uid_t		 uid;		/* its owner */
	int		 fresh;		/* a fresh line of the writer's was
					   read from it (logfollow_fresh) */
};

struct logfollow {
	char			*dir;
	char			*name;
	char			*path;	/* dir/name: the current file */
	struct logfollow_file	*v;	/* the files held, oldest first */
	int			 n;
	int			 cur;	/* the file followed; -1: none yet */
	struct logread		*r;
	char			*cause;	/* the last listing's failure, shown */
	struct logchain		*chain;	/* the lines given */
	int			 missing; /* polls NAME was missing in a row */
	int			 missing_said;
	/*
	 * NAME has held no line of the writer's since the file followed
	 * left it out of turn (dry): since when (ms, monotonic), when it
	 * was last said (0: not yet), the files at NAME that left out of
	 * turn meanwhile (swaps). leaving: the files that left are being
	 * read to their end (their lines are not NAME's).
	 */
	int			 dry;
	long long		 dry_since, dry_said;
	int			 swaps;
	int			 leaving;
	/*
	 * The writer's uid: the owner of the file at NAME when following
	 * began; none then, of the first file a fresh line was read from.
	 * wuid_known: it is learnt. replays: copies of lines given read
	 * since replay_said (when last said).
	 */
	uid_t			 wuid;
	int			 wuid_known;
	int			 replays;
	long long		 replay_said;
};

static void	logfollow_own(struct logfollow_file *, int,
		    const struct stat *, long long, const char *);
static int	logfollow_hold(struct logfollow_file *, int, long long,
		    const char *);
static void	logfollow_drop(struct logfollow_file *);
static void	logfollow_mark(struct logfollow_file *);
static int	logfollow_cut(struct logfollow_file *);
static void	logfollow_line(struct logfollow_file *, const char *, size_t,
		    long long);
static void	logfollow_long(struct logfollow_file *, long long);
static enum logchain_verdict logfollow_gap(struct logfollow *, const char *,
		    const char *, size_t);
static long long logfollow_now(void);
static void	logfollow_dry_start(struct logfollow *);
static void	logfollow_dry_end(struct logfollow *);
static void	logfollow_dry_check(struct logfollow *);
static int	logfollow_fresh(struct logfollow *, struct logfollow_file *,
		    enum logchain_verdict);
static void	logfollow_replay_check(struct logfollow *);
static int	logfollow_poll(struct logfollow *,
		    void (*)(json_t *, void *), void *);
static void	logfollow_seed(struct logfollow *);
static int	logfollow_missing(struct logfollow *);
static int	logfollow_read(struct logfollow *, struct logfollow_file *,
		    int, void (*)(json_t *, void *), void *);
static int	logfollow_moved(struct logfollow *);
static int	logfollow_find(const struct logfollow *, const char *,
		    dev_t, ino_t);
static int	logfollow_adopt(struct logfollow *, struct logset *,
		    struct logfollow_file *, char *, int *);
static int	logfollow_faster(const struct logfollow *, const char *, int);
static int	logfollow_leave(struct logfollow *, const char *, int,
		    void (*)(json_t *, void *), void *);
static int	logfollow_rotated(struct logfollow *,
		    void (*)(json_t *, void *), void *);
static int	logfollow_earlier(struct logfollow *,
		    void (*)(json_t *, void *), void *);
static int	logfollow_keep(struct logfollow *, const char *,
		    struct logfollow_file *, int);

/*
 * Hold fd (the caller's: now lf's), file st, its lines given up to off.
 * Cannot fail: no fd is made.
 */
static void
logfollow_own(struct logfollow_file *lf, int fd, const struct stat *st,
    long long off, const char *name)
{
	memset(lf, 0, sizeof(*lf));
	lf->fd = fd;
	lf->dev = st->st_dev;
	lf->ino = st->st_ino;
	lf->uid = st->st_uid;
	lf->off = off;
	lf->name = util_xstrdup(name);
	logfollow_mark(lf);
}

/* Hold a duplicate of fd, its lines given up to off. 0, or -1 (shown). */
static int
logfollow_hold(struct logfollow_file *lf, int fd, long long off,
    const char *name)
{
	struct stat	st;
	int		nfd;

	if ((nfd = dup(fd)) == -1 || fstat(nfd, &st) == -1) {
		log_warnx("cannot follow '%s': %s", name, strerror(errno));
		if (nfd != -1)
			close(nfd);
		return -1;
	}
	logfollow_own(lf, nfd, &st, off, name);
	return 0;
}

static void
logfollow_drop(struct logfollow_file *lf)
{
	if (lf->fd != -1)
		close(lf->fd);
	lf->fd = -1;
	free(lf->name);
	lf->name = NULL;
}

struct logfollow *
logfollow_new(const struct logset *set)
{
	struct logfollow	*f = util_xcalloc(1, sizeof(*f));
	const char		*last, *slash;
	long long		 size;
	int			 i, fd;

	last = logset_name(set, logset_count(set) - 1);
	if ((slash = strrchr(last, '/')) == NULL)
		f->dir = util_xstrdup(".");
	else
		util_xasprintf(&f->dir, "%.*s", (int)(slash - last), last);
	f->name = util_xstrdup(slash != NULL ? slash + 1 : last);
	util_xasprintf(&f->path, "%s/%s", f->dir, f->name);
	f->r = util_xmalloc(sizeof(*f->r));
	f->v = util_xcalloc((size_t)logset_count(set) + 1, sizeof(*f->v));
	/* Every file the history read, at the size it was read to. */
	for (i = 0; i < logset_count(set); i++) {
		if ((fd = logset_fd(set, i, &size)) == -1)
			continue;
		if (logfollow_hold(&f->v[f->n], fd, size,
		    logset_name(set, i)) == -1) {
			logfollow_free(f);
			return NULL;
		}
		f->n++;
	}
	f->cur = f->n - 1;
	if (f->cur != -1) {
		/* The writer's file, its lines those of the history. */
		f->wuid = f->v[f->cur].uid;
		f->wuid_known = 1;
		f->v[f->cur].fresh = f->v[f->cur].off > 0;
	}
	f->chain = logchain_new();
	logfollow_seed(f);
	return f;
}

void
logfollow_free(struct logfollow *f)
{
	int	i;

	if (f == NULL)
		return;
	for (i = 0; i < f->n; i++)
		logfollow_drop(&f->v[i]);
	free(f->v);
	free(f->r);
	free(f->cause);
	logchain_free(f->chain);
	free(f->path);
	free(f->name);
	free(f->dir);
	free(f);
}

/*
 * The bytes before lf's offset kept (up to sizeof(lf->tail)): file
 * content the follower itself read, to tell a cut later (no line's
 * claim is trusted).
 */
static void
logfollow_mark(struct logfollow_file *lf)
{
	lf->ntail = lf->off < (long long)sizeof(lf->tail) ? (int)lf->off :
	    (int)sizeof(lf->tail);
	if (lf->ntail > 0 && pread(lf->fd, lf->tail, (size_t)lf->ntail,
	    (off_t)(lf->off - lf->ntail)) != lf->ntail)
		lf->ntail = 0;
}

/*
 * The bytes of a line just read (len, took bytes of the file) as the
 * ones before lf's next offset: taken from what was read, not read again
 * (the file may be cut and rewritten meanwhile). A line longer than kept
 * (its middle skipped by logread) leaves nothing to compare.
 */
static void
logfollow_line(struct logfollow_file *lf, const char *line, size_t len,
    long long took)
{
	size_t	nl = took == (long long)len + 1, keep;

	if (took != (long long)(len + nl)) {
		lf->ntail = 0;
		return;
	}
	keep = len + nl < sizeof(lf->tail) ? len + nl : sizeof(lf->tail);
	memcpy(lf->tail, line + len + nl - keep, keep - nl);
	if (nl)
		lf->tail[keep - 1] = '\n';
	lf->ntail = (int)keep;
}

/*
 * 1 when lf was cut since read: shorter than its offset, or grown back
 * past it (copytruncate, then writes before the next look) so that the
 * bytes before the offset are no longer those read.
 */
static int
logfollow_cut(struct logfollow_file *lf)
{
	struct stat	st;
	char		now[sizeof(lf->tail)];

	if (fstat(lf->fd, &st) == 0 && lf->off > (long long)st.st_size)
		return 1;
	if (lf->ntail == 0)
		return 0;
	return pread(lf->fd, now, (size_t)lf->ntail,
	    (off_t)(lf->off - lf->ntail)) != lf->ntail ||
	    memcmp(now, lf->tail, (size_t)lf->ntail) != 0;
}

/*
 * A line of lf longer than any the writer writes (SG_LOG_LINE_MAX), at
 * offset at: damage or a planted file, not an event; said once a file.
 */
static void
logfollow_long(struct logfollow_file *lf, long long at)
{
	if (lf->damaged)
		return;
	lf->damaged = 1;
	log_warnx("warning: '%s' holds more than %d bytes without a newline "
	    "at offset %lld: not a log line (damaged or not written by the "
	    "log's writer); skipped up to its next newline", lf->name,
	    SG_LOG_LINE_MAX, at);
}

struct logchain *
logchain_new(void)
{
	return util_xcalloc(1, sizeof(struct logchain));
}

void
logchain_free(struct logchain *c)
{
	if (c == NULL)
		return;
	free(c->gen[0].slot);
	free(c->gen[1].slot);
	free(c);
}

int
logchain_forgot(const struct logchain *c)
{
	return c->forgot || c->capped;
}

unsigned
logchain_probes(const struct logchain *c)
{
	return c->probes_max;
}

/* The first 128 bits of a hash in hex (64 lowercase hex digits). */
static struct logchain_key
logchain_key(const char *hex)
{
	struct logchain_key	k = { 0, 0 };
	int			i, d;

	for (i = 0; i < 32; i++) {
		d = hex[i] <= '9' ? hex[i] - '0' : hex[i] - 'a' + 10;
		if (i < 16)
			k.hi = k.hi << 4 | (unsigned)d;
		else
			k.lo = k.lo << 4 | (unsigned)d;
	}
	if (k.hi == 0 && k.lo == 0)
		k.lo = 1;	/* {0, 0} marks an empty slot */
	return k;
}

/*
 * Where k's probe run starts in g: keyed by this process's secret
 * (sg_keyed_hash(), SipHash), so lines ground to share a slot (hashes
 * chosen by whoever can write in the folder) spread like any others
 * (atk35b F2: an unkeyed (lo ^ hi) let planted lines pack one run).
 */
static size_t
logchain_home(const struct logchain_gen *g, struct logchain_key k)
{
	unsigned char	m[16];

	memcpy(m, &k.hi, 8);
	memcpy(m + 8, &k.lo, 8);
	return (size_t)sg_keyed_hash(m, sizeof(m)) & (g->cap - 1);
}

/*
 * The slot of k in g: where it is, or the empty one where it goes; or
 * LOGCHAIN_FULL past LOGCHAIN_PROBES slots looked at (never with a
 * secret slot but by a chance too small to count; if ever, a key not
 * found is a gap said and a key not added is one forgotten: a warning,
 * never silence). The probes are counted (c->probes_max).
 */
static size_t
logchain_slot(struct logchain *c, const struct logchain_gen *g,
    struct logchain_key k)
{
	size_t		i = logchain_home(g, k);
	unsigned	probes = 1;

	while ((g->slot[i].hi != 0 || g->slot[i].lo != 0) &&
	    (g->slot[i].hi != k.hi || g->slot[i].lo != k.lo)) {
		if (probes == LOGCHAIN_PROBES) {
			c->capped = 1;
			i = LOGCHAIN_FULL;
			break;
		}
		i = (i + 1) & (g->cap - 1);
		probes++;
	}
	if (probes > c->probes_max)
		c->probes_max = probes;
	return i;
}

static int
logchain_in(struct logchain *c, const struct logchain_gen *g,
    struct logchain_key k)
{
	size_t	i;

	if (g->cap == 0)
		return 0;
	i = logchain_slot(c, g, k);
	return i != LOGCHAIN_FULL && g->slot[i].hi == k.hi &&
	    g->slot[i].lo == k.lo;
}

static int
logchain_known(struct logchain *c, const char *hex)
{
	struct logchain_key	k = logchain_key(hex);

	return logchain_in(c, &c->gen[0], k) || logchain_in(c, &c->gen[1], k);
}

/*
 * Add k to g (not in it), doubling g to stay at most half full. A key
 * with no slot within LOGCHAIN_PROBES is left out (forgotten: a line
 * after it is said as a gap).
 */
static void
logchain_add(struct logchain *c, struct logchain_gen *g,
    struct logchain_key k)
{
	struct logchain_gen	old = *g;
	size_t			i, j;

	if (2 * (g->n + 1) > g->cap) {
		g->cap = old.cap == 0 ? 1024 : old.cap * 2;
		g->slot = util_xcalloc(g->cap, sizeof(*g->slot));
		g->n = 0;
		for (i = 0; i < old.cap; i++)
			if ((old.slot[i].hi != 0 || old.slot[i].lo != 0) &&
			    (j = logchain_slot(c, g, old.slot[i])) !=
			    LOGCHAIN_FULL) {
				g->slot[j] = old.slot[i];
				g->n++;
			}
		free(old.slot);
	}
	if ((j = logchain_slot(c, g, k)) == LOGCHAIN_FULL)
		return;
	g->slot[j] = k;
	g->n++;
}

/*
 * Remember a hash given. The newer generation full (LOGCHAIN_KEEP), the
 * older is let go and the newer becomes it: memory stays bounded, and a
 * hash forgotten can only make a line a gap (said), never hide one.
 */
static void
logchain_remember(struct logchain *c, const char *hex)
{
	struct logchain_key	k = logchain_key(hex);

	if (logchain_in(c, &c->gen[0], k))
		return;
	if (c->gen[0].n >= LOGCHAIN_KEEP) {
		free(c->gen[1].slot);
		c->gen[1] = c->gen[0];
		memset(&c->gen[0], 0, sizeof(c->gen[0]));
		c->forgot = 1;
	}
	logchain_add(c, &c->gen[0], k);
}

enum logchain_verdict
logchain_line(struct logchain *c, const char *line, size_t len,
    long long *seq, long long *last)
{
	static const char	zeros[LOGVERIFY_HASH_HEX + 1] =
	    "0000000000000000000000000000000000000000000000000000000000000000";
	struct logverify_line	l;
	int			gap;

	/* A seq past SG_LOG_SEQ_MAX, or no hash of its own: not counted. */
	if (logverify_line(line, len, &l) != LOGVERIFY_OK)
		return LOGCHAIN_NONE;
	if (logchain_known(c, l.hash))
		return LOGCHAIN_REPLAY;
	c->continued = !c->started || strcmp(l.prev, zeros) != 0;
	gap = c->started && strcmp(l.prev, c->hash) != 0 &&
	    strcmp(l.prev, zeros) != 0 && !logchain_known(c, l.prev);
	*seq = l.seq;
	*last = c->seq;
	c->started = 1;
	c->seq = l.seq;
	memcpy(c->hash, l.hash, sizeof(c->hash));
	logchain_remember(c, l.hash);
	return gap ? LOGCHAIN_GAP : LOGCHAIN_OK;
}

int
logchain_continued(const struct logchain *c)
{
	return c->continued;
}

/*
 * A line given that follows no line given (logchain_line): the lines
 * before it were in a file that left the log before it was read, or
 * never came into it. Only said, never used to skip or drop a line; a
 * planted line can at worst add a warning (atk20r31 F1: a `seq` tracker
 * was bridged by planted lines).
 */
static enum logchain_verdict
logfollow_gap(struct logfollow *f, const char *name, const char *line,
    size_t len)
{
	enum logchain_verdict	 v;
	long long		 seq, last;
	const char		*forgot;

	if ((v = logchain_line(f->chain, line, len, &seq, &last)) !=
	    LOGCHAIN_GAP)
		return v;
	forgot = logchain_forgot(f->chain) ? " (or the line before it was "
	    "given too long ago to be remembered)" : "";
	if (seq > last + 1)
		log_warnx("warning: events seq %lld to %lld of '%s' were not "
		    "seen: a file of the log moved away or deleted before it "
		    "was read (they are not shown); read on at '%s'%s",
		    last + 1, seq - 1, f->path, name, forgot);
	else
		log_warnx("warning: events before seq %lld of '%s' were not "
		    "seen (it follows no line read; the last line read was "
		    "seq %lld): a file of the log moved away or deleted before it "
		    "was read (they are not shown); read on at '%s'%s", seq,
		    f->path, last, name, forgot);
	return v;
}

static long long
logfollow_now(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/*
 * The file followed left NAME out of turn (moved away, deleted, or
 * replaced: not rotated to the writer's names): from now on NAME is dry
 * until a line of the writer's is read there; one more swap counted.
 */
static void
logfollow_dry_start(struct logfollow *f)
{
	f->swaps++;
	if (f->dry)
		return;
	f->dry = 1;
	f->dry_since = logfollow_now();
	f->dry_said = 0;
}

/* A fresh line of the writer's read at NAME (logfollow_fresh): said
   when the dry spell was. */
static void
logfollow_dry_end(struct logfollow *f)
{
	if (!f->dry)
		return;
	if (f->dry_said != 0)
		log_warnx("'%s' holds a line of the writer's again, after %lld "
		    "s without one and %d swap(s) of the file at that name; "
		    "events written meanwhile and not shown are said above or "
		    "below as not seen", f->path,
		    (logfollow_now() - f->dry_since) / 1000, f->swaps);
	f->dry = 0;
	f->swaps = 0;
}

/*
 * NAME dry for LOGFOLLOW_DRY_MS: said while it lasts, at most once every
 * LOGFOLLOW_DRY_MS (atk35e F3: a folder writer moving every file the
 * writer puts at NAME out before it is read hides what is written there
 * for as long as it goes on). Silence alone never makes NAME dry: only
 * the file followed leaving it out of turn does, so an idle log is not
 * said; logrotate's `create` file leaves it too, but the writer's own
 * file, its first line written, is at NAME at once.
 */
static void
logfollow_dry_check(struct logfollow *f)
{
	long long	now;

	if (!f->dry || (now = logfollow_now()) - f->dry_since <
	    LOGFOLLOW_DRY_MS || (f->dry_said != 0 && now - f->dry_said <
	    LOGFOLLOW_DRY_MS))
		return;
	f->dry_said = now;
	log_warnx("warning: '%s' has held no line of the writer's for %lld s "
	    "since the file followed left (%d swap(s) of the file at that "
	    "name seen): events written meanwhile are not shown", f->path,
	    (now - f->dry_since) / 1000, f->swaps);
}

/*
 * 1 when the line read from lf (its verdict v) is a fresh line of the
 * writer's, lf then marked: it verifies, copies no line given (a copy of
 * a genuine line is no sign the writer still writes here: atk37a F2),
 * goes on from a line given (a chain begun from zeros after the start is
 * anyone's), and lf is owned by the writer's uid (a folder writer of
 * another uid cannot give its files away). The hash is not keyed: a
 * folder writer of the writer's own uid can make such lines.
 */
static int
logfollow_fresh(struct logfollow *f, struct logfollow_file *lf,
    enum logchain_verdict v)
{
	if (v == LOGCHAIN_NONE || v == LOGCHAIN_REPLAY ||
	    !logchain_continued(f->chain))
		return 0;
	if (!f->wuid_known) {
		f->wuid = lf->uid;
		f->wuid_known = 1;
	}
	if (lf->uid != f->wuid)
		return 0;
	lf->fresh = 1;
	return 1;
}

/*
 * Copies of lines given read: said, at most once every LOGFOLLOW_DRY_MS.
 * logrotate's `copytruncate` makes them (the copy is read from its
 * start); so does a folder writer planting a copy of a genuine line.
 */
static void
logfollow_replay_check(struct logfollow *f)
{
	if (f->replays == 0 || (f->replay_said != 0 && logfollow_now() -
	    f->replay_said < LOGFOLLOW_DRY_MS))
		return;
	f->replay_said = logfollow_now();
	log_warnx("'%s': %d line(s) read that copy a line already read "
	    "(the same hash): not shown again; logrotate's copytruncate "
	    "makes such copies, and so can anyone who writes the folder",
	    f->path, f->replays);
	f->replays = 0;
}

/*
 * The chain goes on from the last log line the history read (the end of
 * the newest file held that has one, within LOGFOLLOW_SEED bytes of its
 * end), so the first line followed is judged too (atk20r31 F5).
 */
static void
logfollow_seed(struct logfollow *f)
{
	char		*buf = util_xmalloc(LOGFOLLOW_SEED);
	long long	 want, seq, last;
	ssize_t		 got;
	size_t		 end, start;
	int		 i;

	for (i = f->n - 1; i >= 0; i--) {
		want = f->v[i].off < LOGFOLLOW_SEED ? f->v[i].off :
		    LOGFOLLOW_SEED;
		if (want == 0 || (got = pread(f->v[i].fd, buf, (size_t)want,
		    (off_t)(f->v[i].off - want))) != want)
			continue;
		/* Whole lines only, last first: off is a line's start. */
		for (end = (size_t)got; end > 0; end = start) {
			start = end - 1;
			while (start > 0 && buf[start - 1] != '\n')
				start--;
			if (start == 0 && want != f->v[i].off)
				break;	/* a line's tail: not whole */
			if (end - 1 > start && logchain_line(f->chain,
			    buf + start, end - 1 - start, &seq, &last) !=
			    LOGCHAIN_NONE)
				goto out;
		}
		break;
	}
out:
	free(buf);
}

/*
 * NAME missing (lstat ENOENT). A writer renames NAME to NAME.1 and makes
 * its new NAME right after; if NAME.1 still holds the file followed at
 * the next poll, that new file left the folder before it was read: the
 * writer's events go there, out of reach (atk20r31 F3). Said, and the
 * log listed again (1): a file moved to another of the log's names is
 * found so. NAME missing LOGFOLLOW_MISSING polls in a row is said too.
 * Once a time NAME is missing.
 */
static int
logfollow_missing(struct logfollow *f)
{
	struct logfollow_file	*lf = &f->v[f->cur];
	struct stat		 st;
	char			*one;
	int			 rotated;

	if (f->missing_said || ++f->missing < LOGFOLLOW_MISSING_ROTATED)
		return 0;
	util_xasprintf(&one, "%s.1", f->path);
	rotated = lstat(one, &st) == 0 && st.st_dev == lf->dev &&
	    st.st_ino == lf->ino;
	if (rotated)
		log_warnx("warning: '%s' is missing and the file followed was "
		    "rotated to '%s': the writer's new file left the folder "
		    "right after the rotation, so events written there are "
		    "not shown (listing the log again)", f->path, one);
	else if (f->missing >= LOGFOLLOW_MISSING)
		log_warnx("warning: the log has had no current file '%s' for "
		    "%d polls: events its writer wrote meanwhile to a file "
		    "outside the folder are not shown (listing the log "
		    "again)", f->path, f->missing);
	free(one);
	if (!rotated && f->missing < LOGFOLLOW_MISSING)
		return 0;
	f->missing_said = 1;
	return 1;
}

/*
 * Every whole line of lf from its offset on to cb, the offset moved past
 * them; follow keeps a partial last line for later (the writer may still
 * be writing it), else it is given too. At most LOGFOLLOW_WORK bytes are
 * read (the rest at the next call); a line longer than SG_LOG_LINE_MAX is
 * said and skipped, its holes not read. A file now shorter than its
 * offset was cut: said, its offset set back to 0 and 1 returned, nothing
 * read (the caller lists the log again, the copy first).
 * 0, or -1 (shown).
 */
static int
logfollow_read(struct logfollow *f, struct logfollow_file *lf, int follow,
    void (*cb)(json_t *, void *), void *arg)
{
	enum logchain_verdict	 v;
	json_t			*obj;
	size_t			 len;
	long long		 done = 0;
	int			 got;

	if (logfollow_cut(lf)) {
		log_warnx("'%s' was cut while followed: reading it again from "
		    "its start", lf->name);
		lf->off = 0;
		lf->skip = 0;
		lf->ntail = 0;
		/*
		 * Not read yet: the copy (copytruncate's NAME.1) holds the
		 * lines before those the cut file starts with, and is read
		 * first by the listing the caller makes; read here first, the
		 * cut file's lines would be said not seen (atk35e F4).
		 */
		return 1;
	}
	if (lseek(lf->fd, (off_t)lf->off, SEEK_SET) == -1)
		goto fail;
	logread_init(f->r, lf->fd, follow, -1);
	f->r->work = LOGFOLLOW_WORK;
	if (lf->skip) {
		/* The rest of a line too long: not kept, holes skipped. */
		f->r->n = SG_LOG_LINE_MAX + 1;
		f->r->partial = 1;
	}
	while ((got = logread_next(f->r, &len)) == 1) {
		logfollow_line(lf, f->r->line, len, f->r->consumed - done);
		if (len > SG_LOG_LINE_MAX)
			logfollow_long(lf, lf->off + done);
		done = f->r->consumed;
		lf->skip = 0;
		if ((obj = logread_object(f->r->line, len)) == NULL)
			continue;
		v = logfollow_gap(f, lf->name, f->r->line, len);
		if (logfollow_fresh(f, lf, v) && !f->leaving &&
		    f->cur != -1 && lf == &f->v[f->cur])
			logfollow_dry_end(f);
		if (v == LOGCHAIN_REPLAY) {
			/* The same bytes as a line given: nothing hidden. */
			f->replays++;
			json_decref(obj);
			continue;
		}
		cb(obj, arg);
		json_decref(obj);
	}
	lf->off += f->r->consumed;
	if (got == 0 && f->r->n > SG_LOG_LINE_MAX) {
		/* Inside a line too long: what was read of it is passed. */
		logfollow_long(lf, lf->off);
		lf->off += f->r->taken;
		lf->skip = 1;
		logfollow_mark(lf);
	}
	if (got == 0)
		return 0;
fail:
	log_warnx("cannot read '%s' (followed): %s", lf->name,
	    strerror(errno));
	return -1;
}

/*
 * 1 when the name no longer holds the file followed (the writer rotated
 * it), 0 when it does or is missing (moved, not yet replaced), but for
 * logfollow_missing().
 */
static int
logfollow_moved(struct logfollow *f)
{
	struct logfollow_file	*lf = &f->v[f->cur];
	struct stat		 cur;

	if (lstat(f->path, &cur) == -1)
		return errno == ENOENT ? logfollow_missing(f) : 0;
	f->missing = 0;
	f->missing_said = 0;
	return cur.st_dev != lf->dev || cur.st_ino != lf->ino;
}

/* The index of the held file dev/ino not yet taken, or -1. */
static int
logfollow_find(const struct logfollow *f, const char *taken, dev_t dev,
    ino_t ino)
{
	int	i;

	for (i = 0; i < f->n; i++)
		if (!taken[i] && f->v[i].dev == dev && f->v[i].ino == ino)
			return i;
	return -1;
}

/*
 * Into nv, the files of set, oldest first: a file held moves there and
 * goes on from its offset (marked in taken, counted in *kept), any other
 * is read from its start, its fd taken from set. Returns how many.
 */
static int
logfollow_adopt(struct logfollow *f, struct logset *set,
    struct logfollow_file *nv, char *taken, int *kept)
{
	struct stat	st;
	long long	size;
	int		i, k, fd, nn = 0, run = logset_writer_run(set);

	*kept = 0;
	for (i = 0; i < logset_count(set); i++) {
		if ((fd = logset_fd(set, i, &size)) == -1 ||
		    fstat(fd, &st) == -1)
			continue;
		if ((k = logfollow_find(f, taken, st.st_dev, st.st_ino)) ==
		    -1) {
			/* The listing's fd moved here, not duplicated: a
			   listing needs as many fds as files, not twice. */
			logfollow_own(&nv[nn], logset_take(set, i, &size),
			    &st, 0, logset_name(set, i));
		} else {
			/*
			 * Only the writer's names tell that nothing was
			 * rotated away unread: a planted NAME.500 or a link
			 * of a file read does not (2: held there).
			 */
			taken[k] = i >= logset_count(set) - run ? 2 : 1;
			*kept += taken[k] == 2;
			nv[nn] = f->v[k];
			nv[nn].gone = 0;	/* listed again */
			f->v[k].fd = -1;
			f->v[k].name = NULL;
			free(nv[nn].name);
			nv[nn].name = util_xstrdup(logset_name(set, i));
		}
		nn++;
	}
	return nn;
}

/*
 * 1 when the file followed left the log by being deleted (no link left:
 * the writer rotated it away past what it keeps, or someone deleted it),
 * or the new listing holds none of the files read under the writer's
 * names: the files rotated in between may be gone too.
 */
static int
logfollow_faster(const struct logfollow *f, const char *taken, int kept)
{
	struct stat	st;

	if (kept == 0)
		return 1;
	if (taken[f->cur] == 2)
		return 0;
	return fstat(f->v[f->cur].fd, &st) == 0 && st.st_nlink == 0;
}

/*
 * The files held that the new listing lacks: their rest to cb (nobody
 * appends to them as the log) and dropped. The file followed rotated
 * away (logfollow_faster): events in files rotated away in between may
 * be lost, said on stderr; not under the writer's names but still
 * linked, it left the log out of turn (moved away, not rotated): said
 * when it held events, since lines written to it later are not shown.
 * An empty one is logrotate's `create` file, which the proxy moves
 * aside. What decides is the file itself and the writer's names, never
 * another name in the folder (a planted NAME.500). 0, or -1 (shown).
 */
static int
logfollow_leave(struct logfollow *f, const char *taken, int kept,
    void (*cb)(json_t *, void *), void *arg)
{
	int	i, rc = 0;

	if (f->cur != -1 && logfollow_faster(f, taken, kept))
		log_warnx("warning: '%s' rotated faster than it was followed: "
		    "the file read was rotated away before its newer files "
		    "were found; events in files rotated away in between are "
		    "not shown", f->path);
	else if (f->cur != -1 && taken[f->cur] != 2 && f->v[f->cur].off > 0)
		log_warnx("warning: the file followed at '%s' left the log "
		    "without being rotated (moved away or deleted): lines "
		    "written to it from now on are shown only while it is "
		    "held, and a file put at the name after it and moved out "
		    "before it was read is not shown at all",
		    f->v[f->cur].name);
	f->leaving = 1;
	for (i = 0; i < f->n; i++) {
		if (taken[i])
			continue;
		if (rc == 0 && logfollow_read(f, &f->v[i], 1, cb, arg) == -1)
			rc = -1;
	}
	f->leaving = 0;
	return rc;
}

/*
 * The name holds another file: the log listed again, the files held and
 * still listed read on from their offsets, the others from their start,
 * oldest first; the newest is followed. Nothing is skipped by what a
 * line says: only by which file it is and how far it was read.
 */
static int
logfollow_rotated(struct logfollow *f, void (*cb)(json_t *, void *),
    void *arg)
{
	struct logfollow_file	*nv;
	struct logset		*set = logset_new();
	char			*cause = NULL, *taken;
	int			 i, nn = 0, kept, out, rc = -1;

	logset_hold_besides(set, f->n);
	if (logset_add_log(set, f->dir, f->name, &cause) == -1) {
		/*
		 * The files held are still read as they grow; a newer file
		 * the writer made is not, until a listing works.
		 */
		if (f->cause == NULL || strcmp(f->cause, cause) != 0)
			log_warnx("warning: %s: the log cannot be listed, so "
			    "events in its newer files may not be shown until "
			    "it can (following: the files held are still read; "
			    "trying again)", cause);
		free(f->cause);
		f->cause = cause;
		logset_free(set);
		return 0;
	}
	free(f->cause);
	f->cause = NULL;
	nv = util_xcalloc((size_t)logset_count(set) + f->n + 1, sizeof(*nv));
	taken = util_xcalloc((size_t)f->n + 1, 1);
	nn = logfollow_adopt(f, set, nv, taken, &kept);
	if ((rc = logfollow_leave(f, taken, kept, cb, arg)) == -1)
		goto out;
	/*
	 * Left NAME out of turn: not at a name the writer rotates to; or
	 * at one but with no fresh line of the writer's ever read from it:
	 * anyone who can write the folder can rename a file to NAME.1, the
	 * writer only rotates files it wrote (atk37a F1).
	 */
	out = f->cur != -1 && (taken[f->cur] != 2 || !f->v[f->cur].fresh);
	nn = logfollow_keep(f, taken, nv, nn);
	free(f->v);
	f->v = nv;
	f->cur = nn > 0 ? f->n - 1 : -1;
	if (out)
		logfollow_dry_start(f);
	nv = NULL;
	nn = 0;
	for (i = 0; i < f->n && rc != -1; i++)
		rc = logfollow_read(f, &f->v[i], 1, cb, arg);
	rc = rc == -1 ? -1 : 0;
out:
	for (i = 0; i < nn; i++)
		logfollow_drop(&nv[i]);
	free(nv);
	free(taken);
	logset_free(set);
	return rc;
}

/*
 * The files held that left the listing (not taken) put before the nn
 * listed ones of nv, read to their end already and held on, as a writer
 * may still write them (a file renamed or moved out of the log); past
 * LOGFOLLOW_GONE the oldest gone are dropped, said when they held
 * events. f->n set to the total. Returns nn.
 */
static int
logfollow_keep(struct logfollow *f, const char *taken,
    struct logfollow_file *nv, int nn)
{
	int	i, ng = 0, skip;

	for (i = 0; i < f->n; i++)
		ng += !taken[i];
	skip = ng > LOGFOLLOW_GONE ? ng - LOGFOLLOW_GONE : 0;
	memmove(&nv[ng - skip], &nv[0], (size_t)nn * sizeof(*nv));
	for (i = 0, ng = 0; i < f->n; i++) {
		if (taken[i])
			continue;
		if (skip > 0) {
			skip--;
			if (f->v[i].off > 0)
				log_warnx("warning: '%s' left the log holding "
				    "events and is no longer watched: events "
				    "written to it from now on are not shown",
				    f->v[i].name);
			logfollow_drop(&f->v[i]);
			continue;
		}
		if (!f->v[i].gone)
			f->v[i].gone = 1;
		nv[ng++] = f->v[i];
	}
	f->n = ng + nn;
	return nn;
}

/*
 * The lines added to every other file held, listed or not, as it grows:
 * logrotate renames the file to NAME.1 and makes a new NAME before the
 * writer is told to reopen (or when telling it fails), so the writer
 * goes on in NAME.1 meanwhile; and a folder writer may rename or move
 * the writer's file anywhere. One fstat per file and poll. 0, or -1
 * (shown).
 */
static int
logfollow_earlier(struct logfollow *f, void (*cb)(json_t *, void *),
    void *arg)
{
	struct stat	st;
	int		i;

	for (i = 0; i < f->n; i++) {
		if (i == f->cur || f->v[i].fd == -1 ||
		    fstat(f->v[i].fd, &st) == -1 ||
		    (long long)st.st_size <= f->v[i].off)
			continue;
		if (f->v[i].gone == 1) {
			/* A writer writes outside the log: said once. */
			log_warnx("warning: '%s' left the log but is still "
			    "written: its events are shown while it is held",
			    f->v[i].name);
			f->v[i].gone = 2;
		}
		if (logfollow_read(f, &f->v[i], 1, cb, arg) == -1)
			return -1;
	}
	return 0;
}

int
logfollow_step(struct logfollow *f, void (*cb)(json_t *, void *), void *arg)
{
	if (logfollow_poll(f, cb, arg) == -1)
		return -1;
	logfollow_dry_check(f);
	logfollow_replay_check(f);
	return 0;
}

/* One look at the log: logfollow_step() but for a dry NAME. */
static int
logfollow_poll(struct logfollow *f, void (*cb)(json_t *, void *), void *arg)
{
	if (f->cur == -1) {
		if (access(f->path, F_OK) == -1)
			return 0;	/* no file yet */
		return logfollow_rotated(f, cb, arg);
	}
	if (logfollow_earlier(f, cb, arg) == -1)
		return -1;
	switch (logfollow_read(f, &f->v[f->cur], 1, cb, arg)) {
	case -1:
		return -1;
	case 1:
		/* Cut (copytruncate): a copy of what was cut may be listed. */
		return logfollow_rotated(f, cb, arg);
	}
	if (logfollow_moved(f))
		return logfollow_rotated(f, cb, arg);
	return 0;
}

int
logfollow_run(struct logfollow *f, void (*cb)(json_t *, void *), void *arg)
{
	struct timespec	pause = { 0, LOGREAD_POLL_NS };

	for (;;) {
		if (logfollow_step(f, cb, arg) == -1)
			return -1;
		fflush(stdout);
		nanosleep(&pause, NULL);
	}
}
