/*
 * test_tlsseq.c: the check of a handshake's opening (tlsseq.h) on real
 * ClientHellos (tests/data/clienthello) and ServerHellos and
 * HelloRetryRequests built here, driven as the tunnel drives it: every
 * uncleared byte shown again with the new ones, cleared bytes gone.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "sni.h"
#include "tlsseq.h"

#define BUF_MAX	(128 * 1024)

/* One direction as the tunnel keeps it: bytes not cleared yet. */
struct way {
	unsigned char	b[BUF_MAX];
	size_t		len;
	size_t		cleared;	/* in all */
};

static SSL_CTX	*ctx;

static size_t	load(const char *, unsigned char *, size_t);
static enum tlsseq_result push(struct tlsseq *, struct way *, int server,
		    const unsigned char *, size_t);
static size_t	server_hello(unsigned char *, int retry);
static struct tlsseq *check_for(const char *);
static size_t	rename_sni(unsigned char *, size_t, const char *);

static size_t
load(const char *name, unsigned char *buf, size_t size)
{
	const char	*dir = getenv("SANDGATE_TEST_DATA");
	char		 path[1024];
	FILE		*f;
	size_t		 n;

	snprintf(path, sizeof(path), "%s/clienthello/%s",
	    dir != NULL ? dir : "../data", name);
	if ((f = fopen(path, "rb")) == NULL)
		fail_msg("cannot open \"%s\"", path);
	n = fread(buf, 1, size, f);
	fclose(f);
	assert_true(n > 5 && n < size);
	return n;
}

/* Add bytes to a way and show it all; cleared bytes leave the front. */
static enum tlsseq_result
push(struct tlsseq *ts, struct way *w, int server, const unsigned char *p,
    size_t n)
{
	enum tlsseq_result	r;
	size_t			ok = 0;

	assert_true(w->len + n <= sizeof(w->b));
	memcpy(w->b + w->len, p, n);
	w->len += n;
	r = server ? tlsseq_server(ts, w->b, w->len, &ok) :
	    tlsseq_client(ts, w->b, w->len, &ok);
	assert_true(ok <= w->len);
	memmove(w->b, w->b + ok, w->len - ok);
	w->len -= ok;
	w->cleared += ok;
	return r;
}

/* A ServerHello (or HelloRetryRequest) record, TLS 1.3 style. */
static size_t
server_hello(unsigned char *out, int retry)
{
	static const unsigned char hrr[32] = {
		0xcf, 0x21, 0xad, 0x74, 0xe5, 0x9a, 0x61, 0x11,
		0xbe, 0x1d, 0x8c, 0x02, 0x1e, 0x65, 0xb8, 0x91,
		0xc2, 0xa2, 0x11, 0x16, 0x7a, 0xbb, 0x8c, 0x5e,
		0x07, 0x9e, 0x09, 0xe2, 0xc8, 0xa8, 0x33, 0x9c
	};
	unsigned char	body[128];
	size_t		n = 0;

	body[n++] = 0x03;
	body[n++] = 0x03;
	if (retry)
		memcpy(body + n, hrr, 32);
	else
		memset(body + n, 0x5a, 32);
	n += 32;
	body[n++] = 0;				/* session id */
	body[n++] = 0x13;			/* TLS_AES_128_GCM_SHA256 */
	body[n++] = 0x01;
	body[n++] = 0;				/* compression */
	body[n++] = 0;				/* extensions: */
	body[n++] = 6;
	body[n++] = 0x00;			/* supported_versions */
	body[n++] = 0x2b;
	body[n++] = 0;
	body[n++] = 2;
	body[n++] = 0x03;
	body[n++] = 0x04;
	out[0] = 0x16;
	out[1] = 0x03;
	out[2] = 0x03;
	out[3] = 0;
	out[4] = (unsigned char)(n + 4);
	out[5] = 2;				/* server_hello */
	out[6] = 0;
	out[7] = 0;
	out[8] = (unsigned char)n;
	memcpy(out + 9, body, n);
	return 9 + n;
}

static struct tlsseq *
check_for(const char *host)
{
	struct host	 h;
	const char	*cause;
	struct tlsseq	*ts;

	assert_int_equal(host_normalize(host, strlen(host), &h, &cause), 0);
	ts = tlsseq_new(ctx, &h);
	assert_non_null(ts);
	return ts;
}

/* Replace the 12-byte "allowed.test" in a recorded hello with name. */
static size_t
rename_sni(unsigned char *b, size_t len, const char *name)
{
	size_t	i;

	assert_int_equal(strlen(name), 12);
	for (i = 0; i + 12 <= len; i++)
		if (memcmp(b + i, "allowed.test", 12) == 0) {
			memcpy(b + i, name, 12);
			return len;
		}
	fail_msg("no allowed.test in the hello");
	return 0;
}

