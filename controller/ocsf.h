/*
 * ocsf.h: sandgate's log events as OCSF events (Open Cybersecurity Schema
 * Framework, version OCSF_VERSION), for `sandgate audit export --format
 * ocsf`. Pure: a parsed log line in, a new JSON object out.
 *
 *   egress.* with a method   HTTP Activity (4002), activity by method
 *   egress.* without one     Network Activity (4001), Refuse / Traffic
 *   egress.revoked           Network Activity (4001), Reset
 *   policy.*                 Entity Management (3004), Update of the policy
 *   run.*                    Process Activity (1007), Terminate (Launch
 *                            when the command never started)
 *   log.checkpoint           Event Log Activity (1008), Start / Stop / Other
 *                            (status Unknown: the export checks no
 *                            signature)
 *   log.resume               Event Log Activity (1008), Other ("Resume")
 *   log.outage               Event Log Activity (1008), Other ("Outage")
 *   grant.*                  Entity Management (3004), Create / Delete of
 *                            the grant (ocsf_admin.c)
 *   control.unauthorized*    Authentication (3002), a failed Logon
 *   proxy.started            Application Lifecycle (6002), Start
 *   sandbox.seal_drift       Detection Finding (2004), High, an alert
 *   anything else            Base Event (0)
 *
 * ocsf.c's table names every event type the project writes;
 * tests/integration/test_audit_ocsf.py finds them in the source and fails
 * on one that maps to Base Event.
 *
 * Any object in gives an event that the schema accepts: members of the
 * wrong type or out of range (ports, counts, addresses) are left out,
 * never passed on.
 *
 * Every OCSF event keeps the whole sandgate event, seq, prev and hash
 * included, in unmapped.sandgate, so a SIEM holds what the chain and the
 * checkpoints need. docs/audit.md maps each field; the JSON Schema in
 * tests/data/ocsf/ checks the output in the tests.
 */
#ifndef SG_OCSF_H
#define SG_OCSF_H

#include <jansson.h>

#define OCSF_VERSION	"1.8.0"

struct ocsf_ctx {
	const char	*log_name;	/* the log file's name */
	const char	*hostname;	/* the device of system events */
};

/*
 * The OCSF event for sandgate event ev (a JSON object, borrowed). Returns
 * a new object, or NULL when out of memory.
 */
json_t	*ocsf_event(json_t *ev, const struct ocsf_ctx *);

#endif
