/*
 * fuzz_anchor.c: arbitrary bytes as a writer's anchor file
 * (checkpoint_anchor_parse(), checkpoint.h): what `audit verify --anchor`
 * and every writer read before they trust it.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "checkpoint.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct checkpoint_anchor	 a;
	const char			*what = NULL;
	int				 r;

	r = checkpoint_anchor_parse((const char *)data, size, &a, &what);
	/* Accepted: every member within its bounds; refused: a reason. */
	if (r == 0 && (a.seq < 0 || (a.seq == 0 && (a.lost == 0 ||
	    a.first != 0)) || strlen(a.hash) != 64 ||
	    !checkpoint_reason_valid(a.reason) ||
	    strlen(a.key) != CHECKPOINT_KEY_B64 || what != NULL ||
	    strlen(a.cause) > CHECKPOINT_CAUSE_MAX ||
	    (a.lost > 0) != (a.cause[0] != '\0')))
		__builtin_trap();
	if (r == -1 && what == NULL)
		__builtin_trap();
	return 0;
}
