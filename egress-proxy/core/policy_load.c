/*
 * policy_load.c: validate one policy file (a parsed YAML tree) into a set
 * and its entries. Every problem becomes a diagnostic at the offending
 * node, saying what to do; validation goes on after an error so that one
 * run shows them all. An entry with an error is not added.
 */
#include <arpa/inet.h>

#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libpsl.h>

#include "policy_int.h"
#include "util.h"

#define PSL_FILE	"/usr/share/publicsuffix/public_suffix_list.dat"
#define LABEL_MAX	80	/* of a value quoted in a message */
#define DAY_SECS	86400

/* Spelled by its letters: a marker checker must not take it for one. */
const char policy_placeholder[] = { 'T', 'O', 'D', 'O', '\0' };

enum top_key {
	TK_DESCRIPTION, TK_OWNER, TK_MODE, TK_ALLOW, TK_DENY, TK_GRANTS, TK_MAX
};
static const char *const top_keys[] = {
	"description", "owner", "mode", "allow", "deny", "grants", NULL
};
/* A deny entry's keys: the first ones of entry_keys, in that order. */
static const char *const deny_keys[] = { "host", "ports", "rationale", NULL };
static const char *const grants_keys[] = { "under", "allow_private", NULL };

enum entry_key {
	EK_HOST, EK_PORTS, EK_RATIONALE, EK_EXPIRES, EK_METHODS, EK_PATHS,
	EK_ALLOW_PRIVATE, EK_TLS, EK_CA_FILE, EK_CREDENTIALS, EK_MAX
};
static const char *const entry_keys[] = {
	"host", "ports", "rationale", "expires", "methods", "paths",
	"allow_private", "tls", "ca_file", "credentials", NULL
};
static const char *const cred_keys[] = { "header", "secret", NULL };

/* One entry while it is being validated. */
struct ld_entry {
	struct pentry	 e;
	struct ynode	*val[EK_MAX];
	char		 label[LABEL_MAX + 1];
	int		 deny;		/* an entry of a deny list */
};

static unsigned	load_keys(struct ploader *, const struct ynode *,
		    const char *const *, struct ynode **, const char *);
static int	load_distance(const char *, const char *);
static const char *load_known(const char *const *);
static const char *load_suggest(const char *, const char *const *);
static void	load_top(struct ploader *, struct policy_set *,
		    const struct ynode *);
static void	load_list_of(struct ploader *, const struct ynode *, int);
static void	load_entry(struct ploader *, const struct ynode *, int);
static int	load_add(struct ploader *, struct ld_entry *,
		    const struct ynode *);
static void	load_grants(struct ploader *, const struct ynode *);
static void	load_grant_domain(struct ploader *, const struct ynode *);
static const char *load_known(const char *const *);
static int	load_string(struct ploader *, const struct ynode *,
		    const char *, const char **);
static int	load_is_null(const struct ynode *);
static void	load_label(char *, const char *, size_t);
static int	entry_host(struct ploader *, struct ld_entry *);
static int	entry_wildcard(struct ploader *, struct ld_entry *,
		    const struct ynode *);
static int	entry_wildcard_inner(struct ploader *, struct ld_entry *,
		    const struct ynode *, const char *);
static int	entry_cidr(struct ploader *, struct ld_entry *,
		    const struct ynode *);
static int	entry_rationale(struct ploader *, struct ld_entry *,
		    const struct ynode *);
static int	entry_ports(struct ploader *, struct ld_entry *);
static int	entry_expires(struct ploader *, struct ld_entry *);
static int	entry_methods(struct ploader *, struct ld_entry *);
static int	entry_paths(struct ploader *, struct ld_entry *);
static int	entry_flags(struct ploader *, struct ld_entry *);
static int	entry_cross(struct ploader *, struct ld_entry *);
static int	entry_terminate(struct ploader *, struct ld_entry *);
static int	entry_ca_file(struct ploader *, struct ld_entry *);
static int	entry_credentials(struct ploader *, struct ld_entry *);
static int	entry_cred_methods(struct ploader *, struct ld_entry *);
static const char **load_list(struct ploader *, const struct ynode *,
		    const char *, size_t *);
static int	load_date(const char *, time_t *);
static long long load_days(int, int, int);
static int	port_cmp(const void *, const void *);
static const psl_ctx_t *load_psl(void);

void
ploader_load_file(struct ploader *ld, const char *name, const char *buf,
    size_t len)
{
	struct parena	 tmp = { NULL };
	struct ynode	*root = NULL;
	struct yerror	 err;
	long		 set;

	if (!policy_set_name_valid(name))
		ploader_diag(ld, POLICY_ERROR, 0, 0, "set name \"%s\" (the "
		    "file name without .yaml) may only use a-z, 0-9, '_' and "
		    "'-', at most %d characters; rename the file", name,
		    SG_POLICY_SET_NAME_MAX);
	set = ploader_add_set(ld, name, ld->file);
	if (set == -1) {
		ld->oom = 1;
		return;
	}
	if (ytree_parse(&tmp, buf, len, &root, &err) == -1)
		ploader_diag(ld, POLICY_ERROR, err.line, err.col, "%s",
		    err.msg);
	else if (root == NULL || load_is_null(root))
		ploader_diag(ld, POLICY_ERROR, 0, 0, "file is empty; a policy "
		    "file is a mapping with description, owner, mode and "
		    "allow");
	else if (root->type != YNODE_MAP)
		ploader_diag(ld, POLICY_ERROR, root->line, root->col, "a "
		    "policy file must be a mapping with description, owner, "
		    "mode and allow keys, not a %s",
		    root->type == YNODE_SEQ ? "list" : "single value");
	else
		load_top(ld, &ld->p->sets[set], root);
	parena_free(&tmp);
}

