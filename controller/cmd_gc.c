/*
 * cmd_gc.c: `sandgate gc`: removes what a crash left behind, in order:
 * Only containers labelled sandgate.state=<this state root> are looked at,
 * so a gc with another SANDGATE_STATE never touches this one's sandboxes.
 *   1. containers labelled sandgate.sandbox=<id> whose state folder is gone
 *   2. state folders (sandboxes/<id>) that no container belongs to: their
 *      disk is unmounted, then the folder is deleted; a sandbox whose
 *      create or run was killed (its folder has containers but no
 *      meta.json, or no session container recorded, or is a run's) is
 *      removed as discard would; of a live sandbox, the temp files that a
 *      killed apply left in its source tree are removed
 *   3. loop mounts of images under the state root whose sandbox is gone
 *   4. run markers (runs/<run>.active) of live sandboxes whose sandgate
 *      process is gone (a killed exec), their fresh containers whose
 *      sandgate process is gone (a killed exec --fresh), and uid claims
 *      (sandbox.h, SANDBOX_UID_DIR) whose sandbox folder is gone
 *   5. unregisters a proxy replica did not confirm when their sandbox
 *      was removed (unregpend.h): sent again, forgotten once confirmed
 * dockerd finishes a container create whose client was killed, so a folder
 * without a container whose create request went out less than
 * GC_SETTLE_SECS ago is judged only once that container appeared or the
 * time has passed. dockerd lists a container before its create has
 * finished (inspect and remove find it only at the end, a remove before
 * then answers 404 and the create completes after it), so a dead
 * sandbox's containers are removed only once inspect finds every one.
 * A folder whose lock another process holds (a create in progress) is
 * left alone; one without a lock file is judged under the create gate
 * (state.h), which a create holds from its folder's mkdir to its lock. Idempotent: a second run finds nothing. Docker must answer:
 * without the container list no folder can be judged orphaned.
 */
#include <sys/file.h>
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
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
#include "execend.h"
#include "log.h"
#include "proxyctl.h"
#include "sandbox.h"
#include "state.h"
#include "unregpend.h"
#include "util.h"
#include "workspace.h"

#define GC_LABEL	"sandgate.sandbox"
#define GC_LABEL_STATE	"sandgate.state"
#define GC_SETTLE_SECS	15	/* how long dockerd may still finish a create */
#define GC_POLL_US	200000
#define GC_FTW_FDS	32

struct gc {
	struct docker	*docker;
	json_t		*containers;	/* list entries with GC_LABEL */
	int		 dry;
	int		 acted;		/* things removed (or that would be) */
	int		 errors;
};

static const char	*gc_label(json_t *);
static int		 gc_ours(json_t *);
static int		 gc_has_container(struct gc *, const char *);
static int		 gc_folder_exists(const char *);
static int		 gc_settle(struct gc *, const char *);
static int		 gc_created_once(struct gc *, const char *);
static int		 gc_created(struct gc *, const char *);
static void		 gc_containers(struct gc *);
static int		 gc_in_use(const char *);
static int		 gc_chmod_cb(const char *, const struct stat *, int,
			    struct FTW *);
static int		 gc_rm_cb(const char *, const struct stat *, int,
			    struct FTW *);
static int		 gc_rmtree(const char *);
static int		 gc_umount_under(struct gc *, const char *);
static void		 gc_folder(struct gc *, const char *);
static void		 gc_sandbox(struct gc *, const char *);
static void		 gc_folders(struct gc *);
static int		 gc_mount_stale(struct gc *, const char *);
static void		 gc_mounts(struct gc *);
static void		 gc_markers(struct gc *, const char *);
static void		 gc_fresh(struct gc *, const char *);
static void		 gc_uids(struct gc *);
static void		 gc_unregister_cb(const char *, const char *, void *);
static void		 gc_execend_cb(const char *, const char *,
			    const char *, void *);
static int		 cmd_gc_exec(struct cmd_args *);

