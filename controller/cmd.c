/*
 * cmd.c: the one parser of the sandgate command line (see cmd.h): option
 * tables to getopt_long(3), verbs, operand counts, sandbox ids, --help and
 * usage errors.
 */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cmd.h"
#include "log.h"
#include "quote.h"
#include "state.h"

const struct option cmd_sandbox_options[] = {
	{ "image", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "cpus", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "memory", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "pids", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "disk", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "tmp-size", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "timeout", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "runtime", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "network", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "allow", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "env", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 }
};

static void	cmd_table(const struct cmd_entry *, struct option *, char *,
		    size_t);
static const char *cmd_long_name(const struct option *, int);
static int	cmd_bad_option(const struct cmd_entry *, int, int, char **);
static int	cmd_parse(const struct cmd_entry *, int, char **,
		    struct cmd_args *, int *);
static const struct cmd_entry *cmd_verb_find(const struct cmd_entry *,
		    struct cmd_args *);
static int	cmd_verb_error(const struct cmd_entry *,
		    const struct cmd_args *);
static int	cmd_check(const struct cmd_entry *, const struct cmd_args *);
static int	cmd_resolve(const struct cmd_entry *, const struct cmd_args *);
static int	cmd_help(const struct cmd_entry *);
static void	cmd_usage_line(FILE *, const struct cmd_entry *);
static void	cmd_name(FILE *, const struct cmd_entry *);
static const struct cmd_entry *cmd_root(const struct cmd_entry *);
static const struct cmd_entry *cmd_verb_run(const struct cmd_entry *,
		    struct cmd_args *, int);
static void	cmd_wrap(FILE *, const char *);

/* c's options, the shared ones and --help into opts; getopt letters in s. */
static void
cmd_table(const struct cmd_entry *c, struct option *opts, char *s,
    size_t size)
{
	const struct option	*t[2] = { c->options, c->options_more };
	size_t			 n = 0, i, j;

	for (i = 0; i < 2; i++) {
		for (j = 0; t[i] != NULL && t[i][j].name != NULL; j++) {
			if (n == CMD_OPTIONS_MAX - 2)
				fatalx("command %s: too many options", c->name);
			opts[n++] = t[i][j];
		}
	}
	opts[n++] = (struct option){ "help", no_argument, NULL, 'h' };
	opts[n] = (struct option){ NULL, 0, NULL, 0 };
	/* ':' first: a missing value is told from an unknown option */
	snprintf(s, size, ":h%s", c->shortopts != NULL ? c->shortopts : "");
}

/* The long name of the option whose val is ch, for a short option. */
static const char *
cmd_long_name(const struct option *opts, int ch)
{
	for (; opts->name != NULL; opts++)
		if (opts->val == ch)
			return opts->name;
	return NULL;
}

/*
 * The one message for an option getopt_long refused, with the usage of
 * the verb named on the line if there is one.
 */
static int
cmd_bad_option(const struct cmd_entry *c, int ch, int argc, char **argv)
{
	const char	*given = argv[optind - 1];
	char		 shortopt[3] = { '-', (char)optopt, '\0' };
	int		 i, j;

	for (i = 1; c->verbs != NULL && i < argc; i++) {
		for (j = 0; c->verbs[j] != NULL; j++) {
			if (strcmp(argv[i], c->verbs[j]->name) == 0) {
				c = c->verbs[j];
				break;
			}
		}
	}

	if (strncmp(given, "--", 2) != 0 && optopt > 0 && optopt < 128)
		given = shortopt;
	if (ch == ':')
		return cmd_usage_error(c, "option '%s' needs a value", given);
	return cmd_usage_error(c, "unknown option '%s'", given);
}

/*
 * Every option of argv (up to "--" for CMD_DASH) into a, in order, and the
 * operands; *help is set by --help. 0, or SG_EXIT_USAGE (reported).
 */
static int
cmd_parse(const struct cmd_entry *c, int argc, char **argv,
    struct cmd_args *a, int *help)
{
	struct option	opts[CMD_OPTIONS_MAX];
	char		letters[64];
	int		ch, idx = -1, end = argc;

