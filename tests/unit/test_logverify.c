/* test_logverify.c: line checks and chain checks of logverify.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/evp.h>

#include "logverify.h"
#include "util.h"

#define ZEROS	"00000000000000000000000000000000" \
		"00000000000000000000000000000000"
#define NLINES	6

/* A chain of lines built here, independently of eventlog.c. */
struct chain {
	char	line[NLINES][512];
	char	hash[NLINES][65];
};

static void	make_line(char *, size_t, long long, const char *, const char *,
		    char *);
static void	make_chain(struct chain *, long long, const char *);
static int	verify_lines(struct logverify *, char lines[][512], size_t);

/* Build {"ts":..,"seq":seq,"host":host,"prev":prev,"hash":H} into out. */
static void
make_line(char *out, size_t size, long long seq, const char *host,
    const char *prev, char *hash)
{
	char		body[400];
	unsigned char	md[32];

	snprintf(body, sizeof(body), "{\"ts\":\"2026-01-01T00:00:00.000000Z\","
	    "\"seq\":%lld,\"host\":\"%s\",\"prev\":\"%s\"}", seq, host, prev);
	assert_int_equal(EVP_Digest(body, strlen(body), md, NULL,
	    EVP_sha256(), NULL), 1);
	util_hex(md, 32, hash);
	body[strlen(body) - 1] = '\0';
	snprintf(out, size, "%s,\"hash\":\"%s\"}", body, hash);
}

static void
make_chain(struct chain *c, long long first, const char *prev)
{
	char	host[32];
	int	i;

	for (i = 0; i < NLINES; i++) {
		snprintf(host, sizeof(host), "h%d.test", i);
		make_line(c->line[i], sizeof(c->line[i]), first + i, host,
		    i == 0 ? prev : c->hash[i - 1], c->hash[i]);
	}
}

/* Feed n lines as one file "f"; returns logverify_finish(). */
static int
verify_lines(struct logverify *v, char lines[][512], size_t n)
{
	size_t	i;

	logverify_init(v);
	logverify_file(v, "f");
	for (i = 0; i < n; i++)
		logverify_feed(v, lines[i], strlen(lines[i]));
	return logverify_finish(v);
}

static void
test_line_valid(void **state)
{
	struct logverify_line	l;
	char			line[512], hash[65], computed[65];

	make_line(line, sizeof(line), 7, "pypi.org", ZEROS, hash);
	assert_int_equal(logverify_line(line, strlen(line), &l), LOGVERIFY_OK);
	assert_int_equal(l.seq, 7);
	assert_string_equal(l.prev, ZEROS);
	assert_string_equal(l.hash, hash);
	assert_int_equal(logverify_hash(line, strlen(line), computed), 0);
	assert_string_equal(computed, hash);
}

