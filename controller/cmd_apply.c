/*
 * cmd_apply.c: `sandgate apply ID (--path P... | --all) [--review DIGEST]
 * [--unshown P]... [--include-risky] [--dry-run]`.
 *
 * The sandbox's container is frozen from before apply looks at the
 * working copy until the last file is copied out. With --review, every
 * path applied must still be what that review (a `sandgate diff`) showed,
 * checked for all of them before the first is written, and each file's
 * bytes are checked again as they are copied; a file whose text the
 * review did not show (too large, or past the diff's total) is refused
 * unless named with --unshown.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "freeze.h"
#include "log.h"
#include "quote.h"
#include "risky.h"
#include "state.h"
#include "workspace.h"

/* One run of apply: what it works on and what it saw. */
struct apply_run {
	const char			*sbx, *src;
	struct workspace_manifest	*m;
	struct workspace_review		*rv;	/* --review, or NULL */
	const char			*digest; /* its digest */
	struct workspace_diff		*now;	/* for --all or --review */
	struct workspace_apply_opts	 o;
	off_t				 budget; /* what may still be written */
	char				**unshown; /* --unshown */
	size_t				 nunshown;
	int				 all, risky_ok;
	int				 refused, failed, changed;
};

static int	cmd_apply_exec(struct cmd_args *);
static void	cmd_apply_line(const char *, const char *, const char *,
		    const char *);
static void	cmd_apply_one(struct apply_run *, const char *);
static int	cmd_apply_check(struct apply_run *, char **, size_t);
static int	cmd_apply_check_one(struct apply_run *, const char *);
static int	cmd_apply_unshown(struct apply_run *, const char *);
static void	cmd_apply_paths(struct apply_run *, char **, size_t);
static int	cmd_apply_work(struct apply_run *, struct freeze *, char **,
		    size_t, char **);
static int	cmd_apply_run(const char *, char **, size_t,
		    struct apply_run *, const char *);

