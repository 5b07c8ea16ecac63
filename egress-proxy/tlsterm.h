/*
 * tlsterm.h: the TLS of a terminated session (policy entries with
 * tls: terminate), both sides, without the event loop:
 *
 *   client side  a server context: TLS 1.2 and 1.3, ALPN offering only
 *                http/1.1, no renegotiation (a TLS 1.2 renegotiation
 *                would hide a second ClientHello), and a ClientHello
 *                callback that checks the server name exactly as a
 *                spliced tunnel does (tlsseq_name_reason(), no ECH) before
 *                the minted certificate (tlsca.h) is shown.
 *   upstream     client contexts, one per extra CA file as its policy
 *                loaded it (its bytes, never the file as it is now;
 *                none: the system store alone), that verify the chain,
 *                the name and the validity; nothing turns verification
 *                off. A failed handshake is turned into a reason code
 *                (self-signed, untrusted, expired, name mismatch, other)
 *                with OpenSSL's words.
 *
 * Upstream sessions are kept per host and port (TLSTERM_SESSIONS_MAX
 * slots, and TLSTERM_SESSIONS_BYTES in all: oldest out) and offered
 * again, so a second connection to the same upstream resumes instead of
 * verifying a chain again. A reload empties them.
 */
#ifndef SG_TLSTERM_H
#define SG_TLSTERM_H

#include <stdint.h>

#include <openssl/ssl.h>

#include "host.h"
#include "policy.h"
#include "reason.h"

#define TLSTERM_CTX_MAX		64	/* upstream contexts (CA files) */
#define TLSTERM_SESSIONS_MAX	1024	/* upstream sessions kept */
/*
 * What the kept sessions may weigh in all, counted as their encoding
 * plus the upstream's chain (each up to 100 KB): a wildcard entry lets
 * the sandbox pick a new name, so a new slot, per request, and no client
 * owns what is kept once its connections are gone.
 */
#define TLSTERM_SESSIONS_BYTES	(8 * 1024 * 1024)
/*
 * The key exchanges of both sides: elliptic curves only. The client
 * picks the group, and a finite-field one (ffdhe8192: about 190 ms of
 * the proxy's one thread per handshake, against 2 ms for X25519) would
 * let one sandbox stall every other's TLS; an upstream's
 * HelloRetryRequest could do the same.
 */
#define TLSTERM_GROUPS		"X25519:P-256:P-384"
/*
 * The TLS 1.2 suites offered upstream: ECDHE only. The groups list does
 * not reach a TLS 1.2 finite-field DHE suite, whose group the server
 * sends (any odd modulus up to 10000 bits: over a second of the proxy's
 * one thread per handshake, for an upstream that spends nothing); RSA
 * key transport has no forward secrecy. PSK and SRP are never offered.
 */
#define TLSTERM_UP_CIPHERS	"DEFAULT:!kDHE:!kRSA:!PSK:!SRP"

struct tlsterm;

/*
 * What the ClientHello callback needs and leaves: set on the client-side
 * SSL with tlsterm_accept_ssl(); owned by the caller, which must keep it
 * while the SSL lives.
 */
struct tlsterm_hello {
	const struct host	*expected;	/* the CONNECT host */
	enum sg_reason		 reason;	/* SG_REASON_NONE: passed */
	char			*name;		/* SNI as sent (malloc'd) */
};

/* NULL with *cause set (caller frees) when OpenSSL fails. */
struct tlsterm	*tlsterm_new(char **cause);
void		 tlsterm_free(struct tlsterm *);	/* NULL ok */

/*
 * A client-side SSL for a session whose ClientHello must name
 * hello->expected. The caller sets the certificate (tlsca_use()). NULL
 * when out of memory.
 */
SSL		*tlsterm_accept_ssl(struct tlsterm *, struct tlsterm_hello *);

/*
 * An upstream SSL to host:port that trusts the system store and, when
 * ca is not NULL, the CAs of that ca_file as its policy loaded it too; SNI and the name to
 * verify are host's (for an address, the address). Offers a kept
 * session. NULL with *cause a static phrase.
 */
SSL		*tlsterm_connect_ssl(struct tlsterm *, const struct host *,
		    uint16_t port, const struct policy_ca *ca,
		    const char **cause);

/*
 * After an upstream handshake failed on ssl: the reason code and words
 * (OpenSSL's verify error, or the TLS error err from the error queue)
 * into detail.
 */
enum sg_reason	 tlsterm_failure(SSL *, unsigned long err, char *detail,
		    size_t size);

/*
 * After a policy reload: drop the contexts (their CAs are the old
 * policy's) and the kept sessions.
 */
void		 tlsterm_flush(struct tlsterm *);

/* Free a hello's name; the struct may be reused. */
void		 tlsterm_hello_release(struct tlsterm_hello *);

#endif
