/*
 * checkpoint.h: signed checkpoints in the hash-chained logs (eventlog.h),
 * and the Ed25519 keys that sign them (OpenSSL 3 EVP).
 *
 * The chain shows that no line was edited, removed or inserted between its
 * first and its last line, but whoever can write the file can rewrite it
 * from any line on with fresh hashes, or cut its end. A checkpoint is one
 * more line of the chain, signed by a key that only the writer can read:
 * its signature covers the hash of the line before it, so it vouches for
 * every line up to it. ckverify.h checks them with the public key.
 *
 * The line (docs/audit.md, "Signed checkpoints"):
 *
 *   {"ts":TS,"seq":S,"event":"log.checkpoint","reason":R,"key":K,
 *    "next_key":N,"every_events":E,"every_secs":T,"sig":G,"prev":P,
 *    "hash":H}
 *
 *   R  why it was written: open (the writer opened the log), count (E
 *      events since the last one), timer (T seconds since the last one),
 *      key (it hands over to key N), rotate (the first line of a file
 *      that continues the chain: a log whose oldest lines are gone must
 *      start with one), close (the writer closes the log)
 *   K  the signing key: base64 of the 32-byte raw Ed25519 public key
 *   N  null, or with reason key the key that signs from then on
 *   E  the writer's promise: a checkpoint after at most E events (0: no
 *      such promise)
 *   T  and one at least every T seconds while it runs (0: none; such a
 *      writer signs when it closes the log)
 *   G  base64 of the 64-byte Ed25519 signature of checkpoint_message():
 *        "sandgate-checkpoint-v1\nseq=S\nts=TS\nprev=P\nreason=R\nkey=K\n"
 *        "next_key=N\nevery_events=E\nevery_secs=T\n"   (N empty if null)
 *        and, only in a rotate line that declares torn lines,
 *        "torn=TN\ntorn_hash=TH\n"
 *
 * A rotate line whose writer had torn lines at the end of the file it
 * rotated that no log.outage or log.resume counted yet (the ones the next
 * such line counts, eventlog_torn_left()) declares them in two members,
 * "torn":TN,"torn_hash":TH (TN > 0, TH their digest, logverify_torn_hash()).
 * verify --key matches them against the torn lines it read before the
 * line, or takes them as read when the chain starts at the line (that
 * file rotated away: atk20r22 F4). Members absent: none declared.
 *
 * Keys are PEM files (PKCS#8 private, SubjectPublicKeyInfo public), as
 * `openssl genpkey -algorithm ed25519` writes them. A private key must be
 * a regular file owned by the process's user and readable by nobody else,
 * and must not sit in the log folder. Rotation: a new private key placed
 * at PATH.next is introduced by a checkpoint (reason key) that the old key
 * signs, then renamed onto PATH, so the old private key no longer exists.
 *
 * The anchor: beside the key, outside the log folder, the writer keeps
 * PATH.anchor, the last checkpoint it wrote (one line, CHECKPOINT_ANCHOR_MAX
 * bytes at most):
 *
 *   sandgate-anchor-v1 seq=S hash=H reason=R ts=TS key=K reopened=1
 *       tail=TS:TH torn=N:TD first=F files=N:D lost=L events=E since=TS
 *       cause=TEXT
 *
 * (torn=N:TD after every tail: the N torn lines its writer left after
 * that line, TD their digest, logverify_torn_hash(), CHECKPOINT_TORN_NONE
 * for none; absent after a tail only in an older writer's anchor, whose
 * next start takes the torn lines it finds; events=E: the attempts the L
 * lost lines held, L when absent.)
 *
 * (all on one line; lost=L since=TS cause=TEXT, only while an outage of
 * the log is not yet covered by a checkpoint after its log.outage line,
 * eventlog_outage(): how many events were lost, since when and why
 * (such a checkpoint is signed at the next checkpoint_tick()), the
 * rest of the line, printable ASCII,
 * at most CHECKPOINT_CAUSE_MAX bytes; rewritten at most once a second, from
 * checkpoint_tick(), and at checkpoint_free(); a writer that starts with
 * it writes the log.outage line first, eventlog_add_outage().)
 *
 * (seq=0: no checkpoint written yet, only an outage to keep; hash all
 * zeros, reason open, ts the outage's since, no first; the parser takes
 * seq 0 only with lost, and a writer that starts with such an anchor
 * carries the outage and nothing else.)
 *
 * (first=F, the first seq of the files the writer keeps, eventlog.h, is
 * left out while it is not known, and by anchors written before it;
 * files=N:D, how many rotated files the writer keeps and the digest of
 * their first lines, eventlog_files(), only with first, and is left out
 * by anchors written before it: at start the files there are then the
 * writer's only if they match, eventlog_vouch().)
 *
 * It is rewritten (temporary file, fsync, rename) after the log has been
 * synced, so it never names a line the log on disk lacks. The temporary
 * file, PATH.anchor.PID.tmp, is made at its full size before the checkpoint
 * it will name is written (and kept ready while the writer runs): a
 * writer that cannot take that room writes no checkpoint, so a volume
 * that fills up never leaves a close the anchor does not name. The
 * anchor file keeps CHECKPOINT_ANCHOR_MAX bytes of room of its own
 * (FALLOC_FL_KEEP_SIZE): when no new file can be made beside it (no block
 * or inode left), it is rewritten in place there, so an outage is never
 * only in a process's memory. The anchor
 * is rewritten at once after
 * an open, key, timer or close checkpoint and after any checkpoint of a
 * writer that shares the log, else by the next checkpoint_tick(). A
 * writer that opens a log whose last line is not its anchor does not sign
 * over it silently: it first writes a log.resume line,
 *
 *   {"ts":..,"seq":..,"event":"log.resume","anchor_seq":S,
 *    "anchor_hash":H,"anchor_reason":R,"anchor_ts":TS,"found_seq":F,
 *    "found_hash":FH,"torn":N,"prev":..,"hash":..}
 *
 * (N: the torn lines right before it, eventlog_torn_lines(); F and FH:
 * the last line it found, before anything it wrote; a writer
 * with no anchor, or an outage-only one, that finds lines writes it too,
 * with anchor_seq 0, hash all zeros, reason open and the time it started:
 * its key vouches for none of them;
 * "anchor_reopened":true after anchor_ts when the anchor said reopened=1,
 * below), which its next checkpoint signs; ckverify.h judges it.
 *
 * A close is the end of the log only while the writer is stopped: before
 * the first line it adds after the close its anchor names (a start's
 * open, key, rotate, log.outage or log.resume line, a run record), the
 * writer rewrites the anchor with reopened=1 after key=K, in the room
 * already held, and only then writes the line. A writer killed before
 * its next anchor leaves lines after a close whose anchor says it had
 * gone on, which is taken like a crash after any other checkpoint; lines
 * added after a close while the writer is stopped still meet an anchor
 * without reopened=1 and fail. A writer that added nothing after
 * reopening it writes the plain close back when it ends (but for a line
 * a short write left torn: tail=TS:TH then names the close); one that added
 * lines and ends without a checkpoint after them adds tail=TS:TH, the seq
 * and hash of its last line, the log synced first: the next writer takes
 * the lines after the close as its own (anchor_reopened), and drops the
 * tail before its first line, only if the log ends exactly there; else
 * it writes a log.resume naming the tail (anchor_tail_seq, _hash), does
 * not reopen the close, and keeps the anchor as read (tail included)
 * until a checkpoint after that line, or a tail it wrote itself, can be
 * named: a tail is never a line the writer did not write. audit verify
 * fails a log found ending before the tail, or given the anchor, one not
 * holding it; it also reads the anchor to find a log cut at an old
 * checkpoint (docs/audit.md).
 */
