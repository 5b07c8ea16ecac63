/*
 * registry.h: which sandbox a client address belongs to, and the policy
 * sets it may use. The controller registers a sandbox's address on
 * sandgate-internal at create and unregisters it at discard, through the
 * proxy's control socket (control.h).
 *
 * Entries are reference-counted: a connection keeps the entry it started
 * with, so an unregister never pulls strings from under it.
 */
#ifndef SG_REGISTRY_H
#define SG_REGISTRY_H

#include <sys/socket.h>

#include <stddef.h>
#include <time.h>

#include <jansson.h>

#include "namecount.h"

struct proxy_client;
struct registry;
struct registry_entry;

struct registry	*registry_new(void);
void		 registry_free(struct registry *);	/* NULL ok */

/*
 * Register addr ("10.0.0.5", "fd00::5"; an IPv4-mapped IPv6 address is
 * taken as the IPv4 one) as sandbox with the comma-separated sets.
 * Another sandbox's entry for addr is removed. With extra 0 addr is the
 * sandbox's session address and replaces the one it had (a restarted
 * session container), keeping its extra ones; with extra 1 it is added
 * beside them (the container of one `exec --fresh`, unregistered by
 * address when it ends). Registering what is registered already changes
 * nothing. Returns 0, or -1 with *cause static.
 */
int		 registry_add(struct registry *, const char *addr,
		    const char *sandbox, const char *sets, int extra,
		    const char **cause);
/*
 * registry_add, refused (-1, *cause registry_full) when it would take the
 * text of the saved entries (registry_text) past max bytes; one that
 * takes no more room (registered as it is, or replacing entries as large)
 * never is. A sandbox's session moving to another address with its sets
 * as they are (a restarted session container; at most 32 bytes more, the
 * shortest IPv4 address to the longest IPv6 one) may take it past max by
 * up to REGISTRY_MOVE_ROOM in all: 4,096 such moves at the least. A text
 * over the limit already (an older proxy's file, loaded by registry_add)
 * grows no more: anything that would grow it is refused.
 */
#define REGISTRY_MOVE_ROOM	(128 * 1024)
extern const char registry_full[];
int		 registry_add_within(struct registry *, const char *addr,
		    const char *sandbox, const char *sets, int extra,
		    size_t max, const char **cause);
/*
 * 1 when registry_add of these would change nothing: addr is registered
 * as sandbox with the same sets text and kind (registered as it is).
 */
int		 registry_registered(struct registry *, const char *addr,
		    const char *sandbox, const char *sets, int extra);
/*
 * The bytes the entries take in the saved registry (registry_json_saved
 * written compact, a comma after each), kept as they change.
 */
size_t		 registry_text(const struct registry *);
/*
 * Remove an address, canonical as registry_add takes it ("::ffff:a.b.c.d"
 * is a.b.c.d, "FD00::5" is fd00::5); how many (0 or 1). One lookup.
 */
size_t		 registry_remove_address(struct registry *, const char *addr);
/* Remove every address of a sandbox id; how many. Its own list. */
size_t		 registry_remove_sandbox(struct registry *, const char *sandbox);
/* 1 when some address is registered as sandbox (constant time). */
int		 registry_has_sandbox(const struct registry *,
		    const char *sandbox);
/*
 * Sandboxes restored from the registry file at a start whose removals
 * were not all known (a damaged removal file): a removed one may be among
 * them, so their tokens issued before the floor are refused (conn.c)
 * until a /register of the sandbox (registry_add clears the mark).
 * registry_unsure_all marks every entry (how many); registry_json shows
 * the mark in each entry ("unsure": true), registry_json_saved writes
 * the marked entries first and counts them (*unsure), so the registry
 * file keeps the marks in one number, not a mark in each entry.
 */
size_t		 registry_unsure_all(struct registry *);
/* Entries marked now (kept as marks change). */
size_t		 registry_unsure_count(const struct registry *);
void		 registry_unsure_set(struct registry *, const char *sandbox,
		    int unsure);
int		 registry_sandbox_unsure(const struct registry *,
		    const char *sandbox);
/*
 * fn(arg, sandbox) for each sandbox registered or unregistered since the
 * last call (namecount_changed): what changed, not the whole registry.
 */
