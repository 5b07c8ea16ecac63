/* cmd_exec.c: `sandgate exec ID -- CMD...`: one command in a sandbox. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "docker.h"
#include "exec.h"
#include "netseal.h"
#include "probe.h"
#include "proxyctl.h"
#include "runrec.h"
#include "sandbox.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"

#define EXEC_HELP_DONE	(-1)

struct exec_args {
	const char	*id;
	char *const	*cmd;		/* after "--" */
	int		 fresh;
	int		 json;
	long long	 timeout;	/* 0: the sandbox's */
	const char	*workdir;
	struct sandbox_meta env;	/* only .env is used */
};

static int	exec_cmd_exec(int, char **);
static int	exec_parse(int, char **, struct exec_args *);
static int	exec_parse_opt(struct exec_args *, int, const char *);
static int	exec_in_sandbox(struct docker *, struct sandbox_meta *,
		    const struct exec_args *);
static int	exec_target(struct docker *, const struct sandbox_meta *,
		    int, char **, int *, char **);
static int	exec_seal_holds(const struct sandbox_meta *, int, char **);
static void	exec_output(const struct exec_result *, const char *,
		    const struct sandbox_meta *, long long, int);

const struct cmd_entry cmd_exec = {
	.name = "exec",
	.usage = "ID [--fresh] [--timeout S] [--json] [--env K=V]... "
	    "[--workdir D] -- CMD...",
	.summary = "run CMD in the sandbox (--fresh: in a new container over "
	    "the same workspace); its exit code passes through",
	.exec = exec_cmd_exec,
};

static const struct option exec_longopts[] = {
	{ "fresh", no_argument, NULL, 'f' },
	{ "timeout", required_argument, NULL, 't' },
	{ "json", no_argument, NULL, 'j' },
	{ "env", required_argument, NULL, 'e' },
	{ "workdir", required_argument, NULL, 'w' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 }
};

static int
exec_parse_opt(struct exec_args *a, int ch, const char *arg)
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

/* Options before "--", then ID; the command after it. */
static int
exec_parse(int argc, char **argv, struct exec_args *a)
{
	int	ch, dash, rv;

	for (dash = 1; dash < argc && strcmp(argv[dash], "--") != 0; dash++)
		;
	opterr = 0;
	optind = 1;
	while (optind < dash) {
		/* the ID may come before, between or after the options */
		if (argv[optind][0] != '-' && a->id == NULL) {
			a->id = argv[optind++];
			continue;
		}
		if ((ch = getopt_long(dash, argv, "+:h", exec_longopts,
		    NULL)) == -1)
			break;
		if (ch == 'h') {
			cmd_help(&cmd_exec);
			return EXEC_HELP_DONE;
		}
		if (ch == '?' || ch == ':')
			return cmd_usage_error(&cmd_exec, "%s option '%s'",
			    ch == '?' ? "unknown" : "missing value for",
			    argv[optind - 1]);
		if ((rv = exec_parse_opt(a, ch, optarg)) != 0)
			return rv;
	}
	if (optind < dash && a->id == NULL)
		a->id = argv[optind++];
	if (a->id == NULL || optind != dash)
		return cmd_usage_error(&cmd_exec, "expected ID then -- CMD");
	if (dash + 1 >= argc)
		return cmd_usage_error(&cmd_exec, "no command after --");
	a->cmd = argv + dash + 1;
	return 0;
}

