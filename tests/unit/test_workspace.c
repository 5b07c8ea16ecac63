/*
 * test_workspace.c: copy + manifest, refusals, excludes, secrets, odd
 * names, diff classification and apply's refusals and writes, on
 * temporary folders.
 */
#include <sys/resource.h>
#include <sys/stat.h>

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "util.h"

#include "workspace.h"
#include "workspace_int.h"

/* SHA-256 of "hello\n". */
#define HELLO_SHA \
	"5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"

struct fixture {
	char	root[64];	/* holds src/ and sbx/ */
	char	src[128];
	char	sbx[128];
};

static void
putn(const char *dir, const char *rel, const char *content, size_t len,
    mode_t mode)
{
	char	path[1024];
	int	fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	assert_true(fd != -1);
	assert_int_equal(write(fd, content, len), (ssize_t)len);
	assert_int_equal(fchmod(fd, mode), 0);
	close(fd);
}

static void
put(const char *dir, const char *rel, const char *content, mode_t mode)
{
	putn(dir, rel, content, strlen(content), mode);
}

static char *
get(const char *dir, const char *rel)
{
	static char	buf[4096];
	char		path[1024];
	ssize_t		n;
	int		fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if ((fd = open(path, O_RDONLY | O_NOFOLLOW)) == -1)
		return NULL;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n < 0 ? 0 : n] = '\0';
	return buf;
}

static void
mk(const char *dir, const char *rel)
{
	char	path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	assert_int_equal(mkdir(path, 0755), 0);
}

