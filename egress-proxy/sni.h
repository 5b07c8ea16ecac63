/*
 * sni.h: peek at a TLS ClientHello for its server name and for
 * Encrypted Client Hello, without answering it.
 *
 * OpenSSL does the parsing: a server-mode SSL reads the bytes from a
 * memory BIO, and its ClientHello callback looks at the extensions and
 * then aborts the handshake. Nothing OpenSSL writes (the abort alert) ever
 * reaches the client. The caller keeps its own copy of every byte it
 * feeds, to forward them upstream once the check passes; this module only
 * reads them. Pure: no I/O, no DNS.
 *
 * Limits: at most SG_CLIENTHELLO_MAX bytes are fed in total (OpenSSL alone
 * would take a ClientHello message of up to 128 KiB). A ClientHello may
 * arrive in any number of pieces and span several TLS records.
 */
#ifndef SG_SNI_H
#define SG_SNI_H

#include <openssl/ssl.h>

#include <stddef.h>

#include "sglimits.h"

/*
 * Extension numbers that hide the real server name: ECH as published
 * (0xfe0d), the ECH drafts that had their own numbers (0xfe08 to 0xfe0c,
 * draft-ietf-tls-esni-08 to -12), and the older encrypted_server_name
 * (0xffce, draft-ietf-tls-esni-00 to -06). Any of them is refused.
 */
#define SNI_EXT_ECH		0xfe0d
#define SNI_EXT_ECH_DRAFT_FIRST	0xfe08
#define SNI_EXT_ECH_DRAFT_LAST	0xfe0c
#define SNI_EXT_ESNI		0xffce

enum sni_result {
	SNI_MORE,	/* need more bytes */
	SNI_DONE,	/* ClientHello read: name and ECH flag are valid */
	SNI_NOT_TLS,	/* the first byte is not a TLS handshake record */
	SNI_ERROR	/* malformed, too long, or out of memory */
};

struct sni_peek;

/*
 * The shared context: one per process, no certificate. Returns NULL on
 * failure (OpenSSL's error queue says why). Free with SSL_CTX_free().
 */
SSL_CTX		*sni_ctx_new(void);

/*
 * Register the extensions that hide the server name on a server context,
 * so that a client-hello callback sees them (OpenSSL drops unknown
 * extensions before it runs). 0, or -1 (OpenSSL's error queue).
 */
int		 sni_ctx_add_ech(SSL_CTX *);

/*
 * From inside an OpenSSL client-hello callback of a context set up with
 * sni_ctx_add_ech(): the server_name host_name as sent into *name
 * (malloc'd, NUL-terminated; NULL when there is none) and whether an
 * extension hides the name into *ech. Returns 0, or -1 for a malformed
 * server_name (several names, an empty one, a NUL byte) or out of memory
 * (*name may then hold a name the caller frees).
 */
int		 sni_hello_look(SSL *, char **name, int *ech);

/*
 * One peek per connection. The context must outlive it. Returns NULL when
 * out of memory.
 */
struct sni_peek	*sni_peek_new(SSL_CTX *);

/*
 * Feed the next len bytes the client sent. Returns SNI_MORE until the
 * whole ClientHello has been seen, then SNI_DONE; SNI_NOT_TLS at once when
 * the first byte is not 0x16; SNI_ERROR for a malformed ClientHello or
 * server_name extension (several host names, an empty one, one with a NUL
 * byte), or past SG_CLIENTHELLO_MAX bytes. Once it returned anything but
 * SNI_MORE, later calls return the same result and read nothing.
 */
enum sni_result	 sni_peek_feed(struct sni_peek *,
		    const unsigned char *buf, size_t len);

/*
 * After SNI_DONE: the server_name host_name exactly as sent (not
 * normalized: the caller runs host_normalize() on it), NUL-terminated and
 * owned by the peek; NULL when the ClientHello has no server name.
 */
const char	*sni_peek_name(const struct sni_peek *);

/*
 * After SNI_DONE: 1 when the ClientHello has an extension that hides the
 * server name (ECH, a draft of it, or ESNI; see above), else 0.
 */
int		 sni_peek_ech(const struct sni_peek *);

/* NULL ok. */
void		 sni_peek_free(struct sni_peek *);

#endif
