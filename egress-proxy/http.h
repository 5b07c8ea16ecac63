/*
 * http.h: HTTP/1.x message framing for the egress proxy: request and
 * response heads, the heads the proxy forwards, chunked body framing and
 * the responses the proxy writes itself (blocks and errors).
 *
 * Pure: no I/O. Every function works on byte buffers, so the unit tests
 * and the fuzzer drive it directly. The event loop peeks at what it has
 * buffered (at most SG_HTTP_HEAD_MAX bytes), calls a parser, and moves the
 * bytes itself.
 *
 * Every byte comes from an untrusted peer (the sandbox on one side, the
 * upstream on the other), so the parsers are strict: anything two HTTP
 * implementations could frame differently (request smuggling) is refused
 * rather than repaired.
 *
 * Limits (sglimits.h) and the status a request parse answers with:
 *   SG_HTTP_LINE_MAX	  request line (without CRLF) longer: 414. Applies
 *			  to the status line of a response as well.
 *   SG_HTTP_HEAD_MAX	  whole head (request line, fields, final CRLF)
 *			  longer: 431. Checked on what is buffered too: when
 *			  len >= SG_HTTP_HEAD_MAX and no end of head lies in
 *			  the first SG_HTTP_HEAD_MAX bytes the answer is 431,
 *			  so an unterminated head cannot grow without limit.
 *   SG_HTTP_HEADERS_MAX  more header field lines: 431 (also found before
 *			  the head is complete).
 *   SG_HTTP_CHUNK_LINE_MAX  chunk-size line including extensions, and
 *			  SG_HTTP_HEAD_MAX for a chunked trailer section;
 *			  past either the chunked scanner fails.
 *
 * Status codes of a request parse error:
 *   400  malformed or ambiguous: bad method token, bad request-target, bad
 *        field line, bare LF (every line must end in CRLF), CR, NUL or
 *        another control byte (HTAB is allowed in field values), obs-fold
 *        (a field line starting with SP or HTAB), both Content-Length and
 *        Transfer-Encoding, Content-Length repeated (even with the same
 *        value), not plain digits or over INT64_MAX, Transfer-Encoding in
 *        HTTP/1.0, Transfer-Encoding where "chunked" is not the last coding
 *        or appears twice, two Host fields, HTTP/1.1 without Host, a
 *        Connection field naming Content-Length, Transfer-Encoding or Host
 *        (it would strip the framing from the forwarded head), a fragment
 *        ('#') in the request-target, an empty line before the request
 *        line, a scheme other than "http", CONNECT without authority-form,
 *        authority-form without CONNECT, '*' without OPTIONS. Garbage is
 *        refused as soon as the buffered prefix cannot start a valid
 *        request line, so random bytes (or a TLS ClientHello) get 400
 *        without waiting for more.
 *   414  request line longer than SG_HTTP_LINE_MAX.
 *   431  head over SG_HTTP_HEAD_MAX or more than SG_HTTP_HEADERS_MAX fields.
 *   501  Transfer-Encoding with a coding the proxy cannot decode
 *        before the final "chunked" (e.g. "gzip, chunked"): the framing
 *        is clear but the proxy does not decode codings, so it answers
 *        501 as RFC 9112 section 6.1 asks for an unknown coding.
 *   505  a well-formed "HTTP/d.d" other than HTTP/1.0 and HTTP/1.1.
 *   500  out of memory while copying the head (the request was fine).
 * A response parse error always sets status 502 (what the proxy answers
 * the client when its upstream misbehaves).
 *
 * Cost: a parse call is O(buffered bytes) and keeps no state between
 * calls; call it again when more bytes have arrived. A parsed head is
 * one allocation (http_request_scan(): none); a forwarded head is built
 * in one allocation of its exact size.
 */
#ifndef SG_HTTP_H
#define SG_HTTP_H

#include <stddef.h>
#include <stdint.h>

#include "reason.h"
#include "sglimits.h"

enum http_parse {
	HTTP_PARSE_OK,		/* complete; see the length it reports */
	HTTP_PARSE_MORE,	/* valid so far; call again with more bytes */
	HTTP_PARSE_ERROR	/* refuse: *status and *cause are set */
};

