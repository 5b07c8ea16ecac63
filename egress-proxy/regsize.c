/*
 * regsize.c: the registry file's text measured once for what its size
 * depends on (regsize.h).
 */
#include <string.h>

#include "regsize.h"

void
regsize_init(struct regsize *rs)
{
	memset(rs, 0, sizeof(*rs));
}

int
regsize_stale(const struct regsize *rs, const struct regsize_key *k)
{
	const struct regsize_key	*o = &rs->key;

	return !rs->known || o->text != k->text || o->unsure != k->unsure ||
	    o->gone != k->gone || o->gone_text != k->gone_text ||
	    o->floor != k->floor || o->removals != k->removals;
}

void
regsize_note(struct regsize *rs, const struct regsize_key *k, size_t len)
{
	rs->key = *k;
	rs->len = len;
	rs->known = 1;
}

size_t
regsize_len(const struct regsize *rs)
{
	return rs->len;
}

/* The digits of a floor written in decimal. */
static int
regsize_digits(time_t t)
{
	int	n = 1;

	while (t >= 10 || t <= -10) {
		t /= 10;
		n++;
	}
	return n + (t < 0);
}

int
regsize_still_over(const struct regsize *rs, const struct regsize_key *k,
    size_t max)
{
	const struct regsize_key	*o = &rs->key;

	/*
	 * The floor only by its digits: with the removals full each new one
	 * forgets the oldest and raises the floor to its time (atk39f F1).
	 */
	return rs->known && rs->len > max && o->text == k->text &&
	    o->unsure == k->unsure &&
	    regsize_digits(k->floor) >= regsize_digits(o->floor) &&
	    o->removals == k->removals && k->gone >= o->gone &&
	    k->gone_text >= o->gone_text;
}
