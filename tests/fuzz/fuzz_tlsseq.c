/*
 * fuzz_tlsseq.c: the ClientHello sequence check (tlsseq.h) driven as the
 * tunnel drives it, on arbitrary bytes of both directions.
 *
 * Input: byte 0 picks the CONNECT host (even: allowed.test, odd: an IP
 * address); then chunks, each a header byte (bit 7: the server's way,
 * bits 0-6: length - 1) and that many bytes. Each way keeps the bytes not
 * cleared yet and shows them all again with the new ones, as tunnel.c
 * does.
 *
 * Invariants: *ok never exceeds what was shown; a refusal is final and
 * names a TLS reason; once done, the server's bytes are all cleared; the
 * client side never holds more uncleared bytes than a ClientHello may
 * take without having refused; nothing is cleared on the client's side
 * before a ClientHello passed, unless it is whole ChangeCipherSpec or
 * alert records.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "sni.h"
#include "tlsseq.h"

#define WAY_MAX	(2 * SG_CLIENTHELLO_MAX + 2 * 16384)

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

struct way {
	unsigned char	b[WAY_MAX];
	size_t		len;
};

static SSL_CTX		*ctx;
static struct way	 ways[2];

static void	check_reason(enum sg_reason);

static void
check_reason(enum sg_reason r)
{
	if (r != SG_REASON_SNI_MISMATCH && r != SG_REASON_SNI_MISSING &&
	    r != SG_REASON_SNI_INVALID && r != SG_REASON_ECH &&
	    r != SG_REASON_NOT_TLS)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tlsseq		*ts;
	struct host		 h;
	const char		*cause, *name;
	enum tlsseq_result	 r, last = TLSSEQ_MORE;
	struct way		*w;
	size_t			 off = 1, n, ok;
	int			 server;

	if (ctx == NULL && (ctx = sni_ctx_new()) == NULL)
		abort();
	if (size < 1)
		return 0;
	name = data[0] & 1 ? "192.0.2.7" : "allowed.test";
	if (host_normalize(name, strlen(name), &h, &cause) == -1)
		abort();
	if ((ts = tlsseq_new(ctx, &h)) == NULL)
		abort();
	ways[0].len = ways[1].len = 0;
	while (off < size) {
		server = data[off] >> 7;
		n = (size_t)(data[off] & 0x7f) + 1;
		off++;
		if (n > size - off)
			n = size - off;
		w = &ways[server];
		if (w->len + n > sizeof(w->b))
			break;
		memcpy(w->b + w->len, data + off, n);
		w->len += n;
		off += n;
		ok = 0;
		r = server ? tlsseq_server(ts, w->b, w->len, &ok) :
		    tlsseq_client(ts, w->b, w->len, &ok);
		if (ok > w->len)
			abort();
		if (last == TLSSEQ_REFUSE && r != TLSSEQ_REFUSE)
			abort();
		if (r == TLSSEQ_REFUSE) {
			check_reason(tlsseq_reason(ts));
			if (ok != 0)
				abort();
		}
		if (r == TLSSEQ_DONE && (!server || ok != w->len ||
		    tlsseq_hellos(ts) == 0))
			abort();
		if (r == TLSSEQ_MORE && !server && w->len - ok >
		    SG_CLIENTHELLO_MAX + 5 + 16384)
			abort();
		memmove(w->b, w->b + ok, w->len - ok);
		w->len -= ok;
		if (r != TLSSEQ_MORE)
			last = r;
		if (r == TLSSEQ_DONE)
			break;
	}
	tlsseq_free(ts);
	return 0;
}
