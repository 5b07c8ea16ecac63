/* util.c: small shared helpers; see util.h. */
#include <sys/file.h>
#include <sys/stat.h>

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <strings.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "log.h"
#include "util.h"

int
util_strtonum(const char *s, long long min, long long max, long long *out,
    const char **cause)
{
	char		*end;
	long long	 v;
	const char	*p = s;

	if (*p == '-' && min < 0)
		p++;
	if (!isdigit((unsigned char)*p)) {
		*cause = "invalid";
		return -1;
	}
	errno = 0;
	v = strtoll(s, &end, 10);
	if (*end != '\0') {
		*cause = "invalid";
		return -1;
	}
	if ((errno == ERANGE && v == LLONG_MIN) || v < min) {
		*cause = "too small";
		return -1;
	}
	if ((errno == ERANGE && v == LLONG_MAX) || v > max) {
		*cause = "too large";
		return -1;
	}
	*out = v;
	return 0;
}

size_t
util_strlcpy(char *dst, const char *src, size_t size)
{
	size_t	len = strlen(src);

	if (size > 0) {
		size_t n = len < size - 1 ? len : size - 1;
		memcpy(dst, src, n);
		dst[n] = '\0';
	}
	return len;
}

void *
util_xmalloc(size_t n)
{
	void	*p = malloc(n ? n : 1);

	if (p == NULL)
		fatal("malloc");
	return p;
}

void *
util_xcalloc(size_t n, size_t size)
{
	void	*p = calloc(n ? n : 1, size ? size : 1);

	if (p == NULL)
		fatal("calloc");
	return p;
}

char *
util_xstrdup(const char *s)
{
	char	*p = strdup(s);

	if (p == NULL)
		fatal("strdup");
	return p;
}

int
util_xasprintf(char **ret, const char *fmt, ...)
{
	va_list	ap;
	int	n;

	va_start(ap, fmt);
	n = vasprintf(ret, fmt, ap);
	va_end(ap);
	if (n == -1)
		fatal("asprintf");
	return n;
}

int
util_cause(char **cause, const char *fmt, ...)
{
	va_list	ap;
	char	*msg;

	if (cause == NULL)
		return -1;
	va_start(ap, fmt);
	if (vasprintf(&msg, fmt, ap) == -1)
		fatal("asprintf");
	va_end(ap);
	free(*cause);
	*cause = msg;
	return -1;
}

void
util_hex(const unsigned char *in, size_t len, char *out)
{
	static const char	digits[] = "0123456789abcdef";
	size_t			i;

	for (i = 0; i < len; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 0xf];
	}
	out[2 * len] = '\0';
}

void
util_rfc3339(const struct timespec *ts, char out[UTIL_TS_LEN])
{
	struct tm	tm;
	char		buf[128];

	gmtime_r(&ts->tv_sec, &tm);
	snprintf(buf, sizeof(buf), "%04d-%02d-%02dT%02d:%02d:%02d.%06ldZ",
	    tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (long)(ts->tv_nsec / 1000));
	util_strlcpy(out, buf, UTIL_TS_LEN);
}

/* Shared by the duration and size parsers: a number and a unit suffix. */
static int
util_parse_scaled(const char *s, unsigned long long *out,
    const char *const *units, const unsigned long long *scale, size_t nunits)
{
	char			*end;
	unsigned long long	 v;
	size_t			 i;

	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -1;
	if (*end == '\0') {
		*out = v;
		return 0;
	}
	for (i = 0; i < nunits; i++) {
		if (strcasecmp(end, units[i]) == 0) {
			if (v > ~0ULL / scale[i])
				return -1;
			*out = v * scale[i];
			return 0;
		}
	}
	return -1;
}

int
util_parse_duration(const char *s, long long *secs)
{
	static const char *const units[] = { "s", "m", "h", "d" };
	static const unsigned long long scale[] = { 1, 60, 3600, 86400 };
	unsigned long long	v;

	if (util_parse_scaled(s, &v, units, scale, 4) == -1 ||
	    v > (unsigned long long)LLONG_MAX)
		return -1;
	*secs = (long long)v;
	return 0;
}

