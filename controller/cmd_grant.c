/*
 * cmd_grant.c: `sandgate grant`, `sandgate revoke` and `sandgate grants`:
 * a person lets one sandbox (or one exec of it) reach one more
 * destination for a while, through the proxy's control socket, within
 * what the admins' floors allow (docs/policy.md, "Grants").
 */
#include <sys/types.h>

#include <pwd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "host.h"
#include "log.h"
#include "proxyctl.h"
#include "quote.h"
#include "util.h"

static int	cmd_grant_exec(struct cmd_args *);
static int	cmd_revoke_exec(struct cmd_args *);
static int	grant_done(int, json_t *, json_t *, char *);
static int	cmd_grants_exec(struct cmd_args *);
static int	grant_dest(const char *, struct host *, uint16_t *);
static long long grant_duration(const char *);
static void	grant_who(char *, size_t);
static void	grant_put(json_t *, const char *, const char *);
static int	grant_call(const char *, const char *, json_t *, json_t **,
		    char **);

static const struct option cmd_grant_options[] = {
	{ "for", required_argument, NULL, 'F' },
	{ "rationale", required_argument, NULL, 'R' },
	{ "exec", required_argument, NULL, 'E' },
	{ NULL, 0, NULL, 0 }
};

static const struct option cmd_grants_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_grant = {
	.name = "grant",
	.usage = "ID HOST[:PORT] --for DURATION --rationale TEXT [--exec RUN]",
	.summary = "let a sandbox reach one more destination for a while",
	.help =
	    "Adds HOST:PORT (port 443 by default) to the sandbox's live policy\n"
	    "in the proxy until DURATION (30s, 10m, 2h, 1d; at most 7d) has\n"
	    "passed, or only for the exec RUN (a run_id) with --exec. The\n"
	    "proxy refuses a grant outside what the admins' policy.d allows\n"
	    "(deny entries, grants: under:), naming the rule; exit 126.\n",
	.options = cmd_grant_options,
	.required = "FR",
	.args_min = 2,
	.args_max = 2,
	.flags = CMD_ID,
	.exec = cmd_grant_exec,
};

const struct cmd_entry cmd_revoke = {
	.name = "revoke",
	.usage = "ID HOST[:PORT]",
	.summary = "end a sandbox's grants for a destination now",
	.help = "Open tunnels that only the grant allowed are closed.\n",
	.args_min = 2,
	.args_max = 2,
	.flags = CMD_ID | CMD_ID_GONE_OK,
	.exec = cmd_revoke_exec,
};

const struct cmd_entry cmd_grants = {
	.name = "grants",
	.usage = "[ID] [--json]",
	.summary = "list the grants in force",
	.options = cmd_grants_options,
	.args_min = 0,
	.args_max = 1,
	.flags = CMD_ID | CMD_ID_GONE_OK,
	.exec = cmd_grants_exec,
};

/* HOST[:PORT], brackets for IPv6 with a port; 443 by default. */
static int
grant_dest(const char *arg, struct host *h, uint16_t *port)
{
	const char	*cause;

	return host_parse_authority(arg, strlen(arg), 443, h, port, &cause);
}

/* "30s", "10m", "2h", "1d" (or plain seconds) into seconds; -1. */
static long long
grant_duration(const char *s)
{
	char		*end;
	long long	 n, mul = 1;

	n = strtoll(s, &end, 10);
	if (end == s || n <= 0)
		return -1;
	if (*end != '\0') {
		switch (*end) {
		case 's': mul = 1; break;
		case 'm': mul = 60; break;
		case 'h': mul = 3600; break;
		case 'd': mul = 86400; break;
		default: return -1;
		}
		if (end[1] != '\0')
			return -1;
	}
	if (n > 7LL * 86400 / mul)
		return -1;
	return n * mul;
}

/*
 * A field of a grant as text, then sep: what a client or a hand-edited
 * file put there reaches the terminal with control, C1 and bidi
 * characters as \xHH (quote_text).
 */
static void
grant_put(json_t *g, const char *key, const char *sep)
{
	const char	*s = json_string_value(json_object_get(g, key)) ?: "";

	(void)quote_line(stdout, s, strlen(s), 0, NULL);
	fputs(sep, stdout);
}

