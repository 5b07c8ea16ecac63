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
 * floor. The clock removals age by ("seen") is left out: ten digits
 * from 2001 to 2286.
 */
struct regsize_key {
	size_t		 text;
	size_t		 unsure;
	size_t		 gone;
	size_t		 gone_text;
	time_t		 floor;
	int		 removals;	/* a marks write: the removals too */
};

struct regsize {
	struct regsize_key	 key;
	size_t			 len;		/* measured for key */
	int			 known;		/* len was measured */
};

void	regsize_init(struct regsize *);
/* 1 when the text must be built to know its length (key changed). */
int	regsize_stale(const struct regsize *, const struct regsize_key *);
/* The length measured for key, to be reused while it holds. */
void	regsize_note(struct regsize *, const struct regsize_key *,
	    size_t len);
/* The last length measured (regsize_stale 0: the current one). */
size_t	regsize_len(const struct regsize *);
/*
 * 1 when the last length measured was over max and k differs from its
 * key only by more removals (their count and text no smaller, a floor of
 * no fewer digits, all else the same): a text that can only have grown
 * is over max too, and is
 * not built to find that out (atk38a F4: each /unregister of a name not
 * registered built an 8 MiB text, holding the event loop ~0.3 s).
 */
int	regsize_still_over(const struct regsize *, const struct regsize_key *,
	    size_t max);

#endif
