/* unregpend.c: the unregisters the proxy still owes (unregpend.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "execend.h"
#include "log.h"
#include "owed.h"
#include "proxyctl.h"
#include "runrec.h"
#include "unregpend.h"

static int	unregpend_send(const char *, const char *, const char *,
		    char **, char **);
static void	unregpend_confirmed(const char *, const char *);

static const struct owed unregpend = {
	"unregister", "sbx_", unregpend_send, unregpend_confirmed
};

static int
unregpend_send(const char *id, const char *subject, const char *to,
    char **left, char **why)
{
	(void)subject;
	return proxyctl_unregister(id, to, left, why);
}

static void
unregpend_confirmed(const char *id, const char *subject)
{
	char	*c2 = NULL;

	(void)subject;
	/* it ended every credential of it there: their ends are moot */
	execend_drop(id);
	if (runrec_event("sandbox.unregistered", id, "the unregister kept "
	    "when the sandbox was removed is confirmed by each proxy "
	    "replica that had not taken it", &c2) == -1) {
		log_warnx("warning: run record not written: %s", c2);
		free(c2);
	}
}

int
unregpend_path(char *buf, size_t size, const char *id)
{
	return owed_path(&unregpend, buf, size, id);
}

int
unregpend_add(const char *id, const char *to, const char *why,
    char **cause)
{
	return owed_add(&unregpend, id, id, to, why, cause);
}

char *
unregpend_to(const char *id)
{
	return owed_to(&unregpend, id);
}

int
unregpend_done(const char *id)
{
	return owed_done(&unregpend, id);
}

struct unregpend_arg {
	unregpend_cb	 cb;
	void		*arg;
};

static void
unregpend_each(const char *id, const char *subject, const char *why,
    void *arg)
{
	struct unregpend_arg	*ua = arg;

	(void)subject;
	ua->cb(id, why, ua->arg);
}

int
unregpend_retry(int dry, unregpend_cb cb, void *arg)
{
	struct unregpend_arg	ua = { cb, arg };

	return owed_retry(&unregpend, NULL, dry, unregpend_each, &ua);
}

void
unregpend_report(const char *id, const char *why, void *arg)
{
	(void)arg;
	if (why == NULL)
		printf("unregistered %s from the proxy (owed since it was "
		    "removed)\n", id);
	else
		log_warnx("warning: the unregister of %s (removed) is still "
		    "owed: %s", id, why);
}
