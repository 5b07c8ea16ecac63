/*
 * cmd_audit.c: `sandgate audit`: list, summarise, verify and follow the
 * hash-chained logs the proxy and the controller write (eventlog.h).
 *
 *   sandgate audit [FILTERS] [--json]          a table or JSON lines
 *   sandgate audit summary [FILTERS] [--json]  blocked attempts, counted
 *   sandgate audit verify [--key PUB]... [--anchor FILE] [FILES...]
 *                                              check the hash chain and,
 *                                              with keys, the checkpoints
 *                                              and the writer's anchor
 *   sandgate audit tail [-f] [-n N] [FILTERS]  the last events, following
 *   sandgate audit export --format ocsf [FILTERS] [FILES...]
 *                                              OCSF events, one per line
 *   sandgate audit key create|rotate|show [PATH]
 *                                              the checkpoint keys
 *
 * The log files are found and read by logread.h; strings are escaped
 * before they reach a terminal.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "auditkey.h"
#include "checkpoint.h"
#include "ckverify.h"
#include "cmd.h"
#include "eventlog.h"
#include "log.h"
#include "logread.h"
#include "logfollow.h"
#include "logset.h"
#include "logverify.h"
#include "ocsf.h"
#include "policy.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"

#define AUDIT_LOG		"security-events.jsonl"
#define AUDIT_TAIL_DEFAULT	10
#define AUDIT_TAIL_MAX		100000
#define AUDIT_FIELD_SHOW	256		/* table cells cut past this */
#define AUDIT_KEYS_MAX		16		/* verify --key, at most */
#define AUDIT_INSTANCES_MAX	16		/* --instance, at most */

enum audit_mode { AUDIT_LIST, AUDIT_SUMMARY, AUDIT_VERIFY, AUDIT_TAIL,
    AUDIT_EXPORT, AUDIT_KEY };

struct audit_args {
	enum audit_mode	 mode;
	const char	*dir;
	const char	*file;
	const char	*sandbox;
	const char	*reason;
	const char	*host;
	const char	*event;
	int64_t		 since;		/* microseconds since epoch; */
	int64_t		 until;		/* -1 when not given */
	int		 json;
	int		 follow;
	long long	 lines;
	char		**paths;	/* verify and export FILES... */
	int		 npaths;
	const char	*keys[AUDIT_KEYS_MAX];	/* verify --key */
	int		 nkeys;
	const char	*anchor;	/* verify --anchor */
	int		 dir_given;	/* --log-dir */
	const char	*format;	/* export --format */
	const char	*owner;		/* key --owner */
	/* --instance: security-events.NAME.jsonl of each replica */
	char		 instances[AUDIT_INSTANCES_MAX][96];
	int		 ninstances;
};

/* Counters for the summary: key -> count, in a JSON object. */
struct audit_summary {
	json_t		*dest, *sandbox, *reason;
	long long	 total;
};

struct audit_kv {
	const char	*key;
	long long	 n;
};

/* The last `size` matching events, for tail. */
struct audit_ring {
	json_t		**items;
	size_t		  size;
	size_t		  count;
};

static int	cmd_audit_list_exec(struct cmd_args *);
static int	cmd_audit_summary_exec(struct cmd_args *);
static int	cmd_audit_verify_exec(struct cmd_args *);
static int	cmd_audit_tail_exec(struct cmd_args *);
static int	cmd_audit_export_exec(struct cmd_args *);
static int	cmd_audit_key_exec(struct cmd_args *);
static int	audit_parse(struct cmd_args *, enum audit_mode,
		    struct audit_args *);
static int	audit_run(struct audit_args *);
static int	audit_parse_opt(const struct cmd_entry *, struct audit_args *,
		    int, const char *);
static int	audit_parse_time(const char *, int64_t *);
static const char *audit_default_dir(const char *);
static struct logset *audit_files(const struct audit_args *, int);
static int	audit_is_log_line(json_t *);
static void	audit_each_cb(json_t *, void *);
static int	audit_match(const struct audit_args *, json_t *);
static const char *audit_str(json_t *, const char *);
static void	audit_print(const struct audit_args *, json_t *);
static void	audit_print_row(json_t *);
static int	audit_each(const struct audit_args *, const struct logset *,
		    int, int, void (*)(const struct audit_args *, json_t *,
		    void *), void *);
static const char *audit_base(const char *);
static void	audit_list_cb(const struct audit_args *, json_t *, void *);
static void	audit_count(json_t *, const char *, json_int_t);
static void	audit_summary_cb(const struct audit_args *, json_t *,
		    void *);
static void	audit_summary_print(const struct audit_args *,
		    struct audit_summary *);
static int	audit_cmp_count(const void *, const void *);
static void	audit_summary_section(const char *, json_t *);
static int	audit_verify(const struct audit_args *);
static int	audit_verify_keys(const struct audit_args *,
		    struct ckverify *);
static int	audit_verify_anchor(const struct audit_args *,
		    struct ckverify *, char **);
static int	audit_verify_files(const struct audit_args *,
		    struct ckverify *, struct logset *);
static int	audit_verify_open(const struct audit_args *,
		    struct ckverify *, char **, struct logset **);
static int	audit_anchor_path(const struct audit_args *, char *, size_t);
static void	audit_anchor_bytes(const char *, char *, size_t);
static int	audit_anchor_of_log(const char *, struct checkpoint_anchor *);
static int	audit_live_log(const struct audit_args *);
static int	audit_verify_file(struct ckverify *, const struct logset *,
		    int);
static void	audit_verify_report(const struct ckverify *);
static void	audit_verify_moved(const char *, size_t, const char *, size_t);
static void	audit_verify_notes(const struct ckverify *, const char *);
static void	audit_export_cb(const struct audit_args *, json_t *, void *);
static int	audit_export(const struct audit_args *,
		    const struct logset *);
static int	audit_key(const struct audit_args *, const struct cmd_entry *,
		    int, char **);
static void	audit_ring_cb(const struct audit_args *, json_t *, void *);
static int	audit_tail(const struct audit_args *, const struct logset *);
static void	audit_follow_cb(json_t *, void *);

const struct cmd_entry cmd_audit;

