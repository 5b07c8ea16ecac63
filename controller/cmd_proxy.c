/*
 * cmd_proxy.c: sandgate proxy start|stop|status|reload|logs — the proxy
 * container, its image and the two networks sandboxes and the proxy sit on.
 */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/evp.h>

#include "addr.h"
#include "auditkey.h"
#include "cmd.h"
#include "docker.h"
#include "log.h"
#include "proxyctl.h"
#include "sandbox.h"
#include "script.h"
#include "state.h"
#include "util.h"

/* docker stop: the proxy drains for up to 30 s, then signs and exits. */
#define PROXY_STOP_SECS	35

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

static int	proxy_start(struct docker *, struct proxy_opts *);
static int	proxy_stop(struct docker *);
static int	proxy_stop_signed(struct docker *, char **);
static int	proxy_status(struct docker *);
static int	proxy_reload(void);
static int	proxy_logs(struct docker *, int follow);
static int	proxy_build_image(char **cause);
static int	proxy_ensure_networks(struct docker *, struct proxy_opts *,
		    char **cause);
static int	proxy_subnet_clash(struct docker *, const char *subnet,
		    char **cause);
static json_t	*proxy_spec(struct proxy_opts *, const char *ip);
static int	proxy_prepare_dirs(struct proxy_opts *, char **cause);
static int	proxy_wait_ready(void);
static char	*proxy_config_digest(json_t *spec);

static int	cmd_proxy_start_exec(struct cmd_args *);
static int	cmd_proxy_stop_exec(struct cmd_args *);
static int	cmd_proxy_status_exec(struct cmd_args *);
static int	cmd_proxy_reload_exec(struct cmd_args *);
static int	cmd_proxy_logs_exec(struct cmd_args *);
static int	proxy_opts(struct cmd_args *, struct proxy_opts *);

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

static const struct cmd_entry *const cmd_proxy_verbs[] = {
	&cmd_proxy_start, &cmd_proxy_stop, &cmd_proxy_status,
	&cmd_proxy_reload, &cmd_proxy_logs, NULL
};

const struct cmd_entry cmd_proxy = {
	.name = "proxy",
	.usage = "start|stop|status|reload|logs [OPTIONS]",
	.summary = "run the egress proxy container and its networks",
	.options = cmd_proxy_options,
	.shortopts = "f",
	.verbs = cmd_proxy_verbs,
};

/* The address the proxy gets on sandgate-internal: the subnet's .2. */
static int
proxy_subnet_ip(const char *subnet, char *buf, size_t size)
{
	struct addr_cidr	 c;
	const char		*cause;

	if (addr_cidr_parse(subnet, &c, &cause) == -1 ||
	    c.family != AF_INET || c.prefix > 29)
		return -1;
	snprintf(buf, size, "%u.%u.%u.%u", c.bytes[0], c.bytes[1], c.bytes[2],
	    c.bytes[3] + 2);
	return 0;
}

/* Build (or refresh) sandgate/proxy from the sandgate-proxy beside us. */
static int
proxy_build_image(char **cause)
{
	char	 bin[PATH_MAX + 32];
	char	*args[] = { bin, NULL };

	snprintf(bin, sizeof(bin), "%s/sandgate-proxy", script_bin_dir());
	if (access(bin, X_OK) == -1) {
		util_xasprintf(cause, "cannot build the proxy image: %s: %s",
		    bin, strerror(errno));
		return -1;
	}
	return script_run("images/proxy/build.sh", args, cause);
}

/* Refuse a subnet that overlaps another network's. */
static int
proxy_subnet_clash(struct docker *d, const char *subnet, char **cause)
{
	struct addr_cidr	 mine, other;
	json_t			*nets = NULL, *n, *cfg;
	const char		*s, *name, *err;
	size_t			 i, j;
	long			 status = 0;
	int			 rc = 0;

	if (addr_cidr_parse(subnet, &mine, &err) == -1) {
		util_xasprintf(cause, "--subnet \"%s\": %s", subnet, err);
		return -1;
	}
	if (docker_call(d, "GET", "/networks", NULL, &status, &nets, cause) ==
	    -1)
		return -1;
	json_array_foreach(nets, i, n) {
		name = json_string_value(json_object_get(n, "Name"));
		if (name == NULL || strcmp(name, PROXYCTL_NET_INTERNAL) == 0)
			continue;
		json_array_foreach(json_object_get(json_object_get(n, "IPAM"),
		    "Config"), j, cfg) {
			s = json_string_value(json_object_get(cfg, "Subnet"));
			if (s == NULL || addr_cidr_parse(s, &other, &err) == -1 ||
			    other.family != mine.family)
				continue;
			if (addr_cidr_covers(&mine, &other) ||
			    addr_cidr_covers(&other, &mine)) {
				util_xasprintf(cause, "subnet %s clashes with "
				    "network %s (%s); choose another with "
				    "--subnet", subnet, name, s);
				rc = -1;
			}
		}
		if (rc == -1)
			break;
	}
	json_decref(nets);
	return rc;
}

