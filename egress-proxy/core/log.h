/*
 * log.h: diagnostics for operators on stderr (not the security-event log,
 * which is eventlog.h). Every function keeps errno intact.
 *
 * log_warn() appends ": strerror(errno)"; log_warnx() does not.
 * log_debug() prints only when log_init() was given verbose > 0.
 * fatal()/fatalx() are for start-up and broken invariants only: they print
 * and exit(1) (or the code set with log_set_fatal_exit()).
 */
#ifndef SG_LOG_H
#define SG_LOG_H

#include <stdarg.h>

void	log_init(const char *progname, int verbose);
void	log_set_fatal_exit(int code);
void	log_warn(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_warnx(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_info(const char *, ...) __attribute__((format(printf, 1, 2)));
void	log_debug(const char *, ...) __attribute__((format(printf, 1, 2)));
void	fatal(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));
void	fatalx(const char *, ...)
	    __attribute__((format(printf, 1, 2), noreturn));

#endif
