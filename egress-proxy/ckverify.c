/* ckverify.c: checks of signed checkpoints; see ckverify.h. */
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
/* The members of a checkpoint line: ts, seq, 7 signed ones, prev, hash. */
#define CKVERIFY_MEMBERS	11
#define CKVERIFY_NUM_MAX	1000000000000LL

/* A checkpoint line's members, parsed. */
struct ckverify_cp {
	struct checkpoint_fields f;
	unsigned char		 sig[CHECKPOINT_SIG_RAW];
};

static void	ckverify_at(struct ckverify *, struct ckverify_at *);
static int	ckverify_fail(struct ckverify *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static json_t	*ckverify_checkpoint(const char *, size_t);
static const char *ckverify_str(json_t *, const char *);
static int	ckverify_num(json_t *, const char *, unsigned long long *);
static const char *ckverify_parse(json_t *, struct ckverify_cp *);
static struct ckverify_key *ckverify_find(struct ckverify *, const char *);
static int	ckverify_sig_ok(EVP_PKEY *, const struct ckverify_cp *);
static void	ckverify_event(struct ckverify *);
static int	ckverify_good(struct ckverify *, struct ckverify_key *,
		    const struct ckverify_cp *);
static int	ckverify_one(struct ckverify *, json_t *);
static void	ckverify_tail(struct ckverify *, int64_t);
static int	ckverify_feed_line(void *, const char *, size_t);

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
ckverify_file(struct ckverify *v, const char *name)
{
	logverify_file(&v->chain, name);
}

void
ckverify_release(struct ckverify *v)
{
	size_t	i;

	for (i = 0; i < v->nkeys; i++)
		EVP_PKEY_free(v->keys[i].pkey);
	v->nkeys = 0;
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
 * The parsed line when its event is log.checkpoint, else NULL. Only a
 * line with the member as the writer spells it is parsed (again): one
 * that spells it otherwise is read as an event, which can only lower
 * what the log is trusted for.
 */
static json_t *
ckverify_checkpoint(const char *line, size_t len)
{
	static const char	 mark[] = "\"event\":\"" CHECKPOINT_EVENT "\"";
	json_t			*obj;
	json_error_t		 err;
	const char		*ev;

	if (memmem(line, len, mark, sizeof(mark) - 1) == NULL)
		return NULL;
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (obj == NULL)
		return NULL;
	ev = json_string_value(json_object_get(obj, "event"));
	if (ev == NULL || strcmp(ev, CHECKPOINT_EVENT) != 0) {
		json_decref(obj);
		return NULL;
	}
	return obj;
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
	const char			*sig;
	int64_t				 us;

	memset(cp, 0, sizeof(*cp));
	f->seq = json_integer_value(json_object_get(obj, "seq"));
	f->prev = ckverify_str(obj, "prev");
	if (json_object_size(obj) != CKVERIFY_MEMBERS)
		return "members missing or added";
	if ((f->ts = ckverify_str(obj, "ts")) == NULL ||
	    ckverify_parse_ts(f->ts, &us) == -1)
		return "ts is not a time as the writer writes it";
	if ((f->reason = ckverify_str(obj, "reason")) == NULL ||
	    !checkpoint_reason_valid(f->reason))
		return "unknown reason";
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
	EVP_MD_CTX	*ctx;
	int		 ok;

	if ((len = checkpoint_message(&cp->f, msg, sizeof(msg))) == 0)
		return 0;
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return 0;
	ok = EVP_DigestVerifyInit(ctx, NULL, NULL, NULL, pkey) == 1 &&
	    EVP_DigestVerify(ctx, cp->sig, sizeof(cp->sig),
	    (const unsigned char *)msg, len) == 1;
	EVP_MD_CTX_free(ctx);
	ERR_clear_error();
	return ok;
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

	if (strcmp(f->reason, "open") == 0 && v->have_good &&
	    strcmp(v->good_reason, "close") != 0 && v->after > 0) {
		/* The writer before did not close: these were signed late. */
		if (v->restarts++ == 0) {
			ckverify_at(v, &v->restart);
			v->restart_from = v->after_at.seq;
		}
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
	v->good++;
	v->have_good = 1;
	ckverify_at(v, &v->good_at);
	util_strlcpy(v->good_ts, f->ts, sizeof(v->good_ts));
	(void)ckverify_parse_ts(f->ts, &v->good_us);
	util_strlcpy(v->good_reason, f->reason, sizeof(v->good_reason));
	util_strlcpy(v->good_key, k->next[0] ? k->next : k->id,
	    sizeof(v->good_key));
	v->every_events = f->every_events;
	v->every_secs = f->every_secs;
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
	return ckverify_good(v, k, &cp);
}

int
ckverify_feed(struct ckverify *v, const char *line, size_t len)
{
	size_t	 before = v->chain.events;
	json_t	*obj;
	int	 rc;

	/* After a checkpoint that is not good, the chain is still checked. */
	if (logverify_feed(&v->chain, line, len) == -1 || v->failed)
		return -1;
	if (v->chain.events == before)
		return 0;	/* a torn line, settled later */
	if (before == 0)
		ckverify_at(v, &v->first_at);
	if ((obj = ckverify_checkpoint(line, len)) == NULL) {
		ckverify_event(v);
		return 0;
	}
	rc = ckverify_one(v, obj);
	json_decref(obj);
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

enum ckverify_result
ckverify_finish(struct ckverify *v, int64_t now_us)
{
	if (logverify_finish(&v->chain) == -1)
		return CKVERIFY_CHAIN_BROKEN;
	if (v->failed)
		return CKVERIFY_UNTRUSTED;
	if (v->nkeys == 0 || v->chain.events == 0)
		return CKVERIFY_OK;
	if (!v->have_good) {
		ckverify_fail(v, "no checkpoint in the log is signed by a "
		    "trusted key (%zu checkpoint(s), %zu signed by other "
		    "keys)", v->checkpoints, v->foreign);
		return CKVERIFY_UNTRUSTED;
	}
	ckverify_tail(v, now_us);
	return v->failed ? CKVERIFY_UNTRUSTED : CKVERIFY_OK;
}
