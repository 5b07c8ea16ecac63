/*
 * proxy.c: process-wide services for connections: the policy in force
 * (reference-counted, so requests finish under the policy they started
 * with), per-client accounting, and security events.
 */
#include <sys/prctl.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <netinet/in.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "addr.h"
#include "blocklog.h"
#include "eventlog.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "secret.h"
#include "tlsterm.h"
#include "reason.h"
#include "sglimits.h"
#include "registry.h"
#include "execcred.h"
#include "conn.h"
#include "control.h"
#include "util.h"
#include "siphash.h"

struct proxy	*proxy_g;

/*
 * Open-addressed places of client addresses (pointers: slots stay put):
 * twice --max-conns rounded up to a power of two, at least this many, so
 * that every connection the proxy admits has its place and probe runs
 * stay short (8,192 places, half of 16,384 connections, let 8,192
 * addresses with a connection each lock every other client out,
 * atk15r13 F3).
 */
#define COUNT_SLOTS_MIN	64

/*
 * The newest bytes of the kept log read line by line at start for the
 * clients' shares (proxy_log_blocks_seed); older ones count as nobody's.
 */
#define PROXY_SEED_SCAN		(256ULL << 20)
/* Whose kept lines were not read: no client has this identity. */
#define PROXY_SEED_NOBODY	"(kept before start)"

/* proxy.conn_refused: at most one line in this long (microseconds). */
#define PROXY_REFUSED_QUIET_US	1000000ULL

/* A policy.rejected line's errors, in bytes of JSON at most. */
#define PROXY_REJECTED_MAX	(SG_LOG_LINE_MAX - 4096)

static size_t	proxy_count_key(const struct sockaddr *, unsigned char *);
static size_t	proxy_count_home(const struct proxy *, const unsigned char *);
static size_t	proxy_count_cap(const struct proxy *);
static struct client_slot **proxy_count_slot(struct proxy *,
		    const unsigned char *);
static void	proxy_count_remove(struct proxy *, struct client_slot **);
static int	proxy_emit_summary(void *, const struct blocklog_event *);
static int	proxy_blocks_registered(void *, const char *);
static void	proxy_blocks_reclass(void *, const char *);
static void	proxy_refused_due(evutil_socket_t, short, void *);
static void	proxy_refused_say(struct proxy *);
static void	proxy_refused_count(struct proxy_refusals *,
		    enum proxy_refuse, const struct sockaddr *);
static json_t	*proxy_rejected_errors(json_t *);
/* Cut copies of the client-chosen fields of one log line. */
struct proxy_cuts {
	char	method[PROXY_LOG_FIELD_CUT + 4];
	char	sni[SG_HOST_MAX + 4];
};

static void	proxy_sec_fields(struct proxy *, struct eventlog_sec *,
		    const struct proxy_event *, struct proxy_cuts *);
static const char *proxy_cut(const char *, char *buf);
static void	proxy_log_warn(struct proxy *);
static int	proxy_log_space_due(const struct proxy *);
static void	proxy_log_blocks_seed(struct proxy *);
static int	proxy_log_seed_size(struct proxy *, unsigned, char *, size_t,
		    unsigned long long *);
static void	proxy_log_seed_file(struct proxy *, const char *, off_t);
static const char *proxy_log_line_ident(const char *, char *, size_t);
static int	proxy_log_line_kind(const char *);
static enum blocklog_line proxy_event_line(const char *, size_t);

int
proxy_log_started(struct proxy *px)
{
	json_t	*fields;
	int	 rc;

	fields = json_pack("{s:s, s:s, s:s, s:I, s:b}", "event",
	    "proxy.started", "instance", px->cfg.instance, "policy_digest",
	    policy_digest(px->policy->policy), "token_keys",
	    (json_int_t)px->cfg.ntoken_keys, "token_any_source",
	    px->cfg.token_any_source);
	rc = fields == NULL ? -1 : eventlog_append(px->seclog, fields);
	json_decref(fields);
	if (rc == -1)
		log_warnx("cannot write the proxy.started line: %s",
		    eventlog_error(px->seclog));
	return rc;
}

struct proxy_policy *
proxy_policy_ref(struct proxy *px)
{
	px->policy->refs++;
	return px->policy;
}

void
proxy_policy_unref(struct proxy_policy *pp)
{
	if (pp == NULL || --pp->refs > 0)
		return;
	policy_free(pp->policy);
	free(pp);
}

void
proxy_client_lookup(struct proxy *px, const struct sockaddr *sa,
    struct proxy_client *out)
{
	if (registry_lookup(px->registry, sa, out) == 0)
		return;
	proxy_client_default(px, out);
}

void
proxy_client_default(struct proxy *px, struct proxy_client *out)
{
	out->sandbox = NULL;
	out->sets = (const char *const *)px->default_sets;
	out->nsets = px->ndefault_sets;
	out->sets_text = px->cfg.sets;
	out->ref = NULL;
}

void
proxy_client_release(struct proxy_client *pc)
{
	registry_client_release(pc);
}

int
proxy_is_self(struct proxy *px, const struct sockaddr *sa, uint16_t port)
{
	size_t	i;

	if (!addr_set_contains(px->self, sa))
		return 0;
	for (i = 0; i < px->nports; i++)
		if (px->ports[i] == port)
			return 1;
	return 0;
}

