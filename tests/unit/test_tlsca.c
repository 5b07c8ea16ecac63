/*
 * test_tlsca.c: making the CA, loading it (and refusing a key others can
 * read), minting certificates that verify against it for the name asked,
 * and the leaf cache.
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
#include <openssl/x509v3.h>

#include "tlsca.h"
#include "util.h"

#define NOW	time(NULL)	/* the CA is made now */

static char	dir[64], crt[128], key[128];

static int
setup(void **state)
{
	char	*cause = NULL;

	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/sgtlsca" UTIL_MKTEMP_SUFFIX);
	if (mkdtemp(dir) == NULL)
		return -1;
	snprintf(crt, sizeof(crt), "%s/ca.crt", dir);
	snprintf(key, sizeof(key), "%s/ca.key", dir);
	if (tlsca_create(crt, key, "sandgate test CA", (uid_t)-1, (gid_t)-1,
	    &cause) != 0) {
		fprintf(stderr, "%s\n", cause);
		return -1;
	}
	return 0;
}

static int
teardown(void **state)
{
	char	cmd[128];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

/* Verify x against the CA for name at now: 1 when it passes. */
static int
verifies(X509 *ca, X509 *x, const char *name, time_t now)
{
	X509_STORE	*st = X509_STORE_new();
	X509_STORE_CTX	*ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM *vp;
	int		 ok;

	X509_STORE_add_cert(st, ca);
	X509_STORE_CTX_init(ctx, st, x, NULL);
	vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_time(vp, now);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	if (strchr(name, ':') != NULL || strspn(name, "0123456789.") ==
	    strlen(name))
		X509_VERIFY_PARAM_set1_ip_asc(vp, name);
	else
		X509_VERIFY_PARAM_set1_host(vp, name, 0);
	ok = X509_verify_cert(ctx) == 1;
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return ok;
}

static void
test_create_once(void **state)
{
	struct stat	 st;
	char		*cause = NULL;

	(void)state;
	assert_int_equal(stat(key, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0600);
	assert_int_equal(stat(crt, &st), 0);
	assert_int_equal(st.st_mode & 0777, 0644);
	/* Never replaced. */
	assert_int_equal(tlsca_create(crt, key, "x", (uid_t)-1, (gid_t)-1,
	    &cause), 1);
}

static void
test_mint_verifies(void **state)
{
	struct tlsca	*ca;
	X509		*x;
	char		*cause = NULL, fp[128];
	const char	*why;

	(void)state;
	ca = tlsca_load(crt, key, &cause);
	if (ca == NULL)
		fail_msg("%s", cause);
	assert_int_equal(X509_check_ca(tlsca_cert(ca)), 1);
	tlsca_fingerprint(tlsca_cert(ca), fp, sizeof(fp));
	assert_int_equal(strlen(fp), 95);
	x = tlsca_mint(ca, "PyPI.Test.", 10, NOW, &why);
	assert_non_null(x);
	assert_true(verifies(tlsca_cert(ca), x, "pypi.test", NOW));
	assert_false(verifies(tlsca_cert(ca), x, "other.test", NOW));
	/* Short-lived: not a day and an hour later. */
	assert_false(verifies(tlsca_cert(ca), x, "pypi.test",
	    NOW + TLSCA_LEAF_SECS + 3600));
	X509_free(x);
	x = tlsca_mint(ca, "192.0.2.7", 9, NOW, &why);
	assert_non_null(x);
	assert_true(verifies(tlsca_cert(ca), x, "192.0.2.7", NOW));
	X509_free(x);
	/* A name longer than a common name can hold: SAN only. */
	x = tlsca_mint(ca, "a123456789.b123456789.c123456789.d123456789."
	    "e123456789.f123456789.test", 70, NOW, &why);
	assert_non_null(x);
	X509_free(x);
	assert_null(tlsca_mint(ca, "", 0, NOW, &why));
	assert_null(tlsca_mint(ca, "a b.test", 8, NOW, &why));
	assert_null(tlsca_mint(ca, "user@a.test", 11, NOW, &why));
	assert_null(tlsca_mint(ca, "a.test\0b", 8, NOW, &why));
	tlsca_free(ca);
}

static void
test_cache(void **state)
{
	struct tlsca	*ca;
	SSL_CTX		*ctx = SSL_CTX_new(TLS_server_method());
	SSL		*s;
	char		*cause = NULL;
	const char	*why;
	int		 i;

	(void)state;
	ca = tlsca_load(crt, key, &cause);
	assert_non_null(ca);
	for (i = 0; i < 3; i++) {
		s = SSL_new(ctx);
		assert_int_equal(tlsca_use(ca, s, "a.test", NOW, &why), 0);
		assert_non_null(SSL_get_certificate(s));
		SSL_free(s);
	}
	assert_int_equal(tlsca_minted(ca), 1);
	assert_int_equal(tlsca_hits(ca), 2);
	/* Near its end a leaf is minted again. */
	s = SSL_new(ctx);
	assert_int_equal(tlsca_use(ca, s, "a.test", NOW + TLSCA_LEAF_SECS -
	    TLSCA_LEAF_RENEW_SECS + 1, &why), 0);
	SSL_free(s);
	assert_int_equal(tlsca_minted(ca), 2);
	/* More hosts than the cache holds: bounded, still working. */
	for (i = 0; i < TLSCA_CACHE_MAX + 10; i++) {
		char	name[64];

		snprintf(name, sizeof(name), "h%d.test", i);
		s = SSL_new(ctx);
		assert_int_equal(tlsca_use(ca, s, name, NOW, &why), 0);
		SSL_free(s);
	}
	tlsca_free(ca);
	SSL_CTX_free(ctx);
}

static void
test_key_refused(void **state)
{
	struct tlsca	*ca;
	char		*cause = NULL, other[160], okey[160];

	(void)state;
	assert_int_equal(chmod(key, 0640), 0);
	ca = tlsca_load(crt, key, &cause);
	assert_null(ca);
	assert_non_null(strstr(cause, "readable by it alone"));
	free(cause);
	assert_int_equal(chmod(key, 0600), 0);
	/* A certificate of another key. */
	snprintf(other, sizeof(other), "%s/o.crt", dir);
	snprintf(okey, sizeof(okey), "%s/o.key", dir);
	assert_int_equal(tlsca_create(other, okey, "other", (uid_t)-1,
	    (gid_t)-1, &cause), 0);
	ca = tlsca_load(other, key, &cause);
	assert_null(ca);
	assert_non_null(strstr(cause, "is not the CA certificate"));
	free(cause);
	/* A link is not followed. */
	snprintf(other, sizeof(other), "%s/link.key", dir);
	assert_int_equal(symlink(key, other), 0);
	ca = tlsca_load(crt, other, &cause);
	assert_null(ca);
	free(cause);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_create_once),
		cmocka_unit_test(test_mint_verifies),
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_key_refused),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