int
util_parse_size(const char *s, unsigned long long *bytes)
{
	static const char *const units[] = { "k", "m", "g", "t", "kib", "mib",
	    "gib", "tib", "kb", "mb", "gb", "tb" };
	static const unsigned long long scale[] = { 1ULL << 10, 1ULL << 20,
	    1ULL << 30, 1ULL << 40, 1ULL << 10, 1ULL << 20, 1ULL << 30,
	    1ULL << 40, 1ULL << 10, 1ULL << 20, 1ULL << 30, 1ULL << 40 };

	return util_parse_scaled(s, bytes, units, scale, 12);
}

uint64_t
util_now_us(void)
{
	struct timespec	ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

int
util_flock_wait(int fd, int how, uint64_t until_us, int (*stop)(void))
{
	useconds_t	nap = 500;

	if (until_us == 0 && stop == NULL)
		return flock(fd, how);
	while (flock(fd, how | LOCK_NB) == -1) {
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -1;
		if (stop != NULL && stop()) {
			errno = EINTR;
			return -1;
		}
		if (until_us != 0 && util_now_us() >= until_us) {
			errno = ETIMEDOUT;
			return -1;
		}
		usleep(nap);
		if (nap < 10000)
			nap *= 2;
	}
	return 0;
}

char *
util_escape(const char *s, char *out, size_t size)
{
	static const char	 hexd[] = "0123456789abcdef";
	const unsigned char	*p = (const unsigned char *)(s ? s : "-");
	size_t			 o = 0, need;

	for (; *p != '\0'; p++) {
		need = *p >= 0x20 && *p < 0x7f && *p != '\\' ? 1 : 4;
		/* Keep room for "..." and the NUL in case more follows. */
		if (o + need + (p[1] != '\0' ? 4 : 1) > size)
			break;
		if (need == 1)
			out[o++] = (char)*p;
		else {
			out[o++] = '\\';
			out[o++] = 'x';
			out[o++] = hexd[*p >> 4];
			out[o++] = hexd[*p & 0xf];
		}
	}
	if (*p != '\0') {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o] = '\0';
	return out;
}

int
util_printable(const char *s)
{
	const unsigned char	*p;

	for (p = (const unsigned char *)s; *p != '\0'; p++)
		if (*p < 0x20 || *p >= 0x7f)
			return 0;
	return 1;
}

char *
util_safe(const char *s, char *out, size_t size)
{
	if (s != NULL && util_printable(s) && strlen(s) < size) {
		memcpy(out, s, strlen(s) + 1);
		return out;
	}
	return util_escape(s, out, size);
}

int
util_hexval(unsigned char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
util_open_private(const char *path, const char *what, long long max,
    int secret, char **cause)
{
	struct stat	st;
	int		fd;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		util_xasprintf(cause, "cannot open %s \"%s\": %s", what, path,
		    strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > max) {
		util_xasprintf(cause, "%s \"%s\" is not a regular file of at "
		    "most %lld bytes", what, path, max);
		close(fd);
		return -1;
	}
	if (secret && (st.st_uid != geteuid() || (st.st_mode & 077) != 0)) {
		util_xasprintf(cause, "private %s \"%s\" must belong to uid %u "
		    "and be readable by it alone (it has uid %u, mode %04o)",
		    what, path, (unsigned)geteuid(), (unsigned)st.st_uid,
		    (unsigned)(st.st_mode & 07777));
		close(fd);
		return -1;
	}
	return fd;
}

const char *
util_ssl_error(const char *none)
{
	static char	buf[256];
	unsigned long	e = ERR_get_error();

	ERR_clear_error();
	if (e == 0)
		return none;
	ERR_error_string_n(e, buf, sizeof(buf));
	return buf;
}

uint32_t
util_hash_str(const char *s)
{
	uint32_t	h = 2166136261u;

	while (*s != '\0')
		h = (h ^ (unsigned char)*s++) * 16777619u;
	return h;
}

long long
util_add_sat(long long a, long long b)
{
	long long	r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? LLONG_MAX : LLONG_MIN;
	return r;
}

char *
util_dirname(const char *path)
{
	const char	*slash = strrchr(path, '/');
	char		*dir;

	if (slash == NULL)
		dir = util_xstrdup(".");
	else if (slash == path)
		dir = util_xstrdup("/");
	else
		util_xasprintf(&dir, "%.*s", (int)(slash - path), path);
	return dir;
}

int
util_sync_dir(const char *path)
{
	char		*dir = util_dirname(path);
	int		 fd, rc, saved;

	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(dir);
	if (fd == -1)
		return -1;
	rc = fsync(fd);
	saved = errno;
	close(fd);
	errno = saved;
	return rc;
}
