/* test_policy.c: the policy loader, validator and matcher. */
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

#define NOW		((time_t)1780272000)	/* 2026-06-01T00:00:00Z */
#define DAY		86400
#define BIG_ENTRIES	100000

static const char	*test_data(void);
static struct policy	*test_load_dir(const char *, struct policy_diags *);
static char		*test_diag(const struct policy_diags *, size_t);

static const char *
test_data(void)
{
	const char	*d = getenv("SANDGATE_TEST_DATA");

	return d != NULL ? d : "../data";
}

static struct policy *
test_load_dir(const char *sub, struct policy_diags *diags)
{
	char	path[1024];

	snprintf(path, sizeof(path), "%s/policy/%s", test_data(), sub);
	return policy_load_dir(path, NOW, diags);
}

/* Diagnostic i formatted, with the folder part of the file cut off. */
static char *
test_diag(const struct policy_diags *d, size_t i)
{
	static char	buf[1024];
	const char	*slash;
	char		 line[1024];

	policy_diag_format(&d->v[i], line, sizeof(line));
	slash = strrchr(d->v[i].file, '/');
	if (slash != NULL && strncmp(line, d->v[i].file,
	    strlen(d->v[i].file)) == 0)
		snprintf(buf, sizeof(buf), "%s", line + (slash + 1 -
		    d->v[i].file));
	else
		snprintf(buf, sizeof(buf), "%s", line);
	return buf;
}

/* Each kind of mistake: exactly one error, at the right place. */
static const struct bad_case {
	const char	*dir;
	const char	*want;	/* "file:line:col: " + start of message */
} bad_cases[] = {
	{ "bad-no-rationale", "pypi.yaml:6:5: entry for "
	    "\"files.pythonhosted.org\" has no rationale; every entry must "
	    "say why it is allowed" },
	{ "bad-empty-rationale", "set.yaml:3:16: entry for \"pypi.org\" has "
	    "an empty rationale" },
	{ "bad-draft-rationale", "set.yaml:3:16: entry for \"pypi.org\" still "
	    "has the drafted rationale \"T" "ODO\"" },
	{ "bad-unknown-key", "set.yaml:3:5: unknown key \"rationle\" in an "
	    "allow entry; did you mean \"rationale\"?" },
	{ "bad-unknown-top-key", "set.yaml:2:1: unknown key \"ownr\" in the "
	    "top level; did you mean \"owner\"?" },
	{ "bad-port", "set.yaml:3:18: port \"0\" is not a number from 1 to "
	    "65535" },
	{ "bad-port-range", "set.yaml:4:9: port \"65536\" is not a number" },
	{ "bad-date", "set.yaml:4:14: expires \"2027-02-30\" is not a date" },
	{ "bad-host", "set.yaml:2:11: host \"exa mple.com\" is not a valid "
	    "host name" },
	{ "bad-wildcard-all", "set.yaml:2:11: wildcard \"*\" matches every "
	    "host" },
	{ "bad-wildcard-com", "set.yaml:2:11: wildcard \"*.com\" covers the "
	    "whole public suffix \"com\"" },
	{ "bad-wildcard-couk", "set.yaml:2:11: wildcard \"*.co.uk\" covers "
	    "the whole public suffix \"co.uk\"" },
	{ "bad-wildcard-githubio", "set.yaml:2:11: wildcard \"*.github.io\" "
	    "covers the whole public suffix \"github.io\"" },
	/* Issue 15, finding 12: suffixes under it (s3.amazonaws.com). */
	{ "bad-wildcard-inner", "set.yaml:3:11: wildcard \"*.amazonaws.com\" "
	    "covers public suffixes under it, such as" },
	{ "bad-wildcard-middle", "set.yaml:2:11: host "
	    "\"files.*.example.com\": a wildcard may only be a whole leading "
	    "label" },
	{ "bad-private-wildcard", "set.yaml:3:20: allow_private is not "
	    "allowed on wildcard \"*.corp.example.com\"" },
	{ "bad-allow-private", "set.yaml:3:20: allow_private must be true or "
	    "false" },
	{ "bad-duplicate-key", "set.yaml:4:5: duplicate key \"host\" (first "
	    "at line 2)" },
	{ "bad-utf8", "set.yaml:3:19: invalid UTF-8 at byte 0xe9" },
	{ "bad-syntax", "set.yaml:5:1: YAML syntax error: found unexpected "
	    "end of stream (while scanning a quoted scalar at line 3)" },
	{ "bad-not-mapping", "set.yaml:1:1: a policy file must be a mapping" },
	{ "bad-set-name", "Python.yaml: set name \"Python\"" },
	{ "bad-mode", "set.yaml:1:7: mode \"block\" is not enforce or report" },
	{ "bad-tls", "set.yaml:4:10: tls must be required, optional or "
	    "terminate" },
	{ "bad-method", "set.yaml:4:20: method \"head\" is not an HTTP method "
	    "in capitals" },
	{ "bad-path", "set.yaml:4:23: path \"packages/\" must start with '/'" },
	{ "bad-path-slash", "set.yaml:4:23: path \"/@scope%2fname\": write an "
	    "encoded slash as %2F" },
	{ "bad-methods-tls", "set.yaml:3:14: methods and paths apply to "
	    "plain-HTTP requests and terminated TLS only" },
	{ "bad-cidr", "set.yaml:2:11: host \"10.0.0.1/8\" is not a valid "
	    "CIDR" },
	{ "bad-cidr-broad", "set.yaml:2:11: CIDR \"0.0.0.0/0\" is too broad" },
	{ "bad-alias", "set.yaml:6:12: aliases (*name) are not supported" },
	{ "bad-empty", "set.yaml: file is empty" },
	{ "bad-no-host", "set.yaml:2:5: entry has no host" },
	{ "bad-two-docs", "set.yaml:4:1: a policy file holds one YAML "
	    "document" },
	{ "bad-deny-no-rationale", "floor.yaml:2:5: entry for \"paste.test\" "
	    "has no rationale; every entry must say why it is denied" },
	{ "bad-deny-key", "floor.yaml:3:5: unknown key \"expires\" in a deny "
	    "entry; known keys are host, ports, rationale" },
	{ "bad-grants-suffix", "floor.yaml:2:22: grants domain \"co.uk\" is "
	    "a public suffix" },
	{ "bad-grants-no-under", "floor.yaml:1:9: \"grants\" must be a "
	    "mapping with an \"under\" list of domains" },
};

