/*
 * reason.h: the stable reason codes of a block (docs/audit.md) and the words a
 * client sees. Tools and SIEM rules key on the codes: add codes, never
 * change what one means.
 */
#ifndef SG_REASON_H
#define SG_REASON_H

#include <stddef.h>

enum sg_reason {
	SG_REASON_NONE = 0,		/* allowed */
	SG_REASON_NOT_ALLOWLISTED,
	SG_REASON_PORT_NOT_ALLOWED,
	SG_REASON_PRIVATE_ADDRESS,
	SG_REASON_IP_LITERAL,
	SG_REASON_SNI_MISMATCH,
	SG_REASON_SNI_MISSING,
	SG_REASON_NOT_TLS,
	SG_REASON_ECH,
	SG_REASON_HOST_MISMATCH,
	SG_REASON_METHOD_NOT_ALLOWED,
	SG_REASON_PATH_NOT_ALLOWED,
	SG_REASON_MALFORMED_REQUEST,
	SG_REASON_LOG_UNAVAILABLE,
	SG_REASON_SNI_INVALID,		/* not an ASCII host name, or malformed */
	SG_REASON_IDENTITY_CHANGED,	/* the client's registration changed */
	SG_REASON_PROXY_UNAVAILABLE,	/* no tunnel can be set up now */
	/* tls: terminate: the proxy's own TLS to the upstream failed. */
	SG_REASON_UPSTREAM_SELF_SIGNED,	/* a self-signed certificate */
	SG_REASON_UPSTREAM_UNTRUSTED,	/* a chain to no trusted CA */
	SG_REASON_UPSTREAM_EXPIRED,	/* expired or not yet valid */
	SG_REASON_UPSTREAM_NAME,	/* a certificate for another name */
	SG_REASON_UPSTREAM_TLS,		/* any other handshake failure */
	SG_REASON_UPSTREAM_UNREACHABLE,	/* no answer, refused, no address */
	SG_REASON_CREDENTIAL_MISSING,	/* the entry's secret is not set */
	SG_REASON_TERMINATION_UNAVAILABLE, /* tls: terminate, but no CA */
	SG_REASON_DENIED,		/* a deny entry (a floor) matched */
	/* A sandbox token (token.h) in Proxy-Authorization refused. */
	SG_REASON_TOKEN_MALFORMED,	/* not a token the parser accepts */
	SG_REASON_TOKEN_FORGED,		/* no trusted key signed it */
	SG_REASON_TOKEN_EXPIRED,	/* past its expiry, or not yet valid */
	SG_REASON_TOKEN_OTHER_SANDBOX,	/* names another sandbox than the
					   client's address is registered to */
	SG_REASON_CLIENT_TLS,		/* tls: terminate: the client's own
					   handshake with the proxy failed */
	SG_REASON_TOKEN_RUN_ENDED,	/* from an unregistered address, names
					   a run not running here */
	SG_REASON_TOKEN_SANDBOX_GONE,	/* issued before its sandbox was
					   unregistered */
	SG_REASON_MAX
};

/* The prefix every block message starts with. */
#define SG_BLOCK_PREFIX	"network blocked by policy: "

/* The advice line that ends the body of every block response. */
#define SG_BLOCK_ADVICE \
	"sandgate: retrying through another proxy, unsetting the proxy " \
	"variables or connecting to raw IP addresses will not work; an " \
	"admin must add the destination to policy.d/ with a rationale."

/* "not_allowlisted" etc.; "none" for SG_REASON_NONE; never NULL. */
const char	*reason_code(enum sg_reason);
/*
 * 1 for the reasons of a failed TLS handshake with an upstream the proxy
 * terminates for (self-signed, untrusted, expired, name, other).
 */
int		 reason_is_upstream_tls(enum sg_reason);
/* 1 for the reasons of a refused sandbox token (token_*). */
int		 reason_is_token(enum sg_reason);
/* Parse a code back; SG_REASON_MAX if unknown. */
enum sg_reason	 reason_from_code(const char *);

/*
 * Format the one-line message a client sees, without a trailing newline:
 *   not_allowlisted:  "network blocked by policy: destination H:P not allowlisted"
 *   private_address:  "... destination H:P resolves to private address A"
 *   sni_mismatch:     "... TLS SNI S does not match CONNECT host H"
 * host, sni and addr may be NULL where a reason does not use them. For
 * the upstream_* and token_* reasons and credential_missing, addr is the
 * detail
 * (what OpenSSL or the connect said, the secret's name, why the token
 * was refused). sni
 * comes from the client: it is shown with every byte outside printable
 * ASCII (and the backslash) escaped as \xNN, so the message is printable
 * ASCII whatever the client sent. host and addr must already be safe
 * (normalized names and addresses).
 * Returns the length snprintf would have written.
 */
int		 reason_message(char *buf, size_t size, enum sg_reason,
		    const char *host, unsigned port, const char *sni,
		    const char *addr);

#endif
