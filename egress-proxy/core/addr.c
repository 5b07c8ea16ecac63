/*
 * addr.c: address classification, CIDR prefixes and address sets; see
 * addr.h.
 *
 * The tables follow IANA's IPv4 and IPv6 Special-Purpose Address
 * Registries. Every range in them is non-public here, including the few
 * the registry marks globally reachable (192.0.0.9/32, AS112, AMT,
 * 2001::/23's anycast and ORCHID blocks): an egress proxy has no business
 * reaching them, and a stricter answer only costs an allowlist entry.
 * IPv6 outside 2000::/3 that no row names is reserved too, since IANA has
 * allocated nothing there.
 */
#include <sys/types.h>
#include <sys/socket.h>
#include <arpa/inet.h>
#include <ifaddrs.h>

#include <stdlib.h>
#include <string.h>

#include "addr.h"
#include "sglimits.h"

struct addr_range {
	uint8_t		bytes[16];
	unsigned	prefix;
	enum addr_class	class;
};

struct addr_key {
	int		family;
	uint8_t		bytes[16];
};

struct addr_set {
	struct addr_key	*keys;
	size_t		 len;
	size_t		 cap;
};

static int	addr_prefix_match(const uint8_t *, const uint8_t *, unsigned);
static int	addr_rank(enum addr_class);
static enum addr_class addr_stricter(enum addr_class, enum addr_class);
static enum addr_class addr_table_lookup(const struct addr_range *, size_t,
		    const uint8_t *, enum addr_class);
static enum addr_class addr_classify_v4_bytes(const uint8_t *);
static enum addr_class addr_classify_embedded(const uint8_t *);
static int	addr_key_from(const struct sockaddr *, struct addr_key *);
static int	addr_parse_prefix(const char *, unsigned, unsigned *,
		    const char **);

#define V4(a, b, c, d)	{ a, b, c, d }

/*
 * Most specific rows first: the first match wins. The single addresses
 * are cloud metadata services: AWS/GCP/Azure/OCI, AWS ECS task metadata,
 * Alibaba Cloud, Azure WireServer (in public space) and AWS over IPv6.
 */
static const struct addr_range addr_v4_table[] = {
	{ V4(169, 254, 169, 254), 32, ADDR_METADATA },
	{ V4(169, 254, 170, 2), 32, ADDR_METADATA },
	{ V4(100, 100, 100, 200), 32, ADDR_METADATA },
	{ V4(168, 63, 129, 16), 32, ADDR_METADATA },
	{ V4(255, 255, 255, 255), 32, ADDR_BROADCAST },
	{ V4(0, 0, 0, 0), 8, ADDR_THIS_NETWORK },
	{ V4(10, 0, 0, 0), 8, ADDR_PRIVATE },
	{ V4(100, 64, 0, 0), 10, ADDR_SHARED },
	{ V4(127, 0, 0, 0), 8, ADDR_LOOPBACK },
	{ V4(169, 254, 0, 0), 16, ADDR_LINK_LOCAL },
	{ V4(172, 16, 0, 0), 12, ADDR_PRIVATE },
	{ V4(192, 0, 0, 0), 24, ADDR_RESERVED },	/* IETF protocols */
	{ V4(192, 0, 2, 0), 24, ADDR_RESERVED },	/* TEST-NET-1 */
	{ V4(192, 31, 196, 0), 24, ADDR_RESERVED },	/* AS112-v4 */
	{ V4(192, 52, 193, 0), 24, ADDR_RESERVED },	/* AMT */
	{ V4(192, 88, 99, 0), 24, ADDR_RESERVED },	/* 6to4 relay */
	{ V4(192, 168, 0, 0), 16, ADDR_PRIVATE },
	{ V4(192, 175, 48, 0), 24, ADDR_RESERVED },	/* AS112 */
	{ V4(198, 18, 0, 0), 15, ADDR_RESERVED },	/* benchmarking */
	{ V4(198, 51, 100, 0), 24, ADDR_RESERVED },	/* TEST-NET-2 */
	{ V4(203, 0, 113, 0), 24, ADDR_RESERVED },	/* TEST-NET-3 */
	{ V4(224, 0, 0, 0), 4, ADDR_MULTICAST },
	{ V4(240, 0, 0, 0), 4, ADDR_RESERVED },
};

/*
 * IPv6 rows that carry no IPv4 address (those are handled in code), in
 * order: fd00:ec2::254, 100::/64 discard-only, 100:0:0:1::/64 dummy
 * prefix, 2001:db8::/32 documentation, 2001::/23 IETF protocols,
 * 2620:4f:8000::/48 AS112, 3fff::/20 documentation, 5f00::/16 SRv6
 * SIDs, fc00::/7 unique local, fe80::/10 link-local, fec0::/10 old
 * site-local, ff00::/8 multicast, and 2000::/3 global unicast.
 */