/* One hello, then the ServerHello: every client byte cleared, then done. */
static void
test_hello_then_server_hello(void **state)
{
	static struct way	c, s;
	unsigned char		ch[8192], sh[256];
	size_t			n = load("curl.bin", ch, sizeof(ch));
	struct tlsseq		*ts = check_for("allowed.test");

	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	assert_int_equal(push(ts, &c, 0, ch, n), TLSSEQ_MORE);
	assert_int_equal(c.cleared, n);
	assert_int_equal(push(ts, &s, 1, sh, server_hello(sh, 0)),
	    TLSSEQ_DONE);
	assert_int_equal(tlsseq_hellos(ts), 1);
	assert_int_equal(tlsseq_retries(ts), 0);
	tlsseq_free(ts);
}

/* Byte by byte: nothing is cleared before the hello is whole. */
static void
test_hello_byte_by_byte(void **state)
{
	static struct way	c;
	unsigned char		ch[8192];
	size_t			n = load("openssl.bin", ch, sizeof(ch)), i;
	struct tlsseq		*ts = check_for("allowed.test");

	memset(&c, 0, sizeof(c));
	for (i = 0; i < n; i++) {
		assert_int_equal(push(ts, &c, 0, ch + i, 1), TLSSEQ_MORE);
		assert_int_equal(c.cleared, i + 1 == n ? n : 0);
	}
	tlsseq_free(ts);
}

/*
 * HelloRetryRequest, then a second ClientHello (after ChangeCipherSpec):
 * the same name passes, another is refused and named (issue 15,
 * finding 3).
 */
static void
test_retry_then_second_hello(void **state)
{
	static const unsigned char ccs[] = { 0x14, 0x03, 0x03, 0, 1, 1 };
	static struct way	c, s;
	unsigned char		ch[8192], ch2[8192], sh[256];
	size_t			n = load("curl.bin", ch, sizeof(ch));
	size_t			n2 = load("python.bin", ch2, sizeof(ch2));
	struct tlsseq		*ts;
	int			evil;

	for (evil = 0; evil < 2; evil++) {
		memset(&c, 0, sizeof(c));
		memset(&s, 0, sizeof(s));
		ts = check_for("allowed.test");
		assert_int_equal(push(ts, &c, 0, ch, n), TLSSEQ_MORE);
		assert_int_equal(push(ts, &s, 1, sh, server_hello(sh, 1)),
		    TLSSEQ_MORE);
		assert_int_equal(s.cleared, server_hello(sh, 1));
		assert_int_equal(tlsseq_retries(ts), 1);
		assert_int_equal(push(ts, &c, 0, ccs, sizeof(ccs)),
		    TLSSEQ_MORE);
		if (evil) {
			rename_sni(ch2, n2, "evilhost.tst");
			assert_int_equal(push(ts, &c, 0, ch2, n2),
			    TLSSEQ_REFUSE);
			assert_int_equal(tlsseq_reason(ts),
			    SG_REASON_SNI_MISMATCH);
			assert_string_equal(tlsseq_name(ts), "evilhost.tst");
			assert_int_equal(c.cleared, n + sizeof(ccs));
		} else {
			assert_int_equal(push(ts, &c, 0, ch2, n2),
			    TLSSEQ_MORE);
			assert_int_equal(push(ts, &s, 1, sh, server_hello(sh,
			    0)), TLSSEQ_DONE);
			assert_int_equal(tlsseq_hellos(ts), 2);
		}
		tlsseq_free(ts);
	}
}

/* Re-framed over many small records, a hello still passes whole. */
static void
test_hello_over_many_records(void **state)
{
	static struct way	c;
	static unsigned char	re[BUF_MAX];
	unsigned char		ch[8192];
	size_t			n = load("curl.bin", ch, sizeof(ch)), off, k;
	size_t			o = 0;
	struct tlsseq		*ts = check_for("allowed.test");

	/* One record in curl.bin: split its payload in pieces of 7. */
	for (off = 5; off < n; off += k) {
		k = n - off < 7 ? n - off : 7;
		re[o++] = 0x16;
		re[o++] = 0x03;
		re[o++] = 0x01;
		re[o++] = 0;
		re[o++] = (unsigned char)k;
		memcpy(re + o, ch + off, k);
		o += k;
	}
	memset(&c, 0, sizeof(c));
	assert_int_equal(push(ts, &c, 0, re, o), TLSSEQ_MORE);
	assert_int_equal(c.cleared, o);
	tlsseq_free(ts);
}

