/*
 * fuzz_logline.c: arbitrary bytes as a multi-line log for the hash-chain
 * verifier (logverify.h). The input is split into two "files" at the
 * first NUL byte, if any, to cover chains that cross files.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "logverify.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct logverify	 v;
	struct logverify_line	 l;
	const char		*buf = (const char *)data;
	const char		*nul = memchr(buf, '\0', size);
	size_t			 first = nul ? (size_t)(nul - buf) : size;
	char			 hex[LOGVERIFY_HASH_HEX + 1];

	logverify_init(&v);
	logverify_file(&v, "log.1");
	logverify_buf(&v, buf, first);
	if (nul != NULL) {
		logverify_file(&v, "log");
		logverify_buf(&v, nul + 1, size - first - 1);
	}
	logverify_finish(&v);
	/* Results stay consistent with the input. */
	if (v.events > size || (v.broken && v.break_line == 0))
		__builtin_trap();
	/* The whole input as one line, too. */
	(void)logverify_line(buf, size, &l);
	(void)logverify_hash(buf, size, hex);
	return 0;
}
