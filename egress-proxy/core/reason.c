/* reason.c: reason codes and block messages; see reason.h. */
#include <stdio.h>
#include <string.h>

#include "reason.h"
#include "sglimits.h"
#include "util.h"

/* An escaped SNI in a message: 255 bytes, each at most 4 when escaped. */
/* The SNI as a message shows it: escaped, cut to a host name's length. */
#define REASON_SNI_SHOWN	(SG_HOST_MAX + 4)

static const char *const reason_codes[SG_REASON_MAX] = {
	[SG_REASON_NONE] = "none",
	[SG_REASON_NOT_ALLOWLISTED] = "not_allowlisted",
	[SG_REASON_PORT_NOT_ALLOWED] = "port_not_allowed",
	[SG_REASON_PRIVATE_ADDRESS] = "private_address",
	[SG_REASON_IP_LITERAL] = "ip_literal",
	[SG_REASON_SNI_MISMATCH] = "sni_mismatch",
	[SG_REASON_SNI_MISSING] = "sni_missing",
	[SG_REASON_NOT_TLS] = "not_tls",
	[SG_REASON_ECH] = "ech",
	[SG_REASON_HOST_MISMATCH] = "host_mismatch",
	[SG_REASON_METHOD_NOT_ALLOWED] = "method_not_allowed",
	[SG_REASON_PATH_NOT_ALLOWED] = "path_not_allowed",
	[SG_REASON_MALFORMED_REQUEST] = "malformed_request",
	[SG_REASON_LOG_UNAVAILABLE] = "log_unavailable",
	[SG_REASON_SNI_INVALID] = "sni_invalid",
	[SG_REASON_IDENTITY_CHANGED] = "identity_changed",
	[SG_REASON_PROXY_UNAVAILABLE] = "proxy_unavailable",
	[SG_REASON_UPSTREAM_SELF_SIGNED] = "upstream_cert_self_signed",
	[SG_REASON_UPSTREAM_UNTRUSTED] = "upstream_cert_untrusted",
	[SG_REASON_UPSTREAM_EXPIRED] = "upstream_cert_expired",
	[SG_REASON_UPSTREAM_NAME] = "upstream_cert_name_mismatch",
	[SG_REASON_UPSTREAM_TLS] = "upstream_tls_failed",
	[SG_REASON_UPSTREAM_UNREACHABLE] = "upstream_unreachable",
	[SG_REASON_CREDENTIAL_MISSING] = "credential_missing",
	[SG_REASON_TERMINATION_UNAVAILABLE] = "termination_unavailable",
	[SG_REASON_DENIED] = "denied",
	[SG_REASON_TOKEN_MALFORMED] = "token_malformed",
	[SG_REASON_TOKEN_FORGED] = "token_forged",
	[SG_REASON_TOKEN_EXPIRED] = "token_expired",
	[SG_REASON_TOKEN_OTHER_SANDBOX] = "token_other_sandbox",
	[SG_REASON_CLIENT_TLS] = "client_tls_failed",
	[SG_REASON_TOKEN_RUN_ENDED] = "token_run_ended",
	[SG_REASON_TOKEN_SANDBOX_GONE] = "token_sandbox_gone",
};

/*
 * The messages that name the destination and nothing else: the block
 * prefix, before, the destination ("[v6]" bracketed), after. The first
 * is the one for any reason not listed here or in reason_message().
 */
struct reason_text {
	enum sg_reason	 r;
	const char	*before;
	const char	*after;
};

static const struct reason_text reason_texts[] = {
	{ SG_REASON_NOT_ALLOWLISTED, "destination ", " not allowlisted" },
	{ SG_REASON_IP_LITERAL, "destination ", " not allowlisted (IP "
	    "address destinations must be allowlisted by address)" },
	{ SG_REASON_IDENTITY_CHANGED, "the sandbox registration of this "
	    "client changed; connection to ", " closed" },
	{ SG_REASON_DENIED, "destination ", " is denied (a deny entry of "
	    "policy.d; no allow entry or grant can open it)" },
	{ SG_REASON_SNI_MISSING, "TLS ClientHello for ", " has no SNI" },
	{ SG_REASON_NOT_TLS, "tunnel to ", " must carry TLS" },
	{ SG_REASON_ECH, "TLS ClientHello for ", " uses encrypted client "
	    "hello, whose destination cannot be checked" },
	{ SG_REASON_HOST_MISMATCH, "Host header does not match destination ",
	    "" },
	{ SG_REASON_METHOD_NOT_ALLOWED, "destination ", " not allowlisted "
	    "for this method" },
	{ SG_REASON_PATH_NOT_ALLOWED, "destination ", " not allowlisted for "
	    "this path" },
};

static int	reason_upstream(char *, size_t, enum sg_reason, const char *,
		    const char *, const char *, unsigned, const char *);
static const struct reason_text *reason_text_of(enum sg_reason);

const char *
reason_code(enum sg_reason r)
{
	if ((unsigned)r >= SG_REASON_MAX)
		return "unknown";
	return reason_codes[r];
}

enum sg_reason
reason_from_code(const char *code)
{
	int	i;

	for (i = 0; i < SG_REASON_MAX; i++) {
		if (strcmp(code, reason_codes[i]) == 0)
			return (enum sg_reason)i;
	}
	return SG_REASON_MAX;
}

int
reason_is_token(enum sg_reason r)
{
	return (r >= SG_REASON_TOKEN_MALFORMED &&
	    r <= SG_REASON_TOKEN_OTHER_SANDBOX) ||
	    r == SG_REASON_TOKEN_RUN_ENDED ||
	    r == SG_REASON_TOKEN_SANDBOX_GONE;
}

