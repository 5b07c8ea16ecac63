/* polwatch.c: reload on a ConfigMap's ..data swap (inotify); polwatch.h. */
#include <sys/inotify.h>

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "polwatch.h"
#include "proxy.h"
#include "util.h"

static int		 polwatch_fd = -1;
static int		 polwatch_cm;		/* the folder has ..data */
static struct event	*polwatch_ev;
static struct event	*polwatch_timer;

static void	polwatch_read(evutil_socket_t, short, void *);
static void	polwatch_fire(evutil_socket_t, short, void *);

int
polwatch_wants(const char *name, int configmap)
{
	size_t	len;

	if (name == NULL)
		return 0;
	if (configmap && strcmp(name, POLWATCH_DATA) == 0)
		return 1;
	len = strlen(name);
	return name[0] != '.' && len > 5 && strcmp(name + len - 5,
	    ".yaml") == 0;
}

/* The debounce ran out: reload as SIGHUP does. */
static void
polwatch_fire(evutil_socket_t fd, short what, void *arg)
{
	struct proxy	*px = arg;
	char		*errors = NULL;

	log_info("policy folder %s changed: reloading", px->cfg.policy_dir);
	if (proxy_reload(px, &errors) == -1)
		log_warnx("policy in %s refused after the change; the old one "
		    "stays in force: %s", px->cfg.policy_dir, errors ? errors :
		    "[]");
	free(errors);
}

/* Drain the inotify queue; (re)arm the debounce when a change counts. */
static void
polwatch_read(evutil_socket_t fd, short what, void *arg)
{
	char			 buf[16 * (sizeof(struct inotify_event) +
				    NAME_MAX + 1)]
				    __attribute__((aligned(__alignof__(
				    struct inotify_event))));
	const struct inotify_event *ie;
	struct timeval		 tv = { 0, POLWATCH_DEBOUNCE_MS * 1000 };
	ssize_t			 n, off;
	int			 hit = 0;

	while ((n = read(fd, buf, sizeof(buf))) > 0) {
		for (off = 0; off + (ssize_t)sizeof(*ie) <= n;
		    off += (ssize_t)sizeof(*ie) + ie->len) {
			ie = (const struct inotify_event *)(buf + off);
			if (ie->mask & IN_Q_OVERFLOW)
				hit = 1;
			else if (ie->len > 0 && polwatch_wants(ie->name,
			    polwatch_cm))
				hit = 1;
		}
	}
	if (n == -1 && errno != EAGAIN && errno != EINTR)
		log_warn("reading the policy folder's watch");
	if (hit)
		evtimer_add(polwatch_timer, &tv);
	(void)arg;
	(void)what;
}

int
polwatch_start(struct proxy *px, int force, char **cause)
{
	char		*data;
	uint32_t	 mask = IN_MOVED_TO | IN_CREATE | IN_CLOSE_WRITE |
			    IN_DELETE | IN_MOVED_FROM | IN_ONLYDIR;

	*cause = NULL;
	util_xasprintf(&data, "%s/" POLWATCH_DATA, px->cfg.policy_dir);
	polwatch_cm = access(data, F_OK) == 0;
	free(data);
	if (!force && !polwatch_cm)
		return 0;
	polwatch_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	if (polwatch_fd == -1 || inotify_add_watch(polwatch_fd,
	    px->cfg.policy_dir, mask) == -1) {
		util_cause(cause, "cannot watch: %s", strerror(errno));
		goto fail;
	}
	polwatch_ev = event_new(px->base, polwatch_fd, EV_READ | EV_PERSIST,
	    polwatch_read, px);
	polwatch_timer = evtimer_new(px->base, polwatch_fire, px);
	if (polwatch_ev == NULL || polwatch_timer == NULL ||
	    event_add(polwatch_ev, NULL) == -1) {
		util_cause(cause, "out of memory");
		goto fail;
	}
	log_info("watching %s for policy changes (%s)", px->cfg.policy_dir,
	    polwatch_cm ? "the ..data link of a ConfigMap" : ".yaml files");
	return 0;
fail:
	polwatch_stop();
	return -1;
}

void
polwatch_stop(void)
{
	if (polwatch_ev != NULL)
		event_free(polwatch_ev);
	if (polwatch_timer != NULL)
		event_free(polwatch_timer);
	if (polwatch_fd != -1)
		close(polwatch_fd);
	polwatch_ev = polwatch_timer = NULL;
	polwatch_fd = -1;
}