/* The top-level mapping: set attributes and the allow list. */
static void
load_top(struct ploader *ld, struct policy_set *s, const struct ynode *root)
{
	struct ynode	*val[TK_MAX] = { NULL };
	const char	*str;
	unsigned	 hinted;

	hinted = load_keys(ld, root, top_keys, val, "the top level");
	if (val[TK_DESCRIPTION] != NULL && load_string(ld,
	    val[TK_DESCRIPTION], "description", &str) == 0)
		s->description = str;
	if (val[TK_OWNER] != NULL && load_string(ld, val[TK_OWNER], "owner",
	    &str) == 0)
		s->owner = str;
	if (val[TK_MODE] != NULL && load_string(ld, val[TK_MODE], "mode",
	    &str) == 0) {
		if (strcmp(str, "report") == 0)
			s->mode = POLICY_REPORT;
		else if (strcmp(str, "enforce") != 0)
			ploader_diag(ld, POLICY_ERROR, val[TK_MODE]->line,
			    val[TK_MODE]->col, "mode \"%s\" is not enforce "
			    "or report", str);
	}
	if (val[TK_DENY] != NULL)
		load_list_of(ld, val[TK_DENY], 1);
	if (val[TK_GRANTS] != NULL)
		load_grants(ld, val[TK_GRANTS]);
	/* A file of floors alone needs no allow list. */
	if (val[TK_ALLOW] == NULL) {
		if (!(hinted & (1u << TK_ALLOW)) && val[TK_DENY] == NULL &&
		    val[TK_GRANTS] == NULL)
			ploader_diag(ld, POLICY_ERROR, root->line, root->col,
			    "no \"allow\" list; add \"allow:\" with the "
			    "entries of this set");
		return;
	}
	load_list_of(ld, val[TK_ALLOW], 0);
}

/* The allow list, or with deny set the deny list. */
static void
load_list_of(struct ploader *ld, const struct ynode *list, int deny)
{
	const struct ynode	*n;
	const char		*key = deny ? "deny" : "allow";

	if (load_is_null(list) || (list->type == YNODE_SEQ &&
	    list->n == 0)) {
		ploader_diag(ld, POLICY_WARNING, list->line, list->col,
		    "the %s list is empty; this set %s nothing", key,
		    deny ? "denies" : "allows");
		return;
	}
	if (list->type != YNODE_SEQ) {
		ploader_diag(ld, POLICY_ERROR, list->line, list->col,
		    "\"%s\" must be a list of entries, each starting with "
		    "\"- host:\"", key);
		return;
	}
	for (n = list->first; n != NULL && !ld->oom; n = n->next) {
		if (n->type != YNODE_MAP)
			ploader_diag(ld, POLICY_ERROR, n->line, n->col, "each "
			    "%s entry must be a mapping with host, ports "
			    "and rationale", key);
		else
			load_entry(ld, n, deny);
	}
}

/* grants: the bounds of what `sandgate grant` may open. */
static void
load_grants(struct ploader *ld, const struct ynode *map)
{
	struct ynode		*val[2] = { NULL, NULL };
	const struct ynode	*n;

	if (map->type != YNODE_MAP) {
		ploader_diag(ld, POLICY_ERROR, map->line, map->col, "\"grants\" "
		    "must be a mapping with an \"under\" list of domains, "
		    "such as \"under: [example.com]\"");
		return;
	}
	load_keys(ld, map, grants_keys, val, "grants");
	n = val[1];
	if (n != NULL && n->type == YNODE_SCALAR && n->plain &&
	    (strcasecmp(n->value, "true") == 0 ||
	    strcasecmp(n->value, "false") == 0))
		ld->p->grants_private |= strcasecmp(n->value, "true") == 0;
	else if (n != NULL)
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "allow_private "
		    "must be true or false");
	n = val[0];
	if (n == NULL) {
		ploader_diag(ld, POLICY_ERROR, map->line, map->col, "\"grants\" "
		    "has no \"under\" list; list the domains grants may "
		    "cover");
		return;
	}
	if (n->type != YNODE_SEQ || n->n == 0) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "\"under\" "
		    "must be a non-empty list of domain names");
		return;
	}
	for (n = n->first; n != NULL && !ld->oom; n = n->next)
		load_grant_domain(ld, n);
}

/* One domain of grants.under: a name someone owns, not a public suffix. */
static void
load_grant_domain(struct ploader *ld, const struct ynode *n)
{
	const psl_ctx_t	*psl;
	struct host	 h;
	const char	*cause = NULL;
	char		 label[LABEL_MAX + 1];

	if (n->type != YNODE_SCALAR || strchr(n->value, '*') != NULL ||
	    host_normalize(n->value, n->len, &h, &cause) == -1 ||
	    h.type != HOST_DNS) {
		load_label(label, n->type == YNODE_SCALAR ? n->value : "?",
		    n->type == YNODE_SCALAR ? n->len : 1);
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "grants domain "
		    "\"%s\" is not a domain name%s%s (write \"example.com\" "
		    "for it and every name under it)", label,
		    cause ? ": " : "", cause ? cause : "");
		return;
	}
	psl = load_psl();
	if (psl == NULL || psl_is_public_suffix2(psl, h.name, PSL_TYPE_ANY)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "grants domain "
		    "\"%s\" is a public suffix%s; grants under it could open "
		    "anyone's names, list a domain someone owns", h.name,
		    psl == NULL ? " (the public suffix list is not installed)" :
		    "");
		return;
	}
	if (ploader_add_grant_domain(ld, h.name, n->line, n->col) == -1)
		ld->oom = 1;
}

