/* blocklog.c: full lines or counted summaries for blocks; see blocklog.h. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blocklog.h"
#include "siphash.h"

#define BL_BUCKETS	4096		/* hash chains of identities */
#define BL_HASH_CUT	512		/* bytes of a part hashed (bl_hash) */
/* The table full: the least recently seen identities looked at. */
#define BL_EVICT_SCAN	1024
#define BL_EVICT_BATCH	64	/* forgotten at once, the most lines */
/* The parts of the identity table (struct blocklog parts). */
#define BL_ADDR		0
#define BL_REG		1
/* A key's reason and report flag as one int ("rk"). */
#define BL_RK(reason, report)	((int)(reason) | ((report) ? 0x100 : 0))

/* Who made attempts: a sandbox, or an unregistered client address. */
struct bl_ident {
	struct bl_ident		*hnext;
	struct bl_ident		*prev;
	struct bl_ident		*next;
	char			*name;
	uint64_t		 win_start;
	unsigned		 written;	/* full lines this window */
	unsigned		 large;		/* of large transfers */
	unsigned		 nkeys;
	struct bl_key		*ikeys;		/* its keys (bl_key_get) */
	/* Attempts counted into the shared overflow keys, not charged yet. */
	unsigned long long	 ocount;
	/*
	 * Its bytes written in the log's current and previous epoch (each
	 * half its capacity: what rotation keeps), and the epoch of cur.
	 */
	unsigned long long	 cur;
	unsigned long long	 prev_epoch;
	unsigned long long	 epoch;
	/* Its own lines (not summaries) in those epochs, and their bytes. */
	unsigned		 own, own_prev;
	unsigned long long	 own_b, own_b_prev;
	/* Of those bytes, the ones under its floor (not in the pool). */
	unsigned long long	 floor_b, floor_b_prev;
	int			 capped;	/* past its share: counted */
	int			 pooled;	/* past its floor, the pool full */
	/* Since the pressure began (blocklog_stop_top): */
	unsigned long long	 lines;
	unsigned long long	 fresh;		/* bytes not yet charged */
	unsigned long long	 charged;	/* reserve held now */
	uint64_t		 last_us;
	int			 stopped;
	int			 reg;		/* a registered sandbox (BL_REG) */
};

/* One identity, destination and reason, with what it counted. */
struct bl_key {
	struct bl_key		*inext;		/* its identity's next */
	struct bl_key		*prev;
	struct bl_key		*next;
	struct bl_ident		*id;		/* NULL: the global overflow */
	char			*host;		/* NULL: other destinations */
	int			 port;
	enum sg_reason		 reason;
	int			 report;	/* would_block attempts */
	uint64_t		 win_start;
	unsigned		 written;
	uint64_t		 last_us;
	unsigned long long	 count;
	unsigned long long	 told;	/* of count, in a summary not written */
	unsigned long long	 bytes_up;	/* sums of what was counted */
	unsigned long long	 bytes_down;
	unsigned long long	 large;		/* large transfers counted */
	unsigned long long	 largest;	/* bytes of the largest */
	uint32_t		*dests;		/* no host: destinations seen */
	unsigned		 ndests;
	int			 dests_more;
	struct timespec		 first;
	struct timespec		 last;
	/* The first counted attempt of the window stands for them all. */
	char			*sandbox;
	char			*src;
	char			*method;
	char			*message;
	char			*rule;
	char			*digest;
	char			**sets;
};

struct blocklog {
	struct blocklog_opts	 opts;
	blocklog_emit_cb	 emit;
	void			*arg;
	struct bl_ident		*idents[BL_BUCKETS];
	struct bl_key		*klist;
	/*
	 * The identities, most recently seen first, in two parts: client
	 * addresses (BL_ADDR, at most BLOCKLOG_IDENTS_MAX, evicted) and
	 * registered sandboxes (BL_REG, as many as the registry holds,
	 * never evicted).
	 */
	struct bl_part {
		struct bl_ident	*head;
		struct bl_ident	*tail;
		size_t		 n;
	}			 parts[2];
	blocklog_registered_cb	 registered;
	void			*registered_arg;
	size_t			 nkeys;
	/* Of those, registered sandboxes': not held to BLOCKLOG_KEYS_MAX. */
	size_t			 rkeys;
	struct bl_key		*overflow[2][SG_REASON_MAX];
	unsigned long long	 ocount;	/* the idents' ocount, summed */
	unsigned long long	 obytes;	/* overflow summaries' bytes */
	/* Every identity's bytes, per epoch (bl_share). */
	unsigned long long	 epoch;
	unsigned long long	 cur;
	unsigned long long	 prev_epoch;
	/* Own lines of identities past their floor, per epoch (the pool). */
	unsigned long long	 pool;
	unsigned long long	 pool_prev;
	unsigned long long	 counted;
	unsigned long long	 summaries;
	unsigned long long	 probes;	/* entries compared, lookups */
	int			 held;		/* under pressure: counting */
	unsigned long long	 room;		/* its first look's room */
	unsigned long long	 prev;		/* last look's room */
	unsigned long long	 fresh;		/* the idents' fresh, summed */
	unsigned long long	 charged;	/* all identities' charged */
};

static uint32_t	bl_hash(const char *, const char *, int, int);
static struct bl_ident *bl_ident_get(struct blocklog *, const char *,
		    uint64_t, int);
static void	bl_ident_free(struct blocklog *, struct bl_ident *);
static void	bl_ident_link(struct blocklog *, struct bl_ident *);
static void	bl_ident_unlink(struct blocklog *, struct bl_ident *);
static struct bl_ident *bl_ident_first(const struct blocklog *);
static struct bl_ident *bl_ident_after(const struct blocklog *,
		    const struct bl_ident *);
static int	bl_ident_is_reg(const struct blocklog *, const char *);
static struct bl_ident *bl_ident_find(const struct blocklog *, const char *);
static void	bl_ident_reclass(struct blocklog *, struct bl_ident *);
static int	bl_ident_evict(struct blocklog *);
static int	bl_ident_pending(const struct bl_ident *);
static int	bl_ident_forgettable(struct blocklog *, struct bl_ident *);
static struct bl_key *bl_key_get(struct blocklog *, struct bl_ident *,
		    const char *, int, int, uint64_t);
