/* ckverify.c: checks of signed checkpoints; see ckverify.h. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>
#include <openssl/err.h>
#include <openssl/evp.h>

#include "checkpoint.h"
#include "ckverify.h"
#include "logverify.h"
#include "util.h"

/* ts as util_rfc3339() writes it: 2026-11-30T07:57:58.123456Z */
#define CKVERIFY_TS_FORMAT	"dddd-dd-ddTdd:dd:dd.ddddddZ"
/*
 * The members of a checkpoint line: ts, seq, 7 signed ones, prev, hash
 * (2 more in a rotate line that declares torn lines: torn, torn_hash).
 */
#define CKVERIFY_MEMBERS	11
/*
 * ...and of a log.resume line: ts, seq, event, 6 of its own (7 with
 * anchor_reopened, 2 more with anchor_tail_seq and _hash), prev, hash.
 */
#define CKVERIFY_RESUME_MEMBERS	11
#define CKVERIFY_NUM_MAX	1000000000000LL

/* A checkpoint line's members, parsed. */
struct ckverify_cp {
	struct checkpoint_fields f;
	unsigned char		 sig[CHECKPOINT_SIG_RAW];
};

/* A log.resume line's members, parsed (strings borrowed). */
struct ckverify_resume {
	long long	 anchor_seq;
	const char	*anchor_hash;
	const char	*anchor_reason;
	const char	*anchor_ts;
	long long	 found_seq;
	const char	*found_hash;
	const char	*prev;
	int		 reopened;	/* anchor_reopened: true */
	long long	 tail_seq;	/* anchor_tail_seq, or 0 */
	const char	*tail_hash;
	int		 has_torn;	/* torn (a writer since atk20r19) */
	int		 has_torn_hash;	/* torn_hash (since atk20r20) */
};

