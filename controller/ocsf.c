/* ocsf.c: sandgate events as OCSF events; see ocsf.h and docs/audit.md. */
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ckverify.h"
#include "ocsf.h"
#include "ocsf_int.h"
#include "util.h"

static const struct ocsf_class ocsf_http = {
	4002, "HTTP Activity", 4, "Network Activity" };
static const struct ocsf_class ocsf_network = {
	4001, "Network Activity", 4, "Network Activity" };
static const struct ocsf_class ocsf_process = {
	1007, "Process Activity", 1, "System Activity" };
static const struct ocsf_class ocsf_eventlog = {
	1008, "Event Log Activity", 1, "System Activity" };
static const struct ocsf_class ocsf_base = {
	0, "Base Event", 0, "Uncategorized" };
const struct ocsf_class ocsf_class_entity = {
	3004, "Entity Management", 3, "Identity & Access Management" };

/* HTTP Activity's activity_id (the index) by method, and its caption. */
static const struct {
	const char	*method, *caption;
} ocsf_methods[] = {
	{ NULL, NULL }, { "CONNECT", "Connect" }, { "DELETE", "Delete" },
	{ "GET", "Get" }, { "HEAD", "Head" }, { "OPTIONS", "Options" },
	{ "POST", "Post" }, { "PUT", "Put" }, { "TRACE", "Trace" },
	{ "PATCH", "Patch" }
};

static const char *const ocsf_severities[] = {
	"Unknown", "Informational", "Low", "Medium", "High", "Critical", "Fatal"
};

/* Reasons that point at an agent trying to get around the policy. */
static const char *const ocsf_evasions[] = {
	"sni_mismatch", "sni_missing", "sni_invalid", "ech", "host_mismatch",
	"log_unavailable", NULL
};

/* What one egress event says about the outcome. */
struct ocsf_verdict {
	int		 action;	/* action_id */
	const char	*action_name;
	int		 disposition;	/* disposition_id */
	const char	*disposition_name;
	int		 status;	/* status_id */
	int		 severity;
};

static json_t	*ocsf_metadata(json_t *, const struct ocsf_ctx *,
		    const char *);
static json_t	*ocsf_traffic(json_t *);
static json_t	*ocsf_resume(json_t *, const struct ocsf_ctx *,
		    const char *);
static json_t	*ocsf_outage(json_t *, const struct ocsf_ctx *,
		    const char *);
static json_t	*ocsf_eventlog_other(json_t *, const struct ocsf_ctx *,
		    const char *, int, int, const char *, char *);
static long long ocsf_port(json_t *);
static json_t	*ocsf_src(json_t *);
static json_t	*ocsf_dst(json_t *);
static int	ocsf_method_id(const char *);
static void	ocsf_verdict(json_t *, const char *, struct ocsf_verdict *);
static json_t	*ocsf_http_request(json_t *, const char *);
static void	ocsf_egress_extra(json_t *, json_t *);
static json_t	*ocsf_egress(json_t *, const struct ocsf_ctx *, const char *);
static json_t	*ocsf_policy(json_t *, const struct ocsf_ctx *, const char *);
static json_t	*ocsf_run_process(json_t *);
static json_t	*ocsf_run(json_t *, const struct ocsf_ctx *,
		    const char *);
static void	ocsf_eventlog_common(json_t *, const struct ocsf_ctx *);
static json_t	*ocsf_checkpoint(json_t *, const struct ocsf_ctx *,
		    const char *);

/* A string member, or NULL. */
const char *
ocsf_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Set a member unless the value is NULL. */
void
ocsf_set(json_t *obj, const char *key, json_t *v)
{
	if (v != NULL)
		json_object_set_new(obj, key, v);
}

void
ocsf_set_str(json_t *obj, const char *key, const char *s)
{
	if (s != NULL)
		json_object_set_new(obj, key, json_string(s));
}

/* message: msg (freed); nothing when o is NULL. */
void
ocsf_set_msg(json_t *o, char *msg)
{
	ocsf_set_str(o, "message", msg);
	free(msg);
}

