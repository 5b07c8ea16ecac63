/* cmd_export.c: `sandgate export ID --output F.zip`. */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <zip.h>

#include "cmd.h"
#include "eventlog.h"
#include "log.h"
#include "quote.h"
#include "sandbox.h"
#include "sglimits.h"
#include "state.h"
#include "util.h"
#include "workspace.h"
#include "workspace_int.h"

/*
 * A file of the working copy or the evidence folder, opened only when
 * libzip reads it, through its root without following links (the agent
 * may swap a file for a symlink at any time), and read no further than
 * the size it had when it was listed (a file made sparse and huge
 * meanwhile is cut there).
 */
struct export_src {
	int		 rootfd;	/* not owned */
	char		*rel;
	int		 fd;
	time_t		 mtime;
	off_t		 size, done;
	off_t		*left;		/* the export's budget (not owned) */
	off_t		 charged;	/* taken from *left at the walk */
	zip_error_t	 err;
};

struct export_ctx {
	zip_t		*za;
	const char	*id;
	char		 sbx[4096];
	int		 fds[2];	/* work/ and runs/ roots */
	off_t		 size_max;	/* the sandbox's --disk */
	off_t		 budget;	/* what the tree may still add */
	size_t		 names;		/* bytes of entry names added */
	FILE		*skipped;	/* names left out, or NULL */
};

static int		 cmd_export_exec(struct cmd_args *);
static zip_int64_t	 export_src_cb(void *, void *, zip_uint64_t,
			    zip_source_cmd_t);
static int		 export_file(struct export_ctx *, int,
			    const struct workspace_walk_entry *, const char *);
static int		 export_skip(struct export_ctx *, const char *,
			    const char *);
static int		 export_name(char **, const char *, const char *);
static int		 export_name_fits(const char *, int);
static int		 export_tree(struct export_ctx *, int, const char *);
static int		 export_stream(struct export_ctx *, const char *,
			    FILE *);
static FILE		*export_tmp(struct export_ctx *);
static size_t		 export_line(FILE *, char *);
static int		 export_jsonl(struct export_ctx *, const char *,
			    const char *);
static int		 export_diff(struct export_ctx *);
static int		 export_run(struct export_ctx *, const char *);

