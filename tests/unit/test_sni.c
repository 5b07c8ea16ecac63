/*
 * test_sni.c: ClientHello peeking (sni.h) on ClientHellos recorded from
 * curl, openssl s_client and python (tests/data/clienthello/record.sh),
 * fed whole, a byte at a time, re-framed over several records, cut short,
 * and rewritten with bad server_name extensions.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/err.h>

#include "sni.h"

#define CH_MAX	4096

struct ch {
	unsigned char	b[CH_MAX];
	size_t		len;
};

static SSL_CTX	*ctx;

static void	load(const char *, struct ch *);
static enum sni_result feed_pieces(struct sni_peek *, const struct ch *,
		    size_t);

static void
load(const char *name, struct ch *ch)
{
	const char	*dir = getenv("SANDGATE_TEST_DATA");
	char		 path[1024];
	FILE		*f;

	snprintf(path, sizeof(path), "%s/clienthello/%s",
	    dir != NULL ? dir : "../data", name);
	f = fopen(path, "rb");
	if (f == NULL)
		fail_msg("cannot open \"%s\"", path);
	ch->len = fread(ch->b, 1, sizeof(ch->b), f);
	fclose(f);
	assert_true(ch->len > 5 && ch->len < sizeof(ch->b));
}

/* Feed in pieces of size step; returns the first result not SNI_MORE. */
static enum sni_result
feed_pieces(struct sni_peek *sp, const struct ch *ch, size_t step)
{
	enum sni_result	r = SNI_MORE;
	size_t		off, n;

	for (off = 0; off < ch->len; off += n) {
		n = ch->len - off < step ? ch->len - off : step;
		r = sni_peek_feed(sp, ch->b + off, n);
		if (r != SNI_MORE) {
			/* Only the last piece may complete a lone hello. */
			assert_int_equal(off + n, ch->len);
			break;
		}
	}
	return r;
}

/* The handshake message of a one-record capture. */
static size_t
hs_of(const struct ch *ch, const unsigned char **hs)
{
	size_t	n = ((size_t)ch->b[3] << 8) | ch->b[4];

	assert_int_equal(ch->b[0], 0x16);
	assert_int_equal(n + 5, ch->len);
	*hs = ch->b + 5;
	return n;
}

/* Re-frame the handshake message into records of at most frag bytes. */
static void
reframe(const struct ch *in, size_t frag, struct ch *out)
{
	const unsigned char	*hs;
	size_t			 n = hs_of(in, &hs), off, k;

	out->len = 0;
	for (off = 0; off < n; off += k) {
		k = n - off < frag ? n - off : frag;
		assert_true(out->len + 5 + k <= sizeof(out->b));
		memcpy(out->b + out->len, in->b, 3);
		out->b[out->len + 3] = (unsigned char)(k >> 8);
		out->b[out->len + 4] = (unsigned char)k;
		memcpy(out->b + out->len + 5, hs + off, k);
		out->len += 5 + k;
	}
}

static unsigned
get16(const unsigned char *p)
{
	return ((unsigned)p[0] << 8) | p[1];
}

static void
put16(unsigned char *p, size_t v)
{
	p[0] = (unsigned char)(v >> 8);
	p[1] = (unsigned char)v;
}

/*
 * Replace the extension_data of server_name (0) in a one-record hello
 * with data, fixing the extensions, handshake and record lengths.
 */
static void
replace_sni(const struct ch *in, const unsigned char *data, size_t dlen,
    struct ch *out)
{
	const unsigned char	*hs;
	size_t			 n = hs_of(in, &hs), i, exts, end, elen;
	size_t			 ext_at = 0, old = 0, hlen;

	i = 4 + 2 + 32;
	i += 1 + hs[i];				/* session id */
	i += 2 + get16(hs + i);			/* cipher suites */
	i += 1 + hs[i];				/* compression */
	exts = i;
	end = exts + 2 + get16(hs + exts);
	assert_int_equal(end, n);
	for (i = exts + 2; i < end; i += 4 + elen) {
		elen = get16(hs + i + 2);
		if (get16(hs + i) == 0) {
			ext_at = i;
			old = elen;
		}
	}
	assert_true(ext_at != 0);
	/* Record header, then the handshake up to the extension's data. */
	memcpy(out->b, in->b, 5 + ext_at + 2);
	put16(out->b + 5 + ext_at + 2, dlen);
	memcpy(out->b + 5 + ext_at + 4, data, dlen);
	memcpy(out->b + 5 + ext_at + 4 + dlen, hs + ext_at + 4 + old,
	    n - (ext_at + 4 + old));
	hlen = n - old + dlen;
	out->len = 5 + hlen;
	put16(out->b + 3, hlen);
	out->b[5 + 1] = (unsigned char)((hlen - 4) >> 16);
	put16(out->b + 5 + 2, hlen - 4);
	put16(out->b + 5 + exts, get16(hs + exts) - old + dlen);
}

