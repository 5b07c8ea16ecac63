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
	[SG_REASON_DENIED] = "denied",
};

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
reason_message(char *buf, size_t size, enum sg_reason r, const char *host,
    unsigned port, const char *sni_raw, const char *addr)
{
	const char	*h = host ? host : "-";
	const char	*colon = strchr(h, ':') ? "]" : "";
	const char	*open = *colon ? "[" : "";
	char		 sni[REASON_SNI_SHOWN];

	util_escape(sni_raw ? sni_raw : "-", sni, sizeof(sni));
	switch (r) {
	case SG_REASON_PORT_NOT_ALLOWED:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u not allowlisted (port %u is not allowed for "
		    "this host)", open, h, colon, port, port);
	case SG_REASON_PRIVATE_ADDRESS:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u resolves to private address %s", open, h,
		    colon, port, addr ? addr : "-");
	case SG_REASON_IP_LITERAL:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u not allowlisted (IP address destinations must "
		    "be allowlisted by address)", open, h, colon, port);
	case SG_REASON_SNI_MISMATCH:
		return snprintf(buf, size, SG_BLOCK_PREFIX "TLS SNI %s does "
		    "not match CONNECT host %s", sni, h);
	case SG_REASON_SNI_INVALID:
		return snprintf(buf, size, SG_BLOCK_PREFIX "TLS ClientHello "
		    "for %s%s%s:%u has an invalid server name%s%s%s (an ASCII "
		    "host name is required)", open, h, colon, port,
		    sni_raw ? " \"" : "", sni_raw ? sni : "",
		    sni_raw ? "\"" : "");
	case SG_REASON_IDENTITY_CHANGED:
		return snprintf(buf, size, SG_BLOCK_PREFIX "the sandbox "
		    "registration of this client changed; connection to "
		    "%s%s%s:%u closed", open, h, colon, port);
	case SG_REASON_PROXY_UNAVAILABLE:
		return snprintf(buf, size, "sandgate-proxy cannot open a "
		    "tunnel to %s%s%s:%u now (out of memory or pipes); try "
		    "again later", open, h, colon, port);
	case SG_REASON_DENIED:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u is denied (a deny entry of policy.d; no allow "
		    "entry or grant can open it)", open, h, colon, port);
	case SG_REASON_SNI_MISSING:
		return snprintf(buf, size, SG_BLOCK_PREFIX "TLS ClientHello "
		    "for %s%s%s:%u has no SNI", open, h, colon, port);
	case SG_REASON_NOT_TLS:
		return snprintf(buf, size, SG_BLOCK_PREFIX "tunnel to "
		    "%s%s%s:%u must carry TLS", open, h, colon, port);
	case SG_REASON_ECH:
		return snprintf(buf, size, SG_BLOCK_PREFIX "TLS ClientHello "
		    "for %s%s%s:%u uses encrypted client hello, whose "
		    "destination cannot be checked", open, h, colon, port);
	case SG_REASON_HOST_MISMATCH:
		return snprintf(buf, size, SG_BLOCK_PREFIX "Host header does "
		    "not match destination %s%s%s:%u", open, h, colon, port);
	case SG_REASON_METHOD_NOT_ALLOWED:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u not allowlisted for this method", open, h,
		    colon, port);
	case SG_REASON_PATH_NOT_ALLOWED:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u not allowlisted for this path", open, h, colon,
		    port);
	case SG_REASON_MALFORMED_REQUEST:
		return snprintf(buf, size, SG_BLOCK_PREFIX "malformed "
		    "request");
	case SG_REASON_LOG_UNAVAILABLE:
		return snprintf(buf, size, SG_BLOCK_PREFIX "security log "
		    "unavailable");
	case SG_REASON_NOT_ALLOWLISTED:
	default:
		return snprintf(buf, size, SG_BLOCK_PREFIX "destination "
		    "%s%s%s:%u not allowlisted", open, h, colon, port);
	}
}