static void
test_bad_files(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	size_t			 i;
	const char		*got;

	(void)state;
	for (i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		policy_diags_init(&d);
		p = test_load_dir(bad_cases[i].dir, &d);
		if (d.nerrors != 1 || d.n < 1)
			fail_msg("%s: %zu errors, want 1 (first: %s)",
			    bad_cases[i].dir, d.nerrors,
			    d.n ? test_diag(&d, 0) : "none");
		assert_null(p);
		assert_int_equal(d.v[0].severity, POLICY_ERROR);
		got = test_diag(&d, 0);
		if (strncmp(got, bad_cases[i].want,
		    strlen(bad_cases[i].want)) != 0)
			fail_msg("%s:\n got  %s\n want %s...", bad_cases[i].dir,
			    got, bad_cases[i].want);
		policy_diags_release(&d);
	}
}

/* The sets shipped in policy.d load without errors or warnings. */
static void
test_shipped(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	char			 dir[1024];
	size_t			 i;

	(void)state;
	snprintf(dir, sizeof(dir), "%s/../../policy.d", test_data());
	policy_diags_init(&d);
	p = policy_load_dir(dir, NOW, &d);
	for (i = 0; i < d.n; i++)
		print_message("%s\n", test_diag(&d, i));
	assert_non_null(p);
	assert_int_equal(d.nerrors, 0);
	assert_int_equal(d.nwarnings, 0);
	assert_true(policy_nsets(p) >= 7);
	assert_true(policy_set_exists(p, "pypi"));
	assert_true(policy_set_exists(p, "github"));
	for (i = 0; i < policy_nentries(p); i++)
		assert_true(strlen(policy_entry_at(p, i)->rationale) > 20);
	assert_int_equal(strlen(policy_digest(p)), 64);
	policy_free(p);
	policy_diags_release(&d);
}

static const struct match_case {
	const char	*host;
	uint16_t	 port;
	const char	*method;	/* NULL: CONNECT */
	const char	*path;
	const char	*sets;		/* "*": all sets */
	time_t		 now;
	enum sg_reason	 want;
	const char	*pattern;	/* entry named in the match */
} match_cases[] = {
	{ "pypi.org", 443, NULL, NULL, "a", 0, SG_REASON_NONE, "pypi.org" },
	{ "PyPI.ORG.", 443, NULL, NULL, "a", 0, SG_REASON_NONE, "pypi.org" },
	{ "pypi.org", 80, NULL, NULL, "a", 0, SG_REASON_PORT_NOT_ALLOWED,
	    "pypi.org" },
	{ "evil.test", 443, NULL, NULL, "a", 0, SG_REASON_NOT_ALLOWLISTED,
	    NULL },
	{ "files.pythonhosted.org", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "*.pythonhosted.org" },
	{ "a.b.pythonhosted.org", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "*.pythonhosted.org" },
	{ "pythonhosted.org", 443, NULL, NULL, "a", 0,
	    SG_REASON_NOT_ALLOWLISTED, NULL },
	{ "evilpythonhosted.org", 443, NULL, NULL, "a", 0,
	    SG_REASON_NOT_ALLOWLISTED, NULL },
	{ "xn--bcher-kva.example", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "xn--bcher-kva.example" },
	{ "B\xc3\xbc" "cher.Example.", 443, NULL, NULL, "a", 0,
	    SG_REASON_NONE, "xn--bcher-kva.example" },
	{ "alt.example", 8443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "alt.example" },
	{ "alt.example", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "alt.example" },
	{ "alt.example", 444, NULL, NULL, "a", 0,
	    SG_REASON_PORT_NOT_ALLOWED, "alt.example" },
	{ "old.example", 443, NULL, NULL, "a", 0, SG_REASON_NOT_ALLOWLISTED,
	    NULL },
	{ "old.example", 443, NULL, NULL, "a", 1577836800 - DAY,
	    SG_REASON_NONE, "old.example" },
	{ "http.example", 80, "GET", "/simple/pip/", "a", 0, SG_REASON_NONE,
	    "http.example" },
	{ "http.example", 80, "HEAD", "/packages/x.whl", "a", 0,
	    SG_REASON_NONE, "http.example" },
	{ "http.example", 80, "POST", "/simple/", "a", 0,
	    SG_REASON_METHOD_NOT_ALLOWED, "http.example" },
	{ "http.example", 80, "get", "/simple/", "a", 0,
	    SG_REASON_METHOD_NOT_ALLOWED, "http.example" },
	{ "http.example", 80, "GET", "/admin", "a", 0,
	    SG_REASON_PATH_NOT_ALLOWED, "http.example" },
	{ "http.example", 80, "GET", "/simple/../admin", "a", 0,
	    SG_REASON_PATH_NOT_ALLOWED, "http.example" },
	{ "http.example", 80, "GET", "/simple/%2E%2e/admin", "a", 0,
	    SG_REASON_PATH_NOT_ALLOWED, "http.example" },
	{ "http.example", 80, "GET", "/simple/a%2fb", "a", 0,
	    SG_REASON_PATH_NOT_ALLOWED, "http.example" },
	{ "http.example", 80, "GET", "/simple/..data/x?q=/../", "a", 0,
	    SG_REASON_NONE, "http.example" },
	{ "http.example", 80, NULL, NULL, "a", 0,
	    SG_REASON_METHOD_NOT_ALLOWED, "http.example" },
	{ "pypi.org", 443, "GET", "/simple/", "a", 0, SG_REASON_NOT_TLS,
	    "pypi.org" },
	{ "192.0.2.55", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "192.0.2.0/24" },
	{ "192.0.3.1", 443, NULL, NULL, "a", 0, SG_REASON_IP_LITERAL, NULL },
	{ "2001:db8::5", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "2001:db8::/32" },
	{ "[2001:DB8:0::5]", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "2001:db8::/32" },
	{ "2001:db9::1", 443, NULL, NULL, "a", 0, SG_REASON_IP_LITERAL,
	    NULL },
	{ "198.51.100.7", 80, "GET", "/", "a", 0, SG_REASON_NONE,
	    "198.51.100.7" },
	{ "198.51.100.7", 443, NULL, NULL, "a", 0,
	    SG_REASON_PORT_NOT_ALLOWED, "198.51.100.7" },
	{ "x.y.deep.example", 22, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "x.y.deep.example" },
	{ "x.y.deep.example", 443, NULL, NULL, "a", 0, SG_REASON_NONE,
	    "*.deep.example" },
	{ "only-b.example", 443, NULL, NULL, "a", 0,
	    SG_REASON_NOT_ALLOWLISTED, NULL },
	{ "only-b.example", 443, NULL, NULL, "a,b", 0, SG_REASON_NONE,
	    "only-b.example" },
	{ "only-b.example", 443, NULL, NULL, "*", 0, SG_REASON_NONE,
	    "only-b.example" },
	{ "pypi.org", 443, NULL, NULL, "b", 0, SG_REASON_NOT_ALLOWLISTED,
	    NULL },
	{ "pypi.org", 443, NULL, NULL, "nosuchset", 0,
	    SG_REASON_NOT_ALLOWLISTED, NULL },
	{ "pypi.org", 443, NULL, NULL, "", 0, SG_REASON_NOT_ALLOWLISTED,
	    NULL },
};

