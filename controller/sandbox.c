/* sandbox.c: meta.json, the container spec and teardown; see sandbox.h. */
#include <sys/stat.h>
#include <sys/syscall.h>

#include <linux/capability.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <ftw.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/rand.h>

#include "disk.h"
#include "docker.h"
#include "exec.h"
#include "execend.h"
#include "log.h"
#include "owed.h"
#include "netseal.h"
#include "probe.h"
#include "ownmark.h"
#include "procstat.h"
#include "cgroup.h"
#include "cspec.h"
#include "sandbox.h"
#include "proxyctl.h"
#include "repset.h"
#include "runrec.h"
#include "state.h"
#include "unregpend.h"
#include "util.h"
#include "workspace.h"

/* For a freezer cgroup frozen again for Docker's unpause (sandbox_unpause). */
#define SANDBOX_REFREEZE_MS	1000

static int	sandbox_get_str(json_t *, const char *, char **);
static int	sandbox_get_u64(json_t *, const char *, unsigned long long *);
static void	sandbox_spec_mount(json_t *, const char *, const char *, int);
static json_t	*sandbox_spec_env(const struct sandbox_meta *);
static json_t	*sandbox_spec_host(const struct sandbox_meta *,
		    const struct sandbox_mounts *);
static json_t	*sandbox_spec_mounts(const struct sandbox_meta *,
		    const struct sandbox_mounts *);
static void	sandbox_spec_bounds(json_t *, const struct sandbox_meta *);
static const char *sandbox_uid_dir(void);
static int	sandbox_uid_taken(unsigned long);
static int	sandbox_uid_claim(const char *, unsigned long *, char **);
static int	sandbox_write_at(int, const char *, const char *);
static int	sandbox_uid_walk(const char *, int);
static int	sandbox_rm_cb(const char *, const struct stat *, int,
		    struct FTW *);
static int	sandbox_remove_state(const char *, const char *, char **);
static int	sandbox_remove_containers(struct docker *, const char *,
		    char **);
static int	sandbox_env_ok(const char *, char **);
static int	sandbox_opt_cpus(struct sandbox_meta *, const char *, char **);
static int	sandbox_opt_size(const char *, const char *,
		    unsigned long long, unsigned long long *, char **);
static int	sandbox_opt_str(struct sandbox_meta *, const char *,
		    const char *, char **);
static int	sandbox_probe(struct docker *, const struct sandbox_meta *,
		    const char *, int, char **);
static int	sandbox_instance(pid_t, char *, size_t);
static int	sandbox_checked(const struct sandbox_meta *, pid_t);
static int	sandbox_thaw_left(struct docker *, const char *, pid_t,
		    char **);
static int	sandbox_unpause(struct docker *, const struct sandbox_meta *,
		    char **);
static void	sandbox_checked_save(const struct sandbox_meta *, pid_t);

int
sandbox_gvisor(const struct sandbox_meta *m)
{
	return m->runtime != NULL && strcmp(m->runtime, "runsc") == 0;
}

void
sandbox_exec_opts(struct exec_opts *o, const struct sandbox_meta *m,
    char *const *argv, const char *run, long long timeout, size_t output_cap)
{
	memset(o, 0, sizeof(*o));
	o->argv = argv;
	o->run_id = run;
	o->inside = sandbox_gvisor(m);
	o->nproc = m->pids;
	o->uid = m->uid;
	o->init_uid = sandbox_init_uid(m);
	o->timeout = timeout;
	o->output_cap = output_cap;
}

long long
sandbox_host_pids(const struct sandbox_meta *m)
{
	return sandbox_gvisor(m) ? m->pids * 10 + 128 : m->pids;
}

/* 1 when sandgate may lower an OOM score (CAP_SYS_RESOURCE effective). */
static int
sandbox_cap_resource(void)
{
	struct __user_cap_header_struct	h;
	struct __user_cap_data_struct	d[2];

	memset(&h, 0, sizeof(h));
	memset(d, 0, sizeof(d));
	h.version = _LINUX_CAPABILITY_VERSION_3;
	if (syscall(SYS_capget, &h, d) == -1)
		return 0;
	return (d[CAP_SYS_RESOURCE / 32].effective &
	    (1u << (CAP_SYS_RESOURCE % 32))) != 0;
}

int
sandbox_oom_init(pid_t pid, char **cause)
{
	char	path[64], v[16];
	int	fd, len, rv = -1, value;

	value = sandbox_cap_resource() ? SANDBOX_INIT_OOM_ADJ :
	    SANDBOX_INIT_OOM_ADJ_NOCAP;
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", (int)pid);
	len = snprintf(v, sizeof(v), "%d", value);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) == -1 ||
	    write(fd, v, (size_t)len) != len)
		util_cause(cause, "cannot write %d to '%s': %s", value, path,
		    strerror(errno));
	else
		rv = 0;
	if (fd != -1)
		close(fd);
	return rv;
}

long long
sandbox_nproc(const struct sandbox_meta *m)
{
	return sandbox_host_pids(m) + SANDBOX_NPROC_SLACK;
}

void
sandbox_meta_init(struct sandbox_meta *m)
{
	memset(m, 0, sizeof(*m));
	m->allow = json_array();
	m->env = json_array();
	m->cpus = SANDBOX_DEF_CPUS;
	m->memory = SANDBOX_DEF_MEMORY;
	m->pids = SANDBOX_DEF_PIDS;
	m->disk = SANDBOX_DEF_DISK;
	m->tmp_size = SANDBOX_DEF_TMP;
	m->timeout = SANDBOX_DEF_TIMEOUT;
	m->network = util_xstrdup("proxy");
	m->uid = SANDBOX_UID;
}

void
sandbox_meta_release(struct sandbox_meta *m)
{
	free(m->created);
	free(m->source);
	free(m->image);
	free(m->image_id);
	free(m->container);
	free(m->runtime);
	free(m->network);
	free(m->proxy);
	free(m->ca_cert);
	json_decref(m->allow);
	json_decref(m->env);
	memset(m, 0, sizeof(*m));
}

void
sandbox_meta_set(char **field, const char *value)
{
	free(*field);
	*field = value != NULL ? util_xstrdup(value) : NULL;
}

json_t *
sandbox_meta_to_json(const struct sandbox_meta *m)
{
	return json_pack("{s:s, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, s:s?, "
	    "s:s?, s:s?, s:O, s:O, s:f, s:I, s:I, s:I, s:I, s:I, s:b, s:I}",
	    "id", m->id, "created", m->created, "source", m->source,
	    "image", m->image, "image_id", m->image_id,
	    "container", m->container, "runtime", m->runtime,
	    "network", m->network, "proxy", m->proxy, "ca_cert", m->ca_cert,
	    "allow", m->allow, "env", m->env,
	    "cpus", m->cpus, "memory", (json_int_t)m->memory,
	    "pids", (json_int_t)m->pids, "disk", (json_int_t)m->disk,
	    "tmp_size", (json_int_t)m->tmp_size,
	    "timeout", (json_int_t)m->timeout, "ephemeral", m->ephemeral,
	    "uid", (json_int_t)m->uid);
}

/* Optional string member: absent/null gives NULL; other types fail. */
static int
sandbox_get_str(json_t *o, const char *key, char **out)
{
	json_t	*v = json_object_get(o, key);

	if (v == NULL || json_is_null(v)) {
		sandbox_meta_set(out, NULL);
		return 0;
	}
	if (!json_is_string(v))
		return -1;
	sandbox_meta_set(out, json_string_value(v));
	return 0;
}

static int
sandbox_get_u64(json_t *o, const char *key, unsigned long long *out)
{
	json_t	*v = json_object_get(o, key);

	if (!json_is_integer(v) || json_integer_value(v) < 0)
		return -1;
	*out = (unsigned long long)json_integer_value(v);
	return 0;
}

