/*
 * policy.h: the egress policy engine shared by sandgate-proxy and the
 * sandgate CLI: loading and validating the YAML files of policy.d (one
 * named set per file, format in docs/policy.md), and deciding whether a
 * destination is allowed.
 *
 * Ownership: a struct policy owns every string, entry and set reachable
 * from it; pointers handed out (entries, sets, match fields) live until
 * policy_free(). A loaded policy is never modified, so the proxy may keep
 * serving from one while loading the next, and swap pointers once the new
 * one has loaded without errors. Queries are read-only and safe to run from
 * several threads at once.
 *
 * Limits: SG_POLICY_FILE_MAX bytes per file, SG_POLICY_ENTRIES_MAX entries
 * in all, SG_POLICY_DIAGS_MAX diagnostics kept (one more says the rest
 * were dropped). Matching costs one hash lookup for the exact name, one per
 * label of the name for wildcards, and one per prefix length in use for IP
 * literals, whatever the number of entries.
 */
#ifndef SG_POLICY_H
#define SG_POLICY_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/types.h>

#include "addr.h"
#include "host.h"
#include "reason.h"

/* Warnings start this many seconds before an entry expires. */
#define POLICY_EXPIRY_WARN_SECS	(14 * 24 * 60 * 60)

enum policy_severity {
	POLICY_ERROR,
	POLICY_WARNING
};

/*
 * One diagnostic. line and col are 1-based positions of the offending
 * YAML node; 0 when the problem is the whole file (unreadable, bad name).
 */
struct policy_diag {
	char			*file;
	int			 line;
	int			 col;
	enum policy_severity	 severity;
	char			*message;
};

struct policy_diags {
	struct policy_diag	*v;
	size_t			 n;
	size_t			 cap;
	size_t			 nerrors;
	size_t			 nwarnings;
	size_t			 dropped;	/* past SG_POLICY_DIAGS_MAX */
};

void	policy_diags_init(struct policy_diags *);
/* Free every diagnostic; the struct may be reused after _init. */
void	policy_diags_release(struct policy_diags *);
/*
 * Format one diagnostic as "FILE:LINE:COL: message", or "FILE: message"
 * when it has no position; warnings read "FILE:LINE:COL: warning: ...".
 * Returns the length snprintf would have written.
 */
int	policy_diag_format(const struct policy_diag *, char *buf,
	    size_t size);

enum policy_mode {
	POLICY_ENFORCE,
	POLICY_REPORT
};

enum policy_tls {
	POLICY_TLS_DEFAULT = 0,	/* not written: required on 443 only */
	POLICY_TLS_REQUIRED,
	POLICY_TLS_OPTIONAL,
	/*
	 * The proxy ends the sandbox's TLS with a certificate it mints
	 * (tlsca.h), opens its own verified TLS to the upstream, and
	 * decides every request inside by methods and paths (tlsterm.h).
	 * TLS is required: a plain-HTTP request is refused.
	 */
	POLICY_TLS_TERMINATE
};

enum policy_host_kind {
	POLICY_HOST_NAME,	/* exact DNS name */
	POLICY_HOST_WILDCARD,	/* "*.suffix": subdomains, not the suffix */
	POLICY_HOST_CIDR	/* IP literal (a /32 or /128) or CIDR */
};

/* One policy file. */
struct policy_set {
	const char		*name;		/* file stem */
	/* path as shown in diagnostics */
	const char		*file;
	const char		*description;	/* "" when not given */
	const char		*owner;		/* "" when not given */
	enum policy_mode	 mode;
	size_t			 first;		/* index of its first entry */
	size_t			 nentries;
};

/*
 * A tls: terminate entry's ca_file as the policy load read it: the bytes
 * it digested are the only CAs the upstream is checked against while
 * this policy is in force (the file is never read again: a change to it
 * takes effect at the next accepted reload). Entries naming the same
 * file share one.
 */
struct policy_ca {
	const char		*path;		/* absolute */
	const char		*pem;		/* NUL-terminated */
	size_t			 len;
	char			 id[65];	/* SHA-256 of pem, hex */
	const struct policy_ca	*next;		/* of the same load */
};

/*
 * Add the certificates of len bytes of PEM to st (NULL: only check
 * them): their count, or -1 with *cause a static phrase when a
 * certificate block is broken, none is there, or memory runs out. The
 * loader checks a ca_file with it, the proxy builds its store with it.
 */
int	policy_ca_add(X509_STORE *st, const char *pem, size_t len,
	    const char **cause);

