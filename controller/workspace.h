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

/* One difference between the snapshot and the work tree. */
enum workspace_change {
	WORKSPACE_ADDED,
	WORKSPACE_MODIFIED,
	WORKSPACE_DELETED
};

struct workspace_delta {
	enum workspace_change	 change;
	char			*path;
	int			 risky;		/* risky_path(path) */
	int			 binary;	/* either side is not text */
	/*
	 * Not a regular file in work/ (symlink, FIFO, ...; never applied)
	 * or a name that is not valid UTF-8 (path then shows U+FFFD).
	 */
	int			 special;
	const char		*special_what;	/* "symlink", ... (static) */
	char			 sha256_before[WORKSPACE_SHA256_HEX]; /* "" if none */
	char			 sha256_after[WORKSPACE_SHA256_HEX];  /* "" if none */
	mode_t			 mode_before, mode_after;
};

struct workspace_diff {
	struct workspace_delta	*v;	/* sorted by path */
	size_t			 n;
};

/*
 * Compare <sbxdir>/work with the manifest. Files the manifest's rules
 * exclude stay out. A work file whose inode, size, mtime and ctime still
 * match those recorded at create (and whose ctime is older than the end
 * of create, so no later write can share it) is unchanged without being
 * read; every other file of the manifest's size is hashed.
 * Returns a diff the caller frees with workspace_diff_free(), or NULL
 * with *cause set.
 */
struct workspace_diff *workspace_diff(const char *sbxdir,
	    const struct workspace_manifest *, char **cause);
void	workspace_diff_free(struct workspace_diff *);

/*
 * The unified diff of one text delta, from `git diff --no-index` on the
 * snapshot and work files with the labels rewritten to a/PATH and b/PATH.
 * *text is malloc'ed ("" for binary or special deltas). 0 or -1.
 */
int	workspace_delta_text(const char *sbxdir,
	    const struct workspace_delta *, char **text, char **cause);

/*
 * Write the whole diff to out: as a patch (git's unified text per text
 * file; a "Binary file PATH changed: sha256 A -> B" line per binary file;
 * a "Special file PATH ..." line for special files), or with json as one
 * object {"added":[...],"modified":[...],"deleted":[...]}, each element
 * with path, risky, risky_reason, binary, special, sha256_before,
 * sha256_after, mode_before, mode_after and diff (the text). 0 or -1.
 */
int	workspace_diff_write(const char *sbxdir, const struct workspace_diff *,
	    int json, FILE *out, char **cause);

/*
 * The "source" of <sbxdir>/meta.json (malloc'ed), or NULL with *cause
 * set.
 */
char	*workspace_meta_source(const char *sbxdir, char **cause);

/* What happened to one path in an apply. */
enum workspace_apply_result {
	WORKSPACE_APPLY_APPLIED,	/* host file written from work/ */
	WORKSPACE_APPLY_DELETED,	/* host file removed (gone from work/) */
	WORKSPACE_APPLY_UNCHANGED,	/* work/ equals the snapshot */
	WORKSPACE_APPLY_REFUSED,	/* *cause says why; host untouched */
	WORKSPACE_APPLY_FAILED		/* I/O error; *cause says what */
};

/*
 * Apply one relative path from <sbxdir>/work to the source tree at src
 * (the "source" of meta.json): refuses malformed paths, special files in
 * work/, host files changed since create (or created on the host where
 * the snapshot had none) and host folders that are not real directories.
 * Writes are atomic (temp file, fsync, renameat) and keep the work file's
 * permission bits minus setuid/setgid/sticky. After a write or delete the
 * manifest entry and snapshot file are updated so the path reads as
 * unchanged; the caller saves with workspace_manifest_save(). With
 * dry_run nothing is written; the result says what would happen.
 *
 * A host file that already holds exactly the work file's bytes (an apply
 * killed between its rename and the manifest save) is recorded as
 * applied without writing it again. Each temp file's name is appended to
 * <sbxdir>/apply.pending before it is created, so that one a killed apply
 * leaves in the source tree can be found again.
 */
enum workspace_apply_result workspace_apply_path(const char *sbxdir,
	    const char *src, struct workspace_manifest *, const char *relpath,
	    int dry_run, char **cause);

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

/* Write the manifest back to <sbxdir>/manifest.json atomically. 0 or -1. */
int	workspace_manifest_save(const struct workspace_manifest *,
	    const char *sbxdir, char **cause);

#endif
