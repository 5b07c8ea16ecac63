/*
 * fuzz_ocsf.c: arbitrary bytes as a log line for `audit export --format
 * ocsf` (ocsf.h): parsed as the export parses it, mapped, dumped. Ports
 * and counts that reach the OCSF event must be in range, and an address
 * at most 39 characters (the schema's bounds, tests/data/ocsf/).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "ocsf.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

/* Trap if member key of obj (when present) is not an integer in range. */
static void
fuzz_range(json_t *obj, const char *key, json_int_t lo, json_int_t hi)
{
	json_t	*v = json_object_get(obj, key);

	if (v != NULL && (!json_is_integer(v) || json_integer_value(v) < lo ||
	    json_integer_value(v) > hi))
		__builtin_trap();
}

/* Trap if the endpoint has a port out of range or a long address. */
static void
fuzz_endpoint(json_t *e)
{
	json_t	*ip = json_object_get(e, "ip");

	fuzz_range(e, "port", 0, 65535);
	if (ip != NULL && (!json_is_string(ip) || json_string_length(ip) > 39))
		__builtin_trap();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct ocsf_ctx ctx = { "security-events.jsonl", "h" };
	json_t		*ev, *o, *t;
	json_error_t	 err;
	char		*s;

	ev = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES,
	    &err);
	if (ev == NULL || !json_is_object(ev)) {
		json_decref(ev);
		return 0;
	}
	if ((o = ocsf_event(ev, &ctx)) == NULL)
		__builtin_trap();
	fuzz_endpoint(json_object_get(o, "src_endpoint"));
	fuzz_endpoint(json_object_get(o, "dst_endpoint"));
	fuzz_range(json_object_get(json_object_get(o, "http_request"), "url"),
	    "port", 0, 65535);
	fuzz_range(o, "count", 0, INT64_MAX);
	t = json_object_get(o, "traffic");
	fuzz_range(t, "bytes", 0, INT64_MAX);
	fuzz_range(t, "bytes_in", 0, INT64_MAX);
	fuzz_range(t, "bytes_out", 0, INT64_MAX);
	s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	if (s == NULL)
		__builtin_trap();
	free(s);
	json_decref(o);
	json_decref(ev);
	return 0;
}