static struct bl_key *bl_key_new(struct blocklog *, struct bl_ident *,
		    const char *, int, int, uint64_t);
static void	bl_count(struct blocklog *, struct bl_ident *, struct bl_key *,
		    const struct blocklog_event *, const struct blocklog_event *,
		    const struct timespec *);
static void	bl_key_clear(struct bl_key *);
static void	bl_key_zero(struct bl_key *);
static void	bl_count_dest(struct bl_key *, const struct blocklog_event *);
static void	bl_count_hash(struct bl_key *, uint32_t);
static void	bl_fold(struct blocklog *, struct bl_ident *);
static void	bl_fold_key(struct bl_key *, struct bl_key *);
static void	bl_key_free(struct blocklog *, struct bl_key *);
static int	bl_key_keep(struct bl_key *, const struct blocklog_event *);
static void	bl_summarize(struct blocklog *, struct bl_key *);
static int	bl_large(const struct blocklog_event *);
static void	bl_wrote(struct blocklog *, struct bl_ident *,
		    unsigned long long, enum blocklog_line);
static void	bl_charge(struct blocklog *, unsigned long long);
static void	bl_charge_overflow(struct blocklog *);
static void	bl_credit(struct blocklog *, unsigned long long);
static int	bl_streq(const char *, const char *);
static void	bl_stopped_event(struct blocklog_event *);
static void	bl_capped_event(struct blocklog_event *,
		    const struct bl_ident *);
static void	bl_epoch(struct blocklog *, struct bl_ident *);
static void	bl_share_add(struct blocklog *, struct bl_ident *,
		    unsigned long long, enum blocklog_line);
static int	bl_share_check(struct blocklog *, struct bl_ident *, int);
static int	bl_share_pool(struct blocklog *, struct bl_ident *,
		    unsigned long long, unsigned long long);
static int	bl_floor(const struct blocklog *, const struct bl_ident *);
static int	bl_pool_full(const struct blocklog *);
static void	bl_share_forget(struct blocklog *, struct bl_ident *);
static int	bl_share_keep(struct blocklog *, struct bl_ident *);
static char	*bl_strdup(const char *, int *);

/*
 * Identity, host, port and reason hashed under the process's key
 * (sg_keyed_hash): identities are addresses and sandbox ids, hosts the
 * client's choice, so with an unkeyed hash (FNV-1a) colluders chose
 * addresses of one chain of the identity table (and host names of one
 * chain of the key table: 8,192 keys in one bucket made each blocked
 * request cost 390-734 us instead of 16 us, atk15r12 F5). Each part is
 * cut at BL_HASH_CUT bytes (longer than any host or identity: a longer
 * one would only collide).
 */
static uint32_t
bl_hash(const char *ident, const char *host, int port, int reason)
{
	const char	*parts[2] = { ident ? ident : "", host ? host : "" };
	unsigned char	 m[2 * (BL_HASH_CUT + 2) + 8];
	size_t		 n = 0, i, l;

	for (i = 0; i < 2; i++) {
		l = strnlen(parts[i], BL_HASH_CUT);
		m[n++] = (unsigned char)(l & 0xff);
		m[n++] = (unsigned char)(l >> 8);
		memcpy(m + n, parts[i], l);
		n += l;
	}
	memcpy(m + n, &port, sizeof(port));
	n += sizeof(port);
	memcpy(m + n, &reason, sizeof(reason));
	n += sizeof(reason);
	return (uint32_t)sg_keyed_hash(m, n);
}

/* Make ev the stopped identity's aggregate: no host, log_unavailable. */
static void
bl_stopped_event(struct blocklog_event *ev)
{
	ev->host = NULL;
	ev->port = 0;
	ev->reason = SG_REASON_LOG_UNAVAILABLE;
	ev->report = 0;
	ev->message = "stopped: this client spent a quarter of the reserve "
	    "of a nearly full log volume; its attempts are only counted";
}

/*
 * Make ev the aggregate of an identity past its share of the kept log,
 * or past its floor while the pool is full (bl_share_pool): no host; a
 * block (or would-be block) reason log_unavailable. Its egress goes on,
 * so its allowed connections stay allowed (their own aggregate, with
 * their bytes) and its report-mode ones would_block.
 */
static void
bl_capped_event(struct blocklog_event *ev, const struct bl_ident *id)
{
	ev->host = NULL;
	ev->port = 0;
	if (ev->reason != SG_REASON_NONE)
		ev->reason = SG_REASON_LOG_UNAVAILABLE;
	if (id->capped)
		ev->message = "this client wrote its share of what log "
		    "rotation keeps while other clients' events are in it; "
		    "its attempts are only counted";
	else
		ev->message = "clients past their first lines wrote together "
		    "the share of what log rotation keeps that their full "
		    "lines may hold; this client's attempts are only counted";
}

/*
 * The log's epochs: every opts.capacity / 2 bytes written starts one.
 * What rotation keeps is the last capacity bytes, so an identity's
 * bytes in the current and the previous epoch are (within half the
 * capacity) its part of the kept log. Moves the sums, and id's, to
 * the current epoch.
 */
static void
bl_epoch(struct blocklog *bl, struct bl_ident *id)
{
	if (bl->cur >= bl->opts.capacity / 2) {
		bl->prev_epoch = bl->cur;
		bl->cur = 0;
		bl->epoch++;
		bl->pool_prev = bl->pool;
		bl->pool = 0;
	}
	if (id->epoch == bl->epoch)
		return;
	if (id->epoch + 1 == bl->epoch) {
		id->prev_epoch = id->cur;
		id->own_prev = id->own;
		id->own_b_prev = id->own_b;
		id->floor_b_prev = id->floor_b;
	} else {
		id->prev_epoch = id->own_b_prev = id->floor_b_prev = 0;
		id->own_prev = 0;
	}
	id->cur = id->own_b = id->floor_b = 0;
	id->own = 0;
	id->epoch = bl->epoch;
}

/*
 * bytes more of id's lines in the log: a line of a block of its own, a
 * summary, or another own line (kind). A block's line past id's floor
 * goes into the pool, another own line always does: the floor is for
 * blocks.
 */