static void
test_match(void **state)
{
	const struct match_case	*c;
	struct policy_diags	 d;
	struct policy		*p;
	struct policy_query	 q;
	struct policy_match	 m;
	struct host		 h;
	const char		*cause, *sets[4];
	enum sg_reason		 r;
	size_t			 i;

	(void)state;
	policy_diags_init(&d);
	p = test_load_dir("match", &d);
	assert_non_null(p);
	assert_int_equal(d.nerrors, 0);
	for (i = 0; i < sizeof(match_cases) / sizeof(match_cases[0]); i++) {
		c = &match_cases[i];
		assert_int_equal(host_normalize(c->host, strlen(c->host), &h,
		    &cause), 0);
		memset(&q, 0, sizeof(q));
		q.host = &h;
		q.port = c->port;
		q.method = c->method;
		q.path = c->path;
		q.now = c->now ? c->now : NOW;
		q.sets = sets;
		if (strcmp(c->sets, "*") == 0)
			q.all_sets = 1;
		else if (strcmp(c->sets, "a,b") == 0) {
			sets[0] = "a";
			sets[1] = "b";
			q.nsets = 2;
		} else if (c->sets[0] != '\0') {
			sets[0] = c->sets;
			q.nsets = 1;
		}
		r = policy_decide(p, &q, &m);
		if (r != c->want || (c->pattern == NULL) != (m.pattern == NULL)
		    || (c->pattern && strcmp(c->pattern, m.pattern) != 0))
			fail_msg("case %zu %s:%u: got %s via %s, want %s via "
			    "%s", i, c->host, c->port, reason_code(r),
			    m.pattern ? m.pattern : "-", reason_code(c->want),
			    c->pattern ? c->pattern : "-");
		if (r == SG_REASON_NONE)
			assert_non_null(m.rationale);
	}
	assert_true(policy_set_is_report(p, "b"));
	assert_false(policy_set_is_report(p, "a"));
	assert_false(policy_set_is_report(p, "zzz"));
	assert_false(policy_set_exists(p, "zzz"));
	policy_free(p);
	policy_diags_release(&d);
}

/* A match reports where the entry is and its TLS rule for the port. */
static void
test_match_fields(void **state)
{
	static const char	 yaml[] = "allow:\n"
	    "  - host: mirror.example.com\n"
	    "    ports: [443, 80]\n"
	    "    allow_private: true\n"
	    "    rationale: internal mirror\n";
	struct policy_diags	 d;
	struct policy		*p;
	struct policy_query	 q;
	struct policy_match	 m;
	struct host		 h;
	const char		*cause;

	(void)state;
	policy_diags_init(&d);
	p = policy_load_buffer("m", "m.yaml", yaml, sizeof(yaml) - 1, NOW,
	    &d);
	assert_non_null(p);
	assert_int_equal(host_normalize("mirror.example.com", 18, &h,
	    &cause), 0);
	memset(&q, 0, sizeof(q));
	q.host = &h;
	q.port = 443;
	q.all_sets = 1;
	q.now = NOW;
	assert_int_equal(policy_decide(p, &q, &m), SG_REASON_NONE);
	assert_string_equal(m.set, "m");
	assert_string_equal(m.file, "m.yaml");
	assert_int_equal(m.line, 2);
	assert_true(m.allow_private);
	assert_int_equal(m.tls, POLICY_TLS_REQUIRED);
	q.port = 80;
	assert_int_equal(policy_decide(p, &q, &m), SG_REASON_NONE);
	assert_int_equal(m.tls, POLICY_TLS_OPTIONAL);
	policy_free(p);
	policy_diags_release(&d);
}

