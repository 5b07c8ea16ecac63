/* tlsca.c: the sandgate CA and the certificates it mints; see tlsca.h. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include "host.h"
#include "pemfile.h"
#include "tlsca.h"
#include "util.h"

#define TLSCA_BUCKETS	1024	/* hash buckets of the leaf cache */

/* One cached leaf, in its bucket's chain and in the LRU list. */
struct tlsca_leaf {
	struct tlsca_leaf	*next;		/* same bucket */
	struct tlsca_leaf	*lru_prev;
	struct tlsca_leaf	*lru_next;
	X509			*cert;
	time_t			 not_after;
	char			 name[SG_HOST_MAX + 1];
};

struct tlsca {
	X509			*cert;
	EVP_PKEY		*key;		/* the CA's */
	EVP_PKEY		*leaf_key;	/* every leaf's, never written */
	struct tlsca_leaf	*buckets[TLSCA_BUCKETS];
	struct tlsca_leaf	*lru_head;	/* most recently used */
	struct tlsca_leaf	*lru_tail;
	size_t			 nleaves;
	unsigned long long	 minted;
	unsigned long long	 hits;
};

static void	*tlsca_read_pem(const char *, int, char **);
static int	 tlsca_pem_key(FILE *, void *);
static int	 tlsca_pem_cert(FILE *, void *);
static int	 tlsca_ext(X509 *, X509 *, int, const char *);
static int	 tlsca_serial(X509 *);
static X509	*tlsca_self_signed(EVP_PKEY *, const char *);
static unsigned	 tlsca_hash(const char *);
static struct tlsca_leaf *tlsca_lookup(struct tlsca *, const char *);
static void	 tlsca_lru_unlink(struct tlsca *, struct tlsca_leaf *);
static void	 tlsca_lru_front(struct tlsca *, struct tlsca_leaf *);
static void	 tlsca_evict(struct tlsca *, struct tlsca_leaf *);
static struct tlsca_leaf *tlsca_store(struct tlsca *, const char *, X509 *,
		    time_t);

/* Add one X.509v3 extension in OpenSSL's config syntax. 0 or -1. */
static int
tlsca_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX	 ctx;
	X509_EXTENSION	*ex;
	int		 ok;

	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	if ((ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value)) == NULL)
		return -1;
	ok = X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return ok ? 0 : -1;
}

/* A random positive 127-bit serial number. */
static int
tlsca_serial(X509 *cert)
{
	unsigned char	 raw[16];
	BIGNUM		*bn;
	int		 ok;

	if (RAND_bytes(raw, sizeof(raw)) != 1)
		return -1;
	raw[0] &= 0x7f;
	raw[0] |= 0x40;
	if ((bn = BN_bin2bn(raw, sizeof(raw), NULL)) == NULL)
		return -1;
	ok = BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) != NULL;
	BN_free(bn);
	return ok ? 0 : -1;
}

/* The CA's own certificate: CA:TRUE, pathlen 0, for TLSCA_CA_DAYS. */
static X509 *
tlsca_self_signed(EVP_PKEY *key, const char *cn)
{
	X509		*x;
	X509_NAME	*n;

	if ((x = X509_new()) == NULL)
		return NULL;
	n = X509_get_subject_name(x);
	if (X509_set_version(x, 2) != 1 || tlsca_serial(x) == -1 ||
	    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_UTF8,
	    (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_UTF8,
	    (const unsigned char *)"sandgate", -1, -1, 0) != 1 ||
	    X509_set_issuer_name(x, n) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(x), -3600) == NULL ||
	    X509_gmtime_adj(X509_getm_notAfter(x),
	    (long)TLSCA_CA_DAYS * 86400) == NULL ||
	    X509_set_pubkey(x, key) != 1 ||
	    tlsca_ext(x, x, NID_basic_constraints,
	    "critical,CA:TRUE,pathlen:0") == -1 ||
	    tlsca_ext(x, x, NID_key_usage, "critical,keyCertSign,cRLSign") ==
	    -1 || tlsca_ext(x, x, NID_subject_key_identifier, "hash") == -1 ||
	    X509_sign(x, key, EVP_sha256()) == 0) {
		X509_free(x);
		return NULL;
	}
	return x;
}

/* pemfile_writer: the CA's private key. */
static int
tlsca_pem_key(FILE *f, void *key)
{
	return PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL);
}

/* pemfile_writer: its certificate. */
static int
tlsca_pem_cert(FILE *f, void *cert)
{
	return PEM_write_X509(f, cert);
}

