/* cmd_diff.c: `sandgate diff ID [--stat] [--json]`. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "risky.h"
#include "state.h"
#include "workspace.h"

static int	cmd_diff_exec(int, char **);
static void	cmd_diff_stat(const struct workspace_diff *);

const struct cmd_entry cmd_diff = {
	.name = "diff",
	.usage = "[--stat] [--json] ID",
	.summary = "show what the sandbox changed in its working copy: "
	    "added, modified and\ndeleted files, a unified diff for text "
	    "files, SHA-256 before and after for\nbinary files; risky paths "
	    "(CI, build files, git hooks, shell rc files) are\nflagged. "
	    "--stat prints one line per file, --json one object.",
	.exec = cmd_diff_exec,
};

/* "A path", "M path", "D path", a risky mark, then the counts. */
static void
cmd_diff_stat(const struct workspace_diff *d)
{
	static const char	 mark[] = { 'A', 'M', 'D' };
	const char		*why;
	size_t			 i, n[3] = { 0, 0, 0 }, risky = 0;

	for (i = 0; i < d->n; i++) {
		n[d->v[i].change]++;
		printf("%c %s", mark[d->v[i].change], d->v[i].path);
		if (d->v[i].special)
			printf("  (%s, never applied)", d->v[i].special_what);
		if (risky_path(d->v[i].path, &why)) {
			printf("  [risky: %s]", why);
			risky++;
		}
		putchar('\n');
	}
	printf("%zu added, %zu modified, %zu deleted, %zu risky\n", n[0],
	    n[1], n[2], risky);
}

static int
cmd_diff_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "stat", no_argument, NULL, 's' },
		{ "json", no_argument, NULL, 'j' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct workspace_manifest	*m = NULL;
	struct workspace_diff		*d = NULL;
	char				 sbx[4096], *cause = NULL;
	int				 ch, stat = 0, json = 0, lock, rc;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 's':
			stat = 1;
			break;
		case 'j':
			json = 1;
			break;
		case 'h':
			return cmd_help(&cmd_diff);
		default:
			return cmd_usage_error(&cmd_diff, "bad option");
		}
	}
	if (argc - optind != 1)
		return cmd_usage_error(&cmd_diff, "one sandbox id expected");
	if (state_valid_id(argv[optind]) == -1)
		return cmd_usage_error(&cmd_diff, "invalid sandbox id '%s'",
		    argv[optind]);
	if (stat && json)
		return cmd_usage_error(&cmd_diff, "--stat and --json "
		    "exclude each other");
	if (state_path(sbx, sizeof(sbx), argv[optind], NULL) == -1 ||
	    (lock = state_lock(argv[optind], 0)) == -1) {
		fprintf(stderr, "sandgate: no sandbox '%s'%s%s\n", argv[optind],
		    errno == ENOENT ? "" : ": ", errno == ENOENT ? "" :
		    strerror(errno));
		return SG_EXIT_ERROR;
	}
	rc = SG_EXIT_ERROR;
	if ((m = workspace_manifest_load(sbx, &cause)) == NULL ||
	    (d = workspace_diff(sbx, m, &cause)) == NULL)
		goto out;
	if (stat)
		cmd_diff_stat(d);
	else if (workspace_diff_write(sbx, d, json, stdout, &cause) == -1)
		goto out;
	rc = fflush(stdout) == 0 ? SG_EXIT_OK : SG_EXIT_ERROR;
out:
	if (cause != NULL)
		fprintf(stderr, "sandgate: %s\n", cause);
	free(cause);
	workspace_diff_free(d);
	workspace_manifest_free(m);
	state_unlock(lock);
	return rc;
}
