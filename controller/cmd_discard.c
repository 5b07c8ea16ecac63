/* cmd_discard.c: `sandgate discard ID`: remove a sandbox, idempotently. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "docker.h"
#include "log.h"
#include "sandbox.h"
#include "state.h"
#include "unregpend.h"

static int	cmd_discard_exec(struct cmd_args *);

const struct cmd_entry cmd_discard = {
	.name = "discard",
	.usage = "ID...",
	.summary = "remove sandboxes: their containers, workspace and state",
	.help = "Succeeds for an id whose sandbox is already gone; an id that "
	    "is not of the form\nsbx_ and 24 hex digits exits 125 before "
	    "anything is removed. When a proxy\nreplica does not confirm the "
	    "unregister (unreachable, refused, or not saved),\nthe sandbox "
	    "is removed anyway, the unregister is kept in\n"
	    "$SANDGATE_STATE/unregister/ID to be sent again (by gc, the next "
	    "discard and\nproxy start) and discard exits 125.",
	.args_min = 1,
	.args_max = -1,
	.flags = CMD_IDS | CMD_ID_GONE_OK,
	.exec = cmd_discard_exec,
};

static int
cmd_discard_exec(struct cmd_args *args)
{
	struct docker	*d;
	char		*cause = NULL;
	int		 i, lock, rv = SG_EXIT_OK;

	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	/* those owed by earlier removals: this contact may be the one */
	(void)unregpend_retry(0, unregpend_report, NULL);
	for (i = 0; i < args->argc; i++) {
		/* exclusive: waits for running execs; a missing lock is fine */
		lock = state_lock(args->argv[i], 1);
		if (lock == -1 && errno != ENOENT)
			log_warnx("warning: cannot lock %s: "
			    "%s", args->argv[i], strerror(errno));
		switch (sandbox_destroy(d, args->argv[i], &cause)) {
		case 0:
			break;
		case SANDBOX_UNREGISTER_OWED:
			log_warnx("%s is removed here, but %s", args->argv[i],
			    cause);
			rv = SG_EXIT_ERROR;
			break;
		default:
			log_warnx("cannot discard %s: %s",
			    args->argv[i], cause);
			rv = SG_EXIT_ERROR;
			break;
		}
		free(cause);
		cause = NULL;
		state_unlock(lock);
	}
	docker_free(d);
	return rv;
}
