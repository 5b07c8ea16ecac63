/* test_reason.c: reason codes and the words a blocked client sees. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "reason.h"

static void
test_codes_round_trip(void **state)
{
	int	i;

	for (i = 0; i < SG_REASON_MAX; i++)
		assert_int_equal(reason_from_code(reason_code(i)), i);
	assert_int_equal(reason_from_code("no_such_code"), SG_REASON_MAX);
	assert_string_equal(reason_code(SG_REASON_MAX), "unknown");
}

/* docs/audit.md fixes these codes: tools and SIEM rules key on them. */
static void
test_codes_stable(void **state)
{
	static const char *const want[] = { "none", "not_allowlisted",
	    "port_not_allowed", "private_address", "ip_literal",
	    "sni_mismatch", "sni_missing", "not_tls", "ech", "host_mismatch",
	    "method_not_allowed", "path_not_allowed", "malformed_request",
	    "log_unavailable", "sni_invalid", "identity_changed",
	    "proxy_unavailable", "upstream_cert_self_signed",
	    "upstream_cert_untrusted", "upstream_cert_expired",
	    "upstream_cert_name_mismatch", "upstream_tls_failed",
	    "upstream_unreachable", "credential_missing",
	    "termination_unavailable", "denied", "token_malformed",
	    "token_forged", "token_expired", "token_other_sandbox",
	    "client_tls_failed", "token_run_ended", "token_sandbox_gone" };
	size_t	i;

	assert_int_equal(sizeof(want) / sizeof(want[0]), SG_REASON_MAX);
	for (i = 0; i < SG_REASON_MAX; i++)
		assert_string_equal(reason_code((enum sg_reason)i), want[i]);
}

static void
test_messages(void **state)
{
	static const struct {
		enum sg_reason	 r;
		const char	*host, *sni, *addr;
		unsigned	 port;
		const char	*want;
	} t[] = {
	    { SG_REASON_NOT_ALLOWLISTED, "blocked.test", NULL, NULL, 443,
	      "network blocked by policy: destination blocked.test:443 not "
	      "allowlisted" },
	    { SG_REASON_TOKEN_FORGED, "pypi.test", NULL,
	      "signature does not verify", 443,
	      "network blocked by policy: sandbox token refused for "
	      "pypi.test:443 (token_forged: signature does not verify)" },
	    { SG_REASON_DENIED, "paste.test", NULL, NULL, 443,
	      "network blocked by policy: destination paste.test:443 is "
	      "denied (a deny entry of policy.d; no allow entry or grant can "
	      "open it)" },
	    { SG_REASON_PRIVATE_ADDRESS, "pypi.example", NULL, "10.0.0.5", 443,
	      "network blocked by policy: destination pypi.example:443 "
	      "resolves to private address 10.0.0.5" },
	    { SG_REASON_SNI_MISMATCH, "pypi.org", "evil.test", NULL, 443,
	      "network blocked by policy: TLS SNI evil.test does not match "
	      "CONNECT host pypi.org" },
	    { SG_REASON_NOT_ALLOWLISTED, "2001:db8::1", NULL, NULL, 443,
	      "network blocked by policy: destination [2001:db8::1]:443 not "
	      "allowlisted" },
	    { SG_REASON_LOG_UNAVAILABLE, "a.test", NULL, NULL, 80,
	      "network blocked by policy: security log unavailable" },
	    { SG_REASON_SNI_INVALID, "a.test", "a.t\xef\xbd\x85st", NULL,
	      443, "network blocked by policy: TLS ClientHello for "
	      "a.test:443 has an invalid server name \"a.t\\xef\\xbd\\x85st\" "
	      "(an ASCII host name is required)" },
	    { SG_REASON_UPSTREAM_EXPIRED, "reg.test", NULL,
	      "certificate has expired", 443, "network blocked by policy: "
	      "upstream reg.test:443 presented a certificate outside its "
	      "validity (certificate has expired); the proxy verifies every "
	      "upstream it terminates TLS for" },
	    { SG_REASON_UPSTREAM_UNREACHABLE, "reg.test", NULL,
	      "connection refused", 443, "sandgate-proxy: upstream "
	      "reg.test:443 is unreachable (connection refused)" },
	    { SG_REASON_CREDENTIAL_MISSING, "reg.test", NULL, "reg-token",
	      443, "sandgate-proxy: the credential for reg.test:443 is not "
	      "set; an admin must run `sandgate secret set reg-token`" },
	    { SG_REASON_TERMINATION_UNAVAILABLE, "reg.test", NULL, NULL,
	      443, "sandgate-proxy cannot terminate TLS for reg.test:443: it "
	      "was started without a CA (--ca-cert, --ca-key)" },
	    { SG_REASON_CLIENT_TLS, "reg.test", NULL, "tlsv1 alert unknown ca",
	      443, "sandgate-proxy: the client's TLS handshake for "
	      "reg.test:443 failed (tlsv1 alert unknown ca): the proxy "
	      "terminates this host's TLS, so the client must speak TLS in "
	      "the tunnel and trust the sandgate CA (a sandbox's system "
	      "bundle and CA variables do)" },
	};
	char	buf[512];
	size_t	i;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		reason_message(buf, sizeof(buf), t[i].r, t[i].host, t[i].port,
		    t[i].sni, t[i].addr);
		assert_string_equal(buf, t[i].want);
	}
}