#ifndef SG_CHECKPOINT_H
#define SG_CHECKPOINT_H

#include <sys/types.h>

#include <stddef.h>

#include <jansson.h>
#include <openssl/evp.h>

#define CHECKPOINT_EVENT	"log.checkpoint"
#define CHECKPOINT_RESUME	"log.resume"
#define CHECKPOINT_ANCHOR_HEAD	"sandgate-anchor-v1"
#define CHECKPOINT_ANCHOR_MAX	768	/* an anchor file's bytes, at most */
/* The anchor's torn= after a tail its writer left no torn line after. */
#define CHECKPOINT_TORN_NONE	"torn=0:" \
	"00000000000000000000000000000000" \
	"00000000000000000000000000000000"

#define CHECKPOINT_CAUSE_MAX	120	/* an outage's cause in it, at most */
#define CHECKPOINT_KEY_RAW	32	/* Ed25519 public key */
#define CHECKPOINT_KEY_B64	44	/* its base64, with padding */
#define CHECKPOINT_SIG_RAW	64
#define CHECKPOINT_SIG_B64	88
/* The longest message checkpoint_message() builds. */
#define CHECKPOINT_MSG_MAX	640
/* Defaults of the proxy's --checkpoint-every and --checkpoint-interval. */
#define CHECKPOINT_EVERY_DEFAULT	1000
#define CHECKPOINT_SECS_DEFAULT		60

