/* checkpoint.c: signed checkpoints and their keys; see checkpoint.h. */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "checkpoint.h"
#include "ckverify.h"
#include "eventlog.h"
#include "log.h"
#include "logverify.h"
#include "pemfile.h"
#include "sglimits.h"
#include "util.h"

#define CHECKPOINT_MSG_HEAD	"sandgate-checkpoint-v1\n"
#define CHECKPOINT_KEY_MAX	(16 * 1024)	/* a PEM key file */
#define CHECKPOINT_HEX		64
/*
 * Checkpoints written since the anchor was, at most, before the next
 * event waits for the anchor: verify looks the anchored one up among the
 * last CKVERIFY_RING good ones (ckverify.h).
 */
#define CHECKPOINT_UNANCHORED_MAX	(CKVERIFY_RING / 2)

struct checkpoint {
	struct eventlog		*log;
	EVP_PKEY		*key;
	char			 key_id[CHECKPOINT_KEY_B64 + 1];
	EVP_PKEY		*next;		/* being introduced */
	char			 next_id[CHECKPOINT_KEY_B64 + 1];
	char			*key_path;
	char			*next_path;
	char			*anchor_path;
	char			*anchor_tmp;	/* its next version */
	int			 anchor_fd;	/* anchor_tmp, room reserved */
	int			 anchor_failed;	/* the last try failed */
	int			 lock_fd;
	int			 held;		/* the log, eventlog_hold() */
	unsigned long long	 every_events;
	unsigned long long	 every_secs;
	unsigned long long	 since;		/* events since the last one */
	uint64_t		 last_us;	/* monotonic, the last one */
	const char		*reason;	/* of the line being made */
	int			 rotating;	/* the next line: reason rotate */
	/*
	 * This run asked for an "open" and has not signed it (it failed:
	 * the volume full):
	 * its first count or timer checkpoint is an open, the tick writes
	 * one as soon as it can, and a close writes one first. So a run
	 * always starts with an open, which verify's restart notes need.
	 */
	int			 open_due;
	int			 writing;	/* in checkpoint_write() */
	/* The anchor as read at start; the log's end then, if it differs. */
	int			 have_anchor;
	struct checkpoint_anchor anchor;
	struct checkpoint_anchor read;	/* anchor, untouched */
	long long		 start_seq;	/* the log's seq then */
	int			 resume_due;
	long long		 found_seq;
	char			 found_hash[CHECKPOINT_HEX + 1];
	/* The checkpoint being made, then the last one written. */
	struct checkpoint_anchor making;
	struct checkpoint_anchor last;
	int			 anchor_dirty;	/* last is newer than the file */
	unsigned		 unanchored;	/* checkpoints since it was */
	/*
	 * The anchor file names a close without reopened=1 and the log ends
	 * with that close: the next line first reopens it (checkpoint_put).
	 */
	int			 at_close;
	unsigned long long	 anchor_lost;	/* the outage the file names */
	char			 error[256];
};

static const char *const checkpoint_reasons[] = {
	"open", "count", "timer", "key", "rotate", "close", NULL
};

static int	checkpoint_due(void *);
static json_t	*checkpoint_fields(void *, long long, const char *,
		    const char *);
static int	checkpoint_before(void *);
static int	checkpoint_write_one(struct checkpoint *, const char *);
static void	checkpoint_written(void *, long long, const char *);
static void	checkpoint_rotated(void *);
static int	checkpoint_put(void *);
static void	checkpoint_crash_point(const char *, const char *);
static void	checkpoint_free_reopened(struct checkpoint *);
static int	checkpoint_anchor_field(const char **, const char *, char *,
		    size_t);
static int	checkpoint_printable(const char *);
static int	checkpoint_anchor_reopened(const char **,
		    struct checkpoint_anchor *, const char **);
static int	checkpoint_anchor_files(char *, struct checkpoint_anchor *);
static int	checkpoint_anchor_tail_ok(const struct checkpoint_anchor *);
static int	checkpoint_anchor_outage(const char *,
		    struct checkpoint_anchor *);
static int	checkpoint_anchor_format(const struct checkpoint_anchor *,
		    char *, size_t);
static int	checkpoint_anchor_put(struct checkpoint *, const char *, int);
static int	checkpoint_anchor_swap(struct checkpoint *, const char *, int);
static void	checkpoint_anchor_room(int);
static int	checkpoint_anchor_inplace(struct checkpoint *, const char *,
		    int);
static int	checkpoint_anchor_reserve(struct checkpoint *);
static void	checkpoint_anchor_unreserve(struct checkpoint *);
static void	checkpoint_anchor_sweep(struct checkpoint *);
static int	checkpoint_anchor_write(struct checkpoint *);
static int	checkpoint_anchor_update(struct checkpoint *, int);
static int	checkpoint_start(struct checkpoint *, char **);
static void	checkpoint_start_tail(struct checkpoint *);
static void	checkpoint_start_unanchored(struct checkpoint *);
static int	checkpoint_resolve(const char *, char *);
static int	checkpoint_sign(EVP_PKEY *, const char *, size_t, char *);
static EVP_PKEY	*checkpoint_read_key(const char *, int, char **);
static int	checkpoint_pem_private(FILE *, void *);
static int	checkpoint_pem_public(FILE *, void *);
static int	checkpoint_introduce(struct checkpoint *);
static int	checkpoint_fail(struct checkpoint *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));

size_t
checkpoint_message(const struct checkpoint_fields *f, char *buf,
    size_t size)
{
	int	n, m;

	n = snprintf(buf, size, CHECKPOINT_MSG_HEAD "seq=%lld\nts=%s\n"
	    "prev=%s\nreason=%s\nkey=%s\nnext_key=%s\nevery_events=%llu\n"
	    "every_secs=%llu\n", f->seq, f->ts, f->prev, f->reason, f->key,
	    f->next_key ? f->next_key : "", f->every_events, f->every_secs);
	if (n < 0 || (size_t)n >= size)
		return 0;
	if (f->torn == 0)
		return (size_t)n;
	m = snprintf(buf + n, size - (size_t)n, "torn=%llu\ntorn_hash=%s\n",
	    f->torn, f->torn_hash);
	if (m < 0 || (size_t)m >= size - (size_t)n)
		return 0;
	return (size_t)(n + m);
}

int
checkpoint_reason_valid(const char *s)
{
	size_t	i;

	for (i = 0; checkpoint_reasons[i] != NULL; i++)
		if (strcmp(s, checkpoint_reasons[i]) == 0)
			return 1;
	return 0;
}

/*
 * One member name=value of an anchor line at *p, up to the next space or
 * the end, into out (size bytes); *p moves past it. 0, or -1.
 */
static int
checkpoint_anchor_field(const char **p, const char *name, char *out,
    size_t size)
{
	size_t		 n = strlen(name), len;
	const char	*v, *sp;

	if (strncmp(*p, name, n) != 0 || (*p)[n] != '=')
		return -1;
	v = *p + n + 1;
	sp = strchr(v, ' ');
	len = sp != NULL ? (size_t)(sp - v) : strlen(v);
	if (len == 0 || len >= size)
		return -1;
	memcpy(out, v, len);
	out[len] = '\0';
	*p = sp != NULL ? sp + 1 : v + len;
	return 0;
}

/* 1 if s holds only printable ASCII. */
static int
checkpoint_printable(const char *s)
{
	for (; *s != '\0'; s++)
		if (*s < 0x20 || *s > 0x7e)
			return 0;
	return 1;
}

/*
 * The anchor's outage at p, the rest of the line: lost=L [events=E]
 * since=TS cause=TEXT (TEXT to the end; E: the attempts the L lines
 * held, L when not said). 0, or -1.
 */
static int
checkpoint_anchor_outage(const char *p, struct checkpoint_anchor *a)
{
	char		 lost[24], events[24] = "";
	const char	*errstr;
	long long	 n, e = 0;

	if (checkpoint_anchor_field(&p, "lost", lost, sizeof(lost)) == -1 ||
	    (strncmp(p, "events=", 7) == 0 && (checkpoint_anchor_field(&p,
	    "events", events, sizeof(events)) == -1 ||
	    util_strtonum(events, 1, LLONG_MAX, &e, &errstr) == -1)) ||
	    checkpoint_anchor_field(&p, "since", a->since,
	    sizeof(a->since)) == -1 || strncmp(p, "cause=", 6) != 0 ||
	    p[6] == '\0' || strlen(p + 6) > CHECKPOINT_CAUSE_MAX ||
	    !checkpoint_printable(p + 6) ||
	    util_strtonum(lost, 1, LLONG_MAX, &n, &errstr) == -1)
		return -1;
	a->lost = (unsigned long long)n;
	a->lost_events = (unsigned long long)(e > n ? e : n);
	util_strlcpy(a->cause, p + 6, sizeof(a->cause));
	return 0;
}

/*
 * An anchor member name=N:HASH at *p (N from 1, HASH 64 lowercase hex)
 * into *n and hash (CHECKPOINT_HEX + 1 bytes). 0, or -1.
 */