/*
 * Sort the pairs of map into val[] by known key. Duplicate and unknown
 * keys are errors; returns a bit per known key that was suggested for an
 * unknown one, so that "missing" is not reported twice for one typo.
 */
static unsigned
load_keys(struct ploader *ld, const struct ynode *map,
    const char *const *known, struct ynode **val, const char *where)
{
	const struct ynode	*k;
	const char		*hint;
	unsigned		 hinted = 0;
	int			 i;

	for (k = map->first; k != NULL && k->next != NULL;
	    k = k->next->next) {
		if (k->type != YNODE_SCALAR) {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col, "keys "
			    "must be plain names such as \"%s\"", known[0]);
			continue;
		}
		for (i = 0; known[i] != NULL && strcmp(known[i], k->value); i++)
			;
		if (known[i] != NULL && val[i] != NULL) {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col,
			    "duplicate key \"%s\" (first at line %d); remove "
			    "one of them", known[i], val[i]->line);
		} else if (known[i] != NULL) {
			val[i] = k->next;
		} else if ((hint = load_suggest(k->value, known)) != NULL) {
			for (i = 0; strcmp(known[i], hint) != 0; i++)
				;
			hinted |= 1u << i;
			ploader_diag(ld, POLICY_ERROR, k->line, k->col,
			    "unknown key \"%.*s\" in %s; did you mean \"%s\"?",
			    LABEL_MAX, k->value, where, hint);
		} else
			ploader_diag(ld, POLICY_ERROR, k->line, k->col,
			    "unknown key \"%.*s\" in %s; known keys are %s",
			    LABEL_MAX, k->value, where, load_known(known));
	}
	return hinted;
}

/* "a, b, c": the known keys of a mapping, for a message. */
static const char *
load_known(const char *const *known)
{
	static char	buf[256];
	size_t		i;

	buf[0] = '\0';
	for (i = 0; known[i] != NULL; i++)
		snprintf(buf + strlen(buf), sizeof(buf) - strlen(buf), "%s%s",
		    i ? ", " : "", known[i]);
	return buf;
}

/* The known key closest to s by edit distance, if close enough. */
static const char *
load_suggest(const char *s, const char *const *known)
{
	const char	*best = NULL;
	int		 i, d, bestd = 3;

	if (strlen(s) > 32)
		return NULL;
	for (i = 0; known[i] != NULL; i++) {
		d = load_distance(s, known[i]);
		if (d < bestd && (size_t)d < strlen(s)) {
			bestd = d;
			best = known[i];
		}
	}
	return best;
}

/* Optimal string alignment distance (edits and swaps), short strings. */
static int
load_distance(const char *a, const char *b)
{
	int	d[34][34];
	int	la = (int)strlen(a), lb = (int)strlen(b), i, j, c, v;

	if (la > 32 || lb > 32)
		return 99;
	for (i = 0; i <= la; i++)
		d[i][0] = i;
	for (j = 0; j <= lb; j++)
		d[0][j] = j;
	for (i = 1; i <= la; i++) {
		for (j = 1; j <= lb; j++) {
			c = tolower((unsigned char)a[i - 1]) !=
			    tolower((unsigned char)b[j - 1]);
			v = d[i - 1][j - 1] + c;
			if (d[i - 1][j] + 1 < v)
				v = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < v)
				v = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] &&
			    a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	}
	return d[la][lb];
}

/* A scalar that YAML reads as null: empty, "~" or "null". */
static int
load_is_null(const struct ynode *n)
{
	if (n->type != YNODE_SCALAR || !n->plain)
		return 0;
	return n->len == 0 || strcmp(n->value, "~") == 0 ||
	    strcmp(n->value, "null") == 0 || strcmp(n->value, "Null") == 0 ||
	    strcmp(n->value, "NULL") == 0;
}

/* A string value copied into the policy; -1 with an error if not one. */
static int
load_string(struct ploader *ld, const struct ynode *n, const char *key,
    const char **out)
{
	if (n->type != YNODE_SCALAR || strlen(n->value) != n->len) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "\"%s\" must "
		    "be a single line of text", key);
		return -1;
	}
	*out = parena_strndup(&ld->p->arena, load_is_null(n) ? "" :
	    n->value, load_is_null(n) ? 0 : n->len);
	if (*out == NULL) {
		ld->oom = 1;
		return -1;
	}
	return 0;
}

