/* apartfile.c: changes kept apart, in room reserved at start. */
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "apartfile.h"
#include "log.h"
#include "util.h"


static void	apartfile_undo(int, size_t, size_t, size_t);

/* The whole text of fd (at most APARTFILE_MAX), NUL-terminated, or NULL. */
static char *
apartfile_read(int fd, size_t *len)
{
	struct stat	 st;
	char		*t;
	ssize_t		 n;

	*len = 0;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > APARTFILE_MAX)
		return NULL;
	t = util_xmalloc((size_t)st.st_size + 1);
	while (*len < (size_t)st.st_size) {
		n = pread(fd, t + *len, (size_t)st.st_size - *len,
		    (off_t)*len);
		if (n <= 0) {
			if (n == -1 && errno == EINTR)
				continue;
			break;
		}
		*len += (size_t)n;
	}
	t[*len] = '\0';
	return t;
}

/*
 * n bytes of padding (spaces, then a newline) written at off: 0, or -1
 * (errno kept).
 */
static int
apartfile_pad(int fd, off_t off, size_t n)
{
	char	*p;
	int	 bad;

	if (n == 0)
		return 0;
	p = util_xmalloc(n);
	memset(p, ' ', n - 1);
	p[n - 1] = '\n';
	bad = pwrite(fd, p, n, off) != (ssize_t)n;
	free(p);
	return bad ? -1 : 0;
}

/*
 * Where the padding of t starts: the line start from which t holds only
 * spaces and its final newline; len when there is no such padding.
 */
static size_t
apartfile_pad_at(const char *t, size_t len)
{
	size_t	j = len;

	if (j == 0 || t[j - 1] != '\n')
		return len;
	for (j--; j > 0 && t[j - 1] == ' '; j--)
		;
	return j == 0 || t[j - 1] == '\n' ? j : len;
}

void
apartfile_create(const char *path, const char *what)
{
	struct stat	st;
	int		fd;

	if ((fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC, 0600)) == -1) {
		log_warn("%s: %s that cannot be saved will not be kept", path,
		    what);
		return;
	}
	/* not a FIFO or a device a write would stall on (atk1921l F5) */
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode)) {
		log_warnx("%s: not a regular file: %s that cannot be saved "
		    "will not be kept", path, what);
		close(fd);
		return;
	}
	/* empty, or blank but short of the room (grown from empty) */
	if (st.st_size < APARTFILE_RESERVE &&
	    apartfile_blank(path) && (apartfile_pad(fd, 0,
	    APARTFILE_RESERVE) == -1 || fdatasync(fd) == -1)) {
		log_warn("%s: cannot reserve room for %s that cannot be saved "
		    "(one is kept only while the folder has room)", path,
		    what);
		/* no half padding a later line could run into */
		(void)ftruncate(fd, 0);
	}
	close(fd);
}

int
apartfile_add(const char *path, const char *line)
{
	char	*t;
	size_t	 len, at, n;
	int	 fd, bad;

	if (line == NULL || path == NULL || (fd = open(path, O_RDWR |
	    O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600)) == -1)
		return -1;
	n = strlen(line);
	if ((t = apartfile_read(fd, &len)) == NULL) {
		close(fd);
		return -1;
	}
	at = apartfile_pad_at(t, len);
	/* over the padding while its final newline stays; else appended */
	if (at == len || at + n > len - 1)
		at = len;
	/*
	 * Never past what is read back (apartfile_read): a file grown over
	 * APARTFILE_MAX cannot be read at the next start and every line in
	 * it is lost (atk37d F1). + 1: the newline a torn last line gets.
	 */
	if (at == len && (n > APARTFILE_MAX || len + 1 > APARTFILE_MAX - n)) {
		free(t);
		close(fd);
		errno = EFBIG;
		return -1;
	}
	/*
	 * A torn last line (a crash in a write) is never continued: the
	 * line goes on a line of its own, so it reads even if that one does
	 * not (atk15r20 F2).
	 */
	if (at == len && len > 0 && t[len - 1] != '\n') {
		if (pwrite(fd, "\n", 1, (off_t)len) != 1) {
			free(t);
			close(fd);
			return -1;
		}
		at = ++len;
	}
	free(t);
	bad = pwrite(fd, line, n, (off_t)at) != (ssize_t)n ||
	    fdatasync(fd) == -1;
	if (bad)
		apartfile_undo(fd, at, n, len);
	if (close(fd) == -1)
		bad = 1;
	return bad ? -1 : 0;
}

