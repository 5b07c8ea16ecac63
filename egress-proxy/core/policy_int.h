/*
 * policy_int.h: what the files of the policy module (policy.c,
 * policy_load.c, policy_yaml.c, policy_index.c) share with each other and
 * with nothing else. The public contract is policy.h.
 */
#ifndef SG_POLICY_INT_H
#define SG_POLICY_INT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <openssl/evp.h>

#include "policy.h"

/*
 * A bump allocator: many small objects freed together. Allocation returns
 * NULL when memory runs out; parena_free releases every chunk.
 */
struct parena_chunk;
struct parena {
	struct parena_chunk	*head;
};

void	*parena_alloc(struct parena *, size_t);
char	*parena_strndup(struct parena *, const char *, size_t);
void	 parena_free(struct parena *);

/* An open-addressing table from byte keys to the first entry index + 1. */
struct pslot {
	const void	*key;
	uint32_t	 klen;
	uint32_t	 head;		/* 0: empty slot */
};

struct ptable {
	struct pslot	*slots;
	size_t		 mask;		/* capacity - 1; capacity 0: empty */
};

/* Key of a CIDR entry: family byte, prefix length, 16 address bytes. */
#define PENTRY_CKEY_LEN	18

struct pentry {
	struct policy_entry	 pub;
	uint32_t		 setidx;
	uint32_t		 next;		/* next index + 1, same key */
	uint8_t			 ckey[PENTRY_CKEY_LEN];
};

struct policy {
	struct parena		 arena;
	struct policy_set	*sets;
	size_t			 nsets;
	size_t			 capsets;
	struct pentry		*entries;
	size_t			 nentries;
	size_t			 capentries;
	struct ptable		 exact;
	struct ptable		 wild;
	struct ptable		 cidr;
	uint64_t		 v4lens;	/* bit L: a /L entry exists */
	uint64_t		 v6lens[3];	/* bits 0..128 */
	EVP_MD_CTX		*md;		/* while loading */
	char			 digest[65];
	/* The deny entries, indexed as a policy of their own; or NULL. */
	struct policy		*floor;
	struct policy_grant_domain *gdomains;
	int			 grants_private;	/* grants.allow_private */
	size_t			 ngdomains;
	size_t			 capgdomains;
	/* Its ca_files; their bytes are shared (policy_cas_release). */
	const struct policy_ca	*cas;
};

/* State of one load (directory or buffer). */
struct ploader {
	struct policy		*p;
	struct policy_diags	*diags;
	time_t			 now;
	const char		*file;		/* current file, in p->arena */
	size_t			 errors0;	/* diags->nerrors at start */
	int			 oom;
	size_t			 ncas;		/* ca_files read so far */
	size_t			 ca_bytes;	/* of every one of them */
};

/* A node of a parsed YAML document (policy_yaml.c). */
enum ynode_type {
	YNODE_SCALAR,
	YNODE_SEQ,
	YNODE_MAP
};

struct ynode {
	enum ynode_type	 type;
	int		 line;		/* 1-based */
	int		 col;
	int		 plain;		/* scalar written without quotes */
	const char	*value;		/* scalar, NUL-terminated */
	size_t		 len;		/* may be < strlen if it has NUL */
	struct ynode	*first;		/* children; a map alternates k, v */
	struct ynode	*last;
	struct ynode	*next;
	size_t		 n;
};

struct yerror {
	int	line;
	int	col;
	char	msg[256];
};

/*
 * Parse len bytes of UTF-8 YAML into a tree allocated in a. *root is NULL
 * for a file without a document. Returns 0, or -1 with *err filled (syntax
 * error, invalid UTF-8, alias, several documents, nesting too deep).
 */
int	ytree_parse(struct parena *a, const char *buf, size_t len,
	    struct ynode **root, struct yerror *err);

/* Add a diagnostic at a position (line 0: the whole file). */
void	ploader_diag(struct ploader *, enum policy_severity, int line,
	    int col, const char *fmt, ...)
	    __attribute__((format(printf, 5, 6)));
/* Start a new set; returns its index or -1 (out of memory). */
long	ploader_add_set(struct ploader *, const char *name,
	    const char *file);
/* Append an entry to the last set; the entry is copied. 0 or -1. */
int	ploader_add_entry(struct ploader *, const struct pentry *);
/* Feed one file into the digest. */
void	ploader_digest_file(struct ploader *, const char *base,
	    const char *buf, size_t len);
/* Validate one file into a set (policy_load.c). */
void	ploader_load_file(struct ploader *, const char *name,
	    const char *buf, size_t len);

/*
 * tls: terminate (policy_tls.c). ploader_ca_file reads path, a regular
 * file of PEM certificates beneath the policy folder (path's first
 * dirlen bytes; no link on the way, none as the file), once per load, keeps its bytes in
 * the policy and feeds them to the digest: the policy_ca, or NULL with
 * *cause a static phrase (or ld->oom set). policy_cred_header_invalid says
 * why h cannot be a credential's header (a static phrase), or NULL.
 * policy_method_echoes: 1 when method (any case) is TRACE or TRACK,
 * whose answer echoes the request's header fields, an injected
 * credential's too; an entry with credentials never allows one.
 */
const struct policy_ca *ploader_ca_file(struct ploader *,
	    const char *path, size_t dirlen, const char **cause);
/*
 * Drop the references a policy's ca_files hold on their bytes, which
 * every load that read the same bytes shares (the last frees them).
 */
void	policy_cas_release(const struct policy_ca *cas);
const char *policy_cred_header_invalid(const char *h);
int	policy_method_echoes(const char *method);
/* The policy deny entries go into (created on first use), or NULL. */
struct policy *ploader_floor(struct ploader *);
/* Index the floor's entries, if any (policy_floor.c). 0 or -1. */
int	pfloor_build(struct ploader *);
/* Add a domain grants may cover. 0 or -1 (out of memory). */
int	ploader_add_grant_domain(struct ploader *, const char *name,
	    int line, int col);

/* Build the lookup tables and run the checks across entries. 0 or -1. */
int	pindex_build(struct ploader *);
/* Look key up; returns the first entry index + 1 or 0. */
uint32_t ptable_get(const struct ptable *, const void *key, size_t klen);
void	 ptable_free(struct ptable *);
/* 1 when some entry has a prefix of this length and family. */
int	 pindex_len_used(const struct policy *, int family, unsigned prefix);
/* Fill the CIDR key of a prefix. */
void	 pindex_ckey(uint8_t key[PENTRY_CKEY_LEN], int family,
	    unsigned prefix, const uint8_t *bytes);

/*
 * The deny entry of floor that matches q's host and port, or NULL
 * (policy_decide.c).
 */
const struct pentry *pdecide_floor(const struct policy *floor,
	    const struct policy_query *q);

/*
 * A public suffix rule under name (a normalized DNS name), as written in
 * the list ("s3.amazonaws.com", "*.compute.amazonaws.com"), or NULL when
 * the list has none under it. *missing is set when the list's text could
 * not be read (then nothing can be said). policy_psl.c.
 */
const char	*ppsl_inner(const char *name, int *missing);

#endif
