/* test_docker.c: the attach-stream demultiplexer and response parsers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "docker.h"

/* What the demultiplexer handed out, per stream. */
struct sink {
	char	buf[3][4096];
	size_t	len[3];
	int	calls;
	int	fail_after;	/* out() returns -1 on this call; 0: never */
};

static int	sink_out(void *, int, const unsigned char *, size_t);
static size_t	frame(unsigned char *, int, const char *, size_t);

static int
sink_out(void *arg, int stream, const unsigned char *p, size_t n)
{
	struct sink	*s = arg;

	s->calls++;
	if (s->fail_after != 0 && s->calls >= s->fail_after)
		return -1;
	assert_true(stream == 1 || stream == 2);
	assert_true(s->len[stream] + n <= sizeof(s->buf[stream]));
	memcpy(s->buf[stream] + s->len[stream], p, n);
	s->len[stream] += n;
	return 0;
}

/* Append one frame to out; returns its length. */
static size_t
frame(unsigned char *out, int stream, const char *payload, size_t n)
{
	out[0] = (unsigned char)stream;
	out[1] = out[2] = out[3] = 0;
	out[4] = (unsigned char)(n >> 24);
	out[5] = (unsigned char)(n >> 16);
	out[6] = (unsigned char)(n >> 8);
	out[7] = (unsigned char)n;
	memcpy(out + 8, payload, n);
	return n + 8;
}

static void
test_demux_whole(void **state)
{
	unsigned char		buf[256];
	size_t			n = 0;
	struct docker_demux	dm;
	struct sink		s;

	memset(&s, 0, sizeof(s));
	n += frame(buf + n, 1, "out\n", 4);
	n += frame(buf + n, 2, "err\n", 4);
	n += frame(buf + n, 1, "", 0);
	n += frame(buf + n, 0, "in", 2);	/* stdin counts as stdout */
	docker_demux_init(&dm);
	assert_int_equal(docker_demux_feed(&dm, buf, n, sink_out, &s), 0);
	assert_true(docker_demux_at_boundary(&dm));
	assert_int_equal(s.len[1], 6);
	assert_memory_equal(s.buf[1], "out\nin", 6);
	assert_int_equal(s.len[2], 4);
	assert_memory_equal(s.buf[2], "err\n", 4);
}

/* Every split point, and byte by byte: the same output. */
static void
test_demux_split_anywhere(void **state)
{
	unsigned char		buf[512];
	size_t			n = 0, cut, i;
	struct docker_demux	dm;
	struct sink		s;

	n += frame(buf + n, 1, "hello, ", 7);
	n += frame(buf + n, 2, "warning\n", 8);
	n += frame(buf + n, 1, "world\n", 6);
	for (cut = 0; cut <= n; cut++) {
		memset(&s, 0, sizeof(s));
		docker_demux_init(&dm);
		assert_int_equal(docker_demux_feed(&dm, buf, cut, sink_out,
		    &s), 0);
		assert_int_equal(docker_demux_at_boundary(&dm), cut == 0 ||
		    cut == 15 || cut == 31 || cut == n);
		assert_int_equal(docker_demux_feed(&dm, buf + cut, n - cut,
		    sink_out, &s), 0);
		assert_true(docker_demux_at_boundary(&dm));
		assert_int_equal(s.len[1], 13);
		assert_memory_equal(s.buf[1], "hello, world\n", 13);
		assert_int_equal(s.len[2], 8);
	}
	memset(&s, 0, sizeof(s));
	docker_demux_init(&dm);
	for (i = 0; i < n; i++)
		assert_int_equal(docker_demux_feed(&dm, buf + i, 1, sink_out,
		    &s), 0);
	assert_memory_equal(s.buf[1], "hello, world\n", 13);
	assert_memory_equal(s.buf[2], "warning\n", 8);
}

static void
test_demux_bad_header(void **state)
{
	static const unsigned char	bad_type[8] = { 3, 0, 0, 0, 0, 0, 0, 1 };
	static const unsigned char	bad_pad[8] = { 1, 0, 1, 0, 0, 0, 0, 1 };
	unsigned char			good[16];
	struct docker_demux		dm;
	struct sink			s;
	size_t				n;

	memset(&s, 0, sizeof(s));
	docker_demux_init(&dm);
	assert_int_equal(docker_demux_feed(&dm, bad_type, 8, sink_out, &s),
	    -1);
	/* sticky: a later good frame is refused too */
	n = frame(good, 1, "x", 1);
	assert_int_equal(docker_demux_feed(&dm, good, n, sink_out, &s), -1);
	assert_false(docker_demux_at_boundary(&dm));
	assert_int_equal(s.calls, 0);
	docker_demux_init(&dm);
	assert_int_equal(docker_demux_feed(&dm, bad_pad, 8, sink_out, &s), -1);
}

static void
test_demux_truncated_and_stop(void **state)
{
	unsigned char		buf[64];
	struct docker_demux	dm;
	struct sink		s;
	size_t			n;

	memset(&s, 0, sizeof(s));
	n = frame(buf, 1, "abcdef", 6);
	docker_demux_init(&dm);
	assert_int_equal(docker_demux_feed(&dm, buf, n - 2, sink_out, &s), 0);
	assert_false(docker_demux_at_boundary(&dm));	/* cut mid-frame */
	memset(&s, 0, sizeof(s));
	s.fail_after = 1;
	docker_demux_init(&dm);
	assert_int_equal(docker_demux_feed(&dm, buf, n, sink_out, &s), -1);
}