/* One entry of an allow list, as validated and normalized. */
struct policy_entry {
	const struct policy_set	*set;
	int			 line;		/* of the entry's mapping */
	int			 col;
	enum policy_host_kind	 kind;
	/* "pypi.org", "*.pythonhosted.org", "192.0.2.7", "10.0.0.0/8". */
	const char		*pattern;
	/* NAME: the name; WILDCARD: the suffix without "*."; CIDR: NULL. */
	const char		*name;
	struct addr_cidr	 cidr;		/* CIDR only */
	const uint16_t		*ports;		/* sorted, no duplicates */
	size_t			 nports;
	const char		*rationale;
	/* First instant it no longer matches (the day after "expires"). */
	time_t			 expires;	/* 0: never */
	const char		*expires_text;	/* "2027-06-30" or NULL */
	const char *const	*methods;	/* NULL when not restricted */
	size_t			 nmethods;
	const char *const	*paths;		/* NULL when not restricted */
	size_t			 npaths;
	int			 allow_private;
	enum policy_tls		 tls;		/* as written */
	/*
	 * tls: terminate only. ca_file: an extra CA the upstream's chain
	 * may end in, absolute (resolved from the policy folder), or NULL;
	 * ca: its bytes as loaded (NULL with it).
	 * cred_header and cred_secret: the header the proxy sets on every
	 * request, from the secret of that name (never its value), or NULL.
	 */
	const char		*ca_file;
	const struct policy_ca	*ca;
	const char		*cred_header;
	const char		*cred_secret;
	/*
	 * 1 for an entry of a `deny` list (a floor): it blocks what it
	 * matches whatever allows it, for every sandbox. ports is NULL
	 * (nports 0) when it covers every port.
	 */
	int			 deny;
};

/* A domain of `grants: under:`: grants may cover it and names under it. */
struct policy_grant_domain {
	const char		*name;		/* normalized */
	const char		*file;
	int			 line;
	int			 col;
};

struct policy;

/*
 * Load every *.yaml file of dir (sorted by name; other files are ignored)
 * as one policy. Diagnostics, errors and warnings, are appended to *diags
 * in file and line order; the caller initializes and releases it. Keeps
 * going after an error so that one run reports them all. now decides
 * which entries have expired or expire soon (warnings). Returns the new
 * policy, owned by the caller, or NULL when there was any error.
 */
struct policy	*policy_load_dir(const char *dir, time_t now,
		    struct policy_diags *diags);

/*
 * Load one set named name from len bytes at buf, as if it were the file
 * file (shown in diagnostics). Same contract as policy_load_dir.
 */
struct policy	*policy_load_buffer(const char *name, const char *file,
		    const char *buf, size_t len, time_t now,
		    struct policy_diags *diags);

void		 policy_free(struct policy *);	/* NULL ok */

/*
 * SHA-256, in hex, over the files in name order: for each, its base name,
 * a NUL, its length as 8 big-endian bytes, and its bytes. The same files
 * give the same digest whatever order they were read in.
 */
const char	*policy_digest(const struct policy *);

size_t			 policy_nsets(const struct policy *);
const struct policy_set	*policy_set_at(const struct policy *, size_t);
/* The set named name, or NULL. */
const struct policy_set	*policy_set_find(const struct policy *,
			    const char *name);
int			 policy_set_exists(const struct policy *,
			    const char *name);
/* 1 when the set exists and its mode is report, else 0. */
int			 policy_set_is_report(const struct policy *,
			    const char *name);
/* Entries of all sets, set by set in name order, each in file order. */
size_t			 policy_nentries(const struct policy *);
const struct policy_entry *policy_entry_at(const struct policy *, size_t);

/*
 * The deny entries (floors) of every file, file by file; they are not
 * among the entries above, which are the allow entries.
 */
size_t			 policy_ndenies(const struct policy *);
const struct policy_entry *policy_deny_at(const struct policy *, size_t);
/*
 * 1 when some file says `grants: allow_private: true`: granted names may
 * then resolve to private addresses (internal mirrors, tests).
 */
int			 policy_grants_allow_private(const struct policy *);
/* The domains grants may cover, from every file's `grants: under:`. */
size_t			 policy_ngrant_domains(const struct policy *);
const struct policy_grant_domain *policy_grant_domain_at(
			    const struct policy *, size_t);

/* An entry's TLS rule for a port: as written, else required on 443 only. */
enum policy_tls	 policy_entry_tls(const struct policy_entry *,
		    uint16_t port);
/* 1 when the entry is still in force at now. */
int		 policy_entry_active(const struct policy_entry *,
		    time_t now);
/* "required", "optional" or "terminate" ("default" if not written). */
const char	*policy_tls_name(enum policy_tls);
const char	*policy_mode_name(enum policy_mode);