static const struct option cmd_gc_options[] = {
	{ "dry-run", no_argument, NULL, 'n' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_gc = {
	.name = "gc",
	.usage = "[--dry-run]",
	.summary = "remove what a crash left behind",
	.help = "Removes the containers, state folders, disk mounts and apply "
	    "temporary files that a crash left behind (--dry-run: only lists "
	    "them).",
	.options = cmd_gc_options,
	.shortopts = "n",
	.args_max = 0,
	.exec = cmd_gc_exec,
};

/* The sandbox id label of a container list entry, or NULL. */
static const char *
gc_label(json_t *c)
{
	return json_string_value(json_object_get(json_object_get(c,
	    "Labels"), GC_LABEL));
}

/* 1 if the container belongs to this state root (its sandgate.state). */
static int
gc_ours(json_t *c)
{
	const char	*root;
	char		 a[4096], b[4096];

	root = json_string_value(json_object_get(json_object_get(c,
	    "Labels"), GC_LABEL_STATE));
	if (root == NULL)
		return 0;
	if (strcmp(root, state_root()) == 0)
		return 1;
	return realpath(root, a) != NULL && realpath(state_root(), b) != NULL &&
	    strcmp(a, b) == 0;
}

static int
gc_has_container(struct gc *g, const char *id)
{
	const char	*v;
	json_t		*c;
	size_t		 i;

	json_array_foreach(g->containers, i, c) {
		if ((v = gc_label(c)) != NULL && strcmp(v, id) == 0 &&
		    gc_ours(c))
			return 1;
	}
	return 0;
}

/* 1 if sandboxes/<id> exists, 0 if not, -1 if that can't be told. */
static int
gc_folder_exists(const char *id)
{
	struct stat	st;
	char		path[4096];

	if (state_path(path, sizeof(path), id, NULL) == -1)
		return -1;
	if (lstat(path, &st) == 0)
		return 1;
	return errno == ENOENT ? 0 : -1;
}

/*
 * A folder without a container whose create request went out less than
 * GC_SETTLE_SECS ago (SANDBOX_PENDING's time): dockerd finishes a create
 * whose client was killed, so wait, polling, for that container. 1 when it
 * appeared (added to g->containers), 0 when none can come any more, -1
 * when Docker stopped answering.
 */
static int
gc_settle(struct gc *g, const char *id)
{
	struct stat	 st;
	json_t		*list, *c;
	char		 dir[4096], path[4200], *cause = NULL;
	size_t		 i;
	int		 found = 0;

	if (state_path(dir, sizeof(dir), id, NULL) == -1 || gc_in_use(dir))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, SANDBOX_PENDING);
	if (lstat(path, &st) == -1 ||
	    time(NULL) - st.st_mtime >= GC_SETTLE_SECS)
		return 0;
	log_warnx("%s: a container create was cut short "
	    "%lld s ago; waiting up to %d s for dockerd to finish or drop "
	    "it", id, (long long)(time(NULL) - st.st_mtime),
	    GC_SETTLE_SECS);
	while (!found && time(NULL) - st.st_mtime < GC_SETTLE_SECS) {
		usleep(GC_POLL_US);
		if (docker_container_list(g->docker, GC_LABEL, id, &list,
		    &cause) == -1) {
			log_warnx("%s: %s; left alone", id,
			    cause);
			free(cause);
			g->errors++;
			return -1;
		}
		json_array_foreach(list, i, c) {
			if (gc_ours(c)) {
				json_array_append(g->containers, c);
				found = 1;
			}
		}
		json_decref(list);
	}
	return found;
}

/*
 * One look at sandbox id's containers: 1 when inspect finds every one that
 * dockerd lists (or it lists none), 0 when one can't be inspected yet, -1
 * when Docker stopped answering (said).
 */
static int
gc_created_once(struct gc *g, const char *id)
{
	struct docker_cinfo	 ci;
	json_t			*list, *c;
	const char		*cid;
	char			*cause = NULL;
	size_t			 i;
	int			 rv = 1;

	if (docker_container_list(g->docker, GC_LABEL, id, &list,
	    &cause) == -1)
		rv = -1;
	else {
		json_array_foreach(list, i, c) {
			cid = json_string_value(json_object_get(c, "Id"));
			if (rv != 1 || cid == NULL || !gc_ours(c) ||
			    docker_container_inspect(g->docker, cid, &ci,
			    &cause) == 0)
				continue;
			rv = errno == ENOENT ? 0 : -1;
		}
		json_decref(list);
	}
	if (rv == -1) {
		log_warnx("%s: %s; left alone", id, cause);
		g->errors++;
	}
	free(cause);
	return rv;
}

/*
 * 1 when no create of a container of sandbox id is still under way, so
 * that a remove is final: dockerd writes a container to its list
 * mid-create, and takes it into the store that inspect and remove read
 * only at the end; until then a remove answers 404 and the create still
 * completes. Polls for GC_SETTLE_SECS at most: 0 when a listed container
 * still can't be inspected then, -1 when Docker stopped answering.
 */
static int
gc_created(struct gc *g, const char *id)
{
	time_t	end = time(NULL) + GC_SETTLE_SECS;
	int	rv;

	while ((rv = gc_created_once(g, id)) == 0 && time(NULL) < end)
		usleep(GC_POLL_US);
	return rv;
}

/* Step 1: containers whose sandbox folder is gone. */
static void
gc_containers(struct gc *g)
{
	const char	*id, *cid;
	char		*cause = NULL;
	json_t		*c;
	size_t		 i;

	json_array_foreach(g->containers, i, c) {
		id = gc_label(c);
		cid = json_string_value(json_object_get(c, "Id"));
		if (id == NULL || cid == NULL || state_valid_id(id) == -1 ||
		    !gc_ours(c) || gc_folder_exists(id) != 0)
			continue;
		g->acted++;
		if (g->dry) {
			printf("would remove container %.12s (sandbox %s: "
			    "state folder gone)\n", cid, id);
			continue;
		}
		if (docker_container_remove(g->docker, cid, &cause) == -1) {
			log_warnx("cannot remove container "
			    "%.12s: %s", cid, cause);
			free(cause);
			cause = NULL;
			g->errors++;
			continue;
		}
		printf("removed container %.12s (sandbox %s: state folder "
		    "gone)\n", cid, id);
	}
}

/*
 * 1 when another process may be using the folder: it holds the lock. A
 * folder without a lock file is looked at again under the create gate
 * (state.h): a create makes the folder and its lock under the gate, so a
 * folder still without one once gc holds the gate was left by a create
 * that died between the two.
 */
static int
gc_in_use(const char *dir)
{
	char	path[4096];
	int	fd, busy, gate;

	if ((size_t)snprintf(path, sizeof(path), "%s/lock", dir) >=
	    sizeof(path))
		return 1;
	if ((fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		if (errno != ENOENT || (gate = state_gate(1)) == -1)
			return 1;
		fd = open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		state_unlock(gate);
		if (fd == -1)
			return errno != ENOENT;
	}
	busy = flock(fd, LOCK_EX | LOCK_NB) == -1;
	close(fd);
	return busy;
}

/* Pre-pass: make every folder writable so a read-only snapshot can go. */
static int
gc_chmod_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	if (flag == FTW_D)
		chmod(path, (st->st_mode & 07777) | S_IRWXU);
	return 0;
}

static int
gc_rm_cb(const char *path, const struct stat *st, int flag,
    struct FTW *ftw)
{
	int	rc;

	rc = flag == FTW_DP ? rmdir(path) : unlink(path);
	if (rc == -1 && errno != ENOENT) {
		log_warnx("cannot remove '%s': %s", path,
		    strerror(errno));
		return -1;
	}
	return 0;
}

/* rm -rf that stays on one filesystem and never follows symlinks. */
static int
gc_rmtree(const char *dir)
{
	int	flags = FTW_PHYS | FTW_MOUNT;

	if (nftw(dir, gc_chmod_cb, GC_FTW_FDS, flags) == -1 && errno != ENOENT)
		return -1;
	if (nftw(dir, gc_rm_cb, GC_FTW_FDS, flags | FTW_DEPTH) == -1 &&
	    errno != ENOENT)
		return -1;
	return 0;
}

/* Unmount every sandgate loop mount at or below dir; -1 if one stays. */
static int
gc_umount_under(struct gc *g, const char *dir)
{
	struct disk_mount_info	*m;
	size_t			 n, i, len;
	char			*cause = NULL, real[4096];
	int			 rc = 0;

	/* Mount points in mountinfo are canonical paths. */
	if (realpath(dir, real) == NULL)
		return errno == ENOENT ? 0 : -1;
	dir = real;
	len = strlen(dir);
	if (disk_list_mounts(state_root(), &m, &n, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return -1;
	}
	for (i = n; i-- > 0;) {
		if (strncmp(m[i].dir, dir, len) != 0 ||
		    (m[i].dir[len] != '/' && m[i].dir[len] != '\0'))
			continue;
		if (disk_umount(m[i].dir, &cause) == -1) {
			log_warnx("%s", cause);
			free(cause);
			cause = NULL;
			rc = -1;
		}
	}
	disk_mounts_free(m, n);
	return rc;
}

/* Step 2 for one folder: unmount its disk, delete it. */
static void
gc_folder(struct gc *g, const char *id)
{
	char	dir[4096], *cause = NULL;
	int	left;

	if (state_path(dir, sizeof(dir), id, NULL) == -1 || gc_in_use(dir))
		return;
	g->acted++;
	if (g->dry) {
		printf("would remove sandbox folder %s (no container)\n", id);
		return;
	}
	if (workspace_apply_cleanup(dir, NULL, &left, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		g->errors++;
		return;
	}
	/*
	 * Unregistered first, from the replicas its folder names (atk1921h
	 * F5): not confirmed, it is kept for them and the folder goes.
	 */
	if (sandbox_unregister(id, &cause) != 0) {
		log_warnx("%s: removed, but %s", id, cause);
		free(cause);
		g->errors++;
	}
	if (gc_umount_under(g, dir) == -1 || gc_rmtree(dir) == -1) {
		log_warnx("cannot remove sandbox folder '%s'",
		    dir);
		g->errors++;
		return;
	}
	printf("removed sandbox folder %s (no container)\n", id);
}

/*
 * Step 4: the run markers of a live sandbox whose owner is gone, and
 * their proxy credentials.
 */
static void
gc_markers(struct gc *g, const char *id)
{
	char	runs[4096];
	int	n;

	if (state_path(runs, sizeof(runs), id, "runs") == -1 ||
	    (n = exec_active_sweep(runs, g->dry, g->dry ? NULL :
	    proxyctl_exec_gone, (void *)id)) <= 0)
		return;
	g->acted += n;
	printf("%s %d run marker%s of %s whose sandgate process is gone\n",
	    g->dry ? "would remove" : "removed", n, n == 1 ? "" : "s", id);
}

/*
 * Step 4: the fresh containers (exec --fresh) of a live sandbox whose
 * sandgate process is gone, and their proxy registrations.
 */
static void
gc_fresh(struct gc *g, const char *id)
{
	char	*cause = NULL;
	int	 n;

	if ((n = sandbox_fresh_sweep(g->docker, id,
	    g->dry ? SANDBOX_SWEEP_DRY : 0, &cause)) == -1) {
		log_warnx("cannot list the containers of %s: %s", id, cause);
		free(cause);
		g->errors++;
		return;
	}
	if (n == 0)
		return;
	g->acted += n;
	printf("%s %d fresh container%s of %s whose sandgate process is "
	    "gone\n", g->dry ? "would remove" : "removed", n, n == 1 ? "" :
	    "s", id);
}

/* Step 4: uid claims whose sandbox folder is gone (any state root). */
/* An unregister kept from a removal, sent again (why: still owed). */
static void
gc_unregister_cb(const char *id, const char *why, void *arg)
{
	struct gc	*g = arg;

	g->acted++;
	if (why == NULL)
		printf("unregistered removed sandbox %s from the proxy\n", id);
	else if (g->dry)
		printf("would send again the unregister of removed sandbox "
		    "%s\n", id);
	else {
		log_warnx("%s: removed, but its unregister is still owed: %s",
		    id, why);
		g->errors++;
	}
}

/* The end of an exec credential kept owed, sent again (execend.h). */
static void
gc_execend_cb(const char *run, const char *sandbox, const char *why,
    void *arg)
{
	struct gc	*g = arg;

	g->acted++;
	if (why == NULL)
		execend_report(run, sandbox, why, NULL);
	else if (g->dry)
		printf("would send again the end of the proxy credential of "
		    "%s (%s)\n", run, sandbox);
	else {
		execend_report(run, sandbox, why, NULL);
		g->errors++;
	}
}

static void
gc_uids(struct gc *g)
{
	int	n;

	if ((n = sandbox_uid_sweep(g->dry)) == -1) {
		log_warnx("cannot read the uid claims: %s",
		    strerror(errno));
		g->errors++;
		return;
	}
	if (n == 0)
		return;
	g->acted += n;
	printf("%s %d uid claim%s whose sandbox is gone\n",
	    g->dry ? "would remove" : "removed", n, n == 1 ? "" : "s");
}

/* Step 2 for a folder with containers; see the top of the file. */
static void
gc_sandbox(struct gc *g, const char *id)
{
	struct sandbox_meta	 m;
	struct stat		 st;
	char			 dir[4096], path[4200], *cause = NULL;
	int			 dead, left, ok;

	if (state_path(dir, sizeof(dir), id, NULL) == -1 || gc_in_use(dir))
		return;
	if (sandbox_meta_load(id, &m, &cause) == -1) {	/* inits m */
		dead = errno == ENOENT;	/* malformed: left for a person */
		free(cause);
		cause = NULL;
	} else
		dead = m.ephemeral || m.container == NULL;
	sandbox_meta_release(&m);
	snprintf(path, sizeof(path), "%s/apply.pending", dir);
	if (!dead && lstat(path, &st) == -1)
		return;
	if (dead && !g->dry && (ok = gc_created(g, id)) != 1) {
		if (ok == 0) {
			log_warnx("%s: dockerd is still creating a container of "
			    "it after %d s; left alone, run gc again", id,
			    GC_SETTLE_SECS);
			g->errors++;
		}
		return;
	}
	g->acted++;
	if (g->dry) {
		printf(dead ? "would remove sandbox %s (its create or run was "
		    "interrupted)\n" : "would remove what an interrupted apply "
		    "of %s left in its source tree\n", id);
		return;
	}
	if (dead ? sandbox_destroy(g->docker, id, &cause) :
	    workspace_apply_cleanup(dir, NULL, &left, &cause)) {
		log_warnx("%s: %s", id, cause);
		free(cause);
		g->errors++;
	} else if (dead)
		printf("removed sandbox %s (its create or run was "
		    "interrupted)\n", id);
	else
		printf("removed %d temporary file%s that an interrupted apply "
		    "of %s left in its source tree\n", left, left == 1 ? "" :
		    "s", id);
}

/* Step 2: every sandbox folder. */
static void
gc_folders(struct gc *g)
{
	char		 path[4096];
	struct dirent	*de;
	DIR		*d;
	int		 late;

	snprintf(path, sizeof(path), "%s/sandboxes", state_root());
	d = opendir(path);
	if (d == NULL) {
		if (errno != ENOENT) {
			log_warnx("cannot read '%s': %s",
			    path, strerror(errno));
			g->errors++;
		}
		return;
	}
	while ((de = readdir(d)) != NULL) {
		if (state_valid_id(de->d_name) == -1)
			continue;
		if (gc_has_container(g, de->d_name)) {
			gc_markers(g, de->d_name);
			gc_fresh(g, de->d_name);
			gc_sandbox(g, de->d_name);
		}
		else if ((late = gc_settle(g, de->d_name)) == 1)
			gc_sandbox(g, de->d_name);
		else if (late == 0)
			gc_folder(g, de->d_name);
	}
	closedir(d);
}

/*
 * A loop mount is stale when its image is not <root>/sandboxes/<id>/...
 * of a sandbox that still has both its folder and a container.
 */
static int
gc_mount_stale(struct gc *g, const char *backing)
{
	char		 prefix[4096], real[4096], id[STATE_ID_LEN + 1];
	size_t		 len;

	if (realpath(state_root(), real) == NULL)
		return 0;
	len = (size_t)snprintf(prefix, sizeof(prefix), "%s/sandboxes/", real);
	if (len >= sizeof(prefix) || strncmp(backing, prefix, len) != 0)
		return 1;
	util_strlcpy(id, backing + len, sizeof(id));
	if (state_valid_id(id) == -1 || backing[len + STATE_ID_LEN] != '/')
		return 1;
	return gc_folder_exists(id) != 1 || !gc_has_container(g, id);
}

/* Step 3: loop mounts left by a crash between mount and create. */
static void
gc_mounts(struct gc *g)
{
	struct disk_mount_info	*m;
	size_t			 n, i;
	char			*cause = NULL;

	if (disk_list_mounts(state_root(), &m, &n, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		g->errors++;
		return;
	}
	for (i = n; i-- > 0;) {
		if (!gc_mount_stale(g, m[i].backing))
			continue;
		g->acted++;
		if (g->dry)
			printf("would unmount %s (%s, image %s)\n", m[i].dir,
			    m[i].device, m[i].backing);
		else if (disk_umount(m[i].dir, &cause) == -1) {
			log_warnx("%s", cause);
			free(cause);
			cause = NULL;
			g->errors++;
		} else
			printf("unmounted %s (%s, image %s)\n", m[i].dir,
			    m[i].device, m[i].backing);
	}
	disk_mounts_free(m, n);
}

static int
cmd_gc_exec(struct cmd_args *args)
{
	struct gc	 g;
	char		*cause = NULL;

	memset(&g, 0, sizeof(g));
	g.dry = args->nopts > 0;	/* --dry-run */
	if ((g.docker = docker_new(&cause)) == NULL ||
	    docker_container_list(g.docker, GC_LABEL, NULL, &g.containers,
	    &cause) == -1) {
		log_warnx("gc needs the container list: %s",
		    cause);
		free(cause);
		docker_free(g.docker);
		return SG_EXIT_ERROR;
	}
	gc_containers(&g);
	gc_folders(&g);
	gc_mounts(&g);
	gc_uids(&g);
	(void)unregpend_retry(g.dry, gc_unregister_cb, &g);
	(void)execend_retry(NULL, g.dry, gc_execend_cb, &g);
	if (g.acted == 0)
		printf("nothing to remove\n");
	json_decref(g.containers);
	docker_free(g.docker);
	return g.errors ? SG_EXIT_ERROR : SG_EXIT_OK;
}