enum http_target_form {
	HTTP_TARGET_ORIGIN,	/* "/path?q": not a proxy request */
	HTTP_TARGET_ABSOLUTE,	/* "http://host[:port]/path?q" */
	HTTP_TARGET_AUTHORITY,	/* "host:port", CONNECT only */
	HTTP_TARGET_ASTERISK	/* "*", OPTIONS only */
};

/* How the body following a head is framed. */
enum http_body {
	HTTP_BODY_NONE,		/* no body */
	HTTP_BODY_LENGTH,	/* content_length bytes */
	HTTP_BODY_CHUNKED,	/* feed it to http_chunked_scan() */
	HTTP_BODY_CLOSE		/* response only: read until upstream closes */
};

/* Flags of the forwarded-head builders. */
enum http_fwd_flags {
	HTTP_FWD_CLOSE = 1 << 0,	/* append "Connection: close" */
	HTTP_FWD_KEEP_ALIVE = 1 << 1	/* append "Connection: keep-alive" */
};

/*
 * One field line: NUL-terminated copies, value trimmed of SP/HTAB, with
 * their lengths.
 */
struct http_header {
	char	*name;
	char	*value;
	size_t	 name_len;
	size_t	 value_len;
};

/*
 * A parsed request head. All strings are owned by the struct and freed
 * by http_request_release().
 */
struct http_request {
	char			*method;	/* as sent: "CONNECT" */
	char			*target;	/* request-target as sent */
	enum http_target_form	 form;
	/*
	 * Raw authority: the substring between "//" and the first '/', '?'
	 * or end for absolute-form, the whole target for authority-form,
	 * NULL otherwise. Not normalized: use host_parse_authority().
	 */
	char			*authority;
	/*
	 * What to forward as the request-target: path and query of an
	 * absolute-form target ("/" when empty, "/?q" when only a query
	 * follows the authority), the target itself for origin-form, "*"
	 * for asterisk-form, NULL for authority-form.
	 */
	char			*path;
	int			 version_minor;	/* 0 or 1 (HTTP/1.x) */
	struct http_header	*headers;
	size_t			 nheaders;
	const char		*host;		/* Host value or NULL */
	int64_t			 content_length; /* -1 when absent */
	int			 chunked;	/* Transfer-Encoding: chunked */
	int			 keep_alive;
	int			 expect_100_continue; /* HTTP/1.1 only */
	size_t			 head_len;	/* with the final CRLF */
	/* One allocation: the headers array, the fields, method ... path. */
	char			*store;
};

/* A parsed response head; freed by http_response_release(). */
struct http_response {
	int			 version_minor;	/* 0 or 1 */
	int			 status;	/* 100..999 */
	char			*reason;	/* "" when none sent */
	size_t			 reason_len;
	struct http_header	*headers;
	size_t			 nheaders;
	int64_t			 content_length; /* -1 when absent */
	int			 chunked;	/* chunked is last */
	int			 keep_alive;
	size_t			 head_len;
	char			*store;		/* one allocation: all of it */
};

/* Incremental chunked-body scanner state; set up with http_chunked_init(). */
struct http_chunked {
	int		state;
	uint64_t	remaining;	/* chunk size, then data left */
	size_t		line_len;	/* bytes of the current line so far */
	size_t		trailer_len;	/* trailer bytes so far */
	int		no_trailers;	/* 1: a trailer field is an error */
};

/* The cause of the error a trailer field is when no_trailers is set. */
extern const char http_trailer_refused[];

/*
 * Parse a request head at the start of buf (len bytes, not
 * NUL-terminated; bytes after the head, e.g. a body or a pipelined
 * request, are not looked at). *req is overwritten without being freed.
 *   OK:    *req is filled and must be released with
 *          http_request_release(); req->head_len bytes make up the head.
 *   MORE:  the bytes so far are a valid prefix and below every limit.
 *   ERROR: *status is 400, 414, 431, 500, 501 or 505 (see above) and
 *          *cause a static lowercase phrase such as "both content-length
 *          and transfer-encoding".
 * On MORE and ERROR *req is left empty (releasing it is harmless).
 */
enum http_parse	 http_request_parse(const char *buf, size_t len,
		    struct http_request *req, int *status,
		    const char **cause);

/*
 * A request head checked where it lies (http_request_scan()): pointers
 * into the caller's buffer, not NUL-terminated.
 */