static void
bl_share_add(struct blocklog *bl, struct bl_ident *id,
    unsigned long long bytes, enum blocklog_line kind)
{
	if (bl->opts.capacity == 0)
		return;
	bl_epoch(bl, id);
	id->cur += bytes;
	bl->cur += bytes;
	if (kind == BLOCKLOG_LINE_SUMMARY)
		return;
	if (kind == BLOCKLOG_LINE_OTHER) {
		bl->pool += bytes;
		return;
	}
	if (!bl_floor(bl, id))
		bl->pool += bytes;
	else
		id->floor_b += bytes;
	id->own++;
	id->own_b += bytes;
}

/*
 * 1 while id is under its floor: fewer than BLOCKLOG_FLOOR_LINES lines
 * of its blocks in the span, or less than a BLOCKLOG_FLOOR_DIV-th of the
 * capacity in them. Under it, an identity's lines are its own and it
 * gets full lines whatever the pool and its share say; past it, they
 * are the pool's.
 */
static int
bl_floor(const struct blocklog *bl, const struct bl_ident *id)
{
	return id->own + id->own_prev < BLOCKLOG_FLOOR_LINES ||
	    id->own_b + id->own_b_prev < bl->opts.capacity / BLOCKLOG_FLOOR_DIV;
}

/*
 * id is forgotten (bl_ident_evict) with its lines still in the span:
 * should it come back it gets a floor again, so the lines of its floor
 * go into the pool now. Its lines stay others' lines for every client
 * (bl->cur). So what forgetting gives back is paid from the pool, which
 * bounds every forgotten floor with the full lines past the floors.
 */
static void
bl_share_forget(struct blocklog *bl, struct bl_ident *id)
{
	if (bl->opts.capacity == 0)
		return;
	bl_epoch(bl, id);
	bl->pool += id->floor_b;
	bl->pool_prev += id->floor_b_prev;
}

/*
 * 1 while an idle identity must be kept for its share: any of its lines
 * are in the span. Forgotten, it would start again from nothing, so a
 * client pausing between bursts would never reach its share. The table
 * is bounded (BLOCKLOG_IDENTS_MAX): a full one forgets an idle identity
 * with the most lines of the span for a new one (bl_ident_evict).
 */
static int
bl_share_keep(struct blocklog *bl, struct bl_ident *id)
{
	if (bl->opts.capacity == 0)
		return 0;
	bl_epoch(bl, id);
	return id->capped || id->cur + id->prev_epoch > 0;
}

/*
 * 1 when id's attempts are only counted, so that a flood, however slow
 * and however many clients share it, cannot rotate the others' history
 * away. Never for a block (block set) while id is under its floor
 * (bl_floor): a quiet client's new blocks keep their line (and host),
 * whatever the others do; its allowed connections have no floor. Past
 * it, when id is past its share of the kept log while other identities'
 * lines are in it too, or the pool is full (bl_share_pool). Alone in the
 * log it is never held back (it pushes out nobody's history but its
 * own). Its share is a BLOCKLOG_SHARE_DIV-th of the capacity: the
 * pool bounds the full lines of all identities together, so a share
 * need not shrink with their number (it did, an equal part of a
 * BLOCKLOG_FULL_DIV-th among all identities with a line in the span:
 * clients that wrote a line each and went quiet capped a quiet client
 * after its floor, atk15r11 F5). Let go once under half its share.
 */
static int
bl_share_check(struct blocklog *bl, struct bl_ident *id, int block)
{
	unsigned long long	share, mine, all;

	if (bl->opts.capacity == 0)
		return 0;
	bl_epoch(bl, id);
	if (block && bl_floor(bl, id))
		return 0;
	share = bl->opts.capacity / BLOCKLOG_SHARE_DIV;
	mine = id->cur + id->prev_epoch;
	all = bl->cur + bl->prev_epoch;
	if (mine >= share && all > mine && !id->capped) {
		id->capped = 1;
		if (!id->pooled)
			bl_fold(bl, id);
	} else if (id->capped && (mine < share / 2 || all <= mine))
		id->capped = 0;
	return bl_share_pool(bl, id, mine, all) || id->capped;
}

/*
 * The pool: the own lines of every identity past its floor, in the span
 * (the current and previous epoch), hold at most a BLOCKLOG_FULL_DIV-th
 * of the capacity together. A share is judged against the identities
 * known when it is taken, so identities arriving one after another each
 * took theirs while few were known (50 of them rotated a victim's line
 * away at once, atk15r10 F2); the pool holds whatever their number and
 * order. 1 while it is full and other identities' lines are in the
 * log: id (past its floor) is held, its pending counts folded into its
 * aggregates once; let go when an epoch ends and the pool has room.
 */
static int
bl_share_pool(struct blocklog *bl, struct bl_ident *id,
    unsigned long long mine, unsigned long long all)
{
	if (!bl_pool_full(bl) || all <= mine) {
		id->pooled = 0;
		return 0;
	}
	if (!id->pooled && !id->capped) {
		id->pooled = 1;
		bl_fold(bl, id);
	}
	id->pooled = 1;
	return 1;
}

/* 1 while the pool holds its BLOCKLOG_FULL_DIV-th of the capacity. */
static int
bl_pool_full(const struct blocklog *bl)
{
	return bl->pool + bl->pool_prev >= bl->opts.capacity / BLOCKLOG_FULL_DIV;
}

/* 1 when ev is an allowed transfer of BLOCKLOG_LARGE_BYTES or more. */
static int
bl_large(const struct blocklog_event *ev)
{
	return ev->reason == SG_REASON_NONE && !ev->report &&
	    ev->bytes_up + ev->bytes_down >= BLOCKLOG_LARGE_BYTES;
}

static int
bl_streq(const char *a, const char *b)
{
	if (a == NULL || b == NULL)
		return a == b;
	return strcmp(a, b) == 0;
}

/* strdup that takes NULL; *bad is set when out of memory. */
static char *
bl_strdup(const char *s, int *bad)
{
	char	*d;

	if (s == NULL)
		return NULL;
	if ((d = strdup(s)) == NULL)
		*bad = 1;
	return d;
}

