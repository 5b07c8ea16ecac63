/* netseal.c: firewall a sandbox's network namespace; see netseal.h. */
#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
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
		    "-A INPUT -i lo -j ACCEPT\n"
		    "-A INPUT -j DROP\n"
		    "-A OUTPUT -o lo -j ACCEPT\n"
		    "-A OUTPUT -j REJECT --reject-with icmp6-adm-prohibited\n"
		    "COMMIT\n");
	else {
		if (netseal_split(proxy, ip, sizeof(ip), &port) == -1)
			return -1;
		n = snprintf(buf, len,
		    "*filter\n"
		    ":INPUT ACCEPT [0:0]\n:FORWARD DROP [0:0]\n"
		    ":OUTPUT ACCEPT [0:0]\n"
		    "-A INPUT -i lo -j ACCEPT\n"
		    "-A INPUT -s %s/32 -p tcp -m tcp --sport %u -j ACCEPT\n"
		    "-A INPUT -j DROP\n"
		    "-A OUTPUT -d " NETSEAL_DNS " " NETSEAL_REJECT "\n"
		    "-A OUTPUT -o lo -j ACCEPT\n"
		    "-A OUTPUT -d %s/32 -p tcp -m tcp --dport %u -j ACCEPT\n"
		    "-A OUTPUT " NETSEAL_REJECT "\n"
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
			util_cause(cause, "cannot seal the sandbox's "
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
			util_cause(cause, "cannot seal the sandbox's "
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

/*
 * How long the proxy has to answer the seal check's connect: a loaded host
 * or a proxy whose backlog is briefly full still answers within it. Only a
 * failing check waits that long; the refusals are REJECTs, answered at once.
 */
#define NETSEAL_CHECK_MS	5000
#define NETSEAL_WHY_MAX		512
#define NETSEAL_SAVE_MAX	(64 * 1024)	/* of iptables-save output */

/* 1 when e is the local firewall's refusal (the seal), not an answer. */
static int
netseal_refusal(int e)
{
	return e == EPERM || e == EACCES || e == EHOSTUNREACH ||
	    e == ENETUNREACH;
}

/*
 * A socket of the namespace nsfd (sockets keep the namespace they were
 * made in): enter it, make the socket, come back to our own (self). -1
 * with errno when a step failed; *lost is set when we could not return.
 */
static int
netseal_socket(int nsfd, int self, int type, int *lost)
{
	int	fd, saved;

	if (setns(nsfd, CLONE_NEWNET) == -1)
		return -1;
	fd = socket(AF_INET, type | SOCK_CLOEXEC, 0);
	saved = errno;
	if (setns(self, CLONE_NEWNET) == -1)
		*lost = 1;
	errno = saved;
	return fd;
}

/* TCP connect from fd to ip:port: 0 when it connected, else the errno. */
static int
netseal_connect(int fd, const char *ip, unsigned port)
{
	struct sockaddr_in	sin;
	struct pollfd		pfd;
	socklen_t		len = sizeof(int);
	int			err = 0;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		return EINVAL;
	if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1) {
		err = errno;
		if (err == EINPROGRESS) {
			pfd.fd = fd;
			pfd.events = POLLOUT;
			err = poll(&pfd, 1, NETSEAL_CHECK_MS) == 1 &&
			    getsockopt(fd, SOL_SOCKET, SO_ERROR, &err,
			    &len) == 0 ? err : ETIMEDOUT;
		}
	}
	return err;
}

/* A UDP datagram from fd to Docker's resolver: 0 when it went out. */
static int
netseal_dns(int fd)
{
	struct sockaddr_in	sin;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(53);
	inet_pton(AF_INET, "127.0.0.11", &sin.sin_addr);
	return sendto(fd, "", 1, 0, (struct sockaddr *)&sin,
	    sizeof(sin)) == -1 ? errno : 0;
}

/* The three checks on sockets of the sandbox's namespace; why into why. */
static int
netseal_check_fds(const int fds[3], const char *proxy, char *why,
    size_t len)
{
	char		ip[INET_ADDRSTRLEN], target[80];
	unsigned	port;
	int		e;

	if (netseal_split(proxy, ip, sizeof(ip), &port) == -1 ||
	    netseal_probe_target(proxy, target, sizeof(target)) == -1) {
		snprintf(why, len, "proxy address '%s' is not IPv4:PORT",
		    proxy ? proxy : "");
		return -1;
	}
	if (!netseal_refusal(e = netseal_connect(fds[0], ip,
	    port == 1 ? 2 : 1))) {
		snprintf(why, len, "a connection to %s, which the seal "
		    "refuses, got %s", target, e == 0 ? "through" :
		    strerror(e));
		return -1;
	}
	if (!netseal_refusal(e = netseal_dns(fds[1]))) {
		snprintf(why, len, "a query to Docker's resolver 127.0.0.11, "
		    "which the seal refuses, %s", e == 0 ? "went out" :
		    strerror(e));
		return -1;
	}
	if ((e = netseal_connect(fds[2], ip, port)) != 0) {
		snprintf(why, len, "the proxy at %s does not answer (%s)",
		    proxy, strerror(e));
		return -1;
	}
	return 0;
}

int
netseal_normal(const char *in, char *out, size_t len)
{
	const char	*nl, *end;
	size_t		 n, used = 0;

	for (; *in != '\0'; in = *nl ? nl + 1 : nl) {
		nl = in + strcspn(in, "\n");
		end = nl;
		while (end > in && (end[-1] == ' ' || end[-1] == '\r'))
			end--;
		if (end == in || *in == '#')
			continue;
		/* ":CHAIN POLICY [packets:bytes]": the counters go */
		if (*in == ':' && (n = strcspn(in, "[\n")) < (size_t)(end - in))
			end = in + n;
		while (end > in && end[-1] == ' ')
			end--;
		n = (size_t)(end - in);
		if (used + n + 2 > len)
			return -1;
		memcpy(out + used, in, n);
		used += n;
		out[used++] = '\n';
	}
	if (len == 0)
		return -1;
	out[used] = '\0';
	return 0;
}

/*
 * The first line where the rules in force (got) and the seal's (want)
 * differ, both normalised, into why; 0 when they are the same.
 */
static int
netseal_rules_differ(const char *got, const char *want, int family,
    char *why, size_t len)
{
	size_t	 a, b;

	while (*got != '\0' || *want != '\0') {
		a = strcspn(got, "\n");
		b = strcspn(want, "\n");
		if (a != b || memcmp(got, want, a) != 0) {
			if (b == 0)
				snprintf(why, len, "the IPv%d filter of its "
				    "namespace has '%.*s' after the seal's "
				    "rules", family, (int)(a > 120 ? 120 : a),
				    got);
			else if (a == 0)
				snprintf(why, len, "the IPv%d filter of its "
				    "namespace lacks the seal's '%.*s'",
				    family, (int)(b > 120 ? 120 : b), want);
			else
				snprintf(why, len, "the IPv%d filter of its "
				    "namespace has '%.*s' where the seal has "
				    "'%.*s'", family, (int)(a > 120 ? 120 : a),
				    got, (int)(b > 120 ? 120 : b), want);
			return 1;
		}
		got += a + (got[a] == '\n');
		want += b + (want[b] == '\n');
	}
	return 0;
}

/*
 * The filter tables of pid's namespace (iptables-save, ip6tables-save)
 * against the rules netseal_rules makes: any rule added, removed or
 * changed is drift. 0, or -1 with why.
 */
static int
netseal_rules_hold(pid_t pid, const char *proxy, char *why, size_t len)
{
	static const char *const v4[] = { "/usr/sbin/iptables-save",
	    "/sbin/iptables-save", "iptables-save", NULL };
	static const char *const v6[] = { "/usr/sbin/ip6tables-save",
	    "/sbin/ip6tables-save", "ip6tables-save", NULL };
	struct sysrun	 r[2];
	char		 want[NETSEAL_RULES_MAX], normal[NETSEAL_RULES_MAX];
	char		*got, *err = NULL;
	int		 i, started[2] = { 0, 0 }, rv = 0;

	got = util_xmalloc(NETSEAL_SAVE_MAX);
	/* both at once: each is a few milliseconds of every exec */
	for (i = 0; i < 2; i++) {
		memset(&r[i], 0, sizeof(r[i]));
		r[i].paths = i == 0 ? v4 : v6;
		r[i].argv = (char *const []){ i == 0 ? "iptables-save" :
		    "ip6tables-save", "-t", "filter", NULL };
		r[i].netns = pid;
		r[i].output = util_xmalloc(NETSEAL_SAVE_MAX);
		r[i].outlen = NETSEAL_SAVE_MAX;
		if (rv == 0 && sysrun_start(&r[i], &err) == 0)
			started[i] = 1;
		else if (rv == 0) {
			snprintf(why, len, "cannot read its rules: %s", err);
			rv = -1;
		}
		free(err);
		err = NULL;
	}
	for (i = 0; i < 2; i++) {
		if (started[i] && sysrun_finish(&r[i], &err) == -1 &&
		    rv == 0) {
			snprintf(why, len, "cannot read its rules: %s", err);
			rv = -1;
		}
		free(err);
		err = NULL;
		if (rv != 0)
			continue;
		if (r[i].outcut || netseal_normal(r[i].output, got,
		    NETSEAL_SAVE_MAX) == -1) {
			snprintf(why, len, "the IPv%d filter of its namespace "
			    "holds more than %d bytes of rules", i ? 6 : 4,
			    NETSEAL_SAVE_MAX);
			rv = -1;
		} else if (netseal_rules(i ? 6 : 4, proxy, want,
		    sizeof(want)) == -1 || netseal_normal(want, normal,
		    sizeof(normal)) == -1 || netseal_rules_differ(got, normal,
		    i ? 6 : 4, why, len))
			rv = -1;
	}
	for (i = 0; i < 2; i++)
		free(r[i].output);
	free(got);
	return rv;
}

int
netseal_check(pid_t pid, const char *proxy, char **cause)
{
	static const int types[3] = { SOCK_STREAM | SOCK_NONBLOCK,
	    SOCK_DGRAM, SOCK_STREAM | SOCK_NONBLOCK };
	char	why[NETSEAL_WHY_MAX], ns[64];
	int	fds[3] = { -1, -1, -1 }, nsfd, self, lost = 0, i, rv = -1;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)pid);
	if ((self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC)) == -1 ||
	    (nsfd = open(ns, O_RDONLY | O_CLOEXEC)) == -1) {
		util_cause(cause, "cannot open %s: %s", self == -1 ?
		    "/proc/self/ns/net" : ns, strerror(errno));
		if (self != -1)
			close(self);
		return -1;
	}
	for (i = 0; i < 3 && !lost; i++)
		if ((fds[i] = netseal_socket(nsfd, self, types[i], &lost)) ==
		    -1)
			break;
	if (lost)
		fatalx("cannot return to the host's network namespace");
	if (i < 3)
		util_cause(cause, "cannot make a socket in %s: %s", ns,
		    strerror(errno));
	else if (netseal_check_fds(fds, proxy, why, sizeof(why)) == -1 ||
	    netseal_rules_hold(pid, proxy, why, sizeof(why)) == -1)
		util_cause(cause, "%s", why);
	else
		rv = 0;
	for (i = 0; i < 3; i++)
		if (fds[i] != -1)
			close(fds[i]);
	close(nsfd);
	close(self);
	return rv;
}
