/* control.c: the control socket (HTTP+JSON on a unix socket); control.h. */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <dirent.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "control.h"
#include "apartfile.h"
#include "blockring.h"
#include "conn.h"
#include "ctltcp.h"
#include "blocklog.h"
#include "eventlog.h"
#include "execcred.h"
#include "grants.h"
#include "host.h"
#include "log.h"
#include "policy.h"
#include "proxy.h"
#include "registry.h"
#include "regsize.h"
#include "token.h"
#include "util.h"

#define CONTROL_HEADERS_MAX	CTLTCP_HEADERS_MAX
#define CONTROL_TIMEOUT_S	CTLTCP_TIMEOUT_S
#define CONTROL_GRANTS_FILE_MAX	(8 * 1024 * 1024)	/* grants.json */
#define CONTROL_KEPT_LOOK	8	/* kept copies compared at a start */
/*
 * The most the saved registry's entries may take (registry_text): a
 * /register past it is refused (atk36f F2: a registry whose marks write
 * never fit under the 8 MiB a file is read back was never saved again,
 * and registrations since were lost at each restart). A marks write
 * (control_registry_json with removals) is those entries (the marks are
 * one count, not a mark in each), every removal kept, at most
 * REGISTRY_GONE_MAX of "id":time, (a token id, 1-64 of [A-Za-z0-9_-],
 * never escaped; a time of at most 20 digits: 88 bytes, 352 KiB in all),
 * and a tail of counts and a digest under 1 KiB. Sessions moving to a
 * longer address may take the entries past 7 MiB by REGISTRY_MOVE_ROOM
 * (128 KiB) in all (atk37b F2). 7 MiB leaves those and over 500 KiB
 * besides, so a field added later does not make the worst case pass the
 * limit unseen (the assertion below).
 */
#define CONTROL_REGISTRY_TEXT_MAX (7 * 1024 * 1024)
#define CONTROL_GONE_TEXT_MAX	(REGISTRY_GONE_MAX * (TOKEN_ID_MAX + 4 + 20))
#define CONTROL_REGISTRY_TAIL_MAX 1024
_Static_assert(CONTROL_REGISTRY_TEXT_MAX + REGISTRY_MOVE_ROOM +
    CONTROL_GONE_TEXT_MAX + CONTROL_REGISTRY_TAIL_MAX <=
    CONTROL_GRANTS_FILE_MAX - 512 * 1024,
    "a marks write of a full registry must fit under the read limit "
    "with room to spare");

static struct evhttp		*control_http;
static char			*control_path;
static char			*control_registry_path;	/* registry.json */
/* registry.json, the single proxy's, beside a replica's own */
static char			*control_registry_old;
static char			*control_grants_path;	/* grants.json */
static char			*control_tomb_path;	/* .revoked */
/* A legacy file taken (control_take), until a save holds what it held. */
static char			*control_grants_taken;
/*
 * The digest of the taken file (SHA-256, hex) while control_grants_taken
 * is set: each save says in "took" that it holds what that file held, so
 * a start that finds the taken file still there knows it may go
 * (control_grants_taken_left).
 */
static char			 control_grants_took[65];
/*
 * A taken file this replica could neither use whole nor keep as a copy:
 * it stays, no save retires it, and each revoke is kept in its revokes
 * file too, for a start that takes it again (control_grants_stay).
 */
static char			*control_grants_stays;
static char			*control_registry_taken;
/*
 * The generation of the newest save of grants.json tried (grants.h): one
 * more for each, so a revoke kept apart names the saves it postdates;
 * at start, the highest of grants.json's (kept by a save of no grants
 * too) and the revokes file's, never lower. At GRANTS_GEN_MAX saves fail.
 */
static json_int_t	 control_grants_gen;
/* 1 while the last save of the grants failed: tried again each second. */
static int		 control_grants_unsaved;
static char		*control_registry_removed;	/* .removed */
static char		*control_gone_path;		/* .gone */
static int		 control_registry_unsaved;
/*
 * The length of the registry file's text, measured for what it depends
 * on (regsize.h): a save that cannot fit is not built again until that
 * changed (atk37f F1), and a registration is refused while it cannot
 * (atk37d F2).
 */
static struct regsize	 control_regsize;
/* times the registry file's text was built (to save or measure it) */
static unsigned long long control_registry_built;
/*
 * The unsure marks' write failed (control_registry_unsure): until it
 * works no file saying a removal happened (.gone, .removed) is
 * rewritten or blanked (atk36e F2).
 */
static int		 control_marks_unsaved;
/* removals neither saved nor kept apart: a restart would undo them */
static json_int_t	 control_removals_unkept;
/* a removal file was damaged at start (control_registry_unsure) */
static int		 control_removals_damaged;
/*
 * Damage in another proxy's removal files (it is not rewritten here,
 * so it stays): file name -> what the file was, found at this start; one
 * SHA-256 over all of them is saved in this proxy's registry file with
 * the floor that damage raised (control_registry_json) and read back at
 * the next start, where the same damaged files, all unchanged, raise
 * nothing again (atk35c F2: they raised the floor at every start). One
 * digest, not an entry a file: 25,000 damaged files made a registry
 * file the proxy could not read back (atk36a F1).
 */
static json_t		*control_counted_then;	/* digest saved before */
static json_t		*control_counted;	/* found at this start */
static json_t		*control_counted_saved;	/* {digest, files} */
static json_t		*control_counted_why;	/* [[path, why]...] */
static struct {
	const char	*path;		/* another proxy's file being read */
	char		 id[192];	/* what it is (control_other_begin) */
} control_other;
static time_t		 control_grants_unsaved_since;	/* first failure */
static time_t		 control_grants_failed;		/* last failure */
static struct blockring		*control_rings;	/* recent blocks */
static unsigned long long	 control_cursor;	/* last one handed out */
static int			 control_up;

static void	control_reply(struct evhttp_request *, int, json_t *);
static json_t	*control_body(struct evhttp_request *);
static void	control_status(struct proxy *, struct evhttp_request *);
static void	control_metrics(struct proxy *, struct evhttp_request *);
static void	control_metrics_traffic(struct proxy *, struct evbuffer *);
static void	control_register(struct proxy *, struct evhttp_request *);
static void	control_unregister(struct proxy *, struct evhttp_request *);
static void	control_registry_full(struct proxy *, struct evhttp_request *,
		    const char *, const char *, int);
static int	control_registry_fits(struct proxy *, int);
static void	control_reload(struct proxy *, struct evhttp_request *);
static void	control_blocks(struct proxy *, struct evhttp_request *);
static void	control_exec_add(struct proxy *, struct evhttp_request *);
static void	control_grant_add(struct proxy *, struct evhttp_request *);
static void	control_grant_revoke(struct proxy *, struct evhttp_request *);
static void	control_grants_list(struct proxy *, struct evhttp_request *);
static int	control_grants_save(struct proxy *);
static json_t	*control_grants_saved(json_t *);
static char	*control_beside(const char *, const char *, const char *);
static void	control_grants_open(struct proxy *, const char *);
static int	control_grants_aside(const char *, const char *, size_t,
		    const char *);
static int	control_grants_load(struct proxy *, const char *,
		    const char *, const char *, char *);
static void	control_grants_take(struct proxy *, const char *);
static char	*control_take(const char *, const char *);
static int	control_taken_any(const char *);
static void	control_taken_retire(char **);
static int	control_taken_again(const char *, const char *);
static struct grants_tombs *control_tombs_read(const char *, const char *,
		    int *);
static void	control_grants_resume(const struct grants_tombs *,
		    const char *, size_t);
static void	 control_tomb_read(const char *, struct grants_tombs *,
		    int *);
static char	*control_file_read(const char *, size_t *, int *);
static char	*control_read(const char *, int, size_t *, const char **);
static char	*control_state_read(const char *, size_t *, const char **);
static const char *control_removed_line(struct proxy *, const char *,
		    const char *, size_t);
static const char *control_gone_list_damage(json_t *);
static const char *control_gone_clocks_damage(json_t *);
static json_t	*control_registry_read(struct proxy *, const char *);
static int	 control_gone_save(struct proxy *);
static void	 control_gone_load(struct proxy *, const char *, json_int_t);
static const char *control_gone_damage(json_t *);
static void	 control_registry_unsure(struct proxy *);
static void	 control_gone_raise(struct proxy *, const char *,
		    const char *);
static void	 control_others_settle(struct proxy *);
static void	 control_registry_retire(struct proxy *);
static void	 control_registry_save_failed(void);
static void	 control_gone_unknown(struct proxy *, const char *,
		    const char *);
static void	 control_floor_event(struct proxy *, const char *,
		    unsigned long long);
static int	control_tomb_add(const struct grant *);
static int	control_stays_revoke(const struct grant *);
static void	control_removed_load(struct proxy *, const char *);
static void	control_grant_event(struct proxy *, const struct grant *,
		    const char *, const char *, const char *);
static int	control_peer_by(struct evhttp_request *, const char *, char *,
		    size_t);
static int	control_peer_tcp(int, char *, size_t);
static int	control_grant_read(struct evhttp_request *, json_t *,
		    struct grant *, int *, const char **);
static void	control_exec_end(struct proxy *, struct evhttp_request *);
static int	control_registry_save(struct proxy *);
static int	control_registry_marks_save(struct proxy *);
static json_t	*control_registry_json(struct proxy *, int);
static void	control_crash_point(const char *, const char *);
static int	control_replica_file(const struct dirent *);
static int	control_registry_apart(const char *, int, time_t);
static json_int_t control_registry_load(struct proxy *, const char *);
static void	control_registry_over(struct proxy *, const char *);
static const char *control_registry_damage(json_t *, json_t *);
static const char *control_registry_marks_damage(json_t *, json_t *);
static int	control_replicas_load(struct proxy *, const char *);
static void	control_other_begin(const char *, const char *,
		    const char *);
static void	control_other_text(const char *, size_t);
static void	control_other_end(void);
static int	control_other_counted(struct proxy *, const char *,
		    const char *);
static json_int_t control_other_registry(struct proxy *, const char *);
static void	control_other_gone(struct proxy *, const char *,
		    json_int_t, const char *);
static int	control_others_load(struct proxy *, const char *, int,
		    json_int_t);
static void	control_registry_open(struct proxy *, const char *);
static void	control_identities(struct proxy *, const char *);

/* Send a JSON reply (steals the reference). */
static void
control_reply(struct evhttp_request *req, int code, json_t *body)
{
	struct evbuffer	*buf = evbuffer_new();
	char		*text = body ? json_dumps(body, JSON_COMPACT) : NULL;

	if (buf != NULL && text != NULL) {
		evbuffer_add(buf, text, strlen(text));
		evbuffer_add(buf, "\n", 1);
	}
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evhttp_send_reply(req, code, code < 300 ? "OK" : "Error", buf);
	free(text);
	json_decref(body);
	if (buf != NULL)
		evbuffer_free(buf);
}

/* The request's JSON object body, or NULL (then a 400 was sent). */
static json_t *
control_body(struct evhttp_request *req)
{
	struct evbuffer	*in = evhttp_request_get_input_buffer(req);
	size_t		 len = evbuffer_get_length(in);
	json_error_t	 err;
	json_t		*o;

	o = json_loadb((const char *)evbuffer_pullup(in, (ev_ssize_t)len),
	    len, 0, &err);
	if (o == NULL || !json_is_object(o)) {
		json_decref(o);
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "body must be a JSON object"));
		return NULL;
	}
	return o;
}

void
control_route(struct evhttp_request *req, void *arg)
{
	struct proxy	*px = arg;
	const char	*path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(
			    req));
	int		 post = evhttp_request_get_command(req) == EVHTTP_REQ_POST;

	if (path == NULL)
		path = "/";
	if (ctltcp_health(px, req))
		return;
	if (!post && strcmp(path, "/status") == 0)
		control_status(px, req);
	else if (!post && strcmp(path, "/metrics") == 0)
		control_metrics(px, req);
	else if (!post && strcmp(path, "/blocks") == 0)
		control_blocks(px, req);
	else if (post && strcmp(path, "/register") == 0)
		control_register(px, req);
	else if (post && strcmp(path, "/unregister") == 0)
		control_unregister(px, req);
	else if (post && strcmp(path, "/reload") == 0)
		control_reload(px, req);
	else if (post && strcmp(path, "/grants") == 0)
		control_grant_add(px, req);
	else if (post && strcmp(path, "/grants/revoke") == 0)
		control_grant_revoke(px, req);
	else if (!post && strcmp(path, "/grants") == 0)
		control_grants_list(px, req);
	else if (post && strcmp(path, "/execs") == 0)
		control_exec_add(px, req);
	else if (post && strcmp(path, "/execs/end") == 0)
		control_exec_end(px, req);
	else
		control_reply(req, 404, json_pack("{s:s}", "error",
		    "unknown endpoint"));
}

/* /status "removed_sandboxes": kept, forgotten early, and the floor. */
static json_t *
control_gone_status(const struct registry *r)
{
	return json_pack("{s:I, s:I, s:I, s:i}", "kept",
	    (json_int_t)registry_gone_count(r), "forgotten",
	    (json_int_t)registry_gone_forgotten(r), "floor",
	    (json_int_t)registry_gone_floor(r), "max", REGISTRY_GONE_MAX);
}

static void
control_status(struct proxy *px, struct evhttp_request *req)
{
	unsigned long long	blocked = 0;
	size_t			i;
	/* First: it looks at the folder, which log_pressure then says. */
	int			healthy = proxy_log_healthy(px, NULL, NULL);

	for (i = 0; i < SG_REASON_MAX; i++)
		blocked += px->stats.requests_blocked[i];
	/* Blocks after this cursor are reported apart from those before. */
	control_cursor = px->block_serial;
	control_reply(req, 200, control_grants_saved(json_pack("{s:s, s:s?, "
	    "s:s, s:s, s:I, s:I, s:I, s:o, s:b, s:I, s:I, s:I, s:I, s:I, s:I, "
	    "s:b, s:b, s:o}", "health", healthy ? "ok" : "log_unavailable",
	    "instance", px->cfg.instance,
	    "log_error", !px->log_space_ok ? "log folder full or read-only; "
	    "egress is refused until it has room" : eventlog_error(px->seclog),
	    "policy_digest", policy_digest(px->policy->policy),
	    "log_seq", (json_int_t)eventlog_seq(px->seclog),
	    "blocks_seq", (json_int_t)px->block_serial,
	    "uptime_s", (json_int_t)(time(NULL) - px->started),
	    "sandboxes", registry_json(px->registry),
	    "registry_saved", !control_registry_unsaved,
	    "registry_removals_unkept", control_removals_unkept,
	    "connections_open", (json_int_t)px->stats.conns_open,
	    "connections_total", (json_int_t)px->stats.conns_total,
	    "requests_allowed", (json_int_t)px->stats.requests_allowed,
	    "requests_blocked", (json_int_t)blocked,
	    "upstream_errors", (json_int_t)px->stats.upstream_errors,
	    "draining", px->draining, "log_pressure", px->log_pressure,
	    "removed_sandboxes", control_gone_status(px->registry))));
}

