/* logverify.c: hash-chain checks of eventlog lines; see logverify.h. */
#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "checkpoint.h"
#include "logverify.h"
#include "util.h"

#define LOGVERIFY_HASH_KEY	",\"hash\":\""
#define LOGVERIFY_HASH_KEYLEN	(sizeof(LOGVERIFY_HASH_KEY) - 1)
/* How every line starts. */
#define LOGVERIFY_HEAD		"{\"ts\":\""
#define LOGVERIFY_HEAD_LEN	(sizeof(LOGVERIFY_HEAD) - 1)

static int	logverify_hex_member(json_t *, const char *, char *);
static int	logverify_suffix(const char *, size_t, char *);
static enum logverify_status logverify_torn(const char *, size_t,
		    const json_error_t *);
static enum logverify_status logverify_members(json_t *, const char *,
		    size_t, struct logverify_line *);
static void	logverify_break(struct logverify *, const char *, size_t,
		    const char *, ...) __attribute__((format(printf, 4, 5)));
static void	logverify_chain_break(struct logverify *,
		    const struct logverify_line *);
static void	logverify_settle(struct logverify *);
static void	logverify_accept(struct logverify *,
		    const struct logverify_line *);
static int	logverify_feed_line(void *, const char *, size_t);

int
logverify_is_hex(const char *s, size_t len)
{
	size_t	i;

	for (i = 0; i < len; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') ||
		    (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/* Copy the 64-hex string member key of obj into out; -1 if not one. */
static int
logverify_hex_member(json_t *obj, const char *key, char *out)
{
	json_t		*v = json_object_get(obj, key);
	const char	*s;

	if (!json_is_string(v) || json_string_length(v) != LOGVERIFY_HASH_HEX)
		return -1;
	s = json_string_value(v);
	if (!logverify_is_hex(s, LOGVERIFY_HASH_HEX))
		return -1;
	memcpy(out, s, LOGVERIFY_HASH_HEX);
	out[LOGVERIFY_HASH_HEX] = '\0';
	return 0;
}

/*
 * Check that the line ends in ,"hash":"<64 hex>"} and copy the hex into
 * hex[65]; -1 if it does not.
 */
static int
logverify_suffix(const char *line, size_t len, char *hex)
{
	const char	*p;

	if (len < LOGVERIFY_SUFFIX_LEN + 1)
		return -1;
	p = line + len - LOGVERIFY_SUFFIX_LEN;
	if (memcmp(p, LOGVERIFY_HASH_KEY, LOGVERIFY_HASH_KEYLEN) != 0)
		return -1;
	p += LOGVERIFY_HASH_KEYLEN;
	if (!logverify_is_hex(p, LOGVERIFY_HASH_HEX) ||
	    memcmp(p + LOGVERIFY_HASH_HEX, "\"}", 2) != 0)
		return -1;
	memcpy(hex, p, LOGVERIFY_HASH_HEX);
	hex[LOGVERIFY_HASH_HEX] = '\0';
	return 0;
}

int
logverify_hash(const char *line, size_t len, char *hex)
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen = 0;
	char		 claimed[LOGVERIFY_HASH_HEX + 1];
	EVP_MD_CTX	*ctx;
	int		 ok;

	if (logverify_suffix(line, len, claimed) == -1)
		return -1;
	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, line, len - LOGVERIFY_SUFFIX_LEN) == 1 &&
	    EVP_DigestUpdate(ctx, "}", 1) == 1 &&
	    EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -1;
	util_hex(md, 32, hex);
	return 0;
}

int
logverify_torn_hash(char *hex, const char *line, size_t len)
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen = 0;
	EVP_MD_CTX	*ctx;
	int		 ok;

	if ((ctx = EVP_MD_CTX_new()) == NULL)
		return -1;
	ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1 &&
	    EVP_DigestUpdate(ctx, hex, strlen(hex)) == 1 &&
	    EVP_DigestUpdate(ctx, line, len) == 1 &&
	    EVP_DigestFinal_ex(ctx, md, &mdlen) == 1 && mdlen == 32;
	EVP_MD_CTX_free(ctx);
	if (!ok)
		return -1;
	util_hex(md, 32, hex);
	return 0;
}

/*
 * The forms of the values a later start's rotate line writes anew: a
 * number, util's timestamp (LOGVERIFY_TIME_FORM: '0' a digit, any other
 * character itself), or a string of one class of characters.
 */
enum logverify_form {
	LOGVERIFY_NUMBER,
	LOGVERIFY_TIME,
	LOGVERIFY_BASE64,	/* A-Z a-z 0-9 + /, then its '=' padding */
	LOGVERIFY_HEX		/* 0-9 a-f */
};