static const struct option cmd_apply_options[] = {
	{ "path", required_argument, NULL, 'p' },
	{ "all", no_argument, NULL, 'a' },
	{ "review", required_argument, NULL, 'R' },
	{ "unshown", required_argument, NULL, 'u' },
	{ "include-risky", no_argument, NULL, 'r' },
	{ "dry-run", no_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_apply = {
	.name = "apply",
	.usage = "(--path PATH [--path PATH]... | --all) [--review DIGEST] "
	    "[--unshown PATH]... [--include-risky] [--dry-run] ID",
	.summary = "copy reviewed changes from the working copy back to the "
	    "source",
	.help = "PATH is relative to the source root. With "
	    "--review DIGEST (from `sandgate diff`)\nevery path must still "
	    "be what that diff showed, else nothing is applied (exit\n126); "
	    "a file whose text the diff did not show (too large) is refused\n"
	    "unless named with --unshown PATH (applied as its SHA-256). "
	    "A path is refused (exit 126, host file untouched) if it is "
	    "absolute, has\na '..' component, is a symlink or special file "
	    "in the working copy, is larger\nthan the sandbox's --disk, or "
	    "changed on the host since create. The sandbox is\nfrozen while "
	    "apply works. Writes are atomic and sparse-aware and keep the "
	    "file\nmode without setuid/setgid and group/other write. --all "
	    "leaves out risky paths\n(CI, build files, git hooks) unless "
	    "--include-risky. One line per path:\napplied, deleted, "
	    "unchanged or refused (reason).",
	.options = cmd_apply_options,
	.args_min = 1,
	.args_max = 1,
	.flags = CMD_ID,
	.exec = cmd_apply_exec,
};

/* "WORD PATH" or "WORD PATH (why)", the path quoted, why escaped. */
static void
cmd_apply_line(const char *pre, const char *word, const char *path,
    const char *why)
{
	printf("%s%s ", pre, word);
	quote_path(stdout, path, strlen(path));
	if (why != NULL) {
		fputs(" (", stdout);
		quote_line(stdout, why, strlen(why), 0, NULL);
		putchar(')');
	}
	putchar('\n');
}

static void
cmd_apply_one(struct apply_run *a, const char *path)
{
	enum workspace_apply_result	 r;
	char				*cause = NULL;
	const char			*pre = a->o.dry_run ? "would be " : "";

	a->o.expect = a->rv != NULL ? workspace_review_find(a->rv, path) :
	    NULL;
	r = workspace_apply_path(a->sbx, a->src, a->m, path, &a->o, &cause);
	switch (r) {
	case WORKSPACE_APPLY_APPLIED:
		cmd_apply_line(pre, "applied", path, NULL);
		a->changed++;
		break;
	case WORKSPACE_APPLY_DELETED:
		cmd_apply_line(pre, "deleted", path, NULL);
		a->changed++;
		break;
	case WORKSPACE_APPLY_UNCHANGED:
		cmd_apply_line("", "unchanged", path, NULL);
		break;
	case WORKSPACE_APPLY_REFUSED:
		cmd_apply_line("", "refused", path, cause ? cause : "refused");
		a->refused++;
		break;
	case WORKSPACE_APPLY_FAILED:
		cmd_apply_line("", "failed", path, cause ? cause : "error");
		a->failed++;
		break;
	}
	free(cause);
}

/* Is path, now, what the review showed? Prints why not. 0 or -1. */
static int
cmd_apply_check_one(struct apply_run *a, const char *path)
{
	const struct workspace_delta	*rv;
	const char			*why;

	if ((rv = workspace_review_find(a->rv, path)) == NULL) {
		cmd_apply_line("", "refused", path, "not in the review");
		return -1;
	}
	if (!workspace_review_matches(rv, workspace_diff_find(a->now, path),
	    workspace_manifest_find(a->m, path), &why)) {
		cmd_apply_line("", "refused", path, why);
		return -1;
	}
	return 0;
}

/*
 * With --review: every path to apply must match the review, and with
 * --all every change in the working copy must be in it. 0, or -1 when
 * anything differs (nothing is applied then).
 */
static int
cmd_apply_check(struct apply_run *a, char **paths, size_t npaths)
{
	size_t	i;
	int	bad = 0;

	if (a->rv == NULL)
		return 0;
	for (i = 0; i < npaths; i++)
		bad |= cmd_apply_check_one(a, paths[i]);
	if (!a->all)
		return bad ? -1 : 0;
	for (i = 0; i < workspace_review_count(a->rv); i++)
		bad |= cmd_apply_check_one(a,
		    workspace_review_at(a->rv, i)->path);
	for (i = 0; i < a->now->n; i++)
		if (workspace_review_find(a->rv, a->now->v[i].path) == NULL)
			bad |= cmd_apply_check_one(a, a->now->v[i].path);
	return bad ? -1 : 0;
}

/*
 * Risky by name (risky_path), or, as the diff made now says, an NFC twin
 * or look-alike of another path or folder (diff_twins).
 */
static int
cmd_apply_risky(const struct apply_run *a, const struct workspace_delta *d,
    const char **why)
{
	const struct workspace_delta	*now;

	if (risky_path(d->path, why))
		return 1;
	now = d->risky ? d : workspace_diff_find(a->now, d->path);
	if (now != NULL && now->risky) {
		*why = now->risky_why != NULL ? now->risky_why : "risky";
		return 1;
	}
	return 0;
}

/*
 * With --review: a file (added or modified) whose text the review did
 * not show (too large, past the total, or no text at all: a binary, as
 * one NUL byte makes a shell script or a Makefile), not named with
 * --unshown? Prints the refusal. 1 refused, 0.
 */
static int
cmd_apply_unshown(struct apply_run *a, const char *path)
{
	const struct workspace_delta	*rv;
	char				*msg;
	size_t				 i;

	if (a->rv == NULL || (rv = workspace_review_find(a->rv, path)) ==
	    NULL || rv->change == WORKSPACE_DELETED ||
	    rv->kind != WORKSPACE_FILE || rv->show == WORKSPACE_SHOW_TEXT ||
	    workspace_diff_find(a->now, path) == NULL)	/* nothing to write */
		return 0;
	for (i = 0; i < a->nunshown; i++)
		if (strcmp(a->unshown[i], path) == 0)
			return 0;
	if (asprintf(&msg, "review %.12s did not show its text (%s), only "
	    "its sha256 %s; name it with --unshown to apply it", a->digest,
	    rv->show == WORKSPACE_SHOW_TOO_LARGE ? "too large to show" :
	    rv->show == WORKSPACE_SHOW_OVER_TOTAL ?
	    "the diff's total was reached" : "a binary file: no text",
	    rv->sha256_after) == -1)
		msg = NULL;
	cmd_apply_line("", "refused", path, msg != NULL ? msg :
	    "its text was not shown");
	free(msg);
	a->refused++;
	return 1;
}

/* --all (the review's paths, or the diff's), then each --path. */
static void
cmd_apply_paths(struct apply_run *a, char **paths, size_t npaths)
{
	const struct workspace_delta	*d;
	const char			*why;
	char				*msg;
	size_t				 i, n = 0;

	if (a->all)
		n = a->rv != NULL ? workspace_review_count(a->rv) : a->now->n;
	for (i = 0; i < n && !freeze_interrupted(); i++) {
		d = a->rv != NULL ? workspace_review_at(a->rv, i) :
		    &a->now->v[i];
		if (!a->risky_ok && cmd_apply_risky(a, d, &why)) {
			if (asprintf(&msg, "risky: %s; review it and use "
			    "--include-risky or --path", why) == -1)
				msg = NULL;
			cmd_apply_line("", "refused", d->path,
			    msg != NULL ? msg : "risky");
			free(msg);
			a->refused++;
			continue;
		}
		if (!cmd_apply_unshown(a, d->path))
			cmd_apply_one(a, d->path);
	}
	for (i = 0; i < npaths && !freeze_interrupted(); i++)
		if (!cmd_apply_unshown(a, paths[i]))
			cmd_apply_one(a, paths[i]);
}

/* Frozen: look at the working copy, check, copy. */
static int
cmd_apply_work(struct apply_run *a, struct freeze *fz, char **paths,
    size_t npaths, char **cause)
{
	struct workspace_diff_opts	do_;

	a->o.size_max = (off_t)fz->disk;
	a->budget = a->o.size_max;
	a->o.budget = &a->budget;
	if (a->all || a->rv != NULL) {
		memset(&do_, 0, sizeof(do_));
		do_.size_max = a->o.size_max;
		do_.interrupted = freeze_interrupted;
		if ((a->now = workspace_diff(a->sbx, a->m, &do_, cause)) ==
		    NULL)
			return -1;
	}
	if (cmd_apply_check(a, paths, npaths) == -1) {
		log_warnx("the working copy is not what review "
		    "%s showed: nothing applied (run sandgate diff again)",
		    a->digest);
		a->refused++;
		return 0;
	}
	cmd_apply_paths(a, paths, npaths);
	return 0;
}

static int
cmd_apply_run(const char *id, char **paths, size_t npaths,
    struct apply_run *a, const char *review)
{
	struct freeze	 fz;
	char		 sbx[4096], *src = NULL, *cause = NULL;
	int		 lock, left, sig, rc = SG_EXIT_ERROR;

	memset(&fz, 0, sizeof(fz));
	if (state_path(sbx, sizeof(sbx), id, NULL) == -1 ||
	    (lock = state_lock(id, 1)) == -1) {
		log_warnx("no sandbox '%s'", id);
		return SG_EXIT_ERROR;
	}
	a->sbx = sbx;
	if ((a->src = src = workspace_meta_source(sbx, &cause)) == NULL ||
	    (a->m = workspace_manifest_load(sbx, &cause)) == NULL ||
	    workspace_apply_cleanup(sbx, src, &left, &cause) == -1)
		goto out;
	if (left > 0)
		log_warnx("removed %d temporary file%s that an "
		    "interrupted apply left in the source folder", left,
		    left == 1 ? "" : "s");
	a->digest = review;
	if (review != NULL &&
	    (a->rv = workspace_review_load(sbx, review, &cause)) == NULL) {
		rc = errno == ENOENT || errno == EINVAL ? SG_EXIT_REFUSED :
		    SG_EXIT_ERROR;
		goto out;
	}
	if (freeze_begin(&fz, sbx, 1, &cause) == -1 ||
	    cmd_apply_work(a, &fz, paths, npaths, &cause) == -1)
		goto out;
	if (!a->o.dry_run && a->changed > 0 &&
	    workspace_manifest_save(a->m, sbx, &cause) == -1)
		goto out;
	/* every temp file is renamed or removed by now: drop the journal */
	if (workspace_apply_cleanup(sbx, src, &left, &cause) == -1)
		goto out;
	rc = a->failed ? SG_EXIT_ERROR : a->refused ? SG_EXIT_REFUSED :
	    SG_EXIT_OK;
out:
	sig = freeze_interrupted();
	if (freeze_end(&fz, cause == NULL ? &cause : NULL) == -1 &&
	    rc == SG_EXIT_OK)
		rc = SG_EXIT_ERROR;
	if (sig != 0)
		rc = 128 + sig;
	if (cause != NULL)
		cmd_warn_text(cause);
	free(cause);
	free(src);
	workspace_diff_free(a->now);
	workspace_review_free(a->rv);
	workspace_manifest_free(a->m);
	state_unlock(lock);
	return rc;
}

static int
cmd_apply_exec(struct cmd_args *args)
{
	const struct cmd_opt	 *o;
	struct apply_run	  a;
	const char		 *review = NULL;
	char			**paths;
	size_t			  npaths = 0, i;
	int			  rc;

	memset(&a, 0, sizeof(a));
	if ((paths = calloc(args->nopts + 1, sizeof(char *))) == NULL ||
	    (a.unshown = calloc(args->nopts + 1, sizeof(char *))) == NULL) {
		free(paths);
		return SG_EXIT_ERROR;
	}
	while ((o = cmd_args_next(args)) != NULL) {
		switch (o->ch) {
		case 'p':
			paths[npaths++] = (char *)o->arg;
			break;
		case 'u':
			a.unshown[a.nunshown++] = (char *)o->arg;
			break;
		case 'a':
			a.all = 1;
			break;
		case 'R':
			review = o->arg;
			break;
		case 'r':
			a.risky_ok = 1;
			break;
		case 'n':
			a.o.dry_run = 1;
			break;
		}
	}
	/* without --all, each --unshown PATH is a path to apply too */
	for (i = 0; !a.all && i < a.nunshown; i++)
		paths[npaths++] = a.unshown[i];
	if ((npaths == 0) == (a.all == 0))
		rc = cmd_usage_error(&cmd_apply, "give --path PATH ... or "
		    "--all");
	else
		rc = cmd_apply_run(args->argv[0], paths, npaths, &a, review);
	free(paths);
	free(a.unshown);
	return rc;
}
