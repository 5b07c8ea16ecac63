/*
 * execcred.c: the table of exec credentials (execcred.h). A list (up to
 * EXECCRED_MAX), each sandbox's execs listed apart (namecount.h: every
 * new block-log identity asks which sandboxes have one) and each run's
 * by run id (keytab.h); tokens compare in constant time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>

#include "execcred.h"
#include "keytab.h"
#include "namecount.h"
#include "sglimits.h"

/* Blocks of one destination and reason for one exec. */
struct eblock {
	unsigned long long	 last;		/* serial of the last attempt */
	unsigned long long	 count;
	char			 host[SG_HOST_MAX + 1];
	int			 port;
	int			 attributed;	/* the exec's credential named */
	char			 reason[32];
	char			 message[512];
};

struct ecred {
	struct ecred	*next;
	struct ecred	*prev;
	struct ecred	*snext;		/* the sandbox's others */
	struct ecred	*rnext;		/* the run's others */
	char		 token[65];
	char		 sandbox[65];
	char		 run[EXECCRED_RUN_MAX + 1];
	struct eblock	*blocks;	/* grown to EXECCRED_BLOCKS at most */
	size_t		 nblocks;
	size_t		 nunattributed;	/* of them, named by no credential */
	size_t		 cap;
	int		 truncated;	/* a destination was not kept */
};

struct execcred {
	struct ecred		*head;
	size_t			 n;
	struct namecount	*sandboxes;	/* sandbox -> its execs */
	struct keytab		*byrun;		/* run id -> its execs */
	unsigned long long	 visited;	/* entries a lookup looked at */
};

static int	ecred_token_ok(const char *);
static int	ecred_id_ok(const char *, size_t);
static void	ecred_free(struct ecred *);
static void	ecred_link(struct execcred *, struct ecred *);
static void	ecred_note(struct ecred *, unsigned long long, int,
		    const char *, int, const char *, const char *);

struct execcred *
execcred_new(void)
{
	struct execcred	*t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		return NULL;
	if ((t->sandboxes = namecount_new()) == NULL ||
	    (t->byrun = keytab_new()) == NULL) {
		namecount_free(t->sandboxes);
		free(t);
		return NULL;
	}
	return t;
}

void
execcred_free(struct execcred *t)
{
	struct ecred	*e, *next;

	if (t == NULL)
		return;
	for (e = t->head; e != NULL; e = next) {
		next = e->next;
		ecred_free(e);
	}
	namecount_free(t->sandboxes);
	keytab_free(t->byrun);
	free(t);
}

static void
ecred_free(struct ecred *e)
{
	free(e->blocks);
	free(e);
}

static int
ecred_token_ok(const char *s)
{
	size_t	i, n = strlen(s);

	if (n < 32 || n > 64)
		return 0;
	for (i = 0; i < n; i++) {
		if ((s[i] < '0' || s[i] > '9') && (s[i] < 'a' || s[i] > 'f'))
			return 0;
	}
	return 1;
}