static const struct option cmd_audit_options[] = {
	{ "log-dir", required_argument, NULL, 'd' },
	{ "file", required_argument, NULL, 'F' },
	{ "sandbox", required_argument, NULL, 's' },
	{ "since", required_argument, NULL, 'S' },
	{ "until", required_argument, NULL, 'U' },
	{ "reason", required_argument, NULL, 'r' },
	{ "host", required_argument, NULL, 'H' },
	{ "event", required_argument, NULL, 'e' },
	{ "json", no_argument, NULL, 'j' },
	{ "follow", no_argument, NULL, 'f' },
	{ "lines", required_argument, NULL, 'n' },
	{ "key", required_argument, NULL, 'k' },
	{ "anchor", required_argument, NULL, 'a' },
	{ "format", required_argument, NULL, 'o' },
	{ "owner", required_argument, NULL, 'u' },
	{ "instance", required_argument, NULL, 'I' },
	{ NULL, 0, NULL, 0 }
};

/* The options every verb takes: the log, its filters, --json. */
#define AUDIT_ACCEPTS	"dFsSUrHejI"

static const struct cmd_entry cmd_audit_list = {
	.name = "list",
	.usage = "[--log-dir DIR] [--file NAME] [FILTERS] [--json]",
	.summary = "the events that match the filters (the default)",
	.parent = &cmd_audit,
	.accepts = AUDIT_ACCEPTS,
	.args_max = 0,
	.exec = cmd_audit_list_exec,
};

static const struct cmd_entry cmd_audit_summary = {
	.name = "summary",
	.usage = "[--log-dir DIR] [--file NAME] [FILTERS] [--json]",
	.summary = "blocked attempts counted by destination, sandbox and "
	    "reason",
	.parent = &cmd_audit,
	.accepts = AUDIT_ACCEPTS,
	.args_max = 0,
	.exec = cmd_audit_summary_exec,
};

static const struct cmd_entry cmd_audit_verify = {
	.name = "verify",
	.usage = "[--key PUB]... [--anchor FILE] [--log-dir DIR] "
	    "[--file NAME] [FILES...]",
	.summary = "check the hash chain and signed checkpoints; exit 1 if "
	    "broken",
	.parent = &cmd_audit,
	.accepts = AUDIT_ACCEPTS "ka",
	.args_max = -1,
	.exec = cmd_audit_verify_exec,
};

static const struct cmd_entry cmd_audit_tail = {
	.name = "tail",
	.usage = "[-f] [-n N] [--log-dir DIR] [--file NAME] [FILTERS] "
	    "[--json]",
	.summary = "the last N events (-f: then follow the log)",
	.parent = &cmd_audit,
	.accepts = AUDIT_ACCEPTS "fn",
	.args_max = 0,
	.exec = cmd_audit_tail_exec,
};

static const struct cmd_entry cmd_audit_export = {
	.name = "export",
	.usage = "--format ocsf [--log-dir DIR] [--file NAME] [FILTERS] "
	    "[FILES...]",
	.summary = "the events as OCSF JSON lines",
	.parent = &cmd_audit,
	.accepts = AUDIT_ACCEPTS "o",
	.required = "o",
	.args_max = -1,
	.exec = cmd_audit_export_exec,
};

static const struct cmd_entry cmd_audit_key;

static const struct cmd_entry cmd_audit_key_create = {
	.name = "create",
	.usage = "[PATH] [--owner UID] [--file NAME] [--log-dir DIR]",
	.summary = "make the key (PATH: the default key of --file's log)",
	.parent = &cmd_audit_key,
	.accepts = AUDIT_ACCEPTS "u",
	.args_max = 1,
	.exec = cmd_audit_key_exec,
};

static const struct cmd_entry cmd_audit_key_rotate = {
	.name = "rotate",
	.usage = "[PATH] [--owner UID] [--file NAME] [--log-dir DIR]",
	.summary = "make the next key; the current one introduces it",
	.parent = &cmd_audit_key,
	.accepts = AUDIT_ACCEPTS "u",
	.args_max = 1,
	.exec = cmd_audit_key_exec,
};

static const struct cmd_entry cmd_audit_key_show = {
	.name = "show",
	.usage = "[PATH] [--file NAME] [--log-dir DIR]",
	.summary = "print the public key (and the next one, if waiting)",
	.parent = &cmd_audit_key,
	.accepts = AUDIT_ACCEPTS,
	.args_max = 1,
	.exec = cmd_audit_key_exec,
};

static const struct cmd_entry *const cmd_audit_key_verbs[] = {
	&cmd_audit_key_create, &cmd_audit_key_rotate, &cmd_audit_key_show,
	NULL
};

static const struct cmd_entry cmd_audit_key = {
	.name = "key",
	.usage = "create|rotate|show [PATH] [--owner UID] [--file NAME] "
	    "[--log-dir DIR]",
	.summary = "make, rotate or show the key that signs a log",
	.parent = &cmd_audit,
	.verbs = cmd_audit_key_verbs,
};

static const struct cmd_entry *const cmd_audit_verbs[] = {
	&cmd_audit_list, &cmd_audit_summary, &cmd_audit_verify,
	&cmd_audit_tail, &cmd_audit_export, &cmd_audit_key, NULL
};

const struct cmd_entry cmd_audit = {
	.name = "audit",
	.usage = "[list|summary|verify|tail|export|key] [OPTIONS] [ARGS]",
	.summary = "list, count, verify, follow or export the security-event "
	    "log",
	.help = "FILTERS: --sandbox ID, --since 2h|TIME, --until 2h|TIME, "
	    "--reason CODE,\n--host PATTERN, --event E. TIME is RFC 3339 "
	    "(2026-01-31T12:00:00Z, +hh:mm offsets\ntoo). --file NAME reads "
	    "another log of the folder (runs.jsonl: the run records).\n"
	    "--instance NAME (repeatable) reads proxy replica NAME's log,\n"
	    "security-events.NAME.jsonl: list, summary and export read them "
	    "together,\nverify checks each on its own.",
	.options = cmd_audit_options,
	.shortopts = "fn:",
	.verbs = cmd_audit_verbs,
	.verb_default = &cmd_audit_list,
};

/* "2h" (that long ago) or an RFC 3339 time; to microseconds. */
static int
audit_parse_time(const char *s, int64_t *us)
{
	return logread_parse_time(s, logread_now(), us);
}

/* The folder of log file name: the run records have one of their own. */
static const char *
audit_default_dir(const char *name)
{
	return strcmp(name, "runs.jsonl") == 0 ? state_record_dir() :
	    state_log_dir();
}

