/*
 * util.h: small helpers both programs use: bounded number parsing,
 * checked allocation for start-up paths, string copies that never
 * overflow, hex encoding and time formatting.
 */
#ifndef SG_UTIL_H
#define SG_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

/*
 * Parse a decimal integer in [min, max]. The whole string must be digits
 * (an optional leading '-' where min < 0). Returns 0, or -1 with *cause
 * set to a static phrase ("invalid", "too small", "too large").
 */
int	 util_strtonum(const char *s, long long min, long long max,
	    long long *out, const char **cause);

/* Copy at most size-1 bytes and NUL-terminate; returns strlen(src). */
size_t	 util_strlcpy(char *dst, const char *src, size_t size);

/* Allocation that exits on failure: start-up and CLI paths only. */
/*
 * The folder holding path synced (a rename or new entry there kept).
 * 0, or -1 with errno.
 */
int	 util_sync_dir(const char *path);
/*
 * The folder holding path, allocated: "." for a bare name, "/" for a
 * name at the root ("/x": its folder is "/", not "").
 */
char	*util_dirname(const char *path);

void	*util_xmalloc(size_t);
void	*util_xcalloc(size_t, size_t);
char	*util_xstrdup(const char *);
int	 util_xasprintf(char **, const char *, ...)
	    __attribute__((format(printf, 2, 3)));

/*
 * The one way a function says why it failed through a `char **cause`
 * argument. When cause is NULL the caller does not want to know and
 * nothing happens. Otherwise *cause becomes a heap message (the caller
 * frees it); one set earlier is freed first, so *cause must be NULL or a
 * heap string (the last failure is the one reported). Exits when memory
 * runs out, like util_xasprintf: start-up and CLI paths only. Always
 * returns -1, so a failing function can `return util_cause(cause, ...)`.
 */
int	 util_cause(char **cause, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* The value of one hex digit (either case), or -1. */
int	 util_hexval(unsigned char c);

/* Lowercase hex of len bytes into out (2*len+1 bytes). */
void	 util_hex(const unsigned char *in, size_t len, char *out);

/* RFC 3339 UTC with microseconds: "2026-11-30T07:57:58.123456Z" (28 bytes). */
#define UTIL_TS_LEN	32
void	 util_rfc3339(const struct timespec *ts, char out[UTIL_TS_LEN]);

/*
 * Parse a duration ("90", "30s", "5m", "2h", "7d") into seconds.
 * Returns 0 or -1.
 */
int	 util_parse_duration(const char *s, long long *secs);

/*
 * Parse a size ("512", "64k", "256m", "2g", "2GiB") into bytes.
 * Returns 0 or -1.
 */
int	 util_parse_size(const char *s, unsigned long long *bytes);

/* The six template characters mkstemp(3) and mkdtemp(3) replace. */
#define UTIL_MKTEMP_SUFFIX	"XX" "XX" "XX"

/*
 * Copy untrusted text (a host, an SNI, a path, a method) for a terminal
 * or a control-socket reply: printable ASCII is kept, every other byte
 * and the backslash become the four characters \xNN. A result that does
 * not fit in size bytes is cut and ends in "..."; size must be at least
 * 8. NULL gives "-". Returns out.
 */
char	*util_escape(const char *s, char *out, size_t size);
/* 1 when s is printable ASCII only (safe for a terminal as it is). */
int	 util_printable(const char *s);
/*
 * s as it is when util_printable(), else util_escape()d: for text the
 * proxy built itself, which is printable already, so that its own
 * escapes are not escaped twice. Returns out.
 */
char	*util_safe(const char *s, char *out, size_t size);

/* Monotonic time in microseconds. */
uint64_t util_now_us(void);

/*
 * flock(2) fd as how (LOCK_SH or LOCK_EX). With until_us 0 and stop NULL
 * it blocks; otherwise it polls (LOCK_NB, naps of 0.5 to 10 ms) until the
 * lock is taken, until_us passes (util_now_us()'s clock; 0: no bound;
 * an until_us already past tries once) or stop (may be NULL) says to end.
 * 0, or -1 with errno ETIMEDOUT, EINTR (stop) or flock's own.
 */
int	 util_flock_wait(int fd, int how, uint64_t until_us, int (*stop)(void));

/*
 * Open a key or secret file for reading: a regular file (never through a
 * symlink) of at most max bytes; with secret, also owned by the
 * effective uid and closed to group and others. what names it in
 * messages ("key", "secret"). Returns the descriptor (O_CLOEXEC), or -1
 * with *cause set (caller frees).
 */
int	 util_open_private(const char *path, const char *what, long long max,
	    int secret, char **cause);

/*
 * The oldest OpenSSL error as text, the queue cleared; none when the
 * queue was empty. A static buffer: use it before the next call.
 */
const char *util_ssl_error(const char *none);

/* FNV-1a of a string, for hash tables (not for anything adversarial). */
uint32_t util_hash_str(const char *s);

/*
 * a + b for counts that must not wrap (attempts summed from untrusted
 * sources): saturates at LLONG_MAX and LLONG_MIN.
 */
long long util_add_sat(long long a, long long b);

#endif
