/*
 * cmd_image.c: sandgate image build|status — the sandboxes' default image
 * sandgate/base, built from Debian's packages (images/base/build.sh).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "docker.h"
#include "log.h"
#include "script.h"
#include "state.h"
#include "util.h"

static int	cmd_image_build_exec(struct cmd_args *);
static int	cmd_image_status_exec(struct cmd_args *);
static int	image_status(const char *);
static const char *image_tag(struct cmd_args *);

const struct cmd_entry cmd_image;

static const struct option cmd_image_options[] = {
	{ "with", required_argument, NULL, 'w' },
	{ "tag", required_argument, NULL, 't' },
	{ "force", no_argument, NULL, 'f' },
	{ NULL, 0, NULL, 0 }
};

static const struct cmd_entry cmd_image_build = {
	.name = "build",
	.usage = "[--with node] [--tag NAME] [--force]",
	.summary = "build the image (--with node adds node)",
	.parent = &cmd_image,
	.accepts = "wtf",
	.args_max = 0,
	.exec = cmd_image_build_exec,
};

static const struct cmd_entry cmd_image_status = {
	.name = "status",
	.usage = "[--tag NAME]",
	.summary = "print the image's id and manifest, or exit 1 if it is not "
	    "built",
	.parent = &cmd_image,
	.accepts = "t",
	.args_max = 0,
	.exec = cmd_image_status_exec,
};

static const struct cmd_entry *const cmd_image_verbs[] = {
	&cmd_image_build, &cmd_image_status, NULL
};

const struct cmd_entry cmd_image = {
	.name = "image",
	.usage = "build|status [--with node] [--tag NAME] [--force]",
	.summary = "build the default sandbox image from Debian's packages",
	.help = "The image is sandgate/base (python3, pip, venv, git, curl; "
	    "--with node adds node), built by images/base/build.sh.",
	.options = cmd_image_options,
	.verbs = cmd_image_verbs,
};

/* state_root()/images/<tag with '/' and ':' as '_'>.manifest */
static void
image_manifest_path(const char *tag, char *buf, size_t size)
{
	char	name[256], *p;

	util_strlcpy(name, tag, sizeof(name));
	for (p = name; *p != '\0'; p++)
		if (*p == '/' || *p == ':')
			*p = '_';
	snprintf(buf, size, "%s/images/%s.manifest", state_root(), name);
}

static int
image_status(const char *tag)
{
	struct docker	*d;
	char		*cause = NULL, *id = NULL, path[PATH_MAX];
	int		 rc = SG_EXIT_OK;

	if ((d = docker_new(&cause)) == NULL) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	image_manifest_path(tag, path, sizeof(path));
	if (docker_image_id(d, tag, &id, &cause) == -1) {
		printf("%s: not built (run `sandgate image build`)\n", tag);
		rc = SG_EXIT_FAIL;
	} else
		printf("%s: %s\nmanifest: %s\n", tag, id, path);
	free(cause);
	free(id);
	docker_free(d);
	return rc;
}

/* The --tag given, or the default. */
static const char *
image_tag(struct cmd_args *args)
{
	const struct cmd_opt	*o;
	const char		*tag = "sandgate/base:latest";

	while ((o = cmd_args_next(args)) != NULL)
		if (o->ch == 't')
			tag = o->arg;
	args->next = 0;
	return tag;
}

static int
cmd_image_status_exec(struct cmd_args *args)
{
	return image_status(image_tag(args));
}

static int
cmd_image_build_exec(struct cmd_args *args)
{
	const struct cmd_opt	*o;
	const char		*tag = image_tag(args), *with = NULL;
	char			 manifest[PATH_MAX], dir[PATH_MAX + 16];
	char			*argv[10], *cause = NULL;
	int			 force = 0, n = 0;

	while ((o = cmd_args_next(args)) != NULL) {
		if (o->ch == 'f')
			force = 1;
		else if (o->ch == 'w' && strcmp(o->arg, "node") != 0)
			return cmd_usage_error(&cmd_image_build, "--with takes "
			    "'node'");
		else if (o->ch == 'w')
			with = o->arg;
	}
	image_manifest_path(tag, manifest, sizeof(manifest));
	snprintf(dir, sizeof(dir), "%s/images", state_root());
	if (state_mkdirs(dir, 0755) == -1) {
		log_warnx("%s: %s", dir, strerror(errno));
		return SG_EXIT_ERROR;
	}
	argv[n++] = (char *)"--tag";
	argv[n++] = (char *)tag;
	argv[n++] = (char *)"--manifest-out";
	argv[n++] = manifest;
	if (with != NULL) {
		argv[n++] = (char *)"--with";
		argv[n++] = (char *)with;
	}
	if (force)
		argv[n++] = (char *)"--force";
	argv[n] = NULL;
	if (script_run("images/base/build.sh", argv, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	return image_status(tag);
}