/* One option of audit_parse(); 0, or an exit code. */
static int
audit_parse_opt(const struct cmd_entry *e, struct audit_args *a, int ch,
    const char *arg)
{
	const char	*errstr;

	switch (ch) {
	case 'd':
		a->dir = arg;
		a->dir_given = 1;
		break;
	case 'a': a->anchor = arg; break;
	case 'F':
		if (strchr(arg, '/') != NULL || arg[0] == '.')
			return cmd_usage_error(e, "--file takes a "
			    "file name in the log folder, not '%s'", arg);
		a->file = arg;
		break;
	case 's': a->sandbox = arg; break;
	case 'r': a->reason = arg; break;
	case 'H': a->host = arg; break;
	case 'e': a->event = arg; break;
	case 'j': a->json = 1; break;
	case 'f': a->follow = 1; break;
	case 'o': a->format = arg; break;
	case 'u': a->owner = arg; break;
	case 'I':
		if (a->ninstances == AUDIT_INSTANCES_MAX)
			return cmd_usage_error(e, "at most %d --instance",
			    AUDIT_INSTANCES_MAX);
		if (!policy_set_name_valid(arg))
			return cmd_usage_error(e, "--instance '%s': 1-64 of "
			    "a-z, 0-9, '_' and '-'", arg);
		snprintf(a->instances[a->ninstances++],
		    sizeof(a->instances[0]), "security-events.%s.jsonl", arg);
		break;
	case 'k':
		if (a->nkeys == AUDIT_KEYS_MAX)
			return cmd_usage_error(e, "at most %d --key",
			    AUDIT_KEYS_MAX);
		a->keys[a->nkeys++] = arg;
		break;
	case 'S':
	case 'U':
		if (audit_parse_time(arg, ch == 'S' ? &a->since :
		    &a->until) == -1)
			return cmd_usage_error(e, "invalid time '%s' "
			    "(use 2h, 30m, 7d or 2026-01-31T12:00:00Z)", arg);
		break;
	case 'n':
		if (util_strtonum(arg, 1, AUDIT_TAIL_MAX, &a->lines,
		    &errstr) == -1)
			return cmd_usage_error(e, "-n '%s': %s", arg,
			    errstr);
		break;
	}
	return 0;
}

/* The options into *a for mode; 0, or an exit code after a message. */
static int
audit_parse(struct cmd_args *args, enum audit_mode mode, struct audit_args *a)
{
	const struct cmd_opt	*o;
	int			 rc, file_given = 0;

	memset(a, 0, sizeof(*a));
	a->mode = mode;
	a->since = a->until = -1;
	a->lines = -1;
	a->dir = NULL;
	a->file = AUDIT_LOG;
	while ((o = cmd_args_next(args)) != NULL) {
		if ((rc = audit_parse_opt(args->entry, a, o->ch, o->arg)) != 0)
			return rc;
		file_given |= o->ch == 'F';
	}
	if (a->anchor != NULL && a->nkeys == 0)
		return cmd_usage_error(args->entry, "--anchor is an option of "
		    "'audit verify --key'");
	if (a->format != NULL && strcmp(a->format, "ocsf") != 0)
		return cmd_usage_error(args->entry, "unknown --format '%s' "
		    "(want ocsf)", a->format);
	if (a->lines == -1)
		a->lines = AUDIT_TAIL_DEFAULT;
	if (a->ninstances > 0 && (a->follow || file_given ||
	    args->argc > 0))
		return cmd_usage_error(args->entry, "--instance reads the "
		    "replicas' logs: not with --file, --follow or FILES");
	if (a->ninstances == 1)
		a->file = a->instances[0];
	if (a->dir == NULL)
		a->dir = audit_default_dir(a->file);
	a->paths = args->argv;
	a->npaths = args->argc;
	return 0;
}

/*
 * The files of the logs asked for, opened (logset.h): FILES if any, else
 * --file's log, or (all) each --instance's one after another (each
 * oldest first). The set, or NULL after a message.
 */
static struct logset *
audit_files(const struct audit_args *a, int all)
{
	struct logset	*set = logset_new();
	char		*cause = NULL;
	int		 i, rc = 0;

	if (a->npaths > 0)
		rc = logset_add_paths(set, a->paths, a->npaths, &cause);
	else if (!all || a->ninstances < 2)
		rc = logset_add_log(set, a->dir, a->file, &cause);
	for (i = 0; rc == 0 && a->npaths == 0 && all && a->ninstances > 1 &&
	    i < a->ninstances; i++)
		rc = logset_add_log(set, a->dir, a->instances[i], &cause);
	if (rc == -1) {
		log_warnx("%s", cause);
		free(cause);
		logset_free(set);
		return NULL;
	}
	return set;
}

/*
 * 1 if obj has the members every log line has, as the writer writes them:
 * ts a string, seq a count, prev and hash 64 lowercase hex digits.
 */
static int
audit_is_log_line(json_t *obj)
{
	static const char *const hexes[] = { "prev", "hash" };
	json_t		*seq = json_object_get(obj, "seq");
	const char	*h;
	size_t		 i;

	if (!json_is_string(json_object_get(obj, "ts")) ||
	    !json_is_integer(seq) || json_integer_value(seq) < 1)
		return 0;
	for (i = 0; i < 2; i++) {
		h = json_string_value(json_object_get(obj, hexes[i]));
		if (h == NULL || strlen(h) != LOGVERIFY_HASH_HEX ||
		    !logverify_is_hex(h, LOGVERIFY_HASH_HEX))
			return 0;
	}
	return 1;
}

/* A string member, or NULL. */
static const char *
audit_str(json_t *obj, const char *key)
{
	return json_string_value(json_object_get(obj, key));
}

/* Does the event pass every filter given? */
static int
audit_match(const struct audit_args *a, json_t *obj)
{
	const char	*v;
	int64_t		 ts;

	/* Checkpoints are for verify and export, or asked for by name. */
	if (a->event == NULL && a->mode != AUDIT_EXPORT &&
	    (v = audit_str(obj, "event")) != NULL &&
	    strcmp(v, CHECKPOINT_EVENT) == 0)
		return 0;
	if (a->sandbox && ((v = audit_str(obj, "sandbox")) == NULL ||
	    strcmp(v, a->sandbox) != 0))
		return 0;
	if (a->reason && ((v = audit_str(obj, "reason")) == NULL ||
	    strcmp(v, a->reason) != 0))
		return 0;
	if (a->event && ((v = audit_str(obj, "event")) == NULL ||
	    strcmp(v, a->event) != 0))
		return 0;
	if (a->host && ((v = audit_str(obj, "host")) == NULL ||
	    fnmatch(a->host, v, FNM_CASEFOLD) != 0))
		return 0;
	if (a->since != -1 || a->until != -1) {
		if ((v = audit_str(obj, "ts")) == NULL ||
		    logread_parse_ts(v, &ts) == -1)
			return 0;
		if ((a->since != -1 && ts < a->since) ||
		    (a->until != -1 && ts > a->until))
			return 0;
	}
	return 1;
}

