/*
 * ocsf_admin.c: the control plane's events as OCSF events (ocsf.h,
 * docs/audit.md "OCSF export"): grants (Entity Management), control API
 * refusals (Authentication), the proxy's start (Application Lifecycle)
 * and a sandbox whose network seal no longer holds (Detection Finding).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ocsf.h"
#include "ocsf_int.h"
#include "util.h"

static const struct ocsf_class ocsf_authentication = {
	3002, "Authentication", 3, "Identity & Access Management" };
static const struct ocsf_class ocsf_lifecycle = {
	6002, "Application Lifecycle", 6, "Application Activity" };
static const struct ocsf_class ocsf_detection = {
	2004, "Detection Finding", 2, "Findings" };

/*
 * What each grant.* event is: Create (1) or Delete (4) of the grant,
 * its severity, and the words of its message. A grant widens what a
 * sandbox may reach: added by hand is Medium, restored at a start Low;
 * one that ends narrows it again, Informational.
 */
static const struct ocsf_grant_kind {
	const char	*event;
	int		 activity;
	int		 severity;
	const char	*what;
} ocsf_grant_kinds[] = {
	{ "grant.added", 1, 3, "added" },
	{ "grant.restored", 1, 2, "restored at the proxy's start" },
	{ "grant.revoked", 4, 1, "revoked" },
	{ "grant.expired", 4, 1, "expired" },
	{ "grant.ended", 4, 1, "ended by the policy" },
};

static const struct ocsf_grant_kind *ocsf_grant_kind(const char *);
static json_t	*ocsf_grant_entity(json_t *);
static json_t	*ocsf_grant_actor(json_t *, const char *);
static char	*ocsf_grant_message(json_t *, const struct ocsf_grant_kind *);
static json_t	*ocsf_refused_src(json_t *);

/* The row of a grant.* event; an unknown one is taken as ended. */
static const struct ocsf_grant_kind *
ocsf_grant_kind(const char *name)
{
	size_t	i, n = sizeof(ocsf_grant_kinds) / sizeof(ocsf_grant_kinds[0]);

	for (i = 0; i < n; i++)
		if (strcmp(name, ocsf_grant_kinds[i].event) == 0)
			return &ocsf_grant_kinds[i];
	return &ocsf_grant_kinds[n - 1];
}

/*
 * entity: the grant, {type: "Egress Grant", name: "HOST:PORT", uid:
 * "SANDBOX/HOST:PORT"} (the registry's key); NULL members are left out.
 */
static json_t *
ocsf_grant_entity(json_t *ev)
{
	const char	*host = ocsf_str(ev, "host"), *sbx = ocsf_str(ev,
			    "sandbox");
	json_t		*port = json_object_get(ev, "port"), *e;
	char		*name, pnum[24] = "";

	if (json_is_integer(port))
		snprintf(pnum, sizeof(pnum), ":%lld",
		    (long long)json_integer_value(port));
	util_xasprintf(&name, "%s%s", host ? host : "?", pnum);
	e = json_pack("{s:s, s:s}", "type", "Egress Grant", "name", name);
	if (e != NULL && sbx != NULL) {
		free(name);
		util_xasprintf(&name, "%s/%s%s", sbx, host ? host : "?", pnum);
		ocsf_set_str(e, "uid", name);
	}
	free(name);
	return e;
}

/* actor: the proxy, and the person who made the change (who). */
static json_t *
ocsf_grant_actor(json_t *ev, const char *who)
{
	json_t		*a = ocsf_actor("sandgate-proxy");
	const char	*name = who ? ocsf_str(ev, who) : NULL;

	if (a != NULL && name != NULL && name[0] != '\0')
		ocsf_set(a, "user", json_pack("{s:s}", "name", name));
	return a;
}

static char *
ocsf_grant_message(json_t *ev, const struct ocsf_grant_kind *k)
{
	const char	*sbx = ocsf_str(ev, "sandbox");
	const char	*exp = ocsf_str(ev, "expires");
	json_t		*e = ocsf_grant_entity(ev);
	const char	*what = ocsf_str(e, "name");
	char		*msg;

	util_xasprintf(&msg, "egress grant %s: sandbox %s %s %s%s%s",
	    k->what, sbx ? sbx : "?", k->activity == 1 ? "may reach" :
	    "may no longer reach", what ? what : "?", k->activity == 1 &&
	    exp ? " until " : "", k->activity == 1 && exp ? exp : "");
	json_decref(e);
	return msg;
}