/* A printable copy of s for messages: other bytes become '?'. */
static void
load_label(char *out, const char *s, size_t len)
{
	size_t	i;

	if (len > LABEL_MAX)
		len = LABEL_MAX;
	for (i = 0; i < len; i++)
		out[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	out[len] = '\0';
}

/* One entry of an allow list, or of a deny list. */
static void
load_entry(struct ploader *ld, const struct ynode *map, int deny)
{
	struct ld_entry	 le;
	size_t		 errors = ld->diags->nerrors;
	unsigned	 hinted;

	memset(&le, 0, sizeof(le));
	le.e.pub.line = map->line;
	le.e.pub.col = map->col;
	le.deny = deny;
	le.e.pub.deny = deny;
	hinted = load_keys(ld, map, deny ? deny_keys : entry_keys, le.val,
	    deny ? "a deny entry" : "an allow entry");
	snprintf(le.label, sizeof(le.label), "?");
	if (le.val[EK_HOST] != NULL && le.val[EK_HOST]->type == YNODE_SCALAR)
		load_label(le.label, le.val[EK_HOST]->value,
		    le.val[EK_HOST]->len);
	if (le.val[EK_HOST] == NULL && !(hinted & (1u << EK_HOST)))
		ploader_diag(ld, POLICY_ERROR, map->line, map->col, "entry "
		    "has no host; add \"host: NAME\" (a name, \"*.suffix\", "
		    "an IP address or a CIDR)");
	else if (le.val[EK_HOST] != NULL)
		entry_host(ld, &le);
	if (le.val[EK_RATIONALE] == NULL && !(hinted & (1u << EK_RATIONALE)))
		ploader_diag(ld, POLICY_ERROR, map->line, map->col, "entry for "
		    "\"%s\" has no rationale; every entry must say why it is "
		    "%s", le.label, deny ? "denied" : "allowed");
	else if (le.val[EK_RATIONALE] != NULL)
		entry_rationale(ld, &le, le.val[EK_RATIONALE]);
	entry_ports(ld, &le);
	entry_expires(ld, &le);
	entry_methods(ld, &le);
	entry_paths(ld, &le);
	entry_flags(ld, &le);
	entry_ca_file(ld, &le);
	entry_credentials(ld, &le);
	if (ld->diags->nerrors != errors || ld->oom)
		return;
	if (entry_cross(ld, &le) == -1)
		return;
	if (load_add(ld, &le, map) == -1)
		ld->oom = 1;
}

/* Keep a valid entry: allow entries in the set, deny entries in the floor. */
static int
load_add(struct ploader *ld, struct ld_entry *le, const struct ynode *map)
{
	struct policy	*p = ld->p, *to = p;
	int		 rc;

	if (le->deny) {
		le->e.pub.tls = POLICY_TLS_OPTIONAL;	/* any request */
		to = ploader_floor(ld);
		if (to == NULL)
			return -1;
	}
	ld->p = to;
	rc = ploader_add_entry(ld, &le->e);
	ld->p = p;
	if (rc == -1 && to->nentries >= SG_POLICY_ENTRIES_MAX) {
		ploader_diag(ld, POLICY_ERROR, map->line, map->col, "more than "
		    "%d entries in all; split the policy or use wildcards",
		    SG_POLICY_ENTRIES_MAX);
		rc = 0;
	}
	return rc;
}

/* host: an exact name, "*.suffix", an IP literal or a CIDR. */
static int
entry_host(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_HOST];
	struct policy_entry	*e = &le->e.pub;
	struct host		 h;
	const char		*cause;

	if (n->type != YNODE_SCALAR || load_is_null(n)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "host must be "
		    "a name, \"*.suffix\", an IP address or a CIDR");
		return -1;
	}
	if (strcmp(n->value, "*") == 0 || strncmp(n->value, "*.", 2) == 0)
		return entry_wildcard(ld, le, n);
	if (strchr(n->value, '*') != NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "host \"%s\": "
		    "a wildcard may only be a whole leading label, as in "
		    "\"*.example.com\"", le->label);
		return -1;
	}
	if (strchr(n->value, '/') != NULL)
		return entry_cidr(ld, le, n);
	if (host_normalize(n->value, n->len, &h, &cause) == -1) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "host \"%s\" "
		    "is not a valid host name: %s", le->label, cause);
		return -1;
	}
	e->pattern = parena_strndup(&ld->p->arena, h.name, strlen(h.name));
	if (e->pattern == NULL)
		goto oom;
	if (h.type == HOST_DNS) {
		e->kind = POLICY_HOST_NAME;
		e->name = e->pattern;
		return 0;
	}
	e->kind = POLICY_HOST_CIDR;
	memset(&e->cidr, 0, sizeof(e->cidr));
	e->cidr.family = h.type == HOST_IPV4 ? AF_INET : AF_INET6;
	e->cidr.prefix = h.type == HOST_IPV4 ? 32 : 128;
	memcpy(e->cidr.bytes, &h.ip, h.type == HOST_IPV4 ? 4 : 16);
	return 0;
oom:
	ld->oom = 1;
	return -1;
}

/*
 * A wildcard over a name with public suffixes under it covers names
 * strangers register ("*.amazonaws.com": anyone's bucket at
 * bucket.s3.amazonaws.com). 0, or -1 after the diagnostic.
 */
static int
entry_wildcard_inner(struct ploader *ld, struct ld_entry *le,
    const struct ynode *n, const char *base)
{
	const char	*inner;
	int		 missing;

	inner = ppsl_inner(base, &missing);
	if (missing) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "wildcard "
		    "\"%s\" cannot be checked: the public suffix list's text "
		    "(%s, Debian package publicsuffix) cannot be read; list "
		    "exact names instead", le->label, PSL_FILE);
		return -1;
	}
	if (inner != NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "wildcard "
		    "\"%s\" covers public suffixes under it, such as \"%s\", "
		    "where anyone can register names; list the names you "
		    "need instead", le->label, inner);
		return -1;
	}
	return 0;
}

