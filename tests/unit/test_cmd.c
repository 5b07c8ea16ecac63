/* test_cmd.c: the command-line parser (controller/cmd.c) on a table of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "cmd.h"
#include "state.h"
#include "util.h"

#define T_ID	"sbx_0123456789abcdef01234567"	/* made in setup */
#define T_GONE	"sbx_000000000000000000000000"	/* never made */
#define T_RAN	42				/* what t_exec returns */

static struct cmd_args	t_last;
static int		t_runs;

static int
t_exec(struct cmd_args *a)
{
	t_last = *a;
	t_runs++;
	return T_RAN;
}

static const struct option t_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "out", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 }
};

static const struct cmd_entry t_leaf = {
	.name = "leaf", .usage = "[--json] [--out F] ID", .summary = "leaf",
	.options = t_options, .shortopts = "o:", .args_min = 1,
	.args_max = 1, .flags = CMD_ID, .exec = t_exec,
};

static const struct cmd_entry t_ids = {
	.name = "ids", .usage = "ID...", .summary = "ids", .args_min = 1,
	.args_max = -1, .flags = CMD_IDS | CMD_ID_GONE_OK, .exec = t_exec,
};

static const struct cmd_entry t_dash = {
	.name = "dash", .usage = "[--json] -- CMD...", .summary = "dash",
	.options = t_options, .options_more = cmd_sandbox_options,
	.args_max = 0, .flags = CMD_DASH, .exec = t_exec,
};

static const struct cmd_entry t_parent;

static const struct cmd_entry t_verb_a = {
	.name = "a", .usage = "[--json]", .summary = "verb a",
	.parent = &t_parent, .accepts = "j", .args_max = 0, .exec = t_exec,
};

static const struct cmd_entry t_verb_b = {
	.name = "b", .usage = "--out F [ARG]", .summary = "verb b",
	.parent = &t_parent, .required = "o", .args_max = 1, .exec = t_exec,
};

static const struct cmd_entry *const t_verbs[] = {
	&t_verb_a, &t_verb_b, NULL
};

static const struct cmd_entry t_parent = {
	.name = "parent", .usage = "a|b [OPTIONS]", .summary = "parent",
	.options = t_options, .shortopts = "o:", .verbs = t_verbs,
	.verb_default = &t_verb_a,
};

struct cmd_case {
	const struct cmd_entry	*entry;
	const char		*argv[8];
	int			 rc;		/* exit code of cmd_dispatch */
	const struct cmd_entry	*ran;		/* the entry run, or NULL */
	int			 nopts;		/* options it got */
	int			 argc;		/* operands it got */
};