/*
 * sandgate-internal: --internal and inhibit_ipv4, so a sandbox reaches
 * neither a route out nor the host; sandgate-egress: the proxy's way out
 * (or the network named by --egress-network).
 */
static int
proxy_ensure_networks(struct docker *d, struct proxy_opts *o, char **cause)
{
	int	have;

	if ((have = docker_network_exists(d, PROXYCTL_NET_INTERNAL, cause)) ==
	    -1)
		return -1;
	if (!have) {
		if (proxy_subnet_clash(d, o->subnet, cause) == -1)
			return -1;
		if (docker_network_create(d, PROXYCTL_NET_INTERNAL, 1,
		    o->subnet, "sandgate.role", "internal", cause) == -1)
			return -1;
		printf("created network %s (%s, internal, host unreachable)\n",
		    PROXYCTL_NET_INTERNAL, o->subnet);
	}
	if (o->egress != NULL) {
		if ((have = docker_network_exists(d, o->egress, cause)) != 1) {
			if (have == 0)
				util_xasprintf(cause, "--egress-network %s does "
				    "not exist", o->egress);
			return -1;
		}
		return 0;
	}
	o->egress = PROXYCTL_NET_EGRESS;
	if ((have = docker_network_exists(d, PROXYCTL_NET_EGRESS, cause)) != 0)
		return have == 1 ? 0 : -1;
	if (docker_network_create(d, PROXYCTL_NET_EGRESS, 0, NULL,
	    "sandgate.role", "egress", cause) == -1)
		return -1;
	printf("created network %s\n", PROXYCTL_NET_EGRESS);
	return 0;
}

/*
 * Folders the proxy writes: owned by its uid, never shared with sandboxes
 * nor with the controller's records (state_record_dir), so nothing the
 * proxy plants there is ever written by root.
 */
static int
proxy_prepare_dirs(struct proxy_opts *o, char **cause)
{
	static const char *const logs[] = { "security-events.jsonl", NULL };
	char		run[PATH_MAX], path[PATH_MAX + 64], rec[PATH_MAX];
	size_t		i;
	int		n;

	if (realpath(state_record_dir(), rec) != NULL &&
	    strcmp(rec, o->log_dir) == 0) {
		util_xasprintf(cause, "the proxy's log folder %s is the "
		    "controller's records folder; give the proxy another "
		    "(--log-dir, SANDGATE_LOG_DIR)", o->log_dir);
		return -1;
	}
	snprintf(run, sizeof(run), "%s/proxy/run", state_root());
	if (state_mkdirs(run, 0750) == -1 || state_mkdirs(o->log_dir, 0755) ==
	    -1) {
		util_xasprintf(cause, "cannot create %s or %s: %s", run,
		    o->log_dir, strerror(errno));
		return -1;
	}
	if (chown(run, PROXYCTL_UID, PROXYCTL_UID) == -1 ||
	    chown(o->log_dir, PROXYCTL_UID, PROXYCTL_UID) == -1) {
		util_xasprintf(cause, "cannot hand %s and %s to uid %d: %s",
		    run, o->log_dir, PROXYCTL_UID, strerror(errno));
		return -1;
	}
	/* The log and its rotations, if an earlier proxy wrote them. */
	for (i = 0; logs[i] != NULL; i++) {
		for (n = 0; n <= 100; n++) {
			if (n == 0)
				snprintf(path, sizeof(path), "%s/%s",
				    o->log_dir, logs[i]);
			else
				snprintf(path, sizeof(path), "%s/%s.%d",
				    o->log_dir, logs[i], n);
			/* a link planted there is re-owned, not its target */
			if (fchownat(AT_FDCWD, path, PROXYCTL_UID,
			    PROXYCTL_UID, AT_SYMLINK_NOFOLLOW) == -1 &&
			    errno == ENOENT && n > 0)
				break;
		}
	}
	return 0;
}

