/*
 * cmd_image.c: sandgate image build|status — the sandboxes' default image
 * sandgate/base, built from Debian's packages (images/base/build.sh).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"
#include "docker.h"
#include "script.h"
#include "state.h"
#include "util.h"

static int	cmd_image_exec(int, char **);

const struct cmd_entry cmd_image = {
	.name = "image",
	.usage = "build|status [--with node] [--tag NAME] [--force]",
	.summary = "build the default sandbox image sandgate/base from "
	    "Debian's packages (python3, pip, venv, git, curl)",
	.exec = cmd_image_exec,
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
		fprintf(stderr, "sandgate: %s\n", cause);
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

static int
cmd_image_exec(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "with", required_argument, NULL, 'w' },
		{ "tag", required_argument, NULL, 't' },
		{ "force", no_argument, NULL, 'f' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 }
	};
	const char	*tag = "sandgate/base:latest", *with = NULL;
	char		 manifest[PATH_MAX], dir[PATH_MAX + 16];
	char		*args[10], *cause = NULL;
	int		 ch, force = 0, n = 0;

	optind = 1;
	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (ch) {
		case 'w':
			if (strcmp(optarg, "node") != 0)
				return cmd_usage_error(&cmd_image, "--with "
				    "takes 'node'");
			with = optarg;
			break;
		case 't': tag = optarg; break;
		case 'f': force = 1; break;
		case 'h': return cmd_help(&cmd_image);
		case ':':
			return cmd_usage_error(&cmd_image, "option '%s' needs "
			    "a value", argv[optind - 1]);
		default:
			return cmd_usage_error(&cmd_image, "unknown option "
			    "'%s'", argv[optind - 1]);
		}
	}
	if (optind != argc - 1)
		return cmd_usage_error(&cmd_image, "want build or status");
	if (strcmp(argv[optind], "status") == 0)
		return image_status(tag);
	if (strcmp(argv[optind], "build") != 0)
		return cmd_usage_error(&cmd_image, "unknown action '%s'",
		    argv[optind]);
	image_manifest_path(tag, manifest, sizeof(manifest));
	snprintf(dir, sizeof(dir), "%s/images", state_root());
	if (state_mkdirs(dir, 0755) == -1) {
		fprintf(stderr, "sandgate: %s: %s\n", dir, strerror(errno));
		return SG_EXIT_ERROR;
	}
	args[n++] = (char *)"--tag";
	args[n++] = (char *)tag;
	args[n++] = (char *)"--manifest-out";
	args[n++] = manifest;
	if (with != NULL) {
		args[n++] = (char *)"--with";
		args[n++] = (char *)with;
	}
	if (force)
		args[n++] = (char *)"--force";
	args[n] = NULL;
	if (script_run("images/base/build.sh", args, &cause) == -1) {
		fprintf(stderr, "sandgate: %s\n", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	return image_status(tag);
}
