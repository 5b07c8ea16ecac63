/*
 * blockring.h: the recent blocks of each sandbox (GET /blocks): its own
 * ring of BLOCKRING_BLOCKS records, so none crowds out another, for at
 * most BLOCKRING_SANDBOXES sandboxes (the least recently blocked one's
 * records go first). A sandbox's records are found by a keyed table
 * (keytab.h) and the order of use is a list moved on each block, so a
 * block costs its own sandbox's records, not a walk of every sandbox's
 * (~200 us per blocked request with 4,000 sandboxes, atk15r16 F4).
 */
#ifndef SG_BLOCKRING_H
#define SG_BLOCKRING_H

#include <jansson.h>

#define BLOCKRING_BLOCKS	64	/* block records kept per sandbox */
#define BLOCKRING_SANDBOXES	4096	/* sandboxes with records kept */

struct blockring;

struct blockring *blockring_new(void);		/* NULL: no memory */
void		 blockring_free(struct blockring *);	/* NULL ok */

/*
 * A block of sandbox (serial: proxy.block_serial; host and message
 * escaped already; run_id NULL or "" when no credential named one). A
 * record takes more attempts only while no cursor handed out (cursor:
 * the last, GET /status) lies within it, so "the blocks after cursor N"
 * is always a set of whole records.
 */
void		 blockring_note(struct blockring *, unsigned long long cursor,
		    unsigned long long serial, const char *sandbox,
		    const char *run_id, const char *host, int port,
		    const char *reason, const char *message);
/* The records of sandbox go (it was unregistered). */
void		 blockring_drop(struct blockring *, const char *sandbox);
/*
 * The records of sandbox after a cursor, oldest first (with run: only
 * that exec's, and with unattributed also those that named no exec); a
 * new reference. *truncated set when one after the cursor was
 * overwritten.
 */
json_t		*blockring_json(const struct blockring *, const char *sandbox,
		    unsigned long long after, const char *run,
		    int unattributed, int *truncated);
/* Every sandbox's records after a cursor, each naming its sandbox. */
json_t		*blockring_all(const struct blockring *,
		    unsigned long long after, int *truncated);
/* Sandboxes' records looked at by sandbox so far (a test hook). */
unsigned long long blockring_visited(const struct blockring *);

#endif
