/* token.c: signed sandbox tokens; see token.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include "checkpoint.h"
#include "policy.h"
#include "token.h"

struct token_keys {
	EVP_PKEY	*key[TOKEN_KEYS_MAX];
	unsigned char	 id[TOKEN_KEYS_MAX][TOKEN_KEYID_RAW];
	size_t		 n;
};

/* A cursor over the body: every fetch checks the length first. */
struct tcur {
	const unsigned char	*p;
	size_t			 left;
};

static const char token_b64url[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static long	token_b64_decode(const char *, size_t, unsigned char *,
		    size_t);
static size_t	token_b64_encode(const unsigned char *, size_t, char *);
static int	token_sets_ok(const char *, size_t);
static int	tcur_u64(struct tcur *, uint64_t *);
static int	tcur_str(struct tcur *, char *, size_t, size_t);
static const char *token_body_parse(const unsigned char *, size_t,
		    struct token *);
static size_t	token_body(const struct token *, unsigned char *);
static int	token_signed_msg(const unsigned char *, size_t,
		    unsigned char *);
static const struct token_keys *token_keys_dummy(void);

struct token_keys *
token_keys_new(void)
{
	return calloc(1, sizeof(struct token_keys));
}

void
token_keys_free(struct token_keys *ks)
{
	size_t	i;

	if (ks == NULL)
		return;
	for (i = 0; i < ks->n; i++)
		EVP_PKEY_free(ks->key[i]);
	free(ks);
}

int
token_keys_add(struct token_keys *ks, EVP_PKEY *key, const char **cause)
{
	unsigned char	id[TOKEN_KEYID_RAW];
	size_t		i;

	*cause = NULL;
	if (token_key_id(key, id) == -1)
		*cause = "not an Ed25519 key";
	else if (ks->n >= TOKEN_KEYS_MAX)
		*cause = "too many token keys (at most 8)";
	for (i = 0; *cause == NULL && i < ks->n; i++) {
		if (memcmp(ks->id[i], id, sizeof(id)) == 0)
			*cause = "the same token key twice";
	}
	if (*cause != NULL) {
		EVP_PKEY_free(key);
		return -1;
	}
	memcpy(ks->id[ks->n], id, sizeof(id));
	ks->key[ks->n++] = key;
	return 0;
}

size_t
token_keys_count(const struct token_keys *ks)
{
	return ks == NULL ? 0 : ks->n;
}

int
token_key_id(EVP_PKEY *key, unsigned char *id)
{
	unsigned char	raw[CHECKPOINT_KEY_RAW], md[EVP_MAX_MD_SIZE];
	size_t		len = sizeof(raw);
	unsigned int	mdlen;

	if (key == NULL || EVP_PKEY_get_id(key) != EVP_PKEY_ED25519 ||
	    EVP_PKEY_get_raw_public_key(key, raw, &len) != 1 ||
	    len != sizeof(raw) ||
	    EVP_Digest(raw, len, md, &mdlen, EVP_sha256(), NULL) != 1)
		return -1;
	memcpy(id, md, TOKEN_KEYID_RAW);
	return 0;
}

int
token_digest(const void *data, size_t len, unsigned char *d)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	mdlen;

	if (EVP_Digest(data, len, md, &mdlen, EVP_sha256(), NULL) != 1)
		return -1;
	memcpy(d, md, TOKEN_DIGEST_RAW);
	return 0;
}

int
token_looks_like(const char *s, size_t len)
{
	return len >= sizeof(TOKEN_PREFIX) - 1 &&
	    memcmp(s, TOKEN_PREFIX, sizeof(TOKEN_PREFIX) - 1) == 0;
}

/*
 * Strict unpadded base64url of len bytes into out (size bytes): the
 * decoded length, or -1 for a byte outside the alphabet, a length no
 * encoding has (len % 4 == 1), bits set past the last byte (a second
 * spelling of the same bytes) or more than size bytes.
 */
static long
token_b64_decode(const char *s, size_t len, unsigned char *out, size_t size)
{
	unsigned long	 acc = 0;
	size_t		 i, bits = 0, n = 0;
	const char	*c;

	if (len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] == '\0' || (c = strchr(token_b64url, s[i])) == NULL)
			return -1;
		acc = (acc << 6 | (unsigned long)(c - token_b64url)) & 0xffffff;
		bits += 6;
		if (bits < 8)
			continue;
		bits -= 8;
		if (n >= size)
			return -1;
		out[n++] = (unsigned char)(acc >> bits);
	}
	if ((acc & ((1UL << bits) - 1)) != 0)
		return -1;
	return (long)n;
}

