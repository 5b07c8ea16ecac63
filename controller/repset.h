/*
 * repset.h: the proxy replicas a sandbox is registered with (atk1921h
 * F3), kept in its folder as state_path(id, "replicas"): one line, the
 * names proxyctl_set() gives (each URL of SANDGATE_PROXY_CONTROL, or
 * PROXYCTL_SET_SOCKET), comma-separated. Written before each
 * registration of the sandbox, adding the environment's replicas to
 * those recorded before; every unregister and exec end of the sandbox
 * goes to them (and to those of the environment then), whatever the
 * environment of the command that sends it names.
 */
#ifndef SG_REPSET_H
#define SG_REPSET_H

/* Add the environment's replicas to those of sandbox id. 0, or -1. */
int	 repset_record(const char *id, char **cause);

/*
 * The replicas sandbox id is registered with (heap), or NULL when none
 * is recorded (never registered, or by an older sandgate).
 */
char	*repset_load(const char *id);

#endif
