/* fuzz_probe.c: probe_check() on arbitrary bytes from inside a sandbox. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct probe_expect	 e;
	char			*json, *failed = NULL;

	/* The controller hands probe_check a NUL-terminated capture. */
	if ((json = malloc(size + 1)) == NULL)
		return 0;
	memcpy(json, data, size);
	json[size] = '\0';
	probe_expect_init(&e);
	e.memory_bytes = 128ull << 20;
	e.pids = 64;
	e.cpus = 1.0;
	if (probe_check(json, &e, &failed) == -1 && failed == NULL)
		abort();	/* a failure must always say why */
	free(failed);
	failed = NULL;
	/* Relaxed: every optional check off, so later fields get reached. */
	memset(&e, 0, sizeof(e));
	if (probe_check(json, &e, &failed) == -1 && failed == NULL)
		abort();
	free(failed);
	free(json);
	return 0;
}