int
sandbox_meta_from_json(json_t *o, struct sandbox_meta *m)
{
	json_t			*id = json_object_get(o, "id");
	unsigned long long	 pids, timeout, uid = 0;

	if (!json_is_string(id) || state_valid_id(json_string_value(id)) == -1)
		return -1;
	util_strlcpy(m->id, json_string_value(id), sizeof(m->id));
	if (sandbox_get_str(o, "created", &m->created) == -1 ||
	    sandbox_get_str(o, "source", &m->source) == -1 ||
	    sandbox_get_str(o, "image", &m->image) == -1 ||
	    sandbox_get_str(o, "image_id", &m->image_id) == -1 ||
	    sandbox_get_str(o, "container", &m->container) == -1 ||
	    sandbox_get_str(o, "runtime", &m->runtime) == -1 ||
	    sandbox_get_str(o, "network", &m->network) == -1 ||
	    sandbox_get_str(o, "proxy", &m->proxy) == -1 ||
	    sandbox_get_str(o, "ca_cert", &m->ca_cert) == -1)
		return -1;
	if (m->image == NULL || m->network == NULL ||
	    !json_is_number(json_object_get(o, "cpus")) ||
	    sandbox_get_u64(o, "memory", &m->memory) == -1 ||
	    sandbox_get_u64(o, "pids", &pids) == -1 ||
	    sandbox_get_u64(o, "disk", &m->disk) == -1 ||
	    sandbox_get_u64(o, "tmp_size", &m->tmp_size) == -1 ||
	    sandbox_get_u64(o, "timeout", &timeout) == -1)
		return -1;
	m->cpus = json_number_value(json_object_get(o, "cpus"));
	m->pids = (long long)pids;
	m->timeout = (long long)timeout;
	m->ephemeral = json_is_true(json_object_get(o, "ephemeral"));
	/* absent: a sandbox from before uids of their own */
	if (json_object_get(o, "uid") != NULL && (sandbox_get_u64(o, "uid",
	    &uid) == -1 || uid == 0 || uid > 0x7fffffffULL))
		return -1;
	if (json_object_get(o, "uid") != NULL)
		m->uid = (unsigned long)uid;
	if (json_is_array(json_object_get(o, "allow"))) {
		json_decref(m->allow);
		m->allow = json_incref(json_object_get(o, "allow"));
	}
	if (json_is_array(json_object_get(o, "env"))) {
		json_decref(m->env);
		m->env = json_incref(json_object_get(o, "env"));
	}
	return 0;
}

int
sandbox_meta_load(const char *id, struct sandbox_meta *m, char **cause)
{
	char		 path[4096];
	json_error_t	 jerr;
	json_t		*o;
	int		 rv;

	sandbox_meta_init(m);
	if (state_valid_id(id) == -1) {
		util_cause(cause, "'%s' is not a sandbox id", id);
		errno = EINVAL;
		return -1;
	}
	if (state_path(path, sizeof(path), id, "meta.json") == -1 ||
	    (o = state_json_load(path, 0, &jerr)) == NULL) {
		if (access(path, F_OK) == -1 && errno == ENOENT) {
			util_cause(cause, "no sandbox '%s'", id);
			errno = ENOENT;
		} else {
			util_cause(cause, "cannot read '%s': %s", path,
			    jerr.text);
			errno = EINVAL;
		}
		return -1;
	}
	rv = sandbox_meta_from_json(o, m);
	json_decref(o);
	if (rv == -1) {
		util_cause(cause, "'%s' is malformed", path);
		errno = EINVAL;
	}
	return rv;
}

int
sandbox_meta_save(const struct sandbox_meta *m, char **cause)
{
	char	 path[4096], tmp[4200];
	json_t	*o;
	int	 fd, rv = -1;

	if (state_path(path, sizeof(path), m->id, "meta.json") == -1) {
		util_cause(cause, "state path too long");
		return -1;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if ((o = sandbox_meta_to_json(m)) == NULL) {
		util_cause(cause, "cannot encode meta.json");
		return -1;
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd == -1 || json_dumpfd(o, fd, JSON_INDENT(2)) == -1 ||
	    write(fd, "\n", 1) != 1 || fsync(fd) == -1) {
		util_cause(cause, "cannot write '%s': %s", tmp,
		    strerror(errno));
		goto out;
	}
	if (rename(tmp, path) == -1) {
		util_cause(cause, "cannot rename '%s': %s", tmp,
		    strerror(errno));
		goto out;
	}
	rv = 0;
out:
	if (fd != -1)
		close(fd);
	if (rv == -1)
		unlink(tmp);
	json_decref(o);
	return rv;
}

static void
sandbox_spec_mount(json_t *mounts, const char *src, const char *dst, int ro)
{
	json_array_append_new(mounts, json_pack("{s:s, s:s, s:s, s:b, "
	    "s:{s:s}}", "Type", "bind", "Source", src, "Target", dst,
	    "ReadOnly", ro, "BindOptions", "Propagation", "rprivate"));
}

/*
 * Every client's spelling of "use this proxy"; nothing bypasses it. With
 * token, the URLs carry an exec's credential (user "sandgate") that
 * clients send as Proxy-Authorization.
 */
static void
sandbox_env_proxy_urls(json_t *env, const char *proxy, const char *token)
{
	static const char *const names[] = { "HTTP_PROXY", "HTTPS_PROXY",
	    "http_proxy", "https_proxy", "ALL_PROXY", "all_proxy" };
	char	*s;
	size_t	 i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		util_xasprintf(&s, "%s=http://%s%s%s%s", names[i], token ?
		    "sandgate:" : "", token ? token : "", token ? "@" : "",
		    proxy);
		json_array_append_new(env, json_string(s));
		free(s);
	}
}

static void
sandbox_spec_env_proxy(json_t *env, const char *proxy)
{
	sandbox_env_proxy_urls(env, proxy, NULL);
	json_array_append_new(env, json_string(
	    "NO_PROXY=localhost,127.0.0.1,::1"));
	json_array_append_new(env, json_string(
	    "no_proxy=localhost,127.0.0.1,::1"));
}

json_t *
sandbox_exec_env(const struct sandbox_meta *m, const char *token,
    json_t *extra)
{
	json_t	*env = json_array(), *v;
	size_t	 i;

	if (env == NULL)
		return NULL;
	if (token != NULL && *token != '\0' && m->proxy != NULL &&
	    strcmp(m->network, "proxy") == 0)
		sandbox_env_proxy_urls(env, m->proxy, token);
	if (extra != NULL)
		json_array_foreach(extra, i, v)
			json_array_append(env, v);
	return env;
}

/* --ca-cert: the image's system store plus one CA, for every client. */
static void
sandbox_spec_env_ca(json_t *env)
{
	static const char *const bundle[] = { "SSL_CERT_FILE",
	    "REQUESTS_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO",
	    "CURL_CA_BUNDLE" };
	char	*s;
	size_t	 i;

	for (i = 0; i < sizeof(bundle) / sizeof(bundle[0]); i++) {
		util_xasprintf(&s, "%s=" SANDBOX_CA_DIR "/bundle.crt",
		    bundle[i]);
		json_array_append_new(env, json_string(s));
		free(s);
	}
	json_array_append_new(env, json_string("NODE_EXTRA_CA_CERTS="
	    SANDBOX_CA_DIR "/extra.crt"));
}

/*
 * Docker's embedded resolver answers a sandbox's DNS queries and forwards
 * the names it does not know. Point its forwarding at the proxy's own
 * address, where nothing serves DNS, so a query can't carry data out:
 * names are resolved by the proxy alone.
 */
static void
sandbox_spec_dns(json_t *host, const char *proxy)
{
	char	ip[64], *colon;

	util_strlcpy(ip, proxy, sizeof(ip));
	if ((colon = strrchr(ip, ':')) != NULL)
		*colon = '\0';
	json_object_set_new(host, "Dns", json_pack("[s]", ip));
	json_object_set_new(host, "DnsOptions", json_pack("[s,s]",
	    "timeout:1", "attempts:1"));
}