static const struct option cmd_export_options[] = {
	{ "output", required_argument, NULL, 'o' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_export = {
	.name = "export",
	.usage = "--output FILE.zip ID",
	.summary = "write a zip with everything about a sandbox",
	.help = "The zip holds meta.json, manifest.json, the diff "
	    "(diff.patch, diff.json), its run records (runs.jsonl), its security\nevents "
	    "(security-events.jsonl), the evidence folder runs/ and the "
	    "working\ncopy under work/ (regular files only; names that are "
	    "not UTF-8 as raw bytes;\nfiles larger than the sandbox's "
	    "--disk are left out and listed in skipped.txt).",
	.options = cmd_export_options,
	.shortopts = "o:",
	.required = "o",
	.args_min = 1,
	.args_max = 1,
	.flags = CMD_ID,
	.exec = cmd_export_exec,
};

/*
 * Read the next bytes of s's file: a hole as zeros, data charged to the
 * export's budget as it is read (its file may have been filled since the
 * walk: export does not freeze); past the budget the read fails (EDQUOT)
 * and so does the export.
 */
static zip_int64_t
export_src_read(struct export_src *s, void *data, zip_uint64_t len)
{
	off_t	at, hole;
	ssize_t	r;

	if ((off_t)len > s->size - s->done)
		len = (zip_uint64_t)(s->size - s->done);
	if (len == 0)
		return 0;
	if ((at = lseek(s->fd, s->done, SEEK_DATA)) == -1)
		at = errno == ENXIO ? s->size : s->done;
	if (at > s->done) {
		if ((off_t)len > at - s->done)
			len = (zip_uint64_t)(at - s->done);
		memset(data, 0, len);
		s->done += (off_t)len;
		return (zip_int64_t)len;
	}
	hole = lseek(s->fd, s->done, SEEK_HOLE);
	if (hole > s->done && (off_t)len > hole - s->done)
		len = (zip_uint64_t)(hole - s->done);
	if ((off_t)len > *s->left) {
		zip_error_set(&s->err, ZIP_ER_READ, EDQUOT);
		return -1;
	}
	if ((r = pread(s->fd, data, len, s->done)) == -1) {
		zip_error_set(&s->err, ZIP_ER_READ, errno);
		return -1;
	}
	*s->left -= r;
	s->done += r;
	return r;
}

static zip_int64_t
export_src_cb(void *ud, void *data, zip_uint64_t len, zip_source_cmd_t cmd)
{
	struct export_src	*s = ud;
	zip_stat_t		*st;
	struct stat		 sb;

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
		s->done = 0;
		*s->left += s->charged;
		s->charged = 0;
		return 0;
	case ZIP_SOURCE_READ:
		return export_src_read(s, data, len);
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

/* "prefix/rel" into *name (malloc'ed). */
static int
export_name(char **name, const char *prefix, const char *rel)
{
	return asprintf(name, "%s/%s", prefix, rel) == -1 ? -1 : 0;
}

/*
 * The zip name's encoding: UTF-8 when it is UTF-8 without a control
 * character (libzip refuses those as UTF-8), else its raw bytes.
 */
#define EXPORT_ENC(n)	(quote_path_needed((n), strlen(n)) ? \
			    ZIP_FL_ENC_RAW : ZIP_FL_ENC_UTF_8)

static int
export_file(struct export_ctx *c, int rootfd,
    const struct workspace_walk_entry *e, const char *name)
{
	struct export_src	*s;
	zip_source_t		*zs;
	zip_int64_t		 idx;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->rel = strdup(e->path)) == NULL) {
		free(s);
		return -1;
	}
	s->rootfd = rootfd;
	s->fd = -1;
	s->mtime = e->st.st_mtime;
	s->size = e->st.st_size;
	s->left = &c->budget;
	s->charged = (off_t)e->st.st_blocks * 512;
	zip_error_init(&s->err);
	if ((zs = zip_source_function(c->za, export_src_cb, s)) == NULL) {
		free(s->rel);
		free(s);
		return -1;
	}
	idx = zip_file_add(c->za, name, zs, EXPORT_ENC(name) |
	    ZIP_FL_OVERWRITE);
	if (idx == -1) {
		zip_source_free(zs);
		return export_skip(c, name, zip_strerror(c->za));
	}
	zip_file_set_external_attributes(c->za, (zip_uint64_t)idx, 0,
	    ZIP_OPSYS_UNIX, (zip_uint32_t)(S_IFREG | (e->st.st_mode & 0777))
	    << 16);
	return 0;
}

/* Note a file left out, in skipped.txt and on stderr. */
static int
export_skip(struct export_ctx *c, const char *name, const char *why)
{
	char	*q;

	if (c->skipped == NULL && (c->skipped = export_tmp(c)) == NULL)
		return -1;
	quote_path(c->skipped, name, strlen(name));
	fprintf(c->skipped, ": %s\n", why);
	q = quote_path_dup(name);
	log_warnx("warning: not exported: %s (%s)", q != NULL ? q : "?", why);
	free(q);
	return 0;
}

/*
 * A zip entry name holds at most 65,535 bytes (a 16-bit length; a folder
 * takes one more for its '/'): libzip would store a longer name cut at
 * its length mod 65,536, which may be another path of the tree. Such a
 * path is left out and listed in skipped.txt, never stored under another
 * name.
 */
#define EXPORT_NAME_MAX	65535

static int
export_name_fits(const char *name, int dir)
{
	return strlen(name) + (dir ? 1 : 0) <= EXPORT_NAME_MAX;
}

