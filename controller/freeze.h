/*
 * freeze.h: what diff and apply need around their work on a sandbox's
 * working copy: its limits from meta.json, and its session container
 * frozen (docker_freeze) while they read or copy it, so that nothing in
 * the sandbox changes the files meanwhile.
 */
#ifndef SG_FREEZE_H
#define SG_FREEZE_H

struct docker;

struct freeze {
	struct docker		*d;		/* NULL: nothing frozen */
	char			*container;	/* NULL: none recorded */
	unsigned long long	 disk;		/* --disk (the default if none) */
};

/*
 * Read the sandbox's container and --disk, and with do_freeze freeze
 * the container (a sandbox without one, or whose container is gone,
 * needs none). 0, or -1 with *cause (Docker unreachable: fail closed).
 */
int	freeze_begin(struct freeze *, const char *sbxdir, int do_freeze,
	    char **cause);
/* The signal that came while frozen, or 0 (freeze_interrupted: polled). */
int	freeze_interrupted(void);
/* Thaw and release; safe to call twice. 0, or -1 with *cause. */
int	freeze_end(struct freeze *, char **cause);

#endif
