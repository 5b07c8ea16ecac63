/*
 * fuzz_http.c: libFuzzer target for egress-proxy/http.c. The first byte
 * picks the parser (request head, response head, chunked body), the rest
 * is the input. Besides the sanitizers, it checks the framing invariants
 * the proxy relies on, and that http_request_scan() decides every request
 * head as http_request_parse() does.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"
#include "sglimits.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	check_fail(int, const char *);
static void	fuzz_request(const char *, size_t);
static void	fuzz_request_scan(const char *, size_t, enum http_parse, int,
		    const char *, const struct http_request *);
static void	fuzz_request_forward(const struct http_request *);
static void	fuzz_response(const char *, size_t);
static void	fuzz_chunked(const char *, size_t, unsigned);

/* Report which invariant broke, then crash for libFuzzer. */
#define check(x) do {						\
	if (!(x))						\
		check_fail(__LINE__, #x);			\
} while (0)

static void
check_fail(int line, const char *what)
{
	fprintf(stderr, "fuzz_http.c:%d: invariant failed: %s\n", line,
	    what);
	abort();
}

/* A forwarded head must parse again with the same framing. */
static void
fuzz_request_forward(const struct http_request *req)
{
	struct http_request	 again;
	const char		*cause;
	char			*out, cred[HTTP_CREDENTIAL_MAX + 1];
	size_t			 len;
	int			 st;

	/* A credential, when one is found, is only hex digits. */
	if (http_proxy_credential(req, cred) == 0)
		check(strlen(cred) >= 32 && strspn(cred, "0123456789abcdef") ==
		    strlen(cred));
	else
		check(cred[0] == '\0');
	out = http_request_forward(req, HTTP_FWD_CLOSE, &len);
	if (req->path == NULL) {
		check(out == NULL);
		return;
	}
	check(out != NULL);
	check(strlen(out) == len);
	/* Host and Connection may be added: two fields over the original. */
	if (len <= SG_HTTP_HEAD_MAX &&
	    req->nheaders + 2 <= SG_HTTP_HEADERS_MAX) {
		check(http_request_parse(out, len, &again, &st, &cause) ==
		    HTTP_PARSE_OK);
		check(again.head_len == len);
		check(again.content_length == req->content_length);
		check(again.chunked == req->chunked);
		check(again.keep_alive == 0);
		http_request_release(&again);
	}
	free(out);
}

/*
 * http_request_scan() (the check in place a CONNECT tunnel uses) decides
 * exactly as http_request_parse() did on the same bytes: result, status,
 * cause, framing, and the Host and authority it points at.
 */
static void
fuzz_request_scan(const char *buf, size_t len, enum http_parse r, int st,
    const char *cause, const struct http_request *req)
{
	struct http_request_view	 v;
	const char			*vcause;
	int				 vst;

	check(http_request_scan(buf, len, &v, &vst, &vcause) == r);
	check(vst == st);
	check((vcause == NULL) == (cause == NULL));
	check(cause == NULL || strcmp(vcause, cause) == 0);
	if (r != HTTP_PARSE_OK) {
		check(v.host == NULL && v.authority == NULL);
		return;
	}
	check(v.form == req->form && v.version_minor == req->version_minor);
	check(v.head_len == req->head_len);
	check(v.content_length == req->content_length);
	check(v.chunked == req->chunked && v.keep_alive == req->keep_alive);
	check(v.expect_100_continue == req->expect_100_continue);
	check((v.host == NULL) == (req->host == NULL));
	check(v.host == NULL || (v.host_len == strlen(req->host) &&
	    memcmp(v.host, req->host, v.host_len) == 0));
	check((v.authority == NULL) == (req->authority == NULL));
	check(v.authority == NULL ||
	    (v.authority_len == strlen(req->authority) &&
	    memcmp(v.authority, req->authority, v.authority_len) == 0));
}

