/*
 * test_token.c: signed sandbox tokens (token.h): issue and check, and
 * the strict parser refusing every change, cut, addition and
 * out-of-bounds member.
 */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "token.h"

#define NOW	1800000000LL

static EVP_PKEY *
key_new(void)
{
	EVP_PKEY	*k = EVP_PKEY_Q_keygen(NULL, NULL, "ED25519");

	assert_non_null(k);
	return k;
}

/* The public half of k only, as a replica holds it. */
static EVP_PKEY *
key_pub(EVP_PKEY *k)
{
	unsigned char	raw[32];
	size_t		len = sizeof(raw);
	EVP_PKEY	*p;

	assert_int_equal(EVP_PKEY_get_raw_public_key(k, raw, &len), 1);
	p = EVP_PKEY_new_raw_public_key(EVP_PKEY_ED25519, NULL, raw, len);
	assert_non_null(p);
	return p;
}

static void
claims(struct token *t, const char *sandbox, const char *run,
    const char *sets, long long issued, long long ttl)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->sandbox, sizeof(t->sandbox), "%s", sandbox);
	snprintf(t->run, sizeof(t->run), "%s", run);
	snprintf(t->sets, sizeof(t->sets), "%s", sets);
	t->issued = (uint64_t)issued;
	t->expires = (uint64_t)(issued + ttl);
	assert_int_equal(token_digest("grants", 6, t->grants), 0);
}

static struct token_keys *
keys_of(EVP_PKEY *k)
{
	struct token_keys	*ks = token_keys_new();
	const char		*cause;

	assert_non_null(ks);
	assert_int_equal(token_keys_add(ks, key_pub(k), &cause), 0);
	return ks;
}

static void
test_round_trip(void **state)
{
	EVP_PKEY		*k = key_new();
	struct token_keys	*ks = keys_of(k);
	struct token		 t, got;
	char			 text[TOKEN_TEXT_MAX + 1];
	const char		*cause, *what;

	claims(&t, "sb-1", "run_7", "base,pypi", NOW, 3600);
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	assert_true(strncmp(text, "sgt1.", 5) == 0);
	assert_true(strlen(text) <= TOKEN_TEXT_MAX);
	/* Nothing a URL's userinfo must escape. */
	assert_int_equal(strspn(text, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"
	    "KLMNOPQRSTUVWXYZ0123456789-_."), strlen(text));
	assert_int_equal(token_check(ks, text, strlen(text), NOW + 10, &got,
	    &what), TOKEN_OK);
	assert_string_equal(got.sandbox, "sb-1");
	assert_string_equal(got.run, "run_7");
	assert_string_equal(got.sets, "base,pypi");
	assert_int_equal(got.issued, NOW);
	assert_int_equal(got.expires, NOW + 3600);
	assert_memory_equal(got.grants, t.grants, TOKEN_DIGEST_RAW);
	token_keys_free(ks);
	EVP_PKEY_free(k);
}

/* Every byte changed anywhere in the text: refused, never accepted. */
static void
test_tamper_every_byte(void **state)
{
	EVP_PKEY		*k = key_new();
	struct token_keys	*ks = keys_of(k);
	struct token		 t, got;
	char			 text[TOKEN_TEXT_MAX + 1], bad[TOKEN_TEXT_MAX + 1];
	const char		*cause, *what;
	size_t			 i, n;
	enum token_status	 st;

	claims(&t, "sb-1", "", "base", NOW, 3600);
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	n = strlen(text);
	for (i = 0; i < n; i++) {
		memcpy(bad, text, n + 1);
		bad[i] = bad[i] == 'A' ? 'B' : 'A';
		st = token_check(ks, bad, n, NOW, &got, &what);
		assert_int_not_equal(st, TOKEN_OK);
		assert_non_null(what);
		/* Past the prefix, the signature catches what parses. */
		if (i >= 5)
			assert_true(st == TOKEN_FORGED ||
			    st == TOKEN_MALFORMED);
	}
	token_keys_free(ks);
	EVP_PKEY_free(k);
}