/* The container: non-root, no capabilities, read-only, restarts itself. */
static json_t *
proxy_spec(struct proxy_opts *o, const char *ip)
{
	json_t	*cmd, *binds, *spec;
	char	 listen[96], *b;

	snprintf(listen, sizeof(listen), "%s:%d", ip, PROXYCTL_PORT);
	cmd = json_pack("[s,s,s,s,s,s,s,s]", "--listen", listen,
	    "--policy-dir", "/etc/sandgate/policy.d", "--log-dir",
	    "/var/log/sandgate", "--control-socket",
	    "/run/sandgate/control.sock");
	binds = json_array();
	util_xasprintf(&b, "%s:/etc/sandgate/policy.d:ro", o->policy_dir);
	json_array_append_new(binds, json_string(b));
	free(b);
	util_xasprintf(&b, "%s:/var/log/sandgate:rw", o->log_dir);
	json_array_append_new(binds, json_string(b));
	free(b);
	util_xasprintf(&b, "%s/proxy/run:/run/sandgate:rw", state_root());
	json_array_append_new(binds, json_string(b));
	free(b);
	/* Its checkpoint key's folder, the proxy's alone (auditkey.h). */
	util_xasprintf(&b, "%s/proxy/keys:" AUDITKEY_PROXY_MOUNT ":rw",
	    state_root());
	json_array_append_new(binds, json_string(b));
	free(b);
	json_array_append_new(cmd, json_string("--checkpoint-key"));
	json_array_append_new(cmd, json_string(AUDITKEY_PROXY_MOUNT "/"
	    AUDITKEY_PROXY_NAME));
	/*
	 * A week of rotated logs is never deleted, whatever one sandbox
	 * writes: under a flood the folder grows instead, and the sandbox
	 * that fills it is stopped (docs/audit.md, "A full log volume").
	 */
	json_array_append_new(cmd, json_string("--log-keep-min-age"));
	json_array_append_new(cmd, json_string(PROXYCTL_LOG_KEEP_MIN_AGE));
	if (o->hosts != NULL) {
		util_xasprintf(&b, "%s:/etc/sandgate/hosts:ro", o->hosts);
		json_array_append_new(binds, json_string(b));
		free(b);
		json_array_append_new(cmd, json_string("--hosts"));
		json_array_append_new(cmd, json_string("/etc/sandgate/hosts"));
	}
	if (o->resolver != NULL) {
		json_array_append_new(cmd, json_string("--resolver"));
		json_array_append_new(cmd, json_string(o->resolver));
	}
	if (o->sets != NULL) {
		json_array_append_new(cmd, json_string("--sets"));
		json_array_append_new(cmd, json_string(o->sets));
	}
	if (o->log_allowed)
		json_array_append_new(cmd, json_string("--log-allowed"));
	spec = json_pack("{s:s, s:o, s:s, s:{s:s, s:s}, s:{s:o, s:[s], "
	    "s:[s], s:b, s:{s:s}, s:s, s:I, s:I}, s:{s:{s:{s:{s:s}}}}}",
	    "Image", PROXYCTL_IMAGE, "Cmd", cmd, "User", "65532:65532",
	    "Labels", "sandgate.role", "proxy", "sandgate.egress", o->egress,
	    "HostConfig", "Binds", binds, "CapDrop", "ALL", "SecurityOpt",
	    "no-new-privileges", "ReadonlyRootfs", 1, "RestartPolicy", "Name",
	    "unless-stopped", "NetworkMode", PROXYCTL_NET_INTERNAL,
	    "Memory", (json_int_t)(1024LL << 20), "PidsLimit", (json_int_t)64,
	    "NetworkingConfig", "EndpointsConfig", PROXYCTL_NET_INTERNAL,
	    "IPAMConfig", "IPv4Address", ip);
	return spec;
}

/* SHA-256 of the spec: a running proxy with the same one is kept. */
static char *
proxy_config_digest(json_t *spec)
{
	unsigned char	 md[32];
	char		*text = json_dumps(spec, JSON_COMPACT | JSON_SORT_KEYS);
	char		*hex = util_xmalloc(65);

	EVP_Digest(text, strlen(text), md, NULL, EVP_sha256(), NULL);
	util_hex(md, 32, hex);
	free(text);
	return hex;
}

