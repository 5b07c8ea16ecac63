/*
 * risky.h: which changed paths could run code on the host or in CI once
 * applied (build files, CI workflows, shell rc files, git hooks, editor
 * tasks), and names that may look like another name: a name not in
 * Unicode NFC (a decomposed "cafe" + U+0301, the singletons U+212B and
 * U+212A, Arabic letters with U+0653/U+0654: each shows as its composed
 * twin), and a name whose NFC form is another path's (workspace_diff
 * checks that against the diff and the snapshot). `sandgate diff` flags
 * them and `sandgate apply --all` leaves them out unless --include-risky
 * is given. NFC comes from libunistring (u8_normalize).
 */
#ifndef SG_RISKY_H
#define SG_RISKY_H

/*
 * Is this relative path ('/'-separated) risky? Returns 1 or 0, and on 1
 * sets *why (if not NULL) to a static phrase naming the rule, e.g.
 * "CI workflow". Pure; no I/O.
 */
int	risky_path(const char *relpath, const char **why);

/* The reasons for the two name rules. */
#define RISKY_WHY_NFC	"name not in Unicode NFC: it may look like another name"
#define RISKY_WHY_TWIN	"name whose Unicode NFC form is another path's: " \
			"it may look like that name"

/* 1 if relpath is valid UTF-8 and not in NFC, else 0. */
int	risky_not_nfc(const char *relpath);

/*
 * The NFC form of relpath (malloc'ed), or NULL when relpath is not valid
 * UTF-8 or memory is short.
 */
char	*risky_nfc_dup(const char *relpath);

#endif