static int
checkpoint_anchor_pair(const char **p, const char *name, long long *n,
    char *hash)
{
	char		 v[CHECKPOINT_HEX + 24], *colon;
	const char	*errstr;

	if (checkpoint_anchor_field(p, name, v, sizeof(v)) == -1 ||
	    (colon = strchr(v, ':')) == NULL ||
	    strlen(colon + 1) != CHECKPOINT_HEX ||
	    !logverify_is_hex(colon + 1, CHECKPOINT_HEX))
		return -1;
	*colon = '\0';
	if (util_strtonum(v, 1, LLONG_MAX, n, &errstr) == -1)
		return -1;
	memcpy(hash, colon + 1, CHECKPOINT_HEX + 1);
	return 0;
}

/*
 * The anchor's optional reopened=1 at *p into a, then its optional
 * tail=SEQ:HASH, then its torn=N:HASH (the torn lines its writer left
 * after the tail, atk20r20 F5; torn=0 and 64 zeros for none, atk20r22 F1;
 * absent only in an older writer's anchor). 0, or -1 with *what set.
 */
static int
checkpoint_anchor_reopened(const char **p, struct checkpoint_anchor *a,
    const char **what)
{
	char		 v[2], none[CHECKPOINT_HEX + 8];
	const char	*q;
	long long	 n;

	if (strncmp(*p, "reopened=", 9) != 0)
		return 0;
	*what = "reopened is not 1";
	if (checkpoint_anchor_field(p, "reopened", v, sizeof(v)) == -1 ||
	    strcmp(v, "1") != 0)
		return -1;
	a->reopened = 1;
	if (strncmp(*p, "tail=", 5) != 0)
		return 0;
	*what = "tail is not a seq, a colon and 64 lowercase hex digits";
	if (checkpoint_anchor_pair(p, "tail", &a->tail_seq, a->tail_hash) == -1)
		return -1;
	if (strncmp(*p, "torn=", 5) != 0)
		return 0;
	*what = "torn is not a count, a colon and 64 lowercase hex digits";
	a->have_torn = 1;
	q = *p;
	if (checkpoint_anchor_field(&q, "torn", none, sizeof(none)) == 0 &&
	    strcmp(none, &CHECKPOINT_TORN_NONE[5]) == 0) {
		*p = q;
		return 0;
	}
	if (checkpoint_anchor_pair(p, "torn", &n, a->torn_hash) == -1)
		return -1;
	a->torn = (unsigned long long)n;
	return 0;
}

/*
 * tail= after the close, or at the close itself (the writer left only a
 * torn line after it) naming the close's hash. 1 if so or none.
 */
static int
checkpoint_anchor_tail_ok(const struct checkpoint_anchor *a)
{
	if (a->tail_seq == 0 || a->tail_seq > a->seq)
		return 1;
	return a->tail_seq == a->seq && strcmp(a->tail_hash, a->hash) == 0;
}

/* The anchor's files=N:D value (files, edited) into a. 0, or -1. */
static int
checkpoint_anchor_files(char *files, struct checkpoint_anchor *a)
{
	char		*colon;
	const char	*errstr;
	long long	 n;

	if ((colon = strchr(files, ':')) == NULL ||
	    strlen(colon + 1) != CHECKPOINT_HEX ||
	    !logverify_is_hex(colon + 1, CHECKPOINT_HEX))
		return -1;
	*colon = '\0';
	if (util_strtonum(files, 0, SG_LOG_ROTATED_MAX, &n, &errstr) == -1)
		return -1;
	a->files = (unsigned)n;
	memcpy(a->files_hash, colon + 1, sizeof(a->files_hash));
	a->have_files = 1;
	return 0;
}

int
checkpoint_anchor_parse(const char *buf, size_t len,
    struct checkpoint_anchor *a, const char **what)
{
	char		 line[CHECKPOINT_ANCHOR_MAX + 1], seq[24], first[24];
	char		 files[CHECKPOINT_HEX + 16];
	unsigned char	 raw[CHECKPOINT_KEY_RAW];
	const char	*p = line, *errstr;
	long long	 n;
	int64_t		 us;

	memset(a, 0, sizeof(*a));
	first[0] = '\0';
	files[0] = '\0';
	*what = "not a sandgate anchor line";
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len == 0 || len > CHECKPOINT_ANCHOR_MAX ||
	    memchr(buf, '\n', len) != NULL || memchr(buf, '\0', len) != NULL)
		return -1;
	memcpy(line, buf, len);
	line[len] = '\0';
	if (strncmp(p, CHECKPOINT_ANCHOR_HEAD " ",
	    sizeof(CHECKPOINT_ANCHOR_HEAD)) != 0)
		return -1;
	p += sizeof(CHECKPOINT_ANCHOR_HEAD);
	*what = "members missing, added or out of order";
	if (line[len - 1] == ' ' ||
	    checkpoint_anchor_field(&p, "seq", seq, sizeof(seq)) == -1 ||
	    checkpoint_anchor_field(&p, "hash", a->hash, sizeof(a->hash)) ==
	    -1 || checkpoint_anchor_field(&p, "reason", a->reason,
	    sizeof(a->reason)) == -1 ||
	    checkpoint_anchor_field(&p, "ts", a->ts, sizeof(a->ts)) == -1 ||
	    checkpoint_anchor_field(&p, "key", a->key, sizeof(a->key)) == -1)
		return -1;
	if (checkpoint_anchor_reopened(&p, a, what) == -1)
		return -1;
	*what = "members missing, added or out of order";
	if ((strncmp(p, "first=", 6) == 0 && checkpoint_anchor_field(&p,
	    "first", first, sizeof(first)) == -1) ||
	    (first[0] != '\0' && strncmp(p, "files=", 6) == 0 &&
	    checkpoint_anchor_field(&p, "files", files, sizeof(files)) ==
	    -1) || (*p != '\0' && checkpoint_anchor_outage(p, a) == -1))
		return -1;
	*what = "the outage (lost, since, cause) is malformed";
	if (a->lost > 0 && ckverify_parse_ts(a->since, &us) == -1)
		return -1;
	*what = "first is not a count";
	if (first[0] != '\0' && util_strtonum(first, 1, SG_LOG_SEQ_MAX,
	    &a->first, &errstr) == -1)
		return -1;
	*what = "files is not a count, a colon and 64 lowercase hex digits";
	if (files[0] != '\0' && checkpoint_anchor_files(files, a) == -1)
		return -1;
	*what = "seq is not a count (0 only for an outage, without first)";
	if (util_strtonum(seq, 0, LLONG_MAX, &n, &errstr) == -1 ||
	    (n == 0 && (a->lost == 0 || first[0] != '\0')))
		return -1;
	a->seq = n;
	*what = "hash is not 64 lowercase hex digits";
	if (strlen(a->hash) != CHECKPOINT_HEX ||
	    !logverify_is_hex(a->hash, CHECKPOINT_HEX))
		return -1;
	*what = "unknown reason";
	if (!checkpoint_reason_valid(a->reason))
		return -1;
	*what = "reopened=1 but the reason is not close";
	if (a->reopened && strcmp(a->reason, "close") != 0)
		return -1;
	*what = "tail is before the close, or at it with another hash";
	if (!checkpoint_anchor_tail_ok(a))
		return -1;
	*what = "ts is not a time as the writer writes it";
	if (ckverify_parse_ts(a->ts, &us) == -1)
		return -1;
	*what = "key is not a base64 Ed25519 public key";
	if (checkpoint_b64_decode(a->key, raw, sizeof(raw)) == -1)
		return -1;
	*what = NULL;
	return 0;
}

int
checkpoint_anchor_read(const char *path, struct checkpoint_anchor *a,
    char **cause)
{
	char		 buf[CHECKPOINT_ANCHOR_MAX + 1];
	const char	*what;
	struct stat	 st;
	ssize_t		 n;
	int		 fd;

	fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (fd == -1 && errno == ENOENT)
		return 0;
	if (fd == -1) {
		util_xasprintf(cause, "cannot open the anchor \"%s\": %s", path,
		    errno == ELOOP ? "a symlink" : strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > CHECKPOINT_ANCHOR_MAX) {
		util_xasprintf(cause, "the anchor \"%s\" is not a regular file "
		    "of at most %d bytes", path, CHECKPOINT_ANCHOR_MAX);
		close(fd);
		return -1;
	}
	n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n < 0) {
		util_xasprintf(cause, "cannot read the anchor \"%s\": %s",
		    path, strerror(errno));
		return -1;
	}
	if (checkpoint_anchor_parse(buf, (size_t)n, a, &what) == -1) {
		util_xasprintf(cause, "the anchor \"%s\" is malformed: %s", path,
		    what);
		return -1;
	}
	return 1;
}

int
checkpoint_b64_decode(const char *s, unsigned char *raw, size_t rawlen)
{
	unsigned char	buf[CHECKPOINT_SIG_RAW + 3];
	char		back[CHECKPOINT_SIG_B64 + 1];
	size_t		want = 4 * ((rawlen + 2) / 3), len = strlen(s);

	if (rawlen > CHECKPOINT_SIG_RAW || len != want)
		return -1;
	if (EVP_DecodeBlock(buf, (const unsigned char *)s, (int)len) < 0)
		return -1;
	/* Only the one canonical encoding: encode back and compare. */
	EVP_EncodeBlock((unsigned char *)back, buf, (int)rawlen);
	if (strcmp(back, s) != 0)
		return -1;
	memcpy(raw, buf, rawlen);
	return 0;
}