struct file_row {
	const char	*file;
	const char	*name;		/* NULL: no SNI */
	int		 ech;
};

static const struct file_row file_rows[] = {
	{ "curl.bin", "allowed.test", 0 },
	{ "openssl.bin", "allowed.test", 0 },
	{ "python.bin", "allowed.test", 0 },
	{ "nosni.bin", NULL, 0 },
	{ "ech.bin", "allowed.test", 1 },
};

static void
check_done(struct sni_peek *sp, enum sni_result r, const struct file_row *f)
{
	if (r != SNI_DONE)
		fail_msg("%s: result %d", f->file, r);
	if (f->name == NULL)
		assert_null(sni_peek_name(sp));
	else
		assert_string_equal(sni_peek_name(sp), f->name);
	assert_int_equal(sni_peek_ech(sp), f->ech);
}

/* Whole, in 1-, 2-, 7- and 100-byte pieces, and over many records. */
static void
test_recorded(void **state)
{
	static const size_t	 steps[] = { CH_MAX, 1, 2, 7, 100 };
	static const size_t	 frags[] = { 1, 5, 50, 200, 16384 };
	struct ch		 ch, re;
	struct sni_peek		*sp;
	size_t			 i, j;

	(void)state;
	for (i = 0; i < sizeof(file_rows) / sizeof(file_rows[0]); i++) {
		load(file_rows[i].file, &ch);
		for (j = 0; j < sizeof(steps) / sizeof(steps[0]); j++) {
			sp = sni_peek_new(ctx);
			assert_non_null(sp);
			check_done(sp, feed_pieces(sp, &ch, steps[j]),
			    &file_rows[i]);
			sni_peek_free(sp);
		}
		for (j = 0; j < sizeof(frags) / sizeof(frags[0]); j++) {
			reframe(&ch, frags[j], &re);
			sp = sni_peek_new(ctx);
			check_done(sp, feed_pieces(sp, &re, CH_MAX),
			    &file_rows[i]);
			sni_peek_free(sp);
			sp = sni_peek_new(ctx);
			check_done(sp, feed_pieces(sp, &re, 3), &file_rows[i]);
			sni_peek_free(sp);
		}
	}
}

/* Split into two records at every offset; feed at the record border. */
static void
test_record_boundary(void **state)
{
	const unsigned char	*hs;
	struct ch		 ch, re;
	struct sni_peek		*sp;
	size_t			 n, k, first;

	(void)state;
	load("curl.bin", &ch);
	n = hs_of(&ch, &hs);
	for (k = 1; k < n; k++) {
		memcpy(re.b, ch.b, 3);
		put16(re.b + 3, k);
		memcpy(re.b + 5, hs, k);
		memcpy(re.b + 5 + k, ch.b, 3);
		put16(re.b + 5 + k + 3, n - k);
		memcpy(re.b + 10 + k, hs + k, n - k);
		re.len = n + 10;
		sp = sni_peek_new(ctx);
		first = 5 + k;
		assert_int_equal(sni_peek_feed(sp, re.b, first), SNI_MORE);
		assert_int_equal(sni_peek_feed(sp, re.b + first,
		    re.len - first), SNI_DONE);
		assert_string_equal(sni_peek_name(sp), "allowed.test");
		sni_peek_free(sp);
	}
}

/* A cut-short hello never completes, whatever the cut. */
static void
test_truncated(void **state)
{
	struct ch	 ch, cut;
	struct sni_peek	*sp;
	size_t		 k;

	(void)state;
	load("openssl.bin", &ch);
	for (k = 1; k < ch.len; k++) {
		memcpy(cut.b, ch.b, k);
		cut.len = k;
		sp = sni_peek_new(ctx);
		assert_int_equal(feed_pieces(sp, &cut, CH_MAX), SNI_MORE);
		assert_null(sni_peek_name(sp));
		assert_int_equal(sni_peek_ech(sp), 0);
		sni_peek_free(sp);
	}
}

