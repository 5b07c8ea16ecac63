/*
 * unregpend.h: the unregisters the proxy still owes. When `discard` (or
 * another removal through sandbox_destroy) removes a sandbox whose POST
 * /unregister a proxy replica did not confirm (unreachable, refused, or
 * answered saved: false), the sandbox goes here anyway and its
 * unregister is kept in state_root()/unregister/ID (owed.h: the sandbox
 * and the reason, 0600, in a 0700 folder): the replica that did not take it still lets the
 * sandbox's token (and address) through, now or after its restart.
 * `sandgate gc`, every `discard` and `proxy start` send each kept
 * unregister again to the replicas that have not confirmed it (owed.h)
 * until each of them does, and then forget it and the ends of its exec
 * credentials still kept (execend.h).
 */
#ifndef SG_UNREGPEND_H
#define SG_UNREGPEND_H

#include <stddef.h>

/* Fill buf with the file of id's unregister; -1 if it won't fit. */
int	unregpend_path(char *buf, size_t size, const char *id);

/*
 * Keep id's unregister (owed to the replicas of to, NULL: the
 * environment's; why). 0, or -1 with *cause.
 */
int	unregpend_add(const char *id, const char *to, const char *why,
	    char **cause);

/*
 * The replicas id's kept unregister is still owed to, comma-separated
 * (heap; NULL when none is kept, or it is owed to the environment's).
 */
char	*unregpend_to(const char *id);

/*
 * id's unregister is confirmed: forget it (none kept is fine). -1 when
 * the one kept cannot be read: it stays, said (owed_done()).
 */
int	unregpend_done(const char *id);

/*
 * Called by unregpend_retry for each kept unregister: why NULL when
 * every replica confirmed it now (it is forgotten), else why it is still
 * owed (it stays).
 */
typedef void	(*unregpend_cb)(const char *id, const char *why, void *arg);

/*
 * Every kept unregister sent again (none with dry: cb gets each with
 * why "not sent (--dry-run)"). The number still owed.
 */
int	unregpend_retry(int dry, unregpend_cb cb, void *arg);

/* An unregpend_cb that prints each done and warns of each still owed. */
void	unregpend_report(const char *id, const char *why, void *arg);

#endif