/* A ts as the log writes it, in milliseconds since the epoch; -1. */
long long
ocsf_ms(const char *ts)
{
	int64_t	us;

	if (ts == NULL || ckverify_parse_ts(ts, &us) == -1)
		return -1;
	return (long long)(us / 1000);
}

/* metadata: the product, the OCSF version, and the event's place. */
static json_t *
ocsf_metadata(json_t *ev, const struct ocsf_ctx *ctx, const char *profile)
{
	json_t	*m, *seq = json_object_get(ev, "seq");

	m = json_pack("{s:s, s:{s:s, s:s, s:s}, s:s}", "version",
	    OCSF_VERSION, "product", "name", "sandgate", "vendor_name",
	    "sandgate", "version", SANDGATE_VERSION, "log_provider",
	    "sandgate");
	if (m == NULL)
		return NULL;
	ocsf_set_str(m, "log_name", ctx->log_name);
	ocsf_set_str(m, "event_code", ocsf_str(ev, "event"));
	ocsf_set_str(m, "original_time", ocsf_str(ev, "ts"));
	ocsf_set_str(m, "uid", ocsf_str(ev, "hash"));
	if (json_is_integer(seq))
		ocsf_set(m, "sequence", json_integer(json_integer_value(seq)));
	if (profile != NULL)
		ocsf_set(m, "profiles", json_pack("[s]", profile));
	return m;
}

/*
 * The members every class has: classification, time, severity, metadata,
 * and the sandgate event itself in unmapped.sandgate.
 */
json_t *
ocsf_new(json_t *ev, const struct ocsf_ctx *ctx, const struct ocsf_class *c,
    int activity, const char *activity_name, int severity,
    const char *profile)
{
	json_t		*o;
	char		 type[128];
	long long	 ms = ocsf_ms(ocsf_str(ev, "ts"));

	snprintf(type, sizeof(type), "%s: %s", c->name, activity_name);
	o = json_pack("{s:i, s:s, s:i, s:s, s:i, s:s, s:I, s:s, s:i, s:s, "
	    "s:I}", "activity_id", activity, "activity_name", activity_name,
	    "category_uid", c->category, "category_name", c->category_name,
	    "class_uid", c->uid, "class_name", c->name, "type_uid",
	    (json_int_t)c->uid * 100 + activity, "type_name", type,
	    "severity_id", severity, "severity", ocsf_severities[severity],
	    "time", (json_int_t)(ms < 0 ? 0 : ms));
	if (o == NULL)
		return NULL;
	ocsf_set(o, "metadata", ocsf_metadata(ev, ctx, profile));
	ocsf_set(o, "unmapped", json_pack("{s:O}", "sandgate", ev));
	return o;
}

/* status_id with its caption, and the source's code and words. */
void
ocsf_status(json_t *o, int status, const char *code, const char *detail)
{
	static const char *const names[] = { "Unknown", "Success", "Failure" };

	ocsf_set(o, "status_id", json_integer(status));
	ocsf_set_str(o, "status", names[status]);
	ocsf_set_str(o, "status_code", code);
	ocsf_set_str(o, "status_detail", detail);
}

/*
 * An endpoint {ip[, port]} from "ADDR:PORT" (with_port: the proxy writes
 * src so, IPv6 without brackets, so the port is after the last colon) or
 * from a bare address; NULL when it is not an IP address. The address is
 * written back in its canonical form (at most 39 characters).
 */
json_t *
ocsf_ip_port(const char *s, int with_port)
{
	unsigned char	 buf[16];
	char		 ip[64], text[INET6_ADDRSTRLEN];
	const char	*colon, *errstr;
	long long	 port = -1;
	int		 af = AF_INET;

	if (s == NULL || strlen(s) >= sizeof(ip))
		return NULL;
	util_strlcpy(ip, s, sizeof(ip));
	if (with_port) {
		if ((colon = strrchr(s, ':')) == NULL ||
		    util_strtonum(colon + 1, 0, 65535, &port, &errstr) == -1)
			return NULL;
		ip[colon - s] = '\0';
	}
	if (inet_pton(AF_INET, ip, buf) != 1) {
		af = AF_INET6;
		if (inet_pton(AF_INET6, ip, buf) != 1)
			return NULL;
	}
	if (inet_ntop(af, buf, text, sizeof(text)) == NULL)
		return NULL;
	return port >= 0 ? json_pack("{s:s, s:I}", "ip", text, "port",
	    (json_int_t)port) : json_pack("{s:s}", "ip", text);
}