/* Unpadded base64url of len bytes into out; its length (NUL written). */
static size_t
token_b64_encode(const unsigned char *in, size_t len, char *out)
{
	unsigned long	acc = 0;
	size_t		i, bits = 0, n = 0;

	for (i = 0; i < len; i++) {
		acc = (acc << 8 | in[i]) & 0xffffff;
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[n++] = token_b64url[(acc >> bits) & 63];
		}
	}
	if (bits > 0)
		out[n++] = token_b64url[(acc << (6 - bits)) & 63];
	out[n] = '\0';
	return n;
}

int
token_id_ok(const char *s, size_t len, size_t min)
{
	size_t	i;

	if (len < min || len > TOKEN_ID_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		if (s[i] == '\0' || strchr("abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-", s[i]) == NULL)
			return 0;
	}
	return 1;
}

/* "" or a comma list of valid set names, each once. */
static int
token_sets_ok(const char *s, size_t len)
{
	char		**names;
	const char	 *p, *cause;
	size_t		  n, items = 1;

	if (len == 0)
		return 1;
	if (len > TOKEN_SETS_MAX || strlen(s) != len ||
	    policy_set_list_parse(s, &names, &n, &cause) == -1)
		return 0;
	policy_set_list_free(names);
	for (p = s; *p != '\0'; p++)
		items += *p == ',';
	/* A repeated name would be a second spelling of the same list. */
	return n == items;
}

static int
tcur_u64(struct tcur *c, uint64_t *v)
{
	size_t	i;

	if (c->left < 8)
		return -1;
	*v = 0;
	for (i = 0; i < 8; i++)
		*v = *v << 8 | c->p[i];
	c->p += 8;
	c->left -= 8;
	return 0;
}

/* A length byte, then that many bytes (at most max) as a string. */
static int
tcur_str(struct tcur *c, char *out, size_t max, size_t min)
{
	size_t	n;

	if (c->left < 1)
		return -1;
	n = c->p[0];
	if (n < min || n > max || c->left - 1 < n ||
	    memchr(c->p + 1, '\0', n) != NULL)
		return -1;
	memcpy(out, c->p + 1, n);
	out[n] = '\0';
	c->p += 1 + n;
	c->left -= 1 + n;
	return 0;
}

/* The body's members into *t (layout in token.h); NULL or what is wrong. */
static const char *
token_body_parse(const unsigned char *b, size_t len, struct token *t)
{
	struct tcur	c = { b, len };

	memset(t, 0, sizeof(*t));
	if (c.left < TOKEN_FIXED || c.p[0] != TOKEN_VERSION)
		return "not a version 1 token";
	memcpy(t->key_id, c.p + 1, TOKEN_KEYID_RAW);
	c.p += 1 + TOKEN_KEYID_RAW;
	c.left -= 1 + TOKEN_KEYID_RAW;
	(void)tcur_u64(&c, &t->issued);
	(void)tcur_u64(&c, &t->expires);
	memcpy(t->grants, c.p, TOKEN_DIGEST_RAW);
	c.p += TOKEN_DIGEST_RAW;
	c.left -= TOKEN_DIGEST_RAW;
	if (t->expires <= t->issued ||
	    t->expires - t->issued > (uint64_t)TOKEN_TTL_MAX)
		return "expiry not within 30 days after issue";
	if (tcur_str(&c, t->sandbox, TOKEN_ID_MAX, 1) == -1 ||
	    !token_id_ok(t->sandbox, strlen(t->sandbox), 1))
		return "bad sandbox id";
	if (tcur_str(&c, t->run, TOKEN_ID_MAX, 0) == -1 ||
	    !token_id_ok(t->run, strlen(t->run), 0))
		return "bad run id";
	if (tcur_str(&c, t->sets, TOKEN_SETS_MAX, 0) == -1 ||
	    !token_sets_ok(t->sets, strlen(t->sets)))
		return "bad set list";
	if (c.left != 0)
		return "trailing bytes after the set list";
	return NULL;
}

int
token_parse(const char *s, size_t len, struct token *t, unsigned char *body,
    size_t *bodylen, unsigned char *sig, const char **what)
{
	unsigned char	raw[TOKEN_RAW_MAX];
	size_t		plen = sizeof(TOKEN_PREFIX) - 1;
	long		n;

	*what = NULL;
	if (!token_looks_like(s, len))
		*what = "no sgt1. prefix";
	else if (len > TOKEN_TEXT_MAX)
		*what = "longer than a token can be";
	else if ((n = token_b64_decode(s + plen, len - plen, raw,
	    sizeof(raw))) == -1)
		*what = "not canonical base64url";
	else if (n < TOKEN_BODY_MIN + CHECKPOINT_SIG_RAW)
		*what = "shorter than a token can be";
	else if ((*what = token_body_parse(raw, (size_t)n -
	    CHECKPOINT_SIG_RAW, t)) == NULL) {
		*bodylen = (size_t)n - CHECKPOINT_SIG_RAW;
		memcpy(body, raw, *bodylen);
		memcpy(sig, raw + *bodylen, CHECKPOINT_SIG_RAW);
	}
	return *what == NULL ? 0 : -1;
}

