/*
 * proxyctl_run.c: the proxy's container, image, folders and the two
 * networks sandboxes and the proxy sit on (`sandgate proxy start` and
 * stop); proxyctl.h.
 */
#include <sys/stat.h>

#include <dirent.h>
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
#include "cspec.h"
#include "docker.h"
#include "pemfile.h"
#include "proxyctl.h"
#include "secretdir.h"
#include "script.h"
#include "state.h"
#include "util.h"


/* docker stop: the proxy drains for up to 30 s, then signs and exits. */
#define PROXYCTL_STOP_SECS	35
/* the largest registry or grants file read (a registry of 4,096: ~1 MiB) */
#define PROXYCTL_FILE_MAX	(64LL << 20)

static int	proxyctl_build_image(char **);
static int	proxyctl_subnet_clash(struct docker *, const char *, char **);
static int	proxyctl_ensure_networks(struct docker *,
		    struct proxyctl_opts *, char **);
static int	proxyctl_prepare_dirs(struct proxyctl_opts *, char **);
static void	 proxyctl_spec_arg(json_t *, const char *, const char *);
static void	 proxyctl_spec_bind(json_t *, const char *, int, const char *,
		    const char *);
static void	 proxyctl_spec_mounts(const struct proxyctl_opts *, json_t *,
		    json_t *);
static void	 proxyctl_spec_options(const struct proxyctl_opts *, json_t *);
static char	*proxyctl_config_digest(json_t *);
static int	proxyctl_wait_ready(void);
static int	proxyctl_keep(struct docker *, const char *, char **);
static int	proxyctl_launch(struct docker *, json_t *, const char *,
		    char **);

/* The address the proxy gets on sandgate-internal: the subnet's .2. */
int
proxyctl_subnet_ip(const char *subnet, char *buf, size_t size)
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
proxyctl_build_image(char **cause)
{
	char	 bin[PATH_MAX + 32];
	char	*args[] = { bin, NULL };

	snprintf(bin, sizeof(bin), "%s/sandgate-proxy", script_bin_dir());
	if (access(bin, X_OK) == -1) {
		util_cause(cause, "cannot build the proxy image: %s: %s",
		    bin, strerror(errno));
		return -1;
	}
	return script_run("images/proxy/build.sh", args, cause);
}

