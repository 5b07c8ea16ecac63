/* cmd_diff.c: `sandgate diff ID [--stat] [--json] [--raw]`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "freeze.h"
#include "log.h"
#include "quote.h"
#include "risky.h"
#include "sglimits.h"
#include "state.h"
#include "workspace.h"

static int	cmd_diff_exec(struct cmd_args *);
static void	cmd_diff_stat(const struct workspace_diff *);
static int	cmd_diff_run(const char *, int, int);
static void	cmd_diff_notes(const struct workspace_write_stats *, int);

static const struct option cmd_diff_options[] = {
	{ "stat", no_argument, NULL, 's' },
	{ "json", no_argument, NULL, 'j' },
	{ "raw", no_argument, NULL, 'r' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_diff = {
	.name = "diff",
	.usage = "[--stat] [--json] [--raw] ID",
	.summary = "show what the sandbox changed in its working copy",
	.help = "Lists added, modified and deleted files, a unified diff for "
	    "text files (control\ncharacters shown as \\xHH unless --raw), "
	    "sizes and SHA-256 for binary files and for text files\ntoo "
	    "large to show; risky paths (CI, build files, git hooks, shell "
	    "rc files)\nare flagged. Ends with the review digest (\"review "
	    "DIGEST\"; \"review\" in\n--json) that `sandgate apply --review "
	    "DIGEST` checks against. The sandbox is\nfrozen while its files "
	    "are read. --stat prints one line per file, --json one\nobject.",
	.options = cmd_diff_options,
	.args_min = 1,
	.args_max = 1,
	.flags = CMD_ID,
	.exec = cmd_diff_exec,
};

/* "A path", "M path", "D path" (quoted), a risky mark, then the counts. */
static void
cmd_diff_stat(const struct workspace_diff *d)
{
	static const char	 mark[] = { 'A', 'M', 'D' };
	size_t			 i, n[3] = { 0, 0, 0 }, risky = 0;

	for (i = 0; i < d->n; i++) {
		n[d->v[i].change]++;
		printf("%c ", mark[d->v[i].change]);
		quote_path(stdout, d->v[i].path, strlen(d->v[i].path));
		if (d->v[i].special)
			printf("  (%s, never applied)", d->v[i].special_what);
		if (d->v[i].risky) {
			printf("  [risky: %s]", d->v[i].risky_why);
			risky++;
		}
		putchar('\n');
	}
	printf("%zu added, %zu modified, %zu deleted, %zu risky\n", n[0],
	    n[1], n[2], risky);
}

/* What the reviewer should know about what was not shown as it is. */
static void
cmd_diff_notes(const struct workspace_write_stats *ws, int raw)
{
	if (ws->too_large > 0)
		log_warnx("note: %zu text file%s too large to "
		    "show (over %u bytes or %u lines): only %s sizes and "
		    "SHA-256 are listed; apply --review refuses %s unless "
		    "named with --unshown", ws->too_large,
		    ws->too_large == 1 ? " is" : "s are", SG_DIFF_FILE_MAX,
		    SG_DIFF_LINES_MAX, ws->too_large == 1 ? "its" : "their",
		    ws->too_large == 1 ? "it" : "them");
	if (ws->over_total > 0)
		log_warnx("note: %zu text file%s not shown: the diff shows "
		    "at most the sandbox's --disk of text, smaller files "
		    "first, and %s did not fit; only %s sizes and SHA-256 are "
		    "listed; apply --review refuses %s unless named with "
		    "--unshown", ws->over_total, ws->over_total == 1 ? " is" :
		    "s are", ws->over_total == 1 ? "it" : "they",
		    ws->over_total == 1 ? "its" : "their",
		    ws->over_total == 1 ? "it" : "them");
	if (ws->escaped > 0 && !raw)
		log_warnx("note: %zu byte%s of control, invisible or blank "
		    "characters or invalid UTF-8 in the diff %s shown as \\xHH "
		    "(--raw shows them as they are)", ws->escaped,
		    ws->escaped == 1 ? "" : "s", ws->escaped == 1 ? "is" :
		    "are");
}

/*
 * Freeze, read and hash the working copy (keeping the text files' bytes),
 * thaw, then write: the text is made from the kept bytes, so the sandbox
 * runs again while a slow reader pages through it.
 */
static int
cmd_diff_run(const char *sbx, int mode, int raw)
{
	struct workspace_write_stats	 ws;
	struct workspace_diff_opts	 o;
	struct workspace_manifest	*m = NULL;
	struct workspace_diff		*d = NULL;
	struct freeze			 fz;
	char				*cause = NULL, *tcause = NULL;
	int				 sig, rc = SG_EXIT_ERROR;

	memset(&fz, 0, sizeof(fz));
	if ((m = workspace_manifest_load(sbx, &cause)) == NULL)
		goto out;
	if (freeze_begin(&fz, sbx, 1, &cause) == -1) {
		/* a signal while it waited for another's freeze */
		if ((sig = freeze_interrupted()) != 0)
			rc = 128 + sig;
		goto out;
	}
	memset(&o, 0, sizeof(o));
	o.stage = mode != 's';
	o.size_max = (off_t)fz.disk;
	o.interrupted = freeze_interrupted;
	d = workspace_diff(sbx, m, &o, &cause);
	sig = freeze_interrupted();
	if (freeze_end(&fz, &tcause) == -1 && d != NULL) {
		workspace_diff_free(d);
		d = NULL;
		cause = tcause;
		tcause = NULL;
	}
	if (sig != 0) {
		rc = 128 + sig;
		goto out;
	}
	if (d == NULL)
		goto out;
	if (mode == 's')
		cmd_diff_stat(d);
	else if (workspace_diff_write(sbx, d, (mode == 'j' ?
	    WORKSPACE_WRITE_JSON : 0) | (raw ? WORKSPACE_WRITE_RAW : 0),
	    stdout, &ws, &cause) == -1)
		goto out;
	if (fflush(stdout) != 0) {
		cause = strdup("cannot write the diff");
		goto out;
	}
	/* shown in full: apply --review may now check against it */
	if (mode != 's') {
		if (d->n > 0 && workspace_review_save(sbx, d, &cause) == -1)
			goto out;
		cmd_diff_notes(&ws, raw);
	}
	rc = SG_EXIT_OK;
out:
	freeze_end(&fz, NULL);
	if (cause != NULL)
		cmd_warn_text(cause);
	free(cause);
	free(tcause);
	workspace_diff_free(d);
	workspace_manifest_free(m);
	return rc;
}

static int
cmd_diff_exec(struct cmd_args *args)
{
	const struct cmd_opt	*o;
	const char		*id = args->argv[0];
	char			 sbx[4096];
	int			 mode = 't', raw = 0, lock, rc;

	while ((o = cmd_args_next(args)) != NULL) {
		if (o->ch == 'r')
			raw = 1;
		else if (mode != 't' && mode != o->ch)
			return cmd_usage_error(&cmd_diff, "--stat and --json "
			    "exclude each other");
		else
			mode = o->ch;
	}
	if (state_path(sbx, sizeof(sbx), id, NULL) == -1 ||
	    (lock = state_lock(id, 0)) == -1) {
		log_warnx("no sandbox '%s'%s%s", id, errno == ENOENT ? "" :
		    ": ", errno == ENOENT ? "" : strerror(errno));
		return SG_EXIT_NO_SANDBOX;
	}
	rc = cmd_diff_run(sbx, mode, raw);
	state_unlock(lock);
	return rc;
}