/* Table of malformed lines and what they are. */
static void
test_line_table(void **state)
{
	static const struct {
		const char		*line;
		enum logverify_status	 want;
	} cases[] = {
		{ "", LOGVERIFY_NOT_LOG },
		{ "{", LOGVERIFY_TORN },
		{ "{\"ts", LOGVERIFY_TORN },
		{ "{\"ts\":\"2026", LOGVERIFY_TORN },
		{ "{\"ts\":\"2026-01-01\",\"seq\":1", LOGVERIFY_TORN },
		{ "not json", LOGVERIFY_NOT_LOG },
		{ "{\"a\":1} trailing", LOGVERIFY_NOT_LOG },
		/* complete JSON and more is no prefix of a line (F2) */
		{ "{\"ts\":\"x\"} trailing", LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"ts\":\"y\"}", LOGVERIFY_NOT_LOG },
		{ "[1,2]", LOGVERIFY_NOT_LOG },
		{ "{\"a\":1}", LOGVERIFY_NOT_LOG },
		{ "{\"seq\":1,\"prev\":\"" ZEROS "\"}", LOGVERIFY_NOT_LOG },
		{ "{\"seq\":0,\"prev\":\"" ZEROS "\",\"hash\":\"" ZEROS "\"}",
		    LOGVERIFY_NOT_LOG },
		{ "{\"seq\":\"1\",\"prev\":\"" ZEROS "\",\"hash\":\"" ZEROS
		    "\"}", LOGVERIFY_NOT_LOG },
		{ "{\"seq\":1,\"prev\":\"abc\",\"hash\":\"" ZEROS "\"}",
		    LOGVERIFY_NOT_LOG },
		{ "{\"seq\":1,\"prev\":\"" ZEROS "\",\"hash\":\""
		    "00000000000000000000000000000000"
		    "0000000000000000000000000000000A"
		    "\"}", LOGVERIFY_NOT_LOG },
		/* hash not the last member */
		{ "{\"seq\":1,\"hash\":\"" ZEROS "\",\"prev\":\"" ZEROS "\"}",
		    LOGVERIFY_NOT_LOG },
		/* duplicate keys are refused */
		{ "{\"seq\":1,\"seq\":2,\"prev\":\"" ZEROS "\",\"hash\":\""
		    ZEROS "\"}", LOGVERIFY_NOT_LOG },
		/* well-formed, but the hash is wrong */
		{ "{\"seq\":1,\"prev\":\"" ZEROS "\",\"hash\":\"" ZEROS "\"}",
		    LOGVERIFY_HASH_MISMATCH },
		/*
		 * Whole lines (ending as a line ends) that the parser refuses
		 * are not torn: the writer never writes them.
		 */
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\\u0000\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"}", LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":99999999999999999999999,"
		    "\"prev\":\"" ZEROS "\",\"hash\":\"" ZEROS "\"}",
		    LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\\ud800\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"}", LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\xff\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"}", LOGVERIFY_NOT_LOG },
		/*
		 * ... nor with whitespace after them (F2: other parsers read
		 * them whole), nor cut short: the writer never wrote a \u0000
		 */
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\\u0000\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"} ", LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\\u0000\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"}\r", LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\\u0000\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"}\t", LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"\\u0000\",\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS, LOGVERIFY_NOT_LOG },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":1}  ", LOGVERIFY_NOT_LOG },
		/* a prefix of a line the writer makes is torn, wherever cut */
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":nu", LOGVERIFY_TORN },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"a\\u00", LOGVERIFY_TORN },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":{\"a\":1}", LOGVERIFY_TORN },
		{ "{\"ts\":\"x\",\"seq\":1,\"n\":\"a ", LOGVERIFY_TORN },
		/* F3: a seq past 2^53 - 1 is not a log line */
		{ "{\"seq\":9007199254740992,\"prev\":\"" ZEROS "\",\"hash\":\""
		    ZEROS "\"}", LOGVERIFY_NOT_LOG },
		{ "{\"seq\":9223372036854775807,\"prev\":\"" ZEROS
		    "\",\"hash\":\"" ZEROS "\"}", LOGVERIFY_NOT_LOG },
		{ "{\"seq\":9007199254740991,\"prev\":\"" ZEROS "\",\"hash\":\""
		    ZEROS "\"}", LOGVERIFY_HASH_MISMATCH },
	};
	struct logverify_line	l;
	size_t			i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		enum logverify_status st = logverify_line(cases[i].line,
		    strlen(cases[i].line), &l);
		if (st != cases[i].want)
			fail_msg("case %zu \"%s\": got %d want %d", i,
			    cases[i].line, st, cases[i].want);
	}
}

static void
test_line_edit_and_overlong(void **state)
{
	struct logverify_line	 l;
	char			 line[512], hash[65], *big;

	make_line(line, sizeof(line), 1, "pypi.org", ZEROS, hash);
	line[strstr(line, "pypi") - line] = 'P';
	assert_int_equal(logverify_line(line, strlen(line), &l),
	    LOGVERIFY_HASH_MISMATCH);
	big = malloc(SG_LOG_LINE_MAX + 2);
	assert_non_null(big);
	memset(big, ' ', SG_LOG_LINE_MAX + 1);
	big[0] = '{';
	big[SG_LOG_LINE_MAX] = '}';
	assert_int_equal(logverify_line(big, SG_LOG_LINE_MAX + 1, &l),
	    LOGVERIFY_NOT_LOG);
	free(big);
}

static void
test_chain_intact(void **state)
{
	struct chain	 c;
	struct logverify v;

	make_chain(&c, 1, ZEROS);
	assert_int_equal(verify_lines(&v, c.line, NLINES), 0);
	assert_int_equal(v.events, NLINES);
	assert_int_equal(v.genesis, 1);
	assert_int_equal(v.first_seq, 1);
	assert_int_equal(v.last_seq, NLINES);
	assert_int_equal(v.torn, 0);
}

static void
test_chain_removed(void **state)
{
	struct chain	 c;
	struct logverify v;

	make_chain(&c, 1, ZEROS);
	memmove(c.line[2], c.line[3], sizeof(c.line[0]) * (NLINES - 3));
	assert_int_equal(verify_lines(&v, c.line, NLINES - 1), -1);
	assert_int_equal(v.break_line, 3);
	assert_string_equal(v.break_file, "f");
	assert_non_null(strstr(v.what, "removed"));
}

static void
test_chain_swapped(void **state)
{
	struct chain	 c;
	struct logverify v;
	char		 tmp[512];

	make_chain(&c, 1, ZEROS);
	memcpy(tmp, c.line[3], sizeof(tmp));
	memcpy(c.line[3], c.line[4], sizeof(tmp));
	memcpy(c.line[4], tmp, sizeof(tmp));
	assert_int_equal(verify_lines(&v, c.line, NLINES), -1);
	assert_int_equal(v.break_line, 4);
}

