/*
 * fuzz_logread.c: arbitrary bytes as a log file for the one log reader
 * (logread.h): the bounded line reader, each line as a JSON object, its
 * "ts" as an RFC 3339 time, and the object fed to the suggest engine
 * (suggest.h), which drafts YAML from it.
 */
#include <sys/mman.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "logread.h"
#include "suggest.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct logread	r;

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct suggest		 sg;
	struct suggest_draft	 dr = { "logs", "policy.d", NULL, NULL, "s" };
	json_t			*o;
	const char		*ts;
	FILE			*out;
	int64_t			 us;
	size_t			 len;
	int			 fd;

	if ((fd = memfd_create("log", 0)) == -1)
		return 0;
	if (size > 0 && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	lseek(fd, 0, SEEK_SET);
	suggest_init(&sg, NULL, -1);
	logread_init(&r, fd, 0, (long long)size);
	while (logread_next(&r, &len) == 1) {
		if (len > SG_LOG_LINE_MAX + 1 || strlen(r.line) > len)
			__builtin_trap();
		if ((o = logread_object(r.line, len)) == NULL)
			continue;
		ts = json_string_value(json_object_get(o, "ts"));
		if (ts != NULL)
			(void)logread_parse_ts(ts, &us);
		suggest_event(&sg, o);
		json_decref(o);
	}
	close(fd);
	/* The line as a time, too. */
	(void)logread_parse_ts(r.line, &us);
	suggest_sort(&sg);
	if ((out = fopen("/dev/null", "w")) != NULL) {
		suggest_print(&sg, &dr, NULL, out, out);
		fclose(out);
	}
	suggest_release(&sg);
	return 0;
}
