/*
 * repset.h: the proxy replicas a sandbox is registered with (atk1921h
 * F3), kept in its folder as state_path(id, "replicas"): one line, the
 * names proxyctl_set() gives (each URL of SANDGATE_PROXY_CONTROL, or
 * PROXYCTL_SET_SOCKET), comma-separated. Written before each
 * registration of the sandbox and each exec credential given (atk1921i
 * F3), under a lock on its folder, adding the environment's replicas to
 * those recorded before; every unregister and exec end of the sandbox
 * goes to them (and to those of the environment then), whatever the
 * environment of the command that sends it names.
 */
#ifndef SG_REPSET_H
#define SG_REPSET_H

/*
 * Add the environment's replicas to those of sandbox id (nothing written
 * when it holds them all already). 0, or -1 when the file there cannot
 * be read (it is not overwritten, atk1921i F8) or the set would name more
 * than PROXYCTL_TARGETS_MAX (atk1921i F10).
 */
int	 repset_record(const char *id, char **cause);

/*
 * The replicas sandbox id is registered with (heap), or NULL: none is
 * recorded (never registered, or by an older sandgate: no file), or,
 * with *bad (heap) saying why, the file there cannot be read (not a
 * regular file, empty, cut before its newline): then no one knows them.
 */
char	*repset_load(const char *id, char **bad);

/*
 * rc of a send made to the replicas of to, where the load of to gave
 * bad: unchanged when bad is NULL, else -1 (not confirmed: who holds it
 * is not known), the environment's replicas added to *left and bad put
 * before *why; bad freed.
 */
int	 repset_unknown(char *bad, int rc, char **left, char **why);

#endif