void		 registry_changed(struct registry *, namecount_fn, void *arg);
/*
 * fn(arg, address) for each address whose entry changed (registered,
 * taken over, unregistered) since the last call, maybe more than once;
 * the registry forgets them (fn NULL: only that).
 */
typedef void	(*registry_addr_fn)(void *arg, const char *addr);
void		 registry_addr_changed(struct registry *, registry_addr_fn,
		    void *arg);
/* Number of registered addresses. */
size_t		 registry_count(const struct registry *);

/*
 * Fill *out for a client address and take a reference that
 * registry_client_release() drops. Returns 0, or -1 when the address is
 * not registered (out untouched).
 */
int		 registry_lookup(struct registry *, const struct sockaddr *,
		    struct proxy_client *out);
void		 registry_client_release(struct proxy_client *);
/*
 * Entries looked at by address so far (lookups and re-registers): one
 * chain of a keyed hash each, whatever the registry holds (the tests
 * count it).
 */
unsigned long long registry_compared(const struct registry *);
/* Entries looked at by sandbox id so far (namecount_visited). */
unsigned long long registry_sandbox_visited(const struct registry *);

/*
 * [{"address":..,"sandbox":..,"sets":[..],"extra":bool}...], a new
 * reference.
 */
json_t		*registry_json(const struct registry *);
json_t		*registry_json_saved(const struct registry *, size_t *unsure);

/*
 * Sandboxes unregistered (POST /unregister by sandbox), with the time:
 * every token of the sandbox, whatever its "issued", is refused
 * (token_sandbox_gone); a /register of the sandbox forgets it. Entries
 * go once no token issued before them can hold: TOKEN_TTL_MAX (and twice
 * TOKEN_SKEW) past their time on this replica's clock, as far as the boot
 * clock agrees it went on (a wall clock ahead for a moment forgets
 * nothing, atk1921j F2; registry_gone_seen is the time they age by,
 * saved with them and given back to registry_gone_load). That time is the
 * latest of the removal's here, the controller's clock it came with,
 * and the "issued" of every token of it refused since
 * (registry_gone_keep), so a controller clock ahead of this one does
 * not let a token outlive its entry (atk1921h F7). They go oldest
 * first, and past REGISTRY_GONE_MAX the oldest goes early: the latest
 * time ever forgotten (by age or count) is the floor (registry_gone_floor,
 * never lowered), and a token of a
 * sandbox not registered, issued before the floor, is refused as well
 * (fails closed). The json is {"sandbox": time, ...}, a new reference;
 * load merges one and a floor. registry_gone_dirty says whether the set
 * or the floor changed since registry_gone_saved: the file that keeps
 * them is written only then, not at every change of the registry
 * (atk15r16 F6: 56 ms per /register after 8,000 discards).
 */
#define REGISTRY_GONE_MAX	4096
void		 registry_gone_set(struct registry *, const char *sandbox,
		    time_t);
/* The entry of a removed sandbox kept at least from at (none: nothing). */
void		 registry_gone_keep(struct registry *, const char *sandbox,
		    time_t at);
void		 registry_gone_clear(struct registry *, const char *sandbox);
time_t		 registry_gone_at(const struct registry *, const char *sandbox);
time_t		 registry_gone_floor(const struct registry *);
/* Removals kept, and those forgotten (past the max) within their time. */
size_t		 registry_gone_count(const struct registry *);
unsigned long long registry_gone_forgotten(const struct registry *);
/*
 * The bytes the removals kept take in registry_gone_json written compact
 * ("id":time and a comma each), kept as they change.
 */
size_t		 registry_gone_text(const struct registry *);
int		 registry_gone_dirty(const struct registry *);
void		 registry_gone_saved(struct registry *);
json_t		*registry_gone_json(const struct registry *);
void		 registry_gone_load(struct registry *, json_t *, time_t floor,
		    time_t seen);
/*
 * The removals kept could not be read (a damaged file): the floor rises
 * to now, so no token of a sandbox not registered here issued before
 * now passes (fails closed, atk15r18 F8).
 */
void		 registry_gone_unknown(struct registry *);
/* The later of the wall clock and the clock removals age by. */
time_t		 registry_gone_latest(struct registry *);
time_t		 registry_gone_seen(const struct registry *);
/* The clock removals age by: wall time and time since boot (tests). */
typedef void	(*registry_clock_fn)(time_t *wall, time_t *boot);
void		 registry_set_clock(struct registry *, registry_clock_fn);

#endif
