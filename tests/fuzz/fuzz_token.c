/*
 * fuzz_token.c: arbitrary bytes as the password of Proxy-Authorization
 * checked as a sandbox token (token_check(), token.h): what every
 * replica with --token-key parses from any client.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "token.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct token		 t;
	unsigned char		 body[TOKEN_BODY_MAX], sig[64];
	size_t			 blen = 0;
	const char		*what = NULL;
	enum token_status	 st;

	/* No key is trusted: nothing may pass, and every refusal says why. */
	st = token_check(NULL, (const char *)data, size, 1800000000, &t,
	    &what);
	if (st == TOKEN_OK || what == NULL)
		__builtin_trap();
	if (token_parse((const char *)data, size, &t, body, &blen, sig,
	    &what) == 0 && (blen < TOKEN_BODY_MIN || blen > TOKEN_BODY_MAX ||
	    t.sandbox[0] == '\0' || strlen(t.sandbox) > TOKEN_ID_MAX ||
	    t.expires <= t.issued || size > TOKEN_TEXT_MAX))
		__builtin_trap();
	return 0;
}