/* Add the tree under rootfd as prefix/...: folders and regular files. */
static int
export_tree(struct export_ctx *c, int rootfd, const char *prefix)
{
	struct workspace_walk		*w;
	struct workspace_walk_entry	 e;
	char				*name = NULL, *cause = NULL;
	int				 r, rc = -1;

	c->budget = c->size_max;
	if ((w = workspace_walk_new(rootfd, &cause)) == NULL)
		goto out;
	while ((r = workspace_walk_next(w, &e, &cause)) == 1) {
		free(name);
		if (export_name(&name, prefix, e.path) == -1) {
			name = NULL;
			goto out;
		}
		if ((S_ISDIR(e.st.st_mode) || S_ISREG(e.st.st_mode)) &&
		    !export_name_fits(name, S_ISDIR(e.st.st_mode))) {
			/* nothing under a folder fits either: one line */
			if (S_ISDIR(e.st.st_mode))
				workspace_walk_prune(w);
			if (export_skip(c, name, S_ISDIR(e.st.st_mode) ?
			    "name longer than a zip entry name can hold "
			    "(65,535 bytes), and everything under it" :
			    "name longer than a zip entry name can hold "
			    "(65,535 bytes)") == -1)
				goto out;
		} else if ((S_ISDIR(e.st.st_mode) || S_ISREG(e.st.st_mode)) &&
		    strlen(name) + 1 > SG_EXPORT_NAMES_MAX - c->names) {
			if (S_ISDIR(e.st.st_mode))
				workspace_walk_prune(w);
			if (export_skip(c, name, S_ISDIR(e.st.st_mode) ?
			    "the export's names reached 4 MiB; everything "
			    "under it too" : "the export's names reached "
			    "4 MiB") == -1)
				goto out;
		} else if (S_ISDIR(e.st.st_mode)) {
			c->names += strlen(name) + 1;
			if (zip_dir_add(c->za, name, EXPORT_ENC(name)) == -1 &&
			    export_skip(c, name, zip_strerror(c->za)) == -1)
				goto out;
		} else if (S_ISREG(e.st.st_mode) && e.st.st_size > c->size_max) {
			if (export_skip(c, name, "larger than the sandbox's "
			    "--disk") == -1)
				goto out;
		} else if (S_ISREG(e.st.st_mode) &&
		    workspace_budget_take(&c->budget, &e.st) == -1) {
			if (export_skip(c, name, "the sandbox's --disk has been "
			    "exported: a hard-linked file is copied once per "
			    "name") == -1)
				goto out;
		} else if (S_ISREG(e.st.st_mode) &&
		    (c->names += strlen(name) + 1,
		    export_file(c, rootfd, &e, name) == -1))
			goto out;
	}
	rc = r;
out:
	if (cause != NULL)
		cmd_warn_text(cause);
	free(cause);
	free(name);
	workspace_walk_free(w);
	return rc;
}

/* Add the temp file f (rewound; the archive takes it) as name. */
static int
export_stream(struct export_ctx *c, const char *name, FILE *f)
{
	zip_source_t	*zs;

	if (fflush(f) != 0 || fseeko(f, 0, SEEK_SET) != 0 ||
	    (zs = zip_source_filep(c->za, f, 0, -1)) == NULL) {
		fclose(f);
		return -1;
	}
	if (zip_file_add(c->za, name, zs, ZIP_FL_ENC_UTF_8 |
	    ZIP_FL_OVERWRITE) == -1) {
		zip_source_free(zs);
		return -1;
	}
	return 0;
}

/* A temp file in the sandbox folder (never the host's /tmp). */
static FILE *
export_tmp(struct export_ctx *c)
{
	char	*cause = NULL;
	FILE	*f;
	int	 fd;

	if ((fd = workspace_tmpfile(c->sbx, &cause)) == -1) {
		cmd_warn_text(cause);
		free(cause);
		return NULL;
	}
	if ((f = fdopen(fd, "w+")) == NULL)
		close(fd);
	return f;
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
	char		*line, *path;
	size_t		 n;
	struct stat	 st;
	json_t		*o;
	FILE		*in = NULL, *out;
	int		 fd;

	if ((out = export_tmp(c)) == NULL)
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
	return export_stream(c, name, out);
}

