/*
 * dns.h: name resolution for the proxy, on the proxy's own event loop.
 *
 * A name is looked up in the --hosts map first; names not there go to
 * c-ares (the --resolver server, else the system's resolv.conf), driven
 * from libevent through ARES_OPT_SOCK_STATE_CB and ares_process_fd(), so
 * callbacks run on the loop thread. The proxy connects to exactly the
 * addresses handed to the callback (no second lookup).
 *
 * The name asked is exactly the name checked: it goes to c-ares as an
 * absolute name (with a trailing dot), so resolv.conf's search list and
 * ndots never turn "x.example" into "x.example.corp.internal".
 *
 * Every result, even one known at once (a hosts-map hit, a name c-ares
 * refuses without asking, out of memory), is delivered from the event
 * loop, never from inside dns_lookup(): the caller's state is settled
 * before its callback runs.
 */
#ifndef SG_DNS_H
#define SG_DNS_H

#include <sys/socket.h>

#include <stddef.h>

#include <event2/event.h>

#define DNS_ADDRS_MAX	16	/* addresses handed to a callback */

struct dns;
struct dns_req;

/*
 * Called once per lookup that was not cancelled: err is 0 with n >= 1
 * addresses (port 0), or non-zero with a static phrase in errstr
 * ("no such name", "timed out", ...) and n == 0. The request is freed
 * after the callback returns.
 */
typedef void	(*dns_cb)(void *arg, int err, const char *errstr,
		    const struct sockaddr_storage *addrs, size_t n);

/*
 * resolver: "IP:PORT" or "[IPv6]:PORT" or NULL (system). hosts: path of
 * an /etc/hosts-format map or NULL. timeout_ms: per-lookup budget.
 * Returns NULL with *cause (malloc'd) on failure.
 */
struct dns	*dns_new(struct event_base *, const char *resolver,
		    const char *hosts, unsigned timeout_ms, char **cause);
void		 dns_free(struct dns *);	/* NULL ok; pending lookups are
						   cancelled without callback */

/*
 * Look up a normalized name (no trailing dot). The callback runs later,
 * from the event loop, exactly once unless the request is cancelled.
 * Returns the request (for dns_cancel), or NULL when out of memory (then
 * no callback runs). The request belongs to the module: it is freed after
 * the callback returns, or by dns_cancel.
 */
struct dns_req	*dns_lookup(struct dns *, const char *name, dns_cb cb,
		    void *arg);
/*
 * The callback will not run (NULL ok). A lookup c-ares still works on is
 * freed when c-ares lets go of it; its late answer is dropped.
 */
void		 dns_cancel(struct dns_req *);

#endif
