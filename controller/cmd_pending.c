/*
 * cmd_pending.c: `sandgate pending [ID] [--json] [--follow]`: the
 * destinations blocked so far, per sandbox, for a person to review
 * (docs/policy.md, "Approving a blocked destination").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "log.h"
#include "logfollow.h"
#include "logset.h"
#include "pending.h"
#include "proxyctl.h"
#include "state.h"
#include "util.h"

struct pending_opts {
	const char	*log_dir;
	int		 json;
	int		 follow;
};

struct pending_follow {
	struct pending	*p;
	int		 json;
};

static int	cmd_pending_exec(struct cmd_args *);
static json_t	*pending_replicas(struct pending *);
static int	pending_replicas_show(json_t *, int);
static void	pending_show(const struct pending_dest *, int);
static void	pending_follow_cb(json_t *, void *);

static const struct option cmd_pending_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ "follow", no_argument, NULL, 'f' },
	{ "log-dir", required_argument, NULL, 'l' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_pending = {
	.name = "pending",
	.usage = "[ID] [--json] [--follow] [--log-dir DIR]",
	.summary = "destinations blocked so far, per sandbox, to review",
	.help =
	    "One line per sandbox, destination and reason the proxy blocked,\n"
	    "from its security-event log (--log-dir, default "
	    "$SANDGATE_LOG_DIR):\n"
	    "attempts, first and last time, and the runs that sent them.\n"
	    "ID keeps one sandbox's. --json prints one JSON object per line.\n"
	    "--follow then prints each destination blocked for the first\n"
	    "time as it comes, until killed; past 16384 destinations it\n"
	    "forgets the one blocked longest ago, shown again if it recurs.\n"
	    "With several replicas in SANDGATE_PROXY_CONTROL (and no\n"
	    "--log-dir), the blocks each replica keeps, asked over its\n"
	    "control API and merged; --json then ends with a line\n"
	    "{\"replicas\":[{\"name\",\"status\",\"dropped\"}]}; a replica\n"
	    "that did not answer, or whose destinations did not fit its\n"
	    "share of the table, is named (exit 125), as are destinations\n"
	    "left out past the table's size.\n",
	.options = cmd_pending_options,
	.args_min = 0,
	.args_max = 1,
	.flags = CMD_ID | CMD_ID_GONE_OK,
	.exec = cmd_pending_exec,
};

static void
pending_show(const struct pending_dest *d, int json)
{
	json_t	*o;

	if (!json) {
		pending_dest_print(d);
		return;
	}
	o = pending_dest_json(d);
	if (o != NULL)
		json_dumpf(o, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
	putchar('\n');
	json_decref(o);
}

/* A new destination while following: shown the first time only. */
static void
pending_follow_cb(json_t *o, void *arg)
{
	struct pending_follow		*f = arg;
	const struct pending_dest	*d;
	int				 isnew;

	d = pending_event(f->p, o, &isnew);
	if (d != NULL && isnew)
		pending_show(d, f->json);
}

/*
 * Every replica's recent blocks (GET /blocks of every sandbox, all asked
 * at once) into p, each replica given an even share of the table so
 * that none crowds out the others; [{"name","status","dropped"}] of the
 * replicas: "ok" or why not, and the destinations past its share.
 */
static json_t *
pending_replicas(struct pending *p)
{
	struct proxyctl_ans	 a[PROXYCTL_REPLICAS_MAX];
	json_t			*out = json_array(), *r;
	char			*cause;
	size_t			 i, j, n = proxyctl_replicas();

	proxyctl_call_all("GET", "/blocks", NULL, a);
	for (i = 0; i < n; i++) {
		if (a[i].cause == NULL && a[i].status != 200)
			util_xasprintf(&a[i].cause, "HTTP %ld", a[i].status);
		cause = a[i].cause;
		pending_source(p, PENDING_DESTS_MAX / n);
		json_array_foreach(cause == NULL ? json_object_get(a[i].resp,
		    "blocks") : NULL, j, r)
			(void)pending_record(p, r);
		json_array_append_new(out, json_pack("{s:s, s:s, s:I}",
		    "name", proxyctl_replica_name(i), "status", cause ? cause :
		    "ok", "dropped", (json_int_t)p->src_dropped));
	}
	proxyctl_ans_free(a, n);
	return out;
}