static size_t
proxy_count_key(const struct sockaddr *sa, unsigned char *key)
{
	memset(key, 0, 17);
	key[0] = (unsigned char)sa->sa_family;
	if (sa->sa_family == AF_INET6)
		memcpy(key + 1, &((const struct sockaddr_in6 *)sa)->sin6_addr,
		    16);
	else if (sa->sa_family == AF_INET)
		memcpy(key + 1, &((const struct sockaddr_in *)sa)->sin_addr, 4);
	return 17;
}

/*
 * The place an address hashes to, under the process's key: with an
 * unkeyed hash (FNV-1a) clients choosing addresses (an IPv6 /64) could
 * make one probe run that every accept and close walks.
 */
static size_t
proxy_count_home(const struct proxy *px, const unsigned char *key)
{
	return (size_t)(sg_keyed_hash(key, 17) & (px->slots_cap - 1));
}

/* The places for cfg.max_conns connections (COUNT_SLOTS_MIN). */
static size_t
proxy_count_cap(const struct proxy *px)
{
	size_t	cap = COUNT_SLOTS_MIN;

	while (cap < 2 * (size_t)px->cfg.max_conns && cap < SIZE_MAX / 4)
		cap *= 2;
	return cap;
}

/*
 * The place of an address by linear probing: its slot, or the empty place
 * where it would go (NULL when the table is full).
 */
static struct client_slot **
proxy_count_slot(struct proxy *px, const unsigned char *key)
{
	size_t	h = proxy_count_home(px, key), i, j;

	for (i = 0; i < px->slots_cap; i++) {
		j = (h + i) & (px->slots_cap - 1);
		if (px->slots[j] == NULL ||
		    memcmp(px->slots[j]->key, key, 17) == 0)
			return &px->slots[j];
	}
	return NULL;
}

/*
 * Give a place back once its address has no connection (backward-shift
 * deletion: later entries of the probe run move up, so that lookups
 * still find them without tombstones).
 */
static void
proxy_count_remove(struct proxy *px, struct client_slot **pp)
{
	size_t	hole = (size_t)(pp - px->slots), j, home;

	px->slots[hole] = NULL;
	px->nslots--;
	for (j = (hole + 1) & (px->slots_cap - 1); px->slots[j] != NULL;
	    j = (j + 1) & (px->slots_cap - 1)) {
		home = proxy_count_home(px, px->slots[j]->key);
		/* Stays when its home lies cyclically in (hole, j]. */
		if ((hole < j && home > hole && home <= j) ||
		    (hole > j && (home > hole || home <= j)))
			continue;
		px->slots[hole] = px->slots[j];
		px->slots[j] = NULL;
		hole = j;
	}
}

struct client_slot *
proxy_client_enter(struct proxy *px, const struct sockaddr *sa,
    enum proxy_refuse *why)
{
	unsigned char		  key[17];
	struct client_slot	**pp, *cs;

	*why = PROXY_REFUSE_MEMORY;
	if (px->slots == NULL) {
		px->slots_cap = proxy_count_cap(px);
		if ((px->slots = calloc(px->slots_cap,
		    sizeof(*px->slots))) == NULL)
			return NULL;
	}
	proxy_count_key(sa, key);
	if ((pp = proxy_count_slot(px, key)) == NULL) {
		/* That many addresses at once: kept sockets' places too. */
		*why = PROXY_REFUSE_CLIENTS;
		return NULL;
	}
	if ((cs = *pp) == NULL) {
		if ((cs = calloc(1, sizeof(*cs))) == NULL)
			return NULL;
		memcpy(cs->key, key, 17);
		*pp = cs;
		px->nslots++;
	}
	if (cs->n >= px->cfg.max_conns_per_client) {
		*why = PROXY_REFUSE_CLIENT_CONNS;
		return NULL;
	}
	cs->n++;
	return cs;
}

struct client_slot *
proxy_client_slot(struct proxy *px, const struct sockaddr *sa)
{
	unsigned char		  key[17];
	struct client_slot	**pp;

	if (px->slots == NULL)
		return NULL;
	proxy_count_key(sa, key);
	return (pp = proxy_count_slot(px, key)) != NULL ? *pp : NULL;
}

static const char *const proxy_refuse_names[PROXY_REFUSE_MAX] = {
	"connections", "client_connections", "clients", "out_of_memory"
};

const char *
proxy_refuse_name(enum proxy_refuse why)
{
	return (unsigned)why < PROXY_REFUSE_MAX ? proxy_refuse_names[why] :
	    "unknown";
}

/*
 * A connection from sa refused for want of capacity (why): counted in
 * /metrics, and said on stderr and in the security-event log
 * (proxy.conn_refused) however fast clients come: at once when no such
 * line was written in the last second, else by a timer when that second
 * is over (or at exit, proxy_refused_flush), in one line with every
 * refusal since, per reason. So a refusal is never silent (8,192
 * addresses locked every other client out unseen, atk15r13 F3), and the
 * lines' counts add up to /metrics' (the refusals of the second after a
 * line were counted for a next line that no timer wrote: 51 refused, 1
 * said, atk15r14 F2).
 */
