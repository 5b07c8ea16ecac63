/* siphash.c: SipHash-2-4 and the process's hash key; see siphash.h. */
#include <openssl/rand.h>

#include "log.h"
#include "siphash.h"

#define SG_ROTL(x, b)	(((x) << (b)) | ((x) >> (64 - (b))))

static void
sg_sipround(uint64_t v[4])
{
	v[0] += v[1]; v[1] = SG_ROTL(v[1], 13); v[1] ^= v[0];
	v[0] = SG_ROTL(v[0], 32);
	v[2] += v[3]; v[3] = SG_ROTL(v[3], 16); v[3] ^= v[2];
	v[0] += v[3]; v[3] = SG_ROTL(v[3], 21); v[3] ^= v[0];
	v[2] += v[1]; v[1] = SG_ROTL(v[1], 17); v[1] ^= v[2];
	v[2] = SG_ROTL(v[2], 32);
}

uint64_t
sg_siphash(const uint64_t k[2], const unsigned char *m, size_t n)
{
	uint64_t	v[4] = { k[0] ^ 0x736f6d6570736575ULL,
			    k[1] ^ 0x646f72616e646f6dULL,
			    k[0] ^ 0x6c7967656e657261ULL,
			    k[1] ^ 0x7465646279746573ULL };
	uint64_t	w;
	size_t		i, j;

	for (i = 0; i <= n; i += 8) {
		w = i + 8 > n ? (uint64_t)n << 56 : 0;
		for (j = 0; j < 8 && i + j < n; j++)
			w |= (uint64_t)m[i + j] << (8 * j);
		v[3] ^= w;
		sg_sipround(v);
		sg_sipround(v);
		v[0] ^= w;
		if (i + 8 > n)
			break;
	}
	v[2] ^= 0xff;
	for (j = 0; j < 4; j++)
		sg_sipround(v);
	return v[0] ^ v[1] ^ v[2] ^ v[3];
}

uint64_t
sg_keyed_hash(const unsigned char *m, size_t n)
{
	static uint64_t	key[2];
	static int	keyed;

	if (!keyed && RAND_bytes((unsigned char *)key, sizeof(key)) != 1)
		fatalx("RAND_bytes: no key for the hash tables");
	keyed = 1;
	return sg_siphash(key, m, n);
}