int
reason_is_upstream_tls(enum sg_reason r)
{
	return r >= SG_REASON_UPSTREAM_SELF_SIGNED &&
	    r <= SG_REASON_UPSTREAM_TLS;
}

int
reason_message(char *buf, size_t size, enum sg_reason r, const char *host,
    unsigned port, const char *sni_raw, const char *addr)
{
	const char	*h = host ? host : "-";
	const char	*colon = strchr(h, ':') ? "]" : "";
	const char	*open = *colon ? "[" : "";
	const struct reason_text *t;
	char		 sni[REASON_SNI_SHOWN];

	util_escape(sni_raw ? sni_raw : "-", sni, sizeof(sni));
	if (r >= SG_REASON_UPSTREAM_SELF_SIGNED &&
	    r <= SG_REASON_TERMINATION_UNAVAILABLE)
		return reason_upstream(buf, size, r, open, h, colon, port,
		    addr ? addr : "-");
	if (reason_is_token(r))
		return snprintf(buf, size, SG_BLOCK_PREFIX "sandbox token "
		    "refused for %s%s%s:%u (%s: %s)", open, h, colon, port,
		    reason_codes[r], addr ? addr : "-");
	switch (r) {
	case SG_REASON_PORT_NOT_ALLOWED:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u not allowlisted (port %u is not allowed for "
		    "this host)", open, h, colon, port, port);
	case SG_REASON_PRIVATE_ADDRESS:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u resolves to private address %s", open, h,
		    colon, port, addr ? addr : "-");
	case SG_REASON_SNI_MISMATCH:
		return snprintf(buf, size, SG_BLOCK_PREFIX "TLS SNI %s does "
		    "not match CONNECT host %s", sni, h);
	case SG_REASON_SNI_INVALID:
		return snprintf(buf, size, SG_BLOCK_PREFIX "TLS ClientHello "
		    "for %s%s%s:%u has an invalid server name%s%s%s (an ASCII "
		    "host name is required)", open, h, colon, port,
		    sni_raw ? " \"" : "", sni_raw ? sni : "",
		    sni_raw ? "\"" : "");
	case SG_REASON_PROXY_UNAVAILABLE:
		return snprintf(buf, size, "sandgate-proxy cannot open a "
		    "tunnel to %s%s%s:%u now (out of memory or pipes); try "
		    "again later", open, h, colon, port);
	case SG_REASON_MALFORMED_REQUEST:
		return snprintf(buf, size, SG_BLOCK_PREFIX "malformed "
		    "request");
	case SG_REASON_LOG_UNAVAILABLE:
		return snprintf(buf, size, SG_BLOCK_PREFIX "security log "
		    "unavailable");
	case SG_REASON_CLIENT_TLS:
		return snprintf(buf, size, "sandgate-proxy: the client's TLS "
		    "handshake for %s%s%s:%u failed (%s): the proxy terminates "
		    "this host's TLS, so the client must speak TLS in the "
		    "tunnel and trust the sandgate CA (a sandbox's system "
		    "bundle and CA variables do)", open, h, colon, port,
		    addr ? addr : "-");
	default:
		t = reason_text_of(r);
		return snprintf(buf, size, SG_BLOCK_PREFIX "%s%s%s%s:%u%s",
		    t->before, open, h, colon, port, t->after);
	}
}

/* The text of a reason whose message names its destination alone. */
static const struct reason_text *
reason_text_of(enum sg_reason r)
{
	size_t	i;

	for (i = 0; i < sizeof(reason_texts) / sizeof(reason_texts[0]); i++)
		if (reason_texts[i].r == r)
			return &reason_texts[i];
	return &reason_texts[0];	/* SG_REASON_NOT_ALLOWLISTED */
}

/*
 * A terminated session's upstream refused by the proxy's own checks (the
 * client's request never left), or one it could not reach or send with
 * its credential (no policy decision: no prefix).
 */
static int
reason_upstream(char *buf, size_t size, enum sg_reason r, const char *open,
    const char *h, const char *colon, unsigned port, const char *detail)
{
	const char	*what;

	switch (r) {
	case SG_REASON_UPSTREAM_SELF_SIGNED:
		what = "presented a self-signed certificate";
		break;
	case SG_REASON_UPSTREAM_UNTRUSTED:
		what = "presented a certificate no trusted CA issued";
		break;
	case SG_REASON_UPSTREAM_EXPIRED:
		what = "presented a certificate outside its validity";
		break;
	case SG_REASON_UPSTREAM_NAME:
		what = "presented a certificate for another name";
		break;
	case SG_REASON_UPSTREAM_UNREACHABLE:
		return snprintf(buf, size, "sandgate-proxy: upstream %s%s%s:%u "
		    "is unreachable (%s)", open, h, colon, port, detail);
	case SG_REASON_CREDENTIAL_MISSING:
		return snprintf(buf, size, "sandgate-proxy: the credential for "
		    "%s%s%s:%u is not set; an admin must run `sandgate secret "
		    "set %s`", open, h, colon, port, detail);
	case SG_REASON_TERMINATION_UNAVAILABLE:
		return snprintf(buf, size, "sandgate-proxy cannot terminate "
		    "TLS for %s%s%s:%u: it was started without a CA "
		    "(--ca-cert, --ca-key)", open, h, colon, port);
	default:
		what = "failed the TLS handshake";
		break;
	}
	return snprintf(buf, size, SG_BLOCK_PREFIX "upstream %s%s%s:%u %s "
	    "(%s); the proxy verifies every upstream it terminates TLS for",
	    open, h, colon, port, what, detail);
}