/* Wait until the control socket answers (at most 15 s). */
static int
proxy_wait_ready(void)
{
	long long	seq;
	int		i;

	for (i = 0; i < 150; i++) {
		if (proxyctl_log_seq(&seq) == 0)
			return 0;
		usleep(100000);
	}
	return -1;
}

static int
proxy_start(struct docker *d, struct proxy_opts *o)
{
	struct docker_cinfo	 ci;
	json_t			*spec, *body;
	char			 ip[64], *cause = NULL, *id = NULL, *digest;
	char			 path[256];
	long			 status = 0;
	int			 rc = SG_EXIT_ERROR;

	if (proxy_subnet_ip(o->subnet, ip, sizeof(ip)) == -1) {
		log_warnx("--subnet \"%s\": want an IPv4 "
		    "CIDR of /29 or larger", o->subnet);
		return SG_EXIT_USAGE;
	}
	if (proxy_build_image(&cause) == -1 ||
	    proxy_ensure_networks(d, o, &cause) == -1 ||
	    proxy_prepare_dirs(o, &cause) == -1)
		goto out;
	spec = proxy_spec(o, ip);
	digest = proxy_config_digest(spec);
	json_object_set_new(json_object_get(spec, "Labels"), "sandgate.config",
	    json_string(digest));
	if (docker_container_inspect(d, PROXYCTL_CONTAINER, &ci, &cause) == 0) {
		char	*have = NULL;
		json_t	*full = NULL;

		snprintf(path, sizeof(path), "/containers/%s/json",
		    PROXYCTL_CONTAINER);
		if (docker_call(d, "GET", path, NULL, &status, &full,
		    &cause) == 0)
			have = (char *)json_string_value(json_object_get(
			    json_object_get(json_object_get(full, "Config"),
			    "Labels"), "sandgate.config"));
		if (ci.running && have != NULL && strcmp(have, digest) == 0 &&
		    strcmp(ci.image, "") != 0) {
			json_decref(full);
			printf("proxy already running (%s:%d)\n", ip,
			    PROXYCTL_PORT);
			json_decref(spec);
			free(digest);
			return proxy_wait_ready() == 0 ? SG_EXIT_OK :
			    SG_EXIT_ERROR;
		}
		json_decref(full);
		if (proxy_stop_signed(d, &cause) == -1 ||
		    docker_container_remove(d, PROXYCTL_CONTAINER, &cause) ==
		    -1) {
			json_decref(spec);
			free(digest);
			goto out;
		}
	}
	free(cause);
	cause = NULL;
	free(digest);
	if (docker_container_create(d, PROXYCTL_CONTAINER, spec, &id,
	    &cause) == -1) {
		json_decref(spec);
		goto out;
	}
	json_decref(spec);
	snprintf(path, sizeof(path), "/networks/%s/connect", o->egress);
	body = json_pack("{s:s}", "Container", id);
	if (docker_call(d, "POST", path, body, &status, NULL, &cause) == -1 ||
	    status != 200) {
		json_decref(body);
		if (cause == NULL)
			util_xasprintf(&cause, "cannot connect the proxy to "
			    "%s (HTTP %ld)", o->egress, status);
		goto out;
	}
	json_decref(body);
	if (docker_container_start(d, id, &cause) == -1)
		goto out;
	if (proxy_wait_ready() == -1) {
		util_xasprintf(&cause, "the proxy started but its control "
		    "socket does not answer; see `sandgate proxy logs`");
		goto out;
	}
	printf("proxy running: %s:%d on %s, upstream side on %s\n", ip,
	    PROXYCTL_PORT, PROXYCTL_NET_INTERNAL, o->egress);
	rc = SG_EXIT_OK;
out:
	if (cause != NULL)
		log_warnx("%s", cause);
	free(cause);
	free(id);
	return rc;
}

/*
 * Stop the proxy with SIGTERM (docker stop) so that it drains and signs
 * its close checkpoint; docker kills it if it takes longer than the drain.
 */
static int
proxy_stop_signed(struct docker *d, char **cause)
{
	char	path[256];
	long	status = 0;

	snprintf(path, sizeof(path), "/containers/%s/stop?t=%d",
	    PROXYCTL_CONTAINER, PROXY_STOP_SECS);
	if (docker_call(d, "POST", path, NULL, &status, NULL, cause) == -1)
		return -1;
	return 0;	/* 204 stopped, 304 not running, 404 none */
}