struct http_request_view {
	enum http_target_form	 form;
	int			 version_minor;
	const char		*authority;	/* as http_request.authority */
	size_t			 authority_len;
	const char		*host;		/* Host value or NULL */
	size_t			 host_len;
	int64_t			 content_length; /* -1 when absent */
	int			 chunked;
	int			 keep_alive;
	int			 expect_100_continue;
	size_t			 head_len;
};

/*
 * http_request_parse() without the copies: the same code checks the same
 * rules and returns the same result, status and cause (never 500: it
 * allocates nothing), but *v points into buf (valid while buf is). For
 * a caller that checks a head and passes the bytes on as they are (a
 * plain-HTTP request inside a CONNECT tunnel).
 */
enum http_parse	 http_request_scan(const char *buf, size_t len,
		    struct http_request_view *v, int *status,
		    const char **cause);

/* http_request_body() of a view. */
enum http_body	 http_request_view_body(const struct http_request_view *v);

/* Set *req to empty (every pointer NULL, content_length -1). */
void		 http_request_init(struct http_request *req);
/* Free everything *req owns and set it to empty; NULL is allowed. */
void		 http_request_release(struct http_request *req);

/*
 * Body framing of a parsed request: CHUNKED, LENGTH (content_length > 0)
 * or NONE (no framing field, or Content-Length: 0).
 */
enum http_body	 http_request_body(const struct http_request *req);

/*
 * Build the head to forward upstream:
 *   "METHOD path HTTP/1.x\r\n", fields, "\r\n"
 * The version is the client's own: the proxy forwards bodies verbatim and
 * does not decode chunked, so an HTTP/1.0 client must not get an upstream
 * speaking HTTP/1.1 framing to it. The result may hold two fields more
 * than req (Host, Connection). Removed: Connection, Keep-Alive, TE,
 * Trailer, Upgrade, every Proxy-* field and every field named in the
 * Connection field. Kept: Host, Content-Length, Transfer-Encoding and the
 * rest, in order. When there is no Host field and the target had an
 * authority, "Host: <authority>" is added. Flags append a Connection
 * field. Returns a malloc'd NUL-terminated string (length in *lenp when
 * not NULL) the caller frees, or NULL when out of memory, when req has
 * no path (authority-form), or when it has more than SG_HTTP_HEADERS_MAX
 * fields (a parsed head never has).
 */
char		*http_request_forward(const struct http_request *req,
		    int flags, size_t *lenp);
/*
 * The same, with every field named as set is (case-insensitive) left out
 * and set added once instead: a header the proxy sets itself (a
 * terminated entry's credentials). set's name and value must be valid
 * field bytes (the policy and the secret store check them).
 */
char		*http_request_forward_set(const struct http_request *req,
		    int flags, const struct http_header *set, size_t *lenp);

/*
 * Parse a response head ("HTTP/1.x NNN reason", fields, CRLF) with the
 * request rules for field lines, bare LF, control bytes and limits.
 * Lenient where servers differ: the reason phrase may be missing (with or
 * without the space before it), and a repeated Content-Length field with
 * the very same value is accepted. Refused besides the request cases:
 * status not three digits in 100..999, 101 (the proxy strips Upgrade, so
 * a switch of protocols is never expected), Content-Length with
 * Transfer-Encoding, chunked repeated or not the last coding. Other
 * codings are fine (the body is forwarded verbatim); a Transfer-Encoding
 * without chunked gives chunked = 0, content_length = -1 (read until
 * close).
 * A 1xx (100 Continue, 103) is a head of its own: forward it and parse the
 * next head from resp->head_len on.
 * Results as for http_request_parse(); *status is 502 on ERROR.
 */
enum http_parse	 http_response_parse(const char *buf, size_t len,
		    struct http_response *resp, int *status,
		    const char **cause);

void		 http_response_init(struct http_response *resp);
void		 http_response_release(struct http_response *resp);

/*
 * Body framing of a response to a request with method req_method:
 * NONE for HEAD, 1xx, 204, 304 and 2xx to CONNECT; else CHUNKED, LENGTH
 * or CLOSE (no framing given: the body ends when the upstream closes).
 */
enum http_body	 http_response_body(const struct http_response *resp,
		    const char *req_method);

/*
 * Build the response head to forward to the client: "HTTP/1.1 NNN
 * reason\r\n", fields minus the hop-by-hop ones (as for requests), flags
 * append a Connection field, "\r\n". Returns a malloc'd string (length
 * in *lenp) or NULL when out of memory or with more than
 * SG_HTTP_HEADERS_MAX fields.
 */