int
tlsca_create(const char *certpath, const char *keypath, const char *cn,
    uid_t uid, gid_t gid, char **cause)
{
	EVP_PKEY	*key;
	X509		*cert = NULL;
	int		 rc = -1;

	if ((key = EVP_EC_gen("P-256")) == NULL ||
	    (cert = tlsca_self_signed(key, cn)) == NULL) {
		util_xasprintf(cause, "cannot make the CA: %s",
		    util_ssl_error("not in PEM form"));
		goto out;
	}
	if ((rc = pemfile_create(AT_FDCWD, keypath, keypath, 1, uid, gid,
	    tlsca_pem_key, key, cause)) != 0)
		goto out;
	(void)unlink(certpath);		/* the certificate of an old key */
	if (pemfile_create(AT_FDCWD, certpath, certpath, 0, uid, gid,
	    tlsca_pem_cert, cert, cause) != 0) {
		unlink(keypath);
		rc = -1;
	}
out:
	X509_free(cert);
	EVP_PKEY_free(key);
	return rc;
}

/*
 * Read the CA's key (secret: owned by us, closed to others) or its
 * certificate from a PEM file. NULL with *cause set.
 */
static void *
tlsca_read_pem(const char *path, int secret, char **cause)
{
	const char	*what = secret ? "CA key" : "CA certificate";
	void		*obj;
	FILE		*f;
	int		 fd;

	if ((fd = util_open_private(path, what, TLSCA_FILE_MAX, secret,
	    cause)) == -1)
		return NULL;
	if ((f = fdopen(fd, "r")) == NULL) {
		close(fd);
		util_xasprintf(cause, "cannot read \"%s\"", path);
		return NULL;
	}
	obj = secret ? (void *)PEM_read_PrivateKey(f, NULL, NULL, NULL) :
	    (void *)PEM_read_X509(f, NULL, NULL, NULL);
	fclose(f);
	if (obj == NULL)
		util_xasprintf(cause, "%s \"%s\": %s", what, path,
		    util_ssl_error("not in PEM form"));
	return obj;
}

struct tlsca *
tlsca_load(const char *certpath, const char *keypath, char **cause)
{
	struct tlsca	*ca = util_xcalloc(1, sizeof(*ca));

	if ((ca->key = tlsca_read_pem(keypath, 1, cause)) == NULL ||
	    (ca->cert = tlsca_read_pem(certpath, 0, cause)) == NULL)
		goto fail;
	if (X509_check_private_key(ca->cert, ca->key) != 1 ||
	    X509_check_ca(ca->cert) == 0) {
		ERR_clear_error();
		util_xasprintf(cause, "\"%s\" is not the CA certificate of the "
		    "key \"%s\"", certpath, keypath);
		goto fail;
	}
	if ((ca->leaf_key = EVP_EC_gen("P-256")) == NULL) {
		util_xasprintf(cause, "cannot make the leaf key: %s",
		    util_ssl_error("not in PEM form"));
		goto fail;
	}
	return ca;
fail:
	tlsca_free(ca);
	return NULL;
}

void
tlsca_free(struct tlsca *ca)
{
	if (ca == NULL)
		return;
	while (ca->lru_head != NULL)
		tlsca_evict(ca, ca->lru_head);
	X509_free(ca->cert);
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	free(ca);
}

X509 *
tlsca_cert(const struct tlsca *ca)
{
	return ca->cert;
}

void
tlsca_fingerprint(X509 *x, char *buf, size_t size)
{
	unsigned char	md[EVP_MAX_MD_SIZE];
	unsigned int	n = 0, i;
	size_t		off = 0;

	buf[0] = '\0';
	if (X509_digest(x, EVP_sha256(), md, &n) != 1)
		return;
	for (i = 0; i < n && off + 4 <= size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%02X",
		    i ? ":" : "", md[i]);
}

X509 *
tlsca_mint(struct tlsca *ca, const char *name, size_t len, time_t now,
    const char **cause)
{
	struct host	 h;
	X509		*x;
	X509_NAME	*n;
	char		 san[SG_HOST_MAX + 8];

	if (host_normalize(name, len, &h, cause) == -1)
		return NULL;
	if (strchr(h.name, '*') != NULL) {
		*cause = "a wildcard is never minted";
		return NULL;
	}
	snprintf(san, sizeof(san), "%s:%s", h.type == HOST_DNS ? "DNS" : "IP",
	    h.name);
	if ((x = X509_new()) == NULL) {
		*cause = "out of memory";
		return NULL;
	}
	n = X509_get_subject_name(x);
	/* A common name has at most 64 characters; the SAN is what counts. */
	if (X509_set_version(x, 2) != 1 || tlsca_serial(x) == -1 ||
	    (strlen(h.name) <= 64 && X509_NAME_add_entry_by_txt(n, "CN",
	    MBSTRING_ASC, (const unsigned char *)h.name, -1, -1, 0) != 1) ||
	    X509_set_issuer_name(x, X509_get_subject_name(ca->cert)) != 1 ||
	    X509_time_adj(X509_getm_notBefore(x), -3600, &now) == NULL ||
	    X509_time_adj(X509_getm_notAfter(x), TLSCA_LEAF_SECS, &now) ==
	    NULL || X509_set_pubkey(x, ca->leaf_key) != 1 ||
	    tlsca_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") ==
	    -1 || tlsca_ext(x, ca->cert, NID_key_usage,
	    "critical,digitalSignature") == -1 ||
	    tlsca_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") == -1 ||
	    tlsca_ext(x, ca->cert, NID_subject_alt_name, san) == -1 ||
	    tlsca_ext(x, ca->cert, NID_authority_key_identifier, "keyid") ==
	    -1 || X509_sign(x, ca->key, EVP_sha256()) == 0) {
		ERR_clear_error();
		X509_free(x);
		*cause = "cannot mint a certificate";
		return NULL;
	}
	ca->minted++;
	return x;
}