static const struct warn_case {
	const char	*yaml;
	const char	*want;
} warn_cases[] = {
	{ "allow:\n  - host: a.example.com\n    rationale: r\n"
	    "    expires: 2026-06-10\n",
	    "w.yaml:4:14: warning: entry for \"a.example.com\" expires on "
	    "2026-06-10 (in 10 days)" },
	{ "allow:\n  - host: a.example.com\n    rationale: r\n"
	    "    expires: 2026-05-31\n",
	    "w.yaml:4:14: warning: entry for \"a.example.com\" expired on "
	    "2026-05-31" },
	{ "allow:\n  - host: a.example.com\n    rationale: r\n"
	    "  - host: A.Example.com.\n    rationale: again\n",
	    "w.yaml:4:5: warning: entry for \"a.example.com\" duplicates the "
	    "entry at line 2" },
	{ "allow:\n  - host: a.b.example.com\n    rationale: r\n"
	    "  - host: \"*.b.example.com\"\n    rationale: all of b\n",
	    "w.yaml:2:5: warning: entry for \"a.b.example.com\" is redundant: "
	    "the entry for \"*.b.example.com\" at line 4" },
	{ "allow:\n  - host: 10.1.2.3\n    allow_private: true\n"
	    "    rationale: r\n  - host: 10.1.0.0/16\n"
	    "    allow_private: true\n    rationale: net\n",
	    "w.yaml:2:5: warning: entry for \"10.1.2.3\" is redundant" },
	{ "allow: []\n", "w.yaml:1:8: warning: the allow list is empty" },
};

/* Warnings: one each, and the policy still loads. */
static void
test_warnings(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	size_t			 i;
	const char		*got;

	(void)state;
	for (i = 0; i < sizeof(warn_cases) / sizeof(warn_cases[0]); i++) {
		policy_diags_init(&d);
		p = policy_load_buffer("w", "w.yaml", warn_cases[i].yaml,
		    strlen(warn_cases[i].yaml), NOW, &d);
		assert_non_null(p);
		assert_int_equal(d.nerrors, 0);
		if (d.n != 1)
			fail_msg("case %zu: %zu diagnostics", i, d.n);
		got = test_diag(&d, 0);
		if (strncmp(got, warn_cases[i].want,
		    strlen(warn_cases[i].want)) != 0)
			fail_msg("case %zu:\n got  %s\n want %s...", i, got,
			    warn_cases[i].want);
		policy_free(p);
		policy_diags_release(&d);
	}
}

/* Not-redundant cases stay silent: other ports, stricter TLS. */
static void
test_no_false_redundancy(void **state)
{
	static const char	 yaml[] = "allow:\n"
	    "  - host: a.b.example.com\n    ports: [22]\n"
	    "    rationale: ssh\n"
	    "  - host: c.b.example.com\n    ports: [443]\n"
	    "    tls: optional\n    rationale: plain on 443\n"
	    "  - host: \"*.b.example.com\"\n    ports: [443, 8080]\n"
	    "    rationale: all of b\n";
	struct policy_diags	 d;
	struct policy		*p;

	(void)state;
	policy_diags_init(&d);
	p = policy_load_buffer("w", "w.yaml", yaml, sizeof(yaml) - 1, NOW,
	    &d);
	assert_non_null(p);
	if (d.n != 0)
		fail_msg("%s", test_diag(&d, 0));
	assert_int_equal(policy_nentries(p), 3);
	policy_free(p);
	policy_diags_release(&d);
}

/* Errors keep going: every bad entry of a file is reported. */
static void
test_all_errors(void **state)
{
	static const char	 yaml[] = "allow:\n"
	    "  - host: a.example.com\n    ports: [0]\n    rationale: r\n"
	    "  - host: b.example.com\n    rationale: T" "ODO\n"
	    "  - host: \"*.com\"\n    rationale: r\n"
	    "  - host: c.example.com\n    rationale: fine\n";
	struct policy_diags	 d;

	(void)state;
	policy_diags_init(&d);
	assert_null(policy_load_buffer("e", "e.yaml", yaml, sizeof(yaml) - 1,
	    NOW, &d));
	assert_int_equal(d.nerrors, 3);
	assert_int_equal(d.v[0].line, 3);
	assert_int_equal(d.v[1].line, 6);
	assert_int_equal(d.v[2].line, 7);
	policy_diags_release(&d);
}

/* A new folder /tmp/sgpol + six random characters. */
static void
test_tmpdir(char *buf, size_t size)
{
	size_t	len;

	len = (size_t)snprintf(buf, size, "/tmp/sgpol");
	assert_true(len + 7 <= size);
	memset(buf + len, 'X', 6);
	buf[len + 6] = '\0';
	assert_non_null(mkdtemp(buf));
}

static void
test_write(const char *dir, const char *name, const char *text)
{
	char	 path[1024];
	FILE	*f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
}

