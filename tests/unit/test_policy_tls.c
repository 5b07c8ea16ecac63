/*
 * test_policy_tls.c: what tls: terminate adds to the policy: the value,
 * ca_file, credentials, their errors, and decisions for a CONNECT, a
 * plain-HTTP request and a request inside a terminated session.
 */
#include <sys/stat.h>

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy.h"
#include "util.h"

#define NOW	((time_t)1780272000)	/* 2026-06-01T00:00:00Z */

static char	tdir[64];

static void
tw(const char *name, const char *text)
{
	char	 path[1024];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", tdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

static void
tclean(void)
{
	char	cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tdir);
	assert_int_equal(system(cmd), 0);
}

/*
 * A folder holding set.yaml with text, the unit CA as ca/int.pem, and
 * ext, a link to the folder outside that holds the unit CA.
 */
static struct policy *
tload(const char *text, struct policy_diags *d)
{
	char	 src[1024], cmd[4400];

	snprintf(tdir, sizeof(tdir), "/tmp/sgpoltls" UTIL_MKTEMP_SUFFIX);
	assert_non_null(mkdtemp(tdir));
	snprintf(src, sizeof(src), "%s/tls/unit-ca.pem",
	    getenv("SANDGATE_TEST_DATA") ? getenv("SANDGATE_TEST_DATA") :
	    "../data");
	/* broken.pem: a good certificate, then one whose base64 is not. */
	snprintf(cmd, sizeof(cmd), "mkdir %s/ca && cp %s %s/ca/int.pem && "
	    "echo junk > %s/ca/junk.pem && cp %s %s/ca/broken.pem && "
	    "printf -- '-----BEGIN CERTIFICATE-----\\nMIIB*not*base64\\n"
	    "-----END CERTIFICATE-----\\n' >> %s/ca/broken.pem && "
	    "mkfifo %s/ca/fifo.pem && ln -s \"$(cd \"$(dirname %s)\" && "
	    "pwd)\" %s/ext", tdir, src, tdir, tdir, src, tdir, tdir, tdir,
	    src, tdir);
	assert_int_equal(system(cmd), 0);
	tw("set.yaml", text);
	policy_diags_init(d);
	return policy_load_dir(tdir, NOW, d);
}

static const char	*good =
"allow:\n"
"  - host: git.test\n"
"    tls: terminate\n"
"    methods: [GET, POST]\n"
"    paths: [/repo.git/info/refs, /repo.git/git-upload-pack]\n"
"    rationale: clone only, never git-receive-pack\n"
"  - host: registry.test\n"
"    tls: terminate\n"
"    ca_file: ca/int.pem\n"
"    credentials: {header: Authorization, secret: reg-token}\n"
"    rationale: the private index, with a token the sandbox never sees\n"
"  - host: plain.test\n"
"    rationale: passthrough as before\n";

/* The keys load; the digest covers the CA file's bytes. */
static void
test_terminate_loads(void **state)
{
	struct policy_diags		 d;
	struct policy			*p;
	const struct policy_entry	*e;
	char				 digest[65];

	(void)state;
	p = tload(good, &d);
	if (p == NULL)
		fail_msg("%zu errors, first %s", d.nerrors, d.n ?
		    d.v[0].message : "-");
	assert_int_equal(d.nwarnings, 0);
	e = policy_entry_at(p, 0);
	assert_int_equal(e->tls, POLICY_TLS_TERMINATE);
	assert_string_equal(policy_tls_name(e->tls), "terminate");
	assert_null(e->ca_file);
	assert_null(e->cred_header);
	e = policy_entry_at(p, 1);
	assert_non_null(e->ca_file);
	assert_non_null(strstr(e->ca_file, "/ca/int.pem"));
	assert_true(e->ca_file[0] == '/');
	assert_string_equal(e->cred_header, "Authorization");
	assert_string_equal(e->cred_secret, "reg-token");
	snprintf(digest, sizeof(digest), "%s", policy_digest(p));
	policy_free(p);
	policy_diags_release(&d);
	/* The CA file changed, the YAML did not: another digest. */
	{
		char	 path[1024];
		FILE	*f;

		snprintf(path, sizeof(path), "%s/ca/int.pem", tdir);
		assert_non_null(f = fopen(path, "a"));
		fputs("\n", f);
		fclose(f);
	}
	policy_diags_init(&d);
	p = policy_load_dir(tdir, NOW, &d);
	assert_non_null(p);
	assert_string_not_equal(digest, policy_digest(p));
	policy_free(p);
	policy_diags_release(&d);
	tclean();
}

