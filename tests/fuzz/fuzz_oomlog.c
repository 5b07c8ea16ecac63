/*
 * fuzz_oomlog.c: oomlog_parse() on arbitrary bytes: a /dev/kmsg record
 * carries the command name a sandboxed process chose.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oomlog.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	*copy;
	int	 pid;

	/* an exact-size copy: ASan sees any read past the record */
	if ((copy = malloc(size > 0 ? size : 1)) == NULL)
		return 0;
	memcpy(copy, data, size);
	pid = oomlog_parse(copy, size);
	if (pid == 0 || pid < -1 || (pid > 0 && memchr(copy, ';', size) ==
	    NULL))
		abort();
	free(copy);
	return 0;
}