/* Floors: deny entries and the bounds of grants. */
static const char floor_allow[] =
    "mode: report\n"
    "allow:\n"
    "  - host: \"*.paste.test\"\n"
    "    ports: [80, 443]\n"
    "    rationale: a wide allow the floor cuts into\n"
    "  - host: mail.corp.test\n"
    "    ports: [25, 443]\n"
    "    rationale: mail relay\n"
    "  - host: 192.0.2.7\n"
    "    rationale: a literal the floor denies\n";
static const char floor_deny[] =
    "description: floors\n"
    "deny:\n"
    "  - host: \"*.paste.test\"\n"
    "    rationale: paste sites leak code\n"
    "  - host: corp.test\n"
    "    rationale: the bare domain is the login portal\n"
    "  - host: \"*.corp.test\"\n"
    "    ports: [25]\n"
    "    rationale: no mail out\n"
    "  - host: 192.0.2.0/24\n"
    "    rationale: the test net\n"
    "grants:\n"
    "  under: [corp.test, Pkg.Example.ORG]\n";

static const struct floor_case {
	const char	*host;
	uint16_t	 port;
	const char	*path;		/* NULL: CONNECT */
	enum sg_reason	 want;
	const char	*pattern;
	int		 deny;
} floor_cases[] = {
	{ "a.paste.test", 443, NULL, SG_REASON_DENIED, "*.paste.test", 1 },
	{ "a.paste.test", 80, "/x", SG_REASON_DENIED, "*.paste.test", 1 },
	{ "a.paste.test", 8080, NULL, SG_REASON_DENIED, "*.paste.test", 1 },
	{ "mail.corp.test", 25, NULL, SG_REASON_DENIED, "*.corp.test", 1 },
	{ "mail.corp.test", 443, NULL, SG_REASON_NONE, "mail.corp.test", 0 },
	{ "corp.test", 443, NULL, SG_REASON_DENIED, "corp.test", 1 },
	{ "192.0.2.7", 443, NULL, SG_REASON_DENIED, "192.0.2.0/24", 1 },
	{ "paste.test", 443, NULL, SG_REASON_NOT_ALLOWLISTED, NULL, 0 },
};

static const struct grant_case {
	const char	*host;
	uint16_t	 port;
	const char	*why;		/* NULL: may be granted */
} grant_cases[] = {
	{ "mirror.corp.test", 443, NULL },
	{ "pkg.example.org", 443, NULL },
	{ "a.b.pkg.example.org", 8443, NULL },
	{ "mirror.corp.test", 25, "mirror.corp.test:25 is denied by the deny "
	    "entry \"*.corp.test\"" },
	{ "corp.test", 443, "corp.test:443 is denied by the deny entry "
	    "\"corp.test\"" },
	{ "evilcorp.test", 443, "evilcorp.test is not under a domain grants "
	    "may cover (rule: grants: under: corp.test (" },
	{ "10.0.0.8", 443, "10.0.0.8 is an IP address; grants open host names "
	    "only" },
	{ "198.51.100.1", 443, "198.51.100.1 is an IP address" },
};

static void
test_floors(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	struct policy_query	 q;
	struct policy_match	 m;
	struct host		 h;
	const char		*cause, *sets[] = { "set" };
	char			 dir[64], why[1024];
	enum sg_reason		 r;
	size_t			 i;
	int			 rc;

	(void)state;
	test_tmpdir(dir, sizeof(dir));
	test_write(dir, "set.yaml", floor_allow);
	test_write(dir, "floor.yaml", floor_deny);
	policy_diags_init(&d);
	p = policy_load_dir(dir, NOW, &d);
	assert_non_null(p);
	assert_int_equal(d.nerrors, 0);
	assert_int_equal(policy_nentries(p), 3);
	assert_int_equal(policy_ndenies(p), 4);
	assert_true(policy_deny_at(p, 0)->deny);
	assert_null(policy_deny_at(p, 0)->ports);
	assert_null(policy_deny_at(p, 4));
	assert_int_equal(policy_ngrant_domains(p), 2);
	assert_string_equal(policy_grant_domain_at(p, 1)->name,
	    "pkg.example.org");
	assert_int_equal(policy_grant_domain_at(p, 1)->line, 13);
	/* The set is in report mode and in force: the floor still wins. */
	assert_true(policy_set_is_report(p, "set"));
	for (i = 0; i < sizeof(floor_cases) / sizeof(floor_cases[0]); i++) {
		assert_int_equal(host_normalize(floor_cases[i].host,
		    strlen(floor_cases[i].host), &h, &cause), 0);
		memset(&q, 0, sizeof(q));
		q.host = &h;
		q.port = floor_cases[i].port;
		q.path = floor_cases[i].path;
		q.method = q.path ? "GET" : NULL;
		q.sets = sets;
		q.nsets = 1;
		q.now = NOW;
		r = policy_decide(p, &q, &m);
		if (r != floor_cases[i].want || (m.pattern == NULL) !=
		    (floor_cases[i].pattern == NULL) || (m.pattern != NULL &&
		    strcmp(m.pattern, floor_cases[i].pattern) != 0))
			fail_msg("floor case %zu %s:%u: got %s via %s", i,
			    floor_cases[i].host, floor_cases[i].port,
			    reason_code(r), m.pattern ? m.pattern : "-");
		if (m.entry != NULL)
			assert_int_equal(m.entry->deny, floor_cases[i].deny);
		/* Whatever the sets: a sandbox without any gets it too. */
		q.nsets = 0;
		if (floor_cases[i].deny)
			assert_int_equal(policy_decide(p, &q, NULL),
			    SG_REASON_DENIED);
	}
	for (i = 0; i < sizeof(grant_cases) / sizeof(grant_cases[0]); i++) {
		assert_int_equal(host_normalize(grant_cases[i].host,
		    strlen(grant_cases[i].host), &h, &cause), 0);
		why[0] = '\0';
		rc = policy_grant_check(p, &h, grant_cases[i].port, why,
		    sizeof(why));
		if (grant_cases[i].why == NULL ? rc != 0 : rc != -1 ||
		    strncmp(why, grant_cases[i].why,
		    strlen(grant_cases[i].why)) != 0)
			fail_msg("grant case %zu %s: rc %d why \"%s\"", i,
			    grant_cases[i].host, rc, why);
	}
	policy_free(p);
	policy_diags_release(&d);
	snprintf(why, sizeof(why), "%s/set.yaml", dir);
	unlink(why);
	snprintf(why, sizeof(why), "%s/floor.yaml", dir);
	unlink(why);
	rmdir(dir);
}