static mode_t
mode_of(const char *dir, const char *rel)
{
	struct stat	st;
	char		path[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (lstat(path, &st) == -1)
		return (mode_t)-1;
	return st.st_mode & 07777;
}

static int
setup(void **state)
{
	struct fixture	*f = calloc(1, sizeof(*f));

	snprintf(f->root, sizeof(f->root), "/tmp/sg-ws-test-" UTIL_MKTEMP_SUFFIX);
	if (mkdtemp(f->root) == NULL)
		return -1;
	snprintf(f->src, sizeof(f->src), "%s/src", f->root);
	snprintf(f->sbx, sizeof(f->sbx), "%s/sbx", f->root);
	mkdir(f->src, 0755);
	mkdir(f->sbx, 0700);
	*state = f;
	return 0;
}

static int
teardown(void **state)
{
	struct fixture	*f = *state;
	char		 cmd[256];

	snprintf(cmd, sizeof(cmd), "chmod -R u+w '%s' && rm -rf '%s'",
	    f->root, f->root);
	if (system(cmd) != 0)
		return -1;
	free(f);
	return 0;
}

/* A diff with the texts staged and no size limit beyond 1 GiB. */
static struct workspace_diff *
wdiff(struct fixture *f, struct workspace_manifest *m, char **cause)
{
	struct workspace_diff_opts	o;

	memset(&o, 0, sizeof(o));
	o.stage = 1;
	o.size_max = 1ll << 30;
	return workspace_diff(f->sbx, m, &o, cause);
}

/* The text of one delta (escaped); 0 when shown. */
static int
dtext(struct fixture *f, const struct workspace_diff *d,
    const struct workspace_delta *x, char **text, char **cause)
{
	size_t	len = 0;

	return workspace_delta_text(f->sbx, d, x, 0, text, &len, NULL,
	    cause) == WORKSPACE_TEXT_SHOWN ? 0 : -1;
}

/* Apply one path with a 1 GiB limit. */
static enum workspace_apply_result
apply1(struct fixture *f, struct workspace_manifest *m, const char *p,
    int dry, const struct workspace_delta *expect, char **cause)
{
	struct workspace_apply_opts	o;

	memset(&o, 0, sizeof(o));
	o.dry_run = dry;
	o.size_max = 1ll << 30;
	o.expect = expect;
	return workspace_apply_path(f->sbx, f->src, m, p, &o, cause);
}

/* Create with default options (no chown); returns 0/-1 and the cause. */
static int
create(struct fixture *f, const struct workspace_opts *o0, char **cause)
{
	struct workspace_opts	o;

	memset(&o, 0, sizeof(o));
	if (o0 != NULL)
		o = *o0;
	o.uid = (uid_t)-1;
	o.gid = (gid_t)-1;
	*cause = NULL;
	return workspace_create(f->src, f->sbx, &o, cause);
}

static void
test_copy_manifest(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	const struct workspace_file	*e;
	char				 snap[256], work[256], *cause;

	put(f->src, "a.txt", "hello\n", 0644);
	put(f->src, "run.sh", "#!/bin/sh\necho hi\n", 0755);
	mk(f->src, "dir");
	mk(f->src, "empty");
	putn(f->src, "dir/b.bin", "x\001\000y", 4, 0600);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(snap, sizeof(snap), "%s/snapshot", f->sbx);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	assert_int_equal(mode_of(snap, "a.txt"), 0444);
	assert_int_equal(mode_of(snap, "dir"), 0555);
	assert_int_equal(mode_of(work, "run.sh"), 0755);
	assert_int_equal(mode_of(work, "dir/b.bin"), 0600);
	assert_int_equal(mode_of(work, "empty"), 0755);
	assert_string_equal(get(work, "a.txt"), "hello\n");
	assert_string_equal(get(snap, "run.sh"), "#!/bin/sh\necho hi\n");
	m = workspace_manifest_load(f->sbx, &cause);
	assert_non_null(m);
	assert_int_equal(workspace_manifest_count(m), 3);
	e = workspace_manifest_find(m, "a.txt");
	assert_non_null(e);
	assert_string_equal(e->sha256, HELLO_SHA);
	assert_int_equal(e->size, 6);
	assert_int_equal(e->mode, 0644);
	e = workspace_manifest_find(m, "dir/b.bin");
	assert_non_null(e);
	assert_int_equal(e->size, 4);
	assert_int_equal(workspace_manifest_find(m, "run.sh")->mode, 0755);
	workspace_manifest_free(m);
}

static void
test_refuse_symlink(void **state)
{
	struct fixture	*f = *state;
	char		 path[256], *cause;

	mk(f->src, "src");
	put(f->src, "src/ok.c", "int x;\n", 0644);
	snprintf(path, sizeof(path), "%s/src/link", f->src);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	assert_int_equal(create(f, NULL, &cause), -1);
	assert_non_null(cause);
	assert_string_equal(cause, "refusing to copy symlink 'src/link' "
	    "(symlinks are never copied)");
	free(cause);
}

static void
test_refuse_fifo(void **state)
{
	struct fixture	*f = *state;
	char		 path[256], *cause;

	snprintf(path, sizeof(path), "%s/pipe", f->src);
	assert_int_equal(mkfifo(path, 0600), 0);
	assert_int_equal(create(f, NULL, &cause), -1);
	assert_non_null(strstr(cause, "refusing to copy FIFO 'pipe'"));
	free(cause);
}

static void
test_excludes(void **state)
{
	static const char *const pats[] = { "build", "*.log" };
	struct fixture			*f = *state;
	struct workspace_opts		 o;
	struct workspace_manifest	*m;
	char				 work[256], *cause;

	mk(f->src, ".git");
	put(f->src, ".git/config", "[core]\n", 0644);
	mk(f->src, "node_modules");
	put(f->src, "node_modules/x.js", "x\n", 0644);
	mk(f->src, "pkg");
	mk(f->src, "pkg/__pycache__");
	put(f->src, "pkg/__pycache__/m.pyc", "c\n", 0644);
	mk(f->src, ".venv");
	mk(f->src, "build");
	put(f->src, "build/out.o", "o\n", 0644);
	put(f->src, "pkg/run.log", "l\n", 0644);
	put(f->src, "pkg/m.py", "p\n", 0644);
	memset(&o, 0, sizeof(o));
	o.excludes = pats;
	o.nexcludes = 2;
	assert_int_equal(create(f, &o, &cause), 0);
	m = workspace_manifest_load(f->sbx, &cause);
	assert_non_null(m);
	assert_int_equal(workspace_manifest_count(m), 1);
	assert_string_equal(workspace_manifest_at(m, 0)->path, "pkg/m.py");
	assert_true(workspace_manifest_excluded(m, "build/new.o", 0));
	assert_true(workspace_manifest_excluded(m, "a/node_modules/b", 0));
	assert_false(workspace_manifest_excluded(m, "src/build.c", 0));
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	assert_int_equal(mode_of(work, ".git"), (mode_t)-1);
	assert_int_equal(mode_of(work, "build"), (mode_t)-1);
	workspace_manifest_free(m);
}

static void
test_secrets(void **state)
{
	struct fixture			*f = *state;
	struct workspace_opts		 o;
	struct workspace_manifest	*m;
	char				 buf[2048], *cause;
	FILE				*w;
	size_t				 n;

	put(f->src, ".env", "TOKEN=1\n", 0600);
	mk(f->src, ".aws");
	put(f->src, ".aws/credentials", "k\n", 0600);
	put(f->src, "server.pem", "pem\n", 0600);
	put(f->src, "id_ed25519", "key\n", 0600);
	put(f->src, "main.c", "int main;\n", 0644);
	memset(&o, 0, sizeof(o));
	w = tmpfile();
	o.warnf = w;
	assert_int_equal(create(f, &o, &cause), 0);
	rewind(w);
	n = fread(buf, 1, sizeof(buf) - 1, w);
	buf[n] = '\0';
	assert_non_null(strstr(buf, "'.env'"));
	assert_non_null(strstr(buf, "'.aws/credentials'"));
	assert_non_null(strstr(buf, "'server.pem'"));
	assert_non_null(strstr(buf, "'id_ed25519'"));
	assert_null(strstr(buf, "main.c"));
	fclose(w);
	m = workspace_manifest_load(f->sbx, &cause);
	assert_int_equal(workspace_manifest_count(m), 5);
	workspace_manifest_free(m);
	/* again, leaving them out */
	assert_int_equal(workspace_remove(f->sbx, &cause), 0);
	o.exclude_secrets = 1;
	o.warnf = w = tmpfile();
	assert_int_equal(create(f, &o, &cause), 0);
	fclose(w);
	m = workspace_manifest_load(f->sbx, &cause);
	assert_int_equal(workspace_manifest_count(m), 1);
	assert_non_null(workspace_manifest_find(m, "main.c"));
	workspace_manifest_free(m);
	assert_true(workspace_is_secret_name(".env.local"));
	assert_true(workspace_is_secret_name("a/id_rsa.pub"));
	assert_false(workspace_is_secret_name("environment.c"));
}

static void
test_odd_names(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_diff		*d;
	char				 longname[256], *cause;

	memset(longname, 'n', 255);
	longname[255] = '\0';
	put(f->src, "new\nline", "1\n", 0644);
	put(f->src, longname, "2\n", 0644);
	put(f->src, "a..b", "3\n", 0644);
	put(f->src, "quote\"back\\slash", "4\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	m = workspace_manifest_load(f->sbx, &cause);
	assert_non_null(m);
	assert_int_equal(workspace_manifest_count(m), 4);
	assert_non_null(workspace_manifest_find(m, "new\nline"));
	assert_non_null(workspace_manifest_find(m, longname));
	assert_non_null(workspace_manifest_find(m, "a..b"));
	d = wdiff(f, m, &cause);
	assert_non_null(d);
	assert_int_equal(d->n, 0);
	workspace_diff_free(d);
	workspace_manifest_free(m);
}

static void
test_path_valid(void **state)
{
	static const char *const bad[] = {
		"", "/etc/passwd", "../x", "a/../b", "a/./b", "a//b", "a/",
		".", "..",
	};
	const char	*why;
	size_t		 i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(workspace_path_valid(bad[i], &why), -1);
	assert_int_equal(workspace_path_valid("a..b/c.d", &why), 0);
	assert_int_equal(workspace_path_valid(".github/x", &why), 0);
}

/* Find a delta by path. */
static const struct workspace_delta *
find_delta(const struct workspace_diff *d, const char *path)
{
	size_t	i;

	for (i = 0; i < d->n; i++)
		if (strcmp(d->v[i].path, path) == 0)
			return &d->v[i];
	return NULL;
}

static void
test_diff_classify(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_diff		*d;
	const struct workspace_delta	*x;
	struct timespec			 ts[2];
	struct stat			 st;
	char				 work[256], path[512], *cause, *text;

	put(f->src, "a.txt", "hello\n", 0644);
	put(f->src, "same.txt", "abcdef\n", 0644);
	put(f->src, "keep.txt", "keep\n", 0644);
	mk(f->src, "dir");
	putn(f->src, "dir/b.bin", "x\001\000y", 4, 0600);
	mk(f->src, ".github");
	mk(f->src, ".github/workflows");
	put(f->src, ".github/workflows/ci.yml", "on: push\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	put(work, "a.txt", "hello\nworld\n", 0644);
	put(work, "new.txt", "new\n", 0644);
	snprintf(path, sizeof(path), "%s/dir/b.bin", work);
	assert_int_equal(unlink(path), 0);
	put(work, ".github/workflows/ci.yml", "on: [push, pr]\n", 0644);
	/* same size, mtime put back: must still be seen */
	snprintf(path, sizeof(path), "%s/same.txt", work);
	assert_int_equal(stat(path, &st), 0);
	put(work, "same.txt", "ABCDEF\n", 0644);
	ts[0] = st.st_atim;
	ts[1] = st.st_mtim;
	assert_int_equal(utimensat(AT_FDCWD, path, ts, 0), 0);
	snprintf(path, sizeof(path), "%s/evil", work);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	mk(work, "node_modules");
	put(work, "node_modules/ignored.js", "x\n", 0644);

	m = workspace_manifest_load(f->sbx, &cause);
	d = wdiff(f, m, &cause);
	assert_non_null(d);
	assert_int_equal(d->n, 6);
	x = find_delta(d, "a.txt");
	assert_non_null(x);
	assert_int_equal(x->change, WORKSPACE_MODIFIED);
	assert_string_equal(x->sha256_before, HELLO_SHA);
	assert_false(x->binary);
	assert_false(x->risky);
	assert_int_equal(dtext(f, d, x, &text, &cause), 0);
	assert_non_null(strstr(text, "--- a/a.txt\n+++ b/a.txt\n"));
	assert_non_null(strstr(text, "\n+world\n"));
	assert_null(strstr(text, "snapshot"));
	free(text);
	x = find_delta(d, "same.txt");
	assert_non_null(x);
	assert_int_equal(x->change, WORKSPACE_MODIFIED);
	x = find_delta(d, "new.txt");
	assert_int_equal(x->change, WORKSPACE_ADDED);
	assert_int_equal(dtext(f, d, x, &text, &cause), 0);
	assert_non_null(strstr(text, "--- /dev/null\n+++ b/new.txt\n"));
	free(text);
	x = find_delta(d, "dir/b.bin");
	assert_int_equal(x->change, WORKSPACE_DELETED);
	assert_true(x->binary);
	x = find_delta(d, ".github/workflows/ci.yml");
	assert_true(x->risky);
	x = find_delta(d, "evil");
	assert_true(x->special);
	assert_string_equal(x->special_what, "symlink");
	assert_null(find_delta(d, "keep.txt"));
	workspace_diff_free(d);
	workspace_manifest_free(m);
}

/* Create a tree, apply paths; host must be exactly as expected. */
static void
test_apply(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_diff		*d;
	char				 work[256], path[512], *cause = NULL;

	put(f->src, "a.txt", "hello\n", 0644);
	put(f->src, "host.txt", "host\n", 0644);
	put(f->src, "gone.txt", "gone\n", 0644);
	put(f->src, "run.sh", "#!/bin/sh\n", 0755);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	put(work, "a.txt", "hello agent\n", 0644);
	put(work, "host.txt", "agent\n", 0644);
	put(f->src, "host.txt", "changed on host\n", 0644);
	put(work, "run.sh", "#!/bin/sh\necho x\n", 04755);
	snprintf(path, sizeof(path), "%s/gone.txt", work);
	unlink(path);
	mk(work, "newdir");
	put(work, "newdir/n.txt", "n\n", 0640);
	snprintf(path, sizeof(path), "%s/passwd", work);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	m = workspace_manifest_load(f->sbx, &cause);

#define APPLY(p) apply1(f, m, (p), 0, NULL, &cause)
	assert_int_equal(APPLY("host.txt"), WORKSPACE_APPLY_REFUSED);
	assert_non_null(strstr(cause, "changed on the host"));
	assert_string_equal(get(f->src, "host.txt"), "changed on host\n");
	assert_int_equal(APPLY("../x"), WORKSPACE_APPLY_REFUSED);
	assert_int_equal(APPLY("/etc/passwd"), WORKSPACE_APPLY_REFUSED);
	assert_int_equal(APPLY("passwd"), WORKSPACE_APPLY_REFUSED);
	assert_non_null(strstr(cause, "symlink"));
	assert_null(get(f->src, "passwd"));
	/* dry run writes nothing */
	assert_int_equal(apply1(f, m, "a.txt", 1, NULL, &cause),
	    WORKSPACE_APPLY_APPLIED);
	assert_string_equal(get(f->src, "a.txt"), "hello\n");
	assert_int_equal(APPLY("a.txt"), WORKSPACE_APPLY_APPLIED);
	assert_string_equal(get(f->src, "a.txt"), "hello agent\n");
	assert_int_equal(APPLY("a.txt"), WORKSPACE_APPLY_UNCHANGED);
	assert_int_equal(APPLY("run.sh"), WORKSPACE_APPLY_APPLIED);
	assert_int_equal(mode_of(f->src, "run.sh"), 0755);
	assert_int_equal(APPLY("gone.txt"), WORKSPACE_APPLY_DELETED);
	assert_null(get(f->src, "gone.txt"));
	assert_int_equal(APPLY("newdir/n.txt"), WORKSPACE_APPLY_APPLIED);
	assert_string_equal(get(f->src, "newdir/n.txt"), "n\n");
	assert_int_equal(mode_of(f->src, "newdir/n.txt"), 0640);
	assert_int_equal(workspace_manifest_save(m, f->sbx, &cause), 0);
	workspace_manifest_free(m);
	/* after apply the applied paths read as unchanged */
	m = workspace_manifest_load(f->sbx, &cause);
	d = wdiff(f, m, &cause);
	assert_non_null(d);
	assert_null(find_delta(d, "a.txt"));
	assert_null(find_delta(d, "newdir/n.txt"));
	assert_null(find_delta(d, "gone.txt"));
	assert_non_null(find_delta(d, "host.txt"));
	workspace_diff_free(d);
	workspace_manifest_free(m);
	free(cause);
#undef APPLY
}

static void
test_apply_host_checks(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	char				 work[256], path[512], tgt[512];
	char				*cause = NULL;

	mk(f->src, "sub");
	put(f->src, "sub/x.txt", "x\n", 0644);
	put(f->src, "del.txt", "d\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	put(work, "sub/x.txt", "agent\n", 0644);
	put(work, "created.txt", "agent\n", 0644);
	snprintf(path, sizeof(path), "%s/del.txt", work);
	unlink(path);
	/* host: sub/ replaced by a symlink to elsewhere */
	snprintf(path, sizeof(path), "%s/sub", f->src);
	snprintf(tgt, sizeof(tgt), "%s/elsewhere", f->root);
	assert_int_equal(rename(path, tgt), 0);
	assert_int_equal(symlink(tgt, path), 0);
	/* host: a file created where the snapshot had none */
	put(f->src, "created.txt", "host\n", 0644);
	/* host: the file to delete was changed */
	put(f->src, "del.txt", "host edit\n", 0644);
	m = workspace_manifest_load(f->sbx, &cause);
	assert_int_equal(apply1(f, m, "sub/x.txt", 0, NULL, &cause),
	    WORKSPACE_APPLY_REFUSED);
	assert_string_equal(get(tgt, "x.txt"), "x\n");
	assert_int_equal(apply1(f, m, "created.txt", 0, NULL, &cause),
	    WORKSPACE_APPLY_REFUSED);
	assert_non_null(strstr(cause, "created on the host"));
	assert_string_equal(get(f->src, "created.txt"), "host\n");
	assert_int_equal(apply1(f, m, "del.txt", 0, NULL, &cause),
	    WORKSPACE_APPLY_REFUSED);
	assert_string_equal(get(f->src, "del.txt"), "host edit\n");
	workspace_manifest_free(m);
	free(cause);
}


/* mkdir name n times, one inside the other, under dir; a file at the end. */
static void
mk_deep(const char *dir, const char *name, int n, const char *file)
{
	int	fd, nfd, i;

	fd = open(dir, O_RDONLY | O_DIRECTORY);
	assert_true(fd != -1);
	for (i = 0; i < n; i++) {
		assert_int_equal(mkdirat(fd, name, 0755), 0);
		nfd = openat(fd, name, O_RDONLY | O_DIRECTORY);
		assert_true(nfd != -1);
		close(fd);
		fd = nfd;
	}
	nfd = openat(fd, file, O_WRONLY | O_CREAT, 0644);
	assert_true(nfd != -1);
	assert_int_equal(write(nfd, "bottom\n", 7), 7);
	close(nfd);
	close(fd);
}

/*
 * A tree 1,100 deep and a path of 22 x 200 bytes, walked, diffed, applied
 * and removed with 64 descriptors at most.
 */
static void
test_deep_and_long(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_diff		*d;
	struct workspace_walk		*w;
	struct workspace_walk_entry	 e;
	struct rlimit			 rl, old;
	char				 work[256], name[201], *deep, *longp;
	char				*cause = NULL, *p;
	size_t				 i, n = 0, maxdepth = 0;
	int				 fd, r;

	put(f->src, "a.txt", "a\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	mk_deep(work, "d", 1100, "deep.txt");
	memset(name, 'x', 200);
	name[200] = '\0';
	mk_deep(work, name, 22, "long.txt");
	deep = malloc(1100 * 2 + 16);
	longp = malloc(22 * 201 + 16);
	for (p = deep, i = 0; i < 1100; i++)
		p += snprintf(p, 3, "d/");
	snprintf(p, 9, "deep.txt");
	for (p = longp, i = 0; i < 22; i++)
		p += snprintf(p, 202, "%s/", name);
	snprintf(p, 9, "long.txt");
	assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
	rl = old;
	rl.rlim_cur = 64;
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &rl), 0);
	fd = open(work, O_RDONLY | O_DIRECTORY);
	w = workspace_walk_new(fd, &cause);
	assert_non_null(w);
	while ((r = workspace_walk_next(w, &e, &cause)) == 1) {
		n++;
		if (e.depth > maxdepth)
			maxdepth = e.depth;
	}
	assert_int_equal(r, 0);
	assert_int_equal(maxdepth, 1101);
	assert_int_equal(n, 1100 + 1 + 22 + 1 + 1);
	workspace_walk_free(w);
	close(fd);
	m = workspace_manifest_load(f->sbx, &cause);
	d = wdiff(f, m, &cause);
	assert_non_null(d);
	assert_non_null(workspace_diff_find(d, deep));
	assert_non_null(workspace_diff_find(d, longp));
	assert_int_equal(apply1(f, m, deep, 0, NULL, &cause),
	    WORKSPACE_APPLY_APPLIED);
	assert_int_equal(apply1(f, m, longp, 0, NULL, &cause),
	    WORKSPACE_APPLY_APPLIED);
	assert_int_equal(workspace_manifest_save(m, f->sbx, &cause), 0);
	/* the snapshot now holds both: removable at any depth and length */
	assert_int_equal(workspace_remove(f->sbx, &cause), 0);
	assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
	assert_int_equal(mode_of(f->sbx, "snapshot"), (mode_t)-1);
	workspace_diff_free(d);
	workspace_manifest_free(m);
	free(deep);
	free(longp);
	free(cause);
}

/* A review saved, loaded, matched; a change after it refused. */
static void
test_review(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_diff		*d, *now;
	struct workspace_review		*rv;
	const struct workspace_delta	*x;
	char				 work[256], path[512], digest[65];
	char				*cause = NULL;
	const char			*why;
	FILE				*fp;

	put(f->src, "a.txt", "hello\n", 0644);
	put(f->src, "b.txt", "b\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	put(work, "a.txt", "hello agent\n", 0644);
	put(work, "new\nname", "n\n", 0644);
	m = workspace_manifest_load(f->sbx, &cause);
	d = wdiff(f, m, &cause);
	assert_non_null(d);
	assert_int_equal(strlen(d->review), 64);
	memcpy(digest, d->review, sizeof(digest));
	assert_int_equal(workspace_review_save(f->sbx, d, &cause), 0);
	rv = workspace_review_load(f->sbx, digest, &cause);
	assert_non_null(rv);
	assert_int_equal(workspace_review_count(rv), 2);
	x = workspace_review_find(rv, "new\nname");
	assert_non_null(x);
	assert_true(workspace_review_matches(x, workspace_diff_find(d, x->path),
	    workspace_manifest_find(m, x->path), &why));
	/* the same content gives the same digest */
	now = wdiff(f, m, &cause);
	assert_string_equal(now->review, digest);
	workspace_diff_free(now);
	/* changed after the review: no match, and apply refuses */
	put(work, "a.txt", "something else\n", 0644);
	now = wdiff(f, m, &cause);
	assert_string_not_equal(now->review, digest);
	x = workspace_review_find(rv, "a.txt");
	assert_false(workspace_review_matches(x, workspace_diff_find(now,
	    "a.txt"), workspace_manifest_find(m, "a.txt"), &why));
	assert_int_equal(apply1(f, m, "a.txt", 0, x, &cause),
	    WORKSPACE_APPLY_REFUSED);
	assert_non_null(strstr(cause, "changed since the review"));
	assert_string_equal(get(f->src, "a.txt"), "hello\n");
	/* back as reviewed: applied, then "unchanged" matches the review */
	put(work, "a.txt", "hello agent\n", 0644);
	assert_int_equal(apply1(f, m, "a.txt", 0, x, &cause),
	    WORKSPACE_APPLY_APPLIED);
	assert_string_equal(get(f->src, "a.txt"), "hello agent\n");
	assert_true(workspace_review_matches(x, NULL,
	    workspace_manifest_find(m, "a.txt"), &why));
	workspace_diff_free(now);
	/* a damaged review is refused */
	snprintf(path, sizeof(path), "%s/reviews/%s.review", f->sbx, digest);
	assert_non_null(fp = fopen(path, "r+"));
	fseek(fp, -30, SEEK_END);
	fputs("AAAA", fp);
	fclose(fp);
	workspace_review_free(rv);
	assert_null(workspace_review_load(f->sbx, digest, &cause));
	assert_null(workspace_review_load(f->sbx, "nothex", &cause));
	workspace_diff_free(d);
	workspace_manifest_free(m);
	free(cause);
}

/*
 * A CR added at a line's end, and a literal "\x0d", as a reviewer sees
 * them: each differs from the other and from the line without (atk16r7
 * F3).
 */
static void
test_diff_shown_cr(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_diff		*d;
	struct workspace_write_stats	 st;
	char				 work[256], *cause = NULL, *out = NULL;
	size_t				 n = 0;
	FILE				*fp;

	put(f->src, "b.sh", "cd /tmp/build\r\nrm -rf ./*\r\n", 0644);
	put(f->src, "c.py", "x = 1\n", 0644);
	put(f->src, "e.py", "x = 1\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	put(work, "b.sh", "cd /tmp/build\nrm -rf ./*\r\n", 0644);
	put(work, "c.py", "x = 1  # C:\rimport os\n", 0644);
	put(work, "e.py", "x = 1  # C:\\x0dimport os\n", 0644);
	m = workspace_manifest_load(f->sbx, &cause);
	d = wdiff(f, m, &cause);
	assert_non_null(d);
	memset(&st, 0, sizeof(st));
	assert_non_null(fp = open_memstream(&out, &n));
	assert_int_equal(workspace_diff_write(f->sbx, d, 0, fp, &st, &cause),
	    0);
	fclose(fp);
	assert_non_null(strstr(out, "\n-cd /tmp/build\\x0d\n+cd /tmp/build\n"
	    " rm -rf ./*\r\n"));
	assert_non_null(strstr(out, "\n+x = 1  # C:\\x0dimport os\n"));
	assert_non_null(strstr(out, "\n+x = 1  # C:\\x5cx0dimport os\n"));
	assert_int_equal(st.escaped, 3);
	free(out);
	workspace_diff_free(d);
	workspace_manifest_free(m);
	free(cause);
}

/* Sparse files stay sparse; larger than the limit: refused; modes. */
static void
test_apply_sparse_modes(void **state)
{
	struct fixture			*f = *state;
	struct workspace_manifest	*m;
	struct workspace_apply_opts	 o;
	struct stat			 st;
	char				 work[256], path[512], *cause = NULL;
	int				 fd;

	put(f->src, "a.txt", "a\n", 0644);
	assert_int_equal(create(f, NULL, &cause), 0);
	snprintf(work, sizeof(work), "%s/work", f->sbx);
	snprintf(path, sizeof(path), "%s/sparse.bin", work);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(write(fd, "head", 4), 4);
	assert_int_equal(ftruncate(fd, 512ll << 20), 0);
	assert_int_equal(pwrite(fd, "tail", 4, (512ll << 20) - 4), 4);
	close(fd);
	put(work, "ww.txt", "ww\n", 0666);
	put(work, "wx.sh", "wx\n", 0777);
	m = workspace_manifest_load(f->sbx, &cause);
	memset(&o, 0, sizeof(o));
	o.size_max = 256ll << 20;
	assert_int_equal(workspace_apply_path(f->sbx, f->src, m, "sparse.bin",
	    &o, &cause), WORKSPACE_APPLY_REFUSED);
	assert_non_null(strstr(cause, "larger than the sandbox's --disk"));
	assert_null(get(f->src, "sparse.bin"));
	o.size_max = 1ll << 30;
	assert_int_equal(workspace_apply_path(f->sbx, f->src, m, "sparse.bin",
	    &o, &cause), WORKSPACE_APPLY_APPLIED);
	snprintf(path, sizeof(path), "%s/sparse.bin", f->src);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 512ll << 20);
	assert_true(st.st_blocks * 512 < (1 << 20));	/* not expanded */
	assert_int_equal(apply1(f, m, "ww.txt", 0, NULL, &cause),
	    WORKSPACE_APPLY_APPLIED);
	assert_int_equal(apply1(f, m, "wx.sh", 0, NULL, &cause),
	    WORKSPACE_APPLY_APPLIED);
	assert_int_equal(mode_of(f->src, "ww.txt"), 0644);
	assert_int_equal(mode_of(f->src, "wx.sh"), 0755);
	assert_int_equal(workspace_apply_mode(06777), 0755);
	/* applied again: the host's 0644 is what apply would write */
	assert_int_equal(apply1(f, m, "ww.txt", 0, NULL, &cause),
	    WORKSPACE_APPLY_UNCHANGED);
	workspace_manifest_free(m);
	free(cause);
}

/* create refuses a source tree nested deeper than it copies, clearly. */
static void
test_create_too_deep(void **state)
{
	struct fixture	*f = *state;
	char		*cause = NULL;

	mk_deep(f->src, "d", 250, "x.txt");
	assert_int_equal(create(f, NULL, &cause), -1);
	assert_non_null(strstr(cause, "deeper than 200 levels"));
	free(cause);
}

/* run --output's copy: sparse, over the limit left out, specials out. */
static void
test_copy_tree(void **state)
{
	struct fixture	*f = *state;
	struct stat	 st;
	char		 path[512], *cause = NULL;
	int		 s, d, fd;
	FILE		*warn;
	char		*wbuf = NULL;
	size_t		 wlen = 0;

	mk(f->src, "sub");
	put(f->src, "sub/a.txt", "a\n", 0644);
	snprintf(path, sizeof(path), "%s/holes.bin", f->src);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(ftruncate(fd, 64ll << 20), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/big.bin", f->src);
	fd = open(path, O_WRONLY | O_CREAT, 0644);
	assert_int_equal(ftruncate(fd, 2ll << 30), 0);
	close(fd);
	snprintf(path, sizeof(path), "%s/link", f->src);
	assert_int_equal(symlink("/etc/passwd", path), 0);
	s = open(f->src, O_RDONLY | O_DIRECTORY);
	d = open(f->sbx, O_RDONLY | O_DIRECTORY);
	warn = open_memstream(&wbuf, &wlen);
	assert_int_equal(workspace_copy_tree(s, d, 1ll << 30, warn, &cause),
	    0);
	fclose(warn);
	close(s);
	close(d);
	assert_string_equal(get(f->sbx, "sub/a.txt"), "a\n");
	snprintf(path, sizeof(path), "%s/holes.bin", f->sbx);
	assert_int_equal(stat(path, &st), 0);
	assert_int_equal(st.st_size, 64ll << 20);
	assert_true(st.st_blocks < 64);
	assert_int_equal(mode_of(f->sbx, "big.bin"), (mode_t)-1);
	assert_int_equal(mode_of(f->sbx, "link"), (mode_t)-1);
	assert_non_null(strstr(wbuf, "not copying big.bin"));
	assert_non_null(strstr(wbuf, "special file link"));
	free(wbuf);
	free(cause);
}

/*
 * Hard links: each name is copied out as a whole file, so what one copy
 * out writes is bounded by size_max in all (1 MiB of data and 20 links,
 * 4 MiB allowed: at most 4 copies).
 */
static void
test_copy_tree_links(void **state)
{
	struct fixture	*f = *state;
	struct stat	 st;
	char		 path[512], lnk[512], *cause = NULL, *wbuf = NULL;
	char		*data;
	size_t		 wlen = 0;
	long long	 blocks = 0;
	int		 s, d, i, copies = 0;
	FILE		*warn;

	data = malloc(1 << 20);
	assert_non_null(data);
	for (i = 0; i < 1 << 20; i++)
		data[i] = (char)(i * 7 + i / 251);
	putn(f->src, "a.bin", data, 1 << 20, 0644);
	free(data);
	snprintf(path, sizeof(path), "%s/a.bin", f->src);
	for (i = 0; i < 20; i++) {
		snprintf(lnk, sizeof(lnk), "%s/l%02d", f->src, i);
		assert_int_equal(link(path, lnk), 0);
	}
	s = open(f->src, O_RDONLY | O_DIRECTORY);
	d = open(f->sbx, O_RDONLY | O_DIRECTORY);
	warn = open_memstream(&wbuf, &wlen);
	assert_int_equal(workspace_copy_tree(s, d, 4ll << 20, warn, &cause),
	    0);
	fclose(warn);
	close(s);
	close(d);
	for (i = -1; i < 20; i++) {
		if (i == -1)
			snprintf(path, sizeof(path), "%s/a.bin", f->sbx);
		else
			snprintf(path, sizeof(path), "%s/l%02d", f->sbx, i);
		if (stat(path, &st) == 0) {
			copies++;
			blocks += st.st_blocks;
		}
	}
	assert_true(copies >= 1 && copies <= 4);
	assert_true(blocks * 512 <= 4ll << 20);
	assert_non_null(strstr(wbuf, "a hard-linked file is copied once per "
	    "name"));
	free(wbuf);
	free(cause);
}

/*
 * The show budget charges a text that is not valid UTF-8 as the JSON's
 * base64 carries it (atk16v F3), its UTF-8 checked across reads.
 */
static void
test_show_utf8(void **state)
{
	static const struct {
		const char	*tail;	/* after 300 'a' bytes */
		size_t		 cut;	/* fed in two reads, split here */
		int		 bad;
	} t[] = {
		{ "caf\xc3\xa9\n", 4, 0 },	/* split inside U+00E9 */
		{ "\xf0\x9f\x98\x80\n", 2, 0 },	/* U+1F600 */
		{ "\xef\xbf\xbd", 1, 0 },	/* U+FFFD, no newline */
		{ "\xff\n", 0, 1 },
		{ "\xc0\x80\n", 1, 1 },		/* overlong NUL */
		{ "\xed\xa0\x80\n", 2, 1 },	/* a surrogate */
		{ "\xf4\x90\x80\x80\n", 3, 1 },	/* past U+10FFFF */
		{ "\xe2\x82", 1, 1 },		/* cut off at the end */
		{ "\x80x\n", 1, 1 },		/* a lone continuation */
	};
	struct workspace_delta	d;
	struct ws_show_cost	a, b;
	unsigned char		buf[400];
	size_t			i, len;
	off_t			esc;

	(void)state;
	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		memset(buf, 'a', 300);
		len = strlen(t[i].tail);
		memcpy(buf + 300, t[i].tail, len);
		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		ws_show_cost_add(&b, buf, 300 + t[i].cut);
		ws_show_cost_add(&b, buf + 300 + t[i].cut, len - t[i].cut);
		memset(&d, 0, sizeof(d));
		d.path = "p";
		ws_show_set(&d, &a, &b);
		assert_int_equal(d.show, WORKSPACE_SHOW_TEXT);
		esc = 512 + 24 + b.bytes + 16;
		if (t[i].bad)
			assert_true(d.show_cost >= 512 + 24 +
			    (4 * (b.raw + 14) + 2) / 3 && d.show_cost > esc);
		else
			assert_int_equal(d.show_cost, esc);
	}
}

int
main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_copy_manifest, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refuse_symlink, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_refuse_fifo, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_excludes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_secrets, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_odd_names, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_diff_shown_cr, setup,
		    teardown),
		cmocka_unit_test(test_path_valid),
		cmocka_unit_test_setup_teardown(test_diff_classify, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_apply, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_host_checks, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_deep_and_long, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_review, setup, teardown),
		cmocka_unit_test_setup_teardown(test_apply_sparse_modes, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_create_too_deep, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_copy_tree, setup,
		    teardown),
		cmocka_unit_test_setup_teardown(test_copy_tree_links, setup,
		    teardown),
		cmocka_unit_test(test_show_utf8),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
