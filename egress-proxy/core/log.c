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

/* One line: "prog: message[: strerror]" written with a single fputs. */
static void
log_vprint(int with_errno, const char *fmt, va_list ap)
{
	char	msg[2048], line[2304];
	int	saved = errno;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (with_errno)
		snprintf(line, sizeof(line), "%s: %s: %s\n", log_progname, msg,
		    strerror(saved));
	else
		snprintf(line, sizeof(line), "%s: %s\n", log_progname, msg);
	fputs(line, stderr);
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