/*
 * Two loads of one ca_file share its bytes (a policy kept by an open
 * tunnel must not keep a copy of its own); they stay valid while any
 * load holds them, and changed bytes are bytes of their own.
 */
static void
test_ca_bytes_shared(void **state)
{
	struct policy_diags		 d1, d2, d3;
	struct policy			*p1, *p2, *p3;
	const struct policy_ca		*a, *b;
	char				 path[1024];
	FILE				*f;

	(void)state;
	assert_non_null(p1 = tload(good, &d1));
	policy_diags_init(&d2);
	assert_non_null(p2 = policy_load_dir(tdir, NOW, &d2));
	a = policy_entry_at(p1, 1)->ca;
	b = policy_entry_at(p2, 1)->ca;
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_equal(a->pem, b->pem);
	policy_free(p1);
	assert_non_null(strstr(b->pem, "-----BEGIN CERTIFICATE-----"));
	snprintf(path, sizeof(path), "%s/ca/int.pem", tdir);
	assert_non_null(f = fopen(path, "a"));
	fputs("\n", f);
	fclose(f);
	policy_diags_init(&d3);
	assert_non_null(p3 = policy_load_dir(tdir, NOW, &d3));
	a = policy_entry_at(p3, 1)->ca;
	assert_ptr_not_equal(a->pem, b->pem);
	assert_int_equal(a->len, b->len + 1);
	assert_string_not_equal(a->id, b->id);
	policy_free(p2);
	policy_free(p3);
	policy_diags_release(&d1);
	policy_diags_release(&d2);
	policy_diags_release(&d3);
	tclean();
}

