/*
 * tlsca.h: the sandgate CA that tls: terminate entries use: making it,
 * loading it in the proxy, and minting the short-lived certificates the
 * proxy shows sandboxes for the hosts it terminates TLS for.
 *
 * The CA is an EC P-256 key (PKCS#8 PEM, mode 0600, the proxy's uid, in a
 * folder of the proxy's alone, never a log folder, never mounted into a
 * sandbox) and a self-signed certificate (CA:TRUE, pathlen 0, keyCertSign)
 * that sandboxes are told to trust. Leaf certificates share one P-256 key
 * the proxy makes at start and never writes down; each names one host
 * (subjectAltName DNS, or IP for an address), is valid from an hour
 * before it was minted for TLSCA_LEAF_SECS, and is kept in a bounded cache
 * (TLSCA_CACHE_MAX hosts, least recently used out) until less than
 * TLSCA_LEAF_RENEW_SECS of it are left.
 */
#ifndef SG_TLSCA_H
#define SG_TLSCA_H

#include <sys/types.h>

#include <stddef.h>
#include <time.h>

#include <openssl/ssl.h>
#include <openssl/x509.h>

#define TLSCA_CA_DAYS		1825		/* the CA: five years */
#define TLSCA_LEAF_SECS		(24 * 3600)	/* a leaf: one day */
#define TLSCA_LEAF_RENEW_SECS	(6 * 3600)
#define TLSCA_CACHE_MAX		4096
#define TLSCA_FILE_MAX		(64 * 1024)	/* a CA key or certificate */

struct tlsca;

/*
 * Make a new CA: the key at keypath (0600) and its certificate at
 * certpath (0644), both given to uid/gid unless uid is (uid_t)-1; cn is
 * the certificate's common name. Never replaces: returns 1 when keypath
 * exists already, 0 when made, -1 with *cause set (caller frees).
 */
int		 tlsca_create(const char *certpath, const char *keypath,
		    const char *cn, uid_t uid, gid_t gid, char **cause);

/*
 * Load a CA for minting. The key must be a regular file (no link) owned
 * by the effective uid, with no access for group or others; the
 * certificate must be a CA certificate of that key. Makes the leaf key.
 * Returns the CA or NULL with *cause set (caller frees).
 */
struct tlsca	*tlsca_load(const char *certpath, const char *keypath,
		    char **cause);
void		 tlsca_free(struct tlsca *);	/* NULL ok */

/* The CA certificate (owned by the CA). */
X509		*tlsca_cert(const struct tlsca *);

/*
 * SHA-256 fingerprint of a certificate as "AB:CD:...", into buf (at least
 * 96 bytes).
 */
void		 tlsca_fingerprint(X509 *, char *buf, size_t size);

/*
 * Mint a certificate for name (len bytes, any bytes: it is normalized as
 * host.h does and refused unless a host name or an IP address) valid at
 * now. Returns a new certificate the caller frees, or NULL with *cause a
 * static phrase. Not cached.
 */
X509		*tlsca_mint(struct tlsca *, const char *name, size_t len,
		    time_t now, const char **cause);

/*
 * Set the certificate for name (a normalized host), the leaf key and the
 * CA as its chain on a server-side ssl, minting it unless the cache holds
 * one with enough time left. 0, or -1 with *cause a static phrase.
 */
int		 tlsca_use(struct tlsca *, SSL *, const char *name, time_t now,
		    const char **cause);

/* Certificates minted and cache hits since load (for /metrics). */
unsigned long long tlsca_minted(const struct tlsca *);
unsigned long long tlsca_hits(const struct tlsca *);

#endif