/* util_rfc3339(): 2026-12-04T03:31:05.401684Z */
#define LOGVERIFY_TIME_FORM	"0000-00-00T00:00:00.000000Z"

/*
 * The members whose values a later start's rotate line writes anew, each
 * with the exact form the writer gives it (atk20r30 F1): a string of len
 * characters of its class, the last pad of them '=', or, for a number,
 * its largest value.
 */
static const struct logverify_renewed {
	const char		*member;
	enum logverify_form	 form;
	size_t			 len;	/* a string's, exactly */
	size_t			 pad;	/* base64: its '=' at the end */
	unsigned long long	 max;	/* a number's */
} logverify_renewed[] = {
	{ "\"ts\":\"", LOGVERIFY_TIME, sizeof(LOGVERIFY_TIME_FORM) - 1, 0, 0 },
	/* checkpoint_key_id(): base64 of 32 bytes, one '=' */
	{ "\"key\":\"", LOGVERIFY_BASE64, CHECKPOINT_KEY_B64, 1, 0 },
	/* an Ed25519 signature: base64 of 64 bytes, two '=' */
	{ "\"sig\":\"", LOGVERIFY_BASE64, CHECKPOINT_SIG_B64, 2, 0 },
	{ "\"torn_hash\":\"", LOGVERIFY_HEX, LOGVERIFY_HASH_HEX, 0, 0 },
	{ "\"hash\":\"", LOGVERIFY_HEX, LOGVERIFY_HASH_HEX, 0, 0 },
	{ "\"every_events\":", LOGVERIFY_NUMBER, 0, 0, LOGVERIFY_EVERY_MAX },
	{ "\"every_secs\":", LOGVERIFY_NUMBER, 0, 0, LOGVERIFY_EVERY_MAX },
	{ "\"torn\":", LOGVERIFY_NUMBER, 0, 0, SG_LOG_SEQ_MAX },
	{ NULL, LOGVERIFY_NUMBER, 0, 0, 0 }
};

/* The renewed member whose name starts r (at a member's start), or NULL. */
static const struct logverify_renewed *
logverify_renewed_at(const char *r, size_t rl)
{
	size_t	i, n;

	for (i = 0; logverify_renewed[i].member != NULL; i++) {
		n = strlen(logverify_renewed[i].member);
		if (rl >= n && memcmp(r, logverify_renewed[i].member, n) == 0)
			return &logverify_renewed[i];
	}
	return NULL;
}

/* Bytes at s (up to n) the rotate line's own renewed value holds. */
static size_t
logverify_value_len(const char *s, size_t n, int string)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (!isdigit((unsigned char)s[i]) && (!string ||
		    (!isalpha((unsigned char)s[i]) && strchr("+/=:.-", s[i]) ==
		    NULL)))
			break;
	return i;
}

/* Does c fit character i of the string form of m (logverify_renewed)? */
static int
logverify_form_char(const struct logverify_renewed *m, size_t i, char c)
{
	switch (m->form) {
	case LOGVERIFY_TIME:
		return LOGVERIFY_TIME_FORM[i] == '0' ?
		    isdigit((unsigned char)c) != 0 : c == LOGVERIFY_TIME_FORM[i];
	case LOGVERIFY_BASE64:
		if (i >= m->len - m->pad)
			return c == '=';
		return isalnum((unsigned char)c) || c == '+' || c == '/';
	case LOGVERIFY_HEX:
		return isdigit((unsigned char)c) || (c >= 'a' && c <= 'f');
	default:
		return 0;
	}
}

/*
 * How many bytes of s (n of them) are the renewed value of m as the
 * writer writes it: all of the form, or, when s ends first, a prefix of
 * it (the line was cut there). A number is written without leading
 * zeros, at most m->max. 0 if s is neither (also an empty whole value).
 */
static size_t
logverify_renewed_len(const struct logverify_renewed *m, const char *s,
    size_t n)
{
	unsigned long long	v = 0;
	size_t			i;

	if (m->form != LOGVERIFY_NUMBER) {
		for (i = 0; i < m->len; i++)
			if (i == n)
				return n;	/* cut inside it */
			else if (!logverify_form_char(m, i, s[i]))
				return 0;
		return i;
	}
	for (i = 0; i < n && isdigit((unsigned char)s[i]); i++) {
		if ((i > 0 && v == 0) || (v = v * 10 + (unsigned)(s[i] - '0')) >
		    m->max)
			return 0;	/* a leading zero, or too large */
	}
	return i;
}

