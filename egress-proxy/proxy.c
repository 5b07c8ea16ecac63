/*
 * proxy.c: process-wide services for connections: the policy in force
 * (reference-counted, so requests finish under the policy they started
 * with), per-client accounting, and security events.
 */
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <netinet/in.h>

#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "addr.h"
#include "eventlog.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "reason.h"
#include "registry.h"
#include "conn.h"
#include "control.h"
#include "util.h"

struct proxy	*proxy_g;

/* Open-addressed counts of connections per client address. */
#define COUNT_SLOTS	8192
struct client_count {
	unsigned char	key[17];	/* family byte + address */
	unsigned	n;
};

static size_t	proxy_count_key(const struct sockaddr *, unsigned char *);
static struct client_count *proxy_count_slot(struct proxy *,
		    const unsigned char *, int create);

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

/* Find (or claim) the slot of an address by linear probing. */
static struct client_count *
proxy_count_slot(struct proxy *px, const unsigned char *key, int create)
{
	unsigned	h = 2166136261u;
	size_t		i, j;

	for (i = 0; i < 17; i++)
		h = (h ^ key[i]) * 16777619u;
	for (i = 0; i < COUNT_SLOTS; i++) {
		j = (h + i) % COUNT_SLOTS;
		if (memcmp(px->counts[j].key, key, 17) == 0)
			return &px->counts[j];
		if (px->counts[j].key[0] == 0) {
			if (!create)
				return NULL;
			memcpy(px->counts[j].key, key, 17);
			px->counts[j].n = 0;
			return &px->counts[j];
		}
	}
	return NULL;
}

int
proxy_client_enter(struct proxy *px, const struct sockaddr *sa)
{
	unsigned char		 key[17];
	struct client_count	*cc;

	if (px->counts == NULL &&
	    (px->counts = calloc(COUNT_SLOTS, sizeof(*px->counts))) == NULL)
		return -1;
	proxy_count_key(sa, key);
	if ((cc = proxy_count_slot(px, key, 1)) == NULL)
		return -1;	/* table full: that many distinct clients */
	if (cc->n >= px->cfg.max_conns_per_client)
		return -1;
	cc->n++;
	return 0;
}

void
proxy_client_leave(struct proxy *px, const struct sockaddr *sa)
{
	unsigned char		 key[17];
	struct client_count	*cc;

	if (px->counts == NULL)
		return;
	proxy_count_key(sa, key);
	if ((cc = proxy_count_slot(px, key, 0)) != NULL && cc->n > 0)
		cc->n--;	/* slots stay claimed: probing needs them */
}

int
proxy_log_event(struct proxy *px, const struct proxy_event *pe)
{
	struct eventlog_sec	 sec;
	json_t			*fields;
	int			 rc = -1;

	memset(&sec, 0, sizeof(sec));
	sec.event = pe->event;
	sec.sandbox = pe->client ? pe->client->sandbox : NULL;
	sec.src = pe->src;
	sec.method = pe->method;
	sec.host = pe->host && *pe->host ? pe->host : NULL;
	sec.port = pe->port;
	sec.sni = pe->sni;
	sec.resolved = pe->resolved && *pe->resolved ? pe->resolved : NULL;
	sec.reason = pe->reason != SG_REASON_NONE ? reason_code(pe->reason) :
	    NULL;
	sec.message = pe->message;
	sec.policy_sets = pe->client ? pe->client->sets : NULL;
	sec.rule = pe->rule;
	sec.policy_digest = pe->policy_digest ? pe->policy_digest :
	    policy_digest(px->policy->policy);
	if ((fields = eventlog_security_fields(&sec)) == NULL)
		goto out;
	if (pe->bytes_up >= 0) {
		json_object_set_new(fields, "bytes_up",
		    json_integer(pe->bytes_up));
		json_object_set_new(fields, "bytes_down",
		    json_integer(pe->bytes_down));
		json_object_set_new(fields, "duration_ms",
		    json_integer(pe->duration_ms));
	}
	rc = eventlog_append(px->seclog, fields);
	json_decref(fields);
	if (rc == 0 && strcmp(pe->event, "egress.blocked") == 0)
		control_note_block(px, eventlog_seq(px->seclog), sec.sandbox,
		    sec.host, pe->port, sec.reason, pe->message);
out:
	if (rc == -1) {
		px->stats.log_failures++;
		log_warn("security-event log %s unavailable: %s",
		    eventlog_path(px->seclog), eventlog_error(px->seclog));
	}
	return rc;
}

int
proxy_log_healthy(struct proxy *px)
{
	/* Checked per request: a disk that just filled lets nothing pass. */
	proxy_log_check_space(px);
	return px->log_space_ok && eventlog_healthy(px->seclog);
}

void
proxy_log_check_space(struct proxy *px)
{
	struct statvfs	sv;
	int		ok;

	if (statvfs(px->cfg.log_dir, &sv) == -1)
		ok = 0;
	else
		ok = !(sv.f_flag & ST_RDONLY) &&
		    (unsigned long long)sv.f_bavail * sv.f_frsize >=
		    PROXY_LOG_SPACE_MIN;
	if (ok != px->log_space_ok)
		log_warnx("security-event log folder %s: %s", px->cfg.log_dir,
		    ok ? "writable again, egress resumes" :
		    "full or read-only, egress refused (fail closed)");
	px->log_space_ok = ok;
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
		json_array_append_new(errs, json_string(line));
	}
	if (p == NULL) {
		*errors = json_dumps(errs, JSON_COMPACT);
		fields = json_pack("{s:s, s:O, s:s}", "event",
		    "policy.rejected", "errors", errs, "policy_digest",
		    policy_digest(px->policy->policy));
		eventlog_append(px->seclog, fields);
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
	revoked = conn_revoke(px);
	log_info("policy reloaded: digest %s, %u tunnels revoked",
	    policy_digest(p), revoked);
	return 0;
}

