/*
 * polwatch.h: reload the policy when its folder changes, without a
 * signal: for a policy mounted from a Kubernetes ConfigMap.
 *
 * The kubelet mounts a ConfigMap as DIR/..2026_12_02_10_00_00.123/ (the
 * files), DIR/..data -> that folder and DIR/NAME -> ..data/NAME, and
 * updates it atomically: a new timestamped folder, a ..data_tmp link to
 * it renamed over ..data, the old folder removed. The watch (inotify on
 * DIR) sees that rename as IN_MOVED_TO "..data" and reloads
 * POLWATCH_DEBOUNCE_MS after the last such event, as SIGHUP does: a
 * broken version is refused (policy.rejected) and the old policy stays.
 * After the rename the kubelet makes the links of files the update added
 * and removes those of files it dropped: a .yaml name made or removed
 * counts too, so a reload that ran between the rename and the links is
 * followed by one that sees them. In a folder without ..data (watch
 * asked for with --policy-watch), only .yaml files count: written, moved
 * in or removed.
 */
#ifndef SG_POLWATCH_H
#define SG_POLWATCH_H

struct proxy;

#define POLWATCH_DEBOUNCE_MS	300
#define POLWATCH_DATA		"..data"

/*
 * Watch px->cfg.policy_dir when force is set or the folder has ..data;
 * otherwise do nothing. 0, or -1 with *cause (malloc'd).
 */
int	polwatch_start(struct proxy *, int force, char **cause);
void	polwatch_stop(void);

/*
 * 1 when an inotify event on name (NULL: none) asks for a reload: a
 * .yaml name that is not hidden, or ..data in a ConfigMap folder
 * (configmap set).
 */
int	polwatch_wants(const char *name, int configmap);

#endif