/* A port member in 0..65535, or -1. */
static long long
ocsf_port(json_t *ev)
{
	json_t	*port = json_object_get(ev, "port");

	if (!json_is_integer(port) || json_integer_value(port) < 0 ||
	    json_integer_value(port) > 65535)
		return -1;
	return (long long)json_integer_value(port);
}

/* A member that is a count (an integer >= 0), or -1. */
long long
ocsf_count(json_t *ev, const char *key)
{
	json_t	*v = json_object_get(ev, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	return (long long)json_integer_value(v);
}

/* src_endpoint: the client's address and port, the sandbox as its uid. */
static json_t *
ocsf_src(json_t *ev)
{
	json_t		*e;
	const char	*sbx = ocsf_str(ev, "sandbox");

	e = ocsf_ip_port(ocsf_str(ev, "src"), 1);
	if (e == NULL && sbx == NULL)
		return NULL;
	if (e == NULL)
		e = json_object();
	ocsf_set_str(e, "uid", sbx);
	return e;
}

/* dst_endpoint: the host as requested, its port, the address checked. */
static json_t *
ocsf_dst(json_t *ev)
{
	json_t		*e, *ip;
	const char	*host = ocsf_str(ev, "host");
	long long	 port = ocsf_port(ev);

	ip = ocsf_ip_port(ocsf_str(ev, "resolved"), 0);
	if (host == NULL && ip == NULL)
		return NULL;
	e = json_object();
	ocsf_set_str(e, "hostname", host);
	if (ip != NULL)
		json_object_set(e, "ip", json_object_get(ip, "ip"));
	json_decref(ip);
	if (port >= 0)
		ocsf_set(e, "port", json_integer(port));
	return e;
}

/* HTTP Activity's activity_id for a method: 1-9, or 99 (Other). */
static int
ocsf_method_id(const char *method)
{
	size_t	i;

	for (i = 1; i < sizeof(ocsf_methods) / sizeof(ocsf_methods[0]); i++)
		if (strcmp(method, ocsf_methods[i].method) == 0)
			return (int)i;
	return 99;
}

/* Action, disposition, status and severity of an egress event. */
static void
ocsf_verdict(json_t *ev, const char *name, struct ocsf_verdict *v)
{
	const char	*reason = ocsf_str(ev, "reason");
	size_t		 i;

	memset(v, 0, sizeof(*v));
	v->action_name = v->disposition_name = "Unknown";
	if (strcmp(name, "egress.allowed") == 0 ||
	    strcmp(name, "egress.allowed_summary") == 0 ||
	    strcmp(name, "egress.would_block") == 0 ||
	    strcmp(name, "egress.would_block_summary") == 0) {
		v->action = 1;
		v->action_name = "Allowed";
		v->status = 1;
		v->severity = reason != NULL ? 2 : 1;
		v->disposition = reason != NULL ? 17 : 1;
		v->disposition_name = reason != NULL ? "Logged" : "Allowed";
		return;
	}
	if (reason == NULL && strcmp(name, "egress.blocked") != 0 &&
	    strcmp(name, "egress.revoked") != 0) {
		v->severity = 1;
		return;
	}
	v->action = 2;
	v->action_name = "Denied";
	v->status = 2;
	v->severity = strcmp(name, "egress.revoked") == 0 ? 2 : 3;
	v->disposition = strcmp(name, "egress.revoked") == 0 ? 24 : 2;
	v->disposition_name = v->disposition == 24 ? "Access Revoked" :
	    "Blocked";
	for (i = 0; reason != NULL && ocsf_evasions[i] != NULL; i++)
		if (strcmp(reason, ocsf_evasions[i]) == 0)
			v->severity = 4;
}

/* http_request: the method and, for a known host, the URL asked for. */
static json_t *
ocsf_http_request(json_t *ev, const char *method)
{
	json_t		*r, *url;
	const char	*host = ocsf_str(ev, "host");
	long long	 port = ocsf_port(ev);
	char		*s, pnum[24] = "";
	int		 v6;

	r = json_pack("{s:s}", "http_method", method);
	if (r == NULL || host == NULL)
		return r;
	v6 = strchr(host, ':') != NULL;
	if (port >= 0)
		snprintf(pnum, sizeof(pnum), ":%lld", port);
	util_xasprintf(&s, "%s%s%s%s%s", strcmp(method, "CONNECT") ?
	    "http://" : "", v6 ? "[" : "", host, v6 ? "]" : "", pnum);
	url = json_pack("{s:s, s:s}", "url_string", s, "hostname", host);
	free(s);
	if (url != NULL && port >= 0)
		ocsf_set(url, "port", json_integer(port));
	ocsf_set(r, "url", url);
	return r;
}

/*
 * traffic: bytes_up as bytes_out, bytes_down as bytes_in, their sum as
 * bytes; each only when a count (and the sum when it fits). NULL: none.
 */
static json_t *
ocsf_traffic(json_t *ev)
{
	long long	 up = ocsf_count(ev, "bytes_up");
	long long	 down = ocsf_count(ev, "bytes_down");
	long long	 sum;
	json_t		*t;

	if (up < 0 && down < 0)
		return NULL;
	if ((t = json_object()) == NULL)
		return NULL;
	if (up >= 0)
		ocsf_set(t, "bytes_out", json_integer(up));
	if (down >= 0)
		ocsf_set(t, "bytes_in", json_integer(down));
	if (up >= 0 && down >= 0 && !__builtin_add_overflow(up, down, &sum))
		ocsf_set(t, "bytes", json_integer(sum));
	return t;
}

/* Bytes, duration, the rule, the policy and a count, when given. */
static void
ocsf_egress_extra(json_t *o, json_t *ev)
{
	json_t		*ms = json_object_get(ev, "duration_ms");
	long long	 count = ocsf_count(ev, "count");
	const char	*digest = ocsf_str(ev, "policy_digest");

	ocsf_set(o, "traffic", ocsf_traffic(ev));
	if (json_is_integer(ms))
		ocsf_set(o, "duration", json_integer(json_integer_value(ms)));
	if (count >= 0)
		ocsf_set(o, "count", json_integer(count));
	if (ocsf_str(ev, "rule") != NULL)
		ocsf_set(o, "firewall_rule", json_pack("{s:s}", "name",
		    ocsf_str(ev, "rule")));
	if (digest != NULL)
		ocsf_set(o, "policy", json_pack("{s:s, s:s}", "name",
		    "sandgate egress policy", "uid", digest));
}

/* egress.*: HTTP Activity, or Network Activity without a method. */
static json_t *
ocsf_egress(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	struct ocsf_verdict	 v;
	const struct ocsf_class	*c = &ocsf_network;
	const char		*method = ocsf_str(ev, "method"), *an;
	json_t			*o, *src, *dst;
	int			 act;

	ocsf_verdict(ev, name, &v);
	if (strcmp(name, "egress.revoked") == 0) {
		act = 3;
		an = "Reset";
	} else if (method != NULL) {
		c = &ocsf_http;
		act = ocsf_method_id(method);
		an = act == 99 ? "Other" : ocsf_methods[act].caption;
	} else {
		act = v.action == 2 ? 5 : v.action == 1 ? 6 : 99;
		an = act == 5 ? "Refuse" : act == 6 ? "Traffic" : "Other";
	}
	if ((o = ocsf_new(ev, ctx, c, act, an, v.severity,
	    "security_control")) == NULL)
		return NULL;
	ocsf_set(o, "action_id", json_integer(v.action));
	ocsf_set_str(o, "action", v.action_name);
	ocsf_set(o, "disposition_id", json_integer(v.disposition));
	ocsf_set_str(o, "disposition", v.disposition_name);
	if (v.severity >= 4)
		ocsf_set(o, "is_alert", json_true());
	ocsf_status(o, v.status, ocsf_str(ev, "reason"),
	    ocsf_str(ev, "message"));
	ocsf_set_str(o, "message", ocsf_str(ev, "message") ?
	    ocsf_str(ev, "message") : name);
	src = ocsf_src(ev);
	dst = ocsf_dst(ev);
	if (src == NULL && dst == NULL)
		src = json_pack("{s:s}", "name", "unknown");
	ocsf_set(o, "src_endpoint", src);
	ocsf_set(o, "dst_endpoint", dst);
	ocsf_set(o, "connection_info", json_pack("{s:i, s:s, s:s, s:i}",
	    "direction_id", 2, "direction", "Outbound", "protocol_name", "tcp",
	    "protocol_num", 6));
	if (c == &ocsf_http)
		ocsf_set(o, "http_request", ocsf_http_request(ev, method));
	ocsf_egress_extra(o, ev);
	return o;
}

/*
 * proxy.conn_refused: Network Activity, a Refuse of connections at the
 * proxy's capacity (its reason, the source, how many since the last
 * line); Medium: a flood of connections is what fills it.
 */
static json_t *
ocsf_conn_refused(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const char	*src = ocsf_str(ev, "src"), *why = ocsf_str(ev, "reason");
	long long	 n = ocsf_count(ev, "refused");
	json_t		*o, *ep;
	char		*msg;

	(void)name;
	if ((o = ocsf_new(ev, ctx, &ocsf_network, 5, "Refuse", 3,
	    "security_control")) == NULL)
		return NULL;
	ocsf_set(o, "action_id", json_integer(2));
	ocsf_set_str(o, "action", "Denied");
	ocsf_set(o, "disposition_id", json_integer(2));
	ocsf_set_str(o, "disposition", "Blocked");
	ocsf_status(o, 2, why, NULL);
	ep = src != NULL ? ocsf_ip_port(src, 0) : NULL;
	ocsf_set(o, "src_endpoint", ep != NULL ? ep :
	    json_pack("{s:s}", "name", "unknown"));
	ocsf_set(o, "connection_info", json_pack("{s:i, s:s, s:s, s:i}",
	    "direction_id", 1, "direction", "Inbound", "protocol_name", "tcp",
	    "protocol_num", 6));
	util_xasprintf(&msg, "connections to the proxy refused at its "
	    "capacity (%s): %lld from %s and others since the last such line",
	    why ? why : "?", n < 0 ? 0 : n, src ? src : "?");
	ocsf_set_msg(o, msg);
	return o;
}

/* policy.*: Entity Management, an Update of the proxy's policy. */
static json_t *
ocsf_policy(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	json_t		*o, *errs = json_object_get(ev, "errors"), *e;
	const char	*digest = ocsf_str(ev, "policy_digest");
	int		 ok = strcmp(name, "policy.reloaded") == 0;
	int		 bad = strcmp(name, "policy.rejected") == 0;
	char		*detail = NULL, *tmp;
	size_t		 i;

	if ((o = ocsf_new(ev, ctx, &ocsf_class_entity, ok || bad ? 3 : 99,
	    ok || bad ? "Update" : "Other", bad ? 3 : 1, NULL)) == NULL)
		return NULL;
	ocsf_set(o, "entity", json_pack("{s:s, s:s}", "type", "Policy",
	    "name", "sandgate egress policy"));
	ocsf_set_str(json_object_get(o, "entity"), "uid", digest);
	ocsf_set(o, "actor", ocsf_actor("sandgate-proxy"));
	json_array_foreach(errs, i, e) {
		if (!json_is_string(e))
			continue;
		util_xasprintf(&tmp, "%s%s%s", detail ? detail : "",
		    detail ? "; " : "", json_string_value(e));
		free(detail);
		detail = tmp;
	}
	ocsf_status(o, ok ? 1 : bad ? 2 : 0, NULL, detail);
	ocsf_set_str(o, "message", ok ? "policy reloaded" : bad ?
	    "policy reload rejected; the old policy stays in force" : name);
	free(detail);
	return o;
}

/* The host the log comes from (system classes require a device). */
json_t *
ocsf_device(const struct ocsf_ctx *ctx)
{
	return json_pack("{s:i, s:s, s:s}", "type_id", 0, "type", "Unknown",
	    "hostname", ctx->hostname ? ctx->hostname : "unknown");
}

json_t *
ocsf_actor(const char *app)
{
	return json_pack("{s:s}", "app_name", app);
}

/* process: the command line, the run id, the sandbox as its container. */
static json_t *
ocsf_run_process(json_t *ev)
{
	json_t		*p, *c, *img, *argv0 = json_array_get(
			    json_object_get(ev, "argv"), 0);
	const char	*sbx = ocsf_str(ev, "sandbox");
	long long	 start = ocsf_ms(ocsf_str(ev, "start"));

	p = json_pack("{s:s}", "uid", ocsf_str(ev, "run") ?
	    ocsf_str(ev, "run") : "unknown");
	if (p == NULL)
		return NULL;
	ocsf_set_str(p, "cmd_line", ocsf_str(ev, "command"));
	ocsf_set_str(p, "name", json_string_value(argv0));
	if (start >= 0)
		ocsf_set(p, "created_time", json_integer(start));
	if (sbx != NULL && (c = json_pack("{s:s, s:s}", "uid", sbx, "name",
	    sbx)) != NULL) {
		if (ocsf_str(ev, "image_id") != NULL &&
		    (img = json_pack("{s:s}", "uid", ocsf_str(ev,
		    "image_id"))) != NULL) {
			ocsf_set_str(img, "name", ocsf_str(ev, "image"));
			ocsf_set(c, "image", img);
		}
		ocsf_set(p, "container", c);
	}
	return p;
}

/* run.*: Process Activity; the record comes when the command ended. */
static json_t *
ocsf_run(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	static const char *const flags[] = { "timed_out", "oom_killed",
	    "pids_limit_hit", "container_stopped", "sandbox_killed",
	    "output_truncated", "not_started", NULL };
	json_t		*o, *fl = json_object_get(ev, "flags");
	json_t		*code = json_object_get(ev, "exit_code");
	long long	 start = ocsf_ms(ocsf_str(ev, "start"));
	long long	 end = ocsf_ms(ocsf_str(ev, "end"));
	char		 detail[256] = "", scode[32];
	size_t		 i;
	int		 sev = 1;
	(void)name;

	for (i = 0; flags[i] != NULL; i++) {
		if (!json_is_true(json_object_get(fl, flags[i])))
			continue;
		snprintf(detail + strlen(detail), sizeof(detail) -
		    strlen(detail), "%s%s", detail[0] ? ", " : "", flags[i]);
		sev = 2;
	}
	if ((o = ocsf_new(ev, ctx, &ocsf_process, start >= 0 ? 2 : 1,
	    start >= 0 ? "Terminate" : "Launch", sev, "container")) == NULL)
		return NULL;
	ocsf_set(o, "process", ocsf_run_process(ev));
	ocsf_set(o, "actor", ocsf_actor("sandgate"));
	ocsf_set(o, "device", ocsf_device(ctx));
	if (json_is_integer(json_object_get(ev, "cmd_exit")))
		ocsf_set(o, "exit_code", json_integer(json_integer_value(
		    json_object_get(ev, "cmd_exit"))));
	if (start >= 0)
		ocsf_set(o, "start_time", json_integer(start));
	if (end >= 0)
		ocsf_set(o, "end_time", json_integer(end));
	if (json_is_integer(json_object_get(ev, "duration_ms")))
		ocsf_set(o, "duration", json_integer(json_integer_value(
		    json_object_get(ev, "duration_ms"))));
	snprintf(scode, sizeof(scode), "%lld", (long long)
	    json_integer_value(code));
	ocsf_status(o, json_is_integer(code) ? (json_integer_value(code) == 0 ?
	    1 : 2) : 0, json_is_integer(code) ? scode : NULL,
	    detail[0] ? detail : NULL);
	ocsf_set_str(o, "message", ocsf_str(ev, "command"));
	return o;
}

/*
 * The members Event Log Activity events of a log have: the log, the
 * actor, the device.
 */
static void
ocsf_eventlog_common(json_t *o, const struct ocsf_ctx *ctx)
{
	ocsf_set(o, "actor", ocsf_actor("sandgate"));
	ocsf_set(o, "device", ocsf_device(ctx));
	ocsf_set_str(o, "log_name", ctx->log_name);
	ocsf_set_str(o, "log_provider", "sandgate");
	ocsf_set(o, "log_type_id", json_integer(2));
	ocsf_set_str(o, "log_type", "Application");
}

/*
 * log.checkpoint: Event Log Activity on the log it signs. The export
 * does not check signatures: the status is Unknown and the message says
 * so (`sandgate audit verify --key` checks them).
 */
static json_t *
ocsf_checkpoint(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const char	*reason = ocsf_str(ev, "reason");
	const char	*an = "Checkpoint";
	json_t		*o;
	char		*msg;
	int		 act = 99;
	(void)name;

	if (reason != NULL && strcmp(reason, "open") == 0) {
		act = 6;
		an = "Start";
	} else if (reason != NULL && strcmp(reason, "close") == 0) {
		act = 7;
		an = "Stop";
	} else if (reason != NULL && strcmp(reason, "key") == 0)
		an = "Key Rotation";
	if ((o = ocsf_new(ev, ctx, &ocsf_eventlog, act, an, 1, NULL)) == NULL)
		return NULL;
	ocsf_eventlog_common(o, ctx);
	ocsf_status(o, 0, reason, "signature not checked by the export");
	util_xasprintf(&msg, "checkpoint (%s) naming key %s%s%s; its "
	    "signature is not checked here: sandgate audit verify --key "
	    "checks it", reason ? reason : "?", ocsf_str(ev, "key") ?
	    ocsf_str(ev, "key") : "?", ocsf_str(ev, "next_key") ?
	    ", handing over to key " : "", ocsf_str(ev, "next_key") ?
	    ocsf_str(ev, "next_key") : "");
	ocsf_set_msg(o, msg);
	return o;
}

/*
 * A line about the log itself, Event Log Activity 99 Other (an): the
 * log, actor and device members, status, severity and the message msg
 * (freed). NULL if out of memory.
 */
static json_t *
ocsf_eventlog_other(json_t *ev, const struct ocsf_ctx *ctx, const char *an,
    int severity, int status, const char *detail, char *msg)
{
	json_t	*o;

	if ((o = ocsf_new(ev, ctx, &ocsf_eventlog, 99, an, severity,
	    NULL)) != NULL) {
		ocsf_eventlog_common(o, ctx);
		ocsf_status(o, status, NULL, detail);
	}
	ocsf_set_msg(o, msg);
	return o;
}

/*
 * log.resume: the writer found its log not ending with the checkpoint it
 * had signed last (checkpoint.h); Event Log Activity, Medium.
 */
static json_t *
ocsf_resume(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	char	*msg;
	(void)name;

	util_xasprintf(&msg, "the writer found the log ending at seq %lld, "
	    "not at the checkpoint it had signed last (seq %lld): sandgate "
	    "audit verify --key judges it", ocsf_count(ev, "found_seq"),
	    ocsf_count(ev, "anchor_seq"));
	return ocsf_eventlog_other(ev, ctx, "Resume", 3, 0, NULL, msg);
}

/*
 * log.outage: events the writer could not write while its log was
 * unavailable (eventlog.h); Event Log Activity, High, a failure whose
 * detail is the cause. With lost_events above lost (summary lines lost),
 * the message names the attempts those lines held too.
 */
static json_t *
ocsf_outage(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const char	*since = ocsf_str(ev, "since");
	long long	 lost = ocsf_count(ev, "lost");
	long long	 events = ocsf_count(ev, "lost_events");
	char		*msg;
	(void)name;

	if (events > lost && lost >= 0)
		util_xasprintf(&msg, "%lld event(s), holding %lld attempt(s), "
		    "could not be written to the log since %s: it was "
		    "unavailable", lost, events, since ? since : "?");
	else
		util_xasprintf(&msg, "%lld event(s) could not be written to "
		    "the log since %s: it was unavailable", lost,
		    since ? since : "?");
	return ocsf_eventlog_other(ev, ctx, "Outage", 4, 2,
	    ocsf_str(ev, "cause"), msg);
}

/*
 * log.moved: the file the writer wrote left the log's name without a
 * rotation of its own (moved out or replaced by a folder writer); this is
 * the first line of the file it made in its place (eventlog.c). Event Log
 * Activity, Medium: the events after last_seq in the file that left are
 * where it went.
 */
static json_t *
ocsf_moved(json_t *ev, const struct ocsf_ctx *ctx, const char *name)
{
	const char	*file = ocsf_str(ev, "file");
	char		*msg;
	(void)name;

	util_xasprintf(&msg, "the file the writer wrote (%s) left the log's "
	    "name without a rotation of its own after seq %lld; the writer "
	    "made a new one", file ? file : "?", ocsf_count(ev, "last_seq"));
	return ocsf_eventlog_other(ev, ctx, "Moved", 3, 0, NULL, msg);
}

/*
 * Every event type the project writes (tests/integration/test_audit_ocsf.py
 * finds them in the source and fails on one that maps to no class), then
 * the families: a member no version writes yet still gets its class.
 * Names ending in '.' match a prefix. What matches nothing is a Base Event.
 */
typedef json_t *ocsf_map_fn(json_t *, const struct ocsf_ctx *, const char *);

static const struct ocsf_type {
	const char	*event;
	ocsf_map_fn	*map;
} ocsf_types[] = {
	{ "egress.allowed", ocsf_egress },
	{ "egress.allowed_summary", ocsf_egress },
	{ "egress.blocked", ocsf_egress },
	{ "egress.blocked_summary", ocsf_egress },
	{ "egress.would_block", ocsf_egress },
	{ "egress.would_block_summary", ocsf_egress },
	{ "egress.revoked", ocsf_egress },
	{ "policy.reloaded", ocsf_policy },
	{ "policy.rejected", ocsf_policy },
	{ "run.exec", ocsf_run },
	{ "run.run", ocsf_run },
	{ CHECKPOINT_EVENT, ocsf_checkpoint },
	{ CHECKPOINT_RESUME, ocsf_resume },
	{ "log.outage", ocsf_outage },
	{ "log.moved", ocsf_moved },
	{ "grant.added", ocsf_grant },
	{ "grant.restored", ocsf_grant },
	{ "grant.revoked", ocsf_grant },
	{ "grant.expired", ocsf_grant },
	{ "grant.ended", ocsf_grant },
	{ "control.unauthorized", ocsf_unauthorized },
	{ "control.unauthorized_summary", ocsf_unauthorized },
	{ "proxy.started", ocsf_started },
	{ "sandbox.seal_drift", ocsf_sandbox_finding },
	{ "sandbox.unregister_pending", ocsf_sandbox_finding },
	{ "sandbox.unregistered", ocsf_sandbox_finding },
	{ "sandbox.exec_end_pending", ocsf_sandbox_finding },
	{ "sandbox.exec_ended", ocsf_sandbox_finding },
	{ "registry.removed_floor_raised", ocsf_sandbox_finding },
	{ "registry.full", ocsf_sandbox_finding },
	{ "proxy.conn_refused", ocsf_conn_refused },
	{ "egress.", ocsf_egress },
	{ "policy.", ocsf_policy },
	{ "run.", ocsf_run },
};

/* The mapping of an event name, or NULL. */
static ocsf_map_fn *
ocsf_type_map(const char *name)
{
	size_t	i, len;

	for (i = 0; i < sizeof(ocsf_types) / sizeof(ocsf_types[0]); i++) {
		len = strlen(ocsf_types[i].event);
		if (ocsf_types[i].event[len - 1] == '.' ?
		    strncmp(name, ocsf_types[i].event, len) == 0 :
		    strcmp(name, ocsf_types[i].event) == 0)
			return ocsf_types[i].map;
	}
	return NULL;
}

json_t *
ocsf_event(json_t *ev, const struct ocsf_ctx *ctx)
{
	const char	*name = ocsf_str(ev, "event");
	json_t		*o;
	char		*msg;
	ocsf_map_fn	*map = name ? ocsf_type_map(name) : NULL;

	if (map != NULL)
		return map(ev, ctx, name);
	if ((o = ocsf_new(ev, ctx, &ocsf_base, name ? 99 : 0, name ? "Other" :
	    "Unknown", 0, NULL)) == NULL)
		return NULL;
	util_xasprintf(&msg, "sandgate event %s", name ? name : "(unnamed)");
	ocsf_set_msg(o, msg);
	return o;
}
