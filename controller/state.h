/*
 * state.h: where the controller keeps its state and logs, and the per-
 * sandbox lock.
 *
 * Layout under state_root():
 *   sandboxes/<id>/meta.json      what create decided (see sandbox.h)
 *   sandboxes/<id>/snapshot/      read-only copy of the source at create
 *   sandboxes/<id>/manifest.json  SHA-256, mode and size of each snapshot file
 *   sandboxes/<id>/disk.img       the working copy's size-limited filesystem
 *   sandboxes/<id>/work/          its mount point, bind-mounted at /workspace
 *   sandboxes/<id>/runs/          evidence: full output of each exec, and
 *                                 <run>.active while a run goes on
 *   sandboxes/<id>/etc/           passwd and group naming the sandbox's uid
 *   sandboxes/<id>/lock           flock(2) target
 *   create.lock                   the gate between a new folder and its lock
 *   owed.lock                     held while a kept send is read, sent and
 *                                 rewritten (owed.h)
 *   records/runs.jsonl            the run records (state_record_dir)
 *   keys/, proxy/keys/            checkpoint keys of the logs (auditkey.h)
 *   probe/                        the probe as sandboxes mount it, 0711
 *                                 (probe_mount_path)
 */
#ifndef SG_STATE_H
#define SG_STATE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define STATE_ID_LEN	28	/* "sbx_" + 24 hex digits */

/*
 * The state root: $SANDGATE_STATE, else /var/lib/sandgate for root, else
 * $XDG_STATE_HOME/sandgate or ~/.local/state/sandgate. Static storage.
 * The first call makes it (0700) if missing and stops sandgate (fatalx)
 * when another uid could change it or a folder above it
 * (state_dir_private; a folder above may be others' to write if sticky).
 */
const char	*state_root(void);
/*
 * The proxy's log folder (security-events.jsonl): $SANDGATE_LOG_DIR, else
 * the compiled default. `sandgate proxy start` hands it to the proxy's
 * uid; the controller only reads it, through state_open_in().
 */
const char	*state_log_dir(void);
/*
 * The controller's records folder (runs.jsonl): $SANDGATE_RECORD_DIR,
 * else state_root()/records; root's alone (0750), never the proxy's.
 */
const char	*state_record_dir(void);
/*
 * Open name (one path component) in the folder dir, never through a
 * symlink (openat with O_NOFOLLOW and O_CLOEXEC added to flags): how the
 * controller opens files in folders another uid can write. fd or -1.
 */
int		 state_open_in(const char *dir, const char *name, int flags,
		    int mode);
/* The policy folder: $SANDGATE_POLICY_DIR, else the compiled default. */
const char	*state_policy_dir(void);

/* Fill buf with state_root()/sandboxes/<id>[/<sub>]; -1 if it won't fit. */
int		 state_path(char *buf, size_t size, const char *id,
		    const char *sub);

/* A new random sandbox id "sbx_<24 hex>" into id[STATE_ID_LEN + 1]. */
void		 state_new_id(char *id, const char *prefix);

/*
 * Check an id given by a user: "sbx_" and 24 lowercase hex digits, so that
 * it can never name a path outside the state root. Returns 0 or -1.
 */
int		 state_valid_id(const char *id);

/*
 * Create <sandbox>/lock for a sandbox being made (create, run) and hold
 * it exclusively until this process exits (on purpose: no unlock), so
 * that gc leaves the folder alone while it is built and may clean it up
 * as soon as a kill ends the process. 0, or -1 with errno.
 */
int		 state_lock_new(const char *id);

/*
 * Make the sandbox's folder (and the state root) and take its new lock
 * as state_lock_new() does, both under the create gate held shared, so
 * that no other process ever sees the folder without its lock file
 * unless the process making it died. 0, or -1 with errno.
 */
int		 state_make_locked(const char *id);

/*
 * Take the create gate: shared while a folder and its lock are made
 * (state_make_locked), exclusive by gc, which then knows that a folder
 * still without a lock file was left by a process that died. Blocks
 * (shared holders hold it for two system calls). An fd for
 * state_unlock(), or -1 with errno.
 */
int		 state_gate(int exclusive);

/*
 * Take the lock file name in the state root (made, and the root, when
 * missing); blocks. An fd for state_unlock(), or -1 with errno.
 */
int		 state_lock_root(const char *name, int exclusive);

/*
 * Take the sandbox's lock (exclusive or shared); blocks. Returns an fd to
 * pass to state_unlock(), or -1 with errno set (ENOENT: no such sandbox).
 */
int		 state_lock(const char *id, int exclusive);
/*
 * state_lock, waiting as util_flock_wait does: until until_us (0: no
 * bound; one already past tries once) or until stop says to end. -1 with
 * errno ETIMEDOUT or EINTR then.
 */
int		 state_lock_wait(const char *id, int exclusive, uint64_t until_us,
		    int (*stop)(void));
void		 state_unlock(int fd);

/* mkdir -p with the given mode; returns 0 or -1. */
int		 state_mkdirs(const char *path, int mode);
/*
 * 0 when path is a folder only this uid (or root) may change: its owner
 * is one of them, no group or other write bit, not a link; -1 and errno
 * EPERM otherwise (or lstat's errno).
 */
int		 state_dir_private(const char *path);
/*
 * path (a buffer of size), as given: made (mode) if missing, resolved
 * into path, and checked as the state root is (state_root): a folder
 * owned by this uid or root, writable by no one else, as every folder
 * above it is (unless sticky), and so is what is on the way as given.
 * Else sandgate stops (fatalx) naming what and the folder.
 */
void		 state_private_dir(char *path, size_t size, int mode,
		    const char *what);
/*
 * Each entry of dir (and of dir/sub, when there): owned by this uid or
 * root, writable by no one else, no link unless links; else sandgate
 * stops (fatalx) naming what and the entry.
 */
void		 state_entries_check(const char *dir, const char *sub,
		    int links, const char *what);
/*
 * json_load_file of a file sandgate keeps (meta.json, manifest.json):
 * never through a link, only a regular file of this uid or root that no
 * one else may write and that has no other name (a hard link of another
 * uid's file planted while a folder was open: atk44c E1, E2). NULL with
 * err->text and errno (EPERM for such a file) otherwise.
 */
json_t		*state_json_load(const char *path, size_t flags,
		    json_error_t *err);
/*
 * path opened read-only as state_json_load takes it (no link, a regular
 * file of this uid or root, writable by no one else, no other name): the
 * descriptor, or -1 with errno (EPERM for such a file) and why (size
 * bytes) saying what was wrong.
 */
int		 state_open_private(const char *path, char *why, size_t size);

/*
 * path replaced by text whole (mode): written to a hidden file beside it
 * (".NAME.tmp.PID", made with O_EXCL, so nothing put at path or at that
 * name is opened or followed), synced, renamed over path, the folder
 * synced. A kill or a full volume leaves path as it was, never torn. 0,
 * or -1 with errno.
 */
int		 state_replace(const char *path, const char *text, int mode);

/*
 * path made to hold text whole as state_replace() does, but only when
 * nothing is there: -1 with EEXIST when something is (it is left as it
 * is, never replaced). 0, or -1 with errno.
 */
int		 state_create(const char *path, const char *text, int mode);

#endif