/*
 * grant.*: Entity Management of the grant. Its rationale is the
 * comment; for a revoke the actor is who revoked it, for an end by the
 * policy the rule that ended it is the status detail.
 */
json_t *
ocsf_grant(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const struct ocsf_grant_kind	*k = ocsf_grant_kind(name);
	json_t				*o;
	char				*msg;

	if ((o = ocsf_new(ev, ctx, &ocsf_class_entity, k->activity,
	    k->activity == 1 ? "Create" : "Delete", k->severity,
	    NULL)) == NULL)
		return NULL;
	ocsf_set(o, "entity", ocsf_grant_entity(ev));
	ocsf_set(o, "actor", ocsf_grant_actor(ev, strcmp(name,
	    "grant.revoked") == 0 ? "revoked_by" : k->activity == 1 ? "by" :
	    NULL));
	ocsf_set_str(o, "comment", ocsf_str(ev, "rationale"));
	ocsf_status(o, 1, NULL, ocsf_str(ev, "rule"));
	msg = ocsf_grant_message(ev, k);
	ocsf_set_msg(o, msg);
	return o;
}

/* src_endpoint of a refused request: client, client_port; NULL. */
static json_t *
ocsf_refused_src(json_t *ev)
{
	json_t		*e = ocsf_ip_port(ocsf_str(ev, "client"), 0);
	json_t		*port = json_object_get(ev, "client_port");

	if (e != NULL && json_is_integer(port) &&
	    json_integer_value(port) >= 0 && json_integer_value(port) <= 65535)
		ocsf_set(e, "port", json_integer(json_integer_value(port)));
	return e;
}

/*
 * control.unauthorized (one refused request) and its _summary (count
 * refusals past the burst): Authentication, a failed Logon to the
 * control API, Medium. The subject is the API's one principal, the
 * holder of its bearer token, which the request did not prove to be.
 */
json_t *
ocsf_unauthorized(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const char	*path = ocsf_str(ev, "path"), *why = ocsf_str(ev,
			    "reason");
	long long	 n = ocsf_count(ev, "count");
	int		 summary = strstr(name, "_summary") != NULL;
	json_t		*o;
	char		*msg;

	if ((o = ocsf_new(ev, ctx, &ocsf_authentication, 1, "Logon", 3,
	    NULL)) == NULL)
		return NULL;
	ocsf_set(o, "user", json_pack("{s:s}", "name", "control-api"));
	ocsf_set(o, "service", json_pack("{s:s}", "name",
	    "sandgate control API"));
	ocsf_set(o, "src_endpoint", ocsf_refused_src(ev));
	if (path != NULL)
		ocsf_set(o, "http_request", json_pack("{s:{s:s}}", "url",
		    "path", path));
	ocsf_set(o, "is_remote", json_true());
	if (n >= 0)
		ocsf_set(o, "count", json_integer(n));
	ocsf_status(o, 2, NULL, why ? why : summary ?
	    "refusals past the burst, counted" : NULL);
	if (summary)
		util_xasprintf(&msg, "%lld more control API request(s) "
		    "refused: no valid bearer token", n);
	else
		util_xasprintf(&msg, "control API request from %s to %s "
		    "refused: %s", ocsf_str(ev, "client") ? ocsf_str(ev,
		    "client") : "?", path ? path : "?", why ? why : "?");
	ocsf_set_msg(o, msg);
	return o;
}

/* proxy.started: Application Lifecycle, Start of sandgate-proxy. */
json_t *
ocsf_started(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const char	*inst = ocsf_str(ev, "instance");
	const char	*digest = ocsf_str(ev, "policy_digest");
	json_t		*o;
	char		*msg;

	(void)name;
	if ((o = ocsf_new(ev, ctx, &ocsf_lifecycle, 3, "Start", 1,
	    NULL)) == NULL)
		return NULL;
	ocsf_set(o, "app", json_pack("{s:s, s:s}", "name", "sandgate-proxy",
	    "vendor_name", "sandgate"));
	ocsf_status(o, 1, NULL, NULL);
	util_xasprintf(&msg, "sandgate-proxy instance %s started with policy "
	    "%s", inst ? inst : "?", digest ? digest : "?");
	ocsf_set_msg(o, msg);
	return o;
}

