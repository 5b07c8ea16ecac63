/*
 * workspace.h: a sandbox's copy of a project: the read-only snapshot, its
 * hash manifest and the working copy; the diff between the two and the
 * apply of reviewed changes back to the source tree.
 *
 * Folder layout (see state.h): <sbxdir>/snapshot/ (files 0444, dirs 0555),
 * <sbxdir>/manifest.json, <sbxdir>/work/ (the agent's copy).
 *
 * Paths handed in and out ("relative paths") are relative to the source
 * root, '/'-separated, never empty, never absolute, with no "", "." or ".."
 * component. They are valid UTF-8 (create refuses other names).
 *
 * Every tree walk uses openat/fstatat with O_NOFOLLOW from a directory fd,
 * so a symlink planted anywhere (source, work or host) is never followed.
 * Functions that can fail take a char **cause and set it to a malloc'ed
 * message (lowercase, no full stop) that the caller frees.
 */
#ifndef SG_WORKSPACE_H
#define SG_WORKSPACE_H

#include <sys/stat.h>
#include <sys/types.h>

#include <stddef.h>
#include <stdio.h>

#define WORKSPACE_SHA256_HEX	65	/* 64 hex digits and NUL */

struct workspace_opts {
	/*
	 * fnmatch(3) patterns (flags 0) matched against the relative path and
	 * against the base name of each file and folder; a match leaves the
	 * entry (and everything under a folder) out. Always left out as well:
	 * .git, .venv, node_modules, __pycache__ (any depth) and the state
	 * folder (state_root()) if it lies inside the source.
	 */
	const char *const	*excludes;
	size_t			 nexcludes;
	/* Leave likely secrets out instead of only warning about them. */
	int			 exclude_secrets;
	/* Owner of the work tree; (uid_t)-1 / (gid_t)-1 keep the caller's. */
	uid_t			 uid;
	gid_t			 gid;
	/*
	 * Secret warnings, one line each ("sandgate: warning: copying likely
	 * secret '.env' (...)"); NULL means stderr.
	 */
	FILE			*warnf;
};

/*
 * Copy the tree at src into <sbxdir>/snapshot and <sbxdir>/work and write
 * <sbxdir>/manifest.json. sbxdir must exist; work/ may exist already (a
 * mount point) and must then be empty; snapshot/ must not exist. Refuses
 * symlinks, device files, sockets and FIFOs and names the first one:
 * "refusing to copy symlink 'src/link' (symlinks are never copied)".
 * Returns 0, or -1 with *cause set (the partial copy is left for the
 * caller's cleanup; see workspace_remove()).
 */
int	workspace_create(const char *src, const char *sbxdir,
	    const struct workspace_opts *, char **cause);

/*
 * What one copy out (apply, run --output, export) may write to the host:
 * at most the sandbox's --disk of regular files in all, each counted by
 * the blocks it holds in the sandbox. A hard-linked file is copied out
 * once per name, so it counts once per name: links cannot multiply what
 * leaves the sandbox. Takes st's blocks from *left and returns 0, or
 * returns -1 (*left unchanged) when they do not fit.
 */
int	workspace_budget_take(off_t *left, const struct stat *st);

/*
 * Copy the tree under the folder srcfd into the (empty) folder dstfd:
 * folders and regular files only, never following a link, at any depth,
 * sparse-aware (holes stay holes); a file larger than size_max bytes
 * (holes counted), files past size_max bytes of blocks copied in all
 * (workspace_budget_take()) and special files are left out with a warning
 * line on warnf. Names are kept byte for byte. 0 or -1 with *cause.
 */
int	workspace_copy_tree(int srcfd, int dstfd, off_t size_max,
	    FILE *warnf, char **cause);

/*
 * Remove <sbxdir>/snapshot and the content of <sbxdir>/work (not work
 * itself, which may be a mount point), making read-only folders writable
 * first. Returns 0 or -1 with *cause set.
 */