/* /metrics: the instance, connections, requests and closes, by reason. */
static void
control_metrics_traffic(struct proxy *px, struct evbuffer *b)
{
	size_t	i;

	if (px->cfg.instance != NULL)
		evbuffer_add_printf(b, "# HELP sandgate_proxy_info This "
		    "replica's --instance.\n# TYPE sandgate_proxy_info gauge\n"
		    "sandgate_proxy_info{instance=\"%s\"} 1\n",
		    px->cfg.instance);
	evbuffer_add_printf(b,
	    "# HELP sandgate_proxy_connections_open Client connections open.\n"
	    "# TYPE sandgate_proxy_connections_open gauge\n"
	    "sandgate_proxy_connections_open %llu\n"
	    "# TYPE sandgate_proxy_connections_total counter\n"
	    "sandgate_proxy_connections_total %llu\n"
	    "# TYPE sandgate_proxy_requests_allowed_total counter\n"
	    "sandgate_proxy_requests_allowed_total %llu\n"
	    "# TYPE sandgate_proxy_requests_blocked_total counter\n",
	    px->stats.conns_open, px->stats.conns_total,
	    px->stats.requests_allowed);
	for (i = 1; i < SG_REASON_MAX; i++)
		evbuffer_add_printf(b, "sandgate_proxy_requests_blocked_total"
		    "{reason=\"%s\"} %llu\n", reason_code((enum sg_reason)i),
		    px->stats.requests_blocked[i]);
	evbuffer_add_printf(b,
	    "# HELP sandgate_proxy_client_budget_stops_total Times a client "
	    "address went over --max-buffer-per-client and was not read.\n"
	    "# TYPE sandgate_proxy_client_budget_stops_total counter\n"
	    "sandgate_proxy_client_budget_stops_total %llu\n",
	    px->stats.clients_over_budget);
	evbuffer_add_printf(b,
	    "# TYPE sandgate_proxy_connections_closed_total counter\n");
	for (i = 0; i < CONN_CLOSE_MAX; i++)
		evbuffer_add_printf(b, "sandgate_proxy_connections_closed_total"
		    "{reason=\"%s\"} %llu\n", conn_close_name((enum conn_close)i),
		    px->stats.conns_closed[i]);
	evbuffer_add_printf(b,
	    "# HELP sandgate_proxy_connections_refused_total New connections "
	    "refused for want of capacity.\n"
	    "# TYPE sandgate_proxy_connections_refused_total counter\n");
	for (i = 0; i < PROXY_REFUSE_MAX; i++)
		evbuffer_add_printf(b, "sandgate_proxy_connections_refused_total"
		    "{reason=\"%s\"} %llu\n", proxy_refuse_name(
		    (enum proxy_refuse)i), px->stats.conns_refused[i]);
}

/* /metrics: the removed sandboxes kept, forgotten early, the floor. */
static void
control_metrics_removed(const struct registry *r, struct evbuffer *b)
{
	evbuffer_add_printf(b,
	    "# HELP sandgate_proxy_removed_sandboxes Removed sandboxes whose "
	    "tokens are refused, kept by name.\n"
	    "# TYPE sandgate_proxy_removed_sandboxes gauge\n"
	    "sandgate_proxy_removed_sandboxes %zu\n"
	    "# HELP sandgate_proxy_removed_forgotten_total Removed sandboxes "
	    "forgotten within their time (past the most kept); each raised "
	    "the floor.\n"
	    "# TYPE sandgate_proxy_removed_forgotten_total counter\n"
	    "sandgate_proxy_removed_forgotten_total %llu\n"
	    "# HELP sandgate_proxy_removed_floor_timestamp_seconds Tokens of "
	    "sandboxes not registered here issued before it are refused "
	    "(0: none).\n"
	    "# TYPE sandgate_proxy_removed_floor_timestamp_seconds gauge\n"
	    "sandgate_proxy_removed_floor_timestamp_seconds %lld\n",
	    registry_gone_count(r),
	    registry_gone_forgotten(r),
	    (long long)registry_gone_floor(r));
}

/* Prometheus text format 0.0.4. */
static void
control_metrics(struct proxy *px, struct evhttp_request *req)
{
	struct evbuffer	*b = evbuffer_new();

	if (b == NULL) {
		evhttp_send_error(req, 500, "out of memory");
		return;
	}
	control_metrics_traffic(px, b);
	control_metrics_removed(px->registry, b);
	evbuffer_add_printf(b,
	    "# HELP sandgate_proxy_blocks_summarized_total Blocked attempts "
	    "counted into egress.blocked_summary lines.\n"
	    "# TYPE sandgate_proxy_blocks_summarized_total counter\n"
	    "sandgate_proxy_blocks_summarized_total %llu\n"
	    "# TYPE sandgate_proxy_block_summaries_total counter\n"
	    "sandgate_proxy_block_summaries_total %llu\n"
	    "# TYPE sandgate_proxy_log_pressure gauge\n"
	    "sandgate_proxy_log_pressure %d\n",
	    px->blocks ? blocklog_counted(px->blocks) : 0,
	    px->blocks ? blocklog_summaries(px->blocks) : 0,
	    px->log_pressure);
	evbuffer_add_printf(b,
	    "# TYPE sandgate_proxy_upstream_errors_total counter\n"
	    "sandgate_proxy_upstream_errors_total %llu\n"
	    "# TYPE sandgate_proxy_upstream_reused_total counter\n"
	    "sandgate_proxy_upstream_reused_total %llu\n"
	    "# TYPE sandgate_proxy_bytes_total counter\n"
	    "sandgate_proxy_bytes_total{direction=\"up\"} %llu\n"
	    "sandgate_proxy_bytes_total{direction=\"down\"} %llu\n"
	    "# TYPE sandgate_proxy_log_failures_total counter\n"
	    "sandgate_proxy_log_failures_total %llu\n"
	    "# TYPE sandgate_proxy_log_healthy gauge\n"
	    "sandgate_proxy_log_healthy %d\n"
	    "# TYPE sandgate_proxy_policy_info gauge\n"
	    "sandgate_proxy_policy_info{digest=\"%s\"} 1\n"
	    "# TYPE sandgate_proxy_policy_loaded_timestamp_seconds gauge\n"
	    "sandgate_proxy_policy_loaded_timestamp_seconds %lld\n"
	    "# TYPE sandgate_proxy_policy_load_seconds gauge\n"
	    "sandgate_proxy_policy_load_seconds %.6f\n"
	    "# TYPE sandgate_proxy_sandboxes_registered gauge\n"
	    "sandgate_proxy_sandboxes_registered %zu\n"
	    "# HELP sandgate_proxy_grants_unsaved 1 while the grants in "
	    "force are not saved (a restart would lose the changes since).\n"
	    "# TYPE sandgate_proxy_grants_unsaved gauge\n"
	    "sandgate_proxy_grants_unsaved %d\n"
	    "# HELP sandgate_proxy_registry_unsaved 1 while the sandbox "
	    "registry is not saved (a removal is then kept apart).\n"
	    "# TYPE sandgate_proxy_registry_unsaved gauge\n"
	    "sandgate_proxy_registry_unsaved %d\n"
	    "# HELP sandgate_proxy_registry_built_total Times the sandbox "
	    "registry's file text was built, to save or measure it.\n"
	    "# TYPE sandgate_proxy_registry_built_total counter\n"
	    "sandgate_proxy_registry_built_total %llu\n",
	    px->stats.upstream_errors, px->stats.upstream_reused,
	    px->stats.bytes_up, px->stats.bytes_down, px->stats.log_failures,
	    proxy_log_healthy(px, NULL, NULL),
	    policy_digest(px->policy->policy),
	    (long long)px->policy_loaded, px->policy_load_us / 1e6,
	    registry_count(px->registry), control_grants_unsaved,
	    control_registry_unsaved, control_registry_built);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "text/plain; version=0.0.4");
	evhttp_send_reply(req, 200, "OK", b);
	evbuffer_free(b);
}

static void
control_register(struct proxy *px, struct evhttp_request *req)
{
	json_t		*o = control_body(req);
	const char	*addr, *sbx, *sets, *cause;
	int		 saved;

	if (o == NULL)
		return;
	addr = json_string_value(json_object_get(o, "address"));
	sbx = json_string_value(json_object_get(o, "sandbox"));
	sets = json_string_value(json_object_get(o, "sets"));
	if (addr == NULL || sbx == NULL) {
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "address and sandbox are required"));
	} else if (!registry_registered(px->registry, addr, sbx, sets,
	    json_is_true(json_object_get(o, "extra"))) &&
	    !control_registry_fits(px, control_marks_unsaved)) {
		/*
		 * Too large to be saved (EFBIG): a change would live in
		 * memory alone and be lost at the next restart (atk37d F2).
		 */
		control_registry_full(px, req, addr, sbx, 1);
	} else if (registry_add_within(px->registry, addr, sbx, sets,
	    json_is_true(json_object_get(o, "extra")),
	    CONTROL_REGISTRY_TEXT_MAX, &cause) == -1) {
		if (cause == registry_full)
			control_registry_full(px, req, addr, sbx, 0);
		else
			control_reply(req, 400, json_pack("{s:s}", "error",
			    cause));
	} else {
		log_info("registered %s as %s (sets \"%s\")", addr, sbx,
		    sets ? sets : "");
		registry_gone_clear(px->registry, sbx);
		saved = control_registry_save(px) == 0;
		control_identities(px, NULL);
		control_reply(req, 200, json_pack("{s:b, s:b}", "ok", 1,
		    "saved", saved));
	}
	json_decref(o);
}

/*
 * A registration refused, the registry full (CONTROL_REGISTRY_TEXT_MAX),
 * or (unsaveable) its file too large to be saved at all: said to the
 * controller, on stderr and as registry.full, each time (the sandbox it
 * was for is not reachable through this proxy). Those registered stay,
 * and an /unregister always works and makes room.
 */
static void
control_registry_full(struct proxy *px, struct evhttp_request *req,
    const char *addr, const char *sbx, int unsaveable)
{
	char	*detail;
	json_t	*ev;

	if (unsaveable)
		util_xasprintf(&detail, "%s was not registered as %s: the "
		    "sandbox registry cannot be saved (its file would take "
		    "%zu bytes, over the %d the proxy reads back), so a "
		    "change would be lost at the next restart; only a "
		    "registration that changes nothing is taken until "
		    "unregisters make room", addr, sbx,
		    regsize_len(&control_regsize), CONTROL_GRANTS_FILE_MAX);
	else
		util_xasprintf(&detail, "%s was not registered as %s: the "
		    "sandbox registry is full (its entries take %zu bytes, "
		    "at most %d are taken so that it is always saved with "
		    "its removals and marks under the %d bytes the proxy "
		    "reads back); unregister sandboxes first", addr, sbx,
		    registry_text(px->registry), CONTROL_REGISTRY_TEXT_MAX,
		    CONTROL_GRANTS_FILE_MAX);
	log_warnx("%s", detail);
	ev = json_pack("{s:s, s:s, s:s, s:s, s:I, s:i, s:I}", "event",
	    "registry.full", "sandbox", sbx, "address", addr, "detail",
	    detail, "text", (json_int_t)registry_text(px->registry), "max",
	    CONTROL_REGISTRY_TEXT_MAX, "registered",
	    (json_int_t)registry_count(px->registry));
	if (ev == NULL || eventlog_append(px->seclog, ev) == -1)
		log_warnx("registry.full not logged: %s", ev == NULL ?
		    "out of memory" : eventlog_error(px->seclog));
	json_decref(ev);
	control_reply(req, 507, json_pack("{s:s, s:s}", "error", detail,
	    "reason", "registry_full"));
	free(detail);
}

/*
 * Removals were forgotten within their time (past REGISTRY_GONE_MAX):
 * the floor rose, and a token of a sandbox not registered here, issued
 * before it, is refused from now on. Said in the log and the chained
 * log (registry.removed_floor_raised), not only by the refusals
 * (atk15r17 F8).
 */
static void
control_gone_floor_note(struct proxy *px, unsigned long long forgotten)
{
	struct registry	*r = px->registry;
	char		*detail;

	if (registry_gone_forgotten(r) == forgotten)
		return;
	util_xasprintf(&detail, "%llu removed sandboxes forgotten past %d "
	    "kept: tokens of sandboxes not registered here issued before "
	    "%lld are refused (token_sandbox_gone)",
	    registry_gone_forgotten(r) - forgotten, REGISTRY_GONE_MAX,
	    (long long)registry_gone_floor(r));
	control_floor_event(px, detail, registry_gone_forgotten(r) -
	    forgotten);
	free(detail);
}

/* A rise of the floor: on stderr and as registry.removed_floor_raised. */
static void
control_floor_event(struct proxy *px, const char *detail,
    unsigned long long forgotten)
{
	struct registry	*r = px->registry;
	json_t		*f;

	log_warnx("%s", detail);
	f = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:i}", "event",
	    "registry.removed_floor_raised", "detail", detail, "floor",
	    (json_int_t)registry_gone_floor(r), "forgotten",
	    (json_int_t)forgotten, "forgotten_total",
	    (json_int_t)registry_gone_forgotten(r), "kept",
	    (json_int_t)registry_gone_count(r), "max", REGISTRY_GONE_MAX);
	if (f == NULL || eventlog_append(px->seclog, f) == -1)
		log_warnx("registry.removed_floor_raised not logged: %s",
		    f == NULL ? "out of memory" : eventlog_error(px->seclog));
	json_decref(f);
}

/*
 * The removed sandboxes kept in path cannot be read (a damaged file, one
 * integer out of range, a key twice): not knowing them, the floor rises
 * to now, said like any rise (atk15r18 F8: every removal was lost and
 * their tokens passed).
 */
static void
control_gone_unknown(struct proxy *px, const char *path, const char *why)
{
	if (!control_other_counted(px, path, why))
		control_gone_raise(px, path, why);
}

/* control_gone_unknown: what (a file, or files) cannot be read (why). */
static void
control_gone_raise(struct proxy *px, const char *path, const char *why)
{
	char	*detail;

	registry_gone_unknown(px->registry);
	control_removals_damaged = 1;
	util_xasprintf(&detail, "%s cannot be read (%s): the removed "
	    "sandboxes it kept are not known, so tokens of sandboxes not "
	    "registered here, or restored from the registry file and not "
	    "registered since, issued before %lld are refused "
	    "(token_sandbox_gone)", path, why,
	    (long long)registry_gone_floor(px->registry));
	control_floor_event(px, detail, 0);
	free(detail);
}

static void
control_unregister(struct proxy *px, struct evhttp_request *req)
{
	json_t		*o = control_body(req);
	const char	*key;
	size_t		 n;
	int		 sandbox, saved, apart = 0;
	time_t		 now = time(NULL);
	unsigned long long forgotten = registry_gone_forgotten(px->registry);

	if (o == NULL)
		return;
	key = json_string_value(json_object_get(o, "sandbox"));
	sandbox = key != NULL;
	if (key == NULL)
		key = json_string_value(json_object_get(o, "address"));
	if (key == NULL) {
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "sandbox or address is required"));
	} else {
		n = sandbox ? registry_remove_sandbox(px->registry, key) :
		    registry_remove_address(px->registry, key);
		if (sandbox) {
			execcred_remove_sandbox(px->execs, key);
			registry_gone_set(px->registry, key, now);
			/* the controller's clock: no token issued after it */
			registry_gone_keep(px->registry, key, (time_t)
			    json_integer_value(json_object_get(o,
			    "issued_before")));
			now = registry_gone_at(px->registry, key);
			control_gone_floor_note(px, forgotten);
		}
		if (!(saved = control_registry_save(px) == 0) &&
		    !(saved = apart = control_registry_apart(key, sandbox,
		    now) == 0))
			control_removals_unkept++;
		control_identities(px, sandbox ? key : NULL);
		control_reply(req, 200, json_pack("{s:b, s:I, s:b, s:b, s:I}",
		    "ok", 1, "removed", (json_int_t)n, "saved", saved,
		    "saved_apart", apart, "removals_unkept",
		    control_removals_unkept));
	}
	json_decref(o);
}

/*
 * An exec starts: {"token":..,"sandbox":..,"run_id":..}. Its requests
 * carrying the token are attributed to the run (execcred.h).
 */
static void
control_exec_add(struct proxy *px, struct evhttp_request *req)
{
	json_t		*o = control_body(req);
	const char	*tok, *sbx, *run, *cause;

	if (o == NULL)
		return;
	tok = json_string_value(json_object_get(o, "token"));
	sbx = json_string_value(json_object_get(o, "sandbox"));
	run = json_string_value(json_object_get(o, "run_id"));
	if (tok == NULL || sbx == NULL || run == NULL)
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "token, sandbox and run_id are required"));
	else if (execcred_add(px->execs, tok, sbx, run, &cause) == -1)
		control_reply(req, 400, json_pack("{s:s}", "error", cause));
	else {
		proxy_log_blocks_registry(px);
		control_reply(req, 200, json_pack("{s:b}", "ok", 1));
	}
	json_decref(o);
}

/*
 * An exec ended: {"run_id":..}; its credential stops working, and the
 * connections only its grants allowed close (egress.revoked).
 */