/* Only what sandgate sets, then the sandbox's --env (which may override). */
static json_t *
sandbox_spec_env(const struct sandbox_meta *m)
{
	json_t	*env, *v;
	char	*s;
	size_t	 i;

	env = json_array();
	json_array_append_new(env, json_string("HOME=" SANDBOX_HOME));
	json_array_append_new(env, json_string(SANDBOX_PATH_ENV));
	json_array_append_new(env, json_string("LANG=C.UTF-8"));
	util_xasprintf(&s, "SANDGATE_SANDBOX=%s", m->id);
	json_array_append_new(env, json_string(s));
	free(s);
	if (m->proxy != NULL && strcmp(m->network, "proxy") == 0)
		sandbox_spec_env_proxy(env, m->proxy);
	if (m->ca_cert != NULL)
		sandbox_spec_env_ca(env);
	json_array_foreach(m->env, i, v)
		json_array_append(env, v);
	return env;
}

/* The bind mounts: workspace, probe, identity, input/output, CA. */
static json_t *
sandbox_spec_mounts(const struct sandbox_meta *m,
    const struct sandbox_mounts *mt)
{
	json_t		*mounts;
	const char	*lib, *preload;
	char		 path[PATH_MAX];

	mounts = json_array();
	sandbox_spec_mount(mounts, mt->work, SANDBOX_WORKDIR, 0);
	sandbox_spec_mount(mounts, mt->probe, "/.sandgate/probe", 1);
	/* gVisor refuses coreutils' statx flags: probe.h */
	if (sandbox_gvisor(m) && probe_statx_paths(&lib, &preload) == 0) {
		sandbox_spec_mount(mounts, lib, PROBE_STATX_CONTAINER_PATH, 1);
		sandbox_spec_mount(mounts, preload,
		    PROBE_PRELOAD_CONTAINER_PATH, 1);
	}
	/* a uid of its own comes with a passwd that names it */
	if (m->uid != SANDBOX_UID &&
	    state_path(path, sizeof(path), m->id, "etc/passwd") == 0) {
		sandbox_spec_mount(mounts, path, "/etc/passwd", 1);
		state_path(path, sizeof(path), m->id, "etc/group");
		sandbox_spec_mount(mounts, path, "/etc/group", 1);
	}
	if (mt->input != NULL)
		sandbox_spec_mount(mounts, mt->input, "/input", 1);
	if (mt->output != NULL)
		sandbox_spec_mount(mounts, mt->output, "/output", 0);
	if (m->ca_cert != NULL) {
		char	cadir[PATH_MAX], *slash;

		util_strlcpy(cadir, m->ca_cert, sizeof(cadir));
		if ((slash = strrchr(cadir, '/')) != NULL)
			*slash = '\0';
		sandbox_spec_mount(mounts, cadir, SANDBOX_CA_DIR, 1);
	}
	return mounts;
}

