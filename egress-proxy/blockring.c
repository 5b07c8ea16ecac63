/*
 * blockring.c: each sandbox's recent blocks (blockring.h): records by
 * sandbox in a keyed table, the sandboxes in a list of use, most recent
 * first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockring.h"
#include "execcred.h"
#include "keytab.h"
#include "sglimits.h"
#include "util.h"

/*
 * Blocks of one destination and reason, from block serial first to last
 * (proxy.block_serial counts every block attempt).
 */
struct br_block {
	unsigned long long	 first;
	unsigned long long	 last;
	unsigned long long	 count;
	char			 host[SG_HOST_MAX + 1];
	int			 port;
	char			 run[EXECCRED_RUN_MAX + 1];	/* "": none */
	char			 reason[32];
	char			 message[512];
	char			 first_ts[UTIL_TS_LEN];	/* wall clock */
	char			 last_ts[UTIL_TS_LEN];
};

/* The recent blocks of one sandbox: its own ring, so none crowds out. */
struct br_sbx {
	struct br_sbx		*next;		/* used less recently */
	struct br_sbx		*prev;
	char			 sandbox[65];
	struct br_block		 ring[BLOCKRING_BLOCKS];
	size_t			 n;		/* records ever added */
	unsigned long long	 lost;		/* last serial overwritten */
	unsigned long long	 evicted;	/* the ring's at its making */
};

struct blockring {
	struct keytab	*bysandbox;
	struct br_sbx	*head;		/* the most recently used */
	struct br_sbx	*tail;		/* the least: evicted first */
	unsigned long long evicted;	/* last serial of a sandbox evicted */
};

struct blockring *
blockring_new(void)
{
	struct blockring	*br;

	if ((br = calloc(1, sizeof(*br))) == NULL)
		return NULL;
	if ((br->bysandbox = keytab_new()) == NULL) {
		free(br);
		return NULL;
	}
	return br;
}

void
blockring_free(struct blockring *br)
{
	struct br_sbx	*s;

	if (br == NULL)
		return;
	while ((s = br->head) != NULL) {
		br->head = s->next;
		free(s);
	}
	keytab_free(br->bysandbox);
	free(br);
}

unsigned long long
blockring_visited(const struct blockring *br)
{
	return keytab_visited(br->bysandbox);
}

static void
br_unlink(struct blockring *br, struct br_sbx *s)
{
	if (s->prev != NULL)
		s->prev->next = s->next;
	else
		br->head = s->next;
	if (s->next != NULL)
		s->next->prev = s->prev;
	else
		br->tail = s->prev;
	s->next = s->prev = NULL;
}

static void
br_push(struct blockring *br, struct br_sbx *s)
{
	s->prev = NULL;
	s->next = br->head;
	if (br->head != NULL)
		br->head->prev = s;
	else
		br->tail = s;
	br->head = s;
}

/*
 * s's records go to make room for another's: the last serial they held
 * is the watermark below which a sandbox made since (or with none) may
 * have lost records (atk15r17 F9: evicted blocks vanished with
 * "truncated": false).
 */
static void
br_evict(struct blockring *br, struct br_sbx *s)
{
	size_t	i;

	br_unlink(br, s);
	(void)keytab_del(br->bysandbox, s->sandbox);
	for (i = 0; i < s->n && i < BLOCKRING_BLOCKS; i++)
		if (s->ring[i].last > br->evicted)
			br->evicted = s->ring[i].last;
	memset(s, 0, sizeof(*s));
}

/*
 * The records of a sandbox, made when it has none (the least recently
 * blocked sandbox's taken past BLOCKRING_SANDBOXES), moved to the front
 * of the order of use. NULL out of memory.
 */
static struct br_sbx *
br_get(struct blockring *br, const char *sandbox)
{
	struct br_sbx	*s = keytab_get(br->bysandbox, sandbox);

	if (s != NULL) {
		br_unlink(br, s);
		br_push(br, s);
		return s;
	}
	if (keytab_count(br->bysandbox) >= BLOCKRING_SANDBOXES &&
	    (s = br->tail) != NULL)
		br_evict(br, s);
	else if ((s = calloc(1, sizeof(*s))) == NULL)
		return NULL;
	snprintf(s->sandbox, sizeof(s->sandbox), "%s", sandbox);
	s->evicted = br->evicted;
	if (keytab_put(br->bysandbox, s->sandbox, s) == -1) {
		free(s);
		return NULL;
	}
	br_push(br, s);
	return s;
}