void
proxy_refused(struct proxy *px, enum proxy_refuse why,
    const struct sockaddr *sa)
{
	struct proxy_refusals	*r = &px->refused;
	uint64_t		 now = util_now_us(), wait;
	struct timeval		 tv;

	px->stats.conns_refused[why]++;
	r->n[why]++;
	r->why = why;
	proxy_refused_count(r, why, sa);
	if (r->last_us == 0 || now - r->last_us >= PROXY_REFUSED_QUIET_US) {
		proxy_refused_say(px);
		return;
	}
	/* No timer: said by the next refusal after the second, or at exit. */
	if (r->timer == NULL && (r->timer = evtimer_new(px->base,
	    proxy_refused_due, px)) == NULL)
		return;
	if (evtimer_pending(r->timer, NULL))
		return;
	wait = r->last_us + PROXY_REFUSED_QUIET_US - now;
	tv.tv_sec = (time_t)(wait / 1000000);
	tv.tv_usec = (suseconds_t)(wait % 1000000);
	evtimer_add(r->timer, &tv);
}

/* The second after a proxy.conn_refused line is over. */
static void
proxy_refused_due(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	proxy_refused_say(arg);
}

void
proxy_refused_flush(struct proxy *px)
{
	proxy_refused_say(px);
	if (px->refused.timer != NULL)
		event_free(px->refused.timer);
	px->refused.timer = NULL;
}

/*
 * The refusals counted since the last line, if any, in one: reason and
 * src of the last of them, refused (all of them), and reasons: for each
 * reason its refusals and the source of its last.
 */
/* One more refusal of sa for why: its address's count, or the others'. */
static void
proxy_refused_count(struct proxy_refusals *r, enum proxy_refuse why,
    const struct sockaddr *sa)
{
	struct proxy_refused_src	*s = r->src[why];
	char				 a[INET6_ADDRSTRLEN];
	size_t				 i;

	addr_to_string(sa, a, sizeof(a));
	for (i = 0; i < PROXY_REFUSED_SRCS; i++) {
		if (s[i].n == 0)
			snprintf(s[i].addr, sizeof(s[i].addr), "%s", a);
		if (strcmp(s[i].addr, a) == 0) {
			s[i].n++;
			return;
		}
	}
	r->others[why]++;
}

/*
 * The reason's refusals per address ({"addr": n, ...}, with "others"
 * past PROXY_REFUSED_SRCS) into o, and the address refused most.
 */
static const char *
proxy_refused_srcs(const struct proxy_refusals *r, size_t why, json_t *o)
{
	const struct proxy_refused_src	*s = r->src[why];
	json_t				*by = json_object();
	size_t				 i, most = 0;

	for (i = 0; i < PROXY_REFUSED_SRCS && s[i].n > 0; i++) {
		json_object_set_new(by, s[i].addr, json_integer(
		    (json_int_t)s[i].n));
		if (s[i].n > s[most].n)
			most = i;
	}
	json_object_set_new(o, "srcs", by);
	if (r->others[why] > 0)
		json_object_set_new(o, "others", json_integer(
		    (json_int_t)r->others[why]));
	json_object_set_new(o, "src", json_string(s[most].addr));
	return s[most].addr;
}

/*
 * The line of the refusals since the last one written; when it cannot
 * be written they stay owed to the next (atk15r15 F3: a log outage lost
 * them for good), as block summaries do.
 */
static void
proxy_refused_say(struct proxy *px)
{
	struct proxy_refusals	*r = &px->refused;
	unsigned long long	 total = 0;
	json_t			*fields, *reasons = json_object(), *o;
	const char		*src = "", *s;
	char			 each[PROXY_REFUSE_MAX * 48] = "";
	size_t			 i, off = 0;

	for (i = 0; i < PROXY_REFUSE_MAX; i++) {
		if (r->n[i] == 0)
			continue;
		total += r->n[i];
		o = json_pack("{s:I}", "refused", (json_int_t)r->n[i]);
		if ((s = proxy_refused_srcs(r, i, o)) != NULL && i == r->why)
			src = s;
		json_object_set_new(reasons, proxy_refuse_name(i), o);
		off += (size_t)snprintf(each + off, sizeof(each) - off,
		    "%s%s %llu", off ? ", " : "", proxy_refuse_name(i),
		    r->n[i]);
	}
	if (total == 0) {
		json_decref(reasons);
		return;
	}
	log_warnx("connection from %s refused: %s (--max-conns %u, "
	    "--max-conns-per-client %u); %llu refused since the last such "
	    "line (%s)", src, proxy_refuse_name(r->why),
	    px->cfg.max_conns, px->cfg.max_conns_per_client, total, each);
	fields = json_pack("{s:s, s:s, s:s, s:I, s:o, s:I, s:I}", "event",
	    "proxy.conn_refused", "reason", proxy_refuse_name(r->why), "src",
	    src, "refused", (json_int_t)total, "reasons", reasons,
	    "max_conns", (json_int_t)px->cfg.max_conns,
	    "max_conns_per_client", (json_int_t)px->cfg.max_conns_per_client);
	r->last_us = util_now_us();
	if (fields == NULL || eventlog_append(px->seclog, fields) == -1) {
		proxy_log_warn(px);
		json_decref(fields);
		return;		/* owed: said with the next line written */
	}
	json_decref(fields);
	memset(r->n, 0, sizeof(r->n));
	memset(r->src, 0, sizeof(r->src));
	memset(r->others, 0, sizeof(r->others));
}

void
proxy_client_leave(struct proxy *px, struct client_slot *cs)
{
	struct client_slot	**pp;

	if (cs == NULL || (cs->n > 0 && --cs->n > 0))
		return;
	if ((pp = proxy_count_slot(px, cs->key)) != NULL && *pp == cs)
		proxy_count_remove(px, pp);
	if (cs->resume != NULL)
		event_free(cs->resume);
	free(cs);
}