static const struct {
	const char	*entry;		/* after "  - host: x.test\n" */
	const char	*want;
} tbad[] = {
	{ "    tls: terminate\n    ca_file: /etc/ssl/x.pem\n",
	  "ca_file \"/etc/ssl/x.pem\" must name a file inside the policy" },
	{ "    tls: terminate\n    ca_file: ca/../../x.pem\n",
	  "ca_file \"ca/../../x.pem\" must name a file inside" },
	{ "    tls: terminate\n    ca_file: ca/none.pem\n",
	  "ca_file \"ca/none.pem\": does not exist" },
	{ "    tls: terminate\n    ca_file: ca/junk.pem\n",
	  "ca_file \"ca/junk.pem\": holds no PEM certificate" },
	{ "    tls: terminate\n    ca_file: ca/broken.pem\n",
	  "ca_file \"ca/broken.pem\": holds a broken certificate" },
	/* Opening a FIFO must not wait for a writer. */
	{ "    tls: terminate\n    ca_file: ca/fifo.pem\n",
	  "ca_file \"ca/fifo.pem\": is not a regular file" },
	/* Out of the folder through a linked folder: "..", another way. */
	{ "    tls: terminate\n    ca_file: ext/unit-ca.pem\n",
	  "ca_file \"ext/unit-ca.pem\": passes through a symbolic link" },
	{ "    ca_file: ca/int.pem\n",
	  "ca_file needs \"tls: terminate\"" },
	{ "    credentials: {header: X-Token, secret: t}\n",
	  "credentials needs \"tls: terminate\"" },
	{ "    tls: terminate\n    credentials: Bearer abc\n",
	  "credentials must be a mapping" },
	{ "    tls: terminate\n    credentials: {header: X-Token}\n",
	  "credentials need both header and secret" },
	{ "    tls: terminate\n    credentials: {header: Host, secret: t}\n",
	  "header \"Host\" frames or routes the request" },
	{ "    tls: terminate\n"
	  "    credentials: {header: Proxy-Authorization, secret: t}\n",
	  "header \"Proxy-Authorization\" is a Proxy-* header" },
	{ "    tls: terminate\n"
	  "    credentials: {header: \"X Token\", secret: t}\n",
	  "header \"X Token\" is not an HTTP header name" },
	{ "    tls: terminate\n"
	  "    credentials: {header: X-Token, secret: \"Bearer abc\"}\n",
	  "secret \"Bearer abc\" must be a secret name" },
	{ "    tls: terminate\n"
	  "    credentials: {header: X-Token, secret: t, value: v}\n",
	  "unknown key \"value\" in credentials; known keys are header, "
	  "secret" },
	{ "    tls: terminate\n    ports: [443]\n    host2: y\n",
	  "unknown key \"host2\"" },
	{ "    tls: terminate\n"
	  "    credentials: {header: X-Token, secret: t}\n"
	  "    methods: [GET, TRACE]\n",
	  "method TRACE is not allowed on entry \"x.test\", which has "
	  "credentials" },
	{ "    tls: terminate\n    methods: [TRACK]\n"
	  "    credentials: {header: X-Token, secret: t}\n",
	  "method TRACK is not allowed" },
};

/* text fails to load with one error, at set.yaml:line:col. */
static void
terror_at(const char *text, int line, int col)
{
	struct policy_diags	 d;

	assert_null(tload(text, &d));
	assert_int_equal(d.n, 1);
	assert_int_equal(d.v[0].line, line);
	assert_int_equal(d.v[0].col, col);
	assert_non_null(strstr(d.v[0].file, "set.yaml"));
	policy_diags_release(&d);
	tclean();
}

static void
test_terminate_errors(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	char			 text[1024];
	size_t			 i;

	(void)state;
	for (i = 0; i < sizeof(tbad) / sizeof(tbad[0]); i++) {
		snprintf(text, sizeof(text), "allow:\n  - host: x.test\n%s"
		    "    rationale: a test of the validator\n", tbad[i].entry);
		p = tload(text, &d);
		assert_null(p);
		if (d.n < 1 || strstr(d.v[0].message, tbad[i].want) == NULL)
			fail_msg("case %zu: got \"%s\", want \"%s\"", i,
			    d.n ? d.v[0].message : "-", tbad[i].want);
		policy_diags_release(&d);
		tclean();
	}
	/* The echoing method is named where it is written. */
	terror_at("allow:\n  - host: x.test\n    tls: terminate\n"
	    "    credentials: {header: X-Token, secret: t}\n"
	    "    methods: [GET, TRACE]\n    rationale: echo\n", 5, 20);
	/* A broken ca_file is named where the entry names it. */
	terror_at("allow:\n  - host: x.test\n    tls: terminate\n"
	    "    ca_file: ca/broken.pem\n    rationale: broken\n", 4, 14);
	terror_at("allow:\n  - host: x.test\n    tls: terminate\n"
	    "    ca_file: ca/fifo.pem\n    rationale: a fifo\n", 4, 14);
	/* An address cannot be terminated. */
	p = tload("allow:\n  - host: 192.0.2.7\n    tls: terminate\n"
	    "    rationale: no name to mint for\n", &d);
	assert_null(p);
	assert_non_null(strstr(d.v[0].message, "tls: terminate needs a host "
	    "name"));
	policy_diags_release(&d);
	tclean();
}