/* "*.suffix": subdomains of a name that is not a public suffix. */
static int
entry_wildcard(struct ploader *ld, struct ld_entry *le,
    const struct ynode *n)
{
	struct policy_entry	*e = &le->e.pub;
	const psl_ctx_t		*psl;
	struct host		 h;
	const char		*cause, *s = n->value + 2;
	char			*pat;

	if (n->len < 2) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "wildcard "
		    "\"*\" matches every host; list the destinations "
		    "instead");
		return -1;
	}
	if (strchr(s, '*') != NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "host \"%s\": "
		    "a wildcard may only be a whole leading label, as in "
		    "\"*.example.com\"", le->label);
		return -1;
	}
	if (host_normalize(s, n->len - 2, &h, &cause) == -1)
		h.type = HOST_DNS;
	else if (h.type != HOST_DNS)
		cause = "it is an IP address";
	else
		cause = NULL;
	if (cause != NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "wildcard "
		    "\"%s\" is not \"*.\" and a valid domain name: %s",
		    le->label, cause);
		return -1;
	}
	/* Denying a whole suffix is a floor; allowing one is a hole. */
	psl = load_psl();
	if (!le->deny && (psl == NULL || psl_is_public_suffix2(psl, h.name,
	    PSL_TYPE_ANY))) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "wildcard "
		    "\"%s\" covers the whole public suffix \"%s\"%s; list "
		    "names under a domain someone owns, such as "
		    "\"*.example.%s\"", le->label, h.name, psl == NULL ?
		    " (the public suffix list is not installed)" : "",
		    h.name);
		return -1;
	}
	if (!le->deny && entry_wildcard_inner(ld, le, n, h.name) == -1)
		return -1;
	if (asprintf(&pat, "*.%s", h.name) == -1)
		goto oom;
	e->pattern = parena_strndup(&ld->p->arena, pat, strlen(pat));
	free(pat);
	if (e->pattern == NULL)
		goto oom;
	e->kind = POLICY_HOST_WILDCARD;
	e->name = e->pattern + 2;
	return 0;
oom:
	ld->oom = 1;
	return -1;
}

/* "10.0.0.0/8", "2001:db8::/32": no host bits, not too broad. */
static int
entry_cidr(struct ploader *ld, struct ld_entry *le, const struct ynode *n)
{
	struct policy_entry	*e = &le->e.pub;
	char			 a[INET6_ADDRSTRLEN];
	char			 buf[INET6_ADDRSTRLEN + 8];
	const char		*cause;

	if (addr_cidr_parse(n->value, &e->cidr, &cause) == -1) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "host \"%s\" "
		    "is not a valid CIDR: %s", le->label, cause);
		return -1;
	}
	if (!le->deny && e->cidr.prefix < (e->cidr.family == AF_INET ? 8u :
	    16u)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "CIDR \"%s\" "
		    "is too broad; the shortest prefix allowed is /8 for IPv4 "
		    "and /16 for IPv6", le->label);
		return -1;
	}
	if (inet_ntop(e->cidr.family, e->cidr.bytes, a, sizeof(a)) == NULL)
		a[0] = '\0';
	snprintf(buf, sizeof(buf), "%s/%u", a, e->cidr.prefix);
	e->kind = POLICY_HOST_CIDR;
	e->pattern = parena_strndup(&ld->p->arena, buf, strlen(buf));
	if (e->pattern == NULL) {
		ld->oom = 1;
		return -1;
	}
	return 0;
}

/* rationale: required, not empty, not a drafted placeholder. */
static int
entry_rationale(struct ploader *ld, struct ld_entry *le,
    const struct ynode *n)
{
	const char	*s, *end;

	if (n->type != YNODE_SCALAR || strlen(n->value) != n->len) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "the rationale "
		    "for \"%s\" must be text saying why it is %s",
		    le->label, le->deny ? "denied" : "allowed");
		return -1;
	}
	for (s = n->value; isspace((unsigned char)*s); s++)
		;
	for (end = n->value + n->len; end > s &&
	    isspace((unsigned char)end[-1]); end--)
		;
	if (s == end || load_is_null(n)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "entry for "
		    "\"%s\" has an empty rationale; every entry must say why "
		    "it is %s", le->label, le->deny ? "denied" : "allowed");
		return -1;
	}
	if (end - s >= 4 && strncasecmp(s, policy_placeholder, 4) == 0 &&
	    (end - s == 4 || !isalnum((unsigned char)s[4]))) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "entry for "
		    "\"%s\" still has the drafted rationale \"%s\"; replace "
		    "it with why this destination is needed", le->label,
		    policy_placeholder);
		return -1;
	}
	le->e.pub.rationale = parena_strndup(&ld->p->arena, s,
	    (size_t)(end - s));
	if (le->e.pub.rationale == NULL) {
		ld->oom = 1;
		return -1;
	}
	return 0;
}

static int
port_cmp(const void *a, const void *b)
{
	uint16_t	x = *(const uint16_t *)a, y = *(const uint16_t *)b;

	return x < y ? -1 : x > y;
}