/*
 * A request inside a terminated session is its entry's alone: no grant
 * opens what the entry refuses (atk18k F2), whatever grants: under:
 * covers. Nor does one open the host of a tls: terminate entry outside
 * the session, on any port (atk18l F1): plain HTTP to its port would
 * pass its methods, paths and verification, and another port would be
 * spliced past it. Names no terminate entry covers stay a grant's.
 */
static const struct {
	const char	*host;
	uint16_t	 port;
	const char	*why;		/* NULL: a grant may open it */
} term_grant_cases[] = {
	{ "x.grant.test", 443, "x.grant.test is a host the proxy terminates: "
	    "the tls: terminate entry \"x.grant.test\" (t.yaml:4) decides "
	    "every request to it, on every port, and no grant can open it "
	    "(rule: grants never open a tls: terminate entry's host, plain or "
	    "TLS, past its methods, paths, credential or ca_file)" },
	{ "x.grant.test", 8080, "x.grant.test is a host the proxy terminates: "
	    "the tls: terminate entry \"x.grant.test\" (t.yaml:4)" },
	{ "x.grant.test", 9999, "x.grant.test is a host the proxy terminates" },
	{ "a.w.grant.test", 8080, "a.w.grant.test is a host the proxy "
	    "terminates: the tls: terminate entry \"*.w.grant.test\" "
	    "(t.yaml:9)" },
	{ "y.grant.test", 8080, NULL },
	{ "w.grant.test", 443, NULL },
	{ "o.grant.test", 8080, NULL },
};

static void
test_grants_not_in_terminated_sessions(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	struct policy_query	 q;
	struct policy_match	 m;
	struct host		 h;
	const char		*cause, *text = "grants:\n  under: [grant.test]\n"
				    "allow:\n  - host: x.grant.test\n"
				    "    ports: [443, 8080]\n    tls: terminate\n"
				    "    methods: [GET]\n    rationale: r\n"
				    "  - host: \"*.w.grant.test\"\n"
				    "    ports: [8080]\n    tls: terminate\n"
				    "    rationale: r\n"
				    "  - host: o.grant.test\n    ports: [443]\n"
				    "    rationale: r\n";
	char			 why[512];
	size_t			 i;
	int			 rc;

	(void)state;
	policy_diags_init(&d);
	p = policy_load_buffer("t", "t.yaml", text, strlen(text), NOW, &d);
	assert_non_null(p);
	assert_int_equal(host_normalize("x.grant.test", 12, &h, &cause), 0);
	memset(&q, 0, sizeof(q));
	q.host = &h;
	q.port = 443;
	q.method = "DELETE";
	q.path = "/";
	q.terminated = 1;
	q.all_sets = 1;
	q.now = NOW;
	assert_int_equal(policy_decide(p, &q, &m), SG_REASON_METHOD_NOT_ALLOWED);
	assert_int_equal(policy_grant_check_query(p, &q, &m, why, sizeof(why)),
	    -1);
	assert_string_equal(why, "a request inside the TLS session the proxy "
	    "terminates for x.grant.test:443 is decided by the entry "
	    "\"x.grant.test\" (t.yaml:4) alone (rule: grants never widen a "
	    "tls: terminate entry's methods, paths, credential or ca_file)");
	assert_int_equal(policy_grant_check_query(p, &q, NULL, why,
	    sizeof(why)), -1);
	assert_non_null(strstr(why, "decided by the policy's entries alone"));
	/* The same request in plain HTTP, to the entry's other port. */
	q.terminated = 0;
	q.port = 8080;
	assert_int_equal(policy_decide(p, &q, &m), SG_REASON_NOT_TLS);
	assert_int_equal(policy_grant_check_query(p, &q, &m, why, sizeof(why)),
	    -1);
	assert_non_null(strstr(why, "is a host the proxy terminates"));
	for (i = 0; i < sizeof(term_grant_cases) /
	    sizeof(term_grant_cases[0]); i++) {
		assert_int_equal(host_normalize(term_grant_cases[i].host,
		    strlen(term_grant_cases[i].host), &h, &cause), 0);
		why[0] = '\0';
		rc = policy_grant_check(p, &h, term_grant_cases[i].port, why,
		    sizeof(why));
		if (term_grant_cases[i].why == NULL ? rc != 0 : rc != -1 ||
		    strncmp(why, term_grant_cases[i].why,
		    strlen(term_grant_cases[i].why)) != 0)
			fail_msg("grant case %zu %s:%u: rc %d why \"%s\"", i,
			    term_grant_cases[i].host, term_grant_cases[i].port,
			    rc, why);
	}
	policy_free(p);
	policy_diags_release(&d);
}

