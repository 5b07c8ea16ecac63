/*
 * policy.c: the policy object: diagnostics, loading a folder or a buffer,
 * accessors, set lists. Validation of one file is policy_load.c, lookup
 * tables and cross-entry checks policy_index.c, decisions policy_decide.c.
 */
#include <sys/stat.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy_int.h"
#include "sglimits.h"
#include "util.h"

#define PARENA_CHUNK	(64 * 1024)

struct parena_chunk {
	struct parena_chunk	*next;
	size_t			 used;
	size_t			 cap;
	max_align_t		 data[];
};

static struct policy *policy_new(void);
static struct policy *policy_finish(struct ploader *);
static int	policy_loader(struct ploader *, const char *, time_t,
		    struct policy_diags *);
static int	policy_diag_push(struct policy_diags *, struct policy_diag *);
static void	policy_diags_sort(struct policy_diags *, size_t from);
static int	policy_diag_cmp(const void *, const void *);
static int	policy_name_cmp(const void *, const void *);
static char	**policy_dir_names(struct ploader *, const char *dir,
		    size_t *n);
static void	policy_load_path(struct ploader *, const char *dir,
		    const char *base);
static char	*policy_read_file(struct ploader *, const char *path,
		    size_t *len);

void *
parena_alloc(struct parena *a, size_t n)
{
	struct parena_chunk	*c = a->head;
	size_t			 cap;
	void			*p;

	n = (n + sizeof(max_align_t) - 1) & ~(sizeof(max_align_t) - 1);
	if (c == NULL || c->cap - c->used < n) {
		cap = n > PARENA_CHUNK / 4 ? n : PARENA_CHUNK;
		c = malloc(sizeof(*c) + cap);
		if (c == NULL)
			return NULL;
		c->used = 0;
		c->cap = cap;
		/* A big block goes behind the current chunk to keep it. */
		if (cap != PARENA_CHUNK && a->head != NULL) {
			c->next = a->head->next;
			a->head->next = c;
		} else {
			c->next = a->head;
			a->head = c;
		}
	}
	p = (char *)c->data + c->used;
	c->used += n;
	return p;
}

char *
parena_strndup(struct parena *a, const char *s, size_t len)
{
	char	*p = parena_alloc(a, len + 1);

	if (p == NULL)
		return NULL;
	memcpy(p, s, len);
	p[len] = '\0';
	return p;
}

void
parena_free(struct parena *a)
{
	struct parena_chunk	*c, *next;

	for (c = a->head; c != NULL; c = next) {
		next = c->next;
		free(c);
	}
	a->head = NULL;
}

void
policy_diags_init(struct policy_diags *d)
{
	memset(d, 0, sizeof(*d));
}

void
policy_diags_release(struct policy_diags *d)
{
	size_t	i;

	for (i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].message);
	}
	free(d->v);
	memset(d, 0, sizeof(*d));
}

int
policy_diag_format(const struct policy_diag *d, char *buf, size_t size)
{
	const char	*sev;

	sev = d->severity == POLICY_WARNING ? "warning: " : "";

	if (d->line <= 0)
		return snprintf(buf, size, "%s: %s%s", d->file, sev,
		    d->message);
	return snprintf(buf, size, "%s:%d:%d: %s%s", d->file, d->line,
	    d->col, sev, d->message);
}

/* Append a diagnostic, taking its strings; counts it even when dropped. */
static int
policy_diag_push(struct policy_diags *d, struct policy_diag *g)
{
	struct policy_diag	*v;
	size_t			 cap;

	if (g->severity == POLICY_ERROR)
		d->nerrors++;
	else
		d->nwarnings++;
	if (d->n >= SG_POLICY_DIAGS_MAX)
		goto drop;
	if (d->n == d->cap) {
		cap = d->cap ? d->cap * 2 : 16;
		v = reallocarray(d->v, cap, sizeof(*v));
		if (v == NULL)
			goto drop;
		d->v = v;
		d->cap = cap;
	}
	d->v[d->n++] = *g;
	return 0;
drop:
	d->dropped++;
	free(g->file);
	free(g->message);
	return -1;
}

