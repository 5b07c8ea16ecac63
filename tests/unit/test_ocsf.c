/*
 * test_ocsf.c: the OCSF mapping (ocsf.c), table-driven over the events
 * the project writes; tests/integration/test_audit_ocsf.py validates the
 * same output against the JSON Schema.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "exec.h"
#include "ocsf.h"
#include "runrec.h"
#include "sandbox.h"

#define TS	"2026-01-02T03:04:05.678901Z"
#define TS_MS	1767323045678LL
#define HASH	"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

/* The members of a grant.* line (egress-proxy/control.c). */
#define GRANT_FIELDS \
	"\"sandbox\":\"sbx_1\",\"host\":\"pypi.test\",\"port\":443," \
	  "\"run_id\":null,\"by\":\"alice\",\"rationale\":\"one wheel\"," \
	  "\"granted\":\"2026-12-03T10:00:00Z\"," \
	  "\"expires\":\"2026-12-03T10:15:00Z\",\"policy_digest\":\"d1\"}"

static const struct ocsf_ctx ctx = { "security-events.jsonl", "host.test" };

/* One event (JSON text) and what its OCSF form must say. */
struct mapcase {
	const char	*event;
	int		 class_uid;
	int		 activity_id;
	int		 severity_id;
	const char	*path;		/* a member, "a.b.c" */
	const char	*want;		/* its value as compact JSON; NULL: none */
};

