/*
 * runrec.h: the run record every exec and run appends to
 * state_record_dir()/runs.jsonl (the controller's own folder, never the
 * proxy's), through the hash-chained event log opened shared, so several
 * sandgate processes can append at once; and the controller's other
 * events there (a seal that drifted).
 *
 * Fields after ts/seq: event ("run.exec" | "run.run"), run, sandbox,
 * command (the argv joined with spaces, made log-safe and cut at
 * SG_LOG_FIELD_MAX), argv, limits {cpus, memory, pids, disk, tmp_size,
 * timeout}, image, image_id, start, end, duration_ms, exit_code,
 * cmd_exit, flags {fresh, timed_out, oom_killed, pids_limit_hit,
 * container_stopped, sandbox_killed, output_truncated, signal}, cleanup
 * ("ok" | "failed: ..." | exec_cleanup's). Each record is followed by a checkpoint signed with
 * the controller's key (auditkey.h), so runs.jsonl always ends signed.
 */
#ifndef SG_RUNREC_H
#define SG_RUNREC_H

#include <jansson.h>

struct exec_result;
struct sandbox_meta;

struct runrec {
	const char			*kind;		/* "exec" | "run" */
	const char			*run_id;
	const struct sandbox_meta	*meta;
	char *const			*argv;
	long long			 timeout;	/* as enforced */
	int				 fresh;
	const struct exec_result	*res;		/* NULL: never ran */
	const char			*cleanup;	/* why not clean; NULL:
							   exec_cleanup(res),
							   else "ok" (a run
							   passes "ok" once
							   its sandbox is
							   gone) */
};

/* The record's fields (new reference); pure, for tests. */
json_t	*runrec_fields(const struct runrec *);

/*
 * Append the record. 0, or -1 with *cause (the caller warns; a command
 * that ran is not failed because its record could not be written).
 */
int	 runrec_append(const struct runrec *, char **cause);

/*
 * Append {"event": event, "sandbox": sandbox, "detail": detail} (detail
 * made log-safe). 0, or -1 with *cause.
 */
int	 runrec_event(const char *event, const char *sandbox,
	    const char *detail, char **cause);

#endif
