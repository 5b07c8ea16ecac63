/*
 * owed.h: sends to the proxy that a replica did not confirm and that are
 * kept until every replica does. One folder under state_root() per kind
 * (unregister/: a removed sandbox's POST /unregister, unregpend.h;
 * execend/: a finished exec's POST /execs/end, execend.h), one file per
 * owed send (0600, in a 0700 folder), named by its id ("<prefix>" and
 * 24 hex digits), holding two lines: its subject (the sandbox it is
 * about) and why it is owed. A file of one line (an unregister kept by
 * an older sandgate) is the reason alone: its subject is its name.
 */
#ifndef SG_OWED_H
#define SG_OWED_H

#include <stddef.h>

struct owed {
	const char	*folder;	/* under state_root() */
	const char	*prefix;	/* of the ids: "sbx_", "run_" */
	/* send it again: 0 when every replica confirmed, else -1 + *why */
	int		(*send)(const char *id, const char *subject,
			    char **why);
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

/* Fill buf with the file of id; -1 if it won't fit. */
int	owed_path(const struct owed *, char *buf, size_t size, const char *id);

/* Keep id (about subject; why it is owed). 0, or -1 with *cause. */
int	owed_add(const struct owed *, const char *id, const char *subject,
	    const char *why, char **cause);

/* id is confirmed: forget it (none kept is fine). */
void	owed_done(const struct owed *, const char *id);

/*
 * Every kept send (only those about subject, unless it is NULL) sent
 * again (none with dry: cb gets each with why "not sent (--dry-run)").
 * The number still owed.
 */
int	owed_retry(const struct owed *, const char *subject, int dry,
	    owed_cb cb, void *arg);

/* Forget every kept send about subject, unsent (it is moot). */
void	owed_drop(const struct owed *, const char *subject);

#endif
