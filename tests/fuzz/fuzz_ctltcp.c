/*
 * fuzz_ctltcp.c: the Authorization header of the TCP control API
 * (ctltcp_token_ok) on arbitrary bytes.
 *
 * Input: the header value (cut at the first NUL, as evhttp hands it).
 * Invariant: accepted exactly when it is "Bearer " (any case) followed by
 * the token, byte for byte.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ctltcp.h"

#define TOK	"q7Z0v9Lk3X2mB8nR4tY6wE1aS5dF0gH2jK4lP6oI8uU="

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*hdr;
	int	 ok, want;

	if ((hdr = malloc(size + 1)) == NULL)
		return 0;
	memcpy(hdr, data, size);
	hdr[size] = '\0';
	ok = ctltcp_token_ok(hdr, TOK);
	want = strncasecmp(hdr, "Bearer ", 7) == 0 &&
	    strcmp(hdr + 7, TOK) == 0;
	if (ok != want)
		abort();
	free(hdr);
	return 0;
}