static void
test_not_tls(void **state)
{
	static const char	*rows[] = {
		"GET / HTTP/1.1\r\nHost: allowed.test\r\n\r\n",
		"SSH-2.0-OpenSSH_9.2\r\n",
		"\x15\x03\x03\x00\x02\x02\x28",		/* alert */
		"\x80\x2e\x01\x00\x02",			/* SSLv2 hello */
		"\x17\x03\x03\x00\x10",			/* app data */
	};
	struct sni_peek	*sp;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sp = sni_peek_new(ctx);
		assert_int_equal(sni_peek_feed(sp,
		    (const unsigned char *)rows[i], strlen(rows[i])),
		    SNI_NOT_TLS);
		/* Sticky: a later TLS byte changes nothing. */
		assert_int_equal(sni_peek_feed(sp,
		    (const unsigned char *)"\x16", 1), SNI_NOT_TLS);
		assert_null(sni_peek_name(sp));
		sni_peek_free(sp);
	}
	/* One byte is enough to decide. */
	sp = sni_peek_new(ctx);
	assert_int_equal(sni_peek_feed(sp, (const unsigned char *)"G", 1),
	    SNI_NOT_TLS);
	sni_peek_free(sp);
	/* Empty feeds decide nothing. */
	sp = sni_peek_new(ctx);
	assert_int_equal(sni_peek_feed(sp, (const unsigned char *)"", 0),
	    SNI_MORE);
	sni_peek_free(sp);
}

static void
test_garbage(void **state)
{
	static const struct {
		const char	*b;
		size_t		 len;
	} rows[] = {
		/* a handshake record holding a ServerHello */
		{ "\x16\x03\x01\x00\x06\x02\x00\x00\x02\x03\x03", 11 },
		/* bad record version */
		{ "\x16\x16\x16\x16\x16\x16\x16\x16\x16\x16", 10 },
		/* record longer than TLS allows */
		{ "\x16\x03\x01\xff\xff\x01", 6 },
		/* a ClientHello whose body is nonsense */
		{ "\x16\x03\x01\x00\x0a\x01\x00\x00\x06\x03\x03zzzz", 15 },
		/* a ClientHello message longer than OpenSSL takes */
		{ "\x16\x03\x01\x00\x04\x01\x03\x00\x00", 9 },
		/* a record of a handshake message that is not a hello */
		{ "\x16\x03\x01\x00\x04\x0b\x00\x00\x00", 9 },
	};
	struct sni_peek	*sp;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		sp = sni_peek_new(ctx);
		if (sni_peek_feed(sp, (const unsigned char *)rows[i].b,
		    rows[i].len) != SNI_ERROR)
			fail_msg("garbage row %zu not refused", i);
		assert_null(sni_peek_name(sp));
		assert_int_equal(sni_peek_feed(sp, (const unsigned char *)
		    rows[i].b, rows[i].len), SNI_ERROR);
		sni_peek_free(sp);
	}
}

/* More than SG_CLIENTHELLO_MAX bytes are refused, however they come. */
static void
test_cap(void **state)
{
	unsigned char	*big;
	struct sni_peek	*sp;

	(void)state;
	big = calloc(1, SG_CLIENTHELLO_MAX + 1);
	assert_non_null(big);
	big[0] = 0x16;
	sp = sni_peek_new(ctx);
	assert_int_equal(sni_peek_feed(sp, big, SG_CLIENTHELLO_MAX + 1),
	    SNI_ERROR);
	sni_peek_free(sp);
	free(big);
}

/*
 * A ClientHello that claims 65535 bytes, sent in full 16 KiB records:
 * OpenSSL would wait for all of it, the cap stops it first.
 */
static void
test_cap_records(void **state)
{
	unsigned char	 rec[5 + 16384];
	struct sni_peek	*sp;
	enum sni_result	 r = SNI_MORE;
	size_t		 fed = 0;

	(void)state;
	memset(rec, 0, sizeof(rec));
	memcpy(rec, "\x16\x03\x01\x40\x00\x01\x00\xff\xff\x03\x03", 11);
	sp = sni_peek_new(ctx);
	while (r == SNI_MORE && fed <= SG_CLIENTHELLO_MAX) {
		r = sni_peek_feed(sp, rec, sizeof(rec));
		fed += sizeof(rec);
		/* Later records carry only the rest of the message. */
		memset(rec + 5, 0, 6);
	}
	assert_int_equal(r, SNI_ERROR);
	assert_true(fed > SG_CLIENTHELLO_MAX);
	sni_peek_free(sp);
}

struct ext_row {
	const char	*data;
	size_t		 len;
	enum sni_result	 want;
	const char	*name;
};

#define EXT(s, r, n)	{ s, sizeof(s) - 1, r, n }

