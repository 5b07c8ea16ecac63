/* execend.c: the exec credential ends the proxy still owes (execend.h). */
#include <stdio.h>
#include <stdlib.h>

#include "execend.h"
#include "log.h"
#include "owed.h"
#include "proxyctl.h"
#include "repset.h"
#include "runrec.h"
#include "util.h"

static int	execend_again(const char *, const char *, const char *,
		    char **, char **);
static void	execend_confirmed(const char *, const char *);

static const struct owed execend = {
	"execend", "run_", execend_again, execend_confirmed
};

/* An owed.h send: run's end again (the warning is the caller's). */
static int
execend_again(const char *run, const char *sandbox, const char *to,
    char **left, char **why)
{
	(void)sandbox;
	return proxyctl_exec_end(run, to, left, why);
}

static void
execend_event(const char *event, const char *sandbox, const char *detail)
{
	char	*cause = NULL;

	if (runrec_event(event, sandbox, detail, &cause) == -1) {
		log_warnx("warning: run record not written: %s", cause);
		free(cause);
	}
}

static void
execend_confirmed(const char *run, const char *sandbox)
{
	char	*detail;

	util_xasprintf(&detail, "the end of the proxy credential of %s, "
	    "kept since a replica did not take it, is confirmed by each "
	    "replica that had not taken it", run);
	execend_event("sandbox.exec_ended", sandbox, detail);
	free(detail);
}

int
execend_send(const char *sandbox, const char *run, const char *what)
{
	char	*why = NULL, *c2 = NULL, *detail, *left = NULL, *bad;
	char	*to = repset_load(sandbox, &bad);
	int	 rc = proxyctl_exec_end(run, to, &left, &why);

	free(to);
	rc = repset_unknown(bad, rc, &left, &why);
	if (rc == 0)
		return 0;
	log_warnx("warning: not every proxy replica took the end of the "
	    "proxy credential of %s%s%s (it still lets it through there): "
	    "%s; kept, sent again at the sandbox's next exec, gc and proxy "
	    "start", run, what ? ", " : "", what ? what : "", why);
	if (owed_add(&execend, run, sandbox, left, why, &c2) == -1) {
		log_warnx("warning: the end of %s is not kept: %s", run, c2);
		free(c2);
	}
	free(left);
	util_xasprintf(&detail, "%s: %s", run, why);
	execend_event("sandbox.exec_end_pending", sandbox, detail);
	free(detail);
	free(why);
	return -1;
}

int
execend_retry(const char *sandbox, int dry, owed_cb cb, void *arg)
{
	return owed_retry(&execend, sandbox, dry, cb, arg);
}

void
execend_drop(const char *sandbox)
{
	owed_drop(&execend, sandbox);
}

void
execend_warn(const char *run, const char *sandbox, const char *why,
    void *arg)
{
	(void)arg;
	if (why != NULL)
		log_warnx("warning: the end of the proxy credential of %s "
		    "(%s) is still owed: %s", run, sandbox, why);
}

void
execend_report(const char *run, const char *sandbox, const char *why,
    void *arg)
{
	(void)arg;
	if (why == NULL)
		printf("ended the proxy credential of %s (%s), owed since a "
		    "replica did not take it\n", run, sandbox);
	else
		execend_warn(run, sandbox, why, arg);
}

char *
execend_to(const char *sandbox)
{
	return owed_to(&execend, sandbox);
}
