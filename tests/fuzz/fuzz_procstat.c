/*
 * fuzz_procstat.c: procstat_parse() and procstat_parse_status() on
 * arbitrary bytes: a sandboxed process chooses its own command name,
 * which /proc/PID/stat and /proc/PID/status carry.
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
	struct procstat		 ps;
	struct procstatus	 pst;
	char			*text;

	if ((text = malloc(size + 1)) == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	if (procstat_parse(text, &ps) == 0 && strrchr(text, ')') == NULL)
		abort();	/* fields are only ever counted from a ')' */
	if (procstat_parse_status(text, &pst) == 0 && (strstr(text, "Uid:") ==
	    NULL || strstr(text, "Seccomp:") == NULL || pst.seccomp < 0 ||
	    pst.seccomp > 2 || (pst.root != 0 && pst.root != 1)))
		abort();
	free(text);
	return 0;
}