static const struct cmd_case cmd_cases[] = {
	/* options before or after the operand, short and long */
	{ &t_leaf, { "leaf", "--json", T_ID }, T_RAN, &t_leaf, 1, 1 },
	{ &t_leaf, { "leaf", T_ID, "--out", "f", "-o", "g" }, T_RAN, &t_leaf,
	    2, 1 },
	{ &t_leaf, { "leaf", "--help" }, SG_EXIT_OK, NULL, 0, 0 },
	{ &t_leaf, { "leaf", "--bogus", T_ID }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_leaf, { "leaf", "-Z", T_ID }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_leaf, { "leaf", T_ID, "--out" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_leaf, { "leaf", "--json=1", T_ID }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_leaf, { "leaf" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_leaf, { "leaf", T_ID, T_ID }, SG_EXIT_USAGE, NULL, 0, 0 },
	/* ids: usage errors first, then one code for any unknown id */
	{ &t_leaf, { "leaf", "--bogus", "nope" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_leaf, { "leaf", "nope" }, SG_EXIT_NO_SANDBOX, NULL, 0, 0 },
	{ &t_leaf, { "leaf", T_GONE }, SG_EXIT_NO_SANDBOX, NULL, 0, 0 },
	{ &t_leaf, { "leaf", "../" T_ID }, SG_EXIT_NO_SANDBOX, NULL, 0, 0 },
	{ &t_ids, { "ids", T_ID, T_GONE }, T_RAN, &t_ids, 0, 2 },
	{ &t_ids, { "ids", T_GONE, "nope" }, SG_EXIT_NO_SANDBOX, NULL, 0, 0 },
	/* "--" and the command after it */
	{ &t_dash, { "dash", "--json", "--", "echo", "--json" }, T_RAN,
	    &t_dash, 1, 0 },
	{ &t_dash, { "dash", "--memory", "64m", "--", "true" }, T_RAN,
	    &t_dash, 1, 0 },
	{ &t_dash, { "dash", "--json" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_dash, { "dash", "--" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_dash, { "dash", "x", "--", "true" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_dash, { "dash", "--", "--bogus" }, T_RAN, &t_dash, 0, 0 },
	/* verbs: named, defaulted, their options and operands */
	{ &t_parent, { "parent" }, T_RAN, &t_verb_a, 0, 0 },
	{ &t_parent, { "parent", "--json", "a" }, T_RAN, &t_verb_a, 1, 0 },
	{ &t_parent, { "parent", "a", "--out", "f" }, SG_EXIT_USAGE, NULL, 0,
	    0 },
	{ &t_parent, { "parent", "b" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_parent, { "parent", "-o", "b", "b", "x" }, T_RAN, &t_verb_b, 1,
	    1 },
	{ &t_parent, { "parent", "c" }, SG_EXIT_USAGE, NULL, 0, 0 },
	{ &t_parent, { "parent", "b", "--help" }, SG_EXIT_OK, NULL, 0, 0 },
	{ &t_parent, { "parent", "--bogus", "b" }, SG_EXIT_USAGE, NULL, 0, 0 },
};

static void
test_cmd_dispatch(void **state)
{
	const struct cmd_case	*c;
	char			*argv[8];
	size_t			 i;
	int			 argc, rc;

	(void)state;
	for (i = 0; i < sizeof(cmd_cases) / sizeof(cmd_cases[0]); i++) {
		c = &cmd_cases[i];
		memset(argv, 0, sizeof(argv));
		for (argc = 0; argc < 8 && c->argv[argc] != NULL; argc++)
			argv[argc] = (char *)c->argv[argc];
		t_runs = 0;
		memset(&t_last, 0, sizeof(t_last));
		rc = cmd_dispatch(c->entry, argc, argv);
		if (rc != c->rc)
			fail_msg("case %zu (%s %s): exit %d, want %d", i,
			    c->argv[0], c->argv[1] ? c->argv[1] : "", rc,
			    c->rc);
		assert_int_equal(t_runs, c->ran != NULL);
		if (c->ran == NULL)
			continue;
		assert_ptr_equal(t_last.entry, c->ran);
		assert_int_equal(t_last.nopts, c->nopts);
		assert_int_equal(t_last.argc, c->argc);
	}
}

/* The options come back in order, with their long names and values. */
static void
test_cmd_args_next(void **state)
{
	char			*argv[] = { "leaf", "-o", "1", T_ID, "--json",
				    "--out=2", NULL };
	const struct cmd_opt	*o;

	(void)state;
	assert_int_equal(cmd_dispatch(&t_leaf, 6, argv), T_RAN);
	o = cmd_args_next(&t_last);
	assert_non_null(o);
	assert_int_equal(o->ch, 'o');
	assert_string_equal(o->name, "out");
	assert_string_equal(o->arg, "1");
	o = cmd_args_next(&t_last);
	assert_non_null(o);
	assert_string_equal(o->name, "json");
	assert_null(o->arg);
	o = cmd_args_next(&t_last);
	assert_non_null(o);
	assert_string_equal(o->arg, "2");
	assert_null(cmd_args_next(&t_last));
	assert_string_equal(t_last.argv[0], T_ID);
}

/* The command after "--" is left as it is, options and all. */
static void
test_cmd_dash(void **state)
{
	char	*argv[] = { "dash", "--allow", "pypi", "--", "sh", "-c", "x",
		    NULL };

	(void)state;
	assert_int_equal(cmd_dispatch(&t_dash, 7, argv), T_RAN);
	assert_non_null(t_last.cmd);
	assert_string_equal(t_last.cmd[0], "sh");
	assert_string_equal(t_last.cmd[1], "-c");
	assert_null(t_last.cmd[3]);
	assert_string_equal(t_last.opts[0].name, "allow");
	assert_int_equal(t_last.opts[0].ch, CMD_SANDBOX_OPT);
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cmd_dispatch),
		cmocka_unit_test(test_cmd_args_next),
		cmocka_unit_test(test_cmd_dash),
	};
	char	dir[] = "/tmp/test_cmd." UTIL_MKTEMP_SUFFIX, path[4096];
	int	rc;

	if (mkdtemp(dir) == NULL)
		return 1;
	setenv("SANDGATE_STATE", dir, 1);
	if (state_path(path, sizeof(path), T_ID, NULL) == -1 ||
	    state_mkdirs(path, 0700) == -1)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	rmdir(path);
	snprintf(path, sizeof(path), "%s/sandboxes", dir);
	rmdir(path);
	rmdir(dir);
	return rc;
}