static void
control_exec_end(struct proxy *px, struct evhttp_request *req)
{
	json_t		*o = control_body(req);
	const char	*run;
	size_t		 n;
	unsigned	 closed = 0;

	if (o == NULL)
		return;
	run = json_string_value(json_object_get(o, "run_id"));
	if (run == NULL) {
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "run_id is required"));
		goto out;
	}
	if ((n = execcred_remove(px->execs, run)) > 0) {
		closed = conn_revoke(px);
		proxy_log_blocks_registry(px);
	}
	control_reply(req, 200, json_pack("{s:b, s:I, s:I}", "ok", 1,
	    "removed", (json_int_t)n, "closed", (json_int_t)closed));
out:
	json_decref(o);
}

/*
 * A grant.added, .restored, .revoked, .ended or .expired event in the
 * chained log: who gave it, the rationale and the expiry, and key:
 * value when key is not NULL (revoked_by: who revoked it; rule: the
 * floor that ended it).
 */
static void
control_grant_event(struct proxy *px, const struct grant *g,
    const char *event, const char *key, const char *value)
{
	json_t	*o = grants_one_json(g), *f = NULL;

	if (o != NULL)
		f = json_pack("{s:s, s:o, s:o, s:i, s:o, s:o, s:o, s:O, s:O, "
		    "s:s}", "event", event, "sandbox", eventlog_str(g->sandbox),
		    "host", eventlog_str(g->host), "port", g->port, "run_id",
		    g->run[0] ? eventlog_str(g->run) : json_null(), "by",
		    eventlog_str(g->by), "rationale",
		    eventlog_str(g->rationale), "granted",
		    json_object_get(o, "granted"), "expires",
		    json_object_get(o, "expires"), "policy_digest",
		    policy_digest(px->policy->policy));
	if (f != NULL && key != NULL)
		json_object_set_new(f, key, eventlog_str(value));
	if (f == NULL || eventlog_append(px->seclog, f) == -1)
		log_warnx("%s not logged: %s", event, f == NULL ?
		    "out of memory" : eventlog_error(px->seclog));
	json_decref(f);
	json_decref(o);
}

/*
 * text (len bytes) written whole as file, a name that must not be there
 * (O_EXCL), and synced: 0, or -1 with errno and nothing left there.
 */
static int
control_bytes_write(const char *text, size_t len, const char *file,
    mode_t mode)
{
	size_t	 at = 0;
	ssize_t	 n;
	int	 fd, bad, saved;

	if ((fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
	    O_CLOEXEC, mode)) == -1)
		return -1;
	for (bad = 0; !bad && at < len; ) {
		if ((n = write(fd, text + at, len - at)) == -1 &&
		    errno == EINTR)
			continue;
		if ((bad = n <= 0) && n == 0)
			errno = EIO;
		at += n > 0 ? (size_t)n : 0;
	}
	bad = bad || fsync(fd) == -1;
	saved = errno;
	if (close(fd) == -1 && !bad) {
		bad = 1;
		saved = errno;
	}
	if (bad)
		(void)unlink(file);	/* made here: O_EXCL */
	errno = saved;
	return bad ? -1 : 0;
}

/*
 * o (NULL: out of memory) written whole as file (control_bytes_write). A
 * text over CONTROL_GRANTS_FILE_MAX is not written (EFBIG): the proxy
 * reads no more back (control_read), and a registry file it wrote but
 * could not read lost every registration at the next start and raised
 * the floor at every start (atk36a F1, atk15r21 F4).
 */
static int
control_json_write(json_t *o, const char *file, mode_t mode)
{
	char	*text = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;
	size_t	 len = text != NULL ? strlen(text) : 0;
	int	 rv = -1, saved;

	if (text == NULL)
		errno = ENOMEM;
	else if (len > CONTROL_GRANTS_FILE_MAX)
		errno = EFBIG;
	else
		rv = control_bytes_write(text, len, file, mode);
	saved = errno;
	free(text);
	errno = saved;
	return rv;
}

/*
 * o written into a file of this process's own name beside path (proxies
 * sharing the folder must not take it), control_json_write: that name,
 * to be renamed or linked to path, or NULL with errno.
 */
static char *
control_json_tmp(json_t *o, const char *path, mode_t mode)
{
	char	*tmp;

	util_xasprintf(&tmp, "%s.%ld.tmp", path, (long)getpid());
	(void)unlink(tmp);
	if (control_json_write(o, tmp, mode) == -1) {
		free(tmp);
		return NULL;
	}
	return tmp;
}

/*
 * o written whole as path, atomically and durably (control_json_tmp,
 * renamed over path, and the folder synced), so that what a reply called
 * saved survives a crash or a power loss (atk1921g F7: a removed sandbox
 * came back). 0, or -1 with errno (EFBIG: too large to be read back).
 */
static int
control_json_replace(json_t *o, const char *path, mode_t mode)
{
	char	*tmp = control_json_tmp(o, path, mode);
	int	 saved;

	if (tmp == NULL)
		return -1;
	if (rename(tmp, path) == -1) {
		saved = errno;
		(void)unlink(tmp);
		free(tmp);
		errno = saved;
		return -1;
	}
	free(tmp);
	return util_sync_dir(path);
}

/*
 * o written as path unless a file is there already (linked, never
 * renamed over it), durably: 0 written, 1 one was there, -1 with errno.
 * On a volume without hard links (link: EPERM, ENOTSUP) it is created
 * at path itself with O_EXCL and written in place (atk36e F3: the
 * replica's remnant was never written, the taken file never retired): a
 * crash midway leaves a torn file, which the proxy reads as damage and
 * fails closed (control_registry_read).
 */
static int
control_json_create(json_t *o, const char *path, mode_t mode)
{
	char	*tmp = control_json_tmp(o, path, mode);
	int	 rc, saved, nolink;

	if (tmp == NULL)
		return -1;
	rc = link(tmp, path) == -1 ? (errno == EEXIST ? 1 : -1) : 0;
	saved = errno;
	nolink = rc == -1 && (saved == EPERM || saved == ENOTSUP ||
	    saved == EOPNOTSUPP);
	(void)unlink(tmp);
	free(tmp);
	if (nolink && (rc = control_json_write(o, path, mode)) == -1 &&
	    errno == EEXIST)
		rc = 1;
	else if (!nolink)
		errno = saved;
	if (rc == 0 && util_sync_dir(path) == -1)
		return -1;
	return rc;
}

/*
 * The number of the next save of grants.json: above every save tried
 * before (a failed one may have reached the disk), and at least the wall
 * clock in microseconds, so that a start which could read no number (a
 * torn grants.json, one an older proxy wrote) still numbers its saves
 * above those of an earlier life, unless the clock stepped back past them
 * (atk36d F1, F2). A clock past the bound falls back to one above.
 */
static json_int_t
control_grants_next(void)
{
	struct timespec	ts;
	json_int_t	us = -1;

	if (clock_gettime(CLOCK_REALTIME, &ts) == 0 && ts.tv_sec > 0 &&
	    ts.tv_sec < GRANTS_GEN_MAX / 1000000 - 1)
		us = (json_int_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
	return us > control_grants_gen ? us : control_grants_gen + 1;
}

/*
 * grants.json, written whole and atomically, readable by the proxy alone,
 * numbered by control_grants_next(). A good save holds every revoke, so empties the
 * revokes file; a crash between the two (SANDGATE_TEST_CRASH=
 * grants:saved) leaves revokes that the generation shows older. At the
 * bound no save is made (one numbered above it would be refused at the
 * next start, every grant with it, atk36b F2): it fails as a save does.
 */
static int
control_grants_save(struct proxy *px)
{
	int	 bound = control_grants_gen >= GRANTS_GEN_MAX;
	json_t	*arr = bound ? NULL : grants_save_json(px->grants,
		    control_grants_gen = control_grants_next());
	int	 was = control_grants_unsaved;

	if (arr != NULL && control_grants_taken != NULL &&
	    control_grants_took[0] != '\0')
		json_object_set_new(arr, "took",
		    json_string(control_grants_took));
	control_grants_unsaved = control_json_replace(arr, control_grants_path,
	    0600) == -1;
	if (!control_grants_unsaved) {
		control_crash_point("grants", "saved");
		if (px->cfg.instance != NULL ||
		    !control_taken_any(control_grants_path))
			apartfile_clear(control_tomb_path);
		control_taken_retire(&control_grants_taken);
	}
	if (control_grants_unsaved) {
		control_grants_failed = time(NULL);
		if (!was)
			control_grants_unsaved_since = control_grants_failed;
	}
	if (control_grants_unsaved && !was && bound)
		log_warnx("cannot save the grants in %s: its saves are "
		    "numbered up to 2^53 - 1, a number a file of its folder "
		    "gave; revokes are kept in %s; remove both files and give "
		    "the grants again", control_grants_path,
		    control_tomb_path);
	else if (control_grants_unsaved && !was)
		log_warn("cannot save the grants %s (tried again every "
		    "second; until then a restart would bring back the grants "
		    "of the last save)", control_grants_path);
	else if (!control_grants_unsaved && was)
		log_info("the grants are saved again in %s",
		    control_grants_path);
	json_decref(arr);
	return control_grants_unsaved ? -1 : 0;
}

/*
 * Add to o (returned) whether the grants in force are saved, so survive
 * a restart: "grants_saved", and "grants_unsaved_since" (the first
 * failure of the saves failing now) and "grants_save_failed" (the last
 * failure, kept once saved again), null when there is none.
 */
static json_t *
control_grants_saved(json_t *o)
{
	char	since[32], last[32];

	grants_time(control_grants_unsaved_since, since, sizeof(since));
	grants_time(control_grants_failed, last, sizeof(last));
	json_object_set_new(o, "grants_saved",
	    json_boolean(!control_grants_unsaved));
	json_object_set_new(o, "grants_unsaved_since", control_grants_unsaved ?
	    json_string(since) : json_null());
	json_object_set_new(o, "grants_save_failed", control_grants_failed ?
	    json_string(last) : json_null());
	return o;
}

/* What a start reads: grants.json (path) and the revokes not in it. */
struct control_load {
	struct proxy		*px;
	const char		*path;
	struct grants_tombs	*tombs;
	size_t			 refused;
};

/*
 * Each saved grant: restored (an event) unless a revoke not in
 * grants.json ends it (taken out after the load), or refused (a
 * warning).
 */
static void
control_restore_cb(const struct grant *g, const char *cause, void *arg)
{
	struct control_load	*l = arg;

	if (cause == NULL && !grants_tombs_ends(l->tombs, g))
		control_grant_event(l->px, g, "grant.restored", NULL, NULL);
	else if (cause != NULL) {
		log_warnx("%s: grant of %s%s%.0d to %s refused: %s", l->path,
		    g->host, g->port != 0 ? ":" : "", g->port, g->sandbox,
		    cause);
		l->refused++;
	}
}

static int
control_tomb_pick(const struct grant *g, const void *key)
{
	const struct control_load	*l = key;

	return grants_tombs_ends(l->tombs, g);
}

static void
control_tomb_cb(const struct grant *g, void *arg)
{
	log_info("%s: grant of %s:%d to %s stays revoked", (char *)arg,
	    g->host, g->port, g->sandbox);
}

/*
 * A revoke grants.json could not take, appended to its own file and
 * synced before the revoke is answered, so a restart keeps it revoked
 * (grants_tomb_line). 0, or -1 with a warning.
 */
static int
control_tomb_add(const struct grant *g)
{
	char	*line = grants_tomb_line(g, time(NULL), control_grants_gen);
	int	 bad = apartfile_add(control_tomb_path, line);

	if (bad)
		log_warn("%s: cannot keep the revoke of %s:%d to %s either: a "
		    "restart before grants.json is saved would bring it back",
		    control_tomb_path, g->host, g->port, g->sandbox);
	free(line);
	return bad;
}

/*
 * A revoke (g) kept in the revokes file of a taken file that stays too
 * (control_grants_stay), synced before the revoke is answered: 0, or -1
 * with a warning, and the answer says it is not saved (atk46c M2: it
 * said saved, and a start with the own file lost had it in force).
 */
static int
control_stays_revoke(const struct grant *g)
{
	char	*tomb, *line;
	int	 rv;

	if (control_grants_stays == NULL)
		return 0;
	util_xasprintf(&tomb, "%s.revoked", control_grants_stays);
	line = grants_tomb_line(g, time(NULL), control_grants_gen);
	if ((rv = apartfile_add(tomb, line)) == -1)
		log_warn("%s: cannot keep the revoke of %s:%d to %s: a start "
		    "that takes %s again (this replica's own file lost) "
		    "would bring it back", tomb, g->host, g->port,
		    g->sandbox, control_grants_stays);
	free(line);
	free(tomb);
	return rv;
}

/*
 * A grants file (grants.json, its revokes): control_state_read, but a
 * link is followed (an admin may keep them elsewhere). NULL when there
 * is none; NULL with *bad set, and a warning, when one is there but
 * cannot be used: a FIFO planted there stalled the start (atk1921l F5).
 */
static char *
control_file_read(const char *path, size_t *len, int *bad)
{
	const char	*why;
	char		*text;

	if ((text = control_read(path, 0, len, &why)) == NULL && why != NULL) {
		log_warnx("%s: %s", path, why);
		*bad = 1;
	}
	return text;
}

/*
 * NAME.json, or NAME-INSTANCE.json with instance, in the folder of the
 * control socket path: the folder the controller owns.
 */
static char *
control_beside(const char *path, const char *name, const char *instance)
{
	const char	*slash = strrchr(path, '/');
	char		*s;

	util_xasprintf(&s, "%.*s/%s%s%s.json", slash ? (int)(slash - path) :
	    1, slash ? path : ".", name, instance ? "-" : "",
	    instance ? instance : "");
	return s;
}

/* The SHA-256 of text in hex into out (65 bytes): 0, or -1 (out empty). */
static int
control_sha256_hex(const char *text, size_t len, char *out)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	n = 0, i;

	out[0] = '\0';
	if (EVP_Digest(text, len, md, &n, EVP_sha256(), NULL) != 1 ||
	    n != 32)
		return -1;
	for (i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	return 0;
}

/*
 * The SHA-256 of path's bytes in hex into out (65 bytes): 0, or -1 (out
 * empty) when it cannot be read.
 */
static int
control_file_digest(const char *path, char *out)
{
	size_t	 len;
	int	 bad = 0, rv = -1;
	char	*text = control_file_read(path, &len, &bad);

	out[0] = '\0';
	if (text != NULL)
		rv = control_sha256_hex(text, len, out);
	free(text);
	return rv;
}

/*
 * A taken file (taken) that stays where it is: no save retires it, and
 * each revoke made from now on is also kept in its revokes file, so a
 * start that takes it again (this replica's own file lost) keeps them
 * revoked (atk45d K1: the revoke, saved in the own file alone, came
 * back). Its grants stay in force only through the own file.
 */
static void
control_grants_stay(char *taken, const char *why)
{
	char	*tomb;

	log_warnx("%s: it stays (%s); no save removes it, and each revoke is "
	    "kept in %s.revoked too", taken, why, taken);
	free(control_grants_stays);
	control_grants_stays = taken;
	/* room for them made now, as for every revokes file (apartfile.h) */
	util_xasprintf(&tomb, "%s.revoked", taken);
	apartfile_create(tomb, "a revoke");
	free(tomb);
}

/*
 * A replica's own grants file is there, yet the file it took
 * (NAME.json.taken-by-INSTANCE) is still there too. When the own file
 * was used whole and says it took that very file ("took", its digest,
 * which only the save of a take used whole writes), the start stopped
 * between that save and the removal (atk44d E3): it goes at the next
 * good save, made now. Otherwise the own file may not hold what the
 * taken one held (torn, its revokes unreadable, a grant refused, or made
 * whole since by a save of a start that could not use it: atk45d K3,
 * K3b), so the taken file may be the one good record (atk45a F1, F2):
 * it is kept as a copy to read (control_grants_aside, a rename), never
 * taken again (atk45c N1, N2); where even that rename fails it stays
 * (control_grants_stay).
 */
static void
control_grants_taken_left(struct proxy *px, const char *old, int whole,
    const char *took)
{
	char	*taken, *tomb, digest[65];

	util_xasprintf(&taken, "%s.taken-by-%s", old, px->cfg.instance);
	if (access(taken, F_OK) == -1) {
		free(taken);
		return;
	}
	if (whole != 1 || took[0] == '\0' || control_file_digest(taken,
	    digest) == -1 || strcmp(took, digest) != 0) {
		util_xasprintf(&tomb, "%s.revoked", taken);
		if (control_grants_aside(taken, NULL, 0, "left by a start "
		    "that stopped before removing it, beside an own file "
		    "that does not hold it whole") == 0) {
			if (unlink(tomb) == -1 && errno != ENOENT)
				log_warn("%s: cannot remove it", tomb);
			free(taken);
		} else
			control_grants_stay(taken, "it could not be kept as "
			    "a copy");
		free(tomb);
		return;
	}
	log_warnx("%s: left by a start that stopped before removing it; %s "
	    "holds what it held", taken, control_grants_path);
	free(control_grants_taken);
	control_grants_taken = taken;
	(void)control_grants_save(px);
}

/*
 * grants.json, or grants-NAME.json with --instance NAME: replicas whose
 * control sockets share a folder each keep their own, where one file
 * held only the grants of the last replica to save. A replica with no
 * file of its own yet takes grants.json (control_grants_take).
 */
static void
control_grants_open(struct proxy *px, const char *sock)
{
	char	*old, took[65] = "";
	int	 whole;

	control_grants_path = control_beside(sock, "grants",
	    px->cfg.instance);
	util_xasprintf(&control_tomb_path, "%s.revoked", control_grants_path);
	apartfile_create(control_tomb_path, "a revoke");
	old = control_beside(sock, "grants", NULL);
	if (strcmp(old, control_grants_path) != 0 &&
	    access(control_grants_path, F_OK) == -1 && errno == ENOENT)
		control_grants_take(px, old);
	else {
		whole = control_grants_load(px, control_grants_path,
		    control_tomb_path, NULL, took);
		if (strcmp(old, control_grants_path) != 0)
			control_grants_taken_left(px, old, whole, took);
	}
	free(old);
}

/*
 * old (NAME.json, what a proxy before replicas wrote) is taken once, by
 * the first replica to rename it to NAME.json.taken-by-INSTANCE: it is
 * never written again, so a replica taking it later (a scale-up, or one
 * whose own file was lost) would bring back what was revoked or
 * unregistered since. Replicas starting together race for the rename;
 * one wins, the others start without it (the controller sends every
 * change to each). The rename never replaces a taken file already there
 * (one a crash left, or one that stays: atk46a L2): that one is taken
 * again and old left for a later take. Its revokes (NAME.json.revoked)
 * are not moved: a second rename could fail, or be killed, or move the
 * revokes of one file beside another (atk45d K4, K5; atk46a L3, L3b);
 * they are read where they are (control_grants_take), and a proxy
 * without --instance keeps them while a taken file is there
 * (control_taken_any). The taken path, to be removed once the
 * replica's own file is saved, or NULL.
 */
static char *
control_take(const char *old, const char *instance)
{
	char	*taken;

	util_xasprintf(&taken, "%s.taken-by-%s", old, instance);
	if (renameat2(AT_FDCWD, old, AT_FDCWD, taken, RENAME_NOREPLACE) == 0)
		log_info("%s is taken as %s", old, taken);
	else if (errno == EEXIST)
		log_warnx("%s: left by a start that stopped before it was "
		    "saved as this replica's own, or that stays: taken "
		    "again; %s is left for a later take", taken, old);
	else if (errno != ENOENT)
		log_warn("%s: cannot take it as %s", old, taken);
	if (access(taken, F_OK) == 0)
		return taken;
	free(taken);
	return NULL;
}

/*
 * A save of the replica's own file now holds what the taken file held
 * (*taken, NULL when none is left): it goes, with its revokes, and is
 * forgotten. Called by the first good save, at start or later (a save
 * failing at start is tried again every second): until then a restart
 * takes it again. One that cannot be removed stays (control_grants_stay:
 * atk46a L1, forgotten, a later revoke did not reach it).
 */
static void
control_taken_retire(char **taken)
{
	char	*tomb;

	if (*taken == NULL)
		return;
	if (unlink(*taken) == -1 && errno != ENOENT) {
		log_warn("%s: cannot remove it", *taken);
		control_grants_took[0] = '\0';
		control_grants_stay(*taken, "it could not be removed");
		*taken = NULL;
		return;
	}
	util_xasprintf(&tomb, "%s.revoked", *taken);
	if (unlink(tomb) == -1 && errno != ENOENT)
		log_warn("%s: cannot remove it", tomb);
	free(tomb);
	free(*taken);
	*taken = NULL;
	control_grants_took[0] = '\0';
}

/*
 * 1 when a replica's taken file (control_take) is in the folder of
 * path: a proxy without --instance then keeps the revokes of grants.json
 * (path's), which that file's next take reads (atk46a L6: a start of the
 * single proxy between a replica's take and its save emptied them, and
 * that replica then took its file with a revoked grant in force).
 */
static int
control_taken_any(const char *path)
{
	struct dirent	*de;
	DIR		*d;
	const char	*slash = strrchr(path, '/'), *base, *rest;
	char		*dir;
	size_t		 blen;
	int		 any = 0;

	base = slash != NULL ? slash + 1 : path;
	blen = strlen(base);
	util_xasprintf(&dir, "%.*s", slash != NULL ? (int)(slash - path) : 1,
	    slash != NULL ? path : ".");
	if ((d = opendir(dir)) == NULL)
		any = 1;	/* cannot tell: kept */
	while (d != NULL && !any && (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, base, blen) != 0 ||
		    strncmp(de->d_name + blen, ".taken-by-", 10) != 0)
			continue;
		rest = de->d_name + blen + 10;
		any = strstr(rest, ".unused-") == NULL &&
		    (strlen(rest) < 8 || strcmp(rest + strlen(rest) - 8,
		    ".revoked") != 0);
	}
	if (d != NULL)
		closedir(d);
	free(dir);
	return any;
}

