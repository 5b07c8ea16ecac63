/* dns.c: c-ares resolution on the libevent loop; see dns.h. */
#include <arpa/inet.h>
#include <netinet/in.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ares.h>

#include "dns.h"
#include "hostsfile.h"
#include "log.h"
#include "sglimits.h"

/* One watched c-ares socket. */
struct dns_sock {
	struct dns_sock		*next;
	struct dns		*dns;
	ares_socket_t		 fd;
	struct event		*ev;
};

struct dns {
	struct event_base	*base;
	ares_channel		 channel;
	struct hostsfile	*hosts;
	struct dns_sock		*socks;
	struct event		*timer;
	struct dns_req		*reqs;		/* every live request */
};

/*
 * One lookup. It is on the dns's list until freed; in_ares while c-ares
 * still holds it (its dns_done has not run), pending while its result
 * waits on the loop for delivery.
 */
struct dns_req {
	struct dns_req		*next;
	struct dns_req		*prev;
	struct dns		*dns;
	dns_cb			 cb;
	void			*arg;
	struct event		*ev;		/* delivers the result */
	int			 cancelled;
	int			 in_ares;
	int			 err;
	const char		*errstr;
	size_t			 n;
	struct sockaddr_storage	 addrs[DNS_ADDRS_MAX];
};

static void	dns_sock_state(void *, ares_socket_t, int, int);
static void	dns_sock_event(evutil_socket_t, short, void *);
static void	dns_timer_event(evutil_socket_t, short, void *);
static void	dns_arm_timer(struct dns *);
static void	dns_done(void *, int, int, struct ares_addrinfo *);
static void	dns_deliver(evutil_socket_t, short, void *);
static void	dns_req_free(struct dns_req *);
static void	dns_req_fail(struct dns_req *, int, const char *);

/* c-ares tells us which sockets to watch; mirror that in libevent. */
static void
dns_sock_state(void *arg, ares_socket_t fd, int readable, int writable)
{
	struct dns	 *dns = arg;
	struct dns_sock	**pp, *s;
	short		  what = EV_PERSIST;

	for (pp = &dns->socks; *pp != NULL; pp = &(*pp)->next)
		if ((*pp)->fd == fd)
			break;
	s = *pp;
	if (!readable && !writable) {
		if (s != NULL) {
			*pp = s->next;
			event_free(s->ev);
			free(s);
		}
		return;
	}
	if (s == NULL) {
		if ((s = calloc(1, sizeof(*s))) == NULL) {
			log_warnx("dns: out of memory watching a socket");
			return;
		}
		s->dns = dns;
		s->fd = fd;
		s->next = dns->socks;
		dns->socks = s;
	} else {
		event_free(s->ev);
		s->ev = NULL;
	}
	if (readable)
		what |= EV_READ;
	if (writable)
		what |= EV_WRITE;
	s->ev = event_new(dns->base, fd, what, dns_sock_event, s);
	if (s->ev == NULL || event_add(s->ev, NULL) == -1)
		log_warnx("dns: cannot watch socket %d", (int)fd);
}

static void
dns_sock_event(evutil_socket_t fd, short what, void *arg)
{
	struct dns_sock	*s = arg;
	struct dns	*dns = s->dns;

	ares_process_fd(dns->channel,
	    (what & EV_READ) ? (ares_socket_t)fd : ARES_SOCKET_BAD,
	    (what & EV_WRITE) ? (ares_socket_t)fd : ARES_SOCKET_BAD);
	dns_arm_timer(dns);
}

static void
dns_timer_event(evutil_socket_t fd, short what, void *arg)
{
	struct dns	*dns = arg;

	ares_process_fd(dns->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
	dns_arm_timer(dns);
}

/* Re-arm the retransmit/timeout timer from what c-ares wants next. */
static void
dns_arm_timer(struct dns *dns)
{
	struct timeval	 max = { 1, 0 }, tv, *tvp;

	tvp = ares_timeout(dns->channel, &max, &tv);
	evtimer_add(dns->timer, tvp);
}

struct dns *
dns_new(struct event_base *base, const char *resolver, const char *hosts,
    unsigned timeout_ms, char **cause)
{
	struct ares_options	 opts;
	struct dns		*dns;
	int			 rc;

	*cause = NULL;
	if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS) {
		*cause = strdup(ares_strerror(rc));
		return NULL;
	}
	if ((dns = calloc(1, sizeof(*dns))) == NULL) {
		*cause = strdup("out of memory");
		return NULL;
	}
	dns->base = base;
	if (hosts != NULL && (dns->hosts = hostsfile_load(hosts, cause)) == NULL)
		goto fail;
	memset(&opts, 0, sizeof(opts));
	opts.sock_state_cb = dns_sock_state;
	opts.sock_state_cb_data = dns;
	opts.timeout = (int)(timeout_ms / 2 ? timeout_ms / 2 : 1);
	opts.tries = 2;
	opts.lookups = (char *)"b";	/* DNS only: never the host's files */
	/* Never a search list (names are also asked with a trailing dot). */
	opts.flags = ARES_FLAG_NOSEARCH;
	opts.ndots = 1;
	rc = ares_init_options(&dns->channel, &opts, ARES_OPT_SOCK_STATE_CB |
	    ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES | ARES_OPT_LOOKUPS |
	    ARES_OPT_FLAGS | ARES_OPT_NDOTS);
	if (rc != ARES_SUCCESS) {
		if (asprintf(cause, "c-ares: %s", ares_strerror(rc)) == -1)
			*cause = NULL;
		goto fail;
	}
	if (resolver != NULL &&
	    (rc = ares_set_servers_ports_csv(dns->channel, resolver)) !=
	    ARES_SUCCESS) {
		if (asprintf(cause, "invalid resolver \"%s\": %s", resolver,
		    ares_strerror(rc)) == -1)
			*cause = NULL;
		goto fail;
	}
	if ((dns->timer = evtimer_new(base, dns_timer_event, dns)) == NULL) {
		*cause = strdup("out of memory");
		goto fail;
	}
	return dns;
fail:
	dns_free(dns);
	return NULL;
}

