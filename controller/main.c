/* main.c: the sandgate CLI: global options, then dispatch to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "cmd.h"
#include "log.h"

static const struct cmd_entry *const main_cmds[] = {
	&cmd_create, &cmd_exec, &cmd_diff, &cmd_apply, &cmd_export,
	&cmd_discard, &cmd_list, &cmd_gc, &cmd_run, &cmd_doctor,
	&cmd_policy, &cmd_pending, &cmd_grant, &cmd_revoke, &cmd_grants,
	&cmd_audit, &cmd_proxy, &cmd_secret, &cmd_image, NULL
};

static void	main_usage(FILE *);

static void
main_usage(FILE *f)
{
	fputs("usage: sandgate COMMAND [OPTIONS] [ARGS]\n\n"
	    "Runs an agent's commands in a hardened, network-filtered Docker "
	    "sandbox over\na copy of a project, and applies reviewed changes "
	    "back.\n\ncommands:\n", f);
	cmd_list_print(f, main_cmds);
	fputs("\n'sandgate COMMAND --help' describes one command.\n\n"
	    "exit codes: the command's own code passes through for exec and "
	    "run;\n  0 success, 1 a check failed, 2 usage error, 124 timed "
	    "out,\n  125 sandgate or Docker error (and an id that names no "
	    "sandbox),\n  126 refused by policy, 137 killed by a limit\n\n"
	    "environment: SANDGATE_STATE (state folder), SANDGATE_LOG_DIR,\n"
	    "  SANDGATE_POLICY_DIR, DOCKER_HOST (default "
	    "unix:///var/run/docker.sock)\n", f);
}

int
main(int argc, char **argv)
{
	size_t	i;

	log_init("sandgate", 0);
	log_set_fatal_exit(SG_EXIT_ERROR);
	if (argc < 2) {
		main_usage(stderr);
		return SG_EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		main_usage(stdout);
		return SG_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("sandgate %s\n", SANDGATE_VERSION);
		return SG_EXIT_OK;
	}
	for (i = 0; main_cmds[i] != NULL; i++) {
		if (strcmp(argv[1], main_cmds[i]->name) == 0)
			return cmd_dispatch(main_cmds[i], argc - 1, argv + 1);
	}
	log_warnx("unknown %s '%s'", argv[1][0] == '-' ? "option" : "command",
	    argv[1]);
	fputs("run 'sandgate --help' for the list of commands\n", stderr);
	return SG_EXIT_USAGE;
}
