/*
 * suggest.h: the engine of `sandgate policy suggest`: from the blocks in
 * the security-event log, a draft policy set (YAML) with one entry per
 * destination host, every rationale a placeholder that `sandgate policy
 * check` and the proxy refuse until a person has written one.
 *
 * Events count when they are blocks (or would-be blocks of a set in
 * report mode) for a reason an allowlist entry can fix: not allowlisted,
 * port, IP literal, method or path. Log bytes are untrusted: a host is
 * kept only if it is one the proxy could have written (host_normalize()
 * gives it back unchanged), and every string that reaches the draft is
 * cut to printable ASCII.
 */
#ifndef SG_SUGGEST_H
#define SG_SUGGEST_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "host.h"
#include "sglimits.h"

struct policy;

#define SUGGEST_LOG		"security-events.jsonl"
#define SUGGEST_SANDBOXES	8	/* sandbox ids named per host */
#define SUGGEST_METHODS		8	/* refused methods named per host */
#define SUGGEST_TEXT_MAX	128	/* log strings shown in comments */

/* One destination host seen in blocked events. */
struct suggest_dest {
	struct host	 host;
	uint16_t	 ports[SG_SUGGEST_PORTS_MAX];
	size_t		 nports;
	int		 ports_dropped;
	long long	 attempts;
	uint64_t	 reasons;	/* 1 << enum sg_reason (fewer than 64) */
	int		 plain;		/* a plain-HTTP request was refused */
	char		 sandboxes[SUGGEST_SANDBOXES][SUGGEST_TEXT_MAX];
	size_t		 nsandboxes;
	int		 more_sandboxes;
	char		 methods[SUGGEST_METHODS][32];
	size_t		 nmethods;
	char		 rule[SUGGEST_TEXT_MAX];  /* entry that refused it */
	char		 last[SUGGEST_TEXT_MAX];  /* ts of the last attempt */
};

/* What the engine gathered from the log (suggest_init/_release). */
struct suggest {
	const char		*sandbox;	/* filter, or NULL */
	int64_t			 since;		/* us; -1: no filter */
	struct suggest_dest	*v;		/* SG_SUGGEST_DESTS_MAX */
	size_t			 n;
	size_t			 cap;
	long long		 used;		/* events drafted */
	long long		 other;		/* blocks no entry fixes */
	long long		 dropped;	/* bad host or port,
	    past limit */
	int			 files;		/* log files read */
};

/* Where the draft came from and where it goes, for its comments. */
struct suggest_draft {
	const char	*log_dir;
	const char	*policy_dir;
	const char	*sandbox;	/* --sandbox, or NULL */
	const char	*since;		/* --since as given, or NULL */
	const char	*set_name;
};

/* Start empty; sandbox and since (-1: none) filter the events. */
void	suggest_init(struct suggest *, const char *sandbox, int64_t since);
void	suggest_release(struct suggest *);

/* One log event (borrowed): counted, drafted or passed over. */
void	suggest_event(struct suggest *, json_t *);

/*
 * Every event of the log in dir (logread.h), oldest file first, then the
 * destinations sorted by host. 0, or -1 with *cause (heap).
 */
int	suggest_read_log(struct suggest *, const char *dir, char **cause);

/* Sort the destinations by host name (suggest_read_log does it). */
void	suggest_sort(struct suggest *);

/*
 * Print the draft to out: every destination with ports no set of p (NULL:
 * no policy) allows yet; then, as comments, the ones some set already
 * allows and the count of other blocks (to err instead when nothing is
 * drafted). Returns the number of entries drafted.
 */
int	suggest_print(const struct suggest *, const struct suggest_draft *,
	    const struct policy *p, FILE *out, FILE *err);

#endif