/* 1 when the host kernel enforces AppArmor (docker-default then named). */
int
sandbox_apparmor_on(void)
{
	char	buf[8] = "";
	int	fd;
	ssize_t	n;

	if ((fd = open("/sys/module/apparmor/parameters/enabled",
	    O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	return n > 0 && buf[0] == 'Y';
}

/*
 * What bounds the sandbox on the host beyond the cgroup limits: no
 * container log, ulimits of its own, the OOM killer's first pick, a
 * private cgroup namespace, AppArmor where it is on.
 */
static void
sandbox_spec_bounds(json_t *host, const struct sandbox_meta *m)
{
	json_object_set_new(host, "LogConfig", json_pack("{s:s, s:{}}",
	    "Type", "none", "Config"));
	json_object_set_new(host, "Ulimits", json_pack("[{s:s, s:I, s:I}, "
	    "{s:s, s:I, s:I}, {s:s, s:i, s:i}]",
	    "Name", "nofile", "Soft", (json_int_t)SANDBOX_NOFILE,
	    "Hard", (json_int_t)SANDBOX_NOFILE,
	    "Name", "nproc", "Soft", (json_int_t)sandbox_nproc(m),
	    "Hard", (json_int_t)sandbox_nproc(m),
	    "Name", "core", "Soft", 0, "Hard", 0));
	json_object_set_new(host, "OomScoreAdj",
	    json_integer(SANDBOX_OOM_SCORE_ADJ));
	json_object_set_new(host, "CgroupnsMode", json_string("private"));
	if (sandbox_apparmor_on())
		json_array_append_new(json_object_get(host, "SecurityOpt"),
		    json_string("apparmor=docker-default"));
}

static json_t *
sandbox_spec_host(const struct sandbox_meta *m,
    const struct sandbox_mounts *mt)
{
	json_t	*host;
	char	 tmp[128], home[160];

	snprintf(tmp, sizeof(tmp), "rw,noexec,nosuid,nodev,size=%llu,"
	    "mode=1777", m->tmp_size);
	/* home allows exec: tools install user scripts in ~/.local/bin */
	snprintf(home, sizeof(home), "rw,exec,nosuid,nodev,size=%llu,"
	    "mode=0700,uid=%lu,gid=%lu", SANDBOX_DEF_HOME, m->uid, m->uid);
	host = json_pack("{s:o, s:{s:s, s:s}, s:[], s:b, "
	    "s:I, s:I, s:I, s:I, s:s, s:s, s:b, s:{s:s}}",
	    "Mounts", sandbox_spec_mounts(m, mt),
	    "Tmpfs", "/tmp", tmp, SANDBOX_HOME, home,
	    "SecurityOpt", "Init", 0,
	    "NanoCpus", (json_int_t)(m->cpus * 1e9),
	    "Memory", (json_int_t)m->memory,
	    "MemorySwap", (json_int_t)m->memory,
	    "PidsLimit", (json_int_t)sandbox_host_pids(m),
	    "NetworkMode", strcmp(m->network, "proxy") == 0 ?
	    SANDBOX_NET_INTERNAL : "none",
	    "IpcMode", "private", "Privileged", 0,
	    "RestartPolicy", "Name", "no");
	if (host == NULL)
		return NULL;
	if (m->runtime != NULL)
		json_object_set_new(host, "Runtime", json_string(m->runtime));
	sandbox_spec_bounds(host, m);
	if (m->proxy != NULL && strcmp(m->network, "proxy") == 0)
		sandbox_spec_dns(host, m->proxy);
	return host;
}

unsigned long
sandbox_init_uid(const struct sandbox_meta *m)
{
	return m->uid == SANDBOX_UID ? SANDBOX_INIT_UID_OLD :
	    m->uid + SANDBOX_UID_COUNT;
}

void
sandbox_init_user(const struct sandbox_meta *m, char *buf, size_t size)
{
	unsigned long	uid = sandbox_init_uid(m);

	snprintf(buf, size, "%lu:%lu", uid, uid);
}

/*
 * The probe is the container's init (PID 1): it reaps orphans, stops on
 * SIGTERM and makes itself not dumpable, so that no process of the
 * sandbox can write its memory or read its environment, and the kill
 * knows it by its executable and start time (exec.h). It runs as the
 * init's uid, which no command has (every command's exec names the
 * sandbox's uid; only sandgate's own reaper under gVisor runs as the
 * init's, exec.c): no command may signal it or change its limits.
 */
json_t *
sandbox_spec(const struct sandbox_meta *m, const struct sandbox_mounts *mt,
    const char *role)
{
	json_t	*labels;
	char	user[32], owner[PROCSTAT_OWNER_MAX];

	sandbox_init_user(m, user, sizeof(user));
	labels = json_pack("{s:s, s:s, s:s, s:s}", SANDBOX_LABEL, m->id,
	    SANDBOX_LABEL_SOURCE, m->source != NULL ? m->source : "",
	    SANDBOX_LABEL_ROLE, role, SANDBOX_LABEL_STATE, state_root());
	/* a fresh container outlives a killed exec: gc needs its owner */
	if (strcmp(role, "fresh") == 0 &&
	    procstat_owner_self(owner, sizeof(owner)) == 0)
		json_object_set_new(labels, SANDBOX_LABEL_OWNER,
		    json_string(owner));
	/* runsc applies the base's seccomp profile inside gVisor when
	 * registered with --oci-seccomp */
	return cspec_new(json_pack("{s:s, s:s, s:o, s:s, s:[s, s], s:[], "
	    "s:b, s:b, s:b, s:b, s:o, s:o}",
	    "Image", m->image_id != NULL ? m->image_id : m->image,
	    "User", user, "Env", sandbox_spec_env(m),
	    "WorkingDir", SANDBOX_WORKDIR,
	    "Cmd", PROBE_CONTAINER_PATH, "idle", "Entrypoint",
	    "AttachStdin", 0, "AttachStdout", 0, "AttachStderr", 0,
	    "NetworkDisabled", strcmp(m->network, "proxy") != 0,
	    "Labels", labels, "HostConfig", sandbox_spec_host(m, mt)));
}

/*
 * The claims folder: $SANDGATE_UID_DIR or SANDBOX_UID_DIR, made and
 * checked as the state root is at its first use (state_private_dir: a
 * folder another uid could write let it take every uid and give two
 * sandboxes one, atk44c E4), the claims in it this uid's or root's.
 */
static const char *
sandbox_uid_dir(void)
{
	static char	 dir[PATH_MAX];
	const char	*env = getenv("SANDGATE_UID_DIR");

	if (dir[0] != '\0')
		return dir;
	if (util_strlcpy(dir, env != NULL && *env != '\0' ? env :
	    SANDBOX_UID_DIR, sizeof(dir)) >= sizeof(dir))
		fatalx("uid claims folder %s: too long", env);
	state_private_dir(dir, sizeof(dir), 0700, "uid claims folder");
	state_entries_check(dir, NULL, 1, "uid claims folder");
	return dir;
}

/*
 * 1 when the host's passwd or group names uid or the init uid that goes
 * with it (sandbox_init_uid): a host account has one of them.
 */
static int
sandbox_uid_taken(unsigned long uid)
{
	unsigned long	init = uid + SANDBOX_UID_COUNT;

	return getpwuid((uid_t)uid) != NULL || getgrgid((gid_t)uid) != NULL ||
	    getpwuid((uid_t)init) != NULL || getgrgid((gid_t)init) != NULL;
}

/* Claim a free uid of the range for the folder dir into *uid. 0 or -1. */
static int
sandbox_uid_claim(const char *dir, unsigned long *uid, char **cause)
{
	unsigned char	rnd[4];
	char		link[PATH_MAX];
	unsigned long	start, i, u;

	if (state_mkdirs(sandbox_uid_dir(), 0700) == -1) {
		util_cause(cause, "cannot create '%s': %s",
		    sandbox_uid_dir(), strerror(errno));
		return -1;
	}
	if (RAND_bytes(rnd, sizeof(rnd)) != 1)
		memset(rnd, 0, sizeof(rnd));
	start = ((unsigned long)rnd[0] << 8 | rnd[1]) % SANDBOX_UID_COUNT;
	for (i = 0; i < SANDBOX_UID_COUNT; i++) {
		u = SANDBOX_UID_BASE + (start + i) % SANDBOX_UID_COUNT;
		if (sandbox_uid_taken(u))
			continue;
		if ((size_t)snprintf(link, sizeof(link), "%s/%lu",
		    sandbox_uid_dir(), u) >= sizeof(link)) {
			util_cause(cause, "'%s': name too long",
			    sandbox_uid_dir());
			return -1;
		}
		if (symlink(dir, link) == 0) {
			*uid = u;
			return 0;
		}
		if (errno != EEXIST) {
			util_cause(cause, "cannot claim uid %lu in '%s': "
			    "%s", u, sandbox_uid_dir(), strerror(errno));
			return -1;
		}
	}
	util_cause(cause, "no free uid in %lu..%lu (%s)", SANDBOX_UID_BASE,
	    SANDBOX_UID_BASE + SANDBOX_UID_COUNT - 1, sandbox_uid_dir());
	return -1;
}

/* Write name in the folder dirfd (never through a link). 0 or -1. */
static int
sandbox_write_at(int dirfd, const char *name, const char *text)
{
	size_t	len = strlen(text);
	int	fd, rv = 0;

	fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW |
	    O_CLOEXEC, 0644);
	if (fd == -1)
		return -1;
	if (write(fd, text, len) != (ssize_t)len || fchmod(fd, 0644) == -1)
		rv = -1;
	close(fd);
	return rv;
}

int
sandbox_identity(struct sandbox_meta *m, char **cause)
{
	char	dir[PATH_MAX], etc[PATH_MAX + 8], *pw = NULL, *gr = NULL;
	int	fd, rv = -1;

	if (state_path(dir, sizeof(dir), m->id, NULL) == -1 ||
	    sandbox_uid_claim(dir, &m->uid, cause) == -1)
		return -1;
	snprintf(etc, sizeof(etc), "%s/etc", dir);
	if ((mkdir(etc, 0755) == -1 && errno != EEXIST) ||
	    (fd = open(etc, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
	    O_CLOEXEC)) == -1) {
		util_cause(cause, "cannot create '%s': %s", etc,
		    strerror(errno));
		return -1;
	}
	util_xasprintf(&pw, "root:x:0:0:root:/root:/bin/sh\n"
	    "sandbox:x:%lu:%lu:sandbox:" SANDBOX_HOME ":/bin/sh\n"
	    "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
	    m->uid, m->uid);
	util_xasprintf(&gr, "root:x:0:\nsandbox:x:%lu:\nnogroup:x:65534:\n",
	    m->uid);
	if (sandbox_write_at(fd, "passwd", pw) == -1 ||
	    sandbox_write_at(fd, "group", gr) == -1)
		util_cause(cause, "cannot write '%s/passwd': %s", etc,
		    strerror(errno));
	else
		rv = 0;
	close(fd);
	free(pw);
	free(gr);
	return rv;
}

/*
 * Walk the claims: remove those pointing at dir, or (dir NULL) those
 * whose folder is gone. The number removed (or found, with dry), or -1.
 */
static int
sandbox_uid_walk(const char *dir, int dry)
{
	struct dirent	*de;
	struct stat	 st;
	DIR		*d;
	char		 target[PATH_MAX];
	ssize_t		 n;
	int		 fd, count = 0;

	if ((fd = open(sandbox_uid_dir(), O_RDONLY | O_DIRECTORY |
	    O_NOFOLLOW | O_CLOEXEC)) == -1)
		return errno == ENOENT ? 0 : -1;
	if ((d = fdopendir(fd)) == NULL) {
		close(fd);
		return -1;
	}
	while ((de = readdir(d)) != NULL) {
		if (de->d_name[0] < '0' || de->d_name[0] > '9' ||
		    (n = readlinkat(fd, de->d_name, target,
		    sizeof(target) - 1)) <= 0)
			continue;
		target[n] = '\0';
		if (dir != NULL ? strcmp(target, dir) != 0 :
		    lstat(target, &st) == 0 || errno != ENOENT)
			continue;
		if (dry || unlinkat(fd, de->d_name, 0) == 0)
			count++;
	}
	closedir(d);
	return count;
}

void
sandbox_uid_release(const char *dir)
{
	(void)sandbox_uid_walk(dir, 0);
}

int
sandbox_uid_sweep(int dry)
{
	return sandbox_uid_walk(NULL, dry);
}

static int
sandbox_rm_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_DP) {
		if (rmdir(path) == -1 && errno != ENOENT)
			return -1;
		return 0;
	}
	if (unlink(path) == -1 && errno != ENOENT)
		return -1;
	return 0;
}

