/*
 * fuzz_procstat.c: procstat_parse() on arbitrary bytes: a sandboxed
 * process chooses its own command name, which /proc/PID/stat carries.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "procstat.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct procstat	 ps;
	char		*text;

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (procstat_parse(text, &ps) == 0 && strrchr(text, ')') == NULL)
		abort();	/* fields are only ever counted from a ')' */
	free(text);
	return 0;
}