char *
proxy_identity(const struct proxy_client *who, const char *src, char *buf,
    size_t size)
{
	const char	*colon;
	size_t		 n;

	if (who != NULL && who->sandbox != NULL) {
		snprintf(buf, size, "%s", who->sandbox);
		return buf;
	}
	src = src != NULL ? src : "-";
	colon = strrchr(src, ':');
	n = colon != NULL ? (size_t)(colon - src) : strlen(src);
	snprintf(buf, size, "addr:%.*s", (int)n, src);
	return buf;
}

/*
 * A client-chosen field (the method) as logged: its first
 * PROXY_LOG_FIELD_CUT bytes and "...", so that a line's size is not the
 * client's to choose. buf holds PROXY_LOG_FIELD_CUT + 4 bytes.
 */
static const char *
proxy_cut(const char *s, char *buf)
{
	if (s == NULL || strlen(s) <= PROXY_LOG_FIELD_CUT)
		return s;
	memcpy(buf, s, PROXY_LOG_FIELD_CUT);
	memcpy(buf + PROXY_LOG_FIELD_CUT, "...", 4);
	return buf;
}

/*
 * The fields of a security event as eventlog.c takes them, the
 * client-chosen ones cut into cuts: the method to PROXY_LOG_FIELD_CUT
 * bytes, the SNI escaped to printable ASCII and cut to a host name's
 * length (the message carries it the same way, reason_message). The host
 * is a normalized name, at most SG_HOST_MAX bytes.
 */
static void
proxy_sec_fields(struct proxy *px, struct eventlog_sec *sec,
    const struct proxy_event *pe, struct proxy_cuts *cuts)
{
	memset(sec, 0, sizeof(*sec));
	sec->event = pe->event;
	sec->sandbox = pe->client ? pe->client->sandbox : NULL;
	sec->run_id = pe->run_id;
	sec->src = pe->src;
	sec->method = proxy_cut(pe->method, cuts->method);
	sec->host = pe->host && *pe->host ? pe->host : NULL;
	sec->port = pe->port;
	sec->sni = pe->sni != NULL ? util_escape(pe->sni, cuts->sni,
	    sizeof(cuts->sni)) : NULL;
	sec->resolved = pe->resolved && *pe->resolved ? pe->resolved : NULL;
	sec->reason = pe->reason != SG_REASON_NONE ? reason_code(pe->reason) :
	    NULL;
	sec->message = pe->message;
	sec->policy_sets = pe->client ? pe->client->sets : NULL;
	sec->rule = pe->rule;
	sec->policy_digest = pe->policy_digest ? pe->policy_digest :
	    policy_digest(px->policy->policy);
}

int
proxy_log_event(struct proxy *px, const struct proxy_event *pe)
{
	struct eventlog_sec	 sec;
	json_t			*fields;
	char			 ident[PROXY_IDENT_MAX];
	char			 path[PROXY_LOG_PATH_CUT];
	struct proxy_cuts	 cuts;
	unsigned long long	 w0;
	int			 rc = -1;

	proxy_sec_fields(px, &sec, pe, &cuts);
	if ((fields = eventlog_security_fields(&sec)) == NULL)
		goto out;
	/* A terminated request's path (escaped, cut) and status. */
	if (pe->path != NULL)
		json_object_set_new(fields, "path", json_string(util_escape(
		    pe->path, path, sizeof(path))));
	if (pe->status > 0)
		json_object_set_new(fields, "status", json_integer(pe->status));
	if (pe->bytes_up >= 0) {
		json_object_set_new(fields, "bytes_up",
		    json_integer(pe->bytes_up));
		json_object_set_new(fields, "bytes_down",
		    json_integer(pe->bytes_down));
		json_object_set_new(fields, "duration_ms",
		    json_integer(pe->duration_ms));
	}
	w0 = eventlog_written(px->seclog);
	rc = eventlog_append(px->seclog, fields);
	json_decref(fields);
	if (rc == 0 && (pe->client != NULL || pe->src != NULL) &&
	    px->blocks != NULL)
		blocklog_wrote(px->blocks, proxy_identity(pe->client, pe->src,
		    ident, sizeof(ident)), eventlog_written(px->seclog) - w0,
		    util_now_us(), proxy_event_line(pe->event,
		    strlen(pe->event)));
out:
	if (rc == -1)
		proxy_log_warn(px);
	return rc;
}

/*
 * A write failed: counted, and said on stderr at most once a second
 * (with how many failed meanwhile), however fast clients cause them.
 */
static void
proxy_log_warn(struct proxy *px)
{
	static uint64_t			last_us;
	static unsigned long long	quiet;
	uint64_t			now = util_now_us();

	px->stats.log_failures++;
	if (last_us != 0 && now - last_us < 1000000) {
		quiet++;
		return;
	}
	log_warnx("security-event log %s unavailable: %s (%llu more failed "
	    "writes in the last second)", eventlog_path(px->seclog),
	    eventlog_error(px->seclog), quiet);
	last_us = now;
	quiet = 0;
}

