/* cmd_export.c: `sandgate export ID --output F.zip`. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zip.h>

#include "cmd.h"
#include "eventlog.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"
#include "workspace.h"
#include "workspace_priv.h"

/*
 * A file of the working copy or the evidence folder, opened only when
 * libzip reads it, through its root without following links (the agent
 * may swap a file for a symlink at any time).
 */
struct export_src {
	int		 rootfd;	/* not owned */
	char		*rel;
	int		 fd;
	time_t		 mtime;
	zip_error_t	 err;
};

struct export_ctx {
	zip_t		*za;
	const char	*id;
	char		 sbx[4096];
	int		 fds[2];	/* work/ and runs/ roots */
};

static int		 cmd_export_exec(int, char **);
static zip_int64_t	 export_src_cb(void *, void *, zip_uint64_t,
			    zip_source_cmd_t);
static int		 export_file(struct export_ctx *, int, const char *,
			    const char *, const struct stat *);
static int		 export_tree(struct export_ctx *, int, int,
			    const char *, char *, size_t);
static int		 export_buffer(struct export_ctx *, const char *,
			    char *, size_t);
static size_t		 export_line(FILE *, char *);
static int		 export_jsonl(struct export_ctx *, const char *,
			    const char *);
static int		 export_diff(struct export_ctx *);
static int		 export_run(struct export_ctx *, const char *);

const struct cmd_entry cmd_export = {
	.name = "export",
	.usage = "--output FILE.zip ID",
	.summary = "write a zip with everything about a sandbox: meta.json, "
	    "manifest.json, the\ndiff (diff.patch, diff.json), its run "
	    "records (runs.jsonl), its security\nevents "
	    "(security-events.jsonl), the evidence folder runs/ and the "
	    "working\ncopy under work/ (regular files only).",
	.exec = cmd_export_exec,
};

static zip_int64_t
export_src_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
	struct export_src	*s = ud;
	zip_stat_t		*st;
	struct stat		 sb;
	ssize_t			 r;

	switch (cmd) {
	case ZIP_SOURCE_OPEN:
		s->fd = ws_open_beneath(s->rootfd, s->rel,
		    O_RDONLY | O_NONBLOCK);
		if (s->fd == -1 || fstat(s->fd, &sb) == -1 ||
		    !S_ISREG(sb.st_mode)) {
			zip_error_set(&s->err, ZIP_ER_OPEN, errno ? errno :
			    ELOOP);
			return -1;
		}
		return 0;
	case ZIP_SOURCE_READ:
		if ((r = read(s->fd, data, len)) == -1) {
			zip_error_set(&s->err, ZIP_ER_READ, errno);
			return -1;
		}
		return r;
	case ZIP_SOURCE_CLOSE:
		if (s->fd != -1)
			close(s->fd);
		s->fd = -1;
		return 0;
	case ZIP_SOURCE_STAT:
		st = data;
		zip_stat_init(st);
		st->mtime = s->mtime;
		st->valid |= ZIP_STAT_MTIME;
		return sizeof(*st);
	case ZIP_SOURCE_ERROR:
		return zip_error_to_data(&s->err, data, len);
	case ZIP_SOURCE_FREE:
		if (s->fd != -1)
			close(s->fd);
		free(s->rel);
		zip_error_fini(&s->err);
		free(s);
		return 0;
	case ZIP_SOURCE_SUPPORTS:
		return zip_source_make_command_bitmap(ZIP_SOURCE_OPEN,
		    ZIP_SOURCE_READ, ZIP_SOURCE_CLOSE, ZIP_SOURCE_STAT,
		    ZIP_SOURCE_ERROR, ZIP_SOURCE_FREE, -1);
	default:
		zip_error_set(&s->err, ZIP_ER_OPNOTSUPP, 0);
		return -1;
	}
}

static int
export_file(struct export_ctx *c, int rootfd, const char *rel,
    const char *name, const struct stat *sb)
{
	struct export_src	*s;
	zip_source_t		*zs;
	zip_int64_t		 idx;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->rel = strdup(rel)) == NULL) {
		free(s);
		return -1;
	}
	s->rootfd = rootfd;
	s->fd = -1;
	s->mtime = sb->st_mtime;
	zip_error_init(&s->err);
	if ((zs = zip_source_function(c->za, export_src_cb, s)) == NULL) {
		free(s->rel);
		free(s);
		return -1;
	}
	idx = zip_file_add(c->za, name, zs, ZIP_FL_ENC_UTF_8 |
	    ZIP_FL_OVERWRITE);
	if (idx == -1) {
		zip_source_free(zs);
		return -1;
	}
	zip_file_set_external_attributes(c->za, (zip_uint64_t)idx, 0,
	    ZIP_OPSYS_UNIX, (zip_uint32_t)(S_IFREG | (sb->st_mode & 0777))
	    << 16);
	return 0;
}

