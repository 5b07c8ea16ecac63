/* freeze.c: a sandbox's limits and its container frozen; see freeze.h. */
#include <stdlib.h>
#include <string.h>

#include "docker.h"
#include "freeze.h"
#include "sandbox.h"
#include "util.h"
#include "workspace.h"

int
freeze_begin(struct freeze *fz, const char *sbxdir, int do_freeze,
    char **cause)
{
	char	*why = NULL;

	memset(fz, 0, sizeof(*fz));
	if (workspace_meta_limits(sbxdir, &fz->container, &fz->disk,
	    cause) == -1)
		return -1;
	if (fz->disk == 0)
		fz->disk = SANDBOX_DEF_DISK;
	if (!do_freeze || fz->container == NULL)
		return 0;
	if ((fz->d = docker_new(&why)) == NULL ||
	    docker_freeze(fz->d, fz->container, &why) == -1) {
		util_cause(cause, "cannot freeze the sandbox's container "
		    "while its files are read: %s", why);
		free(why);
		docker_free(fz->d);
		fz->d = NULL;
		return -1;
	}
	return 0;
}

int
freeze_interrupted(void)
{
	return docker_freeze_signal();
}

int
freeze_end(struct freeze *fz, char **cause)
{
	char	*why = NULL;
	int	 rv = 0;

	if (fz->d != NULL && docker_thaw(fz->d, &why) == -1) {
		util_cause(cause, "cannot unpause the sandbox's container "
		    "(the next exec unpauses it): %s", why);
		rv = -1;
	}
	free(why);
	docker_free(fz->d);
	fz->d = NULL;
	free(fz->container);
	fz->container = NULL;
	return rv;
}
