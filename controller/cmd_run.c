/*
 * cmd_run.c: `sandgate run -- CMD...`: one fresh container, inputs
 * read-only at /input, a size-limited /output copied out at the end, and
 * everything deleted after, also on SIGINT/SIGTERM.
 *
 * The run is a short-lived sandbox (meta "ephemeral"), so a crash leaves
 * something `sandgate gc` recognises: its folder holds disk.img mounted on
 * work/, with work/scratch at /workspace and work/output at /output, both
 * under the --disk quota.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "disk.h"
#include "docker.h"
#include "exec.h"
#include "execend.h"
#include "log.h"
#include "probe.h"
#include "proxyctl.h"
#include "quote.h"
#include "runrec.h"
#include "sandbox.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"
#include "workspace.h"


struct run_args {
	const char	*input;		/* realpath'd */
	const char	*output;
	char *const	*cmd;
	int		 json;
	char		 inbuf[PATH_MAX];
};

static int	cmd_run_exec(struct cmd_args *);
static int	run_parse(struct cmd_args *, struct sandbox_meta *,
		    struct run_args *);
static int	run_check_paths(struct run_args *);
static int	run_prepare(struct sandbox_meta *, char **);
static int	run_go(struct docker *, struct sandbox_meta *,
		    const struct run_args *);
static int	run_copy_out(const char *, const char *, unsigned long long,
		    char **);
static int	run_mkdir_owned(const char *, const char *, unsigned long,
		    char **);
static int	run_finish(const struct sandbox_meta *, const struct run_args *,
		    const struct exec_result *, const char *, const char *);
static void	run_record(struct docker *, const struct sandbox_meta *,
		    const struct run_args *, const struct exec_result *,
		    const char *);

