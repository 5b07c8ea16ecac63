/*
 * fuzz_sni.c: sni_peek_feed() on arbitrary bytes, fed once whole and once
 * in pseudo-random pieces (the sizes derive from the input, so a crash
 * reproduces). Invariants: a final result is sticky, both feedings agree,
 * and a reported name is a non-empty C string.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "host.h"
#include "sni.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static SSL_CTX	*ctx;

static enum sni_result	feed_random(struct sni_peek *, const uint8_t *,
			    size_t);

/* Pieces of 1..64 bytes, sometimes the rest at once. */
static enum sni_result
feed_random(struct sni_peek *sp, const uint8_t *data, size_t size)
{
	uint32_t	x = 2166136261u;
	size_t		off = 0, n, i;
	enum sni_result	r = SNI_MORE;

	for (i = 0; i < size; i++)
		x = (x ^ data[i]) * 16777619u;
	while (off < size && r == SNI_MORE) {
		x ^= x << 13, x ^= x >> 17, x ^= x << 5;
		n = (x & 0xff) == 0 ? size - off : 1 + (x >> 8) % 64;
		if (n > size - off)
			n = size - off;
		r = sni_peek_feed(sp, data + off, n);
		off += n;
	}
	if (r != SNI_MORE && sni_peek_feed(sp, data, size) != r)
		abort();
	return r;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sni_peek	*whole, *split;
	enum sni_result	 rw, rs;
	const char	*nw, *ns, *cause;
	struct host	 h;

	if (ctx == NULL && (ctx = sni_ctx_new()) == NULL)
		abort();
	/* Past the cap a whole feed fails at once while pieces may not. */
	if (size > SG_CLIENTHELLO_MAX)
		size = SG_CLIENTHELLO_MAX;
	whole = sni_peek_new(ctx);
	split = sni_peek_new(ctx);
	if (whole == NULL || split == NULL)
		abort();
	rw = sni_peek_feed(whole, data, size);
	rs = feed_random(split, data, size);
	if (size > 0 && rw != rs)
		abort();
	nw = sni_peek_name(whole);
	ns = sni_peek_name(split);
	if ((nw == NULL) != (ns == NULL) || (nw != NULL && strcmp(nw, ns)))
		abort();
	if (sni_peek_ech(whole) != sni_peek_ech(split))
		abort();
	if (nw != NULL) {
		if (rw != SNI_DONE || nw[0] == '\0')
			abort();
		(void)host_normalize(nw, strlen(nw), &h, &cause);
	}
	sni_peek_free(whole);
	sni_peek_free(split);
	return 0;
}