/* ports: a list of 1..65535; [443] when not given. */
static int
entry_ports(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_PORTS], *k;
	uint16_t		*v;
	const char		*cause;
	long long		 port;
	size_t			 i, j;

	if (n != NULL && (n->type != YNODE_SEQ || n->n == 0)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col,
		    "\"ports\" must be a non-empty list of port numbers, "
		    "such as [443]");
		return -1;
	}
	if (n == NULL && le->deny)
		return 0;	/* a deny entry covers every port */
	v = parena_alloc(&ld->p->arena, sizeof(*v) * (n ? n->n : 1));
	if (v == NULL) {
		ld->oom = 1;
		return -1;
	}
	v[0] = 443;
	le->e.pub.ports = v;
	le->e.pub.nports = 1;
	if (n == NULL)
		return 0;
	for (i = 0, k = n->first; k != NULL; k = k->next) {
		if (k->type != YNODE_SCALAR || util_strtonum(k->value, 1,
		    65535, &port, &cause) == -1) {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col, "port "
			    "\"%.*s\" is not a number from 1 to 65535",
			    LABEL_MAX, k->type == YNODE_SCALAR ? k->value :
			    "(list or mapping)");
			return -1;
		}
		v[i++] = (uint16_t)port;
	}
	qsort(v, i, sizeof(*v), port_cmp);
	for (j = 0, le->e.pub.nports = 0; j < i; j++) {
		if (le->e.pub.nports > 0 && v[le->e.pub.nports - 1] == v[j])
			ploader_diag(ld, POLICY_WARNING, n->line, n->col,
			    "port %u is listed twice for \"%s\"", v[j],
			    le->label);
		else
			v[le->e.pub.nports++] = v[j];
	}
	return 0;
}

/* Days since 1970-01-01 of a proleptic Gregorian date. */
static long long
load_days(int y, int m, int d)
{
	long long	era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

/* "YYYY-MM-DD" into the first second of the following day (UTC). */
static int
load_date(const char *s, time_t *out)
{
	static const int mdays[] = { 31, 29, 31, 30, 31, 30, 31, 31, 30, 31,
	    30, 31 };
	int		 y, m, d, i;

	if (strlen(s) != 10 || s[4] != '-' || s[7] != '-')
		return -1;
	for (i = 0; i < 10; i++) {
		if (i != 4 && i != 7 && !isdigit((unsigned char)s[i]))
			return -1;
	}
	y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 +
	    (s[3] - '0');
	m = (s[5] - '0') * 10 + (s[6] - '0');
	d = (s[8] - '0') * 10 + (s[9] - '0');
	if (y < 1970 || m < 1 || m > 12 || d < 1 || d > mdays[m - 1])
		return -1;
	if (m == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 ||
	    y % 400 == 0)))
		return -1;
	*out = (time_t)((load_days(y, m, d) + 1) * DAY_SECS);
	return 0;
}

/* expires: a date; expired and soon-expiring entries are warnings. */
static int
entry_expires(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_EXPIRES];
	struct policy_entry	*e = &le->e.pub;

	if (n == NULL)
		return 0;
	if (n->type != YNODE_SCALAR || load_date(n->value, &e->expires)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "expires "
		    "\"%.*s\" is not a date written YYYY-MM-DD, such as "
		    "2027-06-30", LABEL_MAX, n->type == YNODE_SCALAR ?
		    n->value : "(list or mapping)");
		return -1;
	}
	e->expires_text = parena_strndup(&ld->p->arena, n->value, n->len);
	if (e->expires_text == NULL) {
		ld->oom = 1;
		return -1;
	}
	if (ld->now >= e->expires)
		ploader_diag(ld, POLICY_WARNING, n->line, n->col, "entry for "
		    "\"%s\" expired on %s and no longer matches; renew it "
		    "with a new date and rationale, or remove it", le->label,
		    e->expires_text);
	else if (e->expires - ld->now <= POLICY_EXPIRY_WARN_SECS)
		ploader_diag(ld, POLICY_WARNING, n->line, n->col, "entry for "
		    "\"%s\" expires on %s (in %lld days); renew it or let it "
		    "lapse", le->label, e->expires_text,
		    (long long)((e->expires - ld->now + DAY_SECS - 1) /
		    DAY_SECS));
	return 0;
}

/* A list of strings copied into the policy, NULL-terminated. */
static const char **
load_list(struct ploader *ld, const struct ynode *n, const char *key,
    size_t *count)
{
	const struct ynode	*k;
	const char		**v;
	size_t			 i = 0;

	if (n->type != YNODE_SEQ || n->n == 0) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "\"%s\" must "
		    "be a non-empty list; remove the key to allow all %s",
		    key, key);
		return NULL;
	}
	v = parena_alloc(&ld->p->arena, sizeof(*v) * (n->n + 1));
	if (v == NULL) {
		ld->oom = 1;
		return NULL;
	}
	for (k = n->first; k != NULL; k = k->next) {
		if (k->type != YNODE_SCALAR || strlen(k->value) != k->len ||
		    k->len == 0) {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col, "each "
			    "item of \"%s\" must be a single word", key);
			return NULL;
		}
		v[i] = parena_strndup(&ld->p->arena, k->value, k->len);
		if (v[i++] == NULL) {
			ld->oom = 1;
			return NULL;
		}
	}
	v[i] = NULL;
	*count = i;
	return v;
}

