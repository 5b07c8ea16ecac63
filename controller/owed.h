/*
 * owed.h: sends to the proxy that a replica did not confirm and that are
 * kept until every replica does. One folder under state_root() per kind
 * (unregister/: a removed sandbox's POST /unregister, unregpend.h;
 * execend/: a finished exec's POST /execs/end, execend.h), one file per
 * owed send (0600, in a 0700 folder), named by its id ("<prefix>" and
 * 24 hex digits), holding three lines: its subject (the sandbox it is
 * about), "to " and the replicas that have not confirmed it (names as
 * proxyctl_set() gives them, comma-separated; at most 32 and 16 KiB of
 * them, more go on in files of their own beside it, so the line is
 * always read whole: one cut where it is read is not read, atk1921n F2),
 * and why it is owed. It is
 * sent again to those replicas (and those of the environment: it can
 * add, not remove, atk1921h F3) and each is cleared only by its own
 * confirmation. A file of two lines (kept by an older sandgate) names
 * no replicas: the environment's get it. A file of one line is the
 * reason alone: its subject is its name. A file that is not a regular
 * one, or cannot be read, is said and left alone (counted as owed).
 *
 * Only a command that holds owed.lock (and whose lock is still the file
 * at that name) removes or rewrites a kept send; one without it only
 * adds: at the id's name when nothing is there, else at "ID.add_" and
 * 24 hex digits, a send of its own (atk1921l F4). One that holds it
 * removes or rewrites only a kept file it read under it (owed_to, or
 * read to send again): one at the name it did not read stays, and its
 * own send is added beside it (atk1921m F1); each file read is held open
 * until the lock is let go, so no other file gets its inode number
 * meanwhile (atk1921n F1). A command sends kept
 * sends again for 20 s at most; the rest stay kept, said (atk1921k F2).
 */
#ifndef SG_OWED_H
#define SG_OWED_H

#include <stddef.h>

struct owed {
	const char	*folder;	/* under state_root() */
	const char	*prefix;	/* of the ids: "sbx_", "run_" */
	/*
	 * send it again to the replicas of to (NULL: the environment's;
	 * those of the environment always): 0 when each confirmed, else -1
	 * with *why, and *left (heap) the replicas that did not
	 */
	int		(*send)(const char *id, const char *subject,
			    const char *to, char **left, char **why);
	/* when confirmed at last (the run record), or NULL */
	void		(*confirmed)(const char *id, const char *subject);
};

/*
 * Called by owed_retry for each owed send it looked at: why NULL when
 * every replica confirmed it now (it is forgotten), else why it is
 * still owed (it stays).
 */
typedef void	(*owed_cb)(const char *id, const char *subject,
		    const char *why, void *arg);

/*
 * Hold the lock of every kept send (state_root()/owed.lock; blocks) until
 * as many owed_unlock() calls: a command that reads whom a send is owed
 * to, sends it and then keeps or forgets it holds it throughout, so that
 * no other command's kept send is lost in between (atk1921j F3). The
 * functions below take it themselves. A lock that cannot be taken is
 * said and gone without.
 */
void	owed_lock(void);
void	owed_unlock(void);

/* Fill buf with the file of id; -1 if it won't fit. */
int	owed_path(const struct owed *, char *buf, size_t size, const char *id);

/*
 * Keep id (about subject; owed to the replicas of to, NULL: whichever
 * the environment names; why it is owed). 0, or -1 with *cause.
 */
int	owed_add(const struct owed *, const char *id, const char *subject,
	    const char *to, const char *why, char **cause);

/*
 * id is confirmed: forget it (none kept is fine; without the lock, or
 * when this command did not read it under the lock by owed_to, it stays,
 * said). -1 when the one kept cannot be read: it stays, said, never
 * removed unread (atk1921k F5).
 */
int	owed_done(const struct owed *, const char *id);

/*
 * Every kept send (only those about subject, unless it is NULL) sent
 * again (none with dry: cb gets each with why "not sent (--dry-run)").
 * The number still owed.
 */
int	owed_retry(const struct owed *, const char *subject, int dry,
	    owed_cb cb, void *arg);

/*
 * Forget every kept send about subject, unsent (it is moot): those read
 * by owed_to under the lock held; any other stays, sent again later.
 */
void	owed_drop(const struct owed *, const char *subject);

/*
 * The replicas the kept sends about subject are owed to, comma-separated
 * (heap; NULL when none is kept).
 */
char	*owed_to(const struct owed *, const char *subject);

#endif