static const struct addr_range addr_v6_table[] = {
	{ { 0xfd, 0x00, 0x0e, 0xc2, [14] = 0x02, [15] = 0x54 }, 128,
	    ADDR_METADATA },
	{ { 0x01, 0x00 }, 64, ADDR_RESERVED },
	{ { 0x01, 0x00, 0, 0, 0, 0, 0, 0x01 }, 64, ADDR_RESERVED },
	{ { 0x20, 0x01, 0x0d, 0xb8 }, 32, ADDR_RESERVED },
	{ { 0x20, 0x01 }, 23, ADDR_RESERVED },
	{ { 0x26, 0x20, 0x00, 0x4f, 0x80, 0x00 }, 48, ADDR_RESERVED },
	{ { 0x3f, 0xff }, 20, ADDR_RESERVED },
	{ { 0x5f, 0x00 }, 16, ADDR_RESERVED },
	{ { 0xfc }, 7, ADDR_PRIVATE },
	{ { 0xfe, 0x80 }, 10, ADDR_LINK_LOCAL },
	{ { 0xfe, 0xc0 }, 10, ADDR_PRIVATE },
	{ { 0xff }, 8, ADDR_MULTICAST },
	{ { 0x20 }, 3, ADDR_PUBLIC },
};

static const char *const addr_class_names[ADDR_CLASS_MAX] = {
	[ADDR_PUBLIC] = "public",
	[ADDR_PRIVATE] = "private",
	[ADDR_LOOPBACK] = "loopback",
	[ADDR_LINK_LOCAL] = "link-local",
	[ADDR_METADATA] = "metadata",
	[ADDR_SHARED] = "shared",
	[ADDR_THIS_NETWORK] = "this-network",
	[ADDR_MULTICAST] = "multicast",
	[ADDR_BROADCAST] = "broadcast",
	[ADDR_RESERVED] = "reserved",
	[ADDR_SELF] = "self",
};

const char *
addr_class_name(enum addr_class c)
{
	if ((unsigned)c >= ADDR_CLASS_MAX)
		return "unknown";
	return addr_class_names[c];
}

/* 1 when the first prefix bits of a and b are equal. */
static int
addr_prefix_match(const uint8_t *a, const uint8_t *b, unsigned prefix)
{
	unsigned	full = prefix / 8, rest = prefix % 8;
	uint8_t		mask;

	if (memcmp(a, b, full) != 0)
		return 0;
	if (rest == 0)
		return 1;
	mask = (uint8_t)(0xff << (8 - rest));
	return (a[full] & mask) == (b[full] & mask);
}

/*
 * How strict a class is, for addresses that carry another: the higher
 * rank wins, so a tunnel to 127.0.0.1 is loopback, not reserved.
 */
static int
addr_rank(enum addr_class c)
{
	switch (c) {
	case ADDR_PUBLIC:	return 0;
	case ADDR_RESERVED:	return 1;
	case ADDR_SHARED:	return 2;
	case ADDR_PRIVATE:	return 3;
	case ADDR_MULTICAST:	return 4;
	case ADDR_BROADCAST:	return 5;
	case ADDR_LINK_LOCAL:	return 6;
	case ADDR_THIS_NETWORK:	return 7;
	case ADDR_LOOPBACK:	return 8;
	case ADDR_SELF:		return 9;
	case ADDR_METADATA:	return 10;
	default:		return 1;
	}
}

static enum addr_class
addr_stricter(enum addr_class a, enum addr_class b)
{
	return addr_rank(a) >= addr_rank(b) ? a : b;
}

static enum addr_class
addr_table_lookup(const struct addr_range *t, size_t n, const uint8_t *b,
    enum addr_class dflt)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (addr_prefix_match(t[i].bytes, b, t[i].prefix))
			return t[i].class;
	return dflt;
}

static enum addr_class
addr_classify_v4_bytes(const uint8_t *b)
{
	return addr_table_lookup(addr_v4_table,
	    sizeof(addr_v4_table) / sizeof(addr_v4_table[0]), b, ADDR_PUBLIC);
}

enum addr_class
addr_classify_v4(const struct in_addr *a)
{
	return addr_classify_v4_bytes((const uint8_t *)&a->s_addr);
}

/*
 * IPv6 forms that carry an IPv4 address, classified as the stricter of
 * the carrier and the IPv4 address. Returns ADDR_CLASS_MAX when the
 * address is none of them.
 *   ::ffff:0:0/96	IPv4-mapped: the IPv4 address itself
 *   ::/96		IPv4-compatible (deprecated): at least reserved
 *   64:ff9b::/96	NAT64 well-known prefix: the IPv4 address itself
 *   64:ff9b:1::/48	local-use NAT64: at least private
 *   2002::/16		6to4, IPv4 in bits 16-47: at least reserved
 *   2001::/32		Teredo, server IPv4 in bits 32-63, client IPv4
 *			in bits 96-127 inverted: at least reserved
 */