static void
test_chain_inserted(void **state)
{
	struct chain	 c;
	struct logverify v;
	char		 lines[NLINES + 1][512];

	/* A copy of line 2 inserted after line 4. */
	make_chain(&c, 1, ZEROS);
	memcpy(lines, c.line, sizeof(c.line[0]) * 4);
	memcpy(lines[4], c.line[1], sizeof(lines[0]));
	memcpy(lines[5], c.line[4], sizeof(lines[0]) * 2);
	assert_int_equal(verify_lines(&v, lines, NLINES + 1), -1);
	assert_int_equal(v.break_line, 5);
	assert_non_null(strstr(v.what, "inserted"));
	/* A forged line with the right prev and seq: the next one breaks. */
	make_line(lines[4], sizeof(lines[4]), 5, "evil.test", c.hash[3],
	    lines[NLINES]);
	memcpy(lines[5], c.line[4], sizeof(lines[0]));
	assert_int_equal(verify_lines(&v, lines, 6), -1);
	assert_int_equal(v.break_line, 6);
}

static void
test_chain_replaced(void **state)
{
	struct chain	 c;
	struct logverify v;
	char		 hash[65];

	/* Line 3 rewritten with a valid hash of its own: line 4 breaks. */
	make_chain(&c, 1, ZEROS);
	make_line(c.line[2], sizeof(c.line[2]), 3, "other.test", c.hash[1],
	    hash);
	assert_int_equal(verify_lines(&v, c.line, NLINES), -1);
	assert_int_equal(v.break_line, 4);
	assert_non_null(strstr(v.what, "prev does not match"));
}

static void
test_chain_torn(void **state)
{
	struct chain	 c;
	struct logverify v;
	char		 lines[NLINES + 1][512];

	/* A torn line between two lines that chain: tolerated, counted. */
	make_chain(&c, 1, ZEROS);
	memcpy(lines, c.line, sizeof(c.line[0]) * 3);
	snprintf(lines[3], sizeof(lines[3]), "%.40s", c.line[3]);
	memcpy(lines[4], c.line[3], sizeof(lines[0]) * 3);
	assert_int_equal(verify_lines(&v, lines, NLINES + 1), 0);
	assert_int_equal(v.torn, 1);
	assert_int_equal(v.torn_line, 4);
	assert_int_equal(v.events, NLINES);
	/* A line cut short in the middle (not rewritten): a break there. */
	memcpy(lines, c.line, sizeof(c.line));
	lines[2][30] = '\0';
	assert_int_equal(verify_lines(&v, lines, NLINES), -1);
	assert_int_equal(v.break_line, 3);
	/* A torn last line: tolerated. */
	memcpy(lines, c.line, sizeof(c.line));
	lines[NLINES - 1][50] = '\0';
	assert_int_equal(verify_lines(&v, lines, NLINES), 0);
	assert_int_equal(v.torn, 1);
	assert_int_equal(v.events, NLINES - 1);
}

static void
test_chain_files(void **state)
{
	struct chain	 c;
	struct logverify v;
	char		 buf[4096];
	size_t		 len = 0;
	int		 i;

	/* Anchor past genesis (older files rotated away), two files. */
	make_chain(&c, 100, "11111111111111111111111111111111"
	    "11111111111111111111111111111111");
	logverify_init(&v);
	logverify_file(&v, "log.1");
	for (i = 0; i < 3; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n",
		    c.line[i]);
	assert_int_equal(logverify_buf(&v, buf, len), 0);
	logverify_file(&v, "log");
	len = 0;
	for (i = 4; i < NLINES; i++)
		len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s\n",
		    c.line[i]);
	assert_int_equal(logverify_buf(&v, buf, len), -1);
	assert_int_equal(logverify_finish(&v), -1);
	assert_string_equal(v.break_file, "log");
	assert_int_equal(v.break_line, 1);
	assert_int_equal(v.genesis, 0);
	assert_int_equal(v.first_seq, 100);
}

static void
test_buf_no_final_newline(void **state)
{
	struct chain	 c;
	struct logverify v;
	char		 buf[2048];
	int		 n;

	make_chain(&c, 1, ZEROS);
	n = snprintf(buf, sizeof(buf), "%s\n%s", c.line[0], c.line[1]);
	logverify_init(&v);
	logverify_file(&v, "f");
	assert_int_equal(logverify_buf(&v, buf, (size_t)n), 0);
	assert_int_equal(logverify_finish(&v), 0);
	assert_int_equal(v.events, 2);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_line_valid),
		cmocka_unit_test(test_line_table),
		cmocka_unit_test(test_line_edit_and_overlong),
		cmocka_unit_test(test_chain_intact),
		cmocka_unit_test(test_chain_removed),
		cmocka_unit_test(test_chain_swapped),
		cmocka_unit_test(test_chain_inserted),
		cmocka_unit_test(test_chain_replaced),
		cmocka_unit_test(test_chain_torn),
		cmocka_unit_test(test_chain_files),
		cmocka_unit_test(test_buf_no_final_newline),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