/* FNV-1a of a name. */
static unsigned
tlsca_hash(const char *s)
{
	return util_hash_str(s) % TLSCA_BUCKETS;
}

static struct tlsca_leaf *
tlsca_lookup(struct tlsca *ca, const char *name)
{
	struct tlsca_leaf	*l;

	for (l = ca->buckets[tlsca_hash(name)]; l != NULL; l = l->next)
		if (strcmp(l->name, name) == 0)
			return l;
	return NULL;
}

static void
tlsca_lru_unlink(struct tlsca *ca, struct tlsca_leaf *l)
{
	if (l->lru_prev != NULL)
		l->lru_prev->lru_next = l->lru_next;
	else
		ca->lru_head = l->lru_next;
	if (l->lru_next != NULL)
		l->lru_next->lru_prev = l->lru_prev;
	else
		ca->lru_tail = l->lru_prev;
	l->lru_prev = l->lru_next = NULL;
}

static void
tlsca_lru_front(struct tlsca *ca, struct tlsca_leaf *l)
{
	l->lru_next = ca->lru_head;
	l->lru_prev = NULL;
	if (ca->lru_head != NULL)
		ca->lru_head->lru_prev = l;
	ca->lru_head = l;
	if (ca->lru_tail == NULL)
		ca->lru_tail = l;
}

/* Drop a leaf from its bucket and the LRU list, and free it. */
static void
tlsca_evict(struct tlsca *ca, struct tlsca_leaf *l)
{
	struct tlsca_leaf	**pp;

	for (pp = &ca->buckets[tlsca_hash(l->name)]; *pp != NULL;
	    pp = &(*pp)->next) {
		if (*pp == l) {
			*pp = l->next;
			break;
		}
	}
	tlsca_lru_unlink(ca, l);
	X509_free(l->cert);
	free(l);
	ca->nleaves--;
}

/* Keep cert (taken over) for name; the oldest goes when full. */
static struct tlsca_leaf *
tlsca_store(struct tlsca *ca, const char *name, X509 *cert, time_t now)
{
	struct tlsca_leaf	*l;
	unsigned		 b = tlsca_hash(name);

	if (ca->nleaves >= TLSCA_CACHE_MAX && ca->lru_tail != NULL)
		tlsca_evict(ca, ca->lru_tail);
	if ((l = calloc(1, sizeof(*l))) == NULL) {
		X509_free(cert);
		return NULL;
	}
	util_strlcpy(l->name, name, sizeof(l->name));
	l->cert = cert;
	l->not_after = now + TLSCA_LEAF_SECS;
	l->next = ca->buckets[b];
	ca->buckets[b] = l;
	tlsca_lru_front(ca, l);
	ca->nleaves++;
	return l;
}

int
tlsca_use(struct tlsca *ca, SSL *ssl, const char *name, time_t now,
    const char **cause)
{
	struct tlsca_leaf	*l;
	X509			*x;

	l = tlsca_lookup(ca, name);
	if (l != NULL && l->not_after - now < TLSCA_LEAF_RENEW_SECS) {
		tlsca_evict(ca, l);
		l = NULL;
	}
	if (l == NULL) {
		if ((x = tlsca_mint(ca, name, strlen(name), now, cause)) ==
		    NULL)
			return -1;
		if ((l = tlsca_store(ca, name, x, now)) == NULL) {
			*cause = "out of memory";
			return -1;
		}
	} else {
		ca->hits++;
		tlsca_lru_unlink(ca, l);
		tlsca_lru_front(ca, l);
	}
	if (SSL_use_certificate(ssl, l->cert) != 1 ||
	    SSL_use_PrivateKey(ssl, ca->leaf_key) != 1 ||
	    SSL_add1_chain_cert(ssl, ca->cert) != 1) {
		ERR_clear_error();
		*cause = "cannot set the certificate";
		return -1;
	}
	return 0;
}

unsigned long long
tlsca_minted(const struct tlsca *ca)
{
	return ca->minted;
}

unsigned long long
tlsca_hits(const struct tlsca *ca)
{
	return ca->hits;
}
