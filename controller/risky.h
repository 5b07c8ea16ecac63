/*
 * risky.h: which changed paths could run code on the host or in CI once
 * applied (build files, CI workflows, shell rc files, git hooks, editor
 * tasks), and names holding a combining character (a decomposed name
 * looks like its composed twin). `sandgate diff` flags them and
 * `sandgate apply --all` leaves them out unless --include-risky is given.
 */
#ifndef SG_RISKY_H
#define SG_RISKY_H

/*
 * Is this relative path ('/'-separated) risky? Returns 1 or 0, and on 1
 * sets *why (if not NULL) to a static phrase naming the rule, e.g.
 * "CI workflow". Pure; no I/O.
 */
int	risky_path(const char *relpath, const char **why);

#endif