static void	audit_row_request(json_t *, char *, size_t, char *, size_t);

/* One table row: time, event, sandbox, src, destination, reason. */
static void
audit_print_row(json_t *obj)
{
	char		 ts[64], ev[64], sbx[64], src[80];
	char		 dst[AUDIT_FIELD_SHOW + 16], why[AUDIT_FIELD_SHOW];
	char		 host[AUDIT_FIELD_SHOW];
	json_t		*port = json_object_get(obj, "port");

	util_escape(audit_str(obj, "ts"), ts, sizeof(ts));
	util_escape(audit_str(obj, "event"), ev, sizeof(ev));
	util_escape(audit_str(obj, "sandbox"), sbx, sizeof(sbx));
	util_escape(audit_str(obj, "src"), src, sizeof(src));
	util_escape(audit_str(obj, "host"), host, sizeof(host));
	util_escape(audit_str(obj, "reason"), why, sizeof(why));
	if (strncmp(ev, "run.", 4) == 0) {
		/* A run record: the command and how it ended. */
		util_escape(audit_str(obj, "command"), dst, sizeof(host));
		snprintf(why, sizeof(why), "exit %lld", (long long)
		    json_integer_value(json_object_get(obj, "exit_code")));
	} else if (json_is_integer(port))
		snprintf(dst, sizeof(dst), "%s%s%s:%lld",
		    strchr(host, ':') ? "[" : "", host,
		    strchr(host, ':') ? "]" : "",
		    (long long)json_integer_value(port));
	else
		snprintf(dst, sizeof(dst), "%s", host);
	audit_row_request(obj, dst, sizeof(dst), why, sizeof(why));
	printf("%-27s  %-15s  %-28s  %-15s  %-40s  %s\n", ts, ev, sbx, src,
	    dst, why);
}

/*
 * A request inside a terminated session (tls: terminate): its method and
 * path after the destination, its status after the reason.
 */
static void
audit_row_request(json_t *obj, char *dst, size_t dsize, char *why,
    size_t wsize)
{
	char	method[64], path[AUDIT_FIELD_SHOW];
	json_t	*status = json_object_get(obj, "status");
	size_t	n;

	if (!json_is_string(json_object_get(obj, "path")))
		return;
	util_escape(audit_str(obj, "method"), method, sizeof(method));
	util_escape(audit_str(obj, "path"), path, sizeof(path));
	/* Cut at the cell's size, as every cell is. */
	n = strlen(dst);
	if (snprintf(dst + n, dsize - n, " %s %s", method, path) < 0)
		dst[n] = '\0';
	if (json_is_integer(status)) {
		n = strlen(why);
		if (snprintf(why + n, wsize - n, " (status %lld)",
		    (long long)json_integer_value(status)) < 0)
			why[n] = '\0';
	}
}

/* An event as a table row or as one JSON line (re-encoded, ASCII). */
static void
audit_print(const struct audit_args *a, json_t *obj)
{
	char	*s;

	if (!a->json) {
		audit_print_row(obj);
		return;
	}
	s = json_dumps(obj, JSON_COMPACT | JSON_PRESERVE_ORDER |
	    JSON_ENSURE_ASCII);
	if (s != NULL) {
		puts(s);
		free(s);
	}
}

/* What audit_each() hands to logset_each(). */
struct audit_each_ctx {
	const struct audit_args	*a;
	void			(*cb)(const struct audit_args *, json_t *,
				    void *);
	void			*arg;
	size_t			 notlog;
};

/* One object of the log: filtered, then to the caller's callback. */
static void
audit_each_cb(json_t *obj, void *arg)
{
	struct audit_each_ctx	*c = arg;

	/* An export holds log lines only (the schema asks). */
	if (c->a->mode == AUDIT_EXPORT && !audit_is_log_line(obj))
		c->notlog++;
	else if (audit_match(c->a, obj))
		c->cb(c->a, obj, c->arg);
}

/*
 * Call cb for every matching event of files from .. from + n - 1 of set,
 * in order. Lines that are not JSON objects are skipped and counted on
 * stderr. Returns 0 or -1.
 */
static int
audit_each(const struct audit_args *a, const struct logset *set, int from,
    int n, void (*cb)(const struct audit_args *, json_t *, void *),
    void *arg)
{
	struct audit_each_ctx	c = { a, cb, arg, 0 };
	struct logread_stats	st = { 0, 0 };
	char			*cause = NULL;
	int			 rc;

	rc = logset_each(set, from, n, audit_each_cb, &c, &st, &cause);
	if (cause != NULL)
		log_warnx("%s", cause);
	free(cause);
	if (st.skipped > 0)
		log_warnx("%zu line(s) skipped: not JSON "
		    "(run 'sandgate audit verify')", st.skipped);
	if (c.notlog > 0)
		log_warnx("%zu line(s) not exported: not log "
		    "lines (ts, seq, prev or hash missing or malformed; run "
		    "'sandgate audit verify')", c.notlog);
	return rc;
}

static void
audit_list_cb(const struct audit_args *a, json_t *obj, void *arg)
{
	audit_print(a, obj);
}

/* counts[key] += n */
static void
audit_count(json_t *counts, const char *key, json_int_t n)
{
	json_t	*v = json_object_get(counts, key);

	if (v != NULL)
		json_integer_set(v, json_integer_value(v) + n);
	else
		json_object_set_new(counts, key, json_integer(n));
}

static void
audit_summary_cb(const struct audit_args *a, json_t *obj, void *arg)
{
	struct audit_summary	*s = arg;
	const char		*ev = audit_str(obj, "event");
	json_t			*port = json_object_get(obj, "port");
	char			 dest[SG_LOG_FIELD_MAX + 32];
	const char		*host = audit_str(obj, "host");
	json_int_t		 n = 1;

	/* Blocked attempts only, unless --event picked other events. */
	if (a->event == NULL && (ev == NULL ||
	    (strcmp(ev, "egress.blocked") != 0 &&
	    strcmp(ev, "egress.blocked_summary") != 0)))
		return;
	/* A summary line stands for count attempts (docs/audit.md). */
	if (ev != NULL && strcmp(ev, "egress.blocked_summary") == 0 &&
	    json_integer_value(json_object_get(obj, "count")) > 0)
		n = json_integer_value(json_object_get(obj, "count"));
	if (json_is_integer(port))
		snprintf(dest, sizeof(dest), "%s%s%s:%lld",
		    host && strchr(host, ':') ? "[" : "", host ? host : "-",
		    host && strchr(host, ':') ? "]" : "",
		    (long long)json_integer_value(port));
	else
		snprintf(dest, sizeof(dest), "%s", host ? host : "-");
	audit_count(s->dest, dest, n);
	audit_count(s->sandbox, audit_str(obj, "sandbox") ?
	    audit_str(obj, "sandbox") : "-", n);
	audit_count(s->reason, audit_str(obj, "reason") ?
	    audit_str(obj, "reason") : "-", n);
	s->total += n;
}