struct blocklog *
blocklog_new(const struct blocklog_opts *opts, blocklog_emit_cb emit,
    void *arg)
{
	struct blocklog	*bl;

	if ((bl = calloc(1, sizeof(*bl))) == NULL)
		return NULL;
	if (opts != NULL)
		bl->opts = *opts;
	if (bl->opts.burst == 0)
		bl->opts.burst = BLOCKLOG_BURST_DEFAULT;
	if (bl->opts.budget == 0)
		bl->opts.budget = BLOCKLOG_BUDGET_DEFAULT;
	if (bl->opts.window_s == 0)
		bl->opts.window_s = BLOCKLOG_WINDOW_DEFAULT;
	bl->emit = emit;
	bl->arg = arg;
	return bl;
}

void
blocklog_free(struct blocklog *bl)
{
	size_t	i;

	if (bl == NULL)
		return;
	while (bl->klist != NULL)
		bl_key_free(bl, bl->klist);
	while (bl_ident_first(bl) != NULL)
		bl_ident_free(bl, bl_ident_first(bl));
	for (i = 0; i < 2 * SG_REASON_MAX; i++)
		if (bl->overflow[i / SG_REASON_MAX][i % SG_REASON_MAX] != NULL) {
			bl_key_clear(bl->overflow[i / SG_REASON_MAX]
			    [i % SG_REASON_MAX]);
			free(bl->overflow[i / SG_REASON_MAX][i % SG_REASON_MAX]);
		}
	free(bl);
}

/*
 * The identity named name (now the most recently seen), created when
 * create is set; NULL when it is a client address, the address part of
 * the table is full and none can be forgotten (bl_ident_evict). A
 * registered sandbox (bl_ident_is_reg) always gets its place.
 */
static struct bl_ident *
bl_ident_get(struct blocklog *bl, const char *name, uint64_t now, int create)
{
	uint32_t	 h = bl_hash(name, NULL, 0, 0) % BL_BUCKETS;
	struct bl_ident	*id;
	int		 reg;

	for (id = bl->idents[h]; id != NULL; id = id->hnext, bl->probes++)
		if (strcmp(id->name, name) == 0) {
			bl_ident_unlink(bl, id);
			bl_ident_link(bl, id);
			return id;
		}
	if (!create)
		return NULL;
	reg = bl_ident_is_reg(bl, name);
	if (!reg && bl->parts[BL_ADDR].n >= BLOCKLOG_IDENTS_MAX &&
	    bl_ident_evict(bl) == -1)
		return NULL;
	if ((id = calloc(1, sizeof(*id))) == NULL)
		return NULL;
	if ((id->name = strdup(name)) == NULL) {
		free(id);
		return NULL;
	}
	id->reg = reg;
	id->win_start = id->last_us = now;
	id->hnext = bl->idents[h];
	bl->idents[h] = id;
	bl_ident_link(bl, id);
	return id;
}

/* The identity named name, if the table has it (nothing else changes). */
static struct bl_ident *
bl_ident_find(const struct blocklog *bl, const char *name)
{
	struct bl_ident	*id;

	for (id = bl->idents[bl_hash(name, NULL, 0, 0) % BL_BUCKETS];
	    id != NULL; id = id->hnext)
		if (strcmp(id->name, name) == 0)
			return id;
	return NULL;
}

/* 1 when name is a sandbox the registry holds now (the callback's). */
static int
bl_ident_is_reg(const struct blocklog *bl, const char *name)
{
	return bl->registered != NULL &&
	    bl->registered(bl->registered_arg, name) == 1;
}

/* Put id first in its part (the most recently seen). */
static void
bl_ident_link(struct blocklog *bl, struct bl_ident *id)
{
	struct bl_part	*pt = &bl->parts[id->reg ? BL_REG : BL_ADDR];

	id->prev = NULL;
	id->next = pt->head;
	if (pt->head != NULL)
		pt->head->prev = id;
	else
		pt->tail = id;
	pt->head = id;
	pt->n++;
}

static void
bl_ident_unlink(struct blocklog *bl, struct bl_ident *id)
{
	struct bl_part	*pt = &bl->parts[id->reg ? BL_REG : BL_ADDR];

	if (id->prev != NULL)
		id->prev->next = id->next;
	else
		pt->head = id->next;
	if (id->next != NULL)
		id->next->prev = id->prev;
	else
		pt->tail = id->prev;
	id->prev = id->next = NULL;
	pt->n--;
}

/* Every identity, addresses then sandboxes: the first, and the next. */
static struct bl_ident *
bl_ident_first(const struct blocklog *bl)
{
	return bl->parts[BL_ADDR].head != NULL ? bl->parts[BL_ADDR].head :
	    bl->parts[BL_REG].head;
}

static struct bl_ident *
bl_ident_after(const struct blocklog *bl, const struct bl_ident *id)
{
	if (id->next != NULL || id->reg)
		return id->next;
	return bl->parts[BL_REG].head;
}

/*
 * id into the part the registry says now: a sandbox registered since it
 * was seen is never forgotten from now on; one unregistered competes
 * with the client addresses (the address part may hold more than
 * BLOCKLOG_IDENTS_MAX until the next evictions).
 */
static void
bl_ident_reclass(struct blocklog *bl, struct bl_ident *id)
{
	int	reg = bl_ident_is_reg(bl, id->name);

	if (reg == id->reg)
		return;
	bl_ident_unlink(bl, id);
	bl->rkeys = reg ? bl->rkeys + id->nkeys : bl->rkeys - id->nkeys;
	id->reg = reg;
	bl_ident_link(bl, id);
}

void
blocklog_set_registered(struct blocklog *bl, blocklog_registered_cb cb,
    void *arg)
{
	bl->registered = cb;
	bl->registered_arg = arg;
}

void
blocklog_reclass(struct blocklog *bl, const char *identity)
{
	struct bl_ident	*id, *next;

	if (identity != NULL) {
		if ((id = bl_ident_find(bl, identity)) != NULL)
			bl_ident_reclass(bl, id);
		return;
	}
	for (id = bl->parts[BL_REG].head; id != NULL; id = next) {
		next = id->next;
		bl_ident_reclass(bl, id);
	}
}