/* The options of run beyond those of every sandbox (cmd.h). */
static const struct option cmd_run_options[] = {
	{ "input", required_argument, NULL, 'I' },
	{ "output", required_argument, NULL, 'O' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_run = {
	.name = "run",
	.usage = "[--input DIR] [--output DIR] [--image IMG] [--cpus N] "
	    "[--memory SIZE] [--pids N] [--disk SIZE] [--tmp-size SIZE] "
	    "[--timeout S] [--runtime RT] [--network proxy|none] "
	    "[--allow SET]... [--env K=V]... [--json] -- CMD...",
	.summary = "run CMD once in a fresh sandbox, then delete everything",
	.help = "The --input DIR is mounted read-only at /input; what CMD "
	    "leaves in /output is copied to the --output DIR.",
	.options = cmd_run_options,
	.options_more = cmd_sandbox_options,
	.args_max = 0,
	.flags = CMD_DASH,
	.exec = cmd_run_exec,
};

static int
run_parse(struct cmd_args *args, struct sandbox_meta *m, struct run_args *a)
{
	const struct cmd_opt	*o;
	char			*cause = NULL;
	int			 rv;

	while ((o = cmd_args_next(args)) != NULL) {
		if (o->ch == 'I')
			a->input = o->arg;
		else if (o->ch == 'O')
			a->output = o->arg;
		else if (o->ch == 'j')
			a->json = 1;
		else if (sandbox_opt(m, o->name, o->arg, &cause) == -1) {
			rv = cmd_usage_error(&cmd_run, "%s", cause);
			free(cause);
			return rv;
		}
	}
	a->cmd = args->cmd;
	return 0;
}

/* --input must be a folder; --output absent or an empty folder. */
static int
run_check_paths(struct run_args *a)
{
	struct stat	 st;
	DIR		*dir;
	struct dirent	*e;
	int		 n = 0;

	if (a->input != NULL) {
		if (realpath(a->input, a->inbuf) == NULL ||
		    stat(a->inbuf, &st) == -1 || !S_ISDIR(st.st_mode)) {
			log_warnx("--input '%s' is not a "
			    "folder", a->input);
			return -1;
		}
		a->input = a->inbuf;
	}
	if (a->output == NULL || lstat(a->output, &st) == -1)
		return 0;
	if (!S_ISDIR(st.st_mode) || (dir = opendir(a->output)) == NULL) {
		log_warnx("--output '%s' is not a folder",
		    a->output);
		return -1;
	}
	while ((e = readdir(dir)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(dir);
	if (n > 0) {
		log_warnx("--output '%s' is not empty",
		    a->output);
		return -1;
	}
	return 0;
}

static int
run_mkdir_owned(const char *work, const char *name, unsigned long uid,
    char **cause)
{
	char	path[PATH_MAX + 16];

	snprintf(path, sizeof(path), "%s/%s", work, name);
	if (mkdir(path, 0755) == -1 || chown(path, uid, uid) == -1) {
		util_cause(cause, "cannot create '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* The run's folder, lock, runs/, and its disk with scratch/ and output/. */
static int
run_prepare(struct sandbox_meta *m, char **cause)
{
	char	dir[PATH_MAX], path[PATH_MAX], work[PATH_MAX];

	state_path(dir, sizeof(dir), m->id, NULL);
	state_path(work, sizeof(work), m->id, "work");
	if (state_make_locked(m->id) == -1 ||
	    (mkdir(work, 0700) == -1 && errno != EEXIST)) {
		util_cause(cause, "cannot create '%s': %s", work,
		    strerror(errno));
		return -1;
	}
	state_path(path, sizeof(path), m->id, "runs");
	if (mkdir(path, 0700) == -1 ||
	    sandbox_identity(m, cause) == -1 ||
	    sandbox_meta_save(m, cause) == -1) {
		if (*cause == NULL)
			util_cause(cause, "cannot create '%s': %s", path,
			    strerror(errno));
		return -1;
	}
	state_path(path, sizeof(path), m->id, "disk.img");
	if (disk_image_create(path, m->disk, m->uid, m->uid,
	    cause) == -1 || disk_mount(path, work, cause) == -1)
		return -1;
	if (run_mkdir_owned(work, "scratch", m->uid, cause) == -1 ||
	    run_mkdir_owned(work, "output", m->uid, cause) == -1)
		return -1;
	return 0;
}

/* /output to dst: sparse-aware, at most --disk per file, any depth. */
static int
run_copy_out(const char *work, const char *dst, unsigned long long disk,
    char **cause)
{
	char	src[PATH_MAX + 8];
	int	sfd = -1, dfd = -1, rv;

	snprintf(src, sizeof(src), "%s/output", work);
	if (mkdir(dst, 0755) == -1 && errno != EEXIST) {
		util_cause(cause, "cannot create '%s': %s", dst,
		    strerror(errno));
		return -1;
	}
	if ((dfd = open(dst, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1 ||
	    (sfd = open(src, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		util_cause(cause, "cannot open output folders: %s",
		    strerror(errno));
		if (dfd != -1)
			close(dfd);
		return -1;
	}
	rv = workspace_copy_tree(sfd, dfd, (off_t)disk, stderr, cause);
	close(sfd);
	close(dfd);
	return rv;
}

static int
run_go(struct docker *d, struct sandbox_meta *m, const struct run_args *a)
{
	struct sandbox_mounts	 mt;
	struct exec_opts	 o;
	struct exec_result	 r;
	char			 run[STATE_ID_LEN + 1], work[PATH_MAX];
	char			 scratch[PATH_MAX], out[PATH_MAX];
	char			*cid = NULL, *cause = NULL;
	int			 pid, rv = SG_EXIT_ERROR, ran = 0, asked = 0;
	struct proxyctl_exec	 px;
	json_t			*env = NULL, *blocks;

	memset(&r, 0, sizeof(r));
	memset(&o, 0, sizeof(o));	/* for an early goto done */
	state_new_id(run, "run");
	state_path(work, sizeof(work), m->id, "work");
	state_path(scratch, sizeof(scratch), m->id, "work/scratch");
	state_path(out, sizeof(out), m->id, "work/output");
	memset(&mt, 0, sizeof(mt));
	mt.work = scratch;
	mt.input = a->input;
	mt.output = out;
	if (run_prepare(m, &cause) == -1)
		goto done;
	if ((mt.probe = probe_mount_path(sandbox_gvisor(m), &cause)) == NULL)
		goto done;
	if (exec_signal_pending() == 0 &&
	    sandbox_container_up(d, m, &mt, "run", &cid, &pid, &cause) == -1)
		goto done;
	/* as exec's: the reaper's uid is the init's (atk16r8 F3) */
	sandbox_exec_opts(&o, m, a->cmd, run, m->timeout,
	    SG_OUTPUT_CAP_DEFAULT);
	o.live = !a->json;
	if (strcmp(m->network, "proxy") == 0) {
		/* ends a replica did not take end first (execend.h) */
		(void)execend_retry(m->id, 0, execend_warn, NULL);
		proxyctl_exec_begin(&px, m->id, run, m->allow, o.timeout);
		asked = 1;
	}
	o.env = env = sandbox_exec_env(m, asked ? px.token : NULL, NULL);
	if (cid != NULL && exec_run(d, cid, pid, &o, &r, &cause) == 0) {
		ran = 1;
		rv = r.exit_code;
	}
	blocks = asked ? proxyctl_exec_finish(&px, m->id, run) : NULL;
	if (ran) {
		r.network_blocked = blocks;
		r.network_blocked_truncated = asked && px.truncated;
		r.network_replicas = asked ? px.replicas : NULL;
		r.network_end_owed = asked && px.end_owed;
	} else {
		json_decref(blocks);
		if (asked)
			json_decref(px.replicas);
	}
	json_decref(env);
done:
	if (cid != NULL)
		docker_container_remove(d, cid, NULL);
	if (cause != NULL)
		log_warnx("%s", cause);
	if (ran && run_finish(m, a, &r, run, work) == -1 && rv == 0)
		rv = SG_EXIT_ERROR;
	run_record(d, m, a, ran ? &r : NULL, run);
	free(cause);
	free(cid);
	exec_result_release(&r);
	return rv;
}

/* Report the result and copy /output out (not after a signal). */
static int
run_finish(const struct sandbox_meta *m, const struct run_args *a,
    const struct exec_result *r, const char *run, const char *work)
{
	json_t	*j;
	char	*cause = NULL;
	int	 rv = 0;

	if (a->json && (j = exec_result_json(r, run)) != NULL) {
		json_object_set_new(j, "notices", exec_notices(r, m->timeout,
		    m->memory, m->pids));
		json_dumpf(j, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(j);
	}
	exec_report(r, m->timeout, m->memory, m->pids);
	if (a->output != NULL && r->signal == 0 &&
	    run_copy_out(work, a->output, m->disk, &cause) == -1) {
		cmd_warn_text(cause);
		rv = -1;
	}
	free(cause);
	return rv;
}

/* Delete the run's sandbox, then append its run record. */
static void
run_record(struct docker *d, const struct sandbox_meta *m,
    const struct run_args *a, const struct exec_result *r, const char *run)
{
	struct runrec	 rr;
	char		*clean = NULL, *cause = NULL;

	if (sandbox_destroy(d, m->id, &clean) != 0)
		log_warnx("cleanup of %s failed: %s", m->id,
		    clean);
	memset(&rr, 0, sizeof(rr));
	rr.kind = "run";
	rr.run_id = run;
	rr.meta = m;
	rr.argv = a->cmd;
	rr.timeout = m->timeout;
	rr.fresh = 1;
	rr.res = r;
	rr.cleanup = clean != NULL ? clean : "ok";
	if (runrec_append(&rr, &cause) == -1)
		log_warnx("warning: run record not written: "
		    "%s", cause);
	free(cause);
	free(clean);
}

static int
cmd_run_exec(struct cmd_args *args)
{
	struct sandbox_meta	 m;
	struct run_args		 a;
	struct docker		*d = NULL;
	struct timespec		 now;
	char			 ts[UTIL_TS_LEN], *cause = NULL;
	int			 rv;

	sandbox_meta_init(&m);
	memset(&a, 0, sizeof(a));
	if ((rv = run_parse(args, &m, &a)) != 0) {
		sandbox_meta_release(&m);
		return rv;
	}
	rv = SG_EXIT_ERROR;
	m.ephemeral = 1;
	if (run_check_paths(&a) == -1)
		goto out;
	sandbox_meta_set(&m.source, a.input);
	clock_gettime(CLOCK_REALTIME, &now);
	util_rfc3339(&now, ts);
	sandbox_meta_set(&m.created, ts);
	exec_signals_install();
	if ((d = sandbox_docker()) == NULL)
		goto out;
	if (sandbox_resolve(d, &m, &cause) == -1) {
		log_warnx("%s", cause);
		goto out;
	}
	state_new_id(m.id, "sbx");
	rv = run_go(d, &m, &a);
out:
	free(cause);
	docker_free(d);
	sandbox_meta_release(&m);
	return rv;
}
