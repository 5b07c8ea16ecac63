/*
 * fuzz_host.c: host_normalize() and host_parse_authority() on arbitrary
 * bytes. Invariants: an accepted name is canonical (it normalizes to
 * itself), holds only LDH and '_' characters when it is a DNS name, and
 * never disagrees with inet_aton(3) about an IPv4 spelling; an accepted
 * authority formats and parses back to the same host and port.
 */
#include <arpa/inet.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static void	check_canonical(const struct host *);
static void	check_inet_aton(const uint8_t *, size_t, int,
		    const struct host *);
static void	check_authority(const uint8_t *, size_t, uint16_t);

static void
check_canonical(const struct host *h)
{
	struct host	 again;
	const char	*cause;
	size_t		 len = strlen(h->name), i;

	if (len == 0 || len > SG_HOST_MAX)
		abort();
	if (host_normalize(h->name, len, &again, &cause) != 0)
		abort();
	if (!host_equal(h, &again) ||
	    memcmp(&h->ip, &again.ip, sizeof(h->ip)) != 0)
		abort();
	if (h->type != HOST_DNS)
		return;
	for (i = 0; i < len; i++)
		if (strchr("abcdefghijklmnopqrstuvwxyz0123456789-_.",
		    h->name[i]) == NULL)
			abort();
}

/*
 * For strings of inet_aton's own alphabet: whatever inet_aton accepts is
 * never a DNS name here, and both read the same address.
 */
static void
check_inet_aton(const uint8_t *data, size_t size, int rc,
    const struct host *h)
{
	char		buf[64];
	struct in_addr	a;
	size_t		i;

	if (size == 0 || size >= sizeof(buf) || data[size - 1] == '.')
		return;
	for (i = 0; i < size; i++)
		if (strchr("0123456789abcdefABCDEFxX.", data[i]) == NULL ||
		    data[i] == '\0')
			return;
	memcpy(buf, data, size);
	buf[size] = '\0';
	if (inet_aton(buf, &a) == 0) {
		if (rc == 0 && h->type == HOST_IPV4)
			abort();
		return;
	}
	if (rc == 0 && (h->type != HOST_IPV4 || h->ip.v4.s_addr != a.s_addr))
		abort();
}

static void
check_authority(const uint8_t *data, size_t size, uint16_t dflt)
{
	struct host	 h, again;
	const char	*cause;
	char		 buf[SG_HOST_MAX + 16];
	uint16_t	 port, port2;
	int		 n;

	if (host_parse_authority((const char *)data, size, dflt, &h, &port,
	    &cause) != 0)
		return;
	if (port == 0)
		abort();
	n = host_format(&h, port, buf, sizeof(buf));
	if (n < 0 || (size_t)n >= sizeof(buf))
		abort();
	if (host_parse_authority(buf, (size_t)n, 0, &again, &port2,
	    &cause) != 0)
		abort();
	if (!host_equal(&h, &again) || port != port2)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host	 h;
	const char	*cause = NULL;
	int		 rc;

	rc = host_normalize((const char *)data, size, &h, &cause);
	if (rc == 0)
		check_canonical(&h);
	else if (cause == NULL)
		abort();
	check_inet_aton(data, size, rc, &h);
	check_authority(data, size, 443);
	check_authority(data, size, 0);
	return 0;
}
