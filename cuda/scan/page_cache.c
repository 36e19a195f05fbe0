/*-------------------------------------------------------------------------
 *
 * page_cache.c
 *	  Which heap pages the deform keeps, in which slots (page_cache.h)
 *
 * A chained hash table over the slots: a bucket holds the first slot of
 * its chain, each slot the next; a slot's key is its relation's three
 * words and its block.  Acquire and release run under the cache's mutex
 * and never wait for anything else.
 *
 * Which page a full cache gives up (Victim) resists scans: the pages of a
 * relation read whole, again and again, and larger than the cache would
 * each be dropped before their next read by a clock that takes every
 * page it comes to, and the cache would serve none.  Here the hand, which
 * moves one slot a miss, takes a cold page (neither filled nor hit during
 * the hand's last COLD_TURNS x nslots moves) outright, any other for one
 * miss in ADMIT_ONE_IN; for the other misses the page missed is not kept.
 * So a relation read again and again keeps about as much of itself as the
 * cache holds (the pages it keeps are hit every turn and never go cold),
 * and pages no longer read make room for new ones within two turns of
 * the hand.  That holds for a relation up to about three times the cache
 * (its misses in one reading move the hand less than two turns); a larger
 * one looks cold page by page, and gets about nothing, as from a clock.
 * The distance is counted in moves, not in whole turns: counted in turns,
 * a page hit late in one looked cold early in the next but one, so a
 * relation 2.4 times the cache lost hits run after run until it got
 * almost none (on an H200, 2026-12-01).
 *
 * IDENTIFICATION
 *	  cuda/scan/page_cache.c
 *
 *-------------------------------------------------------------------------
 */
#include <stdlib.h>
#include <string.h>

#include "page_cache.h"

#define SLOT_FREE		0
#define SLOT_FILLING	1
#define SLOT_FILLED		2

#define ADMIT_ONE_IN	8
#define COLD_TURNS		2

static uint64_t
Hash(const uint32_t rel[3], uint32_t block)
{
	uint64_t	h = ((uint64_t) rel[0] << 32 | rel[1]) * UINT64_C(0x9E3779B97F4A7C15);

	h ^= ((uint64_t) rel[2] << 32 | block) + UINT64_C(0xBF58476D1CE4E5B9) + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= UINT64_C(0x94D049BB133111EB);
	return h ^ (h >> 29);
}

bool
gj_page_cache_init(GjPageCache *cache, int64_t nslots)
{
	memset(cache, 0, sizeof(*cache));
	if (nslots <= 0)
		return false;
	cache->nbuckets = 1;
	while (cache->nbuckets < 2 * nslots)
		cache->nbuckets <<= 1;
	cache->nslots = nslots;
	cache->buckets = (int64_t *) malloc(sizeof(int64_t) * (size_t) cache->nbuckets);
	cache->next = (int64_t *) malloc(sizeof(int64_t) * (size_t) nslots);
	cache->keys = (uint32_t *) calloc((size_t) nslots, 4 * sizeof(uint32_t));
	cache->lsns = (uint64_t *) calloc((size_t) nslots, sizeof(uint64_t));
	cache->counts = (int16_t *) calloc((size_t) nslots, sizeof(int16_t));
	cache->readers = (int32_t *) calloc((size_t) nslots, sizeof(int32_t));
	cache->states = (uint8_t *) calloc((size_t) nslots, 1);
	cache->used = (uint64_t *) calloc((size_t) nslots, sizeof(uint64_t));
	cache->nfree = nslots;
	cache->lottery = UINT64_C(0x9E3779B97F4A7C15);
	if (cache->buckets == NULL || cache->next == NULL || cache->keys == NULL ||
		cache->lsns == NULL || cache->counts == NULL || cache->readers == NULL || cache->states == NULL ||
		cache->used == NULL)
	{
		gj_page_cache_free(cache);
		return false;
	}
	for (int64_t b = 0; b < cache->nbuckets; b++)
		cache->buckets[b] = -1;
	for (int64_t s = 0; s < nslots; s++)
		cache->next[s] = -1;
	pthread_mutex_init(&cache->lock, NULL);
	return true;
}

void
gj_page_cache_free(GjPageCache *cache)
{
	free(cache->buckets);
	free(cache->next);
	free(cache->keys);
	free(cache->lsns);
	free(cache->counts);
	free(cache->readers);
	free(cache->states);
	free(cache->used);
	if (cache->nslots > 0 && cache->buckets != NULL)
		pthread_mutex_destroy(&cache->lock);
	memset(cache, 0, sizeof(*cache));
}

static int64_t
Bucket(const GjPageCache *cache, const uint32_t rel[3], uint32_t block)
{
	return (int64_t) (Hash(rel, block) & (uint64_t) (cache->nbuckets - 1));
}

/* The slot that holds the block, or -1 */
static int64_t
Find(const GjPageCache *cache, const uint32_t rel[3], uint32_t block)
{
	for (int64_t s = cache->buckets[Bucket(cache, rel, block)]; s >= 0; s = cache->next[s])
	{
		const uint32_t *key = cache->keys + 4 * s;

		if (key[3] == block && key[0] == rel[0] && key[1] == rel[1] && key[2] == rel[2])
			return s;
	}
	return -1;
}

