/* checkpoint.c: signed checkpoints and their keys; see checkpoint.h. */
#include <sys/file.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>

#include "checkpoint.h"
#include "eventlog.h"
#include "util.h"

#define CHECKPOINT_MSG_HEAD	"sandgate-checkpoint-v1\n"
#define CHECKPOINT_KEY_MAX	(16 * 1024)	/* a PEM key file */

struct checkpoint {
	struct eventlog		*log;
	EVP_PKEY		*key;
	char			 key_id[CHECKPOINT_KEY_B64 + 1];
	EVP_PKEY		*next;		/* being introduced */
	char			 next_id[CHECKPOINT_KEY_B64 + 1];
	char			*key_path;
	char			*next_path;
	int			 lock_fd;
	unsigned long long	 every_events;
	unsigned long long	 every_secs;
	unsigned long long	 since;		/* events since the last one */
	uint64_t		 last_us;	/* monotonic, the last one */
	const char		*reason;	/* of the line being made */
	char			 error[256];
};

static const char *const checkpoint_reasons[] = {
	"open", "count", "timer", "key", "close", NULL
};

static int	checkpoint_due(void *);
static json_t	*checkpoint_fields(void *, long long, const char *,
		    const char *);
static int	checkpoint_sign(EVP_PKEY *, const char *, size_t, char *);
static int	checkpoint_lock(struct checkpoint *, int, char **);
static FILE	*checkpoint_open_key(const char *, int, char **);
static EVP_PKEY	*checkpoint_read_key(const char *, int, char **);
static int	checkpoint_write_pem(const char *, EVP_PKEY *, int, uid_t,
		    gid_t, char **);