/* Ids as the controller makes them: [A-Za-z0-9_-], not empty. */
static int
ecred_id_ok(const char *s, size_t max)
{
	size_t	n = strlen(s);

	return n > 0 && n <= max && strspn(s, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

int
execcred_add(struct execcred *t, const char *token, const char *sandbox,
    const char *run_id, const char **cause)
{
	struct ecred	*e;

	if (!ecred_token_ok(token)) {
		*cause = "token must be 32 to 64 lowercase hex digits";
		return -1;
	}
	if (!ecred_id_ok(sandbox, 64) || !ecred_id_ok(run_id,
	    EXECCRED_RUN_MAX)) {
		*cause = "sandbox and run_id must be ids of [A-Za-z0-9_-]";
		return -1;
	}
	for (e = t->head; e != NULL; e = e->next) {
		if (strlen(e->token) == strlen(token) &&
		    CRYPTO_memcmp(e->token, token, strlen(token)) == 0) {
			*cause = "token is registered already";
			return -1;
		}
	}
	if (t->n >= EXECCRED_MAX) {
		*cause = "too many running execs";
		return -1;
	}
	if ((e = calloc(1, sizeof(*e))) == NULL ||
	    (keytab_get(t->byrun, run_id) == NULL &&
	    keytab_put(t->byrun, run_id, NULL) == -1) ||
	    namecount_add(t->sandboxes, sandbox) == -1) {
		free(e);
		*cause = "out of memory";
		return -1;
	}
	snprintf(e->token, sizeof(e->token), "%s", token);
	snprintf(e->sandbox, sizeof(e->sandbox), "%s", sandbox);
	snprintf(e->run, sizeof(e->run), "%s", run_id);
	ecred_link(t, e);
	return 0;
}

/*
 * List e, in its sandbox's list (a block or a credential looks at the
 * sandbox's execs alone) and its run's (room for the key taken ahead).
 */
static void
ecred_link(struct execcred *t, struct ecred *e)
{
	void	**slot = namecount_slot(t->sandboxes, e->sandbox);

	e->snext = *slot;
	*slot = e;
	e->rnext = keytab_get(t->byrun, e->run);
	(void)keytab_put(t->byrun, e->run, e);
	e->prev = NULL;
	e->next = t->head;
	if (t->head != NULL)
		t->head->prev = e;
	t->head = e;
	t->n++;
}

/* Take e out of its sandbox's list. */
static void
ecred_unlist(struct execcred *t, struct ecred *e)
{
	void		**slot = namecount_slot(t->sandboxes, e->sandbox);
	struct ecred	 *x, *prev = NULL;

	for (x = *slot; x != NULL && x != e; x = x->snext)
		prev = x;
	if (prev == NULL)
		*slot = e->snext;
	else
		prev->snext = e->snext;
}

/* Take e out of its run's list (the key goes with the last). */
static void
ecred_unlist_run(struct execcred *t, struct ecred *e)
{
	struct ecred	*x = keytab_get(t->byrun, e->run), *prev = NULL;

	for (; x != NULL && x != e; x = x->rnext)
		prev = x;
	if (x == NULL)
		return;
	if (prev != NULL)
		prev->rnext = e->rnext;
	else if (e->rnext != NULL)
		(void)keytab_put(t->byrun, e->run, e->rnext);
	else
		(void)keytab_del(t->byrun, e->run);
}

/* Take e out of the table and free it. */
static void
ecred_remove_one(struct execcred *t, struct ecred *e)
{
	if (e->prev != NULL)
		e->prev->next = e->next;
	else
		t->head = e->next;
	if (e->next != NULL)
		e->next->prev = e->prev;
	ecred_unlist(t, e);
	ecred_unlist_run(t, e);
	namecount_sub(t->sandboxes, e->sandbox);
	ecred_free(e);
	t->n--;
}

/* Remove the entries of a run (by_sandbox: of a sandbox): their lists. */
static size_t
ecred_remove(struct execcred *t, const char *key, int by_sandbox)
{
	void		**slot;
	struct ecred	 *e, *next;
	size_t		  n = 0;

	if (by_sandbox) {
		slot = namecount_slot(t->sandboxes, key);
		e = slot != NULL ? *slot : NULL;
	} else
		e = keytab_get(t->byrun, key);
	for (; e != NULL; e = next) {
		next = by_sandbox ? e->snext : e->rnext;
		ecred_remove_one(t, e);
		n++;
	}
	return n;
}

size_t
execcred_remove(struct execcred *t, const char *run_id)
{
	return ecred_remove(t, run_id, 0);
}

size_t
execcred_remove_sandbox(struct execcred *t, const char *sandbox)
{
	return ecred_remove(t, sandbox, 1);
}

size_t
execcred_count(const struct execcred *t)
{
	return t->n;
}

unsigned long long
execcred_visited(const struct execcred *t)
{
	return t->visited + keytab_visited(t->byrun);
}

/*
 * The exec of run_id of sandbox (the run's list: what it has, not every
 * running exec), or NULL.
 */
static const struct ecred *
ecred_of_run(const struct execcred *t, const char *sandbox,
    const char *run_id)
{
	const struct ecred	*e;

	for (e = keytab_get(t->byrun, run_id); e != NULL; e = e->rnext)
		if (strcmp(e->sandbox, sandbox) == 0)
			return e;
	return NULL;
}

/*
 * Only the sandbox's own execs are compared (constant time each): another
 * sandbox's token names no run of this one anyway, and a walk of every
 * running exec cost ~200 us per request with 4,000 of them (atk15r16 F1).
 */
const char *
execcred_run(const struct execcred *t, const char *token,
    const char *sandbox, char *run)
{
	const struct ecred	*e;
	void			**slot;
	size_t			 n = strlen(token);

	if (sandbox == NULL || n == 0 || (slot = namecount_slot(
	    t->sandboxes, sandbox)) == NULL)
		return NULL;
	for (e = *slot; e != NULL; e = e->snext) {
		((struct execcred *)t)->visited++;
		if (strlen(e->token) != n ||
		    CRYPTO_memcmp(e->token, token, n) != 0)
			continue;
		snprintf(run, EXECCRED_RUN_MAX + 1, "%s", e->run);
		return run;
	}
	return NULL;
}

int
execcred_running(const struct execcred *t, const char *sandbox,
    const char *run_id)
{
	if (run_id == NULL)	/* every new block-log identity asks */
		return namecount_get(t->sandboxes, sandbox) > 0;
	return ecred_of_run(t, sandbox, run_id) != NULL;
}

void
execcred_changed(struct execcred *t, namecount_fn fn, void *arg)
{
	namecount_changed(t->sandboxes, fn, arg);
}

json_t *
execcred_json(const struct execcred *t)
{
	const struct ecred	*e;
	json_t			*a = json_array();

	for (e = t->head; e != NULL && a != NULL; e = e->next)
		json_array_append_new(a, json_pack("{s:s, s:s}", "sandbox",
		    e->sandbox, "run_id", e->run));
	return a;
}

/* One attempt into e's set: counted, added, or the set marked truncated. */
static void
ecred_note(struct ecred *e, unsigned long long serial, int attributed,
    const char *host, int port, const char *reason, const char *message)
{
	struct eblock	*b;
	size_t		 i, cap;

	for (i = 0; i < e->nblocks; i++) {
		b = &e->blocks[i];
		if (b->port == port && b->attributed == attributed &&
		    strcmp(b->host, host) == 0 &&
		    strcmp(b->reason, reason) == 0) {
			b->last = serial;
			b->count++;
			return;
		}
	}
	if (e->nblocks >= EXECCRED_BLOCKS || (!attributed &&
	    e->nunattributed >= EXECCRED_BLOCKS_UNATTRIBUTED)) {
		e->truncated = 1;
		return;
	}
	if (e->nblocks == e->cap) {
		cap = e->cap ? e->cap * 2 : 4;
		if (cap > EXECCRED_BLOCKS)
			cap = EXECCRED_BLOCKS;
		if ((b = reallocarray(e->blocks, cap, sizeof(*b))) == NULL) {
			e->truncated = 1;
			return;
		}
		e->blocks = b;
		e->cap = cap;
	}
	b = &e->blocks[e->nblocks++];
	memset(b, 0, sizeof(*b));
	b->last = serial;
	b->count = 1;
	snprintf(b->host, sizeof(b->host), "%s", host);
	b->port = port;
	b->attributed = attributed;
	if (!attributed)
		e->nunattributed++;
	snprintf(b->reason, sizeof(b->reason), "%s", reason);
	snprintf(b->message, sizeof(b->message), "%s", message);
}

void
execcred_note_block(struct execcred *t, unsigned long long serial,
    const char *sandbox, const char *run_id, const char *host, int port,
    const char *reason, const char *message)
{
	struct ecred	*e;
	void		**slot;
	int		 attributed = run_id != NULL && run_id[0] != '\0';

	if (sandbox == NULL ||
	    (slot = namecount_slot(t->sandboxes, sandbox)) == NULL)
		return;
	for (e = *slot; e != NULL; e = e->snext) {
		t->visited++;
		if (attributed && strcmp(e->run, run_id) != 0)
			continue;
		ecred_note(e, serial, attributed, host ? host : "", port,
		    reason ? reason : "", message ? message : "");
	}
}

json_t *
execcred_blocks_json(const struct execcred *t, const char *sandbox,
    const char *run_id, unsigned long long after, int unattributed,
    int *truncated)
{
	const struct ecred	*e;
	const struct eblock	*b;
	json_t			*a;
	size_t			 i;

	if ((e = ecred_of_run(t, sandbox, run_id)) == NULL ||
	    (a = json_array()) == NULL)
		return NULL;
	*truncated = e->truncated;
	for (i = 0; i < e->nblocks; i++) {
		b = &e->blocks[i];
		if (b->last <= after || (!b->attributed && !unattributed))
			continue;
		json_array_append_new(a, json_pack("{s:I, s:s, s:i, s:s, "
		    "s:s, s:I, s:o}", "seq", (json_int_t)b->last, "host",
		    b->host, "port", b->port, "reason", b->reason, "message",
		    b->message, "attempts", (json_int_t)b->count, "run_id",
		    b->attributed ? json_string(e->run) : json_null()));
	}
	return a;
}
