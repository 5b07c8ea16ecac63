/*
 * tlsseq.h: the check of the opening of a TLS handshake inside a CONNECT
 * tunnel, both ways, until the server has committed to one ClientHello.
 *
 * A TLS 1.3 server that does not like the key shares of a ClientHello
 * answers HelloRetryRequest, and the client sends a second ClientHello,
 * which may name another server. So every ClientHello is checked, not
 * just the first: the client's bytes are read record by record, each
 * ClientHello is gathered whole (however many records it spans) and
 * checked before a byte of it goes on, and the server's bytes are read
 * until its first ServerHello that is not a HelloRetryRequest. From then
 * on both ways are encrypted and the tunnel is spliced.
 *
 * A ClientHello passes when its server_name is a host name of printable
 * ASCII (A-labels) that normalizes (host.h) to the CONNECT host, or when
 * it has none and the CONNECT host is an IP address; and when it carries
 * no extension that hides the real name (ECH, its drafts, ESNI; sni.h).
 * Before the ServerHello the client may also send ChangeCipherSpec,
 * alerts and (after a ClientHello) early data; the server alerts,
 * ChangeCipherSpec and HelloRetryRequests. Anything else is refused.
 *
 * Pure: no I/O. OpenSSL parses each ClientHello (sni.h), with an SSL
 * object that exists only while a complete ClientHello is looked at, so a
 * stalled handshake holds only the bytes it sent.
 *
 * Limits: a record is at most 2^14 bytes of payload (RFC 8446 5.1); the
 * records of one ClientHello, headers included, at most SG_CLIENTHELLO_MAX
 * bytes; the server's bytes before its ServerHello as well.
 */
#ifndef SG_TLSSEQ_H
#define SG_TLSSEQ_H

#include <stddef.h>

#include <openssl/ssl.h>

#include "host.h"
#include "reason.h"

#define TLSSEQ_RECORD_MAX	16384	/* plaintext record payload */

enum tlsseq_result {
	TLSSEQ_MORE,	/* clear *ok bytes; call again with more */
	TLSSEQ_DONE,	/* server: its ServerHello came: clear all, splice */
	TLSSEQ_REFUSE	/* tlsseq_reason() says why; later calls refuse too */
};

struct tlsseq;

/*
 * One check per tunnel. ctx is sni_ctx_new()'s; expected the normalized
 * CONNECT host (copied). Returns NULL when out of memory.
 */
struct tlsseq	*tlsseq_new(SSL_CTX *ctx, const struct host *expected);
void		 tlsseq_free(struct tlsseq *);	/* NULL ok */

/*
 * The client's bytes not cleared yet: buf[0] is the first of them (the
 * start of a record), len > 0; bytes shown before and not cleared come
 * again. Sets *ok to how many leading bytes are cleared to go on.
 */
enum tlsseq_result tlsseq_client(struct tlsseq *, const unsigned char *buf,
		    size_t len, size_t *ok);

/* The same for the server's bytes; DONE once its ServerHello is seen. */
enum tlsseq_result tlsseq_server(struct tlsseq *, const unsigned char *buf,
		    size_t len, size_t *ok);

/*
 * After REFUSE: the reason (SG_REASON_SNI_MISMATCH, _SNI_MISSING,
 * _SNI_INVALID, _ECH or _NOT_TLS) and the server name of the refused
 * ClientHello as sent (raw bytes, NUL-terminated; NULL when it had none
 * or was not read). Both owned by the check.
 */
enum sg_reason	 tlsseq_reason(const struct tlsseq *);
const char	*tlsseq_name(const struct tlsseq *);

/*
 * Why a ClientHello's server name (as sent, NULL when absent) fails for
 * a connection to expected: SG_REASON_SNI_MISSING (none, for a name),
 * _SNI_INVALID (not a printable-ASCII host name), _SNI_MISMATCH, or
 * SG_REASON_NONE when it names expected.
 */
enum sg_reason	 tlsseq_name_reason(const struct host *expected,
		    const char *name);

/* ClientHellos checked and passed, and HelloRetryRequests seen. */
unsigned	 tlsseq_hellos(const struct tlsseq *);
unsigned	 tlsseq_retries(const struct tlsseq *);

#endif