int
checkpoint_key_id(EVP_PKEY *pkey, char *id)
{
	unsigned char	raw[CHECKPOINT_KEY_RAW];
	size_t		len = sizeof(raw);

	if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519 ||
	    EVP_PKEY_get_raw_public_key(pkey, raw, &len) != 1 ||
	    len != sizeof(raw))
		return -1;
	EVP_EncodeBlock((unsigned char *)id, raw, (int)len);
	return 0;
}

EVP_PKEY *
checkpoint_key_from_id(const char *id)
{
	unsigned char	raw[CHECKPOINT_KEY_RAW];

	if (checkpoint_b64_decode(id, raw, sizeof(raw)) == -1)
		return NULL;
	return EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw,
	    sizeof(raw));
}

/*
 * The private key last read, with the bytes of its file: a key file read
 * again with the same bytes at the same path is the same key, taken
 * without parsing the PEM again. The first parse in a process also loads
 * OpenSSL's providers, about 1.7 ms that a run record waited for after
 * its command ended: checkpoint_key_warm reads the key while the command
 * starts, and the record's load, under the key's lock, checks the bytes.
 */
static struct {
	char		*path;
	unsigned char	*bytes;
	size_t		 len;
	EVP_PKEY	*key;
} checkpoint_cache;

static void
checkpoint_cache_drop(void)
{
	free(checkpoint_cache.path);
	if (checkpoint_cache.bytes != NULL)
		OPENSSL_cleanse(checkpoint_cache.bytes, checkpoint_cache.len);
	free(checkpoint_cache.bytes);
	EVP_PKEY_free(checkpoint_cache.key);
	memset(&checkpoint_cache, 0, sizeof(checkpoint_cache));
}

/*
 * Read a key file whole: a regular file (no symlink) of at most
 * CHECKPOINT_KEY_MAX bytes; a private key (secret) must also be ours and
 * closed to group and others. Its bytes in buf, their count in *len.
 */
static int
checkpoint_key_bytes(const char *path, int secret, unsigned char *buf,
    size_t *len, char **cause)
{
	ssize_t	n;
	int	fd;

	if ((fd = util_open_private(path, "key", CHECKPOINT_KEY_MAX, secret,
	    cause)) == -1)
		return -1;
	*len = 0;
	/* one byte past the limit: a file grown since its fstat */
	while (*len <= CHECKPOINT_KEY_MAX && (n = read(fd, buf + *len,
	    CHECKPOINT_KEY_MAX + 1 - *len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			util_xasprintf(cause, "cannot read key \"%s\": %s",
			    path, strerror(errno));
			close(fd);
			return -1;
		}
		*len += (size_t)n;
	}
	close(fd);
	if (*len > CHECKPOINT_KEY_MAX) {
		util_xasprintf(cause, "key \"%s\" is not a regular file of at "
		    "most %d bytes", path, CHECKPOINT_KEY_MAX);
		return -1;
	}
	return 0;
}

/*
 * pem_password_cb: no passphrase. OpenSSL's default asks for one on the
 * terminal or stdin, and the key is read while a command starts (atk39p
 * F1: the exec's time ran out waiting for it); an encrypted key fails.
 */
static int
checkpoint_no_pass(char *buf, int size, int rwflag, void *arg)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)arg;
	return -1;
}

/*
 * Read an Ed25519 key from a PEM file: the private key (secret), or the
 * public key, taken from a private key file too. NULL with *cause.
 */
static EVP_PKEY *
checkpoint_read_key(const char *path, int secret, char **cause)
{
	const char	*what = secret ? "key" : "public key";
	unsigned char	 buf[CHECKPOINT_KEY_MAX + 1];
	EVP_PKEY	*pkey = NULL;
	BIO		*b;
	size_t		 len;

	if (checkpoint_key_bytes(path, secret, buf, &len, cause) == -1)
		return NULL;
	if (secret && checkpoint_cache.key != NULL &&
	    strcmp(checkpoint_cache.path, path) == 0 &&
	    checkpoint_cache.len == len &&
	    memcmp(checkpoint_cache.bytes, buf, len) == 0) {
		OPENSSL_cleanse(buf, len);
		if (EVP_PKEY_up_ref(checkpoint_cache.key) == 1)
			return checkpoint_cache.key;
		util_xasprintf(cause, "out of memory");
		return NULL;
	}
	if ((b = BIO_new_mem_buf(buf, (int)len)) == NULL) {
		OPENSSL_cleanse(buf, len);
		util_xasprintf(cause, "out of memory");
		return NULL;
	}
	if (!secret && (pkey = PEM_read_bio_PUBKEY(b, NULL, NULL, NULL)) ==
	    NULL) {
		ERR_clear_error();
		(void)BIO_reset(b);
	}
	if (pkey == NULL)
		pkey = PEM_read_bio_PrivateKey(b, NULL, checkpoint_no_pass,
		    NULL);
	BIO_free(b);
	if (pkey == NULL) {
		util_xasprintf(cause, "%s \"%s\": %s", what, path,
		    memmem(buf, len, "ENCRYPTED", 9) != NULL ?
		    "encrypted (sandgate asks no passphrase: keep the key "
		    "unencrypted, readable by its writer alone)" :
		    util_ssl_error("not a key in PEM form"));
		ERR_clear_error();
		OPENSSL_cleanse(buf, len);
		return NULL;
	}
	if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
		OPENSSL_cleanse(buf, len);
		util_xasprintf(cause, "%s \"%s\" is not an Ed25519 key", what,
		    path);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	if (secret) {
		checkpoint_cache_drop();
		if ((checkpoint_cache.bytes = malloc(len > 0 ? len : 1)) !=
		    NULL && (checkpoint_cache.path = strdup(path)) != NULL &&
		    EVP_PKEY_up_ref(pkey) == 1) {
			memcpy(checkpoint_cache.bytes, buf, len);
			checkpoint_cache.len = len;
			checkpoint_cache.key = pkey;
		} else
			checkpoint_cache_drop();
	}
	OPENSSL_cleanse(buf, len);
	return pkey;
}

void
checkpoint_key_warm(const char *path)
{
	EVP_PKEY	*k;
	char		*cause = NULL;

	if ((k = checkpoint_key_load(path, &cause)) == NULL)
		free(cause);		/* said by the load that counts */
	EVP_PKEY_free(k);
}

EVP_PKEY *
checkpoint_key_load(const char *path, char **cause)
{
	return checkpoint_read_key(path, 1, cause);
}

EVP_PKEY *
checkpoint_pubkey_load(const char *path, char **cause)
{
	return checkpoint_read_key(path, 0, cause);
}

/* pemfile_writer: the private part of an Ed25519 key. */
static int
checkpoint_pem_private(FILE *f, void *pkey)
{
	return PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL, NULL);
}

/* pemfile_writer: its public part. */
static int
checkpoint_pem_public(FILE *f, void *pkey)
{
	return PEM_write_PUBKEY(f, pkey);
}