void
ploader_diag(struct ploader *ld, enum policy_severity sev, int line,
    int col, const char *fmt, ...)
{
	struct policy_diag	g;
	va_list			ap;
	int			rc;

	memset(&g, 0, sizeof(g));
	g.severity = sev;
	g.line = line;
	g.col = col;
	g.file = strdup(ld->file ? ld->file : "-");
	va_start(ap, fmt);
	rc = vasprintf(&g.message, fmt, ap);
	va_end(ap);
	if (rc == -1)
		g.message = NULL;
	if (g.file == NULL || g.message == NULL) {
		/* Still counted, so an error is never lost to ENOMEM. */
		free(g.file);
		free(g.message);
		g.file = g.message = NULL;
		ld->diags->dropped++;
		if (sev == POLICY_ERROR)
			ld->diags->nerrors++;
		return;
	}
	policy_diag_push(ld->diags, &g);
}

struct diag_pos {
	struct policy_diag	d;
	size_t			idx;
};

static int
policy_diag_cmp(const void *a, const void *b)
{
	const struct diag_pos	*x = a, *y = b;
	int			 c = strcmp(x->d.file, y->d.file);

	if (c != 0)
		return c;
	if (x->d.line != y->d.line)
		return x->d.line < y->d.line ? -1 : 1;
	if (x->d.col != y->d.col)
		return x->d.col < y->d.col ? -1 : 1;
	return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sort the diagnostics of this load by file and position, stably. */
static void
policy_diags_sort(struct policy_diags *d, size_t from)
{
	struct diag_pos	*t;
	size_t		 i, n = d->n - from;

	if (n < 2)
		return;
	t = calloc(n, sizeof(*t));
	if (t == NULL)
		return;
	for (i = 0; i < n; i++) {
		t[i].d = d->v[from + i];
		t[i].idx = i;
	}
	qsort(t, n, sizeof(*t), policy_diag_cmp);
	for (i = 0; i < n; i++)
		d->v[from + i] = t[i].d;
	free(t);
}

static struct policy *
policy_new(void)
{
	struct policy	*p;

	p = calloc(1, sizeof(*p));
	if (p == NULL)
		return NULL;
	p->md = EVP_MD_CTX_new();
	if (p->md == NULL || !EVP_DigestInit_ex(p->md, EVP_sha256(), NULL)) {
		policy_free(p);
		return NULL;
	}
	return p;
}

void
policy_free(struct policy *p)
{
	if (p == NULL)
		return;
	EVP_MD_CTX_free(p->md);
	policy_cas_release(p->cas);
	policy_free(p->floor);
	free(p->gdomains);
	ptable_free(&p->exact);
	ptable_free(&p->wild);
	ptable_free(&p->cidr);
	free(p->entries);
	free(p->sets);
	parena_free(&p->arena);
	free(p);
}

long
ploader_add_set(struct ploader *ld, const char *name, const char *file)
{
	struct policy		*p = ld->p;
	struct policy_set	*s, *v;
	size_t			 cap;

	if (p->nsets == p->capsets) {
		cap = p->capsets ? p->capsets * 2 : 8;
		v = reallocarray(p->sets, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		p->sets = v;
		p->capsets = cap;
	}
	s = &p->sets[p->nsets];
	memset(s, 0, sizeof(*s));
	s->name = parena_strndup(&p->arena, name, strlen(name));
	s->file = file;
	s->description = s->owner = "";
	s->first = p->nentries;
	if (s->name == NULL)
		return -1;
	return (long)p->nsets++;
}

int
ploader_add_entry(struct ploader *ld, const struct pentry *e)
{
	struct policy	*p = ld->p;
	struct pentry	*v;
	size_t		 cap;

	if (p->nentries >= SG_POLICY_ENTRIES_MAX)
		return -1;
	if (p->nentries == p->capentries) {
		cap = p->capentries ? p->capentries * 2 : 64;
		v = reallocarray(p->entries, cap, sizeof(*v));
		if (v == NULL)
			return -1;
		p->entries = v;
		p->capentries = cap;
	}
	p->entries[p->nentries] = *e;
	p->entries[p->nentries].setidx = (uint32_t)(p->nsets - 1);
	p->nentries++;
	p->sets[p->nsets - 1].nentries++;
	return 0;
}

void
ploader_digest_file(struct ploader *ld, const char *base, const char *buf,
    size_t len)
{
	unsigned char	n[8];
	int		i;

	for (i = 0; i < 8; i++)
		n[i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
	EVP_DigestUpdate(ld->p->md, base, strlen(base) + 1);
	EVP_DigestUpdate(ld->p->md, n, sizeof(n));
	EVP_DigestUpdate(ld->p->md, buf, len);
}

/* Index, check across entries, sort diagnostics; NULL on any error. */
static struct policy *
policy_finish(struct ploader *ld)
{
	struct policy	*p = ld->p;
	unsigned char	 md[EVP_MAX_MD_SIZE];
	unsigned int	 mdlen = 0;
	size_t		 i;

	for (i = 0; i < p->nentries; i++)
		p->entries[i].pub.set = &p->sets[p->entries[i].setidx];
	if (!ld->oom && (pindex_build(ld) == -1 || pfloor_build(ld) == -1))
		ld->oom = 1;
	if (ld->oom)
		ploader_diag(ld, POLICY_ERROR, 0, 0, "out of memory while "
		    "loading the policy");
	if (EVP_DigestFinal_ex(p->md, md, &mdlen) && mdlen == 32)
		util_hex(md, mdlen, p->digest);
	EVP_MD_CTX_free(p->md);
	p->md = NULL;
	policy_diags_sort(ld->diags, ld->errors0);
	if (ld->diags->nerrors > ld->errors0) {
		policy_free(p);
		return NULL;
	}
	return p;
}

/* Start a load of what name names: ld cleared, a new policy. 0 or -1. */
static int
policy_loader(struct ploader *ld, const char *name, time_t now,
    struct policy_diags *diags)
{
	memset(ld, 0, sizeof(*ld));
	ld->diags = diags;
	ld->now = now;
	ld->errors0 = diags->nerrors;
	ld->file = name;
	if ((ld->p = policy_new()) == NULL) {
		ploader_diag(ld, POLICY_ERROR, 0, 0, "out of memory");
		return -1;
	}
	return 0;
}

struct policy *
policy_load_buffer(const char *name, const char *file, const char *buf,
    size_t len, time_t now, struct policy_diags *diags)
{
	struct ploader	ld;
	char		base[SG_POLICY_SET_NAME_MAX + 16];

	if (policy_loader(&ld, file, now, diags) == -1)
		return NULL;
	ld.file = parena_strndup(&ld.p->arena, file, strlen(file));
	if (ld.file == NULL)
		ld.oom = 1;
	else {
		snprintf(base, sizeof(base), "%s.yaml", name);
		ploader_digest_file(&ld, base, buf, len);
		ploader_load_file(&ld, name, buf, len);
	}
	return policy_finish(&ld);
}

/* Order file names by set name ("a" before "a-b"), as sets are kept. */
static int
policy_name_cmp(const void *a, const void *b)
{
	const char	*x = *(char *const *)a, *y = *(char *const *)b;
	size_t		 lx = strlen(x) - 5, ly = strlen(y) - 5;
	int		 c = strncmp(x, y, lx < ly ? lx : ly);

	if (c != 0)
		return c;
	return lx < ly ? -1 : lx > ly;
}

/* The sorted *.yaml names in dir; NULL with a diagnostic on failure. */
static char **
policy_dir_names(struct ploader *ld, const char *dir, size_t *n)
{
	DIR		*d;
	struct dirent	*de;
	char		**v = NULL, **nv;
	size_t		 len, cap = 0;

	*n = 0;
	d = opendir(dir);
	if (d == NULL) {
		ploader_diag(ld, POLICY_ERROR, 0, 0, "cannot open the policy "
		    "folder: %s", strerror(errno));
		return NULL;
	}
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (de->d_name[0] == '.' || len <= 5 ||
		    strcmp(de->d_name + len - 5, ".yaml") != 0) {
			if (len > 4 &&
			    strcmp(de->d_name + len - 4, ".yml") == 0)
				ploader_diag(ld, POLICY_WARNING, 0, 0, "\"%s\" "
				    "is ignored; policy files end in .yaml",
				    de->d_name);
			continue;
		}
		if (*n + 1 >= cap) {
			cap = cap ? cap * 2 : 16;
			nv = reallocarray(v, cap, sizeof(*v));
			if (nv == NULL)
				goto oom;
			v = nv;
		}
		v[*n] = strdup(de->d_name);
		if (v[*n] == NULL)
			goto oom;
		(*n)++;
	}
	closedir(d);
	if (v != NULL)
		qsort(v, *n, sizeof(*v), policy_name_cmp);
	return v;
oom:
	closedir(d);
	ld->oom = 1;
	while (*n > 0)
		free(v[--(*n)]);
	free(v);
	return NULL;
}

/* Read a whole file into a malloc'd buffer; NULL with a diagnostic. */
static char *
policy_read_file(struct ploader *ld, const char *path, size_t *len)
{
	struct stat	 st;
	char		*buf = NULL;
	ssize_t		 r;
	int		 fd;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd == -1 || fstat(fd, &st) == -1) {
		ploader_diag(ld, POLICY_ERROR, 0, 0, "cannot read: %s",
		    strerror(errno));
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		ploader_diag(ld, POLICY_ERROR, 0, 0, "not a regular file; "
		    "policy.d may only hold policy files");
		goto out;
	}
	if (st.st_size > SG_POLICY_FILE_MAX) {
		ploader_diag(ld, POLICY_ERROR, 0, 0, "file is larger than %d "
		    "bytes; split it into several sets", SG_POLICY_FILE_MAX);
		goto out;
	}
	buf = malloc((size_t)st.st_size + 1);
	if (buf == NULL) {
		ld->oom = 1;
		goto out;
	}
	*len = 0;
	while (*len < (size_t)st.st_size) {
		r = read(fd, buf + *len, (size_t)st.st_size - *len);
		if (r == -1 && errno == EINTR)
			continue;
		if (r <= 0) {
			ploader_diag(ld, POLICY_ERROR, 0, 0, "cannot read: %s",
			    r == 0 ? "file shrank while reading" :
			    strerror(errno));
			free(buf);
			buf = NULL;
			goto out;
		}
		*len += (size_t)r;
	}
out:
	if (fd != -1)
		close(fd);
	return buf;
}

/* Load dir/base as the set named after base without ".yaml". */
static void
policy_load_path(struct ploader *ld, const char *dir, const char *base)
{
	char	*path = NULL, *name = NULL, *buf;
	size_t	 dlen = strlen(dir), len = 0;

	if (asprintf(&path, "%s%s%s", dir,
	    dlen > 0 && dir[dlen - 1] == '/' ? "" : "/", base) == -1)
		path = NULL;
	name = strndup(base, strlen(base) - 5);
	if (path == NULL || name == NULL) {
		ld->oom = 1;
		goto out;
	}
	ld->file = parena_strndup(&ld->p->arena, path, strlen(path));
	if (ld->file == NULL) {
		ld->oom = 1;
		goto out;
	}
	buf = policy_read_file(ld, path, &len);
	if (buf != NULL) {
		ploader_digest_file(ld, base, buf, len);
		ploader_load_file(ld, name, buf, len);
		free(buf);
	}
out:
	free(name);
	free(path);
}

struct policy *
policy_load_dir(const char *dir, time_t now, struct policy_diags *diags)
{
	struct ploader	ld;
	char		**names;
	size_t		 i, n;

	if (policy_loader(&ld, dir, now, diags) == -1)
		return NULL;
	names = policy_dir_names(&ld, dir, &n);
	if (names != NULL || diags->nerrors == ld.errors0) {
		if (n == 0)
			ploader_diag(&ld, POLICY_WARNING, 0, 0, "no policy "
			    "files (*.yaml) here; every destination will be "
			    "blocked");
		for (i = 0; i < n && !ld.oom; i++)
			policy_load_path(&ld, dir, names[i]);
		ld.file = dir;
	}
	for (i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return policy_finish(&ld);
}

const char *
policy_digest(const struct policy *p)
{
	return p->digest;
}

size_t
policy_nsets(const struct policy *p)
{
	return p->nsets;
}

const struct policy_set *
policy_set_at(const struct policy *p, size_t i)
{
	return i < p->nsets ? &p->sets[i] : NULL;
}

const struct policy_set *
policy_set_find(const struct policy *p, const char *name)
{
	size_t	lo = 0, hi = p->nsets, mid;
	int	c;

	/* Sets are in name order: folders are read sorted. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		c = strcmp(name, p->sets[mid].name);
		if (c == 0)
			return &p->sets[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return NULL;
}

int
policy_set_exists(const struct policy *p, const char *name)
{
	return policy_set_find(p, name) != NULL;
}

int
policy_set_is_report(const struct policy *p, const char *name)
{
	const struct policy_set	*s = policy_set_find(p, name);

	return s != NULL && s->mode == POLICY_REPORT;
}

size_t
policy_nentries(const struct policy *p)
{
	return p->nentries;
}

const struct policy_entry *
policy_entry_at(const struct policy *p, size_t i)
{
	return i < p->nentries ? &p->entries[i].pub : NULL;
}

enum policy_tls
policy_entry_tls(const struct policy_entry *e, uint16_t port)
{
	if (e->tls != POLICY_TLS_DEFAULT)
		return e->tls;
	return port == 443 ? POLICY_TLS_REQUIRED : POLICY_TLS_OPTIONAL;
}

int
policy_entry_active(const struct policy_entry *e, time_t now)
{
	return e->expires == 0 || now < e->expires;
}

const char *
policy_tls_name(enum policy_tls t)
{
	switch (t) {
	case POLICY_TLS_REQUIRED:
		return "required";
	case POLICY_TLS_OPTIONAL:
		return "optional";
	case POLICY_TLS_TERMINATE:
		return "terminate";
	default:
		return "default";
	}
}

const char *
policy_mode_name(enum policy_mode m)
{
	return m == POLICY_REPORT ? "report" : "enforce";
}

int
policy_set_name_valid(const char *name)
{
	size_t	i, len = strlen(name);

	if (len == 0 || len > SG_POLICY_SET_NAME_MAX)
		return 0;
	for (i = 0; i < len; i++) {
		if (strchr("abcdefghijklmnopqrstuvwxyz0123456789_-",
		    name[i]) == NULL)
			return 0;
	}
	return 1;
}

int
policy_set_list_parse(const char *s, char ***names, size_t *n,
    const char **cause)
{
	char	**v = NULL, *item;
	size_t	 i, len, cnt = 0, cap = 1;
	const char *p, *comma;

	for (p = s; *p != '\0'; p++)
		cap += *p == ',';
	v = calloc(cap + 1, sizeof(*v));
	if (v == NULL) {
		*cause = "out of memory";
		return -1;
	}
	for (p = s;; p = comma + 1) {
		comma = strchr(p, ',');
		len = comma ? (size_t)(comma - p) : strlen(p);
		item = strndup(p, len);
		if (item == NULL || !policy_set_name_valid(item)) {
			*cause = item == NULL ? "out of memory" : len == 0 ?
			    "empty set name in list" : "set names may only "
			    "use a-z, 0-9, '_' and '-'";
			free(item);
			policy_set_list_free(v);
			return -1;
		}
		for (i = 0; i < cnt && strcmp(v[i], item) != 0; i++)
			;
		if (i < cnt)
			free(item);
		else
			v[cnt++] = item;
		if (comma == NULL)
			break;
	}
	*names = v;
	*n = cnt;
	return 0;
}

void
policy_set_list_free(char **names)
{
	size_t	i;

	if (names == NULL)
		return;
	for (i = 0; names[i] != NULL; i++)
		free(names[i]);
	free(names);
}