/* Refuse a subnet that overlaps another network's. */
static int
proxyctl_subnet_clash(struct docker *d, const char *subnet, char **cause)
{
	struct addr_cidr	 mine, other;
	json_t			*nets = NULL, *n, *cfg;
	const char		*s, *name, *err;
	size_t			 i, j;
	long			 status = 0;
	int			 rc = 0;

	if (addr_cidr_parse(subnet, &mine, &err) == -1) {
		util_cause(cause, "--subnet \"%s\": %s", subnet, err);
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
			if (s == NULL || addr_cidr_parse(s, &other,
			    &err) == -1 ||
			    other.family != mine.family)
				continue;
			if (addr_cidr_covers(&mine, &other) ||
			    addr_cidr_covers(&other, &mine)) {
				util_cause(cause, "subnet %s clashes with "
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
proxyctl_ensure_networks(struct docker *d, struct proxyctl_opts *o,
    char **cause)
{
	int	have;

	if ((have = docker_network_exists(d, PROXYCTL_NET_INTERNAL, cause)) ==
	    -1)
		return -1;
	if (!have) {
		if (proxyctl_subnet_clash(d, o->subnet, cause) == -1)
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
				util_cause(cause, "--egress-network %s does "
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
proxyctl_prepare_dirs(struct proxyctl_opts *o, char **cause)
{
	static const char *const logs[] = { "security-events.jsonl", NULL };
	char		run[PATH_MAX], path[PATH_MAX + 64], rec[PATH_MAX];
	size_t		i;
	int		n;

	if (realpath(state_record_dir(), rec) != NULL &&
	    strcmp(rec, o->log_dir) == 0) {
		util_cause(cause, "the proxy's log folder %s is the "
		    "controller's records folder; give the proxy another "
		    "(--log-dir, SANDGATE_LOG_DIR)", o->log_dir);
		return -1;
	}
	snprintf(run, sizeof(run), "%s/proxy/run", state_root());
	if (state_mkdirs(run, 0750) == -1 || state_mkdirs(o->log_dir, 0755) ==
	    -1) {
		util_cause(cause, "cannot create %s or %s: %s", run,
		    o->log_dir, strerror(errno));
		return -1;
	}
	if (chown(run, PROXYCTL_UID, PROXYCTL_UID) == -1 ||
	    chown(o->log_dir, PROXYCTL_UID, PROXYCTL_UID) == -1) {
		util_cause(cause, "cannot hand %s and %s to uid %d: %s",
		    run, o->log_dir, PROXYCTL_UID, strerror(errno));
		return -1;
	}
	if (secretdir_prepare(cause) == -1)
		return -1;
	/* The CA's folder: the proxy makes its key there, 0600 (--ca-create). */
	snprintf(path, sizeof(path), "%s/proxy/ca", state_root());
	if ((mkdir(path, 0700) == -1 && errno != EEXIST) ||
	    chown(path, PROXYCTL_UID, PROXYCTL_UID) == -1 ||
	    chmod(path, 0700) == -1) {
		util_cause(cause, "cannot make %s the proxy's alone: %s", path,
		    strerror(errno));
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

/*
 * The container: the base of cspec.h (no capabilities, seccomp, read-only
 * root), non-root, restarts itself.
 */
json_t *
proxyctl_spec(const struct proxyctl_opts *o, const char *ip)
{
	json_t	*cmd, *binds;
	char	 listen[96];

	snprintf(listen, sizeof(listen), "%s:%d", ip, PROXYCTL_PORT);
	cmd = json_pack("[s,s,s,s,s,s,s,s]", "--listen", listen,
	    "--policy-dir", "/etc/sandgate/policy.d", "--log-dir",
	    "/var/log/sandgate", "--control-socket",
	    "/run/sandgate/control.sock");
	binds = json_array();
	proxyctl_spec_mounts(o, cmd, binds);
	proxyctl_spec_options(o, cmd);
	/* The base's controls (cspec.h), then the proxy's own. */
	return cspec_new(json_pack("{s:s, s:o, s:s, s:{s:s, s:s}, s:{s:o, "
	    "s:{s:s}, s:s, s:I, s:I}, s:{s:{s:{s:{s:s}}}}}",
	    "Image", PROXYCTL_IMAGE, "Cmd", cmd, "User", "65532:65532",
	    "Labels", "sandgate.role", "proxy", "sandgate.egress", o->egress,
	    "HostConfig", "Binds", binds, "RestartPolicy", "Name",
	    "unless-stopped", "NetworkMode", PROXYCTL_NET_INTERNAL,
	    "Memory", (json_int_t)(1024LL << 20), "PidsLimit", (json_int_t)64,
	    "NetworkingConfig", "EndpointsConfig", PROXYCTL_NET_INTERNAL,
	    "IPAMConfig", "IPv4Address", ip));
}

/* Append "FLAG" (and "VALUE" unless NULL) to the proxy's command line. */
static void
proxyctl_spec_arg(json_t *cmd, const char *flag, const char *value)
{
	json_array_append_new(cmd, json_string(flag));
	if (value != NULL)
		json_array_append_new(cmd, json_string(value));
}

/* Append the bind "HOST:MOUNT:MODE", HOST under the state folder if rel. */
static void
proxyctl_spec_bind(json_t *binds, const char *host, int rel,
    const char *mount, const char *mode)
{
	char	*b;

	util_xasprintf(&b, "%s%s%s:%s:%s", rel ? state_root() : "",
	    rel ? "/" : "", host, mount, mode);
	json_array_append_new(binds, json_string(b));
	free(b);
}

/* The folders the proxy sees, and the flags that name them. */
static void
proxyctl_spec_mounts(const struct proxyctl_opts *o, json_t *cmd,
    json_t *binds)
{
	proxyctl_spec_bind(binds, o->policy_dir, 0, "/etc/sandgate/policy.d",
	    "ro");
	proxyctl_spec_bind(binds, o->log_dir, 0, "/var/log/sandgate", "rw");
	proxyctl_spec_bind(binds, "proxy/run", 1, "/run/sandgate", "rw");
	/* Its checkpoint key's folder, the proxy's alone (auditkey.h). */
	proxyctl_spec_bind(binds, "proxy/keys", 1, AUDITKEY_PROXY_MOUNT, "rw");
	proxyctl_spec_arg(cmd, "--checkpoint-key", AUDITKEY_PROXY_MOUNT "/"
	    AUDITKEY_PROXY_NAME);
	/* The public half of the token key (proxy start made it). */
	proxyctl_spec_bind(binds, "keys/" AUDITKEY_TOKEN_NAME ".pub", 1,
	    PROXYCTL_TOKEN_PUB, "ro");
	proxyctl_spec_arg(cmd, "--token-key", PROXYCTL_TOKEN_PUB);
	/*
	 * The sandgate CA of tls: terminate entries, made by the proxy at
	 * its first start; its key never leaves this folder (sandboxes get
	 * the certificate alone, copied by create).
	 */
	proxyctl_spec_bind(binds, "proxy/ca", 1, PROXYCTL_CA_MOUNT, "rw");
	proxyctl_spec_arg(cmd, "--ca-cert", PROXYCTL_CA_MOUNT "/"
	    PROXYCTL_CA_CERT);
	proxyctl_spec_arg(cmd, "--ca-key", PROXYCTL_CA_MOUNT "/"
	    PROXYCTL_CA_KEY);
	proxyctl_spec_arg(cmd, "--ca-create", NULL);
	/* The credentials' values, read-only, the proxy's alone. */
	proxyctl_spec_bind(binds, "proxy/secrets", 1, SECRETDIR_MOUNT, "ro");
	proxyctl_spec_arg(cmd, "--secrets-dir", SECRETDIR_MOUNT);
	if (o->hosts != NULL) {
		proxyctl_spec_bind(binds, o->hosts, 0, "/etc/sandgate/hosts",
		    "ro");
		proxyctl_spec_arg(cmd, "--hosts", "/etc/sandgate/hosts");
	}
}

/* The proxy's options that name no folder. */
static void
proxyctl_spec_options(const struct proxyctl_opts *o, json_t *cmd)
{
	/*
	 * A week of rotated logs is never deleted, whatever one sandbox
	 * writes: under a flood the folder grows instead, and the sandbox
	 * that fills it is stopped (docs/audit.md, "A full log volume").
	 */
	proxyctl_spec_arg(cmd, "--log-keep-min-age",
	    PROXYCTL_LOG_KEEP_MIN_AGE);
	if (o->resolver != NULL)
		proxyctl_spec_arg(cmd, "--resolver", o->resolver);
	if (o->sets != NULL)
		proxyctl_spec_arg(cmd, "--sets", o->sets);
	if (o->log_allowed)
		proxyctl_spec_arg(cmd, "--log-allowed", NULL);
}

/* SHA-256 of the spec: a running proxy with the same one is kept. */
static char *
proxyctl_config_digest(json_t *spec)
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
proxyctl_wait_ready(void)
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

/*
 * Stop the proxy with SIGTERM (docker stop) so that it drains and signs
 * its close checkpoint; docker kills it if it takes longer than the drain.
 */
int
proxyctl_stop_signed(struct docker *d, char **cause)
{
	char	path[256];
	long	status = 0;

	snprintf(path, sizeof(path), "/containers/%s/stop?t=%d",
	    PROXYCTL_CONTAINER, PROXYCTL_STOP_SECS);
	if (docker_call(d, "POST", path, NULL, &status, NULL, cause) == -1)
		return -1;
	return 0;	/* 204 stopped, 304 not running, 404 none */
}


/*
 * A proxy container already there: 1 when it runs the same spec (digest)
 * and is kept, else it is stopped and removed: 0, or -1 with *cause.
 */
static int
proxyctl_keep(struct docker *d, const char *digest, char **cause)
{
	struct docker_cinfo	 ci;
	json_t			*full = NULL;
	const char		*have = NULL;
	char			 path[256], *gone = NULL;
	long			 status = 0;
	int			 same;

	if (docker_container_inspect(d, PROXYCTL_CONTAINER, &ci, &gone) ==
	    -1) {
		free(gone);	/* none yet */
		return 0;
	}
	snprintf(path, sizeof(path), "/containers/%s/json",
	    PROXYCTL_CONTAINER);
	if (docker_call(d, "GET", path, NULL, &status, &full, &gone) == 0)
		have = json_string_value(json_object_get(json_object_get(
		    json_object_get(full, "Config"), "Labels"),
		    "sandgate.config"));
	free(gone);
	same = ci.running && have != NULL && strcmp(have, digest) == 0 &&
	    strcmp(ci.image, "") != 0;
	json_decref(full);
	if (same)
		return 1;
	if (proxyctl_stop_signed(d, cause) == -1 ||
	    docker_container_remove(d, PROXYCTL_CONTAINER, cause) == -1)
		return -1;
	return 0;
}

/* Create the container of spec, join it to egress, start it, wait. */
static int
proxyctl_launch(struct docker *d, json_t *spec, const char *egress,
    char **cause)
{
	json_t	*body = NULL;
	char	 path[256], *id = NULL;
	long	 status = 0;
	int	 rc = -1;

	if (docker_container_create(d, PROXYCTL_CONTAINER, spec, &id,
	    cause) == -1)
		return -1;
	snprintf(path, sizeof(path), "/networks/%s/connect", egress);
	body = json_pack("{s:s}", "Container", id);
	if (docker_call(d, "POST", path, body, &status, NULL, cause) == -1)
		goto out;
	if (status != 200) {
		util_cause(cause, "cannot connect the proxy to %s (HTTP %ld)",
		    egress, status);
		goto out;
	}
	if (docker_container_start(d, id, cause) == -1)
		goto out;
	if (proxyctl_wait_ready() == -1) {
		util_cause(cause, "the proxy started but its control socket "
		    "does not answer; see `sandgate proxy logs`");
		goto out;
	}
	rc = 0;
out:
	json_decref(body);
	free(id);
	return rc;
}

enum proxyctl_started
proxyctl_start(struct docker *d, struct proxyctl_opts *o, char **cause)
{
	enum proxyctl_started	 rc = PROXYCTL_START_FAILED;
	json_t			*spec;
	char			 ip[64], *digest;
	int			 kept;

	if (proxyctl_subnet_ip(o->subnet, ip, sizeof(ip)) == -1) {
		util_cause(cause, "--subnet \"%s\": want an IPv4 CIDR of /29 "
		    "or larger", o->subnet);
		return PROXYCTL_START_FAILED;
	}
	if (proxyctl_build_image(cause) == -1 ||
	    proxyctl_ensure_networks(d, o, cause) == -1 ||
	    proxyctl_prepare_dirs(o, cause) == -1)
		return PROXYCTL_START_FAILED;
	if ((spec = proxyctl_spec(o, ip)) == NULL) {
		util_cause(cause, "cannot build the proxy's container spec");
		return PROXYCTL_START_FAILED;
	}
	digest = proxyctl_config_digest(spec);
	json_object_set_new(json_object_get(spec, "Labels"), "sandgate.config",
	    json_string(digest));
	kept = proxyctl_keep(d, digest, cause);
	free(digest);
	if (kept == 1 && proxyctl_wait_ready() == -1)
		util_cause(cause, "the proxy runs but its control socket does "
		    "not answer; see `sandgate proxy logs`");
	else if (kept == 1)
		rc = PROXYCTL_RUNNING;
	else if (kept == 0 && proxyctl_launch(d, spec, o->egress, cause) == 0)
		rc = PROXYCTL_STARTED;
	json_decref(spec);
	return rc;
}

int
proxyctl_stop(struct docker *d, char **cause)
{
	if (proxyctl_stop_signed(d, cause) == -1 ||
	    docker_container_remove(d, PROXYCTL_CONTAINER, cause) == -1)
		return -1;
	return 0;
}

int
proxyctl_ca_cert(char **pem, size_t *len, char **cause)
{
	char	dir[PATH_MAX], path[PATH_MAX + 16], *why = NULL;
	int	dfd, rc;

	*pem = NULL;
	*len = 0;
	snprintf(dir, sizeof(dir), "%s/proxy/ca", state_root());
	snprintf(path, sizeof(path), "%s/" PROXYCTL_CA_CERT, dir);
	if ((dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		if (errno == ENOENT)
			return 1;
		return util_cause(cause, "the sandgate CA's folder %s: %s",
		    dir, errno == ELOOP || errno == ENOTDIR ? "not a folder "
		    "(a symbolic link?)" : strerror(errno));
	}
	rc = pemfile_read_certs(dfd, PROXYCTL_CA_CERT, path,
	    PROXYCTL_CA_CERT_MAX, pem, len, &why);
	close(dfd);
	if (rc == -1) {
		util_cause(cause, "refusing to copy the sandgate CA into the "
		    "sandbox: %s (the proxy writes that folder; only a regular "
		    "file of PEM certificates is copied, never through a "
		    "link); `sandgate proxy rotate-ca` and a restart of the "
		    "proxy make a new one", why);
		free(why);
	}
	return rc;
}

int
proxyctl_ca_remove(char **cause)
{
	char	path[PATH_MAX];
	int	i, gone = 0;

	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/proxy/ca/%s", state_root(),
		    i == 0 ? PROXYCTL_CA_KEY : PROXYCTL_CA_CERT);
		if (unlink(path) == 0)
			continue;
		if (errno != ENOENT)
			return util_cause(cause, "cannot remove %s: %s", path,
			    strerror(errno));
		gone++;
	}
	return gone == 2 ? 1 : 0;
}

/*
 * 1 when the registry or grants file name in folder dfd lists sandbox
 * id (an entry {"sandbox": id} in its "sandboxes" array, or in the
 * array it is), or cannot be read and parsed; 0 when it lists it not.
 */
static int
proxyctl_file_names(int dfd, const char *name, const char *id)
{
	struct stat	 st;
	json_t		*root, *arr, *v;
	json_error_t	 err;
	size_t		 i;
	int		 fd, found = 0;

	/*
	 * The proxy's own folder (its uid writes it): a FIFO there must not
	 * hang the command (atk1921i F5), nor a huge file fill its memory.
	 * What cannot be read as a file names it: not confirmed, said.
	 */
	if ((fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
	    O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : 1;
	if (fstat(fd, &st) == -1 || !S_ISREG(st.st_mode) ||
	    st.st_size > PROXYCTL_FILE_MAX) {
		close(fd);
		return 1;
	}
	root = json_loadfd(fd, 0, &err);
	close(fd);
	if (root == NULL)
		return 1;
	arr = json_is_array(root) ? root : json_object_get(root, "sandboxes");
	json_array_foreach(arr, i, v)
		if (json_is_string(json_object_get(v, "sandbox")) &&
		    strcmp(json_string_value(json_object_get(v, "sandbox")),
		    id) == 0)
			found = 1;
	json_decref(root);
	return found;
}

int
proxyctl_local_registry(const char *id)
{
	const char	*sock = proxyctl_socket_path(), *slash;
	char		 dir[PATH_MAX];
	struct dirent	*de;
	DIR		*dp;
	int		 found = 0;
	size_t		 len;

	slash = strrchr(sock, '/');
	snprintf(dir, sizeof(dir), "%.*s", (int)(slash - sock), sock);
	if ((dp = opendir(dir)) == NULL)
		return errno == ENOENT ? 0 : 1;
	while (!found && (de = readdir(dp)) != NULL) {
		len = strlen(de->d_name);
		if ((strncmp(de->d_name, "registry", 8) == 0 ||
		    strncmp(de->d_name, "grants", 6) == 0) &&
		    len > 5 && strcmp(de->d_name + len - 5, ".json") == 0)
			found = proxyctl_file_names(dirfd(dp), de->d_name, id);
	}
	closedir(dp);
	return found;
}