static enum sg_reason
tdecide(const struct policy *p, const char *name, uint16_t port,
    const char *method, const char *path, int terminated,
    struct policy_match *m)
{
	struct policy_query	 q;
	struct host		 h;
	const char		*cause;

	assert_int_equal(host_normalize(name, strlen(name), &h, &cause), 0);
	memset(&q, 0, sizeof(q));
	q.host = &h;
	q.port = port;
	q.method = method;
	q.path = path;
	q.terminated = terminated;
	q.all_sets = 1;
	q.now = NOW;
	return policy_decide(p, &q, m);
}

/*
 * A CONNECT to a terminated entry with methods and paths is allowed (the
 * rules apply inside); a plain-HTTP request to it is not TLS; inside,
 * method and path decide. A passthrough entry allows any request inside.
 */
static void
test_terminate_decide(void **state)
{
	struct policy_diags	d;
	struct policy		*p;
	struct policy_match	m;

	(void)state;
	p = tload(good, &d);
	assert_non_null(p);
	assert_int_equal(tdecide(p, "git.test", 443, NULL, NULL, 0, &m),
	    SG_REASON_NONE);
	assert_int_equal(m.tls, POLICY_TLS_TERMINATE);
	assert_int_equal(tdecide(p, "git.test", 443, "GET",
	    "/repo.git/info/refs?service=git-upload-pack", 0, &m),
	    SG_REASON_NOT_TLS);
	assert_int_equal(tdecide(p, "git.test", 443, "GET",
	    "/repo.git/info/refs?service=git-upload-pack", 1, &m),
	    SG_REASON_NONE);
	assert_int_equal(tdecide(p, "git.test", 443, "POST",
	    "/repo.git/git-upload-pack", 1, &m), SG_REASON_NONE);
	assert_int_equal(tdecide(p, "git.test", 443, "POST",
	    "/repo.git/git-receive-pack", 1, &m), SG_REASON_PATH_NOT_ALLOWED);
	assert_int_equal(tdecide(p, "git.test", 443, "PUT",
	    "/repo.git/info/refs", 1, &m), SG_REASON_METHOD_NOT_ALLOWED);
	assert_int_equal(tdecide(p, "git.test", 443, "GET",
	    "/repo.git/info/../../admin", 1, &m), SG_REASON_PATH_NOT_ALLOWED);
	assert_int_equal(tdecide(p, "git.test", 80, NULL, NULL, 0, &m),
	    SG_REASON_PORT_NOT_ALLOWED);
	assert_int_equal(tdecide(p, "registry.test", 443, "PUT", "/x", 1, &m),
	    SG_REASON_NONE);
	assert_string_equal(m.entry->cred_secret, "reg-token");
	/* TRACE and TRACK would echo the credential: refused, any case. */
	assert_int_equal(tdecide(p, "registry.test", 443, "TRACE", "/", 1,
	    &m), SG_REASON_METHOD_NOT_ALLOWED);
	assert_int_equal(tdecide(p, "registry.test", 443, "trace", "/", 1,
	    &m), SG_REASON_METHOD_NOT_ALLOWED);
	assert_int_equal(tdecide(p, "registry.test", 443, "TRACK", "/x", 1,
	    &m), SG_REASON_METHOD_NOT_ALLOWED);
	/* Without credentials the entry's methods decide, as before. */
	assert_int_equal(tdecide(p, "plain.test", 443, "TRACE", "/x", 1, &m),
	    SG_REASON_NONE);
	assert_int_equal(tdecide(p, "plain.test", 443, "DELETE", "/x", 1, &m),
	    SG_REASON_NONE);
	assert_int_equal(m.tls, POLICY_TLS_REQUIRED);
	policy_free(p);
	policy_diags_release(&d);
	tclean();
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_terminate_loads),
		cmocka_unit_test(test_ca_bytes_shared),
		cmocka_unit_test(test_terminate_errors),
		cmocka_unit_test(test_terminate_decide),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
