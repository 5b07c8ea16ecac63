/* cmd_list.c: `sandgate list`: the sandboxes and their container state. */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cmd.h"
#include "docker.h"
#include "log.h"
#include "sandbox.h"
#include "state.h"

static int	 cmd_list_exec(struct cmd_args *);
static json_t	*list_states(struct docker *);
static json_t	*list_collect(json_t *);
static void	 list_add(json_t *, const struct sandbox_meta *, json_t *);
static void	 list_print(json_t *, int);

static const struct option cmd_list_options[] = {
	{ "json", no_argument, NULL, 'j' },
	{ NULL, 0, NULL, 0 }
};

const struct cmd_entry cmd_list = {
	.name = "list",
	.usage = "[--json]",
	.summary = "list sandboxes: id, created, source, image, status",
	.options = cmd_list_options,
	.args_max = 0,
	.exec = cmd_list_exec,
};

/* sandbox id -> State of its session container, from one list call. */
static json_t *
list_states(struct docker *d)
{
	json_t		*list = NULL, *map, *c, *labels, *role;
	const char	*id;
	char		*cause = NULL;
	size_t		 i;

	map = json_object();
	if (docker_container_list(d, SANDBOX_LABEL, NULL, &list,
	    &cause) == -1) {
		log_warnx("warning: %s", cause);
		free(cause);
		return map;
	}
	json_array_foreach(list, i, c) {
		labels = json_object_get(c, "Labels");
		role = json_object_get(labels, SANDBOX_LABEL_ROLE);
		id = json_string_value(json_object_get(labels, SANDBOX_LABEL));
		if (id == NULL || (role != NULL && strcmp(json_string_value(
		    role) ? json_string_value(role) : "", "session") != 0))
			continue;
		json_object_set(map, id, json_object_get(c, "State"));
	}
	json_decref(list);
	return map;
}

static void
list_add(json_t *out, const struct sandbox_meta *m, json_t *states)
{
	json_t	*st = json_object_get(states, m->id);

	json_array_append_new(out, json_pack("{s:s, s:s?, s:s?, s:s?, s:s, "
	    "s:b}", "id", m->id, "created", m->created, "source", m->source,
	    "image", m->image, "status", json_is_string(st) ?
	    json_string_value(st) : "missing", "ephemeral", m->ephemeral));
}

/* One object per sandbox folder, sorted by id. */
static json_t *
list_collect(json_t *states)
{
	struct dirent		**ents = NULL;
	struct sandbox_meta	  m;
	char			  dir[PATH_MAX], *cause = NULL;
	json_t			 *out;
	int			  n, i;

	out = json_array();
	snprintf(dir, sizeof(dir), "%s/sandboxes", state_root());
	if ((n = scandir(dir, &ents, NULL, alphasort)) < 0)
		return out;
	for (i = 0; i < n; i++) {
		if (state_valid_id(ents[i]->d_name) == 0) {
			if (sandbox_meta_load(ents[i]->d_name, &m, &cause) == 0)
				list_add(out, &m, states);
			free(cause);
			cause = NULL;
			sandbox_meta_release(&m);
		}
		free(ents[i]);
	}
	free(ents);
	return out;
}

static void
list_print(json_t *list, int json)
{
	json_t	*s;
	size_t	 i;

	if (json) {
		json_dumpf(list, stdout, JSON_COMPACT);
		putchar('\n');
		return;
	}
	printf("%-28s  %-20s  %-10s  %-24s  %s\n", "ID", "CREATED", "STATUS",
	    "IMAGE", "SOURCE");
	json_array_foreach(list, i, s) {
		printf("%-28s  %-20.19s  %-10s  %-24s  %s\n",
		    json_string_value(json_object_get(s, "id")),
		    json_string_value(json_object_get(s, "created")) ?
		    json_string_value(json_object_get(s, "created")) : "-",
		    json_string_value(json_object_get(s, "status")),
		    json_string_value(json_object_get(s, "image")) ?
		    json_string_value(json_object_get(s, "image")) : "-",
		    json_string_value(json_object_get(s, "source")) ?
		    json_string_value(json_object_get(s, "source")) : "-");
	}
}

static int
cmd_list_exec(struct cmd_args *args)
{
	struct docker	*d;
	json_t		*states, *list;
	int		 json = args->nopts > 0;	/* --json */

	if ((d = sandbox_docker()) == NULL)
		return SG_EXIT_ERROR;
	states = list_states(d);
	list = list_collect(states);
	list_print(list, json);
	json_decref(list);
	json_decref(states);
	docker_free(d);
	return SG_EXIT_OK;
}
