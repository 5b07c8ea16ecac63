/*
 * token.h: signed sandbox tokens (docs/proxy.md, "Sandbox tokens"). The
 * controller signs one with its Ed25519 token key; any proxy replica
 * given the public key (--token-key) checks it without having been told
 * of the sandbox. The signing and checking are checkpoint.h's.
 *
 * Text form (it fits a URL's userinfo unescaped):
 *
 *   "sgt1." base64url(body || sig)       (RFC 4648 §5, no padding)
 *
 * body, big-endian, every member bounded:
 *
 *   off  len  member
 *   0    1    version, 1
 *   1    8    key id: the first 8 bytes of SHA-256(raw 32-byte public key)
 *   9    8    issued at, seconds since the epoch
 *   17   8    expires at, seconds since the epoch (> issued at, at most
 *             TOKEN_TTL_MAX after it)
 *   25   16   grants digest: the first 16 bytes of SHA-256 of the grants
 *             in force when issued (zeros: none)
 *   41   1    S, then S bytes: sandbox id, 1-64 of [A-Za-z0-9_-]
 *   ..   1    R, then R bytes: run id, 0-64 of [A-Za-z0-9_-] (0: none)
 *   ..   1    T, then T bytes: policy sets in force, "a,b" (0: none),
 *             names as policy_set_name_valid() says
 *
 * sig: 64 bytes, Ed25519 over TOKEN_SIG_HEAD || body. Nothing may follow
 * it. The decoding is strict: one canonical base64url spelling, lengths
 * in bounds, every byte accounted for.
 */
#ifndef SG_TOKEN_H
#define SG_TOKEN_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>

#define TOKEN_PREFIX		"sgt1."
#define TOKEN_VERSION		1
#define TOKEN_SIG_HEAD		"sandgate-token-v1\n"
#define TOKEN_KEYID_RAW		8
#define TOKEN_DIGEST_RAW	16
#define TOKEN_ID_MAX		64	/* sandbox and run ids */
#define TOKEN_SETS_MAX		255	/* "a,b" */
#define TOKEN_FIXED		41	/* the body up to the sandbox */
#define TOKEN_BODY_MIN		(TOKEN_FIXED + 3 + 1)
#define TOKEN_BODY_MAX		(TOKEN_FIXED + 3 + 2 * TOKEN_ID_MAX + \
				    TOKEN_SETS_MAX)
#define TOKEN_RAW_MAX		(TOKEN_BODY_MAX + 64)
/* The longest text: prefix and unpadded base64url of TOKEN_RAW_MAX. */
#define TOKEN_TEXT_MAX		(5 + (TOKEN_RAW_MAX * 4 + 2) / 3)
#define TOKEN_TTL_MAX		(30LL * 24 * 3600)	/* 30 days */
#define TOKEN_SKEW		60	/* issued at, ahead of our clock */
#define TOKEN_KEYS_MAX		8	/* --token-key, for rotation */

/* What a token says. */
struct token {
	unsigned char	key_id[TOKEN_KEYID_RAW];
	uint64_t	issued;
	uint64_t	expires;
	unsigned char	grants[TOKEN_DIGEST_RAW];
	char		sandbox[TOKEN_ID_MAX + 1];
	char		run[TOKEN_ID_MAX + 1];	/* "" when none */
	char		sets[TOKEN_SETS_MAX + 1];	/* "" when none */
};

enum token_status {
	TOKEN_OK = 0,
	TOKEN_MALFORMED,	/* not a token, or one out of bounds */
	TOKEN_FORGED,		/* no trusted key signed it */
	TOKEN_EXPIRED,		/* past its expiry, or not valid yet */
};

/* The public keys a replica trusts. */
struct token_keys;

struct token_keys *token_keys_new(void);
void		 token_keys_free(struct token_keys *);	/* NULL ok */
/*
 * Trust an Ed25519 key (taken over, freed with the set, also on failure).
 * 0, or -1 with *cause static: not Ed25519, a duplicate, too many.
 */
int		 token_keys_add(struct token_keys *, EVP_PKEY *,
		    const char **cause);
size_t		 token_keys_count(const struct token_keys *);

/* The key id of an Ed25519 key into id[TOKEN_KEYID_RAW]; 0 or -1. */
int		 token_key_id(EVP_PKEY *, unsigned char *id);

/* 1 if len bytes at s start with TOKEN_PREFIX (a token, not a hex one). */
int		 token_looks_like(const char *s, size_t len);
/*
 * An id of min..TOKEN_ID_MAX bytes of [A-Za-z0-9_-] (a sandbox or run
 * id of a token): 1, or 0.
 */
int		 token_id_ok(const char *s, size_t len, size_t min);

/*
 * Parse the text form (len bytes, untrusted) into *t and the signed
 * bytes: body[TOKEN_BODY_MAX] (*bodylen) and sig[64]. No signature is
 * checked. 0, or -1 with *what static.
 */
int		 token_parse(const char *s, size_t len, struct token *t,
		    unsigned char *body, size_t *bodylen, unsigned char *sig,
		    const char **what);

/*
 * Parse and check a token against keys at time now: TOKEN_OK with *t
 * filled, or why not with *what static.
 */
enum token_status token_check(const struct token_keys *, const char *s,
		    size_t len, time_t now, struct token *t,
		    const char **what);

/*
 * Sign t (its key_id is set from key) into out[TOKEN_TEXT_MAX + 1]. 0,
 * or -1 with *cause static (a member out of bounds, a signing failure).
 */
int		 token_issue(EVP_PKEY *key, struct token *t, char *out,
		    const char **cause);

/* The first 16 bytes of SHA-256 of len bytes into d; 0 or -1. */
int		 token_digest(const void *, size_t len, unsigned char *d);

#endif
