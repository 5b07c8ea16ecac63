/*
 * fuzz_tlsca.c: tlsca_mint() for arbitrary server names, as a sandbox may
 * send in its SNI or CONNECT. Invariants: a name is either refused with a
 * cause or gives a certificate that verifies against the CA for exactly
 * the normalized name (and no other), signed, a leaf, short-lived.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/x509v3.h>

#include "host.h"
#include "tlsca.h"
#include "util.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct tlsca	*ca;

static void	fuzz_setup(void);
static int	fuzz_verifies(X509 *, const struct host *);

/* One CA in a folder of its own, made on the first input. */
static void
fuzz_setup(void)
{
	char	dir[] = "/tmp/fuzz-tlsca-" UTIL_MKTEMP_SUFFIX, crt[64], key[64];
	char	*cause = NULL;

	if (mkdtemp(dir) == NULL)
		abort();
	snprintf(crt, sizeof(crt), "%s/ca.crt", dir);
	snprintf(key, sizeof(key), "%s/ca.key", dir);
	if (tlsca_create(crt, key, "fuzz CA", (uid_t)-1, (gid_t)-1,
	    &cause) != 0 || (ca = tlsca_load(crt, key, &cause)) == NULL)
		abort();
	unlink(crt);
	unlink(key);
	rmdir(dir);
}

static int
fuzz_verifies(X509 *x, const struct host *h)
{
	X509_STORE		*st = X509_STORE_new();
	X509_STORE_CTX		*ctx = X509_STORE_CTX_new();
	X509_VERIFY_PARAM	*vp;
	int			 ok;

	X509_STORE_add_cert(st, tlsca_cert(ca));
	X509_STORE_CTX_init(ctx, st, x, NULL);
	vp = X509_STORE_CTX_get0_param(ctx);
	X509_VERIFY_PARAM_set_purpose(vp, X509_PURPOSE_SSL_SERVER);
	if (h->type == HOST_DNS)
		X509_VERIFY_PARAM_set1_host(vp, h->name, 0);
	else
		X509_VERIFY_PARAM_set1_ip_asc(vp, h->name);
	ok = X509_verify_cert(ctx) == 1;
	X509_STORE_CTX_free(ctx);
	X509_STORE_free(st);
	return ok;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct host	 h;
	const char	*cause = NULL, *c2;
	X509		*x;
	int		 norm;

	if (ca == NULL)
		fuzz_setup();
	norm = host_normalize((const char *)data, size, &h, &c2);
	x = tlsca_mint(ca, (const char *)data, size, time(NULL), &cause);
	if (x == NULL) {
		/* Refused only for a reason, and every valid name is minted. */
		if (cause == NULL || norm == 0)
			abort();
		return 0;
	}
	if (norm != 0 || !fuzz_verifies(x, &h) || X509_check_ca(x) != 0)
		abort();
	if (h.type == HOST_DNS && X509_check_host(x, "other.invalid", 0, 0,
	    NULL) == 1 && strcmp(h.name, "other.invalid") != 0)
		abort();
	X509_free(x);
	return 0;
}