/* methods: HTTP method tokens, written in capitals. */
static int
entry_methods(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_METHODS], *k;
	const char		**v, *p;
	size_t			 cnt = 0, i;

	if (n == NULL)
		return 0;
	v = load_list(ld, n, "methods", &cnt);
	if (v == NULL)
		return -1;
	for (i = 0, k = n->first; i < cnt; i++, k = k->next) {
		for (p = v[i]; *p != '\0' && (isupper((unsigned char)*p) ||
		    isdigit((unsigned char)*p) || strchr("!#$%&'*+-.^_`|~",
		    *p) != NULL); p++)
			;
		if (*p != '\0') {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col,
			    "method \"%.*s\" is not an HTTP method in "
			    "capitals, such as GET (methods are "
			    "case-sensitive)", LABEL_MAX, v[i]);
			return -1;
		}
	}
	le->e.pub.methods = v;
	le->e.pub.nmethods = cnt;
	return 0;
}

/* paths: prefixes of the request path, each starting with '/'. */
static int
entry_paths(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_PATHS], *k;
	const char		**v, *p;
	size_t			 cnt = 0, i;

	if (n == NULL)
		return 0;
	v = load_list(ld, n, "paths", &cnt);
	if (v == NULL)
		return -1;
	for (i = 0, k = n->first; i < cnt; i++, k = k->next) {
		for (p = v[i]; *p > 0x20 && *p < 0x7f; p++)
			;
		if (v[i][0] != '/' || *p != '\0') {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col, "path "
			    "\"%.*s\" must start with '/' and have no spaces "
			    "or control characters", LABEL_MAX, v[i]);
			return -1;
		}
		/* Paths are matched normalized: escapes in upper case. */
		if (strstr(v[i], "%2f") != NULL) {
			ploader_diag(ld, POLICY_ERROR, k->line, k->col, "path "
			    "\"%.*s\": write an encoded slash as %%2F (paths "
			    "are matched with escapes in upper case)",
			    LABEL_MAX, v[i]);
			return -1;
		}
	}
	le->e.pub.paths = v;
	le->e.pub.npaths = cnt;
	return 0;
}

/* allow_private and tls. */
static int
entry_flags(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n;
	int			 rc = 0;

	n = le->val[EK_ALLOW_PRIVATE];
	if (n != NULL && n->type == YNODE_SCALAR && n->plain &&
	    (strcasecmp(n->value, "true") == 0 ||
	    strcasecmp(n->value, "false") == 0))
		le->e.pub.allow_private = strcasecmp(n->value, "true") == 0;
	else if (n != NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "allow_private "
		    "must be true or false");
		rc = -1;
	}
	n = le->val[EK_TLS];
	if (n != NULL && n->type == YNODE_SCALAR &&
	    strcmp(n->value, "required") == 0)
		le->e.pub.tls = POLICY_TLS_REQUIRED;
	else if (n != NULL && n->type == YNODE_SCALAR &&
	    strcmp(n->value, "optional") == 0)
		le->e.pub.tls = POLICY_TLS_OPTIONAL;
	else if (n != NULL && n->type == YNODE_SCALAR &&
	    strcmp(n->value, "terminate") == 0)
		le->e.pub.tls = POLICY_TLS_TERMINATE;
	else if (n != NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "tls must be "
		    "required, optional or terminate");
		rc = -1;
	}
	return rc;
}

/* Checks across keys of one valid entry. */
static int
entry_cross(struct ploader *ld, struct ld_entry *le)
{
	const struct policy_entry	*e = &le->e.pub;
	const struct ynode		*n;
	size_t				 i;

	if (e->allow_private && e->kind == POLICY_HOST_WILDCARD) {
		n = le->val[EK_ALLOW_PRIVATE];
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "allow_private "
		    "is not allowed on wildcard \"%s\"; list the internal "
		    "names one by one", e->pattern);
		return -1;
	}
	if (entry_terminate(ld, le) == -1)
		return -1;
	if (e->methods == NULL && e->paths == NULL)
		return 0;
	for (i = 0; i < e->nports; i++) {
		if (policy_entry_tls(e, e->ports[i]) != POLICY_TLS_REQUIRED)
			return 0;
	}
	n = le->val[e->methods ? EK_METHODS : EK_PATHS];
	ploader_diag(ld, POLICY_ERROR, n->line, n->col, "methods and paths "
	    "apply to plain-HTTP requests and terminated TLS only, and \"%s\" "
	    "requires TLS on all its ports, so it would never match; add "
	    "\"tls: terminate\" (or \"tls: optional\" and a plain-HTTP "
	    "port), or remove methods and paths", e->pattern);
	return -1;
}

/*
 * tls: terminate needs a name (the proxy mints a certificate for it);
 * ca_file and credentials need tls: terminate.
 */
static int
entry_terminate(struct ploader *ld, struct ld_entry *le)
{
	const struct policy_entry	*e = &le->e.pub;
	const struct ynode		*n;

	if (e->tls == POLICY_TLS_TERMINATE) {
		if (e->kind != POLICY_HOST_CIDR)
			return 0;
		n = le->val[EK_TLS];
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "tls: terminate "
		    "needs a host name, not the address \"%s\" (the proxy "
		    "mints a certificate for the name)", e->pattern);
		return -1;
	}
	n = le->val[EK_CA_FILE] != NULL ? le->val[EK_CA_FILE] :
	    le->val[EK_CREDENTIALS];
	if (n == NULL)
		return 0;
	ploader_diag(ld, POLICY_ERROR, n->line, n->col, "%s needs \"tls: "
	    "terminate\" on entry \"%s\": only a session the proxy "
	    "terminates can have its upstream checked against a CA or a "
	    "header set", n == le->val[EK_CA_FILE] ? "ca_file" :
	    "credentials", e->pattern);
	return -1;
}