/* The container to run in: the session one, or a fresh one. */
static int
exec_target(struct docker *d, const struct sandbox_meta *m, int fresh,
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
	if ((mt.probe = probe_path()) == NULL) {
		util_cause(cause, "cannot find the sandgate-probe binary "
		    "(set SANDGATE_PROBE)");
		return -1;
	}
	if (sandbox_ensure_running(d, m, &ci, cause) == -1)
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
exec_seal_holds(const struct sandbox_meta *m, int pid, char **cause)
{
	char	*why = NULL, *c2 = NULL, path[PATH_MAX];

	if (strcmp(m->network, "proxy") != 0 ||
	    netseal_check(pid, m->proxy, &why) == 0)
		return 0;
	if (runrec_event("sandbox.seal_drift", m->id, why, &c2) == -1) {
		fprintf(stderr, "sandgate: warning: event not recorded: %s\n",
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
exec_output(const struct exec_result *r, const char *run_id,
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

static int
exec_in_sandbox(struct docker *d, struct sandbox_meta *m,
    const struct exec_args *a)
{
	struct exec_opts	 o;
	struct exec_result	 r;
	struct runrec		 rr;
	char			 run[STATE_ID_LEN + 1], runs[PATH_MAX];
	char			*cid = NULL, *cause = NULL, *clean = NULL;
	int			 pid = 0, rv = SG_EXIT_ERROR, ran = 0;
	int			 asked = 0;
	long long		 seq = 0;

	memset(&o, 0, sizeof(o));
	memset(&r, 0, sizeof(r));
	state_new_id(run, "run");
	state_path(runs, sizeof(runs), m->id, "runs");
	o.argv = a->cmd;
	o.env = a->env.env;
	o.workdir = a->workdir;
	o.run_id = run;
	o.inside = sandbox_gvisor(m);
	o.nproc = m->pids;
	o.uid = m->uid;
	o.timeout = a->timeout > 0 ? a->timeout : m->timeout;
	o.live = !a->json;
	o.output_cap = SG_OUTPUT_CAP_DEFAULT;
	o.evidence_dir = runs;
	if (m->uid == SANDBOX_UID) {
		util_cause(&cause, "sandbox %s was made by an earlier "
		    "sandgate (it runs as uid %d, shared with other sandboxes "
		    "and a host account): discard it and create it again",
		    m->id, SANDBOX_UID);
		goto out;
	}
	o.evidence_max = m->disk;
	if (exec_target(d, m, a->fresh, &cid, &pid, &cause) == -1 ||
	    (!a->fresh && exec_seal_holds(m, pid, &cause) == -1))
		goto out;
	if (strcmp(m->network, "proxy") == 0 && proxyctl_log_seq(&seq) == 0)
		asked = 1;
	if (exec_run(d, cid, pid, &o, &r, &cause) == -1)
		goto out;
	ran = 1;
	if (asked)
		r.network_blocked = proxyctl_blocks(m->id, seq);
	rv = r.exit_code;
out:
	if (a->fresh && cid != NULL &&
	    docker_container_remove(d, cid, &clean) == -1)
		fprintf(stderr, "sandgate: cannot remove container %s: %s\n",
		    cid, clean);
	if (cause != NULL)
		fprintf(stderr, "sandgate: %s\n", cause);
	if (ran)
		exec_output(&r, run, m, o.timeout, a->json);
	memset(&rr, 0, sizeof(rr));
	rr.kind = "exec";
	rr.run_id = run;
	rr.meta = m;
	rr.argv = a->cmd;
	rr.timeout = o.timeout;
	rr.fresh = a->fresh;
	rr.res = ran ? &r : NULL;
	rr.cleanup = clean ? clean : r.kill_failed ? "processes may remain" :
	    "ok";
	free(cause);
	cause = NULL;
	if (runrec_append(&rr, &cause) == -1) {
		fprintf(stderr, "sandgate: warning: run record not written: "
		    "%s\n", cause);
		free(cause);
	}
	free(clean);
	free(cid);
	exec_result_release(&r);
	return rv;
}

static int
exec_cmd_exec(int argc, char **argv)
{
	struct exec_args	 a;
	struct sandbox_meta	 m;
	struct docker		*d = NULL;
	char			*cause = NULL;
	int			 rv, lock;

	memset(&a, 0, sizeof(a));
	sandbox_meta_init(&a.env);
	if ((rv = exec_parse(argc, argv, &a)) != 0) {
		sandbox_meta_release(&a.env);
		return rv == EXEC_HELP_DONE ? SG_EXIT_OK : rv;
	}
	sandbox_meta_init(&m);
	rv = SG_EXIT_ERROR;
	if (state_valid_id(a.id) == -1) {
		fprintf(stderr, "sandgate: '%s' is not a sandbox id\n", a.id);
		goto out;
	}
	if ((lock = state_lock(a.id, 0)) == -1) {
		fprintf(stderr, "sandgate: no sandbox '%s'%s%s\n", a.id,
		    errno == ENOENT ? "" : ": ",
		    errno == ENOENT ? "" : strerror(errno));
		goto out;
	}
	sandbox_meta_release(&m);
	if (sandbox_meta_load(a.id, &m, &cause) == -1)
		fprintf(stderr, "sandgate: %s\n", cause);
	else if ((d = sandbox_docker()) != NULL) {
		exec_signals_install();
		rv = exec_in_sandbox(d, &m, &a);
	}
	state_unlock(lock);
out:
	free(cause);
	docker_free(d);
	sandbox_meta_release(&m);
	sandbox_meta_release(&a.env);
	return rv;
}