/* The local user who grants: the name, and the uid. */
static void
grant_who(char *buf, size_t size)
{
	struct passwd	*pw = getpwuid(getuid());
	const char	*sudo = getenv("SUDO_USER");

	if (getuid() == 0 && sudo != NULL && *sudo != '\0' &&
	    strlen(sudo) < 32 && strspn(sudo, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-") == strlen(sudo))
		snprintf(buf, size, "%s (sudo, uid 0)", sudo);
	else
		snprintf(buf, size, "%s (uid %u)", pw != NULL &&
		    strlen(pw->pw_name) < 32 ? pw->pw_name : "?",
		    (unsigned)getuid());
}

/*
 * One control call (a change: to every proxy replica, *missed naming
 * those it did not reach; missed NULL: a listing, from the first that
 * answers); the exit code, errors said once.
 */
static int
grant_call(const char *method, const char *path, json_t *body,
    json_t **resp, char **missed)
{
	char		*cause = NULL;
	char		*err;
	long		 status = 0;
	int		 rc;

	*resp = NULL;
	if (missed != NULL)
		rc = proxyctl_call_fan(method, path, body, &status, resp,
		    missed, &cause);
	else
		rc = proxyctl_call(method, path, body, &status, resp, &cause);
	if (rc == -1) {
		log_warnx("the proxy cannot be asked: %s (sandgate proxy "
		    "start)", cause ? cause : "no answer");
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (status == 200)
		return SG_EXIT_OK;
	err = proxyctl_error_of(*resp, "the proxy refused the request");
	log_warnx("%s%s", status == 403 ? "grant refused: " : "", err);
	free(err);
	return status == 403 ? SG_EXIT_REFUSED : status == 404 ?
	    SG_EXIT_FAIL : SG_EXIT_ERROR;
}

static int
cmd_grant_exec(struct cmd_args *args)
{
	const struct cmd_opt	*opt;
	struct host		 h;
	json_t			*body, *resp;
	const char		*why = NULL, *run = NULL, *dur = NULL;
	char			 who[96], *missed = NULL, *until;
	long long		 secs;
	uint16_t		 port;
	int			 rc;

	while ((opt = cmd_args_next(args)) != NULL) {
		switch (opt->ch) {
		case 'F': dur = opt->arg; break;
		case 'R': why = opt->arg; break;
		case 'E': run = opt->arg; break;
		}
	}
	if (grant_dest(args->argv[1], &h, &port) == -1)
		return cmd_usage_error(args->entry, "not a valid HOST[:PORT]");
	if ((secs = grant_duration(dur)) == -1)
		return cmd_usage_error(args->entry, "--for takes a duration "
		    "from 1s to 7d, such as 30s, 10m, 2h or 1d");
	if (*why == '\0')
		return cmd_usage_error(args->entry, "--rationale must say why");
	if (run != NULL && (strlen(run) != 28 || strncmp(run, "run_", 4) !=
	    0 || strspn(run + 4, "0123456789abcdef") != 24))
		return cmd_usage_error(args->entry, "--exec takes a run id "
		    "(run_ and 24 hex digits)");
	grant_who(who, sizeof(who));
	body = json_pack("{s:s, s:s, s:i, s:I, s:s, s:s, s:s?}", "sandbox",
	    args->argv[0], "host", h.name, "port", (int)port, "seconds",
	    (json_int_t)secs, "rationale", why, "by", who, "run_id", run);
	rc = grant_call("POST", "/grants", body, &resp, &missed);
	if (rc == SG_EXIT_OK) {
		until = proxyctl_words(json_object_get(json_object_get(resp,
		    "grant"), "expires"), "?");
		printf("granted %s%s%s:%u to %s%s%s until %s\n",
		    strchr(h.name, ':') ? "[" : "", h.name,
		    strchr(h.name, ':') ? "]" : "", port, args->argv[0],
		    run ? ", exec " : "", run ? run : "", until);
		free(until);
	}
	return grant_done(rc, resp, body, missed);
}

/*
 * The end of grant and revoke: rc, or SG_EXIT_ERROR with a warning when
 * the proxy holds the change but could not save its grants (its run
 * folder full or read-only), since a restart before it saves them again
 * would undo the change; the same when some proxy replicas (missed) did
 * not take it. Frees resp, body and missed.
 */
static int
grant_done(int rc, json_t *resp, json_t *body, char *missed)
{
	if (rc == SG_EXIT_OK && json_is_false(json_object_get(resp,
	    "saved_beside_taken"))) {
		log_warnx("the proxy holds this revoke and saved it, but "
		    "could not record it beside the grants file it took "
		    "(see its output): if its own grants file is lost, a "
		    "restart would undo it");
		rc = SG_EXIT_ERROR;
	} else if (rc == SG_EXIT_OK && json_is_false(json_object_get(resp,
	    "saved"))) {
		log_warnx("the proxy holds this now but could not save its "
		    "grants (grants.json%s; it tries again every second, see "
		    "its output): a restart before then would undo it",
		    json_object_get(resp, "saved_apart") ? " nor "
		    "grants.json.revoked" : "");
		rc = SG_EXIT_ERROR;
	}
	if (missed != NULL) {
		log_warnx("warning: not every proxy replica holds this: %s "
		    "(they decide without it until it is given again)",
		    missed);
		rc = SG_EXIT_ERROR;
	}
	free(missed);
	json_decref(resp);
	json_decref(body);
	return rc;
}

static int
cmd_revoke_exec(struct cmd_args *args)
{
	struct host	 h;
	json_t		*body, *resp;
	char		 who[96], *missed = NULL;
	uint16_t	 port;
	int		 rc;

	if (grant_dest(args->argv[1], &h, &port) == -1)
		return cmd_usage_error(args->entry, "not a valid HOST[:PORT]");
	grant_who(who, sizeof(who));
	body = json_pack("{s:s, s:s, s:i, s:s}", "sandbox", args->argv[0],
	    "host", h.name, "port", (int)port, "by", who);
	rc = grant_call("POST", "/grants/revoke", body, &resp, &missed);
	if (rc == SG_EXIT_OK)
		printf("revoked %s:%u for %s (%lld connection%s closed)\n",
		    h.name, port, args->argv[0], (long long)json_integer_value(
		    json_object_get(resp, "closed")), json_integer_value(
		    json_object_get(resp, "closed")) == 1 ? "" : "s");
	if (rc == SG_EXIT_OK && json_is_true(json_object_get(resp,
	    "saved_apart")))
		log_warnx("note: the proxy cannot write its grants.json (see "
		    "its output); this revoke is kept in grants.json.revoked "
		    "beside it, so a restart keeps it revoked");
	return grant_done(rc, resp, body, missed);
}

static int
cmd_grants_exec(struct cmd_args *args)
{
	const struct cmd_opt	*opt;
	json_t			*resp, *g;
	char			 path[128], *since;
	size_t			 i;
	int			 json = 0, rc;

	while ((opt = cmd_args_next(args)) != NULL)
		if (opt->ch == 'j')
			json = 1;
	snprintf(path, sizeof(path), "/grants%s%s", args->argc > 0 ?
	    "?sandbox=" : "", args->argc > 0 ? args->argv[0] : "");
	rc = grant_call("GET", path, NULL, &resp, NULL);
	json_array_foreach(json_object_get(resp, "grants"), i, g) {
		if (json) {
			json_dumpf(g, stdout, JSON_COMPACT |
			    JSON_ENSURE_ASCII);
			putchar('\n');
			continue;
		}
		grant_put(g, "sandbox", "  ");
		grant_put(g, "host", ":");
		printf("%lld  %s", (long long)json_integer_value(
		    json_object_get(g, "port")), json_string_value(
		    json_object_get(g, "run_id")) ? "exec " : "every exec");
		grant_put(g, "run_id", "  until ");
		grant_put(g, "expires", "  by ");
		grant_put(g, "by", ": ");
		grant_put(g, "rationale", "\n");
	}
	if (json_is_false(json_object_get(resp, "grants_saved"))) {
		since = proxyctl_words(json_object_get(resp,
		    "grants_unsaved_since"), "?");
		log_warnx("warning: the proxy could not save its grants since "
		    "%s (grants.json; its folder full or read-only?): a "
		    "restart now would lose the grants given since, and the "
		    "revokes `revoke` said it could not save", since);
		free(since);
	}
	json_decref(resp);
	return rc;
}