int	workspace_remove(const char *sbxdir, char **cause);

/* Is this relative path a likely secret (.env, *.pem, id_rsa, ...)? */
int	workspace_is_secret_name(const char *relpath);

/*
 * Check a relative path given by a user: 0 if well-formed (see above),
 * -1 with *why set to a static phrase otherwise.
 */
int	workspace_path_valid(const char *relpath, const char **why);

/* The manifest: one entry per regular file of the snapshot. */
struct workspace_manifest;

struct workspace_file {
	const char	*path;		/* relative path */
	char		 sha256[WORKSPACE_SHA256_HEX];
	mode_t		 mode;		/* permission bits of the source */
	off_t		 size;
};

/* Load <sbxdir>/manifest.json; NULL with *cause set on failure. */
struct workspace_manifest *workspace_manifest_load(const char *sbxdir,
	    char **cause);
void	workspace_manifest_free(struct workspace_manifest *);
size_t	workspace_manifest_count(const struct workspace_manifest *);
/* Entry i in path order (strcmp) or by path; NULL if none. */
const struct workspace_file *workspace_manifest_at(
	    const struct workspace_manifest *, size_t i);
const struct workspace_file *workspace_manifest_find(
	    const struct workspace_manifest *, const char *relpath);
/* The manifest's exclusion rules (create's options) apply to relpath? */
int	workspace_manifest_excluded(const struct workspace_manifest *,
	    const char *relpath, int isdir);

/*
 * A walk of the folder tree under a folder descriptor, in pre-order with
 * the names of each folder sorted (strcmp), never following a link, at
 * any depth and path length with two descriptors open (the folder being
 * read and a copy of the root). A folder's names are read when it is
 * entered; one moved or replaced while it is read stops the walk with an
 * error (never a walk outside the root); an entry removed meanwhile is
 * skipped.
 */
struct workspace_walk;

struct workspace_walk_entry {
	const char	*path;		/* relative path; until the next call */
	size_t		 pathlen;
	const char	*name;		/* last component */
	struct stat	 st;		/* fstatat(AT_SYMLINK_NOFOLLOW) */
	size_t		 depth;		/* 1 for the root's own entries */
	int		 dirfd;		/* the folder holding it; not owned */
};

/* Walk the tree under rootfd (duplicated). NULL with *cause set. */
struct workspace_walk *workspace_walk_new(int rootfd, char **cause);
/*
 * The next entry: 1 with *e set, 0 at the end, -1 with *cause. A folder
 * is entered on the following call unless workspace_walk_prune() is
 * called first.
 */
int	workspace_walk_next(struct workspace_walk *,
	    struct workspace_walk_entry *e, char **cause);
void	workspace_walk_prune(struct workspace_walk *);
void	workspace_walk_free(struct workspace_walk *);

/* One difference between the snapshot and the work tree. */
enum workspace_change {
	WORKSPACE_ADDED,
	WORKSPACE_MODIFIED,
	WORKSPACE_DELETED
};

/* What the work side of a delta is (the snapshot side is a file). */
enum workspace_kind {
	WORKSPACE_FILE,		/* a regular file (or none: deleted) */
	WORKSPACE_SYMLINK,
	WORKSPACE_FIFO,
	WORKSPACE_SOCKET,
	WORKSPACE_DEVICE,
	WORKSPACE_BADNAME,	/* a name that is not valid UTF-8 */
	WORKSPACE_OVERSIZE	/* a file larger than the sandbox's --disk */
};

/* Whether a diff shows a delta's text (set only by a staged diff). */
enum workspace_show {
	WORKSPACE_SHOW_NONE,		/* binary or special: no text */
	WORKSPACE_SHOW_TEXT,		/* its text is shown */
	WORKSPACE_SHOW_TOO_LARGE,	/* a side over SG_DIFF_FILE_MAX bytes
					   or SG_DIFF_LINES_MAX lines */
	WORKSPACE_SHOW_OVER_TOTAL	/* did not fit in the diff's total
					   (--disk) after the smaller ones */
};

