/*
 * ocsf_int.h: what ocsf.c (the data plane's events, the log's own lines
 * and the table of every event type) and ocsf_admin.c (the control
 * plane's events: grants, control API refusals, the proxy's start, a
 * sandbox's seal) share. Not for other modules: they call ocsf_event().
 */
#ifndef SG_OCSF_INT_H
#define SG_OCSF_INT_H

#include <jansson.h>

#include "ocsf.h"

/* An OCSF class and the category it belongs to. */
struct ocsf_class {
	int		 uid;
	const char	*name;
	int		 category;
	const char	*category_name;
};

extern const struct ocsf_class ocsf_class_entity;	/* 3004 */

/* A string member, or NULL. */
const char	*ocsf_str(json_t *, const char *);
/* Set a member unless the value (stolen) or the string is NULL. */
void		 ocsf_set(json_t *, const char *, json_t *);
void		 ocsf_set_str(json_t *, const char *, const char *);
/* Set message to a string made with util_xasprintf(), and free it. */
void		 ocsf_set_msg(json_t *, char *);
/* A log ts in milliseconds since the epoch; -1 when it is not one. */
long long	 ocsf_ms(const char *);
/* A member that is a count (an integer >= 0), or -1. */
long long	 ocsf_count(json_t *, const char *);
/*
 * The members every class has (class, activity, activity name,
 * severity_id, profile or NULL); the sandgate event in unmapped.sandgate.
 */
json_t		*ocsf_new(json_t *, const struct ocsf_ctx *,
		    const struct ocsf_class *, int, const char *, int,
		    const char *);
/* status_id (0 Unknown, 1 Success, 2 Failure), status_code, detail. */
void		 ocsf_status(json_t *, int, const char *, const char *);
/* {ip[, port]} from "ADDR:PORT" (with_port) or "ADDR"; NULL: not one. */
json_t		*ocsf_ip_port(const char *, int);
json_t		*ocsf_device(const struct ocsf_ctx *);
json_t		*ocsf_actor(const char *);

/* ocsf_admin.c; each takes the event, the context and its name. */
json_t		*ocsf_grant(json_t *, const struct ocsf_ctx *, const char *);
json_t		*ocsf_unauthorized(json_t *, const struct ocsf_ctx *,
		    const char *);
json_t		*ocsf_started(json_t *, const struct ocsf_ctx *,
		    const char *);
json_t		*ocsf_sandbox_finding(json_t *, const struct ocsf_ctx *,
		    const char *);

#endif