static int	checkpoint_introduce(struct checkpoint *);
static int	checkpoint_fail(struct checkpoint *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static const char *checkpoint_ssl_error(void);

size_t
checkpoint_message(const struct checkpoint_fields *f, char *buf,
    size_t size)
{
	int	n;

	n = snprintf(buf, size, CHECKPOINT_MSG_HEAD "seq=%lld\nts=%s\n"
	    "prev=%s\nreason=%s\nkey=%s\nnext_key=%s\nevery_events=%llu\n"
	    "every_secs=%llu\n", f->seq, f->ts, f->prev, f->reason, f->key,
	    f->next_key ? f->next_key : "", f->every_events, f->every_secs);
	if (n < 0 || (size_t)n >= size)
		return 0;
	return (size_t)n;
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

/* The oldest OpenSSL error as text (and the queue cleared). */
static const char *
checkpoint_ssl_error(void)
{
	static char	buf[256];
	unsigned long	e = ERR_get_error();

	ERR_clear_error();
	if (e == 0)
		return "not a key in PEM form";
	ERR_error_string_n(e, buf, sizeof(buf));
	return buf;
}

/*
 * Open a key file for reading, refusing symlinks and anything but a
 * regular file; a private key (secret) must also be ours and closed to
 * group and others.
 */
static FILE *
checkpoint_open_key(const char *path, int secret, char **cause)
{
	struct stat	 st;
	FILE		*f;
	int		 fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)) == -1) {
		util_xasprintf(cause, "cannot open key \"%s\": %s", path,
		    strerror(errno));
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > CHECKPOINT_KEY_MAX) {
		util_xasprintf(cause, "key \"%s\" is not a regular file of at "
		    "most %d bytes", path, CHECKPOINT_KEY_MAX);
		close(fd);
		return NULL;
	}
	if (secret && (st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
		util_xasprintf(cause, "private key \"%s\" must belong to uid %u "
		    "and be readable by it alone (it has uid %u, mode %04o)",
		    path, (unsigned)geteuid(), (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
		close(fd);
		return NULL;
	}
	if ((f = fdopen(fd, "r")) == NULL) {
		util_xasprintf(cause, "cannot read key \"%s\": %s", path,
		    strerror(errno));
		close(fd);
	}
	return f;
}

/*
 * Read an Ed25519 key from a PEM file: the private key (secret), or the
 * public key, taken from a private key file too. NULL with *cause.
 */
static EVP_PKEY *
checkpoint_read_key(const char *path, int secret, char **cause)
{
	const char	*what = secret ? "key" : "public key";
	EVP_PKEY	*pkey = NULL;
	FILE		*f;

	if ((f = checkpoint_open_key(path, secret, cause)) == NULL)
		return NULL;
	if (!secret && (pkey = PEM_read_PUBKEY(f, NULL, NULL, NULL)) == NULL) {
		ERR_clear_error();
		rewind(f);
	}
	if (pkey == NULL)
		pkey = PEM_read_PrivateKey(f, NULL, NULL, NULL);
	fclose(f);
	if (pkey == NULL) {
		util_xasprintf(cause, "%s \"%s\": %s", what, path,
		    checkpoint_ssl_error());
		return NULL;
	}
	if (EVP_PKEY_get_id(pkey) != EVP_PKEY_ED25519) {
		util_xasprintf(cause, "%s \"%s\" is not an Ed25519 key", what,
		    path);
		EVP_PKEY_free(pkey);
		return NULL;
	}
	return pkey;
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

/*
 * Write pkey (its private part if secret) to a new file at path: first to
 * a temporary name, then link(2)ed into place, so a key appears whole or
 * not at all and an existing one is never replaced. 1 if path exists.
 */
static int
checkpoint_write_pem(const char *path, EVP_PKEY *pkey, int secret,
    uid_t uid, gid_t gid, char **cause)
{
	char	*tmp;
	FILE	*f = NULL;
	int	 fd, ok, rc = -1;

	util_xasprintf(&tmp, "%s.tmp" UTIL_MKTEMP_SUFFIX, path);
	if ((fd = mkostemp(tmp, O_CLOEXEC)) == -1) {
		util_xasprintf(cause, "cannot create \"%s\": %s", tmp,
		    strerror(errno));
		free(tmp);
		return -1;
	}
	if (fchmod(fd, secret ? 0600 : 0644) == -1 ||
	    (uid != (uid_t)-1 && fchown(fd, uid, gid) == -1) ||
	    (f = fdopen(fd, "w")) == NULL) {
		util_xasprintf(cause, "cannot prepare \"%s\": %s", tmp,
		    strerror(errno));
		close(fd);
		goto out;
	}
	ok = secret ? PEM_write_PrivateKey(f, pkey, NULL, NULL, 0, NULL,
	    NULL) : PEM_write_PUBKEY(f, pkey);
	if (!ok || fflush(f) != 0 || fsync(fileno(f)) == -1) {
		util_xasprintf(cause, "cannot write \"%s\"", tmp);
		goto out;
	}
	if (link(tmp, path) == -1) {
		if (errno == EEXIST)
			rc = 1;
		else
			util_xasprintf(cause, "cannot create \"%s\": %s", path,
			    strerror(errno));
		goto out;
	}
	rc = 0;
out:
	if (f != NULL)
		fclose(f);
	unlink(tmp);
	free(tmp);
	return rc;
}

int
checkpoint_key_create(const char *path, uid_t uid, gid_t gid, char **cause)
{
	EVP_PKEY	*pkey;
	char		*pub;
	int		 rc;

	if ((pkey = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519")) == NULL) {
		util_xasprintf(cause, "cannot make an Ed25519 key: %s",
		    checkpoint_ssl_error());
		return -1;
	}
	rc = checkpoint_write_pem(path, pkey, 1, uid, gid, cause);
	if (rc == 0) {
		util_xasprintf(&pub, "%s.pub", path);
		(void)unlink(pub);	/* the public half of an old key */
		if (checkpoint_write_pem(pub, pkey, 0, uid, gid, cause) != 0)
			rc = -1;
		free(pub);
	}
	EVP_PKEY_free(pkey);
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
	ok = realpath(dirname(copy), dir) != NULL &&
	    realpath(logdir, log) != NULL;
	free(copy);
	if (!ok)
		return 0;	/* a folder not made yet holds no key */
	n = strlen(log);
	if (strncmp(dir, log, n) == 0 && (dir[n] == '\0' || dir[n] == '/' ||
	    strcmp(log, "/") == 0)) {
		util_xasprintf(cause, "the checkpoint key \"%s\" is in the log "
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

/* Ed25519 signature of msg as base64 into out[89]; 0 or -1. */
static int
checkpoint_sign(EVP_PKEY *key, const char *msg, size_t len, char *out)
{
	unsigned char	 sig[CHECKPOINT_SIG_RAW];
	size_t		 siglen = sizeof(sig);
	EVP_MD_CTX	*ctx;
	int		 ok;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestSignInit(ctx, NULL, NULL, NULL, key) == 1 &&
	    EVP_DigestSign(ctx, sig, &siglen, (const unsigned char *)msg,
	    len) == 1 && siglen == sizeof(sig);
	EVP_MD_CTX_free(ctx);
	if (!ok) {
		ERR_clear_error();
		return -1;
	}
	EVP_EncodeBlock((unsigned char *)out, sig, (int)siglen);
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

/* The log's hook: the checkpoint line for this seq, ts and prev. */
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
	f.reason = ck->reason != NULL ? ck->reason : "count";
	f.key = ck->key_id;
	f.next_key = ck->next != NULL ? ck->next_id : NULL;
	f.every_events = ck->every_events;
	f.every_secs = ck->every_secs;
	if ((len = checkpoint_message(&f, msg, sizeof(msg))) == 0 ||
	    checkpoint_sign(ck->key, msg, len, sig) == -1) {
		checkpoint_fail(ck, "cannot sign a checkpoint");
		return NULL;
	}
	ck->since = 0;
	ck->last_us = util_now_us();
	return json_pack("{s:s, s:s, s:s, s:s?, s:I, s:I, s:s}", "event",
	    CHECKPOINT_EVENT, "reason", f.reason, "key", f.key, "next_key",
	    f.next_key, "every_events", (json_int_t)f.every_events,
	    "every_secs", (json_int_t)f.every_secs, "sig", sig);
}

/* Take key_path.lock (made if missing) shared or exclusive. */
static int
checkpoint_lock(struct checkpoint *ck, int how, char **cause)
{
	char	*path;
	int	 op = how == CHECKPOINT_LOCK_EXCLUSIVE ? LOCK_EX : LOCK_SH;

	util_xasprintf(&path, "%s.lock", ck->key_path);
	ck->lock_fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC,
	    0600);
	if (ck->lock_fd == -1) {
		util_xasprintf(cause, "cannot open \"%s\": %s", path,
		    strerror(errno));
		free(path);
		return -1;
	}
	free(path);
	while (flock(ck->lock_fd, op) == -1) {
		if (errno != EINTR) {
			util_xasprintf(cause, "cannot lock the key \"%s\": %s",
			    ck->key_path, strerror(errno));
			return -1;
		}
	}
	return 0;
}

struct checkpoint *
checkpoint_new(struct eventlog *log, const struct checkpoint_opts *o,
    char **cause)
{
	struct checkpoint	*ck;
	struct eventlog_hook	 hook;

	if ((ck = calloc(1, sizeof(*ck))) == NULL) {
		util_xasprintf(cause, "out of memory");
		return NULL;
	}
	ck->lock_fd = -1;
	ck->log = log;
	ck->key_path = util_xstrdup(o->key_path);
	util_xasprintf(&ck->next_path, "%s.next", o->key_path);
	ck->every_events = o->every_events;
	ck->every_secs = o->every_secs;
	ck->last_us = util_now_us();
	if (o->lock != CHECKPOINT_LOCK_NONE &&
	    checkpoint_lock(ck, o->lock, cause) == -1)
		goto fail;
	if ((ck->key = checkpoint_key_load(ck->key_path, cause)) == NULL)
		goto fail;
	if (checkpoint_key_id(ck->key, ck->key_id) == -1) {
		util_xasprintf(cause, "key \"%s\" has no Ed25519 public key",
		    ck->key_path);
		goto fail;
	}
	hook.due = checkpoint_due;
	hook.fields = checkpoint_fields;
	hook.arg = ck;
	eventlog_set_hook(log, &hook);
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
	int	rc, intro;

	ck->error[0] = '\0';
	intro = checkpoint_introduce(ck);
	ck->reason = reason;
	rc = eventlog_append_hook(ck->log);
	ck->reason = NULL;
	if (rc == -1 && ck->error[0] == '\0')
		checkpoint_fail(ck, "cannot write the checkpoint: %s",
		    eventlog_error(ck->log));
	return rc == -1 || intro == -1 ? -1 : 0;
}

int
checkpoint_tick(struct checkpoint *ck)
{
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

const char *
checkpoint_error(const struct checkpoint *ck)
{
	return ck->error;
}

void
checkpoint_free(struct checkpoint *ck)
{
	if (ck == NULL)
		return;
	if (ck->log != NULL && ck->key != NULL)
		eventlog_set_hook(ck->log, NULL);
	EVP_PKEY_free(ck->key);
	EVP_PKEY_free(ck->next);
	if (ck->lock_fd != -1)
		close(ck->lock_fd);
	free(ck->key_path);
	free(ck->next_path);
	free(ck);
}