int
proxy_log_block(struct proxy *px, const struct proxy_event *pe)
{
	struct blocklog_event	 be;
	struct timespec		 now;
	char			 ident[PROXY_IDENT_MAX];
	char			 method[PROXY_LOG_FIELD_CUT + 4];
	int			 full = 1, report;

	report = strcmp(pe->event, "egress.would_block") == 0;
	if (!report && pe->reason != SG_REASON_NONE) {
		px->block_serial++;
		control_note_block(px, px->block_serial, pe->client ?
		    pe->client->sandbox : NULL, pe->run_id, pe->host,
		    pe->port, reason_code(pe->reason), pe->message);
	}
	/* A flood fills the folder between ticks: look often meanwhile. */
	if (proxy_log_space_due(px))
		proxy_log_check_space(px);
	if (px->blocks != NULL) {
		memset(&be, 0, sizeof(be));
		be.identity = proxy_identity(pe->client, pe->src, ident,
		    sizeof(ident));
		be.sandbox = pe->client ? pe->client->sandbox : NULL;
		be.src = pe->src;
		be.method = proxy_cut(pe->method, method);
		be.host = pe->host && *pe->host ? pe->host : NULL;
		be.port = pe->port;
		be.reason = pe->reason;
		be.report = report;
		be.message = pe->message;
		be.sets = pe->client ? pe->client->sets : NULL;
		be.rule = pe->rule;
		be.policy_digest = pe->policy_digest;
		be.bytes_up = pe->bytes_up > 0 ? (unsigned long long)
		    pe->bytes_up : 0;
		be.bytes_down = pe->bytes_down > 0 ? (unsigned long long)
		    pe->bytes_down : 0;
		clock_gettime(CLOCK_REALTIME, &now);
		full = blocklog_note(px->blocks, &be, util_now_us(), &now);
	}
	if (!full || proxy_log_event(px, pe) == 0)
		return 0;
	/* Not written: counted into a summary, written once it can be. */
	if (px->blocks != NULL)
		blocklog_unwritten(px->blocks, &be, &now);
	return -1;
}

/* The summary of attempts counted for one key (blocklog.h): its bytes. */
static int
proxy_emit_summary(void *arg, const struct blocklog_event *be)
{
	struct proxy		*px = arg;
	struct eventlog_sec	 sec;
	json_t			*fields;
	char			 first[UTIL_TS_LEN], last[UTIL_TS_LEN];
	unsigned long long	 w0;
	int			 rc;

	memset(&sec, 0, sizeof(sec));
	sec.event = be->report ? "egress.would_block_summary" :
	    be->reason == SG_REASON_NONE ? "egress.allowed_summary" :
	    "egress.blocked_summary";
	sec.sandbox = be->sandbox;
	sec.src = be->src;
	sec.method = be->method;
	sec.host = be->host;
	sec.port = be->port;
	sec.reason = be->reason != SG_REASON_NONE ? reason_code(be->reason) :
	    NULL;
	sec.message = be->message;
	sec.policy_sets = be->sets;
	sec.rule = be->rule;
	sec.policy_digest = be->policy_digest ? be->policy_digest :
	    policy_digest(px->policy->policy);
	if ((fields = eventlog_security_fields(&sec)) == NULL)
		return -1;
	util_rfc3339(&be->first, first);
	util_rfc3339(&be->last, last);
	json_object_set_new(fields, "count", json_integer((json_int_t)
	    be->count));
	json_object_set_new(fields, "first", json_string(first));
	json_object_set_new(fields, "last", json_string(last));
	/* Any client's attempts past the key table: none is named. */
	if (be->overflow)
		json_object_set_new(fields, "overflow", json_true());
	if (be->host == NULL) {
		json_object_set_new(fields, "destinations", json_integer(
		    (json_int_t)be->dests));
		if (be->dests_more)
			json_object_set_new(fields, "destinations_more",
			    json_true());
	}
	/* What the counted connections moved (an allowed one's, or a
	 * stopped client's that were let through before it was). */
	if ((be->reason == SG_REASON_NONE && !be->report) ||
	    be->bytes_up + be->bytes_down > 0) {
		json_object_set_new(fields, "bytes_up", json_integer(
		    (json_int_t)be->bytes_up));
		json_object_set_new(fields, "bytes_down", json_integer(
		    (json_int_t)be->bytes_down));
	}
	/* Large transfers past their own lines (BLOCKLOG_LARGE_BURST). */
	if (be->large > 0) {
		json_object_set_new(fields, "large", json_integer(
		    (json_int_t)be->large));
		json_object_set_new(fields, "largest", json_integer(
		    (json_int_t)be->largest));
	}
	w0 = eventlog_written(px->seclog);
	rc = eventlog_append_told(px->seclog, fields, be->told);
	json_decref(fields);
	if (rc == -1) {
		proxy_log_warn(px);
		return -1;
	}
	/* A summary line is a few hundred bytes: an int holds it. */
	return (int)(eventlog_written(px->seclog) - w0);
}

int
proxy_log_blocks_init(struct proxy *px)
{
	struct blocklog_opts	o;

	o.burst = px->cfg.block_burst;
	o.budget = px->cfg.block_budget;
	o.window_s = px->cfg.block_window_s;
	/* What rotation keeps: each client's share is an eighth of it. */
	o.capacity = px->cfg.log_max_size * (px->cfg.log_keep + 1ULL);
	px->blocks = blocklog_new(&o, proxy_emit_summary, px);
	if (px->blocks == NULL)
		return -1;
	blocklog_set_registered(px->blocks, proxy_blocks_registered, px);
	proxy_log_blocks_seed(px);
	return 0;
}