struct workspace_delta {
	enum workspace_change	 change;
	enum workspace_kind	 kind;
	char			*path;		/* as in work/, any bytes */
	/* risky_path(path), or an NFC twin of another path (workspace_diff) */
	int			 risky;
	const char		*risky_why;	/* static, or NULL */
	int			 binary;	/* either side is not text */
	/*
	 * Never applied: not a regular file in work/, a name that is not
	 * valid UTF-8, a file larger than the sandbox's --disk.
	 */
	int			 special;
	const char		*special_what;	/* "symlink", ... (static) */
	char			 sha256_before[WORKSPACE_SHA256_HEX]; /* "" if none */
	char			 sha256_after[WORKSPACE_SHA256_HEX];  /* "" if none */
	mode_t			 mode_before, mode_after;
	off_t			 size_before, size_after;
	/* the work file's bytes as hashed, kept for the text (diff only) */
	int			 staged;
	off_t			 stage_off;
	size_t			 stage_len;
	/* whether the text is shown (in the review digest), and its cost */
	enum workspace_show	 show;
	off_t			 show_cost;
};

struct workspace_diff {
	struct workspace_delta	*v;	/* sorted by path */
	size_t			 n;
	/* the review digest over every delta (workspace_review_digest) */
	char			 review[WORKSPACE_SHA256_HEX];
	int			 stagefd;	/* -1 unless staged */
	off_t			 show_cap;	/* bytes of text shown at most */
};

struct workspace_diff_opts {
	/*
	 * Choose which texts are shown (delta.show, at most size_max bytes
	 * written, smallest first: workspace_show.c), then keep the bytes
	 * of each chosen one as they were hashed (read again and checked,
	 * in an unlinked file in the sandbox folder), so that the text
	 * shown later is exactly what the digest covers, whatever changes
	 * in work/ meanwhile.
	 */
	int	  stage;
	/* A file above this many bytes (its size, holes counted) is not read: a WORKSPACE_OVERSIZE delta. */
	off_t	  size_max;
	/* Polled between entries; non-zero stops the diff ("interrupted"). */
	int	(*interrupted)(void);
};

/*
 * Compare <sbxdir>/work with the manifest. Files the manifest's rules
 * exclude stay out. A work file whose inode, size, mtime and ctime still
 * match those recorded at create (and whose ctime is older than the end
 * of create, so no later write can share it) is unchanged without being
 * read; every other file is hashed (holes as zeros, never expanded).
 * Sets the review digest. Returns a diff the caller frees with
 * workspace_diff_free(), or NULL with *cause set (errno E2BIG: more than
 * SG_DIFF_PATHS_MAX changed paths or SG_DIFF_NAMES_MAX bytes of names).
 */
struct workspace_diff *workspace_diff(const char *sbxdir,
	    const struct workspace_manifest *,
	    const struct workspace_diff_opts *, char **cause);
void	workspace_diff_free(struct workspace_diff *);
/* The delta for path, or NULL (binary search). */
const struct workspace_delta *workspace_diff_find(
	    const struct workspace_diff *, const char *path);
/* Sort the deltas by path (strcmp), as workspace_diff_find() needs. */
void	workspace_diff_sort(struct workspace_diff *);

/* How a text delta is shown. */
enum workspace_text {
	WORKSPACE_TEXT_SHOWN,		/* *text holds the unified diff */
	WORKSPACE_TEXT_NONE,		/* binary or special: no text */
	WORKSPACE_TEXT_TOO_LARGE	/* a side over SG_DIFF_FILE_MAX bytes
					   or SG_DIFF_LINES_MAX lines */
};