int
logverify_cut_rotate(const char *t, size_t tl, const char *r, size_t rl)
{
	const struct logverify_renewed	*m;
	size_t				 i = 0, j = 0, n, tv;

	while (i < tl) {
		if (j >= rl)
			return 0;
		m = j > 0 && (r[j - 1] == '{' || r[j - 1] == ',') ?
		    logverify_renewed_at(r + j, rl - j) : NULL;
		if (m == NULL) {
			if (t[i++] != r[j++])
				return 0;
			continue;
		}
		n = strlen(m->member);
		if (tl - i < n)
			return memcmp(t + i, m->member, tl - i) == 0;
		if (memcmp(t + i, m->member, n) != 0)
			return 0;
		i += n;
		j += n;
		if (i == tl)
			return 1;	/* cut right before the value */
		if ((tv = logverify_renewed_len(m, t + i, tl - i)) == 0)
			return 0;
		i += tv;
		j += logverify_value_len(r + j, rl - j, m->form != LOGVERIFY_NUMBER);
	}
	return 1;
}

/*
 * A line that jansson refuses is torn when it is the start of a line as
 * the writer makes them: it begins with {"ts":" (or a shorter part of
 * it), holds only printable ASCII and DEL (what the writer writes), does not end
 * as a whole line ends (,"hash":"<64 hex>"}), and jansson found nothing
 * wrong before the end of the input: it ran out of bytes in the middle of
 * a token or a value. A line with anything jansson refuses before its end
 * (a \u0000, an integer past 64 bits, a lone surrogate, a duplicate key),
 * or that is complete JSON followed by anything, is not a line the writer
 * started: other JSON parsers may read it whole.
 */
static enum logverify_status
logverify_torn(const char *line, size_t len, const json_error_t *err)
{
	enum json_error_code	 code = json_error_code(err);
	char			 hex[LOGVERIFY_HASH_HEX + 1];
	size_t			 i, n;

	n = len < LOGVERIFY_HEAD_LEN ? len : LOGVERIFY_HEAD_LEN;
	if (memcmp(line, LOGVERIFY_HEAD, n) != 0 ||
	    logverify_suffix(line, len, hex) == 0)
		return LOGVERIFY_NOT_LOG;
	for (i = 0; i < len; i++)
		if ((unsigned char)line[i] < 0x20 ||
		    (unsigned char)line[i] > 0x7f)
			return LOGVERIFY_NOT_LOG;
	if (err->position < 0 || (size_t)err->position != len ||
	    (code != json_error_premature_end_of_input &&
	    code != json_error_invalid_syntax))
		return LOGVERIFY_NOT_LOG;
	return LOGVERIFY_TORN;
}

/* Check seq, prev and the final hash member of a parsed line. */
static enum logverify_status
logverify_members(json_t *obj, const char *line, size_t len,
    struct logverify_line *out)
{
	json_t	*seq = json_object_get(obj, "seq");
	char	 suffix[LOGVERIFY_HASH_HEX + 1];
	char	 computed[LOGVERIFY_HASH_HEX + 1];

	if (!json_is_integer(seq) || json_integer_value(seq) < 1 ||
	    json_integer_value(seq) > SG_LOG_SEQ_MAX)
		return LOGVERIFY_NOT_LOG;
	if (logverify_hex_member(obj, "prev", out->prev) == -1 ||
	    logverify_hex_member(obj, "hash", out->hash) == -1)
		return LOGVERIFY_NOT_LOG;
	/* The hash member must be the last one, written as the writer does. */
	if (logverify_suffix(line, len, suffix) == -1 ||
	    strcmp(suffix, out->hash) != 0)
		return LOGVERIFY_NOT_LOG;
	out->seq = json_integer_value(seq);
	if (logverify_hash(line, len, computed) == -1)
		return LOGVERIFY_NOT_LOG;
	if (strcmp(computed, out->hash) != 0)
		return LOGVERIFY_HASH_MISMATCH;
	return LOGVERIFY_OK;
}

enum logverify_status
logverify_line(const char *line, size_t len, struct logverify_line *out)
{
	json_t			*obj;
	json_error_t		 err;
	enum logverify_status	 st;

	memset(out, 0, sizeof(*out));
	if (len == 0 || len > SG_LOG_LINE_MAX)
		return LOGVERIFY_NOT_LOG;
	obj = json_loadb(line, len, JSON_REJECT_DUPLICATES, &err);
	if (obj == NULL)
		return logverify_torn(line, len, &err);
	if (!json_is_object(obj))
		st = LOGVERIFY_NOT_LOG;
	else
		st = logverify_members(obj, line, len, out);
	json_decref(obj);
	return st;
}

void
logverify_init(struct logverify *v)
{
	memset(v, 0, sizeof(*v));
}

void
logverify_file(struct logverify *v, const char *name)
{
	util_strlcpy(v->file, name, sizeof(v->file));
	v->lineno = 0;
}

