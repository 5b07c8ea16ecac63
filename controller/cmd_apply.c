/*
 * cmd_apply.c: `sandgate apply ID (--path P... | --all) [--include-risky]
 * [--dry-run]`.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "risky.h"
#include "state.h"
#include "workspace.h"

/* What one run of apply saw, for the exit code. */
struct apply_tally {
	int	refused, failed, changed;
};

static int	cmd_apply_exec(int, char **);
static void	cmd_apply_one(const char *, const char *,
		    struct workspace_manifest *, const char *, int,
		    struct apply_tally *);
static void	cmd_apply_all(const char *, const char *,
		    struct workspace_manifest *, int, int,
		    struct apply_tally *);
static int	cmd_apply_run(const char *, char **, size_t, int, int, int);

const struct cmd_entry cmd_apply = {
	.name = "apply",
	.usage = "(--path PATH [--path PATH]... | --all) [--include-risky] "
	    "[--dry-run] ID",
	.summary = "copy reviewed changes from the working copy back to the "
	    "source folder.\nPATH is relative to the source root. A path is "
	    "refused (exit 126, host file\nuntouched) if it is absolute, has "
	    "a '..' component, is a symlink or special\nfile in the working "
	    "copy, or changed on the host since create. Writes are\natomic "
	    "and keep the file mode without setuid/setgid. --all leaves out "
	    "risky\npaths (CI, build files, git hooks) unless "
	    "--include-risky. One line per\npath: applied, deleted, "
	    "unchanged or refused (reason).",
	.exec = cmd_apply_exec,
};

static void
cmd_apply_one(const char *sbx, const char *src, struct workspace_manifest *m,
    const char *path, int dry, struct apply_tally *t)
{
	enum workspace_apply_result	 r;
	char				*cause = NULL;
	const char			*pre = dry ? "would be " : "";

	r = workspace_apply_path(sbx, src, m, path, dry, &cause);
	switch (r) {
	case WORKSPACE_APPLY_APPLIED:
		printf("%sapplied %s\n", pre, path);
		t->changed++;
		break;
	case WORKSPACE_APPLY_DELETED:
		printf("%sdeleted %s\n", pre, path);
		t->changed++;
		break;
	case WORKSPACE_APPLY_UNCHANGED:
		printf("unchanged %s\n", path);
		break;
	case WORKSPACE_APPLY_REFUSED:
		printf("refused %s (%s)\n", path, cause ? cause : "refused");
		t->refused++;
		break;
	case WORKSPACE_APPLY_FAILED:
		printf("failed %s (%s)\n", path, cause ? cause : "error");
		t->failed++;
		break;
	}
	free(cause);
}

/* Every change of the diff; risky ones only with --include-risky. */
static void
cmd_apply_all(const char *sbx, const char *src, struct workspace_manifest *m,
    int risky_ok, int dry, struct apply_tally *t)
{
	struct workspace_diff	*d;
	const char		*why;
	char			*cause = NULL;
	size_t			 i;

	if ((d = workspace_diff(sbx, m, &cause)) == NULL) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		t->failed++;
		return;
	}
	for (i = 0; i < d->n; i++) {
		if (!risky_ok && risky_path(d->v[i].path, &why)) {
			printf("refused %s (risky: %s; review it and use "
			    "--include-risky or --path)\n", d->v[i].path, why);
			t->refused++;
			continue;
		}
		cmd_apply_one(sbx, src, m, d->v[i].path, dry, t);
	}
	workspace_diff_free(d);
}

static int
cmd_apply_run(const char *id, char **paths, size_t npaths, int all,
    int risky_ok, int dry)
{
	struct workspace_manifest	*m = NULL;
	struct apply_tally		 t = { 0, 0, 0 };
	char				 sbx[4096], *src = NULL, *cause = NULL;
	size_t				 i;
	int				 lock, left, rc = SG_EXIT_ERROR;

	if (state_path(sbx, sizeof(sbx), id, NULL) == -1 ||
	    (lock = state_lock(id, 1)) == -1) {
		fprintf(stderr, "sandgate: no sandbox '%s'\n", id);
		return SG_EXIT_ERROR;
	}
	if ((src = workspace_meta_source(sbx, &cause)) == NULL ||
	    (m = workspace_manifest_load(sbx, &cause)) == NULL ||
	    workspace_apply_cleanup(sbx, src, &left, &cause) == -1)
		goto out;
	if (left > 0)
		fprintf(stderr, "sandgate: removed %d temporary file%s that an "
		    "interrupted apply left in %s\n", left, left == 1 ? "" :
		    "s", src);
	if (all)
		cmd_apply_all(sbx, src, m, risky_ok, dry, &t);
	for (i = 0; i < npaths; i++)
		cmd_apply_one(sbx, src, m, paths[i], dry, &t);
	if (!dry && t.changed > 0 &&
	    workspace_manifest_save(m, sbx, &cause) == -1)
		goto out;
	/* every temp file is renamed or removed by now: drop the journal */
	if (workspace_apply_cleanup(sbx, src, &left, &cause) == -1)
		goto out;
	rc = t.failed ? SG_EXIT_ERROR : t.refused ? SG_EXIT_REFUSED :
	    SG_EXIT_OK;
out:
	if (cause != NULL)
		fprintf(stderr, "sandgate: %s\n", cause);
	free(cause);
	free(src);
	workspace_manifest_free(m);
	state_unlock(lock);
	return rc;
}

static int
cmd_apply_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "path", required_argument, NULL, 'p' },
		{ "all", no_argument, NULL, 'a' },
		{ "include-risky", no_argument, NULL, 'r' },
		{ "dry-run", no_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	char	**paths;
	size_t	  npaths = 0;
	int	  ch, all = 0, risky = 0, dry = 0, rc;

	if ((paths = calloc((size_t)argc + 1, sizeof(char *))) == NULL)
		return SG_EXIT_ERROR;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p':
			paths[npaths++] = optarg;
			break;
		case 'a':
			all = 1;
			break;
		case 'r':
			risky = 1;
			break;
		case 'n':
			dry = 1;
			break;
		case 'h':
			free(paths);
			return cmd_help(&cmd_apply);
		default:
			free(paths);
			return cmd_usage_error(&cmd_apply, "unknown option or "
			    "missing value: '%s'", argv[optind - 1]);
		}
	}
	if (argc - optind != 1 || state_valid_id(argv[optind]) == -1)
		rc = cmd_usage_error(&cmd_apply, "one valid sandbox id "
		    "expected");
	else if ((npaths == 0) == (all == 0))
		rc = cmd_usage_error(&cmd_apply, "give --path PATH ... or "
		    "--all");
	else
		rc = cmd_apply_run(argv[optind], paths, npaths, all, risky,
		    dry);
	free(paths);
	return rc;
}