/*
 * The address part of the table full: forget, of the BL_EVICT_SCAN
 * client addresses least recently seen, one that nothing else needs
 * (registered sandboxes are never looked at: the most-lines pick below
 * once forgot a quiet sandbox with 2 lines before 16,383 fillers with 1,
 * and pending counts on the 1,024 oldest pinned the table against a new
 * sandbox, atk15r13 F1, F2): no counts pending (their summaries
 * name it), not stopped nor capped, and no lines counted under pressure.
 * Its keys that count nothing go with it: a key with nothing counted
 * pinned its identity for two windows, so 16,384 clients making one
 * attempt each refused every new client, whose blocks were overflow
 * summaries with no host and no client while the pool was nearly empty
 * (atk15r12 F1). Of those, the one with the most own lines in the span,
 * the most recently seen of equals: a quiet client with a line or two is
 * the last one forgotten (the fewest bytes went first, so one-line
 * clients with longer lines had a quiet sandbox forgotten, atk15r12
 * F1b), and whoever wrote more loses least by starting again. Kept
 * while their lines are in the span, identities that wrote a line each
 * would otherwise fill the table for good (atk15r11 F4). One forgotten
 * gets a floor again should it come back, paid from the pool
 * (bl_share_forget); so none is forgotten while the pool is full, and
 * clients cycling past the table get no more full lines than the pool
 * holds. 0, or -1 when none can be.
 */
static int
bl_ident_evict(struct blocklog *bl)
{
	struct bl_ident	*id, *best = NULL, *next;
	unsigned	 l, most = 0;
	unsigned	 n = 0;

	if (bl->opts.capacity == 0 || bl_pool_full(bl))
		return -1;
	for (id = bl->parts[BL_ADDR].tail; id != NULL && n < BL_EVICT_SCAN;
	    id = id->prev, n++, bl->probes++) {
		if (!bl_ident_forgettable(bl, id))
			continue;
		l = id->own + id->own_prev;
		if (best == NULL || l >= most) {
			best = id;
			most = l;
		}
	}
	if (best == NULL)
		return -1;
	/*
	 * And up to BL_EVICT_BATCH of its equals older than it, while the
	 * pool has room: a scan per new client made the restart replay of
	 * files naming 500,000 clients take 3.66 s before listening instead
	 * of 0.26 s (atk15r12 F4).
	 */
	for (id = best, n = 0; id != NULL && n < BL_EVICT_BATCH; id = next) {
		next = id->next;
		bl->probes++;
		if (id != best && (!bl_ident_forgettable(bl, id) ||
		    id->own + id->own_prev != most))
			continue;
		while (id->ikeys != NULL)
			bl_key_free(bl, id->ikeys);
		bl_ident_free(bl, id);
		n++;
		if (bl_pool_full(bl))
			break;
	}
	return 0;
}

/* 1 when nothing needs id (bl_ident_evict); moves it to this epoch. */
static int
bl_ident_forgettable(struct blocklog *bl, struct bl_ident *id)
{
	if (id->stopped || id->capped || id->lines > 0 || bl_ident_pending(id))
		return 0;
	bl_epoch(bl, id);
	return 1;
}

/* 1 while any of id's keys has counts to summarize. */
static int
bl_ident_pending(const struct bl_ident *id)
{
	const struct bl_key	*k;

	for (k = id->ikeys; k != NULL; k = k->inext)
		if (k->count > 0)
			return 1;
	return 0;
}

static void
bl_ident_free(struct blocklog *bl, struct bl_ident *id)
{
	uint32_t	  h = bl_hash(id->name, NULL, 0, 0) % BL_BUCKETS;
	struct bl_ident	**pp;

	for (pp = &bl->idents[h]; *pp != NULL; pp = &(*pp)->hnext)
		if (*pp == id) {
			*pp = id->hnext;
			break;
		}
	bl_ident_unlink(bl, id);
	bl_share_forget(bl, id);
	bl->ocount -= id->ocount;
	free(id->name);
	free(id);
}

static void
bl_key_clear(struct bl_key *k)
{
	size_t	i;

	free(k->sandbox);
	free(k->src);
	free(k->method);
	free(k->message);
	free(k->rule);
	free(k->digest);
	for (i = 0; k->sets != NULL && k->sets[i] != NULL; i++)
		free(k->sets[i]);
	free(k->sets);
	free(k->dests);
	k->dests = NULL;
	k->ndests = 0;
	k->dests_more = 0;
	k->sandbox = k->src = k->method = k->message = k->rule = NULL;
	k->digest = NULL;
	k->sets = NULL;
}

/* A key's counts, once summarized or folded: nothing counted. */
static void
bl_key_zero(struct bl_key *k)
{
	k->count = k->told = k->bytes_up = k->bytes_down = 0;
	k->large = k->largest = 0;
	k->ndests = 0;
	k->dests_more = 0;
}

static void
bl_key_free(struct blocklog *bl, struct bl_key *k)
{
	struct bl_key	**pp;

	for (pp = &k->id->ikeys; *pp != NULL; pp = &(*pp)->inext)
		if (*pp == k) {
			*pp = k->inext;
			break;
		}
	if (k->prev != NULL)
		k->prev->next = k->next;
	else
		bl->klist = k->next;
	if (k->next != NULL)
		k->next->prev = k->prev;
	bl->nkeys--;
	bl->rkeys -= k->id->reg;
	k->id->nkeys--;
	bl_key_clear(k);
	free(k->host);
	free(k);
}

static struct bl_key *
bl_key_new(struct blocklog *bl, struct bl_ident *id, const char *host,
    int port, int rk, uint64_t now)
{
	struct bl_key	*k;

	if ((k = calloc(1, sizeof(*k))) == NULL)
		return NULL;
	if (host != NULL && (k->host = strdup(host)) == NULL) {
		free(k);
		return NULL;
	}
	k->id = id;
	k->port = port;
	k->reason = (enum sg_reason)(rk & 0xff);
	k->report = (rk & 0x100) != 0;
	k->win_start = k->last_us = now;
	k->inext = id->ikeys;
	id->ikeys = k;
	k->next = bl->klist;
	if (bl->klist != NULL)
		bl->klist->prev = k;
	bl->klist = k;
	bl->nkeys++;
	bl->rkeys += id->reg;
	id->nkeys++;
	return k;
}

/*
 * The key of an attempt: its own, else (the identity at its cap) the
 * identity's "other destinations" key for the reason, else (every table
 * full, or no identity) the global overflow key of the reason.
 */