	if (c->flags & CMD_DASH) {
		for (end = 1; end < argc && strcmp(argv[end], "--") != 0; end++)
			;
		a->cmd = end < argc ? argv + end + 1 : NULL;
	}
	cmd_table(c, opts, letters, sizeof(letters));
	optind = 0;
	opterr = 0;
	/* GNU getopt permutes: options may come before or after operands */
	while ((ch = getopt_long(end, argv, letters, opts, &idx)) != -1) {
		if (ch == '?' || ch == ':')
			return cmd_bad_option(c, ch, end, argv);
		if (ch == 'h')
			*help = 1;
		else if (a->nopts == CMD_ARGS_MAX)
			return cmd_usage_error(c, "more than %d options",
			    CMD_ARGS_MAX);
		else {
			a->opts[a->nopts].ch = ch;
			a->opts[a->nopts].name = idx >= 0 ? opts[idx].name :
			    cmd_long_name(opts, ch);
			a->opts[a->nopts++].arg = optarg;
		}
		idx = -1;
	}
	a->argc = end - optind;
	a->argv = argv + optind;
	return 0;
}

/* The verb the first operand names (taken off the operands), or NULL. */
static const struct cmd_entry *
cmd_verb_find(const struct cmd_entry *c, struct cmd_args *a)
{
	size_t	i;

	if (a->argc == 0)
		return NULL;
	for (i = 0; c->verbs[i] != NULL; i++) {
		if (strcmp(a->argv[0], c->verbs[i]->name) == 0) {
			a->argc--;
			a->argv++;
			return c->verbs[i];
		}
	}
	return NULL;
}

/* No verb, or one c does not have. */
static int
cmd_verb_error(const struct cmd_entry *c, const struct cmd_args *a)
{
	char	want[256];
	size_t	i, len = 0;

	want[0] = '\0';
	for (i = 0; c->verbs[i] != NULL && len < sizeof(want); i++)
		len += (size_t)snprintf(want + len, sizeof(want) - len, "%s%s",
		    i > 0 ? ", " : "", c->verbs[i]->name);
	if (a->argc == 0 || a->argv[0][0] == '\0')
		return cmd_usage_error(c, "missing subcommand (want %s)", want);
	return cmd_usage_error(c, "unknown subcommand '%s' (want %s)",
	    a->argv[0], want);
}

/* What the table says of c: the options a verb takes, operand counts. */
static int
cmd_check(const struct cmd_entry *c, const struct cmd_args *a)
{
	char	full[128];
	size_t	i, j;

	for (i = 0; c->accepts != NULL && i < a->nopts; i++) {
		if (a->opts[i].ch > 0 && a->opts[i].ch < 128 &&
		    strchr(c->accepts, a->opts[i].ch) != NULL)
			continue;
		return cmd_usage_error(c, "'%s' takes no --%s", cmd_full(c,
		    full, sizeof(full)), a->opts[i].name);
	}
	for (i = 0; c->required != NULL && c->required[i] != '\0'; i++) {
		for (j = 0; j < a->nopts; j++)
			if (a->opts[j].ch == c->required[i])
				break;
		if (j == a->nopts)
			return cmd_usage_error(c, "--%s is required",
			    cmd_long_name(cmd_root(c)->options, c->required[i]));
	}
	if (a->argc < c->args_min)
		return cmd_usage_error(c, "missing argument");
	if (c->args_max >= 0 && a->argc > c->args_max)
		return cmd_usage_error(c, "unexpected argument '%s'%s",
		    a->argv[c->args_max], c->flags & CMD_DASH ? " (the "
		    "command goes after --)" : "");
	if ((c->flags & CMD_DASH) && (a->cmd == NULL || a->cmd[0] == NULL))
		return cmd_usage_error(c, "no command after --");
	return 0;
}

/*
 * The sandbox ids among the operands must name sandboxes: a malformed id
 * or one with no state folder is reported here, the same for every command.
 */
static int
cmd_resolve(const struct cmd_entry *c, const struct cmd_args *a)
{
	struct stat	 st;
	char		 path[PATH_MAX], *q;
	int		 i, n;

	n = c->flags & CMD_IDS ? a->argc : c->flags & CMD_ID ? 1 : 0;
	for (i = 0; i < n && i < a->argc; i++) {
		if (state_valid_id(a->argv[i]) == 0 &&
		    ((c->flags & CMD_ID_GONE_OK) || (state_path(path,
		    sizeof(path), a->argv[i], NULL) == 0 && stat(path,
		    &st) == 0 && S_ISDIR(st.st_mode))))
			continue;
		q = quote_path_dup(a->argv[i]);
		log_warnx("no sandbox '%s'", q != NULL ? q : "?");
		free(q);
		return SG_EXIT_NO_SANDBOX;
	}
	return 0;
}

/* The command a verb belongs to, at the top. */
static const struct cmd_entry *
cmd_root(const struct cmd_entry *c)
{
	while (c->parent != NULL)
		c = c->parent;
	return c;
}

