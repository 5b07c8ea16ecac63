/* cmd_discard.c: `sandgate discard ID`: remove a sandbox, idempotently. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "docker.h"
#include "sandbox.h"
#include "state.h"

static int	discard_exec(int, char **);

const struct cmd_entry cmd_discard = {
	.name = "discard",
	.usage = "ID...",
	.summary = "remove the sandbox's containers, workspace and state "
	    "(succeeds if it is already gone)",
	.exec = discard_exec,
};

static const struct option discard_longopts[] = {
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
discard_exec(int argc, char **argv)
{
	struct docker	*d;
	char		*cause = NULL;
	int		 ch, i, lock, rv = SG_EXIT_OK;

	opterr = 0;
	optind = 1;
	while ((ch = getopt_long(argc, argv, ":h", discard_longopts,
	    NULL)) != -1) {
		if (ch == 'h')
			return cmd_help(&cmd_discard);
		return cmd_usage_error(&cmd_discard, "unknown option '%s'",
		    argv[optind - 1]);
	}
	if (argc - optind < 1)
		return cmd_usage_error(&cmd_discard, "expected an ID");
	for (i = optind; i < argc; i++) {
		if (state_valid_id(argv[i]) == -1) {
			fprintf(stderr, "sandgate: '%s' is not a sandbox id\n",
			    argv[i]);
			return SG_EXIT_ERROR;
		}
	}
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	for (i = optind; i < argc; i++) {
		/* exclusive: waits for running execs; a missing lock is fine */
		lock = state_lock(argv[i], 1);
		if (lock == -1 && errno != ENOENT)
			fprintf(stderr, "sandgate: warning: cannot lock %s: "
			    "%s\n", argv[i], strerror(errno));
		if (sandbox_destroy(d, argv[i], &cause) == -1) {
			fprintf(stderr, "sandgate: cannot discard %s: %s\n",
			    argv[i], cause);
			free(cause);
			cause = NULL;
			rv = SG_EXIT_ERROR;
		}
		state_unlock(lock);
	}
	docker_free(d);
	return rv;
}