/*
 * A replica's registry file exists but the file it took (old, as
 * NAME.json.taken-by-INSTANCE) is still there: no good save since the
 * take, so the old .gone and .removed may be in no file of its own yet
 * (atk15r21 F1: its own file was written, its .gone was not, and the
 * next start, no longer its first, lost every removal of the single
 * proxy). 1, the taken file then retired by the next good save, or 0.
 */
static int
control_taken_again(const char *old, const char *instance)
{
	char	*taken;

	util_xasprintf(&taken, "%s.taken-by-%s", old, instance);
	if (access(taken, F_OK) == 0) {
		control_registry_taken = taken;
		return 1;
	}
	free(taken);
	return 0;
}

/*
 * A replica with no grants file of its own takes grants.json, read with
 * the revokes beside it (those this replica kept there while it stayed)
 * and those of grants.json (NAME.json.revoked, where they are). The
 * file is the replica's, to retire, only once the load has decided (a
 * save made inside it, the floors' included, retired it before: atk46a
 * L4). A file used whole is saved as the replica's own at once, the save
 * saying it took it ("took"), which retires the taken one; one not used
 * whole but kept as a copy goes at the next good save (none is made
 * now: with revokes unreadable it would empty them). One neither used
 * whole nor kept stays (control_grants_stay: atk45a F3, saved and so
 * retired at the take it was lost; atk45d K2, retired at the first
 * grant's save, the same).
 */
static void
control_grants_take(struct proxy *px, const char *old)
{
	char	*taken, *tomb, *oldtomb;
	int	 got;

	if ((taken = control_take(old, px->cfg.instance)) == NULL) {
		control_grants_load(px, control_grants_path,
		    control_tomb_path, NULL, NULL);
		return;
	}
	util_xasprintf(&tomb, "%s.revoked", taken);
	util_xasprintf(&oldtomb, "%s.revoked", old);
	got = control_grants_load(px, taken, tomb, oldtomb, NULL);
	if (got == -1)
		control_grants_stay(taken, "it could not be used whole nor "
		    "kept as a copy");
	else if (got == 0)
		control_grants_taken = taken;	/* the load saved if it may */
	else {
		if (control_file_digest(taken, control_grants_took) == -1)
			control_grants_took[0] = '\0';
		control_grants_taken = taken;
		(void)control_grants_save(px);
	}
	free(tomb);
	free(oldtomb);
}

/*
 * A revokes file (control_file_read), its revokes added to tombs. Its
 * every line must be a revoke the proxy writes: one that is damaged
 * (torn, a NUL, a key twice, not a revoke) may be the revoke of any
 * grant, so the file is not usable (*bad set, a warning) and no grant is
 * restored (atk15r21 F3: the line was passed over and the grant it
 * revoked came back).
 */
static void
control_tomb_read(const char *path, struct grants_tombs *tombs, int *bad)
{
	size_t		 len;
	char		*text = control_file_read(path, &len, bad);
	const char	*why;

	if (text != NULL && (why = grants_tombs_add(tombs, text, len)) !=
	    NULL) {
		log_warnx("%s: %s", path, why);
		*bad = 1;
	}
	free(text);
}

/*
 * The revokes to apply to grants loaded at start, read once into a
 * table (a walk of the files per grant made a start of 300 grants and
 * 8 MiB of revokes take 99 s, atk35a F2): those of tomb (the file
 * loaded's), also's (NULL: none; where a taken file's could not be moved)
 * and those this replica kept apart itself (control_tomb_path:
 * a revoke made while the save of a taken file failed went there),
 * whatever file the grants come from. *bad set when one cannot be used.
 */
static struct grants_tombs *
control_tombs_read(const char *tomb, const char *also, int *bad)
{
	struct grants_tombs	*tombs;

	if ((tombs = grants_tombs_new()) == NULL) {
		log_warnx("%s: out of memory", tomb);
		*bad = 1;
		return NULL;
	}
	control_tomb_read(tomb, tombs, bad);
	if (also != NULL)
		control_tomb_read(also, tombs, bad);
	if (strcmp(tomb, control_tomb_path) != 0)
		control_tomb_read(control_tomb_path, tombs, bad);
	return tombs;
}

/*
 * The save counter at start: above every number the files hold (a
 * revokes file or grants.json damaged past them too, as far as they can
 * be read), never lower (atk36b F1).
 */
static void
control_grants_resume(const struct grants_tombs *tombs, const char *text,
    size_t len)
{
	json_int_t	gen;

	if (tombs != NULL && grants_tombs_after(tombs) > control_grants_gen)
		control_grants_gen = grants_tombs_after(tombs);
	if (text != NULL && (gen = grants_text_generation(text, len)) >
	    control_grants_gen)
		control_grants_gen = gen;
}

/*
 * A copy of path's text kept before (PATH.unused-*, this uid's regular
 * file, the same bytes), as a malloc'd name, or NULL. A start that keeps
 * failing the same way (a revokes file that stays unreadable: no save
 * replaces path) would otherwise add a copy at every start. At most
 * CONTROL_KEPT_LOOK files of the same size are read (atk45a G1: 300 of
 * 8 MiB added 2 s to a start); past them a copy is made.
 */