/* Without a grants list every grant is refused, naming the rule. */
static void
test_floors_no_grants(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	struct host		 h;
	const char		*cause, *only = "deny:\n  - host: a.test\n"
				    "    ports: [443, 443]\n    rationale: r\n"
				    "  - host: a.test\n    rationale: all\n";
	const char		*priv = "grants:\n  under: [corp.test]\n"
				    "  allow_private: true\n";
	const char		*badpriv = "grants:\n  under: [corp.test]\n"
				    "  allow_private: maybe\n";
	char			 why[512];

	(void)state;
	policy_diags_init(&d);
	p = policy_load_buffer("only", "only.yaml", only, strlen(only), NOW,
	    &d);
	assert_non_null(p);
	/* A port twice, and the first entry covered by the second. */
	assert_int_equal(d.nwarnings, 2);
	assert_string_equal(d.v[0].message, "entry for \"a.test\" is "
	    "redundant: the entry for \"a.test\" at line 5 already denies "
	    "all of it; remove it or narrow the broader one");
	assert_int_equal(policy_nentries(p), 0);
	assert_int_equal(host_normalize("b.test", 6, &h, &cause), 0);
	assert_int_equal(policy_grant_check(p, &h, 443, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "no policy file has a \"grants: under:\" "
	    "list, so grants are off"));
	assert_int_equal(policy_grants_allow_private(p), 0);
	policy_free(p);
	policy_diags_release(&d);
	/* grants: allow_private is the admins' to give, true or false. */
	p = policy_load_buffer("g", "g.yaml", priv, strlen(priv), NOW, &d);
	assert_non_null(p);
	assert_int_equal(policy_grants_allow_private(p), 1);
	policy_free(p);
	policy_diags_release(&d);
	p = policy_load_buffer("g", "g.yaml", badpriv, strlen(badpriv), NOW,
	    &d);
	assert_null(p);
	assert_string_equal(test_diag(&d, 0), "g.yaml:3:18: allow_private must "
	    "be true or false");
	policy_diags_release(&d);
}

