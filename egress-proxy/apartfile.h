/*
 * apartfile.h: the files a change is kept apart in when the file it
 * belongs to cannot be saved (registry-NAME.json.removed beside the
 * registry, grants-NAME.json.revoked beside the grants), so a restart
 * applies it again.
 *
 * Such a file is made at start holding APARTFILE_RESERVE bytes of blank
 * lines (spaces, a newline at the end), written and synced: a change is
 * then written over that padding in place, which needs neither a new
 * inode nor a new data block, so it is kept even once the folder is out
 * of both (on filesystems that write in place: ext4, xfs, tmpfs; not
 * copy-on-write ones). Past the padding, lines are appended. Readers
 * skip blank lines. Lines are written whole, each ending in a newline.
 */
#ifndef SG_APARTFILE_H
#define SG_APARTFILE_H

#include <stddef.h>

#define APARTFILE_RESERVE	16384	/* room for about 150 removals */
#define APARTFILE_MAX		(8 * 1024 * 1024)	/* read at most */

/*
 * Made at start (what: the change it keeps, for the warning when it
 * cannot be), with its padding unless it holds some already.
 */
void	apartfile_create(const char *path, const char *what);

/*
 * line (NULL: out of memory) kept in path and synced: 0, or -1 (errno
 * EFBIG when the file would grow past APARTFILE_MAX, which it could not
 * be read back from).
 */
int	apartfile_add(const char *path, const char *line);

/*
 * The file it stands beside now holds every change: path is blanked in
 * place (its padding kept), once the rename that put that file in place
 * is on disk, else a crash could leave the old file and no changes.
 * When it is there but cannot be opened or emptied, a warning says so.
 */
void	apartfile_clear(const char *path);

/* 1 when path holds no change (blank, empty or missing). */
int	apartfile_blank(const char *path);

/*
 * Each line of text (len bytes, a file of apartfile_add's lines) that is
 * not padding, to line(s, n, damage, arg) in order until it returns -1.
 * damage: 0, or what makes the line not one written whole, APARTFILE_NUL
 * (a NUL byte in it) and APARTFILE_TORN (the last line, with no newline;
 * s still holds what there is). Each caller decides how a damaged line
 * fails closed; apartfile_damage() says the damage in words.
 */
#define APARTFILE_NUL	0x1
#define APARTFILE_TORN	0x2
typedef int	(*apartfile_line_fn)(const char *s, size_t n, int damage,
		    void *arg);
void		 apartfile_lines(const char *text, size_t len,
		    apartfile_line_fn line, void *arg);
const char	*apartfile_damage(int damage);

#endif