static char *
control_grants_kept(const char *path, const char *text, size_t len)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	const char	*slash = strrchr(path, '/'), *base, *why;
	char		*dir, *name = NULL, *kept;
	size_t		 blen, klen;
	int		 fd, looked = 0;

	base = slash != NULL ? slash + 1 : path;
	blen = strlen(base);
	util_xasprintf(&dir, "%.*s", slash != NULL ? (int)(slash - path) : 1,
	    slash != NULL ? path : ".");
	if ((fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (d = fdopendir(fd)) == NULL) {
		if (fd != -1)
			close(fd);
		free(dir);
		return NULL;
	}
	while (name == NULL && looked < CONTROL_KEPT_LOOK &&
	    (de = readdir(d)) != NULL) {
		if (strncmp(de->d_name, base, blen) != 0 ||
		    strncmp(de->d_name + blen, ".unused-", 8) != 0 ||
		    fstatat(fd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == -1 ||
		    !S_ISREG(st.st_mode) || st.st_uid != geteuid() ||
		    (size_t)st.st_size != len)
			continue;
		looked++;
		util_xasprintf(&name, "%s/%s", dir, de->d_name);
		kept = control_read(name, O_NOFOLLOW, &klen, &why);
		if (kept == NULL || klen != len || memcmp(kept, text,
		    len) != 0) {
			free(name);
			name = NULL;
		}
		free(kept);
	}
	closedir(d);
	free(dir);
	return name;
}

/*
 * A grants.json (path, text) a start could not use whole, kept beside
 * it as PATH.unused-SECONDS (-N added when that name is taken; why in
 * the warning) before a save writes over it, so that no grant it held is
 * lost to an admin, though those refused are not in force. A copy is
 * kept, and path left as it is until a save replaces it: a grant in
 * force is never only in memory, and the file's save number stays on
 * disk (atk44b F1, F3: a rename before the save lost both when the save
 * failed). The copy is to read, not to put back: a grant in it may have
 * been revoked since (guarantees.md G22, an older file put back). With
 * no text (not a regular file, unreadable, too large) path itself is
 * moved there, which also lets saves replace it. 0, or -1 when nothing
 * could be kept (then no save is made at once: atk44d E2, a save that
 * fit where the copy did not lost what the file held).
 */
static int
control_grants_aside(const char *path, const char *text, size_t len,
    const char *why)
{
	char	*to = NULL;
	time_t	 now = time(NULL);
	int	 i, rv = -1;

	if (text != NULL && (to = control_grants_kept(path, text,
	    len)) != NULL) {
		log_warnx("%s: its copy is kept already as %s (%s)", path, to,
		    why);
		free(to);
		return 0;
	}
	for (i = 0; i < 100 && rv == -1; i++) {
		free(to);
		if (i == 0)
			util_xasprintf(&to, "%s.unused-%lld", path,
			    (long long)now);
		else
			util_xasprintf(&to, "%s.unused-%lld-%d", path,
			    (long long)now, i);
		if (text == NULL)
			rv = renameat2(AT_FDCWD, path, AT_FDCWD, to,
			    RENAME_NOREPLACE);
		else
			rv = control_bytes_write(text, len, to, 0600);
		if (rv == -1 && errno != EEXIST)
			break;
	}
	if (rv == 0)
		log_warnx("%s: %s %s (%s)", path, text != NULL ?
		    "a copy kept as" : "kept as", to, why);
	else if (errno != ENOENT)
		log_warn("%s: cannot keep it as %s, the next save of grants "
		    "replaces it", path, to);
	free(to);
	return rv;
}

/*
 * "took" of a grants file's text (control_grants_save) into took (65
 * bytes), or empty.
 */
static void
control_text_took(const char *text, size_t len, char *took)
{
	json_t		*top = json_loadb(text, len, 0, NULL);
	const char	*s = json_string_value(json_object_get(top, "took"));

	took[0] = '\0';
	if (s != NULL && strlen(s) == 64)
		memcpy(took, s, 65);
	json_decref(top);
}

/*
 * The grants saved before a restart in path (grants_load_text, the
 * fuzzed reader), each logged as grant.restored, less those a revoke in
 * the revokes files (tomb, also: control_tombs_read) ends (saved at once
 * into grants.json, which empties that file), then the floors of the
 * policy in force (control_grants_floor); those expired since go at the
 * tick. A revokes file that is there but cannot be used (not a regular
 * file, unreadable, too large, a damaged line) fails closed: no grant is
 * restored, as a revoke in it would be lost. took (65 bytes, or NULL):
 * the file's "took". 1 when the file and its revokes were used whole; 0
 * when any of it was not (damaged, a grant refused) and a copy of the
 * file is kept (control_grants_aside); -1 when not and no copy could be
 * kept. Either way no save is for the caller to make: the load made the
 * one it may, none when no copy was kept (atk44d E2: a save that fit
 * where the copy did not lost what the file held).
 */
static int
control_grants_load(struct proxy *px, const char *path, const char *tomb,
    const char *also, char *took)
{
	struct control_load	 l = { px, path, NULL, 0 };
	char			*text, err[256];
	size_t			 len = 0;
	long			 n = 0;
	int			 bad = 0, badtext = 0, whole = 1, lost = 0;

	if (took != NULL)
		took[0] = '\0';
	l.tombs = control_tombs_read(tomb, also, &bad);
	text = control_file_read(path, &len, &badtext);
	control_grants_resume(l.tombs, text, len);
	if (text != NULL && took != NULL)
		control_text_took(text, len, took);
	if (bad) {
		/* no save: it would empty the revokes file */
		log_warnx("%s: revokes that cannot be read; starting with no "
		    "grants", tomb);
		if (text != NULL || badtext)
			lost = control_grants_aside(path, text, len, "none of "
			    "its grants in force") == -1;
		free(text);
		grants_tombs_free(l.tombs);
		control_grants_floor(px);
		return lost ? -1 : 0;
	}
	if (text == NULL && badtext) {
		log_warnx("%s: starting with no grants", path);
		lost = control_grants_aside(path, NULL, 0, "none of its "
		    "grants in force") == -1;
		whole = 0;
	} else if (text != NULL &&
	    (n = grants_load_text(px->grants, text, len, time(NULL),
	    grants_clock(), control_restore_cb, &l, err, sizeof(err))) ==
	    -1) {
		log_warnx("%s: %s; starting with no grants", path, err);
		lost = control_grants_aside(path, text, len, "none of its "
		    "grants in force") == -1;
		whole = 0;
	} else if (text != NULL && n > 0)
		log_info("%ld grants in force again from %s", n, path);
	if (l.refused > 0) {
		lost = control_grants_aside(path, text, len, "some of its "
		    "grants refused") == -1;
		whole = 0;
	}
	/* the padding of the revokes file is no revoke (apartfile.h) */
	if (grants_tombs_count(l.tombs) > 0)
		(void)grants_drop(px->grants, control_tomb_pick, &l,
		    control_tomb_cb, (void *)tomb);
	/* after the drop (a save empties the revokes file): what is in
	 * force saved at once over what was kept aside */
	if (!lost && (!whole || grants_tombs_count(l.tombs) > 0))
		(void)control_grants_save(px);
	free(text);
	grants_tombs_free(l.tombs);
	control_grants_floor(px);
	return whole ? 1 : lost ? -1 : 0;
}

struct control_floor {
	struct proxy	*px;
	char		*why;
	size_t		 size;
};

static int
control_floor_pick(const struct grant *g, const void *key)
{
	const struct control_floor	*f = key;
	struct host			 h;
	const char			*cause;

	return host_normalize(g->host, strlen(g->host), &h, &cause) == -1 ||
	    policy_grant_check(f->px->policy->policy, &h, (uint16_t)g->port,
	    f->why, f->size) == -1;
}

static void
control_floor_cb(const struct grant *g, void *arg)
{
	struct control_floor	*f = arg;

	control_grant_event(f->px, g, "grant.ended", "rule", f->why);
}

void
control_grants_floor(struct proxy *px)
{
	struct control_floor	f;
	char			why[1024];

	if (px->grants == NULL || control_grants_path == NULL)
		return;
	why[0] = '\0';
	f.px = px;
	f.why = why;
	f.size = sizeof(why);
	if (grants_drop(px->grants, control_floor_pick, &f, control_floor_cb,
	    &f) > 0)
		(void)control_grants_save(px);
}

/*
 * host, port, sandbox and by (control_peer_by) of a request body; 0 or
 * -1 with *cause.
 */
static int
control_grant_read(struct evhttp_request *req, json_t *o, struct grant *g,
    int *ok, const char **cause)
{
	struct host	 h;
	const char	*s;
	json_int_t	 port;

	*ok = 0;
	memset(g, 0, sizeof(*g));
	s = json_string_value(json_object_get(o, "sandbox"));
	if (util_strlcpy(g->sandbox, s ? s : "", sizeof(g->sandbox)) >=
	    sizeof(g->sandbox)) {
		*cause = "sandbox is longer than 64 bytes";
		return -1;
	}
	s = json_string_value(json_object_get(o, "host"));
	port = json_integer_value(json_object_get(o, "port"));
	if (s == NULL || host_normalize(s, strlen(s), &h, cause) == -1)
		return -1;
	snprintf(g->host, sizeof(g->host), "%s", h.name);
	g->port = port >= 1 && port <= 65535 ? (int)port : 0;
	s = json_string_value(json_object_get(o, "by"));
	if (s != NULL && control_peer_by(req, s, g->by, sizeof(g->by)) == -1) {
		*cause = "cannot tell who asks (SO_PEERCRED)";
		return -1;
	}
	*ok = 1;
	return 0;
}

/* the longest by: a 32-byte name and a peer address of 63 (atk41g F1) */
_Static_assert(32 + sizeof(" (control API, )") - 1 + 63 <= GRANTS_BY_MAX,
    "who gave a grant over the TCP control API fits whole in its by");

/*
 * Who gives or revokes a grant: the uid is the control-socket peer's
 * (SO_PEERCRED), never what the client says; the name is the client's
 * word (the controller sends "NAME (uid N)" or, under sudo, "NAME (sudo,
 * uid 0)"), kept only when it is a plain login name, and "sudo" only
 * when the peer is root. 0, or -1 when the peer is unknown.
 */
static int
control_peer_by(struct evhttp_request *req, const char *claim, char *by,
    size_t size)
{
	struct bufferevent	*bev;
	struct ucred		 cr;
	socklen_t		 len = sizeof(cr);
	size_t			 n = strcspn(claim, " ");
	char			 peer[64];
	int			 sudo;

	bev = evhttp_connection_get_bufferevent(
	    evhttp_request_get_connection(req));
	if (bev == NULL)
		return -1;
	if (control_peer_tcp(bufferevent_getfd(bev), peer,
	    sizeof(peer)) == 0)
		cr.uid = (uid_t)-1;
	else if (getsockopt(bufferevent_getfd(bev), SOL_SOCKET, SO_PEERCRED,
	    &cr, &len) == -1)
		return -1;
	if (n == 0 || n > 32 || strspn(claim, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") != n) {
		claim = "?";
		n = 1;
	}
	sudo = cr.uid == 0 && strstr(claim + n, " (sudo, ") == claim + n;
	if (peer[0] != '\0')
		snprintf(by, size, "%.*s (control API, %s)", (int)n, claim,
		    peer);
	else
		snprintf(by, size, "%.*s (%suid %u)", (int)n, claim,
		    sudo ? "sudo, " : "", (unsigned)cr.uid);
	return 0;
}

/*
 * A peer of the TCP control API (ctltcp.h): its address into peer
 * (at least 57 bytes), 0; -1 (peer "") on the unix socket, where
 * SO_PEERCRED says who asks. Numeric, an IPv6 zone by its index: an
 * interface's name is any bytes, which would have to be escaped, and
 * then it was cut or refused in a grant's by (atk41g2 F1).
 */
static int
control_peer_tcp(int fd, char *peer, size_t size)
{
	struct sockaddr_storage	 ss;
	struct sockaddr_in6	*s6 = (struct sockaddr_in6 *)&ss;
	socklen_t		 len = sizeof(ss);
	char			 a[INET6_ADDRSTRLEN];

	peer[0] = '\0';
	if (getsockname(fd, (struct sockaddr *)&ss, &len) == -1 ||
	    (ss.ss_family != AF_INET && ss.ss_family != AF_INET6))
		return -1;
	len = sizeof(ss);
	if (getpeername(fd, (struct sockaddr *)&ss, &len) == -1 ||
	    inet_ntop(ss.ss_family, ss.ss_family == AF_INET ?
	    (void *)&((struct sockaddr_in *)&ss)->sin_addr :
	    (void *)&s6->sin6_addr, a, sizeof(a)) == NULL)
		snprintf(peer, size, "?");
	else if (ss.ss_family == AF_INET6 && s6->sin6_scope_id != 0)
		snprintf(peer, size, "%s%%%u", a,
		    (unsigned)s6->sin6_scope_id);
	else
		snprintf(peer, size, "%s", a);
	return 0;
}

/*
 * POST /grants {"sandbox","host","port","seconds","rationale","by",
 * "run_id"?}: within what admins allow (policy_grant_check), else 403
 * naming the rule.
 */
static void
control_grant_add(struct proxy *px, struct evhttp_request *req)
{
	json_t		*o = control_body(req);
	struct grant	 g;
	struct host	 h;
	const char	*cause = "host is required", *s;
	char		 why[1024];
	json_int_t	 secs;
	int		 ok, saved;

	if (o == NULL)
		return;
	if (control_grant_read(req, o, &g, &ok, &cause) == -1) {
		control_reply(req, 400, json_pack("{s:s}", "error", cause));
		goto out;
	}
	secs = json_integer_value(json_object_get(o, "seconds"));
	s = json_string_value(json_object_get(o, "run_id"));
	if (util_strlcpy(g.run, s ? s : "", sizeof(g.run)) >= sizeof(g.run)) {
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "run_id is longer than 64 bytes"));
		goto out;
	}
	s = json_string_value(json_object_get(o, "rationale"));
	if (s != NULL && util_strlcpy(g.rationale, s, sizeof(g.rationale)) >=
	    sizeof(g.rationale)) {
		control_reply(req, 400, json_pack("{s:s}", "error",
		    "rationale is longer than 512 bytes"));
		goto out;
	}
	if (secs < 1 || secs > GRANTS_SECS_MAX)
		secs = 0;	/* refused by grants_add */
	g.granted = time(NULL);
	g.expires = g.granted + (time_t)secs;
	g.deadline = grants_clock() + (time_t)secs;
	(void)host_normalize(g.host, strlen(g.host), &h, &cause);
	if (policy_grant_check(px->policy->policy, &h, (uint16_t)g.port, why,
	    sizeof(why)) == -1) {
		control_reply(req, 403, json_pack("{s:s}", "error", why));
		goto out;
	}
	if (grants_add(px->grants, &g, &cause) == -1) {
		control_reply(req, 400, json_pack("{s:s}", "error", cause));
		goto out;
	}
	saved = control_grants_save(px) == 0;
	control_grant_event(px, &g, "grant.added", NULL, NULL);
	control_reply(req, 200, control_grants_saved(json_pack("{s:b, s:o, "
	    "s:b}", "ok", 1, "grant", grants_one_json(&g), "saved", saved)));
out:
	json_decref(o);
}

struct control_revoke {
	struct proxy	*px;
	const char	*by;
	time_t		 granted;	/* the newest removed (for older readers) */
};

static void
control_revoke_cb(const struct grant *g, void *arg)
{
	struct control_revoke	*r = arg;

	if (g->granted > r->granted)
		r->granted = g->granted;

	control_grant_event(r->px, g, "grant.revoked", "revoked_by",
	    r->by);
}

/* POST /grants/revoke {"sandbox","host","port","by"}: tunnels close. */
static void
control_grant_revoke(struct proxy *px, struct evhttp_request *req)
{
	json_t			*o = control_body(req);
	struct grant		 g;
	struct control_revoke	 r;
	const char		*cause = "host is required";
	size_t			 n;
	unsigned		 closed;
	int			 ok, saved, apart = 0, beside;

	if (o == NULL)
		return;
	if (control_grant_read(req, o, &g, &ok, &cause) == -1 ||
	    g.by[0] == '\0') {
		control_reply(req, 400, json_pack("{s:s}", "error", !ok ?
		    cause : "by is required"));
		goto out;
	}
	r.px = px;
	r.by = g.by;
	r.granted = 0;
	n = grants_remove(px->grants, g.sandbox, g.host, g.port,
	    control_revoke_cb, &r);
	if (n == 0) {
		control_reply(req, 404, json_pack("{s:s}", "error",
		    "no such grant"));
		goto out;
	}
	g.granted = r.granted;
	/* first: a kill after the own file's save lost it there (atk46a L5) */
	beside = control_stays_revoke(&g) == 0;
	if (!(saved = control_grants_save(px) == 0))
		saved = apart = control_tomb_add(&g) == 0;
	closed = conn_revoke(px);
	control_reply(req, 200, control_grants_saved(json_pack("{s:b, s:I, "
	    "s:I, s:b, s:b, s:b}", "ok", 1, "removed", (json_int_t)n, "closed",
	    (json_int_t)closed, "saved", saved && beside, "saved_apart", apart,
	    "saved_beside_taken", beside)));
out:
	json_decref(o);
}

