/*
 * cmd_proxy.c: sandgate proxy start|stop|status|reload|logs — the proxy
 * container, its image and the two networks sandboxes and the proxy sit on,
 * which proxyctl.h sets up and talks to.
 */

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "auditkey.h"
#include "checkpoint.h"
#include "cmd.h"
#include "docker.h"
#include "execend.h"
#include "log.h"
#include "proxyctl.h"
#include "sandbox.h"
#include "state.h"
#include "unregpend.h"
#include "token.h"
#include "util.h"

static int	cmd_proxy_start_exec(struct cmd_args *);
static int	cmd_proxy_stop_exec(struct cmd_args *);
static int	cmd_proxy_status_exec(struct cmd_args *);
static int	cmd_proxy_reload_exec(struct cmd_args *);
static int	cmd_proxy_logs_exec(struct cmd_args *);
static int	cmd_proxy_rotate_ca_exec(struct cmd_args *);
static int	cmd_proxy_token_exec(struct cmd_args *);
static void	cmd_proxy_opts(struct cmd_args *, struct proxyctl_opts *);
static int	cmd_proxy_paths(struct proxyctl_opts *, char *, char *,
		    char *);

const struct cmd_entry cmd_proxy;

static const struct option cmd_proxy_options[] = {
	{ "policy-dir", required_argument, NULL, 'p' },
	{ "log-dir", required_argument, NULL, 'L' },
	{ "egress-network", required_argument, NULL, 'e' },
	{ "subnet", required_argument, NULL, 's' },
	{ "hosts", required_argument, NULL, 'H' },
	{ "resolver", required_argument, NULL, 'r' },
	{ "sets", required_argument, NULL, 'S' },
	{ "log-allowed", no_argument, NULL, 'A' },
	{ "follow", no_argument, NULL, 'f' },
	{ "run", required_argument, NULL, 'R' },
	{ "ttl", required_argument, NULL, 'T' },
	{ NULL, 0, NULL, 0 }
};

static const struct cmd_entry cmd_proxy_start = {
	.name = "start",
	.usage = "[--policy-dir DIR] [--log-dir DIR] [--egress-network NAME] "
	    "[--subnet CIDR] [--hosts FILE] [--resolver IP:PORT] [--sets a,b] "
	    "[--log-allowed]",
	.summary = "create the networks and start the proxy container "
	    "(idempotent)",
	.parent = &cmd_proxy,
	.accepts = "pLesHrSA",
	.args_max = 0,
	.exec = cmd_proxy_start_exec,
};

static const struct cmd_entry cmd_proxy_stop = {
	.name = "stop",
	.usage = "",
	.summary = "stop the proxy (it drains, then signs its log) and remove "
	    "it",
	.parent = &cmd_proxy,
	.accepts = "",
	.args_max = 0,
	.exec = cmd_proxy_stop_exec,
};

static const struct cmd_entry cmd_proxy_status = {
	.name = "status",
	.usage = "",
	.summary = "health, policy, counters, sandboxes; exit 1 if unhealthy",
	.parent = &cmd_proxy,
	.accepts = "",
	.args_max = 0,
	.exec = cmd_proxy_status_exec,
};

static const struct cmd_entry cmd_proxy_reload = {
	.name = "reload",
	.usage = "",
	.summary = "load the policy folder again; a bad one is refused (exit 1)",
	.parent = &cmd_proxy,
	.accepts = "",
	.args_max = 0,
	.exec = cmd_proxy_reload_exec,
};

static const struct cmd_entry cmd_proxy_logs = {
	.name = "logs",
	.usage = "[-f]",
	.summary = "the proxy container's own stderr (-f: follow it)",
	.parent = &cmd_proxy,
	.accepts = "f",
	.args_max = 0,
	.exec = cmd_proxy_logs_exec,
};

static const struct cmd_entry cmd_proxy_rotate_ca = {
	.name = "rotate-ca",
	.usage = "",
	.summary = "remove the sandgate CA; the next proxy start makes a new "
	    "one",
	.help = "The running proxy keeps minting with the old CA until it "
	    "is stopped;\nsandboxes made before trust the old one alone: "
	    "re-create them.\n",
	.parent = &cmd_proxy,
	.accepts = "",
	.args_max = 0,
	.exec = cmd_proxy_rotate_ca_exec,
};