static int
proxy_stop(struct docker *d)
{
	char	*cause = NULL;

	if (proxy_stop_signed(d, &cause) == -1 ||
	    docker_container_remove(d, PROXYCTL_CONTAINER, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	printf("proxy stopped\n");
	return SG_EXIT_OK;
}

static int
proxy_status(struct docker *d)
{
	json_t		*st = NULL, *s;
	char		*cause = NULL, ip[64];
	const char	*health;
	size_t		 i;
	long		 status = 0;
	int		 rc;

	if (proxyctl_address(d, ip, sizeof(ip), &cause) == -1 ||
	    proxyctl_call("GET", "/status", NULL, &status, &st, &cause) == -1) {
		log_warnx("%s", cause);
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
proxy_reload(void)
{
	json_t	*resp = NULL, *e;
	char	*cause = NULL;
	size_t	 i;
	long	 status = 0;

	if (proxyctl_call("POST", "/reload", NULL, &status, &resp, &cause) ==
	    -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (status == 200) {
		printf("policy reloaded: digest %s\n", json_string_value(
		    json_object_get(resp, "digest")));
		json_decref(resp);
		return SG_EXIT_OK;
	}
	log_warnx("policy reload rejected; the old policy "
	    "stays in force:");
	json_array_foreach(json_object_get(resp, "errors"), i, e)
		fprintf(stderr, "  %s\n", json_string_value(e));
	json_decref(resp);
	return SG_EXIT_FAIL;
}

/* The proxy container's own stderr (start-up, reloads, warnings). */
static int
proxy_logs(struct docker *d, int follow)
{
	char	*cause = NULL;

	if (proxyctl_container_logs(docker_api_version(d), follow, &cause) ==
	    -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	return SG_EXIT_OK;
}

/*
 * The options of start into o, its folders made absolute and existing
 * (bind mounts need that); 0, or an exit code after a message.
 */
static int
proxy_opts(struct cmd_args *args, struct proxy_opts *o)
{
	static char		 pol[PATH_MAX], logd[PATH_MAX], hosts[PATH_MAX];
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
	if (realpath(o->policy_dir ? o->policy_dir : state_policy_dir(),
	    pol) == NULL) {
		log_warnx("policy folder %s: %s",
		    o->policy_dir ? o->policy_dir : state_policy_dir(),
		    strerror(errno));
		return SG_EXIT_ERROR;
	}
	o->policy_dir = pol;
	state_mkdirs(o->log_dir ? o->log_dir : state_log_dir(), 0755);
	if (realpath(o->log_dir ? o->log_dir : state_log_dir(), logd) ==
	    NULL) {
		log_warnx("log folder: %s", strerror(errno));
		return SG_EXIT_ERROR;
	}
	o->log_dir = logd;
	if (o->hosts != NULL) {
		if (realpath(o->hosts, hosts) == NULL) {
			log_warnx("--hosts %s: %s", o->hosts,
			    strerror(errno));
			return SG_EXIT_ERROR;
		}
		o->hosts = hosts;
	}
	return 0;
}

static int
cmd_proxy_start_exec(struct cmd_args *args)
{
	struct proxy_opts	 o;
	struct docker		*d;
	char			*cause = NULL;
	int			 rc;

	if ((rc = proxy_opts(args, &o)) != 0)
		return rc;
	/* The key first: one in the log folder is refused before Docker. */
	if (auditkey_prepare_proxy(o.log_dir, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxy_start(d, &o);
	docker_free(d);
	return rc;
}

static int
cmd_proxy_stop_exec(struct cmd_args *args)
{
	struct docker	*d;
	int		 rc;

	(void)args;
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxy_stop(d);
	docker_free(d);
	return rc;
}

static int
cmd_proxy_status_exec(struct cmd_args *args)
{
	struct docker	*d;
	int		 rc;

	(void)args;
	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxy_status(d);
	docker_free(d);
	return rc;
}

static int
cmd_proxy_reload_exec(struct cmd_args *args)
{
	(void)args;
	return proxy_reload();
}

static int
cmd_proxy_logs_exec(struct cmd_args *args)
{
	struct docker	*d;
	int		 rc;

	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	rc = proxy_logs(d, args->nopts > 0);	/* -f */
	docker_free(d);
	return rc;
}