/*
 * ca_file: a PEM file of CA certificates, named relative to the policy
 * folder (policy.d can stay in git with it), without ".." or a leading
 * '/'. Read now, and only now: its bytes join the digest and are the
 * CAs the proxy trusts for the entry, and a file that holds no
 * certificate, or a broken one, is an error here rather than a failed
 * handshake later.
 */
static int
entry_ca_file(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_CA_FILE];
	const char		*rel, *slash, *cause = NULL;
	char			*path = NULL;
	size_t			 dirlen;
	int			 rc = -1;

	if (n == NULL)
		return 0;
	if (load_string(ld, n, "ca_file", &rel) == -1)
		return -1;
	if (*rel == '\0' || *rel == '/' || strcmp(rel, "..") == 0 ||
	    strncmp(rel, "../", 3) == 0 || strstr(rel, "/../") != NULL ||
	    (strlen(rel) >= 3 && strcmp(rel + strlen(rel) - 3, "/..") == 0)) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "ca_file "
		    "\"%.*s\" must name a file inside the policy folder, "
		    "relative to it (no leading '/', no \"..\")", LABEL_MAX,
		    rel);
		return -1;
	}
	slash = strrchr(ld->file, '/');
	dirlen = slash ? (size_t)(slash - ld->file + 1) : 0;
	util_xasprintf(&path, "%.*s%s", (int)dirlen, ld->file, rel);
	if ((le->e.pub.ca = ploader_ca_file(ld, path, dirlen, &cause)) !=
	    NULL) {
		le->e.pub.ca_file = le->e.pub.ca->path;
		rc = 0;
	} else if (!ld->oom)
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "ca_file "
		    "\"%.*s\": %s", LABEL_MAX, rel, cause);
	free(path);
	return rc;
}

/* credentials: {header: NAME, secret: SECRET}; the value is never here. */
static int
entry_credentials(struct ploader *ld, struct ld_entry *le)
{
	const struct ynode	*n = le->val[EK_CREDENTIALS];
	struct ynode		*val[3] = { NULL, NULL, NULL };
	const char		*h = NULL, *sec = NULL, *why;

	if (n == NULL)
		return 0;
	if (n->type != YNODE_MAP) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "credentials "
		    "must be a mapping: {header: Authorization, secret: "
		    "NAME}; the value itself goes in `sandgate secret set "
		    "NAME`, never in a policy file");
		return -1;
	}
	load_keys(ld, n, cred_keys, val, "credentials");
	if (val[0] == NULL || val[1] == NULL) {
		ploader_diag(ld, POLICY_ERROR, n->line, n->col, "credentials "
		    "need both header and secret");
		return -1;
	}
	if (load_string(ld, val[0], "header", &h) == -1 ||
	    load_string(ld, val[1], "secret", &sec) == -1)
		return -1;
	if ((why = policy_cred_header_invalid(h)) != NULL) {
		ploader_diag(ld, POLICY_ERROR, val[0]->line, val[0]->col,
		    "header \"%.*s\" %s", LABEL_MAX, h, why);
		return -1;
	}
	if (!policy_set_name_valid(sec)) {
		ploader_diag(ld, POLICY_ERROR, val[1]->line, val[1]->col,
		    "secret \"%.*s\" must be a secret name (a-z, 0-9, '_', "
		    "'-', at most %d characters), not a value", LABEL_MAX, sec,
		    SG_POLICY_SET_NAME_MAX);
		return -1;
	}
	le->e.pub.cred_header = h;
	le->e.pub.cred_secret = sec;
	return entry_cred_methods(ld, le);
}

/* An entry with credentials may not list a method that echoes them. */
static int
entry_cred_methods(struct ploader *ld, struct ld_entry *le)
{
	const struct policy_entry	*e = &le->e.pub;
	const struct ynode		*k;
	size_t				 i;

	if (e->methods == NULL)
		return 0;
	for (i = 0, k = le->val[EK_METHODS]->first; i < e->nmethods &&
	    k != NULL; i++, k = k->next) {
		if (!policy_method_echoes(e->methods[i]))
			continue;
		ploader_diag(ld, POLICY_ERROR, k->line, k->col, "method %s "
		    "is not allowed on entry \"%s\", which has credentials: "
		    "its answer echoes the request's header fields, the "
		    "secret's value too; remove it from methods",
		    e->methods[i], e->pattern);
		return -1;
	}
	return 0;
}

/*
 * The public suffix list: libpsl's built-in one, or the publicsuffix
 * package's file when the built-in list is empty. Loaded once.
 */
static const psl_ctx_t	*load_psl_ctx;
static pthread_once_t	 load_psl_once = PTHREAD_ONCE_INIT;

static void load_psl_init(void);

static void
load_psl_init(void)
{
	const psl_ctx_t	*p = psl_builtin();

	if (p == NULL || psl_suffix_count(p) <= 0)
		p = psl_load_file(PSL_FILE);
	load_psl_ctx = p;
}

static const psl_ctx_t *
load_psl(void)
{
	pthread_once(&load_psl_once, load_psl_init);
	return load_psl_ctx;
}