/* TOKEN_SIG_HEAD || body into msg; its length. */
static int
token_signed_msg(const unsigned char *body, size_t len, unsigned char *msg)
{
	size_t	h = sizeof(TOKEN_SIG_HEAD) - 1;

	memcpy(msg, TOKEN_SIG_HEAD, h);
	memcpy(msg + h, body, len);
	return (int)(h + len);
}

/* A key set of no key, so an absent set is checked as an empty one. */
static const struct token_keys *
token_keys_dummy(void)
{
	static const struct token_keys	none;

	return &none;
}

enum token_status
token_check(const struct token_keys *ks, const char *s, size_t len,
    time_t now, struct token *t, const char **what)
{
	unsigned char	body[TOKEN_BODY_MAX], sig[CHECKPOINT_SIG_RAW];
	unsigned char	msg[sizeof(TOKEN_SIG_HEAD) + TOKEN_BODY_MAX];
	size_t		i, blen;
	int		mlen;

	if (token_parse(s, len, t, body, &blen, sig, what) == -1)
		return TOKEN_MALFORMED;
	if (ks == NULL)
		ks = token_keys_dummy();
	for (i = 0; i < ks->n; i++) {
		if (CRYPTO_memcmp(ks->id[i], t->key_id, TOKEN_KEYID_RAW) == 0)
			break;
	}
	mlen = token_signed_msg(body, blen, msg);
	if (i == ks->n || !checkpoint_ed25519_verify(ks->key[i], msg,
	    (size_t)mlen, sig)) {
		*what = i == ks->n ? "signed by a key this proxy does not "
		    "trust" : "signature does not verify";
		return TOKEN_FORGED;
	}
	if (now < 0 || (uint64_t)now >= t->expires) {
		*what = "expired";
		return TOKEN_EXPIRED;
	}
	if (t->issued > (uint64_t)now + TOKEN_SKEW) {
		*what = "issued in the future";
		return TOKEN_EXPIRED;
	}
	return TOKEN_OK;
}

/* The body of t (layout in token.h) into b[TOKEN_BODY_MAX]; its length. */
static size_t
token_body(const struct token *t, unsigned char *b)
{
	size_t		n = 0, i, l;
	const char	*str[3] = { t->sandbox, t->run, t->sets };

	b[n++] = TOKEN_VERSION;
	memcpy(b + n, t->key_id, TOKEN_KEYID_RAW);
	n += TOKEN_KEYID_RAW;
	for (i = 0; i < 8; i++)
		b[n++] = (unsigned char)(t->issued >> (56 - 8 * i));
	for (i = 0; i < 8; i++)
		b[n++] = (unsigned char)(t->expires >> (56 - 8 * i));
	memcpy(b + n, t->grants, TOKEN_DIGEST_RAW);
	n += TOKEN_DIGEST_RAW;
	for (i = 0; i < 3; i++) {
		l = strlen(str[i]);
		b[n++] = (unsigned char)l;
		memcpy(b + n, str[i], l);
		n += l;
	}
	return n;
}

int
token_issue(EVP_PKEY *key, struct token *t, char *out, const char **cause)
{
	unsigned char	raw[TOKEN_RAW_MAX];
	unsigned char	msg[sizeof(TOKEN_SIG_HEAD) + TOKEN_BODY_MAX];
	size_t		blen;
	int		mlen;

	*cause = NULL;
	if (!token_id_ok(t->sandbox, strlen(t->sandbox), 1))
		*cause = "sandbox must be 1-64 of [A-Za-z0-9_-]";
	else if (!token_id_ok(t->run, strlen(t->run), 0))
		*cause = "run id must be 0-64 of [A-Za-z0-9_-]";
	else if (!token_sets_ok(t->sets, strlen(t->sets)))
		*cause = "sets must be a list of set names";
	else if (t->expires <= t->issued ||
	    t->expires - t->issued > (uint64_t)TOKEN_TTL_MAX)
		*cause = "expiry must be within 30 days after issue";
	else if (token_key_id(key, t->key_id) == -1)
		*cause = "not an Ed25519 key";
	if (*cause != NULL)
		return -1;
	blen = token_body(t, raw);
	mlen = token_signed_msg(raw, blen, msg);
	if (checkpoint_ed25519_sign(key, msg, (size_t)mlen, raw + blen) == -1) {
		*cause = "cannot sign with the token key";
		return -1;
	}
	memcpy(out, TOKEN_PREFIX, sizeof(TOKEN_PREFIX) - 1);
	token_b64_encode(raw, blen + CHECKPOINT_SIG_RAW,
	    out + sizeof(TOKEN_PREFIX) - 1);
	return 0;
}