static struct bl_key *
bl_key_get(struct blocklog *bl, struct bl_ident *id, const char *host,
    int port, int rk, uint64_t now)
{
	struct bl_key	*k = NULL, **o;
	int		 i;
	unsigned	 reason;

	for (i = 0; id != NULL && i < 2; i++) {
		if (i == 1) {		/* the identity's other-destinations */
			host = NULL;
			port = 0;
		}
		/* Its own keys only: a bounded walk (atk15r12 F5). */
		for (k = id->ikeys; k != NULL; k = k->inext, bl->probes++)
			if (k->port == port &&
			    BL_RK(k->reason, k->report) == rk &&
			    bl_streq(k->host, host))
				return k;
		if ((i == 1 || id->nkeys < BLOCKLOG_KEYS_PER_IDENT) &&
		    (id->reg || bl->nkeys - bl->rkeys < BLOCKLOG_KEYS_MAX) &&
		    (k = bl_key_new(bl, id, host, port, rk, now)) != NULL)
			return k;
	}
	reason = (unsigned)(rk & 0xff);
	if (reason >= SG_REASON_MAX)
		reason = SG_REASON_NONE;
	o = &bl->overflow[(rk & 0x100) != 0][reason];
	if (*o == NULL && (*o = calloc(1, sizeof(*k))) != NULL) {
		(*o)->reason = (enum sg_reason)reason;
		(*o)->report = (rk & 0x100) != 0;
		(*o)->win_start = now;
	}
	return *o;
}

/* Keep what the first counted attempt of a window says. 0 or -1. */
static int
bl_key_keep(struct bl_key *k, const struct blocklog_event *ev)
{
	size_t	n = 0, i;
	int	bad = 0;

	char	msg[160];

	bl_key_clear(k);
	if (k->id == NULL) {
		/*
		 * The shared overflow key counts the attempts of every
		 * client past the key table: the first one's sandbox,
		 * address, method or sets would name it for all the others.
		 */
		snprintf(msg, sizeof(msg), SG_BLOCK_PREFIX "attempts of "
		    "clients past the proxy's key table (%s), counted; no "
		    "client is named", reason_code(k->reason));
		k->message = bl_strdup(msg, &bad);
		k->digest = bl_strdup(ev->policy_digest, &bad);
		return bad ? -1 : 0;
	}
	k->sandbox = bl_strdup(ev->sandbox, &bad);
	k->src = bl_strdup(ev->src, &bad);
	k->method = bl_strdup(ev->method, &bad);
	/*
	 * A key without a destination counts attempts to many: its message
	 * names none of them (the client would choose which one).
	 */
	if (k->host == NULL && ev->host != NULL &&
	    ev->reason != SG_REASON_NONE) {
		snprintf(msg, sizeof(msg), SG_BLOCK_PREFIX "attempts to "
		    "other destinations (%s), counted", reason_code(k->reason));
		k->message = bl_strdup(msg, &bad);
	} else if (k->host != NULL || ev->host == NULL)
		k->message = bl_strdup(ev->message, &bad);
	k->rule = bl_strdup(ev->rule, &bad);
	k->digest = bl_strdup(ev->policy_digest, &bad);
	while (ev->sets != NULL && ev->sets[n] != NULL)
		n++;
	if (ev->sets != NULL && (k->sets = calloc(n + 1, sizeof(char *))) !=
	    NULL)
		for (i = 0; i < n; i++)
			k->sets[i] = bl_strdup(ev->sets[i], &bad);
	else if (ev->sets != NULL)
		bad = 1;
	return bad ? -1 : 0;
}

/* Write a key's summary if it counted anything; keep it on failure. */
static void
bl_summarize(struct blocklog *bl, struct bl_key *k)
{
	struct blocklog_event	ev;
	int			rc;

	if (k->count == 0)
		return;
	memset(&ev, 0, sizeof(ev));
	ev.identity = k->id != NULL ? k->id->name : "";
	ev.sandbox = k->sandbox;
	ev.src = k->src;
	ev.method = k->method;
	ev.host = k->host;
	ev.port = k->port;
	ev.reason = k->reason;
	ev.message = k->message;
	ev.sets = (const char *const *)k->sets;
	ev.rule = k->rule;
	ev.policy_digest = k->digest;
	ev.report = k->report;
	ev.count = k->count;
	ev.told = k->told;
	ev.bytes_up = k->bytes_up;
	ev.bytes_down = k->bytes_down;
	ev.large = k->large;
	ev.largest = k->largest;
	ev.dests = k->ndests;
	ev.dests_more = k->dests_more;
	ev.first = k->first;
	ev.last = k->last;
	ev.overflow = k->id == NULL;
	if ((rc = bl->emit(bl->arg, &ev)) == -1) {
		k->told = k->count;	/* counted lost once: atk20r22 F6 */
		return;
	}
	bl->summaries++;
	if (k->id != NULL)
		bl_wrote(bl, k->id, (unsigned long long)rc,
		    BLOCKLOG_LINE_SUMMARY);
	else
		bl->obytes += (unsigned long long)rc;	/* bl_charge_overflow */
	bl_key_zero(k);
}

/* Note the destination of an attempt counted into a key with no host. */
static void
bl_count_dest(struct bl_key *k, const struct blocklog_event *ev)
{
	bl_count_hash(k, bl_hash(NULL, ev->host, ev->port, 0));
}

/* Note destination h (bl_hash of host and port) in a key with no host. */
static void
bl_count_hash(struct bl_key *k, uint32_t h)
{
	unsigned	i;

	for (i = 0; i < k->ndests; i++)
		if (k->dests[i] == h)
			return;
	if (k->dests == NULL && (k->dests = calloc(BLOCKLOG_DESTS_TOLD,
	    sizeof(*k->dests))) == NULL) {
		k->dests_more = 1;	/* out of memory: not told apart */
		return;
	}
	if (k->ndests == BLOCKLOG_DESTS_TOLD)
		k->dests_more = 1;
	else
		k->dests[k->ndests++] = h;
}

/*
 * Count id's attempt into k's summary (the first one's fields kept, as
 * ev says them); an attempt counted into a shared overflow key is noted
 * to its identity. Its destination is the one made (made: ev is an
 * aggregate's, no host, for a client past its share or pool, whose
 * summaries said destinations: 0 whatever it tried, atk15r12 F3).
 */