char		*http_response_forward(const struct http_response *resp,
		    int flags, size_t *lenp);

/* Start scanning a new chunked body. */
void		 http_chunked_init(struct http_chunked *ch);

/*
 * Feed the next len bytes of a chunked body (RFC 9112 section 7.1):
 *   MORE:  all len bytes belong to the body (*consumed = len).
 *   OK:    the body ends after *consumed bytes of this buffer (last
 *          chunk, trailers and final CRLF included); the rest is the next
 *          message. Later calls return OK with *consumed = 0.
 *   ERROR: *cause is set; later calls fail again.
 * Strict: chunk-size is 1*HEXDIG up to 2^59 - 1, the size line with its
 * extensions is at most SG_HTTP_CHUNK_LINE_MAX bytes, the trailer section
 * at most SG_HTTP_HEAD_MAX, every line ends in CRLF (bare LF fails), and
 * chunk data is followed by exactly CRLF. Data bytes are skipped in one
 * step, not looked at. With ch->no_trailers set (after init), the first
 * byte of a trailer field fails with *cause http_trailer_refused, so no
 * byte of it is ever counted as consumed.
 */
enum http_parse	 http_chunked_scan(struct http_chunked *ch,
		    const char *buf, size_t len, size_t *consumed,
		    const char **cause);

/* Standard reason phrase of a status ("Forbidden"); "Unknown" if none. */
const char	*http_status_phrase(int status);

/* The longest exec credential http_proxy_credential() hands back. */
#define HTTP_CREDENTIAL_MAX	64

/*
 * The exec credential of a request: the password of its one
 * Proxy-Authorization field, "Basic" base64("USER:PASSWORD"), when the
 * password is 32 to HTTP_CREDENTIAL_MAX lowercase hex digits (the user
 * is not looked at). Copied into out[HTTP_CREDENTIAL_MAX + 1]. Returns
 * 0, or -1 when there is no such field, more than one, or it is not that
 * form (out is then "").
 */
int		 http_proxy_credential(const struct http_request *req,
		    char *out);

/* The longest password http_proxy_password() hands back (a token). */
#define HTTP_PASSWORD_MAX	1024

/*
 * The password of the request's one Proxy-Authorization field, "Basic"
 * base64("USER:PASSWORD"), whatever its form, into out (size bytes, at
 * most HTTP_PASSWORD_MAX + 1 useful): its length, or -1 when there is no
 * such field, more than one, it is not that form, holds a NUL or does
 * not fit (out is then "").
 */
long		 http_proxy_password(const struct http_request *req,
		    char *out, size_t size);

/*
 * Build the response to a blocked request:
 *   HTTP/1.1 <status> <message>
 *   Content-Type: text/plain; charset=utf-8
 *   Content-Length: <n>
 *   Proxy-Status: sandgate; error=<proxy_error>; details="<message>"
 *   X-Sandgate-Reason: <reason_code(reason)>
 *   Connection: close | keep-alive
 *
 *   <message>\n SG_BLOCK_ADVICE \n
 * message is reason_message()'s text: the reason phrase IS the message,
 * since many clients show only that. proxy_error is an RFC 9209 error type
 * token ("http_request_denied", "destination_ip_prohibited"); quotes and
 * backslashes in details are escaped, control bytes in the message become
 * '?'. Returns a malloc'd string (length in *lenp) or NULL when out of
 * memory or when status is not in 100..999.
 */
char		*http_block_response(int status, const char *message,
		    enum sg_reason reason, const char *proxy_error,
		    int keep_alive, size_t *lenp);

/*
 * Build an error response of the proxy itself (400, 431, 502, 504...):
 * status line with the standard phrase, Content-Type, Content-Length,
 * "Proxy-Status: sandgate; error=<proxy_error>" plus details="<details>"
 * when details is not NULL, Connection, and the body
 * "sandgate: <details or phrase>\n". proxy_error is an RFC 9209 type such
 * as http_protocol_error, dns_error, connection_refused,
 * connection_timeout, destination_unavailable. Returns a malloc'd string
 * (length in *lenp) or NULL when out of memory or status is invalid.
 */
char		*http_error_response(int status, const char *proxy_error,
		    const char *details, int keep_alive, size_t *lenp);

#endif