/* Every message starts with the prefix agents and tests look for. */
static void
test_prefix_everywhere(void **state)
{
	char	buf[512];
	int	i;

	for (i = 1; i < SG_REASON_MAX; i++) {
		/*
		 * A tunnel the proxy cannot set up, an upstream it cannot
		 * reach, a secret not set: no policy block.
		 */
		if (i == SG_REASON_PROXY_UNAVAILABLE ||
		    i == SG_REASON_UPSTREAM_UNREACHABLE ||
		    i == SG_REASON_CREDENTIAL_MISSING ||
		    i == SG_REASON_TERMINATION_UNAVAILABLE ||
		    i == SG_REASON_CLIENT_TLS)
			continue;
		reason_message(buf, sizeof(buf), i, "h.test", 443, "s.test",
		    "10.0.0.1");
		assert_memory_equal(buf, SG_BLOCK_PREFIX,
		    strlen(SG_BLOCK_PREFIX));
	}
	/* Truncation is safe and reports the full length. */
	assert_true(reason_message(buf, 8, SG_REASON_NOT_ALLOWLISTED,
	    "h.test", 443, NULL, NULL) > 8);
	assert_int_equal(strlen(buf), 7);
}

/*
 * The SNI comes from the client: a message naming it is printable ASCII
 * whatever it holds, so no terminal that shows it can be driven by it
 * (issue 15, finding 11).
 */
static void
test_sni_escaped(void **state)
{
	static const char	 sni[] = "x\x1b]0;owned\x07\x1b[2K\r\n"
	    "sandgate: ok\\.test";
	char			 buf[4096];
	const unsigned char	*p;

	reason_message(buf, sizeof(buf), SG_REASON_SNI_MISMATCH, "pypi.org",
	    443, sni, NULL);
	for (p = (const unsigned char *)buf; *p != '\0'; p++)
		assert_true(*p >= 0x20 && *p < 0x7f);
	assert_non_null(strstr(buf, "x\\x1b]0;owned\\x07\\x1b[2K\\x0d"
	    "\\x0asandgate: ok\\x5c.test"));
	/* A very long name is cut, not overflowing. */
	{
		char	big[70000];

		memset(big, 0x1b, sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		reason_message(buf, sizeof(buf), SG_REASON_SNI_MISMATCH,
		    "pypi.org", 443, big, NULL);
		assert_true(strlen(buf) < sizeof(buf));
		assert_non_null(strstr(buf, "..."));
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_codes_round_trip),
		cmocka_unit_test(test_codes_stable),
		cmocka_unit_test(test_messages),
		cmocka_unit_test(test_prefix_everywhere),
		cmocka_unit_test(test_sni_escaped),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
