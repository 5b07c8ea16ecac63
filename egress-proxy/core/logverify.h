/*
 * logverify.h: checks the hash chain of the JSON-lines logs that
 * eventlog.h writes (security-events.jsonl, runs.jsonl).
 *
 * Pure: no I/O. The caller reads the files and passes each line (or a
 * whole buffer) in order: rotated files oldest first (name.N ... name.1),
 * then the current file. The bytes are untrusted; the fuzzer drives
 * logverify_buf() directly.
 *
 * A line is {"ts":...,"seq":N,...,"prev":"<64 hex>","hash":"<64 hex>"}.
 * Its hash is the SHA-256 of the line with the final member
 * ,"hash":"<64 hex>" cut out, that is the bytes before ,"hash":" followed
 * by "}". The chain holds when every line's prev is the hash of the line
 * before and its seq is one more. The first line fed is the anchor: it
 * need not be the first event ever (older files may have been rotated
 * away), which the state's genesis and first_seq report.
 *
 * A line that starts like a log line ({"ts":") but is not complete JSON
 * and does not end like a whole line (,"hash":"<64 hex>"}) is "torn" (an
 * interrupted write, see eventlog.h): it is skipped when
 * the next log line continues the chain from the line before it, or when
 * nothing follows it; either way the state counts it. Anything else
 * that breaks the chain stops the check at the first break, which the
 * state names by file and line.
 */
#ifndef SG_LOGVERIFY_H
#define SG_LOGVERIFY_H

#include <stddef.h>

#include "sglimits.h"

#define LOGVERIFY_HASH_HEX	64
/* The fixed end of every line: ,"hash":"<64 hex>"} */
#define LOGVERIFY_SUFFIX_LEN	(9 + LOGVERIFY_HASH_HEX + 2)
#define LOGVERIFY_FILE_MAX	256	/* file names kept in results */
#define LOGVERIFY_WHAT_MAX	256

/* What one line is; see logverify_line(). */
enum logverify_status {
	LOGVERIFY_OK = 0,	/* a log line whose hash matches */
	LOGVERIFY_TORN,		/* start of a line: an interrupted write */
	LOGVERIFY_NOT_LOG,	/* not a log line of ours (nor part of one) */
	LOGVERIFY_HASH_MISMATCH	/* a log line whose content changed */
};

/* The chain members of one line. */
struct logverify_line {
	long long	seq;
	char		prev[LOGVERIFY_HASH_HEX + 1];
	char		hash[LOGVERIFY_HASH_HEX + 1];
};

/*
 * Chain state across lines and files. Treat as opaque; it is public so
 * callers can keep it on the stack. Initialise with logverify_init().
 */
struct logverify {
	int		started;	/* a log line has been seen */
	int		broken;		/* a break was found; stop there */
	long long	first_seq;
	long long	last_seq;
	char		last_hash[LOGVERIFY_HASH_HEX + 1];
	int		genesis;	/* the anchor's prev is all zeros */
	size_t		events;		/* lines that verified */
	size_t		torn;		/* torn lines tolerated */
	/* Torn lines not yet resolved by a following log line. */
	size_t		pending;
	char		pending_file[LOGVERIFY_FILE_MAX];
	size_t		pending_line;
	/* Current position. */
	char		file[LOGVERIFY_FILE_MAX];
	size_t		lineno;
	/* First break, or the first tolerated torn line. */
	char		break_file[LOGVERIFY_FILE_MAX];
	size_t		break_line;
	char		what[LOGVERIFY_WHAT_MAX];
	char		torn_file[LOGVERIFY_FILE_MAX];
	size_t		torn_line;
};

/*
 * Classify one line (len bytes, without its newline; it need not be NUL-
 * terminated). Fills *out when the status is LOGVERIFY_OK or
 * LOGVERIFY_HASH_MISMATCH (then out->hash is the hash the line claims).
 * Empty lines and lines longer than SG_LOG_LINE_MAX are LOGVERIFY_NOT_LOG.
 */
enum logverify_status logverify_line(const char *line, size_t len,
		    struct logverify_line *out);

/* 1 if s[0..len) is lowercase hex digits only. */
int		 logverify_is_hex(const char *s, size_t len);

/* Compute the hash a line should carry into hex[65]; -1 if no suffix. */
int		 logverify_hash(const char *line, size_t len, char *hex);

/*
 * The digest of the torn lines before a log.outage or log.resume line
 * ("torn_hash", atk20r20 F1, F4): hex (LOGVERIFY_HASH_HEX + 1 bytes, ""
 * before the first) becomes the SHA-256, in hex, of hex's text followed
 * by the next torn line's bytes (line[0, len), no newline). 0, or -1.
 */
int		 logverify_torn_hash(char *hex, const char *line, size_t len);

/*
 * The largest checkpoint interval a writer takes (events or seconds; the
 * proxy's --checkpoint-every and --checkpoint-interval, checkpoint_open()).
 */
#define LOGVERIFY_EVERY_MAX	10000000ULL

/*
 * 1 if the torn line t (tl bytes) can be the rotate checkpoint line r (rl
 * bytes, no newline) as a start killed inside it left it: a byte prefix
 * of r but for the values a later start writes anew, each exactly as the
 * writer writes it (atk20r30 F1): "ts" a timestamp of the writer's format
 * (27 bytes), "key" a key id (44 base64), "sig" an Ed25519 signature (88
 * base64), "torn_hash" and "hash" a digest (64 lowercase hex), the numbers
 * "every_events" and "every_secs" up to LOGVERIFY_EVERY_MAX and "torn" up
 * to SG_LOG_SEQ_MAX, with no leading zero; only the value where t ends may
 * be a prefix of its form. "seq", "event", "reason", "next_key" and "prev"
 * are r's, byte for byte. 0 else: the line was put before r (atk20r28 F1).
 */
int		 logverify_cut_rotate(const char *t, size_t tl, const char *r,
		    size_t rl);

void		 logverify_init(struct logverify *);

/*
 * Start the next file (name is copied, truncated to fit); line numbers
 * restart at 1. The chain carries over from the previous file.
 */
void		 logverify_file(struct logverify *, const char *name);

/*
 * Feed the next line of the current file (without its newline).
 * Returns 0, or -1 once the chain is broken (this or an earlier line).
 */
int		 logverify_feed(struct logverify *, const char *line,
		    size_t len);

/*
 * Feed a whole buffer of the current file, split at '\n'; a last line
 * without a newline counts as a line. Returns as logverify_feed().
 */
int		 logverify_buf(struct logverify *, const char *buf,
		    size_t len);

/*
 * Split buf at '\n' (a last line without one counts) and call feed for
 * each line until it returns -1. Returns 0, or -1 when feed stopped it.
 */
int		 logverify_lines(const char *buf, size_t len,
		    int (*feed)(void *arg, const char *line, size_t len),
		    void *arg);

/*
 * Finish after the last file: settles pending torn lines. Returns 0 when
 * the chain is intact, -1 when broken (then break_file, break_line and
 * what describe the first break).
 */
int		 logverify_finish(struct logverify *);

#endif
