/*
 * siphash.h: SipHash-2-4 under a key drawn once per process, for hash
 * tables whose keys other parties choose (sandbox ids, addresses, host
 * names): with an unkeyed hash they could put every entry in one chain
 * and make each lookup walk it all.
 */
#ifndef SG_SIPHASH_H
#define SG_SIPHASH_H

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of m (n bytes) under k. */
uint64_t	sg_siphash(const uint64_t k[2], const unsigned char *m,
		    size_t n);

/*
 * SipHash-2-4 of m under this process's key (drawn from RAND_bytes at
 * the first call; no key is fatal).
 */
uint64_t	sg_keyed_hash(const unsigned char *m, size_t n);

#endif