static void
bl_count(struct blocklog *bl, struct bl_ident *id, struct bl_key *k,
    const struct blocklog_event *ev, const struct blocklog_event *made,
    const struct timespec *now)
{
	if (k->id == NULL && id != NULL) {
		id->ocount++;
		bl->ocount++;
	}
	if (k->count == 0) {
		k->first = *now;
		/* Out of memory: the summary goes out with fewer fields. */
		if (bl_key_keep(k, ev) == -1)
			bl_key_clear(k);
	}
	if (k->host == NULL && made->host != NULL)
		bl_count_dest(k, made);
	k->count++;
	k->bytes_up += ev->bytes_up;
	k->bytes_down += ev->bytes_down;
	if (bl_large(ev)) {
		k->large++;
		if (ev->bytes_up + ev->bytes_down > k->largest)
			k->largest = ev->bytes_up + ev->bytes_down;
	}
	k->last = *now;
	bl->counted++;
}

int
blocklog_note(struct blocklog *bl, const struct blocklog_event *ev,
    uint64_t now_us, const struct timespec *now)
{
	const uint64_t		 win = (uint64_t)bl->opts.window_s * 1000000;
	const struct blocklog_event *made = ev;
	struct blocklog_event	 st;
	struct bl_ident		*id;
	struct bl_key		*k;
	int			 quiet = 0;

	id = bl_ident_get(bl, ev->identity, now_us, 1);
	if (id != NULL) {
		id->last_us = now_us;
		if (now_us - id->win_start >= win) {
			id->win_start = now_us;
			id->written = id->large = 0;
		}
		if (id->stopped || bl_share_check(bl, id,
		    ev->reason != SG_REASON_NONE)) {
			/* One aggregate for everything it still tries. */
			st = *ev;
			if (id->stopped)
				bl_stopped_event(&st);
			else
				bl_capped_event(&st, id);
			ev = &st;
			quiet = 1;
		}
	}
	k = bl_key_get(bl, id, ev->host, ev->port,
	    BL_RK(ev->reason, ev->report), now_us);
	if (k == NULL)
		return 1;	/* out of memory: a full line is never wrong */
	if (now_us - k->win_start >= win) {
		bl_summarize(bl, k);
		k->win_start = now_us;
		k->written = 0;
	}
	k->last_us = now_us;
	/*
	 * A large transfer is told on its own line past the budget, a few a
	 * window (then under the budget, or counted as the others).
	 */
	if (bl_large(ev) && id != NULL && !quiet &&
	    id->large < BLOCKLOG_LARGE_BURST) {
		id->large++;
		return 1;
	}
	if (id != NULL && !quiet && id->written < bl->opts.budget &&
	    (k->host == NULL || k->written < bl->opts.burst)) {
		k->written++;
		id->written++;
		return 1;
	}
	bl_count(bl, id, k, ev, made, now);
	return 0;
}

void
blocklog_unwritten(struct blocklog *bl, const struct blocklog_event *ev,
    const struct timespec *now)
{
	struct bl_ident	*id = bl_ident_get(bl, ev->identity, 0, 0);
	struct bl_key	*k;

	k = bl_key_get(bl, id, ev->host, ev->port,
	    BL_RK(ev->reason, ev->report), id != NULL ? id->last_us : 0);
	if (k != NULL)
		bl_count(bl, id, k, ev, ev, now);
}

void
blocklog_wrote(struct blocklog *bl, const char *identity, size_t bytes,
    uint64_t now_us, enum blocklog_line kind)
{
	struct bl_ident	*id;

	if (!bl->held && bl->opts.capacity == 0)
		return;
	if ((id = bl_ident_get(bl, identity, now_us, 1)) == NULL) {
		/* The table full: still bytes in the log, nobody's. */
		if (bl->opts.capacity > 0)
			bl->cur += bytes;
		return;
	}
	id->last_us = now_us;
	bl_wrote(bl, id, bytes, kind);
}

/*
 * The overflow summaries written since the last call (obytes) name no
 * client: under pressure their bytes are still charged, to the
 * identities whose attempts they counted, in proportion to those.
 */
static void
bl_charge_overflow(struct blocklog *bl)
{
	struct bl_ident		*id;
	unsigned long long	 all = bl->ocount;

	if (bl->obytes == 0)
		return;
	for (id = bl_ident_first(bl); id != NULL && all > 0;
	    id = bl_ident_after(bl, id)) {
		if (id->ocount == 0)
			continue;
		bl_wrote(bl, id, (unsigned long long)((long double)
		    bl->obytes * id->ocount / all + 0.5L),
		    BLOCKLOG_LINE_SUMMARY);
		id->ocount = 0;
	}
	bl->ocount = bl->obytes = 0;
}

/*
 * A line of bytes bytes (kind: bl_share_add) in id's share; under
 * pressure, to be charged at the next look.
 */
static void
bl_wrote(struct blocklog *bl, struct bl_ident *id, unsigned long long bytes,
    enum blocklog_line kind)
{
	bl_share_add(bl, id, bytes, kind);
	if (!bl->held)
		return;
	id->lines++;
	id->fresh += bytes;
	bl->fresh += bytes;
}

void
blocklog_flush(struct blocklog *bl, uint64_t now_us, int all)
{
	const uint64_t	 win = (uint64_t)bl->opts.window_s * 1000000;
	struct bl_key	*k, *knext;
	struct bl_ident	*id, *inext;
	size_t		 i;

	for (k = bl->klist; k != NULL; k = knext) {
		knext = k->next;
		if (all || now_us - k->win_start >= win)
			bl_summarize(bl, k);
		if (k->count == 0 && now_us - k->last_us >= 2 * win)
			bl_key_free(bl, k);
	}
	for (i = 0; i < 2 * SG_REASON_MAX; i++) {
		k = bl->overflow[i / SG_REASON_MAX][i % SG_REASON_MAX];
		if (k != NULL && (all || now_us - k->win_start >= win)) {
			bl_summarize(bl, k);
			k->win_start = now_us;
		}
	}
	bl_charge_overflow(bl);
	for (id = bl_ident_first(bl); id != NULL; id = inext) {
		inext = bl_ident_after(bl, id);
		if (id->nkeys == 0 && !id->stopped && id->lines == 0 &&
		    now_us - id->last_us >= 2 * win && !bl_share_keep(bl, id))
			bl_ident_free(bl, id);
	}
}