static const struct cmd_entry cmd_proxy_token = {
	.name = "token",
	.usage = "[--run ID] [--sets a,b] [--ttl SECONDS] SANDBOX",
	.summary = "print a signed sandbox token for proxy replicas",
	.help = "Signed with the token key `proxy start` made; a replica "
	    "started with\n--token-key KEY.pub accepts it until it expires "
	    "(--ttl, default 3600,\nat most 30 days). docs/proxy.md, "
	    "\"Sandbox tokens\".\n",
	.parent = &cmd_proxy,
	.accepts = "RST",
	.args_min = 1,
	.args_max = 1,
	.exec = cmd_proxy_token_exec,
};

static const struct cmd_entry *const cmd_proxy_verbs[] = {
	&cmd_proxy_start, &cmd_proxy_stop, &cmd_proxy_status,
	&cmd_proxy_reload, &cmd_proxy_logs, &cmd_proxy_rotate_ca,
	&cmd_proxy_token, NULL
};

const struct cmd_entry cmd_proxy = {
	.name = "proxy",
	.usage = "start|stop|status|reload|logs|rotate-ca|token [OPTIONS]",
	.summary = "run the egress proxy container and its networks",
	.options = cmd_proxy_options,
	.shortopts = "f",
	.verbs = cmd_proxy_verbs,
};

/* The options of start into o. */
static void
cmd_proxy_opts(struct cmd_args *args, struct proxyctl_opts *o)
{
	const struct cmd_opt	*opt;

	memset(o, 0, sizeof(*o));
	o->subnet = PROXYCTL_SUBNET;
	while ((opt = cmd_args_next(args)) != NULL) {
		switch (opt->ch) {
		case 'p': o->policy_dir = opt->arg; break;
		case 'L': o->log_dir = opt->arg; break;
		case 'e': o->egress = opt->arg; break;
		case 's': o->subnet = opt->arg; break;
		case 'H': o->hosts = opt->arg; break;
		case 'r': o->resolver = opt->arg; break;
		case 'S': o->sets = opt->arg; break;
		case 'A': o->log_allowed = 1; break;
		}
	}
}

/*
 * Bind mounts need absolute, existing paths: the policy folder, the log
 * folder (made when missing) and --hosts into the PATH_MAX buffers given.
 * 0, or -1 after a message.
 */
static int
cmd_proxy_paths(struct proxyctl_opts *o, char *pol, char *logd, char *hosts)
{
	const char	*dir;

	dir = o->policy_dir ? o->policy_dir : state_policy_dir();
	if (realpath(dir, pol) == NULL) {
		log_warnx("policy folder %s: %s", dir, strerror(errno));
		return -1;
	}
	o->policy_dir = pol;
	state_mkdirs(o->log_dir ? o->log_dir : state_log_dir(), 0755);
	if (realpath(o->log_dir ? o->log_dir : state_log_dir(), logd) == NULL) {
		log_warnx("log folder: %s", strerror(errno));
		return -1;
	}
	o->log_dir = logd;
	if (o->hosts != NULL) {
		if (realpath(o->hosts, hosts) == NULL) {
			log_warnx("--hosts %s: %s", o->hosts, strerror(errno));
			return -1;
		}
		o->hosts = hosts;
	}
	return 0;
}