/* "COMMAND [VERB...]" */
static void
cmd_name(FILE *f, const struct cmd_entry *c)
{
	if (c->parent != NULL) {
		cmd_name(f, c->parent);
		fputc(' ', f);
	}
	fputs(c->name, f);
}

/* "sandgate COMMAND [VERB...] USAGE" */
static void
cmd_usage_line(FILE *f, const struct cmd_entry *c)
{
	fputs("usage: sandgate ", f);
	cmd_name(f, c);
	fprintf(f, " %s\n", c->usage);
}

const char *
cmd_full(const struct cmd_entry *c, char *buf, size_t size)
{
	FILE	*f;

	buf[0] = '\0';
	if ((f = fmemopen(buf, size, "w")) != NULL) {
		cmd_name(f, c);
		fclose(f);
	}
	return buf;
}

/*
 * text filled to 79 columns: a newline is a space, a blank line (two
 * newlines) starts a paragraph.
 */
static void
cmd_wrap(FILE *f, const char *text)
{
	const char	*p = text, *end;
	size_t		 col = 0, len;

	while (*p != '\0') {
		if (p[0] == '\n' && p[1] == '\n') {
			fputs("\n\n", f);
			col = 0;
			p += 2;
			continue;
		}
		if (*p == ' ' || *p == '\n') {
			p++;
			continue;
		}
		end = p + strcspn(p, " \n");
		len = (size_t)(end - p);
		if (col > 0 && col + 1 + len > 79) {
			fputc('\n', f);
			col = 0;
		} else if (col > 0) {
			fputc(' ', f);
			col++;
		}
		fwrite(p, 1, len, f);
		col += len;
		p = end;
	}
	fputc('\n', f);
}

/* --help: usage, the summary, the longer text and the verbs; exit 0. */
static int
cmd_help(const struct cmd_entry *c)
{
	cmd_usage_line(stdout, c);
	printf("\n%s\n", c->summary);
	if (c->help != NULL) {
		putchar('\n');
		cmd_wrap(stdout, c->help);
	}
	if (c->verbs != NULL) {
		printf("\nsubcommands:\n");
		cmd_list_print(stdout, c->verbs);
		fputs("\n'sandgate ", stdout);
		cmd_name(stdout, c);
		fputs(" SUBCOMMAND --help' describes one.\n", stdout);
	}
	return SG_EXIT_OK;
}

void
cmd_list_print(FILE *f, const struct cmd_entry *const *v)
{
	for (; *v != NULL; v++)
		fprintf(f, "  %-9s %s\n", (*v)->name, (*v)->summary);
}

void
cmd_warn_text(const char *msg)
{
	char	*q;

	q = quote_text_dup(msg);
	log_warnx("%s", q != NULL ? q : "(out of memory)");
	free(q);
}

int
cmd_usage_error(const struct cmd_entry *c, const char *fmt, ...)
{
	char	msg[1024];
	va_list	ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	log_warnx("%s", msg);
	cmd_usage_line(stderr, c);
	return SG_EXIT_USAGE;
}

const struct cmd_opt *
cmd_args_next(struct cmd_args *a)
{
	if (a->next >= a->nopts)
		return NULL;
	return &a->opts[a->next++];
}

/*
 * The verb (of a verb...) the operands name, taken off them; with help,
 * the deepest one named. NULL after --help or a usage error, printed.
 */
static const struct cmd_entry *
cmd_verb_run(const struct cmd_entry *c, struct cmd_args *a, int help)
{
	const struct cmd_entry	*v;

	while (c->verbs != NULL) {
		if ((v = cmd_verb_find(c, a)) == NULL)
			v = help ? NULL : c->verb_default;
		if (v == NULL && help) {
			cmd_help(c);
			return NULL;
		}
		if (v == NULL) {
			cmd_verb_error(c, a);
			return NULL;
		}
		c = v;
	}
	return c;
}

int
cmd_dispatch(const struct cmd_entry *c, int argc, char **argv)
{
	struct cmd_args		 a;
	const struct cmd_entry	*run = c;
	int			 help = 0, rc;

	memset(&a, 0, sizeof(a));
	if ((rc = cmd_parse(c, argc, argv, &a, &help)) != 0)
		return rc;
	if (c->verbs != NULL && (run = cmd_verb_run(c, &a, help)) == NULL)
		return help ? SG_EXIT_OK : SG_EXIT_USAGE;
	if (help)
		return cmd_help(run);
	a.entry = run;
	if ((rc = cmd_check(run, &a)) != 0 || (rc = cmd_resolve(run,
	    &a)) != 0)
		return rc;
	return run->exec(&a);
}