/* The digest depends on names and contents, not on reading order. */
static void
test_digest(void **state)
{
	static const char	 a[] = "allow:\n  - host: a.example\n"
	    "    rationale: a\n";
	static const char	 b[] = "allow:\n  - host: b.example\n"
	    "    rationale: b\n";
	char			 d1[32], d2[32], dig[65], cmd[128];
	struct policy_diags	 d;
	struct policy		*p1, *p2;

	(void)state;
	test_tmpdir(d1, sizeof(d1));
	test_tmpdir(d2, sizeof(d2));
	test_write(d1, "a.yaml", a);
	test_write(d1, "b.yaml", b);
	test_write(d2, "b.yaml", b);
	test_write(d2, "a.yaml", a);
	policy_diags_init(&d);
	p1 = policy_load_dir(d1, NOW, &d);
	p2 = policy_load_dir(d2, NOW, &d);
	assert_non_null(p1);
	assert_non_null(p2);
	assert_string_equal(policy_digest(p1), policy_digest(p2));
	snprintf(dig, sizeof(dig), "%s", policy_digest(p1));
	policy_free(p1);
	policy_free(p2);
	test_write(d2, "b.yaml", "allow:\n  - host: b.example\n"
	    "    rationale: c\n");
	p2 = policy_load_dir(d2, NOW, &d);
	assert_non_null(p2);
	assert_string_not_equal(dig, policy_digest(p2));
	assert_string_equal(policy_set_at(p2, 0)->name, "a");
	assert_string_equal(policy_set_at(p2, 1)->name, "b");
	policy_free(p2);
	policy_diags_release(&d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s' '%s'", d1, d2);
	assert_int_equal(system(cmd), 0);
}

/* 100,000 entries load, and each one matches its own host. */
static void
test_big(void **state)
{
	struct policy_diags	 d;
	struct policy		*p;
	struct policy_query	 q;
	struct host		 h;
	const char		*cause;
	char			*buf, name[64];
	size_t			 cap = BIG_ENTRIES * 96 + 64, len = 0, i;
	int			 n;

	(void)state;
	buf = malloc(cap);
	assert_non_null(buf);
	len += (size_t)snprintf(buf, cap, "description: big\nallow:\n");
	for (i = 0; i < BIG_ENTRIES; i++)
		len += (size_t)snprintf(buf + len, cap - len,
		    "  - host: h%zu.example%zu.com\n    ports: [443, %zu]\n"
		    "    rationale: entry %zu\n", i, i % 97, 1000 + i % 5000,
		    i);
	policy_diags_init(&d);
	p = policy_load_buffer("big", "big.yaml", buf, len, NOW, &d);
	free(buf);
	assert_non_null(p);
	assert_int_equal(d.nerrors, 0);
	assert_int_equal(policy_nentries(p), BIG_ENTRIES);
	memset(&q, 0, sizeof(q));
	q.host = &h;
	q.all_sets = 1;
	q.now = NOW;
	for (i = 0; i < BIG_ENTRIES; i++) {
		n = snprintf(name, sizeof(name), "h%zu.example%zu.com", i,
		    i % 97);
		assert_int_equal(host_normalize(name, (size_t)n, &h, &cause),
		    0);
		q.port = (uint16_t)(1000 + i % 5000);
		if (policy_decide(p, &q, NULL) != SG_REASON_NONE)
			fail_msg("entry %zu does not match", i);
	}
	q.port = 443;
	assert_int_equal(host_normalize("h1.example2.com", 15, &h, &cause), 0);
	assert_int_equal(policy_decide(p, &q, NULL),
	    SG_REASON_NOT_ALLOWLISTED);
	policy_free(p);
	policy_diags_release(&d);
}

static const struct list_case {
	const char	*in;
	int		 rc;
	size_t		 n;
	const char	*last;
} list_cases[] = {
	{ "pypi", 0, 1, "pypi" },
	{ "pypi,github", 0, 2, "github" },
	{ "a,b,a", 0, 2, "b" },
	{ "a_b-9", 0, 1, "a_b-9" },
	{ "", -1, 0, NULL },
	{ "a,,b", -1, 0, NULL },
	{ "a,", -1, 0, NULL },
	{ "PyPI", -1, 0, NULL },
	{ "../etc", -1, 0, NULL },
	{ "a b", -1, 0, NULL },
};

static void
test_set_list(void **state)
{
	char		**names;
	size_t		 i, n;
	const char	*cause;

	(void)state;
	for (i = 0; i < sizeof(list_cases) / sizeof(list_cases[0]); i++) {
		names = NULL;
		n = 0;
		assert_int_equal(policy_set_list_parse(list_cases[i].in,
		    &names, &n, &cause), list_cases[i].rc);
		if (list_cases[i].rc == -1) {
			assert_null(names);
			continue;
		}
		assert_int_equal(n, list_cases[i].n);
		assert_string_equal(names[n - 1], list_cases[i].last);
		assert_null(names[n]);
		policy_set_list_free(names);
	}
}

/* Diagnostics of several files come out in file and line order. */
static void
test_dir_errors(void **state)
{
	char			 dir[32], cmd[128];
	struct policy_diags	 d;

	(void)state;
	test_tmpdir(dir, sizeof(dir));
	test_write(dir, "b.yaml", "allow:\n  - host: b.example\n");
	test_write(dir, "a.yaml", "allow:\n  - host: a.example\n"
	    "    rationale: r\n    ports: [99999]\n");
	test_write(dir, "notes.txt", "not a policy");
	policy_diags_init(&d);
	assert_null(policy_load_dir(dir, NOW, &d));
	assert_int_equal(d.nerrors, 2);
	assert_non_null(strstr(d.v[0].file, "a.yaml"));
	assert_non_null(strstr(d.v[1].file, "b.yaml"));
	policy_diags_release(&d);
	policy_diags_init(&d);
	assert_null(policy_load_dir("/nonexistent/policy.d", NOW, &d));
	assert_int_equal(d.nerrors, 1);
	policy_diags_release(&d);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	assert_int_equal(system(cmd), 0);
}

/*
 * A draft as `sandgate policy suggest` writes it: quoted hosts, the
 * placeholder owner and rationales. Every placeholder rationale is an
 * error at its own position; the owner is not checked. Once each one is
 * written the same text loads.
 */
#define DRAFT_HEAD \
	"# drafted\n" \
	"description: \"destinations the proxy blocked\"\n" \
	"owner: T" "ODO\n" \
	"allow:\n" \
	"  # 2 attempts (not_allowlisted) by sbx_a\n" \
	"  - host: \"evil.example\"\n" \
	"    ports: [443, 8443]\n"
#define DRAFT_TAIL \
	"  - host: \"192.0.2.7\"\n" \
	"    ports: [443]\n"

static void
test_draft(void **state)
{
	static const char draft[] = DRAFT_HEAD
	    "    rationale: T" "ODO\n" DRAFT_TAIL "    rationale: T" "ODO\n";
	static const char done[] = DRAFT_HEAD
	    "    rationale: the task fetches its fixtures here\n" DRAFT_TAIL
	    "    rationale: the vendor's licence server has no name\n";
	struct policy_diags	 d;
	struct policy		*p;

	(void)state;
	policy_diags_init(&d);
	p = policy_load_buffer("drafted", "drafted.yaml", draft,
	    sizeof(draft) - 1, NOW, &d);
	assert_null(p);
	assert_int_equal(d.nerrors, 2);
	assert_string_equal(test_diag(&d, 0), "drafted.yaml:8:16: entry for "
	    "\"evil.example\" still has the drafted rationale \"T" "ODO\"; "
	    "replace it with why this destination is needed");
	assert_int_equal(d.v[1].line, 11);
	assert_int_equal(d.v[1].col, 16);
	policy_diags_release(&d);
	policy_diags_init(&d);
	p = policy_load_buffer("drafted", "drafted.yaml", done,
	    sizeof(done) - 1, NOW, &d);
	assert_non_null(p);
	assert_int_equal(d.nerrors, 0);
	assert_int_equal(policy_nentries(p), 2);
	assert_int_equal(policy_entry_at(p, 0)->nports, 2);
	policy_free(p);
	policy_diags_release(&d);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_bad_files),
		cmocka_unit_test(test_shipped),
		cmocka_unit_test(test_match),
		cmocka_unit_test(test_match_fields),
		cmocka_unit_test(test_warnings),
		cmocka_unit_test(test_no_false_redundancy),
		cmocka_unit_test(test_all_errors),
		cmocka_unit_test(test_digest),
		cmocka_unit_test(test_big),
		cmocka_unit_test(test_set_list),
		cmocka_unit_test(test_dir_errors),
		cmocka_unit_test(test_draft),
		cmocka_unit_test(test_floors),
		cmocka_unit_test(test_floors_no_grants),
		cmocka_unit_test(test_grants_not_in_terminated_sessions),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