int
checkpoint_key_create_at(int dirfd, const char *name, const char *path,
    uid_t uid, gid_t gid, char **cause)
{
	EVP_PKEY	*pkey;
	char		*pub, *pubpath;
	int		 rc;

	if ((pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL) {
		util_xasprintf(cause, "cannot make an Ed25519 key: %s",
		    util_ssl_error("not a key in PEM form"));
		return -1;
	}
	rc = pemfile_create(dirfd, name, path, 1, uid, gid,
	    checkpoint_pem_private, pkey, cause);
	if (rc == 0) {
		util_xasprintf(&pub, "%s.pub", name);
		util_xasprintf(&pubpath, "%s.pub", path);
		(void)unlinkat(dirfd, pub, 0);	/* an old key's public half */
		if (pemfile_create(dirfd, pub, pubpath, 0, uid, gid,
		    checkpoint_pem_public, pkey, cause) != 0)
			rc = -1;
		free(pub);
		free(pubpath);
	}
	EVP_PKEY_free(pkey);
	return rc;
}

int
checkpoint_key_create(const char *path, uid_t uid, gid_t gid, char **cause)
{
	char	*dcopy = util_xstrdup(path), *bcopy = util_xstrdup(path);
	int	 dirfd, rc = -1;

	dirfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (dirfd == -1) {
		util_xasprintf(cause, "cannot open the folder of \"%s\": %s",
		    path, errno == ELOOP || errno == ENOTDIR ?
		    "not a folder (a symlink?)" : strerror(errno));
		goto out;
	}
	rc = checkpoint_key_create_at(dirfd, basename(bcopy), path, uid, gid,
	    cause);
	close(dirfd);
out:
	free(dcopy);
	free(bcopy);
	return rc;
}

/*
 * path with symlinks resolved, for a path that may not exist yet: the
 * deepest folder that exists, resolved, then the components still to be
 * made (which, not existing, hold no symlink). 0, or -1.
 */
static int
checkpoint_resolve(const char *path, char *out)
{
	char	 rest[PATH_MAX] = "", tmp[2 * PATH_MAX + 2], *copy, *up;
	char	*tail;
	int	 rc = -1;

	copy = util_xstrdup(path);
	up = copy;
	while (realpath(up, out) == NULL && strcmp(up, "/") != 0 &&
	    strcmp(up, ".") != 0) {
		tail = strrchr(up, '/');
		if ((size_t)snprintf(tmp, sizeof(tmp), "/%s%s", tail ? tail +
		    1 : up, rest) >= sizeof(rest))
			goto out;
		util_strlcpy(rest, tmp, sizeof(rest));
		if (tail == NULL)
			up = ".";
		else if (tail == up)
			up = "/";
		else
			*tail = '\0';
	}
	if (realpath(up, out) == NULL)
		goto out;
	if (rest[0] != '\0' && strcmp(out, "/") == 0)
		out[0] = '\0';
	if (util_strlcpy(out + strlen(out), rest, PATH_MAX - strlen(out)) <
	    PATH_MAX - strlen(out))
		rc = 0;
out:
	free(copy);
	return rc;
}

int
checkpoint_key_outside(const char *keypath, const char *logdir,
    char **cause)
{
	char	 dir[PATH_MAX], log[PATH_MAX], *copy;
	size_t	 n;
	int	 ok;

	copy = util_xstrdup(keypath);
	ok = checkpoint_resolve(dirname(copy), dir) == 0 &&
	    checkpoint_resolve(logdir, log) == 0;
	free(copy);
	if (!ok) {
		util_xasprintf(cause, "cannot tell whether the key "
		    "\"%s\" is in the log folder \"%s\"", keypath, logdir);
		return -1;
	}
	n = strlen(log);
	if (strncmp(dir, log, n) == 0 && (dir[n] == '\0' || dir[n] == '/' ||
	    strcmp(log, "/") == 0)) {
		util_xasprintf(cause, "the key \"%s\" is in the log "
		    "folder \"%s\": whoever can write the log could read it; "
		    "keep it elsewhere", keypath, logdir);
		return -1;
	}
	return 0;
}

/* Record why the last operation failed; returns -1. */
static int
checkpoint_fail(struct checkpoint *ck, const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(ck->error, sizeof(ck->error), fmt, ap);
	va_end(ap);
	return -1;
}

int
checkpoint_ed25519_sign(EVP_PKEY *key, const void *msg, size_t len,
    unsigned char *sig)
{
	size_t		 siglen = CHECKPOINT_SIG_RAW;
	EVP_MD_CTX	*ctx;
	int		 ok;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestSign(ctx, sig, &siglen, msg, len) == 1 &&
	    siglen == CHECKPOINT_SIG_RAW;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		ERR_clear_error();
	return ok ? 0 : -1;
}

int
checkpoint_ed25519_verify(EVP_PKEY *key, const void *msg, size_t len,
    const unsigned char *sig)
{
	EVP_MD_CTX	*ctx;
	int		 ok;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return 0;
	ok = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestVerify(ctx, sig, CHECKPOINT_SIG_RAW, msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
}

/* Ed25519 signature of msg as base64 into out[89]; 0 or -1. */
static int
checkpoint_sign(EVP_PKEY *key, const char *msg, size_t len, char *out)
{
	unsigned char	 sig[CHECKPOINT_SIG_RAW];

	if (checkpoint_ed25519_sign(key, msg, len, sig) == -1)
		return -1;
	EVP_EncodeBlock((unsigned char *)out, sig, (int)sizeof(sig));
	return 0;
}

/* The log's hook: one more event; is a count checkpoint due? */
static int
checkpoint_due(void *arg)
{
	struct checkpoint	*ck = arg;

	ck->since++;
	return ck->every_events > 0 && ck->since >= ck->every_events;
}

/* The members of the checkpoint line of f, signed sig. NULL: ENOMEM. */
static json_t *
checkpoint_line(const struct checkpoint_fields *f, const char *sig)
{
	json_t	*obj;

	obj = json_pack("{s:s, s:s, s:s, s:s?, s:I, s:I, s:s}", "event",
	    CHECKPOINT_EVENT, "reason", f->reason, "key", f->key, "next_key",
	    f->next_key, "every_events", (json_int_t)f->every_events,
	    "every_secs", (json_int_t)f->every_secs, "sig", sig);
	if (obj == NULL || f->torn == 0)
		return obj;
	if (json_object_set_new(obj, "torn", json_integer(
	    (json_int_t)f->torn)) == -1 || json_object_set_new(obj,
	    "torn_hash", json_string(f->torn_hash)) == -1) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

/*
 * The log's hook: the checkpoint line for this seq, ts and prev. None
 * but a file's first (rotate) line while a log.resume line is due: no
 * signature covers what the writer found before that line records it.
 */
static json_t *
checkpoint_fields(void *arg, long long seq, const char *ts,
    const char *prev)
{
	struct checkpoint	*ck = arg;
	struct checkpoint_fields f;
	char			 msg[CHECKPOINT_MSG_MAX];
	char			 sig[CHECKPOINT_SIG_B64 + 1];
	size_t			 len;

	memset(&f, 0, sizeof(f));
	f.seq = seq;
	f.ts = ts;
	f.prev = prev;
	f.reason = ck->rotating ? "rotate" : ck->reason != NULL ? ck->reason :
	    "count";
	if (ck->open_due && (strcmp(f.reason, "count") == 0 ||
	    strcmp(f.reason, "timer") == 0))
		f.reason = "open";
	ck->rotating = 0;
	f.key = ck->key_id;
	f.next_key = ck->next != NULL && strcmp(f.reason, "key") == 0 ?
	    ck->next_id : NULL;
	f.every_events = ck->every_events;
	f.every_secs = ck->every_secs;
	if (strcmp(f.reason, "rotate") == 0)	/* atk20r22 F4 */
		f.torn = eventlog_torn_left(ck->log, &f.torn_hash);
	if (ck->resume_due && strcmp(f.reason, "rotate") != 0) {
		checkpoint_fail(ck, "not signing before the log.resume line");
		return NULL;
	}
	if ((len = checkpoint_message(&f, msg, sizeof(msg))) == 0 ||
	    checkpoint_sign(ck->key, msg, len, sig) == -1) {
		checkpoint_fail(ck, "cannot sign a checkpoint");
		return NULL;
	}
	ck->since = 0;
	ck->last_us = util_now_us();
	ck->making.seq = seq;
	util_strlcpy(ck->making.reason, f.reason, sizeof(ck->making.reason));
	util_strlcpy(ck->making.ts, ts, sizeof(ck->making.ts));
	util_strlcpy(ck->making.key, ck->key_id, sizeof(ck->making.key));
	return checkpoint_line(&f, sig);
}

/*
 * The log's hook, before an event: an open still due is written first,
 * else the event is not (counted lost), so no event of a run precedes
 * its open and the anchor names the run before anything of it can be
 * cut. Its own log.resume line is not asked again (eventlog.h).
 */
static int
checkpoint_before(void *arg)
{
	struct checkpoint	*ck = arg;

	/* A burst of checkpoints: anchored now, not at the next tick. */
	if (ck->unanchored >= CHECKPOINT_UNANCHORED_MAX && !ck->writing &&
	    checkpoint_anchor_update(ck, 1) == -1)
		log_warnx("checkpoint: %s", ck->error);
	if (!ck->open_due || ck->writing)
		return 0;
	return checkpoint_write(ck, "open");
}

/* The log's hook: a checkpoint is in the file; the anchor is behind. */
static void
checkpoint_written(void *arg, long long seq, const char *hash)
{
	struct checkpoint	*ck = arg;

	if (seq != ck->making.seq)
		return;
	ck->last = ck->making;
	util_strlcpy(ck->last.hash, hash, sizeof(ck->last.hash));
	if (strcmp(ck->making.reason, "open") == 0)
		ck->open_due = 0;
	ck->anchor_dirty = 1;
	ck->unanchored++;
}

/* The log's hook: the next line starts a file; sign it as rotate. */
static void
checkpoint_rotated(void *arg)
{
	struct checkpoint	*ck = arg;

	ck->rotating = 1;
}

/*
 * The log's hook, before any line goes in: a line after the close the
 * anchor names first reopens the anchor (checkpoint.h), and the room for
 * the next one is taken again, so the checkpoint this line may be is
 * still one the anchor can name. -1 refuses the line.
 */
static int
checkpoint_put(void *arg)
{
	struct checkpoint	*ck = arg;
	struct checkpoint_anchor was = ck->last;
	int			 saved;

	if (!ck->at_close)
		return 0;
	ck->last.reopened = 1;
	ck->last.tail_seq = 0;		/* this writer goes on past it */
	ck->last.torn = 0;
	/* Room first: an anchor rewritten in place does not take the line. */
	if (checkpoint_anchor_reserve(ck) == 0 &&
	    checkpoint_anchor_write(ck) == 0 &&
	    checkpoint_anchor_reserve(ck) == 0)
		return 0;
	saved = errno != 0 ? errno : EIO;
	/* Refused: the close is the end again (checkpoint_free writes it). */
	ck->last = was;
	ck->at_close = 1;
	log_warnx("checkpoint: not writing past the close at seq %lld: %s",
	    ck->last.seq, ck->error);
	errno = saved;
	return -1;
}

/*
 * For tests: SANDGATE_TEST_CRASH=WHERE:WHAT kills the writer there, as
 * SIGKILL or a power loss would: anchor:R before the anchor naming a
 * checkpoint of reason R (anchor:reopened, its reopening) is written,
 * key:written once a key hand-over's line is in the log.
 */
static void
checkpoint_crash_point(const char *where, const char *what)
{
	const char	*want = getenv("SANDGATE_TEST_CRASH");
	size_t		 n = strlen(where);

	if (want != NULL && strncmp(want, where, n) == 0 && want[n] == ':' &&
	    strcmp(want + n + 1, what) == 0)
		raise(SIGKILL);
}

/*
 * Take the room of the anchor's next version before a checkpoint it must
 * name is written: key_path.anchor.PID.tmp, CHECKPOINT_ANCHOR_MAX bytes,
 * synced. The anchor is then rewritten in room already held, so a volume
 * that fills up meanwhile cannot leave a checkpoint in the log, a close
 * above all, that the anchor does not name. 0, or -1 with the error set.
 */
static int
checkpoint_anchor_reserve(struct checkpoint *ck)
{
	char	pad[CHECKPOINT_ANCHOR_MAX];
	int	fd, saved;

	if (ck->anchor_fd != -1)
		return 0;
	ck->anchor_failed = 1;
	(void)unlink(ck->anchor_tmp);
	fd = open(ck->anchor_tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, 0600);
	if (fd == -1)
		return checkpoint_fail(ck, "cannot create \"%s\": %s",
		    ck->anchor_tmp, strerror(errno));
	/*
	 * fallocate gives the blocks at once, without writing or syncing
	 * them; where the file system has no fallocate, written and synced.
	 */
	if (fallocate(fd, 0, 0, sizeof(pad)) == 0)
		saved = 0;
	else if (errno != EOPNOTSUPP && errno != ENOSYS)
		saved = errno;
	else {
		memset(pad, '\n', sizeof(pad));
		errno = 0;
		saved = write(fd, pad, sizeof(pad)) != (ssize_t)sizeof(pad) ||
		    fsync(fd) == -1 ? (errno ? errno : ENOSPC) : 0;
	}
	if (saved != 0) {
		close(fd);
		(void)unlink(ck->anchor_tmp);
		return checkpoint_fail(ck, "cannot write the anchor \"%s\": %s",
		    ck->anchor_tmp, strerror(saved));
	}
	ck->anchor_fd = fd;
	ck->anchor_failed = 0;
	return 0;
}

/*
 * The only writer of the anchor now (it holds the log or the key alone):
 * the reservations of writers killed before they gave theirs back,
 * key_path.anchor.PID.tmp (and .anchor.tmp of older versions), go.
 */
static void
checkpoint_anchor_sweep(struct checkpoint *ck)
{
	char		*dir, *base, *slash, *path;
	const char	*rest;
	DIR		*d;
	struct dirent	*de;

	dir = util_xstrdup(ck->anchor_path);
	if ((slash = strrchr(dir, '/')) != NULL) {
		*slash = '\0';
		base = slash + 1;
	} else
		base = dir;
	if ((d = opendir(slash == NULL ? "." : *dir ? dir : "/")) == NULL) {
		free(dir);
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, base, strlen(base)) != 0)
			continue;
		rest = de->d_name + strlen(base);
		if (*rest == '.' && rest[1] >= '0' && rest[1] <= '9')
			rest += 1 + strspn(rest + 1, "0123456789");
		if (strcmp(rest, ".tmp") != 0)
			continue;
		util_xasprintf(&path, "%s/%s", slash == NULL ? "." : dir,
		    de->d_name);
		(void)unlink(path);
		free(path);
	}
	closedir(d);
	free(dir);
}

/* Give the reserved room back (the writer is done). */
static void
checkpoint_anchor_unreserve(struct checkpoint *ck)
{
	if (ck->anchor_fd == -1)
		return;
	close(ck->anchor_fd);
	ck->anchor_fd = -1;
	(void)unlink(ck->anchor_tmp);
}

/*
 * The anchor line for a into line: its outage last,
 * " lost=L since=TS cause=TEXT" (TEXT: printable ASCII, so that it
 * stays valid UTF-8 for the log.outage line, cut to
 * CHECKPOINT_CAUSE_MAX bytes, no space at its end). Its length, or -1.
 */
static int
checkpoint_anchor_format(const struct checkpoint_anchor *a, char *line,
    size_t size)
{
	char	 cause[CHECKPOINT_CAUSE_MAX + 1];
	char	 outage[CHECKPOINT_CAUSE_MAX + 112];
	char	 reopened[2 * CHECKPOINT_HEX + 80] = "", first[128] = "";
	size_t	 n;
	int	 len;

	outage[0] = '\0';
	if (a->lost > 0) {
		for (n = 0; n < CHECKPOINT_CAUSE_MAX && a->cause[n] != '\0'; n++)
			cause[n] = a->cause[n] < 0x20 || a->cause[n] > 0x7e ?
			    '?' : a->cause[n];
		while (n > 0 && cause[n - 1] == ' ')
			n--;
		if (n == 0)
			cause[n++] = '?';
		cause[n] = '\0';
		snprintf(outage, sizeof(outage), " lost=%llu events=%llu "
		    "since=%s cause=%s", a->lost, a->lost_events > a->lost ?
		    a->lost_events : a->lost, a->since, cause);
	}
	if (a->reopened && a->tail_seq > 0 && a->torn > 0)
		snprintf(reopened, sizeof(reopened), " reopened=1 tail=%lld:%s "
		    "torn=%llu:%s", a->tail_seq, a->tail_hash, a->torn,
		    a->torn_hash);
	else if (a->reopened && a->tail_seq > 0)	/* it left none */
		snprintf(reopened, sizeof(reopened), " reopened=1 tail=%lld:%s "
		    "%s", a->tail_seq, a->tail_hash, CHECKPOINT_TORN_NONE);
	else if (a->reopened)
		snprintf(reopened, sizeof(reopened), " reopened=1");
	if (a->first > 0 && a->have_files)
		snprintf(first, sizeof(first), " first=%lld files=%u:%s",
		    a->first, a->files, a->files_hash);
	else if (a->first > 0)
		snprintf(first, sizeof(first), " first=%lld", a->first);
	len = snprintf(line, size, CHECKPOINT_ANCHOR_HEAD " seq=%lld hash=%s "
	    "reason=%s ts=%s key=%s%s%s%s\n", a->seq, a->hash, a->reason,
	    a->ts, a->key, reopened, first, outage);
	return len < 0 || (size_t)len >= size ? -1 : len;
}

/*
 * Write line (n bytes) into the reserved room, cut it to its length,
 * sync it and rename it onto the anchor. 0, or -1 with the error set.
 */
static int
checkpoint_anchor_swap(struct checkpoint *ck, const char *line, int n)
{
	int	fd, ok;

	if (checkpoint_anchor_reserve(ck) == -1)
		return -1;
	checkpoint_crash_point("anchor", ck->last.reopened ? "reopened" :
	    ck->last.reason);
	fd = ck->anchor_fd;
	ck->anchor_fd = -1;
	ok = pwrite(fd, line, (size_t)n, 0) == n && ftruncate(fd, n) == 0;
	checkpoint_anchor_room(fd);
	ok = ok && fsync(fd) == 0;
	ok = close(fd) == 0 && ok;
	if (!ok || rename(ck->anchor_tmp, ck->anchor_path) == -1) {
		ck->anchor_failed = 1;
		checkpoint_fail(ck, "cannot write the anchor \"%s\": %s",
		    ck->anchor_path, strerror(errno));
		(void)unlink(ck->anchor_tmp);
		return -1;
	}
	return 0;
}

/*
 * Keep CHECKPOINT_ANCHOR_MAX bytes of room in the anchor file itself
 * (its size stays the line's), so that it can be rewritten in place
 * (checkpoint_anchor_inplace()). Best effort: a line shorter than a
 * block holds that block anyway, and a file system without fallocate
 * leaves the block the line is in.
 */
static void
checkpoint_anchor_room(int fd)
{
	(void)fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, CHECKPOINT_ANCHOR_MAX);
}