struct eventlog;
struct checkpoint;

/* The signed members of a checkpoint line, as strings where they are. */
struct checkpoint_fields {
	long long		 seq;
	const char		*ts;
	const char		*prev;
	const char		*reason;
	const char		*key;		/* base64 */
	const char		*next_key;	/* base64, or NULL */
	unsigned long long	 every_events;
	unsigned long long	 every_secs;
	/* A rotate line's declared torn lines (0: none) and their digest. */
	unsigned long long	 torn;
	const char		*torn_hash;
};

/*
 * Build the signed message of f into buf. Returns its length, or 0 if it
 * does not fit (size CHECKPOINT_MSG_MAX always fits valid fields).
 */
size_t		 checkpoint_message(const struct checkpoint_fields *f,
		    char *buf, size_t size);

/* 1 if s is a reason a writer puts in a checkpoint. */
int		 checkpoint_reason_valid(const char *s);

/* A writer's anchor: the last checkpoint it wrote. */
struct checkpoint_anchor {
	long long	seq;
	char		hash[64 + 1];
	char		reason[8];
	char		ts[32];
	char		key[CHECKPOINT_KEY_B64 + 1];
	int		reopened;	/* a close the writer wrote past */
	long long	tail_seq;	/* ...and the last line it left: 0 */
	char		tail_hash[64 + 1];	/* while it still runs */
	/* torn=N:H: the torn lines it left after the tail, their digest. */
	unsigned long long torn;
	char		torn_hash[64 + 1];	/* "" for none */
	int		have_torn;	/* torn= said (atk20r22 F1) */
	long long	first;	/* first seq the writer keeps; 0: not said */
	int		have_files;	/* files=N:H said */
	unsigned	files;	/* rotated files the writer keeps */
	char		files_hash[64 + 1];	/* eventlog_files() */
	unsigned long long lost;	/* events not written (0: none) */
	unsigned long long lost_events;	/* the attempts they held */
	char		since[32];	/* the first of them failed */
	char		cause[CHECKPOINT_CAUSE_MAX + 1];	/* why */
};

/*
 * Parse an anchor (len bytes, untrusted): exactly the line above, with a
 * ts as the writer writes it, a valid reason and key. 0, or -1 with
 * *what set to what is wrong (static text).
 */
int		 checkpoint_anchor_parse(const char *buf, size_t len,
		    struct checkpoint_anchor *, const char **what);

/*
 * Read the anchor file at path: a regular file (no symlink, FIFO or
 * device) of at most CHECKPOINT_ANCHOR_MAX bytes. Returns 1 and fills
 * *a, 0 if there is no such file, or -1 with *cause set (caller frees).
 */
int		 checkpoint_anchor_read(const char *path,
		    struct checkpoint_anchor *a, char **cause);