static const struct mapcase cases[] = {
	{ "{\"event\":\"egress.blocked\",\"sandbox\":\"sbx_1\","
	  "\"src\":\"172.30.0.5:40112\",\"method\":\"GET\","
	  "\"host\":\"evil.test\",\"port\":80,\"reason\":\"not_allowlisted\","
	  "\"message\":\"network blocked\",\"policy_digest\":\"d1\"}",
	  4002, 3, 3, "src_endpoint", "{\"ip\":\"172.30.0.5\",\"port\":40112,"
	  "\"uid\":\"sbx_1\"}" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"evil.test\","
	  "\"port\":80,\"reason\":\"not_allowlisted\"}",
	  4002, 3, 3, "http_request", "{\"http_method\":\"GET\",\"url\":"
	  "{\"url_string\":\"http://evil.test:80\",\"hostname\":\"evil.test\","
	  "\"port\":80}}" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"CONNECT\",\"host\":\"::1\","
	  "\"port\":443,\"reason\":\"ip_literal\"}",
	  4002, 1, 3, "http_request.url.url_string", "\"[::1]:443\"" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"PROPFIND\",\"host\":\"a\","
	  "\"port\":80,\"reason\":\"method_not_allowed\"}",
	  4002, 99, 3, "activity_name", "\"Other\"" },
	{ "{\"event\":\"egress.blocked\",\"src\":\"::1:5555\",\"method\":null,"
	  "\"reason\":\"malformed_request\"}",
	  4001, 5, 3, "src_endpoint", "{\"ip\":\"::1\",\"port\":5555}" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"CONNECT\",\"host\":\"a\","
	  "\"port\":443,\"sni\":\"b\",\"reason\":\"sni_mismatch\"}",
	  4002, 1, 4, "is_alert", "true" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"resolved\":\"10.0.0.1\",\"port\":80,\"reason\":\"private_address\"}",
	  4002, 3, 3, "dst_endpoint", "{\"hostname\":\"a\",\"ip\":\"10.0.0.1\","
	  "\"port\":80}" },
	{ "{\"event\":\"egress.allowed\",\"method\":\"GET\",\"host\":\"a\","
	  "\"port\":80,\"bytes_up\":10,\"bytes_down\":32,\"duration_ms\":5,"
	  "\"rule\":\"test.yaml:4\"}",
	  4002, 3, 1, "traffic", "{\"bytes_out\":10,\"bytes_in\":32,"
	  "\"bytes\":42}" },
	{ "{\"event\":\"egress.allowed\",\"method\":\"GET\",\"host\":\"a\","
	  "\"rule\":\"test.yaml:4\"}",
	  4002, 3, 1, "firewall_rule", "{\"name\":\"test.yaml:4\"}" },
	{ "{\"event\":\"egress.would_block\",\"method\":\"GET\",\"host\":\"a\","
	  "\"reason\":\"port_not_allowed\"}",
	  4002, 3, 2, "disposition_id", "17" },
	{ "{\"event\":\"egress.revoked\",\"method\":\"CONNECT\",\"host\":\"a\","
	  "\"port\":443,\"reason\":\"not_allowlisted\",\"bytes_up\":1,"
	  "\"bytes_down\":2,\"duration_ms\":3}",
	  4001, 3, 2, "disposition", "\"Access Revoked\"" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"reason\":\"not_allowlisted\",\"count\":40}",
	  4002, 3, 3, "count", "40" },
	{ "{\"event\":\"policy.reloaded\",\"policy_digest\":\"d2\"}",
	  3004, 3, 1, "entity", "{\"type\":\"Policy\",\"name\":"
	  "\"sandgate egress policy\",\"uid\":\"d2\"}" },
	{ "{\"event\":\"policy.rejected\",\"errors\":[\"a.yaml:1: x\","
	  "\"b.yaml:2: y\"],\"policy_digest\":\"d1\"}",
	  3004, 3, 3, "status_detail", "\"a.yaml:1: x; b.yaml:2: y\"" },
	{ "{\"event\":\"log.checkpoint\",\"reason\":\"open\",\"key\":\"K\","
	  "\"next_key\":null}",
	  1008, 6, 1, "device", "{\"type_id\":0,\"type\":\"Unknown\","
	  "\"hostname\":\"host.test\"}" },
	{ "{\"event\":\"log.checkpoint\",\"reason\":\"close\",\"key\":\"K\"}",
	  1008, 7, 1, "log_name", "\"security-events.jsonl\"" },
	{ "{\"event\":\"log.checkpoint\",\"reason\":\"key\",\"key\":\"K\","
	  "\"next_key\":\"N\"}",
	  1008, 99, 1, "message", "\"checkpoint (key) naming key K, handing "
	  "over to key N; its signature is not checked here: sandgate audit "
	  "verify --key checks it\"" },
	/* The export checks no signature: never "Success" (L2). */
	{ "{\"event\":\"log.checkpoint\",\"reason\":\"close\",\"key\":\"K\"}",
	  1008, 7, 1, "status", "\"Unknown\"" },
	{ "{\"event\":\"log.resume\",\"anchor_seq\":124,\"found_seq\":126}",
	  1008, 99, 3, "message", "\"the writer found the log ending at seq "
	  "126, not at the checkpoint it had signed last (seq 124): sandgate "
	  "audit verify --key judges it\"" },
	/* Lost events: Event Log Activity, High, not a Base Event. */
	{ "{\"event\":\"log.outage\",\"lost\":8,\"since\":"
	  "\"2026-12-02T04:43:53.077115Z\",\"cause\":\"cannot write\"}",
	  1008, 99, 4, "message", "\"8 event(s) could not be written to the "
	  "log since 2026-12-02T04:43:53.077115Z: it was unavailable\"" },
	/* A lost summary line holds many attempts (lost_events). */
	{ "{\"event\":\"log.outage\",\"lost\":2,\"lost_events\":9,"
	  "\"since\":\"2026-12-02T04:43:53.077115Z\"}",
	  1008, 99, 4, "message", "\"2 event(s), holding 9 attempt(s), could "
	  "not be written to the log since 2026-12-02T04:43:53.077115Z: it "
	  "was unavailable\"" },
	{ "{\"event\":\"log.outage\",\"lost\":8,\"since\":\"x\","
	  "\"cause\":\"cannot write\"}",
	  1008, 99, 4, "status_detail", "\"cannot write\"" },
	{ "{\"event\":\"log.outage\",\"lost\":8}",
	  1008, 99, 4, "log_name", "\"security-events.jsonl\"" },
	/* Hostile members are left out, never passed on out of range (L1). */
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"port\":99999,\"reason\":\"not_allowlisted\"}",
	  4002, 3, 3, "http_request.url", "{\"url_string\":\"http://a\","
	  "\"hostname\":\"a\"}" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"port\":-1,\"reason\":\"not_allowlisted\"}",
	  4002, 3, 3, "dst_endpoint", "{\"hostname\":\"a\"}" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"reason\":\"not_allowlisted\",\"count\":-3}",
	  4002, 3, 3, "count", NULL },
	{ "{\"event\":\"egress.revoked\",\"method\":\"CONNECT\",\"host\":\"a\","
	  "\"reason\":\"not_allowlisted\",\"bytes_up\":-5,\"bytes_down\":1}",
	  4001, 3, 2, "traffic", "{\"bytes_in\":1}" },
	{ "{\"event\":\"egress.revoked\",\"method\":\"CONNECT\",\"host\":\"a\","
	  "\"reason\":\"not_allowlisted\",\"bytes_up\":9223372036854775807,"
	  "\"bytes_down\":9223372036854775807}",
	  4001, 3, 2, "traffic", "{\"bytes_out\":9223372036854775807,"
	  "\"bytes_in\":9223372036854775807}" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"resolved\":\"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255\","
	  "\"reason\":\"not_allowlisted\"}",
	  4002, 3, 3, "dst_endpoint.ip",
	  "\"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff\"" },
	{ "{\"event\":\"egress.blocked\",\"method\":\"GET\",\"host\":\"a\","
	  "\"src\":\"ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255:80\","
	  "\"reason\":\"not_allowlisted\"}",
	  4002, 3, 3, "src_endpoint", "{\"ip\":"
	  "\"ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff\",\"port\":80}" },
	{ "{\"event\":\"run.exec\",\"run\":\"r\",\"sandbox\":\"s\","
	  "\"image\":null,\"image_id\":\"sha256:x\",\"exit_code\":0}",
	  1007, 1, 1, "process.container.image", "{\"uid\":\"sha256:x\"}" },
	/*
	 * The control plane's events (atk20r17 F1): grants are Entity
	 * Management, refusals Authentication, a start Application
	 * Lifecycle, a seal drift a Detection Finding; none a Base Event.
	 */
	{ "{\"event\":\"grant.added\"," GRANT_FIELDS,
	  3004, 1, 3, "actor", "{\"app_name\":\"sandgate-proxy\",\"user\":"
	  "{\"name\":\"alice\"}}" },
	{ "{\"event\":\"grant.added\"," GRANT_FIELDS,
	  3004, 1, 3, "entity", "{\"type\":\"Egress Grant\",\"name\":"
	  "\"pypi.test:443\",\"uid\":\"sbx_1/pypi.test:443\"}" },
	{ "{\"event\":\"grant.added\"," GRANT_FIELDS,
	  3004, 1, 3, "comment", "\"one wheel\"" },
	{ "{\"event\":\"grant.restored\"," GRANT_FIELDS,
	  3004, 1, 2, "actor.user.name", "\"alice\"" },
	{ "{\"event\":\"grant.revoked\",\"revoked_by\":\"bob\"," GRANT_FIELDS,
	  3004, 4, 1, "actor.user.name", "\"bob\"" },
	{ "{\"event\":\"grant.expired\"," GRANT_FIELDS,
	  3004, 4, 1, "actor", "{\"app_name\":\"sandgate-proxy\"}" },
	{ "{\"event\":\"grant.ended\",\"rule\":\"deny.yaml:3\"," GRANT_FIELDS,
	  3004, 4, 1, "status_detail", "\"deny.yaml:3\"" },
	{ "{\"event\":\"grant.added\"}",
	  3004, 1, 3, "entity", "{\"type\":\"Egress Grant\",\"name\":\"?\"}" },
	{ "{\"event\":\"control.unauthorized\",\"client\":\"127.0.0.1\","
	  "\"client_port\":51000,\"path\":\"/register\",\"reason\":"
	  "\"wrong bearer token\",\"policy_digest\":\"d1\"}",
	  3002, 1, 3, "src_endpoint", "{\"ip\":\"127.0.0.1\",\"port\":51000}" },
	{ "{\"event\":\"control.unauthorized\",\"client\":\"127.0.0.1\","
	  "\"client_port\":70000,\"path\":\"/register\",\"reason\":\"x\"}",
	  3002, 1, 3, "src_endpoint", "{\"ip\":\"127.0.0.1\"}" },
	{ "{\"event\":\"control.unauthorized\",\"reason\":\"x\"}",
	  3002, 1, 3, "status", "\"Failure\"" },
	{ "{\"event\":\"control.unauthorized_summary\",\"count\":57,"
	  "\"since\":1796292000,\"policy_digest\":\"d1\"}",
	  3002, 1, 3, "count", "57" },
	{ "{\"event\":\"proxy.started\",\"instance\":\"a\","
	  "\"policy_digest\":\"d1\",\"token_keys\":1,"
	  "\"token_any_source\":false}",
	  6002, 3, 1, "app", "{\"name\":\"sandgate-proxy\",\"vendor_name\":"
	  "\"sandgate\"}" },
	{ "{\"event\":\"sandbox.seal_drift\",\"sandbox\":\"sbx_1\","
	  "\"detail\":\"gone\"}",
	  2004, 1, 4, "finding_info", "{\"uid\":\"" HASH "\",\"title\":"
	  "\"the network seal of sandbox sbx_1 does not hold; the command did "
	  "not run\",\"desc\":\"gone\"}" },
	{ "{\"event\":\"sandbox.seal_drift\",\"sandbox\":\"sbx_1\"}",
	  2004, 1, 4, "is_alert", "true" },
	{ "{\"event\":\"something.new\"}", 0, 99, 0, "unmapped.sandgate.event",
	  "\"something.new\"" },
	{ "{\"no_event\":1}", 0, 0, 0, "activity_name", "\"Unknown\"" },
};