/* diff.patch and diff.json, each streamed into a temp file. */
static int
export_diff(struct export_ctx *c)
{
	struct workspace_write_stats	 ws;
	struct workspace_diff_opts	 o;
	struct workspace_manifest	*m;
	struct workspace_diff		*d = NULL;
	char				*cause = NULL;
	FILE				*f;
	int				 i, rc = -1;

	memset(&o, 0, sizeof(o));
	o.stage = 1;
	o.size_max = c->size_max;
	if ((m = workspace_manifest_load(c->sbx, &cause)) == NULL)
		goto out;
	if ((d = workspace_diff(c->sbx, m, &o, &cause)) == NULL) {
		/* more than a diff lists: the rest of the evidence still */
		if (errno == E2BIG) {
			rc = export_skip(c, "diff.patch", cause);
			free(cause);
			cause = NULL;
		}
		goto out;
	}
	for (i = 0; i < 2; i++) {
		if ((f = export_tmp(c)) == NULL)
			goto out;
		if (workspace_diff_write(c->sbx, d, i ? WORKSPACE_WRITE_JSON :
		    0, f, &ws, &cause) == -1) {
			fclose(f);
			goto out;
		}
		if (export_stream(c, i ? "diff.json" : "diff.patch", f) == -1)
			goto out;
	}
	rc = 0;
out:
	if (cause != NULL)
		cmd_warn_text(cause);
	free(cause);
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
	char		 path[8192];
	size_t		 i;
	int		 err;

	if ((c->za = zip_open(output, ZIP_CREATE | ZIP_TRUNCATE,
	    &err)) == NULL) {
		log_warnx("cannot create '%s'", output);
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
		if (zip_dir_add(c->za, trees[i], ZIP_FL_ENC_UTF_8) == -1 ||
		    export_tree(c, c->fds[i], trees[i]) == -1)
			goto fail;
	}
	if (c->skipped != NULL) {
		if (export_stream(c, "skipped.txt", c->skipped) == -1) {
			c->skipped = NULL;
			goto fail;
		}
		c->skipped = NULL;
	}
	if (zip_close(c->za) == -1) {
		log_warnx("cannot write '%s': %s", output,
		    zip_error_code_system(zip_get_error(c->za)) == EDQUOT ?
		    "the working copy held more than the sandbox's --disk of "
		    "data when it was read (something filled its files "
		    "meanwhile)" : zip_strerror(c->za));
		zip_discard(c->za);
		return -1;
	}
	return 0;
fail:
	log_warnx("cannot build '%s': %s", output,
	    zip_strerror(c->za));
	zip_discard(c->za);
	return -1;
}

static int
cmd_export_exec(struct cmd_args *args)
{
	const struct cmd_opt	*o;
	struct export_ctx	 c;
	const char		*output = NULL;
	char			*container = NULL, *cause = NULL;
	unsigned long long	 disk = 0;
	int			 lock, rc;

	while ((o = cmd_args_next(args)) != NULL)
		output = o->arg;	/* --output, required */
	memset(&c, 0, sizeof(c));
	c.id = args->argv[0];
	c.fds[0] = c.fds[1] = -1;
	if (state_path(c.sbx, sizeof(c.sbx), c.id, NULL) == -1 ||
	    (lock = state_lock(c.id, 0)) == -1) {
		log_warnx("no sandbox '%s'", c.id);
		return SG_EXIT_ERROR;
	}
	rc = SG_EXIT_ERROR;
	if (workspace_meta_limits(c.sbx, &container, &disk, &cause) == -1)
		cmd_warn_text(cause);
	else {
		c.size_max = (off_t)(disk ? disk : SANDBOX_DEF_DISK);
		rc = export_run(&c, output) == 0 ? SG_EXIT_OK : SG_EXIT_ERROR;
	}
	free(container);
	free(cause);
	if (c.skipped != NULL)
		fclose(c.skipped);
	if (c.fds[0] != -1)
		close(c.fds[0]);
	if (c.fds[1] != -1)
		close(c.fds[1]);
	state_unlock(lock);
	return rc;
}