/*
 * 1 when a block-log identity (proxy_identity) is a registered sandbox:
 * one the registry holds, or one with an exec running here whose token
 * a client may present (POST /execs; a token of a sandbox unregistered
 * since is refused, token_sandbox_gone). Both are bounded by what the
 * controller registered.
 */
static int
proxy_blocks_registered(void *arg, const char *identity)
{
	struct proxy	*px = arg;

	return registry_has_sandbox(px->registry, identity) ||
	    (px->execs != NULL && execcred_running(px->execs, identity,
	    NULL));
}

/*
 * The registry or the execs changed: the sandboxes registered or
 * unregistered since (registry_changed, execcred_changed), and only
 * those, move between the block log's parts. Re-checking every
 * registered identity against the registry stalled the loop ~0.2 s per
 * /register, /execs and /execs/end at 4,000 sandboxes (atk15r14 F1).
 */
void
proxy_log_blocks_registry(struct proxy *px)
{
	if (px->registry != NULL)
		registry_changed(px->registry, proxy_blocks_reclass, px);
	if (px->execs != NULL)
		execcred_changed(px->execs, proxy_blocks_reclass, px);
}

/* sandbox into the part the registry and the execs say now. */
static void
proxy_blocks_reclass(void *arg, const char *sandbox)
{
	struct proxy	*px = arg;

	if (px->blocks != NULL)
		blocklog_reclass(px->blocks, sandbox);
}

/*
 * Each client's share of the kept log starts from the kept files, not
 * from nothing: after a restart a flooder would else be "alone in the
 * log" and rotate away the history of clients that have not written
 * since. The files are replayed oldest first (blocklog_wrote, as when
 * they were written); of all but their newest PROXY_SEED_SCAN bytes
 * only the size is counted, as lines of nobody's (still others' lines).
 */
static void
proxy_log_blocks_seed(struct proxy *px)
{
	char			 path[PATH_MAX];
	unsigned long long	 rest = 0, size, skip;
	unsigned		 n, i;

	if (px->cfg.log_max_size == 0)
		return;		/* never rotated: no share */
	for (n = 0; n <= px->cfg.log_keep &&
	    proxy_log_seed_size(px, n, path, sizeof(path), &size) == 0; n++)
		rest += size;
	for (i = n; i-- > 0; ) {
		if (proxy_log_seed_size(px, i, path, sizeof(path), &size) == -1)
			continue;	/* rotated meanwhile: none is, at start */
		skip = rest > PROXY_SEED_SCAN ? rest - PROXY_SEED_SCAN : 0;
		proxy_log_seed_file(px, path, skip < size ? skip : size);
		rest -= size < rest ? size : rest;
	}
}

/* Kept file n (0: the file written to, else its rotation n): 0 or -1. */
static int
proxy_log_seed_size(struct proxy *px, unsigned n, char *path, size_t len,
    unsigned long long *size)
{
	struct stat	st;

	if (n == 0)
		snprintf(path, len, "%s", eventlog_path(px->seclog));
	else
		snprintf(path, len, "%s.%u", eventlog_path(px->seclog), n);
	if (lstat(path, &st) == -1 || !S_ISREG(st.st_mode))
		return -1;
	*size = (unsigned long long)st.st_size;
	return 0;
}

/*
 * Replay one kept file into the shares: its first skip bytes as
 * nobody's lines (PROXY_SEED_NOBODY), then each line as its client's.
 */
static void
proxy_log_seed_file(struct proxy *px, const char *path, off_t skip)
{
	struct stat	 st;
	FILE		*f;
	char		*line = NULL, ident[PROXY_IDENT_MAX];
	size_t		 cap = 0;
	ssize_t		 len;
	int		 fd, kind;

	if ((fd = eventlog_open_file(path, O_RDONLY, &st)) == -1)
		return;
	if ((f = fdopen(fd, "r")) == NULL) {
		close(fd);
		return;
	}
	if (skip > 0 && fseeko(f, skip, SEEK_SET) == 0) {
		len = getline(&line, &cap, f);	/* the rest of a cut line */
		blocklog_wrote(px->blocks, PROXY_SEED_NOBODY, (size_t)skip +
		    (len > 0 ? (size_t)len : 0), 0, BLOCKLOG_LINE_SUMMARY);
	}
	while ((len = getline(&line, &cap, f)) > 0)
		if ((kind = proxy_log_line_kind(line)) != -1 &&
		    proxy_log_line_ident(line, ident, sizeof(ident)) != NULL)
			blocklog_wrote(px->blocks, ident, (size_t)len, 0,
			    (enum blocklog_line)kind);
	free(line);
	fclose(f);
}

/*
 * What a kept line was when written (proxy_event_line), so the replay
 * charges it as the running proxy did: a summary to its client's share,
 * not its floor; an allowed line to the pool, not the floor. -1 for a
 * line the running proxy charges to nobody: any but an egress.* event
 * (grant.* from the control socket: replayed as the sandbox's own
 * lines, two of them spent its floor after a restart, atk15r12 F6).
 */
static int
proxy_log_line_kind(const char *line)
{
	const char	*v, *end;

	if ((v = strstr(line, "\"event\":\"")) == NULL)
		return -1;
	v += strlen("\"event\":\"");
	if ((end = strchr(v, '"')) == NULL ||
	    strncmp(v, "egress.", strlen("egress.")) != 0)
		return -1;
	return proxy_event_line(v, (size_t)(end - v));
}