/* What a ClientHello must not be: each refused with its reason. */
static void
test_refusals(void **state)
{
	static struct way	c, s;
	static const struct {
		const char	*file;
		const char	*host;
		const char	*rename;
		enum sg_reason	 want;
	} t[] = {
	    { "ech.bin", "allowed.test", NULL, SG_REASON_ECH },
	    { "nosni.bin", "allowed.test", NULL, SG_REASON_SNI_MISSING },
	    { "curl.bin", "other.test", NULL, SG_REASON_SNI_MISMATCH },
	    { "curl.bin", "allowed.test", "allowed.t\xc3\xa9t",
	      SG_REASON_SNI_INVALID },
	    { "curl.bin", "allowed.test", "allowed\x1b[2Kt",
	      SG_REASON_SNI_INVALID },
	};
	unsigned char	 ch[8192], sh[256];
	size_t		 n, i;
	struct tlsseq	*ts;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(&c, 0, sizeof(c));
		n = load(t[i].file, ch, sizeof(ch));
		if (t[i].rename != NULL)
			rename_sni(ch, n, t[i].rename);
		ts = check_for(t[i].host);
		assert_int_equal(push(ts, &c, 0, ch, n), TLSSEQ_REFUSE);
		assert_int_equal(tlsseq_reason(ts), t[i].want);
		assert_int_equal(c.cleared, 0);
		/* Refused stays refused. */
		memset(&s, 0, sizeof(s));
		assert_int_equal(push(ts, &s, 1, sh, server_hello(sh, 0)),
		    TLSSEQ_REFUSE);
		tlsseq_free(ts);
	}
	/* No server name is fine for an IP address. */
	memset(&c, 0, sizeof(c));
	n = load("nosni.bin", ch, sizeof(ch));
	ts = check_for("192.0.2.7");
	assert_int_equal(push(ts, &c, 0, ch, n), TLSSEQ_MORE);
	assert_int_equal(c.cleared, n);
	tlsseq_free(ts);
}

/* Framing a check must refuse: interleaving, early data, forged hellos. */
static void
test_sequence_refusals(void **state)
{
	static const unsigned char alert[] = { 0x15, 0x03, 0x03, 0, 2, 1, 0 };
	static const unsigned char appdata[] = { 0x17, 0x03, 0x03, 0, 1, 0 };
	static const unsigned char huge[] = {
		0x16, 0x03, 0x01, 0, 4, 0x01, 0x01, 0x10, 0x00
	};
	static struct way	c, s;
	unsigned char		ch[8192], sh[256];
	size_t			n = load("curl.bin", ch, sizeof(ch));
	struct tlsseq		*ts;

	/* An alert between two records of one ClientHello. */
	memset(&c, 0, sizeof(c));
	ts = check_for("allowed.test");
	ch[4] = 0x40;			/* first record: 64 bytes of it */
	ch[3] = 0;
	assert_int_equal(push(ts, &c, 0, ch, 5 + 64), TLSSEQ_MORE);
	assert_int_equal(push(ts, &c, 0, alert, sizeof(alert)),
	    TLSSEQ_REFUSE);
	tlsseq_free(ts);
	/* Application data before any ClientHello. */
	memset(&c, 0, sizeof(c));
	ts = check_for("allowed.test");
	assert_int_equal(push(ts, &c, 0, appdata, sizeof(appdata)),
	    TLSSEQ_REFUSE);
	assert_int_equal(tlsseq_reason(ts), SG_REASON_NOT_TLS);
	tlsseq_free(ts);
	/* A ServerHello before any ClientHello was checked. */
	memset(&s, 0, sizeof(s));
	ts = check_for("allowed.test");
	assert_int_equal(push(ts, &s, 1, sh, server_hello(sh, 0)),
	    TLSSEQ_REFUSE);
	tlsseq_free(ts);
	/* A ClientHello that says it is 69,632 bytes long. */
	memset(&c, 0, sizeof(c));
	ts = check_for("allowed.test");
	assert_int_equal(push(ts, &c, 0, huge, sizeof(huge)), TLSSEQ_REFUSE);
	assert_int_equal(tlsseq_reason(ts), SG_REASON_SNI_INVALID);
	tlsseq_free(ts);
	(void)n;
}

static int
setup(void **state)
{
	ctx = sni_ctx_new();
	return ctx == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	SSL_CTX_free(ctx);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_hello_then_server_hello),
		cmocka_unit_test(test_hello_byte_by_byte),
		cmocka_unit_test(test_retry_then_second_hello),
		cmocka_unit_test(test_hello_over_many_records),
		cmocka_unit_test(test_refusals),
		cmocka_unit_test(test_sequence_refusals),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
