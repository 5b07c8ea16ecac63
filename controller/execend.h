/*
 * execend.h: the ends of exec credentials the proxy still owes. When an
 * exec or run ends, its credential and token are ended with POST
 * /execs/end on every proxy replica; a replica that did not answer 200
 * (down, restarting, refused) would keep accepting them, with the run's
 * attribution and its --exec grants, until the token expires (a
 * credential: until the sandbox is unregistered). Such an end is said on
 * stderr naming the replicas, written as a sandbox.exec_end_pending run
 * record and kept in state_root()/execend/RUN (owed.h: the sandbox, why).
 * The sandbox's next exec or run (before its own begins), `sandgate gc`
 * and `proxy start` send it again until every replica confirms it (then
 * a sandbox.exec_ended record); discard drops it once the sandbox's
 * unregister (which ends every credential of it) is confirmed by those
 * replicas too.
 */
#ifndef SG_EXECEND_H
#define SG_EXECEND_H

#include "owed.h"

/*
 * End run's credential (an exec of sandbox; what: NULL, or how the run
 * ended, for the warning) on the replicas the sandbox is registered
 * with (repset.h) and those of the environment. 0 when each confirmed
 * it, -1 when it is owed to those that did not (said, kept and
 * recorded).
 */
int	execend_send(const char *sandbox, const char *run, const char *what);

/*
 * The ends kept for sandbox (NULL: every sandbox) sent again (none with
 * dry); cb gets each (owed.h). The number still owed.
 */
int	execend_retry(const char *sandbox, int dry, owed_cb cb, void *arg);

/* The ends kept for sandbox, forgotten unsent (it is unregistered). */
void	execend_drop(const char *sandbox);

/*
 * The replicas the ends kept for sandbox are owed to (owed_to), heap or
 * NULL: its unregister goes to them too before they are dropped.
 */
char	*execend_to(const char *sandbox);

/* An owed_cb that warns of each end still owed (says nothing else). */
void	execend_warn(const char *run, const char *sandbox, const char *why,
	    void *arg);

/* An owed_cb that prints each end done and warns of each still owed. */
void	execend_report(const char *run, const char *sandbox, const char *why,
	    void *arg);

#endif