/*
 * A line that could not be written whole (a short write: the folder
 * filled) is taken back, so no fragment is left that the next line (the
 * controller's retry) would merge into and that a restart could not read
 * (atk15r20 F2): an append is cut off at len, a line over the padding
 * blanked again (it was spaces there).
 */
static void
apartfile_undo(int fd, size_t at, size_t n, size_t len)
{
	char	*p;

	if (at == len) {
		(void)ftruncate(fd, (off_t)len);
	} else {
		p = util_xmalloc(n);
		memset(p, ' ', n);
		(void)pwrite(fd, p, n, (off_t)at);
		free(p);
	}
	(void)fdatasync(fd);
}

/* 1 when t holds only spaces and newlines. */
static int
apartfile_text_blank(const char *t, size_t len)
{
	return strspn(t, " \n") == len;
}

int
apartfile_blank(const char *path)
{
	char	*t;
	size_t	 len;
	int	 fd, blank = 1;

	if ((fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return 1;
	if ((t = apartfile_read(fd, &len)) != NULL)
		blank = apartfile_text_blank(t, len);
	free(t);
	close(fd);
	return blank;
}

void
apartfile_clear(const char *path)
{
	char	*t;
	size_t	 len;
	int	 fd, bad;

	if (path == NULL || strchr(path, '/') == NULL)
		return;
	/* none there: nothing to empty; else its lines would stay unsaid */
	if ((fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1) {
		if (errno != ENOENT)
			log_warn("%s: cannot empty it", path);
		return;
	}
	if ((t = apartfile_read(fd, &len)) == NULL ||
	    apartfile_text_blank(t, len)) {
		free(t);
		close(fd);
		return;
	}
	free(t);
	(void)util_sync_dir(path);
	/* in place: what was reserved stays; what grew past it goes */
	bad = len > APARTFILE_RESERVE ? ftruncate(fd, APARTFILE_RESERVE) ==
	    -1 || apartfile_pad(fd, 0, APARTFILE_RESERVE) == -1 :
	    apartfile_pad(fd, 0, len) == -1;
	if (bad || fdatasync(fd) == -1)
		log_warn("%s: cannot empty it", path);
	close(fd);
}

/* 1 when [s, s + n) is padding: spaces alone (written by apartfile_create). */
static int
apartfile_padding(const char *s, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		if (s[i] != ' ')
			return 0;
	return 1;
}

void
apartfile_lines(const char *text, size_t len, apartfile_line_fn line,
    void *arg)
{
	const char	*end = text + len, *nl;
	int		 damage;

	for (; text < end; text = nl + 1) {
		damage = 0;
		if ((nl = memchr(text, '\n', (size_t)(end - text))) == NULL) {
			nl = end;
			damage |= APARTFILE_TORN;
		}
		if (apartfile_padding(text, (size_t)(nl - text)))
			continue;
		if (memchr(text, '\0', (size_t)(nl - text)) != NULL)
			damage |= APARTFILE_NUL;
		if (line(text, (size_t)(nl - text), damage, arg) == -1)
			return;
	}
}

const char *
apartfile_damage(int damage)
{
	if (damage & APARTFILE_NUL)
		return "a NUL byte in it";
	if (damage & APARTFILE_TORN)
		return "a last line with no newline";
	return NULL;
}