/*
 * The kind of line (blocklog_wrote) an event of name (len bytes) is: a
 * block or would-be block spends its client's floor; a summary counts in
 * its share only; any other (allowed, revoked) goes to the pool, so
 * allowed lines never spend the floor that keeps a quiet sandbox's
 * blocks visible (atk15r12 F2).
 */
static enum blocklog_line
proxy_event_line(const char *name, size_t len)
{
	static const char *const	 blocks[] = { "egress.blocked",
					    "egress.would_block" };
	size_t				 i;

	if (len >= 8 && memcmp(name + len - 8, "_summary", 8) == 0)
		return BLOCKLOG_LINE_SUMMARY;
	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		if (strlen(blocks[i]) == len && memcmp(name, blocks[i],
		    len) == 0)
			return BLOCKLOG_LINE_BLOCK;
	return BLOCKLOG_LINE_OTHER;
}

/*
 * The identity (proxy_identity) a kept line was charged to: its sandbox,
 * else its client address; NULL for a line of no client. Lines are the
 * writer's compact JSON: a key's quotes are never escaped, a value's are.
 */
static const char *
proxy_log_line_ident(const char *line, char *buf, size_t size)
{
	const char	*v, *end;
	char		 src[PROXY_IDENT_MAX];

	if ((v = strstr(line, ",\"sandbox\":\"")) != NULL) {
		v += strlen(",\"sandbox\":\"");
		if ((end = strchr(v, '"')) == NULL)
			return NULL;
		snprintf(buf, size, "%.*s", (int)(end - v), v);
		return buf;
	}
	if ((v = strstr(line, ",\"src\":\"")) == NULL)
		return NULL;
	v += strlen(",\"src\":\"");
	if ((end = strchr(v, '"')) == NULL)
		return NULL;
	snprintf(src, sizeof(src), "%.*s", (int)(end - v), v);
	return proxy_identity(NULL, src, buf, size);
}

void
proxy_log_flush_blocks(struct proxy *px, int all)
{
	if (px->blocks != NULL)
		blocklog_flush(px->blocks, util_now_us(), all);
}

int
proxy_log_healthy(struct proxy *px, const struct proxy_client *who,
    const char *src)
{
	char	ident[PROXY_IDENT_MAX];

	/* Checked per request: a disk that just filled lets nothing pass. */
	proxy_log_check_space(px);
	if (!px->log_space_ok || !px->log_anchor_ok ||
	    !eventlog_healthy(px->seclog))
		return 0;
	return !(px->log_pressure && src != NULL && px->blocks != NULL &&
	    blocklog_stopped(px->blocks, proxy_identity(who, src, ident,
	    sizeof(ident))));
}

/*
 * 1 when the log folder is due a look (PROXY_SPACE_CHECK_US): 10 ms since
 * the last, or the lines written since then may have used all the room
 * that was left above the reserve (none under it: any line).
 */
static int
proxy_log_space_due(const struct proxy *px)
{
	unsigned long long	w;

	if (util_now_us() - px->space_checked_us >= PROXY_SPACE_CHECK_US)
		return 1;
	if (px->seclog == NULL)
		return 0;
	w = eventlog_written(px->seclog) - px->space_written;
	return w > 0 && w >= px->space_room;
}

void
proxy_log_check_space(struct proxy *px)
{
	struct statvfs		 sv;
	unsigned long long	 avail, reserve, room = 0;
	const char		*top;
	int			 ok, pressure = 0;

	px->space_checked_us = util_now_us();
	px->space_written = px->seclog != NULL ?
	    eventlog_written(px->seclog) : 0;
	px->space_room = 0;
	if (statvfs(px->cfg.log_dir, &sv) == -1)
		ok = 0;
	else {
		avail = (unsigned long long)sv.f_bavail * sv.f_frsize;
		reserve = (unsigned long long)sv.f_blocks * sv.f_frsize / 8;
		if (reserve < PROXY_LOG_RESERVE_MIN)
			reserve = PROXY_LOG_RESERVE_MIN;
		if (reserve > PROXY_LOG_RESERVE_MAX)
			reserve = PROXY_LOG_RESERVE_MAX;
		ok = !(sv.f_flag & ST_RDONLY) && avail >= PROXY_LOG_SPACE_MIN;
		/*
		 * Also under the floor: the client that wrote the volume
		 * full is stopped there too, and its blocks only counted,
		 * so that the last room is not its to use up either.
		 */
		pressure = !(sv.f_flag & ST_RDONLY) && avail < reserve;
		if (avail > PROXY_LOG_SPACE_MIN)
			room = avail - PROXY_LOG_SPACE_MIN;
		if (avail > reserve)
			px->space_room = avail - reserve;
	}
	if (ok != px->log_space_ok)
		log_warnx("security-event log folder %s: %s", px->cfg.log_dir,
		    ok ? "writable again, egress resumes" :
		    "full or read-only, egress refused (fail closed)");
	px->log_space_ok = ok;
	if (pressure && px->blocks != NULL &&
	    (top = blocklog_stop_top(px->blocks, room)) != NULL)
		log_warnx("security-event log folder %s is nearly full; %s "
		    "spent a quarter of its reserve and is stopped (its "
		    "egress refused) until there is room", px->cfg.log_dir,
		    top);
	if (!pressure && px->log_pressure && px->blocks != NULL) {
		blocklog_resume_all(px->blocks);
		log_warnx("security-event log folder %s has room again; "
		    "stopped clients resume", px->cfg.log_dir);
	}
	px->log_pressure = pressure;
}

