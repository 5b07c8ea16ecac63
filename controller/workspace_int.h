/*
 * workspace_int.h: what the workspace_*.c files share; not for other
 * modules (they use workspace.h).
 */
#ifndef SG_WORKSPACE_INT_H
#define SG_WORKSPACE_INT_H

#include <sys/stat.h>

#include <openssl/evp.h>

#include "workspace.h"

#define WS_BUF_SIZE	(256 * 1024)	/* read/copy buffer */
#define WS_SMALL_FILE	(1024 * 1024)	/* copied with one read pass */
#define WS_NO_LIMIT	((off_t)(~0ull >> 1))	/* no size limit */

/* A manifest entry with the work file's stat recorded at create. */
struct ws_entry {
	struct workspace_file	 f;		/* f.path points to path */
	char			*path;
	int			 stat_ok;	/* the w* fields are valid */
	ino_t			 wino;
	long long		 wmtime;	/* ns since the epoch */
	long long		 wctime;
};

struct workspace_manifest {
	struct ws_entry	*v;
	size_t		 n, cap;
	char		**excludes;
	size_t		 nexcludes;
	int		 exclude_secrets;
	long long	 cutoff;	/* ns; work ctimes >= it are racy */
};

/* Manifest building (workspace.c). */
struct workspace_manifest *ws_manifest_new(const struct workspace_opts *);
struct ws_entry	*ws_manifest_add(struct workspace_manifest *,
		    const char *path);
void		 ws_manifest_sort(struct workspace_manifest *);
struct ws_entry	*ws_manifest_lookup(const struct workspace_manifest *,
		    const char *path);
int		 ws_manifest_remove(struct workspace_manifest *,
		    const char *path);

/* Is a folder or file name one of the always-excluded ones? */
int		 ws_default_excluded(const char *base);
/* Apply the rules of opts-like fields to relpath/base. */
int		 ws_pattern_excluded(char *const *pats, size_t npats,
		    const char *relpath, const char *base);
/* Is s valid UTF-8 (no NUL)? */
int		 ws_utf8_valid(const char *s);

/* Hashing. */
EVP_MD_CTX	*ws_sha_new(void);
void		 ws_sha_hex(EVP_MD_CTX *, char out[WORKSPACE_SHA256_HEX]);
/*
 * Hash an open regular file from offset 0 (ws_sparse_copy without an
 * output); 0 or -1 (errno; EFBIG past max bytes).
 */
int		 ws_sha_fd(int fd, char out[WORKSPACE_SHA256_HEX], off_t max,
		    unsigned char *buf, size_t bufsz);
/*
 * Read the regular file in from offset 0 to the size it has now, its
 * holes (SEEK_HOLE) as zeros: every byte into h (may be NULL) and, with
 * out != -1, the data to out at the same offsets with the holes left
 * unwritten, then out truncated to the size read; so a sparse file stays
 * sparse and costs its data, not its size. A file larger than max bytes
 * is refused before anything is read (errno EFBIG); one that shrinks
 * meanwhile ends where it ends. *size (may be NULL) gets the bytes read.
 * With left (may be NULL), each data range is charged to *left as it is
 * read, before it is written: what the file holds when it is copied, not
 * when it was opened or walked, counts; past *left nothing more is
 * written (errno EDQUOT). 0 or -1 (errno).
 */
int		 ws_sparse_copy(int in, int out, EVP_MD_CTX *h, off_t max,
		    off_t *left, unsigned char *buf, size_t bufsz,
		    off_t *size);

/*
 * Open relpath under the directory rootfd, each folder with
 * O_NOFOLLOW|O_DIRECTORY and the last component with flags|O_NOFOLLOW.
 * Returns an fd or -1 with errno (ELOOP for a symlink, ENOTDIR for a
 * non-folder on the way).
 */
int		 ws_open_beneath(int rootfd, const char *relpath, int flags);
/*
 * Open the folder that holds relpath's last component (as above) and
 * point *base at that component inside relpath. -1 with errno.
 */
int		 ws_open_parent(int rootfd, const char *relpath,
		    const char **base);

/* Does the buffer look binary (a NUL in the first 8000 bytes)? */
int		 ws_is_binary(const unsigned char *, size_t);

/*
 * The show budget (workspace_show.c). A side's cost: the most bytes its
 * text takes in the patch or the JSON, its lines and size.
 */
struct ws_show_cost {
	off_t		bytes;		/* escaped: the patch, JSON text */
	off_t		raw;		/* unescaped, for the JSON's base64 */
	size_t		lines;
	off_t		size;
	unsigned char	last;
	unsigned char	need, lo, hi;	/* UTF-8: continuation bytes due */
	unsigned char	bad;		/* not valid UTF-8 */
};
void		 ws_show_cost_add(struct ws_show_cost *,
		    const unsigned char *, size_t);
/*
 * The snapshot side of relpath into c: 0, 1 when it is larger than
 * SG_DIFF_FILE_MAX (not all counted), -1 (errno) when it cannot be opened.
 */
int		 ws_show_snap_cost(int snapfd, const char *relpath,
		    struct ws_show_cost *c, unsigned char *buf, size_t bufsz);
/*
 * A text delta with sides a and b (zeroed when a side is absent): too
 * large (lines) or to be shown, with its cost.
 */
void		 ws_show_set(struct workspace_delta *, const struct ws_show_cost *a,
		    const struct ws_show_cost *b);
/*
 * Choose, smallest cost first, the text deltas shown within cap bytes;
 * the rest WORKSPACE_SHOW_OVER_TOTAL. 0 or -1 (no memory).
 */
int		 ws_show_choose(struct workspace_diff *, off_t cap);

/* Timespec to ns since the epoch. */
long long	 ws_ns(const struct timespec *);


#endif
