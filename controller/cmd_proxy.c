/*
 * cmd_proxy.c: sandgate proxy start|stop|status|reload|logs — the proxy
 * container, its image and the two networks sandboxes and the proxy sit on,
 * which proxyctl.h sets up and talks to.
 */

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "auditkey.h"
#include "cmd.h"
#include "docker.h"
#include "proxyctl.h"
#include "state.h"
#include "util.h"

struct proxy_opts {
	const char	*policy_dir;
	const char	*log_dir;
	const char	*egress;	/* existing network, or NULL */
	const char	*subnet;
	const char	*hosts;
	const char	*resolver;
	const char	*sets;
	int		 log_allowed;
	int		 follow;
};

static int	cmd_proxy_start(struct docker *, const struct proxy_opts *);
static int	cmd_proxy_stop(struct docker *);
static int	cmd_proxy_status(struct docker *);
static int	cmd_proxy_reload(void);
static int	cmd_proxy_logs(struct docker *, int follow);
static int	cmd_proxy_paths(struct proxy_opts *, char *, char *, char *);

static const char proxy_usage[] =
    "start|stop|status|reload|logs [--policy-dir DIR] [--log-dir DIR] "
    "[--egress-network NAME] [--subnet CIDR] [--hosts FILE] "
    "[--resolver IP:PORT] [--sets a,b] [--log-allowed] [-f]";

static int	cmd_proxy_exec(int, char **);

const struct cmd_entry cmd_proxy = {
	.name = "proxy",
	.usage = proxy_usage,
	.summary = "run the egress proxy container and its networks "
	    "(start, stop, status, reload, logs)",
	.exec = cmd_proxy_exec,
};

/* `proxy start`: the container, its networks and folders (proxyctl.h). */
static int
cmd_proxy_start(struct docker *d, const struct proxy_opts *po)
{
	struct proxyctl_opts	 o = { po->policy_dir, po->log_dir, po->egress,
				    po->subnet, po->hosts, po->resolver,
				    po->sets, po->log_allowed };
	enum proxyctl_started	 r;
	char			 ip[64], *cause = NULL;

	if (proxyctl_subnet_ip(o.subnet, ip, sizeof(ip)) == -1) {
		fprintf(stderr, "sandgate: --subnet \"%s\": want an IPv4 "
		    "CIDR of /29 or larger\n", o.subnet);
		return SG_EXIT_USAGE;
	}
	if ((r = proxyctl_start(d, &o, &cause)) == PROXYCTL_START_FAILED) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (r == PROXYCTL_RUNNING)
		printf("proxy already running (%s:%d)\n", ip, PROXYCTL_PORT);
	else
		printf("proxy running: %s:%d on %s, upstream side on %s\n",
		    ip, PROXYCTL_PORT, PROXYCTL_NET_INTERNAL, o.egress);
	return SG_EXIT_OK;
}