/*
 * The controller's findings about a sandbox (controller/runrec.c's
 * runrec_event: sandbox, detail): Detection Finding, the line's hash the
 * finding's uid, the sandbox the affected resource. sandbox.seal_drift:
 * the network seal did not hold before a command (the command did not
 * run), High; sandbox.unregister_pending: a discard's unregister that a
 * proxy replica did not confirm (its tokens may still be accepted
 * there), Medium; sandbox.unregistered: that unregister confirmed at
 * last, the finding closed, Informational; sandbox.exec_end_pending: the
 * end of an exec's credential that a replica did not confirm (the run's
 * credential and token may still be accepted there, execend.h), Medium;
 * sandbox.exec_ended: that end confirmed at last, Informational.
 * registry.removed_floor_raised (the proxy's, no sandbox: detail): a
 * replica forgot removed sandboxes within their time and refuses older
 * tokens of every sandbox not registered there, Medium (atk15r17 F8).
 * registry.full (the proxy's, with the sandbox refused): a replica's
 * registry was full and a sandbox was not registered there, Medium
 * (atk36f F2).
 */
static const struct ocsf_finding {
	const char	*event;
	int		 activity;	/* 1 Create, 3 Close */
	int		 severity;
	const char	*title;		/* %s: the sandbox */
} ocsf_findings[] = {
	{ "sandbox.seal_drift", 1, 4, "the network seal of sandbox %s does "
	    "not hold; the command did not run" },
	{ "sandbox.unregister_pending", 1, 3, "the unregister of discarded "
	    "sandbox %s was not confirmed by every proxy replica; its tokens "
	    "may still be accepted there" },
	{ "sandbox.unregistered", 3, 1, "every proxy replica confirmed the "
	    "unregister of discarded sandbox %s" },
	{ "sandbox.exec_end_pending", 1, 3, "the end of an exec credential "
	    "of sandbox %s was not confirmed by every proxy replica; the run's "
	    "credential may still be accepted there" },
	{ "sandbox.exec_ended", 3, 1, "every proxy replica confirmed the end "
	    "of an exec credential of sandbox %s" },
	{ "registry.removed_floor_raised", 1, 3, "%.0sa proxy replica "
	    "forgot removed sandboxes past the most it keeps: it refuses the "
	    "older tokens of every sandbox not registered there" },
	{ "registry.full", 1, 3, "sandbox %s was not registered at a proxy "
	    "replica: its sandbox registry is full" },
};

json_t *
ocsf_sandbox_finding(json_t *ev, const struct ocsf_ctx *ctx,
    const char *name)
{
	const struct ocsf_finding	*f = &ocsf_findings[0];
	const char			*sbx = ocsf_str(ev, "sandbox");
	const char			*detail = ocsf_str(ev, "detail");
	json_t				*o, *fi;
	char				*title;
	size_t				 i;

	for (i = 0; i < sizeof(ocsf_findings) / sizeof(ocsf_findings[0]); i++)
		if (strcmp(name, ocsf_findings[i].event) == 0)
			f = &ocsf_findings[i];
	if ((o = ocsf_new(ev, ctx, &ocsf_detection, f->activity,
	    f->activity == 3 ? "Close" : "Create", f->severity,
	    NULL)) == NULL)
		return NULL;
	util_xasprintf(&title, f->title, sbx ? sbx : "?");
	fi = json_pack("{s:s, s:s}", "uid", ocsf_str(ev, "hash") ?
	    ocsf_str(ev, "hash") : f->event, "title", title);
	ocsf_set_str(fi, "desc", detail);
	ocsf_set(o, "finding_info", fi);
	if (sbx != NULL)
		ocsf_set(o, "resources", json_pack("[{s:s, s:s}]", "uid", sbx,
		    "type", "Sandbox"));
	if (f->severity >= 3)
		ocsf_set(o, "is_alert", json_true());
	ocsf_set_msg(o, title);
	return o;
}
