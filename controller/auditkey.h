/*
 * auditkey.h: where the keys that sign the two logs' checkpoints live
 * (checkpoint.h), and the controller's own signer for runs.jsonl.
 *
 *   security-events.jsonl  written by the proxy (uid 65532 in its
 *                          container): state_root()/proxy/keys/
 *                          checkpoint.key, folder 0700 and key 0600 owned
 *                          by that uid, mounted into the proxy container
 *                          at AUDITKEY_PROXY_MOUNT and nowhere else
 *   runs.jsonl             written by every sandgate exec/run:
 *                          state_root()/keys/runs.key, owned by the user
 *                          running sandgate, folder 0700
 *
 * Neither folder is a log folder, so whoever can write a log (the proxy
 * can write the controller's log folder, a shipper, a backup) cannot read
 * the key that vouches for the other's lines. KEY.pub beside each key is
 * for copying out: a verifier trusts a copy kept where the writer cannot
 * change it (docs/audit.md).
 */
#ifndef SG_AUDITKEY_H
#define SG_AUDITKEY_H

#include <sys/types.h>

struct checkpoint;
struct eventlog;

#define AUDITKEY_PROXY_MOUNT	"/etc/sandgate/keys"
#define AUDITKEY_PROXY_NAME	"checkpoint.key"
#define AUDITKEY_RUNS_NAME	"runs.key"
/*
 * The key that signs sandbox tokens (token.h): state_root()/keys/
 * token.key, the controller's alone (the proxy verifies with
 * token.key.pub and never holds it).
 */
#define AUDITKEY_TOKEN_NAME	"token.key"

/*
 * The default key of log file `logname` (security-events.jsonl or
 * runs.jsonl) into buf; -1 for another name or a path too long.
 */
int	 auditkey_path(const char *logname, char *buf, size_t size);

/* The owner the key of logname gets: the proxy's uid for its log (as root). */
uid_t	 auditkey_owner(const char *logname);

/*
 * Make the key's folder (0700, owner) and a key pair if there is none.
 * Refuses a key folder in logdir (unless NULL) or below it, and a key
 * folder that is a symlink: the folder is opened with O_NOFOLLOW and
 * its mode, owner and files are set through that descriptor. Returns 1
 * when a key was made, 0 when one existed, -1 with *cause.
 */
int	 auditkey_ensure(const char *path, uid_t owner, const char *logdir,
	    char **cause);

/*
 * `sandgate proxy start`: make the proxy's key (folder and key owned by
 * its uid) if it has none, refusing a key folder in the proxy's log
 * folder logdir, and say where its public key is. 0 or -1.
 */
int	 auditkey_prepare_proxy(const char *logdir, char **cause);

/*
 * `sandgate proxy start`: make the token key pair (owned by the user
 * running sandgate, folder 0700) if there is none, refusing one in the
 * proxy's log folder logdir; its path into buf. 0 or -1.
 */
int	 auditkey_prepare_token(const char *logdir, char *buf, size_t size,
	    char **cause);

/*
 * The controller's writers of runs.jsonl exclude each other on the key's
 * lock (runs.key.lock), outside the records folder, taken exclusive
 * before the log is opened and held until after its signer is freed:
 * makes the key on first use. The lock's fd, or -1 with *cause set.
 */
int	 auditkey_runs_lock(char **cause);

/*
 * The controller's signer for runs.jsonl (opened shared and excluded,
 * under auditkey_runs_lock()). NULL after a warning on stderr when it
 * cannot: the record is then written unsigned only while runs.jsonl has
 * no anchor yet (`audit verify --key` reports it); past an anchor it is
 * not written but counted lost (auditkey_runs_anchored()).
 */
struct checkpoint *auditkey_runs_signer(struct eventlog *);

/*
 * 1 if runs.jsonl has an anchor (runs.key.anchor exists, whatever it
 * holds): a record its signer cannot sign must not go in unsigned, where
 * the records folder's writer could cut it without a trace.
 */
int	 auditkey_runs_anchored(void);

/*
 * A record that could not be put in runs.jsonl at all (why): counted lost
 * in the anchor, under auditkey_runs_lock(), so that the next record is
 * preceded by a log.outage line and `audit verify --anchor` reports it
 * meanwhile. Warns on stderr when it cannot.
 */
void	 auditkey_runs_lost(const char *why);

/*
 * Read the run records' key ahead of the record (checkpoint_key_warm),
 * without its lock: while a command starts, so that the record after it
 * does not wait for the key's parse and OpenSSL's start (about 1.7 ms).
 */
void	 auditkey_runs_warm(void);

/* Sign the records written (a close checkpoint) and free; accepts NULL. */
void	 auditkey_runs_close(struct checkpoint *);

/*
 * `sandgate audit key VERB [PATH]` for log file logname (whose default key
 * PATH is) in the log folder logdir, where no key may be. The key's
 * owner is owner, or by default the writer's: the
 * default key's (auditkey_owner()), the key rotated from, else ours:
 *   create  a new key pair, PATH and PATH.pub
 *   rotate  a new key at PATH.next, which the old key introduces: the
 *           controller does so at once for runs.jsonl, the proxy at its
 *           next checkpoint
 *   show    the key id and public key of PATH (and of a waiting next key)
 * Prints what it did and returns an exit code (cmd.h).
 */
int	 auditkey_command(const char *verb, const char *path,
	    const char *logname, const char *logdir, long long owner);

#endif