static void	ckverify_at(struct ckverify *, struct ckverify_at *);
static int	ckverify_fail(struct ckverify *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static json_t	*ckverify_named(const char *, size_t, const char *);
static int	ckverify_is_hex(const char *);
static const char *ckverify_str(json_t *, const char *);
static int	ckverify_num(json_t *, const char *, unsigned long long *);
static const char *ckverify_parse(json_t *, struct ckverify_cp *);
static const char *ckverify_parse_torn(json_t *, struct checkpoint_fields *);
static int	ckverify_torn_declared(struct ckverify *,
		    const struct checkpoint_fields *);
static int	ckverify_rotate_torn(struct ckverify *,
		    const struct checkpoint_fields *);
static struct ckverify_key *ckverify_find(struct ckverify *, const char *);
static int	ckverify_sig_ok(EVP_PKEY *, const struct ckverify_cp *);
static void	ckverify_event(struct ckverify *);
static int	ckverify_good(struct ckverify *, struct ckverify_key *,
		    const struct ckverify_cp *);
static int	ckverify_one(struct ckverify *, json_t *);
static void	ckverify_mark(struct ckverify *);
static void	ckverify_mark_next(struct ckverify *);
static const struct ckverify_mark *ckverify_mark_find(
		    const struct ckverify *, long long);
static const char *ckverify_resume_parse(json_t *,
		    struct ckverify_resume *);
static void	ckverify_untrusted_at(struct ckverify *, long long);
static int	ckverify_resume(struct ckverify *, json_t *);
static int	ckverify_resume_anchor(struct ckverify *,
		    const struct ckverify_resume *, long long);
static int	ckverify_resume_unanchored(struct ckverify *,
		    const struct ckverify_resume *, long long);
static int	ckverify_line(struct ckverify *, const char *, size_t);
static int	ckverify_start(struct ckverify *);
static int	ckverify_anchor_pass(struct ckverify *);
static void	ckverify_anchor_tail(struct ckverify *);
static const char *ckverify_resume_tail(json_t *, struct ckverify_resume *);
static const char *ckverify_resume_torn(json_t *, struct ckverify_resume *);
static long long ckverify_torn_bound(json_t *, const char *, long long);
static int	ckverify_resume_cut(struct ckverify *,
		    const struct ckverify_resume *, long long);
static int	ckverify_resume_closed(struct ckverify *,
		    const struct ckverify_resume *, long long);
static void	ckverify_anchor_end(struct ckverify *);
static void	ckverify_anchor_first(struct ckverify *);
static void	ckverify_keys_used(struct ckverify *);
static void	ckverify_tail(struct ckverify *, int64_t);
static int	ckverify_close_went_on(const struct ckverify *, long long);
static int	ckverify_feed_line(void *, const char *, size_t);
static void	ckverify_keep(char **, size_t *, int *, const char *, size_t);
static size_t	ckverify_cut_rotates(const struct ckverify *, const char *,
		    size_t);
static void	ckverify_torn(struct ckverify *, const char *, size_t);
static int	ckverify_torn_after(struct ckverify *, const char *, size_t);
static int	ckverify_torn_match(struct ckverify *, json_t *, const char *,
		    long long);
static void	ckverify_outage(struct ckverify *, json_t *);
static void	ckverify_torn_end(struct ckverify *);

void
ckverify_init(struct ckverify *v)
{
	memset(v, 0, sizeof(*v));
	logverify_init(&v->chain);
}

int
ckverify_add_key(struct ckverify *v, EVP_PKEY *pkey)
{
	struct ckverify_key	*k;
	char			 id[CHECKPOINT_KEY_B64 + 1];

	if (checkpoint_key_id(pkey, id) == -1)
		return -1;
	if (ckverify_find(v, id) != NULL)
		return 0;
	if (v->nkeys == CKVERIFY_KEYS_MAX || EVP_PKEY_up_ref(pkey) != 1)
		return -1;
	k = &v->keys[v->nkeys++];
	memset(k, 0, sizeof(*k));
	k->pkey = pkey;
	memcpy(k->id, id, sizeof(k->id));
	return 0;
}

void
ckverify_set_anchor(struct ckverify *v, const struct checkpoint_anchor *a)
{
	v->have_anchor = 1;
	v->anchor = *a;
}

void
ckverify_file(struct ckverify *v, const char *name)
{
	logverify_file(&v->chain, name);
	v->file_len = 0;
	v->file_lost = 0;
	v->torn_prior = v->torn_event;
	util_strlcpy(v->torn_prior_hash, v->torn_hash,
	    sizeof(v->torn_prior_hash));
}

void
ckverify_release(struct ckverify *v)
{
	size_t	i;

	for (i = 0; i < v->nkeys; i++)
		EVP_PKEY_free(v->keys[i].pkey);
	v->nkeys = 0;
	free(v->head_torn);
	v->head_torn = NULL;
	v->head_len = 0;
	free(v->file_torn);
	v->file_torn = NULL;
	v->file_len = 0;
}

int
ckverify_parse_ts(const char *ts, int64_t *us)
{
	static const char	 fmt[] = CKVERIFY_TS_FORMAT;
	struct tm		 tm;
	size_t			 i;
	long			 frac = 0;

	if (strlen(ts) != sizeof(fmt) - 1)
		return -1;
	for (i = 0; fmt[i] != '\0'; i++) {
		if (fmt[i] == 'd' ? (ts[i] < '0' || ts[i] > '9') :
		    ts[i] != fmt[i])
			return -1;
	}
	memset(&tm, 0, sizeof(tm));
	if (strptime(ts, "%Y-%m-%dT%H:%M:%S", &tm) != ts + 19)
		return -1;
	for (i = 20; i < 26; i++)
		frac = frac * 10 + (ts[i] - '0');
	*us = (int64_t)timegm(&tm) * 1000000 + frac;
	return 0;
}

/* The current line (the chain's position) as a place in the log. */
static void
ckverify_at(struct ckverify *v, struct ckverify_at *at)
{
	at->seq = v->chain.last_seq;
	util_strlcpy(at->file, v->chain.file, sizeof(at->file));
	at->line = v->chain.lineno;
}

/*
 * Not trusted from the event after the last good checkpoint (or from the
 * first event) on; the current line showed it. Returns -1.
 */
static int
ckverify_fail(struct ckverify *v, const char *fmt, ...)
{
	va_list	ap;

	v->failed = 1;
	ckverify_at(v, &v->fail_at);
	if (v->have_good && v->after > 0)
		v->untrusted = v->after_at;
	else if (v->have_good)
		v->untrusted = v->fail_at;
	else
		v->untrusted = v->first_at;
	va_start(ap, fmt);
	vsnprintf(v->what, sizeof(v->what), fmt, ap);
	va_end(ap);
	return -1;
}

/*
 * The parsed line when its event is `event` (log.checkpoint or
 * log.resume), else NULL. Only a line with the member as the writer
 * spells it is parsed (again): one that spells it otherwise is read as an
 * event, which can only lower what the log is trusted for.
 */
static json_t *
ckverify_named(const char *line, size_t len, const char *event)
{
	char		 mark[64];
	json_t		*obj;
	json_error_t	 err;
	const char	*ev;
	int		 n;

	n = snprintf(mark, sizeof(mark), "\"event\":\"%s\"", event);
	if (n < 0 || (size_t)n >= sizeof(mark) ||
	    memmem(line, len, mark, (size_t)n) == NULL)
		return NULL;
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (obj == NULL)
		return NULL;
	ev = json_string_value(json_object_get(obj, "event"));
	if (ev == NULL || strcmp(ev, event) != 0) {
		json_decref(obj);
		return NULL;
	}
	return obj;
}

/* 1 if s is 64 lowercase hex digits. */
static int
ckverify_is_hex(const char *s)
{
	return strlen(s) == LOGVERIFY_HASH_HEX &&
	    logverify_is_hex(s, LOGVERIFY_HASH_HEX);
}

/* A string member without NUL bytes, or NULL. */
static const char *
ckverify_str(json_t *obj, const char *key)
{
	json_t	*v = json_object_get(obj, key);

	if (!json_is_string(v) ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

/* An integer member in [0, CKVERIFY_NUM_MAX]; 0 or -1. */
static int
ckverify_num(json_t *obj, const char *key, unsigned long long *out)
{
	json_t	*v = json_object_get(obj, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    json_integer_value(v) > CKVERIFY_NUM_MAX)
		return -1;
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

/*
 * Check a checkpoint line's members into *cp (strings borrowed from obj).
 * Returns NULL, or what is wrong.
 */
static const char *
ckverify_parse(json_t *obj, struct ckverify_cp *cp)
{
	struct checkpoint_fields	*f = &cp->f;
	unsigned char			 raw[CHECKPOINT_KEY_RAW];
	json_t				*next = json_object_get(obj, "next_key");
	const char			*sig, *bad;
	int64_t				 us;

	memset(cp, 0, sizeof(*cp));
	f->seq = json_integer_value(json_object_get(obj, "seq"));
	f->prev = ckverify_str(obj, "prev");
	if (json_object_size(obj) != CKVERIFY_MEMBERS && json_object_size(obj)
	    != CKVERIFY_MEMBERS + 2)
		return "members missing or added";
	if ((f->ts = ckverify_str(obj, "ts")) == NULL ||
	    ckverify_parse_ts(f->ts, &us) == -1)
		return "ts is not a time as the writer writes it";
	if ((f->reason = ckverify_str(obj, "reason")) == NULL ||
	    !checkpoint_reason_valid(f->reason))
		return "unknown reason";
	if ((bad = ckverify_parse_torn(obj, f)) != NULL)
		return bad;
	if (json_object_size(obj) != CKVERIFY_MEMBERS + (f->torn > 0 ? 2 : 0))
		return "members missing or added";
	if ((f->key = ckverify_str(obj, "key")) == NULL ||
	    checkpoint_b64_decode(f->key, raw, sizeof(raw)) == -1)
		return "key is not a base64 Ed25519 public key";
	if (strcmp(f->reason, "key") == 0) {
		f->next_key = ckverify_str(obj, "next_key");
		if (f->next_key == NULL || checkpoint_b64_decode(f->next_key,
		    raw, sizeof(raw)) == -1 || strcmp(f->next_key, f->key) == 0)
			return "next_key is not another base64 Ed25519 key";
	} else if (!json_is_null(next))
		return "next_key is set but the reason is not key";
	if (ckverify_num(obj, "every_events", &f->every_events) == -1 ||
	    ckverify_num(obj, "every_secs", &f->every_secs) == -1)
		return "every_events or every_secs is not a count";
	if ((sig = ckverify_str(obj, "sig")) == NULL ||
	    checkpoint_b64_decode(sig, cp->sig, sizeof(cp->sig)) == -1)
		return "sig is not a base64 Ed25519 signature";
	return NULL;
}

/*
 * A checkpoint line's torn and torn_hash (into f): absent, or in a rotate
 * line a count above 0 and 64 hex digits (checkpoint.h). NULL, or what
 * is wrong.
 */
static const char *
ckverify_parse_torn(json_t *obj, struct checkpoint_fields *f)
{
	json_t	*n = json_object_get(obj, "torn");
	json_t	*h = json_object_get(obj, "torn_hash");

	if (n == NULL && h == NULL)
		return NULL;
	f->torn_hash = ckverify_str(obj, "torn_hash");
	if (!json_is_integer(n) || json_integer_value(n) <= 0 ||
	    json_integer_value(n) > INT_MAX || f->torn_hash == NULL ||
	    !ckverify_is_hex(f->torn_hash))
		return "torn is not a count with a torn_hash of 64 hex digits";
	if (f->reason == NULL || strcmp(f->reason, "rotate") != 0)
		return "torn is set but the reason is not rotate";
	f->torn = (unsigned long long)json_integer_value(n);
	return NULL;
}

static struct ckverify_key *
ckverify_find(struct ckverify *v, const char *id)
{
	size_t	i;

	for (i = 0; i < v->nkeys; i++)
		if (strcmp(v->keys[i].id, id) == 0)
			return &v->keys[i];
	return NULL;
}

/* 1 if cp's signature verifies with pkey. */
static int
ckverify_sig_ok(EVP_PKEY *pkey, const struct ckverify_cp *cp)
{
	char		 msg[CHECKPOINT_MSG_MAX];
	size_t		 len;

	if ((len = checkpoint_message(&cp->f, msg, sizeof(msg))) == 0)
		return 0;
	return checkpoint_ed25519_verify(pkey, msg, len, cp->sig);
}

/* A line no good checkpoint after it vouches for yet. */
static void
ckverify_event(struct ckverify *v)
{
	if (v->after++ == 0)
		ckverify_at(v, &v->after_at);
}

/* A good checkpoint: it vouches for everything before it. */
static int
ckverify_good(struct ckverify *v, struct ckverify_key *k,
    const struct ckverify_cp *cp)
{
	const struct checkpoint_fields	*f = &cp->f;
	struct ckverify_key		*n;

	if (strcmp(f->reason, "open") == 0 && v->have_good && !v->closed &&
	    v->after > 0) {
		/* The writer before did not close: these were signed late. */
		if (v->restarts++ == 0) {
			ckverify_at(v, &v->restart);
			v->restart_from = v->after_at.seq;
		}
	} else if (strcmp(f->reason, "open") == 0 && v->have_good &&
	    !v->closed && v->stops++ == 0) {
		/* ...right after a checkpoint (or the log was cut to one). */
		v->stop_at = v->good_at.seq;
		util_strlcpy(v->stop_reason, v->good_reason,
		    sizeof(v->stop_reason));
	}
	if (f->next_key != NULL) {
		n = ckverify_find(v, f->next_key);
		if (n == NULL && v->nkeys == CKVERIFY_KEYS_MAX)
			return ckverify_fail(v, "checkpoint (seq %lld) hands "
			    "over to a key past the %d keys this check holds",
			    f->seq, CKVERIFY_KEYS_MAX);
		if (n == NULL) {
			n = &v->keys[v->nkeys++];
			memset(n, 0, sizeof(*n));
			util_strlcpy(n->id, f->next_key, sizeof(n->id));
			n->pkey = checkpoint_key_from_id(f->next_key);
			n->introduced = 1;
		}
		util_strlcpy(k->next, f->next_key, sizeof(k->next));
		k->handover_seq = f->seq;
	}
	k->signs++;
	v->good++;
	v->have_good = 1;
	ckverify_at(v, &v->good_at);
	ckverify_mark(v);
	util_strlcpy(v->good_ts, f->ts, sizeof(v->good_ts));
	(void)ckverify_parse_ts(f->ts, &v->good_us);
	util_strlcpy(v->good_reason, f->reason, sizeof(v->good_reason));
	util_strlcpy(v->good_key, k->next[0] ? k->next : k->id,
	    sizeof(v->good_key));
	v->every_events = f->every_events;
	v->every_secs = f->every_secs;
	if (strcmp(f->reason, "close") == 0) {
		v->last_close = f->seq;
		v->close_resumed = 0;
		v->close_signed = 0;
	} else if (v->last_close > 0 && v->close_signed == 0)
		v->close_signed = f->seq;
	/* A writer introduces a next key at its start, before its open. */
	v->closed = strcmp(f->reason, "close") == 0 ||
	    (strcmp(f->reason, "key") == 0 && v->closed && v->after == 0);
	v->after = 0;
	return 0;
}

/* A checkpoint line (obj) that continued the chain. */
static int
ckverify_one(struct ckverify *v, json_t *obj)
{
	struct ckverify_cp	 cp;
	struct ckverify_key	*k;
	const char		*bad;

	v->checkpoints++;
	if (v->nkeys == 0) {
		ckverify_event(v);
		return 0;
	}
	if ((bad = ckverify_parse(obj, &cp)) != NULL)
		return ckverify_fail(v, "checkpoint (seq %lld) is malformed: "
		    "%s", v->chain.last_seq, bad);
	if ((k = ckverify_find(v, cp.f.key)) == NULL || k->pkey == NULL) {
		v->foreign++;
		ckverify_event(v);
		return 0;
	}
	if (!ckverify_sig_ok(k->pkey, &cp))
		return ckverify_fail(v, "checkpoint (seq %lld) does not verify "
		    "with its key %s: the lines before it changed after it was "
		    "signed, or it was made up", cp.f.seq, k->id);
	if (k->next[0] != '\0') {
		if (cp.f.next_key != NULL && strcmp(cp.f.next_key,
		    k->next) == 0) {
			v->reintroduced++;	/* a restart mid-rotation */
			ckverify_event(v);
			return 0;
		}
		return ckverify_fail(v, "checkpoint (seq %lld) is signed by "
		    "key %s, which handed over to key %s at seq %lld",
		    cp.f.seq, k->id, k->next, k->handover_seq);
	}
	if (ckverify_rotate_torn(v, &cp.f) == -1)
		return -1;
	return ckverify_good(v, k, &cp);
}

/*
 * A good rotate line that declares the torn lines at the end of the file
 * before it (f->torn, checkpoint.h): when the chain starts at it with no
 * torn line read (that file rotated away, atk20r22 F4) they are taken as
 * read, for the log.outage or log.resume after it to count; else the
 * torn lines read before it must be exactly those (atk20r23 F1). 0, or
 * -1 with the verdict.
 */
static int
ckverify_rotate_torn(struct ckverify *v, const struct checkpoint_fields *f)
{
	if (f->torn == 0)
		return 0;
	if (v->chain.events == 1 && v->torn_prior == 0)
		return ckverify_torn_declared(v, f);
	if ((unsigned long long)v->torn_prior == f->torn &&
	    strcmp(v->torn_prior_hash, f->torn_hash) == 0)
		return 0;
	return ckverify_fail(v, "%s:%zu: the rotate checkpoint at seq %lld "
	    "declares %llu torn line(s) (interrupted writes) at the end of the "
	    "file before it, the log holds %d%s: torn lines were removed, "
	    "rewritten or put in", v->chain.file, v->chain.lineno, f->seq,
	    f->torn, v->torn_prior, (unsigned long long)v->torn_prior ==
	    f->torn ? " with other bytes" : "");
}

/*
 * The chain starts at a rotate line that declares torn lines, none read
 * in a file before its own (rotated away): they are taken as read, and
 * the torn lines read in its own file before it (a start killed inside
 * the rotate line it began that file with, atk20r24 F2) follow them, as
 * their writer counted them. 0, or -1 with the verdict.
 */
static int
ckverify_torn_declared(struct ckverify *v, const struct checkpoint_fields *f)
{
	const char	*p, *e, *end = v->head_torn + v->head_len;

	v->torn_event = (int)f->torn;
	util_strlcpy(v->torn_hash, f->torn_hash, sizeof(v->torn_hash));
	for (p = v->head_torn; p != NULL && p < end; p = e + 1) {
		e = memchr(p, '\n', (size_t)(end - p));
		if (logverify_torn_hash(v->torn_hash, p, (size_t)(e - p)) == -1)
			util_strlcpy(v->torn_hash, "?", sizeof(v->torn_hash));
		v->torn_event++;
	}
	if (v->head_lost)
		util_strlcpy(v->torn_hash, "?", sizeof(v->torn_hash));
	if (v->head_len == 0)
		ckverify_at(v, &v->torn_at);
	return 0;
}

/* Keep the last good checkpoint's seq and hash in the ring. */
static void
ckverify_mark(struct ckverify *v)
{
	struct ckverify_mark	*m = &v->ring[v->nring++ % CKVERIFY_RING];

	m->seq = v->chain.last_seq;
	util_strlcpy(m->hash, v->chain.last_hash, sizeof(m->hash));
	memset(&m->next, 0, sizeof(m->next));
}

/* The current line follows the last good checkpoint: note where. */
static void
ckverify_mark_next(struct ckverify *v)
{
	struct ckverify_mark	*m;

	if (v->nring == 0)
		return;
	m = &v->ring[(v->nring - 1) % CKVERIFY_RING];
	if (m->next.seq == 0)
		ckverify_at(v, &m->next);
}

/* The good checkpoint seq among the last CKVERIFY_RING, or NULL. */
static const struct ckverify_mark *
ckverify_mark_find(const struct ckverify *v, long long seq)
{
	size_t	i, n = v->nring < CKVERIFY_RING ? v->nring : CKVERIFY_RING;

	for (i = 0; i < n; i++)
		if (v->ring[i].seq == seq)
			return &v->ring[i];
	return NULL;
}

/*
 * A log.resume's anchor_tail_seq and anchor_tail_hash (both or neither):
 * the last line the writer said it left after its close. NULL, or what
 * is wrong.
 */
static const char *
ckverify_resume_tail(json_t *obj, struct ckverify_resume *r)
{
	json_t	*ts = json_object_get(obj, "anchor_tail_seq");

	r->tail_hash = ckverify_str(obj, "anchor_tail_hash");
	if (ts == NULL && json_object_get(obj, "anchor_tail_hash") == NULL)
		return NULL;
	if (!json_is_integer(ts) || json_integer_value(ts) < 1 ||
	    r->tail_hash == NULL || !ckverify_is_hex(r->tail_hash))
		return "anchor_tail_seq or anchor_tail_hash is not a count "
		    "and 64 hex digits";
	r->tail_seq = json_integer_value(ts);
	return NULL;
}

/*
 * The writer had left seq tail_seq last (its anchor's tail=): a log found
 * ending before it was cut, one holding another line there rewritten.
 * 0, or -1 with the verdict.
 */
static int
ckverify_resume_cut(struct ckverify *v, const struct ckverify_resume *r,
    long long seq)
{
	if (r->tail_seq == 0 || (r->found_seq > r->tail_seq) ||
	    (r->found_seq == r->tail_seq &&
	    strcmp(r->found_hash, r->tail_hash) == 0))
		return 0;
	if (r->found_seq < r->tail_seq)
		ckverify_fail(v, "the writer found the log ending at seq %lld, "
		    "but its anchor says it had left seq %lld last (tail=, "
		    "after its close at seq %lld): seq %lld to %lld were cut "
		    "(log.resume, seq %lld)", r->found_seq, r->tail_seq,
		    r->anchor_seq, r->found_seq + 1, r->tail_seq, seq);
	else
		ckverify_fail(v, "seq %lld is not the line the writer had "
		    "left last (its anchor's tail=, after its close at seq "
		    "%lld): it was rewritten (log.resume, seq %lld)",
		    r->tail_seq, r->anchor_seq, seq);
	ckverify_untrusted_at(v, r->found_seq < r->anchor_seq ?
	    r->found_seq : r->anchor_seq);
	return -1;
}

/*
 * The writer had closed the log (a close it had not reopened): whatever
 * it found after it, someone else wrote. 0, or -1 with the verdict.
 */
static int
ckverify_resume_closed(struct ckverify *v, const struct ckverify_resume *r,
    long long seq)
{
	if (strcmp(r->anchor_reason, "close") != 0 || r->reopened)
		return 0;
	if (r->found_seq == r->anchor_seq)
		ckverify_fail(v, "the writer found a line that is not a log "
		    "line (torn, or not one at all) after its close at seq "
		    "%lld: it had closed the log, so someone else wrote it "
		    "(log.resume, seq %lld)", r->anchor_seq, seq);
	else
		ckverify_fail(v, "%lld line(s) (seq %lld to %lld) follow the "
		    "writer's close at seq %lld: it had closed the log, so "
		    "someone else wrote them (log.resume, seq %lld)",
		    r->found_seq - r->anchor_seq, r->anchor_seq + 1,
		    r->found_seq, r->anchor_seq, seq);
	ckverify_untrusted_at(v, r->anchor_seq);
	return -1;
}

/* Check a log.resume line's members into *r. NULL, or what is wrong. */
/*
 * A log.resume's torn member: absent (an older writer), or a count; its
 * torn_hash: absent (older still), or "" or 64 hex digits with a torn.
 */
static const char *
ckverify_resume_torn(json_t *obj, struct ckverify_resume *r)
{
	json_t		*torn = json_object_get(obj, "torn");
	const char	*h;

	r->has_torn = torn != NULL;
	if (torn != NULL && (!json_is_integer(torn) ||
	    json_integer_value(torn) < 0))
		return "torn is not a count";
	r->has_torn_hash = json_object_get(obj, "torn_hash") != NULL;
	h = json_string_value(json_object_get(obj, "torn_hash"));
	if (r->has_torn_hash && (torn == NULL || h == NULL ||
	    (h[0] != '\0' && !ckverify_is_hex(h))))
		return "torn_hash is not 64 hex digits with a torn count";
	return NULL;
}

static const char *
ckverify_resume_parse(json_t *obj, struct ckverify_resume *r)
{
	json_t	*as = json_object_get(obj, "anchor_seq");
	json_t	*fs = json_object_get(obj, "found_seq");
	const char *bad;
	int64_t	 us;

	memset(r, 0, sizeof(*r));
	r->reopened = json_object_get(obj, "anchor_reopened") != NULL;
	if (r->reopened && !json_is_true(json_object_get(obj,
	    "anchor_reopened")))
		return "anchor_reopened is not true";
	if ((bad = ckverify_resume_tail(obj, r)) != NULL)
		return bad;
	if ((bad = ckverify_resume_torn(obj, r)) != NULL)
		return bad;
	if (json_object_size(obj) != CKVERIFY_RESUME_MEMBERS +
	    (size_t)r->reopened + (r->tail_seq > 0 ? 2 : 0) +
	    (size_t)r->has_torn + (size_t)r->has_torn_hash)
		return "members missing or added";
	if (!json_is_integer(as) || json_integer_value(as) < 0 ||
	    !json_is_integer(fs) || json_integer_value(fs) < 0)
		return "anchor_seq or found_seq is not a count";
	r->anchor_seq = json_integer_value(as);
	r->found_seq = json_integer_value(fs);
	if ((r->anchor_hash = ckverify_str(obj, "anchor_hash")) == NULL ||
	    !ckverify_is_hex(r->anchor_hash) ||
	    (r->found_hash = ckverify_str(obj, "found_hash")) == NULL ||
	    !ckverify_is_hex(r->found_hash))
		return "anchor_hash or found_hash is not 64 hex digits";
	if ((r->anchor_reason = ckverify_str(obj, "anchor_reason")) == NULL ||
	    !checkpoint_reason_valid(r->anchor_reason))
		return "unknown anchor_reason";
	if ((r->reopened || r->tail_seq > 0) &&
	    strcmp(r->anchor_reason, "close") != 0)
		return "anchor_reopened or a tail, but anchor_reason is not "
		    "close";
	if ((r->anchor_ts = ckverify_str(obj, "anchor_ts")) == NULL ||
	    ckverify_parse_ts(r->anchor_ts, &us) == -1)
		return "anchor_ts is not a time as the writer writes it";
	r->prev = ckverify_str(obj, "prev");
	return NULL;
}

/*
 * After ckverify_fail(): the first event not trusted is the line after
 * the last good checkpoint at or before seq `upto` (a rotation checkpoint
 * the writer put first in a new file after it found the log does not
 * vouch for what it found), looked for among the last CKVERIFY_RING; when
 * no line follows that checkpoint, the lines after it are missing; when
 * none is left, the first event.
 */
static void
ckverify_untrusted_at(struct ckverify *v, long long upto)
{
	const struct ckverify_mark	*m;
	size_t				 i, n;

	n = v->nring < CKVERIFY_RING ? v->nring : CKVERIFY_RING;
	for (i = 0; i < n; i++) {
		m = &v->ring[(v->nring - 1 - i) % CKVERIFY_RING];
		if (m->seq > upto)
			continue;
		if (m->next.seq != 0)
			v->untrusted = m->next;
		else {
			v->untrusted.seq = m->seq + 1;
			v->untrusted.line = 0;
		}
		return;
	}
	v->untrusted = v->first_at;
}

/*
 * Lines after the last good close up to found_seq are a writer's that
 * went on from it, not someone else's, when they start with a log.resume
 * naming that close (its writer found the log ending there) and a good
 * checkpoint after the close, at or before found_seq, signs them: only
 * the private key makes one. A writer killed before its anchor named the
 * close, then the next one killed before its anchor named its own
 * checkpoint, leave just that.
 */
static int
ckverify_close_went_on(const struct ckverify *v, long long found_seq)
{
	return v->close_resumed && v->close_signed > v->last_close &&
	    v->close_signed <= found_seq;
}

/*
 * A log.resume with anchor_seq 0: its writer had no anchor (its first
 * start, or the anchor moved away) and found lines in the log; its key
 * signed none of them, so the lines after the last good checkpoint up to
 * found_seq are someone else's as far as the key can tell (atk20r17 F3).
 * Returns -1 with the verdict when there are such lines.
 */
static int
ckverify_resume_unanchored(struct ckverify *v,
    const struct ckverify_resume *r, long long seq)
{
	long long	from = v->have_good ? v->good_at.seq + 1 :
			    v->first_at.seq;

	if (r->found_seq < from) {
		ckverify_event(v);
		return 0;
	}
	ckverify_fail(v, "the writer had no anchor yet when it found the log "
	    "ending at seq %lld (log.resume, seq %lld): no checkpoint of its "
	    "key vouches for seq %lld to %lld, which were in the log before "
	    "it; they are not its lines", r->found_seq, seq, from,
	    r->found_seq);
	ckverify_untrusted_at(v, r->found_seq);
	return -1;
}

/*
 * The checkpoint a log.resume names (the writer's anchor when it
 * started) must be in the log as written: a rewrite before it shows.
 * One rotated away since, with the files before the chain's start, is
 * past comparing: noted (the chain's first line is a good rotate
 * checkpoint, and the anchor's first= tells a removal from a rotation),
 * not taken for a rewrite (atk20r19 F2). 0, or -1 with the verdict.
 */
static int
ckverify_resume_anchor(struct ckverify *v, const struct ckverify_resume *r,
    long long seq)
{
	const struct ckverify_mark	*m;

	m = ckverify_mark_find(v, r->anchor_seq);
	if (m == NULL && !v->chain.genesis &&
	    r->anchor_seq < v->chain.first_seq) {
		if (v->resumes_gone++ == 0)
			v->resume_gone_seq = r->anchor_seq;
		return 0;
	}
	if (m == NULL && v->nring > CKVERIFY_RING &&
	    r->anchor_seq < v->ring[v->nring % CKVERIFY_RING].seq) {
		/* Not kept: say so, do not claim a rewrite. */
		ckverify_fail(v, "the checkpoint the writer had signed last "
		    "(seq %lld, %s, %s) is further back than the last %d good "
		    "checkpoints this check keeps, so it cannot tell whether "
		    "the log was rewritten before the writer found it ending "
		    "at seq %lld (log.resume, seq %lld)", r->anchor_seq,
		    r->anchor_reason, r->anchor_ts, CKVERIFY_RING, r->found_seq,
		    seq);
		ckverify_untrusted_at(v, r->found_seq);
		return -1;
	}
	if (m == NULL || strcmp(m->hash, r->anchor_hash) != 0) {
		ckverify_fail(v, "the checkpoint the writer had signed last "
		    "(seq %lld, %s, %s) is not in the log as it wrote it: the "
		    "log was rewritten or replaced before the writer found it "
		    "ending at seq %lld (log.resume, seq %lld)", r->anchor_seq,
		    r->anchor_reason, r->anchor_ts, r->found_seq, seq);
		ckverify_untrusted_at(v, r->found_seq);
		return -1;
	}
	return 0;
}

/*
 * A log.resume line: the writer found the log not ending with the
 * checkpoint it had signed last (its anchor). Fine only when that
 * checkpoint is in the log as it wrote it, was not a close (or a close
 * the anchor says the writer had gone on from: checkpoint.h), no good
 * close follows it with lines after that close, and the log went on
 * after it: a writer that stopped without closing.
 */
static int
ckverify_resume(struct ckverify *v, json_t *obj)
{
	struct ckverify_resume		 r;
	const char			*bad;
	long long			 seq = v->chain.last_seq;

	v->resumes++;
	if (v->nkeys == 0) {
		ckverify_event(v);
		return 0;
	}
	if ((bad = ckverify_resume_parse(obj, &r)) != NULL)
		return ckverify_fail(v, "log.resume (seq %lld) is malformed: %s",
		    seq, bad);
	if (r.found_seq >= seq || (r.found_seq == seq - 1 &&
	    (r.prev == NULL || strcmp(r.prev, r.found_hash) != 0)))
		return ckverify_fail(v, "log.resume (seq %lld) names a last "
		    "line (seq %lld) that is not before it", seq, r.found_seq);
	if (r.anchor_seq == 0)
		return ckverify_resume_unanchored(v, &r, seq);
	if (r.anchor_seq > r.found_seq) {
		ckverify_fail(v, "the writer found the log ending at seq %lld, "
		    "but it had signed up to seq %lld (%s, %s): seq %lld to "
		    "%lld were cut, or the log was replaced (log.resume, seq "
		    "%lld)", r.found_seq, r.anchor_seq, r.anchor_reason,
		    r.anchor_ts, r.found_seq + 1, r.anchor_seq, seq);
		ckverify_untrusted_at(v, r.found_seq);
		return -1;
	}
	if (ckverify_resume_anchor(v, &r, seq) == -1 ||
	    ckverify_resume_cut(v, &r, seq) == -1 ||
	    ckverify_resume_closed(v, &r, seq) == -1)
		return -1;
	if (v->last_close > r.anchor_seq && v->last_close < r.found_seq &&
	    !ckverify_close_went_on(v, r.found_seq)) {
		ckverify_fail(v, "the writer closed the log at seq %lld, after "
		    "the checkpoint its anchor names (seq %lld, %s): %lld "
		    "line(s) (seq %lld to %lld) follow that close, so someone "
		    "else wrote them (log.resume, seq %lld)", v->last_close,
		    r.anchor_seq, r.anchor_reason, r.found_seq - v->last_close,
		    v->last_close + 1, r.found_seq, seq);
		ckverify_untrusted_at(v, v->last_close);
		return -1;
	}
	/* The writer after the close recorded it first (the chain holds). */
	if (r.found_seq == v->last_close && seq == v->last_close + 1)
		v->close_resumed = 1;
	if (v->crashes++ == 0)
		ckverify_at(v, &v->crash);
	ckverify_event(v);
	return 0;
}

/* A line that continued the chain: a checkpoint, a resume, an event. */
static int
ckverify_line(struct ckverify *v, const char *line, size_t len)
{
	json_t	*obj;
	int	 rc;

	ckverify_mark_next(v);
	if ((obj = ckverify_named(line, len, "log.outage")) != NULL) {
		ckverify_outage(v, obj);
		json_decref(obj);
	}
	if ((obj = ckverify_named(line, len, CHECKPOINT_EVENT)) != NULL) {
		rc = ckverify_one(v, obj);
		json_decref(obj);
		return rc;
	}
	if ((obj = ckverify_named(line, len, CHECKPOINT_RESUME)) != NULL) {
		rc = ckverify_resume(v, obj);
		json_decref(obj);
		return rc;
	}
	ckverify_event(v);
	return 0;
}

/*
 * The first line: a chain that does not start at the first event ever
 * must start with a good rotation checkpoint, which a writer puts first
 * in every new file; else lines were cut from the front of a file.
 */
static int
ckverify_start(struct ckverify *v)
{
	if (v->nkeys == 0 || v->chain.genesis)
		return 0;
	if (v->have_good && v->good_at.seq == v->chain.last_seq &&
	    strcmp(v->good_reason, "rotate") == 0)
		return 0;
	ckverify_fail(v, "the chain starts at seq %lld, not with the first "
	    "event ever nor with a rotation checkpoint of a trusted key (the "
	    "first line of every file a writer starts): lines before it were "
	    "cut from the file, not rotated away", v->chain.last_seq);
	v->untrusted.seq = v->chain.last_seq - 1;
	v->untrusted.line = 0;
	return -1;
}

/* The writer's anchored line, when the chain gets to its seq. */
static int
ckverify_anchor_pass(struct ckverify *v)
{
	if (v->have_anchor && v->nkeys > 0 && v->anchor.reopened &&
	    v->anchor.tail_seq > 0 && v->chain.last_seq == v->anchor.tail_seq)
		v->tail_seen = strcmp(v->chain.last_hash,
		    v->anchor.tail_hash) == 0 ? 1 : -1;
	if (!v->have_anchor || v->nkeys == 0 || v->anchor_seen ||
	    v->chain.last_seq != v->anchor.seq)
		return 0;
	if (strcmp(v->chain.last_hash, v->anchor.hash) == 0) {
		v->anchor_seen = 1;
		return 0;
	}
	return ckverify_fail(v, "seq %lld is not the line its writer signed "
	    "(its anchor: %s, %s, hash %.16s...): the log was rewritten at or "
	    "before it", v->anchor.seq, v->anchor.reason, v->anchor.ts,
	    v->anchor.hash);
}

/* Append line (len bytes) and a newline to *buf (*blen); *lost if not. */
static void
ckverify_keep(char **buf, size_t *blen, int *lost, const char *line,
    size_t len)
{
	char	*p;

	if ((p = realloc(*buf, *blen + len + 1)) == NULL) {
		*lost = 1;	/* no digest or rotate line matches */
		return;
	}
	memcpy(p + *blen, line, len);
	p[*blen + len] = '\n';
	*buf = p;
	*blen += len + 1;
}

/*
 * 0 if every torn line read in this file since its last log line is the
 * rotate line (line, len bytes) cut short, as a start killed inside it
 * leaves it (logverify_cut_rotate()); else how many lines back from the
 * rotate line the first other one is: it was put there.
 */
static size_t
ckverify_cut_rotates(const struct ckverify *v, const char *line, size_t len)
{
	const char	*p, *e, *end = v->file_torn + v->file_len;
	size_t		 n = 0, bad = 0;

	for (p = v->file_torn; p != NULL && p < end; p = e + 1) {
		e = memchr(p, '\n', (size_t)(end - p));
		n++;
		if (bad == 0 && !logverify_cut_rotate(p, (size_t)(e - p),
		    line, len))
			bad = n;
	}
	if (bad == 0 && v->file_lost)
		return 1;
	return bad == 0 ? 0 : n - bad + 1;
}

/*
 * A torn line: whatever it seems to hold (an event's name is only bytes
 * in it, spelled as the one who put it there liked, atk20r18 F1), a
 * writer that cut a line puts a log.outage (or a log.resume) after it,
 * counting it lost: the first one's place is kept for the verdict, the
 * bytes of each go into a digest to match its "torn_hash" (F1, F4).
 */
static void
ckverify_torn(struct ckverify *v, const char *line, size_t len)
{
	if (logverify_torn_hash(v->torn_hash, line, len) == -1)
		util_strlcpy(v->torn_hash, "?", sizeof(v->torn_hash));
	/* Before the first event: kept (ckverify_torn_declared()). */
	if (v->chain.events == 0)
		ckverify_keep(&v->head_torn, &v->head_len, &v->head_lost, line,
		    len);
	ckverify_keep(&v->file_torn, &v->file_len, &v->file_lost, line, len);
	if (v->torn_event++ == 0) {
		v->torn_at.seq = v->chain.last_seq + 1;
		util_strlcpy(v->torn_at.file, v->chain.file,
		    sizeof(v->torn_at.file));
		v->torn_at.line = v->chain.lineno;
	}
}

/*
 * How many torn lines may precede a log.outage or log.resume line (obj):
 * its "torn", the torn lines its writer left or found before it (atk20r19
 * F4, F5); a line of an older writer, without it, old: its "lost" for a
 * log.outage (each cut line is one its writer lost, atk20r18 F4), 1 for
 * a log.resume (the one its writer found at the end).
 */
static long long
ckverify_torn_bound(json_t *obj, const char *member, long long old)
{
	json_t	*n = json_object_get(obj, "torn");

	if (n == NULL && member != NULL)
		n = json_object_get(obj, member);
	else if (n == NULL)
		return old;
	return json_is_integer(n) ? (long long)json_integer_value(n) : 0;
}

/*
 * The torn lines before a log.outage or log.resume line (name, at seq
 * last_seq) that counts bound of them. With a "torn_hash" (a writer
 * since atk20r20) exactly those lines, with the bytes its writer left or
 * found: none removed, rewritten, or grown by bytes someone put before
 * the writer's own (F1, F4); without, at most bound. 0, or -1.
 */
static int
ckverify_torn_match(struct ckverify *v, json_t *obj, const char *name,
    long long bound)
{
	const char	*h = json_string_value(json_object_get(obj,
			    "torn_hash"));
	int		 n = v->torn_event;

	if (n < bound && h != NULL)
		return ckverify_fail(v, "%s:%zu: the %s at seq %lld counts "
		    "%lld torn line(s) (interrupted writes) before it, the "
		    "log holds %d: a torn line was removed", v->chain.file,
		    v->chain.lineno, name, v->chain.last_seq, bound, n);
	if (n > bound)
		return ckverify_fail(v, "%s:%zu: %d torn line(s) (interrupted "
		    "writes) before the %s at seq %lld, which counts fewer "
		    "(%lld): lines were put in the log", v->torn_at.file,
		    v->torn_at.line, n, name, v->chain.last_seq,
		    bound < 0 ? 0 : bound);
	if (h == NULL || strcmp(h, n > 0 ? v->torn_hash : "") == 0)
		return 0;
	return ckverify_fail(v, "%s:%zu: the torn line(s) before the %s at "
	    "seq %lld are not the bytes its writer left or found (its "
	    "torn_hash): a torn line was rewritten, or bytes were put before "
	    "the writer's own", v->torn_at.file, v->torn_at.line, name,
	    v->chain.last_seq);
}

/*
 * The log line after torn lines: a log.resume or a log.outage that
 * accounts for them (ckverify_torn_match(); any such line is matched,
 * torn lines before it or not) says what became of them; a rotate
 * checkpoint may come first (a new file starts with one). 0, or -1 with
 * the verdict.
 */
static int
ckverify_torn_after(struct ckverify *v, const char *line, size_t len)
{
	json_t		*obj;
	const char	*reason, *name = "log.outage";
	long long	 bound;
	size_t		 back;
	int		 rotate, rc;

	if (v->nkeys == 0)
		return 0;
	if ((obj = ckverify_named(line, len, name)) != NULL)
		bound = ckverify_torn_bound(obj, "lost", 0);
	else if ((obj = ckverify_named(line, len, CHECKPOINT_RESUME)) != NULL) {
		name = CHECKPOINT_RESUME;
		bound = ckverify_torn_bound(obj, NULL, 1);
	}
	if (obj != NULL) {
		rc = ckverify_torn_match(v, obj, name, bound);
		json_decref(obj);
		v->torn_event = 0;
		v->torn_hash[0] = '\0';
		return rc;
	}
	if (!v->torn_event)
		return 0;
	if ((obj = ckverify_named(line, len, CHECKPOINT_EVENT)) != NULL) {
		reason = json_string_value(json_object_get(obj, "reason"));
		rotate = reason != NULL && strcmp(reason, "rotate") == 0;
		json_decref(obj);
		if (rotate && (back = ckverify_cut_rotates(v, line, len)) == 0)
			return 0;
		if (rotate)
			return ckverify_fail(v, "%s:%zu looks like a torn line "
			    "(an interrupted write) before the rotate line at "
			    "seq %lld in its file, but it is not that line cut "
			    "short, the only torn line a writer leaves there: "
			    "it was put in the log", v->chain.file,
			    v->chain.lineno > back ? v->chain.lineno - back : 0,
			    v->chain.last_seq);
	}
	return ckverify_fail(v, "%s:%zu looks like a torn line (an "
	    "interrupted write), but the log line after it (seq %lld) is not "
	    "the log.outage or log.resume line its writer puts after a line "
	    "it could not write whole: it was put in the log",
	    v->torn_at.file, v->torn_at.line, v->chain.last_seq);
}

/* A log.outage line (obj): count what its writer lost. */
static void
ckverify_outage(struct ckverify *v, json_t *obj)
{
	json_t	*lost = json_object_get(obj, "lost");

	if (v->outages++ == 0)
		ckverify_at(v, &v->outage_at);
	if (json_is_integer(lost) && json_integer_value(lost) > 0)
		v->lost += (unsigned long long)json_integer_value(lost);
}

int
ckverify_feed(struct ckverify *v, const char *line, size_t len)
{
	size_t	before = v->chain.events, pending = v->chain.pending;
	int	rc;

	/* After a checkpoint that is not good, the chain is still checked. */
	if (logverify_feed(&v->chain, line, len) == -1 || v->failed)
		return -1;
	if (v->chain.events == before) {
		if (v->chain.pending > pending)
			ckverify_torn(v, line, len);
		return 0;	/* a torn line, settled later */
	}
	if (before == 0)
		ckverify_at(v, &v->first_at);
	if (ckverify_torn_after(v, line, len) == -1)
		return -1;
	v->file_len = 0;	/* torn lines in this file after this line */
	v->file_lost = 0;
	rc = ckverify_line(v, line, len);
	if (rc == 0 && before == 0)
		rc = ckverify_start(v);
	if (rc == 0)
		rc = ckverify_anchor_pass(v);
	return rc;
}

/* ckverify_feed() for logverify_lines(): stops only at a chain break. */
static int
ckverify_feed_line(void *arg, const char *line, size_t len)
{
	struct ckverify	*v = arg;

	return ckverify_feed(v, line, len) == -1 && v->chain.broken ? -1 : 0;
}

int
ckverify_buf(struct ckverify *v, const char *buf, size_t len)
{
	(void)logverify_lines(buf, len, ckverify_feed_line, v);
	return v->failed || v->chain.broken ? -1 : 0;
}

/*
 * The end of the log: what the last good checkpoint promised decides
 * whether the events after it may still be waiting for their signature.
 */
static void
ckverify_tail(struct ckverify *v, int64_t now_us)
{
	long long	age = (long long)((now_us - v->good_us) / 1000000);
	int		closed = strcmp(v->good_reason, "close") == 0;
	int		live;

	live = !closed && v->every_secs > 0 &&
	    age <= (long long)(2 * v->every_secs) &&
	    (v->every_events == 0 || v->after <= v->every_events);
	if (live)
		return;
	if (v->after == 0 && closed)
		return;
	if (v->after == 0) {
		ckverify_fail(v, "the log ends with checkpoint seq %lld (%s, "
		    "%s, %lld s ago), not with a close, and its writer signs "
		    "every %llu s while it runs: lines after seq %lld are "
		    "missing, or the writer stopped without closing the log",
		    v->good_at.seq, v->good_reason, v->good_ts, age,
		    v->every_secs, v->good_at.seq);
		v->untrusted.seq = v->good_at.seq + 1;
		v->untrusted.line = 0;
		return;
	}
	ckverify_fail(v, "%zu event(s) (seq %lld to %lld) follow the last good "
	    "checkpoint (seq %lld, %s, %s) and no checkpoint of a trusted key "
	    "signs them%s: the log was rewritten or cut after seq %lld, or its "
	    "writer stopped without closing it", v->after, v->after_at.seq,
	    v->chain.last_seq, v->good_at.seq, v->good_reason, v->good_ts,
	    closed ? " (the writer had closed the log)" : "", v->good_at.seq);
}

/*
 * The end of the log, the anchor's line held: an anchor with tail= (its
 * writer went on past its close, and stopped) names the last line it
 * left, which the log must hold as it wrote it.
 */
static void
ckverify_anchor_tail(struct ckverify *v)
{
	if (!v->anchor.reopened || v->anchor.tail_seq == 0 ||
	    v->tail_seen == 1)
		return;
	if (v->tail_seen == 0)
		ckverify_fail(v, "the log ends at seq %lld, but its writer's "
		    "anchor says it left seq %lld last (tail=, after its close "
		    "at seq %lld): seq %lld to %lld were cut",
		    v->chain.last_seq, v->anchor.tail_seq, v->anchor.seq,
		    v->chain.last_seq + 1, v->anchor.tail_seq);
	else
		ckverify_fail(v, "seq %lld is not the line its writer left "
		    "last (its anchor's tail=, after its close at seq %lld): "
		    "it was rewritten", v->anchor.tail_seq, v->anchor.seq);
	ckverify_untrusted_at(v, v->anchor.seq);
}

/* The end of the log: did the chain hold the writer's anchored line? */
static void
ckverify_anchor_end(struct ckverify *v)
{
	if (!v->have_anchor || v->failed)
		return;
	if (v->anchor_seen) {
		ckverify_anchor_tail(v);
		return;
	}
	if (v->chain.last_seq < v->anchor.seq) {
		ckverify_fail(v, "the log ends at seq %lld, but its writer's "
		    "anchor names seq %lld (%s, %s), the last checkpoint it "
		    "wrote: seq %lld to %lld were cut", v->chain.last_seq,
		    v->anchor.seq, v->anchor.reason, v->anchor.ts,
		    v->chain.last_seq + 1, v->anchor.seq);
		ckverify_untrusted_at(v, v->chain.last_seq);
		return;
	}
	ckverify_fail(v, "the log does not hold seq %lld, which its writer's "
	    "anchor names (%s, %s)", v->anchor.seq, v->anchor.reason,
	    v->anchor.ts);
	v->untrusted = v->first_at;
}

/*
 * The anchor says from which seq on its writer keeps the log: a chain
 * that starts later lost files the writer kept (rotated files deleted by
 * someone else look like files rotated away: each starts with a rotate
 * checkpoint).
 */
static void
ckverify_anchor_first(struct ckverify *v)
{
	if (!v->have_anchor || v->anchor.first == 0 || v->failed ||
	    !v->chain.started || v->chain.first_seq <= v->anchor.first)
		return;
	ckverify_fail(v, "the log starts at seq %lld, but its writer's anchor "
	    "says it keeps the log from seq %lld: seq %lld to %lld (rotated "
	    "files it kept) were removed", v->chain.first_seq,
	    v->anchor.first, v->anchor.first, v->chain.first_seq - 1);
	v->untrusted.seq = v->anchor.first;
	v->untrusted.line = 0;
}

/*
 * Every key given must sign a good checkpoint: a log that should hold a
 * key's checkpoints and has none was cut or rewritten before that key
 * took over, perhaps with a retired key that a thief kept.
 */
static void
ckverify_keys_used(struct ckverify *v)
{
	size_t	i;

	for (i = 0; i < v->nkeys && !v->failed; i++) {
		if (v->keys[i].introduced || v->keys[i].signs > 0)
			continue;
		ckverify_fail(v, "key %s, given as trusted, signs no checkpoint "
		    "of the log: the log was cut or rewritten before that key "
		    "took over, or give only the keys whose checkpoints these "
		    "files hold", v->keys[i].id);
		v->untrusted = v->first_at;
	}
}

/*
 * Torn lines end the log right after the tail its writer's anchor names
 * with torn=N:H (the torn lines it left there): exactly those, with
 * those bytes, while it is stopped (atk20r20 F5); none after torn=0
 * (atk20r22 F1). An older writer's anchor, without torn=, is not judged
 * here. 1 if that failed.
 */
static int
ckverify_torn_tail(struct ckverify *v)
{
	if (v->chain.broken || v->failed || v->nkeys == 0 ||
	    !v->have_anchor || !v->anchor.reopened || !v->anchor.have_torn ||
	    v->chain.last_seq != v->anchor.tail_seq ||
	    strcmp(v->chain.last_hash, v->anchor.tail_hash) != 0 ||
	    ((unsigned long long)v->torn_event == v->anchor.torn &&
	    (v->torn_event == 0 ||
	    strcmp(v->torn_hash, v->anchor.torn_hash) == 0)))
		return 0;
	ckverify_fail(v, "the log ends with %d torn line(s) after seq %lld, "
	    "the last line its writer's anchor names; the writer left %llu, "
	    "with other bytes (its torn=): torn lines were put in, removed or "
	    "rewritten", v->torn_event, v->anchor.tail_seq, v->anchor.torn);
	v->untrusted.seq = v->anchor.tail_seq + 1;
	v->untrusted.line = 0;
	return 1;
}

/*
 * Torn lines end the log, right after the close the anchor names, and the
 * anchor says its writer had not gone on past it (it says so before any
 * line after its close): someone else wrote them (atk20r17 F6).
 */
static void
ckverify_torn_end(struct ckverify *v)
{
	if (ckverify_torn_tail(v) || v->chain.pending == 0 || v->chain.broken || v->failed ||
	    v->nkeys == 0 || !v->have_anchor || !v->anchor_seen ||
	    v->anchor.reopened || strcmp(v->anchor.reason, "close") != 0 ||
	    v->chain.last_seq != v->anchor.seq)
		return;
	ckverify_fail(v, "%s:%zu, a torn line, follows the close at seq %lld "
	    "that its writer's anchor names, and the anchor says the writer "
	    "had not gone on past it: someone else wrote it",
	    v->chain.pending_file, v->chain.pending_line, v->anchor.seq);
	v->untrusted.seq = v->anchor.seq + 1;
	v->untrusted.line = 0;
}

enum ckverify_result
ckverify_finish(struct ckverify *v, int64_t now_us)
{
	ckverify_torn_end(v);
	if (logverify_finish(&v->chain) == -1)
		return CKVERIFY_CHAIN_BROKEN;
	if (v->failed)
		return CKVERIFY_UNTRUSTED;
	if (v->nkeys == 0)
		return CKVERIFY_OK;
	if (v->chain.events == 0) {
		ckverify_fail(v, "the log holds no event: its writer signs "
		    "every log it opens, so it was emptied or replaced");
		v->untrusted.seq = 1;
		v->untrusted.line = 0;
		return CKVERIFY_UNTRUSTED;
	}
	if (!v->have_good) {
		ckverify_fail(v, "no checkpoint in the log is signed by a "
		    "trusted key (%zu checkpoint(s), %zu signed by other "
		    "keys)", v->checkpoints, v->foreign);
		return CKVERIFY_UNTRUSTED;
	}
	ckverify_keys_used(v);
	if (!v->failed)
		ckverify_tail(v, now_us);
	ckverify_anchor_end(v);
	ckverify_anchor_first(v);
	return v->failed ? CKVERIFY_UNTRUSTED : CKVERIFY_OK;
}
