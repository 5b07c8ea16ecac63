/* auditkey.c: the logs' checkpoint keys; see auditkey.h. */
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/pem.h>

#include "auditkey.h"
#include "checkpoint.h"
#include "cmd.h"
#include "eventlog.h"
#include "log.h"
#include "proxyctl.h"
#include "state.h"
#include "util.h"

static int	auditkey_show(const char *);
static int	auditkey_rotate_runs(const char *);
static int	auditkey_rotate(const char *, const char *, const char *,
		    uid_t);

int
auditkey_path(const char *logname, char *buf, size_t size)
{
	int	n;

	if (strcmp(logname, "security-events.jsonl") == 0)
		n = snprintf(buf, size, "%s/proxy/keys/" AUDITKEY_PROXY_NAME,
		    state_root());
	else if (strcmp(logname, "runs.jsonl") == 0)
		n = snprintf(buf, size, "%s/keys/" AUDITKEY_RUNS_NAME,
		    state_root());
	else
		return -1;
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

uid_t
auditkey_owner(const char *logname)
{
	if (geteuid() == 0 && strcmp(logname, "security-events.jsonl") == 0)
		return PROXYCTL_UID;
	return geteuid();
}

int
auditkey_ensure(const char *path, uid_t owner, const char *logdir,
    char **cause)
{
	struct stat	 st;
	char		*copy = util_xstrdup(path), *dir = dirname(copy);
	char		*bcopy = util_xstrdup(path);
	int		 dfd = -1, rc = -1;

	if (logdir != NULL && checkpoint_key_outside(path, logdir, cause) == -1)
		goto out;
	if (state_mkdirs(dir, 0700) == -1) {
		util_cause(cause, "cannot create \"%s\": %s", dir,
		    strerror(errno));
		goto out;
	}
	/* Through a descriptor: a symlink planted there is not followed. */
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd == -1) {
		util_cause(cause, "cannot open the key folder \"%s\": %s",
		    dir, errno == ELOOP || errno == ENOTDIR ? "not a folder "
		    "(a symlink?)" : strerror(errno));
		goto out;
	}
	/* The folder is the writer's alone, whoever made it first. */
	if (fchmod(dfd, 0700) == -1 || (owner != geteuid() &&
	    fchown(dfd, owner, owner) == -1)) {
		util_cause(cause, "cannot give \"%s\" to uid %u: %s", dir,
		    (unsigned)owner, strerror(errno));
		goto out;
	}
	/* A key in place is the common case: no key made to be thrown away. */
	if (fstatat(dfd, basename(bcopy), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    S_ISREG(st.st_mode)) {
		rc = 0;
		goto out;
	}
	rc = checkpoint_key_create_at(dfd, basename(bcopy), path,
	    owner == geteuid() ? (uid_t)-1 : owner, owner == geteuid() ?
	    (gid_t)-1 : (gid_t)owner, cause);
	if (rc != -1)
		rc = rc == 0 ? 1 : 0;
out:
	if (dfd != -1)
		close(dfd);
	free(copy);
	free(bcopy);
	return rc;
}

int
auditkey_prepare_proxy(const char *logdir, char **cause)
{
	const char	*log = "security-events.jsonl";
	char		 path[4096];
	int		 rc;

	if (auditkey_path(log, path, sizeof(path)) == -1) {
		util_cause(cause, "state folder path too long");
		return -1;
	}
	if ((rc = auditkey_ensure(path, auditkey_owner(log), logdir,
	    cause)) == 1)
		printf("created the proxy's checkpoint key %s\n"
		    "its public key is %s.pub: keep a copy where the proxy "
		    "cannot write, for `sandgate audit verify --key`\n", path,
		    path);
	return rc == -1 ? -1 : 0;
}

int
auditkey_prepare_token(const char *logdir, char *buf, size_t size,
    char **cause)
{
	int	n, rc;

	n = snprintf(buf, size, "%s/keys/" AUDITKEY_TOKEN_NAME, state_root());
	if (n < 0 || (size_t)n >= size) {
		util_cause(cause, "state folder path too long");
		return -1;
	}
	/* On stderr: `proxy token` prints the token alone on stdout. */
	if ((rc = auditkey_ensure(buf, geteuid(), logdir, cause)) == 1)
		fprintf(stderr, "sandgate: created the sandbox token key %s; "
		    "proxy replicas verify tokens with %s.pub (--token-key)\n",
		    buf, buf);
	return rc == -1 ? -1 : 0;
}

int
auditkey_runs_lock(char **cause)
{
	char	path[4096];

	if (auditkey_path("runs.jsonl", path, sizeof(path)) == -1) {
		util_cause(cause, "state folder path too long");
		return -1;
	}
	if (auditkey_ensure(path, geteuid(), state_record_dir(), cause) == -1)
		return -1;
	return checkpoint_key_lock(path, CHECKPOINT_LOCK_EXCLUSIVE, cause);
}

struct checkpoint *
auditkey_runs_signer(struct eventlog *log)
{
	struct checkpoint_opts	 o;
	struct checkpoint	*ck = NULL;
	char			 path[4096], *cause = NULL;

	memset(&o, 0, sizeof(o));
	o.key_path = path;
	o.lock = CHECKPOINT_LOCK_HELD;
	if (auditkey_path("runs.jsonl", path, sizeof(path)) == -1)
		util_cause(&cause, "state folder path too long");
	else
		ck = checkpoint_new(log, &o, &cause);
	if (ck == NULL) {
		log_warnx("run records are not signed: %s", cause);
		free(cause);
	}
	return ck;
}

int
auditkey_runs_anchored(void)
{
	char		path[4096];
	struct stat	st;

	if (auditkey_path("runs.jsonl", path, sizeof(path)) == -1 ||
	    strlen(path) + sizeof(".anchor") > sizeof(path))
		return 1;	/* not known: as if anchored */
	strcat(path, ".anchor");
	return lstat(path, &st) == 0 || errno != ENOENT;
}

void
auditkey_runs_lost(const char *why)
{
	char	path[4096], *cause = NULL;

	if (auditkey_path("runs.jsonl", path, sizeof(path)) == -1)
		util_cause(&cause, "state folder path too long");
	else if (checkpoint_anchor_lost(path, 1, why, &cause) == 0)
		return;
	log_warnx("the lost run record is not in the anchor either: %s",
	    cause);
	free(cause);
}

void
auditkey_runs_warm(void)
{
	char	path[4096];

	if (auditkey_path("runs.jsonl", path, sizeof(path)) == 0)
		checkpoint_key_warm(path);
}

void
auditkey_runs_close(struct checkpoint *ck)
{
	if (ck == NULL)
		return;
	if (checkpoint_write(ck, "close") == -1)
		log_warnx("run record not signed: %s", checkpoint_error(ck));
	checkpoint_free(ck);
}

/* Print the id and PEM public key of the key at path. 0 or -1. */
static int
auditkey_show(const char *path)
{
	EVP_PKEY	*k;
	char		*cause = NULL, id[CHECKPOINT_KEY_B64 + 1];

	if ((k = checkpoint_pubkey_load(path, &cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
		return -1;
	}
	if (checkpoint_key_id(k, id) == 0) {
		printf("key %s\nid  %s\n", path, id);
		PEM_write_PUBKEY(stdout, k);
	}
	EVP_PKEY_free(k);
	return 0;
}

/*
 * runs.jsonl: the controller is its writer, so introduce the next key
 * now, holding the key's lock exclusive so that no other sandgate signs
 * with the old key meanwhile.
 */
static int
auditkey_rotate_runs(const char *path)
{
	struct eventlog_opts	 lo;
	struct checkpoint_opts	 o;
	struct eventlog		*log;
	struct checkpoint	*ck = NULL;
	char			*cause = NULL;
	int			 rc = -1, lockfd;

	memset(&lo, 0, sizeof(lo));
	lo.shared = lo.excluded = 1;
	memset(&o, 0, sizeof(o));
	o.key_path = path;
	o.lock = CHECKPOINT_LOCK_HELD;
	log = NULL;
	if ((lockfd = checkpoint_key_lock(path, CHECKPOINT_LOCK_EXCLUSIVE,
	    &cause)) == -1 || (log = eventlog_open(state_record_dir(),
	    "runs.jsonl", &lo, &cause)) == NULL ||
	    (ck = checkpoint_new(log, &o, &cause)) == NULL) {
		log_warnx("%s", cause);
		goto out;
	}
	if (checkpoint_write(ck, "close") == -1) {
		log_warnx("%s", checkpoint_error(ck));
		goto out;
	}
	printf("runs.jsonl: key %s signs from seq %lld on\n",
	    checkpoint_key(ck), eventlog_seq(log));
	rc = 0;
out:
	free(cause);
	checkpoint_free(ck);
	eventlog_close(log);
	if (lockfd != -1)
		close(lockfd);
	return rc;
}

/* `audit key rotate`: the next key, and for runs.jsonl its introduction. */
static int
auditkey_rotate(const char *path, const char *logname, const char *logdir,
    uid_t owner)
{
	char	*next, *cause = NULL;
	int	 rc, made;

	if (access(path, F_OK) == -1) {
		log_warnx("no key at %s to rotate from; `sandgate "
		    "audit key create` makes one", path);
		return SG_EXIT_FAIL;
	}
	util_xasprintf(&next, "%s.next", path);
	if ((made = auditkey_ensure(next, owner, logdir, &cause)) == -1) {
		log_warnx("%s", cause);
		rc = SG_EXIT_ERROR;
		goto out;
	}
	printf("%s key %s.pub: keep a copy where the writer cannot write\n",
	    made == 1 ? "new" : "waiting", next);
	rc = SG_EXIT_OK;
	if (strcmp(logname, "runs.jsonl") == 0) {
		if (auditkey_rotate_runs(path) == -1)
			rc = SG_EXIT_ERROR;
	} else
		printf("the writer introduces it with a checkpoint its current "
		    "key signs, at its next checkpoint (the proxy: within its "
		    "--checkpoint-interval), then deletes the old key\n");
out:
	free(cause);
	free(next);
	return rc;
}

int
auditkey_command(const char *verb, const char *path, const char *logname,
    const char *logdir, long long owner)
{
	char		 def[4096], next[4096 + 8], *cause = NULL;
	struct stat	 st;
	uid_t		 uid = geteuid();
	int		 rc;

	if (path == NULL && auditkey_path(logname, def, sizeof(def)) == -1) {
		log_warnx("no default key for '%s': give the "
		    "key's path", logname);
		return SG_EXIT_USAGE;
	}
	/* The writer's uid: the default key's, or the key rotated from. */
	if (path == NULL) {
		path = def;
		uid = auditkey_owner(logname);
	}
	if (strcmp(verb, "rotate") == 0 && stat(path, &st) == 0)
		uid = st.st_uid;
	if (owner >= 0)
		uid = (uid_t)owner;
	if (strcmp(verb, "rotate") == 0)
		return auditkey_rotate(path, logname, logdir, uid);
	if (strcmp(verb, "show") == 0) {
		if (auditkey_show(path) == -1)
			return SG_EXIT_ERROR;
		snprintf(next, sizeof(next), "%s.next", path);
		if (access(next, F_OK) == 0) {
			printf("waiting to be introduced by the writer:\n");
			return auditkey_show(next) == -1 ? SG_EXIT_ERROR :
			    SG_EXIT_OK;
		}
		return SG_EXIT_OK;
	}
	if (strcmp(verb, "create") != 0) {
		log_warnx("audit key: unknown verb '%s' (want "
		    "create, rotate or show)", verb);
		return SG_EXIT_USAGE;
	}
	if ((rc = auditkey_ensure(path, uid, logdir, &cause)) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	if (rc == 0) {
		log_warnx("a key exists at %s already; `sandgate "
		    "audit key rotate` replaces it", path);
		return SG_EXIT_FAIL;
	}
	printf("new key %s (uid %u, mode 0600)\npublic key %s.pub: keep a "
	    "copy where the writer cannot write, for `sandgate audit verify "
	    "--key`\n", path, (unsigned)uid, path);
	return SG_EXIT_OK;
}