/*
 * The unified diff of one delta (git's format: "diff --git" header, mode
 * lines, ---/+++ labels with the path quoted as git quotes it, hunks
 * with 3 lines of context), the work side from the staged bytes, the
 * snapshot side checked against the manifest's SHA-256. Control
 * characters and invalid UTF-8 in the lines are shown as \xHH unless
 * raw (*escaped counts them). *text is malloc'ed, *len its length (it
 * may hold any byte with raw). Returns the enum, or -1 with *cause.
 */
int	workspace_delta_text(const char *sbxdir, const struct workspace_diff *,
	    const struct workspace_delta *, int raw, char **text, size_t *len,
	    size_t *escaped, char **cause);

enum workspace_write_flags {
	WORKSPACE_WRITE_JSON = 1 << 0,
	WORKSPACE_WRITE_RAW = 1 << 1	/* control characters as they are */
};

/* What workspace_diff_write() showed, for the notes after it. */
struct workspace_write_stats {
	size_t	escaped;	/* bytes shown as \xHH */
	size_t	too_large;	/* text files summarised: their own size */
	size_t	over_total;	/* text files summarised: the diff's total */
};

/*
 * Write the whole diff to out, one delta at a time (memory is bounded by
 * one file's text). As a patch: the unified text per text file; a
 * "Binary file PATH changed: sha256 A -> B" line per binary file; a
 * "Text file PATH changed: too large to show (...): sha256 A -> B" line
 * per text file over the limits ("not shown (...)" for one past the
 * diff's total, workspace_show.c); a "Special file PATH ..." line per
 * special file; then "review DIGEST" (nothing at all when there is no
 * change). With WORKSPACE_WRITE_JSON: one
 * object {"review":..., "added":[...], "modified":[...],
 * "deleted":[...]} (docs/controller.md lists the fields; names and texts
 * that are not valid UTF-8 are given in base64 beside a quoted form).
 * 0 or -1 with *cause.
 */
int	workspace_diff_write(const char *sbxdir, const struct workspace_diff *,
	    int flags, FILE *out, struct workspace_write_stats *,
	    char **cause);

/*
 * The review digest: SHA-256 over a canonical list of every delta
 * (change, kind, modes, SHA-256 before and after, size after, the path
 * with its length) in path order; 64 hex digits.
 */
void	workspace_review_digest(const struct workspace_diff *,
	    char out[WORKSPACE_SHA256_HEX]);

/*
 * Keep the diff's deltas as review <sbxdir>/reviews/DIGEST.review (mode
 * 0600, written atomically), so that `apply --review DIGEST` can check
 * the working copy against exactly what was shown; only the newest
 * SG_REVIEWS_KEPT reviews are kept. 0 or -1 with *cause.
 */
int	workspace_review_save(const char *sbxdir, const struct workspace_diff *,
	    char **cause);

/* A saved review: what was shown for each path. */
struct workspace_review;

/*
 * Load review DIGEST of the sandbox (64 hex digits; its content must
 * hash to it). NULL with *cause set and errno ENOENT when there is no
 * such review.
 */
struct workspace_review *workspace_review_load(const char *sbxdir,
	    const char *digest, char **cause);
void	workspace_review_free(struct workspace_review *);
size_t	workspace_review_count(const struct workspace_review *);
/* Delta i (path order) or the one for path; NULL if none. */
const struct workspace_delta *workspace_review_at(
	    const struct workspace_review *, size_t i);
const struct workspace_delta *workspace_review_find(
	    const struct workspace_review *, const char *path);
/*
 * Does the current state of a path match what the review showed for
 * it? now is the path's delta in a diff taken now (NULL: unchanged), e
 * the manifest entry (NULL: none). 1 yes, 0 no (*why set to a static
 * phrase).
 */
int	workspace_review_matches(const struct workspace_delta *reviewed,
	    const struct workspace_delta *now,
	    const struct workspace_file *e, const char **why);

/*
 * The "source" of <sbxdir>/meta.json (malloc'ed), or NULL with *cause
 * set.
 */