/* `proxy start`: the container, its networks and folders (proxyctl.h). */
static int
cmd_proxy_start_exec(struct cmd_args *args)
{
	struct proxyctl_opts	 o;
	struct docker		*d;
	enum proxyctl_started	 r;
	char			 pol[PATH_MAX], logd[PATH_MAX], hosts[PATH_MAX];
	char			 ip[64], tokkey[PATH_MAX], *cause = NULL;

	cmd_proxy_opts(args, &o);
	if (cmd_proxy_paths(&o, pol, logd, hosts) == -1)
		return SG_EXIT_ERROR;
	/* The keys first: one in the log folder is refused before Docker. */
	if (auditkey_prepare_proxy(o.log_dir, &cause) == -1 ||
	    auditkey_prepare_token(o.log_dir, tokkey, sizeof(tokkey),
	    &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (proxyctl_subnet_ip(o.subnet, ip, sizeof(ip)) == -1) {
		log_warnx("--subnet \"%s\": want an IPv4 CIDR of /29 or larger",
		    o.subnet);
		return SG_EXIT_USAGE;
	}
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	r = proxyctl_start(d, &o, &cause);
	docker_free(d);
	if (r == PROXYCTL_START_FAILED) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (r == PROXYCTL_RUNNING)
		printf("proxy already running (%s:%d)\n", ip, PROXYCTL_PORT);
	else
		printf("proxy running: %s:%d on %s, upstream side on %s\n",
		    ip, PROXYCTL_PORT, PROXYCTL_NET_INTERNAL, o.egress);
	/*
	 * what its registry may bring back: the unregisters and the ends of
	 * exec credentials still owed
	 */
	(void)unregpend_retry(0, unregpend_report, NULL);
	(void)execend_retry(NULL, 0, execend_report, NULL);
	return SG_EXIT_OK;
}

/* `proxy stop`: no option, and no folder either (the policy's may be gone). */
static int
cmd_proxy_stop_exec(struct cmd_args *args)
{
	struct docker	*d;
	char		*cause = NULL;
	int		 rc;

	(void)args;
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxyctl_stop(d, &cause);
	docker_free(d);
	if (rc == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	printf("proxy stopped\n");
	return SG_EXIT_OK;
}

/*
 * fmt, its one %s the string key of a replica's answer obj, escaped
 * (proxyctl_words: atk1921j F1).
 */
static void
proxy_print(const char *fmt, json_t *obj, const char *key)
{
	char	*words = proxyctl_words(json_object_get(obj, key), "?");

	printf(fmt, words);
	free(words);
}

/* One sandbox of GET /status, its words escaped (atk1921j F1). */
static void
proxy_print_sandbox(json_t *s)
{
	char	*id = proxyctl_words(json_object_get(s, "sandbox"), "?");
	char	*addr = proxyctl_words(json_object_get(s, "address"), "?");
	char	*sets = json_dumps(json_object_get(s, "sets"), JSON_COMPACT |
		    JSON_ENSURE_ASCII);

	printf("  %s  %-15s  sets %s\n", id, addr, sets ? sets : "[]");
	free(sets);
	free(addr);
	free(id);
}

static int
cmd_proxy_status_exec(struct cmd_args *args)
{
	struct docker	*d;
	json_t		*st = NULL, *s;
	char		*cause = NULL, ip[64];
	const char	*health;
	size_t		 i;
	long		 status = 0;
	int		 rc;

	(void)args;
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxyctl_address(d, ip, sizeof(ip), &cause);
	docker_free(d);
	if (rc == -1 || proxyctl_call("GET", "/status", NULL, &status, &st,
	    &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_FAIL;
	}
	health = json_string_value(json_object_get(st, "health"));
	printf("proxy:        %s:%d ", ip, PROXYCTL_PORT);
	proxy_print("(%s)\n", st, "health");
	if (health != NULL && strcmp(health, "ok") != 0)
		proxy_print("log error:    %s\n", st, "log_error");
	proxy_print("policy:       %s\n", st, "policy_digest");
	printf("uptime:       %lld s\n", (long long)json_integer_value(
	    json_object_get(st, "uptime_s")));
	printf("connections:  %lld open, %lld total\n",
	    (long long)json_integer_value(json_object_get(st,
	    "connections_open")), (long long)json_integer_value(
	    json_object_get(st, "connections_total")));
	printf("requests:     %lld allowed, %lld blocked, %lld upstream "
	    "errors\n", (long long)json_integer_value(json_object_get(st,
	    "requests_allowed")), (long long)json_integer_value(
	    json_object_get(st, "requests_blocked")),
	    (long long)json_integer_value(json_object_get(st,
	    "upstream_errors")));
	printf("log seq:      %lld\n", (long long)json_integer_value(
	    json_object_get(st, "log_seq")));
	printf("sandboxes:    %zu\n", json_array_size(json_object_get(st,
	    "sandboxes")));
	json_array_foreach(json_object_get(st, "sandboxes"), i, s)
		proxy_print_sandbox(s);
	rc = health != NULL && strcmp(health, "ok") == 0 ? SG_EXIT_OK :
	    SG_EXIT_FAIL;
	json_decref(st);
	return rc;
}

static int
cmd_proxy_reload_exec(struct cmd_args *args)
{
	json_t	*resp = NULL, *e;
	char	*cause = NULL, *words;
	size_t	 i;
	long	 status = 0;
	int	 rc;

	(void)args;
	if (proxyctl_call("POST", "/reload", NULL, &status, &resp, &cause) ==
	    -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (status == 200) {
		proxy_print("policy reloaded: digest %s\n", resp, "digest");
		rc = SG_EXIT_OK;
		if (json_is_false(json_object_get(resp, "saved"))) {
			log_warnx("the proxy could not save its grants "
			    "(grants.json; it tries again every second): a "
			    "restart before then would bring back grants this "
			    "policy ended");
			rc = SG_EXIT_ERROR;
		}
		json_decref(resp);
		return rc;
	}
	log_warnx("policy reload rejected; the old policy stays in force:");
	json_array_foreach(json_object_get(resp, "errors"), i, e) {
		words = proxyctl_words(e, "?");
		fprintf(stderr, "  %s\n", words);
		free(words);
	}
	json_decref(resp);
	return SG_EXIT_FAIL;
}

/* The proxy container's own stderr (start-up, reloads, warnings). */
static int
cmd_proxy_logs_exec(struct cmd_args *args)
{
	struct docker	*d;
	char		*cause = NULL;
	int		 rc;

	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxyctl_container_logs(docker_api_version(d),
	    args->nopts > 0, &cause);	/* -f, its one option */
	docker_free(d);
	if (rc == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	return SG_EXIT_OK;
}

/* `proxy rotate-ca`: the CA goes; `proxy start` makes the next one. */
static int
cmd_proxy_rotate_ca_exec(struct cmd_args *args)
{
	char	*cause = NULL;

	(void)args;
	switch (proxyctl_ca_remove(&cause)) {
	case -1:
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	case 1:
		printf("no sandgate CA to rotate; proxy start makes one\n");
		return SG_EXIT_OK;
	}
	printf("sandgate CA removed: `sandgate proxy stop` then `sandgate "
	    "proxy start` makes a new one; re-create the sandboxes made "
	    "before\n");
	return SG_EXIT_OK;
}

/*
 * `proxy token`: a token for SANDBOX signed with the token key, valid
 * from now for --ttl seconds, naming --run and --sets (token.h).
 */
static int
cmd_proxy_token_exec(struct cmd_args *args)
{
	const struct cmd_opt	*opt;
	struct token		 t;
	EVP_PKEY		*key;
	char			 path[PATH_MAX], text[TOKEN_TEXT_MAX + 1];
	char			*cause = NULL;
	const char		*why, *errstr;
	long long		 ttl = 3600;

	memset(&t, 0, sizeof(t));
	snprintf(t.sandbox, sizeof(t.sandbox), "%.64s", args->argv[0]);
	while ((opt = cmd_args_next(args)) != NULL) {
		if (opt->ch == 'R')
			snprintf(t.run, sizeof(t.run), "%.64s", opt->arg);
		else if (opt->ch == 'S')
			snprintf(t.sets, sizeof(t.sets), "%.255s", opt->arg);
		else if (opt->ch == 'T' && util_strtonum(opt->arg, 1,
		    TOKEN_TTL_MAX, &ttl, &errstr) == -1)
			return cmd_usage_error(args->entry, "--ttl \"%s\": %s",
			    opt->arg, errstr);
	}
	if (strlen(args->argv[0]) > TOKEN_ID_MAX)
		return cmd_usage_error(args->entry, "sandbox id \"%s\" is "
		    "longer than 64 bytes", args->argv[0]);
	t.issued = (uint64_t)time(NULL);
	t.expires = t.issued + (uint64_t)ttl;
	if (auditkey_prepare_token(NULL, path, sizeof(path), &cause) == -1 ||
	    (key = checkpoint_key_load(path, &cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (token_issue(key, &t, text, &why) == -1) {
		EVP_PKEY_free(key);
		return cmd_usage_error(args->entry, "%s", why);
	}
	EVP_PKEY_free(key);
	printf("%s\n", text);
	return SG_EXIT_OK;
}