/* Add the tree under dfd (owned) as prefix/...; rel is its path. */
static int
export_tree(struct export_ctx *c, int rootfd, int dfd, const char *prefix,
    char *rel, size_t rellen)
{
	struct dirent	*de;
	struct stat	 sb;
	char		 name[8192];
	DIR		*dir;
	size_t		 n;
	int		 sub, rc = 0;

	if ((dir = fdopendir(dfd)) == NULL) {
		close(dfd);
		return -1;
	}
	while (rc == 0 && (de = readdir(dir)) != NULL) {
		n = strlen(de->d_name);
		if (strcmp(de->d_name, ".") == 0 ||
		    strcmp(de->d_name, "..") == 0 || rellen + n + 2 > 4096)
			continue;
		snprintf(rel + rellen, 4096 - rellen, "%s%s",
		    rellen ? "/" : "", de->d_name);
		if (!ws_utf8_valid(rel) ||
		    fstatat(dirfd(dir), de->d_name, &sb,
		    AT_SYMLINK_NOFOLLOW) == -1)
			continue;
		snprintf(name, sizeof(name), "%s/%s", prefix, rel);
		if (S_ISDIR(sb.st_mode)) {
			sub = openat(dirfd(dir), de->d_name, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (sub != -1 && zip_dir_add(c->za, name,
			    ZIP_FL_ENC_UTF_8) >= 0)
				rc = export_tree(c, rootfd, sub, prefix, rel,
				    strlen(rel));
			else if (sub != -1)
				close(sub);
		} else if (S_ISREG(sb.st_mode))
			rc = export_file(c, rootfd, rel, name, &sb);
		rel[rellen] = '\0';
	}
	rel[rellen] = '\0';
	closedir(dir);
	return rc;
}

/* Add a malloc'ed buffer as name; the archive takes it. */
static int
export_buffer(struct export_ctx *c, const char *name, char *buf, size_t len)
{
	zip_source_t	*zs;

	if ((zs = zip_source_buffer(c->za, buf, len, 1)) == NULL) {
		free(buf);
		return -1;
	}
	if (zip_file_add(c->za, name, zs, ZIP_FL_ENC_UTF_8 |
	    ZIP_FL_OVERWRITE) == -1) {
		zip_source_free(zs);
		return -1;
	}
	return 0;
}

/*
 * The next line of in, newline included, into line (its first
 * SG_LOG_LINE_MAX + 1 bytes). Returns its length (more than that when it
 * is longer, the rest skipped), or 0 at the end of the file.
 */
static size_t
export_line(FILE *in, char *line)
{
	size_t	n = 0;
	int	ch;

	while ((ch = getc(in)) != EOF) {
		if (n <= SG_LOG_LINE_MAX)
			line[n] = (char)ch;
		if (n <= SG_LOG_LINE_MAX + 1)
			n++;
		if (ch == '\n')
			break;
	}
	return n;
}

/*
 * The lines of log_dir/file whose "sandbox" is this sandbox. The file is
 * read as the log readers read it (eventlog_open_file()); lines longer
 * than a log line are skipped.
 */
static int
export_jsonl(struct export_ctx *c, const char *file, const char *name)
{
	char		*line, *buf = NULL, *path;
	size_t		 len = 0, n;
	struct stat	 st;
	json_t		*o;
	FILE		*in = NULL, *out;
	int		 fd;

	if ((out = open_memstream(&buf, &len)) == NULL)
		return -1;
	/* runs.jsonl is the controller's; the other log is the proxy's */
	util_xasprintf(&path, "%s/%s", strcmp(file, "runs.jsonl") == 0 ?
	    state_record_dir() : state_log_dir(), file);
	fd = eventlog_open_file(path, O_RDONLY, &st);
	free(path);
	if (fd != -1 && (in = fdopen(fd, "r")) == NULL)
		close(fd);
	line = util_xmalloc(SG_LOG_LINE_MAX + 1);
	if (in != NULL) {
		while ((n = export_line(in, line)) != 0) {
			if (n > SG_LOG_LINE_MAX + 1)
				continue;	/* longer than a log line */
			o = json_loadb(line, n, 0, NULL);
			if (o != NULL && json_is_string(json_object_get(o,
			    "sandbox")) && strcmp(json_string_value(
			    json_object_get(o, "sandbox")), c->id) == 0)
				fwrite(line, 1, n, out);
			json_decref(o);
		}
		fclose(in);
	}
	free(line);
	if (fclose(out) != 0)
		return -1;
	return export_buffer(c, name, buf, len);
}

static int
export_diff(struct export_ctx *c)
{
	struct workspace_manifest	*m;
	struct workspace_diff		*d = NULL;
	char				*cause = NULL, *b[2] = { NULL, NULL };
	size_t				 len[2];
	FILE				*f;
	int				 i, rc = -1;

	if ((m = workspace_manifest_load(c->sbx, &cause)) == NULL ||
	    (d = workspace_diff(c->sbx, m, &cause)) == NULL)
		goto out;
	for (i = 0; i < 2; i++) {
		if ((f = open_memstream(&b[i], &len[i])) == NULL)
			goto out;
		if (workspace_diff_write(c->sbx, d, i, f, &cause) == -1) {
			fclose(f);
			goto out;
		}
		if (fclose(f) != 0)
			goto out;
	}
	rc = export_buffer(c, "diff.patch", b[0], len[0]);
	b[0] = NULL;
	if (rc == 0)
		rc = export_buffer(c, "diff.json", b[1], len[1]);
	b[1] = NULL;
out:
	if (cause != NULL)
		fprintf(stderr, "sandgate: %s\n", cause);
	free(cause);
	free(b[0]);
	free(b[1]);
	workspace_diff_free(d);
	workspace_manifest_free(m);
	return rc;
}

static int
export_run(struct export_ctx *c, const char *output)
{
	static const char *const meta[] = { "meta.json", "manifest.json" };
	static const char *const trees[] = { "work", "runs" };
	zip_source_t	*zs;
	char		 path[8192], rel[4096];
	size_t		 i;
	int		 err, dfd;

	if ((c->za = zip_open(output, ZIP_CREATE | ZIP_TRUNCATE,
	    &err)) == NULL) {
		fprintf(stderr, "sandgate: cannot create '%s'\n", output);
		return -1;
	}
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->sbx, meta[i]);
		if ((zs = zip_source_file(c->za, path, 0, -1)) == NULL ||
		    zip_file_add(c->za, meta[i], zs, ZIP_FL_ENC_UTF_8) == -1)
			goto fail;
	}
	if (export_diff(c) == -1 ||
	    export_jsonl(c, "runs.jsonl", "runs.jsonl") == -1 ||
	    export_jsonl(c, "security-events.jsonl",
	    "security-events.jsonl") == -1)
		goto fail;
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/%s", c->sbx, trees[i]);
		c->fds[i] = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
		if (c->fds[i] == -1)
			continue;	/* no evidence yet */
		rel[0] = '\0';
		if ((dfd = dup(c->fds[i])) == -1 || zip_dir_add(c->za,
		    trees[i], ZIP_FL_ENC_UTF_8) == -1 ||
		    export_tree(c, c->fds[i], dfd, trees[i], rel, 0) == -1)
			goto fail;
	}
	if (zip_close(c->za) == -1) {
		fprintf(stderr, "sandgate: cannot write '%s': %s\n", output,
		    zip_strerror(c->za));
		zip_discard(c->za);
		return -1;
	}
	return 0;