/*
 * A request to decide. host is normalized (host_normalize). path is the
 * request target's path for a plain-HTTP request and NULL for CONNECT
 * (entries with `paths` decide on its urlpath_normalize() form, and no
 * ambiguous path matches them);
 * method is ignored for CONNECT. terminated is 1 for a request read
 * inside a TLS session the proxy terminated (its TLS is given; methods
 * and paths apply). The sets in force are sets[0..nsets-1],
 * unless all_sets is set; names not in the policy match nothing. now
 * decides expiry.
 */
struct policy_query {
	const struct host	*host;
	uint16_t		 port;
	const char		*method;
	const char		*path;
	int			 terminated;
	const char *const	*sets;
	size_t			 nsets;
	int			 all_sets;
	time_t			 now;
};

/*
 * The entry that decided. On a block it is the nearest entry (host
 * matched but not the port, method or path) when there is one; entry is
 * NULL and the strings are NULL otherwise. Pointers live as long as the
 * policy.
 */
struct policy_match {
	const struct policy_entry *entry;
	const char		*set;
	const char		*file;
	int			 line;
	const char		*pattern;
	const char		*rationale;
	int			 allow_private;
	enum policy_tls		 tls;		/* resolved for the port */
};

/*
 * Decide a request. A deny entry that matches the host and port decides
 * first, whatever the sets in force: SG_REASON_DENIED, with that entry in
 * match (entry->deny set). Otherwise returns SG_REASON_NONE when an entry
 * of a set in force allows it, else the nearest reason: NOT_ALLOWLISTED (no entry for the
 * name), IP_LITERAL (an IP address with no address or CIDR entry),
 * PORT_NOT_ALLOWED (the host matched, the port did not), and for
 * plain-HTTP requests METHOD_NOT_ALLOWED, PATH_NOT_ALLOWED, or NOT_TLS
 * (the entry requires TLS for that port). An entry with methods or paths
 * only ever allows plain-HTTP requests and requests in a terminated
 * session: a tunnel hides both, so a CONNECT gets METHOD_NOT_ALLOWED from
 * it unless it says tls: terminate (then the CONNECT is decided by host
 * and port, and each request inside by its rules). CIDR entries match IP-literal
 * destinations only; resolved addresses are the caller's to check against
 * match->allow_private. match may be NULL.
 */
enum sg_reason	 policy_decide(const struct policy *,
		    const struct policy_query *, struct policy_match *);

/*
 * The first entry whose host covers h (its name, or a wildcard over it)
 * and that says tls: terminate, of any set, on any port, expired or not;
 * NULL when there is none (or h is an address).
 */
const struct policy_entry *policy_terminate_entry(const struct policy *,
		    const struct host *h);

/*
 * Whether a grant (docs/policy.md, "Floors") may open host:port: a name,
 * not an address; no deny entry matches it; no tls: terminate entry
 * covers the name (policy_terminate_entry: a host the proxy terminates is
 * decided by its entries alone, on every port, so a grant could only open
 * it in plain HTTP or pass-through, past the entry's methods, paths and
 * verification); and it is one of the domains
 * of `grants: under:` or a name under one. Returns 0 when it may, else -1
 * with why, a sentence naming the rule that refuses it (and where it is
 * written), in why[size].
 */
int	policy_grant_check(const struct policy *, const struct host *,
	    uint16_t port, char *why, size_t size);

/*
 * Whether a grant may open the request q that policy_decide refused
 * (match m, its nearest entry, or NULL): as policy_grant_check() for
 * q's host and port, and never a request inside a terminated session
 * (q->terminated): the tls: terminate entry's methods, paths,
 * credential and ca_file decide it alone, and no grant widens them.
 * Returns 0 when one may, else -1 with why, as policy_grant_check().
 */
int	policy_grant_check_query(const struct policy *,
	    const struct policy_query *, const struct policy_match *,
	    char *why, size_t size);

/*
 * Parse a comma-separated list of set names ("pypi,github"), as given to
 * --allow or --sets. Empty items and names outside [a-z0-9_-] are refused;
 * repeats are dropped. On success *names is a NULL-terminated array the
 * caller frees with policy_set_list_free() and *n its length. Returns 0,
 * or -1 with *cause set to a static phrase.
 */
int	policy_set_list_parse(const char *s, char ***names, size_t *n,
	    const char **cause);
void	policy_set_list_free(char **names);	/* NULL ok */

/* 1 when name is a valid set name ([a-z0-9_-]+, at most 64 chars). */
int	policy_set_name_valid(const char *name);
/*
 * 1 when len bytes may be a secret's value, which becomes a header value:
 * 1 to SG_SECRET_VALUE_MAX bytes, no control byte but tab, no DEL.
 * Secrets are named as sets are (policy_set_name_valid()).
 */
int	policy_secret_value_valid(const char *value, size_t len);

/*
 * The rationale a drafted entry carries until someone writes why: `policy
 * suggest` writes it, and the loader refuses an entry that still has it.
 */
extern const char policy_placeholder[];

#endif
