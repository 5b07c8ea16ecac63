/*
 * cmd.h: the controller's command table, its one parser and exit codes.
 *
 * Each command lives in its own cmd_<name>.c and defines one const struct
 * cmd_entry that declares everything the parser needs: the options it
 * takes, how many operands, whether the first (or every) operand is a
 * sandbox id, and its verbs (`proxy start`, `policy check`, ...), which are
 * cmd_entry structs too. cmd_dispatch() parses argv against that table
 * with getopt_long(3), prints --help, reports a usage error once (exit 2),
 * resolves sandbox ids (an id that names no sandbox exits
 * SG_EXIT_NO_SANDBOX, whatever the command) and only then calls the
 * entry's exec with what it found. Notices go through log.h.
 *
 * Entry points are named cmd_<command>[_<verb>]_exec: cmd_diff_exec,
 * cmd_proxy_start_exec.
 */
#ifndef SG_CMD_H
#define SG_CMD_H

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>

/* Exit codes of sandgate; exec and run pass the command's own through. */
enum sg_exit {
	SG_EXIT_OK = 0,
	SG_EXIT_FAIL = 1,	/* a check failed (policy check, audit verify) */
	SG_EXIT_USAGE = 2,	/* bad flags or arguments */
	SG_EXIT_TIMEOUT = 124,	/* wall-clock timeout */
	SG_EXIT_ERROR = 125,	/* sandgate or Docker error */
	SG_EXIT_REFUSED = 126,	/* refused (apply of a path changed on host) */
	SG_EXIT_KILLED = 137	/* killed by a limit (memory) */
};

/* An id that is malformed or names no sandbox, for every command. */
#define SG_EXIT_NO_SANDBOX	SG_EXIT_ERROR

#define CMD_OPTIONS_MAX	40	/* long options of one command, --help too */
#define CMD_ARGS_MAX	256	/* options given on one command line */

enum cmd_flags {
	CMD_ID = 1 << 0,	/* the first operand is a sandbox id */
	CMD_IDS = 1 << 1,	/* every operand is a sandbox id */
	CMD_ID_GONE_OK = 1 << 2, /* a well-formed id of no sandbox is fine */
	CMD_DASH = 1 << 3	/* "-- CMD..." follows the operands */
};

/* One option as given, in command-line order. */
struct cmd_opt {
	int		 ch;	/* its val in the option table */
	const char	*name;	/* its long name */
	const char	*arg;	/* its value, or NULL */
};

/* What cmd_dispatch() found, for the entry's exec. */
struct cmd_args {
	const struct cmd_entry	*entry;		/* the command or verb run */
	struct cmd_opt		 opts[CMD_ARGS_MAX];
	size_t			 nopts;
	size_t			 next;		/* cmd_args_next()'s cursor */
	int			 argc;		/* operands, without the verb */
	char			**argv;
	char			**cmd;		/* after "--" (CMD_DASH) */
};

struct cmd_entry {
	const char		 *name;
	const char		 *usage;	/* after "sandgate [PARENT] NAME " */
	const char		 *summary;	/* one line, no full stop */
	const char		 *help;		/* more for --help, or NULL */
	/*
	 * The options (NULL-terminated; --help is added). Verbs take their
	 * parent's; accepts, when set, lists the vals a verb allows.
	 */
	const struct option	 *options;
	const struct option	 *options_more;	/* a table shared, or NULL */
	const char		 *shortopts;	/* getopt letters, or NULL */
	const char		 *accepts;
	const char		 *required;	/* vals that must be given */
	int			  args_min;
	int			  args_max;	/* -1: any number */
	int			  flags;	/* enum cmd_flags */
	const struct cmd_entry	*const *verbs;	/* NULL-terminated, or NULL */
	const struct cmd_entry	 *verb_default;	/* when no verb is named */
	const struct cmd_entry	 *parent;	/* set on verbs (of verbs) */
	int			(*exec)(struct cmd_args *);
};

/*
 * Parse argv (argv[0] is the command's name) for c and run it; returns
 * the exit code. Usage errors are reported here, once.
 */
int	cmd_dispatch(const struct cmd_entry *c, int argc, char **argv);

/* The next option given, in order, or NULL after the last. */
const struct cmd_opt *cmd_args_next(struct cmd_args *);

/*
 * Print "sandgate: MESSAGE" and the command's usage line to stderr and
 * return SG_EXIT_USAGE; for what only the command can check.
 */
int	cmd_usage_error(const struct cmd_entry *, const char *fmt, ...)
	    __attribute__((format(printf, 2, 3)));

/* "COMMAND VERB..." of c into buf (size bytes); returns buf. */
const char *cmd_full(const struct cmd_entry *c, char *buf, size_t size);

/*
 * Log msg, text a sandbox may have written (a path in a cause), with its
 * unsafe bytes escaped (quote_text_dup()): "sandgate: MSG".
 */
void	cmd_warn_text(const char *msg);

/* Print every command's name and summary (sandgate --help). */
void	cmd_list_print(FILE *, const struct cmd_entry *const *);

/* The options create and run both take (sandbox_opt() names). */
extern const struct option cmd_sandbox_options[];
#define CMD_SANDBOX_OPT	0x100	/* their val */

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
extern const struct cmd_entry cmd_pending;
extern const struct cmd_entry cmd_grant;
extern const struct cmd_entry cmd_revoke;
extern const struct cmd_entry cmd_grants;
extern const struct cmd_entry cmd_audit;
extern const struct cmd_entry cmd_proxy;
extern const struct cmd_entry cmd_secret;
extern const struct cmd_entry cmd_image;

#endif