/* A 4 GiB - 1 length is fine as long as it is fed; nothing is buffered. */
static void
test_demux_large_length(void **state)
{
	static const unsigned char	hdr[8] = { 2, 0, 0, 0, 0xff, 0xff,
					    0xff, 0xff };
	unsigned char			chunk[1000];
	struct docker_demux		dm;
	struct sink			s;

	memset(&s, 0, sizeof(s));
	memset(chunk, 'a', sizeof(chunk));
	docker_demux_init(&dm);
	assert_int_equal(docker_demux_feed(&dm, hdr, 8, sink_out, &s), 0);
	assert_int_equal(docker_demux_feed(&dm, chunk, sizeof(chunk),
	    sink_out, &s), 0);
	assert_int_equal(s.len[2], sizeof(chunk));
	assert_int_equal(dm.left, 0xffffffffu - sizeof(chunk));
}

static void
test_api_version(void **state)
{
	static const struct {
		const char	*in;
		int		 want;
	} t[] = {
		{ "1.41", 41 }, { "1.45", 45 }, { "1.5", 5 }, { "1.100", 100 },
		{ "2.0", -1 }, { "1.", -1 }, { "1.4a", -1 }, { "", -1 },
		{ "1.1000", -1 }, { "v1.41", -1 }, { "1.-1", -1 },
	};
	size_t	i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		assert_int_equal(docker_parse_api_version(t[i].in,
		    strlen(t[i].in)), t[i].want);
}

static void
test_parse_cinfo(void **state)
{
	struct docker_cinfo	 ci;
	json_t			*j;

	j = json_loads("{\"Id\":\"abc\",\"Image\":\"sha256:1\",\"State\":"
	    "{\"Status\":\"running\",\"Running\":true,\"Paused\":false,"
	    "\"Pid\":4242}}", 0, NULL);
	assert_int_equal(docker_parse_cinfo(j, &ci), 0);
	assert_string_equal(ci.id, "abc");
	assert_string_equal(ci.image, "sha256:1");
	assert_int_equal(ci.running, 1);
	assert_int_equal(ci.paused, 0);
	assert_int_equal(ci.pid, 4242);
	json_decref(j);
	j = json_loads("{\"Id\":\"abc\",\"State\":{\"Status\":\"x\","
	    "\"Pid\":-1}}", 0, NULL);
	assert_int_equal(docker_parse_cinfo(j, &ci), -1);
	json_decref(j);
	j = json_loads("{\"Id\":1,\"State\":{}}", 0, NULL);
	assert_int_equal(docker_parse_cinfo(j, &ci), -1);
	json_decref(j);
	assert_int_equal(docker_parse_cinfo(NULL, &ci), -1);
}

static void
test_parse_einfo(void **state)
{
	struct docker_einfo	 ei;
	json_t			*j;

	j = json_loads("{\"Running\":false,\"ExitCode\":3,\"Pid\":99}", 0,
	    NULL);
	assert_int_equal(docker_parse_einfo(j, &ei), 0);
	assert_int_equal(ei.running, 0);
	assert_int_equal(ei.exit_code, 3);
	assert_int_equal(ei.pid, 99);
	json_decref(j);
	j = json_loads("{\"Running\":true,\"ExitCode\":null}", 0, NULL);
	assert_int_equal(docker_parse_einfo(j, &ei), 0);
	assert_int_equal(ei.exit_code, -1);
	json_decref(j);
	j = json_loads("{\"Running\":false,\"ExitCode\":\"3\"}", 0, NULL);
	assert_int_equal(docker_parse_einfo(j, &ei), -1);
	json_decref(j);
	j = json_loads("{\"ExitCode\":0}", 0, NULL);
	assert_int_equal(docker_parse_einfo(j, &ei), -1);
	json_decref(j);
}

static void
test_error_message(void **state)
{
	json_t	*j = json_loads("{\"message\":\"No such container: x\"}", 0,
		    NULL);

	assert_string_equal(docker_error_message(j), "No such container: x");
	assert_string_equal(docker_error_message(NULL), "");
	json_decref(j);
}

/* docker_new() against a socket that is not there: the exact words. */
static void
test_unreachable(void **state)
{
	struct docker	*d;
	char		*cause = NULL;

	setenv("DOCKER_HOST", "unix:///nonexistent-sandgate-test.sock", 1);
	d = docker_new(&cause);
	assert_null(d);
	assert_string_equal(cause, "cannot reach Docker at "
	    "unix:///nonexistent-sandgate-test.sock (No such file or "
	    "directory); start dockerd or set DOCKER_HOST");
	free(cause);
	cause = NULL;
	setenv("DOCKER_HOST", "tcp://127.0.0.1:2375", 1);
	assert_null(docker_new(&cause));
	assert_non_null(strstr(cause, "only unix://"));
	free(cause);
	unsetenv("DOCKER_HOST");
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_demux_whole),
		cmocka_unit_test(test_demux_split_anywhere),
		cmocka_unit_test(test_demux_bad_header),
		cmocka_unit_test(test_demux_truncated_and_stop),
		cmocka_unit_test(test_demux_large_length),
		cmocka_unit_test(test_api_version),
		cmocka_unit_test(test_parse_cinfo),
		cmocka_unit_test(test_parse_einfo),
		cmocka_unit_test(test_error_message),
		cmocka_unit_test(test_unreachable),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