/* Sort counts highest first, then by key. */
static int
audit_cmp_count(const void *x, const void *y)
{
	const struct audit_kv	*a = x, *b = y;

	if (a->n != b->n)
		return a->n < b->n ? 1 : -1;
	return strcmp(a->key, b->key);
}

/* Print one "by ..." section of the summary, highest count first. */
static void
audit_summary_section(const char *title, json_t *counts)
{
	struct audit_kv	*kv;
	const char	*key;
	json_t		*v;
	size_t		 n = json_object_size(counts), i = 0;
	char		 safe[AUDIT_FIELD_SHOW];

	printf("\nblocked by %s:\n", title);
	if (n == 0) {
		printf("  (none)\n");
		return;
	}
	kv = util_xcalloc(n, sizeof(*kv));
	json_object_foreach(counts, key, v) {
		kv[i].key = key;
		kv[i++].n = (long long)json_integer_value(v);
	}
	qsort(kv, n, sizeof(*kv), audit_cmp_count);
	for (i = 0; i < n; i++) {
		util_escape(kv[i].key, safe, sizeof(safe));
		printf("  %8lld  %s\n", kv[i].n, safe);
	}
	free(kv);
}

static void
audit_summary_print(const struct audit_args *a, struct audit_summary *s)
{
	json_t	*out;
	char	*text;

	if (a->json) {
		out = json_pack("{s:I,s:O,s:O,s:O}", "total",
		    (json_int_t)s->total, "by_destination", s->dest,
		    "by_sandbox", s->sandbox, "by_reason", s->reason);
		text = out ? json_dumps(out, JSON_COMPACT |
		    JSON_PRESERVE_ORDER | JSON_ENSURE_ASCII) : NULL;
		if (text != NULL)
			puts(text);
		free(text);
		json_decref(out);
		return;
	}
	printf("%lld blocked attempt(s)\n", s->total);
	audit_summary_section("destination", s->dest);
	audit_summary_section("sandbox", s->sandbox);
	audit_summary_section("reason", s->reason);
}

/*
 * A log.moved line (path, line n): the writer found that the file it
 * wrote had left the log's name (moved out or replaced: atk35b F1, or
 * rotated by another tool before a reopen) and put a new one there; the
 * lines it wrote last are in that file, not in these unless it was put
 * back. Said as a note; the chain and the anchor judge what is missing.
 */
static void
audit_verify_moved(const char *path, size_t n, const char *line, size_t len)
{
	json_t		*o;
	const char	*file = NULL;
	json_int_t	 seq = 0, last = 0;

	if (memmem(line, len, "\"event\":\"log.moved\"", 19) == NULL ||
	    (o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL)) == NULL)
		return;
	if (json_unpack(o, "{s:I, s:s, s:I}", "seq", &seq, "file", &file,
	    "last_seq", &last) == 0)
		printf("note: %s:%zu (seq %lld): the file the writer wrote "
		    "(device:inode %s) left the log's name (moved out, replaced "
		    "or rotated by another tool); it wrote up to seq %lld there, "
		    "and put a new file at the name\n", path, n, (long long)seq,
		    file, (long long)last);
	json_decref(o);
}

/*
 * Feed file i of set to the verifier, named as it was when opened; 0, or
 * -1 if it cannot be read.
 */
static int
audit_verify_file(struct ckverify *v, const struct logset *set, int i)
{
	struct logread		*r;
	const char		*path = logset_name(set, i);
	long long		 size;
	size_t			 len, n;
	int			 fd, got;

	if ((fd = logset_fd(set, i, &size)) == -1) {
		log_warnx("cannot open '%s': %s", path, strerror(errno));
		return -1;
	}
	r = util_xmalloc(sizeof(*r));
	logread_init(r, fd, 0, size);
	ckverify_file(v, path);
	for (n = 1; (got = logread_next(r, &len)) == 1; n++) {
		/* The line that breaks the chain may be the log.moved (atk35e
		   F5), or the rotate line before it (signed). */
		audit_verify_moved(path, n, r->line, len);
		if (ckverify_feed(v, r->line, len) == -1 && v->chain.broken) {
			if (logread_next(r, &len) == 1)
				audit_verify_moved(path, n + 1, r->line, len);
			break;
		}
	}
	if (got == -1)
		log_warnx("cannot read '%s': %s", path,
		    strerror(errno));
	free(r);
	return got == -1 ? -1 : 0;
}

/* Trust the public keys of --key; -1 after a message if one is not. */
static int
audit_verify_keys(const struct audit_args *a, struct ckverify *v)
{
	EVP_PKEY	*k;
	char		*cause = NULL;
	int		 i;

	for (i = 0; i < a->nkeys; i++) {
		if ((k = checkpoint_pubkey_load(a->keys[i], &cause)) == NULL) {
			log_warnx("--key: %s", cause);
			free(cause);
			return -1;
		}
		if (ckverify_add_key(v, k) == -1) {
			log_warnx("--key '%s': cannot use it",
			    a->keys[i]);
			EVP_PKEY_free(k);
			return -1;
		}
		EVP_PKEY_free(k);
	}
	return 0;
}

/* 1 if the log verified is the live one: the log folder, no FILES. */
static int
audit_live_log(const struct audit_args *a)
{
	char	given[PATH_MAX], live[PATH_MAX];

	if (a->npaths > 0)
		return 0;
	if (!a->dir_given)
		return 1;
	return realpath(a->dir, given) != NULL &&
	    realpath(audit_default_dir(a->file), live) != NULL &&
	    strcmp(given, live) == 0;
}

/*
 * --anchor FILE that is a log (a copy shipped elsewhere): its last log
 * line is the anchor. 0, or -1 after a message.
 */
