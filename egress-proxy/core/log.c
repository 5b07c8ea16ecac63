/* log.c: operator diagnostics on stderr; see log.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

static const char	*log_progname = "sandgate";
static int		 log_verbose;
static int		 log_fatal_code = 1;

static void	log_vprint(int with_errno, const char *fmt, va_list ap);

void
log_init(const char *progname, int verbose)
{
	log_progname = progname;
	log_verbose = verbose;
}

void
log_set_fatal_exit(int code)
{
	log_fatal_code = code;
}

/*
 * One line: "prog: message[: strerror]" written with a single fputs. A
 * message too long for the buffer on the stack (a long path) is formatted
 * again on the heap rather than cut; without memory, it is cut.
 */
static void
log_vprint(int with_errno, const char *fmt, va_list ap)
{
	char	 msg[2048], line[2304], *big = NULL, *text;
	va_list	 again;
	int	 saved = errno, n;

	va_copy(again, ap);
	n = vsnprintf(msg, sizeof(msg), fmt, ap);
	if (n >= (int)sizeof(msg) && vasprintf(&big, fmt, again) == -1)
		big = NULL;
	va_end(again);
	if (big != NULL && asprintf(&text, "%s: %s%s%s\n", log_progname, big,
	    with_errno ? ": " : "", with_errno ? strerror(saved) : "") != -1) {
		fputs(text, stderr);
		free(text);
	} else {
		snprintf(line, sizeof(line), "%s: %s%s%s\n", log_progname, msg,
		    with_errno ? ": " : "", with_errno ? strerror(saved) : "");
		fputs(line, stderr);
	}
	free(big);
	errno = saved;
}

void
log_warn(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vprint(1, fmt, ap);
	va_end(ap);
}

void
log_warnx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vprint(0, fmt, ap);
	va_end(ap);
}

void
log_info(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vprint(0, fmt, ap);
	va_end(ap);
}

void
log_debug(const char *fmt, ...)
{
	va_list	ap;

	if (log_verbose <= 0)
		return;
	va_start(ap, fmt);
	log_vprint(0, fmt, ap);
	va_end(ap);
}

void
fatal(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vprint(1, fmt, ap);
	va_end(ap);
	exit(log_fatal_code);
}

void
fatalx(const char *fmt, ...)
{
	va_list	ap;

	va_start(ap, fmt);
	log_vprint(0, fmt, ap);
	va_end(ap);
	exit(log_fatal_code);
}