/*
 * The volume has no room for a new file (no block or no inode left): the
 * anchor line (n bytes) is written over the anchor in the room it holds,
 * cut to its length and synced, so that an outage, above all, is never
 * only in the memory of a process that exits (atk20r17 F2). Not atomic:
 * a crash in the middle leaves an anchor that writers refuse, which is
 * said, not silent. 0, -1 with the error set, or -2 (no anchor file).
 */
static int
checkpoint_anchor_inplace(struct checkpoint *ck, const char *line, int n)
{
	struct stat	st;
	int		fd, ok, saved;

	fd = open(ck->anchor_path, O_WRONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd == -1)
		return -2;	/* none yet: nothing to say in place */
	ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
	    pwrite(fd, line, (size_t)n, 0) == n && ftruncate(fd, n) == 0 &&
	    fsync(fd) == 0;
	saved = errno;
	close(fd);
	if (!ok) {
		checkpoint_fail(ck, "cannot write the anchor \"%s\" in place: "
		    "%s", ck->anchor_path, strerror(saved ? saved : EINVAL));
		return -1;
	}
	log_warnx("checkpoint: no room for a new anchor file: \"%s\" "
	    "rewritten in place", ck->anchor_path);
	return 0;
}

/*
 * Write line (n bytes) as the anchor: through the reserved room and a
 * rename, else, when that cannot be had, in place. 0, or -1 with the
 * error set.
 */
static int
checkpoint_anchor_put(struct checkpoint *ck, const char *line, int n)
{
	char	why[sizeof(ck->error)];
	int	rc;

	if (checkpoint_anchor_swap(ck, line, n) == 0)
		return 0;
	util_strlcpy(why, ck->error, sizeof(why));
	if ((rc = checkpoint_anchor_inplace(ck, line, n)) == 0)
		return 0;
	if (rc == -2)
		util_strlcpy(ck->error, why, sizeof(ck->error));
	return -1;
}

