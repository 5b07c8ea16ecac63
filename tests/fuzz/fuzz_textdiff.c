/*
 * fuzz_textdiff.c: textdiff_unified() on two arbitrary texts (the input
 * split at its first 0xff byte, else in the middle), checked by applying
 * its hunks to the first and comparing with the second.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "textdiff.h"

#include "../lib/textdiff_check.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t	*cut = memchr(data, 0xff, size);
	size_t		 alen = cut != NULL ? (size_t)(cut - data) : size / 2;
	size_t		 boff = cut != NULL ? alen + 1 : alen;

	if (tdcheck_run((const char *)data, alen, (const char *)data + boff,
	    size - boff, (unsigned)(size % 5), NULL) == 1)
		abort();	/* the hunks do not turn a into b */
	return 0;
}
