/*
 * regsize.h: whether the registry file's text must be built again to
 * know its size. A save of a registry too large to be read back fails
 * (EFBIG); building the text of an 8 MiB registry each second to find it
 * still too large took 16.8 % of a CPU and held the event loop for
 * hundreds of milliseconds (atk37f F1). The size depends on a few counts
 * (struct regsize_key): while they are as they were, the last length
 * measured stands and the text is not built again.
 */
#ifndef SG_REGSIZE_H
#define SG_REGSIZE_H

#include <stddef.h>
#include <time.h>

/*
 * What the text's length depends on: the entries' text (registry_text),
 * how many are marked unsure (one count written), the removals kept and
 * their text (registry_gone_text) when the write holds them, and the
 * floor. The clock removals age by ("seen", in a marks write) is left
 * out: it changes each second (REGSIZE_MARGIN).
 */
struct regsize_key {
	size_t		 text;
	size_t		 unsure;
	size_t		 gone;
	size_t		 gone_text;
	time_t		 floor;
	int		 removals;	/* a marks write: the removals too */
};

/*
 * How far over the limit a length worked out from the key must be to be
 * taken as over without building the text: "seen" is outside the key
 * and takes 1 to 19 digits (0 before the clock was first looked at, ten
 * from the wall clock, up to 19 from a hand-made file: a time_t, never
 * negative), so it may be up to 18 bytes shorter than when the text was
 * last measured.
 */
#define REGSIZE_MARGIN	20

struct regsize {
	struct regsize_key	 key;
	size_t			 len;		/* measured or worked out */
	int			 known;		/* len was */
};

void	regsize_init(struct regsize *);
/* The bytes n takes written in decimal (a sign too). */
long long regsize_digits(long long n);
/* 1 when the text must be built to know its length (key changed). */
int	regsize_stale(const struct regsize *, const struct regsize_key *);
/* The length measured for key, to be reused while it holds. */
void	regsize_note(struct regsize *, const struct regsize_key *,
	    size_t len);
/*
 * The last length measured, or worked out by regsize_still_over
 * (regsize_stale 0: the current one).
 */
size_t	regsize_len(const struct regsize *);
/*
 * 1 when the length of k's text, worked out without building it, is over
 * max (in a marks write by more than REGSIZE_MARGIN, for "seen"; the
 * plain write's is exact), and then kept as k's length (regsize_len,
 * what a refusal says: atk40f F1): k differs from the key last known
 * only in parts whose length follows from it (the removals' count and,
 * in a marks write, their text; the floor by its digits), so the length
 * is the one measured plus what those changed by. 0 when anything else
 * changed, nothing was measured or the length is near max: then the
 * text is built to be measured (a registry that fits is saved). Each
 * /unregister of a name not registered built an 8 MiB text, holding the
 * event loop ~0.3 s (atk38a F4), also with the removals full, each new
 * one forgetting the oldest (atk39f F1) and shorter than it (atk39f2 F1).
 */
int	regsize_still_over(struct regsize *, const struct regsize_key *,
	    size_t max);

#endif
