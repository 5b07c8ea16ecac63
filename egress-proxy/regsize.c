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

long long
regsize_digits(long long n)
{
	long long	d = 1;

	while (n >= 10 || n <= -10) {
		n /= 10;
		d++;
	}
	return d + (n < 0);
}

/*
 * The bytes of the parts of the text whose length follows from the key
 * alone: "floor" and "kept" by their digits, and in a marks write the
 * removals' object, {"id":time,...}: their text (registry_gone_text, a
 * comma each) less the last one's comma, in braces.
 */
static long long
regsize_known(const struct regsize_key *k)
{
	long long	n;

	n = regsize_digits((long long)k->floor) +
	    regsize_digits((long long)k->gone);
	if (k->removals)
		n += 2 + (long long)k->gone_text - (k->gone > 0);
	return n;
}

int
regsize_still_over(struct regsize *rs, const struct regsize_key *k,
    size_t max)
{
	const struct regsize_key	*o = &rs->key;
	long long			 len, margin;

	/*
	 * The entries and the marks are the same, so the text differs only
	 * in the parts known: the last length measured and what those
	 * changed by (atk39f2 F1: at the removals' cap a shorter new one
	 * than the one forgotten built the text again each time).
	 */
	if (!rs->known || o->text != k->text || o->unsure != k->unsure ||
	    o->removals != k->removals)
		return 0;
	len = (long long)rs->len + regsize_known(k) - regsize_known(o);
	/* the plain write has no "seen": its length is exact (atk40f F2) */
	margin = k->removals ? REGSIZE_MARGIN : 0;
	if (len <= (long long)max + margin)
		return 0;
	/*
	 * Kept as k's length: what a refusal says it would take (atk40f
	 * F1: the last one measured was said, stale after shrinks, even
	 * one that fit), and the next change's base.
	 */
	regsize_note(rs, k, (size_t)len);
	return 1;
}