static int
audit_anchor_of_log(const char *path, struct checkpoint_anchor *an)
{
	struct logread	*r = util_xmalloc(sizeof(*r));
	struct logverify_line	 l;
	json_t			*obj;
	long long		 size;
	size_t			 len;
	int			 fd, got, found = 0;

	memset(an, 0, sizeof(*an));
	if ((fd = logread_open_warn(path, &size)) == -1) {
		free(r);
		return -1;
	}
	logread_init(r, fd, 0, size);
	while ((got = logread_next(r, &len)) == 1) {
		if (logverify_line(r->line, len, &l) != LOGVERIFY_OK)
			continue;
		an->seq = l.seq;
		util_strlcpy(an->hash, l.hash, sizeof(an->hash));
		util_strlcpy(an->reason, "copy", sizeof(an->reason));
		obj = logread_object(r->line, len);
		util_strlcpy(an->ts, audit_str(obj, "ts") ? audit_str(obj,
		    "ts") : "", sizeof(an->ts));
		json_decref(obj);
		found = 1;
	}
	close(fd);
	free(r);
	if (got == -1 || !found) {
		log_warnx("--anchor '%s': %s", path, got ==
		    -1 ? strerror(errno) : "neither an anchor nor a log with "
		    "a log line");
		return -1;
	}
	return 0;
}

/*
 * The anchor file verify reads into path (keys only): --anchor FILE, or
 * for the live log the writer's own beside its key. 1, or 0 for none.
 */
static int
audit_anchor_path(const struct audit_args *a, char *path, size_t size)
{
	char	key[4096];

	if (a->nkeys == 0)
		return 0;
	if (a->anchor != NULL) {
		util_strlcpy(path, a->anchor, size);
		return 1;
	}
	if (!audit_live_log(a) || auditkey_path(a->file, key,
	    sizeof(key)) == -1)
		return 0;
	snprintf(path, size, "%s.anchor", key);
	return 1;
}

/*
 * The anchor file's bytes (at most CHECKPOINT_ANCHOR_MAX) into buf, NUL
 * ended; "" when it cannot be read.
 */
static void
audit_anchor_bytes(const char *path, char *buf, size_t size)
{
	long long	fsize;
	ssize_t		k = -1;
	int		fd;
	char		*cause = NULL;

	if ((fd = logread_open(path, &fsize, &cause)) != -1) {
		k = read(fd, buf, size - 1);
		close(fd);
	}
	free(cause);
	buf[k > 0 ? k : 0] = '\0';
}

/*
 * The writer's anchor the log is checked against (keys only): --anchor
 * FILE (an anchor file, or a log copy whose last line is one), or for the
 * live log the writer's own beside its key, read before the log files
 * are listed and opened (audit_verify_open()). A note for the report
 * goes to note, also when no anchor is used. 0, or -1 after a message.
 */
static int
audit_verify_anchor(const struct audit_args *a, struct ckverify *v,
    char **note)
{
	struct checkpoint_anchor	 an;
	char				 key[4096], path[4096 + 8], head[32];
	char				*cause = NULL, *outage = NULL;
	int				 fd, r;
	ssize_t				 k;
	long long			 size;

	if (a->nkeys == 0)
		return 0;
	if (a->anchor != NULL) {
		util_strlcpy(path, a->anchor, sizeof(path));
		if ((fd = logread_open_warn(path, &size)) == -1)
			return -1;
		k = read(fd, head, sizeof(head) - 1);
		close(fd);
		head[k > 0 ? k : 0] = '\0';
		if (strncmp(head, CHECKPOINT_ANCHOR_HEAD " ",
		    sizeof(CHECKPOINT_ANCHOR_HEAD)) != 0) {
			if (audit_anchor_of_log(path, &an) == -1)
				return -1;
			goto set;
		}
	} else if (!audit_live_log(a)) {
		util_xasprintf(note, "note: not checked against a writer's "
		    "anchor (FILES or another --log-dir): a log cut at an "
		    "earlier checkpoint, even at an old close, is found only "
		    "with --anchor\n");
		return 0;
	} else if (auditkey_path(a->file, key, sizeof(key)) == -1) {
		/* A replica's (--instance): its anchor is beside its key. */
		util_xasprintf(note, "note: not checked against a writer's "
		    "anchor (%s's writer keeps it beside its own "
		    "--checkpoint-key): a log cut at an earlier checkpoint, "
		    "even at an old close, is found only with --anchor\n",
		    a->file);
		return 0;
	} else
		snprintf(path, sizeof(path), "%s.anchor", key);
	if (a->anchor == NULL && access(path, R_OK) == -1) {
		util_xasprintf(note, "note: %s the writer's anchor %s (%s): a "
		    "log cut at an earlier checkpoint is found only with "
		    "--anchor\n", errno == ENOENT ? "no" : "cannot read", path,
		    strerror(errno));
		return 0;
	}
	if ((r = checkpoint_anchor_read(path, &an, &cause)) != 1) {
		log_warnx("%s", r == 0 ? "--anchor: no such "
		    "file" : cause);
		free(cause);
		return -1;
	}
set:
	if (an.seq > 0) {
		ckverify_set_anchor(v, &an);
		util_xasprintf(note, "note: checked against the anchor %s: seq "
		    "%lld (%s, %s) is in the log as written\n", path, an.seq,
		    an.reason, an.ts);
	} else
		util_xasprintf(note, "note: the anchor %s names no checkpoint "
		    "yet (its writer could write none)\n", path);
	if (an.lost > 0)
		util_xasprintf(&outage, "%snote: the anchor holds an outage "
		    "that no checkpoint after seq %lld covers yet: %llu "
		    "event(s) lost since %s (%s); a log.outage line after that "
		    "seq records it, or its writer writes one when it starts "
		    "again\n", *note, an.seq, an.lost, an.since, an.cause);
	if (outage != NULL) {
		free(*note);
		*note = outage;
	}
	return 0;
}

/* Where trust ends, for a log that is not trusted to its end. */
static void
audit_verify_report(const struct ckverify *v)
{
	printf("%s:%zu: not trusted: %s\n", v->fail_at.file, v->fail_at.line,
	    v->what);
	if (v->untrusted.line > 0)
		printf("first event that can no longer be trusted: seq %lld "
		    "(%s:%zu)\n", v->untrusted.seq, v->untrusted.file,
		    v->untrusted.line);
	else
		printf("first event that can no longer be trusted: seq %lld "
		    "(missing from the log)\n", v->untrusted.seq);
}