/*
 * After the blocks: the replicas line (--json), and a warning for each
 * replica that did not answer or whose destinations did not all fit.
 * SG_EXIT_OK, or SG_EXIT_ERROR when one did not.
 */
static int
pending_replicas_show(json_t *reps, int json)
{
	json_t		*r;
	const char	*st, *name;
	size_t		 i;
	json_int_t	 dropped;
	int		 rc = SG_EXIT_OK;

	if (json && (r = json_pack("{s:O}", "replicas", reps)) != NULL) {
		json_dumpf(r, stdout, JSON_COMPACT | JSON_ENSURE_ASCII);
		putchar('\n');
		json_decref(r);
	}
	json_array_foreach(reps, i, r) {
		st = json_string_value(json_object_get(r, "status"));
		name = json_string_value(json_object_get(r, "name"));
		dropped = json_integer_value(json_object_get(r, "dropped"));
		if (dropped > 0) {
			log_warnx("warning: proxy replica %s: %lld more "
			    "destinations not shown (past its share of %zu)",
			    name, (long long)dropped, PENDING_DESTS_MAX /
			    json_array_size(reps));
			rc = SG_EXIT_ERROR;
		}
		if (strcmp(st, "ok") == 0)
			continue;
		log_warnx("warning: proxy replica %s did not answer (%s): its "
		    "blocks are not shown", name, st);
		rc = SG_EXIT_ERROR;
	}
	return rc;
}

static int
cmd_pending_exec(struct cmd_args *args)
{
	struct pending_opts	 o = { NULL, 0, 0 };
	struct pending_follow	 f;
	const struct cmd_opt	*opt;
	struct pending		 p;
	struct logset		*set = NULL;
	struct logfollow	*follow;
	json_t			*reps = NULL;
	char			*cause = NULL;
	size_t			 i;
	int			 rc = SG_EXIT_OK;

	while ((opt = cmd_args_next(args)) != NULL) {
		switch (opt->ch) {
		case 'j': o.json = 1; break;
		case 'f': o.follow = 1; break;
		case 'l': o.log_dir = opt->arg; break;
		}
	}
	if (o.log_dir == NULL && proxyctl_replicas() > 1 && o.follow)
		return cmd_usage_error(args->entry, "--follow reads one log, "
		    "not several proxy replicas (SANDGATE_PROXY_CONTROL): "
		    "give --log-dir");
	pending_init(&p, args->argc > 0 ? args->argv[0] : NULL);
	if (o.log_dir == NULL && proxyctl_replicas() > 1)
		reps = pending_replicas(&p);
	else if (o.log_dir == NULL)
		o.log_dir = state_log_dir();
	if (reps == NULL && pending_read_log(&p, o.log_dir, o.follow ? &set :
	    NULL, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		pending_release(&p);
		return SG_EXIT_ERROR;
	}
	pending_sort(&p);
	for (i = 0; i < p.n; i++)
		pending_show(&p.v[i], o.json);
	if (reps != NULL)
		rc = pending_replicas_show(reps, o.json);
	else if (p.dropped > 0) {
		log_warnx("%zu more destinations not shown (more than %d)",
		    p.dropped, PENDING_DESTS_MAX);
		rc = SG_EXIT_ERROR;
	}
	json_decref(reps);
	fflush(stdout);
	if (o.follow) {
		pending_evict(&p);	/* never silent once the table is full */
		f.p = &p;
		f.json = o.json;
		rc = SG_EXIT_ERROR;
		if ((follow = logfollow_new(set)) != NULL)
			logfollow_run(follow, pending_follow_cb, &f);
		logfollow_free(follow);
	}
	logset_free(set);
	pending_release(&p);
	return rc;
}