static enum addr_class
addr_classify_embedded(const uint8_t *b)
{
	static const uint8_t	mapped[12] = { [10] = 0xff, [11] = 0xff };
	static const uint8_t	zero[12];
	static const uint8_t	nat64[12] = { 0x00, 0x64, 0xff, 0x9b };
	static const uint8_t	nat64l[6] = { 0, 0x64, 0xff, 0x9b, 0, 1 };
	uint8_t			v4[4];
	enum addr_class		c;
	int			i;

	if (memcmp(b, mapped, 12) == 0)
		return addr_classify_v4_bytes(b + 12);
	if (memcmp(b, zero, 12) == 0)
		return addr_stricter(ADDR_RESERVED,
		    addr_classify_v4_bytes(b + 12));
	if (memcmp(b, nat64, 12) == 0)
		return addr_classify_v4_bytes(b + 12);
	if (memcmp(b, nat64l, 6) == 0)
		return addr_stricter(ADDR_PRIVATE,
		    addr_classify_v4_bytes(b + 12));
	if (b[0] == 0x20 && b[1] == 0x02)
		return addr_stricter(ADDR_RESERVED,
		    addr_classify_v4_bytes(b + 2));
	if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0 && b[3] == 0) {
		for (i = 0; i < 4; i++)
			v4[i] = (uint8_t)~b[12 + i];
		c = addr_stricter(addr_classify_v4_bytes(b + 4),
		    addr_classify_v4_bytes(v4));
		return addr_stricter(ADDR_RESERVED, c);
	}
	return ADDR_CLASS_MAX;
}

enum addr_class
addr_classify_v6(const struct in6_addr *a)
{
	static const uint8_t	any[16];
	static const uint8_t	loop[16] = { [15] = 1 };
	const uint8_t		*b = a->s6_addr;
	enum addr_class		 c;

	if (memcmp(b, any, 16) == 0)
		return ADDR_THIS_NETWORK;
	if (memcmp(b, loop, 16) == 0)
		return ADDR_LOOPBACK;
	c = addr_classify_embedded(b);
	if (c != ADDR_CLASS_MAX)
		return c;
	return addr_table_lookup(addr_v6_table,
	    sizeof(addr_v6_table) / sizeof(addr_v6_table[0]), b,
	    ADDR_RESERVED);
}

enum addr_class
addr_classify(const struct sockaddr *sa)
{
	if (sa == NULL)
		return ADDR_RESERVED;
	if (sa->sa_family == AF_INET)
		return addr_classify_v4(
		    &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return addr_classify_v6(&((const struct sockaddr_in6 *)
		    (const void *)sa)->sin6_addr);
	return ADDR_RESERVED;
}

const char *
addr_to_string(const struct sockaddr *sa, char *buf, size_t size)
{
	const void	*src = NULL;

	if (size == 0)
		return buf;
	if (sa != NULL && sa->sa_family == AF_INET)
		src = &((const struct sockaddr_in *)(const void *)sa)->sin_addr;
	else if (sa != NULL && sa->sa_family == AF_INET6)
		src = &((const struct sockaddr_in6 *)(const void *)sa)->
		    sin6_addr;
	if (src == NULL || size > (socklen_t)-1 ||
	    inet_ntop(sa->sa_family, src, buf, (socklen_t)size) == NULL) {
		if (size >= 2)
			memcpy(buf, "?", 2);
		else
			buf[0] = '\0';
	}
	return buf;
}

/* "/n" with 0 <= n <= max, digits only, no leading zeros. */
static int
addr_parse_prefix(const char *s, unsigned max, unsigned *out,
    const char **cause)
{
	unsigned	v = 0;
	size_t		i, len = strlen(s);

	if (len == 0 || len > 3 || (len > 1 && s[0] == '0')) {
		*cause = "invalid prefix length";
		return -1;
	}
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9') {
			*cause = "invalid prefix length";
			return -1;
		}
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max) {
		*cause = "prefix length out of range";
		return -1;
	}
	*out = v;
	return 0;
}

