/*
 * risky.h: which changed paths could run code on the host or in CI once
 * applied (build files, CI workflows, shell rc files, git hooks, editor
 * tasks), and names that may look like another name: a name not in
 * Unicode NFC (a decomposed "cafe" + U+0301, the singletons U+212B and
 * U+212A, Arabic letters with U+0653/U+0654: each shows as its composed
 * twin), a name whose NFC form is another path's, and one that reads like
 * another path (workspace_diff checks both against the diff and the
 * snapshot, folder by folder): the same look-alike key (risky_key_dup:
 * slash and dot look-alikes read as '/' and '.', then Unicode NFKC and
 * case folding, so U+2024, U+FF0F, U+FB01 or "SETUP.PY" match). A name
 * whose folder or file name mixes letters of scripts no name mixes
 * (Latin with Cyrillic or Greek, UTS #39's highly restrictive level) is
 * risky, and the path rules match case-insensitively, also the key (a
 * ".GitHub/workflows" or "setup\u2024py" on a case-insensitive host is
 * the real thing). `sandgate diff` flags them and `sandgate apply --all`
 * leaves them out unless --include-risky is given. Unicode comes from
 * libunistring (u8_normalize, u8_casefold, uc_script).
 */
#ifndef SG_RISKY_H
#define SG_RISKY_H

#include <stdint.h>

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

#define RISKY_WHY_MIXED	"name mixing letters of several scripts " \
			"(Latin and Cyrillic, ...): it may look like another name"
#define RISKY_WHY_ALIKE	"name that reads like another path's (Unicode " \
			"NFKC, case, a slash or dot look-alike): it may be " \
			"taken for it"

/* 1 if relpath is valid UTF-8 and not in NFC, else 0. */
int	risky_not_nfc(const char *relpath);

/*
 * The NFC form of relpath (malloc'ed), or NULL when relpath is not valid
 * UTF-8 or memory is short.
 */
char	*risky_nfc_dup(const char *relpath);

/*
 * The look-alike key of relpath (malloc'ed): slash and dot look-alikes
 * as '/' and '.', then NFKC and case folded; NULL when relpath is not
 * valid UTF-8 or memory is short. Two paths with one key look alike.
 */
char	*risky_key_dup(const char *relpath);

/* '/' or '.' for a character drawn like it (quoted in names), else 0. */
int	risky_lookalike_cp(uint32_t cp);

/* 1 if a folder or file name of relpath mixes scripts (see above). */
int	risky_mixed_script(const char *relpath);

#endif