fail:
	fprintf(stderr, "sandgate: cannot build '%s': %s\n", output,
	    zip_strerror(c->za));
	zip_discard(c->za);
	return -1;
}

static int
cmd_export_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	struct export_ctx	 c;
	const char		*output = NULL;
	int			 ch, lock, rc;

	optind = 1;
	while ((ch = getopt_long(argc, argv, "o:h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'o':
			output = optarg;
			break;
		case 'h':
			return cmd_help(&cmd_export);
		default:
			return cmd_usage_error(&cmd_export, "bad option");
		}
	}
	if (argc - optind != 1 || state_valid_id(argv[optind]) == -1)
		return cmd_usage_error(&cmd_export, "one valid sandbox id "
		    "expected");
	if (output == NULL)
		return cmd_usage_error(&cmd_export, "--output FILE.zip is "
		    "required");
	memset(&c, 0, sizeof(c));
	c.id = argv[optind];
	c.fds[0] = c.fds[1] = -1;
	if (state_path(c.sbx, sizeof(c.sbx), c.id, NULL) == -1 ||
	    (lock = state_lock(c.id, 0)) == -1) {
		fprintf(stderr, "sandgate: no sandbox '%s'\n", c.id);
		return SG_EXIT_ERROR;
	}
	rc = export_run(&c, output) == 0 ? SG_EXIT_OK : SG_EXIT_ERROR;
	if (c.fds[0] != -1)
		close(c.fds[0]);
	if (c.fds[1] != -1)
		close(c.fds[1]);
	state_unlock(lock);
	return rc;
}