static int
cmd_proxy_stop(struct docker *d)
{
	char	*cause = NULL;

	if (proxyctl_stop(d, &cause) == -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	printf("proxy stopped\n");
	return SG_EXIT_OK;
}

static int
cmd_proxy_status(struct docker *d)
{
	json_t		*st = NULL, *s;
	char		*cause = NULL, ip[64];
	const char	*health;
	size_t		 i;
	long		 status = 0;
	int		 rc;

	if (proxyctl_address(d, ip, sizeof(ip), &cause) == -1 ||
	    proxyctl_call("GET", "/status", NULL, &status, &st, &cause) == -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_FAIL;
	}
	health = json_string_value(json_object_get(st, "health"));
	printf("proxy:        %s:%d (%s)\n", ip, PROXYCTL_PORT,
	    health ? health : "?");
	if (health != NULL && strcmp(health, "ok") != 0)
		printf("log error:    %s\n", json_string_value(
		    json_object_get(st, "log_error")));
	printf("policy:       %s\n", json_string_value(json_object_get(st,
	    "policy_digest")));
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
	json_array_foreach(json_object_get(st, "sandboxes"), i, s) {
		char	*sets = json_dumps(json_object_get(s, "sets"),
			    JSON_COMPACT);

		printf("  %s  %-15s  sets %s\n", json_string_value(
		    json_object_get(s, "sandbox")), json_string_value(
		    json_object_get(s, "address")), sets ? sets : "[]");
		free(sets);
	}
	rc = health != NULL && strcmp(health, "ok") == 0 ? SG_EXIT_OK :
	    SG_EXIT_FAIL;
	json_decref(st);
	return rc;
}

static int
cmd_proxy_reload(void)
{
	json_t	*resp = NULL, *e;
	char	*cause = NULL;
	size_t	 i;
	long	 status = 0;

	if (proxyctl_call("POST", "/reload", NULL, &status, &resp, &cause) ==
	    -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (status == 200) {
		printf("policy reloaded: digest %s\n", json_string_value(
		    json_object_get(resp, "digest")));
		json_decref(resp);
		return SG_EXIT_OK;
	}
	fprintf(stderr, "sandgate: policy reload rejected; the old policy "
	    "stays in force:\n");
	json_array_foreach(json_object_get(resp, "errors"), i, e)
		fprintf(stderr, "  %s\n", json_string_value(e));
	json_decref(resp);
	return SG_EXIT_FAIL;
}

/* The proxy container's own stderr (start-up, reloads, warnings). */
static int
cmd_proxy_logs(struct docker *d, int follow)
{
	char	*cause = NULL;

	if (proxyctl_container_logs(docker_api_version(d), follow, &cause) ==
	    -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	return SG_EXIT_OK;
}

/*
 * Bind mounts need absolute, existing paths: the policy folder, the log
 * folder (made when missing) and --hosts into the PATH_MAX buffers given.
 * 0, or -1 after a message.
 */
static int
cmd_proxy_paths(struct proxy_opts *o, char *pol, char *logd, char *hosts)
{
	const char	*dir;

	dir = o->policy_dir ? o->policy_dir : state_policy_dir();
	if (realpath(dir, pol) == NULL) {
		fprintf(stderr, "sandgate: policy folder %s: %s\n", dir,
		    strerror(errno));
		return -1;
	}
	o->policy_dir = pol;
	state_mkdirs(o->log_dir ? o->log_dir : state_log_dir(), 0755);
	if (realpath(o->log_dir ? o->log_dir : state_log_dir(), logd) == NULL) {
		fprintf(stderr, "sandgate: log folder: %s\n", strerror(errno));
		return -1;
	}
	o->log_dir = logd;
	if (o->hosts != NULL) {
		if (realpath(o->hosts, hosts) == NULL) {
			fprintf(stderr, "sandgate: --hosts %s: %s\n", o->hosts,
			    strerror(errno));
			return -1;
		}
		o->hosts = hosts;
	}
	return 0;
}

static int
cmd_proxy_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "policy-dir", required_argument, NULL, 'p' },
		{ "log-dir", required_argument, NULL, 'L' },
		{ "egress-network", required_argument, NULL, 'e' },
		{ "subnet", required_argument, NULL, 's' },
		{ "hosts", required_argument, NULL, 'H' },
		{ "resolver", required_argument, NULL, 'r' },
		{ "sets", required_argument, NULL, 'S' },
		{ "log-allowed", no_argument, NULL, 'A' },
		{ "follow", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct proxy_opts	 o;
	struct docker		*d;
	const char		*verb;
	char			*cause = NULL, pol[PATH_MAX], logd[PATH_MAX];
	char			 hosts[PATH_MAX];
	int			 ch, rc;

	memset(&o, 0, sizeof(o));
	o.subnet = PROXYCTL_SUBNET;
	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":fh", longopts, NULL)) != -1) {
		switch (ch) {
		case 'p': o.policy_dir = optarg; break;
		case 'L': o.log_dir = optarg; break;
		case 'e': o.egress = optarg; break;
		case 's': o.subnet = optarg; break;
		case 'H': o.hosts = optarg; break;
		case 'r': o.resolver = optarg; break;
		case 'S': o.sets = optarg; break;
		case 'A': o.log_allowed = 1; break;
		case 'f': o.follow = 1; break;
		case 'h': return cmd_help(&cmd_proxy);
		case ':':
			return cmd_usage_error(&cmd_proxy, "option '%s' needs "
			    "a value", argv[optind - 1]);
		default:
			return cmd_usage_error(&cmd_proxy, "unknown option "
			    "'%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cmd_usage_error(&cmd_proxy, "want one of start, stop, "
		    "status, reload, logs");
	verb = argv[optind];
	if (strcmp(verb, "reload") == 0)
		return cmd_proxy_reload();
	if (cmd_proxy_paths(&o, pol, logd, hosts) == -1)
		return SG_EXIT_ERROR;
	/* The key first: one in the log folder is refused before Docker. */
	if (strcmp(verb, "start") == 0 &&
	    auditkey_prepare_proxy(o.log_dir, &cause) == -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if ((d = docker_new(&cause)) == NULL) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (strcmp(verb, "start") == 0)
		rc = cmd_proxy_start(d, &o);
	else if (strcmp(verb, "stop") == 0)
		rc = cmd_proxy_stop(d);
	else if (strcmp(verb, "status") == 0)
		rc = cmd_proxy_status(d);
	else if (strcmp(verb, "logs") == 0)
		rc = cmd_proxy_logs(d, o.follow);
	else
		rc = cmd_usage_error(&cmd_proxy, "unknown action '%s'", verb);
	docker_free(d);
	return rc;
}