void
dns_free(struct dns *dns)
{
	struct dns_sock	*s;

	if (dns == NULL)
		return;
	if (dns->channel != NULL)
		ares_destroy(dns->channel);	/* runs dns_done for each */
	while (dns->reqs != NULL)
		dns_req_free(dns->reqs);
	while ((s = dns->socks) != NULL) {
		dns->socks = s->next;
		event_free(s->ev);
		free(s);
	}
	if (dns->timer != NULL)
		event_free(dns->timer);
	hostsfile_free(dns->hosts);
	free(dns);
}

/* Unlink and free a request (its result is not delivered). */
static void
dns_req_free(struct dns_req *req)
{
	struct dns	*dns = req->dns;

	if (req->prev != NULL)
		req->prev->next = req->next;
	else
		dns->reqs = req->next;
	if (req->next != NULL)
		req->next->prev = req->prev;
	if (req->ev != NULL)
		event_free(req->ev);
	free(req);
}

/* Deliver an error from the loop. */
static void
dns_req_fail(struct dns_req *req, int err, const char *errstr)
{
	req->err = err;
	req->errstr = errstr;
	req->n = 0;
	event_active(req->ev, EV_TIMEOUT, 0);
}

/* The loop delivers a result: the callback, then the request is gone. */
static void
dns_deliver(evutil_socket_t fd, short what, void *arg)
{
	struct dns_req	*req = arg;
	dns_cb		 cb = req->cb;
	void		*cbarg = req->arg;
	struct sockaddr_storage addrs[DNS_ADDRS_MAX];
	const char	*errstr = req->errstr;
	size_t		 n = req->n;
	int		 err = req->err;

	memcpy(addrs, req->addrs, n * sizeof(addrs[0]));
	dns_req_free(req);
	cb(cbarg, err, errstr, n > 0 ? addrs : NULL, n);
}

/*
 * c-ares finished one lookup (possibly inside ares_getaddrinfo, or from
 * ares_destroy): keep the addresses and deliver them from the loop,
 * unless the request was cancelled meanwhile.
 */
static void
dns_done(void *arg, int status, int timeouts, struct ares_addrinfo *res)
{
	struct dns_req		*req = arg;
	struct ares_addrinfo_node *n;
	size_t			 na = 0;

	req->in_ares = 0;
	if (req->cancelled || status == ARES_EDESTRUCTION) {
		if (res != NULL)
			ares_freeaddrinfo(res);
		dns_req_free(req);
		return;
	}
	if (status == ARES_SUCCESS && res != NULL) {
		for (n = res->nodes; n != NULL && na < DNS_ADDRS_MAX;
		    n = n->ai_next) {
			if (n->ai_addrlen > sizeof(req->addrs[0]) ||
			    (n->ai_family != AF_INET &&
			    n->ai_family != AF_INET6))
				continue;
			memset(&req->addrs[na], 0, sizeof(req->addrs[na]));
			memcpy(&req->addrs[na], n->ai_addr, n->ai_addrlen);
			na++;
		}
	}
	if (res != NULL)
		ares_freeaddrinfo(res);
	if (status == ARES_SUCCESS && na == 0)
		dns_req_fail(req, ARES_ENODATA, "no address");
	else if (status != ARES_SUCCESS)
		dns_req_fail(req, status, status == ARES_ETIMEOUT ?
		    "timed out" : status == ARES_ENOTFOUND ? "no such name" :
		    ares_strerror(status));
	else {
		req->err = 0;
		req->errstr = NULL;
		req->n = na;
		event_active(req->ev, EV_TIMEOUT, 0);
	}
}

struct dns_req *
dns_lookup(struct dns *dns, const char *name, dns_cb cb, void *arg)
{
	struct ares_addrinfo_hints hints;
	struct dns_req		*req;
	char			 fqdn[SG_HOST_MAX + 2];

	if ((req = calloc(1, sizeof(*req))) == NULL)
		return NULL;
	if ((req->ev = event_new(dns->base, -1, 0, dns_deliver, req)) ==
	    NULL) {
		free(req);
		return NULL;
	}
	req->dns = dns;
	req->cb = cb;
	req->arg = arg;
	req->next = dns->reqs;
	if (dns->reqs != NULL)
		dns->reqs->prev = req;
	dns->reqs = req;
	if (dns->hosts != NULL && (req->n = hostsfile_lookup(dns->hosts,
	    name, req->addrs, DNS_ADDRS_MAX)) > 0) {
		event_active(req->ev, EV_TIMEOUT, 0);
		return req;
	}
	/* An absolute name: no search list, whatever resolv.conf says. */
	if ((size_t)snprintf(fqdn, sizeof(fqdn), "%s.", name) >=
	    sizeof(fqdn)) {
		dns_req_fail(req, ARES_EBADNAME, "name too long");
		return req;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	req->in_ares = 1;
	ares_getaddrinfo(dns->channel, fqdn, NULL, &hints, dns_done, req);
	dns_arm_timer(dns);
	return req;
}

void
dns_cancel(struct dns_req *req)
{
	if (req == NULL)
		return;
	req->cancelled = 1;
	/* c-ares still holds it: dns_done frees it when c-ares lets go. */
	if (!req->in_ares)
		dns_req_free(req);
}