int
addr_cidr_parse(const char *s, struct addr_cidr *out, const char **cause)
{
	char		 text[INET6_ADDRSTRLEN + 8];
	const char	*slash, *addr = s, *close;
	size_t		 alen;
	unsigned	 max, i;

	memset(out, 0, sizeof(*out));
	slash = strchr(s, '/');
	alen = slash == NULL ? strlen(s) : (size_t)(slash - s);
	if (alen > 0 && s[0] == '[') {
		close = memchr(s, ']', alen);
		if (close == NULL || close != s + alen - 1) {
			*cause = "unbalanced brackets in address";
			return -1;
		}
		addr = s + 1;
		alen -= 2;
	}
	if (alen == 0 || alen >= sizeof(text)) {
		*cause = "invalid address";
		return -1;
	}
	memcpy(text, addr, alen);
	text[alen] = '\0';
	if (addr == s && inet_pton(AF_INET, text, out->bytes) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, text, out->bytes) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else {
		*cause = "invalid address";
		return -1;
	}
	out->prefix = max;
	if (slash != NULL &&
	    addr_parse_prefix(slash + 1, max, &out->prefix, cause) == -1)
		return -1;
	for (i = out->prefix; i < max; i++) {
		if (out->bytes[i / 8] & (0x80 >> (i % 8))) {
			*cause = "address has host bits set beyond the prefix";
			return -1;
		}
	}
	return 0;
}

/* The family and raw bytes of a socket address; IPv4-mapped become IPv4. */
static int
addr_key_from(const struct sockaddr *sa, struct addr_key *k)
{
	static const uint8_t	 mapped[12] = { [10] = 0xff, [11] = 0xff };
	const uint8_t		*b;

	memset(k, 0, sizeof(*k));
	if (sa == NULL)
		return -1;
	if (sa->sa_family == AF_INET) {
		k->family = AF_INET;
		memcpy(k->bytes, &((const struct sockaddr_in *)
		    (const void *)sa)->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family != AF_INET6)
		return -1;
	b = ((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr.s6_addr;
	if (memcmp(b, mapped, 12) == 0) {
		k->family = AF_INET;
		memcpy(k->bytes, b + 12, 4);
		return 0;
	}
	k->family = AF_INET6;
	memcpy(k->bytes, b, 16);
	return 0;
}

int
addr_cidr_contains(const struct addr_cidr *c, const struct sockaddr *sa)
{
	const uint8_t	*b;

	if (sa == NULL || sa->sa_family != c->family)
		return 0;
	if (sa->sa_family == AF_INET)
		b = (const uint8_t *)&((const struct sockaddr_in *)
		    (const void *)sa)->sin_addr;
	else
		b = ((const struct sockaddr_in6 *)(const void *)sa)->
		    sin6_addr.s6_addr;
	return addr_prefix_match(c->bytes, b, c->prefix);
}

int
addr_cidr_covers(const struct addr_cidr *a, const struct addr_cidr *b)
{
	if (a->family != b->family || a->prefix > b->prefix)
		return 0;
	return addr_prefix_match(a->bytes, b->bytes, a->prefix);
}

struct addr_set *
addr_set_new(void)
{
	return calloc(1, sizeof(struct addr_set));
}

void
addr_set_free(struct addr_set *s)
{
	if (s == NULL)
		return;
	free(s->keys);
	free(s);
}

int
addr_set_add(struct addr_set *s, const struct sockaddr *sa)
{
	struct addr_key	 k, *nk;
	size_t		 ncap;

	if (addr_key_from(sa, &k) == -1)
		return -1;
	if (addr_set_contains(s, sa))
		return 0;
	if (s->len == s->cap) {
		if (s->cap >= SG_ADDR_SET_MAX)
			return -1;
		ncap = s->cap == 0 ? 8 : s->cap * 2;
		if (ncap > SG_ADDR_SET_MAX)
			ncap = SG_ADDR_SET_MAX;
		nk = reallocarray(s->keys, ncap, sizeof(*nk));
		if (nk == NULL)
			return -1;
		s->keys = nk;
		s->cap = ncap;
	}
	s->keys[s->len++] = k;
	return 0;
}

int
addr_set_contains(const struct addr_set *s, const struct sockaddr *sa)
{
	struct addr_key	k;
	size_t		i;

	if (s == NULL || addr_key_from(sa, &k) == -1)
		return 0;
	for (i = 0; i < s->len; i++)
		if (s->keys[i].family == k.family &&
		    memcmp(s->keys[i].bytes, k.bytes, 16) == 0)
			return 1;
	return 0;
}

int
addr_set_load_local(struct addr_set *s)
{
	struct ifaddrs	*ifa, *i;
	int		 rc = 0;

	if (getifaddrs(&ifa) == -1)
		return -1;
	for (i = ifa; i != NULL; i = i->ifa_next) {
		if (i->ifa_addr == NULL || (i->ifa_addr->sa_family != AF_INET &&
		    i->ifa_addr->sa_family != AF_INET6))
			continue;
		if (addr_set_add(s, i->ifa_addr) == -1) {
			rc = -1;
			break;
		}
	}
	freeifaddrs(ifa);
	return rc;
}