static void
control_grants_list(struct proxy *px, struct evhttp_request *req)
{
	struct evkeyvalq	 q;

	evhttp_parse_query_str(evhttp_uri_get_query(
	    evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	control_reply(req, 200, control_grants_saved(json_pack("{s:o}",
	    "grants", grants_json(px->grants, evhttp_find_header(&q,
	    "sandbox")))));
	evhttp_clear_headers(&q);
}

static void
control_expire_cb(const struct grant *g, void *arg)
{
	control_grant_event(arg, g, "grant.expired", NULL, NULL);
}

void
control_grants_tick(struct proxy *px)
{
	unsigned	closed;

	/*
	 * the registry's save, tried again as the grants'; and the removed
	 * sandboxes' once a refused token kept an entry longer (conn.c), so
	 * a restart does not lose it (atk1921i F4)
	 */
	if (control_registry_unsaved && control_registry_path != NULL)
		(void)control_registry_save(px);
	else if (control_registry_path != NULL &&
	    registry_gone_dirty(px->registry))
		(void)control_gone_save(px);
	if (px->grants == NULL)
		return;
	if (grants_expire(px->grants, grants_clock(), control_expire_cb,
	    px) == 0) {
		if (control_grants_unsaved && control_grants_path != NULL)
			(void)control_grants_save(px);
		return;
	}
	if (control_grants_path != NULL)
		(void)control_grants_save(px);
	closed = conn_revoke(px);
	if (closed > 0)
		log_info("%u connections closed: their grant expired", closed);
}

static void
control_reload(struct proxy *px, struct evhttp_request *req)
{
	json_error_t	 err;
	char		*errors;
	json_t		*arr;

	if (proxy_reload(px, &errors) == 0) {
		/* saved: false when grants it ended are not saved yet */
		control_reply(req, 200, json_pack("{s:b, s:s, s:b}", "ok", 1,
		    "digest", policy_digest(px->policy->policy), "saved",
		    !control_grants_unsaved));
		return;
	}
	arr = errors ? json_loads(errors, 0, &err) : NULL;
	free(errors);
	control_reply(req, 422, json_pack("{s:b, s:o}", "ok", 0, "errors",
	    arr ? arr : json_array()));
}

/*
 * For tests: SANDGATE_TEST_CRASH=registry:WHAT kills the proxy there, as
 * SIGKILL or a power loss would: registry:marked once the unsure marks
 * are written (control_registry_unsure), registry:gone-saved between the
 * .gone and the registry file of a save; grants:saved between a good
 * save of grants.json and the emptying of its revokes file.
 */
static void
control_crash_point(const char *where, const char *what)
{
	const char	*want = getenv("SANDGATE_TEST_CRASH");
	size_t		 n = strlen(where);

	if (want != NULL && strncmp(want, where, n) == 0 && want[n] == ':' &&
	    strcmp(want + n + 1, what) == 0)
		raise(SIGKILL);
}

/*
 * What the registry file holds: the sandboxes (the unsure ones first,
 * "unsure_first" counting them) and the floor, and with removals the removed sandboxes and the clock
 * they age by too, as in .gone. The floor is always there, so the marks
 * and the floor they need are in one atomic write, and so is how many
 * removals .gone keeps ("kept"), so a start finding none there knows
 * one was lost (atk15r22 F1); the removals when
 * that file must stand alone, written before .gone (atk15r21 F1, F2: a
 * crash or a full folder between the two writes lost the floor and the
 * removals, and removed sandboxes' tokens passed). NULL: out of memory.
 */
static json_t *
control_registry_json(struct proxy *px, int removals)
{
	struct registry	*r = px->registry;
	size_t		 unsure;
	json_t		*o;

	control_registry_built++;
	o = json_pack("{s:o?, s:I, s:I}", "sandboxes",
	    registry_json_saved(r, &unsure), "floor",
	    (json_int_t)registry_gone_floor(r), "kept",
	    (json_int_t)registry_gone_count(r));

	/*
	 * The marks as one count of the entries written first, not a mark
	 * in each (atk15r21 F4: 14 bytes an entry took a file the proxy
	 * read past what it reads back).
	 */
	if (o != NULL && unsure > 0 && json_object_set_new(o, "unsure_first",
	    json_integer((json_int_t)unsure)) == -1) {
		json_decref(o);
		return NULL;
	}
	/* with the floor it raised, in one write (control_others_settle) */
	if (o != NULL && control_counted_saved != NULL &&
	    json_object_set(o, "others_damaged", control_counted_saved) ==
	    -1) {
		json_decref(o);
		return NULL;
	}
	if (o != NULL && removals && (json_object_set_new(o, "unregistered",
	    registry_gone_json(r)) == -1 || json_object_set_new(o, "seen",
	    json_integer((json_int_t)registry_gone_seen(r))) == -1)) {
		json_decref(o);
		return NULL;
	}
	return o;
}

/*
 * The registry survives a restart of the proxy (a crash brought back by
 * the container's restart policy, or `sandgate proxy start` with a new
 * configuration): it is kept beside the socket, in the folder the
 * controller owns, and written atomically after every change.
 */
static int
control_registry_save(struct proxy *px)
{
	json_t	*arr = NULL;
	int	 was = control_registry_unsaved;

	/*
	 * The unsure marks first while their write has not worked: .gone
	 * rewritten (its damage repaired) or .removed blanked with the marks
	 * in memory alone, the next start found no damage and restored a
	 * removed sandbox as sure (atk36e F2). Until then the damaged files
	 * stay as they are, and each start judges the same damage again.
	 */
	if (control_marks_unsaved && control_registry_marks_save(px) == -1)
		control_registry_unsaved = 1;
	/*
	 * The removed list first: a register's clearing reaches the disk
	 * before its registration, an unregister's entry before the
	 * registry drops it, so a crash between the two files never leaves
	 * a registered sandbox gone after a restart; when it cannot be
	 * written the registry is not either (tried again, a removal kept
	 * apart meanwhile) (atk15r17 F6).
	 */
	else if (!(control_registry_unsaved = control_gone_save(px) == -1)) {
		control_crash_point("registry", "gone-saved");
		if ((control_registry_unsaved = !control_registry_fits(px,
		    0)))
			errno = EFBIG;
		else if ((arr = control_registry_json(px, 0)) != NULL)
			control_registry_unsaved = control_json_replace(arr,
			    control_registry_path, 0644) == -1;
		else {
			control_registry_unsaved = 1;
			errno = ENOMEM;
		}
	}
	if (!control_registry_unsaved) {
		control_removals_unkept = 0;
		apartfile_clear(control_registry_removed);
		control_registry_retire(px);
	}
	if (control_registry_unsaved && !was)
		control_registry_save_failed();
	else if (!control_registry_unsaved && was)
		log_info("the sandbox registry is saved again in %s",
		    control_registry_path);
	json_decref(arr);
	return control_registry_unsaved ? -1 : 0;
}

/*
 * The unsure marks, the floor and the removals in one write of the
 * registry file (control_registry_unsure): 0 once on disk, else -1 with
 * errno, control_marks_unsaved set while it has not worked.
 */
static int
control_registry_marks_save(struct proxy *px)
{
	json_t	*arr = NULL;
	int	 rc, saved;

	if (!control_registry_fits(px, 1)) {
		rc = -1;
		errno = EFBIG;
	} else {
		arr = control_registry_json(px, 1);
		rc = control_json_replace(arr, control_registry_path, 0644);
	}
	saved = errno;
	json_decref(arr);
	control_marks_unsaved = rc == -1;
	if (rc == 0)
		control_crash_point("registry", "marked");
	errno = saved;
	return rc;
}

/*
 * 1 when the registry file's text (with removals: a marks write) fits
 * under what the proxy reads back. The entries, the removals and a tail
 * of counts under CONTROL_REGISTRY_TAIL_MAX sure to fit are not built;
 * else the text is built to be measured only when what its length
 * depends on changed since it was last (regsize.h): a registry too
 * large to save is not built again each second to find it still is
 * (atk37f F1: 16.8 % of a CPU idle, the event loop held 673 ms).
 */
static int
control_registry_fits(struct proxy *px, int removals)
{
	struct registry		*r = px->registry;
	struct regsize_key	 k;
	json_t			*arr;
	size_t			 len;

	memset(&k, 0, sizeof(k));
	k.text = registry_text(r);
	k.unsure = registry_unsure_count(r);
	k.floor = registry_gone_floor(r);
	k.removals = removals;
	k.gone = registry_gone_count(r);
	k.gone_text = removals ? registry_gone_text(r) : 0;
	if (k.text + k.gone_text + CONTROL_REGISTRY_TAIL_MAX <=
	    CONTROL_GRANTS_FILE_MAX)
		return 1;
	if (regsize_still_over(&control_regsize, &k,
	    CONTROL_GRANTS_FILE_MAX))
		return 0;
	if (regsize_stale(&control_regsize, &k)) {
		if ((arr = control_registry_json(px, removals)) == NULL)
			return 1;	/* the save says: out of memory */
		len = json_dumpb(arr, NULL, 0, JSON_COMPACT);
		json_decref(arr);
		regsize_note(&control_regsize, &k, len);
	}
	return regsize_len(&control_regsize) <= CONTROL_GRANTS_FILE_MAX;
}

/*
 * The "kept" and "floor" of the taken registry.json (what it says the
 * single proxy's .gone keeps), as a file with no sandboxes: the floor
 * now and 0 when it cannot be read (its damage was counted at start).
 * The removals the taken file holds itself ("unregistered", "seen": an
 * older proxy's file, or one holding unsure marks) are carried whole:
 * a remnant without them was read as no removals at a later replica's
 * first start, and a removed sandbox's token passed there (atk36e F1).
 * Its "kept" goes with them: a marks write's .gone written after it
 * and lost fails closed there too (atk36f F1: it was written as 0).
 */
static json_t *
control_registry_remnant(struct proxy *px)
{
	json_t		*top = NULL, *remnant, *un = NULL, *seen = NULL;
	json_int_t	 kept = 0, floor;
	const char	*why;
	char		*text;
	size_t		 len;

	floor = (json_int_t)registry_gone_floor(px->registry);
	if ((text = control_state_read(control_registry_taken, &len,
	    &why)) != NULL)
		top = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	free(text);
	if (json_is_object(top) && control_registry_damage(top,
	    json_object_get(top, "sandboxes")) == NULL) {
		floor = json_integer_value(json_object_get(top, "floor"));
		un = json_object_get(top, "unregistered");
		seen = json_object_get(top, "seen");
		kept = json_integer_value(json_object_get(top, "kept"));
	}
	remnant = json_pack("{s:[], s:I, s:I}", "sandboxes", "floor", floor,
	    "kept", kept);
	if (remnant != NULL && un != NULL && (json_object_set(remnant,
	    "unregistered", un) == -1 || (seen != NULL &&
	    json_object_set(remnant, "seen", seen) == -1))) {
		json_decref(remnant);
		remnant = NULL;
	}
	json_decref(top);
	return remnant;
}

/*
 * The first good save of a replica retires the registry.json it took
 * (control_taken_retire), leaving first at that name a file with no
 * sandboxes that keeps its "kept" and "floor": a replica's later first
 * start (a scale-up) takes that one, and the single proxy's .gone lost
 * by then fails closed (atk36a F2: with nothing at registry.json, a lost
 * .gone was read as no removals and a removed sandbox's token passed
 * at the new replica). One there already (another proxy's) is kept;
 * with none written the taken file stays, retired at a later save.
 */
static void
control_registry_retire(struct proxy *px)
{
	json_t	*remnant;
	int	 rc;

	if (control_registry_taken == NULL)
		return;
	remnant = control_registry_remnant(px);
	if ((rc = control_json_create(remnant, control_registry_old, 0644)) ==
	    -1)
		log_warn("%s: cannot leave the count of its removals there; "
		    "%s is kept until it can", control_registry_old,
		    control_registry_taken);
	json_decref(remnant);
	if (rc != -1)
		control_taken_retire(&control_registry_taken);
}

/*
 * Said once, when the registry saves start failing: the last file saved
 * is kept, a removal is kept apart (control_registry_apart), and until a
 * save works the registrations since are not on disk. A registry too
 * large to be read back (EFBIG) is named as such: the proxy never writes
 * a file it would refuse at its next start (atk36a F1).
 */
static void
control_registry_save_failed(void)
{
	if (errno == EFBIG)
		log_warnx("cannot save the sandbox registry %s: its text is "
		    "over the %d bytes the proxy reads back, so it is not "
		    "written and the last file saved is kept (tried again "
		    "every second; a removal is kept apart in %s)",
		    control_registry_path, CONTROL_GRANTS_FILE_MAX,
		    control_registry_removed);
	else
		log_warn("cannot save the sandbox registry %s (tried again "
		    "every second; a removal is kept apart in %s)",
		    control_registry_path, control_registry_removed);
}

/*
 * The sandboxes unregistered (registry_gone_json) and the floor, in
 * their own file beside the registry (registry.json.gone), written only
 * when they changed: a /register or /unregister of another sandbox does
 * not rewrite every discard of the last 30 days (atk15r16 F6). 0, or -1.
 */
static int
control_gone_save(struct proxy *px)
{
	json_t	*o;
	int	 rc;

	if (!registry_gone_dirty(px->registry))
		return 0;
	o = json_pack("{s:o?, s:I, s:I}", "unregistered",
	    registry_gone_json(px->registry), "floor",
	    (json_int_t)registry_gone_floor(px->registry), "seen",
	    (json_int_t)registry_gone_seen(px->registry));
	if ((rc = control_json_replace(o, control_gone_path, 0644)) == 0)
		registry_gone_saved(px->registry);
	json_decref(o);
	return rc == -1 ? -1 : 0;
}

/*
 * The whole of a state file of the removed sandboxes (registry.json,
 * .gone, .removed: at most 8 MiB, NUL-terminated), or NULL with *why
 * saying what is wrong, *why NULL when there is no file. Opened without
 * following a link and without blocking, and refused unless a regular
 * file: a FIFO planted there stalled the event loop at the open, and
 * what cannot be read is not passed over (atk1921l F5).
 */
static char *
control_state_read(const char *path, size_t *len, const char **why)
{
	return control_read(path, O_NOFOLLOW, len, why);
}

/* control_state_read, opened with flags added (O_NOFOLLOW or 0). */
static char *
control_read(const char *path, int flags, size_t *len, const char **why)
{
	struct stat	 st;
	char		*text;
	ssize_t		 n;
	int		 fd;

	*len = 0;
	*why = NULL;
	if ((fd = open(path, O_RDONLY | O_NONBLOCK | flags |
	    O_CLOEXEC)) == -1) {
		if (errno == ELOOP)
			*why = "a symbolic link";
		else if (errno != ENOENT) {
			log_warn("%s", path);
			*why = "cannot be opened";
		}
		return NULL;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		*why = "not a regular file";
		close(fd);
		return NULL;
	}
	text = util_xmalloc(CONTROL_GRANTS_FILE_MAX + 1);
	while (*len <= CONTROL_GRANTS_FILE_MAX && (n = read(fd, text + *len,
	    CONTROL_GRANTS_FILE_MAX + 1 - *len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			*why = "cannot read it";
			break;
		}
		*len += (size_t)n;
	}
	close(fd);
	if (*why == NULL && *len > CONTROL_GRANTS_FILE_MAX)
		*why = "larger than 8 MiB";
	if (*why != NULL) {
		free(text);
		*len = 0;
		return NULL;
	}
	text[*len] = '\0';
	return text;
}

/* At start: the sandboxes unregistered, from their own file. */
/*
 * What is wrong in a removed-sandbox list the proxy would not have
 * written (it writes an object of positive integers and an integer
 * floor), or NULL: a damaged one is not known (atk15r19 F1: parsed but
 * damaged, its removals were lost without a word).
 */
static const char *
control_gone_damage(json_t *top)
{
	const char	*why;

	if (!json_is_object(top) ||
	    json_object_get(top, "unregistered") == NULL)
		return "no \"unregistered\" object";
	if ((why = control_gone_clocks_damage(top)) != NULL)
		return why;
	return control_gone_list_damage(json_object_get(top,
	    "unregistered"));
}

/*
 * What is wrong in the floor and the clock the removals age by (atk1921j
 * F2) of a .gone or registry file object, or NULL: either one, when
 * there, is an integer (atk15r20 F3).
 */
static const char *
control_gone_clocks_damage(json_t *top)
{
	if (json_object_get(top, "floor") != NULL &&
	    !json_is_integer(json_object_get(top, "floor")))
		return "\"floor\" is not an integer";
	if (json_object_get(top, "seen") != NULL &&
	    !json_is_integer(json_object_get(top, "seen")))
		return "\"seen\" is not an integer";
	return NULL;
}

/* What is wrong in an "unregistered" object (sandbox: time), or NULL. */
static const char *
control_gone_list_damage(json_t *un)
{
	json_t		*v;
	const char	*k;

	if (!json_is_object(un))
		return "no \"unregistered\" object";
	json_object_foreach(un, k, v)
		if (!json_is_integer(v) || json_integer_value(v) < 1)
			return "a removal's time is not a positive integer";
	return NULL;
}

/*
 * At start: the removed sandboxes of a .gone file. kept: how many the
 * registry file written after it says it holds (0: none, or not known).
 * A registry file is only written once its .gone holds what it counts
 * (control_registry_save), so with kept > 0 a .gone that is not there
 * was lost (deleted, not restored, left in lost+found): its removals
 * are not known (atk15r22 F1: read as none, their tokens passed).
 */
static void
control_gone_load(struct proxy *px, const char *path, json_int_t kept)
{
	json_error_t	 err;
	json_t		*top;
	const char	*why;
	char		*text, *missing;
	size_t		 len;

	if ((text = control_state_read(path, &len, &why)) == NULL) {
		if (why != NULL)
			control_gone_unknown(px, path, why);
		else if (kept > 0) {
			util_xasprintf(&missing, "not there, though the "
			    "registry file says it keeps %lld removals",
			    (long long)kept);
			control_gone_unknown(px, path, missing);
			free(missing);
		}
		return;
	}
	control_other_text(text, len);
	top = json_loadb(text, len, JSON_REJECT_DUPLICATES, &err);
	free(text);
	if (top == NULL) {
		control_gone_unknown(px, path, err.text);
		return;
	}
	if ((why = control_gone_damage(top)) != NULL)
		control_gone_unknown(px, path, why);
	registry_gone_load(px->registry, json_object_get(top,
	    "unregistered"), (time_t)json_integer_value(json_object_get(top,
	    "floor")), (time_t)json_integer_value(json_object_get(top,
	    "seen")));
	json_decref(top);
}

/*
 * An unregister the registry file could not take, kept apart
 * (registry-NAME.json.removed, synced) so a restart applies it again
 * (control_removed_load): the removed sandbox must not come back. 0, or
 * -1 with a warning.
 */
static int
control_registry_apart(const char *key, int sandbox, time_t at)
{
	json_t	*o = json_pack("{s:s, s:b, s:I}", "key", key, "sandbox",
	    sandbox, "at", (json_int_t)at);
	char	*text = o ? json_dumps(o, JSON_COMPACT) : NULL, *line = NULL;
	int	 bad;

	if (text != NULL)
		util_xasprintf(&line, "%s\n", text);
	if ((bad = apartfile_add(control_registry_removed, line)) == -1)
		log_warn("%s: cannot keep the unregister of %s either: a "
		    "restart before the registry is saved would bring it back",
		    control_registry_removed, key);
	free(line);
	free(text);
	json_decref(o);
	return bad;
}

/*
 * One line of a .removed file applied again, or what is wrong with it
 * (NULL for a removal or padding). Only refusals are added: a removal never weakens
 * one kept (atk15r18 F6). A line with a NUL is read up to it.
 */
static const char *
control_removed_line(struct proxy *px, const char *path, const char *line,
    size_t len)
{
	json_t		*o, *kind;
	const char	*key;
	time_t		 at;
	size_t		 i;
	int		 known;

	len = strnlen(line, len);
	for (i = 0; i < len && line[i] == ' '; i++)
		;
	if (i == len)
		return NULL;		/* padding (before a NUL) */
	/* a key twice is not a line the proxy wrote (atk15r20 F3) */
	if ((o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL)) ==
	    NULL ||
	    (key = json_string_value(json_object_get(o, "key"))) == NULL) {
		json_decref(o);		/* not known: atk15r19 F5 */
		return "a line that is not one of its removals";
	}
	log_info("%s: %s stays unregistered", path, key);
	/* neither true nor false: not known, applied as both (atk1921l F2, atk15r19 F6) */
	kind = json_object_get(o, "sandbox");
	known = json_is_boolean(kind);
	if (!json_is_true(kind))
		registry_remove_address(px->registry, key);
	if (!json_is_false(kind)) {
		registry_remove_sandbox(px->registry, key);
		/* no time (kept when none was known): now (atk15r19 F2) */
		if ((at = (time_t)json_integer_value(json_object_get(o,
		    "at"))) < 1)
			at = registry_gone_latest(px->registry);
		if (at >= registry_gone_at(px->registry, key))
			registry_gone_set(px->registry, key, at);
	}
	json_decref(o);
	return known ? NULL :
	    "a line whose \"sandbox\" is neither true nor false";
}

struct control_removed_file {
	struct proxy	*px;
	const char	*path;
	size_t		 bad;		/* lines damaged or not known */
	const char	*first;		/* what was wrong with the first */
};

/* A damaged line counted (one floor rise for the file: atk35c F3). */
static void
control_removed_bad(struct control_removed_file *f, const char *why)
{
	if (f->bad++ == 0)
		f->first = why;
}

/*
 * apartfile_lines(): every line of the whole text applied, a NUL
 * damaging its own line only (the lines after one were never applied:
 * atk15r20 F1). A last line with no newline is torn or not the proxy's
 * (atk1921l F1): applied if it reads, not known all the same. Damage
 * is counted, to fail closed once for the file (control_removed_load).
 */
static int
control_removed_each(const char *s, size_t n, int damage, void *arg)
{
	struct control_removed_file	*f = arg;
	const char			*why;

	if (damage & APARTFILE_NUL)
		control_removed_bad(f, apartfile_damage(APARTFILE_NUL));
	why = control_removed_line(f->px, f->path, s, n);
	if (damage & APARTFILE_TORN)
		why = apartfile_damage(APARTFILE_TORN);
	if (why != NULL)
		control_removed_bad(f, why);
	return 0;
}

/*
 * At start: the unregisters kept apart, applied again. What cannot be
 * read fails closed (control_gone_unknown) once for the file, however
 * many of its lines are damaged: one floor rise, one event naming the
 * count (atk35c F3: one per line flooded the logs and stalled the start).
 */
static void
control_removed_load(struct proxy *px, const char *path)
{
	struct control_removed_file	 f = { px, path, 0, NULL };
	char				*text, *why_n;
	const char			*why;
	size_t				 len;

	if ((text = control_state_read(path, &len, &why)) == NULL) {
		if (why != NULL)
			control_gone_unknown(px, path, why);
		return;
	}
	control_other_text(text, len);
	apartfile_lines(text, len, control_removed_each, &f);
	free(text);
	if (f.bad == 1)
		control_gone_unknown(px, path, f.first);
	else if (f.bad > 1) {
		util_xasprintf(&why_n, "%zu damaged lines, the first: %s",
		    f.bad, f.first);
		control_gone_unknown(px, path, why_n);
		free(why_n);
	}
}

/*
 * registry.json, or registry-NAME.json with --instance NAME, as grants
 * (control_grants_open): replicas sharing a folder each keep their own
 * registrations, where one file held the last saver's; one with no file
 * of its own yet takes registry.json once (control_take).
 */
static void
control_registry_open(struct proxy *px, const char *sock)
{
	unsigned long long forgotten = registry_gone_forgotten(px->registry);
	json_int_t kept;
	time_t	 own;
	char	*old;
	int	 again = 0, taken, others;

	json_decref(control_counted_then);
	json_decref(control_counted);
	json_decref(control_counted_saved);
	json_decref(control_counted_why);
	control_counted_then = control_counted_saved = NULL;
	control_counted = json_object();
	control_counted_why = json_array();

	regsize_init(&control_regsize);
	control_registry_path = control_beside(sock, "registry",
	    px->cfg.instance);
	free(control_registry_old);
	control_registry_old = old = control_beside(sock, "registry", NULL);
	if (strcmp(old, control_registry_path) != 0 &&
	    access(control_registry_path, F_OK) == -1 && errno == ENOENT)
		control_registry_taken = control_take(old, px->cfg.instance);
	else if (strcmp(old, control_registry_path) != 0)
		again = control_taken_again(old, px->cfg.instance);
	util_xasprintf(&control_registry_removed, "%s.removed",
	    control_registry_path);
	apartfile_create(control_registry_removed, "an unregister");
	/* the taken file's "kept" counts the single proxy's .gone */
	taken = control_registry_taken != NULL && !again;
	kept = control_registry_load(px, taken ? control_registry_taken :
	    control_registry_path);
	util_xasprintf(&control_gone_path, "%s.gone", control_registry_path);
	control_gone_load(px, control_gone_path, taken ? 0 : kept);
	control_removed_load(px, control_registry_removed);
	own = registry_gone_floor(px->registry);
	if (px->cfg.instance != NULL)
		others = control_others_load(px, old, taken, kept);
	else
		others = control_replicas_load(px, sock);
	control_others_settle(px);
	/* removals forgotten past the max while loading (atk15r18 F2) */
	control_gone_floor_note(px, forgotten);
	/*
	 * A floor the other proxy raised (removals it forgot or could not
	 * read) above this one's: a sandbox restored here may be one it
	 * removed, as with damage here (atk35c F1). Once saved, the next
	 * start finds its own floor as high and marks nothing.
	 */
	if (registry_gone_floor(px->registry) > own)
		control_removals_damaged = 1;
	if (control_removals_damaged)
		control_registry_unsure(px);
	proxy_log_blocks_registry(px);
	/*
	 * The taken file is retired by the first good save, now or at a
	 * later change; others' removals are kept in this proxy's files.
	 */
	if (control_registry_taken != NULL || others)
		(void)control_registry_save(px);
}

/*
 * Another proxy's file, path, is read from here to control_other_end():
 * its damage is counted once (control_other_counted). What it is: the
 * stat of idpath (the file itself, or for a .gone that is not there
 * the registry file saying it keeps removals), taken before it is
 * read, then the digest of the text read (control_other_text). A file
 * changed since, in any way, is another: its damage is counted again.
 */
static void
control_other_begin(const char *path, const char *idpath, const char *what)
{
	struct stat	st;

	control_other.path = path;
	if (lstat(idpath, &st) == -1)
		snprintf(control_other.id, sizeof(control_other.id), "%s-",
		    what);
	else
		snprintf(control_other.id, sizeof(control_other.id),
		    "%s%ju:%ju:%jd:%lld.%09ld:%lld.%09ld", what,
		    (uintmax_t)st.st_dev, (uintmax_t)st.st_ino,
		    (intmax_t)st.st_size, (long long)st.st_mtim.tv_sec,
		    st.st_mtim.tv_nsec, (long long)st.st_ctim.tv_sec,
		    st.st_ctim.tv_nsec);
}

/* The text of the other proxy's file read: its digest, in what it is. */
static void
control_other_text(const char *text, size_t len)
{
	char	hex[65];
	size_t	at, i;

	if (control_other.path == NULL ||
	    control_sha256_hex(text, len, hex) == -1)
		return;
	/* whole bytes, as many as fit */
	at = strlen(control_other.id);
	for (i = 0; hex[i] != '\0' && at + 3 < sizeof(control_other.id);
	    i += 2, at += 2)
		memcpy(control_other.id + at, hex + i, 2);
	control_other.id[at] = '\0';
}

static void
control_other_end(void)
{
	control_other.path = NULL;
}

/*
 * Damage (why) in the other proxy's file being read: what the file is
 * kept in what this start found, and the damage weighed once all are
 * read (control_others_settle). 1 then, 0: not another's file.
 */
static int
control_other_counted(struct proxy *px, const char *path, const char *why)
{
	const char	*name;

	(void)px;
	if (control_other.path == NULL || strcmp(path,
	    control_other.path) != 0 || control_counted == NULL ||
	    control_counted_why == NULL)
		return 0;
	name = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
	if (json_object_set_new(control_counted, name,
	    json_string(control_other.id)) == -1 ||
	    json_array_append_new(control_counted_why, json_pack("[s, s]",
	    path, why)) == -1)
		return 0;		/* out of memory: raised now */
	return 1;
}

static int
control_counted_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The SHA-256 (hex, into out of 65) of every damaged file of the other
 * proxies found at this start, by name, sorted: (name, what it is) each.
 * "" when it cannot be computed (then it matches nothing: raised).
 */
static void
control_counted_digest(char out[65])
{
	unsigned char	 md[EVP_MAX_MD_SIZE];
	unsigned int	 n = 0, i;
	size_t		 count = json_object_size(control_counted), k = 0;
	const char	**names, *name;
	EVP_MD_CTX	*ctx = EVP_MD_CTX_new();
	json_t		*v;
	int		 ok;

	names = util_xcalloc(count + 1, sizeof(*names));
	json_object_foreach(control_counted, name, v)
		names[k++] = name;
	qsort(names, k, sizeof(*names), control_counted_cmp);
	ok = ctx != NULL && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) == 1;
	for (k = 0; ok && k < count; k++) {
		name = json_string_value(json_object_get(control_counted,
		    names[k]));
		ok = EVP_DigestUpdate(ctx, names[k], strlen(names[k]) + 1) ==
		    1 && EVP_DigestUpdate(ctx, name, strlen(name) + 1) == 1;
	}
	ok = ok && EVP_DigestFinal_ex(ctx, md, &n) == 1 && n == 32;
	out[0] = '\0';
	for (i = 0; ok && i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	EVP_MD_CTX_free(ctx);
	free(names);
}

/*
 * The other proxies' damaged files found at this start, weighed once all
 * are read: the same files, every one unchanged, as counted at an
 * earlier start whose save holds the floor they raised: every removal
 * they hid is older than that floor, so nothing is raised again (said on
 * stderr). Otherwise (a file new, changed or gone) all of them are
 * counted again: the floor rises once, one event naming how many and the
 * first (fails closed; atk35c F3: one per file flooded the log).
 */
static void
control_others_settle(struct proxy *px)
{
	size_t		 n = json_array_size(control_counted_why);
	const char	*path, *why;
	char		 digest[65], *detail;

	if (n == 0)
		return;
	control_counted_digest(digest);
	path = json_string_value(json_array_get(json_array_get(
	    control_counted_why, 0), 0));
	why = json_string_value(json_array_get(json_array_get(
	    control_counted_why, 0), 1));
	if (n == 1)
		detail = util_xstrdup(path);
	else
		util_xasprintf(&detail, "%zu files of the other proxies, the "
		    "first %s,", n, path);
	if (digest[0] != '\0' && json_is_string(control_counted_then) &&
	    strcmp(json_string_value(control_counted_then), digest) == 0)
		log_warnx("%s cannot be read (%s), unchanged since a start "
		    "that raised the removed-sandbox floor for them (now "
		    "%lld): not raised again", detail, why,
		    (long long)registry_gone_floor(px->registry));
	else
		control_gone_raise(px, detail, why);
	free(detail);
	json_decref(control_counted_saved);
	control_counted_saved = digest[0] == '\0' ? NULL : json_pack(
	    "{s:s, s:I}", "digest", digest, "files", (json_int_t)n);
}

/*
 * The registry file of another proxy (the single proxy's, or a
 * replica's): how many removals it says its .gone keeps (atk35c F1: read
 * only for this proxy's own, a lost .gone of the other's read as none),
 * and its floor, its clock and the removals it may hold itself (a marks
 * write, an older proxy's file): only refusals are added; its
 * registrations are its own. Damaged: not known (fails closed).
 */
static json_int_t
control_other_registry(struct proxy *px, const char *path)
{
	json_error_t	 err;
	json_t		*top = NULL, *arr;
	const char	*why;
	char		*text;
	size_t		 len;
	json_int_t	 kept = 0;

	control_other_begin(path, path, "");
	if ((text = control_state_read(path, &len, &why)) != NULL) {
		control_other_text(text, len);
		if ((top = json_loadb(text, len, JSON_REJECT_DUPLICATES,
		    &err)) == NULL)
			why = err.text;
		free(text);
	}
	arr = json_is_array(top) ? top : json_object_get(top, "sandboxes");
	if (why == NULL && top != NULL)
		why = control_registry_damage(top, arr);
	if (why != NULL)
		control_gone_unknown(px, path, why);
	control_other_end();
	if (json_is_object(top)) {
		/* a marks write's too (atk36f F1) */
		kept = json_integer_value(json_object_get(top, "kept"));
		registry_gone_load(px->registry, json_object_get(top,
		    "unregistered"), (time_t)json_integer_value(
		    json_object_get(top, "floor")), (time_t)json_integer_value(
		    json_object_get(top, "seen")));
	}
	json_decref(top);
	return kept;
}

/*
 * The other proxy's .gone (path), kept: how many removals its registry
 * file (reg, NULL: none) says it keeps; with kept > 0 one that is not
 * there was lost, what the registry file is naming the loss.
 */
static void
control_other_gone(struct proxy *px, const char *path, json_int_t kept,
    const char *reg)
{
	if (access(path, F_OK) == -1 && errno == ENOENT)
		control_other_begin(path, reg ? reg : path, "none, by ");
	else
		control_other_begin(path, path, "");
	control_gone_load(px, path, kept);
	control_other_end();
}

/* The other proxy's .removed, path. */
static void
control_other_removed(struct proxy *px, const char *path)
{
	control_other_begin(path, path, "");
	control_removed_load(px, path);
	control_other_end();
}

/*
 * A replica's start in a folder a single proxy used: that proxy's
 * removed sandboxes (base.gone, with the count its registry file keeps:
 * the taken file's when taken at this start, else base's, or the taken
 * file left by a start cut short) and removals kept apart (base.removed),
 * at every start, not only the first (atk15r17 F1: their tokens passed
 * again; atk15r22 F3: a single proxy that ran between two runs of the
 * replica removed sandboxes this one never read). Only refusals are
 * added (fail closed). 1 when one of its files is there (to be saved in
 * this replica's own files), else 0.
 */
static int
control_others_load(struct proxy *px, const char *base, int taken,
    json_int_t kept)
{
	const char	*reg = control_registry_taken;
	char		*path;
	int		 there = 0;

	if (!taken) {
		if ((there = access(base, F_OK) == 0 || errno != ENOENT))
			reg = base;
		kept = reg != NULL ? control_other_registry(px, reg) : 0;
	}
	util_xasprintf(&path, "%s.gone", base);
	there |= access(path, F_OK) == 0;
	control_other_gone(px, path, kept, reg);
	free(path);
	util_xasprintf(&path, "%s.removed", base);
	there |= access(path, F_OK) == 0;
	control_other_removed(px, path);
	free(path);
	return there;
}

/*
 * 1 for registry-NAME.json, or its .json.gone or .json.removed, NAME a
 * name --instance takes (policy_set_name_valid): no other name is a
 * replica's (atk36a F1: names of any length were read as one).
 */
static int
control_replica_file(const struct dirent *d)
{
	const char	*s = d->d_name, *dot;
	char		 name[SG_POLICY_SET_NAME_MAX + 1];
	size_t		 n;

	if (strncmp(s, "registry-", 9) != 0 ||
	    (dot = strchr(s + 9, '.')) == NULL ||
	    (n = (size_t)(dot - (s + 9))) == 0 || n >= sizeof(name))
		return 0;
	memcpy(name, s + 9, n);
	name[n] = '\0';
	if (!policy_set_name_valid(name))
		return 0;
	return strcmp(dot, ".json") == 0 || strcmp(dot, ".json.gone") == 0 ||
	    strcmp(dot, ".json.removed") == 0;
}

/*
 * A replica's registry file (path), read by a single proxy: its count,
 * floor and removals (control_other_registry), and with kept > 0 a .gone
 * that is not there fails closed (atk35c F1); one that is there is read
 * as the folder's other files are.
 */
static void
control_replica_registry(struct proxy *px, const char *path)
{
	json_int_t	 kept = control_other_registry(px, path);
	char		*gone;

	util_xasprintf(&gone, "%s.gone", path);
	if (kept > 0 && access(gone, F_OK) == -1 && errno == ENOENT)
		control_other_gone(px, gone, kept, path);
	free(gone);
}

/*
 * A single proxy's start (no --instance) in a folder replicas used: the
 * removed sandboxes and removals kept apart of each of them
 * (registry-NAME.json.gone, .removed, and the count, floor and removals
 * of registry-NAME.json; atk15r22 F3: a scale-down to one proxy read
 * none, and their removed sandboxes' tokens passed). Only refusals are
 * added; what cannot be read fails closed. 1 when one was there (saved
 * in this proxy's own files), else 0.
 */
static int
control_replicas_load(struct proxy *px, const char *sock)
{
	struct dirent	**names;
	const char	*name;
	char		*dir = util_dirname(sock), *path;
	int		 i, n;

	if ((n = scandir(dir, &names, control_replica_file, alphasort)) ==
	    -1) {
		log_warn("%s", dir);
		control_gone_unknown(px, dir, "its files cannot be listed");
		free(dir);
		return 0;
	}
	for (i = 0; i < n; i++) {
		name = names[i]->d_name;
		util_xasprintf(&path, "%s%s%s", dir, strcmp(dir, "/") == 0 ?
		    "" : "/", name);
		if (strcmp(name + strlen(name) - 5, ".json") == 0)
			control_replica_registry(px, path);
		else if (strstr(name, ".json.gone") != NULL)
			control_other_gone(px, path, 0, NULL);
		else
			control_other_removed(px, path);
		free(path);
		free(names[i]);
	}
	free(names);
	free(dir);
	return n > 0;
}

/*
 * A removal file was damaged at this start: a removed sandbox whose
 * removal was in the damaged part may be among those just restored from
 * the registry file (a full folder kept the removal apart, or a crash
 * came between the two saves), and its token passed (atk15r20 F1).
 * Every restored sandbox is marked unsure: its tokens issued before the
 * floor are refused until it is registered again (conn.c). The marks
 * are saved in the registry file, with the floor and the removals,
 * before any other file is rewritten or blanked, so a crash between any
 * two writes still finds all of them in one file or the other.
 */
static void
control_registry_unsure(struct proxy *px)
{
	size_t	 n;

	if ((n = registry_unsure_all(px->registry)) == 0)
		return;
	log_warnx("%zu sandbox registrations restored while removals were "
	    "not known: their tokens issued before %lld are refused until "
	    "each is registered again", n,
	    (long long)registry_gone_floor(px->registry));
	/*
	 * One write holding all that is in force: the marks, the floor and
	 * the removals (the damaged file may be this one, an older proxy's
	 * "unregistered"; or, at a replica's first start, the only file of
	 * its own, which makes the next start no longer its first). Only
	 * then .gone and the registry file again (control_registry_save).
	 */
	if (control_registry_marks_save(px) == 0)
		(void)control_registry_save(px);
	else {
		control_registry_unsaved = 1;
		control_registry_save_failed();
	}
}

/*
 * The registry file, parsed, or NULL. One that exists but cannot be read
 * or parsed starts with no sandboxes and fails closed: the file of an
 * older proxy held the removed sandboxes too (atk15r19 F7: they were lost).
 */
static json_t *
control_registry_read(struct proxy *px, const char *path)
{
	json_error_t	 err;
	json_t		*top = NULL;
	const char	*why;
	char		*text;
	size_t		 len;

	if ((text = control_state_read(path, &len, &why)) != NULL &&
	    (top = json_loadb(text, len, JSON_REJECT_DUPLICATES,
	    &err)) == NULL)
		why = err.text;
	if (why != NULL) {
		log_warnx("%s: %s; starting with no sandboxes", path, why);
		control_gone_unknown(px, path, why);
	}
	free(text);
	return top;
}

/*
 * What is wrong in the removals a registry file keeps, its count of
 * those .gone keeps and its sandboxes' marks (arr), or NULL.
 */
static const char *
control_registry_damage(json_t *top, json_t *arr)
{
	json_t		*kept = json_object_get(top, "kept");
	const char	*why;

	if ((why = control_registry_marks_damage(top, arr)) != NULL)
		return why;
	if (!json_is_object(top))
		return NULL;		/* an older proxy's array */
	if ((why = control_gone_clocks_damage(top)) != NULL)
		return why;
	if (kept != NULL && (!json_is_integer(kept) ||
	    json_integer_value(kept) < 0))
		return "\"kept\" is not an integer of at least 0";
	if (json_object_get(top, "unregistered") != NULL)
		return control_gone_list_damage(json_object_get(top,
		    "unregistered"));
	return NULL;
}

/*
 * What is wrong in the unsure marks, or NULL. The proxy writes a mark
 * as true, and only with a floor of at least 1 (the floor is what makes
 * a mark refuse anything, conn.c): a mark that is not a boolean, or one
 * with no floor, was lost as damage goes (atk15r22 F2: such a mark
 * refused nothing, without a word).
 */
static const char *
control_registry_marks_damage(json_t *top, json_t *arr)
{
	json_t	*e, *mark, *first = json_object_get(top, "unsure_first");
	size_t	 i;
	int	 marked = 0;

	json_array_foreach(arr, i, e) {
		if ((mark = json_object_get(e, "unsure")) == NULL)
			continue;
		if (!json_is_boolean(mark))
			return "an \"unsure\" mark that is not true or false";
		marked |= json_is_true(mark);
	}
	if (first != NULL && (!json_is_integer(first) ||
	    json_integer_value(first) < 0 || (json_int_t)json_array_size(arr) <
	    json_integer_value(first)))
		return "\"unsure_first\" is not a count of its sandboxes";
	marked |= json_integer_value(first) > 0;
	if (marked && json_integer_value(json_object_get(top, "floor")) < 1)
		return "\"unsure\" marks with no floor";
	return NULL;
}

/*
 * The registry file at path loaded. How many removals it says its .gone
 * keeps (0 when none: an older proxy's file has no "kept"), also when
 * it holds removals itself (a marks write).
 */
static json_int_t
control_registry_load(struct proxy *px, const char *path)
{
	json_t		*top, *arr, *e, *sets, *v;
	const char	*cause;
	char		*csv, *tmp;
	size_t		 i, j, n = 0;
	json_int_t	 kept, first;

	if ((top = control_registry_read(px, path)) == NULL)
		return 0;
	/* an older proxy's file is the array of sandboxes alone */
	arr = json_is_array(top) ? top : json_object_get(top, "sandboxes");
	/*
	 * A file of an older proxy keeps the removals here, as does one
	 * written with unsure marks; damaged: not known. The floor and the
	 * clock too (control_registry_json).
	 */
	if ((cause = control_registry_damage(top, arr)) != NULL)
		control_gone_unknown(px, path, cause);
	/*
	 * Also with "unregistered" here (a marks write): a .gone written
	 * after it and lost is lost all the same (atk36f F1). An older
	 * proxy's file has no "kept": 0.
	 */
	kept = json_integer_value(json_object_get(top, "kept"));
	/* the other proxies' damage its floor holds (not a taken file's) */
	if (strcmp(path, control_registry_path) == 0 && json_is_string(
	    json_object_get(json_object_get(top, "others_damaged"), "digest")))
		control_counted_then = json_incref(json_object_get(
		    json_object_get(top, "others_damaged"), "digest"));
	registry_gone_load(px->registry, json_object_get(top,
	    "unregistered"), (time_t)json_integer_value(json_object_get(top,
	    "floor")), (time_t)json_integer_value(json_object_get(top,
	    "seen")));
	json_array_foreach(arr, i, e) {
		csv = util_xstrdup("");
		sets = json_object_get(e, "sets");
		json_array_foreach(sets, j, v) {
			util_xasprintf(&tmp, "%s%s%s", csv, j ? "," : "",
			    json_string_value(v) ? json_string_value(v) : "");
			free(csv);
			csv = tmp;
		}
		/* a file of an older proxy has no "extra": all are kept */
		if (registry_add(px->registry, json_string_value(
		    json_object_get(e, "address")) ?: "", json_string_value(
		    json_object_get(e, "sandbox")), csv, json_object_get(e,
		    "extra") == NULL || json_is_true(json_object_get(e,
		    "extra")), &cause) == 0)
			n++;
		else
			log_warnx("%s: entry %zu: %s", path,
			    i, cause);
		free(csv);
	}
	/*
	 * Marked after all are added: registry_add clears a sandbox's. The
	 * first "unsure_first" entries, or (an older proxy's file) a mark in
	 * each; a damaged count marks every one (fails closed).
	 */
	first = json_integer_value(json_object_get(top, "unsure_first"));
	if (!json_is_integer(json_object_get(top, "unsure_first")) &&
	    json_object_get(top, "unsure_first") != NULL)
		first = (json_int_t)json_array_size(arr);
	json_array_foreach(arr, i, e)
		if ((json_int_t)i < first ||
		    json_is_true(json_object_get(e, "unsure")))
			registry_unsure_set(px->registry, json_string_value(
			    json_object_get(e, "sandbox")) ?: "", 1);
	json_decref(top);
	log_info("%zu sandboxes registered again from %s", n,
	    path);
	control_registry_over(px, path);
	return kept;
}

/*
 * Said once at start: the registry loaded takes more than a registration
 * may take it to (an older proxy's file: it saved entries up to the read
 * limit, and an array-only one's entries each gain "extra" when saved
 * again, so its text may even pass the read limit). Every registration
 * is kept, none dropped (each is a sandbox reachable now); new ones are
 * refused (registry.full each time) and unregisters make room. While the
 * text is over what the proxy reads back, saves fail (EFBIG): the file
 * loaded stays as it is, readable, and unregisters are kept apart.
 */
static void
control_registry_over(struct proxy *px, const char *path)
{
	if (registry_text(px->registry) <= CONTROL_REGISTRY_TEXT_MAX)
		return;
	log_warnx("%s: its sandboxes take %zu bytes saved, over the %d a "
	    "registration may take them to: every one is kept, new "
	    "registrations are refused until unregisters make room",
	    path, registry_text(px->registry), CONTROL_REGISTRY_TEXT_MAX);
}

/*
 * The registry changed: connections whose address now means another
 * sandbox (or none) are closed with egress.revoked, and the block records
 * of an unregistered sandbox are dropped.
 */
static void
control_identities(struct proxy *px, const char *gone)
{
	unsigned	n;

	proxy_log_blocks_registry(px);
	n = conn_revoke_identity(px, gone);
	if (n > 0)
		log_info("%u connections closed: their sandbox registration "
		    "changed", n);
	if (gone != NULL && control_rings != NULL)
		blockring_drop(control_rings, gone);
}

void
control_note_block(struct proxy *px, unsigned long long serial,
    const char *sandbox, const char *run_id, const char *host, int port,
    const char *reason, const char *message)
{
	char	 safe_host[SG_HOST_MAX + 1], safe_msg[512];

	if (!control_up || sandbox == NULL)
		return;
	util_safe(host ? host : "", safe_host, sizeof(safe_host));
	util_safe(message ? message : "", safe_msg, sizeof(safe_msg));
	execcred_note_block(px->execs, serial, sandbox, run_id, safe_host,
	    port, reason, safe_msg);
	if (control_rings != NULL)
		blockring_note(control_rings, control_cursor, serial, sandbox,
		    run_id, safe_host, port, reason ? reason : "", safe_msg);
}

/*
 * The blocks of one sandbox after a cursor (blocks_seq of GET /status),
 * one entry per record with its attempts. With run=RUN of a running exec
 * (execcred_blocks_json) that exec's own set, and with unattributed=1
 * also the blocks no credential named while it ran; otherwise the
 * sandbox's ring, oldest first; without sandbox every sandbox's ring,
 * each record naming its sandbox (what `sandgate pending` gathers from
 * several replicas). "truncated" says some were not kept.
 */
static void
control_blocks(struct proxy *px, struct evhttp_request *req)
{
	struct evkeyvalq	 q;
	const char		*sbx, *after_s, *errstr, *run, *un;
	long long		 after = 0;
	json_t			*arr = NULL;
	int			 unattributed, truncated = 0;

	evhttp_parse_query_str(evhttp_uri_get_query(
	    evhttp_request_get_evhttp_uri(req)) ?: "", &q);
	sbx = evhttp_find_header(&q, "sandbox");
	after_s = evhttp_find_header(&q, "after");
	run = evhttp_find_header(&q, "run");
	un = evhttp_find_header(&q, "unattributed");
	unattributed = un != NULL && strcmp(un, "1") == 0;
	if (after_s != NULL && util_strtonum(after_s, 0, LLONG_MAX, &after,
	    &errstr) == -1)
		after = 0;
	if (sbx != NULL && run != NULL)
		arr = execcred_blocks_json(px->execs, sbx, run,
		    (unsigned long long)after, unattributed, &truncated);
	if (arr == NULL && sbx != NULL)
		arr = blockring_json(control_rings, sbx,
		    (unsigned long long)after, run, unattributed, &truncated);
	else if (sbx == NULL)
		arr = blockring_all(control_rings, (unsigned long long)after,
		    &truncated);
	evhttp_clear_headers(&q);
	control_reply(req, 200, json_pack("{s:I, s:I, s:o, s:b}", "log_seq",
	    (json_int_t)eventlog_seq(px->seclog), "blocks_seq",
	    (json_int_t)px->block_serial, "blocks", arr ? arr : json_array(),
	    "truncated", truncated));
}

void
control_bounds(struct evhttp *http)
{
	evhttp_set_max_body_size(http, CONTROL_BODY_MAX);
	evhttp_set_max_headers_size(http, CONTROL_HEADERS_MAX);
	evhttp_set_timeout(http, CONTROL_TIMEOUT_S);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST);
}

int
control_serving(void)
{
	return control_up;
}

int
control_listen(struct proxy *px, const char *path, char **cause)
{
	struct sockaddr_un	 sun;
	struct evconnlistener	*l;
	mode_t			 old;

	*cause = NULL;
	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		*cause = util_xstrdup("path too long for a unix socket");
		return -1;
	}
	util_strlcpy(sun.sun_path, path, sizeof(sun.sun_path));
	if (unlink(path) == -1 && errno != ENOENT) {
		util_xasprintf(cause, "cannot replace: %s", strerror(errno));
		return -1;
	}
	old = umask(0117);
	l = evconnlistener_new_bind(px->base, NULL, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 64,
	    (struct sockaddr *)&sun, sizeof(sun));
	umask(old);
	if (l == NULL) {
		util_xasprintf(cause, "%s", strerror(errno));
		return -1;
	}
	control_up = 1;
	if ((control_rings == NULL && (control_rings = blockring_new()) ==
	    NULL) || (control_http = evhttp_new(px->base)) == NULL ||
	    evhttp_bind_listener(control_http, l) == NULL) {
		*cause = util_xstrdup("cannot start the HTTP server");
		return -1;
	}
	control_bounds(control_http);
	evhttp_set_gencb(control_http, control_route, px);
	control_path = util_xstrdup(path);
	control_registry_open(px, path);
	control_grants_open(px, path);
	fprintf(stderr, "sandgate-proxy: control socket %s\n", path);
	return 0;
}

void
control_close(struct proxy *px)
{
	if (control_http != NULL)
		evhttp_free(control_http);
	if (control_path != NULL)
		unlink(control_path);
	free(control_path);
	free(control_registry_path);
	free(control_gone_path);
	control_gone_path = NULL;
	json_decref(control_counted_then);
	json_decref(control_counted);
	json_decref(control_counted_saved);
	json_decref(control_counted_why);
	control_counted_then = control_counted = NULL;
	control_counted_saved = control_counted_why = NULL;
	free(control_registry_old);
	control_registry_old = NULL;
	free(control_grants_path);
	free(control_tomb_path);
	free(control_grants_taken);
	free(control_grants_stays);
	control_grants_taken = control_grants_stays = NULL;
	blockring_free(control_rings);
	control_rings = NULL;
	control_up = 0;
	control_http = NULL;
	control_path = NULL;
	control_registry_path = NULL;
}