static void
test_wrong_key(void **state)
{
	EVP_PKEY		*k = key_new(), *other = key_new();
	struct token_keys	*ks = keys_of(other);
	struct token		 t, got;
	char			 text[TOKEN_TEXT_MAX + 1];
	const char		*cause, *what;

	claims(&t, "sb-1", "", "", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	assert_int_equal(token_check(ks, text, strlen(text), NOW, &got,
	    &what), TOKEN_FORGED);
	assert_int_equal(token_check(NULL, text, strlen(text), NOW, &got,
	    &what), TOKEN_FORGED);
	/* Rotation: the old and the new key both trusted. */
	assert_int_equal(token_keys_add(ks, key_pub(k), &cause), 0);
	assert_int_equal(token_keys_count(ks), 2);
	assert_int_equal(token_check(ks, text, strlen(text), NOW, &got,
	    &what), TOKEN_OK);
	assert_int_equal(token_keys_add(ks, key_pub(k), &cause), -1);
	token_keys_free(ks);
	EVP_PKEY_free(k);
	EVP_PKEY_free(other);
}

static void
test_expired(void **state)
{
	EVP_PKEY		*k = key_new();
	struct token_keys	*ks = keys_of(k);
	struct token		 t, got;
	char			 text[TOKEN_TEXT_MAX + 1];
	const char		*cause, *what;

	claims(&t, "sb-1", "", "", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	assert_int_equal(token_check(ks, text, strlen(text), NOW + 59, &got,
	    &what), TOKEN_OK);
	assert_int_equal(token_check(ks, text, strlen(text), NOW + 60, &got,
	    &what), TOKEN_EXPIRED);
	/* Issued further ahead of our clock than the skew allows. */
	assert_int_equal(token_check(ks, text, strlen(text),
	    NOW - TOKEN_SKEW - 1, &got, &what), TOKEN_EXPIRED);
	assert_int_equal(token_check(ks, text, strlen(text),
	    NOW - TOKEN_SKEW, &got, &what), TOKEN_OK);
	token_keys_free(ks);
	EVP_PKEY_free(k);
}

static void
test_truncated_and_trailing(void **state)
{
	EVP_PKEY		*k = key_new();
	struct token_keys	*ks = keys_of(k);
	struct token		 t, got;
	char			 text[TOKEN_TEXT_MAX + 8], bad[TOKEN_TEXT_MAX + 8];
	const char		*cause, *what;
	size_t			 n, cut;

	claims(&t, "sb-1", "r", "base", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	n = strlen(text);
	for (cut = 0; cut < n; cut++)
		assert_int_not_equal(token_check(ks, text, cut, NOW, &got,
		    &what), TOKEN_OK);
	/* One more character, or four (three more bytes). */
	memcpy(bad, text, n);
	memcpy(bad + n, "AAAA", 5);
	assert_int_equal(token_check(ks, bad, n + 1, NOW, &got, &what),
	    TOKEN_MALFORMED);
	assert_int_equal(token_check(ks, bad, n + 4, NOW, &got, &what),
	    TOKEN_MALFORMED);
	/* A NUL inside the given length. */
	memcpy(bad, text, n + 1);
	bad[n / 2] = '\0';
	assert_int_equal(token_check(ks, bad, n, NOW, &got, &what),
	    TOKEN_MALFORMED);
	token_keys_free(ks);
	EVP_PKEY_free(k);
}

static void
test_oversize_and_bounds(void **state)
{
	EVP_PKEY		*k = key_new();
	struct token		 t;
	char			 text[TOKEN_TEXT_MAX + 1], big[4096];
	const char		*cause, *what;
	struct token		 got;
	size_t			 i;

	claims(&t, "sb-1", "", "", NOW, TOKEN_TTL_MAX + 1);
	assert_int_equal(token_issue(k, &t, text, &cause), -1);
	claims(&t, "sb-1", "", "", NOW, 0);
	assert_int_equal(token_issue(k, &t, text, &cause), -1);
	claims(&t, "", "", "", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), -1);
	claims(&t, "sb/1", "", "", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), -1);
	claims(&t, "sb", "", "a,a", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), -1);
	claims(&t, "sb", "", "A", NOW, 60);
	assert_int_equal(token_issue(k, &t, text, &cause), -1);
	/* The largest token fits its bound. */
	memset(&t, 0, sizeof(t));
	memset(t.sandbox, 's', TOKEN_ID_MAX);
	memset(t.run, 'r', TOKEN_ID_MAX);
	memset(t.sets, 'x', 64);
	for (i = 64; i + 65 <= TOKEN_SETS_MAX; i += 65) {
		t.sets[i] = ',';
		memset(t.sets + i + 1, (int)('a' + i / 65), 64);
	}
	t.issued = NOW;
	t.expires = NOW + 1;
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	assert_true(strlen(text) <= TOKEN_TEXT_MAX);
	/* Oversize input: refused before decoding. */
	memset(big, 'A', sizeof(big));
	memcpy(big, "sgt1.", 5);
	assert_int_equal(token_check(NULL, big, sizeof(big), NOW, &got,
	    &what), TOKEN_MALFORMED);
	assert_string_equal(what, "longer than a token can be");
	assert_int_equal(token_check(NULL, "0123abcd", 8, NOW, &got, &what),
	    TOKEN_MALFORMED);
	EVP_PKEY_free(k);
}

/* Base64url's one spelling: set bits past the last byte are refused. */
static void
test_noncanonical(void **state)
{
	EVP_PKEY		*k = key_new();
	struct token_keys	*ks = keys_of(k);
	struct token		 t, got;
	char			 text[TOKEN_TEXT_MAX + 1];
	const char		*cause, *what, *al =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
	size_t			 n, v;

	claims(&t, "sb-12", "", "", NOW, 60);	/* 113 bytes: 2 spare bits */
	assert_int_equal(token_issue(k, &t, text, &cause), 0);
	n = strlen(text);
	v = (size_t)(strchr(al, text[n - 1]) - al);
	assert_int_equal(v & 3, 0);
	text[n - 1] = al[v | 1];
	assert_int_equal(token_check(ks, text, n, NOW, &got, &what),
	    TOKEN_MALFORMED);
	token_keys_free(ks);
	EVP_PKEY_free(k);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_round_trip),
		cmocka_unit_test(test_tamper_every_byte),
		cmocka_unit_test(test_wrong_key),
		cmocka_unit_test(test_expired),
		cmocka_unit_test(test_truncated_and_trailing),
		cmocka_unit_test(test_oversize_and_bounds),
		cmocka_unit_test(test_noncanonical),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
