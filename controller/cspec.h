/*
 * cspec.h: the hardened base of every container sandgate starts: a
 * sandbox (sandbox_spec), doctor's probe container (probe_check_spec)
 * and the proxy (proxyctl_spec) all derive from it, so a control added
 * here reaches all three.
 *
 * The base, in Docker's container-create JSON:
 *   HostConfig.CapDrop        ["ALL"]
 *   HostConfig.SecurityOpt    ["no-new-privileges", "seccomp=<profile>"]
 *   HostConfig.ReadonlyRootfs true
 *   HostConfig.Privileged     false
 * where the profile is cspec_seccomp_profile() (seccomp_profile.h).
 */
#ifndef SG_CSPEC_H
#define SG_CSPEC_H

#include <jansson.h>

/* The base above; a new reference, or NULL when memory runs out. */
json_t	*cspec_base(void);

/*
 * A container spec derived from the base: own (stolen; NULL gives NULL)
 * over the base. Top-level members of own are kept; HostConfig is merged
 * member by member, own's winning, except SecurityOpt, where own's
 * options follow the base's (a spec adds options, it cannot drop one).
 * Returns the spec (own, completed), or NULL.
 */
json_t	*cspec_new(json_t *own);

/*
 * The seccomp profile (seccomp_profile.h) as Docker's JSON: an
 * allowlist, everything else EPERM. runc applies it to every process;
 * gVisor only to the container's init, so under runsc exec wraps each
 * command in `sandgate-probe run`, which installs the same filter. A new
 * reference, or NULL.
 */
json_t	*cspec_seccomp_profile(void);

#endif
