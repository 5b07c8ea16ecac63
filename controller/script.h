/*
 * script.h: running the shipped shell scripts (image builders) from the
 * data folder: $SANDGATE_DATA_DIR, else the compiled default (the source
 * tree for a build, /usr/share/sandgate when installed).
 */
#ifndef SG_SCRIPT_H
#define SG_SCRIPT_H

/* The data folder (static storage). */
const char	*script_data_dir(void);
/* The folder holding this sandgate binary (static storage). */
const char	*script_bin_dir(void);

/*
 * Run bash DATA/relpath with args (NULL-terminated, without the script
 * name); its stdout goes to our stderr so that command output stays
 * machine-readable. Returns 0 when it exits 0, else -1 with *cause.
 */
int		 script_run(const char *relpath, char *const args[],
		    char **cause);

#endif