/*
 * Replace key_path.anchor with the last checkpoint written, the log's
 * first seq and files, and its outage not yet written to it. 0, or -1
 * with the error set.
 */
static int
checkpoint_anchor_write(struct checkpoint *ck)
{
	struct checkpoint_anchor	 a;
	char				 line[CHECKPOINT_ANCHOR_MAX + 1];
	const char			*since, *cause;
	int				 n;

	/* No checkpoint yet: an outage-only anchor, seq 0 (checkpoint.h). */
	if (ck->last.seq == 0) {
		memset(ck->last.hash, '0', CHECKPOINT_HEX);
		ck->last.hash[CHECKPOINT_HEX] = '\0';
		util_strlcpy(ck->last.reason, "open", sizeof(ck->last.reason));
		(void)eventlog_outage(ck->log, &since, &cause);
		util_strlcpy(ck->last.ts, since, sizeof(ck->last.ts));
		util_strlcpy(ck->last.key, ck->key_id, sizeof(ck->last.key));
	}
	a = ck->last;
	/* The log is never kept from past its own end. */
	a.first = eventlog_first(ck->log);
	if (a.first > ck->last.seq)
		a.first = ck->last.seq;
	a.have_files = a.first > 0 && eventlog_files(ck->log, &a.files,
	    a.files_hash) == 0;
	a.lost = eventlog_outage(ck->log, &since, &cause);
	a.lost_events = eventlog_outage_events(ck->log);
	if (a.lost > 0) {
		util_strlcpy(a.since, since, sizeof(a.since));
		util_strlcpy(a.cause, cause, sizeof(a.cause));
	}
	if ((n = checkpoint_anchor_format(&a, line, sizeof(line))) == -1)
		return checkpoint_fail(ck, "anchor line too long");
	if (checkpoint_anchor_put(ck, line, n) == -1)
		return -1;
	ck->anchor_lost = a.lost;
	ck->at_close = strcmp(ck->last.reason, "close") == 0 &&
	    !ck->last.reopened && eventlog_seq(ck->log) == ck->last.seq;
	return 0;
}

int
checkpoint_anchor_lost(const char *key_path, unsigned long long lost,
    const char *why, char **cause)
{
	struct checkpoint	 ck;
	struct timespec		 now;
	char			 line[CHECKPOINT_ANCHOR_MAX + 1];
	int			 n, r, rc = -1;

	memset(&ck, 0, sizeof(ck));
	ck.anchor_fd = -1;
	util_xasprintf(&ck.anchor_path, "%s.anchor", key_path);
	util_xasprintf(&ck.anchor_tmp, "%s.%ld.tmp", ck.anchor_path,
	    (long)getpid());
	if ((r = checkpoint_anchor_read(ck.anchor_path, &ck.last, cause)) == -1)
		goto out;
	/* None yet: an outage-only anchor, seq 0, signed by nobody yet. */
	if (r == 0 && ((ck.key = checkpoint_key_load(key_path, cause)) ==
	    NULL || checkpoint_key_id(ck.key, ck.last.key) == -1)) {
		if (*cause == NULL)
			util_xasprintf(cause, "key \"%s\" has no Ed25519 "
			    "public key", key_path);
		goto out;
	}
	clock_gettime(CLOCK_REALTIME, &now);
	if (ck.last.lost == 0) {
		util_rfc3339(&now, ck.last.since);
		util_strlcpy(ck.last.cause, why, sizeof(ck.last.cause));
	}
	if (r == 0) {
		memset(ck.last.hash, '0', CHECKPOINT_HEX);
		util_strlcpy(ck.last.reason, "open", sizeof(ck.last.reason));
		util_strlcpy(ck.last.ts, ck.last.since, sizeof(ck.last.ts));
	}
	ck.last.lost_events = (ck.last.lost_events > ck.last.lost ?
	    ck.last.lost_events : ck.last.lost) + lost;
	ck.last.lost += lost;
	if ((n = checkpoint_anchor_format(&ck.last, line, sizeof(line))) == -1)
		util_xasprintf(cause, "anchor line too long");
	else if (checkpoint_anchor_put(&ck, line, n) == -1)
		util_xasprintf(cause, "%s", ck.error);
	else
		rc = 0;
out:
	EVP_PKEY_free(ck.key);
	free(ck.anchor_path);
	free(ck.anchor_tmp);
	return rc;
}

/*
 * The anchor, if a checkpoint was written since it was: the log synced
 * first, so the anchor never names a line the disk may lose; or if the
 * log's outage no checkpoint covers yet (eventlog_outage()) is not the
 * one the anchor names, so a restart does not forget it. Then, if the
 * writer goes on (again), the room for the next one is taken; a writer
 * that is closing needs none. 0, or -1 with the error set.
 */
static int
checkpoint_anchor_update(struct checkpoint *ck, int again)
{
	const char		*since, *cause;
	unsigned long long	 lost;

	lost = eventlog_outage(ck->log, &since, &cause);
	if (ck->anchor_dirty) {
		if (eventlog_tick(ck->log) == -1)
			return checkpoint_fail(ck, "cannot sync the log: %s",
			    eventlog_error(ck->log));
		if (checkpoint_anchor_write(ck) == -1)
			return -1;
		ck->anchor_dirty = 0;
		ck->unanchored = 0;
	} else if (lost != ck->anchor_lost && (ck->last.seq > 0 || lost > 0)) {
		/*
		 * An outage kept or grown. It leaves the anchor only with a
		 * checkpoint after its log.outage line (anchor_dirty above):
		 * till then the log can be cut back to the anchored one.
		 */
		if (checkpoint_anchor_write(ck) == -1)
			return -1;
	}
	return again ? checkpoint_anchor_reserve(ck) : 0;
}

/*
 * The anchor names a close its writer went on from and the last line it
 * left (tail=): the lines after the close are its own only if the log
 * ends exactly there; then the tail is dropped from the anchor before
 * the first line (checkpoint_put), as this writer goes on past it. Else
 * they are judged as after a plain close, and the log.resume names the
 * tail (a cut or a rewrite is found): the close is not reopened, and the
 * anchor keeps the tail as read until a checkpoint after the log.resume
 * or a tail this writer wrote itself (checkpoint_free_reopened), so a
 * log.resume that does not go in (the volume full, a crash) loses nothing.
 */
static void
checkpoint_start_tail(struct checkpoint *ck)
{
	if (!ck->anchor.reopened || ck->anchor.tail_seq == 0)
		return;
	if (ck->found_seq != ck->anchor.tail_seq ||
	    strcmp(ck->found_hash, ck->anchor.tail_hash) != 0 ||
	    eventlog_foreign(ck->log)) {
		ck->anchor.reopened = 0;
		return;
	}
	ck->at_close = 1;
	ck->last.tail_seq = 0;
	ck->last.torn = 0;
	/*
	 * The torn lines it left after the tail are the ones it names, with
	 * the bytes it wrote: not what is there now (atk20r20 F1, F5), none
	 * for torn=0 (atk20r22 F1: torn lines a folder writer put after such
	 * a tail were counted as found and vouched for). An older writer's
	 * anchor, without torn=, keeps what is found.
	 */
	if (ck->anchor.have_torn)
		eventlog_torn_set(ck->log, ck->anchor.torn,
		    ck->anchor.torn > 0 ? ck->anchor.torn_hash : "");
}

/*
 * No checkpoint of this writer anchored yet (no anchor, or an outage-only
 * one) and the log holds lines: nothing this key signed vouches for them,
 * so its first checkpoint does not sign over them silently: a log.resume
 * with anchor_seq 0 names what it found (atk20r17 F3), and verify --key
 * reports those lines as not its writer's.
 */
static void
checkpoint_start_unanchored(struct checkpoint *ck)
{
	struct timespec	now;

	if (eventlog_seq(ck->log) == 0)
		return;
	if (ck->anchor.ts[0] == '\0') {
		clock_gettime(CLOCK_REALTIME, &now);
		util_rfc3339(&now, ck->anchor.ts);
		memset(ck->anchor.hash, '0', CHECKPOINT_HEX);
		ck->anchor.hash[CHECKPOINT_HEX] = '\0';
		util_strlcpy(ck->anchor.reason, "open",
		    sizeof(ck->anchor.reason));
	}
	ck->found_seq = eventlog_seq(ck->log);
	util_strlcpy(ck->found_hash, eventlog_hash(ck->log),
	    sizeof(ck->found_hash));
	ck->start_seq = ck->found_seq;
	ck->resume_due = 1;
}

/*
 * Read the anchor and compare it with the end of the log: a log.resume
 * line is due when the log does not end with the anchored checkpoint.
 */
