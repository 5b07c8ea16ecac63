/* netseal.c: firewall a sandbox's network namespace; see netseal.h. */
#include <sys/socket.h>
#include <sys/wait.h>

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

#define NETSEAL_CHECK_MS	1000	/* for a connect to be answered */
#define NETSEAL_WHY_MAX		256

/* 1 when e is the local firewall's refusal (the seal), not an answer. */
static int
netseal_refusal(int e)
{
	return e == EPERM || e == EACCES || e == EHOSTUNREACH ||
	    e == ENETUNREACH;
}

/* TCP connect to ip:port: 0 when it connected, else the errno. */
static int
netseal_connect(const char *ip, unsigned port)
{
	struct sockaddr_in	sin;
	struct pollfd		pfd;
	socklen_t		len = sizeof(int);
	int			fd, err = 0;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons((unsigned short)port);
	if (inet_pton(AF_INET, ip, &sin.sin_addr) != 1)
		return EINVAL;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd == -1)
		return errno;
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
	close(fd);
	return err;
}

/* A UDP datagram to Docker's resolver: 0 when it went out, else errno. */
static int
netseal_dns(void)
{
	struct sockaddr_in	sin;
	int			fd, err = 0;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(53);
	inet_pton(AF_INET, "127.0.0.11", &sin.sin_addr);
	if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
		return errno;
	if (sendto(fd, "", 1, 0, (struct sockaddr *)&sin, sizeof(sin)) == -1)
		err = errno;
	close(fd);
	return err;
}

/* The checks, run in the sandbox's namespace; why it drifted into why. */
static int
netseal_check_here(const char *proxy, char *why, size_t len)
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
	if (!netseal_refusal(e = netseal_connect(ip, port == 1 ? 2 : 1))) {
		snprintf(why, len, "a connection to %s, which the seal "
		    "refuses, got %s", target, e == 0 ? "through" :
		    strerror(e));
		return -1;
	}
	if (!netseal_refusal(e = netseal_dns())) {
		snprintf(why, len, "a query to Docker's resolver 127.0.0.11, "
		    "which the seal refuses, %s", e == 0 ? "went out" :
		    strerror(e));
		return -1;
	}
	if ((e = netseal_connect(ip, port)) != 0) {
		snprintf(why, len, "the proxy at %s does not answer (%s)",
		    proxy, strerror(e));
		return -1;
	}
	return 0;
}

int
netseal_check(pid_t pid, const char *proxy, char **cause)
{
	char	why[NETSEAL_WHY_MAX], ns[64];
	ssize_t	n;
	pid_t	child;
	int	p[2], fd, status;

	if (pipe2(p, O_CLOEXEC) == -1) {
		util_xasprintf(cause, "pipe: %s", strerror(errno));
		return -1;
	}
	if ((child = fork()) == -1) {
		util_xasprintf(cause, "fork: %s", strerror(errno));
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (child == 0) {
		close(p[0]);
		snprintf(ns, sizeof(ns), "/proc/%d/ns/net", (int)pid);
		if ((fd = open(ns, O_RDONLY | O_CLOEXEC)) == -1 ||
		    setns(fd, CLONE_NEWNET) == -1)
			snprintf(why, sizeof(why), "cannot enter %s: %s", ns,
			    strerror(errno));
		else if (netseal_check_here(proxy, why, sizeof(why)) == 0)
			_exit(0);
		n = write(p[1], why, strlen(why));
		_exit(n > 0 ? 1 : 2);
	}
	close(p[1]);
	n = read(p[0], why, sizeof(why) - 1);
	close(p[0]);
	why[n > 0 ? n : 0] = '\0';
	while (waitpid(child, &status, 0) == -1 && errno == EINTR)
		;
	if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
		return 0;
	util_xasprintf(cause, "%s", why[0] ? why : "the check did not finish");
	return -1;
}