/* What an intact log's checkpoints say; anchor: the anchor's note. */
static void
audit_verify_notes(const struct ckverify *v, const char *anchor)
{
	if (v->nkeys == 0) {
		if (v->checkpoints > 0)
			printf("note: %zu checkpoint(s) not checked: give the "
			    "writer's public key with --key\n", v->checkpoints);
		if (v->resumes > 0)
			printf("note: %zu log.resume line(s) not judged: give "
			    "the writer's public key with --key\n", v->resumes);
		return;
	}
	printf("OK: %zu checkpoint(s) signed by trusted keys; the last at seq "
	    "%lld (%s, %s)\n", v->good, v->good_at.seq, v->good_reason,
	    v->good_ts);
	if (anchor != NULL)
		fputs(anchor, stdout);
	if (v->after > 0)
		printf("note: %zu event(s) after it, from seq %lld, are not "
		    "signed yet: its writer signs every %llu s while it runs\n",
		    v->after, v->after_at.seq, v->every_secs);
	if (v->foreign > 0)
		printf("note: %zu checkpoint(s) signed by keys not given; later "
		    "checkpoints vouch for them\n", v->foreign);
	if (v->restarts > 0)
		printf("note: the writer stopped without closing the log %zu "
		    "time(s); the first time, seq %lld on were signed only when "
		    "it started again (%s:%zu)\n", v->restarts, v->restart_from,
		    v->restart.file, v->restart.line);
	if (v->stops > 0)
		printf("note: the writer stopped without closing the log at seq "
		    "%lld (%s), right after that checkpoint (%zu time(s) in "
		    "all)\n", v->stop_at, v->stop_reason, v->stops);
	if (v->crashes > 0)
		printf("note: %zu time(s) the writer found lines after the "
		    "checkpoint it had signed last, having stopped without "
		    "closing the log, and recorded it (log.resume, first at "
		    "%s:%zu)\n", v->crashes, v->crash.file, v->crash.line);
	if (v->resumes_gone > 0)
		printf("note: %zu log.resume line(s) name a checkpoint rotated "
		    "away since, with the files before the chain's start (the "
		    "first, seq %lld): not compared\n", v->resumes_gone,
		    v->resume_gone_seq);
	if (v->reintroduced > 0)
		printf("note: %zu key hand-over(s) written again by a writer "
		    "that restarted during a key rotation\n", v->reintroduced);
	if (strcmp(v->good_key, v->keys[0].id) != 0)
		printf("note: the log is now signed by key %s\n", v->good_key);
}

/*
 * The anchor (audit_verify_anchor(), its note into *note), then the
 * files (FILES, else the log folder's, all opened before any is read:
 * logset.h) into *set. The live log's writer rewrites its anchor, then
 * deletes the files past its keep it leaves out (eventlog.h): an anchor
 * that changed while the files were listed and opened may name files
 * gone since, so both are read again, at most LOGSET_TRIES times. 0, or
 * -1 after a message.
 */
static int
audit_verify_open(const struct audit_args *a, struct ckverify *v,
    char **note, struct logset **set)
{
	char	path[4096 + 8], was[CHECKPOINT_ANCHOR_MAX + 1];
	char	now[CHECKPOINT_ANCHOR_MAX + 1];
	int	try, has = audit_anchor_path(a, path, sizeof(path));

	for (try = 0; try < LOGSET_TRIES; try++) {
		if (has)
			audit_anchor_bytes(path, was, sizeof(was));
		free(*note);
		*note = NULL;
		if (audit_verify_anchor(a, v, note) == -1 ||
		    (*set = audit_files(a, 0)) == NULL)
			return -1;
		if (has)
			audit_anchor_bytes(path, now, sizeof(now));
		if (!has || strcmp(was, now) == 0)
			return 0;
		logset_free(*set);
		*set = NULL;
	}
	log_warnx("the writer rewrote its anchor %s while the log's files "
	    "were being opened, %d times in a row: nothing was verified; run "
	    "the check again (the log is not known to be damaged)", path,
	    LOGSET_TRIES);
	return -1;
}

/* The chain of files of set, fed in order. */
static int
audit_verify_files(const struct audit_args *a, struct ckverify *v,
    struct logset *set)
{
	long long	 size;
	int		 i, n, rc = 0;

	n = logset_count(set);
	for (i = 0; i < n && rc == 0; i++) {
		/* The current file may not exist yet right after rotation. */
		if (a->npaths == 0 && i == n - 1 && n > 1 &&
		    logset_fd(set, i, &size) == -1)
			continue;
		rc = audit_verify_file(v, set, i);
	}
	return rc;
}

/* `audit verify`: the chain across files, oldest first, and checkpoints. */
static int
audit_verify(const struct audit_args *a)
{
	struct ckverify		*v = util_xmalloc(sizeof(*v));
	struct logset		*set = NULL;
	struct timespec		 now;
	enum ckverify_result	 r;
	char			*anchor = NULL;
	int			 rc = SG_EXIT_ERROR;

	ckverify_init(v);
	if (audit_verify_keys(a, v) == -1 ||
	    audit_verify_open(a, v, &anchor, &set) == -1 ||
	    audit_verify_files(a, v, set) == -1)
		goto out;
	clock_gettime(CLOCK_REALTIME, &now);
	r = ckverify_finish(v, (int64_t)now.tv_sec * 1000000 +
	    now.tv_nsec / 1000);
	rc = r == CKVERIFY_OK ? SG_EXIT_OK : SG_EXIT_FAIL;
	if (r == CKVERIFY_CHAIN_BROKEN) {
		printf("%s:%zu: chain broken: %s\n", v->chain.break_file,
		    v->chain.break_line, v->chain.what);
		goto out;
	}
	if (r == CKVERIFY_UNTRUSTED)
		printf("chain intact: %zu events\n", v->chain.events);
	else
		printf("OK: %zu events, chain intact\n", v->chain.events);
	if (v->chain.events > 0 && !v->chain.genesis)
		printf("note: the chain starts at seq %lld; older events were "
		    "rotated away%s\n", v->chain.first_seq, v->nkeys > 0 ? "" :
		    " (or cut: --key tells)");
	if (v->chain.torn > 0)
		printf("note: %zu torn line(s), the first at %s:%zu: an "
		    "interrupted write, skipped\n", v->chain.torn,
		    v->chain.torn_file, v->chain.torn_line);
	if (v->outages > 0)
		printf("note: its writer could not write %llu event(s): %zu "
		    "log.outage line(s), the first at %s:%zu\n", v->lost,
		    v->outages, v->outage_at.file, v->outage_at.line);
	if (r == CKVERIFY_UNTRUSTED)
		audit_verify_report(v);
	else
		audit_verify_notes(v, anchor);
out:
	logset_free(set);
	free(anchor);
	ckverify_release(v);
	free(v);
	return rc;
}

/* The last part of a path. */
static const char *
audit_base(const char *path)
{
	const char	*slash = strrchr(path, '/');

	return slash != NULL ? slash + 1 : path;
}

/* One OCSF event per line. */
static void
audit_export_cb(const struct audit_args *a, json_t *obj, void *arg)
{
	json_t	*o;
	char	*s;

	if ((o = ocsf_event(obj, arg)) == NULL)
		fatalx("out of memory");
	if ((s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER |
	    JSON_ENSURE_ASCII)) == NULL)
		fatalx("out of memory");
	puts(s);
	free(s);
	json_decref(o);
}

