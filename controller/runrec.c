/* runrec.c: run records in runs.jsonl; see runrec.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "auditkey.h"
#include "eventlog.h"
#include "exec.h"
#include "runrec.h"
#include "sandbox.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"

static char	*runrec_command(char *const *);
static json_t	*runrec_time(const struct timespec *);
static int	 runrec_write(json_t *, char **);

/* argv joined with spaces, at most SG_LOG_FIELD_MAX bytes. */
static char *
runrec_command(char *const *argv)
{
	char	*s;
	size_t	 len = 0, n, i;

	s = util_xmalloc(SG_LOG_FIELD_MAX + 1);
	s[0] = '\0';
	for (i = 0; argv[i] != NULL && len < SG_LOG_FIELD_MAX; i++) {
		if (i > 0)
			s[len++] = ' ';
		n = strlen(argv[i]);
		if (n > SG_LOG_FIELD_MAX - len)
			n = SG_LOG_FIELD_MAX - len;
		memcpy(s + len, argv[i], n);
		len += n;
	}
	s[len] = '\0';
	return s;
}

static json_t *
runrec_time(const struct timespec *ts)
{
	char	buf[UTIL_TS_LEN];

	if (ts->tv_sec == 0)
		return json_null();
	util_rfc3339(ts, buf);
	return json_string(buf);
}

json_t *
runrec_fields(const struct runrec *r)
{
	const struct sandbox_meta	*m = r->meta;
	const struct exec_result	*x = r->res;
	const char			*cleanup = r->cleanup;
	json_t				*o, *argv;
	char				*cmd, ev[32];
	size_t				 i;

	argv = json_array();
	for (i = 0; r->argv[i] != NULL && i < 256; i++)
		json_array_append_new(argv, eventlog_str(r->argv[i]));
	cmd = runrec_command(r->argv);
	snprintf(ev, sizeof(ev), "run.%s", r->kind);
	o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:{s:f, s:I, s:I, s:I, s:I, "
	    "s:I}, s:s?, s:s?}",
	    "event", ev, "run", r->run_id, "sandbox", m->id,
	    "command", eventlog_str(cmd), "argv", argv,
	    "limits", "cpus", m->cpus, "memory", (json_int_t)m->memory,
	    "pids", (json_int_t)m->pids, "disk", (json_int_t)m->disk,
	    "tmp_size", (json_int_t)m->tmp_size,
	    "timeout", (json_int_t)r->timeout,
	    "image", m->image, "image_id", m->image_id);
	free(cmd);
	if (o == NULL)
		return NULL;
	json_object_set_new(o, "start", x ? runrec_time(&x->start) :
	    json_null());
	json_object_set_new(o, "end", x ? runrec_time(&x->end) : json_null());
	json_object_set_new(o, "duration_ms", x ?
	    json_integer((json_int_t)x->duration_ms) : json_null());
	json_object_set_new(o, "exit_code", x ? json_integer(x->exit_code) :
	    json_integer(125));
	json_object_set_new(o, "cmd_exit", x && x->cmd_exit >= 0 ?
	    json_integer(x->cmd_exit) : json_null());
	json_object_set_new(o, "flags", json_pack("{s:b, s:b, s:b, s:b, s:b, "
	    "s:b, s:b, s:b, s:i}", "fresh", r->fresh,
	    "timed_out", x ? x->timed_out : 0,
	    "oom_killed", x ? x->oom_killed : 0,
	    "pids_limit_hit", x ? x->pids_limit_hit : 0,
	    "container_stopped", x ? exec_stopped(x) : 0,
	    "sandbox_killed", x ? x->sandbox_killed : 0,
	    "output_truncated", x ? x->output_truncated : 0,
	    "not_started", x ? x->unstarted != NULL : 0,
	    "signal", x ? x->signal : 0));
	if (cleanup == NULL && x != NULL)
		cleanup = exec_cleanup(x);
	json_object_set_new(o, "cleanup", eventlog_str(cleanup ? cleanup :
	    "ok"));
	return o;
}

/*
 * Append fields (borrowed) to runs.jsonl, signed: under the key's lock
 * (auditkey_runs_lock()), so that no wait is on a file in the records
 * folder. 0, or -1 with *cause.
 */
static int
runrec_write(json_t *o, char **cause)
{
	struct eventlog_opts	 opts;
	struct eventlog		*log;
	struct checkpoint	*ck;
	int			 rv, lockfd;

	memset(&opts, 0, sizeof(opts));
	opts.shared = opts.excluded = 1;
	if (state_mkdirs(state_record_dir(), 0750) == -1) {
		util_cause(cause, "cannot create '%s': %s",
		    state_record_dir(), strerror(errno));
		return -1;
	}
	if ((lockfd = auditkey_runs_lock(cause)) == -1)
		return -1;
	/* A record not written is counted in the anchor (atk20r16 F1). */
	if ((log = eventlog_open(state_record_dir(), "runs.jsonl", &opts,
	    cause)) == NULL) {
		auditkey_runs_lost(*cause);
		close(lockfd);
		return -1;
	}
	ck = auditkey_runs_signer(log);
	/* Never unsigned past an anchored close (atk20r17 F4): lost. */
	if (ck == NULL && auditkey_runs_anchored()) {
		util_cause(cause, "not writing an unsigned record to '%s', "
		    "which has an anchor: its key cannot sign (see above); "
		    "counted lost", eventlog_path(log));
		rv = -1;
	} else if ((rv = eventlog_append(log, o)) == -1)
		util_cause(cause, "cannot append to '%s': %s",
		    eventlog_path(log), eventlog_error(log));
	/* With a signer, its close writes the outage into the anchor. */
	if (rv == -1 && ck == NULL)
		auditkey_runs_lost(*cause);
	auditkey_runs_close(ck);
	eventlog_close(log);
	close(lockfd);
	return rv;
}

int
runrec_append(const struct runrec *r, char **cause)
{
	json_t	*o;
	int	 rv;

	if ((o = runrec_fields(r)) == NULL) {
		util_cause(cause, "cannot build the run record");
		return -1;
	}
	rv = runrec_write(o, cause);
	json_decref(o);
	return rv;
}

int
runrec_event(const char *event, const char *sandbox, const char *detail,
    char **cause)
{
	json_t	*o;
	int	 rv;

	if ((o = json_pack("{s:s, s:s, s:o}", "event", event, "sandbox",
	    sandbox, "detail", eventlog_str(detail))) == NULL) {
		util_cause(cause, "cannot build the event");
		return -1;
	}
	rv = runrec_write(o, cause);
	json_decref(o);
	return rv;
}