int
sandbox_rmtree(const char *path)
{
	struct stat	st;

	if (lstat(path, &st) == -1)
		return errno == ENOENT ? 0 : -1;
	return nftw(path, sandbox_rm_cb, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}

/*
 * The fresh mark's name of owner ("PID START PIDNS BOOT UID", spaces
 * made dots) into name: 0, or -1 when it cannot be one (too long, a
 * '/' in a label).
 */
static int
sandbox_fresh_name(const char *owner, char *name, size_t size)
{
	char	*p;

	if (strchr(owner, '/') != NULL || snprintf(name, size,
	    SANDBOX_FRESH_MARK "%s", owner) >= (int)size)
		return -1;
	for (p = name + strlen(SANDBOX_FRESH_MARK); (p = strchr(p, ' ')) !=
	    NULL; p++)
		*p = '.';
	return 0;
}

/*
 * 1 when c (a container list entry) is fresh and its owner is gone: its
 * mark in the sandbox folder dirfd is not held (ownmark.h) and its
 * label names no process that runs.
 */
static int
sandbox_fresh_orphan(int dirfd, json_t *c)
{
	json_t		*labels = json_object_get(c, "Labels");
	const char	*role, *owner;
	char		 name[PROCSTAT_OWNER_MAX + 16];

	role = json_string_value(json_object_get(labels, SANDBOX_LABEL_ROLE));
	owner = json_string_value(json_object_get(labels,
	    SANDBOX_LABEL_OWNER));
	if (role == NULL || strcmp(role, "fresh") != 0 || owner == NULL)
		return 0;
	if (sandbox_fresh_name(owner, name, sizeof(name)) == -1)
		return !procstat_owner_alive(owner);
	return !ownmark_alive(dirfd, name, owner);
}

/*
 * The fresh marks in sandbox id's folder (sandbox_fresh_mark): how many,
 * or -1 when the folder cannot be read. With drop, the marks of owners
 * that are gone are removed (their containers are) and not counted.
 */
static int
sandbox_fresh_marks(const char *id, int drop)
{
	struct dirent		*de;
	DIR			*dir;
	char			 path[4096], owner[PROCSTAT_OWNER_MAX], *p;
	size_t			 len = strlen(SANDBOX_FRESH_MARK);
	int			 n = 0;

	if (state_path(path, sizeof(path), id, NULL) == -1 ||
	    (dir = opendir(path)) == NULL)
		return -1;
	while ((de = readdir(dir)) != NULL) {
		if (strncmp(de->d_name, SANDBOX_FRESH_MARK, len) != 0)
			continue;
		/* the owner's fields, as sandbox_fresh_mark joined them */
		if (drop && util_strlcpy(owner, de->d_name + len,
		    sizeof(owner)) < sizeof(owner)) {
			for (p = owner; (p = strchr(p, '.')) != NULL; p++)
				*p = ' ';
			if (!ownmark_alive(dirfd(dir), de->d_name, owner) &&
			    unlinkat(dirfd(dir), de->d_name, 0) == 0)
				continue;
		}
		n++;
	}
	closedir(dir);
	return n;
}

/* The descriptor that holds this process's fresh mark (ownmark_make). */
static int	sandbox_fresh_fd = -1;

int
sandbox_fresh_mark(const char *id, int remove, char **cause)
{
	char	own[PROCSTAT_OWNER_MAX], name[PROCSTAT_OWNER_MAX + 16];
	char	path[4096];
	int	dfd;

	if (procstat_owner_self(own, sizeof(own)) == -1) {
		util_cause(cause, "cannot name this process as the owner of a "
		    "fresh container (/proc/self/stat, /proc/self/ns/pid, "
		    "/proc/sys/kernel/random/boot_id)");
		return -1;
	}
	/* "PID START PIDNS BOOT UID" as a file name: sandbox_fresh_marks reads it */
	if (sandbox_fresh_name(own, name, sizeof(name)) == -1 ||
	    state_path(path, sizeof(path), id, NULL) == -1) {
		util_cause(cause, "state folder path too long");
		return -1;
	}
	if ((dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) == -1) {
		if (remove && errno == ENOENT)	/* discarded: no mark left */
			return 0;
		util_cause(cause, "cannot open '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	if (remove && unlinkat(dfd, name, 0) == -1 && errno != ENOENT) {
		util_cause(cause, "cannot remove '%s/%s': %s", path, name,
		    strerror(errno));
		close(dfd);
		return -1;
	}
	if (sandbox_fresh_fd != -1)
		close(sandbox_fresh_fd);
	/* held while this process runs: its fresh container is in use */
	sandbox_fresh_fd = remove ? -1 : ownmark_make(dfd, name, NULL);
	close(dfd);
	if (!remove && sandbox_fresh_fd == -1) {
		util_cause(cause, "cannot write '%s/%s': %s", path, name,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The address of the fresh container cid (of sandbox id) forgotten by
 * the proxy before the container goes: 0, or -1 (said) when the proxy
 * did not take it; the container is then left to the next sweep, since
 * removed, its address would stay the sandbox's (a stopped proxy loads
 * it again at its start, atk1921h F5). No address: nothing to forget.
 */
int
sandbox_fresh_unregister(struct docker *d, const char *id, const char *cid)
{
	char	ip[64], *err = NULL, *bad, *left = NULL, *to;
	int	rc;

	if (docker_container_ip(d, cid, PROXYCTL_NET_INTERNAL, ip, sizeof(ip),
	    &err) == -1) {
		free(err);
		return 0;
	}
	/* every replica the sandbox holds (atk1921i F9) */
	to = repset_load(id, &bad);
	rc = repset_unknown(bad, proxyctl_unregister_container(d, cid, id, to,
	    &err), &left, &err);
	free(to);
	free(left);
	if (rc == 0)
		return 0;
	log_warnx("warning: the fresh container %.12s of %s is left: the "
	    "proxy did not forget its address %s (%s); removed by the next "
	    "gc or exec once it does", cid, id, ip, err);
	free(err);
	return -1;
}

int
sandbox_fresh_sweep(struct docker *d, const char *id, int flags,
    char **cause)
{
	json_t		*list = NULL, *c;
	const char	*cid;
	char		*err = NULL, path[4096];
	size_t		 i;
	int		 n = 0, proxy, failed = 0, dfd;
	int		 dry = flags & SANDBOX_SWEEP_DRY;

	/* No mark: no fresh container was made since the last sweep. */
	if ((flags & SANDBOX_SWEEP_MARKED) && sandbox_fresh_marks(id, 0) == 0)
		return 0;
	if (docker_container_list(d, SANDBOX_LABEL, id, &list, cause) == -1)
		return -1;
	/* a stopped proxy whose files name it has not forgotten it */
	proxy = proxyctl_remote() != NULL ||
	    access(proxyctl_socket_path(), F_OK) == 0 ||
	    proxyctl_local_registry(id) != 0;
	/* -1 when it cannot be opened: the marks then go unseen */
	dfd = state_path(path, sizeof(path), id, NULL) == -1 ? -1 :
	    open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	json_array_foreach(list, i, c) {
		if ((cid = json_string_value(json_object_get(c, "Id"))) ==
		    NULL || !sandbox_fresh_orphan(dfd, c))
			continue;
		if (!dry && proxy &&
		    sandbox_fresh_unregister(d, id, cid) == -1) {
			failed = 1;
			continue;
		}
		if (!dry && docker_container_remove(d, cid, &err) == -1) {
			log_warnx("cannot remove the fresh container %.12s of "
			    "%s: %s", cid, id, err);
			free(err);
			err = NULL;
			failed = 1;
			continue;
		}
		n++;
	}
	json_decref(list);
	if (dfd != -1)
		close(dfd);
	if ((flags & SANDBOX_SWEEP_MARKED) && !dry && !failed)
		(void)sandbox_fresh_marks(id, 1);
	return n;
}

/* Remove every container labelled with the sandbox id. */
static int
sandbox_remove_containers(struct docker *d, const char *id, char **cause)
{
	json_t	*list = NULL, *c;
	size_t	 i;
	int	 rv = 0;

	if (docker_container_list(d, SANDBOX_LABEL, id, &list, cause) == -1)
		return -1;
	json_array_foreach(list, i, c) {
		if (!json_is_string(json_object_get(c, "Id")))
			continue;
		if (docker_container_remove(d, json_string_value(
		    json_object_get(c, "Id")), rv == 0 ? cause : NULL) == -1)
			rv = -1;
	}
	json_decref(list);
	return rv;
}

/* a and b comma-joined (heap, NULL when both are); both freed. */
static char *
sandbox_join_to(char *a, char *b)
{
	char	*to;

	if (a == NULL || b == NULL)
		return a != NULL ? a : b;
	util_xasprintf(&to, "%s,%s", a, b);
	free(a);
	free(b);
	return to;
}

/*
 * The replicas id's unregister goes to (heap, NULL: the environment's
 * alone): those it was registered with (repset.h), those an unregister
 * kept before is still owed to (a second discard of a removed sandbox
 * has no folder to read them from, atk1921i F1), and those the ends of
 * its exec credentials are still owed to.
 */
static char *
sandbox_unregister_to(const char *id, char **bad)
{
	return sandbox_join_to(sandbox_join_to(repset_load(id, bad),
	    unregpend_to(id)), execend_to(id));
}

/*
 * id's unregister sent to the replicas it is owed to (under the lock of
 * kept sends, held by the caller): 0 when each confirmed it, else -1 with
 * *left and *why.
 */
static int
sandbox_unregister_send(const char *id, char **left, char **why)
{
	char	*bad, *to = sandbox_unregister_to(id, &bad);
	int	 rc = proxyctl_unregister(id, to, left, why);

	free(to);
	/* unreadable replicas: not known to be confirmed (atk1921i F8) */
	return repset_unknown(bad, rc, left, why);
}

int
sandbox_unregister(const char *id, char **cause)
{
	char	*why = NULL, *c2 = NULL, *left = NULL, path[4096];
	int	 rc;

	/* no gc's retry forgets what this keeps meanwhile (atk1921j F3) */
	owed_lock();
	rc = sandbox_unregister_send(id, &left, &why);
	if (rc == 0) {
		rc = unregpend_done(id);
		execend_drop(id);
		owed_unlock();
		if (rc == 0)
			return 0;
		/* never removed unread: whom it names is not known (F5) */
		if (unregpend_path(path, sizeof(path), id) == -1)
			(void)snprintf(path, sizeof(path), "unregister/%s", id);
		util_cause(cause, "every proxy replica asked confirmed its "
		    "unregister, but the one kept in %s cannot be read: left "
		    "as it is, the replicas it names may still let it through",
		    path);
		return 1;
	}
	if (unregpend_add(id, left, why, &c2) == -1 || unregpend_path(path,
	    sizeof(path), id) == -1) {
		util_cause(cause, "not every proxy replica confirmed its "
		    "unregister (%s), and it could not be kept to send again "
		    "(%s)", why, c2);
		free(c2);
	} else
		util_cause(cause, "not every proxy replica confirmed its "
		    "unregister: %s; its token and address may still act as "
		    "it there: kept in %s, sent again by `sandgate gc`", why,
		    path);
	owed_unlock();
	if (runrec_event("sandbox.unregister_pending", id, why, &c2) == -1) {
		log_warnx("warning: run record not written: %s", c2);
		free(c2);
	}
	free(left);
	free(why);
	return 1;
}

int
sandbox_destroy(struct docker *d, const char *id, char **cause)
{
	char	dir[4096], work[4096], *owed = NULL;
	int	rv;

	if (state_path(dir, sizeof(dir), id, NULL) == -1 ||
	    state_path(work, sizeof(work), id, "work") == -1) {
		util_cause(cause, "state path too long");
		return -1;
	}
	if (d != NULL && sandbox_remove_containers(d, id, cause) == -1)
		return -1;
	/* Not confirmed: the rest goes, the unregister is kept to resend. */
	(void)sandbox_unregister(id, &owed);
	if ((rv = sandbox_remove_state(dir, work, cause)) == 0 &&
	    owed != NULL) {
		*cause = owed;
		return SANDBOX_UNREGISTER_OWED;
	}
	free(owed);
	return rv;
}

/* The sandbox's folder (dir) and its mounted working copy (work). */
static int
sandbox_remove_state(const char *dir, const char *work, char **cause)
{
	int	left;

	if (disk_is_mounted(work) == 1 && disk_umount(work, cause) == -1)
		return -1;
	/* what a killed apply left in the source tree goes first */
	if (workspace_apply_cleanup(dir, NULL, &left, cause) == -1)
		return -1;
	/* snapshot/ may hold paths past PATH_MAX and any depth (nftw can't) */
	if (workspace_remove(dir, cause) == -1)
		return -1;
	sandbox_uid_release(dir);
	if (sandbox_rmtree(dir) == -1) {
		util_cause(cause, "cannot remove '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/*
 * The identity of a container's running instance: its init's pid and start
 * time (/proc/PID/stat field 22), which no later process shares.
 */
static int
sandbox_instance(pid_t pid, char *buf, size_t len)
{
	struct procstat	ps;

	if (procstat_read((int)pid, &ps) == -1)
		return -1;
	snprintf(buf, len, "%d %llu\n", (int)pid, ps.start);
	return 0;
}

/*
 * <sandbox>/checked names the session container instance that was probed,
 * sealed and registered. An instance it does not name (started again by
 * dockerd, the host or `docker restart`) is checked again before use.
 */
static int
sandbox_checked(const struct sandbox_meta *m, pid_t pid)
{
	char	path[4096], want[64], have[64];
	ssize_t	n;
	int	fd;

	if (sandbox_instance(pid, want, sizeof(want)) == -1 ||
	    state_path(path, sizeof(path), m->id, "checked") == -1 ||
	    (fd = open(path, O_RDONLY | O_CLOEXEC)) == -1)
		return 0;
	n = read(fd, have, sizeof(have) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	have[n] = '\0';
	return strcmp(have, want) == 0;
}

/* Record the instance just checked (best effort: without it, check again). */
static void
sandbox_checked_save(const struct sandbox_meta *m, pid_t pid)
{
	char	path[4096], tmp[4200], id[64];
	int	fd, ok;

	if (sandbox_instance(pid, id, sizeof(id)) == -1 ||
	    state_path(path, sizeof(path), m->id, "checked") == -1)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", path, (long)getpid());
	if ((fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
	    0600)) == -1)
		return;
	ok = write(fd, id, strlen(id)) == (ssize_t)strlen(id);
	close(fd);
	if (!ok || rename(tmp, path) == -1)
		unlink(tmp);
}

/*
 * A running container that Docker has not paused but whose freezer
 * cgroup is frozen was left so by a sandgate that died between an exec
 * kill's freeze and its thaw (exec.c, exec_freeze): every exec would
 * fail in it (runc: "cannot exec in a paused container"). Under the
 * container's freeze lock, which waits for a freeze still in progress
 * (another exec's kill), it is thawed if still frozen. 0, or -1 with
 * *cause.
 */
static int
sandbox_thaw_left(struct docker *d, const char *cid, pid_t pid, char **cause)
{
	struct cgroup	cg;
	int		rv = 0;

	if (cgroup_find((int)pid, &cg) == -1 || cgroup_frozen(&cg) != 1)
		return 0;
	if (docker_container_lock(d, cid, cause) == -1)
		return -1;
	if (cgroup_frozen(&cg) == 1) {
		if (cgroup_freeze(&cg, 0, 0) == -1) {
			util_cause(cause, "container %.12s is left frozen "
			    "(freezer cgroup '%s') and cannot be thawed: %s",
			    cid, cg.freezer, strerror(errno));
			rv = -1;
		} else
			log_warnx("container %.12s was left frozen by a "
			    "sandgate stopped during a kill: thawed", cid);
	}
	docker_container_unlock(d);
	return rv;
}

/*
 * Unpause a container Docker has paused: a diff or an apply stopped
 * between its pause and its unpause leaves it so, and whoever comes next
 * takes it over (docker_container_pause). Docker's pause is runc's freeze
 * of the freezer cgroup. When that cgroup was thawed behind Docker's back
 * (a diff's unpause that timed out, after which another exec's kill froze
 * and thawed the cgroup: atk39d F1), runc refuses the unpause ("container
 * not paused") and Docker every exec: every exec failed with 125 until
 * the sandbox was discarded. Under the container's freeze lock (no
 * freeze of sandgate's in progress), a container Docker still has paused
 * whose cgroup is thawed is frozen again, so that Docker's unpause finds
 * what it paused. Not under gVisor, whose pause is its own, not the
 * cgroup's. 0, or -1 with *cause.
 */
static int
sandbox_unpause(struct docker *d, const struct sandbox_meta *m, char **cause)
{
	struct docker_cinfo	ci;
	struct cgroup		cg;

	if (docker_container_lock(d, m->container, cause) == -1)
		return -1;
	if (docker_container_inspect(d, m->container, &ci, cause) == -1) {
		docker_container_unlock(d);
		return -1;
	}
	if (!ci.paused) {	/* unpaused while we waited for the lock */
		docker_container_unlock(d);
		return 0;
	}
	if (!sandbox_gvisor(m) && cgroup_find((int)ci.pid, &cg) == 0 &&
	    cgroup_frozen(&cg) == 0) {
		if (cgroup_freeze(&cg, 1, SANDBOX_REFREEZE_MS) == -1) {
			(void)cgroup_freeze(&cg, 0, 0);	/* half-way */
			util_cause(cause, "container %.12s is paused by "
			    "Docker but was thawed behind its back, and could "
			    "not be frozen again within %d ms for Docker to "
			    "unpause it (freezer cgroup '%s': a process in "
			    "uninterruptible sleep?); the next exec tries "
			    "again", m->container, SANDBOX_REFREEZE_MS,
			    cg.freezer);
			docker_container_unlock(d);
			return -1;
		}
		log_warnx("container %.12s was paused by Docker but thawed "
		    "behind its back: frozen again for Docker to unpause it",
		    m->container);
	}
	return docker_container_pause(d, m->container, 0, cause);
}

int
sandbox_ensure_running(struct docker *d, const struct sandbox_meta *m,
    struct docker_cinfo *ci, char **cause)
{
	char			work[4096], img[4096];

	if (state_path(work, sizeof(work), m->id, "work") == -1 ||
	    state_path(img, sizeof(img), m->id, "disk.img") == -1) {
		util_cause(cause, "state path too long");
		return -1;
	}
	if (disk_is_mounted(work) == 0 && disk_mount(img, work, cause) == -1)
		return -1;
	if (m->container == NULL) {
		util_cause(cause, "sandbox '%s' has no session container",
		    m->id);
		return -1;
	}
	if (docker_container_inspect(d, m->container, ci, cause) == -1)
		return -1;
	if (ci->running && !ci->paused &&
	    sandbox_thaw_left(d, m->container, ci->pid, cause) == -1)
		return -1;
	if (ci->running && !ci->paused && sandbox_checked(m, ci->pid))
		return 0;
	if (ci->paused && sandbox_unpause(d, m, cause) == -1)
		return -1;
	if (!ci->running &&
	    docker_container_start(d, m->container, cause) == -1)
		return -1;
	if (docker_container_inspect(d, m->container, ci, cause) == -1)
		return -1;
	if (sandbox_checked(m, ci->pid))
		return 0;
	/*
	 * A new instance (dockerd or the host restarted, or someone ran
	 * `docker restart`): its network namespace is new and unsealed.
	 * Check it again as at create (fail closed), seal it, and register
	 * its address, which may have changed, with the proxy.
	 */
	if (sandbox_probe(d, m, m->container, ci->pid, cause) == -1)
		return -1;
	if (strcmp(m->network, "proxy") == 0 &&
	    proxyctl_register(d, m->container, m->id, m->allow, 0,
	    cause) == -1)
		return -1;
	sandbox_checked_save(m, ci->pid);
	return 0;
}

struct docker *
sandbox_docker(void)
{
	struct docker	*d;
	char		*cause = NULL;

	if ((d = docker_new(&cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
	}
	return d;
}

/* "K=V" with a sane key that is not sandgate's own. */
static int
sandbox_env_ok(const char *kv, char **cause)
{
	const char	*eq = strchr(kv, '=');
	const char	*p;

	if (eq == NULL || eq == kv) {
		util_cause(cause, "--env '%s' is not KEY=VALUE", kv);
		return -1;
	}
	for (p = kv; p < eq; p++) {
		if (!(*p == '_' || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= 'a' && *p <= 'z') || (p > kv && *p >= '0' &&
		    *p <= '9'))) {
			util_cause(cause, "--env '%.*s': not a variable "
			    "name", (int)(eq - kv), kv);
			return -1;
		}
	}
	if (strncmp(kv, "SANDGATE_", 9) == 0) {
		util_cause(cause, "--env '%.*s': SANDGATE_* variables are "
		    "set by sandgate", (int)(eq - kv), kv);
		return -1;
	}
	return 0;
}

/* --cpus: a decimal in [0.01, 1024]. */
static int
sandbox_opt_cpus(struct sandbox_meta *m, const char *v, char **cause)
{
	char	*end;
	double	 c;

	errno = 0;
	c = strtod(v, &end);
	if (errno != 0 || end == v || *end != '\0' || !(c >= 0.01) ||
	    c > 1024) {
		util_cause(cause, "--cpus '%s': want a number from 0.01 "
		    "to 1024", v);
		return -1;
	}
	m->cpus = c;
	return 1;
}

/* Sizes: memory >= 6 MiB (Docker's floor), disk and tmp >= 1 MiB. */
static int
sandbox_opt_size(const char *name, const char *v, unsigned long long min,
    unsigned long long *out, char **cause)
{
	unsigned long long	b;

	if (util_parse_size(v, &b) == -1 || b < min ||
	    b > (1ULL << 50)) {
		util_cause(cause, "--%s '%s': want a size like 512m or "
		    "2g, at least %llu bytes", name, v, min);
		return -1;
	}
	*out = b;
	return 1;
}

/* Settings with a list or a string value. */
static int
sandbox_opt_str(struct sandbox_meta *m, const char *name, const char *v,
    char **cause)
{
	if (strcmp(name, "env") == 0) {
		if (sandbox_env_ok(v, cause) == -1)
			return -1;
		json_array_append_new(m->env, json_string(v));
	} else if (strcmp(name, "allow") == 0)
		json_array_append_new(m->allow, json_string(v));
	else if (strcmp(name, "image") == 0)
		sandbox_meta_set(&m->image, v);
	else if (strcmp(name, "runtime") == 0)
		sandbox_meta_set(&m->runtime, v);
	else if (strcmp(name, "ca-cert") == 0) {
		if (access(v, R_OK) == -1) {
			util_cause(cause, "--ca-cert '%s': %s", v,
			    strerror(errno));
			return -1;
		}
		sandbox_meta_set(&m->ca_cert, v);
	}
	else if (strcmp(name, "network") == 0) {
		if (strcmp(v, "none") != 0 && strcmp(v, "proxy") != 0) {
			util_cause(cause, "--network '%s': want none or "
			    "proxy", v);
			return -1;
		}
		sandbox_meta_set(&m->network, v);
	} else
		return 0;
	return 1;
}

int
sandbox_opt(struct sandbox_meta *m, const char *name, const char *v,
    char **cause)
{
	long long	 n;
	const char	*err;

	if (strcmp(name, "cpus") == 0)
		return sandbox_opt_cpus(m, v, cause);
	if (strcmp(name, "memory") == 0)
		return sandbox_opt_size(name, v, 6ULL << 20, &m->memory, cause);
	if (strcmp(name, "disk") == 0)
		return sandbox_opt_size(name, v, DISK_MIN_BYTES, &m->disk,
		    cause);
	if (strcmp(name, "tmp-size") == 0)
		return sandbox_opt_size(name, v, 1ULL << 20, &m->tmp_size,
		    cause);
	if (strcmp(name, "pids") == 0) {
		if (util_strtonum(v, 8, 4194304, &n, &err) == -1) {
			util_cause(cause, "--pids '%s': %s (8 to 4194304)",
			    v, err);
			return -1;
		}
		m->pids = n;
		return 1;
	}
	if (strcmp(name, "timeout") == 0) {
		if (util_parse_duration(v, &n) == -1 || n < 1 ||
		    n > 7 * 86400) {
			util_cause(cause, "--timeout '%s': want seconds "
			    "(or 30s, 5m, 2h), at most 7d", v);
			return -1;
		}
		m->timeout = n;
		return 1;
	}
	return sandbox_opt_str(m, name, v, cause);
}

/*
 * Fail closed on the network itself: sandgate-internal must be internal
 * (no route out) with inhibit_ipv4 (the host has no address on it).
 */
static int
sandbox_check_network(struct docker *d, char **cause)
{
	json_t		*n = NULL;
	const char	*inhibit;
	long		 status = 0;
	int		 ok;

	if (docker_call(d, "GET", "/networks/" SANDBOX_NET_INTERNAL, NULL,
	    &status, &n, cause) == -1)
		return -1;
	inhibit = json_string_value(json_object_get(json_object_get(n,
	    "Options"), "com.docker.network.bridge.inhibit_ipv4"));
	ok = status == 200 && json_is_true(json_object_get(n, "Internal")) &&
	    inhibit != NULL && strcmp(inhibit, "true") == 0;
	json_decref(n);
	if (!ok) {
		util_cause(cause, "sandbox refused: network %s is not "
		    "internal with inhibit_ipv4 (sandboxes could reach a route "
		    "out or the host); remove it and run `sandgate proxy "
		    "start`", SANDBOX_NET_INTERNAL);
		return -1;
	}
	return 0;
}

/* The proxy's address for HTTP(S)_PROXY; the proxy must be running. */
static int
sandbox_resolve_proxy(struct docker *d, struct sandbox_meta *m, char **cause)
{
	char	ip[64], *hp;

	if (sandbox_check_network(d, cause) == -1)
		return -1;

	if (proxyctl_address(d, ip, sizeof(ip), cause) == -1)
		return -1;
	util_xasprintf(&hp, "%s:%d", ip, PROXYCTL_PORT);
	free(m->proxy);
	m->proxy = hp;
	return 0;
}

int
sandbox_resolve(struct docker *d, struct sandbox_meta *m, char **cause)
{
	char	*id = NULL, *c = NULL;
	int	 net;

	if (m->image == NULL)
		sandbox_meta_set(&m->image, SANDBOX_DEFAULT_IMAGE);
	if (docker_image_id(d, m->image, &id, &c) == -1) {
		if (errno == ENOENT) {
			util_cause(cause, "image '%s' not found; build it "
			    "or pass --image", m->image);
			free(c);
			errno = ENOENT;
		} else
			*cause = c;
		return -1;
	}
	free(m->image_id);
	m->image_id = id;
	if (strcmp(m->network, "proxy") != 0)
		return 0;
	if ((net = docker_network_exists(d, SANDBOX_NET_INTERNAL, cause)) ==
	    -1)
		return -1;
	if (net == 0) {
		util_cause(cause, "--network proxy needs the Docker network "
		    "'%s', which does not exist: start the proxy with "
		    "`sandgate proxy start`, or use --network none",
		    SANDBOX_NET_INTERNAL);
		return -1;
	}
	return sandbox_resolve_proxy(d, m, cause);
}

/*
 * The same limits read from the host's cgroupfs: what the kernel enforces
 * whatever the inside shows (gVisor shows nothing). 0 or -1 with *failed.
 */
static int
sandbox_probe_host(int pid, const char *cid, const struct probe_expect *pe,
    char **failed)
{
	json_t	*limits = cgroup_limits(pid, cid);
	char	*why = NULL;
	int	 rc;

	if (limits == NULL) {
		util_xasprintf(failed, "cannot read the container's cgroup on "
		    "the host (init pid %d)", pid);
		return -1;
	}
	rc = probe_check_limits(limits, pe, &why);
	if (rc == -1) {
		util_xasprintf(failed, "host cgroup: %s", why);
		free(why);
	}
	json_decref(limits);
	return rc;
}

/*
 * Seal the container's network (netseal.h) when it is on the proxy's
 * network, run the probe in it and check both against the meta.
 */
static int
sandbox_probe(struct docker *d, const struct sandbox_meta *m,
    const char *cid, int pid, char **cause)
{
	char			*argv[] = { PROBE_CONTAINER_PATH, "check", NULL,
				    NULL, NULL };
	struct probe_expect	 pe;
	struct exec_opts	 o;
	struct exec_result	 r;
	char			 run[STATE_ID_LEN + 1], *failed = NULL, *oom = NULL;
	char			 target[80], runs[PATH_MAX];
	int			 rv = -1;

	/*
	 * gVisor: its sentry holds the whole sandbox's memory (guarantees.md).
	 * Left at 1000 the init may be the OOM killer's pick, which stops
	 * this sandbox's own commands, not another's: a warning, not a
	 * sandbox that cannot start.
	 */
	if (!sandbox_gvisor(m) && sandbox_oom_init(pid, &oom) == -1) {
		log_warnx("%s: the memory limit's OOM killer may stop the "
		    "sandbox's init", oom);
		free(oom);
	}
	if (strcmp(m->network, "proxy") == 0) {
		if (netseal_apply(pid, m->proxy, cause) == -1 ||
		    netseal_probe_target(m->proxy, target,
		    sizeof(target)) == -1)
			return -1;
		argv[2] = (char *)"--seal";
		argv[3] = target;
	}
	state_new_id(run, "run");
	sandbox_exec_opts(&o, m, argv, run, 30, PROBE_OUTPUT_MAX + 1);
	/*
	 * The probe may run beside other runs (a sandbox checked again after
	 * its seal drifted): their markers must be read where they are.
	 */
	if (state_path(runs, sizeof(runs), m->id, "runs") == 0 &&
	    access(runs, F_OK) == 0)
		o.evidence_dir = runs;
	if (exec_run(d, cid, pid, &o, &r, cause) == -1)
		return -1;
	probe_expect_init(&pe);
	pe.memory_bytes = m->memory;
	pe.pids = (long)sandbox_host_pids(m);
	pe.cpus = m->cpus;
	pe.network_none = strcmp(m->network, "none") == 0;
	pe.proxy_only = strcmp(m->network, "proxy") == 0;
	pe.sealed = pe.proxy_only;
	pe.gvisor = sandbox_gvisor(m);
	pe.seccomp_filter = 1;	/* under gVisor: sandgate-probe run's */
	pe.locked_init = 1;
	pe.tmp_noexec = !pe.gvisor;	/* gVisor hides mount options */
	if (r.cmd_exit != 0)
		util_cause(cause, "sandbox refused: the probe could not "
		    "run in the container (exit %d): %.200s", r.cmd_exit,
		    r.err ? r.err : "");
	else if (probe_check(r.out, &pe, &failed) == -1 ||
	    sandbox_probe_host(pid, cid, &pe, &failed) == -1) {
		util_cause(cause, "sandbox refused: %s", failed);
		free(failed);
	} else
		rv = 0;
	exec_result_release(&r);
	return rv;
}

int
sandbox_container_up(struct docker *d, const struct sandbox_meta *m,
    const struct sandbox_mounts *mt, const char *role, char **cid, int *pid,
    char **cause)
{
	struct docker_cinfo	 ci;
	json_t			*spec;
	char			 name[64], path[4096] = "";
	int			 rv, fd = -1;

	*cid = NULL;
	if ((spec = sandbox_spec(m, mt, role)) == NULL) {
		util_cause(cause, "cannot build the container spec");
		return -1;
	}
	if (strcmp(role, "session") == 0)
		snprintf(name, sizeof(name), "sandgate-%s", m->id);
	else
		snprintf(name, sizeof(name), "sandgate-%s-%s-%08x", m->id, role,
		    (unsigned)(util_now_us() & 0xffffffff));
	/*
	 * dockerd finishes a create whose client was killed; the marker's
	 * time lets gc wait for such a container instead of missing it.
	 */
	if (state_path(path, sizeof(path), m->id, SANDBOX_PENDING) == 0)
		fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
		    0600);
	if (fd == -1 || futimens(fd, NULL) == -1) {
		util_cause(cause, "cannot write '%s': %s", path,
		    strerror(errno));
		if (fd != -1)
			close(fd);
		json_decref(spec);
		return -1;
	}
	close(fd);
	rv = docker_container_create(d, name, spec, cid, cause);
	json_decref(spec);
	if (rv == -1)
		return -1;
	if (docker_container_start(d, *cid, cause) == -1 ||
	    docker_container_inspect(d, *cid, &ci, cause) == -1 ||
	    sandbox_probe(d, m, *cid, ci.pid, cause) == -1 ||
	    (strcmp(m->network, "proxy") == 0 &&
	    proxyctl_register(d, *cid, m->id, m->allow,
	    strcmp(role, "fresh") == 0, cause) == -1)) {
		docker_container_remove(d, *cid, NULL);
		free(*cid);
		*cid = NULL;
		return -1;
	}
	if (strcmp(role, "session") == 0)
		sandbox_checked_save(m, ci.pid);
	*pid = ci.pid;
	return 0;
}