/*
 * Strict base64 (with padding) of exactly rawlen bytes: decodes s into
 * raw and returns 0, or -1 when s is not the one encoding of rawlen bytes.
 */
int		 checkpoint_b64_decode(const char *s, unsigned char *raw,
		    size_t rawlen);

/*
 * The Ed25519 signature of len bytes at msg into sig[CHECKPOINT_SIG_RAW]
 * with the private key; 0, or -1 (OpenSSL's error queue cleared). Used
 * for checkpoints and for sandbox tokens (token.h).
 */
int		 checkpoint_ed25519_sign(EVP_PKEY *, const void *msg,
		    size_t len, unsigned char *sig);
/* 1 if sig[CHECKPOINT_SIG_RAW] is the key's signature of msg, else 0. */
int		 checkpoint_ed25519_verify(EVP_PKEY *, const void *msg,
		    size_t len, const unsigned char *sig);

/* Base64 of the raw public key of an Ed25519 key into id[45]; 0 or -1. */
int		 checkpoint_key_id(EVP_PKEY *, char *id);

/*
 * The Ed25519 key whose raw public key is base64 id; a new reference or
 * NULL if id is not one.
 */
EVP_PKEY	*checkpoint_key_from_id(const char *id);

/*
 * Load a private key from path: a regular file (no symlink) owned by the
 * effective uid, no access for group or others, holding an Ed25519 key
 * in PEM. Returns the key, or NULL with *cause set (caller frees).
 */
EVP_PKEY	*checkpoint_key_load(const char *path, char **cause);

/*
 * Read the private key at path ahead of its use (errors are left to the
 * load that uses it): a later checkpoint_key_load of the same bytes is
 * not parsed again, and OpenSSL is ready by then.
 */
void		 checkpoint_key_warm(const char *path);

/*
 * Load a public key from a PEM file (a public key, or a private key whose
 * public half is taken). NULL with *cause set if it is not Ed25519.
 */
EVP_PKEY	*checkpoint_pubkey_load(const char *path, char **cause);

/*
 * Create a new Ed25519 key pair: path (private, mode 0600) and path.pub
 * (public, 0644), both given to uid/gid unless uid is (uid_t)-1. Never
 * replaces an existing key: returns 1 if path exists already, 0 when
 * created, -1 with *cause set. The folder of path is opened without
 * following a symlink, and the files are made in it through that
 * descriptor.
 */
int		 checkpoint_key_create(const char *path, uid_t uid, gid_t gid,
		    char **cause);

/*
 * The same in the folder open at dirfd (the caller opened it, e.g. with
 * O_DIRECTORY | O_NOFOLLOW); name is one path component; path is only
 * for messages.
 */
int		 checkpoint_key_create_at(int dirfd, const char *name,
		    const char *path, uid_t uid, gid_t gid, char **cause);

/*
 * Refuse a key that lives in the log folder: 0 if the folder of keypath
 * is not logdir and not below it, else -1 with *cause set. Paths that do
 * not exist yet are judged by their deepest folder that does (symlinks
 * resolved) and the components still to be made.
 */
int		 checkpoint_key_outside(const char *keypath, const char *logdir,
		    char **cause);

/* What a signer promises and where its key is. */
struct checkpoint_opts {
	const char		*key_path;
	unsigned long long	 every_events;	/* 0: only open/timer/close */
	unsigned long long	 every_secs;	/* 0: no timer */
	/*
	 * Several processes sign with the key and exclude each other on
	 * the log's own flock (eventlog_hold()): hold a shared flock(2) on
	 * key_path.lock while signing, so that a key rotation (which takes
	 * it exclusive, CHECKPOINT_LOCK_EXCLUSIVE) never interleaves with
	 * them. Not for a log in a folder others write: its flock can be
	 * held or its file swapped (the controller uses _HELD).
	 * CHECKPOINT_LOCK_SOLE (the proxy): one process signs with the key
	 * and writes its anchor; a second one fails at once, before it
	 * touches either. CHECKPOINT_LOCK_HELD: the caller holds the lock
	 * exclusive (checkpoint_key_lock()) from before it opened the log
	 * (opts.excluded) until after checkpoint_free(): the writers (the
	 * controller's) exclude each other on it, outside the log's folder.
	 */
	int			 lock;
};
enum { CHECKPOINT_LOCK_NONE, CHECKPOINT_LOCK_SHARED,
    CHECKPOINT_LOCK_EXCLUSIVE, CHECKPOINT_LOCK_SOLE, CHECKPOINT_LOCK_HELD };