/* The member at a dotted path, or NULL. */
static json_t *
member(json_t *o, const char *path)
{
	char	 buf[128], *p, *dot;

	snprintf(buf, sizeof(buf), "%s", path);
	for (p = buf; o != NULL && p != NULL; p = dot) {
		if ((dot = strchr(p, '.')) != NULL)
			*dot++ = '\0';
		o = json_object_get(o, p);
	}
	return o;
}

/* The event with ts, seq, prev and hash added, as the log has it. */
static json_t *
logged(const char *text)
{
	json_t	*ev = json_loads(text, 0, NULL);

	assert_non_null(ev);
	json_object_set_new(ev, "ts", json_string(TS));
	json_object_set_new(ev, "seq", json_integer(7));
	json_object_set_new(ev, "prev", json_string(HASH));
	json_object_set_new(ev, "hash", json_string(HASH));
	return ev;
}

static void
test_cases(void **state)
{
	const struct mapcase	*c;
	json_t			*ev, *o, *m;
	char			*got;
	size_t			 i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		c = &cases[i];
		ev = logged(c->event);
		o = ocsf_event(ev, &ctx);
		assert_non_null(o);
		m = member(o, c->path);
		got = m ? json_dumps(m, JSON_COMPACT | JSON_ENCODE_ANY |
		    JSON_PRESERVE_ORDER) : NULL;
		if (json_integer_value(json_object_get(o, "class_uid")) !=
		    c->class_uid || json_integer_value(json_object_get(o,
		    "activity_id")) != c->activity_id ||
		    json_integer_value(json_object_get(o, "severity_id")) !=
		    c->severity_id || (got == NULL) != (c->want == NULL) ||
		    (got != NULL && strcmp(got, c->want) != 0))
			fail_msg("case %zu (%s): class %lld activity %lld "
			    "severity %lld, %s = %s", i, c->event,
			    (long long)json_integer_value(json_object_get(o,
			    "class_uid")), (long long)json_integer_value(
			    json_object_get(o, "activity_id")),
			    (long long)json_integer_value(json_object_get(o,
			    "severity_id")), c->path, got ? got : "(none)");
		/* Every event: the whole sandgate event, time, type_uid. */
		assert_true(json_equal(member(o, "unmapped.sandgate"), ev));
		assert_int_equal(json_integer_value(json_object_get(o,
		    "time")), TS_MS);
		assert_int_equal(json_integer_value(json_object_get(o,
		    "type_uid")), c->class_uid * 100 + c->activity_id);
		assert_int_equal(json_integer_value(member(o,
		    "metadata.sequence")), 7);
		assert_string_equal(json_string_value(member(o,
		    "metadata.version")), OCSF_VERSION);
		free(got);
		json_decref(o);
		json_decref(ev);
	}
}

