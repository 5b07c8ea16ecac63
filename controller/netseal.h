/*
 * netseal.h: the firewall of a sandbox's own network namespace.
 *
 * Docker's internal network keeps a sandbox from every route out, but not
 * from its neighbours on sandgate-internal nor from Docker's embedded
 * resolver at 127.0.0.11, which answers container names. Before anything
 * of the agent's runs, the controller loads into the container's network
 * namespace (as root on the host; the sandbox has no CAP_NET_ADMIN to undo
 * it) a filter that lets the sandbox talk to the proxy's port and to its
 * own loopback, and to nothing else:
 *
 *   out: 127.0.0.11 refused (before lo is allowed), lo allowed, the
 *        proxy's address and port allowed, everything else refused with
 *        "administratively prohibited" (the agent sees EHOSTUNREACH, or
 *        EPERM for UDP, at once instead of a timeout);
 *   in:  lo allowed, the proxy's answers allowed, everything else dropped;
 *   IPv6: lo only.
 *
 * The probe then checks from the inside that the seal is in force (a
 * neighbour's port and Docker's resolver both refused), so a failure to
 * load it fails the create closed.
 */
#ifndef SG_NETSEAL_H
#define SG_NETSEAL_H

#include <stddef.h>
#include <sys/types.h>

#define NETSEAL_RULES_MAX	2048

/*
 * The iptables-restore input for family 4 (proxy is "A.B.C.D:PORT") or 6
 * (proxy ignored) into buf. 0, or -1 when proxy is not an IPv4 address
 * and port.
 */
int	netseal_rules(int family, const char *proxy, char *buf, size_t len);

/*
 * The text of iptables-save (or netseal_rules) with what differs between
 * two saves of the same rules taken out: comment lines, blank lines and
 * the counters of chain lines. Into out; 0, or -1 when it does not fit.
 */
int	netseal_normal(const char *in, char *out, size_t len);

/* Load both into the network namespace of pid. 0, or -1 with *cause. */
int	netseal_apply(pid_t pid, const char *proxy, char **cause);

/*
 * "IP:PORT" of the proxy's address on a port the seal refuses (1, or 2
 * when the proxy uses 1), for the probe's check that a neighbour is out
 * of reach: without the seal that port answers with a reset instead.
 * 0, or -1 as netseal_rules.
 */
int	netseal_probe_target(const char *proxy, char *buf, size_t len);

/*
 * Confirm, from the host and in a few milliseconds, that the seal of
 * pid's network namespace still holds before a command runs there: a
 * connection the seal refuses (netseal_probe_target) and a query to
 * Docker's resolver must be refused by the local firewall, the proxy's
 * port must answer, and the filter tables in force (iptables-save and
 * ip6tables-save in the namespace, netseal_normal) must be exactly the
 * seal's rules: a rule added for one more address, a rule removed or
 * changed is drift. 0, or -1 with *cause saying what drifted (a flushed
 * seal, a proxy gone, the first rule that differs). Needs root (setns).
 */
int	netseal_check(pid_t pid, const char *proxy, char **cause);

#endif