/*
 * An event its writer could not put in the log at all (the log could not
 * be opened, so no signer exists): add lost to the outage in the anchor
 * key_path.anchor (an outage-only one, seq 0, if there is none yet), so
 * that the writer's next start writes the log.outage line and `audit
 * verify --anchor` reports it meanwhile. The caller holds the key's lock
 * exclusive (checkpoint_key_lock()). 0, or -1 with *cause set.
 */
int		 checkpoint_anchor_lost(const char *key_path,
		    unsigned long long lost, const char *why, char **cause);

/*
 * Take key_path.lock (made 0600 if missing, never through a symlink) with
 * how (CHECKPOINT_LOCK_SHARED, _EXCLUSIVE or _SOLE: exclusive at once or
 * not at all). The fd (closing it lets go), or -1 with *cause set.
 */
int		 checkpoint_key_lock(const char *key_path, int how,
		    char **cause);

/*
 * A signer for log, which must stay open while the signer lives: loads
 * the key and its anchor (key_path.anchor; a malformed one is refused)
 * and sets the log's hook (eventlog_set_hook()), so that a count
 * checkpoint follows every every_events events appended through any
 * caller (written before the next event, or by the next eventlog_tick())
 * and a rotate checkpoint starts every new file. With opts.lock (several
 * writers share the log) it holds the log (eventlog_hold()) until
 * checkpoint_free(), and writes the log.resume line at once if the log
 * does not end with its anchor; otherwise that line goes before the
 * first checkpoint_write(). Returns NULL with *cause set.
 */
struct checkpoint *checkpoint_new(struct eventlog *log,
		    const struct checkpoint_opts *, char **cause);

/*
 * Write the log.resume line now if one is due (checkpoint.h, above). 0,
 * or -1 (checkpoint_error() says why).
 */
int		 checkpoint_resume(struct checkpoint *);

/*
 * Write a checkpoint now: "open", "timer" or "close". Before it, a due
 * log.resume line is written and a key waiting at key_path.next is
 * introduced (reason key) and takes over; if it cannot be, the current
 * key signs on. The anchor follows. No checkpoint is written when the
 * room for the anchor cannot be taken. Returns 0, or -1 if any of it failed
 * (checkpoint_error() says why; a failed write also marks the log
 * unavailable, eventlog.h).
 */
int		 checkpoint_write(struct checkpoint *, const char *reason);

/*
 * For a 1 s timer: the anchor if a checkpoint was written since it was
 * last rewritten, and a "timer" checkpoint (after introducing a waiting
 * next key) once every_secs have passed since the last checkpoint of any
 * kind. 0 or -1 as checkpoint_write().
 */
int		 checkpoint_tick(struct checkpoint *);

/*
 * 0 while the anchor cannot be kept (it could not be rewritten, or the
 * room for its next version could not be taken): treat it like a log
 * that cannot be written (the proxy lets nothing pass). checkpoint_tick()
 * tries again. 1 otherwise.
 */
int		 checkpoint_anchored(const struct checkpoint *);

/* The public key id that signs now (base64); owned by the signer. */
const char	*checkpoint_key(const struct checkpoint *);
const char	*checkpoint_error(const struct checkpoint *);

/*
 * Rewrite an anchor still pending, release the log, remove the hook and
 * free; accepts NULL.
 */
void		 checkpoint_free(struct checkpoint *);

#endif