/* Record the first break at file:line. */
static void
logverify_break(struct logverify *v, const char *file, size_t line,
    const char *fmt, ...)
{
	va_list	ap;

	v->broken = 1;
	util_strlcpy(v->break_file, file, sizeof(v->break_file));
	v->break_line = line;
	va_start(ap, fmt);
	vsnprintf(v->what, sizeof(v->what), fmt, ap);
	va_end(ap);
}

/* Describe why a valid line l does not continue the chain. */
static void
logverify_chain_break(struct logverify *v, const struct logverify_line *l)
{
	if (v->pending > 0) {
		logverify_break(v, v->pending_file, v->pending_line,
		    "line is incomplete and the next event (seq %lld) does not "
		    "continue the chain from seq %lld: line edited or events "
		    "removed", l->seq, v->last_seq);
	} else if (l->seq - v->last_seq > 1) {
		logverify_break(v, v->file, v->lineno,
		    "seq %lld follows seq %lld: %lld event(s) removed or "
		    "lines reordered", l->seq, v->last_seq,
		    l->seq - v->last_seq - 1);
	} else if (l->seq <= v->last_seq) {
		logverify_break(v, v->file, v->lineno,
		    "seq %lld follows seq %lld: line reordered, duplicated or "
		    "inserted", l->seq, v->last_seq);
	} else {
		logverify_break(v, v->file, v->lineno,
		    "prev does not match the hash of the event before (seq "
		    "%lld): line replaced or inserted", v->last_seq);
	}
}

/* A valid line continues the chain (or anchors it). */
/*
 * The lines held pending are torn (a line that follows them, or the end,
 * shows they were never finished): counted, the first one remembered.
 */
static void
logverify_settle(struct logverify *v)
{
	if (v->pending == 0)
		return;
	if (v->torn == 0) {
		util_strlcpy(v->torn_file, v->pending_file,
		    sizeof(v->torn_file));
		v->torn_line = v->pending_line;
	}
	v->torn += v->pending;
	v->pending = 0;
}

static void
logverify_accept(struct logverify *v, const struct logverify_line *l)
{
	static const char	zeros[LOGVERIFY_HASH_HEX + 1] =
	    "0000000000000000000000000000000000000000000000000000000000000000";

	logverify_settle(v);
	if (!v->started) {
		v->started = 1;
		v->first_seq = l->seq;
		v->genesis = strcmp(l->prev, zeros) == 0;
	}
	v->last_seq = l->seq;
	memcpy(v->last_hash, l->hash, sizeof(v->last_hash));
	v->events++;
}

int
logverify_feed(struct logverify *v, const char *line, size_t len)
{
	struct logverify_line	l;

	if (v->broken)
		return -1;
	v->lineno++;
	switch (logverify_line(line, len, &l)) {
	case LOGVERIFY_TORN:
		if (v->pending == 0) {
			util_strlcpy(v->pending_file, v->file,
			    sizeof(v->pending_file));
			v->pending_line = v->lineno;
		}
		v->pending++;
		return 0;
	case LOGVERIFY_NOT_LOG:
		logverify_break(v, v->file, v->lineno, "not a log line "
		    "(seq, prev or hash missing or malformed): line inserted "
		    "or edited");
		return -1;
	case LOGVERIFY_HASH_MISMATCH:
		logverify_break(v, v->file, v->lineno, "line edited: hash "
		    "does not match its content (seq %lld)", l.seq);
		return -1;
	case LOGVERIFY_OK:
		break;
	}
	if (v->started && (strcmp(l.prev, v->last_hash) != 0 ||
	    v->last_seq == LLONG_MAX || l.seq != v->last_seq + 1)) {
		logverify_chain_break(v, &l);
		return -1;
	}
	logverify_accept(v, &l);
	return 0;
}

int
logverify_lines(const char *buf, size_t len,
    int (*feed)(void *, const char *, size_t), void *arg)
{
	const char	*p = buf, *end = buf + len, *nl;

	while (p < end) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (nl == NULL)
			nl = end;
		if (feed(arg, p, (size_t)(nl - p)) == -1)
			return -1;
		p = nl + 1;
	}
	return 0;
}

/* logverify_feed() for logverify_lines(). */
static int
logverify_feed_line(void *arg, const char *line, size_t len)
{
	return logverify_feed(arg, line, len);
}

int
logverify_buf(struct logverify *v, const char *buf, size_t len)
{
	if (logverify_lines(buf, len, logverify_feed_line, v) == -1)
		return -1;
	return v->broken ? -1 : 0;
}

int
logverify_finish(struct logverify *v)
{
	if (v->broken)
		return -1;
	/* Torn lines at the very end: nothing was written after. */
	logverify_settle(v);
	return 0;
}
