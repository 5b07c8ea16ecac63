/*
 * fuzz_logtail.c: arbitrary bytes as the files of a log that the writer
 * opens and appends to (eventlog.h): the tail scan that finds the line
 * the chain continues from, the rotation that reads the first and last
 * lines of rotated files. The input is split at NUL bytes: the current
 * file, then name.1, then name.2.
 */
#include <sys/stat.h>

#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "eventlog.h"
#include "sglimits.h"
#include "util.h"

#define LOGTAIL_FILES	3

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static char	logtail_dir[64];
static char	logtail_path[LOGTAIL_FILES + 1][96];

/* The files and their folder go when the fuzzer exits. */
static void
logtail_cleanup(void)
{
	size_t	i;

	for (i = 0; i <= LOGTAIL_FILES; i++)
		(void)unlink(logtail_path[i]);
	(void)rmdir(logtail_dir);
}

/* A folder in memory if there is one: the writer syncs what it writes. */
static void
logtail_setup(void)
{
	size_t	i;

	snprintf(logtail_dir, sizeof(logtail_dir), "%s/fuzz-logtail-" UTIL_MKTEMP_SUFFIX,
	    access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
	if (mkdtemp(logtail_dir) == NULL)
		__builtin_trap();
	snprintf(logtail_path[0], sizeof(logtail_path[0]), "%s/log",
	    logtail_dir);
	for (i = 1; i <= LOGTAIL_FILES; i++)
		snprintf(logtail_path[i], sizeof(logtail_path[i]), "%s/log.%zu",
		    logtail_dir, i);
	atexit(logtail_cleanup);
}

/* Write [p, p + n) as the file at path. */
static void
logtail_put(const char *path, const uint8_t *p, size_t n)
{
	int	fd;

	if ((fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600)) == -1)
		__builtin_trap();
	if (n > 0 && write(fd, p, n) != (ssize_t)n)
		__builtin_trap();
	close(fd);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct eventlog_opts	 o = { .max_size = 2048, .keep = 1 };
	struct eventlog		*log;
	const uint8_t		*p = data, *nul;
	char			*cause = NULL;
	size_t			 i, n, left = size;
	long long		 seq;
	json_t			*f;

	if (logtail_dir[0] == '\0')
		logtail_setup();
	for (i = 0; i <= LOGTAIL_FILES; i++)
		(void)unlink(logtail_path[i]);
	for (i = 0; i < LOGTAIL_FILES && (i == 0 || left > 0); i++) {
		nul = memchr(p, '\0', left);
		n = nul != NULL ? (size_t)(nul - p) : left;
		logtail_put(logtail_path[i], p, n);
		p += n + (nul != NULL);
		left -= n + (nul != NULL);
	}
	if ((log = eventlog_open(logtail_dir, "log", &o, &cause)) == NULL) {
		free(cause);
		return 0;
	}
	seq = eventlog_seq(log);
	if (seq < 0 || seq > SG_LOG_SEQ_MAX || eventlog_first(log) < 0)
		__builtin_trap();
	/* One event, then enough for a rotation: seq moves on by one each. */
	for (i = 0; i < 8 && seq < SG_LOG_SEQ_MAX; i++, seq++) {
		f = json_pack("{s:s, s:s}", "event", "egress.blocked", "pad",
		    "0123456789012345678901234567890123456789012345678901234");
		if (f == NULL)
			__builtin_trap();
		if (eventlog_append(log, f) == -1) {
			json_decref(f);
			break;
		}
		json_decref(f);
		if (eventlog_seq(log) != seq + 1)
			__builtin_trap();
	}
	eventlog_close(log);
	return 0;
}