const char *
blocklog_stop_top(struct blocklog *bl, unsigned long long room)
{
	struct bl_ident	*id, *top = NULL;

	if (!bl->held) {
		bl->held = 1;
		bl->room = bl->prev = room;
		return NULL;
	}
	if (room < bl->prev)
		bl_charge(bl, bl->prev - room);
	else if (room > bl->prev)
		bl_credit(bl, room - bl->prev);
	bl->prev = room;
	for (id = bl_ident_first(bl); id != NULL;
	    id = bl_ident_after(bl, id))
		if (!id->stopped && (top == NULL || id->charged > top->charged))
			top = id;
	if (top == NULL || top->lines < BLOCKLOG_STOP_MIN ||
	    top->charged < bl->room / BLOCKLOG_STOP_SHARE)
		return NULL;
	top->stopped = 1;
	bl_fold(bl, top);
	return top->name;
}

/*
 * A stopped identity's pending counts, whatever their destination and
 * reason, go into its one aggregate key at once (sums, times and
 * destinations kept): its summaries still to come are one line, not one
 * per key, so they cannot carry the volume to the floor after the stop.
 * An identity past its share (not stopped) likewise, into its aggregate
 * of each kind (blocked, would-be blocked, allowed: bl_capped_event), so
 * that its summaries, not its full lines, are what few lines it adds.
 */
static void
bl_fold(struct blocklog *bl, struct bl_ident *id)
{
	struct blocklog_event	 ev;
	struct bl_key		*agg, *k;

	for (k = id->ikeys; k != NULL; k = k->inext) {
		if (k->count == 0)
			continue;
		memset(&ev, 0, sizeof(ev));
		ev.identity = id->name;
		ev.reason = k->reason;
		ev.report = k->report;
		if (id->stopped)
			bl_stopped_event(&ev);
		else
			bl_capped_event(&ev, id);
		agg = bl_key_get(bl, id, NULL, 0, BL_RK(ev.reason, ev.report),
		    id->last_us);
		if (agg == NULL || agg == k)
			continue;	/* out of memory: summarized as is */
		if (agg->count == 0) {
			ev.sandbox = k->sandbox;
			ev.src = k->src;
			ev.method = k->method;
			ev.policy_digest = k->digest;
			if (bl_key_keep(agg, &ev) == -1)
				bl_key_clear(agg);
			agg->first = k->first;
			agg->last = k->last;
		}
		bl_fold_key(agg, k);
	}
}

/* Move k's counts into agg (a key with no host); k counts none after. */
static void
bl_fold_key(struct bl_key *agg, struct bl_key *k)
{
	unsigned	i;

	if (k->host != NULL)
		bl_count_hash(agg, bl_hash(NULL, k->host, k->port, 0));
	for (i = 0; i < k->ndests; i++)
		bl_count_hash(agg, k->dests[i]);
	agg->dests_more |= k->dests_more;
	if (agg->count == 0 || k->first.tv_sec < agg->first.tv_sec ||
	    (k->first.tv_sec == agg->first.tv_sec &&
	    k->first.tv_nsec < agg->first.tv_nsec))
		agg->first = k->first;
	if (k->last.tv_sec > agg->last.tv_sec ||
	    (k->last.tv_sec == agg->last.tv_sec &&
	    k->last.tv_nsec > agg->last.tv_nsec))
		agg->last = k->last;
	agg->count += k->count;
	agg->told += k->told;
	agg->bytes_up += k->bytes_up;
	agg->bytes_down += k->bytes_down;
	agg->large += k->large;
	if (k->largest > agg->largest)
		agg->largest = k->largest;
	bl_key_zero(k);
}

/*
 * The volume lost lost bytes since the last look: charged to the
 * identities that wrote since then, in proportion to what each wrote
 * and to none more than it wrote. What the loss does not cover stays
 * fresh for the next look (a line can fill a block taken earlier), until
 * room comes back.
 */
static void
bl_charge(struct blocklog *bl, unsigned long long lost)
{
	struct bl_ident		*id;
	unsigned long long	 all = bl->fresh, c;

	if (all == 0)
		return;
	if (lost > all)
		lost = all;
	bl->fresh = 0;
	for (id = bl_ident_first(bl); id != NULL;
	    id = bl_ident_after(bl, id)) {
		if (id->fresh == 0)
			continue;
		c = (unsigned long long)((long double)id->fresh * lost / all);
		id->charged += c;
		id->fresh -= c;
		bl->charged += c;
		bl->fresh += id->fresh;
	}
}

/*
 * The volume got gained bytes back (rotation deleted files, or anything
 * else freed space): the charges shrink by it, each in proportion to
 * what it holds, and what was written since the last look is netted
 * against it (charged to nobody).
 */
static void
bl_credit(struct blocklog *bl, unsigned long long gained)
{
	struct bl_ident		*id;
	unsigned long long	 all = bl->charged, c;

	bl->fresh = bl->charged = 0;
	for (id = bl_ident_first(bl); id != NULL;
	    id = bl_ident_after(bl, id)) {
		id->fresh = 0;
		if (gained >= all || id->charged == 0)
			c = id->charged;
		else
			c = (unsigned long long)((long double)id->charged *
			    gained / all + 0.5L);
		id->charged -= c < id->charged ? c : id->charged;
		bl->charged += id->charged;
	}
}

int
blocklog_stopped(const struct blocklog *bl, const char *identity)
{
	const struct bl_ident	*id = bl_ident_find(bl, identity);

	return id != NULL && id->stopped;
}

int
blocklog_registered(const struct blocklog *bl, const char *identity)
{
	const struct bl_ident	*id = bl_ident_find(bl, identity);

	return id == NULL ? -1 : id->reg;
}

void
blocklog_resume_all(struct blocklog *bl)
{
	struct bl_ident	*id;

	for (id = bl_ident_first(bl); id != NULL;
	    id = bl_ident_after(bl, id)) {
		id->stopped = 0;
		id->lines = id->fresh = id->charged = 0;
	}
	bl->held = 0;
	bl->room = bl->prev = bl->fresh = bl->charged = 0;
}

unsigned long long
blocklog_counted(const struct blocklog *bl)
{
	return bl->counted;
}

unsigned long long
blocklog_summaries(const struct blocklog *bl)
{
	return bl->summaries;
}

unsigned long long
blocklog_probes(const struct blocklog *bl)
{
	return bl->probes;
}
