/* cmd_create.c: `sandgate create DIR`: a new sandbox over a copy of DIR. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "cmd.h"
#include "disk.h"
#include "docker.h"
#include "exec.h"
#include "log.h"
#include "probe.h"
#include "proxyctl.h"
#include "sandbox.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"
#include "workspace.h"

#define CREATE_EXCLUDES_MAX	256

/* What the command line asked for beyond the meta. */
struct create_args {
	const char	*excludes[CREATE_EXCLUDES_MAX];
	size_t		 nexcludes;
	int		 exclude_secrets;
	int		 json;
};

static int	cmd_create_exec(struct cmd_args *);
static int	create_parse(struct cmd_args *, struct sandbox_meta *,
		    struct create_args *);
static int	create_dirs(const char *, char **);
static int	create_workspace(const struct sandbox_meta *,
		    const struct create_args *, char **);
static int	create_build(struct docker *, struct sandbox_meta *,
		    const struct create_args *, char **);
static void	create_print(const struct sandbox_meta *, int);
static int	create_ca_copy(struct sandbox_meta *, const char *, size_t,
		    char **);
static int	create_ca_bundle(struct docker *, const struct sandbox_meta *,
		    const char *, int, char **);

/* The options of create beyond those of every sandbox (cmd.h). */
static const struct option cmd_create_options[] = {
	{ "ca-cert", required_argument, NULL, CMD_SANDBOX_OPT },
	{ "exclude", required_argument, NULL, 'x' },
	{ "exclude-secrets", no_argument, NULL, 'S' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_create = {
	.name = "create",
	.usage = "DIR [--image IMG] [--cpus N] [--memory SIZE] [--pids N] "
	    "[--disk SIZE] [--tmp-size SIZE] [--timeout S] [--runtime RT] "
	    "[--network proxy|none] [--allow SET]... [--ca-cert FILE] "
	    "[--env K=V]... "
	    "[--exclude PAT]... [--exclude-secrets] [--json]",
	.summary = "copy DIR into a new sandbox and start it; prints the id",
	.help = "Copies DIR into the sandbox's snapshot and working copy and "
	    "starts its session container with every control in force, then "
	    "prints the new sandbox's id (--json: one object).",
	.options = cmd_create_options,
	.options_more = cmd_sandbox_options,
	.args_min = 1,
	.args_max = 1,
	.exec = cmd_create_exec,
};

/* 0, or an exit code (usage error). */
static int
create_parse(struct cmd_args *args, struct sandbox_meta *m,
    struct create_args *a)
{
	const struct cmd_opt	*o;
	char			*cause = NULL;
	int			 rv;

	while ((o = cmd_args_next(args)) != NULL) {
		if (o->ch == 'S')
			a->exclude_secrets = 1;
		else if (o->ch == 'j')
			a->json = 1;
		else if (o->ch == 'x') {
			if (a->nexcludes == CREATE_EXCLUDES_MAX)
				return cmd_usage_error(&cmd_create, "too many "
				    "--exclude patterns");
			a->excludes[a->nexcludes++] = o->arg;
		} else if (sandbox_opt(m, o->name, o->arg, &cause) == -1) {
			rv = cmd_usage_error(&cmd_create, "%s", cause);
			free(cause);
			return rv;
		}
	}
	return 0;
}

/* The sandbox folder (0700), its lock file, runs/ and work/. */
static int
create_dirs(const char *id, char **cause)
{
	char	path[PATH_MAX];

	if (state_path(path, sizeof(path), id, NULL) == -1 ||
	    state_make_locked(id) == -1) {
		util_cause(cause, "cannot create and lock '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	state_path(path, sizeof(path), id, "runs");
	if (mkdir(path, 0700) == -1) {
		util_cause(cause, "cannot create '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	state_path(path, sizeof(path), id, "work");
	if (mkdir(path, 0755) == -1) {
		util_cause(cause, "cannot create '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* disk.img mounted on work/, then the copy of the source. */
static int
create_workspace(const struct sandbox_meta *m, const struct create_args *a,
    char **cause)
{
	struct workspace_opts	wo;
	char			dir[PATH_MAX], img[PATH_MAX], work[PATH_MAX];

	state_path(dir, sizeof(dir), m->id, NULL);
	state_path(img, sizeof(img), m->id, "disk.img");
	state_path(work, sizeof(work), m->id, "work");
	if (disk_image_create(img, m->disk, m->uid, m->uid,
	    cause) == -1 || disk_mount(img, work, cause) == -1)
		return -1;
	/* mkfs's lost+found is not part of the project */
	if (state_path(img, sizeof(img), m->id, "work/lost+found") == 0)
		rmdir(img);
	memset(&wo, 0, sizeof(wo));
	wo.excludes = a->excludes;
	wo.nexcludes = a->nexcludes;
	wo.exclude_secrets = a->exclude_secrets;
	wo.uid = m->uid;
	wo.gid = m->uid;
	return workspace_create(m->source, dir, &wo, cause);
}

/*
 * --ca-cert (m->ca_cert, when set), then the sandgate CA's certificates
 * (sgca, sglen bytes, when not NULL: as proxyctl_ca_cert() read them,
 * never the proxy's file itself): a copy in <sandbox>/ca/extra.crt,
 * readable inside, which m->ca_cert names from then on.
 */
static int
create_ca_copy(struct sandbox_meta *m, const char *sgca, size_t sglen,
    char **cause)
{
	char	dir[PATH_MAX], dst[PATH_MAX + 16];
	FILE	*in = NULL, *out;
	char	buf[8192];
	size_t	n;
	int	rv = -1;

	state_path(dir, sizeof(dir), m->id, "ca");
	snprintf(dst, sizeof(dst), "%s/extra.crt", dir);
	if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
		util_cause(cause, "cannot create '%s': %s", dir,
		    strerror(errno));
		return -1;
	}
	if (m->ca_cert != NULL && (in = fopen(m->ca_cert, "re")) == NULL) {
		util_cause(cause, "--ca-cert '%s': %s", m->ca_cert,
		    strerror(errno));
		return -1;
	}
	if ((out = fopen(dst, "we")) == NULL) {
		util_cause(cause, "cannot write '%s': %s", dst,
		    strerror(errno));
		if (in != NULL)
			fclose(in);
		return -1;
	}
	while (in != NULL && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	if (sgca != NULL) {
		if (in != NULL)
			fputc('\n', out);
		fwrite(sgca, 1, sglen, out);
	}
	if ((in == NULL || !ferror(in)) && fflush(out) == 0 &&
	    fchmod(fileno(out), 0644) == 0)
		rv = 0;
	else
		util_cause(cause, "cannot copy the CA to '%s'", dst);
	if (in != NULL)
		fclose(in);
	fclose(out);
	sandbox_meta_set(&m->ca_cert, dst);
	return rv;
}

/*
 * <sandbox>/ca/bundle.crt: the image's own CA store (read from inside the
 * session container) followed by the extra CA; SSL_CERT_FILE and friends
 * point at it. An image without a store gets the extra CA alone.
 */
static int
create_ca_bundle(struct docker *d, const struct sandbox_meta *m,
    const char *cid, int pid, char **cause)
{
	static char *const	 argv[] = { "cat",
	    "/etc/ssl/certs/ca-certificates.crt", NULL };
	struct exec_opts	 o;
	struct exec_result	 r;
	char			 run[STATE_ID_LEN + 1], path[PATH_MAX + 16];
	char			 buf[8192];
	FILE			*out, *in;
	size_t			 n;
	int			 rv = -1;

	memset(&r, 0, sizeof(r));
	state_new_id(run, "run");
	sandbox_exec_opts(&o, m, argv, run, 30, SG_OUTPUT_CAP_DEFAULT);
	if (exec_run(d, cid, pid, &o, &r, cause) == -1) {
		free(*cause);
		*cause = NULL;
	}
	state_path(path, sizeof(path), m->id, "ca/bundle.crt");
	if ((out = fopen(path, "we")) == NULL ||
	    (in = fopen(m->ca_cert, "re")) == NULL) {
		util_cause(cause, "cannot write '%s': %s", path,
		    strerror(errno));
		if (out != NULL)
			fclose(out);
		exec_result_release(&r);
		return -1;
	}
	if (r.cmd_exit == 0 && r.out != NULL && !r.output_truncated) {
		fwrite(r.out, 1, r.outlen, out);
		if (r.outlen > 0 && r.out[r.outlen - 1] != '\n')
			fputc('\n', out);
	}
	while ((n = fread(buf, 1, sizeof(buf), in)) > 0)
		fwrite(buf, 1, n, out);
	if (fflush(out) == 0 && fchmod(fileno(out), 0644) == 0)
		rv = 0;
	else
		util_cause(cause, "cannot write '%s'", path);
	fclose(in);
	fclose(out);
	exec_result_release(&r);
	return rv;
}

/* Everything after the id exists: folders, disk, copy, container. */
static int
create_build(struct docker *d, struct sandbox_meta *m,
    const struct create_args *a, char **cause)
{
	struct sandbox_mounts	mt;
	char			work[PATH_MAX], *cid = NULL, *sgca = NULL;
	size_t			sglen = 0;
	int			pid, rc;

	if (create_dirs(m->id, cause) == -1 ||
	    sandbox_identity(m, cause) == -1 ||
	    create_workspace(m, a, cause) == -1 ||
	    sandbox_meta_save(m, cause) == -1)
		return -1;
	if (exec_signal_pending()) {
		util_cause(cause, "interrupted");
		return -1;
	}
	state_path(work, sizeof(work), m->id, "work");
	memset(&mt, 0, sizeof(mt));
	mt.work = work;
	if ((mt.probe = probe_mount_path(sandbox_gvisor(m), cause)) == NULL)
		return -1;
	/*
	 * A sandbox behind the proxy trusts the sandgate CA, which the
	 * proxy's tls: terminate entries mint with, besides --ca-cert.
	 */
	if (strcmp(m->network, "proxy") == 0 &&
	    proxyctl_ca_cert(&sgca, &sglen, cause) == -1)
		return -1;
	rc = m->ca_cert != NULL || sgca != NULL ?
	    create_ca_copy(m, sgca, sglen, cause) : 0;
	free(sgca);
	if (rc == -1)
		return -1;
	if (sandbox_container_up(d, m, &mt, "session", &cid, &pid,
	    cause) == -1)
		return -1;
	m->container = cid;
	if (m->ca_cert != NULL && create_ca_bundle(d, m, cid, pid, cause) == -1)
		return -1;
	if (exec_signal_pending()) {
		util_cause(cause, "interrupted");
		return -1;
	}
	return sandbox_meta_save(m, cause);
}

static void
create_print(const struct sandbox_meta *m, int json)
{
	json_t	*o;

	if (!json) {
		printf("%s\n", m->id);
		return;
	}
	o = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s}", "id", m->id,
	    "source", m->source, "image", m->image, "image_id", m->image_id,
	    "container", m->container, "created", m->created);
	if (o != NULL)
		json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
}

static int
cmd_create_exec(struct cmd_args *args)
{
	struct sandbox_meta	 m;
	struct create_args	 a;
	struct docker		*d = NULL;
	struct timespec		 now;
	char			 src[PATH_MAX], ts[UTIL_TS_LEN];
	char			*cause = NULL, *c2 = NULL;
	int			 rv;
	struct stat		 st;

	sandbox_meta_init(&m);
	memset(&a, 0, sizeof(a));
	if ((rv = create_parse(args, &m, &a)) != 0) {
		sandbox_meta_release(&m);
		return rv;
	}
	rv = SG_EXIT_ERROR;
	if (realpath(args->argv[0], src) == NULL || stat(src, &st) == -1 ||
	    !S_ISDIR(st.st_mode)) {
		log_warnx("'%s' is not a folder",
		    args->argv[0]);
		goto out;
	}
	sandbox_meta_set(&m.source, src);
	clock_gettime(CLOCK_REALTIME, &now);
	util_rfc3339(&now, ts);
	sandbox_meta_set(&m.created, ts);
	exec_signals_install();
	if ((d = sandbox_docker()) == NULL)
		goto out;
	if (sandbox_resolve(d, &m, &cause) == -1)
		goto fail;
	state_new_id(m.id, "sbx");
	if (create_build(d, &m, &a, &cause) == -1) {
		if (sandbox_destroy(d, m.id, &c2) != 0) {
			log_warnx("cleanup of %s failed: %s",
			    m.id, c2);
			free(c2);
		}
		goto fail;
	}
	create_print(&m, a.json);
	rv = SG_EXIT_OK;
	goto out;
fail:
	log_warnx("%s", cause);
out:
	free(cause);
	docker_free(d);
	sandbox_meta_release(&m);
	return rv;
}