static const struct ext_row ext_rows[] = {
	EXT("\x00\x0d\x00\x00\x0a" "other.test", SNI_DONE, "other.test"),
	/* returned as sent: the caller normalizes */
	EXT("\x00\x10\x00\x00\x0d" "Allowed.TEST.", SNI_DONE, "Allowed.TEST."),
	EXT("\x00\x06\x00\x00\x03\xc3\xbc" "a", SNI_DONE, "\xc3\xbc" "a"),
	/* two host names */
	EXT("\x00\x0e\x00\x00\x04" "a.te\x00\x00\x04" "b.te", SNI_ERROR, NULL),
	/* an embedded NUL */
	EXT("\x00\x0f\x00\x00\x0c" "a.test\x00" "b.tes", SNI_ERROR, NULL),
	/* an empty name */
	EXT("\x00\x03\x00\x00\x00", SNI_ERROR, NULL),
	/* an unknown name type */
	EXT("\x00\x07\x01\x00\x04" "a.te", SNI_ERROR, NULL),
	/* name length past the list */
	EXT("\x00\x07\x00\x00\x09" "a.te", SNI_ERROR, NULL),
	/* list length past the extension */
	EXT("\x00\x09\x00\x00\x04" "a.te", SNI_ERROR, NULL),
	/* list length short of the extension */
	EXT("\x00\x06\x00\x00\x04" "a.te", SNI_ERROR, NULL),
	/* trailing bytes in the list */
	EXT("\x00\x08\x00\x00\x04" "a.tez", SNI_ERROR, NULL),
	/* an empty list, and no list at all */
	EXT("\x00\x00", SNI_ERROR, NULL),
	EXT("", SNI_ERROR, NULL),
	EXT("\x00", SNI_ERROR, NULL),
};

static void
test_bad_extensions(void **state)
{
	struct ch	 ch, mod;
	struct sni_peek	*sp;
	enum sni_result	 r;
	size_t		 i;

	(void)state;
	load("curl.bin", &ch);
	for (i = 0; i < sizeof(ext_rows) / sizeof(ext_rows[0]); i++) {
		replace_sni(&ch, (const unsigned char *)ext_rows[i].data,
		    ext_rows[i].len, &mod);
		sp = sni_peek_new(ctx);
		r = feed_pieces(sp, &mod, CH_MAX);
		if (r != ext_rows[i].want)
			fail_msg("extension row %zu: result %d", i, r);
		if (ext_rows[i].name != NULL)
			assert_string_equal(sni_peek_name(sp),
			    ext_rows[i].name);
		else
			assert_null(sni_peek_name(sp));
		sni_peek_free(sp);
		/* The same byte by byte. */
		sp = sni_peek_new(ctx);
		assert_int_equal(feed_pieces(sp, &mod, 1), ext_rows[i].want);
		sni_peek_free(sp);
	}
}

/* Bytes after the hello (early data, a second record) do not matter. */
static void
test_trailing_bytes(void **state)
{
	struct ch	 ch;
	struct sni_peek	*sp;

	(void)state;
	load("python.bin", &ch);
	memcpy(ch.b + ch.len, "\x17\x03\x03\x00\x05hello", 10);
	ch.len += 10;
	sp = sni_peek_new(ctx);
	assert_int_equal(sni_peek_feed(sp, ch.b, ch.len), SNI_DONE);
	assert_string_equal(sni_peek_name(sp), "allowed.test");
	/* Done is sticky and reads nothing more. */
	assert_int_equal(sni_peek_feed(sp, (const unsigned char *)"x", 1),
	    SNI_DONE);
	assert_string_equal(sni_peek_name(sp), "allowed.test");
	sni_peek_free(sp);
	sni_peek_free(NULL);
}

/* Many peeks on one context do not interfere, nor leave errors queued. */
static void
test_interleaved(void **state)
{
	struct ch	 a, b;
	struct sni_peek	*pa, *pb;
	size_t		 i;

	(void)state;
	load("curl.bin", &a);
	load("nosni.bin", &b);
	pa = sni_peek_new(ctx);
	pb = sni_peek_new(ctx);
	for (i = 0; i < a.len || i < b.len; i++) {
		if (i < a.len)
			assert_int_equal(sni_peek_feed(pa, a.b + i, 1),
			    i + 1 == a.len ? SNI_DONE : SNI_MORE);
		if (i < b.len)
			assert_int_equal(sni_peek_feed(pb, b.b + i, 1),
			    i + 1 == b.len ? SNI_DONE : SNI_MORE);
	}
	assert_string_equal(sni_peek_name(pa), "allowed.test");
	assert_null(sni_peek_name(pb));
	sni_peek_free(pa);
	sni_peek_free(pb);
	assert_int_equal(ERR_peek_error(), 0);
}

static int
setup(void **state)
{
	(void)state;
	ctx = sni_ctx_new();
	return ctx == NULL ? -1 : 0;
}

static int
teardown(void **state)
{
	(void)state;
	SSL_CTX_free(ctx);
	return 0;
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_recorded),
		cmocka_unit_test(test_record_boundary),
		cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_not_tls),
		cmocka_unit_test(test_garbage),
		cmocka_unit_test(test_cap),
		cmocka_unit_test(test_cap_records),
		cmocka_unit_test(test_bad_extensions),
		cmocka_unit_test(test_trailing_bytes),
		cmocka_unit_test(test_interleaved),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