static int
checkpoint_start(struct checkpoint *ck, char **cause)
{
	int	r;

	r = checkpoint_anchor_read(ck->anchor_path, &ck->anchor, cause);
	if (r == -1)
		return -1;
	/* A log whose end is not found opens only to go on from an anchor. */
	if (eventlog_no_end(ck->log) && (r == 0 || ck->anchor.seq == 0)) {
		util_xasprintf(cause, "no event found in the last %d bytes of "
		    "\"%s\" and no anchor to continue from", SG_LOG_TAIL_SCAN,
		    eventlog_path(ck->log));
		return -1;
	}
	/* An outage-only anchor (seq 0): the outage carried, nothing more. */
	if (r == 1 && ck->anchor.seq == 0) {
		ck->anchor_lost = ck->anchor.lost;
		eventlog_add_outage(ck->log, ck->anchor.lost,
		    ck->anchor.lost_events, ck->anchor.since,
		    ck->anchor.cause);
		checkpoint_start_unanchored(ck);
		return 0;
	}
	ck->have_anchor = r == 1;
	if (!ck->have_anchor) {
		checkpoint_start_unanchored(ck);
		return 0;
	}
	/* What the anchor names until a checkpoint is written. */
	ck->last = ck->anchor;
	ck->read = ck->anchor;
	ck->anchor_lost = ck->anchor.lost;
	eventlog_add_outage(ck->log, ck->anchor.lost, ck->anchor.lost_events,
	    ck->anchor.since, ck->anchor.cause);
	/* Files removed while the writer was stopped stay missing. */
	if (ck->anchor.have_files)
		eventlog_vouch(ck->log, ck->anchor.files,
		    ck->anchor.files_hash, strcmp(ck->anchor.reason,
		    "close") == 0);
	if (ck->anchor.first > 0)
		eventlog_keep_from(ck->log, ck->anchor.first);
	ck->found_seq = eventlog_seq(ck->log);
	util_strlcpy(ck->found_hash, eventlog_hash(ck->log),
	    sizeof(ck->found_hash));
	/*
	 * No writer gets within SG_LOG_SEQ_ROOM of the bound: such an end
	 * is planted, whatever precedes or splits it; the writer continues
	 * from its own last line.
	 */
	if ((ck->found_seq > SG_LOG_SEQ_MAX - SG_LOG_SEQ_ROOM &&
	    ck->anchor.seq < ck->found_seq) || eventlog_no_end(ck->log))
		eventlog_continue_from(ck->log, ck->anchor.seq,
		    ck->anchor.hash);
	/*
	 * A writer reopens its close before any line after it, so a torn
	 * line after a plain close is not its own.
	 */
	ck->resume_due = ck->found_seq != ck->anchor.seq ||
	    strcmp(ck->found_hash, ck->anchor.hash) != 0 ||
	    eventlog_foreign(ck->log) || (eventlog_torn(ck->log) &&
	    !ck->anchor.reopened && strcmp(ck->anchor.reason, "close") == 0);
	/* It said which line it left last: a log not ending there was cut. */
	if (ck->anchor.reopened && ck->anchor.tail_seq > 0 &&
	    (ck->found_seq != ck->anchor.tail_seq ||
	    strcmp(ck->found_hash, ck->anchor.tail_hash) != 0))
		ck->resume_due = 1;
	/*
	 * Its own torn line (it had gone on, then stopped in a write): the
	 * next line is a log.outage, as after a torn line while it runs, so
	 * that verify --key can tell such a line from one put in (F5).
	 */
	if (!ck->resume_due && eventlog_torn(ck->log) && ck->anchor.lost == 0)
		eventlog_add_outage(ck->log, 1, 1, ck->anchor.ts, "a torn line "
		    "ended the log when its writer started");
	ck->at_close = !ck->resume_due && !ck->anchor.reopened &&
	    strcmp(ck->anchor.reason, "close") == 0;
	checkpoint_start_tail(ck);
	ck->start_seq = eventlog_seq(ck->log);
	return 0;
}

int
checkpoint_resume(struct checkpoint *ck)
{
	json_t	*f;
	int	 rc;

	if (!ck->resume_due)
		return 0;
	/* torn: the torn lines before it, which verify --key bounds (F4). */
	f = json_pack("{s:s, s:I, s:s, s:s, s:s, s:I, s:s, s:I}", "event",
	    CHECKPOINT_RESUME, "anchor_seq", (json_int_t)ck->anchor.seq,
	    "anchor_hash", ck->anchor.hash, "anchor_reason", ck->anchor.reason,
	    "anchor_ts", ck->anchor.ts, "found_seq", (json_int_t)ck->found_seq,
	    "found_hash", ck->found_hash, "torn",
	    (json_int_t)eventlog_torn_lines(ck->log));
	if (f != NULL && json_object_set_new(f, "torn_hash",
	    json_string(eventlog_torn_hash(ck->log))) == -1) {
		json_decref(f);
		f = NULL;
	}
	if (f == NULL || (ck->anchor.reopened && json_object_set_new(f,
	    "anchor_reopened", json_true()) == -1) ||
	    (ck->anchor.tail_seq > 0 && (json_object_set_new(f,
	    "anchor_tail_seq", json_integer(ck->anchor.tail_seq)) == -1 ||
	    json_object_set_new(f, "anchor_tail_hash",
	    json_string(ck->anchor.tail_hash)) == -1))) {
		json_decref(f);
		return checkpoint_fail(ck, "out of memory");
	}
	rc = eventlog_append(ck->log, f);
	json_decref(f);
	if (rc == -1)
		return checkpoint_fail(ck, "cannot write the log.resume line: "
		    "%s", eventlog_error(ck->log));
	ck->resume_due = 0;
	if (ck->anchor.seq == 0)
		log_warnx("%s holds lines up to seq %lld that this writer's key "
		    "never signed (it has no anchor yet): recorded at seq %lld "
		    "(log.resume); 'sandgate audit verify --key' reports them",
		    eventlog_path(ck->log), ck->found_seq,
		    eventlog_seq(ck->log));
	else
		log_warnx("%s does not end with the checkpoint this writer "
		    "signed last (seq %lld, %s, %s) but at seq %lld: recorded "
		    "at seq %lld (log.resume); 'sandgate audit verify --key' "
		    "judges it", eventlog_path(ck->log), ck->anchor.seq,
		    ck->anchor.reason, ck->anchor.ts, ck->found_seq,
		    eventlog_seq(ck->log));
	return 0;
}

