/*
 * ownmark.h: owner marks, files that stand for a sandgate process while
 * it runs: an exec --fresh's mark in its sandbox's folder (its fresh
 * container goes when the owner is gone), a run's .active marker (its
 * proxy credential ends when the owner is gone). The owner makes the
 * mark (ownmark_make) and holds it locked (flock, exclusive) for as long
 * as it runs; the kernel lets the lock go when the last descriptor of it
 * closes, at the owner's end however it ends (SIGKILL included). A judge
 * that finds the lock held knows the owner runs with no /proc at all:
 * whatever its pid namespace, its /proc (hidepid, the parent
 * namespace's procfs) or its time namespace (which shifts the start
 * times /proc shows). A mark whose lock is free (an older sandgate's,
 * which held none, or an owner that is gone) is judged by the owner's
 * name in it, "PID START PIDNS BOOT UID" (procstat_owner_alive).
 */
#ifndef SG_OWNMARK_H
#define SG_OWNMARK_H

/*
 * Make the mark name in the folder dirfd (mode 0600) holding text (may
 * be NULL: empty), locked by this process: written aside (".new.NAME"),
 * locked, then renamed, so that no judge ever opens it unlocked. The
 * descriptor that holds the lock (close-on-exec: no command inherits
 * it), kept open until the owner's end or its mark's removal, or -1 with
 * errno. A file system that refuses the lock (ENOLCK) leaves the mark
 * unlocked, judged by its text only.
 */
int	ownmark_make(int dirfd, const char *name, const char *text);

/*
 * 1 when fd, a mark opened by the judge, is held locked by another open
 * of it (its owner, running), 0 when it is not (the judge's own look is
 * let go at once), -1 when that cannot be told.
 */
int	ownmark_held(int fd);

/*
 * Whether the owner of the mark name in dirfd, named text ("PID START
 * PIDNS BOOT UID"), still runs: 1 when the mark is held (ownmark_held),
 * otherwise procstat_owner_alive(text).
 */
int	ownmark_alive(int dirfd, const char *name, const char *text);

#endif