void
blockring_drop(struct blockring *br, const char *sandbox)
{
	struct br_sbx	*s = keytab_del(br->bysandbox, sandbox);

	if (s == NULL)
		return;
	br_unlink(br, s);
	free(s);
}

void
blockring_note(struct blockring *br, unsigned long long cursor,
    unsigned long long serial, const char *sandbox, const char *run_id,
    const char *host, int port, const char *reason, const char *message)
{
	struct br_sbx		*s;
	struct br_block		*b;
	struct timespec		 now;
	size_t			 i;

	if ((s = br_get(br, sandbox)) == NULL)
		return;
	clock_gettime(CLOCK_REALTIME, &now);
	/* The same destination and reason since the last cursor: count. */
	for (i = 0; i < s->n && i < BLOCKRING_BLOCKS; i++) {
		b = &s->ring[(s->n - 1 - i) % BLOCKRING_BLOCKS];
		if (b->first <= cursor)
			break;
		if (b->port == port && strcmp(b->reason, reason) == 0 &&
		    strcmp(b->host, host) == 0 &&
		    strcmp(b->run, run_id ? run_id : "") == 0) {
			b->last = serial;
			b->count++;
			util_rfc3339(&now, b->last_ts);
			return;
		}
	}
	b = &s->ring[s->n % BLOCKRING_BLOCKS];
	if (s->n++ >= BLOCKRING_BLOCKS && b->last > s->lost)
		s->lost = b->last;
	b->first = b->last = serial;
	b->count = 1;
	snprintf(b->host, sizeof(b->host), "%s", host);
	b->port = port;
	snprintf(b->run, sizeof(b->run), "%s", run_id ? run_id : "");
	snprintf(b->reason, sizeof(b->reason), "%s", reason);
	snprintf(b->message, sizeof(b->message), "%s", message);
	util_rfc3339(&now, b->first_ts);
	memcpy(b->last_ts, b->first_ts, sizeof(b->last_ts));
}

/*
 * The ring's records of s after a cursor into arr, oldest first (with
 * run: only that exec's, and with unattributed also those that named no
 * exec), each naming its sandbox when named; *truncated set when a
 * record after the cursor was overwritten, or may have been evicted
 * before the ring was made (br_evict).
 */
static void
br_add(json_t *arr, const struct br_sbx *s,
    unsigned long long after, const char *run, int unattributed,
    int named, int *truncated)
{
	const struct br_block		*b;
	size_t				 i, n;
	json_t				*o;

	n = s->n < BLOCKRING_BLOCKS ? s->n : BLOCKRING_BLOCKS;
	if (s->lost > after || s->evicted > after)
		*truncated = 1;
	for (i = 0; i < n; i++) {
		b = &s->ring[(s->n - n + i) % BLOCKRING_BLOCKS];
		if (b->last <= after || (run != NULL &&
		    strcmp(run, b->run) != 0 && (!unattributed ||
		    b->run[0] != '\0')))
			continue;
		o = json_pack("{s:I, s:s, s:i, s:s, s:s, s:I, s:o, s:s, s:s}",
		    "seq", (json_int_t)b->last, "host", b->host, "port",
		    b->port, "reason", b->reason, "message", b->message,
		    "attempts", (json_int_t)b->count, "run_id", b->run[0] ?
		    json_string(b->run) : json_null(), "first", b->first_ts,
		    "last", b->last_ts);
		if (o != NULL && named)
			json_object_set_new(o, "sandbox",
			    json_string(s->sandbox));
		json_array_append_new(arr, o);
	}
}

json_t *
blockring_json(const struct blockring *br, const char *sandbox,
    unsigned long long after, const char *run, int unattributed,
    int *truncated)
{
	json_t		*arr = json_array();
	struct br_sbx	*s;

	*truncated = 0;
	if ((s = keytab_get(br->bysandbox, sandbox)) == NULL)
		*truncated = br->evicted > after;	/* maybe evicted */
	else if (arr != NULL)
		br_add(arr, s, after, run, unattributed, 0, truncated);
	return arr;
}

json_t *
blockring_all(const struct blockring *br, unsigned long long after,
    int *truncated)
{
	json_t		*arr = json_array();
	struct br_sbx	*s;

	*truncated = br->evicted > after;	/* some evicted */
	for (s = br->head; s != NULL && arr != NULL; s = s->next)
		br_add(arr, s, after, NULL, 0, 1, truncated);
	return arr;
}