char	*workspace_meta_source(const char *sbxdir, char **cause);
/*
 * The session container (malloc'ed; NULL when meta.json has none) and
 * the --disk size (0 when meta.json has none) of a sandbox. 0 or -1.
 */
int	workspace_meta_limits(const char *sbxdir, char **container,
	    unsigned long long *disk, char **cause);

/* What happened to one path in an apply. */
enum workspace_apply_result {
	WORKSPACE_APPLY_APPLIED,	/* host file written from work/ */
	WORKSPACE_APPLY_DELETED,	/* host file removed (gone from work/) */
	WORKSPACE_APPLY_UNCHANGED,	/* work/ equals the snapshot */
	WORKSPACE_APPLY_REFUSED,	/* *cause says why; host untouched */
	WORKSPACE_APPLY_FAILED		/* I/O error; *cause says what */
};

/* How one path is applied. */
struct workspace_apply_opts {
	int				 dry_run;	/* say what, write nothing */
	/* Refuse a work file larger than this (the sandbox's --disk). */
	off_t				 size_max;
	/*
	 * What the path must hold: its delta in a review (the bytes'
	 * SHA-256, the mode, or deleted). NULL: what work/ holds when apply
	 * reads it.
	 */
	const struct workspace_delta	*expect;
	/*
	 * What this apply may still write to the host
	 * (workspace_budget_take()), or NULL: no bound.
	 */
	off_t				*budget;
};

/*
 * Apply one relative path from <sbxdir>/work to the source tree at src
 * (the "source" of meta.json): refuses malformed paths, special files in
 * work/, files larger than size_max, host files changed since create (or
 * created on the host where the snapshot had none) and host folders that
 * are not real directories. Writes are atomic (temp file, fsync, renameat),
 * sparse-aware (holes stay holes) and take the work file's permission
 * bits without setuid/setgid/sticky and without group or other write.
 * The bytes are hashed as they are written and the rename happens only if
 * they are the expected ones (the review's, or those apply hashed when it
 * opened the work file): a file changed meanwhile is refused, the host
 * untouched. After a write or delete the manifest entry and snapshot
 * file are updated so the path reads as unchanged; the caller saves with
 * workspace_manifest_save(). With dry_run nothing is written; the result
 * says what would happen.
 *
 * A host file that already holds exactly the work file's bytes (an apply
 * killed between its rename and the manifest save) is recorded as
 * applied without writing it again. Each temp file's name is appended to
 * <sbxdir>/apply.pending before it is created, so that one a killed apply
 * leaves in the source tree can be found again.
 */
enum workspace_apply_result workspace_apply_path(const char *sbxdir,
	    const char *src, struct workspace_manifest *, const char *relpath,
	    const struct workspace_apply_opts *, char **cause);

/* The mode apply gives a host file for a work file's mode. */
mode_t	workspace_apply_mode(mode_t work_mode);

/*
 * Remove the temp files that <sbxdir>/apply.pending names and that still
 * exist in the source tree at src (NULL: the "source" of meta.json; a
 * source folder that is gone has nothing to clean): regular files named
 * .sandgate-apply-* only, reached without following links; then the
 * journal. Run by apply before and after its work, by gc and by discard;
 * the caller holds the sandbox's lock. 0 (with *removed set) or -1 with
 * *cause.
 */
int	workspace_apply_cleanup(const char *sbxdir, const char *src,
	    int *removed, char **cause);

/*
 * An unlinked read-write file in folder dir (O_TMPFILE), for what a
 * command keeps while it works (never the host's /tmp: the sandbox
 * folder). An fd, or -1 with *cause.
 */
int	workspace_tmpfile(const char *dir, char **cause);

/* Write the manifest back to <sbxdir>/manifest.json atomically. 0 or -1. */
int	workspace_manifest_save(const struct workspace_manifest *,
	    const char *sbxdir, char **cause);

#endif