/* A run record as runrec_fields() makes it: Process Activity. */
static void
test_run_record(void **state)
{
	struct sandbox_meta	 m;
	struct exec_result	 x;
	struct runrec		 r;
	char			*argv[] = { "pip", "install", "x", NULL };
	json_t			*ev, *o, *add;

	memset(&m, 0, sizeof(m));
	snprintf(m.id, sizeof(m.id), "sbx_0123456789abcdef01234567");
	m.image = "sandgate/base";
	m.image_id = "sha256:abc";
	memset(&x, 0, sizeof(x));
	x.exit_code = 124;
	x.cmd_exit = -1;
	x.timed_out = 1;
	x.duration_ms = 2000;
	x.start.tv_sec = 1767323045;
	x.end.tv_sec = 1767323047;
	memset(&r, 0, sizeof(r));
	r.kind = "exec";
	r.run_id = "run_1";
	r.meta = &m;
	r.argv = argv;
	r.res = &x;
	add = runrec_fields(&r);
	assert_non_null(add);
	ev = logged("{}");
	json_object_update(ev, add);
	json_decref(add);
	o = ocsf_event(ev, &ctx);
	assert_int_equal(json_integer_value(json_object_get(o, "class_uid")),
	    1007);
	assert_string_equal(json_string_value(json_object_get(o,
	    "activity_name")), "Terminate");
	assert_string_equal(json_string_value(member(o, "process.cmd_line")),
	    "pip install x");
	assert_string_equal(json_string_value(member(o, "process.name")),
	    "pip");
	assert_string_equal(json_string_value(member(o,
	    "process.container.uid")), "sbx_0123456789abcdef01234567");
	assert_string_equal(json_string_value(member(o,
	    "process.container.image.uid")), "sha256:abc");
	assert_null(json_object_get(o, "exit_code"));	/* killed, no exit */
	assert_string_equal(json_string_value(json_object_get(o,
	    "status_code")), "124");
	assert_string_equal(json_string_value(json_object_get(o,
	    "status_detail")), "timed_out");
	assert_int_equal(json_integer_value(json_object_get(o, "start_time")),
	    1767323045000LL);
	assert_int_equal(json_integer_value(json_object_get(o, "duration")),
	    2000);
	assert_int_equal(json_integer_value(json_object_get(o,
	    "severity_id")), 2);
	json_decref(o);
	/* Never started: Launch, failed. */
	r.res = NULL;
	json_decref(ev);
	add = runrec_fields(&r);
	ev = logged("{}");
	json_object_update(ev, add);
	json_decref(add);
	o = ocsf_event(ev, &ctx);
	assert_int_equal(json_integer_value(json_object_get(o, "activity_id")),
	    1);
	assert_int_equal(json_integer_value(json_object_get(o, "status_id")),
	    2);
	assert_null(json_object_get(o, "start_time"));
	json_decref(o);
	json_decref(ev);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cases),
		cmocka_unit_test(test_run_record),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
