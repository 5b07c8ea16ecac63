/*
 * workspace_walk.c: walk a folder tree of any depth and path length with
 * a constant number of open descriptors; see workspace.h.
 *
 * Only the folder being read is open. Its names are read in one go when
 * it is entered (and sorted), so descending closes it; coming back up
 * opens ".." and checks that it is the folder the walk came from (device
 * and inode), else opens the folder again from the root component by
 * component, never following a link. A folder moved while it is read is
 * an error, never a walk into somewhere else.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sglimits.h"
#include "workspace.h"
#include "util.h"
#include "workspace_int.h"

/* One folder on the way down: its sorted names and where we are. */
struct walk_frame {
	char		*arena;		/* the names, NUL-separated */
	char		**names;
	size_t		 n, next;
	dev_t		 dev;
	ino_t		 ino;
	size_t		 pathlen;	/* length of the folder's own path */
	size_t		 held;		/* bytes allocated for the listing */
};

struct workspace_walk {
	struct walk_frame	*fr;
	size_t			 nfr, capfr;
	size_t			 held;		/* bytes of all frames' listings */
	int			 rootfd;
	int			 fd;		/* the folder of the top frame */
	char			*path;
	size_t			 pathcap;
	int			 pending;	/* descend into the last entry */
	const char		*pname;
	struct stat		 pst;
	size_t			 plen;
};

static int	walk_read(int, struct walk_frame *, size_t);
static int	walk_name_cmp(const void *, const void *);
static int	walk_push(struct workspace_walk *, int, const struct stat *,
		    size_t, char **);
static int	walk_up(struct workspace_walk *, char **);
static int	walk_descend(struct workspace_walk *, char **);
static int	walk_path(struct workspace_walk *, size_t, const char *);
static void	walk_frame_free(struct walk_frame *);

static int
walk_name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * Read every name of the folder fd (not closed) into f, sorted, in at
 * most room bytes (f->held): past it errno E2BIG.
 */
static int
walk_read(int fd, struct walk_frame *f, size_t room)
{
	struct dirent	*de;
	size_t		 len = 0, cap = 0, n = 0, i, l;
	char		*nb, *p;
	DIR		*d;
	int		 dfd, saved;

	if ((dfd = dup(fd)) == -1)
		return -1;
	if ((d = fdopendir(dfd)) == NULL) {
		close(dfd);
		return -1;
	}
	rewinddir(d);
	for (;;) {
		errno = 0;
		if ((de = readdir(d)) == NULL)
			break;
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0)
			continue;
		l = strlen(de->d_name) + 1;
		if (len + l > cap) {
			cap = cap ? cap * 2 : 256;
			while (cap < len + l)
				cap *= 2;
			if (cap + (n + 2) * sizeof(char *) > room) {
				errno = E2BIG;
				break;
			}
			if ((nb = realloc(f->arena, cap)) == NULL)
				break;
			f->arena = nb;
		}
		memcpy(f->arena + len, de->d_name, l);
		len += l;
		n++;
	}
	saved = errno;
	closedir(d);
	if (saved != 0 || (de != NULL))
		return (errno = saved ? saved : ENOMEM, -1);
	if (cap + (n + 1) * sizeof(char *) > room)
		return (errno = E2BIG, -1);
	if ((f->names = calloc(n + 1, sizeof(char *))) == NULL)
		return -1;
	f->held = cap + (n + 1) * sizeof(char *);
	for (i = 0, p = f->arena; i < n; i++, p += strlen(p) + 1)
		f->names[i] = p;
	f->n = n;
	if (n > 1)
		qsort(f->names, n, sizeof(char *), walk_name_cmp);
	return 0;
}

static void
walk_frame_free(struct walk_frame *f)
{
	free(f->arena);
	free(f->names);
	memset(f, 0, sizeof(*f));
}

/* Push the folder fd (the new current one) with its stat. */
static int
walk_push(struct workspace_walk *w, int fd, const struct stat *st,
    size_t pathlen, char **cause)
{
	struct walk_frame	*nv, *f;
	size_t			 ncap;

	if (w->nfr == w->capfr) {
		ncap = w->capfr ? w->capfr * 2 : 32;
		if ((nv = reallocarray(w->fr, ncap, sizeof(*nv))) == NULL)
			return util_cause(cause, "out of memory");
		w->fr = nv;
		w->capfr = ncap;
	}
	f = &w->fr[w->nfr];
	memset(f, 0, sizeof(*f));
	f->dev = st->st_dev;
	f->ino = st->st_ino;
	f->pathlen = pathlen;
	if (walk_read(fd, f, SG_WALK_NAMES_MAX - w->held) == -1) {
		walk_frame_free(f);
		if (errno == E2BIG)
			return util_cause(cause, "cannot read folder '%s': "
			    "the folders on its path hold more than %u bytes "
			    "of names: sandgate does not read that much (remove "
			    "what need not be brought out, or discard the "
			    "sandbox)", pathlen ? w->path : ".",
			    SG_WALK_NAMES_MAX);
		return util_cause(cause, "cannot read folder '%s': %s",
		    pathlen ? w->path : ".", strerror(errno));
	}
	w->held += f->held;
	w->nfr++;
	if (w->fd != -1)
		close(w->fd);
	w->fd = fd;
	return 0;
}