/* Load and validate the policy; print every diagnostic. */
struct policy *
proxy_load_policy(const char *dir, struct policy_diags *diags)
{
	struct policy	*p;
	char		 line[2048];
	size_t		 i;
	uint64_t	 t0 = util_now_us();

	policy_diags_init(diags);
	p = policy_load_dir(dir, time(NULL), diags);
	if (p != NULL && proxy_g != NULL) {
		proxy_g->policy_load_us = util_now_us() - t0;
		proxy_g->policy_loaded = time(NULL);
	}
	for (i = 0; i < diags->n; i++) {
		policy_diag_format(&diags->v[i], line, sizeof(line));
		fprintf(stderr, "sandgate-proxy: %s\n", line);
	}
	return p;
}

/*
 * The errors of a policy.rejected line (errs, made log-safe): as many as
 * fit in PROXY_REJECTED_MAX bytes of JSON, then one that counts the rest
 * (stderr has them all), so the line stays under SG_LOG_LINE_MAX.
 */
static json_t *
proxy_rejected_errors(json_t *errs)
{
	json_t	*out, *s;
	char	*dump, more[96];
	size_t	 i, used = 0, len;

	if ((out = json_array()) == NULL)
		return NULL;
	for (i = 0; i < json_array_size(errs); i++) {
		s = json_incref(json_array_get(errs, i));
		dump = json_dumps(s, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
		len = dump != NULL ? strlen(dump) + 1 : SIZE_MAX;
		free(dump);
		if (len > PROXY_REJECTED_MAX - used) {
			json_decref(s);
			break;
		}
		used += len;
		json_array_append_new(out, s);
	}
	if (i < json_array_size(errs)) {
		snprintf(more, sizeof(more), "... and %zu more error(s), not "
		    "logged here (the line would pass 64 KiB)",
		    json_array_size(errs) - i);
		json_array_append_new(out, json_string(more));
	}
	return out;
}

/* Reload the policy: load, validate, then swap; keep the old on error. */
int
proxy_reload(struct proxy *px, char **errors)
{
	struct policy_diags	 diags;
	struct proxy_policy	*pp;
	struct policy		*p;
	json_t			*fields, *errs;
	char			 line[2048];
	size_t			 i;
	unsigned		 revoked;

	*errors = NULL;
	p = proxy_load_policy(px->cfg.policy_dir, &diags);
	errs = json_array();
	for (i = 0; i < diags.n; i++) {
		if (diags.v[i].severity != POLICY_ERROR)
			continue;
		policy_diag_format(&diags.v[i], line, sizeof(line));
		json_array_append_new(errs, eventlog_str(line));
	}
	if (p == NULL) {
		*errors = json_dumps(errs, JSON_COMPACT);
		fields = json_pack("{s:s, s:o?, s:s}", "event",
		    "policy.rejected", "errors", proxy_rejected_errors(errs),
		    "policy_digest", policy_digest(px->policy->policy));
		if (fields == NULL || eventlog_append(px->seclog, fields) == -1)
			log_warnx("policy.rejected not logged: %s", fields ==
			    NULL ? "out of memory" :
			    eventlog_error(px->seclog));
		json_decref(fields);
		json_decref(errs);
		policy_diags_release(&diags);
		log_warnx("policy reload rejected; the old policy stays in "
		    "force");
		return -1;
	}
	json_decref(errs);
	policy_diags_release(&diags);
	if ((pp = calloc(1, sizeof(*pp))) == NULL) {
		policy_free(p);
		*errors = util_xstrdup("[\"out of memory\"]");
		return -1;
	}
	pp->policy = p;
	pp->refs = 1;
	proxy_policy_unref(px->policy);
	px->policy = pp;
	fields = json_pack("{s:s, s:s}", "event", "policy.reloaded",
	    "policy_digest", policy_digest(p));
	eventlog_append(px->seclog, fields);
	json_decref(fields);
	if (px->term != NULL)
		tlsterm_flush(px->term);	/* the old policy's ca_files */
	if (px->secrets != NULL)
		(void)proxy_secrets_load(px);	/* kept as they were on error */
	control_grants_floor(px);
	revoked = conn_revoke(px);
	log_info("policy reloaded: digest %s, %u connections revoked",
	    policy_digest(p), revoked);
	return 0;
}


/*
 * (Re)load the credentials' values from --secrets-dir. The first time,
 * the process is made not dumpable: a core dump would hold them. Files
 * left out are said once each; -1 (said) when the folder cannot be read,
 * and the values held before stay.
 */
int
proxy_secrets_load(struct proxy *px)
{
	char	*warnings = NULL, *cause = NULL, *line, *next;
	int	 n;

	if (px->secrets == NULL) {
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
			log_warn("cannot make the proxy not dumpable");
		px->secrets = secret_store_new();
	}
	n = secret_store_load(px->secrets, px->cfg.secrets_dir, &warnings,
	    &cause);
	for (line = warnings; line != NULL && *line != '\0'; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		log_warnx("%s", line);
	}
	free(warnings);
	if (n == -1) {
		log_warnx("%s", cause);
		free(cause);
		return -1;
	}
	/* No idle upstream outlives the credential it was used with. */
	conn_upstreams_flush(px);
	log_info("%d secret(s) loaded from %s", n, px->cfg.secrets_dir);
	return 0;
}