/* `audit export --format ocsf`: every matching event, file by file. */
static int
audit_export(const struct audit_args *a, const struct logset *set)
{
	struct ocsf_ctx	ctx;
	char		host[256];
	int		i, n = logset_count(set);

	if (gethostname(host, sizeof(host)) == -1)
		util_strlcpy(host, "unknown", sizeof(host));
	host[sizeof(host) - 1] = '\0';
	ctx.hostname = host;
	for (i = 0; i < n; i++) {
		ctx.log_name = audit_base(logset_name(set, i));
		if (audit_each(a, set, i, 1, audit_export_cb, &ctx) == -1)
			return SG_EXIT_ERROR;
	}
	return SG_EXIT_OK;
}

/* `audit key create|rotate|show [PATH]` for the log --file names. */
static int
audit_key(const struct audit_args *a, const struct cmd_entry *verb,
    int argc, char **argv)
{
	const char	*errstr;
	long long	 owner = -1;

	if (a->owner != NULL && util_strtonum(a->owner, 0, 0x7fffffff, &owner,
	    &errstr) == -1)
		return cmd_usage_error(verb, "--owner '%s': %s", a->owner,
		    errstr);
	return auditkey_command(verb->name, argc == 1 ? argv[0] : NULL, a->file,
	    a->dir, owner);
}

/* Keep the last a->lines matching events in a ring of JSON objects. */
static void
audit_ring_cb(const struct audit_args *a, json_t *obj, void *arg)
{
	struct audit_ring	*ring = arg;
	size_t			 slot = ring->count % ring->size;

	json_decref(ring->items[slot]);
	ring->items[slot] = json_incref(obj);
	ring->count++;
}

/* `audit tail`: the last events, then (-f) the new ones as they come. */
static int
audit_tail(const struct audit_args *a, const struct logset *set)
{
	struct audit_ring	 ring;
	struct logfollow	*f;
	size_t			 i, first;
	int			 rc;

	ring.size = (size_t)a->lines;
	ring.count = 0;
	ring.items = util_xcalloc(ring.size, sizeof(*ring.items));
	rc = audit_each(a, set, 0, logset_count(set), audit_ring_cb, &ring);
	first = ring.count > ring.size ? ring.count - ring.size : 0;
	for (i = first; i < ring.count; i++)
		audit_print(a, ring.items[i % ring.size]);
	for (i = 0; i < ring.size; i++)
		json_decref(ring.items[i]);
	free(ring.items);
	fflush(stdout);
	if (rc == -1)
		return SG_EXIT_ERROR;
	if (!a->follow)
		return SG_EXIT_OK;
	if ((f = logfollow_new(set)) != NULL)
		logfollow_run(f, audit_follow_cb, (void *)a);
	logfollow_free(f);
	return SG_EXIT_ERROR;
}

/* One new event while following: printed when it passes the filters. */
static void
audit_follow_cb(json_t *obj, void *arg)
{
	const struct audit_args	*a = arg;

	if (audit_match(a, obj))
		audit_print(a, obj);
}

static int
cmd_audit_list_exec(struct cmd_args *args)
{
	struct audit_args	a;

	return audit_parse(args, AUDIT_LIST, &a) != 0 ? SG_EXIT_USAGE :
	    audit_run(&a);
}

static int
cmd_audit_summary_exec(struct cmd_args *args)
{
	struct audit_args	a;

	return audit_parse(args, AUDIT_SUMMARY, &a) != 0 ? SG_EXIT_USAGE :
	    audit_run(&a);
}

static int
cmd_audit_verify_exec(struct cmd_args *args)
{
	struct audit_args	a;

	int			i, rc, worst = SG_EXIT_OK;

	if (audit_parse(args, AUDIT_VERIFY, &a) != 0)
		return SG_EXIT_USAGE;
	if (a.ninstances < 2)
		return audit_verify(&a);
	/* Each replica keeps its own chain: verified on its own. */
	for (i = 0; i < a.ninstances; i++) {
		a.file = a.instances[i];
		printf("%s:\n", a.file);
		fflush(stdout);
		rc = audit_verify(&a);
		if (rc != SG_EXIT_OK && (worst == SG_EXIT_OK ||
		    rc == SG_EXIT_FAIL))
			worst = rc;
	}
	return worst;
}

static int
cmd_audit_tail_exec(struct cmd_args *args)
{
	struct audit_args	a;

	return audit_parse(args, AUDIT_TAIL, &a) != 0 ? SG_EXIT_USAGE :
	    audit_run(&a);
}

static int
cmd_audit_export_exec(struct cmd_args *args)
{
	struct audit_args	a;

	if (audit_parse(args, AUDIT_EXPORT, &a) != 0)
		return SG_EXIT_USAGE;
	return audit_run(&a);
}

static int
cmd_audit_key_exec(struct cmd_args *args)
{
	struct audit_args	a;

	return audit_parse(args, AUDIT_KEY, &a) != 0 ? SG_EXIT_USAGE :
	    audit_key(&a, args->entry, a.npaths, a.paths);
}

/* list, summary, tail and export over the files of the log. */
static int
audit_run(struct audit_args *a)
{
	struct audit_summary	 s;
	struct logset		*set;
	int			 rc;

	if ((set = audit_files(a, 1)) == NULL)
		return SG_EXIT_ERROR;
	switch (a->mode) {
	case AUDIT_TAIL:
		rc = audit_tail(a, set);
		break;
	case AUDIT_EXPORT:
		rc = audit_export(a, set);
		break;
	case AUDIT_SUMMARY:
		s.dest = json_object();
		s.sandbox = json_object();
		s.reason = json_object();
		s.total = 0;
		rc = audit_each(a, set, 0, logset_count(set), audit_summary_cb,
		    &s) == -1 ?
		    SG_EXIT_ERROR : SG_EXIT_OK;
		if (rc == SG_EXIT_OK)
			audit_summary_print(a, &s);
		json_decref(s.dest);
		json_decref(s.sandbox);
		json_decref(s.reason);
		break;
	case AUDIT_LIST:
	default:
		if (!a->json)
			printf("%-27s  %-15s  %-28s  %-15s  %-40s  %s\n",
			    "TIME", "EVENT", "SANDBOX", "SRC", "DESTINATION",
			    "REASON");
		rc = audit_each(a, set, 0, logset_count(set), audit_list_cb,
		    NULL) == -1 ?
		    SG_EXIT_ERROR : SG_EXIT_OK;
		break;
	}
	logset_free(set);
	return rc;
}