/* path[0..len) + "/" + name (or name alone at the root). */
static int
walk_path(struct workspace_walk *w, size_t len, const char *name)
{
	size_t	n = strlen(name), need = len + 1 + n + 1;
	char	*np;

	if (need > w->pathcap) {
		if ((np = realloc(w->path, need * 2)) == NULL)
			return -1;
		w->path = np;
		w->pathcap = need * 2;
	}
	if (len > 0)
		w->path[len++] = '/';
	memcpy(w->path + len, name, n + 1);
	return 0;
}

/* Enter the folder returned last (w->pname). */
static int
walk_descend(struct workspace_walk *w, char **cause)
{
	struct stat	st;
	int		fd;

	/* the entry's path is still in w->path, w->plen bytes */
	w->path[w->plen] = '\0';
	fd = openat(w->fd, w->pname, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC);
	if (fd == -1) {
		if (errno == ENOENT)
			return 0;	/* gone since it was listed */
		return util_cause(cause, "cannot open folder '%s': %s",
		    w->path, errno == ELOOP || errno == ENOTDIR ?
		    "it was replaced while it was read" : strerror(errno));
	}
	if (fstat(fd, &st) == -1 || st.st_dev != w->pst.st_dev ||
	    st.st_ino != w->pst.st_ino) {
		close(fd);
		return util_cause(cause,
		    "folder '%s' was replaced while it was "
		    "read", w->path);
	}
	return walk_push(w, fd, &st, w->plen, cause);
}

/* Leave the top frame for its parent, checking it is the same folder. */
static int
walk_up(struct workspace_walk *w, char **cause)
{
	struct walk_frame	*p;
	struct stat		 st;
	int			 fd;

	w->held -= w->fr[w->nfr - 1].held;
	walk_frame_free(&w->fr[--w->nfr]);
	p = &w->fr[w->nfr - 1];
	fd = openat(w->fd, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd != -1 && (fstat(fd, &st) == -1 || st.st_dev != p->dev ||
	    st.st_ino != p->ino)) {
		close(fd);
		fd = -1;
	}
	if (fd == -1) {
		/* moved: open it again from the root, by name */
		w->path[p->pathlen] = '\0';
		fd = p->pathlen == 0 ? dup(w->rootfd) :
		    ws_open_beneath(w->rootfd, w->path, O_RDONLY | O_DIRECTORY);
		if (fd == -1 || fstat(fd, &st) == -1 || st.st_dev != p->dev ||
		    st.st_ino != p->ino) {
			if (fd != -1)
				close(fd);
			return util_cause(cause,
			    "folder '%s' was moved while it "
			    "was read", p->pathlen ? w->path : ".");
		}
	}
	close(w->fd);
	w->fd = fd;
	return 0;
}

struct workspace_walk *
workspace_walk_new(int rootfd, char **cause)
{
	struct workspace_walk	*w;
	struct stat		 st;
	int			 fd;

	if ((w = calloc(1, sizeof(*w))) == NULL) {
		util_cause(cause, "out of memory");
		return NULL;
	}
	w->fd = w->rootfd = -1;
	if ((w->path = malloc(256)) == NULL) {
		free(w);
		util_cause(cause, "out of memory");
		return NULL;
	}
	w->pathcap = 256;
	w->path[0] = '\0';
	if ((w->rootfd = dup(rootfd)) == -1 ||
	    (fd = dup(rootfd)) == -1 || fstat(fd, &st) == -1) {
		util_cause(cause, "cannot open the folder to walk: %s",
		    strerror(errno));
		workspace_walk_free(w);
		return NULL;
	}
	if (walk_push(w, fd, &st, 0, cause) == -1) {
		close(fd);
		workspace_walk_free(w);
		return NULL;
	}
	return w;
}

void
workspace_walk_free(struct workspace_walk *w)
{
	size_t	i;

	if (w == NULL)
		return;
	for (i = 0; i < w->nfr; i++)
		walk_frame_free(&w->fr[i]);
	free(w->fr);
	if (w->fd != -1)
		close(w->fd);
	if (w->rootfd != -1)
		close(w->rootfd);
	free(w->path);
	free(w);
}

void
workspace_walk_prune(struct workspace_walk *w)
{
	w->pending = 0;
}

int
workspace_walk_next(struct workspace_walk *w, struct workspace_walk_entry *e,
    char **cause)
{
	struct walk_frame	*f;
	const char		*name;

	if (w->pending) {
		w->pending = 0;
		if (walk_descend(w, cause) == -1)
			return -1;
	}
	for (;;) {
		f = &w->fr[w->nfr - 1];
		if (f->next == f->n) {
			if (w->nfr == 1)
				return 0;
			if (walk_up(w, cause) == -1)
				return -1;
			continue;
		}
		name = f->names[f->next++];
		if (walk_path(w, f->pathlen, name) == -1)
			return util_cause(cause, "out of memory");
		if (fstatat(w->fd, name, &e->st, AT_SYMLINK_NOFOLLOW) == -1) {
			if (errno == ENOENT)
				continue;	/* removed meanwhile */
			return util_cause(cause, "cannot stat '%s': %s",
			    w->path, strerror(errno));
		}
		e->path = w->path;
		e->pathlen = strlen(w->path);
		e->name = name;
		e->depth = w->nfr;
		e->dirfd = w->fd;
		if (S_ISDIR(e->st.st_mode)) {
			w->pending = 1;
			w->pname = name;
			w->pst = e->st;
			w->plen = e->pathlen;
		}
		return 1;
	}
}
