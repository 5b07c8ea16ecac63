/* cmd_exec.c: `sandgate exec ID -- CMD...`: one command in a sandbox. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "auditkey.h"
#include "cmd.h"
#include "docker.h"
#include "exec.h"
#include "execend.h"
#include "log.h"
#include "netseal.h"
#include "probe.h"
#include "proxyctl.h"
#include "runrec.h"
#include "sandbox.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"


struct cmd_exec_args {
	const char	*id;
	char *const	*cmd;		/* after "--" */
	int		 fresh;
	int		 json;
	long long	 timeout;	/* 0: the sandbox's */
	uint64_t	 waited_us;	/* for the sandbox's lock */
	const char	*workdir;
	struct sandbox_meta env;	/* only .env is used */
};

static int	cmd_exec_exec(struct cmd_args *);
static int	cmd_exec_parse(struct cmd_args *, struct cmd_exec_args *);
static int	cmd_exec_parse_opt(struct cmd_exec_args *, int, const char *);
static int	cmd_exec_in_sandbox(struct docker *, struct sandbox_meta *,
		    const struct cmd_exec_args *);
static int	cmd_exec_target(struct docker *, const struct sandbox_meta *,
		    int, char **, int *, char **);
static int	cmd_exec_seal_holds(const struct sandbox_meta *, int, char **);
static void	cmd_exec_opts(struct exec_opts *, const struct sandbox_meta *,
		    const struct cmd_exec_args *, const char *, const char *);
static void	cmd_exec_record(const struct sandbox_meta *,
		    const struct cmd_exec_args *, const char *, int,
		    const struct exec_result *, const char *);
static void	cmd_exec_output(const struct exec_result *, const char *,
		    const struct sandbox_meta *, long long, int);