int
checkpoint_key_lock(const char *key_path, int how, char **cause)
{
	char	*path;
	int	 fd, op = how == CHECKPOINT_LOCK_SHARED ? LOCK_SH : LOCK_EX;

	if (how == CHECKPOINT_LOCK_SOLE)
		op |= LOCK_NB;
	util_xasprintf(&path, "%s.lock", key_path);
	fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd == -1) {
		util_xasprintf(cause, "cannot open \"%s\": %s", path,
		    strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	while (flock(fd, op) == -1) {
		if (errno == EWOULDBLOCK)
			util_xasprintf(cause, "the key \"%s\" is in use: "
			    "another process signs with it (its lock \"%s."
			    "lock\" is held); one writer per key and anchor",
			    key_path, key_path);
		else if (errno != EINTR)
			util_xasprintf(cause, "cannot lock the key \"%s\": %s",
			    key_path, strerror(errno));
		else
			continue;
		close(fd);
		return -1;
	}
	return fd;
}

struct checkpoint *
checkpoint_new(struct eventlog *log, const struct checkpoint_opts *o,
    char **cause)
{
	struct checkpoint	*ck;
	struct eventlog_hook	 hook;

	/* Larger intervals would make its rotate lines, cut, fail verify. */
	if (o->every_events > LOGVERIFY_EVERY_MAX ||
	    o->every_secs > LOGVERIFY_EVERY_MAX) {
		util_xasprintf(cause, "checkpoint interval past %llu",
		    LOGVERIFY_EVERY_MAX);
		return NULL;
	}
	if ((ck = calloc(1, sizeof(*ck))) == NULL) {
		util_xasprintf(cause, "out of memory");
		return NULL;
	}
	ck->lock_fd = -1;
	ck->log = log;
	ck->key_path = util_xstrdup(o->key_path);
	util_xasprintf(&ck->next_path, "%s.next", o->key_path);
	util_xasprintf(&ck->anchor_path, "%s.anchor", o->key_path);
	/* Its own name: another writer's reservation is never replaced. */
	util_xasprintf(&ck->anchor_tmp, "%s.%ld.tmp", ck->anchor_path,
	    (long)getpid());
	ck->anchor_fd = -1;
	ck->every_events = o->every_events;
	ck->every_secs = o->every_secs;
	ck->last_us = util_now_us();
	/* Before anything touches the anchor or its room. */
	if (o->lock != CHECKPOINT_LOCK_NONE && o->lock != CHECKPOINT_LOCK_HELD &&
	    (ck->lock_fd = checkpoint_key_lock(ck->key_path, o->lock,
	    cause)) == -1)
		goto fail;
	if ((ck->key = checkpoint_key_load(ck->key_path, cause)) == NULL)
		goto fail;
	if (checkpoint_key_id(ck->key, ck->key_id) == -1) {
		util_xasprintf(cause, "key \"%s\" has no Ed25519 public key",
		    ck->key_path);
		goto fail;
	}
	/* Writers that share the log: nobody else writes until free. */
	if (o->lock == CHECKPOINT_LOCK_SHARED ||
	    o->lock == CHECKPOINT_LOCK_EXCLUSIVE ||
	    o->lock == CHECKPOINT_LOCK_HELD) {
		if (eventlog_hold(log) == -1) {
			util_xasprintf(cause, "%s", eventlog_error(log));
			goto fail;
		}
		ck->held = 1;
	}
	if (checkpoint_start(ck, cause) == -1)
		goto fail;
	if (ck->held || o->lock == CHECKPOINT_LOCK_SOLE)
		checkpoint_anchor_sweep(ck);
	if (checkpoint_anchor_reserve(ck) == -1)
		log_warnx("checkpoint: %s", ck->error);
	memset(&hook, 0, sizeof(hook));
	hook.due = checkpoint_due;
	hook.before = checkpoint_before;
	hook.fields = checkpoint_fields;
	hook.written = checkpoint_written;
	hook.rotated = checkpoint_rotated;
	hook.put = checkpoint_put;
	hook.arg = ck;
	eventlog_set_hook(log, &hook);
	if (ck->held && checkpoint_resume(ck) == -1) {
		util_xasprintf(cause, "%s", ck->error);
		goto fail;
	}
	return ck;
fail:
	checkpoint_free(ck);
	return NULL;
}

/*
 * A next key waits at key_path.next: write a checkpoint (reason key) that
 * the current key signs and that names the next one, then sign with the
 * next key from now on and move it onto key_path, which ends the old key.
 * 0 when there is none or it took over, else -1 (the old key signs on).
 */
static int
checkpoint_introduce(struct checkpoint *ck)
{
	char	*cause = NULL, *from, *to;
	int	 rc;

	if (access(ck->next_path, F_OK) == -1)
		return 0;
	if ((ck->next = checkpoint_key_load(ck->next_path, &cause)) == NULL ||
	    checkpoint_key_id(ck->next, ck->next_id) == -1) {
		checkpoint_fail(ck, "next key: %s", cause ? cause :
		    "not an Ed25519 key");
		free(cause);
		EVP_PKEY_free(ck->next);
		ck->next = NULL;
		return -1;
	}
	ck->reason = "key";
	rc = eventlog_append_hook(ck->log);
	ck->reason = NULL;
	if (rc == -1) {
		EVP_PKEY_free(ck->next);
		ck->next = NULL;
		return checkpoint_fail(ck, "cannot write the key checkpoint: "
		    "%s", eventlog_error(ck->log));
	}
	checkpoint_crash_point("key", "written");
	EVP_PKEY_free(ck->key);
	ck->key = ck->next;
	ck->next = NULL;
	memcpy(ck->key_id, ck->next_id, sizeof(ck->key_id));
	util_xasprintf(&from, "%s.pub", ck->next_path);
	util_xasprintf(&to, "%s.pub", ck->key_path);
	(void)rename(from, to);
	free(from);
	free(to);
	if (rename(ck->next_path, ck->key_path) == -1)
		return checkpoint_fail(ck, "new key in force, but cannot move "
		    "\"%s\" onto \"%s\": %s", ck->next_path, ck->key_path,
		    strerror(errno));
	return 0;
}

int
checkpoint_write(struct checkpoint *ck, const char *reason)
{
	int	rc;

	ck->writing++;
	rc = checkpoint_write_one(ck, reason);
	ck->writing--;
	return rc;
}

/* checkpoint_write(), its own lines (log.resume) not asked before(). */
static int
checkpoint_write_one(struct checkpoint *ck, const char *reason)
{
	char	why[sizeof(ck->error)];
	int	rc, intro;

	ck->error[0] = '\0';
	/* Due from the first try until its line is written. */
	if (strcmp(reason, "open") == 0)
		ck->open_due = 1;
	if (ck->open_due && strcmp(reason, "close") == 0 &&
	    checkpoint_write(ck, "open") == -1)
		return -1;
	if (checkpoint_resume(ck) == -1)
		return -1;
	/* No checkpoint the anchor could not name (a close above all). */
	if (checkpoint_anchor_reserve(ck) == -1) {
		util_strlcpy(why, ck->error, sizeof(why));
		return checkpoint_fail(ck, "no %s checkpoint written: %s",
		    reason, why);
	}
	intro = checkpoint_introduce(ck);
	ck->reason = reason;
	rc = eventlog_append_hook(ck->log);
	ck->reason = NULL;
	if (rc == -1 && ck->error[0] == '\0')
		checkpoint_fail(ck, "cannot write the checkpoint: %s",
		    eventlog_error(ck->log));
	if (rc == 0 && checkpoint_anchor_update(ck,
	    strcmp(reason, "close") != 0) == -1)
		rc = -1;
	return rc == -1 || intro == -1 ? -1 : 0;
}

int
checkpoint_tick(struct checkpoint *ck)
{
	if (checkpoint_anchor_update(ck, 1) == -1)
		return -1;
	/* A log.outage line written, or no open yet: sign it now. */
	if (eventlog_outage_told(ck->log) || ck->open_due)
		return checkpoint_write(ck, "timer");
	if (ck->every_secs == 0 ||
	    util_now_us() - ck->last_us < ck->every_secs * 1000000ull)
		return 0;
	return checkpoint_write(ck, "timer");
}

const char *
checkpoint_key(const struct checkpoint *ck)
{
	return ck->key_id;
}

int
checkpoint_anchored(const struct checkpoint *ck)
{
	return !ck->anchor_failed;
}

const char *
checkpoint_error(const struct checkpoint *ck)
{
	return ck->error;
}

/*
 * The writer ends with its log.resume still due (or nothing written): the
 * anchor is written back as read, so the next writer owes it. If the log
 * ended at the tail the anchor names, the lines this writer put after it
 * before its log.resume (its log.outage, whole or cut and kept) are named
 * too: the tail moves to its last whole line (synced first) and torn= to
 * the torn lines after it, the anchor's and its own, with their bytes
 * (eventlog_torn_left()). Else the next writer found the log past the tail
 * ("cut or rewrite") or more torn lines than torn= said, and verify --key
 * failed the untouched log for good (atk20r22 F2).
 */
static void
checkpoint_keep_read(struct checkpoint *ck)
{
	const char	*h;

	ck->last = ck->read;
	if (!ck->read.reopened || ck->read.tail_seq == 0 ||
	    !ck->anchor.reopened)
		return;
	if (eventlog_tick(ck->log) == -1) {
		log_warnx("checkpoint: not naming its own lines after the "
		    "tail: cannot sync the log: %s", eventlog_error(ck->log));
		return;
	}
	if (eventlog_seq(ck->log) != ck->start_seq) {
		ck->last.tail_seq = eventlog_seq(ck->log);
		util_strlcpy(ck->last.tail_hash, eventlog_hash(ck->log),
		    sizeof(ck->last.tail_hash));
	}
	ck->last.torn = eventlog_torn_left(ck->log, &h);
	util_strlcpy(ck->last.torn_hash, h, sizeof(ck->last.torn_hash));
}

/*
 * The writer ends past the close its anchor names, without a checkpoint
 * after it. The anchor says which line the writer left last (tail=), so
 * that lines added or changed after it while it is stopped are not taken
 * for its own; it only ever names a line this writer wrote, synced first.
 * With none written, or the log.resume still due (the end it found is
 * not its own), the anchor is written back as read; nothing written
 * after a plain close leaves that close the end again.
 */
static void
checkpoint_free_reopened(struct checkpoint *ck)
{
	const char	*h;
	int		 own;

	if (ck->log == NULL || !ck->last.reopened)
		return;
	/*
	 * A torn line after the close (a short write: the volume full) is
	 * its own: the tail then names the close, which keeps the reopen.
	 */
	own = !ck->resume_due && (eventlog_seq(ck->log) != ck->start_seq ||
	    eventlog_torn_now(ck->log));
	if (!own)
		checkpoint_keep_read(ck);
	else if (eventlog_seq(ck->log) == ck->last.seq &&
	    !eventlog_torn_now(ck->log))
		ck->last.reopened = 0;
	else if (eventlog_tick(ck->log) == -1) {
		log_warnx("checkpoint: not naming seq %lld as the tail: cannot "
		    "sync the log: %s", eventlog_seq(ck->log),
		    eventlog_error(ck->log));
		return;
	} else {
		ck->last.tail_seq = eventlog_seq(ck->log);
		util_strlcpy(ck->last.tail_hash, eventlog_hash(ck->log),
		    sizeof(ck->last.tail_hash));
		/* ...and the torn lines it left after it (atk20r20 F5). */
		ck->last.torn = eventlog_torn_left(ck->log, &h);
		util_strlcpy(ck->last.torn_hash, h, sizeof(ck->last.torn_hash));
	}
	if (checkpoint_anchor_write(ck) == -1)
		log_warnx("checkpoint: %s", ck->error);
}

void
checkpoint_free(struct checkpoint *ck)
{
	if (ck == NULL)
		return;
	if (ck->log != NULL && ck->key != NULL &&
	    checkpoint_anchor_update(ck, 0) == -1)
		log_warnx("checkpoint: %s", ck->error);
	checkpoint_free_reopened(ck);
	checkpoint_anchor_unreserve(ck);
	if (ck->log != NULL && ck->key != NULL)
		eventlog_set_hook(ck->log, NULL);
	if (ck->held)
		eventlog_release(ck->log);
	EVP_PKEY_free(ck->key);
	EVP_PKEY_free(ck->next);
	if (ck->lock_fd != -1)
		close(ck->lock_fd);
	free(ck->key_path);
	free(ck->next_path);
	free(ck->anchor_path);
	free(ck->anchor_tmp);
	free(ck);
}
