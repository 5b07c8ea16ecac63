/*
 * urlpath.h: the one reading of a request path that a `paths` rule is
 * decided on, and that the proxy then forwards.
 *
 * A prefix rule such as `/simple/` is only as good as the agreement
 * between the proxy and the server on what a path means. Servers differ:
 * Tomcat and Jetty drop ";params" from segments (so "/simple/..;/admin"
 * is "/admin"), some decode "%2e%2e" to ".." or "%2f" to "/" before
 * routing, some decode twice ("%252e"), some accept overlong UTF-8
 * ("%c0%ae" for "."), some take "\" for "/". So a path any of them could
 * read as another path is refused rather than guessed at:
 *
 *   - not starting with "/" ("*", an empty path)
 *   - "." or ".." segments
 *   - ";" anywhere in the path
 *   - "\" anywhere in the path, raw or as %5C
 *   - a percent-encoded ".", "/", ";" or "%" (%2E %2F %3B %25), or a
 *     control character (%00-%1F, %7F)
 *   - a "%" not followed by two hex digits
 *   - percent-encoded bytes that are not valid UTF-8 (overlong forms,
 *     surrogates, stray continuation bytes), and raw bytes outside
 *     printable ASCII (in the query too; a request line has none)
 *   - an escaped Unicode lookalike of ".", "/" or "\" (NFKC, Windows'
 *     best-fit mapping, UTS #39 confusables), a segment holding a "."
 *     and an escape outside ASCII, a ":" (raw or %3A) or an escaped "?"
 *     or "#" (%3F, %23), or a segment holding "::$"
 *   - a segment of dots and spaces ("%20", or "+", a space to a server
 *     that form-decodes its path) with a dot
 *
 * Everything else is normalized: percent-encoded unreserved characters
 * (letters, digits, "-", "_", "~") are decoded, and the hex digits of the
 * escapes that stay are made uppercase. The query ("?..."), which a path
 * rule does not look at, is kept as it is. Pure; the fuzz target
 * tests/fuzz/fuzz_urlpath.c drives it.
 */
#ifndef SG_URLPATH_H
#define SG_URLPATH_H

#include <stddef.h>

/*
 * Normalize the request path in (NUL-terminated: path and query as the
 * request line had them) into out, which must hold strlen(in) + 1 bytes
 * (the result is never longer). Returns 0, or -1 with *cause set to a
 * static phrase ("dot segment in path", ...) and out empty.
 */
int	urlpath_normalize(const char *in, char *out, size_t size,
	    const char **cause);

/*
 * The same, except that "%2F" is kept as data inside a segment (npm's
 * "/@scope%2fname" is "/@scope%2Fname"): the pieces between slashes and
 * "%2F"s get every segment check, so a server that decodes "%2F" before
 * routing reads no dot segment either. Only a `paths` prefix holding
 * "%2F" is matched against this reading (policy_decide.c).
 */
int	urlpath_normalize_slash(const char *in, char *out, size_t size,
	    const char **cause);

/*
 * 1 when the normalized path (and query) matches a `paths` prefix: as a
 * byte prefix, except that a prefix holding "?" names the whole query,
 * which must be the request's exactly. Matched as a prefix, the query
 * of "/info/refs?service=git-upload-pack" let
 * "?service=git-upload-pack&service=git-receive-pack" pass, which
 * servers where the last value wins (git-http-backend, PHP, Rails) read
 * as the refused one; a key spelled another way ("%73ervice", PHP's
 * "a.b" for "a_b") would defeat a check by key.
 */
int	urlpath_match(const char *path, const char *prefix);

#endif