static const struct option cmd_exec_options[] = {
	{ "fresh", no_argument, NULL, 'f' },
	{ "timeout", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, 'j' },
	{ "env", required_argument, NULL, 'e' },
	{ "workdir", required_argument, NULL, 'w' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_exec = {
	.name = "exec",
	.usage = "ID [--fresh] [--timeout S] [--json] [--env K=V]... "
	    "[--workdir D] -- CMD...",
	.summary = "run CMD in the sandbox; its exit code passes through",
	.help = "CMD runs in the sandbox's session container, or with --fresh "
	    "in a new container over the same workspace. Its output and exit "
	    "code pass through; --json prints one object instead.",
	.options = cmd_exec_options,
	.args_min = 1,
	.args_max = 1,
	.flags = CMD_ID | CMD_DASH,
	.exec = cmd_exec_exec,
};

static int
cmd_exec_parse_opt(struct cmd_exec_args *a, int ch, const char *arg)
{
	struct sandbox_meta	 tmp;
	char			*cause = NULL;
	int			 rv = 0;

	if (ch == 'f')
		a->fresh = 1;
	else if (ch == 'j')
		a->json = 1;
	else if (ch == 'w') {
		if (arg[0] != '/')
			return cmd_usage_error(&cmd_exec, "--workdir '%s' is "
			    "not an absolute path", arg);
		a->workdir = arg;
	} else if (ch == 'e' || ch == 't') {
		sandbox_meta_init(&tmp);
		if (sandbox_opt(ch == 'e' ? &a->env : &tmp, ch == 'e' ? "env" :
		    "timeout", arg, &cause) == -1) {
			rv = cmd_usage_error(&cmd_exec, "%s", cause);
			free(cause);
		} else if (ch == 't')
			a->timeout = tmp.timeout;
		sandbox_meta_release(&tmp);
	}
	return rv;
}

/* The options into a; the ID and the command after "--". */
static int
cmd_exec_parse(struct cmd_args *args, struct cmd_exec_args *a)
{
	const struct cmd_opt	*o;
	int			 rv;

	while ((o = cmd_args_next(args)) != NULL)
		if ((rv = cmd_exec_parse_opt(a, o->ch, o->arg)) != 0)
			return rv;
	a->id = args->argv[0];
	a->cmd = args->cmd;
	return 0;
}

/* The container to run in: the session one, or a fresh one. */
static int
cmd_exec_target(struct docker *d, const struct sandbox_meta *m, int fresh,
    char **cid, int *pid, char **cause)
{
	struct docker_cinfo	ci;
	struct sandbox_mounts	mt;
	char			work[PATH_MAX];

	if (!fresh) {
		if (sandbox_ensure_running(d, m, &ci, cause) == -1)
			return -1;
		*cid = util_xstrdup(ci.id);
		*pid = ci.pid;
		return 0;
	}
	state_path(work, sizeof(work), m->id, "work");
	memset(&mt, 0, sizeof(mt));
	mt.work = work;
	if ((mt.probe = probe_mount_path(sandbox_gvisor(m), cause)) == NULL)
		return -1;
	if (sandbox_ensure_running(d, m, &ci, cause) == -1 ||
	    sandbox_fresh_mark(m->id, 0, cause) == -1)
		return -1;
	return sandbox_container_up(d, m, &mt, "fresh", cid, pid, cause);
}

/*
 * The seal of a session sandbox, confirmed before every command: when it
 * drifted (flushed, the proxy gone) nothing runs, the event is recorded,
 * and the instance is marked unchecked so that the next exec probes and
 * seals it again from scratch, as after a restart.
 */
static int
cmd_exec_seal_holds(const struct sandbox_meta *m, int pid, char **cause)
{
	char	*why = NULL, *c2 = NULL, path[PATH_MAX];

	if (strcmp(m->network, "proxy") != 0 ||
	    netseal_check(pid, m->proxy, &why) == 0)
		return 0;
	if (runrec_event("sandbox.seal_drift", m->id, why, &c2) == -1) {
		log_warnx("warning: event not recorded: %s",
		    c2);
		free(c2);
	}
	if (state_path(path, sizeof(path), m->id, "checked") == 0)
		unlink(path);
	util_cause(cause, "refused: the network seal of sandbox %s does "
	    "not hold (%s); the command did not run. The next exec checks "
	    "the sandbox again and seals it; if the proxy is gone, start it "
	    "with `sandgate proxy start`", m->id, why);
	free(why);
	return -1;
}

static void
cmd_exec_output(const struct exec_result *r, const char *run_id,
    const struct sandbox_meta *m, long long timeout, int json)
{
	json_t	*o;

	if (!json) {
		exec_report(r, timeout, m->memory, m->pids);
		return;
	}
	if ((o = exec_result_json(r, run_id)) != NULL) {
		json_object_set_new(o, "notices", exec_notices(r, timeout,
		    m->memory, m->pids));
		json_dumpf(o, stdout, JSON_COMPACT);
		putchar('\n');
		fflush(stdout);
	}
	json_decref(o);
	exec_report(r, timeout, m->memory, m->pids);
}

/* What exec_run() is given for command a in sandbox m. */
static void
cmd_exec_opts(struct exec_opts *o, const struct sandbox_meta *m,
    const struct cmd_exec_args *a, const char *run, const char *runs)
{
	sandbox_exec_opts(o, m, a->cmd, run, a->timeout > 0 ? a->timeout :
	    m->timeout, SG_OUTPUT_CAP_DEFAULT);
	o->workdir = a->workdir;
	o->waited_us = a->waited_us;
	o->live = !a->json;
	o->evidence_dir = runs;
	o->evidence_max = m->disk;
	o->idle = auditkey_runs_warm;	/* the record's key, see exec.h */
}

/* The exec's run record; res NULL when the command did not run. */
static void
cmd_exec_record(const struct sandbox_meta *m, const struct cmd_exec_args *a,
    const char *run, int timeout, const struct exec_result *res,
    const char *cleanup)
{
	struct runrec	 rr;
	char		*cause = NULL;

	memset(&rr, 0, sizeof(rr));
	rr.kind = "exec";
	rr.run_id = run;
	rr.meta = m;
	rr.argv = a->cmd;
	rr.timeout = timeout;
	rr.fresh = a->fresh;
	rr.res = res;
	rr.cleanup = cleanup;
	if (runrec_append(&rr, &cause) == -1) {
		log_warnx("warning: run record not written: %s", cause);
		free(cause);
	}
}

/*
 * The end of a fresh container: its address leaves the proxy, it is
 * removed (*clean: why not), and then its mark goes, so the next exec
 * asks Docker for no list.
 */
static void
cmd_exec_fresh_end(struct docker *d, const struct sandbox_meta *m,
    const char *cid, char **clean)
{
	char	*ucause = NULL;

	/* not forgotten by each replica: left to the sweep (atk1921i F9) */
	if (strcmp(m->network, "proxy") == 0 &&
	    sandbox_fresh_unregister(d, m->id, cid) == -1)
		return;
	if (docker_container_remove(d, cid, clean) == -1)
		log_warnx("cannot remove container %s: %s", cid, *clean);
	else if (sandbox_fresh_mark(m->id, 1, &ucause) == -1) {
		log_warnx("%s", ucause);
		free(ucause);
	}
}

static int
cmd_exec_in_sandbox(struct docker *d, struct sandbox_meta *m,
    const struct cmd_exec_args *a)
{
	struct exec_opts	 o;
	struct exec_result	 r;
	struct proxyctl_exec	 px;
	json_t			*env = NULL, *blocks;
	char			 run[STATE_ID_LEN + 1], runs[PATH_MAX];
	char			*cid = NULL, *cause = NULL, *clean = NULL;
	char			*ucause = NULL;
	int			 pid = 0, rv = SG_EXIT_ERROR, ran = 0;
	int			 asked = 0;

	memset(&r, 0, sizeof(r));
	state_new_id(run, "run");
	state_path(runs, sizeof(runs), m->id, "runs");
	cmd_exec_opts(&o, m, a, run, runs);
	if (m->uid == SANDBOX_UID) {
		util_cause(&cause, "sandbox %s was made by an earlier "
		    "sandgate (it runs as uid %d, shared with other sandboxes "
		    "and a host account): discard it and create it again",
		    m->id, SANDBOX_UID);
		goto out;
	}
	/* Fresh containers of execs whose sandgate died go first. */
	if (sandbox_fresh_sweep(d, m->id, SANDBOX_SWEEP_MARKED,
	    &ucause) == -1) {
		log_warnx("cannot look for the sandbox's left fresh "
		    "containers: %s", ucause);
		free(ucause);
		ucause = NULL;
	}
	if (cmd_exec_target(d, m, a->fresh, &cid, &pid, &cause) == -1 ||
	    (!a->fresh && cmd_exec_seal_holds(m, pid, &cause) == -1))
		goto out;
	if (strcmp(m->network, "proxy") == 0) {
		/*
		 * Runs whose sandgate died, and ends a replica did not take:
		 * their credentials end first.
		 */
		(void)exec_active_sweep(runs, 0, proxyctl_exec_gone, m->id);
		(void)execend_retry(m->id, 0, execend_warn, NULL);
		proxyctl_exec_begin(&px, m->id, run, m->allow, o.timeout);
		asked = 1;
	}
	o.env = env = sandbox_exec_env(m, asked ? px.token : NULL,
	    a->env.env);
	ran = exec_run(d, cid, pid, &o, &r, &cause) == 0;
	blocks = asked ? proxyctl_exec_finish(&px, m->id, run) : NULL;
	if (!ran) {
		json_decref(blocks);
		if (asked)
			json_decref(px.replicas);
		goto out;
	}
	r.network_blocked = blocks;
	r.network_blocked_truncated = asked && px.truncated;
	r.network_replicas = asked ? px.replicas : NULL;
	r.network_end_owed = asked && px.end_owed;
	rv = r.exit_code;
out:
	json_decref(env);
	if (a->fresh && cid != NULL)
		cmd_exec_fresh_end(d, m, cid, &clean);
	if (cause != NULL)
		log_warnx("%s", cause);
	if (ran)
		cmd_exec_output(&r, run, m, o.timeout, a->json);
	cmd_exec_record(m, a, run, o.timeout, ran ? &r : NULL, clean);
	free(cause);
	free(clean);
	free(cid);
	exec_result_release(&r);
	return rv;
}

/*
 * The sandbox's lock, shared. An apply or a discard holds it exclusive
 * for as long as it takes: an exec then waits within its --timeout (the
 * agent's bound is wall clock, from outside) and ends at SIGINT/SIGTERM,
 * nothing run (atk42l F2: it waited unbounded, deaf to Ctrl-C, and ran
 * the command after). The timeout when not given is the sandbox's, read
 * without the lock (meta.json is replaced whole). The fd; -1 with errno
 * (ETIMEDOUT, EINTR, ENOENT: no sandbox) and *timeout the bound.
 */
static int
cmd_exec_lock(struct cmd_exec_args *a, long long *timeout)
{
	struct sandbox_meta	 m;
	uint64_t		 t0 = util_now_us(), until;
	int			 lock;

	*timeout = a->timeout;
	/* an until_us already past: one try */
	if ((lock = state_lock_wait(a->id, 0, 1, NULL)) != -1 ||
	    errno != ETIMEDOUT)
		return lock;
	if (*timeout <= 0) {
		/* load inits m, and m is released whatever it says */
		if (sandbox_meta_load(a->id, &m, NULL) == 0)
			*timeout = m.timeout;
		sandbox_meta_release(&m);
	}
	until = *timeout > 0 ? t0 + (uint64_t)*timeout * 1000000 : 0;
	lock = state_lock_wait(a->id, 0, until, exec_signal_pending);
	a->waited_us = util_now_us() - t0;
	/*
	 * Granted at or past the deadline (the wait's last nap, or this
	 * process not scheduled meanwhile): let go unused, the command
	 * must not start after its --timeout (atk43f F1).
	 */
	if (lock != -1 && until != 0 && t0 + a->waited_us >= until) {
		state_unlock(lock);
		errno = ETIMEDOUT;
		return -1;
	}
	return lock;
}

/*
 * The lock was not had within the timeout (sig 0) or a signal ended the
 * wait: the command did not run. Its result is said as any run's (the
 * JSON object with timed_out, the run record) from the sandbox's meta
 * read without the lock; 124 or 128 + sig. Without meta (the sandbox went
 * meanwhile), 125.
 */
static int
cmd_exec_unrun(struct cmd_exec_args *a, long long timeout, int sig)
{
	struct sandbox_meta	 m;
	struct exec_result	 r;
	char			 run[STATE_ID_LEN + 1];
	char			*cause = NULL;
	uint64_t		 ns;

	if (sandbox_meta_load(a->id, &m, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		sandbox_meta_release(&m);
		return SG_EXIT_ERROR;
	}
	memset(&r, 0, sizeof(r));
	r.cmd_exit = -1;
	r.timed_out = sig == 0;
	r.signal = sig;
	r.exit_code = sig != 0 ? 128 + sig : SG_EXIT_TIMEOUT;
	r.duration_ms = a->waited_us / 1000;
	r.unstarted = sig != 0 ? "an apply or a discard held the sandbox "
	    "until the signal" : "an apply or a discard held the sandbox all "
	    "that time";
	clock_gettime(CLOCK_REALTIME, &r.end);
	ns = (uint64_t)r.end.tv_sec * 1000000000u + (uint64_t)r.end.tv_nsec -
	    a->waited_us * 1000u;
	r.start.tv_sec = (time_t)(ns / 1000000000u);
	r.start.tv_nsec = (long)(ns % 1000000000u);
	state_new_id(run, "run");
	cmd_exec_output(&r, run, &m, timeout, a->json);
	cmd_exec_record(&m, a, run, (int)timeout, &r, NULL);
	sandbox_meta_release(&m);
	return r.exit_code;
}

static int
cmd_exec_exec(struct cmd_args *args)
{
	struct cmd_exec_args	 a;
	struct sandbox_meta	 m;
	struct docker		*d = NULL;
	char			*cause = NULL;
	long long		 timeout;
	int			 rv, lock;

	memset(&a, 0, sizeof(a));
	sandbox_meta_init(&a.env);
	if ((rv = cmd_exec_parse(args, &a)) != 0) {
		sandbox_meta_release(&a.env);
		return rv;
	}
	sandbox_meta_init(&m);
	rv = SG_EXIT_ERROR;
	exec_signals_install();
	if ((lock = cmd_exec_lock(&a, &timeout)) == -1) {
		if (errno == ETIMEDOUT || errno == EINTR)
			rv = cmd_exec_unrun(&a, timeout, errno == EINTR ?
			    exec_signal_pending() : 0);
		else
			log_warnx("no sandbox '%s'%s%s", a.id,
			    errno == ENOENT ? "" : ": ",
			    errno == ENOENT ? "" : strerror(errno));
		goto out;
	}
	sandbox_meta_release(&m);
	if (sandbox_meta_load(a.id, &m, &cause) == -1)
		log_warnx("%s", cause);
	else if ((d = sandbox_docker()) != NULL)
		rv = cmd_exec_in_sandbox(d, &m, &a);
	state_unlock(lock);
out:
	free(cause);
	docker_free(d);
	sandbox_meta_release(&m);
	sandbox_meta_release(&a.env);
	return rv;
}
