/*
 * cmd.h: the controller's subcommand table and exit codes.
 *
 * Each subcommand lives in its own cmd_<name>.c and defines one
 * const struct cmd_entry. main.c dispatches on argv[1]; the entry's exec
 * gets argc/argv with argv[0] the subcommand name, parses its own options
 * with getopt_long, and returns the process exit code.
 */
#ifndef SG_CMD_H
#define SG_CMD_H

/* Exit codes of sandgate (DESIGN.md); a command's own code passes through. */
enum sg_exit {
	SG_EXIT_OK = 0,
	SG_EXIT_FAIL = 1,	/* a check failed (policy check, audit verify) */
	SG_EXIT_USAGE = 2,	/* bad flags or arguments */
	SG_EXIT_TIMEOUT = 124,	/* wall-clock timeout */
	SG_EXIT_ERROR = 125,	/* sandgate or Docker error */
	SG_EXIT_REFUSED = 126,	/* refused (apply of a path changed on host) */
	SG_EXIT_KILLED = 137	/* killed by a limit (memory) */
};

struct cmd_entry {
	const char	*name;
	const char	*usage;		/* after "sandgate NAME " */
	const char	*summary;	/* one line for `sandgate --help` */
	int		(*exec)(int argc, char **argv);
};

/*
 * Print "sandgate: MESSAGE" and the command's usage line to stderr and
 * return SG_EXIT_USAGE; for option errors in a command's exec.
 */
int	cmd_usage_error(const struct cmd_entry *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));
/* Print the usage line and summary to stdout; returns 0 (for --help). */
int	cmd_help(const struct cmd_entry *);

extern const struct cmd_entry cmd_create;
extern const struct cmd_entry cmd_exec;
extern const struct cmd_entry cmd_diff;
extern const struct cmd_entry cmd_apply;
extern const struct cmd_entry cmd_export;
extern const struct cmd_entry cmd_discard;
extern const struct cmd_entry cmd_list;
extern const struct cmd_entry cmd_gc;
extern const struct cmd_entry cmd_run;
extern const struct cmd_entry cmd_doctor;
extern const struct cmd_entry cmd_policy;
extern const struct cmd_entry cmd_audit;
extern const struct cmd_entry cmd_proxy;
extern const struct cmd_entry cmd_image;

#endif
