/*
 * host.h: the one normalization routine for every name the proxy sees
 * (CONNECT target, absolute-URI host, Host header, SNI, policy entries).
 *
 * A name is lowercased, its trailing dot removed, IDNs turned into
 * punycode A-labels by UTS #46 (libidn2, non-transitional), IPv6 literals
 * taken with or without brackets and printed in RFC 5952 form, and every
 * inet_aton(3) spelling of an IPv4 address ("127.1", "2130706433",
 * "0x7f.0.0.1", "0177.0.0.1") turned into the one dotted-quad form.
 * Refused: empty names, '%' zone ids, CR, LF, NUL and other control or
 * space characters, userinfo ("user@host"), names over SG_HOST_MAX
 * characters or with a label over SG_LABEL_MAX, empty labels, and
 * characters outside LDH once converted (an '_' is allowed: some CDNs use
 * it). Pure: no I/O, no DNS.
 */
#ifndef SG_HOST_H
#define SG_HOST_H

#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

#include "sglimits.h"

enum host_type {
	HOST_DNS,	/* a DNS name */
	HOST_IPV4,
	HOST_IPV6
};

struct host {
	enum host_type	type;
	/* Canonical text: A-label name, dotted quad, or IPv6 without []. */
	char		name[SG_HOST_MAX + 1];
	union {
		struct in_addr	v4;
		struct in6_addr	v6;
	} ip;		/* valid for HOST_IPV4 and HOST_IPV6 */
};

/*
 * Normalize len bytes at in (not NUL-terminated; embedded NULs are
 * refused) into *out. IPv6 may come bracketed or bare. Returns 0, or -1
 * with *cause set to a static phrase ("empty host name", "host name has a
 * zone id", "host name has userinfo", "host name too long", ...).
 */
int	host_normalize(const char *in, size_t len, struct host *out,
	    const char **cause);

/*
 * Parse an authority "host[:port]" (CONNECT target, absolute-URI
 * authority, Host header): IPv6 must be bracketed here ("[::1]:443").
 * A missing port gives default_port; when default_port is 0 the port is
 * required ("CONNECT host" with no port is refused). Port 0 and ports over
 * 65535 are refused. Userinfo is refused. Returns 0 or -1 with *cause.
 */
int	host_parse_authority(const char *in, size_t len,
	    uint16_t default_port, struct host *out, uint16_t *port,
	    const char **cause);

/* 1 when both are the same normalized host, else 0. */
int	host_equal(const struct host *, const struct host *);

/*
 * Write "name:port", bracketing IPv6 ("[::1]:443"), into buf. Returns the
 * length snprintf would have written.
 */
int	host_format(const struct host *, uint16_t port, char *buf,
	    size_t size);

#endif