/* Take slot s out of its chain, and free it */
static void
Unlink(GjPageCache *cache, int64_t s)
{
	const uint32_t *key = cache->keys + 4 * s;
	int64_t    *at = &cache->buckets[Bucket(cache, key, key[3])];

	while (*at != s)
		at = &cache->next[*at];
	*at = cache->next[s];
	cache->next[s] = -1;
	cache->states[s] = SLOT_FREE;
	cache->nfree++;
}

/* Whether this miss may take a kept page's slot: one in ADMIT_ONE_IN */
static bool
Admit(GjPageCache *cache)
{
	uint64_t	x = cache->lottery;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	cache->lottery = x;
	return x % ADMIT_ONE_IN == 0;
}

/*
 * A free slot for a block not held: one that is free, or a filled one no
 * call reads that the clock gives up (see the file's head), taken out of
 * its chain; -1 when the page is not to be kept (every slot being filled
 * or read, or the lottery lost)
 */
static int64_t
Victim(GjPageCache *cache)
{
	/* the next free slot from where the last one was found */
	if (cache->nfree > 0)
		for (int64_t i = 0; i < cache->nslots; i++)
		{
			int64_t		s = cache->free_at;

			cache->looked++;
			cache->free_at = (cache->free_at + 1) % cache->nslots;
			if (cache->states[s] == SLOT_FREE)
				return s;
		}
	for (int64_t i = 0; i < cache->nslots; i++)
	{
		int64_t		s = cache->hand;

		cache->looked++;
		cache->moves++;
		if (++cache->hand == cache->nslots)
			cache->hand = 0;
		if (cache->states[s] != SLOT_FILLED || cache->readers[s] > 0)
			continue;			/* being filled or read: the next one */
		if (cache->moves - cache->used[s] < (uint64_t) (COLD_TURNS * cache->nslots) &&
			!Admit(cache))
			return -1;
		Unlink(cache, s);
		return s;
	}
	return -1;
}

void
gj_page_cache_acquire(GjPageCache *cache, const uint32_t rel[3], const uint32_t *blocks,
					  const uint64_t *lsns, const int16_t *counts, const uint8_t *kept_only,
					  int64_t n, uint8_t *use, int64_t *slot)
{
	pthread_mutex_lock(&cache->lock);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		s;

		use[i] = GJ_PAGE_SHIP;
		slot[i] = -1;
		if (lsns[i] == 0 || counts[i] < 0)
		{
			if (kept_only != NULL && kept_only[i])
				use[i] = GJ_PAGE_GONE;
			continue;
		}
		s = Find(cache, rel, blocks[i]);
		if (s >= 0 && cache->states[s] == SLOT_FILLED && cache->lsns[s] == lsns[i] &&
			cache->counts[s] == counts[i])
		{
			/* the same page as when it was kept */
			cache->readers[s]++;
			cache->used[s] = cache->moves;
			cache->hits++;
			use[i] = GJ_PAGE_HIT;
			slot[i] = s;
			continue;
		}
		if (kept_only != NULL && kept_only[i])
		{
			/* nothing to fill it from: the caller reads the page */
			use[i] = GJ_PAGE_GONE;
			continue;
		}
		if (s >= 0)
		{
			/*
			 * Kept under another LSN (or being filled): refilled here
			 * when no call reads it, else this call ships the page
			 */
			if (cache->states[s] != SLOT_FILLED || cache->readers[s] > 0)
				continue;
			Unlink(cache, s);
		}
		else if ((s = Victim(cache)) < 0)
			continue;
		cache->keys[4 * s] = rel[0];
		cache->keys[4 * s + 1] = rel[1];
		cache->keys[4 * s + 2] = rel[2];
		cache->keys[4 * s + 3] = blocks[i];
		cache->lsns[s] = lsns[i];
		cache->counts[s] = counts[i];
		cache->states[s] = SLOT_FILLING;
		cache->used[s] = cache->moves;
		cache->nfree--;
		cache->next[s] = cache->buckets[Bucket(cache, rel, blocks[i])];
		cache->buckets[Bucket(cache, rel, blocks[i])] = s;
		cache->fills++;
		use[i] = GJ_PAGE_FILL;
		slot[i] = s;
	}
	pthread_mutex_unlock(&cache->lock);
}

void
gj_page_cache_probe(GjPageCache *cache, const uint32_t rel[3], const uint32_t *blocks,
					const uint64_t *lsns, int64_t n, int16_t *counts)
{
	pthread_mutex_lock(&cache->lock);
	for (int64_t i = 0; i < n; i++)
	{
		int64_t		s = lsns[i] != 0 ? Find(cache, rel, blocks[i]) : -1;

		counts[i] = s >= 0 && cache->states[s] == SLOT_FILLED && cache->lsns[s] == lsns[i] ?
			cache->counts[s] : -1;
	}
	pthread_mutex_unlock(&cache->lock);
}

void
gj_page_cache_release(GjPageCache *cache, const uint8_t *use, const int64_t *slot, int64_t n,
					  bool filled)
{
	pthread_mutex_lock(&cache->lock);
	for (int64_t i = 0; i < n; i++)
	{
		if (use[i] == GJ_PAGE_HIT)
			cache->readers[slot[i]]--;
		else if (use[i] == GJ_PAGE_FILL)
		{
			if (filled)
				cache->states[slot[i]] = SLOT_FILLED;
			else
				Unlink(cache, slot[i]);
		}
	}
	pthread_mutex_unlock(&cache->lock);
}
