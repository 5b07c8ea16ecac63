/*
 * addr.h: classification of IP addresses the proxy is about to connect to,
 * CIDR prefixes, and sets of addresses (the proxy's own).
 *
 * Anything but ADDR_PUBLIC counts as private for the policy: the proxy
 * refuses it unless the matching entry has allow_private. Embedded IPv4
 * (IPv4-mapped ::ffff:0:0/96, IPv4-compatible ::/96, NAT64 64:ff9b::/96
 * and 64:ff9b:1::/48, 6to4 2002::/16, Teredo 2001::/32 with its obfuscated
 * client address) is classified as the IPv4 address it carries, taking the
 * stricter class. Pure: no I/O but addr_set_load_local().
 */
#ifndef SG_ADDR_H
#define SG_ADDR_H

#include <sys/socket.h>
#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>

enum addr_class {
	ADDR_PUBLIC = 0,
	ADDR_PRIVATE,		/* RFC 1918, fc00::/7 */
	ADDR_LOOPBACK,		/* 127/8, ::1 */
	ADDR_LINK_LOCAL,	/* 169.254/16, fe80::/10 */
	ADDR_METADATA,		/* 169.254.169.254, 100.100.100.200,
				   168.63.129.16, fd00:ec2::254 */
	ADDR_SHARED,		/* 100.64/10 carrier-grade NAT */
	ADDR_THIS_NETWORK,	/* 0/8, :: */
	ADDR_MULTICAST,		/* 224/4, ff00::/8 */
	ADDR_BROADCAST,		/* 255.255.255.255 */
	ADDR_RESERVED,		/* the rest of IANA's special-purpose
				   registries: 192.0.0/24, 192.0.2/24,
				   198.18/15, 198.51.100/24, 203.0.113/24,
				   240/4, 2001:db8::/32, 100::/64, ... */
	ADDR_SELF,		/* one of the proxy's own addresses */
	ADDR_CLASS_MAX
};

/* "public", "private", "loopback", ...; never NULL. */
const char	*addr_class_name(enum addr_class);

/* Classify an AF_INET or AF_INET6 address; others are ADDR_RESERVED. */
enum addr_class	 addr_classify(const struct sockaddr *);
enum addr_class	 addr_classify_v4(const struct in_addr *);
enum addr_class	 addr_classify_v6(const struct in6_addr *);

/*
 * "1.2.3.4" or "2001:db8::1" (no brackets, no port) into buf. Returns buf;
 * it holds "?" for another family or when size is too small.
 */
const char	*addr_to_string(const struct sockaddr *, char *buf,
		    size_t size);

/* A CIDR prefix; a bare address is a /32 or /128. */
struct addr_cidr {
	int		family;		/* AF_INET or AF_INET6 */
	uint8_t		bytes[16];	/* network order, host bits zero */
	unsigned	prefix;
};

/*
 * Parse "10.0.0.0/8", "192.0.2.7", "2001:db8::/32" or "[2001:db8::1]".
 * Host bits set beyond the prefix are refused ("10.0.0.1/8"). Returns 0 or
 * -1 with *cause.
 */
int	addr_cidr_parse(const char *s, struct addr_cidr *out,
	    const char **cause);
/* 1 when the address is inside the prefix (same family), else 0. */
int	addr_cidr_contains(const struct addr_cidr *, const struct sockaddr *);
/* 1 when prefix a contains all of prefix b, else 0. */
int	addr_cidr_covers(const struct addr_cidr *a, const struct addr_cidr *b);

/* A small set of addresses (the proxy's own), compared without port. */
struct addr_set;
struct addr_set	*addr_set_new(void);
void		 addr_set_free(struct addr_set *);	/* NULL ok */
int		 addr_set_add(struct addr_set *, const struct sockaddr *);
int		 addr_set_contains(const struct addr_set *,
		    const struct sockaddr *);
/* Add every address of every local interface (getifaddrs). 0 or -1. */
int		 addr_set_load_local(struct addr_set *);

#endif
