/* netseal.c: firewall a sandbox's network namespace; see netseal.h. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netseal.h"
#include "sysrun.h"
#include "util.h"

#define NETSEAL_DNS	"127.0.0.11/32"	/* Docker's embedded resolver */
#define NETSEAL_REJECT	"-j REJECT --reject-with icmp-admin-prohibited"

/* Split "A.B.C.D:PORT"; 0 or -1. */
static int
netseal_split(const char *proxy, char *ip, size_t iplen, unsigned *port)
{
	struct in_addr	 a;
	const char	*colon;
	char		*end;
	unsigned long	 p;

	if (proxy == NULL || (colon = strrchr(proxy, ':')) == NULL ||
	    (size_t)(colon - proxy) >= iplen)
		return -1;
	memcpy(ip, proxy, (size_t)(colon - proxy));
	ip[colon - proxy] = '\0';
	if (inet_pton(AF_INET, ip, &a) != 1)
		return -1;
	p = strtoul(colon + 1, &end, 10);
	if (colon[1] < '0' || colon[1] > '9' || *end != '\0' || p == 0 ||
	    p > 65535)
		return -1;
	*port = (unsigned)p;
	return 0;
}

int
netseal_rules(int family, const char *proxy, char *buf, size_t len)
{
	char		ip[INET_ADDRSTRLEN];
	unsigned	port;
	int		n;

	if (family == 6)
		n = snprintf(buf, len,
		    "*filter\n"
		    ":INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n"
		    ":OUTPUT ACCEPT [0:0]\n"
		    "-A OUTPUT -o lo -j ACCEPT\n"
		    "-A OUTPUT -j REJECT --reject-with adm-prohibited\n"
		    "-A INPUT -i lo -j ACCEPT\n"
		    "-A INPUT -j DROP\n"
		    "COMMIT\n");
	else {
		if (netseal_split(proxy, ip, sizeof(ip), &port) == -1)
			return -1;
		n = snprintf(buf, len,
		    "*filter\n"
		    ":INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n"
		    ":OUTPUT ACCEPT [0:0]\n"
		    "-A OUTPUT -d " NETSEAL_DNS " " NETSEAL_REJECT "\n"
		    "-A OUTPUT -o lo -j ACCEPT\n"
		    "-A OUTPUT -d %s/32 -p tcp -m tcp --dport %u -j ACCEPT\n"
		    "-A OUTPUT " NETSEAL_REJECT "\n"
		    "-A INPUT -i lo -j ACCEPT\n"
		    "-A INPUT -s %s/32 -p tcp -m tcp --sport %u -j ACCEPT\n"
		    "-A INPUT -j DROP\n"
		    "COMMIT\n", ip, port, ip, port);
	}
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

int
netseal_apply(pid_t pid, const char *proxy, char **cause)
{
	static const char *const v4[] = { "/usr/sbin/iptables-restore",
	    "/sbin/iptables-restore", "iptables-restore", NULL };
	static const char *const v6[] = { "/usr/sbin/ip6tables-restore",
	    "/sbin/ip6tables-restore", "ip6tables-restore", NULL };
	struct sysrun	 r;
	char		 rules[NETSEAL_RULES_MAX], *why = NULL;
	int		 family;

	for (family = 4; family <= 6; family += 2) {
		if (netseal_rules(family, proxy, rules, sizeof(rules)) == -1) {
			util_xasprintf(cause, "cannot seal the sandbox's "
			    "network: proxy address '%s' is not IPv4:PORT",
			    proxy ? proxy : "");
			return -1;
		}
		memset(&r, 0, sizeof(r));
		r.paths = family == 4 ? v4 : v6;
		r.argv = (char *const []){ family == 4 ? "iptables-restore" :
		    "ip6tables-restore", "-w", "10", NULL };
		r.input = rules;
		r.netns = pid;
		if (sysrun(&r, &why) == -1) {
			util_xasprintf(cause, "cannot seal the sandbox's "
			    "network (needs root and iptables on the host): %s",
			    why);
			free(why);
			return -1;
		}
	}
	return 0;
}

int
netseal_probe_target(const char *proxy, char *buf, size_t len)
{
	char		ip[INET_ADDRSTRLEN];
	unsigned	port;
	int		n;

	if (netseal_split(proxy, ip, sizeof(ip), &port) == -1)
		return -1;
	n = snprintf(buf, len, "%s:%d", ip, port == 1 ? 2 : 1);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}