static void
fuzz_request(const char *buf, size_t len)
{
	struct http_request	 req, again;
	const char		*cause;
	enum http_parse		 r;
	int			 st;

	r = http_request_parse(buf, len, &req, &st, &cause);
	fuzz_request_scan(buf, len, r, st, cause, &req);
	if (r == HTTP_PARSE_MORE) {
		check(len < SG_HTTP_HEAD_MAX);
		check(req.method == NULL);
		return;
	}
	if (r == HTTP_PARSE_ERROR) {
		check(cause != NULL);
		check(st == 400 || st == 414 || st == 431 || st == 500 ||
		    st == 501 || st == 505);
		check(req.method == NULL && req.headers == NULL);
		return;
	}
	check(req.head_len >= 4 && req.head_len <= len);
	check(req.head_len <= SG_HTTP_HEAD_MAX);
	check(memcmp(buf + req.head_len - 4, "\r\n\r\n", 4) == 0);
	check(req.nheaders <= SG_HTTP_HEADERS_MAX);
	check(req.method != NULL && req.target != NULL);
	check(!(req.chunked && req.content_length >= 0));
	check(req.version_minor == 0 || req.host != NULL);
	check((req.authority != NULL) == (req.form == HTTP_TARGET_ABSOLUTE ||
	    req.form == HTTP_TARGET_AUTHORITY));
	/* The head alone parses the same; one byte less never completes. */
	check(http_request_parse(buf, req.head_len, &again, &st, &cause) ==
	    HTTP_PARSE_OK);
	check(again.head_len == req.head_len);
	http_request_release(&again);
	check(http_request_parse(buf, req.head_len - 1, &again, &st,
	    &cause) != HTTP_PARSE_OK);
	fuzz_request_forward(&req);
	http_request_release(&req);
}

static void
fuzz_response(const char *buf, size_t len)
{
	struct http_response	 resp, again;
	const char		*cause;
	char			*out;
	size_t			 olen;
	enum http_parse		 r;
	int			 st;

	r = http_response_parse(buf, len, &resp, &st, &cause);
	if (r == HTTP_PARSE_ERROR)
		check(st == 502 && cause != NULL);
	if (r == HTTP_PARSE_MORE)
		check(len < SG_HTTP_HEAD_MAX);
	if (r != HTTP_PARSE_OK)
		return;
	check(resp.head_len >= 4 && resp.head_len <= len);
	check(memcmp(buf + resp.head_len - 4, "\r\n\r\n", 4) == 0);
	check(resp.status >= 100 && resp.status <= 999 && resp.status != 101);
	check(resp.reason != NULL);
	check(!(resp.chunked && resp.content_length >= 0));
	(void)http_response_body(&resp, "GET");
	(void)http_response_body(&resp, "HEAD");
	out = http_response_forward(&resp, HTTP_FWD_CLOSE, &olen);
	check(out != NULL);
	if (olen <= SG_HTTP_HEAD_MAX &&
	    resp.nheaders + 1 <= SG_HTTP_HEADERS_MAX) {
		check(http_response_parse(out, olen, &again, &st, &cause) ==
		    HTTP_PARSE_OK);
		check(again.head_len == olen);
		check(again.status == resp.status);
		check(again.chunked == resp.chunked);
		check(again.content_length == resp.content_length);
		http_response_release(&again);
	}
	free(out);
	http_response_release(&resp);
}

/* Whole buffer at once and in pieces of stride bytes agree. */
static void
fuzz_chunked(const char *buf, size_t len, unsigned stride)
{
	struct http_chunked	 a, b;
	const char		*cause;
	size_t			 used, off = 0, n, total = 0;
	enum http_parse		 ra, rb = HTTP_PARSE_MORE;

	http_chunked_init(&a);
	ra = http_chunked_scan(&a, buf, len, &used, &cause);
	if (ra == HTTP_PARSE_MORE)
		check(used == len);
	if (ra == HTTP_PARSE_OK)
		check(used >= 5 && used <= len);
	if (ra == HTTP_PARSE_ERROR)
		check(cause != NULL);
	http_chunked_init(&b);
	while (rb == HTTP_PARSE_MORE && off < len) {
		n = len - off < stride ? len - off : stride;
		rb = http_chunked_scan(&b, buf + off, n, &n, &cause);
		total += n;
		off += n;
	}
	check(ra == rb);
	if (ra == HTTP_PARSE_OK) {
		check(total == used);
		check(http_chunked_scan(&b, buf, len, &n, &cause) ==
		    HTTP_PARSE_OK && n == 0);
	}
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char	*buf;
	size_t		 len;

	if (size < 2)
		return 0;
	buf = (const char *)data + 2;
	len = size - 2;
	switch (data[0] % 3) {
	case 0:
		fuzz_request(buf, len);
		break;
	case 1:
		fuzz_response(buf, len);
		break;
	default:
		fuzz_chunked(buf, len, data[1] % 16 + 1);
		break;
	}
	return 0;
}
