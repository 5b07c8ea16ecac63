/*
 * cmd_secret.c: sandgate secret set|list|rm — the values of the
 * credentials that tls: terminate entries name, kept where the proxy
 * alone reads them (secretdir.h), never in policy.d. A value is read
 * from stdin and never printed; after a change the running proxy, if
 * any, is told to reload.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>

#include "cmd.h"
#include "log.h"
#include "policy.h"
#include "proxyctl.h"
#include "secretdir.h"
#include "util.h"

static int	cmd_secret_set_exec(struct cmd_args *);
static int	cmd_secret_list_exec(struct cmd_args *);
static int	cmd_secret_rm_exec(struct cmd_args *);
static void	cmd_secret_reload(void);

const struct cmd_entry cmd_secret;

static const struct cmd_entry cmd_secret_set = {
	.name = "set",
	.usage = "NAME < VALUE",
	.summary = "set secret NAME to what stdin holds (one trailing "
	    "newline dropped)",
	.parent = &cmd_secret,
	.accepts = "",
	.args_min = 1,
	.args_max = 1,
	.exec = cmd_secret_set_exec,
};

static const struct cmd_entry cmd_secret_list = {
	.name = "list",
	.usage = "",
	.summary = "the names of the secrets set (never their values)",
	.parent = &cmd_secret,
	.accepts = "",
	.args_max = 0,
	.exec = cmd_secret_list_exec,
};

static const struct cmd_entry cmd_secret_rm = {
	.name = "rm",
	.usage = "NAME",
	.summary = "remove secret NAME",
	.parent = &cmd_secret,
	.accepts = "",
	.args_min = 1,
	.args_max = 1,
	.exec = cmd_secret_rm_exec,
};

static const struct cmd_entry *const cmd_secret_verbs[] = {
	&cmd_secret_set, &cmd_secret_list, &cmd_secret_rm, NULL
};

const struct cmd_entry cmd_secret = {
	.name = "secret",
	.usage = "set|list|rm [NAME]",
	.summary = "credentials the proxy sets for tls: terminate entries",
	.help = "A policy entry names a secret (credentials: {header: H, "
	    "secret: NAME});\nits value lives here, readable by the proxy "
	    "alone, never in policy.d.\n",
	.verbs = cmd_secret_verbs,
};

/* A running proxy reads the folder again (POST /reload); none is fine. */
static void
cmd_secret_reload(void)
{
	json_t	*resp = NULL;
	char	*cause = NULL;
	long	 status = 0;

	if (proxyctl_call("POST", "/reload", NULL, &status, &resp, &cause) ==
	    -1) {
		printf("the proxy reads it when it next starts or reloads\n");
		free(cause);
		return;
	}
	json_decref(resp);
	if (status == 200)
		printf("the proxy reloaded\n");
	else
		log_warnx("the proxy refused to reload (its policy has "
		    "errors): it reads the secret at its next reload");
}

static int
cmd_secret_set_exec(struct cmd_args *args)
{
	char	 buf[SG_SECRET_VALUE_MAX + 2], *cause = NULL;
	size_t	 len = 0;
	ssize_t	 n;
	int	 rc = SG_EXIT_OK;

	while (len < sizeof(buf) && (n = read(STDIN_FILENO, buf + len,
	    sizeof(buf) - len)) != 0) {
		if (n == -1 && errno == EINTR)
			continue;
		if (n == -1) {
			log_warnx("cannot read the value from stdin: %s",
			    strerror(errno));
			rc = SG_EXIT_ERROR;
			goto out;
		}
		len += (size_t)n;
	}
	if (len > 0 && buf[len - 1] == '\n')
		len--;
	if (len > SG_SECRET_VALUE_MAX) {
		log_warnx("the value on stdin is longer than %d bytes",
		    SG_SECRET_VALUE_MAX);
		rc = SG_EXIT_USAGE;
		goto out;
	}
	if (secretdir_set(args->argv[0], buf, len, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		rc = SG_EXIT_USAGE;
		goto out;
	}
	printf("secret %s set\n", args->argv[0]);
	cmd_secret_reload();
out:
	OPENSSL_cleanse(buf, sizeof(buf));
	return rc;
}

static int
cmd_secret_list_exec(struct cmd_args *args)
{
	char	*cause = NULL;

	(void)args;
	if (secretdir_list(stdout, &cause) == -1) {
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	}
	return SG_EXIT_OK;
}

static int
cmd_secret_rm_exec(struct cmd_args *args)
{
	char	*cause = NULL;

	switch (secretdir_rm(args->argv[0], &cause)) {
	case -1:
		log_warnx("%s", cause);
		free(cause);
		return SG_EXIT_ERROR;
	case 1:
		log_warnx("no secret \"%s\" is set", args->argv[0]);
		return SG_EXIT_FAIL;
	}
	printf("secret %s removed\n", args->argv[0]);
	cmd_secret_reload();
	return SG_EXIT_OK;
}
